/* spicetiler: one update (diff, classification, draws, refinement)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * gst_spice_tiler_update() diffs the damage against the shadow, moves
 * what scrolled with a copy (and diffs again), classifies
 * the changed cells, feeds the heat map, decides on the stream, pushes the
 * stream frame (before any draw of the same frame), forces the lossy cells
 * that are due to lossless, and emits the regions smallest first, in bands,
 * within the update budget. It runs on the worker thread only.
 */
#include "gstspicetilerpriv.h"

void
gst_spice_tiler_mark_lossy (GstSpiceTiler * self, const GstVideoRectangle * r,
    GstClockTime t)
{
  TilerDiff *d = &self->diff;
  gint cx, cy;

  for (cy = r->y / TILER_CELL; cy <= (r->y + r->h - 1) / TILER_CELL; cy++)
    for (cx = r->x / TILER_CELL; cx <= (r->x + r->w - 1) / TILER_CELL; cx++)
      d->lossy_rt[TILER_CELL_INDEX (d, cx, cy)] = t;
}

static void
mark_exact (GstSpiceTiler * self, const GstVideoRectangle * r)
{
  TilerDiff *d = &self->diff;
  gint cx, cy;

  if (gst_spice_rect_is_empty (r))
    return;
  for (cy = r->y / TILER_CELL; cy <= (r->y + r->h - 1) / TILER_CELL; cy++)
    for (cx = r->x / TILER_CELL; cx <= (r->x + r->w - 1) / TILER_CELL; cx++)
      if (tiler_diff_cell_inside (d, cx, cy, r))
        d->lossy_rt[TILER_CELL_INDEX (d, cx, cy)] = TILER_RT_EXACT;
}

void
gst_spice_tiler_copy_to_shadow (GstSpiceTiler * self,
    const GstVideoRectangle * r)
{
  const guint8 *src = GST_VIDEO_FRAME_PLANE_DATA (&self->cur_frame, 0);
  gint sstride = GST_VIDEO_FRAME_PLANE_STRIDE (&self->cur_frame, 0);
  gint y;

  for (y = r->y; y < r->y + r->h; y++)
    memcpy (self->shadow + (gsize) y * self->shadow_stride + (gsize) r->x * 4,
        src + (gsize) y * sstride + (gsize) r->x * 4, (gsize) r->w * 4);
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
count_region (GstSpiceTiler * self, GstSpiceImageType type, gsize size)
{
  g_mutex_lock (&self->lock);
  self->stats.regions++;
  switch (type) {
    case GST_SPICE_IMAGE_BITMAP:
      self->stats.regions_bitmap++;
      self->stats.bytes_bitmap += size;
      break;
    case GST_SPICE_IMAGE_LZ4:
      self->stats.regions_lz4++;
      self->stats.bytes_lz4 += size;
      break;
    case GST_SPICE_IMAGE_JPEG:
      self->stats.regions_jpeg++;
      self->stats.bytes_jpeg += size;
      break;
    case GST_SPICE_IMAGE_COPY_BITS:
      self->stats.regions_copy++;
      break;
  }
  g_mutex_unlock (&self->lock);
}

/* Sends @r from the current frame in bands; returns FALSE when the update
 * budget ran out (the rest went to carry). */
static gboolean
emit_rect (GstSpiceTiler * self, const TilerParams * p,
    const GstVideoRectangle * r, gboolean lossy, GstClockTime now,
    gboolean no_budget)
{
  const guint8 *src = GST_VIDEO_FRAME_PLANE_DATA (&self->cur_frame, 0);
  gint fstride = GST_VIDEO_FRAME_PLANE_STRIDE (&self->cur_frame, 0);
  gint rows, y, end = r->y + r->h;

  if (lossy && gst_spice_rect_area (r) < TILER_JPEG_MIN_PIXELS)
    lossy = FALSE;
  rows = band_rows_for (p, r->w, lossy);
  for (y = r->y; y < end; y += rows) {
    GstVideoRectangle band = { r->x, y, r->w, MIN (rows, end - y) };
    const guint8 *px = src + (gsize) y * fstride + (gsize) r->x * 4;
    GstSpiceImageType type = GST_SPICE_IMAGE_JPEG;
    gsize size = 0;

    if (!no_budget && p->update_budget > 0 &&
        gst_spice_draws_writer_n_regions (self->writer) > 0 &&
        gst_spice_draws_writer_size (self->writer) >= p->update_budget) {
      GstVideoRectangle rest = { r->x, y, r->w, end - y };
      GstVideoRectangle sent = { r->x, r->y, r->w, y - r->y };

      gst_spice_region_add (&self->carry, &rest);
      if (!lossy)
        mark_exact (self, &sent);
      g_mutex_lock (&self->lock);
      self->stats.deferred++;
      g_mutex_unlock (&self->lock);
      return FALSE;
    }
    if (lossy)
      size = tiler_encode_jpeg (&self->enc, self->writer, &band, px, fstride,
          p->jpeg_quality);
    if (size == 0) {
      size = tiler_encode_lossless (&self->enc, self->writer, &band, px,
          fstride, &type);
      if (lossy)
        mark_exact (self, &band);
    } else
      gst_spice_tiler_mark_lossy (self, &band, now);
    count_region (self, type, size);
    gst_spice_tiler_copy_to_shadow (self, &band);
  }
  if (!lossy)
    mark_exact (self, r);
  return TRUE;
}

static gboolean
cell_eligible (GstSpiceTiler * self, gint cx, gint cy,
    const GstVideoRectangle * region, const GstVideoRectangle * exclude,
    GstVideoRectangle * box)
{
  TilerDiff *d = &self->diff;
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
emit_region (GstSpiceTiler * self, const TilerParams * p,
    const GstVideoRectangle * region, const GstVideoRectangle * exclude,
    GstClockTime now, gboolean no_budget)
{
  TilerDiff *d = &self->diff;
  GstVideoRectangle all = { 0, 0, 0, 0 }, box;
  gint cx0 = region->x / TILER_CELL, cx1 = (region->x + region->w - 1) /
      TILER_CELL;
  gint cy0 = region->y / TILER_CELL, cy1 = (region->y + region->h - 1) /
      TILER_CELL;
  gint cx, cy;
  guint nphoto = 0, i, j;
  GArray *runs = self->runs;

  g_array_set_size (runs, 0);
  for (cy = cy0; cy <= cy1; cy++) {
    TilerRun run = { {0, 0, 0, 0}, -1, -1, cy, cy, FALSE, FALSE };

    for (cx = cx0; cx <= cx1; cx++) {
      guint ci = TILER_CELL_INDEX (d, cx, cy);
      gboolean photo;

      if (!cell_eligible (self, cx, cy, region, exclude, &box))
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
    return emit_rect (self, p, &all, FALSE, now, no_budget);

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
    if (!emit_rect (self, p, &a->r, a->lossy, now, no_budget)) {
      /* the rest of this region waits for the next update */
      for (j = i + 1; j < runs->len; j++) {
        TilerRun *b = &g_array_index (runs, TilerRun, j);

        if (!b->dead)
          gst_spice_region_add (&self->carry, &b->r);
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
begin_update (GstSpiceTiler * self, guint32 flags)
{
  /* sized like the previous update, so that it rarely has to grow */
  if (!self->writer)
    self->writer = gst_spice_draws_writer_new (flags,
        MAX (self->last_update_size, 64 * 1024));
}

static void
finish_update (GstSpiceTiler * self)
{
  GstBuffer *buf;

  if (!self->writer)
    return;
  if (gst_spice_draws_writer_n_regions (self->writer) == 0) {
    gst_spice_draws_writer_free (self->writer);
    self->writer = NULL;
    return;
  }
  self->last_update_size = gst_spice_draws_writer_size (self->writer);
  buf = gst_spice_draws_writer_finish (self->writer);
  self->writer = NULL;
  GST_BUFFER_PTS (buf) = self->cur_pts;
  GST_LOG_OBJECT (self, "queueing update of %" G_GSIZE_FORMAT " bytes",
      gst_buffer_get_size (buf));
  gst_spice_tiler_draw_enqueue (self, GST_MINI_OBJECT_CAST (buf));
}

/* Full lossless picture of the shadow, in its own update, as ONE region
 * covering the surface: spicesink sends it as a joining client's first draw
 * (simple clients keep the surface as of their first invalidate). */
static void
push_refresh (GstSpiceTiler * self, const TilerParams * p)
{
  GstVideoRectangle all = { 0, 0, self->diff.width, self->diff.height };
  guint i, n = self->diff.ncx * self->diff.ncy;
  GstSpiceImageType type;
  gsize size;

  finish_update (self);
  begin_update (self, GST_SPICE_DRAWS_FLAG_REFRESH);
  size = tiler_encode_lossless (&self->enc, self->writer, &all, self->shadow,
      self->shadow_stride, &type);
  count_region (self, type, size);
  for (i = 0; i < n; i++)
    self->diff.lossy_rt[i] = TILER_RT_EXACT;
  if (self->stream.active)
    gst_spice_tiler_mark_lossy (self, &self->stream.rect, self->cur_now);
  g_mutex_lock (&self->lock);
  self->stats.refreshes++;
  self->keyframe_pending = TRUE;
  g_mutex_unlock (&self->lock);
  finish_update (self);
}

/* Returns whether cells wait to be sent at once (content unknown to the
 * client, outside the stream), so that the worker does not wait for a
 * frame or a deadline before sending them. */
static gboolean
compute_next_refine (GstSpiceTiler * self, const TilerParams * p)
{
  gboolean urgent = FALSE;
  TilerDiff *d = &self->diff;
  GstClockTime next = GST_CLOCK_TIME_NONE;
  guint i, n = d->ncx * d->ncy;
  guint64 lossy = 0;

  for (i = 0; i < n; i++) {
    GstClockTime t = d->lossy_rt[i];

    if (t == TILER_RT_EXACT)
      continue;
    lossy++;
    /* in the stream's area: refine-delay after the stream went still; a
     * change no frame has carried yet (stream_dirty) keeps the area the
     * stream's until its next frame or its end (the deadline below) */
    if (self->stream.active && tiler_diff_cell_inside (d, i % d->ncx,
            i / d->ncx, &self->stream.rect)) {
      if (self->stream_dirty || !GST_CLOCK_TIME_IS_VALID
          (self->stream.last_change))
        continue;
      if (t == TILER_RT_UNKNOWN || self->stream.last_change > t)
        t = self->stream.last_change;
    }
    if (t == TILER_RT_UNKNOWN) {
      urgent = TRUE;
      t = 0;
    } else
      t += p->refine_delay;
    if (!GST_CLOCK_TIME_IS_VALID (next) || t < next)
      next = t;
  }
  if (self->stream.active) {
    GstClockTime end = self->stream.last_change + p->stream_timeout + 1;

    if (!GST_CLOCK_TIME_IS_VALID (next) || end < next)
      next = end;
  }
  g_mutex_lock (&self->lock);
  /* while downstream says we are late, refinement waits */
  if (GST_CLOCK_TIME_IS_VALID (next) &&
      GST_CLOCK_TIME_IS_VALID (self->draw_qos_earliest) &&
      next < self->draw_qos_earliest)
    next = self->draw_qos_earliest;
  self->stats.lossy_cells = lossy;
  g_mutex_unlock (&self->lock);
  self->next_refine = next;
  return urgent;
}

/* a changed photographic cell with a neighbour that is not one */
static gboolean
cell_on_border (TilerDiff * d, guint ci)
{
  gint cx = ci % d->ncx, cy = ci / d->ncx, k;
  const gint dx[4] = { -1, 1, 0, 0 }, dy[4] = { 0, 0, -1, 1 };

  for (k = 0; k < 4; k++) {
    gint nx = cx + dx[k], ny = cy + dy[k];
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
cell_has_still_run (GstSpiceTiler * self, guint ci, const guint8 * src,
    gint fstride)
{
  TilerDiff *d = &self->diff;
  GstVideoRectangle b;
  gint x, y;

  if (!tiler_diff_cell_box (d, ci % d->ncx, ci / d->ncx, &b))
    return FALSE;
  for (y = b.y; y < b.y + b.h; y++) {
    const guint32 *f = (const guint32 *) (src + (gsize) y * fstride);
    const guint32 *sh = (const guint32 *) (self->shadow +
        (gsize) y * self->shadow_stride);
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
diff_damage (GstSpiceTiler * self, const GstSpiceRegion * damage,
    gboolean full, const guint8 * src, gint fstride)
{
  TilerDiff *d = &self->diff;
  guint i;

  tiler_diff_begin (d);
  if (full)
    tiler_diff_mark_all (d);
  else {
    const GstVideoRectangle *r = gst_spice_region_rects (damage);

    for (i = 0; i < gst_spice_region_n_rects (damage); i++)
      tiler_diff_mark (d, &r[i]);
  }
  tiler_diff_run (d, src, fstride, self->shadow, self->shadow_stride);
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
area_exact (GstSpiceTiler * self, const GstVideoRectangle * r)
{
  TilerDiff *d = &self->diff;
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
scroll_zone_live (GstSpiceTiler * self, GstClockTime now)
{
  return GST_CLOCK_TIME_IS_VALID (self->scroll_zone_rt) &&
      now < self->scroll_zone_rt + TILER_SCROLL_ZONE_TIME;
}

/* Finds the damaged areas whose content moved up or down and moves it on
 * the client with a COPY_BITS, first in the update, and in the shadow.
 * Only exact pixels outside the stream are copied: a copy of a lossy
 * area would spread pixels refinement does not know of. Returns whether
 * the shadow changed (the diff must run again). */
static gboolean
copy_scrolled (GstSpiceTiler * self, const GstSpiceRegion * damage,
    gboolean full, const guint8 * src, gint fstride, GstClockTime now)
{
  TilerDiff *d = &self->diff;
  GstVideoRectangle frame = { 0, 0, d->width, d->height };
  const GstVideoRectangle *r = full ? &frame : gst_spice_region_rects (damage);
  guint i, n = full ? 1 : gst_spice_region_n_rects (damage);
  gboolean moved = FALSE;

  for (i = 0; i < MIN (n, TILER_SCROLL_MAX_AREAS); i++) {
    GstVideoRectangle area, dest, from;
    gint src_y, k;

    if (!changed_box (d, &r[i], &area) ||
        !tiler_scroll_begin (&self->scroll, src, fstride, self->shadow,
            self->shadow_stride, &area))
      continue;
    /* parts of an area may have moved by different amounts (an update cut
     * by the budget left the lower rows older): one copy each */
    for (k = 0; k < TILER_SCROLL_MAX_COPIES; k++) {
      if (!tiler_scroll_next (&self->scroll, &dest, &src_y))
        break;
      from = dest;
      from.y = src_y;
      if (self->stream.active &&
          (gst_spice_rect_intersect (&dest, &self->stream.rect, NULL) ||
              gst_spice_rect_intersect (&from, &self->stream.rect, NULL)))
        break;
      if (!area_exact (self, &from))
        break;
      GST_LOG_OBJECT (self, "copy %dx%d from %d,%d to %d,%d", dest.w, dest.h,
          from.x, from.y, dest.x, dest.y);
      begin_update (self, 0);
      gst_spice_draws_writer_add_copy_bits (self->writer, &dest, from.x,
          from.y);
      gst_spice_copy_bits_apply (self->shadow, self->shadow_stride, &dest,
          from.x, from.y);
      tiler_scroll_moved (&self->scroll, &dest, src_y);
      mark_exact (self, &dest);
      count_region (self, GST_SPICE_IMAGE_COPY_BITS, 0);
      if (scroll_zone_live (self, now))
        gst_spice_rect_union (&self->scroll_zone, &area, &self->scroll_zone);
      else
        self->scroll_zone = area;
      self->scroll_zone_rt = now;
      g_mutex_lock (&self->lock);
      self->stats.copied_rows += dest.h;
      g_mutex_unlock (&self->lock);
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
join_scroll_zone (GstSpiceTiler * self, GstClockTime now)
{
  GstSpiceRegion *regions = &self->regions;
  GstVideoRectangle joined = { 0, 0, 0, 0 };
  GArray *rects = regions->rects;
  guint i;

  if (!scroll_zone_live (self, now))
    return;
  for (i = 0; i < rects->len;) {
    GstVideoRectangle *r = &g_array_index (rects, GstVideoRectangle, i);

    if (gst_spice_rect_intersect (r, &self->scroll_zone, NULL)) {
      gst_spice_rect_union (&joined, r, &joined);
      g_array_remove_index_fast (rects, i);
    } else
      i++;
  }
  if (!gst_spice_rect_is_empty (&joined))
    g_array_append_val (rects, joined);
}

/* whether downstream has not taken the last update yet (or the link has
 * not carried it, tiler_draw_pace_us()); lock held */
static gboolean
draw_busy_locked (GstSpiceTiler * self, gboolean final)
{
  return (self->draw_busy || g_get_monotonic_time () < self->draw_ready_us) &&
      !final;
}

void
gst_spice_tiler_update (GstSpiceTiler * self, const TilerParams * p,
    GstClockTime now, GstSpiceRegion * damage, gboolean full,
    gboolean new_frame, gboolean final)
{
  TilerDiff *d = &self->diff;
  const guint8 *src = GST_VIDEO_FRAME_PLANE_DATA (&self->cur_frame, 0);
  gint fstride = GST_VIDEO_FRAME_PLANE_STRIDE (&self->cur_frame, 0);
  gboolean s_changed = FALSE, allowed, refresh, draw_late, no_budget;
  gboolean stream_still;
  const GstVideoRectangle *owned;
  guint stream_scale;
  gboolean draw_busy, urgent;
  GstVideoRectangle srect;
  TilerStreamAction action = TILER_STREAM_CONTINUE;
  gint64 t0, t1, t2;
  guint i, n;

  t0 = g_get_monotonic_time ();
  diff_damage (self, damage, full, src, fstride);
  if (p->scroll && d->n_touched > 0) {
    g_mutex_lock (&self->lock);
    draw_busy = draw_busy_locked (self, final);
    g_mutex_unlock (&self->lock);
    /* a copy goes into this update: only when one can be made now */
    if (!draw_busy && copy_scrolled (self, damage, full, src, fstride, now))
      diff_damage (self, damage, full, src, fstride);
  }
  t1 = g_get_monotonic_time ();
  /* the caller merged the carried damage into @damage */
  gst_spice_region_reset (&self->carry);

  /* classify the changed cells, feed the heat map */
  for (i = 0; i < d->n_touched; i++) {
    guint ci = d->touched[i];
    gint cx = ci % d->ncx, cy = ci / d->ncx;
    GstVideoRectangle c;
    gboolean photo;

    tiler_diff_cell_rect (d, cx, cy, &c);
    photo = tiler_classify_is_photo (src + (gsize) c.y * fstride +
        (gsize) c.x * 4, fstride, c.w, c.h);
    d->flags[ci] |= TILER_CELL_CLASSIFIED | (photo ? TILER_CELL_PHOTO : 0);
    if (new_frame)
      tiler_heat_touch (&self->heat, c.x / d->tile, c.y / d->tile, now, photo);
    if (self->stream.active &&
        tiler_diff_cell_inside (d, cx, cy, &self->stream.rect))
      s_changed = TRUE;
  }

  /* photographic cells on the border of the changed area that also hold
   * unchanged pixels (a static caption, a window edge) go lossless: only
   * pixels that changed may ever be sent lossy */
  for (i = 0; i < d->n_touched; i++) {
    guint ci = d->touched[i];

    if ((d->flags[ci] & TILER_CELL_PHOTO) && cell_on_border (d, ci) &&
        cell_has_still_run (self, ci, src, fstride))
      d->flags[ci] &= ~TILER_CELL_PHOTO;
  }

  /* stream decision */
  g_mutex_lock (&self->lock);
  allowed = p->streaming != GST_SPICE_TILER_STREAMING_OFF &&
      self->stream_enabled && !final && gst_pad_is_linked (self->streampad);
  /* while downstream has not taken the last update (or the link has not
   * carried it yet, tiler_draw_pace_us()), no new one is made: this damage
   * waits (only the stream goes on) */
  draw_busy = draw_busy_locked (self, final);
  refresh = self->refresh_pending && !draw_busy;
  if (refresh)
    self->refresh_pending = FALSE;
  draw_late = GST_CLOCK_TIME_IS_VALID (self->draw_qos_earliest) &&
      now < self->draw_qos_earliest;
  stream_scale = MAX (self->rate_scale, 1);
  g_mutex_unlock (&self->lock);
  self->heat.min_frames = p->stream_min_frames;
  self->heat.max_gap = p->stream_max_gap;
  self->heat.timeout = p->stream_timeout;
  self->heat.min_area = p->stream_min_area;
  self->heat.all = p->streaming == GST_SPICE_TILER_STREAMING_ALL;
  action = tiler_heat_decide (&self->heat, &self->stream, now, s_changed,
      allowed, &srect);
  /* without a new frame only an end (timeout, EOS) is acted on */
  if (!new_frame && action != TILER_STREAM_END)
    action = TILER_STREAM_CONTINUE;
  /* a new picture size (spice-rate) is a new stream: a keyframe, and the
   * client learns the size from its STREAM_CREATE */
  if (action == TILER_STREAM_CONTINUE && self->stream.active &&
      stream_scale != self->stream_scale) {
    GST_DEBUG_OBJECT (self, "stream picture 1/%u -> 1/%u", self->stream_scale,
        stream_scale);
    action = TILER_STREAM_RESTART;
    srect = self->stream.rect;
  }
  switch (action) {
    case TILER_STREAM_END:
      gst_spice_tiler_stream_end (self);
      break;
    case TILER_STREAM_RESTART:
      gst_spice_tiler_stream_end (self);
      /* fall through */
    case TILER_STREAM_START:
      gst_spice_tiler_stream_begin (self, &srect, stream_scale, now);
      s_changed = TRUE;
      break;
    default:
      break;
  }

  if (refresh)
    push_refresh (self, p);

  /* the stream frame goes before any draw that overlaps it; a dropped
   * frame leaves the area dirty for the next frame */
  if (self->stream.active && s_changed)
    self->stream_dirty = TRUE;
  if (new_frame) {
    if (self->stream.active && self->stream_dirty &&
        gst_spice_tiler_stream_frame_allowed (self, now) &&
        gst_spice_tiler_push_stream_frame (self, p, now))
      self->stream_dirty = FALSE;
    else
      gst_spice_tiler_push_gap (self);
  }

  if (draw_busy) {
    if (full) {
      GstVideoRectangle all = { 0, 0, d->width, d->height };

      gst_spice_region_add (&self->carry, &all);
    } else
      gst_spice_region_add_region (&self->carry, damage);
    gst_spice_region_limit (&self->carry, 64);
    t2 = g_get_monotonic_time ();
    goto done;
  }

  /* a stream whose area has been still for refine-delay (no frame due) is
   * refined like any lossy area, without ending it: the exact picture
   * does not wait for stream-timeout, and the next change is a stream
   * frame again. Until then the stream owns its rectangle. */
  stream_still = self->stream.active && !self->stream_dirty &&
      GST_CLOCK_TIME_IS_VALID (self->stream.last_change) &&
      self->stream.last_change + p->refine_delay <= now;
  owned = self->stream.active && !stream_still ? &self->stream.rect : NULL;

  /* refinement: lossy cells that have been still long enough */
  n = d->ncx * d->ncy;
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
      due = !draw_late && t + p->refine_delay <= now &&
          !(d->flags[i] & TILER_CELL_CHANGED);
    if (due) {
      tiler_diff_force_cell (d, cx, cy);
      g_mutex_lock (&self->lock);
      self->stats.refined_cells++;
      g_mutex_unlock (&self->lock);
    }
  }

  /* regions, smallest first */
  tiler_diff_collect (d, owned, p->max_rects, &self->regions);
  join_scroll_zone (self, now);
  g_array_sort (self->regions.rects, compare_area);
  no_budget = final;
  begin_update (self, 0);
  {
    const GstVideoRectangle *r = gst_spice_region_rects (&self->regions);
    guint nr = gst_spice_region_n_rects (&self->regions);
    gboolean cut = FALSE;

    for (i = 0; i < nr; i++) {
      if (!emit_region (self, p, &r[i], owned, now, no_budget)) {
        cut = TRUE;
        for (i = i + 1; i < nr; i++)
          gst_spice_region_add (&self->carry, &r[i]);
        break;
      }
    }
    /* only updates that had something to send say whether there is
     * pressure */
    if (nr > 0)
      self->pressure = cut;
  }
  t2 = g_get_monotonic_time ();
  finish_update (self);

done:
  urgent = compute_next_refine (self, p);

  g_mutex_lock (&self->lock);
  if (new_frame)
    self->stats.frames_processed++;
  self->stats.diff_us_avg = self->stats.diff_us_avg * 0.9 + (t1 - t0) * 0.1;
  self->stats.encode_us_avg = self->stats.encode_us_avg * 0.9 + (t2 - t1) * 0.1;
  self->worker_pending = !gst_spice_region_is_empty (&self->carry) || urgent;
  g_mutex_unlock (&self->lock);
}
