/* spicewebrtcsink: the pipeline's picture to browsers over WebRTC (WHEP),
 * their input back as navigation events
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <gst/base/gstbasesink.h>

G_BEGIN_DECLS

#define GST_TYPE_SPICE_WEBRTC_SINK (gst_spice_webrtc_sink_get_type ())
G_DECLARE_FINAL_TYPE (GstSpiceWebRtcSink, gst_spice_webrtc_sink, GST,
    SPICE_WEBRTC_SINK, GstBaseSink);

GST_ELEMENT_REGISTER_DECLARE (spicewebrtcsink);

G_END_DECLS
