/* spicetiler: heat map and stream region choice
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Every tile keeps its current run of activity: a run goes on while the
 * tile changes again within max-gap, and a tile is hot once its run has
 * min-frames changes (and, unless all, at least a fifth of them looked
 * photographic, noise included, or its lossless draws cost more than
 * cost-bytes per change: what a stream frame would not). The stream
 * rectangle is the bounding box
 * of the largest connected group of hot tiles, on the tile grid, so it
 * only changes by whole tiles:
 *  - it starts when that box covers min-area pixels;
 *  - it only grows (a restart with the union) when its hot group extends
 *    outside it (a separate hot area waits for this stream to end), and
 *    only shrinks when the hot box stays under half of it
 *    for a whole timeout, so a steady animation keeps one stream and one
 *    caps;
 *  - it ends after timeout without change inside it.
 * Timing is running time of the frames, never the wall clock.
 */
#include <string.h>

#include "tilerheat.h"

void
tiler_heat_init (TilerHeat * h, gint width, gint height, gint tile)
{
  h->width = width;
  h->height = height;
  h->tile = tile;
  h->ntx = (width + tile - 1) / tile;
  h->nty = (height + tile - 1) / tile;
  g_free (h->tiles);
  g_free (h->label);
  g_free (h->queue);
  h->tiles = g_new0 (TilerHeatTile, h->ntx * h->nty);
  h->label = g_new0 (guint8, h->ntx * h->nty);
  h->queue = g_new0 (gint, h->ntx * h->nty);
  tiler_heat_reset (h);
}

void
tiler_heat_clear (TilerHeat * h)
{
  g_free (h->tiles);
  g_free (h->label);
  g_free (h->queue);
  h->tiles = NULL;
  h->label = NULL;
  h->queue = NULL;
}

void
tiler_heat_reset (TilerHeat * h)
{
  gint i;

  for (i = 0; i < h->ntx * h->nty; i++)
    h->tiles[i] = (TilerHeatTile) {
    GST_CLOCK_TIME_NONE, GST_CLOCK_TIME_NONE, 0, 0, GST_CLOCK_TIME_NONE, 0,
        0, GST_CLOCK_TIME_NONE};
}

void
tiler_heat_touch (TilerHeat * h, gint tx, gint ty, GstClockTime now,
    gboolean photo)
{
  TilerHeatTile *t = &h->tiles[ty * h->ntx + tx];

  if (t->last_change == now && t->run_frames > 0) {
    if (photo && t->photo_at != now) {
      t->photo_frames++;
      t->photo_at = now;
    }
    return;
  }
  if (!GST_CLOCK_TIME_IS_VALID (t->last_change) || now < t->last_change ||
      now - t->last_change > h->max_gap) {
    t->run_start = now;
    t->run_frames = 0;
    t->photo_frames = 0;
    t->lossless_bytes = 0;
    t->lossless_sends = 0;
    t->cost_at = GST_CLOCK_TIME_NONE;
  }
  t->last_change = now;
  t->run_frames++;
  if (photo) {
    t->photo_frames++;
    t->photo_at = now;
  }
}

gboolean
tiler_heat_photo_counted (const TilerHeat * h, gint tx, gint ty,
    GstClockTime now)
{
  const TilerHeatTile *t = &h->tiles[ty * h->ntx + tx];

  return t->run_frames > 0 && t->last_change == now && t->photo_at == now;
}

static gboolean
tile_hot (TilerHeat * h, const TilerHeatTile * t, GstClockTime now)
{
  if (!GST_CLOCK_TIME_IS_VALID (t->last_change) || now < t->last_change ||
      now - t->last_change > h->max_gap)
    return FALSE;
  if (t->run_frames < h->min_frames)
    return FALSE;
  return h->all || t->photo_frames * 5 >= t->run_frames ||
      (h->cost_bytes > 0 && t->lossless_sends > 0 &&
      t->lossless_bytes >= h->cost_bytes * t->lossless_sends);
}

void
tiler_heat_add_cost (TilerHeat * h, const GstVideoRectangle * r, gsize bytes,
    GstClockTime now)
{
  guint64 area = gst_spice_rect_area (r);
  gint tx, ty;

  if (area == 0)
    return;
  for (ty = r->y / h->tile; ty <= (r->y + r->h - 1) / h->tile; ty++)
    for (tx = r->x / h->tile; tx <= (r->x + r->w - 1) / h->tile; tx++) {
      GstVideoRectangle c = { tx * h->tile, ty * h->tile, h->tile, h->tile };
      TilerHeatTile *t = &h->tiles[ty * h->ntx + tx];

      if (t->last_change != now || !gst_spice_rect_intersect (&c, r, &c))
        continue;
      t->lossless_bytes += bytes * gst_spice_rect_area (&c) / area;
      if (t->cost_at != now) {
        t->lossless_sends++;
        t->cost_at = now;
      }
    }
}

/* The largest 8-connected group of hot tiles (by tile count), as a
 * bounding box: a spinner or a second small animation elsewhere does not
 * stretch the stream over the desktop between them. */
gboolean
tiler_heat_candidate (TilerHeat * h, GstClockTime now, GstVideoRectangle * out)
{
  gint n = h->ntx * h->nty, i, best_count = 0, k;
  GstVideoRectangle best = { 0, 0, 0, 0 };

  for (i = 0; i < n; i++)
    h->label[i] = tile_hot (h, &h->tiles[i], now) ? 1 : 0;
  for (i = 0; i < n; i++) {
    GstVideoRectangle box = { 0, 0, 0, 0 };
    gint head = 0, tail = 0, count = 0;

    if (h->label[i] != 1)
      continue;
    h->label[i] = 2;
    h->queue[tail++] = i;
    while (head < tail) {
      gint t = h->queue[head++], tx = t % h->ntx, ty = t / h->ntx;
      GstVideoRectangle r = { tx * h->tile, ty * h->tile, h->tile, h->tile };

      gst_spice_rect_union (&box, &r, &box);
      count++;
      for (k = 0; k < 9; k++) {
        gint nx = tx + k % 3 - 1, ny = ty + k / 3 - 1, ni;

        if (nx < 0 || ny < 0 || nx >= h->ntx || ny >= h->nty)
          continue;
        ni = ny * h->ntx + nx;
        if (h->label[ni] == 1) {
          h->label[ni] = 2;
          h->queue[tail++] = ni;
        }
      }
    }
    if (count > best_count) {
      best_count = count;
      best = box;
    }
  }
  if (!gst_spice_rect_clip (&best, h->width, h->height))
    return FALSE;
  best.w &= ~1;
  best.h &= ~1;
  if (best.w < 16 || best.h < 16 || gst_spice_rect_area (&best) < h->min_area)
    return FALSE;
  *out = best;
  return TRUE;
}

TilerStreamAction
tiler_heat_decide (TilerHeat * h, TilerStreamState * s, GstClockTime now,
    gboolean changed, gboolean allowed, GstVideoRectangle * rect)
{
  GstVideoRectangle cand;
  gboolean have;

  if (!allowed)
    return s->active ? TILER_STREAM_END : TILER_STREAM_NONE;
  have = tiler_heat_candidate (h, now, &cand);
  if (!s->active) {
    if (!have)
      return TILER_STREAM_NONE;
    *rect = cand;
    return TILER_STREAM_START;
  }
  if (changed)
    s->last_change = now;
  if (GST_CLOCK_TIME_IS_VALID (s->last_change) && now > s->last_change &&
      now - s->last_change > h->timeout)
    return TILER_STREAM_END;
  /* grow over the hot area the stream is part of; a separate one waits */
  if (have && !gst_spice_rect_contains (&s->rect, &cand) &&
      gst_spice_rect_intersect (&s->rect, &cand, NULL)) {
    gst_spice_rect_union (&s->rect, &cand, rect);
    rect->w &= ~1;
    rect->h &= ~1;
    return TILER_STREAM_RESTART;
  }
  if (have && gst_spice_rect_area (&cand) * 2 < gst_spice_rect_area (&s->rect)) {
    if (!GST_CLOCK_TIME_IS_VALID (s->shrink_since))
      s->shrink_since = now;
    else if (now - s->shrink_since > h->timeout) {
      *rect = cand;
      return TILER_STREAM_RESTART;
    }
  } else
    s->shrink_since = GST_CLOCK_TIME_NONE;
  return TILER_STREAM_CONTINUE;
}
