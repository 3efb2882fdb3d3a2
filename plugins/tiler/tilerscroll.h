/* spicetiler: finding content that moved up or down (scrolling)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <gst/video/video.h>

G_BEGIN_DECLS

/* the least rows a copy must move (and change) to be worth a COPY_BITS */
#define TILER_SCROLL_MIN_ROWS 16
#define TILER_SCROLL_MIN_WIDTH 32

typedef struct
{
  guint64 hash;
  gint row;
} TilerScrollKey;

typedef struct
{
  gint rows;                    /* allocated rows */
  guint64 *fh, *sh;             /* row hashes of the frame and the shadow */
  TilerScrollKey *sorted;       /* the shadow's, sorted by hash */
  guint32 *votes;               /* 2 * rows shifts */
} TilerScroll;

void     tiler_scroll_init (TilerScroll * s);
void     tiler_scroll_clear (TilerScroll * s);

/* Looks inside @area for rows of @frame that the shadow holds @src_y - dest
 * rows away. Returns TRUE with the longest such band (at least
 * TILER_SCROLL_MIN_ROWS rows, checked pixel by pixel) as @dest and the
 * row its source starts at as @src_y; same columns. */
gboolean tiler_scroll_find (TilerScroll * s, const guint8 * frame,
    gint fstride, const guint8 * shadow, gint sstride,
    const GstVideoRectangle * area, GstVideoRectangle * dest, gint * src_y);

/* moves @dest's source rows (from @src_y) of @bgrx to @dest, like the
 * client's COPY_BITS */
void     tiler_scroll_apply (guint8 * bgrx, gint stride,
    const GstVideoRectangle * dest, gint src_y);

G_END_DECLS
