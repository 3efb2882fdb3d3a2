/* spicetiler: the engine (one update: diff, scroll, classification, stream
 * decision, draws, refinement)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * tiler_engine_update() diffs the damage against the shadow, moves what
 * scrolled with a copy (and diffs again), classifies the changed cells,
 * feeds the heat map, decides on the stream and on its frame (which the
 * caller pushes before any draw of the same frame: the shadow takes the
 * stream area at once), forces the lossy cells that are due to lossless,
 * and writes the regions smallest first, in bands, within the update
 * budget. The leaves (tilerdiff, tilerscroll, tilerheat, tilerencode,
 * tilerclassify) do the work; the engine calls nothing above it. Worker
 * thread only (see tilerengine.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "tilerengine.h"
#include "tilerclassify.h"

GST_DEBUG_CATEGORY_STATIC (tiler_engine_debug);
#define GST_CAT_DEFAULT tiler_engine_debug

#define FALLBACK_FRAME_DURATION (GST_SECOND / 30)
/* Streaming by cost, on a link the sink announced: a tile whose changes
 * went out as lossless draws of more than a byte per TILER_COST_PX_PER_BYTE
 * pixels of the tile (2 bits per pixel: an MJPEG frame of natural content,
 * several VP8 frames) and more than TILER_COST_LINK_US of the link each
 * is hot whatever it looks like. On a fast link (a LAN) the draws are
 * cheap and stay; inside an area that scrolls they count as free. */
#define TILER_COST_PX_PER_BYTE 4
#define TILER_COST_LINK_US 1000

static gboolean scroll_zone_live (TilerEngine * e, GstClockTime now);

/* a run of cells of one class, while building an update */
typedef struct
{
  GstVideoRectangle r;
  gint cx0, cx1, cy0, cy1;
  gboolean lossy;
  gboolean dead;
} TilerRun;

struct _TilerEngine
{
  /* the surface */
  GstVideoInfo info;
  gboolean have_info;
  guint8 *shadow;               /* what the client has been sent */
  gint shadow_stride;
  gint tile_applied;
  TilerDiff diff;
  TilerHeat heat;
  TilerScroll scroll;
  GstVideoRectangle scroll_zone;        /* where copies were made lately */
  GstClockTime scroll_zone_rt;  /* running time of the last copy */
  TilerEncoder enc;
  GstSpiceRegion carry;         /* damage left for the next update */
  GstSpiceRegion damage;        /* this update's */
  GstSpiceRegion regions;
  GArray *runs;
  /* the picture: the input as of the last frame, the engine's own (every
   * input is applied onto it, whole frames only where damaged), mapped
   * for its lifetime; a frame is current once one was applied */
  GstBuffer *picture;
  GstVideoFrame frame;
  gboolean have_frame;
  GstClockTime cur_now, cur_pts, cur_duration;
  GstClockTime last_frame_rt;   /* running time of the last new frame */
  gboolean have_seq;
  guint64 seq;
  GstClockTime next_refine;
  /* the stream */
  TilerStreamState stream;
  guint stream_id;
  guint stream_scale;           /* divisor of the current stream's size */
  gboolean stream_dirty;        /* the area changed since its last frame */
  gboolean keyframe_pending;
  GstClockTime last_stream_rt;
  GstClockTime fps_window_start;
  guint fps_window_frames;
  /* the update being made */
  TilerParams p;                /* in force: budgets and quality applied */
  const TilerEngineInput *in;
  TilerEngineResult *res;
  GstSpiceDrawsWriter *writer;
  gsize last_update_size;
  gboolean pressure;            /* the last update ran out of a budget the
                                 * sink announced */
  gboolean yield_cut;           /* this update ended early for a small
                                 * frame (TilerEngineInput.yield) */
  gboolean yielded;             /* the last update that sent draws did */
  TilerEngineStats stats;
};

static void setup_geometry (TilerEngine * e, guint tile_size);
static void release_frame (TilerEngine * e);
static void picture_free (TilerEngine * e);

static void
mark_lossy (TilerEngine * e, const GstVideoRectangle * r, GstClockTime t)
{
  TilerDiff *d = &e->diff;
  gint cx, cy;

  for (cy = r->y / TILER_CELL; cy <= (r->y + r->h - 1) / TILER_CELL; cy++)
    for (cx = r->x / TILER_CELL; cx <= (r->x + r->w - 1) / TILER_CELL; cx++)
      d->lossy_rt[TILER_CELL_INDEX (d, cx, cy)] = t;
}

static void
mark_exact (TilerEngine * e, const GstVideoRectangle * r)
{
  TilerDiff *d = &e->diff;
  gint cx, cy;

  if (gst_spice_rect_is_empty (r))
    return;
  for (cy = r->y / TILER_CELL; cy <= (r->y + r->h - 1) / TILER_CELL; cy++)
    for (cx = r->x / TILER_CELL; cx <= (r->x + r->w - 1) / TILER_CELL; cx++)
      if (tiler_diff_cell_inside (d, cx, cy, r))
        d->lossy_rt[TILER_CELL_INDEX (d, cx, cy)] = TILER_RT_EXACT;
}

static void
copy_to_shadow (TilerEngine * e, const GstVideoRectangle * r)
{
  gst_spice_blit_bgrx (e->shadow, e->shadow_stride, r->x, r->y,
      GST_VIDEO_FRAME_PLANE_DATA (&e->frame, 0),
      GST_VIDEO_FRAME_PLANE_STRIDE (&e->frame, 0), r->x, r->y, r->w, r->h);
}

/* Rows per band: band-size raw bytes, in multiples of 16 rows (JPEG MCUs).
 * JPEG bands may hold 3x the raw bytes: they compress about 10:1 where LZ4
 * compresses text about 5:1, so both end up at tens of KiB. */
static gint
band_rows_for (const TilerParams * p, gint w, gboolean lossy)
{
  guint64 bytes = (guint64) p->band_size * (lossy ? 3 : 1);
  gint rows = (gint) MIN (bytes / ((guint64) w * 4), G_MAXINT);

  if (rows >= 16)
    return rows - rows % 16;
  return 16;
}

static void
count_region (TilerEngine * e, GstSpiceImageType type, gsize size)
{
  e->stats.regions++;
  switch (type) {
    case GST_SPICE_IMAGE_BITMAP:
      e->stats.regions_bitmap++;
      e->stats.bytes_bitmap += size;
      break;
    case GST_SPICE_IMAGE_LZ4:
      e->stats.regions_lz4++;
      e->stats.bytes_lz4 += size;
      break;
    case GST_SPICE_IMAGE_JPEG:
      e->stats.regions_jpeg++;
      e->stats.bytes_jpeg += size;
      break;
    case GST_SPICE_IMAGE_COPY_BITS:
      e->stats.regions_copy++;
      break;
  }
}

/* whether a small frame waits and this update may end early for it
 * (TilerEngineInput.yield) */
static gboolean
should_yield (TilerEngine * e)
{
  return e->in->yield && !e->yielded &&
      gst_spice_draws_writer_n_regions (e->writer) > 0 &&
      g_atomic_int_get (e->in->yield);
}

/* Sends @r from the current frame in bands; returns FALSE when the update
 * budget ran out or a small frame waits (should_yield()): the rest went
 * to carry. */
static gboolean
emit_rect (TilerEngine * e, const GstVideoRectangle * r, gboolean lossy,
    gboolean no_budget)
{
  const TilerParams *p = &e->p;
  const guint8 *src = GST_VIDEO_FRAME_PLANE_DATA (&e->frame, 0);
  gint fstride = GST_VIDEO_FRAME_PLANE_STRIDE (&e->frame, 0);
  gint rows, y, end = r->y + r->h;

  if (lossy && gst_spice_rect_area (r) < TILER_JPEG_MIN_PIXELS)
    lossy = FALSE;
  rows = band_rows_for (p, r->w, lossy);
  for (y = r->y; y < end; y += rows) {
    GstVideoRectangle band = { r->x, y, r->w, MIN (rows, end - y) };
    const guint8 *px = src + (gsize) y * fstride + (gsize) r->x * 4;
    GstSpiceImageType type = GST_SPICE_IMAGE_JPEG;
    gsize size = 0;
    gboolean over_budget = !no_budget && p->update_budget > 0 &&
        gst_spice_draws_writer_n_regions (e->writer) > 0 &&
        gst_spice_draws_writer_size (e->writer) >= p->update_budget;

    if (over_budget || (!no_budget && y > r->y && should_yield (e))) {
      GstVideoRectangle rest = { r->x, y, r->w, end - y };
      GstVideoRectangle sent = { r->x, r->y, r->w, y - r->y };

      gst_spice_region_add (&e->carry, &rest);
      if (!lossy)
        mark_exact (e, &sent);
      if (over_budget)
        e->stats.deferred++;
      else
        e->yield_cut = TRUE;
      return FALSE;
    }
    if (lossy)
      size = tiler_encode_jpeg (&e->enc, e->writer, &band, px, fstride,
          p->jpeg_quality);
    if (size == 0) {
      size = tiler_encode_lossless (&e->enc, e->writer, &band, px,
          fstride, &type);
      if (lossy)
        mark_exact (e, &band);
      /* in an area that scrolls, draws carry what came into view (or
       * what an update's budget left for the next): a stream would carry
       * the same, blurred and to be refined; copies make scrolling cheap.
       * Such a change counts as one that cost nothing. */
      tiler_heat_add_cost (&e->heat, &band, scroll_zone_live (e, e->cur_now)
          && gst_spice_rect_intersect (&band, &e->scroll_zone, NULL) ? 0 :
          size, e->cur_now);
    } else
      mark_lossy (e, &band, e->cur_now);
    count_region (e, type, size);
    copy_to_shadow (e, &band);
  }
  if (!lossy)
    mark_exact (e, r);
  return TRUE;
}

static gboolean
cell_eligible (TilerEngine * e, gint cx, gint cy,
    const GstVideoRectangle * region, const GstVideoRectangle * exclude,
    GstVideoRectangle * box)
{
  TilerDiff *d = &e->diff;
  guint8 f = d->flags[TILER_CELL_INDEX (d, cx, cy)];

  if (!(f & TILER_CELL_CHANGED) || (f & TILER_CELL_CONSUMED))
    return FALSE;
  if (exclude && tiler_diff_cell_inside (d, cx, cy, exclude))
    return FALSE;
  if (!tiler_diff_cell_box (d, cx, cy, box))
    return FALSE;
  return gst_spice_rect_contains (region, box);
}

/* Emits the changed cells inside @region: as one lossless rectangle when
 * none of them is photographic, else as runs of cells of one class, so
 * unchanged or synthetic pixels next to photographic ones stay exact. */
static gboolean
emit_region (TilerEngine * e, const GstVideoRectangle * region,
    const GstVideoRectangle * exclude, gboolean no_budget)
{
  TilerDiff *d = &e->diff;
  GstVideoRectangle all = { 0, 0, 0, 0 }, box;
  gint cx0 = region->x / TILER_CELL, cx1 = (region->x + region->w - 1) /
      TILER_CELL;
  gint cy0 = region->y / TILER_CELL, cy1 = (region->y + region->h - 1) /
      TILER_CELL;
  gint cx, cy;
  guint nphoto = 0, i, j;
  GArray *runs = e->runs;

  g_array_set_size (runs, 0);
  for (cy = cy0; cy <= cy1; cy++) {
    TilerRun run = { {0, 0, 0, 0}, -1, -1, cy, cy, FALSE, FALSE };

    for (cx = cx0; cx <= cx1; cx++) {
      guint ci = TILER_CELL_INDEX (d, cx, cy);
      gboolean photo;

      if (!cell_eligible (e, cx, cy, region, exclude, &box))
        continue;
      d->flags[ci] |= TILER_CELL_CONSUMED;
      photo = (d->flags[ci] & TILER_CELL_PHOTO) &&
          !(d->flags[ci] & TILER_CELL_FORCED);
      nphoto += photo;
      gst_spice_rect_union (&all, &box, &all);
      if (run.cx0 >= 0 && run.cx1 == cx - 1 && run.lossy == photo) {
        run.cx1 = cx;
        gst_spice_rect_union (&run.r, &box, &run.r);
      } else {
        if (run.cx0 >= 0)
          g_array_append_val (runs, run);
        run.cx0 = run.cx1 = cx;
        run.r = box;
        run.lossy = photo;
      }
    }
    if (run.cx0 >= 0)
      g_array_append_val (runs, run);
  }
  if (gst_spice_rect_is_empty (&all))
    return TRUE;
  /* one rectangle, unless it would paint over the stream */
  if (nphoto == 0 && !(exclude && gst_spice_rect_intersect (&all, exclude,
              NULL)))
    return emit_rect (e, &all, FALSE, no_budget);

  /* join runs with the same columns in consecutive cell rows */
  for (i = 0; i < runs->len; i++) {
    TilerRun *a = &g_array_index (runs, TilerRun, i);

    if (a->dead)
      continue;
    for (j = i + 1; j < runs->len; j++) {
      TilerRun *b = &g_array_index (runs, TilerRun, j);

      if (b->dead || b->cy0 != a->cy1 + 1)
        continue;
      if (b->cx0 != a->cx0 || b->cx1 != a->cx1 || b->lossy != a->lossy)
        continue;
      if (a->lossy && (b->r.y != a->r.y + a->r.h || b->r.x != a->r.x ||
              b->r.w != a->r.w))
        continue;
      gst_spice_rect_union (&a->r, &b->r, &a->r);
      a->cy1 = b->cy1;
      b->dead = TRUE;
    }
  }
  for (i = 0; i < runs->len; i++) {
    TilerRun *a = &g_array_index (runs, TilerRun, i);

    if (a->dead)
      continue;
    if (!emit_rect (e, &a->r, a->lossy, no_budget)) {
      /* the rest of this region waits for the next update */
      for (j = i + 1; j < runs->len; j++) {
        TilerRun *b = &g_array_index (runs, TilerRun, j);

        if (!b->dead)
          gst_spice_region_add (&e->carry, &b->r);
      }
      return FALSE;
    }
  }
  return TRUE;
}

static gint
compare_area (gconstpointer a, gconstpointer b)
{
  guint64 aa = gst_spice_rect_area (a), ab = gst_spice_rect_area (b);

  return aa < ab ? -1 : aa > ab ? 1 : 0;
}

static void
begin_update (TilerEngine * e, guint32 flags)
{
  /* sized like the previous update, so that it rarely has to grow */
  if (!e->writer)
    e->writer = gst_spice_draws_writer_new (flags,
        MAX (e->last_update_size, 64 * 1024));
}

static void
finish_update (TilerEngine * e)
{
  GstBuffer *buf;

  if (!e->writer)
    return;
  if (gst_spice_draws_writer_n_regions (e->writer) == 0) {
    gst_spice_draws_writer_free (e->writer);
    e->writer = NULL;
    return;
  }
  e->last_update_size = gst_spice_draws_writer_size (e->writer);
  buf = gst_spice_draws_writer_finish (e->writer);
  e->writer = NULL;
  GST_BUFFER_PTS (buf) = e->cur_pts;
  GST_LOG ("update of %" G_GSIZE_FORMAT " bytes", gst_buffer_get_size (buf));
  g_assert (e->res->n_updates < TILER_ENGINE_MAX_UPDATES);
  e->res->updates[e->res->n_updates++] = buf;
}

/* Full lossless picture of the shadow, in its own update, as ONE region
 * covering the surface: spicesink sends it as a joining client's first draw
 * (simple clients keep the surface as of their first invalidate). */
static void
push_refresh (TilerEngine * e)
{
  GstVideoRectangle all = { 0, 0, e->diff.width, e->diff.height };
  guint i, n = e->diff.ncx * e->diff.ncy;
  GstSpiceImageType type;
  gsize size;

  finish_update (e);
  begin_update (e, GST_SPICE_DRAWS_FLAG_REFRESH);
  size = tiler_encode_lossless (&e->enc, e->writer, &all, e->shadow,
      e->shadow_stride, &type);
  count_region (e, type, size);
  for (i = 0; i < n; i++)
    e->diff.lossy_rt[i] = TILER_RT_EXACT;
  if (e->stream.active)
    mark_lossy (e, &e->stream.rect, e->cur_now);
  e->stats.refreshes++;
  e->keyframe_pending = TRUE;
  finish_update (e);
}

/* Returns whether cells wait to be sent at once (content unknown to the
 * client, outside the stream), so that the worker does not wait for a
 * frame or a deadline before sending them. */
static gboolean
compute_next_refine (TilerEngine * e)
{
  const TilerParams *p = &e->p;
  GstClockTime qos = e->in->draw_qos_earliest;
  gboolean urgent = FALSE;
  TilerDiff *d = &e->diff;
  GstClockTime next = GST_CLOCK_TIME_NONE;
  guint i, n = d->ncx * d->ncy;
  guint64 lossy = 0;

  for (i = 0; i < n; i++) {
    GstClockTime t = d->lossy_rt[i];

    if (t == TILER_RT_EXACT)
      continue;
    lossy++;
    /* in the stream's area: refine-delay after the stream went still
     * (stream_settled()) */
    if (e->stream.active && tiler_diff_cell_inside (d, i % d->ncx,
            i / d->ncx, &e->stream.rect)) {
      if (!GST_CLOCK_TIME_IS_VALID (e->stream.last_change))
        continue;
      if (t == TILER_RT_UNKNOWN || e->stream.last_change > t)
        t = e->stream.last_change;
    }
    if (t == TILER_RT_UNKNOWN) {
      urgent = TRUE;
      t = 0;
    } else
      t += p->refine_delay;
    if (!GST_CLOCK_TIME_IS_VALID (next) || t < next)
      next = t;
  }
  if (e->stream.active && GST_CLOCK_TIME_IS_VALID (e->stream.last_change)) {
    GstClockTime end = e->stream.last_change + p->stream_timeout + 1;

    /* a change no stream frame carried goes out when the area settles */
    if (e->stream_dirty)
      end = MIN (end, e->stream.last_change + p->refine_delay);
    if (!GST_CLOCK_TIME_IS_VALID (next) || end < next)
      next = end;
  }
  /* while downstream says we are late, refinement waits */
  if (GST_CLOCK_TIME_IS_VALID (next) && GST_CLOCK_TIME_IS_VALID (qos) &&
      next < qos)
    next = qos;
  e->stats.lossy_cells = lossy;
  e->next_refine = next;
  return urgent;
}

/* a changed photographic cell with a neighbour (diagonals included: the
 * corner of a static caption may lie in a cell whose four sides are all
 * photographic) that is not one */
static gboolean
cell_on_border (TilerDiff * d, guint ci)
{
  gint cx = ci % d->ncx, cy = ci / d->ncx, k;

  for (k = 0; k < 9; k++) {
    gint nx = cx + k % 3 - 1, ny = cy + k / 3 - 1;
    guint8 f;

    if (nx < 0 || ny < 0 || nx >= d->ncx || ny >= d->ncy)
      continue;
    f = d->flags[TILER_CELL_INDEX (d, nx, ny)];
    if (!(f & TILER_CELL_CHANGED) || !(f & TILER_CELL_PHOTO))
      return TRUE;
  }
  return FALSE;
}

/* whether the cell's changed box holds a run of 4 unchanged pixels */
static gboolean
cell_has_still_run (TilerEngine * e, guint ci, const guint8 * src, gint fstride)
{
  TilerDiff *d = &e->diff;
  GstVideoRectangle b;
  gint x, y;

  if (!tiler_diff_cell_box (d, ci % d->ncx, ci / d->ncx, &b))
    return FALSE;
  for (y = b.y; y < b.y + b.h; y++) {
    const guint32 *f = (const guint32 *) (src + (gsize) y * fstride);
    const guint32 *sh = (const guint32 *) (e->shadow +
        (gsize) y * e->shadow_stride);
    gint run = 0;

    for (x = b.x; x < b.x + b.w; x++) {
      run = f[x] == sh[x] ? run + 1 : 0;
      if (run >= 4)
        return TRUE;
    }
  }
  return FALSE;
}

static void
diff_damage (TilerEngine * e, const GstSpiceRegion * damage,
    gboolean full, const guint8 * src, gint fstride)
{
  TilerDiff *d = &e->diff;
  guint i;

  tiler_diff_begin (d);
  if (full)
    tiler_diff_mark_all (d);
  else {
    const GstVideoRectangle *r = gst_spice_region_rects (damage);

    for (i = 0; i < gst_spice_region_n_rects (damage); i++)
      tiler_diff_mark (d, &r[i]);
  }
  tiler_diff_run (d, src, fstride, e->shadow, e->shadow_stride);
}

/* the changed pixels inside @r, from the diff's cell boxes */
static gboolean
changed_box (TilerDiff * d, const GstVideoRectangle * r,
    GstVideoRectangle * out)
{
  GstVideoRectangle all = { 0, 0, 0, 0 }, box;
  gint cx, cy;

  for (cy = r->y / TILER_CELL; cy <= (r->y + r->h - 1) / TILER_CELL; cy++)
    for (cx = r->x / TILER_CELL; cx <= (r->x + r->w - 1) / TILER_CELL; cx++)
      if ((d->flags[TILER_CELL_INDEX (d, cx, cy)] & TILER_CELL_CHANGED) &&
          tiler_diff_cell_box (d, cx, cy, &box) &&
          gst_spice_rect_intersect (&box, r, &box))
        gst_spice_rect_union (&all, &box, &all);
  *out = all;
  return !gst_spice_rect_is_empty (&all);
}

/* whether the client has every pixel of @r exactly */
static gboolean
area_exact (TilerEngine * e, const GstVideoRectangle * r)
{
  TilerDiff *d = &e->diff;
  gint cx, cy;

  for (cy = r->y / TILER_CELL; cy <= (r->y + r->h - 1) / TILER_CELL; cy++)
    for (cx = r->x / TILER_CELL; cx <= (r->x + r->w - 1) / TILER_CELL; cx++)
      if (d->lossy_rt[TILER_CELL_INDEX (d, cx, cy)] != TILER_RT_EXACT)
        return FALSE;
  return TRUE;
}

/* the damaged areas looked at for scrolling, per update, and the copies
 * made in one area */
#define TILER_SCROLL_MAX_AREAS 8
#define TILER_SCROLL_MAX_COPIES 16
/* how long an area that scrolled is sent as one region */
#define TILER_SCROLL_ZONE_TIME GST_SECOND

/* whether copies were made within TILER_SCROLL_ZONE_TIME */
static gboolean
scroll_zone_live (TilerEngine * e, GstClockTime now)
{
  return GST_CLOCK_TIME_IS_VALID (e->scroll_zone_rt) &&
      now < e->scroll_zone_rt + TILER_SCROLL_ZONE_TIME;
}

/* Finds the damaged areas whose content moved up or down and moves it on
 * the client with a COPY_BITS, first in the update, and in the shadow.
 * Only exact pixels outside the stream are copied: a copy of a lossy
 * area would spread pixels refinement does not know of. Returns whether
 * the shadow changed (the diff must run again). */
static gboolean
copy_scrolled (TilerEngine * e, const GstSpiceRegion * damage,
    gboolean full, const guint8 * src, gint fstride, GstClockTime now)
{
  TilerDiff *d = &e->diff;
  GstVideoRectangle frame = { 0, 0, d->width, d->height };
  const GstVideoRectangle *r = full ? &frame : gst_spice_region_rects (damage);
  guint i, n = full ? 1 : gst_spice_region_n_rects (damage);
  gboolean moved = FALSE;

  for (i = 0; i < MIN (n, TILER_SCROLL_MAX_AREAS); i++) {
    GstVideoRectangle area, dest, from;
    gint src_y, k;

    /* nothing inside the stream is copied: do not look for it there */
    if (!changed_box (d, &r[i], &area) || (e->stream.active &&
            gst_spice_rect_contains (&e->stream.rect, &area)) ||
        !tiler_scroll_begin (&e->scroll, src, fstride, e->shadow,
            e->shadow_stride, &area))
      continue;
    /* parts of an area may have moved by different amounts (an update cut
     * by the budget left the lower rows older): one copy each */
    for (k = 0; k < TILER_SCROLL_MAX_COPIES; k++) {
      if (!tiler_scroll_next (&e->scroll, &dest, &src_y))
        break;
      from = dest;
      from.y = src_y;
      if (e->stream.active &&
          (gst_spice_rect_intersect (&dest, &e->stream.rect, NULL) ||
              gst_spice_rect_intersect (&from, &e->stream.rect, NULL)))
        break;
      if (!area_exact (e, &from))
        break;
      GST_LOG ("copy %dx%d from %d,%d to %d,%d", dest.w, dest.h,
          from.x, from.y, dest.x, dest.y);
      begin_update (e, 0);
      gst_spice_draws_writer_add_copy_bits (e->writer, &dest, from.x, from.y);
      gst_spice_copy_bits_apply (e->shadow, e->shadow_stride, &dest,
          from.x, from.y);
      tiler_scroll_moved (&e->scroll, &dest, src_y);
      mark_exact (e, &dest);
      count_region (e, GST_SPICE_IMAGE_COPY_BITS, 0);
      if (scroll_zone_live (e, now))
        gst_spice_rect_union (&e->scroll_zone, &area, &e->scroll_zone);
      else
        e->scroll_zone = area;
      e->scroll_zone_rt = now;
      e->stats.copied_rows += dest.h;
      moved = TRUE;
    }
  }
  return moved;
}

/* The regions inside an area that scrolled lately become one rectangle,
 * sent in full-width bands from the top: an update cut by the budget then
 * leaves the area as rows of two ages, each a copy later, instead of a
 * patchwork of cells of many ages that no copy can reproduce. */
static void
join_scroll_zone (TilerEngine * e, GstClockTime now)
{
  GstSpiceRegion *regions = &e->regions;
  GstVideoRectangle joined = { 0, 0, 0, 0 };
  GArray *rects = regions->rects;
  guint i;

  if (!scroll_zone_live (e, now))
    return;
  for (i = 0; i < rects->len;) {
    GstVideoRectangle *r = &g_array_index (rects, GstVideoRectangle, i);

    if (gst_spice_rect_intersect (r, &e->scroll_zone, NULL)) {
      gst_spice_rect_union (&joined, r, &joined);
      g_array_remove_index_fast (rects, i);
    } else
      i++;
  }
  if (!gst_spice_rect_is_empty (&joined))
    g_array_append_val (rects, joined);
}


/* ------------------------------------------------------------------ */
/* the stream */

/* Whether the stream's area has been still for refine-delay: it is then
 * refined like any lossy area, without ending the stream (the exact picture
 * does not wait for stream-timeout, and the next change is a stream frame
 * again). A change that no stream frame carried (dropped by the rate or
 * QoS) goes out as lossless draws then too: a still picture never waits
 * for a frame that will not come. */
static gboolean
stream_settled (TilerEngine * e)
{
  return e->stream.active && GST_CLOCK_TIME_IS_VALID (e->stream.last_change)
      && e->stream.last_change + e->p.refine_delay <= e->cur_now;
}

/* The stream ends: its cells still lossy are sent lossless at once. Those
 * refined already stay as they are: a client that decodes a stream frame
 * after a refinement draw would paint it over the draw, but spicesink
 * hides a stream under any draw over its area until a newer frame comes
 * (STREAM_CLIP, docs/spicesink.md), so a refined cell is exact for good. */
static void
stream_end (TilerEngine * e)
{
  TilerDiff *d = &e->diff;
  gint cx, cy;

  if (!e->stream.active)
    return;
  GST_DEBUG ("stream %u ends", e->stream_id);
  for (cy = 0; cy < d->ncy; cy++)
    for (cx = 0; cx < d->ncx; cx++) {
      GstClockTime *t = &d->lossy_rt[TILER_CELL_INDEX (d, cx, cy)];

      if (*t != TILER_RT_EXACT &&
          tiler_diff_cell_inside (d, cx, cy, &e->stream.rect))
        *t = TILER_RT_UNKNOWN;
    }
  e->stream.active = FALSE;
  e->stream_dirty = FALSE;
  e->stats.stream_active = FALSE;
  e->stats.stream_fps = 0;
}

/* starts a stream over @r whose frames are 1/@scale of its size */
static void
stream_begin (TilerEngine * e, const GstVideoRectangle * r, guint scale)
{
  GstClockTime now = e->cur_now;

  e->stream.active = TRUE;
  e->stream_dirty = TRUE;
  e->stream.rect = *r;
  e->stream.last_change = now;
  e->stream.shrink_since = GST_CLOCK_TIME_NONE;
  e->stream_id++;
  e->fps_window_start = now;
  e->stream_scale = MAX (scale, 1);
  e->fps_window_frames = 0;
  GST_DEBUG ("stream %u starts at %d,%d %dx%d", e->stream_id, r->x, r->y,
      r->w, r->h);
  e->keyframe_pending = TRUE;
  e->stats.stream_starts++;
  e->stats.stream_active = TRUE;
  e->stats.stream_rect = *r;
  e->stats.stream_id = e->stream_id;
}

/* the spice-rate frame rate limit and the stream pad's QoS */
static gboolean
stream_frame_allowed (TilerEngine * e)
{
  const TilerEngineInput *in = e->in;
  GstClockTime now = e->cur_now;
  gboolean ok = TRUE;

  if (in->rate_fps_n > 0 && GST_CLOCK_TIME_IS_VALID (e->last_stream_rt)) {
    GstClockTime interval = gst_util_uint64_scale (GST_SECOND,
        MAX (in->rate_fps_d, 1), in->rate_fps_n);

    /* a millisecond of slack for rounded timestamps */
    if (now + GST_MSECOND < e->last_stream_rt + interval)
      ok = FALSE;
  }
  if (GST_CLOCK_TIME_IS_VALID (in->stream_qos_earliest) &&
      now < in->stream_qos_earliest)
    ok = FALSE;
  if (!ok)
    e->stats.stream_dropped++;
  return ok;
}

/* A new frame: a stream frame when the area is dirty and one is allowed
 * (the shadow takes the area now: the caller pushes the frame before any
 * draw of this update), else the caller pushes a GAP. */
static void
take_stream_frame (TilerEngine * e)
{
  TilerEngineResult *res = e->res;
  GstClockTime now = e->cur_now;

  if (!e->stream.active || !e->stream_dirty || stream_settled (e) ||
      !stream_frame_allowed (e))
    return;
  res->stream_frame = TRUE;
  res->stream_rect = e->stream.rect;
  res->stream_id = e->stream_id;
  res->stream_scale = e->stream_scale;
  res->stream_keyframe = e->keyframe_pending;
  e->keyframe_pending = FALSE;
  e->stream_dirty = FALSE;
  copy_to_shadow (e, &e->stream.rect);
  mark_lossy (e, &e->stream.rect, now);
  e->last_stream_rt = now;
  e->fps_window_frames++;
  e->stats.stream_frames++;
  if (now > e->fps_window_start + GST_SECOND) {
    e->stats.stream_fps = e->fps_window_frames * (gdouble) GST_SECOND /
        (now - e->fps_window_start);
    e->fps_window_start = now;
    e->fps_window_frames = 0;
  }
}

/* Whether the stream area changed (or a stream started) in this update. */
static gboolean
decide_stream (TilerEngine * e, TilerUpdateKind kind, gboolean s_changed)
{
  const TilerParams *p = &e->p;
  guint scale = MAX (e->in->rate_scale, 1);
  GstVideoRectangle srect;
  TilerStreamAction action;
  gboolean allowed = p->streaming != GST_SPICE_TILER_STREAMING_OFF &&
      e->in->stream_allowed && kind != TILER_UPDATE_FINAL;

  e->heat.min_frames = p->stream_min_frames;
  e->heat.max_gap = p->stream_max_gap;
  e->heat.timeout = p->stream_timeout;
  e->heat.min_area = p->stream_min_area;
  e->heat.all = p->streaming == GST_SPICE_TILER_STREAMING_ALL;
  e->heat.cost_bytes = e->in->link_bps == 0 ? 0 :
      MAX ((guint64) e->diff.tile * e->diff.tile / TILER_COST_PX_PER_BYTE,
      gst_util_uint64_scale (e->in->link_bps / 8, TILER_COST_LINK_US,
          G_USEC_PER_SEC));
  action = tiler_heat_decide (&e->heat, &e->stream, e->cur_now, s_changed,
      allowed, &srect);
  /* without a new frame only an end (timeout, EOS) is acted on */
  if (kind != TILER_UPDATE_FRAME && action != TILER_STREAM_END)
    return FALSE;
  /* a new picture size (spice-rate) is a new stream: a keyframe, and the
   * client learns the size from its STREAM_CREATE. The area did not
   * change: it stays as still as it was, and a settled area (refined,
   * not streamed) waits for its next change. */
  if (action == TILER_STREAM_CONTINUE && e->stream.active &&
      scale != e->stream_scale && !stream_settled (e)) {
    GstClockTime last_change = e->stream.last_change;

    GST_DEBUG ("stream picture 1/%u -> 1/%u", e->stream_scale, scale);
    srect = e->stream.rect;
    stream_end (e);
    stream_begin (e, &srect, scale);
    e->stream.last_change = last_change;
    return s_changed;
  }
  switch (action) {
    case TILER_STREAM_END:
      stream_end (e);
      break;
    case TILER_STREAM_RESTART:
      stream_end (e);
      /* fall through */
    case TILER_STREAM_START:
      stream_begin (e, &srect, scale);
      return TRUE;
    default:
      break;
  }
  return s_changed;
}

/* ------------------------------------------------------------------ */
/* the phases of an update */

/* TILER_UPDATE_FRAME: a whole frame: what @full or the damage says
 * changed is copied onto the picture */
static gboolean
apply_whole_frame (TilerEngine * e, GstBuffer * buf, gboolean full)
{
  GstVideoFrame in;
  const GstVideoRectangle *r;
  guint8 *dst = GST_VIDEO_FRAME_PLANE_DATA (&e->frame, 0);
  gint dstride = GST_VIDEO_FRAME_PLANE_STRIDE (&e->frame, 0);
  gint w = GST_VIDEO_INFO_WIDTH (&e->info), h =
      GST_VIDEO_INFO_HEIGHT (&e->info);
  GstVideoRectangle all = { 0, 0, w, h };
  guint i, n;

  if (!gst_video_frame_map (&in, &e->info, buf, GST_MAP_READ))
    return FALSE;
  r = full ? &all : gst_spice_region_rects (&e->damage);
  n = full ? 1 : gst_spice_region_n_rects (&e->damage);
  for (i = 0; i < n; i++) {
    GstVideoRectangle c = r[i];

    if (gst_spice_rect_clip (&c, w, h))
      gst_spice_blit_bgrx (dst, dstride, c.x, c.y,
          GST_VIDEO_FRAME_PLANE_DATA (&in, 0),
          GST_VIDEO_FRAME_PLANE_STRIDE (&in, 0), c.x, c.y, c.w, c.h);
  }
  gst_video_frame_unmap (&in);
  return TRUE;
}

/* TILER_UPDATE_FRAME: @in's frame (a whole one, or damage-only buffers)
 * goes onto the picture, which becomes the current frame */
static GstFlowReturn
take_frame (TilerEngine * e, const TilerEngineInput * in, gboolean * full)
{
  GstClockTime rt = in->running_time;
  guint tile = in->params->tile_size;
  GstBuffer *last = in->buffer ? in->buffer :
      in->n_packed ? in->packed[in->n_packed - 1] : NULL;
  gint w = GST_VIDEO_INFO_WIDTH (&e->info), h =
      GST_VIDEO_INFO_HEIGHT (&e->info);
  guint i;

  if (!e->have_info)
    return GST_FLOW_NOT_NEGOTIATED;
  if (!last)
    return GST_FLOW_ERROR;
  if ((gint) MAX (TILER_CELL, tile - tile % TILER_CELL) != e->tile_applied)
    setup_geometry (e, tile);

  *full = in->full || !in->has_seq || !e->have_seq ||
      in->first_seq != e->seq + 1;
  gst_spice_region_copy (&e->damage, in->damage);
  if (in->buffer) {
    if (!apply_whole_frame (e, in->buffer, *full || !e->have_frame))
      return GST_FLOW_ERROR;
  } else {
    for (i = 0; i < in->n_packed; i++) {
      GError *err = NULL;

      if (!gst_spice_damage_apply (in->packed[i],
              GST_VIDEO_FRAME_PLANE_DATA (&e->frame, 0),
              GST_VIDEO_FRAME_PLANE_STRIDE (&e->frame, 0), w, h, &err)) {
        GST_WARNING ("%s", err->message);
        g_clear_error (&err);
        return GST_FLOW_ERROR;
      }
    }
  }
  e->have_frame = TRUE;
  if (!GST_CLOCK_TIME_IS_VALID (rt))
    rt = GST_CLOCK_TIME_IS_VALID (e->cur_now) ?
        e->cur_now + FALLBACK_FRAME_DURATION : 0;
  if (GST_CLOCK_TIME_IS_VALID (e->cur_now) && rt < e->cur_now)
    rt = e->cur_now;
  e->cur_now = rt;
  e->last_frame_rt = rt;
  e->cur_pts = GST_BUFFER_PTS (last);
  e->cur_duration = GST_BUFFER_DURATION (last);

  e->have_seq = in->has_seq;
  e->seq = in->last_seq;
  if (!*full) {
    gst_spice_region_add_region (&e->damage, &e->carry);
    if (e->stream.active && e->stream_dirty)
      gst_spice_region_add (&e->damage, &e->stream.rect);
  }
  return GST_FLOW_OK;
}

/* diffs the damage; moves what scrolled, when a copy can go out now */
static void
diff_and_copy (TilerEngine * e, gboolean full, gboolean copy)
{
  const guint8 *src = GST_VIDEO_FRAME_PLANE_DATA (&e->frame, 0);
  gint fstride = GST_VIDEO_FRAME_PLANE_STRIDE (&e->frame, 0);

  diff_damage (e, &e->damage, full, src, fstride);
  if (copy && e->p.scroll && e->diff.n_touched > 0 &&
      copy_scrolled (e, &e->damage, full, src, fstride, e->cur_now))
    diff_damage (e, &e->damage, full, src, fstride);
}

/* Whether cell rectangle @c is new damage of this update's frame: the
 * rest of what the diff finds changed is older (carried by a budget cut or
 * a busy draw pad, or a stream change no frame carried) and was counted
 * when it happened. */
static gboolean
cell_newly_damaged (TilerEngine * e, const GstVideoRectangle * c, gboolean full)
{
  const GstSpiceRegion *dmg = e->in->damage;
  const GstVideoRectangle *r;
  guint i, n;

  if (full)
    return TRUE;
  if (!dmg)
    return FALSE;
  r = gst_spice_region_rects (dmg);
  n = gst_spice_region_n_rects (dmg);
  for (i = 0; i < n; i++)
    if (gst_spice_rect_intersect (&r[i], c, NULL))
      return TRUE;
  return FALSE;
}

/* Classifies the changed cells and feeds the heat map (with a new frame,
 * @full: all of it damaged); returns whether the frame changed the
 * stream's area. */
static gboolean
classify_cells (TilerEngine * e, gboolean new_frame, gboolean full)
{
  TilerDiff *d = &e->diff;
  const guint8 *src = GST_VIDEO_FRAME_PLANE_DATA (&e->frame, 0);
  gint fstride = GST_VIDEO_FRAME_PLANE_STRIDE (&e->frame, 0);
  gboolean s_changed = FALSE;
  guint i;

  for (i = 0; i < d->n_touched; i++) {
    guint ci = d->touched[i];
    gint cx = ci % d->ncx, cy = ci / d->ncx;
    GstVideoRectangle c;
    TilerContent content;
    gboolean photo, fresh, in_stream;

    tiler_diff_cell_rect (d, cx, cy, &c);
    fresh = new_frame && cell_newly_damaged (e, &c, full);
    in_stream = e->stream.active &&
        tiler_diff_cell_inside (d, cx, cy, &e->stream.rect);
    /* Inside the stream's rectangle a cell's class only feeds the heat
     * map: the stream owns its draws, and once the area settles what
     * changed in it goes lossless whatever it looks like. A tile that
     * already counted as photographic in this frame learns nothing from
     * its other cells (most of a streamed area: one look a tile, not
     * sixteen); they stay unclassified, so lossless if ever drawn. */
    if (fresh && in_stream && tiler_heat_photo_counted (&e->heat,
            c.x / d->tile, c.y / d->tile, e->cur_now)) {
      s_changed = TRUE;
      continue;
    }
    content = tiler_classify_content (src + (gsize) c.y * fstride +
        (gsize) c.x * 4, fstride, c.w, c.h);
    e->stats.classified_cells++;
    /* smooth content counts for the heat map (a stream), but only noisy
     * cells may go out as lossy draws */
    photo = content != TILER_CONTENT_SYNTHETIC;
    d->flags[ci] |= TILER_CELL_CLASSIFIED |
        (content == TILER_CONTENT_NOISY ? TILER_CELL_PHOTO : 0);
    if (!fresh)
      continue;
    tiler_heat_touch (&e->heat, c.x / d->tile, c.y / d->tile, e->cur_now,
        photo);
    if (in_stream)
      s_changed = TRUE;
  }

  /* photographic cells on the border of the changed area that also hold
   * unchanged pixels (a static caption, a window edge) go lossless: only
   * pixels that changed may ever be sent lossy */
  for (i = 0; i < d->n_touched; i++) {
    guint ci = d->touched[i];

    if ((d->flags[ci] & TILER_CELL_PHOTO) && cell_on_border (d, ci) &&
        cell_has_still_run (e, ci, src, fstride))
      d->flags[ci] &= ~TILER_CELL_PHOTO;
  }
  return s_changed;
}

/* the draw pad is busy: this damage waits (only the stream goes on) */
static void
carry_damage (TilerEngine * e, gboolean full)
{
  if (full) {
    GstVideoRectangle all = { 0, 0, e->diff.width, e->diff.height };

    gst_spice_region_add (&e->carry, &all);
  } else
    gst_spice_region_add_region (&e->carry, &e->damage);
  gst_spice_region_limit (&e->carry, 64);
}

/* Forces the lossy cells that are due (all of them for the last update)
 * to lossless. @owned: the stream's rectangle while it owns it. */
static void
force_due_cells (TilerEngine * e, const GstVideoRectangle * owned,
    gboolean final)
{
  TilerDiff *d = &e->diff;
  GstClockTime now = e->cur_now, qos = e->in->draw_qos_earliest;
  gboolean draw_late = GST_CLOCK_TIME_IS_VALID (qos) && now < qos;
  guint i, n = d->ncx * d->ncy;

  for (i = 0; i < n; i++) {
    GstClockTime t = d->lossy_rt[i];
    gint cx = i % d->ncx, cy = i / d->ncx;
    gboolean due;

    if (t == TILER_RT_EXACT)
      continue;
    if (owned && tiler_diff_cell_inside (d, cx, cy, owned))
      continue;
    if (t == TILER_RT_UNKNOWN || final)
      due = TRUE;
    else
      due = !draw_late && t + e->p.refine_delay <= now &&
          !(d->flags[i] & TILER_CELL_CHANGED);
    if (due) {
      tiler_diff_force_cell (d, cx, cy);
      e->stats.refined_cells++;
    }
  }
}

/* flags the changed cells (inside @r, or all) to go lossless */
static void
force_changed_cells (TilerDiff * d, const GstVideoRectangle * r)
{
  guint i;

  for (i = 0; i < d->n_touched; i++) {
    guint ci = d->touched[i];

    if ((d->flags[ci] & TILER_CELL_CHANGED) && (!r ||
            tiler_diff_cell_inside (d, ci % d->ncx, ci / d->ncx, r)))
      d->flags[ci] |= TILER_CELL_FORCED;
  }
}

/* The draws of this update: refinement, then the regions smallest first
 * until the budget runs out (the rest is carried). @idle: no new frame. */
static void
emit_draws (TilerEngine * e, gboolean final, gboolean idle)
{
  const GstVideoRectangle *owned, *r;
  gboolean cut = FALSE;
  TilerDiff *d = &e->diff;
  guint i, nr;

  /* until its area is settled the stream owns its rectangle; then what
   * changed in it since its last frame goes lossless (the rest of its
   * cells are refined as they fall due) */
  owned = e->stream.active ? &e->stream.rect : NULL;
  if (stream_settled (e)) {
    owned = NULL;
    force_changed_cells (d, &e->stream.rect);
    e->stream_dirty = FALSE;
  }
  /* the picture has been still for refine-delay: what a budget cut left
   * goes lossless, it would be refined at once anyway */
  if (idle && GST_CLOCK_TIME_IS_VALID (e->last_frame_rt) &&
      e->last_frame_rt + e->p.refine_delay <= e->cur_now)
    force_changed_cells (d, NULL);

  force_due_cells (e, owned, final);
  tiler_diff_collect (&e->diff, owned, e->p.max_rects, &e->regions);
  join_scroll_zone (e, e->cur_now);
  g_array_sort (e->regions.rects, compare_area);
  begin_update (e, 0);
  r = gst_spice_region_rects (&e->regions);
  nr = gst_spice_region_n_rects (&e->regions);
  for (i = 0; i < nr; i++) {
    if (!emit_region (e, &r[i], owned, final)) {
      cut = TRUE;
      for (i = i + 1; i < nr; i++)
        gst_spice_region_add (&e->carry, &r[i]);
      break;
    }
  }
  /* only updates that had something to send say whether there is
   * pressure (not when they made way for a small frame), and whether the
   * next one may make way again */
  if (nr > 0) {
    if (!e->yield_cut)
      e->pressure = cut;
    e->yielded = e->yield_cut;
  }
}

GstFlowReturn
tiler_engine_update (TilerEngine * e, TilerUpdateKind kind,
    const TilerEngineInput * in, TilerEngineResult * res)
{
  gboolean busy = in->draw_busy && kind != TILER_UPDATE_FINAL, full = FALSE;
  gboolean s_changed;
  GstFlowReturn ret;
  gint64 t0, t1, t2;

  memset (res, 0, sizeof (*res));
  res->next_refine = e->next_refine;
  e->yield_cut = FALSE;
  e->in = in;
  e->res = res;
  e->p = *in->params;
  tiler_draw_budget_apply (in->sink_budget, &e->p.update_budget,
      &e->p.band_size);
  e->p.jpeg_quality = tiler_jpeg_quality_for (e->p.jpeg_quality,
      in->sink_budget > 0 && e->pressure);

  if (kind == TILER_UPDATE_FRAME) {
    if ((ret = take_frame (e, in, &full)) != GST_FLOW_OK)
      return ret;
  } else if (!e->have_frame)
    return GST_FLOW_OK;
  else if (kind == TILER_UPDATE_REFINE) {
    gst_spice_region_reset (&e->damage);
    e->cur_now = MAX (e->cur_now, e->next_refine);
    GST_LOG ("refinement deadline %" GST_TIME_FORMAT,
        GST_TIME_ARGS (e->cur_now));
  } else
    gst_spice_region_copy (&e->damage, &e->carry);
  /* a settled stream area holding a change no frame carried: the diff
   * finds it, the draws send it (a new frame's damage has it already) */
  if (kind != TILER_UPDATE_FRAME && !busy && e->stream_dirty &&
      stream_settled (e))
    gst_spice_region_add (&e->damage, &e->stream.rect);

  t0 = g_get_monotonic_time ();
  diff_and_copy (e, full, !busy);
  t1 = g_get_monotonic_time ();
  /* the carried damage is in this update's now */
  gst_spice_region_reset (&e->carry);
  s_changed = classify_cells (e, kind == TILER_UPDATE_FRAME, full);
  s_changed = decide_stream (e, kind, s_changed);
  /* scroll copies made before the stream decision go before the stream
   * frame: a stream that starts now may cover where they paint */
  if (e->stream.active)
    finish_update (e);
  if (in->refresh)
    push_refresh (e);
  res->n_before_stream = res->n_updates;
  /* a dropped frame leaves the area dirty for the next frame */
  if (e->stream.active && s_changed)
    e->stream_dirty = TRUE;
  if (kind == TILER_UPDATE_FRAME)
    take_stream_frame (e);
  if (busy)
    carry_damage (e, full);
  else
    emit_draws (e, kind == TILER_UPDATE_FINAL, kind != TILER_UPDATE_FRAME);
  t2 = g_get_monotonic_time ();
  finish_update (e);

  res->pending = compute_next_refine (e) ||
      !gst_spice_region_is_empty (&e->carry);
  /* a deadline that came while the draw pad was busy (or paced) is not
   * waited for again: the next update must come as soon as it is free */
  if (busy && GST_CLOCK_TIME_IS_VALID (e->next_refine) &&
      e->next_refine <= e->cur_now)
    res->pending = TRUE;
  res->next_refine = e->next_refine;
  res->frame = &e->frame;
  res->running_time = e->cur_now;
  res->pts = e->cur_pts;
  res->duration = e->cur_duration;
  if (kind == TILER_UPDATE_FRAME)
    e->stats.frames_processed++;
  e->stats.diff_us_avg = e->stats.diff_us_avg * 0.9 + (t1 - t0) * 0.1;
  e->stats.encode_us_avg = e->stats.encode_us_avg * 0.9 + (t2 - t1) * 0.1;
  e->in = NULL;
  e->res = NULL;
  return GST_FLOW_OK;
}

void
tiler_engine_result_clear (TilerEngineResult * res)
{
  guint i;

  for (i = 0; i < res->n_updates; i++)
    gst_clear_buffer (&res->updates[i]);
  res->n_updates = res->n_before_stream = 0;
}

void
tiler_engine_stream_frame_lost (TilerEngine * e)
{
  e->stream_dirty = e->stream.active;
  e->stats.stream_frames--;
  if (e->fps_window_frames > 0)
    e->fps_window_frames--;
}

/* ------------------------------------------------------------------ */
/* the surface */

/* no current frame (the picture stays) */
static void
release_frame (TilerEngine * e)
{
  e->have_frame = FALSE;
}

static void
picture_free (TilerEngine * e)
{
  release_frame (e);
  if (e->picture) {
    gst_video_frame_unmap (&e->frame);
    gst_buffer_unref (e->picture);
    e->picture = NULL;
  }
}

/* the picture of the surface's size, black until a frame comes (its
 * pages are written by the first one) */
static void
picture_alloc (TilerEngine * e)
{
  gsize size = GST_VIDEO_INFO_SIZE (&e->info);

  picture_free (e);
  e->picture = gst_buffer_new_wrapped (g_malloc0 (size), size);
  if (!gst_video_frame_map (&e->frame, &e->info, e->picture, GST_MAP_READWRITE))
    g_error ("cannot map the tiler's own picture");
}

/* every cell: client content unknown, send it lossless */
static void
invalidate_client (TilerEngine * e)
{
  guint i, n = e->diff.ncx * e->diff.ncy;

  for (i = 0; i < n; i++)
    e->diff.lossy_rt[i] = TILER_RT_UNKNOWN;
}

static void
setup_geometry (TilerEngine * e, guint tile_size)
{
  gint w = GST_VIDEO_INFO_WIDTH (&e->info);
  gint h = GST_VIDEO_INFO_HEIGHT (&e->info);

  g_free (e->shadow);
  e->shadow_stride = w * 4;
  e->shadow = g_malloc0 ((gsize) e->shadow_stride * h);
  tiler_diff_clear (&e->diff);
  tiler_diff_init (&e->diff, w, h, tile_size);
  e->tile_applied = e->diff.tile;
  tiler_heat_init (&e->heat, w, h, e->diff.tile);
  gst_spice_region_reset (&e->carry);
  /* an update begun for the old surface (a copy) goes nowhere */
  gst_spice_draws_writer_free (e->writer);
  e->writer = NULL;
  e->stream.active = FALSE;
  invalidate_client (e);
}

gboolean
tiler_engine_set_format (TilerEngine * e, const GstVideoInfo * info,
    guint tile_size)
{
  gboolean resized = !e->have_info ||
      info->width != e->info.width || info->height != e->info.height ||
      GST_VIDEO_INFO_FORMAT (info) != GST_VIDEO_INFO_FORMAT (&e->info);

  e->info = *info;
  e->have_info = TRUE;
  if (!resized)
    return FALSE;
  GST_DEBUG ("new surface %dx%d", info->width, info->height);
  picture_alloc (e);
  setup_geometry (e, tile_size);
  return TRUE;
}

void
tiler_engine_flush (TilerEngine * e, guint tile_size)
{
  if (e->have_info)
    setup_geometry (e, tile_size);
  release_frame (e);
  e->have_seq = FALSE;
}

void
tiler_engine_reset (TilerEngine * e)
{
  picture_free (e);
  g_free (e->shadow);
  e->shadow = NULL;
  tiler_diff_clear (&e->diff);
  tiler_heat_clear (&e->heat);
  tiler_scroll_clear (&e->scroll);
  gst_spice_region_reset (&e->carry);
  gst_spice_draws_writer_free (e->writer);
  e->writer = NULL;
  e->have_info = FALSE;
  e->have_seq = FALSE;
  e->stream.active = FALSE;
  e->cur_now = GST_CLOCK_TIME_NONE;
  e->last_frame_rt = GST_CLOCK_TIME_NONE;
  e->next_refine = GST_CLOCK_TIME_NONE;
  e->last_stream_rt = GST_CLOCK_TIME_NONE;
  e->scroll_zone_rt = GST_CLOCK_TIME_NONE;
  e->fps_window_start = GST_CLOCK_TIME_NONE;
  e->fps_window_frames = 0;
  e->pressure = FALSE;
  e->yielded = FALSE;
}

TilerEngine *
tiler_engine_new (void)
{
  TilerEngine *e = g_new0 (TilerEngine, 1);

  if (g_once_init_enter (&tiler_engine_debug)) {
    GstDebugCategory *cat = NULL;

    GST_DEBUG_CATEGORY_INIT (cat, "spicetilerengine", 0,
        "spicetiler engine: diff, scroll, stream decision, draws");
    g_once_init_leave (&tiler_engine_debug, cat);
  }
  gst_spice_region_init (&e->carry);
  gst_spice_region_init (&e->damage);
  gst_spice_region_init (&e->regions);
  e->runs = g_array_new (FALSE, FALSE, sizeof (TilerRun));
  tiler_scroll_init (&e->scroll);
  tiler_encoder_init (&e->enc);
  tiler_engine_reset (e);
  return e;
}

void
tiler_engine_free (TilerEngine * e)
{
  tiler_engine_reset (e);
  gst_spice_region_clear (&e->carry);
  gst_spice_region_clear (&e->damage);
  gst_spice_region_clear (&e->regions);
  g_array_free (e->runs, TRUE);
  tiler_encoder_clear (&e->enc);
  g_free (e);
}

gboolean
tiler_engine_has_frame (TilerEngine * e)
{
  return e->have_frame;
}

const TilerEngineStats *
tiler_engine_stats (TilerEngine * e)
{
  return &e->stats;
}
