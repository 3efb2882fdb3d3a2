/* spicetiler: heat map and stream region choice
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <gst/spice/gstspice.h>

G_BEGIN_DECLS

typedef struct {
  GstClockTime run_start;       /* first change of the current run */
  GstClockTime last_change;
  guint run_frames;             /* updates with a change in this run */
  guint photo_frames;           /* ... of which looked photographic */
  GstClockTime photo_at;        /* update last counted as photographic */
  guint64 lossless_bytes;       /* lossless draws of this run's changes */
  guint lossless_sends;         /* ... in how many updates (frames) */
  GstClockTime cost_at;         /* update last counted in lossless_sends */
} TilerHeatTile;

typedef struct {
  /* parameters */
  guint min_frames;             /* changes in a run before a tile is hot */
  GstClockTime max_gap;         /* a longer pause ends a run */
  GstClockTime timeout;         /* a stream without change this long ends */
  guint min_area;               /* pixels */
  gboolean all;                 /* stream any content, not only photographic */
  guint64 cost_bytes;           /* lossless bytes per change above which a
                                 * tile's run is hot whatever it looks
                                 * like (0 = off) */
  /* geometry */
  gint width, height, tile, ntx, nty;
  TilerHeatTile *tiles;
  guint8 *label;                /* scratch for the connected groups */
  gint *queue;
} TilerHeat;

typedef enum {
  TILER_STREAM_NONE,            /* no stream, none to start */
  TILER_STREAM_START,           /* start a stream at rect */
  TILER_STREAM_CONTINUE,
  TILER_STREAM_RESTART,         /* new geometry: end the old, start at rect */
  TILER_STREAM_END,
} TilerStreamAction;

typedef struct {
  gboolean active;
  GstVideoRectangle rect;
  GstClockTime last_change;
  GstClockTime shrink_since;
} TilerStreamState;

void     tiler_heat_init (TilerHeat * h, gint width, gint height, gint tile);
void     tiler_heat_clear (TilerHeat * h);
void     tiler_heat_reset (TilerHeat * h);
/* tile (tx, ty) changed in the update at @now */
void     tiler_heat_touch (TilerHeat * h, gint tx, gint ty, GstClockTime now,
    gboolean photo);
/* whether tile (tx, ty) already counted as photographic in the update at
 * @now: its other cells have nothing more to tell the heat map */
gboolean tiler_heat_photo_counted (const TilerHeat * h, gint tx, gint ty,
    GstClockTime now);
/* @bytes of lossless draws went out for @r: counted (by area) for the
 * tiles that changed in the update at @now */
void     tiler_heat_add_cost (TilerHeat * h, const GstVideoRectangle * r,
    gsize bytes, GstClockTime now);
/* bounding box of the hot tiles, grid-aligned and clipped, even-sized */
gboolean tiler_heat_candidate (TilerHeat * h, GstClockTime now,
    GstVideoRectangle * out);
/* decides what the stream does after the update at @now; @changed: the
 * stream area changed in this update; @allowed: streaming is on */
TilerStreamAction tiler_heat_decide (TilerHeat * h, TilerStreamState * s,
    GstClockTime now, gboolean changed, gboolean allowed,
    GstVideoRectangle * rect);

G_END_DECLS
