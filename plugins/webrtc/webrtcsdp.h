/* spicewebrtcsink: what the element reads in a viewer's offer and changes
 * in its answer
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Pure: GstSDPMessage in, values out.
 */
#pragma once

#include <gst/sdp/sdp.h>

G_BEGIN_DECLS

/* an offer longer than this is refused (browsers' are 4-8 KiB) */
#define WEBRTC_SDP_MAX_OFFER (64 * 1024)

/* The payload type the offer gives @encoding ("VP8", "VP9", "H264") in its
 * first video section, or -1. VP9: profile 1 (8-bit 4:4:4, *@full_chroma
 * set TRUE) when @full_chroma was TRUE on entry and the offer has it, else
 * profile 0; 10-bit profiles are never taken. H264: a packetization-mode=1
 * format with the constrained baseline profile (42e0xx / 42c0xx) is
 * preferred. *@full_chroma says on return whether the format is 4:4:4. */
gint      webrtc_sdp_video_payload (const GstSDPMessage * offer,
    const gchar * encoding, gboolean * full_chroma);

/* the id the offer's first video section gives header extension @uri
 * (a=extmap), 1-14 (one-byte headers), or 0 */
guint8    webrtc_sdp_video_extmap (const GstSDPMessage * offer,
    const gchar * uri);

/* TRUE if the offer has a video section that accepts media (not inactive
 * or sendonly) */
gboolean  webrtc_sdp_wants_video (const GstSDPMessage * offer);

/* the payload type of Opus (opus/48000/2) in the offer's first audio
 * section, if it accepts media; -1 otherwise */
gint      webrtc_sdp_opus_payload (const GstSDPMessage * offer);

/* Removes from every media section of @answer the candidates whose address
 * is not one of @addresses (NULL or empty: all are kept); the count of
 * candidates left. */
guint     webrtc_sdp_keep_candidates (GstSDPMessage * answer,
    const gchar * const *addresses);

G_END_DECLS
