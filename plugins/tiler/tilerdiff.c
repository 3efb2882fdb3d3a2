/* spicetiler: shadow diff at tile and cell granularity
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The damage is spread over tiles (tile-size, 64 px by default); inside a
 * damaged tile only the damaged rows and columns are compared. A row is
 * compared in one memcmp first; only rows that differ are looked at per
 * 16-px cell, and each cell keeps the bounding box of its changed pixels.
 * The cells are what the classifier, the lossy map and the refinement
 * work on; tiles only bound the work and give the first regions.
 */
#include <string.h>

#include "tilerdiff.h"

void
tiler_diff_init (TilerDiff * d, gint width, gint height, gint tile)
{
  guint i, ncells;

  memset (d, 0, sizeof (*d));
  d->width = width;
  d->height = height;
  d->tile = MAX (TILER_CELL, tile - tile % TILER_CELL);
  d->ncx = (width + TILER_CELL - 1) / TILER_CELL;
  d->ncy = (height + TILER_CELL - 1) / TILER_CELL;
  d->ntx = (width + d->tile - 1) / d->tile;
  d->nty = (height + d->tile - 1) / d->tile;
  ncells = d->ncx * d->ncy;
  d->box = g_new0 (TilerCellBox, ncells);
  d->flags = g_new0 (guint8, ncells);
  d->lossy_rt = g_new (GstClockTime, ncells);
  for (i = 0; i < ncells; i++)
    d->lossy_rt[i] = TILER_RT_UNKNOWN;
  d->tile_clip = g_new0 (GstVideoRectangle, d->ntx * d->nty);
  d->marked = g_new (guint32, d->ntx * d->nty);
  d->touched = g_new (guint32, ncells);
}

void
tiler_diff_clear (TilerDiff * d)
{
  g_free (d->box);
  g_free (d->flags);
  g_free (d->lossy_rt);
  g_free (d->tile_clip);
  g_free (d->marked);
  g_free (d->touched);
  memset (d, 0, sizeof (*d));
}

void
tiler_diff_begin (TilerDiff * d)
{
  guint i;

  for (i = 0; i < d->n_touched; i++) {
    d->flags[d->touched[i]] = 0;
    d->box[d->touched[i]] = (TilerCellBox) {
    0, 0, 0, 0};
  }
  d->n_touched = 0;
  for (i = 0; i < d->n_marked; i++)
    d->tile_clip[d->marked[i]] = (GstVideoRectangle) {
    0, 0, 0, 0};
  d->n_marked = 0;
}

void
tiler_diff_mark (TilerDiff * d, const GstVideoRectangle * damage)
{
  GstVideoRectangle r = *damage;
  gint tx, ty;

  if (!gst_spice_rect_clip (&r, d->width, d->height))
    return;
  for (ty = r.y / d->tile; ty <= (r.y + r.h - 1) / d->tile; ty++) {
    for (tx = r.x / d->tile; tx <= (r.x + r.w - 1) / d->tile; tx++) {
      GstVideoRectangle t = { tx * d->tile, ty * d->tile, d->tile, d->tile };
      guint ti = ty * d->ntx + tx;
      GstVideoRectangle *clip = &d->tile_clip[ti];

      gst_spice_rect_intersect (&t, &r, &t);
      if (gst_spice_rect_is_empty (clip))
        d->marked[d->n_marked++] = ti;
      gst_spice_rect_union (clip, &t, clip);
    }
  }
}

void
tiler_diff_mark_all (TilerDiff * d)
{
  GstVideoRectangle all = { 0, 0, d->width, d->height };

  tiler_diff_mark (d, &all);
}

static inline void
touch (TilerDiff * d, guint ci)
{
  if (d->flags[ci] == 0)
    d->touched[d->n_touched++] = ci;
}

/* first and last differing pixel in [x0, x1) of a row */
static inline gint
first_diff (const guint32 * a, const guint32 * b, gint x0, gint x1)
{
  while (x0 < x1 && a[x0] == b[x0])
    x0++;
  return x0;
}

static inline gint
last_diff (const guint32 * a, const guint32 * b, gint x0, gint x1)
{
  while (x1 > x0 && a[x1 - 1] == b[x1 - 1])
    x1--;
  return x1;
}

#define ROW(base, stride, y) ((const guint32 *) ((base) + (gsize) (y) * (stride)))

/* the changed box of one cell, restricted to columns [x0, x1) and rows
 * [y0, y1): first and last changed rows by memcmp from both ends, the
 * columns from those rows, then only the margins left of and right of the
 * box are scanned in the rows between */
static gboolean
diff_cell (TilerDiff * d, const guint8 * frame, gint fstride,
    const guint8 * shadow, gint sstride, gint cx, gint cy, gint x0, gint x1,
    gint y0, gint y1)
{
  gsize n = (gsize) (x1 - x0) * 4;
  gint top, bottom, bx0, bx1, y, base = cx * TILER_CELL;
  const guint32 *f, *sh;
  guint ci;

  for (top = y0; top < y1; top++)
    if (memcmp (ROW (frame, fstride, top) + x0, ROW (shadow, sstride,
                top) + x0, n) != 0)
      break;
  if (top == y1)
    return FALSE;
  for (bottom = y1 - 1; bottom > top; bottom--)
    if (memcmp (ROW (frame, fstride, bottom) + x0, ROW (shadow, sstride,
                bottom) + x0, n) != 0)
      break;
  f = ROW (frame, fstride, top);
  sh = ROW (shadow, sstride, top);
  bx0 = first_diff (f, sh, x0, x1);
  bx1 = last_diff (f, sh, bx0, x1);
  if (bottom != top) {
    f = ROW (frame, fstride, bottom);
    sh = ROW (shadow, sstride, bottom);
    bx0 = first_diff (f, sh, x0, bx0);
    bx1 = MAX (bx1, last_diff (f, sh, bx1, x1));
  }
  for (y = top + 1; y < bottom && (bx0 > x0 || bx1 < x1); y++) {
    f = ROW (frame, fstride, y);
    sh = ROW (shadow, sstride, y);
    if (bx0 > x0)
      bx0 = first_diff (f, sh, x0, bx0);
    if (bx1 < x1)
      bx1 = MAX (bx1, last_diff (f, sh, bx1, x1));
  }
  ci = cy * d->ncx + cx;
  touch (d, ci);
  d->flags[ci] |= TILER_CELL_CHANGED;
  d->box[ci] = (TilerCellBox) {
  bx0 - base, top - cy * TILER_CELL, bx1 - base, bottom + 1 - cy * TILER_CELL};
  return TRUE;
}

/* first changed row in [y0, y1) from the top (or the bottom), comparing
 * columns [x, x + w) */
static gint
first_changed_row (const guint8 * frame, gint fstride, const guint8 * shadow,
    gint sstride, gint x, gint w, gint y0, gint y1, gboolean from_bottom)
{
  gsize n = (gsize) w * 4;
  gint y;

  if (!from_bottom) {
    for (y = y0; y < y1; y++)
      if (memcmp (ROW (frame, fstride, y) + x, ROW (shadow, sstride, y) + x,
              n) != 0)
        return y;
    return y1;
  }
  for (y = y1 - 1; y >= y0; y--)
    if (memcmp (ROW (frame, fstride, y) + x, ROW (shadow, sstride, y) + x,
            n) != 0)
      return y;
  return y0 - 1;
}

guint
tiler_diff_run (TilerDiff * d, const guint8 * frame, gint fstride,
    const guint8 * shadow, gint sstride)
{
  guint i, j, k, changed = 0;

  for (i = 0; i < d->n_marked; i = j) {
    const GstVideoRectangle *g = &d->tile_clip[d->marked[i]];
    gint gx = g->x, gw = g->w, gtop, gbottom;

    /* a group: following tiles of the same tile row with the same rows,
     * side by side; one wide memcmp per row finds the rows worth a look */
    for (j = i + 1; j < d->n_marked; j++) {
      const GstVideoRectangle *c = &d->tile_clip[d->marked[j]];

      if (d->marked[j] != d->marked[j - 1] + 1 || c->y != g->y ||
          c->h != g->h || c->x != gx + gw)
        break;
      gw += c->w;
    }
    gtop = first_changed_row (frame, fstride, shadow, sstride, gx, gw, g->y,
        g->y + g->h, FALSE);
    if (gtop == g->y + g->h)
      continue;
    gbottom = first_changed_row (frame, fstride, shadow, sstride, gx, gw,
        gtop, g->y + g->h, TRUE);

    for (k = i; k < j; k++) {
      const GstVideoRectangle *c = &d->tile_clip[d->marked[k]];
      gint top, bottom, cx, cy;

      top = j - i == 1 ? gtop : first_changed_row (frame, fstride, shadow,
          sstride, c->x, c->w, gtop, gbottom + 1, FALSE);
      if (top > gbottom)
        continue;
      bottom = j - i == 1 ? gbottom : first_changed_row (frame, fstride,
          shadow, sstride, c->x, c->w, top, gbottom + 1, TRUE);
      for (cy = top / TILER_CELL; cy <= bottom / TILER_CELL; cy++) {
        gint y0 = MAX (top, cy * TILER_CELL);
        gint y1 = MIN (bottom + 1, (cy + 1) * TILER_CELL);

        for (cx = c->x / TILER_CELL; cx <= (c->x + c->w - 1) / TILER_CELL; cx++) {
          gint x0 = MAX (c->x, cx * TILER_CELL);
          gint x1 = MIN (c->x + c->w, (cx + 1) * TILER_CELL);

          changed += diff_cell (d, frame, fstride, shadow, sstride, cx, cy,
              x0, x1, y0, y1);
        }
      }
    }
  }
  return changed;
}

void
tiler_diff_cell_rect (TilerDiff * d, gint cx, gint cy, GstVideoRectangle * r)
{
  *r = (GstVideoRectangle) {
  cx *TILER_CELL, cy * TILER_CELL, TILER_CELL, TILER_CELL};
  gst_spice_rect_clip (r, d->width, d->height);
}

void
tiler_diff_force_cell (TilerDiff * d, gint cx, gint cy)
{
  guint ci = TILER_CELL_INDEX (d, cx, cy);
  GstVideoRectangle r;

  tiler_diff_cell_rect (d, cx, cy, &r);
  touch (d, ci);
  d->flags[ci] |= TILER_CELL_FORCED | TILER_CELL_CHANGED;
  d->box[ci] = (TilerCellBox) {
  0, 0, r.w, r.h};
}

gboolean
tiler_diff_cell_box (TilerDiff * d, gint cx, gint cy, GstVideoRectangle * r)
{
  const TilerCellBox *b = &d->box[TILER_CELL_INDEX (d, cx, cy)];

  if (b->x1 == 0)
    return FALSE;
  *r = (GstVideoRectangle) {
  cx *TILER_CELL + b->x0, cy * TILER_CELL + b->y0,
        b->x1 - b->x0, b->y1 - b->y0};
  return TRUE;
}

gboolean
tiler_diff_cell_inside (TilerDiff * d, gint cx, gint cy,
    const GstVideoRectangle * r)
{
  GstVideoRectangle c;

  tiler_diff_cell_rect (d, cx, cy, &c);
  return gst_spice_rect_contains (r, &c);
}

/* Per tile the union of its changed cells (outside @exclude); tiles of one
 * tile row whose rectangles touch are joined, then equal column spans of
 * consecutive rows, before the least-growth limit (which is quadratic in
 * the number of rectangles). */
void
tiler_diff_collect (TilerDiff * d, const GstVideoRectangle * exclude,
    guint max_rects, GstSpiceRegion * out)
{
  gint per = d->tile / TILER_CELL, tx, ty;
  GstVideoRectangle *row_prev = NULL;
  GArray *rects = out->rects;
  guint i, j;

  gst_spice_region_reset (out);
  for (ty = 0; ty < d->nty; ty++) {
    GstVideoRectangle run = { 0, 0, 0, 0 };

    for (tx = 0; tx < d->ntx; tx++) {
      GstVideoRectangle t = { 0, 0, 0, 0 }, cb;
      gint cx, cy;

      for (cy = ty * per; cy < MIN ((ty + 1) * per, d->ncy); cy++)
        for (cx = tx * per; cx < MIN ((tx + 1) * per, d->ncx); cx++) {
          guint ci = TILER_CELL_INDEX (d, cx, cy);

          if (!(d->flags[ci] & TILER_CELL_CHANGED))
            continue;
          if (exclude && tiler_diff_cell_inside (d, cx, cy, exclude))
            continue;
          if (tiler_diff_cell_box (d, cx, cy, &cb))
            gst_spice_rect_union (&t, &cb, &t);
        }
      if (gst_spice_rect_is_empty (&t)) {
        if (!gst_spice_rect_is_empty (&run))
          g_array_append_val (rects, run);
        run = (GstVideoRectangle) {
        0, 0, 0, 0};
        continue;
      }
      /* join with the run if both touch the tile border between them */
      if (!gst_spice_rect_is_empty (&run) && run.x + run.w == t.x)
        gst_spice_rect_union (&run, &t, &run);
      else {
        if (!gst_spice_rect_is_empty (&run))
          g_array_append_val (rects, run);
        run = t;
      }
    }
    if (!gst_spice_rect_is_empty (&run))
      g_array_append_val (rects, run);
  }
  (void) row_prev;
  /* vertical join of equal spans that touch */
  for (i = 0; i < rects->len; i++) {
    GstVideoRectangle *a = &g_array_index (rects, GstVideoRectangle, i);

    for (j = i + 1; j < rects->len;) {
      GstVideoRectangle *b = &g_array_index (rects, GstVideoRectangle, j);

      if (b->x == a->x && b->w == a->w && b->y == a->y + a->h) {
        a->h += b->h;
        g_array_remove_index (rects, j);
      } else
        j++;
    }
  }
  gst_spice_region_limit (out, max_rects);
}
