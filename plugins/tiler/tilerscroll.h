/* spicetiler: finding content that moved up or down (scrolling)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <gst/video/video.h>

G_BEGIN_DECLS

/* the least rows a copy must move (and change) to be worth a COPY_BITS,
 * and the least height and width of an area to search */
#define TILER_SCROLL_MIN_ROWS 8
#define TILER_SCROLL_MIN_AREA_ROWS 32
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
  /* the search under way (tiler_scroll_begin()) */
  const guint8 *frame, *shadow;
  gint fstride, sstride;
  GstVideoRectangle area;
} TilerScroll;

void     tiler_scroll_init (TilerScroll * s);
void     tiler_scroll_clear (TilerScroll * s);

/* Starts a search inside @area of @frame against @shadow (what the client
 * has); FALSE when the area is too small to be worth it. */
gboolean tiler_scroll_begin (TilerScroll * s, const guint8 * frame,
    gint fstride, const guint8 * shadow, gint sstride,
    const GstVideoRectangle * area);
/* The next copy: the longest band of rows of the frame that the shadow
 * holds @src_y - @dest->y rows away under the shift most changed rows
 * agree on (at least TILER_SCROLL_MIN_ROWS rows, checked pixel by pixel),
 * same columns. The caller moves the shadow (gst_spice_copy_bits_apply())
 * and tells with tiler_scroll_moved() before asking for the next. */
gboolean tiler_scroll_next (TilerScroll * s, GstVideoRectangle * dest,
    gint * src_y);
void     tiler_scroll_moved (TilerScroll * s, const GstVideoRectangle * dest,
    gint src_y);

G_END_DECLS
