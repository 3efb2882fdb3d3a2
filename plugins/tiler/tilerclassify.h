/* spicetiler: content classification (synthetic vs photographic)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Percentage of sampled pixels equal to their left or upper neighbour
 * below which a block counts as photographic. */
#define TILER_PHOTO_EQUAL_PERCENT 40
/* Natural content that repeats pixels (a landscape: flat sky rows, hills
 * with a quantised texture) also has many small steps: a block whose
 * pixels differ from both neighbours, by at most TILER_SMOOTH_STEP on
 * every channel from one of them, for at least TILER_PHOTO_SMOOTH_PERCENT
 * of the samples counts as photographic too. Text and UI (even
 * anti-aliased) step by large amounts between few colours. */
#define TILER_SMOOTH_STEP 12
#define TILER_PHOTO_SMOOTH_PERCENT 25

typedef enum
{
  TILER_CONTENT_SYNTHETIC,      /* text, UI, flat areas: lossless */
  TILER_CONTENT_SMOOTH,         /* natural content with repeats: a stream's
                                 * content, but lossless as draws */
  TILER_CONTENT_NOISY,          /* few repeats (photo, video, noise): may be
                                 * sent lossy */
} TilerContent;

/* what the 16x16-ish block at @bgrx (@w x @h, @stride bytes a row) holds */
TilerContent tiler_classify_content (const guint8 * bgrx, gint stride,
    gint w, gint h);
/* whether the block is photographic (smooth or noisy): the heat map's view */
gboolean tiler_classify_is_photo (const guint8 * bgrx, gint stride, gint w,
    gint h);

G_END_DECLS
