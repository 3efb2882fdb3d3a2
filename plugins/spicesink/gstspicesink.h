/* spicesink: serves a GStreamer picture to SPICE clients
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_SPICE_SINK (gst_spice_sink_get_type ())
G_DECLARE_FINAL_TYPE (GstSpiceSink, gst_spice_sink, GST, SPICE_SINK,
    GstElement);

GST_ELEMENT_REGISTER_DECLARE (spicesink);

G_END_DECLS
