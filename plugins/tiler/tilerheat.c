/* spicetiler: heat map and stream region choice
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Every tile keeps its current run of activity: a run goes on while the
 * tile changes again within max-gap, and a tile is hot once its run has
 * min-frames changes (and, unless all, at least a fifth of them looked
 * photographic, noise included). The stream rectangle is the bounding box
 * of the hot tiles on the tile grid, so it only changes by whole tiles:
 *  - it starts when that box covers min-area pixels;
 *  - it only grows (a restart with the union) when hot tiles appear
 *    outside it, and only shrinks when the hot box stays under half of it
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
  h->tiles = g_new0 (TilerHeatTile, h->ntx * h->nty);
  tiler_heat_reset (h);
}

void
tiler_heat_clear (TilerHeat * h)
{
  g_free (h->tiles);
  h->tiles = NULL;
}

void
tiler_heat_reset (TilerHeat * h)
{
  gint i;

  for (i = 0; i < h->ntx * h->nty; i++)
    h->tiles[i] = (TilerHeatTile) { GST_CLOCK_TIME_NONE, GST_CLOCK_TIME_NONE,
      0, 0, GST_CLOCK_TIME_NONE
    };
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
  }
  t->last_change = now;
  t->run_frames++;
  if (photo) {
    t->photo_frames++;
    t->photo_at = now;
  }
}

static gboolean
tile_hot (TilerHeat * h, const TilerHeatTile * t, GstClockTime now)
{
  if (!GST_CLOCK_TIME_IS_VALID (t->last_change) || now < t->last_change ||
      now - t->last_change > h->max_gap)
    return FALSE;
  if (t->run_frames < h->min_frames)
    return FALSE;
  return h->all || t->photo_frames * 5 >= t->run_frames;
}

gboolean
tiler_heat_candidate (TilerHeat * h, GstClockTime now, GstVideoRectangle * out)
{
  GstVideoRectangle box = { 0, 0, 0, 0 };
  gint tx, ty;

  for (ty = 0; ty < h->nty; ty++)
    for (tx = 0; tx < h->ntx; tx++)
      if (tile_hot (h, &h->tiles[ty * h->ntx + tx], now)) {
        GstVideoRectangle t = { tx * h->tile, ty * h->tile, h->tile, h->tile };

        gst_spice_rect_union (&box, &t, &box);
      }
  if (!gst_spice_rect_clip (&box, h->width, h->height))
    return FALSE;
  box.w &= ~1;
  box.h &= ~1;
  if (box.w < 16 || box.h < 16 || gst_spice_rect_area (&box) < h->min_area)
    return FALSE;
  *out = box;
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
  if (have && !gst_spice_rect_contains (&s->rect, &cand)) {
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
