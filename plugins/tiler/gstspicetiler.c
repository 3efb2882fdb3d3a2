/* spicetiler: turns raw frames into SPICE draws and a stream region
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
/**
 * SECTION:element-spicetiler
 * @title: spicetiler
 *
 * spicetiler sits between a raw video source (spicesrc, or any source) and
 * spicesink. It keeps a *shadow* of what it has sent downstream and, for
 * each frame, diffs only the damaged area (#GstSpiceDamageMeta; without it,
 * or after a missed frame, the whole frame) against the shadow in tiles,
 * trimmed to the changed pixels and merged into at most #GstSpiceTiler:max-rects
 * regions. Each region is classified per 16x16 cell and encoded as
 * SPICE images on the `draw` pad (application/x-spice-draws): tiny
 * regions as BITMAP, synthetic content (text, UI) as LZ4, photographic
 * content as JPEG. Lossy cells are re-sent losslessly once they have been
 * still for #GstSpiceTiler:refine-delay, so the client converges to the
 * exact picture.
 *
 * A heat map finds an area that keeps changing; that area is cut out as
 * raw video on the `stream` pad (I420 by default) with a
 * #GstSpiceStreamMeta telling where it goes, for an encoder such as
 * vp8enc. While a stream is active its area is not sent as draws; when it
 * ends the area is refined losslessly. The `stream` pad carries GAP
 * events when there is no stream frame.
 *
 * Frames are never queued: a worker thread takes the latest frame, and
 * while the `draw` pad is blocked, new frames replace the pending one and
 * their damage accumulates. Updates are limited to
 * #GstSpiceTiler:update-budget bytes and large regions go out in bands, the
 * smallest regions first, so a keypress never waits behind a large update.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 videotestsrc is-live=true pattern=ball ! spicetiler name=t \
 *     t.draw ! fakesink \
 *     t.stream ! queue max-size-buffers=1 leaky=downstream ! vp8enc deadline=1 ! \
 *     fakesink async=false
 * ]| The sink behind the encoder needs async=false: a video encoder holds
 * GAP events until it has had a frame, so a stream branch on which no stream
 * has started yet would never preroll.
 *
 * Upstream events: the `spice-refresh` event (a full lossless redraw,
 * flagged %GST_SPICE_DRAWS_FLAG_REFRESH, and a keyframe on the stream),
 * `spice-rate` (stream frame rate limit), `spice-stream-control` (with
 * enabled=FALSE the stream area goes out as draws), force-key-unit and
 * QoS are handled; navigation events travel upstream from both pads.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include <gst/base/gstflowcombiner.h>
#include <gst/video/video.h>

#include "gstspicetiler.h"
#include "tilerdiff.h"
#include "tilerclassify.h"
#include "tilerencode.h"
#include "tilerheat.h"

GST_DEBUG_CATEGORY_STATIC (gst_spice_tiler_debug);
#define GST_CAT_DEFAULT gst_spice_tiler_debug

#define DEFAULT_MAX_RECTS 16
#define DEFAULT_TILE_SIZE 64
#define DEFAULT_JPEG_QUALITY 85
#define DEFAULT_REFINE_DELAY (250 * GST_MSECOND)
#define DEFAULT_STREAMING GST_SPICE_TILER_STREAMING_AUTO
#define DEFAULT_STREAM_MIN_FRAMES 20
#define DEFAULT_STREAM_MAX_GAP (200 * GST_MSECOND)
#define DEFAULT_STREAM_TIMEOUT (1 * GST_SECOND)
#define DEFAULT_STREAM_MIN_AREA (96 * 96)
#define DEFAULT_STREAM_FORMAT GST_VIDEO_FORMAT_I420
#define DEFAULT_UPDATE_BUDGET (256 * 1024)
#define DEFAULT_BAND_SIZE (128 * 1024)

#define MAX_DAMAGE_RECTS 256
#define FALLBACK_FRAME_DURATION (GST_SECOND / 30)

enum
{
  PROP_0,
  PROP_MAX_RECTS,
  PROP_TILE_SIZE,
  PROP_JPEG_QUALITY,
  PROP_REFINE_DELAY,
  PROP_STREAMING,
  PROP_STREAM_MIN_FRAMES,
  PROP_STREAM_MAX_GAP,
  PROP_STREAM_TIMEOUT,
  PROP_STREAM_MIN_AREA,
  PROP_STREAM_FORMAT,
  PROP_UPDATE_BUDGET,
  PROP_BAND_SIZE,
  PROP_STATS,
};

typedef struct
{
  guint max_rects, tile_size, jpeg_quality;
  GstClockTime refine_delay;
  GstSpiceTilerStreaming streaming;
  guint stream_min_frames, stream_min_area;
  GstClockTime stream_max_gap, stream_timeout;
  GstVideoFormat stream_format;
  guint update_budget, band_size;
} TilerParams;

/* one entry of the worker's mailbox: a frame (coalescing) or an event */
typedef struct
{
  GstBuffer *buf;
  GstEvent *event;
  GstSpiceRegion damage;
  gboolean full;
  gboolean has_seq;
  guint64 first_seq, last_seq;
} TilerItem;

typedef struct
{
  guint64 frames_in, frames_processed, frames_coalesced;
  guint64 updates, regions, regions_bitmap, regions_lz4, regions_jpeg;
  guint64 bytes_bitmap, bytes_lz4, bytes_jpeg;
  guint64 refined_cells, refreshes, deferred;
  guint64 stream_starts, stream_frames, stream_dropped;
  guint64 lossy_cells;
  gdouble diff_us_avg, encode_us_avg, stream_fps;
  gboolean stream_active;
  GstVideoRectangle stream_rect;
  guint stream_id;
} TilerStats;

struct _GstSpiceTiler
{
  GstElement parent;

  GstPad *sinkpad, *drawpad, *streampad;
  GstFlowCombiner *combiner;

  /* lock protects everything up to the worker-only part */
  GMutex lock;
  GCond cond;
  TilerParams params;
  GQueue items;
  GQueue free_items;
  gboolean flushing;
  gboolean busy;
  gboolean worker_pending;      /* worker has deferred work */
  gboolean refresh_pending;
  gboolean keyframe_pending;
  gint rate_fps_n, rate_fps_d;
  gboolean stream_enabled;
  GstClockTime draw_qos_earliest, stream_qos_earliest;
  GstClockID clock_id;
  GstFlowReturn last_flow;
  TilerStats stats;

  /* ---- worker only ---- */
  GstVideoInfo info;
  gboolean have_info;
  GstSegment segment;
  guint8 *shadow;
  gint shadow_stride;
  TilerDiff diff;
  TilerHeat heat;
  TilerEncoder enc;
  GstSpiceRegion carry;
  GstSpiceRegion idle_damage;   /* scratch for updates without a frame */
  GstSpiceRegion regions;
  GArray *runs;
  GstBuffer *cur;
  GstVideoFrame cur_frame;
  GstClockTime cur_now, cur_pts, cur_duration;
  gboolean have_seq;
  guint64 seq;
  GstClockTime next_refine;
  GstClockTime last_deadline;   /* last refinement deadline waited for */
  gint tile_applied;
  /* stream */
  TilerStreamState stream;
  guint stream_id;
  gint stream_caps_w, stream_caps_h;
  GstVideoFormat stream_caps_format;
  GstVideoInfo sinfo;
  GstVideoConverter *conv;
  GstVideoRectangle conv_rect;
  GstBufferPool *pool;
  GstClockTime last_stream_rt;
  gboolean stream_dirty;        /* the area changed since its last frame */
  GstClockTime fps_window_start;
  guint fps_window_frames;
  /* the update being built */
  GstSpiceDrawsWriter *writer;
  gsize last_update_size;
};

#define gst_spice_tiler_parent_class parent_class
G_DEFINE_TYPE (GstSpiceTiler, gst_spice_tiler, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE_WITH_CODE (spicetiler, "spicetiler",
    GST_RANK_NONE, GST_TYPE_SPICE_TILER,
    GST_DEBUG_CATEGORY_INIT (gst_spice_tiler_debug, "spicetiler", 0,
        "SPICE draws and stream region from raw video"));

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_VIDEO_CAPS_MAKE ("{ BGRx, BGRA }")));

static GstStaticPadTemplate draw_template = GST_STATIC_PAD_TEMPLATE ("draw",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS (GST_SPICE_DRAWS_CAPS));

static GstStaticPadTemplate stream_template = GST_STATIC_PAD_TEMPLATE ("stream",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_VIDEO_CAPS_MAKE (GST_VIDEO_FORMATS_ALL)));

GType
gst_spice_tiler_streaming_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_SPICE_TILER_STREAMING_OFF, "Never stream: everything as draws",
        "off"},
    {GST_SPICE_TILER_STREAMING_AUTO,
        "Stream areas that keep changing with photographic content or noise",
        "auto"},
    {GST_SPICE_TILER_STREAMING_ALL,
        "Stream any area that keeps changing", "all"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstSpiceTilerStreaming", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

/* ------------------------------------------------------------------ */
/* mailbox items */

static TilerItem *
item_get (GstSpiceTiler * self)
{
  TilerItem *it = g_queue_pop_head (&self->free_items);

  if (!it) {
    it = g_new0 (TilerItem, 1);
    gst_spice_region_init (&it->damage);
  }
  return it;
}

static void
item_release (GstSpiceTiler * self, TilerItem * it)
{
  gst_clear_buffer (&it->buf);
  gst_clear_event (&it->event);
  gst_spice_region_reset (&it->damage);
  it->full = it->has_seq = FALSE;
  g_queue_push_head (&self->free_items, it);
}

static void
item_free (gpointer data)
{
  TilerItem *it = data;

  gst_clear_buffer (&it->buf);
  gst_clear_event (&it->event);
  gst_spice_region_clear (&it->damage);
  g_free (it);
}

/* with lock */
static void
wake_worker (GstSpiceTiler * self)
{
  g_cond_broadcast (&self->cond);
  if (self->clock_id)
    gst_clock_id_unschedule (self->clock_id);
}

/* with lock */
static void
clear_items (GstSpiceTiler * self)
{
  TilerItem *it;

  while ((it = g_queue_pop_head (&self->items)))
    item_release (self, it);
}

/* ------------------------------------------------------------------ */
/* worker helpers */

static void
update_flow (GstSpiceTiler * self, GstPad * pad, GstFlowReturn ret)
{
  GstFlowReturn combined;

  g_mutex_lock (&self->lock);
  combined = gst_flow_combiner_update_pad_flow (self->combiner, pad, ret);
  if (!self->flushing || combined == GST_FLOW_FLUSHING)
    self->last_flow = combined;
  g_mutex_unlock (&self->lock);
  if (ret != GST_FLOW_OK)
    GST_DEBUG_OBJECT (pad, "push returned %s, combined %s",
        gst_flow_get_name (ret), gst_flow_get_name (combined));
}

static void
release_cur (GstSpiceTiler * self)
{
  if (self->cur) {
    gst_video_frame_unmap (&self->cur_frame);
    gst_buffer_unref (self->cur);
    self->cur = NULL;
  }
}

static void
stream_free_resources (GstSpiceTiler * self)
{
  if (self->conv) {
    gst_video_converter_free (self->conv);
    self->conv = NULL;
  }
  if (self->pool) {
    gst_buffer_pool_set_active (self->pool, FALSE);
    gst_object_unref (self->pool);
    self->pool = NULL;
  }
}

static void
worker_reset (GstSpiceTiler * self)
{
  release_cur (self);
  g_free (self->shadow);
  self->shadow = NULL;
  tiler_diff_clear (&self->diff);
  tiler_heat_clear (&self->heat);
  gst_spice_region_reset (&self->carry);
  stream_free_resources (self);
  self->have_info = FALSE;
  self->have_seq = FALSE;
  self->stream.active = FALSE;
  self->stream_caps_w = self->stream_caps_h = 0;
  self->cur_now = GST_CLOCK_TIME_NONE;
  self->next_refine = GST_CLOCK_TIME_NONE;
  self->last_deadline = GST_CLOCK_TIME_NONE;
  self->last_stream_rt = GST_CLOCK_TIME_NONE;
  self->fps_window_start = GST_CLOCK_TIME_NONE;
  self->fps_window_frames = 0;
  gst_segment_init (&self->segment, GST_FORMAT_TIME);
}

/* every cell: client content unknown, send it lossless */
static void
invalidate_client (GstSpiceTiler * self)
{
  guint i, n = self->diff.ncx * self->diff.ncy;

  for (i = 0; i < n; i++)
    self->diff.lossy_rt[i] = TILER_RT_UNKNOWN;
}

static void
setup_geometry (GstSpiceTiler * self, const TilerParams * p)
{
  gint w = GST_VIDEO_INFO_WIDTH (&self->info);
  gint h = GST_VIDEO_INFO_HEIGHT (&self->info);

  g_free (self->shadow);
  self->shadow_stride = w * 4;
  self->shadow = g_malloc0 ((gsize) self->shadow_stride * h);
  tiler_diff_clear (&self->diff);
  tiler_diff_init (&self->diff, w, h, p->tile_size);
  self->tile_applied = self->diff.tile;
  tiler_heat_init (&self->heat, w, h, self->diff.tile);
  gst_spice_region_reset (&self->carry);
  self->stream.active = FALSE;
  stream_free_resources (self);
  invalidate_client (self);
}

static void
push_stream_caps (GstSpiceTiler * self, gint w, gint h, GstVideoFormat format)
{
  GstCaps *caps;

  if (w == self->stream_caps_w && h == self->stream_caps_h &&
      format == self->stream_caps_format)
    return;
  gst_video_info_set_format (&self->sinfo, format, w, h);
  GST_VIDEO_INFO_FPS_N (&self->sinfo) = GST_VIDEO_INFO_FPS_N (&self->info);
  GST_VIDEO_INFO_FPS_D (&self->sinfo) = GST_VIDEO_INFO_FPS_D (&self->info);
  GST_VIDEO_INFO_PAR_N (&self->sinfo) = 1;
  GST_VIDEO_INFO_PAR_D (&self->sinfo) = 1;
  caps = gst_video_info_to_caps (&self->sinfo);
  GST_DEBUG_OBJECT (self, "stream caps %" GST_PTR_FORMAT, caps);
  gst_pad_push_event (self->streampad, gst_event_new_caps (caps));
  gst_caps_unref (caps);
  self->stream_caps_w = w;
  self->stream_caps_h = h;
  self->stream_caps_format = format;
  stream_free_resources (self);
}

static void
push_gap (GstSpiceTiler * self)
{
  if (GST_CLOCK_TIME_IS_VALID (self->cur_pts))
    gst_pad_push_event (self->streampad, gst_event_new_gap (self->cur_pts,
            self->cur_duration));
}

/* ---- lossy map ---- */

static void
mark_lossy (GstSpiceTiler * self, const GstVideoRectangle * r, GstClockTime t)
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

static void
copy_to_shadow (GstSpiceTiler * self, const GstVideoRectangle * r)
{
  const guint8 *src = GST_VIDEO_FRAME_PLANE_DATA (&self->cur_frame, 0);
  gint sstride = GST_VIDEO_FRAME_PLANE_STRIDE (&self->cur_frame, 0);
  gint y;

  for (y = r->y; y < r->y + r->h; y++)
    memcpy (self->shadow + (gsize) y * self->shadow_stride + (gsize) r->x * 4,
        src + (gsize) y * sstride + (gsize) r->x * 4, (gsize) r->w * 4);
}

/* ---- draws ---- */

static gint
band_rows (const TilerParams * p, gint w)
{
  gint rows = (gint) (p->band_size / ((guint) w * 4));

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
  gint rows = band_rows (p, r->w), y, end = r->y + r->h;

  if (lossy && gst_spice_rect_area (r) < TILER_JPEG_MIN_PIXELS)
    lossy = FALSE;
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
      mark_lossy (self, &band, now);
    count_region (self, type, size);
    copy_to_shadow (self, &band);
  }
  if (!lossy)
    mark_exact (self, r);
  return TRUE;
}

typedef struct
{
  GstVideoRectangle r;
  gint cx0, cx1, cy0, cy1;
  gboolean lossy;
  gboolean dead;
} TilerRun;

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
  GstFlowReturn ret;

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
  g_mutex_lock (&self->lock);
  self->stats.updates++;
  g_mutex_unlock (&self->lock);
  GST_LOG_OBJECT (self, "pushing update of %" G_GSIZE_FORMAT " bytes",
      gst_buffer_get_size (buf));
  ret = gst_pad_push (self->drawpad, buf);
  update_flow (self, self->drawpad, ret);
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
    mark_lossy (self, &self->stream.rect, self->cur_now);
  g_mutex_lock (&self->lock);
  self->stats.refreshes++;
  self->keyframe_pending = TRUE;
  g_mutex_unlock (&self->lock);
  finish_update (self);
}

/* ---- stream ---- */

static void
stream_end (GstSpiceTiler * self)
{
  TilerDiff *d = &self->diff;
  gint cx, cy;

  if (!self->stream.active)
    return;
  GST_DEBUG_OBJECT (self, "stream %u ends", self->stream_id);
  for (cy = 0; cy < d->ncy; cy++)
    for (cx = 0; cx < d->ncx; cx++)
      if (tiler_diff_cell_inside (d, cx, cy, &self->stream.rect))
        d->lossy_rt[TILER_CELL_INDEX (d, cx, cy)] = TILER_RT_UNKNOWN;
  self->stream.active = FALSE;
  self->stream_dirty = FALSE;
  g_mutex_lock (&self->lock);
  self->stats.stream_active = FALSE;
  self->stats.stream_fps = 0;
  g_mutex_unlock (&self->lock);
}

static void
stream_begin (GstSpiceTiler * self, const GstVideoRectangle * r,
    GstClockTime now)
{
  self->stream.active = TRUE;
  self->stream_dirty = TRUE;
  self->stream.rect = *r;
  self->stream.last_change = now;
  self->stream.shrink_since = GST_CLOCK_TIME_NONE;
  self->stream_id++;
  self->fps_window_start = now;
  self->fps_window_frames = 0;
  GST_DEBUG_OBJECT (self, "stream %u starts at %d,%d %dx%d", self->stream_id,
      r->x, r->y, r->w, r->h);
  g_mutex_lock (&self->lock);
  self->keyframe_pending = TRUE;
  self->stats.stream_starts++;
  self->stats.stream_active = TRUE;
  self->stats.stream_rect = *r;
  self->stats.stream_id = self->stream_id;
  g_mutex_unlock (&self->lock);
}

static gboolean
ensure_stream_resources (GstSpiceTiler * self, const TilerParams * p)
{
  const GstVideoRectangle *r = &self->stream.rect;
  GstStructure *config;
  GstCaps *caps;

  push_stream_caps (self, r->w, r->h, p->stream_format);
  if (self->conv && memcmp (&self->conv_rect, r, sizeof (*r)) != 0) {
    gst_video_converter_free (self->conv);
    self->conv = NULL;
  }
  if (!self->conv) {
    self->conv = gst_video_converter_new (&self->info, &self->sinfo,
        gst_structure_new ("GstVideoConverter",
            GST_VIDEO_CONVERTER_OPT_SRC_X, G_TYPE_INT, r->x,
            GST_VIDEO_CONVERTER_OPT_SRC_Y, G_TYPE_INT, r->y,
            GST_VIDEO_CONVERTER_OPT_SRC_WIDTH, G_TYPE_INT, r->w,
            GST_VIDEO_CONVERTER_OPT_SRC_HEIGHT, G_TYPE_INT, r->h,
            GST_VIDEO_CONVERTER_OPT_DITHER_METHOD,
            GST_TYPE_VIDEO_DITHER_METHOD, GST_VIDEO_DITHER_NONE,
            GST_VIDEO_CONVERTER_OPT_THREADS, G_TYPE_UINT, 1, NULL));
    self->conv_rect = *r;
    if (!self->conv)
      return FALSE;
  }
  if (!self->pool) {
    self->pool = gst_video_buffer_pool_new ();
    config = gst_buffer_pool_get_config (self->pool);
    caps = gst_video_info_to_caps (&self->sinfo);
    gst_buffer_pool_config_set_params (config, caps,
        GST_VIDEO_INFO_SIZE (&self->sinfo), 2, 0);
    gst_caps_unref (caps);
    if (!gst_buffer_pool_set_config (self->pool, config) ||
        !gst_buffer_pool_set_active (self->pool, TRUE)) {
      gst_clear_object (&self->pool);
      return FALSE;
    }
  }
  return TRUE;
}

/* Returns TRUE when a frame went out (and the shadow took the area). */
static gboolean
push_stream_frame (GstSpiceTiler * self, const TilerParams * p,
    GstClockTime now)
{
  GstBuffer *out = NULL;
  GstVideoFrame oframe;
  GstFlowReturn ret;
  gboolean keyframe;

  if (!ensure_stream_resources (self, p) ||
      gst_buffer_pool_acquire_buffer (self->pool, &out, NULL) != GST_FLOW_OK)
    return FALSE;
  if (!gst_video_frame_map (&oframe, &self->sinfo, out, GST_MAP_WRITE)) {
    gst_buffer_unref (out);
    return FALSE;
  }
  gst_video_converter_frame (self->conv, &self->cur_frame, &oframe);
  gst_video_frame_unmap (&oframe);
  g_mutex_lock (&self->lock);
  keyframe = self->keyframe_pending;
  self->keyframe_pending = FALSE;
  g_mutex_unlock (&self->lock);
  gst_buffer_add_spice_stream_meta (out, &self->stream.rect, self->stream_id,
      keyframe);
  GST_BUFFER_PTS (out) = self->cur_pts;
  GST_BUFFER_DURATION (out) = self->cur_duration;
  if (keyframe) {
    GST_BUFFER_FLAG_SET (out, GST_BUFFER_FLAG_DISCONT);
    gst_pad_push_event (self->streampad,
        gst_video_event_new_downstream_force_key_unit (self->cur_pts,
            GST_CLOCK_TIME_NONE, now, TRUE, self->stream_id));
  }
  ret = gst_pad_push (self->streampad, out);
  update_flow (self, self->streampad, ret);
  copy_to_shadow (self, &self->stream.rect);
  mark_lossy (self, &self->stream.rect, now);
  self->last_stream_rt = now;
  self->fps_window_frames++;
  g_mutex_lock (&self->lock);
  self->stats.stream_frames++;
  if (now > self->fps_window_start + GST_SECOND) {
    self->stats.stream_fps = self->fps_window_frames * (gdouble) GST_SECOND /
        (now - self->fps_window_start);
    self->fps_window_start = now;
    self->fps_window_frames = 0;
  }
  g_mutex_unlock (&self->lock);
  return TRUE;
}

static gboolean
stream_frame_allowed (GstSpiceTiler * self, GstClockTime now)
{
  gboolean ok = TRUE;

  g_mutex_lock (&self->lock);
  if (self->rate_fps_n > 0 && GST_CLOCK_TIME_IS_VALID (self->last_stream_rt)) {
    GstClockTime interval = gst_util_uint64_scale (GST_SECOND,
        self->rate_fps_d, self->rate_fps_n);

    /* a millisecond of slack for rounded timestamps */
    if (now + GST_MSECOND < self->last_stream_rt + interval)
      ok = FALSE;
  }
  if (GST_CLOCK_TIME_IS_VALID (self->stream_qos_earliest) &&
      now < self->stream_qos_earliest)
    ok = FALSE;
  if (!ok)
    self->stats.stream_dropped++;
  g_mutex_unlock (&self->lock);
  return ok;
}

/* ---- one update ---- */

static void
compute_next_refine (GstSpiceTiler * self, const TilerParams * p)
{
  TilerDiff *d = &self->diff;
  GstClockTime next = GST_CLOCK_TIME_NONE;
  guint i, n = d->ncx * d->ncy;
  guint64 lossy = 0;

  for (i = 0; i < n; i++) {
    GstClockTime t = d->lossy_rt[i];

    if (t == TILER_RT_EXACT)
      continue;
    lossy++;
    /* the stream covers its area; its end is the deadline there */
    if (self->stream.active && tiler_diff_cell_inside (d, i % d->ncx,
            i / d->ncx, &self->stream.rect))
      continue;
    if (t == TILER_RT_UNKNOWN)
      t = 0;
    else
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
iterate (GstSpiceTiler * self, const TilerParams * p, GstClockTime now,
    GstSpiceRegion * damage, gboolean full, gboolean new_frame, gboolean final)
{
  TilerDiff *d = &self->diff;
  const guint8 *src = GST_VIDEO_FRAME_PLANE_DATA (&self->cur_frame, 0);
  gint fstride = GST_VIDEO_FRAME_PLANE_STRIDE (&self->cur_frame, 0);
  gboolean s_changed = FALSE, allowed, refresh, draw_late, no_budget;
  GstVideoRectangle srect;
  TilerStreamAction action = TILER_STREAM_CONTINUE;
  gint64 t0, t1, t2;
  guint i, n;

  t0 = g_get_monotonic_time ();
  tiler_diff_begin (d);
  if (full)
    tiler_diff_mark_all (d);
  else {
    const GstVideoRectangle *r = gst_spice_region_rects (damage);

    for (i = 0; i < gst_spice_region_n_rects (damage); i++)
      tiler_diff_mark (d, &r[i]);
  }
  tiler_diff_run (d, src, fstride, self->shadow, self->shadow_stride);
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
  refresh = self->refresh_pending;
  self->refresh_pending = FALSE;
  draw_late = GST_CLOCK_TIME_IS_VALID (self->draw_qos_earliest) &&
      now < self->draw_qos_earliest;
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
  switch (action) {
    case TILER_STREAM_END:
      stream_end (self);
      break;
    case TILER_STREAM_RESTART:
      stream_end (self);
      /* fall through */
    case TILER_STREAM_START:
      stream_begin (self, &srect, now);
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
        stream_frame_allowed (self, now) && push_stream_frame (self, p, now))
      self->stream_dirty = FALSE;
    else
      push_gap (self);
  }

  /* refinement: lossy cells that have been still long enough */
  n = d->ncx * d->ncy;
  for (i = 0; i < n; i++) {
    GstClockTime t = d->lossy_rt[i];
    gint cx = i % d->ncx, cy = i / d->ncx;
    gboolean due;

    if (t == TILER_RT_EXACT)
      continue;
    if (self->stream.active &&
        tiler_diff_cell_inside (d, cx, cy, &self->stream.rect))
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
  tiler_diff_collect (d, self->stream.active ? &self->stream.rect : NULL,
      p->max_rects, &self->regions);
  g_array_sort (self->regions.rects, compare_area);
  no_budget = final;
  begin_update (self, 0);
  {
    const GstVideoRectangle *r = gst_spice_region_rects (&self->regions);
    guint nr = gst_spice_region_n_rects (&self->regions);

    for (i = 0; i < nr; i++) {
      if (!emit_region (self, p, &r[i],
              self->stream.active ? &self->stream.rect : NULL, now,
              no_budget)) {
        for (i = i + 1; i < nr; i++)
          gst_spice_region_add (&self->carry, &r[i]);
        break;
      }
    }
  }
  t2 = g_get_monotonic_time ();
  finish_update (self);
  compute_next_refine (self, p);

  g_mutex_lock (&self->lock);
  if (new_frame)
    self->stats.frames_processed++;
  self->stats.diff_us_avg = self->stats.diff_us_avg * 0.9 + (t1 - t0) * 0.1;
  self->stats.encode_us_avg =
      self->stats.encode_us_avg * 0.9 + (t2 - t1) * 0.1;
  self->worker_pending = !gst_spice_region_is_empty (&self->carry);
  g_mutex_unlock (&self->lock);
}

/* ---- items ---- */

static void
handle_frame (GstSpiceTiler * self, const TilerParams * p, TilerItem * it)
{
  GstClockTime pts = GST_BUFFER_PTS (it->buf), rt;
  gboolean full;

  if (!self->have_info) {
    g_mutex_lock (&self->lock);
    self->last_flow = GST_FLOW_NOT_NEGOTIATED;
    g_mutex_unlock (&self->lock);
    return;
  }
  if ((gint) MAX (TILER_CELL, p->tile_size - p->tile_size % TILER_CELL) !=
      self->tile_applied)
    setup_geometry (self, p);
  release_cur (self);
  if (!gst_video_frame_map (&self->cur_frame, &self->info, it->buf,
          GST_MAP_READ)) {
    GST_ELEMENT_WARNING (self, STREAM, DECODE, (NULL), ("cannot map frame"));
    return;
  }
  self->cur = gst_buffer_ref (it->buf);
  rt = gst_segment_to_running_time (&self->segment, GST_FORMAT_TIME, pts);
  if (!GST_CLOCK_TIME_IS_VALID (rt))
    rt = GST_CLOCK_TIME_IS_VALID (self->cur_now) ?
        self->cur_now + FALLBACK_FRAME_DURATION : 0;
  if (GST_CLOCK_TIME_IS_VALID (self->cur_now) && rt < self->cur_now)
    rt = self->cur_now;
  self->cur_now = rt;
  self->last_deadline = GST_CLOCK_TIME_NONE;
  self->cur_pts = pts;
  self->cur_duration = GST_BUFFER_DURATION (it->buf);

  full = it->full || !it->has_seq || !self->have_seq ||
      it->first_seq != self->seq + 1;
  self->have_seq = it->has_seq;
  self->seq = it->last_seq;
  if (!full) {
    gst_spice_region_add_region (&it->damage, &self->carry);
    if (self->stream.active && self->stream_dirty)
      gst_spice_region_add (&it->damage, &self->stream.rect);
  }
  iterate (self, p, rt, &it->damage, full, TRUE, FALSE);
}

static void
push_both (GstSpiceTiler * self, GstEvent * event)
{
  gst_pad_push_event (self->drawpad, gst_event_ref (event));
  gst_pad_push_event (self->streampad, event);
}

static gboolean
handle_caps (GstSpiceTiler * self, const TilerParams * p, GstCaps * caps)
{
  GstVideoInfo info;
  GstCaps *dcaps;
  gboolean resized;

  if (!gst_video_info_from_caps (&info, caps))
    return FALSE;
  resized = !self->have_info ||
      info.width != self->info.width || info.height != self->info.height ||
      GST_VIDEO_INFO_FORMAT (&info) != GST_VIDEO_INFO_FORMAT (&self->info);
  self->info = info;
  self->have_info = TRUE;
  if (!resized)
    return TRUE;
  GST_DEBUG_OBJECT (self, "new surface %dx%d", info.width, info.height);
  release_cur (self);
  setup_geometry (self, p);
  dcaps = gst_caps_new_simple (GST_SPICE_DRAWS_MEDIA_TYPE,
      "width", G_TYPE_INT, info.width, "height", G_TYPE_INT, info.height, NULL);
  gst_pad_push_event (self->drawpad, gst_event_new_caps (dcaps));
  gst_caps_unref (dcaps);
  self->stream_caps_w = self->stream_caps_h = 0;
  push_stream_caps (self, MAX (2, info.width & ~1), MAX (2, info.height & ~1),
      p->stream_format);
  return TRUE;
}

/* the last update before EOS: everything lossless, stream ended */
static void
final_update (GstSpiceTiler * self, const TilerParams * p)
{
  if (!self->cur)
    return;
  gst_spice_region_copy (&self->idle_damage, &self->carry);
  iterate (self, p, self->cur_now, &self->idle_damage, FALSE, FALSE, TRUE);
}

static void
handle_event (GstSpiceTiler * self, const TilerParams * p, GstEvent * event)
{
  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_STREAM_START:{
      const gchar *id;
      guint group;
      gboolean have_group = gst_event_parse_group_id (event, &group);
      GstPad *pads[2] = { self->drawpad, self->streampad };
      const gchar *suffix[2] = { "draw", "stream" };
      gint i;

      gst_event_parse_stream_start (event, &id);
      for (i = 0; i < 2; i++) {
        gchar *sid = g_strdup_printf ("%s/%s", id ? id : "spicetiler",
            suffix[i]);
        GstEvent *ev = gst_event_new_stream_start (sid);

        if (have_group)
          gst_event_set_group_id (ev, group);
        gst_pad_push_event (pads[i], ev);
        g_free (sid);
      }
      gst_event_unref (event);
      return;
    }
    case GST_EVENT_CAPS:{
      GstCaps *caps;

      gst_event_parse_caps (event, &caps);
      if (!handle_caps (self, p, caps)) {
        g_mutex_lock (&self->lock);
        self->last_flow = GST_FLOW_NOT_NEGOTIATED;
        g_mutex_unlock (&self->lock);
      }
      gst_event_unref (event);
      return;
    }
    case GST_EVENT_SEGMENT:
      gst_event_copy_segment (event, &self->segment);
      push_both (self, event);
      return;
    case GST_EVENT_EOS:
      final_update (self, p);
      push_both (self, event);
      return;
    case GST_EVENT_CUSTOM_DOWNSTREAM_STICKY:
      if (gst_event_has_name (event, GST_SPICE_EVENT_CURSOR)) {
        gst_pad_push_event (self->drawpad, event);
        return;
      }
      push_both (self, event);
      return;
    default:
      push_both (self, event);
      return;
  }
}

static void
snapshot_params (GstSpiceTiler * self, TilerParams * p)
{
  g_mutex_lock (&self->lock);
  *p = self->params;
  g_mutex_unlock (&self->lock);
}

static GstClockTime
clock_deadline (GstSpiceTiler * self, GstClock ** clock)
{
  GstClockTime base;

  *clock = NULL;
  GST_OBJECT_LOCK (self);
  if (GST_STATE (self) == GST_STATE_PLAYING && GST_ELEMENT_CLOCK (self) &&
      self->segment.rate == 1.0)
    *clock = gst_object_ref (GST_ELEMENT_CLOCK (self));
  base = GST_ELEMENT_CAST (self)->base_time;
  GST_OBJECT_UNLOCK (self);
  return base;
}

static void
gst_spice_tiler_loop (gpointer data)
{
  GstSpiceTiler *self = data;
  TilerParams p;
  TilerItem *it;

  g_mutex_lock (&self->lock);
  while (!self->flushing) {
    it = g_queue_pop_head (&self->items);
    if (it) {
      self->busy = TRUE;
      g_mutex_unlock (&self->lock);
      snapshot_params (self, &p);
      if (it->buf)
        handle_frame (self, &p, it);
      else {
        handle_event (self, &p, it->event);
        it->event = NULL;
      }
      g_mutex_lock (&self->lock);
      item_release (self, it);
      self->busy = FALSE;
      g_cond_broadcast (&self->cond);
      continue;
    }
    if (self->cur && (self->refresh_pending || self->worker_pending)) {
      self->busy = TRUE;
      g_mutex_unlock (&self->lock);
      snapshot_params (self, &p);
      gst_spice_region_copy (&self->idle_damage, &self->carry);
      iterate (self, &p, self->cur_now, &self->idle_damage, FALSE, FALSE,
          FALSE);
      g_mutex_lock (&self->lock);
      self->busy = FALSE;
      g_cond_broadcast (&self->cond);
      continue;
    }
    g_cond_broadcast (&self->cond);
    if (self->cur && GST_CLOCK_TIME_IS_VALID (self->next_refine) &&
        (!GST_CLOCK_TIME_IS_VALID (self->last_deadline) ||
            self->next_refine > self->last_deadline)) {
      GstClock *clock;
      GstClockTime base = clock_deadline (self, &clock);

      if (clock) {
        GstClockID id = gst_clock_new_single_shot_id (clock,
            base + self->next_refine);
        GstClockReturn cret;

        self->clock_id = id;
        g_mutex_unlock (&self->lock);
        cret = gst_clock_id_wait (id, NULL);
        g_mutex_lock (&self->lock);
        self->clock_id = NULL;
        gst_clock_id_unref (id);
        gst_object_unref (clock);
        if (cret == GST_CLOCK_OK && !self->flushing &&
            g_queue_is_empty (&self->items)) {
          self->busy = TRUE;
          g_mutex_unlock (&self->lock);
          snapshot_params (self, &p);
          gst_spice_region_reset (&self->idle_damage);
          self->cur_now = MAX (self->cur_now, self->next_refine);
          self->last_deadline = self->next_refine;
          GST_LOG_OBJECT (self, "refinement deadline %" GST_TIME_FORMAT,
              GST_TIME_ARGS (self->cur_now));
          iterate (self, &p, self->cur_now, &self->idle_damage, FALSE, FALSE,
              FALSE);
          g_mutex_lock (&self->lock);
          self->busy = FALSE;
          g_cond_broadcast (&self->cond);
        }
        continue;
      }
    }
    g_cond_wait (&self->cond, &self->lock);
  }
  g_mutex_unlock (&self->lock);
  GST_DEBUG_OBJECT (self, "pausing worker");
  gst_pad_pause_task (self->drawpad);
}

/* ------------------------------------------------------------------ */
/* pads */

static GstFlowReturn
gst_spice_tiler_chain (GstPad * pad, GstObject * parent, GstBuffer * buf)
{
  GstSpiceTiler *self = GST_SPICE_TILER (parent);
  GstSpiceDamageMeta *meta = gst_buffer_get_spice_damage_meta (buf);
  TilerItem *tail;
  GstFlowReturn ret;
  guint i;

  g_mutex_lock (&self->lock);
  if (self->flushing) {
    g_mutex_unlock (&self->lock);
    gst_buffer_unref (buf);
    return GST_FLOW_FLUSHING;
  }
  self->stats.frames_in++;
  tail = g_queue_peek_tail (&self->items);
  if (tail && tail->buf) {
    /* never queue frames: the pending one is replaced, damage accumulates */
    gst_buffer_unref (tail->buf);
    tail->buf = buf;
    self->stats.frames_coalesced++;
    if (!meta || !tail->has_seq || meta->seq != tail->last_seq + 1)
      tail->full = TRUE;
  } else {
    tail = item_get (self);
    tail->buf = buf;
    tail->full = meta == NULL;
    tail->has_seq = meta != NULL;
    if (meta)
      tail->first_seq = meta->seq;
    g_queue_push_tail (&self->items, tail);
  }
  if (meta) {
    tail->last_seq = meta->seq;
    if (meta->n_rects > MAX_DAMAGE_RECTS)
      tail->full = TRUE;
    if (!tail->full)
      for (i = 0; i < meta->n_rects; i++)
        gst_spice_region_add (&tail->damage, &meta->rects[i]);
    if (gst_spice_region_n_rects (&tail->damage) > MAX_DAMAGE_RECTS)
      tail->full = TRUE;
  } else
    tail->has_seq = FALSE;
  wake_worker (self);
  ret = self->last_flow;
  g_mutex_unlock (&self->lock);
  return ret;
}

static gboolean
enqueue_event (GstSpiceTiler * self, GstEvent * event)
{
  TilerItem *it;

  g_mutex_lock (&self->lock);
  if (self->flushing) {
    g_mutex_unlock (&self->lock);
    gst_event_unref (event);
    return FALSE;
  }
  it = item_get (self);
  it->event = event;
  g_queue_push_tail (&self->items, it);
  wake_worker (self);
  g_mutex_unlock (&self->lock);
  return TRUE;
}

static void
start_worker (GstSpiceTiler * self)
{
  gst_pad_start_task (self->drawpad, gst_spice_tiler_loop, self, NULL);
}

static void
stop_worker (GstSpiceTiler * self)
{
  g_mutex_lock (&self->lock);
  self->flushing = TRUE;
  clear_items (self);
  wake_worker (self);
  g_mutex_unlock (&self->lock);
}

static gboolean
gst_spice_tiler_sink_event (GstPad * pad, GstObject * parent, GstEvent * event)
{
  GstSpiceTiler *self = GST_SPICE_TILER (parent);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_FLUSH_START:
      gst_pad_push_event (self->drawpad, gst_event_ref (event));
      gst_pad_push_event (self->streampad, event);
      stop_worker (self);
      gst_pad_pause_task (self->drawpad);
      return TRUE;
    case GST_EVENT_FLUSH_STOP:
      gst_pad_push_event (self->drawpad, gst_event_ref (event));
      gst_pad_push_event (self->streampad, event);
      GST_PAD_STREAM_LOCK (self->drawpad);
      g_mutex_lock (&self->lock);
      self->flushing = FALSE;
      self->last_flow = GST_FLOW_OK;
      self->worker_pending = FALSE;
      gst_flow_combiner_reset (self->combiner);
      g_mutex_unlock (&self->lock);
      /* downstream may have lost anything: redraw it all, losslessly */
      if (self->have_info)
        setup_geometry (self, &self->params);
      release_cur (self);
      self->have_seq = FALSE;
      gst_segment_init (&self->segment, GST_FORMAT_TIME);
      GST_PAD_STREAM_UNLOCK (self->drawpad);
      start_worker (self);
      return TRUE;
    default:
      if (GST_EVENT_IS_SERIALIZED (event))
        return enqueue_event (self, event);
      return gst_pad_event_default (pad, parent, event);
  }
}

static gboolean
gst_spice_tiler_sink_query (GstPad * pad, GstObject * parent, GstQuery * query)
{
  GstSpiceTiler *self = GST_SPICE_TILER (parent);

  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_CAPS:{
      GstCaps *filter, *caps = gst_pad_get_pad_template_caps (pad);

      gst_query_parse_caps (query, &filter);
      if (filter) {
        GstCaps *tmp = gst_caps_intersect_full (filter, caps,
            GST_CAPS_INTERSECT_FIRST);
        gst_caps_unref (caps);
        caps = tmp;
      }
      gst_query_set_caps_result (query, caps);
      gst_caps_unref (caps);
      return TRUE;
    }
    case GST_QUERY_ALLOCATION:
      gst_query_add_allocation_meta (query, GST_VIDEO_META_API_TYPE, NULL);
      return TRUE;
    case GST_QUERY_DRAIN:
      g_mutex_lock (&self->lock);
      while (!self->flushing && (!g_queue_is_empty (&self->items) ||
              self->busy || self->worker_pending || self->refresh_pending))
        g_cond_wait (&self->cond, &self->lock);
      g_mutex_unlock (&self->lock);
      return TRUE;
    default:
      return gst_pad_query_default (pad, parent, query);
  }
}

static void
note_qos (GstSpiceTiler * self, GstEvent * event, GstClockTime * earliest)
{
  GstQOSType type;
  gdouble proportion;
  GstClockTimeDiff diff;
  GstClockTime ts;

  gst_event_parse_qos (event, &type, &proportion, &diff, &ts);
  g_mutex_lock (&self->lock);
  if (GST_CLOCK_TIME_IS_VALID (ts) && diff > 0)
    *earliest = ts + diff;
  else
    *earliest = GST_CLOCK_TIME_NONE;
  g_mutex_unlock (&self->lock);
}

static gboolean
gst_spice_tiler_src_event (GstPad * pad, GstObject * parent, GstEvent * event)
{
  GstSpiceTiler *self = GST_SPICE_TILER (parent);
  gboolean enabled;
  gint n, d;

  if (gst_spice_event_is_refresh (event)) {
    GST_DEBUG_OBJECT (pad, "refresh requested");
    g_mutex_lock (&self->lock);
    self->refresh_pending = TRUE;
    self->keyframe_pending = TRUE;
    wake_worker (self);
    g_mutex_unlock (&self->lock);
    gst_event_unref (event);
    return TRUE;
  }
  if (gst_spice_event_parse_rate (event, NULL, &n, &d)) {
    GST_DEBUG_OBJECT (pad, "stream rate %d/%d", n, d);
    g_mutex_lock (&self->lock);
    self->rate_fps_n = n;
    self->rate_fps_d = MAX (d, 1);
    g_mutex_unlock (&self->lock);
    gst_event_unref (event);
    return TRUE;
  }
  if (gst_spice_event_parse_stream_control (event, &enabled)) {
    GST_DEBUG_OBJECT (pad, "stream enabled: %d", enabled);
    g_mutex_lock (&self->lock);
    self->stream_enabled = enabled;
    g_mutex_unlock (&self->lock);
    gst_event_unref (event);
    return TRUE;
  }
  if (gst_video_event_is_force_key_unit (event)) {
    g_mutex_lock (&self->lock);
    self->keyframe_pending = TRUE;
    g_mutex_unlock (&self->lock);
    gst_event_unref (event);
    return TRUE;
  }
  if (GST_EVENT_TYPE (event) == GST_EVENT_QOS) {
    note_qos (self, event, pad == self->drawpad ?
        &self->draw_qos_earliest : &self->stream_qos_earliest);
    gst_event_unref (event);
    return TRUE;
  }
  return gst_pad_event_default (pad, parent, event);
}

static gboolean
gst_spice_tiler_src_query (GstPad * pad, GstObject * parent, GstQuery * query)
{
  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_CAPS:{
      GstCaps *filter, *caps = gst_pad_get_current_caps (pad);

      if (!caps)
        caps = gst_pad_get_pad_template_caps (pad);
      gst_query_parse_caps (query, &filter);
      if (filter) {
        GstCaps *tmp = gst_caps_intersect_full (filter, caps,
            GST_CAPS_INTERSECT_FIRST);
        gst_caps_unref (caps);
        caps = tmp;
      }
      gst_query_set_caps_result (query, caps);
      gst_caps_unref (caps);
      return TRUE;
    }
    default:
      return gst_pad_query_default (pad, parent, query);
  }
}

/* ------------------------------------------------------------------ */
/* GObject */

static GstStateChangeReturn
gst_spice_tiler_change_state (GstElement * element, GstStateChange transition)
{
  GstSpiceTiler *self = GST_SPICE_TILER (element);
  GstStateChangeReturn ret;

  switch (transition) {
    case GST_STATE_CHANGE_READY_TO_PAUSED:
      g_mutex_lock (&self->lock);
      self->flushing = FALSE;
      self->last_flow = GST_FLOW_OK;
      self->worker_pending = self->refresh_pending = FALSE;
      self->draw_qos_earliest = self->stream_qos_earliest = GST_CLOCK_TIME_NONE;
      gst_flow_combiner_reset (self->combiner);
      g_mutex_unlock (&self->lock);
      worker_reset (self);
      break;
    case GST_STATE_CHANGE_PAUSED_TO_READY:
      stop_worker (self);
      gst_pad_stop_task (self->drawpad);
      break;
    case GST_STATE_CHANGE_PLAYING_TO_PAUSED:
      g_mutex_lock (&self->lock);
      wake_worker (self);
      g_mutex_unlock (&self->lock);
      break;
    default:
      break;
  }
  ret = GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
  switch (transition) {
    case GST_STATE_CHANGE_READY_TO_PAUSED:
      start_worker (self);
      break;
    case GST_STATE_CHANGE_PAUSED_TO_PLAYING:
      g_mutex_lock (&self->lock);
      wake_worker (self);
      g_mutex_unlock (&self->lock);
      break;
    case GST_STATE_CHANGE_PAUSED_TO_READY:
      worker_reset (self);
      break;
    default:
      break;
  }
  return ret;
}

static GstStructure *
build_stats (GstSpiceTiler * self)
{
  TilerStats *s = &self->stats;
  GstStructure *st;

  g_mutex_lock (&self->lock);
  st = gst_structure_new ("application/x-spicetiler-stats",
      "frames-in", G_TYPE_UINT64, s->frames_in,
      "frames-processed", G_TYPE_UINT64, s->frames_processed,
      "frames-coalesced", G_TYPE_UINT64, s->frames_coalesced,
      "updates", G_TYPE_UINT64, s->updates,
      "regions", G_TYPE_UINT64, s->regions,
      "regions-bitmap", G_TYPE_UINT64, s->regions_bitmap,
      "regions-lz4", G_TYPE_UINT64, s->regions_lz4,
      "regions-jpeg", G_TYPE_UINT64, s->regions_jpeg,
      "bytes-bitmap", G_TYPE_UINT64, s->bytes_bitmap,
      "bytes-lz4", G_TYPE_UINT64, s->bytes_lz4,
      "bytes-jpeg", G_TYPE_UINT64, s->bytes_jpeg,
      "lossy-area-pending", G_TYPE_UINT64,
      s->lossy_cells * TILER_CELL * TILER_CELL,
      "refined-cells", G_TYPE_UINT64, s->refined_cells,
      "refreshes", G_TYPE_UINT64, s->refreshes,
      "deferred", G_TYPE_UINT64, s->deferred,
      "stream-active", G_TYPE_BOOLEAN, s->stream_active,
      "stream-id", G_TYPE_UINT, s->stream_id,
      "stream-x", G_TYPE_INT, s->stream_rect.x,
      "stream-y", G_TYPE_INT, s->stream_rect.y,
      "stream-width", G_TYPE_INT, s->stream_rect.w,
      "stream-height", G_TYPE_INT, s->stream_rect.h,
      "stream-starts", G_TYPE_UINT64, s->stream_starts,
      "stream-frames", G_TYPE_UINT64, s->stream_frames,
      "stream-frames-dropped", G_TYPE_UINT64, s->stream_dropped,
      "stream-fps", G_TYPE_DOUBLE, s->stream_fps,
      "diff-us", G_TYPE_DOUBLE, s->diff_us_avg,
      "encode-us", G_TYPE_DOUBLE, s->encode_us_avg, NULL);
  g_mutex_unlock (&self->lock);
  return st;
}

static void
gst_spice_tiler_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstSpiceTiler *self = GST_SPICE_TILER (object);
  TilerParams *p = &self->params;

  g_mutex_lock (&self->lock);
  switch (prop_id) {
    case PROP_MAX_RECTS:
      p->max_rects = g_value_get_uint (value);
      break;
    case PROP_TILE_SIZE:
      p->tile_size = g_value_get_uint (value);
      break;
    case PROP_JPEG_QUALITY:
      p->jpeg_quality = g_value_get_uint (value);
      break;
    case PROP_REFINE_DELAY:
      p->refine_delay = g_value_get_uint64 (value);
      break;
    case PROP_STREAMING:
      p->streaming = g_value_get_enum (value);
      break;
    case PROP_STREAM_MIN_FRAMES:
      p->stream_min_frames = g_value_get_uint (value);
      break;
    case PROP_STREAM_MAX_GAP:
      p->stream_max_gap = g_value_get_uint64 (value);
      break;
    case PROP_STREAM_TIMEOUT:
      p->stream_timeout = g_value_get_uint64 (value);
      break;
    case PROP_STREAM_MIN_AREA:
      p->stream_min_area = g_value_get_uint (value);
      break;
    case PROP_STREAM_FORMAT:{
      GstVideoFormat f =
          gst_video_format_from_string (g_value_get_string (value));

      if (f != GST_VIDEO_FORMAT_UNKNOWN)
        p->stream_format = f;
      else
        GST_WARNING_OBJECT (self, "unknown stream format %s",
            g_value_get_string (value));
      break;
    }
    case PROP_UPDATE_BUDGET:
      p->update_budget = g_value_get_uint (value);
      break;
    case PROP_BAND_SIZE:
      p->band_size = g_value_get_uint (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  g_mutex_unlock (&self->lock);
}

static void
gst_spice_tiler_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstSpiceTiler *self = GST_SPICE_TILER (object);
  TilerParams *p = &self->params;

  if (prop_id == PROP_STATS) {
    g_value_take_boxed (value, build_stats (self));
    return;
  }
  g_mutex_lock (&self->lock);
  switch (prop_id) {
    case PROP_MAX_RECTS:
      g_value_set_uint (value, p->max_rects);
      break;
    case PROP_TILE_SIZE:
      g_value_set_uint (value, p->tile_size);
      break;
    case PROP_JPEG_QUALITY:
      g_value_set_uint (value, p->jpeg_quality);
      break;
    case PROP_REFINE_DELAY:
      g_value_set_uint64 (value, p->refine_delay);
      break;
    case PROP_STREAMING:
      g_value_set_enum (value, p->streaming);
      break;
    case PROP_STREAM_MIN_FRAMES:
      g_value_set_uint (value, p->stream_min_frames);
      break;
    case PROP_STREAM_MAX_GAP:
      g_value_set_uint64 (value, p->stream_max_gap);
      break;
    case PROP_STREAM_TIMEOUT:
      g_value_set_uint64 (value, p->stream_timeout);
      break;
    case PROP_STREAM_MIN_AREA:
      g_value_set_uint (value, p->stream_min_area);
      break;
    case PROP_STREAM_FORMAT:
      g_value_set_string (value, gst_video_format_to_string (p->stream_format));
      break;
    case PROP_UPDATE_BUDGET:
      g_value_set_uint (value, p->update_budget);
      break;
    case PROP_BAND_SIZE:
      g_value_set_uint (value, p->band_size);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  g_mutex_unlock (&self->lock);
}

static void
gst_spice_tiler_finalize (GObject * object)
{
  GstSpiceTiler *self = GST_SPICE_TILER (object);

  worker_reset (self);
  g_queue_clear_full (&self->items, item_free);
  g_queue_clear_full (&self->free_items, item_free);
  gst_spice_region_clear (&self->carry);
  gst_spice_region_clear (&self->idle_damage);
  gst_spice_region_clear (&self->regions);
  g_array_free (self->runs, TRUE);
  tiler_encoder_clear (&self->enc);
  if (self->writer)
    gst_spice_draws_writer_free (self->writer);
  gst_flow_combiner_free (self->combiner);
  g_mutex_clear (&self->lock);
  g_cond_clear (&self->cond);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_spice_tiler_init (GstSpiceTiler * self)
{
  TilerParams *p = &self->params;

  self->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (self->sinkpad, gst_spice_tiler_chain);
  gst_pad_set_event_function (self->sinkpad, gst_spice_tiler_sink_event);
  gst_pad_set_query_function (self->sinkpad, gst_spice_tiler_sink_query);
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);

  self->drawpad = gst_pad_new_from_static_template (&draw_template, "draw");
  gst_pad_set_event_function (self->drawpad, gst_spice_tiler_src_event);
  gst_pad_set_query_function (self->drawpad, gst_spice_tiler_src_query);
  gst_pad_use_fixed_caps (self->drawpad);
  gst_element_add_pad (GST_ELEMENT (self), self->drawpad);

  self->streampad =
      gst_pad_new_from_static_template (&stream_template, "stream");
  gst_pad_set_event_function (self->streampad, gst_spice_tiler_src_event);
  gst_pad_set_query_function (self->streampad, gst_spice_tiler_src_query);
  gst_pad_use_fixed_caps (self->streampad);
  gst_element_add_pad (GST_ELEMENT (self), self->streampad);

  self->combiner = gst_flow_combiner_new ();
  gst_flow_combiner_add_pad (self->combiner, self->drawpad);
  gst_flow_combiner_add_pad (self->combiner, self->streampad);

  g_mutex_init (&self->lock);
  g_cond_init (&self->cond);
  g_queue_init (&self->items);
  g_queue_init (&self->free_items);
  gst_spice_region_init (&self->carry);
  gst_spice_region_init (&self->idle_damage);
  gst_spice_region_init (&self->regions);
  self->runs = g_array_new (FALSE, FALSE, sizeof (TilerRun));
  tiler_encoder_init (&self->enc);
  self->stream_enabled = TRUE;
  self->flushing = TRUE;
  self->draw_qos_earliest = self->stream_qos_earliest = GST_CLOCK_TIME_NONE;
  worker_reset (self);

  p->max_rects = DEFAULT_MAX_RECTS;
  p->tile_size = DEFAULT_TILE_SIZE;
  p->jpeg_quality = DEFAULT_JPEG_QUALITY;
  p->refine_delay = DEFAULT_REFINE_DELAY;
  p->streaming = DEFAULT_STREAMING;
  p->stream_min_frames = DEFAULT_STREAM_MIN_FRAMES;
  p->stream_max_gap = DEFAULT_STREAM_MAX_GAP;
  p->stream_timeout = DEFAULT_STREAM_TIMEOUT;
  p->stream_min_area = DEFAULT_STREAM_MIN_AREA;
  p->stream_format = DEFAULT_STREAM_FORMAT;
  p->update_budget = DEFAULT_UPDATE_BUDGET;
  p->band_size = DEFAULT_BAND_SIZE;
}

static void
gst_spice_tiler_class_init (GstSpiceTilerClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_PLAYING;

  gobject_class->set_property = gst_spice_tiler_set_property;
  gobject_class->get_property = gst_spice_tiler_get_property;
  gobject_class->finalize = gst_spice_tiler_finalize;

  g_object_class_install_property (gobject_class, PROP_MAX_RECTS,
      g_param_spec_uint ("max-rects", "Max rects",
          "Most regions per update; more are merged where the merge adds "
          "the least area", 1, 1024, DEFAULT_MAX_RECTS, rw));
  g_object_class_install_property (gobject_class, PROP_TILE_SIZE,
      g_param_spec_uint ("tile-size", "Tile size",
          "Side of the diff tiles and of the stream grid in pixels "
          "(rounded down to a multiple of 16)", 16, 256, DEFAULT_TILE_SIZE,
          rw));
  g_object_class_install_property (gobject_class, PROP_JPEG_QUALITY,
      g_param_spec_uint ("jpeg-quality", "JPEG quality",
          "Quality of lossy (JPEG) draws of photographic content", 1, 100,
          DEFAULT_JPEG_QUALITY, rw));
  g_object_class_install_property (gobject_class, PROP_REFINE_DELAY,
      g_param_spec_uint64 ("refine-delay", "Refine delay",
          "Running time (ns) a lossy area must stay still before it is "
          "re-sent losslessly", 0, G_MAXUINT64 / 2, DEFAULT_REFINE_DELAY, rw));
  g_object_class_install_property (gobject_class, PROP_STREAMING,
      g_param_spec_enum ("streaming", "Streaming",
          "Which changing areas become a video stream",
          GST_TYPE_SPICE_TILER_STREAMING, DEFAULT_STREAMING, rw));
  g_object_class_install_property (gobject_class, PROP_STREAM_MIN_FRAMES,
      g_param_spec_uint ("stream-min-frames", "Stream min frames",
          "Changes in a row (each within stream-max-gap) before an area "
          "streams", 2, 10000, DEFAULT_STREAM_MIN_FRAMES, rw));
  g_object_class_install_property (gobject_class, PROP_STREAM_MAX_GAP,
      g_param_spec_uint64 ("stream-max-gap", "Stream max gap",
          "Longest pause (ns) between changes that keeps an area's run "
          "going", 1, G_MAXUINT64 / 2, DEFAULT_STREAM_MAX_GAP, rw));
  g_object_class_install_property (gobject_class, PROP_STREAM_TIMEOUT,
      g_param_spec_uint64 ("stream-timeout", "Stream timeout",
          "A stream ends after this long (ns) without change; also how long "
          "a smaller hot area must last before the stream shrinks", 1,
          G_MAXUINT64 / 2, DEFAULT_STREAM_TIMEOUT, rw));
  g_object_class_install_property (gobject_class, PROP_STREAM_MIN_AREA,
      g_param_spec_uint ("stream-min-area", "Stream min area",
          "Smallest stream area in pixels", 1, G_MAXINT,
          DEFAULT_STREAM_MIN_AREA, rw));
  g_object_class_install_property (gobject_class, PROP_STREAM_FORMAT,
      g_param_spec_string ("stream-format", "Stream format",
          "Raw video format of the stream pad (vp8enc wants I420)",
          gst_video_format_to_string (DEFAULT_STREAM_FORMAT), rw));
  g_object_class_install_property (gobject_class, PROP_UPDATE_BUDGET,
      g_param_spec_uint ("update-budget", "Update budget",
          "Bytes after which an update is closed and the rest of the damage "
          "waits for the next one (smallest regions go first; 0 = no limit)",
          0, G_MAXINT, DEFAULT_UPDATE_BUDGET, rw));
  g_object_class_install_property (gobject_class, PROP_BAND_SIZE,
      g_param_spec_uint ("band-size", "Band size",
          "Raw bytes per band: larger regions are sent as several draws of "
          "at least 16 rows", 4096, G_MAXINT, DEFAULT_BAND_SIZE, rw));
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "Counters: frames, updates, regions and bytes per codec, lossy "
          "area pending refinement, stream state, fps and drops, average "
          "diff and encode time (us)", GST_TYPE_STRUCTURE,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &draw_template);
  gst_element_class_add_static_pad_template (element_class, &stream_template);
  gst_element_class_set_static_metadata (element_class,
      "SPICE tiler", "Filter/Converter/Video",
      "Diffs raw frames against what was sent and emits SPICE draws "
      "(BITMAP/LZ4/JPEG) plus a raw video stream region",
      "gst-spice developers");
  element_class->change_state = gst_spice_tiler_change_state;

  gst_type_mark_as_plugin_api (GST_TYPE_SPICE_TILER_STREAMING, 0);
}
