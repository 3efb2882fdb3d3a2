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
 * trimmed to the changed pixels and merged into at most
 * #GstSpiceTiler:max-rects regions. Each region is classified per 16x16
 * cell and encoded as SPICE images on the `draw` pad
 * (application/x-spice-draws): tiny
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
 * An area that scrolled (its rows are what the client already has, moved
 * up or down) goes out as one COPY_BITS region plus the rows that came
 * into view (#GstSpiceTiler:scroll-detection).
 *
 * The sink pad takes `video/x-raw(memory:SpiceDamage)` first (buffers
 * that hold only their damage's pixels, #GST_CAPS_FEATURE_MEMORY_SPICE_DAMAGE,
 * what spicesrc sends) and whole frames second. Either way the input is
 * applied onto the tiler's own picture (only the damaged rectangles of a
 * whole frame are copied), which is what the diff and the stream read; a
 * malformed damage-only buffer is an error, and one that does not follow
 * the last (a gap in the damage meta's seq, after a flush) sends an
 * upstream force-key-unit event, which spicesrc answers with the whole
 * surface.
 *
 * Frames are never queued: a worker thread takes the latest frame (a newer
 * whole frame replaces a pending one, their damage united; damage-only
 * buffers join the pending one, in order, until they hold one picture's
 * bytes, and then chain() waits for the worker) and hands updates to a
 * draw thread. While a draw push is blocked downstream the worker keeps
 * diffing and streaming but makes no new update: the damage accumulates
 * into the next one. Updates are limited to #GstSpiceTiler:update-budget
 * bytes and large regions go out in bands, the smallest regions first, so
 * a keypress never waits behind a large update.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 videotestsrc is-live=true pattern=ball ! spicetiler name=t \
 *     t.draw ! fakesink \
 *     t.stream ! queue max-size-buffers=1 leaky=downstream ! \
 *     vp8enc deadline=1 ! fakesink async=false
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

#include <gst/base/gstflowcombiner.h>
#include <gst/video/video.h>

#include "gstspicetiler.h"
#include "tilerengine.h"
#include "tilerstream.h"

GST_DEBUG_CATEGORY (gst_spice_tiler_debug);
#define GST_CAT_DEFAULT gst_spice_tiler_debug

/* the largest divisor of a stream's picture size spice-rate may ask for */
#define GST_SPICE_TILER_MAX_STREAM_SCALE 4

/* one entry of the worker's mailbox: a frame (coalescing) or an event.
 * A frame is one whole frame (a newer one replaces it) or damage-only
 * buffers in order (a newer one is appended: each holds only its own
 * damage), @bytes of them */
typedef struct
{
  GPtrArray *bufs;
  gboolean damage_only;
  gsize bytes;
  GstEvent *event;
  GstSpiceRegion damage;
  gboolean full;
  gboolean has_seq;
  guint64 first_seq, last_seq;
} TilerItem;

/* the element's own counters (the engine's are TilerEngineStats) */
typedef struct
{
  guint64 frames_in, frames_coalesced, updates;
} TilerStats;

/*
 * Threads: the sink pad's streaming thread (chain, events) fills the
 * mailbox; the worker (its own GstTask, gst_spice_tiler_loop()) takes
 * items, runs the engine and pushes stream frames and GAPs itself; the
 * draw thread (the draw pad's task) pushes the updates the worker queued,
 * in order. Calls go element -> engine (a result back) and element ->
 * stream helper; neither calls the element.
 */
struct _GstSpiceTiler
{
  GstElement parent;

  GstPad *sinkpad, *drawpad, *streampad;
  GstFlowCombiner *combiner;

  /* lock guards everything up to the worker-only part; worker_cond wakes
   * the worker (wake_worker()), cond the draw thread and whoever waits
   * for the worker to be done (drain) */
  GMutex lock;
  GCond cond;
  GCond worker_cond;
  TilerParams params;
  GQueue items;
  GQueue free_items;
  gboolean flushing;
  gboolean worker_stopping;     /* the task is being joined: it must not
                                 * pause itself */
  gboolean busy;
  gboolean worker_pending;      /* the engine has deferred work */
  gboolean refresh_pending;
  gboolean keyframe_pending;
  gint rate_fps_n, rate_fps_d;
  guint rate_scale;             /* stream picture divisor (spice-rate) */
  guint draw_budget;            /* from spice-draw-budget, 0 = none */
  guint64 draw_link_bps;        /* ditto: the slowest client's link */
  gint64 draw_ready_us;         /* monotonic: no new update before this
                                 * (tiler_draw_pace_us()) */
  gboolean stream_enabled;
  GstClockTime draw_qos_earliest, stream_qos_earliest;
  GstClockID clock_id;
  GQueue draw_out;              /* to the draw thread: events, updates */
  gboolean draw_busy;           /* an update is queued or being pushed */
  gboolean draw_pushing;        /* the draw thread pushes what it took */
  gint yield_request;           /* atomic: a frame with little damage waits
                                 * (TilerEngineInput.yield) */
  /* the sink pad's input as its streaming thread sees it (set on CAPS
   * before the event is queued): damage-only or whole frames, the
   * surface, and the next damage-only seq expected */
  gboolean in_damage_only;
  gint in_width, in_height;
  gsize in_frame_size;
  gboolean in_have_seq;
  guint64 in_next_seq;
  GstFlowReturn last_flow;
  TilerStats stats;
  TilerEngineStats engine_stats;        /* as of the engine's last update */

  /* the worker's task; worker_lock is its task lock (held while an
   * iteration runs: FLUSH_STOP takes it to wait for the worker) */
  GstTask *worker;
  GRecMutex worker_lock;

  /* ---- worker only ---- */
  TilerEngine *engine;
  TilerStream stream;
  GstSegment segment;
  GstClockTime next_refine;     /* the engine's, as of its last update */
  GstClockTime last_deadline;   /* last refinement deadline waited for */
};

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
#define DEFAULT_SCROLL_DETECTION TRUE

#define MAX_DAMAGE_RECTS 256

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
  PROP_SCROLL_DETECTION,
  PROP_STATS,
};

#define gst_spice_tiler_parent_class parent_class
G_DEFINE_TYPE (GstSpiceTiler, gst_spice_tiler, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE_WITH_CODE (spicetiler, "spicetiler",
    GST_RANK_NONE, GST_TYPE_SPICE_TILER,
    GST_DEBUG_CATEGORY_INIT (gst_spice_tiler_debug, "spicetiler", 0,
        "SPICE draws and stream region from raw video"));

/* damage-only input first: only the damage travels (gstspicedamage.h) */
static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_VIDEO_CAPS_MAKE_WITH_FEATURES
        (GST_CAPS_FEATURE_MEMORY_SPICE_DAMAGE, "{ BGRx, BGRA }") "; "
        GST_VIDEO_CAPS_MAKE ("{ BGRx, BGRA }")));

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
    it->bufs = g_ptr_array_new_with_free_func ((GDestroyNotify)
        gst_buffer_unref);
    gst_spice_region_init (&it->damage);
  }
  return it;
}

static void
item_release (GstSpiceTiler * self, TilerItem * it)
{
  g_ptr_array_set_size (it->bufs, 0);
  it->bytes = 0;
  it->damage_only = FALSE;
  gst_clear_event (&it->event);
  gst_spice_region_reset (&it->damage);
  it->full = it->has_seq = FALSE;
  g_queue_push_head (&self->free_items, it);
}

static void
item_free (gpointer data)
{
  TilerItem *it = data;

  g_ptr_array_unref (it->bufs);
  gst_clear_event (&it->event);
  gst_spice_region_clear (&it->damage);
  g_free (it);
}

/* with lock */
static void
wake_worker (GstSpiceTiler * self)
{
  g_cond_broadcast (&self->worker_cond);
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
  g_atomic_int_set (&self->yield_request, 0);
}

/* ------------------------------------------------------------------ */
/* worker helpers */

/* worker or draw thread, after a push on @pad */
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

/* worker stopped (state changes, init, finalize) */
static void
worker_reset (GstSpiceTiler * self)
{
  tiler_engine_reset (self->engine);
  tiler_stream_reset (&self->stream);
  self->next_refine = GST_CLOCK_TIME_NONE;
  self->last_deadline = GST_CLOCK_TIME_NONE;
  gst_segment_init (&self->segment, GST_FORMAT_TIME);
}

/* Hands an update or an event to the draw thread (in order); worker
 * thread. */
static void
draw_enqueue (GstSpiceTiler * self, GstMiniObject * obj)
{
  g_mutex_lock (&self->lock);
  if (self->flushing) {
    g_mutex_unlock (&self->lock);
    gst_mini_object_unref (obj);
    return;
  }
  if (GST_IS_BUFFER (obj))
    self->draw_busy = TRUE;
  g_queue_push_tail (&self->draw_out, obj);
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
}

/* worker thread: the stream frame the engine asked for */
static void
push_stream_frame (GstSpiceTiler * self, const TilerParams * p,
    const TilerEngineResult * res)
{
  GstFlowReturn ret;
  gboolean keyframe;

  g_mutex_lock (&self->lock);
  keyframe = res->stream_keyframe || self->keyframe_pending;
  self->keyframe_pending = FALSE;
  g_mutex_unlock (&self->lock);
  if (tiler_stream_push_frame (&self->stream, self->streampad, res,
          p->stream_format, keyframe, &ret)) {
    update_flow (self, self->streampad, ret);
    return;
  }
  /* no frame could be made: the area waits for the next one */
  tiler_engine_stream_frame_lost (self->engine);
  g_mutex_lock (&self->lock);
  self->keyframe_pending |= keyframe;
  g_mutex_unlock (&self->lock);
}

/* Worker thread: one engine update of @kind with the element's state as
 * its input, then the pushes it asks for: the updates made before the
 * stream decision, the stream frame or a GAP (a new frame), the rest. */
static GstFlowReturn
run_update (GstSpiceTiler * self, TilerUpdateKind kind, TilerEngineInput * in)
{
  TilerEngineResult res;
  TilerParams p;
  GstFlowReturn ret;
  guint i;

  g_mutex_lock (&self->lock);
  p = self->params;
  in->params = &p;
  in->sink_budget = self->draw_budget;
  in->link_bps = self->draw_link_bps;
  /* while downstream has not taken the last update (or the link has not
   * carried it yet, tiler_draw_pace_us()), no new one is made */
  in->draw_busy = kind != TILER_UPDATE_FINAL && (self->draw_busy ||
      g_get_monotonic_time () < self->draw_ready_us);
  in->refresh = self->refresh_pending && !in->draw_busy;
  self->refresh_pending &= !in->refresh;
  in->stream_allowed = self->stream_enabled &&
      gst_pad_is_linked (self->streampad);
  in->draw_qos_earliest = self->draw_qos_earliest;
  in->stream_qos_earliest = self->stream_qos_earliest;
  in->rate_fps_n = self->rate_fps_n;
  in->rate_fps_d = self->rate_fps_d;
  in->rate_scale = self->rate_scale;
  in->yield = &self->yield_request;
  g_mutex_unlock (&self->lock);

  ret = tiler_engine_update (self->engine, kind, in, &res);
  if (ret != GST_FLOW_OK || !tiler_engine_has_frame (self->engine)) {
    /* nothing was done: a refresh still waits */
    g_mutex_lock (&self->lock);
    self->refresh_pending |= in->refresh;
    if (ret == GST_FLOW_NOT_NEGOTIATED)
      self->last_flow = ret;
    g_mutex_unlock (&self->lock);
    if (ret == GST_FLOW_ERROR)
      GST_ELEMENT_WARNING (self, STREAM, DECODE, (NULL), ("cannot map frame"));
    tiler_engine_result_clear (&res);
    return ret;
  }

  for (i = 0; i < res.n_before_stream; i++)
    draw_enqueue (self, GST_MINI_OBJECT_CAST (res.updates[i]));
  if (kind == TILER_UPDATE_FRAME) {
    if (res.stream_frame)
      push_stream_frame (self, &p, &res);
    else
      tiler_stream_push_gap (self->streampad, &res);
  }
  for (; i < res.n_updates; i++)
    draw_enqueue (self, GST_MINI_OBJECT_CAST (res.updates[i]));
  self->next_refine = res.next_refine;

  /* the engine's counters, once per update */
  g_mutex_lock (&self->lock);
  self->engine_stats = *tiler_engine_stats (self->engine);
  self->worker_pending = res.pending;
  g_mutex_unlock (&self->lock);
  return GST_FLOW_OK;
}

/* ---- items: worker thread ---- */

static void
handle_frame (GstSpiceTiler * self, TilerItem * it)
{
  TilerEngineInput in = { 0, };
  GstBuffer *last = g_ptr_array_index (it->bufs, it->bufs->len - 1);

  if (it->damage_only) {
    in.packed = (GstBuffer * const *) it->bufs->pdata;
    in.n_packed = it->bufs->len;
  } else
    in.buffer = last;
  in.running_time = gst_segment_to_running_time (&self->segment,
      GST_FORMAT_TIME, GST_BUFFER_PTS (last));
  in.damage = &it->damage;
  in.full = it->full;
  in.has_seq = it->has_seq;
  in.first_seq = it->first_seq;
  in.last_seq = it->last_seq;
  if (run_update (self, TILER_UPDATE_FRAME, &in) == GST_FLOW_OK)
    self->last_deadline = GST_CLOCK_TIME_NONE;
}

static void
push_both (GstSpiceTiler * self, GstEvent * event)
{
  draw_enqueue (self, GST_MINI_OBJECT_CAST (gst_event_ref (event)));
  gst_pad_push_event (self->streampad, event);
}

static gboolean
handle_caps (GstSpiceTiler * self, GstCaps * caps)
{
  GstVideoInfo info;
  GstCaps *dcaps;
  TilerParams p;
  gboolean resized;

  if (!gst_video_info_from_caps (&info, caps))
    return FALSE;
  g_mutex_lock (&self->lock);
  p = self->params;
  g_mutex_unlock (&self->lock);
  resized = tiler_engine_set_format (self->engine, &info, p.tile_size);
  if (resized) {
    dcaps = gst_caps_new_simple (GST_SPICE_DRAWS_MEDIA_TYPE,
        "width", G_TYPE_INT, info.width, "height", G_TYPE_INT, info.height,
        NULL);
    draw_enqueue (self, GST_MINI_OBJECT_CAST (gst_event_new_caps (dcaps)));
    gst_caps_unref (dcaps);
  }
  tiler_stream_set_input (&self->stream, self->streampad, &info, resized,
      p.stream_format);
  return TRUE;
}

static void
handle_event (GstSpiceTiler * self, GstEvent * event)
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
        if (pads[i] == self->drawpad)
          draw_enqueue (self, GST_MINI_OBJECT_CAST (ev));
        else
          gst_pad_push_event (pads[i], ev);
        g_free (sid);
      }
      gst_event_unref (event);
      return;
    }
    case GST_EVENT_CAPS:{
      GstCaps *caps;

      gst_event_parse_caps (event, &caps);
      if (!handle_caps (self, caps)) {
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
    case GST_EVENT_EOS:{
      TilerEngineInput in = { 0, };

      /* the last update must not be skipped as "draw busy" */
      g_mutex_lock (&self->lock);
      while (self->draw_busy && !self->flushing)
        g_cond_wait (&self->worker_cond, &self->lock);
      g_mutex_unlock (&self->lock);
      run_update (self, TILER_UPDATE_FINAL, &in);
      push_both (self, event);
      return;
    }
    case GST_EVENT_CUSTOM_DOWNSTREAM_STICKY:
      /* the cursor and the heads concern the sink's clients only: on
       * draw, in order with the draws */
      if (gst_event_has_name (event, GST_SPICE_EVENT_CURSOR) ||
          gst_event_has_name (event, GST_SPICE_EVENT_MONITORS)) {
        draw_enqueue (self, GST_MINI_OBJECT_CAST (event));
        return;
      }
      push_both (self, event);
      return;
    default:
      push_both (self, event);
      return;
  }
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

/* worker thread, lock held (dropped while the engine runs): one update of
 * @kind without a new frame */
static void
run_idle_update (GstSpiceTiler * self, TilerUpdateKind kind)
{
  TilerEngineInput in = { 0, };

  self->busy = TRUE;
  g_mutex_unlock (&self->lock);
  run_update (self, kind, &in);
  g_mutex_lock (&self->lock);
  self->busy = FALSE;
  g_cond_broadcast (&self->cond);
}

/* The worker (its own task, worker_lock held): takes the mailbox's items
 * in order; without any, updates again while the engine has work left,
 * or waits for the next refinement deadline on the clock. */
static void
gst_spice_tiler_loop (gpointer data)
{
  GstSpiceTiler *self = data;
  TilerItem *it;
  gboolean have_frame;

  g_mutex_lock (&self->lock);
  while (!self->flushing) {
    it = g_queue_pop_head (&self->items);
    if (it) {
      /* a frame that was waiting is taken now (a chain() waiting for
       * room learns it) */
      g_atomic_int_set (&self->yield_request, 0);
      self->busy = TRUE;
      g_cond_broadcast (&self->cond);
      g_mutex_unlock (&self->lock);
      if (it->bufs->len > 0)
        handle_frame (self, it);
      else {
        handle_event (self, it->event);
        it->event = NULL;
      }
      g_mutex_lock (&self->lock);
      item_release (self, it);
      self->busy = FALSE;
      g_cond_broadcast (&self->cond);
      continue;
    }
    have_frame = tiler_engine_has_frame (self->engine);
    if (have_frame && !self->draw_busy && (self->refresh_pending ||
            self->worker_pending)) {
      /* paced to the link: the damage merges until then */
      if (g_get_monotonic_time () < self->draw_ready_us) {
        g_cond_wait_until (&self->worker_cond, &self->lock,
            self->draw_ready_us);
        continue;
      }
      run_idle_update (self, TILER_UPDATE_CARRY);
      continue;
    }
    g_cond_broadcast (&self->cond);
    if (have_frame && !self->draw_busy &&
        GST_CLOCK_TIME_IS_VALID (self->next_refine) &&
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
        /* EARLY: the deadline has passed already, refine now */
        if ((cret == GST_CLOCK_OK || cret == GST_CLOCK_EARLY) &&
            !self->flushing && g_queue_is_empty (&self->items)) {
          self->last_deadline = self->next_refine;
          run_idle_update (self, TILER_UPDATE_REFINE);
        } else if (cret != GST_CLOCK_UNSCHEDULED && cret != GST_CLOCK_OK &&
            cret != GST_CLOCK_EARLY) {
          /* a clock error: do not wait for this deadline again */
          self->last_deadline = self->next_refine;
        }
        continue;
      }
    }
    g_cond_wait (&self->worker_cond, &self->lock);
  }
  GST_DEBUG_OBJECT (self, "pausing worker");
  /* joined (state change): pausing now would keep the task alive, and
   * returning without a state would call this again at once until the
   * join stops the task (a busy loop); stopping here ends it */
  if (!self->worker_stopping)
    gst_task_pause (self->worker);
  else
    gst_task_stop (self->worker);
  g_mutex_unlock (&self->lock);
}

/* The draw thread: pushes what the worker queued, in order. While it is
 * blocked downstream the worker keeps going (stream frames, damage
 * accumulating) but makes no new update. */
static void
gst_spice_tiler_draw_loop (gpointer data)
{
  GstSpiceTiler *self = data;
  GstMiniObject *obj;

  g_mutex_lock (&self->lock);
  while (!self->flushing) {
    obj = g_queue_pop_head (&self->draw_out);
    if (!obj) {
      g_cond_wait (&self->cond, &self->lock);
      continue;
    }
    /* (a drain waits for it: draw_out is empty while it is pushed) */
    self->draw_pushing = TRUE;
    g_mutex_unlock (&self->lock);
    if (GST_IS_BUFFER (obj)) {
      gsize size = gst_buffer_get_size (GST_BUFFER_CAST (obj));
      GstFlowReturn ret = gst_pad_push (self->drawpad, GST_BUFFER_CAST (obj));

      update_flow (self, self->drawpad, ret);
      g_mutex_lock (&self->lock);
      self->stats.updates++;
      self->draw_busy = FALSE;
      self->draw_ready_us = g_get_monotonic_time () +
          tiler_draw_pace_us (size, self->draw_link_bps);
    } else {
      gst_pad_push_event (self->drawpad, GST_EVENT_CAST (obj));
      g_mutex_lock (&self->lock);
    }
    self->draw_pushing = FALSE;
    wake_worker (self);
    g_cond_broadcast (&self->cond);
  }
  g_mutex_unlock (&self->lock);
  GST_DEBUG_OBJECT (self, "pausing draw thread");
  gst_pad_pause_task (self->drawpad);
}

/* ------------------------------------------------------------------ */
/* pads */

/* streaming thread: a damage-only buffer that does not follow the last
 * one and is not the whole surface leaves the picture wrong in places:
 * ask upstream for the whole surface (a key unit of damage-only video) */
static void
request_whole_surface (GstSpiceTiler * self, guint64 seq)
{
  GST_INFO_OBJECT (self, "damage-only buffer %" G_GUINT64_FORMAT " does not "
      "follow the last one: asking for the whole surface", seq);
  gst_pad_push_event (self->sinkpad,
      gst_video_event_new_upstream_force_key_unit (GST_CLOCK_TIME_NONE,
          TRUE, 0));
}

/* streaming thread: checks a damage-only buffer against the caps: a
 * malformed one is an element error (GST_FLOW_ERROR); one that is not the
 * whole surface and does not follow the last one asks for the whole
 * surface */
static GstFlowReturn
check_damage_only (GstSpiceTiler * self, GstBuffer * buf)
{
  GstSpiceDamageMeta *meta;
  GError *err = NULL;
  gboolean follows;
  gint w, h;

  g_mutex_lock (&self->lock);
  w = self->in_width;
  h = self->in_height;
  g_mutex_unlock (&self->lock);
  meta = gst_spice_damage_validate (buf, w, h, &err);
  if (!meta) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Malformed damage-only buffer"), ("%s", err->message));
    g_clear_error (&err);
    return GST_FLOW_ERROR;
  }
  g_mutex_lock (&self->lock);
  follows = gst_spice_damage_covers (meta, w, h) || (self->in_have_seq &&
      meta->seq == self->in_next_seq);
  self->in_have_seq = TRUE;
  self->in_next_seq = meta->seq + 1;
  g_mutex_unlock (&self->lock);
  if (!follows)
    request_whole_surface (self, meta->seq);
  return GST_FLOW_OK;
}

/* Streaming thread. Frames never queue: a whole frame replaces the
 * pending one; damage-only buffers are appended to the pending item (each
 * holds only its own damage), and once they hold more bytes than one
 * picture this waits until the worker has taken them (upstream merges
 * its damage meanwhile). */
static GstFlowReturn
gst_spice_tiler_chain (GstPad * pad, GstObject * parent, GstBuffer * buf)
{
  GstSpiceTiler *self = GST_SPICE_TILER (parent);
  GstSpiceDamageMeta *meta = gst_buffer_get_spice_damage_meta (buf);
  TilerItem *tail;
  GstFlowReturn ret;
  gboolean damage_only;
  guint i;

  g_mutex_lock (&self->lock);
  damage_only = self->in_damage_only;
  g_mutex_unlock (&self->lock);
  if (damage_only && (ret = check_damage_only (self, buf)) != GST_FLOW_OK) {
    gst_buffer_unref (buf);
    return ret;
  }

  g_mutex_lock (&self->lock);
  if (self->flushing) {
    g_mutex_unlock (&self->lock);
    gst_buffer_unref (buf);
    return GST_FLOW_FLUSHING;
  }
  self->stats.frames_in++;
  tail = g_queue_peek_tail (&self->items);
  if (tail && tail->bufs->len > 0 && tail->damage_only == damage_only) {
    /* never queue frames: a whole frame replaces the pending one, damage
     * accumulates */
    if (!damage_only)
      g_ptr_array_set_size (tail->bufs, 0);
    self->stats.frames_coalesced++;
    if (!meta || !tail->has_seq || meta->seq != tail->last_seq + 1)
      tail->full = TRUE;
  } else {
    tail = item_get (self);
    tail->damage_only = damage_only;
    tail->full = meta == NULL;
    tail->has_seq = meta != NULL;
    if (meta)
      tail->first_seq = meta->seq;
    g_queue_push_tail (&self->items, tail);
  }
  g_ptr_array_add (tail->bufs, buf);
  tail->bytes += gst_buffer_get_size (buf);
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
  /* an update being made for a large change does not hold a small one
   * (a key press's echo) behind it for long */
  g_atomic_int_set (&self->yield_request, !tail->full &&
      gst_spice_region_area (&tail->damage) <= TILER_YIELD_MAX_PIXELS);
  wake_worker (self);
  /* bounded: at most one picture's bytes wait beyond the one in hand */
  if (damage_only && tail->bytes > self->in_frame_size) {
    GST_LOG_OBJECT (self, "%" G_GSIZE_FORMAT " bytes pending: waiting for "
        "the worker", tail->bytes);
    while (!self->flushing && g_queue_find (&self->items, tail))
      g_cond_wait (&self->cond, &self->lock);
  }
  ret = self->flushing ? GST_FLOW_FLUSHING : self->last_flow;
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

/* streaming or state-change thread */
static void
start_worker (GstSpiceTiler * self)
{
  g_mutex_lock (&self->lock);
  self->worker_stopping = FALSE;
  g_mutex_unlock (&self->lock);
  gst_task_start (self->worker);
  gst_pad_start_task (self->drawpad, gst_spice_tiler_draw_loop, self, NULL);
}

/* Streaming or state-change thread: the worker and the draw thread leave
 * their loops; @join: and the worker's task ends (the caller then joins
 * it), else it pauses. */
static void
stop_worker (GstSpiceTiler * self, gboolean join)
{
  g_mutex_lock (&self->lock);
  self->flushing = TRUE;
  self->worker_stopping |= join;
  clear_items (self);
  g_queue_clear_full (&self->draw_out, (GDestroyNotify) gst_mini_object_unref);
  self->draw_busy = FALSE;
  wake_worker (self);
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
}

static gboolean
gst_spice_tiler_sink_event (GstPad * pad, GstObject * parent, GstEvent * event)
{
  GstSpiceTiler *self = GST_SPICE_TILER (parent);
  guint tile_size;

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_FLUSH_START:
      gst_pad_push_event (self->drawpad, gst_event_ref (event));
      gst_pad_push_event (self->streampad, event);
      stop_worker (self, FALSE);
      /* (a stopped task would be started, paused) */
      if (gst_task_get_state (self->worker) != GST_TASK_STOPPED)
        gst_task_pause (self->worker);
      gst_pad_pause_task (self->drawpad);
      return TRUE;
    case GST_EVENT_FLUSH_STOP:
      gst_pad_push_event (self->drawpad, gst_event_ref (event));
      gst_pad_push_event (self->streampad, event);
      /* the worker's iteration under way ends first */
      g_rec_mutex_lock (&self->worker_lock);
      g_mutex_lock (&self->lock);
      self->flushing = FALSE;
      self->last_flow = GST_FLOW_OK;
      self->worker_pending = FALSE;
      self->draw_ready_us = 0;
      /* what was pending is gone: a damage-only input starts again from a
       * whole surface */
      self->in_have_seq = FALSE;
      gst_flow_combiner_reset (self->combiner);
      tile_size = self->params.tile_size;
      g_mutex_unlock (&self->lock);
      /* downstream may have lost anything: redraw it all, losslessly */
      tiler_engine_flush (self->engine, tile_size);
      tiler_stream_free_resources (&self->stream);
      gst_segment_init (&self->segment, GST_FORMAT_TIME);
      g_rec_mutex_unlock (&self->worker_lock);
      start_worker (self);
      return TRUE;
    case GST_EVENT_CAPS:{
      GstCaps *caps;
      GstVideoInfo info;

      /* chain() knows what its buffers are before the worker does */
      gst_event_parse_caps (event, &caps);
      if (gst_video_info_from_caps (&info, caps)) {
        g_mutex_lock (&self->lock);
        self->in_damage_only = gst_spice_caps_is_damage_only (caps);
        self->in_width = GST_VIDEO_INFO_WIDTH (&info);
        self->in_height = GST_VIDEO_INFO_HEIGHT (&info);
        self->in_frame_size = GST_VIDEO_INFO_SIZE (&info);
        self->in_have_seq = FALSE;
        g_mutex_unlock (&self->lock);
      }
      return enqueue_event (self, event);
    }
    default:
      if (GST_EVENT_IS_SERIALIZED (event))
        return enqueue_event (self, event);
      return gst_pad_event_default (pad, parent, event);
  }
}

/* State-change thread: the worker is started once the pads are active
 * (READY_TO_PAUSED) and ends with the sink pad, here or in PAUSED_TO_READY,
 * whichever comes first. */
static gboolean
gst_spice_tiler_sink_activate_mode (GstPad * pad, GstObject * parent,
    GstPadMode mode, gboolean active)
{
  GstSpiceTiler *self = GST_SPICE_TILER (parent);

  if (mode != GST_PAD_MODE_PUSH)
    return FALSE;
  if (!active) {
    stop_worker (self, TRUE);
    gst_task_join (self->worker);
  }
  return TRUE;
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
              self->busy || self->worker_pending || self->refresh_pending ||
              self->draw_busy || self->draw_pushing ||
              !g_queue_is_empty (&self->draw_out)))
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
  guint64 bps;
  guint budget, scale;

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
  if (gst_spice_event_parse_rate (event, NULL, &n, &d, &scale)) {
    GST_DEBUG_OBJECT (pad, "stream rate %d/%d, picture 1/%u", n, d, scale);
    g_mutex_lock (&self->lock);
    self->rate_fps_n = n;
    self->rate_fps_d = MAX (d, 1);
    self->rate_scale = CLAMP (scale, 1, GST_SPICE_TILER_MAX_STREAM_SCALE);
    g_mutex_unlock (&self->lock);
    gst_event_unref (event);
    return TRUE;
  }
  if (gst_spice_event_parse_draw_budget (event, &bps, &budget)) {
    GST_DEBUG_OBJECT (pad, "draw budget %u bytes per update (link %"
        G_GUINT64_FORMAT " bit/s)", budget, bps);
    g_mutex_lock (&self->lock);
    self->draw_budget = budget;
    self->draw_link_bps = bps;
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
      self->draw_ready_us = 0;
      self->in_have_seq = FALSE;
      self->draw_qos_earliest = self->stream_qos_earliest = GST_CLOCK_TIME_NONE;
      gst_flow_combiner_reset (self->combiner);
      g_mutex_unlock (&self->lock);
      worker_reset (self);
      break;
    case GST_STATE_CHANGE_PAUSED_TO_READY:
      stop_worker (self, TRUE);
      gst_task_join (self->worker);
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
  TilerEngineStats *e = &self->engine_stats;
  GstStructure *st;

  g_mutex_lock (&self->lock);
  st = gst_structure_new ("application/x-spicetiler-stats",
      "frames-in", G_TYPE_UINT64, s->frames_in,
      "frames-processed", G_TYPE_UINT64, e->frames_processed,
      "frames-coalesced", G_TYPE_UINT64, s->frames_coalesced,
      "updates", G_TYPE_UINT64, s->updates,
      "regions", G_TYPE_UINT64, e->regions,
      "regions-bitmap", G_TYPE_UINT64, e->regions_bitmap,
      "regions-lz4", G_TYPE_UINT64, e->regions_lz4,
      "regions-jpeg", G_TYPE_UINT64, e->regions_jpeg,
      "regions-copy", G_TYPE_UINT64, e->regions_copy,
      "copied-rows", G_TYPE_UINT64, e->copied_rows,
      "bytes-bitmap", G_TYPE_UINT64, e->bytes_bitmap,
      "bytes-lz4", G_TYPE_UINT64, e->bytes_lz4,
      "bytes-jpeg", G_TYPE_UINT64, e->bytes_jpeg,
      "lossy-area-pending", G_TYPE_UINT64,
      e->lossy_cells * TILER_CELL * TILER_CELL,
      "refined-cells", G_TYPE_UINT64, e->refined_cells,
      "classified-cells", G_TYPE_UINT64, e->classified_cells,
      "refreshes", G_TYPE_UINT64, e->refreshes,
      "deferred", G_TYPE_UINT64, e->deferred,
      "stream-active", G_TYPE_BOOLEAN, e->stream_active,
      "stream-id", G_TYPE_UINT, e->stream_id,
      "stream-x", G_TYPE_INT, e->stream_rect.x,
      "stream-y", G_TYPE_INT, e->stream_rect.y,
      "stream-width", G_TYPE_INT, e->stream_rect.w,
      "stream-height", G_TYPE_INT, e->stream_rect.h,
      "stream-starts", G_TYPE_UINT64, e->stream_starts,
      "stream-frames", G_TYPE_UINT64, e->stream_frames,
      "stream-frames-dropped", G_TYPE_UINT64, e->stream_dropped,
      "stream-fps", G_TYPE_DOUBLE, e->stream_fps,
      "diff-us", G_TYPE_DOUBLE, e->diff_us_avg,
      "encode-us", G_TYPE_DOUBLE, e->encode_us_avg, NULL);
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
    case PROP_SCROLL_DETECTION:
      p->scroll = g_value_get_boolean (value);
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
    case PROP_SCROLL_DETECTION:
      g_value_set_boolean (value, p->scroll);
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
  tiler_engine_free (self->engine);
  gst_object_unref (self->worker);
  g_rec_mutex_clear (&self->worker_lock);
  g_queue_clear_full (&self->items, item_free);
  g_queue_clear_full (&self->free_items, item_free);
  g_queue_clear_full (&self->draw_out, (GDestroyNotify) gst_mini_object_unref);
  gst_flow_combiner_free (self->combiner);
  g_mutex_clear (&self->lock);
  g_cond_clear (&self->cond);
  g_cond_clear (&self->worker_cond);
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
  gst_pad_set_activatemode_function (self->sinkpad,
      gst_spice_tiler_sink_activate_mode);
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
  g_cond_init (&self->worker_cond);
  g_queue_init (&self->items);
  g_queue_init (&self->free_items);
  g_queue_init (&self->draw_out);
  g_rec_mutex_init (&self->worker_lock);
  self->worker = gst_task_new (gst_spice_tiler_loop, self, NULL);
  gst_task_set_lock (self->worker, &self->worker_lock);
  gst_object_set_name (GST_OBJECT (self->worker), "spicetiler-worker");
  self->engine = tiler_engine_new ();
  tiler_stream_init (&self->stream);
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
  p->scroll = DEFAULT_SCROLL_DETECTION;
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
          "How long a lossy area must stay still before it is re-sent "
          "losslessly (ns of running time, a GstClockTime: measured on the "
          "buffers' running time and the pipeline clock)", 0, G_MAXUINT64 / 2,
          DEFAULT_REFINE_DELAY, rw));
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
          "Longest pause between changes that keeps an area's run going "
          "(ns of running time, a GstClockTime)", 1, G_MAXUINT64 / 2,
          DEFAULT_STREAM_MAX_GAP, rw));
  g_object_class_install_property (gobject_class, PROP_STREAM_TIMEOUT,
      g_param_spec_uint64 ("stream-timeout", "Stream timeout",
          "A stream ends after this long without change; also how long a "
          "smaller hot area must last before the stream shrinks (ns of "
          "running time, a GstClockTime)", 1, G_MAXUINT64 / 2,
          DEFAULT_STREAM_TIMEOUT, rw));
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
          "waits for the next one (smallest regions go first; 0 = no limit)", 0,
          G_MAXINT, DEFAULT_UPDATE_BUDGET, rw));
  g_object_class_install_property (gobject_class, PROP_BAND_SIZE,
      g_param_spec_uint ("band-size", "Band size",
          "Raw bytes per band: larger regions are sent as several draws of "
          "at least 16 rows", 4096, G_MAXINT, DEFAULT_BAND_SIZE, rw));
  g_object_class_install_property (gobject_class, PROP_SCROLL_DETECTION,
      g_param_spec_boolean ("scroll-detection", "Scroll detection",
          "Send an area whose rows the client already has, moved up or "
          "down, as a copy (COPY_BITS) plus the rows that came into view",
          DEFAULT_SCROLL_DETECTION, rw));
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "Counters: frames, updates, regions and bytes per codec, copies, "
          "lossy area pending refinement, stream state, fps and drops, average "
          "diff and encode time (us)", GST_TYPE_STRUCTURE,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &draw_template);
  gst_element_class_add_static_pad_template (element_class, &stream_template);
  gst_element_class_set_static_metadata (element_class,
      "SPICE tiler", "Filter/Converter/Video",
      "Diffs raw frames against what was sent and emits SPICE draws "
      "(BITMAP/LZ4/JPEG) plus a raw video stream region. "
      "Example: gst-launch-1.0 videotestsrc is-live=true pattern=ball ! "
      "spicetiler name=t t.draw ! s.draw t.stream ! queue "
      "max-size-buffers=1 leaky=downstream ! vp8enc deadline=1 ! s.stream_0 "
      "spicesink name=s port=5910", "gst-spice developers");
  element_class->change_state = gst_spice_tiler_change_state;

  gst_type_mark_as_plugin_api (GST_TYPE_SPICE_TILER_STREAMING, 0);
}
