/* spicetiler: shadow diff at tile and cell granularity
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <gst/spice/gstspice.h>

G_BEGIN_DECLS

/* Cells are the classification and refinement grain: 16x16 pixels. */
#define TILER_CELL 16

typedef enum {
  TILER_CELL_CHANGED = 1 << 0,  /* box holds changed pixels */
  TILER_CELL_FORCED = 1 << 1,   /* must be sent lossless (refinement) */
  TILER_CELL_CLASSIFIED = 1 << 2,
  TILER_CELL_PHOTO = 1 << 3,    /* photographic: may be sent lossy */
  TILER_CELL_CONSUMED = 1 << 4, /* already emitted in this update */
} TilerCellFlags;

/* lossy_rt values besides a running time */
#define TILER_RT_EXACT GST_CLOCK_TIME_NONE      /* client has the shadow */
#define TILER_RT_UNKNOWN ((GstClockTime) -2)    /* send lossless at once */

/* changed pixels of a cell, cell-local, half-open; empty when x1 == 0 */
typedef struct {
  guint8 x0, y0, x1, y1;
} TilerCellBox;

typedef struct {
  gint width, height;           /* frame */
  gint tile;                    /* tile size, a multiple of TILER_CELL */
  gint ncx, ncy, ntx, nty;
  TilerCellBox *box;            /* ncx * ncy */
  guint8 *flags;                /* ncx * ncy, TilerCellFlags */
  GstClockTime *lossy_rt;       /* ncx * ncy: running time of the last lossy
                                 * send, or TILER_RT_EXACT/UNKNOWN */
  GstVideoRectangle *tile_clip; /* ntx * nty: damage inside each tile */
  guint32 *marked;              /* tiles with damage in this update */
  guint n_marked;
  guint32 *touched;             /* cells with flags in this update */
  guint n_touched;
} TilerDiff;

void     tiler_diff_init (TilerDiff * d, gint width, gint height, gint tile);
void     tiler_diff_clear (TilerDiff * d);
/* resets the per-update state (boxes, flags, marks) */
void     tiler_diff_begin (TilerDiff * d);
void     tiler_diff_mark (TilerDiff * d, const GstVideoRectangle * damage);
void     tiler_diff_mark_all (TilerDiff * d);
/* compares @frame with @shadow inside the marked damage; returns the number
 * of changed cells */
guint    tiler_diff_run (TilerDiff * d, const guint8 * frame, gint fstride,
    const guint8 * shadow, gint sstride);
/* flags a cell as to be sent whole and lossless */
void     tiler_diff_force_cell (TilerDiff * d, gint cx, gint cy);
/* the cell's rectangle on the frame (clipped) and its box in frame pixels */
void     tiler_diff_cell_rect (TilerDiff * d, gint cx, gint cy,
    GstVideoRectangle * r);
gboolean tiler_diff_cell_box (TilerDiff * d, gint cx, gint cy,
    GstVideoRectangle * r);
/* trims each damaged tile to its changed (or forced) cells outside
 * @exclude (may be NULL), merges neighbours and limits the result to
 * @max_rects with least-growth merging */
void     tiler_diff_collect (TilerDiff * d, const GstVideoRectangle * exclude,
    guint max_rects, GstSpiceRegion * out);
/* whether the cell lies completely inside @r */
gboolean tiler_diff_cell_inside (TilerDiff * d, gint cx, gint cy,
    const GstVideoRectangle * r);

#define TILER_CELL_INDEX(d,cx,cy) ((cy) * (d)->ncx + (cx))

G_END_DECLS
