/* spicestreamenc: the stream branch (one-frame queue + encoder) that
 * applies spice-rate to the encoder it creates
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_SPICE_STREAM_ENC (gst_spice_stream_enc_get_type ())
G_DECLARE_FINAL_TYPE (GstSpiceStreamEnc, gst_spice_stream_enc, GST,
    SPICE_STREAM_ENC, GstBin);

GST_ELEMENT_REGISTER_DECLARE (spicestreamenc);

G_END_DECLS
