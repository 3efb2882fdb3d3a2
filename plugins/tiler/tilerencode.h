/* spicetiler: region encoders (BITMAP, LZ4, JPEG) into a draws writer
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <gst/spice/gstspice.h>

G_BEGIN_DECLS

/* below this many raw bytes a region goes out as BITMAP */
#define TILER_BITMAP_MAX_BYTES 512
/* below this many pixels a lossy region is sent lossless instead */
#define TILER_JPEG_MIN_PIXELS 256

typedef struct {
  gpointer tj;                  /* tjhandle */
  guint8 *scratch;
  gsize scratch_size;
} TilerEncoder;

void     tiler_encoder_init (TilerEncoder * enc);
void     tiler_encoder_clear (TilerEncoder * enc);
/* appends @dest from @px (its top-left pixel) as BITMAP or LZ4, whichever
 * is smaller; returns the payload size and sets @type */
gsize    tiler_encode_lossless (TilerEncoder * enc, GstSpiceDrawsWriter * w,
    const GstVideoRectangle * dest, const guint8 * px, gint stride,
    GstSpiceImageType * type);
/* appends @dest as a lossy JPEG (4:2:0); returns 0 on failure, then
 * nothing was appended */
gsize    tiler_encode_jpeg (TilerEncoder * enc, GstSpiceDrawsWriter * w,
    const GstVideoRectangle * dest, const guint8 * px, gint stride,
    gint quality);

/* --- draw budget (spice-draw-budget from spicesink) ---
 * The sink announces how many bytes one update may hold for the slowest
 * client's link (0 = no limit from the sink). The update budget in force is
 * the smaller of that and the update-budget property; bands are cut to
 * about that many raw bytes (at least TILER_BAND_MIN_BYTES, at most
 * band-size), so an update overshoots its budget by little. Under pressure
 * (the sink announced a budget and the last update ran out of it) lossy
 * draws use a lower JPEG quality: more of the hot area per update; the
 * refinement restores the exact picture once the area is still. */
#define TILER_BAND_MIN_BYTES (16 * 1024)
#define TILER_PRESSURE_QUALITY_MIN 30

void     tiler_draw_budget_apply (guint sink_budget, guint * update_budget,
    guint * band_size);
guint    tiler_jpeg_quality_for (guint quality, gboolean pressure);

/* After an update of @bytes went downstream on a link of @link_bps
 * (announced by the sink, again whenever its estimate moves; 0 = unknown),
 * the next update is built no earlier than TILER_PACE_PERCENT of its
 * transmission time later (in us; 0 = at once), at most TILER_PACE_MAX_US.
 * Above 100 %: the draws offer less than the link carries, so no queue
 * builds before the link (the sink's estimate is not exact, and every
 * byte queued there delays the update of the next key press), and the
 * update is built from the freshest damage instead of waiting, already
 * built, for the sink to have room. */
#define TILER_PACE_PERCENT 125  /* draws offer 80 % of the link */
#define TILER_PACE_MAX_US (50 * G_TIME_SPAN_MILLISECOND) /* a refresh or a
                                 * low estimate never stalls updates: the
                                 * sink's back-pressure covers the rest */
gint64   tiler_draw_pace_us (gsize bytes, guint64 link_bps);

G_END_DECLS
