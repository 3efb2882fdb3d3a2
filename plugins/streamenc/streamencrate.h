/* spicestreamenc: which encoders the bin knows and what a spice-rate
 * target means for each of them, as pure functions (no GStreamer objects,
 * no clocks), so that they can be unit-tested.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * See docs/spicestreamenc.md for the policy in words.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* JPEG: a frame's size grows about linearly with quality + this offset
 * (quality 10 is about a third of the bytes of quality 70) */
#define STREAMENC_JPEG_SIZE_OFFSET 25
/* JPEG: never below this quality (blocks become unreadable) */
#define STREAMENC_JPEG_MIN_QUALITY 10

/* The encoders whose rate the bin sets. */
typedef enum {
  STREAMENC_KIND_UNKNOWN = 0,
  STREAMENC_KIND_VPX,           /* vp8enc, vp9enc: target-bitrate, bit/s,
                                 * libvpx keeps whole kbit/s */
  STREAMENC_KIND_X264,          /* x264enc: bitrate, kbit/s */
  STREAMENC_KIND_OPENH264,      /* openh264enc: bitrate, bit/s */
  STREAMENC_KIND_JPEG,          /* jpegenc: quality, 1..100 */
  STREAMENC_KIND_AOM,           /* av1enc: target-bitrate, kbit/s */
} StreamEncKind;

/* The kind of the encoder made by factory @factory_name (NULL allowed). */
StreamEncKind streamenc_kind_from_factory (const gchar * factory_name);

/* The property the bin sets on an encoder of @kind, NULL for unknown. */
const gchar  *streamenc_kind_property (StreamEncKind kind);

/* The bit/s that @value of the rate property stands for (JPEG and unknown
 * encoders: 0, not a bitrate). */
guint64       streamenc_value_to_bps (StreamEncKind kind, guint value);

/* The value of a bitrate encoder's property for a spice-rate @target_bps
 * (0 = unknown: back to @ceiling), never above @ceiling, the value the
 * description set (0 = the description left it to the encoder: no
 * ceiling, and an unknown target keeps 0). */
guint         streamenc_bitrate_value (StreamEncKind kind, guint64 target_bps,
    guint ceiling);

/* jpegenc's quality for @target_bps, given that the bin's output measured
 * @measured_bps at the description's quality @q0:
 *   q = (q0 + 25) * target / measured - 25, clamped to [10, q0]
 * (q0 itself when @target_bps or @measured_bps is 0, or q0 < 10). */
guint         streamenc_jpeg_quality (guint q0, guint64 target_bps,
    guint64 measured_bps);

/* The bit/s expected at quality @q when @q0 gave @measured_bps (the same
 * model, solved the other way). */
guint64       streamenc_jpeg_expected_bps (guint q0, guint q,
    guint64 measured_bps);

G_END_DECLS
