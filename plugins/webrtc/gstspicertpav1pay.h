/* spicertpav1pay: AV1 temporal units into RTP packets (the AOMedia "RTP
 * Payload Format for AV1"), for browsers over WebRTC
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <gst/rtp/gstrtpbasepayload.h>

G_BEGIN_DECLS

#define GST_TYPE_SPICE_RTP_AV1_PAY (gst_spice_rtp_av1_pay_get_type ())
G_DECLARE_FINAL_TYPE (GstSpiceRtpAv1Pay, gst_spice_rtp_av1_pay, GST,
    SPICE_RTP_AV1_PAY, GstRTPBasePayload);

GST_ELEMENT_REGISTER_DECLARE (spicertpav1pay);

G_END_DECLS
