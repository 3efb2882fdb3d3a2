/* spicesink: link estimate, rate policy and write pacing (pure functions)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <string.h>

#include "sinkrate.h"

GST_DEBUG_CATEGORY (sink_rate_debug);
#define GST_CAT_DEFAULT sink_rate_debug

/* A sample limited by the path (not by us) measures the path: the estimate
 * follows it both ways (gain 1/2). An application-limited sample only shows
 * that the path carries at least that much: it can raise the estimate (by
 * at most 25 % per sample: burst rates overstate), never lower it. Queueing delay above SINK_QDELAY_HIGH_US means we offer
 * more than the path carries: the delivery rate then is the path's rate and
 * the estimate drops to it at once. A congested sample, path- or
 * application-limited, counts as at least the bottleneck rate of the
 * in-flight cap (sink_link_btl_update()), so that the estimate cannot
 * spiral down below what the kernel saw the path deliver in the last one
 * to two seconds. */
void
sink_link_estimate_update (SinkLinkEstimate * e, const SinkLinkSample * s)
{
  guint64 x = s->delivery_bps;
  guint64 btl = MAX (e->btl_bps, e->btl_prev_bps);

  e->queue_delay_us = s->rtt_us > s->min_rtt_us && s->min_rtt_us > 0 ?
      s->rtt_us - s->min_rtt_us : 0;
  e->congested = e->queue_delay_us > SINK_QDELAY_HIGH_US;
  if (x == 0 && s->app_limited)
    return;                     /* no information */
  e->samples++;
  /* while a queue builds the path is the bottleneck: a sample is then not
   * taken below the bottleneck rate the kernel measured lately (an
   * interval backlogged only at its ends understates the path; the
   * smoothed RTT stays up for a few round trips after a burst has drained,
   * and the delivery rate of the small flights sent meanwhile is theirs,
   * not the path's; a lower estimate would shrink what we offer and with
   * it the next samples). Without queueing delay a low goodput is a slow
   * receiver, whose bursts the kernel's delivery rate overstates: it
   * counts. */
  if (e->congested)
    x = MAX (x, btl);
  if (e->bps == 0)
    e->bps = x;
  else if (e->congested)
    e->bps = MIN (e->bps, x);
  else if (!s->app_limited)
    e->bps = (e->bps + x) / 2;
  else
    e->bps = MAX (e->bps, MIN (x, (guint64) (e->bps * SINK_RATE_RAISE_STEP)));
}

void
sink_link_sample_make (SinkLinkSample * s, guint64 delivery_Bps,
    guint64 acked_bytes, gint64 dt_us, gboolean backlogged, guint32 rtt_us,
    guint32 min_rtt_us)
{
  s->rtt_us = rtt_us;
  s->min_rtt_us = min_rtt_us;
  if (backlogged && dt_us > 0) {
    s->delivery_bps = (guint64) (acked_bytes * 8.0 * G_TIME_SPAN_SECOND /
        dt_us);
    s->app_limited = FALSE;
  } else {
    s->delivery_bps = delivery_Bps * 8;
    s->app_limited = TRUE;
  }
}

gboolean
sink_rate_decide (const SinkRateInput * in, SinkRateTarget * out)
{
  gdouble budget;
  guint64 target, ceiling, current, frame_cap;
  guint n = MAX (in->n_streams, 1);

  out->target_bps = 0;
  out->fps_n = 0;
  out->fps_d = 1;
  if (in->link_bps == 0)
    return FALSE;
  budget = SINK_RATE_SHARE * (gdouble) in->link_bps - (gdouble) in->draw_bps;
  budget /= n;
  if (budget < SINK_RATE_MIN_BPS)
    budget = SINK_RATE_MIN_BPS;
  target = (guint64) budget;
  if (in->initial_bps > 0) {
    ceiling = in->initial_bps;
    if (budget >= (gdouble) SINK_RATE_RAISE_FACTOR * in->initial_bps)
      ceiling = SINK_RATE_RAISE_CEILING * in->initial_bps;
    target = MIN (target, ceiling);
  }
  target = MAX (target, SINK_RATE_MIN_BPS);
  if (target >= SINK_RATE_FPS_FULL_BPS) {
    out->fps_n = 0;
  } else if (target >= SINK_RATE_FPS_15_BPS) {
    out->fps_n = 15;
  } else {
    out->fps_n = 10;
  }
  /* frames of at most SINK_FRAME_LINK_MS of the link at that frame rate:
   * a keypress draw waits for the rest of the frame on the wire */
  frame_cap = (guint64) sink_link_bytes (in->link_bps, SINK_FRAME_LINK_MS,
      G_MAXSIZE) * 8 * (out->fps_n ? out->fps_n : SINK_RATE_SOURCE_FPS);
  target = MAX (MIN (target, frame_cap), SINK_RATE_MIN_BPS);
  /* spice-rate carries bit/s in a guint */
  out->target_bps = MIN (target, G_MAXUINT);
  current = in->current_bps ? in->current_bps : in->initial_bps;
  if (in->since_change_us < SINK_RATE_MIN_INTERVAL_US)
    return FALSE;
  if (current == 0)
    return TRUE;                /* nothing known: any estimate is news */
  return ABS ((gdouble) target - (gdouble) current) >=
      SINK_RATE_HYSTERESIS * (gdouble) current;
}

gboolean
sink_pace_should_hold (guint32 rtt_us, guint32 min_rtt_us, guint32 unacked,
    gint64 held_for_us)
{
  if (unacked == 0 || min_rtt_us == 0 || held_for_us >= SINK_PACE_MAX_HOLD_US)
    return FALSE;
  return rtt_us > min_rtt_us && rtt_us - min_rtt_us > SINK_QDELAY_HIGH_US;
}

guint64
sink_link_btl_update (SinkLinkEstimate * e, guint64 delivery_bps, gint64 now_us)
{
  if (e->btl_window_us == 0 || now_us - e->btl_window_us >= SINK_BTL_WINDOW_US) {
    /* a new window: the last one is remembered, older ones forgotten */
    e->btl_prev_bps = e->btl_window_us && now_us - e->btl_window_us <
        2 * SINK_BTL_WINDOW_US ? e->btl_bps : 0;
    e->btl_bps = 0;
    e->btl_window_us = now_us;
  }
  e->btl_bps = MAX (e->btl_bps, delivery_bps);
  return MAX (e->btl_bps, e->btl_prev_bps);
}

guint64
sink_inflight_cap (guint64 btl_bps, guint32 min_rtt_us)
{
  if (btl_bps == 0 || min_rtt_us == 0)
    return 0;
  return btl_bps / 8 * ((guint64) min_rtt_us + SINK_INFLIGHT_SLACK_MS *
      1000) / G_TIME_SPAN_SECOND;
}

gboolean
sink_inflight_hold (guint64 inflight, guint64 cap, guint32 rtt_us,
    guint32 min_rtt_us)
{
  if (cap == 0 || inflight < cap || min_rtt_us == 0)
    return FALSE;
  return rtt_us > min_rtt_us && rtt_us - min_rtt_us > SINK_INFLIGHT_QDELAY_US;
}

gsize
sink_link_bytes (guint64 link_bps, guint ms, gsize max)
{
  guint64 b;

  if (link_bps == 0)
    return max;
  b = link_bps / 8 * ms / 1000;
  b = MAX (b, SINK_LINK_MIN_BYTES);
  return (gsize) MIN (b, (guint64) max);
}

guint
sink_draw_budget (guint64 link_bps)
{
  if (link_bps == 0)
    return 0;
  return (guint) sink_link_bytes (link_bps, SINK_UPDATE_LINK_MS,
      SINK_DRAW_BUDGET_MAX);
}

gboolean
sink_draw_budget_changed (guint64 last, guint64 now)
{
  if (last == 0 || now == 0)
    return last != now;
  return ABS ((gdouble) now - (gdouble) last) >=
      SINK_DRAW_BUDGET_HYSTERESIS * (gdouble) last;
}

guint
sink_stream_scale_decide (guint64 mean_frame_bytes, guint64 link_bps,
    guint scale)
{
  guint64 budget;

  scale = CLAMP (scale, 1, SINK_STREAM_SCALE_MAX);
  if (link_bps == 0 || mean_frame_bytes == 0)
    return scale;
  /* the same frame budget as sink_rate_decide()'s cap */
  budget = sink_link_bytes (link_bps, SINK_FRAME_LINK_MS, G_MAXSIZE);
  /* down when frames take more than 1.5x the budget; up when a picture of
   * twice the width and height (4x the bytes) would take less than half of
   * it: the gap between the two keeps a stream from flapping */
  if (2 * mean_frame_bytes > 3 * budget && scale < SINK_STREAM_SCALE_MAX)
    return scale * 2;
  if (scale > 1 && 8 * mean_frame_bytes < budget)
    return scale / 2;
  return scale;
}

gboolean
sink_leave_behind (gboolean progressing, gboolean peer_reading,
    gboolean others_waiting)
{
  return others_waiting || (!progressing && !peer_reading);
}

/* ------------------------------------------------------- orchestration */

void
sink_rate_debug_init (void)
{
  static gsize done = 0;

  if (g_once_init_enter (&done)) {
    GST_DEBUG_CATEGORY_INIT (sink_rate_debug, "spicesinkrate", 0,
        "spicesink rate control (link estimates, stream targets)");
    g_once_init_leave (&done, 1);
  }
}

struct _SinkRateStream
{
  guint index;
  guint64 frames_in, bytes_in, delta_frames_in, delta_bytes_in;
  guint64 last_frames_in, last_bytes_in;
  /* the counters when the frame size was last measured */
  guint64 mark_frames_in, mark_bytes_in, mark_delta_frames_in,
      mark_delta_bytes_in;
  guint64 in_bps;               /* measured input rate */
  guint64 mean_frame_bytes;     /* over the frames since the last
                                 * measurement (delta frames if any), once
                                 * they are SINK_SCALE_MIN_FRAMES; 0 = not
                                 * measured at this tick */
  guint64 initial_bps;          /* the stream's own rate before the first
                                 * change (stats; decisions wait for it) */
  guint64 target_bps;           /* in force, 0 = none (its own) */
  gint fps_n;                   /* in force, 0 = no cap */
  gint link_fps_n;              /* the link's part of it (the last decision) */
  guint scale;                  /* picture size divisor (0/1 = full) */
  gint64 last_scale_us;
  gint64 scale_up_since_us;     /* frames small enough for a bigger
                                 * picture since then, 0 = not */
  gint64 last_change_us;
  guint64 rate_changes;
};

struct _SinkRate
{
  GPtrArray *streams;           /* SinkRateStream* */
  gint64 last_tick_us;
  guint last_budget;            /* draw budget announced last */
  guint64 last_budget_bps;      /* ... and the link announced with it */
  guint64 link_bps, draw_bps;   /* of the last tick */
};

SinkRate *
sink_rate_new (void)
{
  SinkRate *r = g_new0 (SinkRate, 1);

  sink_rate_debug_init ();
  r->streams = g_ptr_array_new_with_free_func (g_free);
  return r;
}

void
sink_rate_free (SinkRate * rate)
{
  g_ptr_array_unref (rate->streams);
  g_free (rate);
}

SinkRateStream *
sink_rate_stream_add (SinkRate * rate, guint index)
{
  SinkRateStream *st = g_new0 (SinkRateStream, 1);

  st->index = index;
  g_ptr_array_add (rate->streams, st);
  return st;
}

void
sink_rate_stream_remove (SinkRate * rate, SinkRateStream * st)
{
  g_ptr_array_remove (rate->streams, st);
}

void
sink_rate_stream_frame (SinkRateStream * st, gsize size, gboolean key)
{
  st->frames_in++;
  st->bytes_in += size;
  if (!key) {
    st->delta_frames_in++;
    st->delta_bytes_in += size;
  }
}

/* The mean frame size of @st over the frames since the last measurement
 * (delta frames if there are any, else all), once they are
 * SINK_SCALE_MIN_FRAMES, which may take several ticks: a stream the link
 * holds to a few large frames a second must be measured too (measured per
 * tick, a 150/2 MJPEG stream admitted at 2 fps never was, so it was never
 * made smaller and stayed at 2 fps). The frames a tick within a second of
 * a size change sees may still be of the old size: they are not counted. */
static void
stream_measure_frames (SinkRateStream * st, gint64 now)
{
  guint64 nf = st->frames_in - st->mark_frames_in;
  guint64 nd = st->delta_frames_in - st->mark_delta_frames_in;
  gboolean settling = st->last_scale_us &&
      now - st->last_scale_us < G_TIME_SPAN_SECOND;

  st->mean_frame_bytes = 0;
  if (!settling) {
    if (nd >= SINK_SCALE_MIN_FRAMES)
      st->mean_frame_bytes = (st->delta_bytes_in -
          st->mark_delta_bytes_in) / nd;
    else if (nd == 0 && nf >= SINK_SCALE_MIN_FRAMES)
      st->mean_frame_bytes = (st->bytes_in - st->mark_bytes_in) / nf;
    else
      return;                   /* not enough frames yet: keep counting */
  }
  st->mark_frames_in = st->frames_in;
  st->mark_bytes_in = st->bytes_in;
  st->mark_delta_frames_in = st->delta_frames_in;
  st->mark_delta_bytes_in = st->delta_bytes_in;
}

/* whether @st's picture size should change (sink_stream_scale_decide());
 * sets st->scale. At most one change a second (frames of that second may
 * still be of the old size: stream_measure_frames() does not count them).
 * A smaller picture is taken at once, a bigger
 * one only after frames stayed small enough for SINK_SCALE_UP_HOLD_US: an
 * encoder's frames at one size do not tell its frames at four times the
 * pixels (noise makes any rate control overshoot). */
static gboolean
stream_rescale (SinkRateStream * st, guint64 link_bps, gint64 now)
{
  guint scale, cur = MAX (st->scale, 1);

  if (st->last_scale_us && now - st->last_scale_us < G_TIME_SPAN_SECOND)
    return FALSE;
  scale = sink_stream_scale_decide (st->mean_frame_bytes, link_bps, cur);
  if (scale >= cur)
    st->scale_up_since_us = 0;
  if (scale == cur)
    return FALSE;
  if (scale < cur) {
    if (!st->scale_up_since_us)
      st->scale_up_since_us = now;
    if (now - st->scale_up_since_us < SINK_SCALE_UP_HOLD_US)
      return FALSE;
    st->scale_up_since_us = 0;
  }
  st->scale = scale;
  st->last_scale_us = now;
  return TRUE;
}

static void
stream_decide (SinkRate * rate, SinkRateStream * st, guint64 target_bps,
    gint fps_n, gint64 now, gboolean restore, GArray * decisions)
{
  SinkRateDecision d;

  st->target_bps = restore ? 0 : target_bps;
  st->fps_n = restore ? 0 : fps_n;
  if (restore) {
    st->scale = 1;
    st->link_fps_n = 0;
  }
  st->last_change_us = now;
  st->rate_changes++;
  d.index = st->index;
  d.bitrate = (guint) MIN (st->target_bps, G_MAXUINT);
  d.fps_n = st->fps_n;
  d.scale = MAX (st->scale, 1);
  GST_INFO ("stream_%u: link %" G_GUINT64_FORMAT " bit/s, draws %"
      G_GUINT64_FORMAT " bit/s -> stream target %" G_GUINT64_FORMAT
      " bit/s, %d fps%s, picture 1/%u (measured %" G_GUINT64_FORMAT
      " bit/s, ceiling %" G_GUINT64_FORMAT ")", st->index, rate->link_bps,
      rate->draw_bps, st->target_bps, st->fps_n, st->fps_n ? "" : " (no cap)",
      d.scale, st->in_bps, st->initial_bps);
  g_array_append_val (decisions, d);
}

gboolean
sink_rate_due (SinkRate * rate, gint64 now, gdouble * dt)
{
  if (rate->last_tick_us && now - rate->last_tick_us <
      SINK_RATE_MIN_INTERVAL_US - 50 * G_TIME_SPAN_MILLISECOND)
    return FALSE;
  *dt = rate->last_tick_us ? (now - rate->last_tick_us) /
      (gdouble) G_TIME_SPAN_SECOND : 0;
  rate->last_tick_us = now;
  return TRUE;
}

/* the lower of two frame-rate caps, 0 = none */
static gint
sink_rate_fps_min (gint a, gint b)
{
  if (a <= 0)
    return MAX (b, 0);
  return b > 0 ? MIN (a, b) : a;
}

void
sink_rate_tick (SinkRate * rate, const SinkRateClients * clients,
    SinkRateStream * const *live, guint n_live, gdouble dt, gint64 now,
    GArray * decisions)
{
  guint i, j;
  gboolean decided;
  gint fps;

  rate->link_bps = clients->link_bps;
  rate->draw_bps = clients->draw_bps;

  for (i = 0; i < rate->streams->len; i++) {
    SinkRateStream *st = g_ptr_array_index (rate->streams, i);

    if (dt > 0)
      st->in_bps = (guint64) ((st->bytes_in - st->last_bytes_in) * 8 / dt);
    st->last_bytes_in = st->bytes_in;
    st->last_frames_in = st->frames_in;
    stream_measure_frames (st, now);
  }
  for (j = 0; j < n_live; j++) {
    SinkRateStream *st = live[j];
    SinkRateInput in;
    SinkRateTarget out;

    if (st->frames_in == 0)
      continue;
    /* decisions start once the stream's own rate is measured */
    if (st->target_bps == 0)
      st->initial_bps = MAX (st->initial_bps, st->in_bps);
    if (st->initial_bps == 0)
      continue;
    if (clients->clients == 0) {
      /* nobody watches: back to the encoder's own setting */
      if (st->target_bps)
        stream_decide (rate, st, 0, 0, now, TRUE, decisions);
      continue;
    }
    in.link_bps = clients->link_bps;
    in.draw_bps = clients->draw_bps;
    in.n_streams = n_live;
    /* no ceiling from here: the element that created the encoder holds
     * it (spicestreamenc never goes above its description). A ceiling of
     * the rate measured before the first target locked a stream that
     * started small (a LAN MJPEG stream measured at 2.5 Mbit/s in its
     * first interval was held there, at quality 10) */
    in.initial_bps = 0;
    in.current_bps = st->target_bps;
    in.since_change_us = st->last_change_us ? now - st->last_change_us :
        G_MAXINT64;
    decided = sink_rate_decide (&in, &out);
    if (decided)
      st->link_fps_n = out.fps_n;
    fps = sink_rate_fps_min (st->link_fps_n, clients->fps_cap);
    if (decided || stream_rescale (st, clients->link_bps, now))
      stream_decide (rate, st, out.target_bps, fps, now, FALSE, decisions);
    else if (fps != st->fps_n)
      /* only the host's cap changed: the bitrate in force stays */
      stream_decide (rate, st, st->target_bps, fps, now, FALSE, decisions);
  }
}

gboolean
sink_rate_draw_budget_due (SinkRate * rate, guint64 link_bps, guint * budget)
{
  guint b = sink_draw_budget (link_bps);

  /* the event also carries the link, which the tiler paces its updates
   * to (tiler_draw_pace_us()): a new estimate is news even while the
   * budget stays at its floor (below ~3.3 Mbit/s) or its cap */
  if (!sink_draw_budget_changed (rate->last_budget, b) &&
      !sink_draw_budget_changed (rate->last_budget_bps, link_bps))
    return FALSE;
  rate->last_budget = b;
  rate->last_budget_bps = link_bps;
  *budget = b;
  GST_DEBUG ("draw budget %u bytes per update (link %" G_GUINT64_FORMAT
      " bit/s)", b, link_bps);
  return TRUE;
}

void
sink_rate_stats (SinkRate * rate, GValue * array)
{
  guint i;

  for (i = 0; i < rate->streams->len; i++) {
    SinkRateStream *st = g_ptr_array_index (rate->streams, i);
    GValue v = G_VALUE_INIT;
    gchar *pad = g_strdup_printf ("stream_%u", st->index);
    GstStructure *t = gst_structure_new ("stream",
        "pad", G_TYPE_STRING, pad,
        "measured-bps", G_TYPE_UINT64, st->in_bps,
        "initial-bps", G_TYPE_UINT64, st->initial_bps,
        "target-bps", G_TYPE_UINT64, st->target_bps ? st->target_bps :
        st->initial_bps,
        "target-fps", G_TYPE_INT, st->fps_n,
        "scale", G_TYPE_UINT, MAX (st->scale, 1),
        "mean-frame-bytes", G_TYPE_UINT64, st->mean_frame_bytes,
        "event-bitrate", G_TYPE_UINT, (guint) MIN (st->target_bps, G_MAXUINT),
        "rate-changes", G_TYPE_UINT64, st->rate_changes, NULL);

    g_free (pad);
    g_value_init (&v, GST_TYPE_STRUCTURE);
    gst_value_set_structure (&v, t);
    gst_structure_free (t);
    gst_value_array_append_and_take_value (array, &v);
  }
}
