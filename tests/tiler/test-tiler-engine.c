/* gst-spice tests: spicetiler's engine, without the element
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Synthetic frames go through tiler_engine_update() of each kind; the
 * updates it returns (and the stream frames it asks for, as exact pixels)
 * are applied with the reference draws decoder and compared with the
 * frames. The last test feeds the same frames to the spicetiler element
 * and checks that it sends the very same updates.
 */
#include "tilerengine.h"
#include "tiler-common.h"

#define W 320
#define H 240

typedef struct
{
  TilerEngine *e;
  TilerParams p;
  GstVideoInfo info;
  DrawsDecoder *dec;
  TilerEngineResult res;
  guint64 seq;
  GList *updates;               /* copies of every update, if kept */
  gboolean keep;
  guint stream_frames, keyframes;
  gboolean lossy_stream;        /* stream frames reach the canvas lossy */
  guint64 last_bytes;           /* of the updates applied last */
} Eng;

static Eng t0;

static void
eng_setup (Eng * t, GstSpiceTilerStreaming streaming)
{
  TilerParams *p = &t->p;

  memset (t, 0, sizeof (*t));
  /* the element's defaults */
  p->max_rects = 16;
  p->tile_size = 64;
  p->jpeg_quality = 85;
  p->refine_delay = 250 * GST_MSECOND;
  p->streaming = streaming;
  p->stream_min_frames = 20;
  p->stream_max_gap = 200 * GST_MSECOND;
  p->stream_timeout = GST_SECOND;
  p->stream_min_area = 96 * 96;
  p->stream_format = GST_VIDEO_FORMAT_I420;
  p->update_budget = 256 * 1024;
  p->band_size = 128 * 1024;
  p->scroll = TRUE;
  t->e = tiler_engine_new ();
  gst_video_info_set_format (&t->info, GST_VIDEO_FORMAT_BGRx, W, H);
  fail_unless (tiler_engine_set_format (t->e, &t->info, p->tile_size));
  /* the same format again is no new surface */
  fail_if (tiler_engine_set_format (t->e, &t->info, p->tile_size));
  t->dec = draws_decoder_new (W, H);
}

static void
eng_teardown (Eng * t)
{
  tiler_engine_free (t->e);
  draws_decoder_free (t->dec);
  g_list_free_full (t->updates, (GDestroyNotify) gst_buffer_unref);
}

static void
input_init (Eng * t, TilerEngineInput * in)
{
  memset (in, 0, sizeof (*in));
  in->params = &t->p;
  in->stream_allowed = TRUE;
  in->draw_qos_earliest = in->stream_qos_earliest = GST_CLOCK_TIME_NONE;
  in->rate_scale = 1;
}

/* applies the result: the updates before the stream frame, the stream
 * frame's pixels (as a lossless codec would show them), the rest; while a
 * stream is active no draw may cover its area */
static guint
eng_apply (Eng * t)
{
  TilerEngineResult *res = &t->res;
  guint i, n = res->n_updates;

  fail_unless (res->n_before_stream <= n);
  t->last_bytes = 0;
  for (i = 0; i < n; i++)
    t->last_bytes += gst_buffer_get_size (res->updates[i]);
  for (i = 0; i <= n; i++) {
    GError *err = NULL;
    GstBuffer *b;
    guint k;

    if (i == res->n_before_stream && res->stream_frame) {
      const GstVideoRectangle *sr = &res->stream_rect;
      gint fs = GST_VIDEO_FRAME_PLANE_STRIDE (res->frame, 0);
      const guint8 *px = (const guint8 *) GST_VIDEO_FRAME_PLANE_DATA
          (res->frame, 0) + (gsize) sr->y * fs + (gsize) sr->x * 4;

      if (t->lossy_stream) {
        /* what a lossy codec shows: close, never exact */
        guint32 *lossy = g_new (guint32, (gsize) sr->w * sr->h);
        gint x, y;

        for (y = 0; y < sr->h; y++)
          for (x = 0; x < sr->w; x++)
            lossy[y * sr->w + x] =
                ((const guint32 *) (px + (gsize) y * fs))[x] ^ 0x010101;
        draws_decoder_apply_pixels (t->dec, sr, (const guint8 *) lossy,
            sr->w * 4);
        g_free (lossy);
      } else
        draws_decoder_apply_pixels (t->dec, sr, px, fs);
      t->stream_frames++;
      t->keyframes += res->stream_keyframe;
    }
    if (i == n)
      break;
    b = res->updates[i];
    fail_unless (draws_decoder_apply (t->dec, b, &err), "bad update: %s",
        err ? err->message : "");
    if (res->stream_frame && i >= res->n_before_stream)
      for (k = 0; k < draws_decoder_last_n_regions (t->dec); k++) {
        const GstVideoRectangle *r = draws_decoder_last_region (t->dec, k,
            NULL, NULL);

        fail_if (gst_spice_rect_intersect (r, &res->stream_rect, NULL),
            "a draw at %d,%d %dx%d over the stream", r->x, r->y, r->w, r->h);
      }
    if (t->keep)
      t->updates = g_list_append (t->updates, gst_buffer_ref (b));
  }
  tiler_engine_result_clear (res);
  return n;
}

/* one TILER_UPDATE_FRAME of frame @i (pts i/30 s) with @damage (NULL: the
 * whole frame, no damage sequence); returns the updates applied */
static guint
eng_frame_full (Eng * t, GstBuffer * frame, gint i,
    const GstVideoRectangle * damage, guint n_damage, TilerEngineInput * in)
{
  TilerEngineInput def;
  GstSpiceRegion region;
  GstBuffer *b = gst_buffer_copy (frame);
  guint k;

  if (!in) {
    input_init (t, &def);
    in = &def;
  }
  GST_BUFFER_PTS (b) = i * FRAME_DURATION;
  GST_BUFFER_DURATION (b) = FRAME_DURATION;
  gst_spice_region_init (&region);
  for (k = 0; damage && k < n_damage; k++)
    gst_spice_region_add (&region, &damage[k]);
  in->buffer = b;
  in->running_time = GST_BUFFER_PTS (b);
  in->damage = &region;
  in->full = damage == NULL;
  in->has_seq = damage != NULL;
  in->first_seq = in->last_seq = ++t->seq;
  fail_unless_equals_int (tiler_engine_update (t->e, TILER_UPDATE_FRAME, in,
          &t->res), GST_FLOW_OK);
  fail_unless (t->res.frame != NULL);
  fail_unless_equals_uint64 (t->res.pts, GST_BUFFER_PTS (b));
  gst_spice_region_clear (&region);
  gst_buffer_unref (b);
  return eng_apply (t);
}

static guint
eng_frame (Eng * t, GstBuffer * frame, gint i, const GstVideoRectangle * dmg)
{
  return eng_frame_full (t, frame, i, dmg, dmg ? 1 : 0, NULL);
}

/* an update without a frame */
static guint
eng_idle (Eng * t, TilerUpdateKind kind, TilerEngineInput * in)
{
  TilerEngineInput def;

  if (!in) {
    input_init (t, &def);
    in = &def;
  }
  fail_unless_equals_int (tiler_engine_update (t->e, kind, in, &t->res),
      GST_FLOW_OK);
  fail_if (t->res.stream_frame);
  return eng_apply (t);
}

static guint64
eng_diff (Eng * t, GstBuffer * frame, const GstVideoRectangle * area)
{
  GstMapInfo map;
  guint64 n;

  gst_buffer_map (frame, &map, GST_MAP_READ);
  n = draws_decoder_compare (t->dec, map.data, W * 4, area);
  gst_buffer_unmap (frame, &map);
  return n;
}

static void
paint (GstBuffer * frame, const GstVideoRectangle * r, guint32 seed,
    gint photo_t)
{
  GstMapInfo map;

  gst_buffer_map (frame, &map, GST_MAP_WRITE);
  if (photo_t >= 0)
    fill_photo (map.data, W * 4, r, photo_t, 3);
  else
    fill_text (map.data, W * 4, r, seed);
  gst_buffer_unmap (frame, &map);
}

static GstBuffer *
desktop (void)
{
  GstBuffer *frame = frame_new (W, H);
  GstVideoRectangle all = { 0, 0, W, H };

  paint (frame, &all, 99, -1);
  return frame;
}

/* text changing in random rectangles, each frame's damage exactly that:
 * the client has every frame exactly, and the counters match what the
 * decoder saw */
GST_START_TEST (test_engine_frames_exact)
{
  GstBuffer *frame = desktop ();
  const TilerEngineStats *st;
  guint32 seed = 4242;
  gint i;

  eng_setup (&t0, GST_SPICE_TILER_STREAMING_OFF);
  fail_unless (eng_frame (&t0, frame, 0, NULL) > 0);
  fail_unless_equals_uint64 (eng_diff (&t0, frame, NULL), 0);
  for (i = 1; i < 40; i++) {
    GstVideoRectangle r;

    r.w = 1 + rnd (&seed) % 120;
    r.h = 1 + rnd (&seed) % 90;
    r.x = rnd (&seed) % (W - r.w + 1);
    r.y = rnd (&seed) % (H - r.h + 1);
    paint (frame, &r, rnd (&seed), -1);
    eng_frame (&t0, frame, i, &r);
    fail_unless_equals_uint64 (eng_diff (&t0, frame, NULL), 0);
    fail_if (t0.res.pending);
  }
  /* an unchanged frame: no update */
  fail_unless_equals_int (eng_frame (&t0, frame, i, NULL), 0);
  st = tiler_engine_stats (t0.e);
  fail_unless_equals_uint64 (st->frames_processed, 41);
  fail_unless_equals_uint64 (st->regions,
      draws_decoder_stats (t0.dec)->regions);
  fail_unless_equals_uint64 (st->bytes_lz4,
      draws_decoder_stats (t0.dec)->bytes_lz4);
  fail_unless_equals_uint64 (st->regions_jpeg, 0);
  eng_teardown (&t0);
  gst_buffer_unref (frame);
}

GST_END_TEST;

/* a frame before any format is not negotiated; without a frame only
 * TILER_UPDATE_FRAME does anything */
GST_START_TEST (test_engine_kinds_without_frame)
{
  TilerEngine *e = tiler_engine_new ();
  TilerEngineInput in;
  TilerEngineResult res;
  GstBuffer *frame = desktop ();
  GstSpiceRegion none;
  TilerUpdateKind kinds[] = { TILER_UPDATE_CARRY, TILER_UPDATE_REFINE,
    TILER_UPDATE_FINAL
  };
  guint i;

  eng_setup (&t0, GST_SPICE_TILER_STREAMING_OFF);
  input_init (&t0, &in);
  gst_spice_region_init (&none);
  in.buffer = frame;
  in.damage = &none;
  in.full = TRUE;
  fail_unless_equals_int (tiler_engine_update (e, TILER_UPDATE_FRAME, &in,
          &res), GST_FLOW_NOT_NEGOTIATED);
  fail_unless_equals_int (res.n_updates, 0);
  fail_if (tiler_engine_has_frame (e));
  for (i = 0; i < G_N_ELEMENTS (kinds); i++) {
    fail_unless_equals_int (tiler_engine_update (t0.e, kinds[i], &in,
            &res), GST_FLOW_OK);
    fail_unless_equals_int (res.n_updates, 0);
  }
  fail_if (tiler_engine_has_frame (t0.e));
  gst_spice_region_clear (&none);
  tiler_engine_free (e);
  eng_teardown (&t0);
  gst_buffer_unref (frame);
}

GST_END_TEST;

/* while the draw pad is busy the damage is carried, not sent: the next
 * update without a frame (TILER_UPDATE_CARRY) sends it */
GST_START_TEST (test_engine_draw_busy_carries)
{
  GstBuffer *frame = desktop ();
  GstVideoRectangle r = { 40, 30, 100, 60 }, r2 = { 200, 150, 50, 40 };
  TilerEngineInput in;

  eng_setup (&t0, GST_SPICE_TILER_STREAMING_OFF);
  eng_frame (&t0, frame, 0, NULL);
  paint (frame, &r, 7, -1);
  input_init (&t0, &in);
  in.draw_busy = TRUE;
  fail_unless_equals_int (eng_frame_full (&t0, frame, 1, &r, 1, &in), 0);
  fail_unless (t0.res.pending);
  fail_unless (eng_diff (&t0, frame, &r) > 0);
  /* a second frame while still busy: both areas wait */
  paint (frame, &r2, 8, -1);
  input_init (&t0, &in);
  in.draw_busy = TRUE;
  fail_unless_equals_int (eng_frame_full (&t0, frame, 2, &r2, 1, &in), 0);
  fail_unless (eng_diff (&t0, frame, NULL) > 0);
  fail_unless_equals_int (eng_idle (&t0, TILER_UPDATE_CARRY, NULL), 1);
  fail_unless_equals_uint64 (eng_diff (&t0, frame, NULL), 0);
  fail_if (t0.res.pending);
  eng_teardown (&t0);
  gst_buffer_unref (frame);
}

GST_END_TEST;

/* a refresh is one lossless region over the whole surface, in an update
 * of its own flagged REFRESH */
GST_START_TEST (test_engine_refresh)
{
  GstBuffer *frame = desktop ();
  const GstVideoRectangle *reg;
  GstVideoRectangle r = { 10, 10, 50, 50 };
  TilerEngineInput in;
  gboolean lossy;

  eng_setup (&t0, GST_SPICE_TILER_STREAMING_OFF);
  eng_frame (&t0, frame, 0, NULL);
  input_init (&t0, &in);
  in.refresh = TRUE;
  fail_unless_equals_int (eng_idle (&t0, TILER_UPDATE_CARRY, &in), 1);
  fail_unless_equals_uint64 (draws_decoder_stats (t0.dec)->refreshes, 1);
  fail_unless_equals_int (draws_decoder_last_n_regions (t0.dec), 1);
  reg = draws_decoder_last_region (t0.dec, 0, NULL, &lossy);
  fail_unless (reg->x == 0 && reg->y == 0 && reg->w == W && reg->h == H);
  fail_if (lossy);
  fail_unless_equals_uint64 (tiler_engine_stats (t0.e)->refreshes, 1);
  /* with a new frame: the refresh first, then the frame's draws */
  paint (frame, &r, 3, -1);
  input_init (&t0, &in);
  in.refresh = TRUE;
  fail_unless_equals_int (eng_frame_full (&t0, frame, 1, &r, 1, &in), 2);
  fail_unless_equals_uint64 (draws_decoder_stats (t0.dec)->refreshes, 2);
  fail_unless_equals_uint64 (eng_diff (&t0, frame, NULL), 0);
  eng_teardown (&t0);
  gst_buffer_unref (frame);
}

GST_END_TEST;

/* photographic content goes lossy; TILER_UPDATE_REFINE at the deadline
 * the result names makes it exact */
GST_START_TEST (test_engine_refine_deadline)
{
  GstBuffer *frame = desktop ();
  GstVideoRectangle r = { 64, 48, 160, 128 };
  const TilerEngineStats *st;

  eng_setup (&t0, GST_SPICE_TILER_STREAMING_OFF);
  eng_frame (&t0, frame, 0, NULL);
  fail_unless_equals_uint64 (t0.res.next_refine, GST_CLOCK_TIME_NONE);
  paint (frame, &r, 0, 5);
  eng_frame (&t0, frame, 1, &r);
  fail_unless (draws_decoder_stats (t0.dec)->lossy_regions > 0);
  fail_unless (eng_diff (&t0, frame, &r) > 0);
  fail_unless (eng_diff (&t0, frame, NULL) == eng_diff (&t0, frame, &r));
  fail_unless_equals_uint64 (t0.res.next_refine,
      FRAME_DURATION + t0.p.refine_delay);
  fail_if (t0.res.pending);
  st = tiler_engine_stats (t0.e);
  fail_unless (st->lossy_cells > 0);
  /* an idle update before the deadline changes nothing */
  fail_unless_equals_int (eng_idle (&t0, TILER_UPDATE_CARRY, NULL), 0);
  fail_unless (eng_idle (&t0, TILER_UPDATE_REFINE, NULL) > 0);
  fail_unless_equals_uint64 (t0.res.running_time,
      FRAME_DURATION + t0.p.refine_delay);
  fail_unless_equals_uint64 (eng_diff (&t0, frame, NULL), 0);
  fail_unless_equals_uint64 (t0.res.next_refine, GST_CLOCK_TIME_NONE);
  fail_unless (st->refined_cells > 0);
  fail_unless_equals_uint64 (st->lossy_cells, 0);
  eng_teardown (&t0);
  gst_buffer_unref (frame);
}

GST_END_TEST;

/* a refinement deadline that comes while the draw pad is busy (or paced
 * to the link) is one the element's worker does not wait for again: the
 * result asks for the next update as soon as the pad is free, and that
 * one refines */
GST_START_TEST (test_engine_refine_while_busy)
{
  GstBuffer *frame = desktop ();
  GstVideoRectangle r = { 64, 48, 160, 128 };
  TilerEngineInput in;
  GstClockTime deadline;

  eng_setup (&t0, GST_SPICE_TILER_STREAMING_OFF);
  eng_frame (&t0, frame, 0, NULL);
  paint (frame, &r, 0, 5);
  eng_frame (&t0, frame, 1, &r);
  fail_unless (eng_diff (&t0, frame, &r) > 0);
  fail_if (t0.res.pending);
  deadline = t0.res.next_refine;
  fail_unless (GST_CLOCK_TIME_IS_VALID (deadline));
  input_init (&t0, &in);
  in.draw_busy = TRUE;
  fail_unless_equals_int (eng_idle (&t0, TILER_UPDATE_REFINE, &in), 0);
  fail_unless_equals_uint64 (t0.res.next_refine, deadline);
  fail_unless (t0.res.pending, "the deadline passed while busy is lost");
  fail_unless (eng_idle (&t0, TILER_UPDATE_CARRY, NULL) > 0);
  fail_unless_equals_uint64 (eng_diff (&t0, frame, NULL), 0);
  fail_if (t0.res.pending);
  fail_unless_equals_uint64 (t0.res.next_refine, GST_CLOCK_TIME_NONE);
  eng_teardown (&t0);
  gst_buffer_unref (frame);
}

GST_END_TEST;

/* A slow link, driven the way the element drives the engine: an update
 * holds the link for its bytes at bps (meanwhile the draw pad is busy or
 * paced, spice-draw-budget gives 10 ms of the link per update); without a
 * frame the next update comes when the result is pending and the link is
 * free, or at the refinement deadline: each deadline once (the worker
 * waits for it on the clock), even when the link is busy then. Stream
 * frames reach the canvas lossy. */
typedef struct
{
  Eng *t;
  guint64 bps;
  GstClockTime now, link_free, last_deadline;
  gint rate_n;                  /* spice-rate frame rate, 0 = none */
  guint scale;
  GstClockTime stream_qos;
  guint64 bytes;                /* sent since the test reset it */
  guint64 bytes_exact;          /* ... until the canvas became exact */
} Link;

static void
link_input (Link * l, TilerEngineInput * in)
{
  input_init (l->t, in);
  in->sink_budget = l->bps / 8 / 100;
  in->link_bps = l->bps;
  in->draw_busy = l->now < l->link_free;
  in->rate_fps_n = l->rate_n;
  in->rate_fps_d = 1;
  in->rate_scale = MAX (l->scale, 1);
  in->stream_qos_earliest = l->stream_qos;
}

static void
link_sent (Link * l)
{
  if (l->t->last_bytes == 0)
    return;
  l->link_free = MAX (l->link_free, l->now) +
      gst_util_uint64_scale (l->t->last_bytes * 8, GST_SECOND, l->bps);
  l->bytes += l->t->last_bytes;
}

/* The updates without a frame before @until. With @frame: returns when
 * the client had the canvas equal to it for good (the link carried the
 * update that made it so), NONE if it is not equal at the end. */
static GstClockTime
link_idle (Link * l, GstClockTime until, GstBuffer * frame)
{
  TilerEngineResult *res = &l->t->res;
  GstClockTime exact = GST_CLOCK_TIME_NONE;

  if (frame && eng_diff (l->t, frame, NULL) == 0) {
    exact = MAX (l->now, l->link_free);
    l->bytes_exact = l->bytes;
  }
  for (;;) {
    TilerEngineInput in;
    TilerUpdateKind kind;
    GstClockTime at;

    if (res->pending) {
      kind = TILER_UPDATE_CARRY;
      at = MAX (l->now, l->link_free);
    } else if (GST_CLOCK_TIME_IS_VALID (res->next_refine) &&
        (!GST_CLOCK_TIME_IS_VALID (l->last_deadline) ||
            res->next_refine > l->last_deadline)) {
      kind = TILER_UPDATE_REFINE;
      at = MAX (l->now, res->next_refine);
    } else
      break;
    if (at >= until)
      break;
    if (kind == TILER_UPDATE_REFINE)
      l->last_deadline = res->next_refine;
    l->now = at;
    link_input (l, &in);
    eng_idle (l->t, kind, &in);
    link_sent (l);
    if (!frame)
      continue;
    if (eng_diff (l->t, frame, NULL) > 0)
      exact = GST_CLOCK_TIME_NONE;
    else if (!GST_CLOCK_TIME_IS_VALID (exact)) {
      exact = MAX (l->now, l->link_free);
      l->bytes_exact = l->bytes;
    }
  }
  return exact;
}

/* frame @i (damage @dmg) at its time, after the idle updates before it */
static void
link_frame (Link * l, GstBuffer * frame, gint i, const GstVideoRectangle * dmg)
{
  TilerEngineInput in;

  link_idle (l, (GstClockTime) i * FRAME_DURATION, NULL);
  l->now = MAX (l->now, (GstClockTime) i * FRAME_DURATION);
  link_input (l, &in);
  eng_frame_full (l->t, frame, i, dmg, 1, &in);
  link_sent (l);
  l->last_deadline = GST_CLOCK_TIME_NONE;
}

/* Issue 15: on a 2 Mbit/s link with 5 stream frames a second, a stream
 * that is rescaled (spice-rate), shrinks and moves, its last frames
 * dropped (rate, QoS), then goes still: the client has the exact picture
 * within refine-delay plus the time the link takes for what was sent
 * after the last change until then (it kept tiles lossy forever before: a deadline
 * lost while the link was busy; and a change no frame carried waited for
 * stream-timeout). */
GST_START_TEST (test_engine_stream_converges_on_slow_link)
{
  GstBuffer *frame = desktop ();
  GstVideoRectangle a = { 0, 0, W, 192 }, b = { 0, 0, 128, 128 };
  GstVideoRectangle c = { 64, 64, 128, 128 };
  const TilerEngineStats *st;
  GstClockTime still, bound, exact, in_flight;
  Link l = { &t0, 2000000, 0, 0, GST_CLOCK_TIME_NONE, 5, 1,
    GST_CLOCK_TIME_NONE, 0, 0
  };
  guint64 starts = 0;
  gboolean shrank = FALSE, grew = FALSE;
  gint i;

  eng_setup (&t0, GST_SPICE_TILER_STREAMING_AUTO);
  t0.lossy_stream = TRUE;
  st = tiler_engine_stats (t0.e);
  link_frame (&l, frame, 0, &(GstVideoRectangle) {
      0, 0, W, H});
  for (i = 1; i <= 150; i++) {
    const GstVideoRectangle *r = i <= 45 ? &a : i <= 110 ? &b : &c;

    /* the link asks for half the picture size mid-stream */
    if (i == 30) {
      fail_unless (st->stream_active);
      l.scale = 2;
      starts = st->stream_starts;
    }
    /* QoS: the stream branch is late for the last frames */
    if (i == 144)
      l.stream_qos = 200 * FRAME_DURATION;
    paint (frame, r, 0, i);
    link_frame (&l, frame, i, r);
    if (i == 30)
      fail_unless_equals_uint64 (st->stream_starts, starts + 1);
    if (i > 45 && i <= 110 && st->stream_active &&
        gst_spice_rect_contains (&b, &st->stream_rect))
      shrank = TRUE;
    if (i > 110 && shrank && st->stream_active &&
        gst_spice_rect_contains (&st->stream_rect, &c))
      grew = TRUE;
  }
  fail_unless (shrank, "the stream did not shrink");
  fail_unless (grew, "the stream did not move over the new area");
  fail_unless (st->stream_dropped > 0);
  fail_unless (eng_diff (&t0, frame, NULL) > 0);

  still = l.now;
  in_flight = l.link_free > still ? l.link_free - still : 0;
  l.bytes = 0;
  exact = link_idle (&l, still + 5 * GST_SECOND, frame);
  fail_unless (GST_CLOCK_TIME_IS_VALID (exact),
      "never exact: %" G_GUINT64_FORMAT " px differ, %" G_GUINT64_FORMAT
      " lossy cells", eng_diff (&t0, frame, NULL), st->lossy_cells);
  bound = still + t0.p.refine_delay + in_flight +
      gst_util_uint64_scale (l.bytes_exact * 8, GST_SECOND, l.bps) +
      GST_MSECOND;
  fail_unless (exact <= bound, "exact %" GST_TIME_FORMAT " after the last "
      "change, bound %" GST_TIME_FORMAT, GST_TIME_ARGS (exact - still),
      GST_TIME_ARGS (bound - still));
  fail_unless_equals_uint64 (st->lossy_cells, 0);
  eng_teardown (&t0);
  gst_buffer_unref (frame);
}

GST_END_TEST;

/* a small update budget spreads a large change over updates (the rest
 * pending); the final update has no budget and is lossless */
GST_START_TEST (test_engine_budget_and_final)
{
  GstBuffer *frame = desktop ();
  GstVideoRectangle all = { 0, 0, W, H }, r = { 0, 0, W, 160 }, below;
  GstMapInfo map;
  guint n;

  eng_setup (&t0, GST_SPICE_TILER_STREAMING_OFF);
  t0.p.update_budget = 8 * 1024;
  t0.p.band_size = 8 * 1024;
  eng_frame (&t0, frame, 0, NULL);
  for (n = 0; t0.res.pending && n < 100; n++)
    eng_idle (&t0, TILER_UPDATE_CARRY, NULL);
  fail_unless (n > 1, "%u updates", n);
  fail_unless_equals_uint64 (eng_diff (&t0, frame, NULL), 0);
  fail_unless (tiler_engine_stats (t0.e)->deferred >= n);

  paint (frame, &all, 5, -1);
  paint (frame, &r, 0, 9);
  eng_frame (&t0, frame, 1, &all);
  fail_unless (t0.res.pending);
  fail_unless (eng_diff (&t0, frame, NULL) > 0);
  /* all the rest in one update; what was carried is new to the client
   * and may go lossy (photographic), the text below it is exact */
  fail_unless_equals_int (eng_idle (&t0, TILER_UPDATE_FINAL, NULL), 1);
  fail_if (t0.res.pending);
  below = (GstVideoRectangle) {
  0, 176, W, H - 176};
  fail_unless_equals_uint64 (eng_diff (&t0, frame, &below), 0);
  gst_buffer_map (frame, &map, GST_MAP_READ);
  fail_unless (draws_decoder_psnr (t0.dec, map.data, W * 4, NULL) > 25.0);
  gst_buffer_unmap (frame, &map);
  /* and a second one makes it exact */
  eng_idle (&t0, TILER_UPDATE_FINAL, NULL);
  fail_unless_equals_uint64 (eng_diff (&t0, frame, NULL), 0);
  fail_unless_equals_uint64 (t0.res.next_refine, GST_CLOCK_TIME_NONE);
  eng_teardown (&t0);
  gst_buffer_unref (frame);
}

GST_END_TEST;

/* A small change (a key press's echo) that comes while the update of a
 * large photographic change is made goes out before the rest of it: the
 * update ends after its first band and the rest is carried; the next one
 * sends the small change first. That is no link pressure (nothing
 * deferred), never happens twice in a row, and without a waiting frame
 * the large change goes in one update. */
GST_START_TEST (test_engine_small_frame_goes_first)
{
  GstBuffer *frame = desktop ();
  GstVideoRectangle photo = { 0, 64, W, 176 }, box = { 16, 16, 32, 32 };
  const GstVideoRectangle *r;
  TilerEngineInput in;
  gint waiting = 0;
  guint n_whole, i, n;
  GstMapInfo map;

  eng_setup (&t0, GST_SPICE_TILER_STREAMING_OFF);
  t0.p.band_size = 8 * 1024;
  eng_frame (&t0, frame, 0, NULL);
  fail_unless_equals_uint64 (eng_diff (&t0, frame, NULL), 0);

  /* nothing waits: one update, in bands */
  paint (frame, &photo, 0, 3);
  input_init (&t0, &in);
  in.yield = &waiting;
  fail_unless_equals_int (eng_frame_full (&t0, frame, 1, &photo, 1, &in), 1);
  n_whole = draws_decoder_last_n_regions (t0.dec);
  fail_unless (n_whole > 2, "%u regions", n_whole);

  /* a small frame waits while the next one is made: one band goes */
  paint (frame, &photo, 0, 4);
  waiting = 1;
  input_init (&t0, &in);
  in.yield = &waiting;
  fail_unless_equals_int (eng_frame_full (&t0, frame, 2, &photo, 1, &in), 1);
  fail_unless_equals_int (draws_decoder_last_n_regions (t0.dec), 1);
  fail_unless (t0.res.pending);

  /* the small frame: its change first, then the rest (not cut again,
   * although a frame still "waits") */
  paint (frame, &box, 7, -1);
  input_init (&t0, &in);
  in.yield = &waiting;
  fail_unless_equals_int (eng_frame_full (&t0, frame, 3, &box, 1, &in), 1);
  n = draws_decoder_last_n_regions (t0.dec);
  fail_unless (n >= 2, "%u regions", n);
  r = draws_decoder_last_region (t0.dec, 0, NULL, NULL);
  fail_unless (gst_spice_rect_contains (&box, r), "first region %d,%d %dx%d",
      r->x, r->y, r->w, r->h);
  for (i = 1; i < n; i++)
    fail_unless (gst_spice_rect_contains (&photo,
            draws_decoder_last_region (t0.dec, i, NULL, NULL)));
  fail_if (t0.res.pending);
  fail_unless_equals_uint64 (tiler_engine_stats (t0.e)->deferred, 0);
  fail_unless_equals_uint64 (eng_diff (&t0, frame, &box), 0);
  gst_buffer_map (frame, &map, GST_MAP_READ);
  fail_unless (draws_decoder_psnr (t0.dec, map.data, W * 4, &photo) > 25.0);
  gst_buffer_unmap (frame, &map);
  eng_teardown (&t0);
  gst_buffer_unref (frame);
}

GST_END_TEST;

/* an area that keeps changing becomes the stream: a frame wanted for each
 * change, the first a keyframe, no draw over it; its end (FINAL) sends
 * the area lossless */
GST_START_TEST (test_engine_stream)
{
  GstBuffer *frame = desktop ();
  GstVideoRectangle act = { 64, 64, 192, 128 };
  const TilerEngineStats *st;
  gboolean started = FALSE;
  gint i;

  eng_setup (&t0, GST_SPICE_TILER_STREAMING_ALL);
  eng_frame (&t0, frame, 0, NULL);
  for (i = 1; i < 40; i++) {
    paint (frame, &act, 0, i);
    eng_frame (&t0, frame, i, &act);
    if (t0.stream_frames > 0 && !started) {
      started = TRUE;
      fail_unless_equals_int (t0.keyframes, 1);
    }
  }
  fail_unless (started);
  st = tiler_engine_stats (t0.e);
  fail_unless (st->stream_active);
  fail_unless (gst_spice_rect_contains (&st->stream_rect, &act));
  fail_unless_equals_uint64 (st->stream_starts, 1);
  fail_unless_equals_uint64 (st->stream_frames, t0.stream_frames);
  fail_unless_equals_int (t0.keyframes, 1);
  fail_unless_equals_uint64 (eng_diff (&t0, frame, NULL), 0);
  /* the shadow took the stream frame: the same picture again is no change,
   * no stream frame and no draw */
  fail_unless_equals_int (eng_frame (&t0, frame, i++, &act), 0);
  fail_if (t0.res.stream_frame);

  /* not allowed (spice-stream-control): the stream ends on the next
   * frame, and the area goes out as draws */
  {
    TilerEngineInput in;

    input_init (&t0, &in);
    in.stream_allowed = FALSE;
    paint (frame, &act, 0, i);
    eng_frame_full (&t0, frame, i, &act, 1, &in);
    fail_if (st->stream_active);
    fail_unless_equals_int (t0.stream_frames, st->stream_frames);
  }
  eng_idle (&t0, TILER_UPDATE_FINAL, NULL);
  fail_unless_equals_uint64 (eng_diff (&t0, frame, NULL), 0);
  eng_teardown (&t0);
  gst_buffer_unref (frame);
}

GST_END_TEST;

/* A stream whose area went still is refined while it stays open; when it
 * ends (stream-timeout) the refined cells are not sent again: spicesink
 * hides a stream under the draws over its area (STREAM_CLIP), so no frame
 * decoded late can paint over them. Before, the end re-sent the whole
 * area: at 80/10 the rig's video cell waited for the area twice. */
GST_START_TEST (test_engine_stream_end_keeps_refined)
{
  GstBuffer *frame = desktop ();
  GstVideoRectangle act = { 64, 64, 192, 128 };
  const TilerEngineStats *st;
  guint64 refined_bytes = 0, end_bytes = 0;
  gint i, n;

  eng_setup (&t0, GST_SPICE_TILER_STREAMING_ALL);
  t0.lossy_stream = TRUE;
  st = tiler_engine_stats (t0.e);
  eng_frame (&t0, frame, 0, NULL);
  for (i = 1; i < 40; i++) {
    paint (frame, &act, 0, i);
    eng_frame (&t0, frame, i, &act);
  }
  fail_unless (st->stream_active);
  fail_unless (eng_diff (&t0, frame, &act) > 0);      /* lossy frames */
  /* still: refinement deadlines until the stream times out */
  for (n = 0; n < 20 && st->stream_active; n++) {
    fail_unless (GST_CLOCK_TIME_IS_VALID (t0.res.next_refine));
    eng_idle (&t0, TILER_UPDATE_REFINE, NULL);
    if (st->stream_active)
      refined_bytes += t0.last_bytes;
    else
      end_bytes = t0.last_bytes;
  }
  fail_if (st->stream_active, "the stream did not end");
  /* refined while open: the client had the exact area before the end */
  fail_unless (refined_bytes > 0);
  fail_unless_equals_uint64 (eng_diff (&t0, frame, NULL), 0);
  fail_unless_equals_uint64 (end_bytes, 0);
  fail_unless_equals_uint64 (st->lossy_cells, 0);
  eng_teardown (&t0);
  gst_buffer_unref (frame);
}

GST_END_TEST;

/* Inside an active stream the classifier looks at one cell a tile and
 * frame (the first that is photographic), not at all sixteen: the heat
 * map needs no more. Photographic content over three by two tiles: 96
 * cells a frame before the stream, 6 once it runs; the stream goes on,
 * and after it ends the client has the exact picture. */
GST_START_TEST (test_engine_stream_classifies_a_cell_a_tile)
{
  GstBuffer *frame = desktop ();
  GstVideoRectangle act = { 64, 64, 192, 128 };
  const TilerEngineStats *st;
  guint64 before;
  gint i, streamed = 0;

  eng_setup (&t0, GST_SPICE_TILER_STREAMING_AUTO);
  st = tiler_engine_stats (t0.e);
  eng_frame (&t0, frame, 0, NULL);
  for (i = 1; i < 60; i++) {
    gboolean was_active = st->stream_active;

    before = st->classified_cells;
    paint (frame, &act, 0, i);
    eng_frame (&t0, frame, i, &act);
    if (!was_active) {
      /* what a frame before the stream looks at: every changed cell */
      if (!st->stream_active)
        fail_unless_equals_uint64 (st->classified_cells - before,
            (act.w / TILER_CELL) * (act.h / TILER_CELL));
      continue;
    }
    fail_unless (st->stream_active);
    fail_unless_equals_uint64 (st->classified_cells - before,
        (act.w / 64) * (act.h / 64));
    streamed++;
  }
  fail_unless (streamed >= 20, "streamed %d frames", streamed);
  fail_unless_equals_uint64 (st->stream_starts, 1);
  eng_idle (&t0, TILER_UPDATE_FINAL, NULL);
  fail_unless_equals_uint64 (eng_diff (&t0, frame, NULL), 0);
  eng_teardown (&t0);
  gst_buffer_unref (frame);
}

GST_END_TEST;

/* Moving content frame @t over @r: a smooth texture with repeats (a
 * panning landscape: every other pixel equals its left neighbour, the
 * rest are small steps), or with @blocks two-pixel blocks of random
 * colours (neither photographic nor compressible) */
static void
paint_moving (GstBuffer * frame, const GstVideoRectangle * r, gint t,
    gboolean blocks)
{
  GstMapInfo map;
  gint x, y;

  gst_buffer_map (frame, &map, GST_MAP_WRITE);
  for (y = r->y; y < r->y + r->h; y++) {
    guint32 *row = (guint32 *) (map.data + (gsize) y * W * 4);
    guint32 s = 0x9e3779b9u * (guint32) (y + 1) + (guint32) t;

    for (x = r->x; x < r->x + r->w; x++) {
      guint v = (guint) (((x + t * 4) / 2) * 3 + y * 2) % 400;
      guint g = v < 200 ? v : 399 - v;

      if (blocks)
        row[x] = (x - r->x) % 2 ? row[x - 1] : 0xff000000 | rnd (&s);
      else
        row[x] = 0xff000000 | ((40 + g / 2) << 16) | ((30 + g) << 8) | 60;
    }
  }
  gst_buffer_unmap (frame, &map);
}

/* Runs @frames frames of paint_moving() over @act on the desktop at @link_bps
 * (spice-draw-budget's rate, 0 = none announced); the text beside it is
 * exact after every update. Returns whether a stream covers @act. */
static gboolean
stream_by_cost (gboolean blocks, guint64 link_bps, gint frames)
{
  GstBuffer *frame = desktop ();
  GstVideoRectangle act = { 0, 64, 192, 128 }, text = { 192, 0, W - 192, H };
  const TilerEngineStats *st;
  TilerEngineInput in;
  gboolean streamed;
  gint i;

  eng_setup (&t0, GST_SPICE_TILER_STREAMING_AUTO);
  st = tiler_engine_stats (t0.e);
  eng_frame (&t0, frame, 0, NULL);
  for (i = 1; i <= frames; i++) {
    paint_moving (frame, &act, i, blocks);
    input_init (&t0, &in);
    in.link_bps = link_bps;
    eng_frame_full (&t0, frame, i, &act, 1, &in);
    fail_unless_equals_uint64 (eng_diff (&t0, frame, &text), 0);
    if (st->stream_active)
      fail_if (gst_spice_rect_intersect (&st->stream_rect, &text, NULL));
  }
  streamed = st->stream_active &&
      gst_spice_rect_contains (&st->stream_rect, &act);
  eng_teardown (&t0);
  gst_buffer_unref (frame);
  return streamed;
}

/* streaming follows what the area costs on the link: a smooth panning
 * texture is photographic (small steps) and streams at any rate; two-pixel
 * random blocks look synthetic but their lossless draws cost several
 * stream frames each: they stream on a 2 Mbit/s link, not when no link
 * was announced, nor on a LAN; static text beside either stays exact */
GST_START_TEST (test_engine_stream_by_cost)
{
  fail_unless (stream_by_cost (FALSE, 2000000, 40));
  fail_unless (stream_by_cost (TRUE, 2000000, 40));
  fail_if (stream_by_cost (TRUE, 0, 40));
  fail_if (stream_by_cost (TRUE, 1000000000, 40));
}

GST_END_TEST;

/* Smooth natural content (the panning texture with repeats) counts as
 * photographic for the heat map only: with streaming off (and on any
 * link) its draws stay LZ4, and the client has every frame exactly. As
 * JPEG and refined, the rig's LAN video cell took 4.5x the regions, more
 * bytes and CPU and a 7x keypress p50. Noise still goes lossy. */
GST_START_TEST (test_engine_smooth_stays_lossless)
{
  GstBuffer *frame = desktop ();
  GstVideoRectangle act = { 0, 64, 192, 128 };
  const TilerEngineStats *st;
  TilerEngineInput in;
  gint i;

  eng_setup (&t0, GST_SPICE_TILER_STREAMING_OFF);
  st = tiler_engine_stats (t0.e);
  eng_frame (&t0, frame, 0, NULL);
  for (i = 1; i <= 10; i++) {
    paint_moving (frame, &act, i, FALSE);
    input_init (&t0, &in);
    in.link_bps = 2000000;
    eng_frame_full (&t0, frame, i, &act, 1, &in);
    fail_unless_equals_uint64 (eng_diff (&t0, frame, NULL), 0);
  }
  fail_unless_equals_uint64 (st->regions_jpeg, 0);
  fail_unless (st->regions_lz4 > 0);
  /* a photograph over the same area: lossy */
  paint (frame, &act, 0, 11);
  eng_frame (&t0, frame, 11, &act);
  fail_unless (st->regions_jpeg > 0);
  eng_teardown (&t0);
  gst_buffer_unref (frame);
}

GST_END_TEST;

/* rows that moved up go out as a copy of what the client has */
GST_START_TEST (test_engine_scroll_copy)
{
  GstVideoRectangle win = { 20, 20, 240, 200 };
  guint32 *doc = g_new (guint32, (gsize) win.w * 600);
  GstBuffer *frame = desktop ();
  GstMapInfo map;

  eng_setup (&t0, GST_SPICE_TILER_STREAMING_OFF);
  document_rows (doc, win.w, 600, 0x5eed);
  gst_buffer_map (frame, &map, GST_MAP_WRITE);
  show_rows (map.data, W, doc, &win, 100);
  gst_buffer_unmap (frame, &map);
  eng_frame (&t0, frame, 0, NULL);
  gst_buffer_map (frame, &map, GST_MAP_WRITE);
  show_rows (map.data, W, doc, &win, 130);
  gst_buffer_unmap (frame, &map);
  fail_unless_equals_int (eng_frame (&t0, frame, 1, &win), 1);
  fail_unless_equals_uint64 (draws_decoder_stats (t0.dec)->regions_copy, 1);
  fail_unless_equals_uint64 (tiler_engine_stats (t0.e)->regions_copy, 1);
  fail_unless_equals_uint64 (tiler_engine_stats (t0.e)->copied_rows,
      win.h - 30);
  fail_unless_equals_uint64 (eng_diff (&t0, frame, NULL), 0);
  eng_teardown (&t0);
  gst_buffer_unref (frame);
  g_free (doc);
}

GST_END_TEST;

/* Inside an area that scrolls (copies made within the last second),
 * lossless draws do not make a stream by their cost: there they carry
 * what came into view, or what an update's budget left for the next, and
 * a stream would carry the same, blurred and to be refined after. The
 * rig's 150/2 text cell streamed a 576x64 band of its scrolling text,
 * p50 +120 (VP8) and +200 ms (MJPEG) over lossless. Here a band
 * of the same costly blocks that stream beside a static desktop
 * (test_engine_stream_by_cost) changes inside a scrolling document: no
 * stream, every update exact. */
GST_START_TEST (test_engine_no_stream_by_cost_in_scroll)
{
  GstVideoRectangle win = { 0, 16, W, H - 32 };
  GstVideoRectangle band = { 0, 64, W, 128 };
  const gint step = 4, frames = 40;
  guint32 *doc = g_new (guint32, (gsize) win.w * (win.h + step * frames));
  GstBuffer *frame = desktop ();
  const TilerEngineStats *st;
  TilerEngineInput in;
  GstMapInfo map;
  gint i;

  eng_setup (&t0, GST_SPICE_TILER_STREAMING_AUTO);
  st = tiler_engine_stats (t0.e);
  document_rows (doc, win.w, win.h + step * frames, 0x7e47);
  for (i = 0; i <= frames; i++) {
    gst_buffer_map (frame, &map, GST_MAP_WRITE);
    show_rows (map.data, W, doc, &win, i * step);
    gst_buffer_unmap (frame, &map);
    paint_moving (frame, &band, i, TRUE);
    input_init (&t0, &in);
    in.link_bps = 2000000;
    eng_frame_full (&t0, frame, i, i ? &win : NULL, i ? 1 : 0, &in);
    fail_unless_equals_uint64 (eng_diff (&t0, frame, NULL), 0);
    fail_if (st->stream_active, "frame %d: a stream in the scrolling area", i);
  }
  fail_unless (st->regions_copy >= (guint64) frames / 2, "%" G_GUINT64_FORMAT
      " copies in %d scroll steps", st->regions_copy, frames);
  eng_teardown (&t0);
  gst_buffer_unref (frame);
  g_free (doc);
}

GST_END_TEST;

/* the element makes the same updates as the engine alone, byte for byte */
GST_START_TEST (test_engine_same_as_element)
{
  GstBuffer *frame = desktop ();
  GstVideoRectangle dmg[12];
  GList *l, *mine;
  guint32 seed = 777;
  Tiler el;
  gint i;

  eng_setup (&t0, GST_SPICE_TILER_STREAMING_OFF);
  t0.keep = TRUE;
  tiler_setup (&el, W, H, "streaming=off");
  for (i = 0; i < 12; i++) {
    GstVideoRectangle *r = &dmg[i];

    r->w = 8 + rnd (&seed) % 150;
    r->h = 8 + rnd (&seed) % 110;
    r->x = rnd (&seed) % (W - r->w + 1);
    r->y = rnd (&seed) % (H - r->h + 1);
    if (i == 0)
      *r = (GstVideoRectangle) {
      0, 0, W, H};
    paint (frame, r, rnd (&seed), i % 3 == 1 ? i : -1);
    eng_frame (&t0, frame, i, r);
    tiler_push_sync (&el, frame, i, r, 1);
  }
  mine = t0.updates;
  for (i = 0, l = mine; l; l = l->next, i++) {
    GstBuffer *b = gst_harness_try_pull (el.h);
    GstMapInfo a, c;

    fail_unless (b != NULL, "the element sent %d updates, the engine %u", i,
        g_list_length (mine));
    gst_buffer_map (l->data, &a, GST_MAP_READ);
    gst_buffer_map (b, &c, GST_MAP_READ);
    fail_unless_equals_uint64 (a.size, c.size);
    fail_unless (memcmp (a.data, c.data, a.size) == 0, "update %d differs", i);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (l->data), GST_BUFFER_PTS (b));
    gst_buffer_unmap (b, &c);
    gst_buffer_unmap (l->data, &a);
    gst_buffer_unref (b);
  }
  fail_unless (gst_harness_try_pull (el.h) == NULL);
  fail_unless (i > 0);
  tiler_teardown (&el);
  eng_teardown (&t0);
  gst_buffer_unref (frame);
}

GST_END_TEST;

static Suite *
tiler_engine_suite (void)
{
  Suite *s = suite_create ("tiler-engine");
  TCase *tc = tcase_create ("engine");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_engine_frames_exact);
  tcase_add_test (tc, test_engine_kinds_without_frame);
  tcase_add_test (tc, test_engine_draw_busy_carries);
  tcase_add_test (tc, test_engine_refresh);
  tcase_add_test (tc, test_engine_refine_deadline);
  tcase_add_test (tc, test_engine_refine_while_busy);
  tcase_add_test (tc, test_engine_stream_converges_on_slow_link);
  tcase_add_test (tc, test_engine_budget_and_final);
  tcase_add_test (tc, test_engine_small_frame_goes_first);
  tcase_add_test (tc, test_engine_stream);
  tcase_add_test (tc, test_engine_stream_end_keeps_refined);
  tcase_add_test (tc, test_engine_stream_classifies_a_cell_a_tile);
  tcase_add_test (tc, test_engine_scroll_copy);
  tcase_add_test (tc, test_engine_no_stream_by_cost_in_scroll);
  tcase_add_test (tc, test_engine_stream_by_cost);
  tcase_add_test (tc, test_engine_smooth_stays_lossless);
  tcase_add_test (tc, test_engine_same_as_element);
  return s;
}

GST_CHECK_MAIN (tiler_engine);
