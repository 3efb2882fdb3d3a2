/* spicestreamenc: known encoders and the spice-rate -> property mapping
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "streamencrate.h"

#include <string.h>

/* x264enc's bitrate property tops out here (kbit/s) */
#define X264_MAX_KBPS 2048000

static const struct
{
  const gchar *factory;
  StreamEncKind kind;
} known_encoders[] = {
  {"vp8enc", STREAMENC_KIND_VPX},
  {"vp9enc", STREAMENC_KIND_VPX},
  {"x264enc", STREAMENC_KIND_X264},
  {"openh264enc", STREAMENC_KIND_OPENH264},
  {"jpegenc", STREAMENC_KIND_JPEG},
  {"av1enc", STREAMENC_KIND_AOM},
};

/* any thread */
StreamEncKind
streamenc_kind_from_factory (const gchar * factory_name)
{
  guint i;

  for (i = 0; factory_name && i < G_N_ELEMENTS (known_encoders); i++)
    if (strcmp (factory_name, known_encoders[i].factory) == 0)
      return known_encoders[i].kind;
  return STREAMENC_KIND_UNKNOWN;
}

/* any thread */
const gchar *
streamenc_kind_property (StreamEncKind kind)
{
  if (kind == STREAMENC_KIND_VPX || kind == STREAMENC_KIND_AOM)
    return "target-bitrate";
  if (kind == STREAMENC_KIND_X264 || kind == STREAMENC_KIND_OPENH264)
    return "bitrate";
  if (kind == STREAMENC_KIND_JPEG)
    return "quality";
  return NULL;
}

/* any thread */
guint64
streamenc_value_to_bps (StreamEncKind kind, guint value)
{
  if (kind == STREAMENC_KIND_X264 || kind == STREAMENC_KIND_AOM)
    return 1000 * (guint64) value;
  if (kind == STREAMENC_KIND_VPX || kind == STREAMENC_KIND_OPENH264)
    return value;
  return 0;
}

/* any thread */
guint
streamenc_bitrate_value (StreamEncKind kind, guint64 target_bps, guint ceiling)
{
  guint64 v;

  if (target_bps == 0)
    return ceiling;
  switch (kind) {
    case STREAMENC_KIND_VPX:
      /* whole kbit/s, at least one (0 would mean "auto" to vp8enc) */
      v = MAX (target_bps - target_bps % 1000, 1000);
      v = MIN (v, G_MAXINT);
      break;
    case STREAMENC_KIND_X264:
      v = CLAMP (target_bps / 1000, 1, X264_MAX_KBPS);
      break;
    case STREAMENC_KIND_OPENH264:
      v = MIN (target_bps, G_MAXUINT);
      break;
    case STREAMENC_KIND_AOM:
      v = CLAMP (target_bps / 1000, 1, G_MAXUINT);
      break;
    default:
      return ceiling;
  }
  if (ceiling > 0 && v > ceiling)
    v = ceiling;
  return (guint) v;
}

/* any thread */
guint
streamenc_jpeg_quality (guint q0, guint64 target_bps, guint64 measured_bps)
{
  gdouble q;

  q0 = MIN (q0, 100);
  if (target_bps == 0 || measured_bps == 0 || q0 <= STREAMENC_JPEG_MIN_QUALITY)
    return q0;
  q = (gdouble) (q0 + STREAMENC_JPEG_SIZE_OFFSET) * (gdouble) target_bps /
      (gdouble) measured_bps - STREAMENC_JPEG_SIZE_OFFSET;
  if (q >= q0)
    return q0;
  if (q <= STREAMENC_JPEG_MIN_QUALITY)
    return STREAMENC_JPEG_MIN_QUALITY;
  return (guint) (q + 0.5);
}

/* any thread */
guint64
streamenc_jpeg_expected_bps (guint q0, guint q, guint64 measured_bps)
{
  return (guint64) ((gdouble) measured_bps * (q + STREAMENC_JPEG_SIZE_OFFSET)
      / (q0 + STREAMENC_JPEG_SIZE_OFFSET) + 0.5);
}
