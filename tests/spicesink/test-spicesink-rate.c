/* tests/spicesink: the link estimate, rate policy and pacing decision as
 * pure functions (plugins/spicesink/sinkrate.h): inputs -> decisions
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <string.h>
#include <gst/check/gstcheck.h>
#include "sinkrate.h"
#include "sinkpressure.h"

#define MS G_TIME_SPAN_MILLISECOND

static SinkLinkSample
sample (guint64 bps, gboolean app_limited, guint32 rtt_ms, guint32 min_ms)
{
  SinkLinkSample s = { bps, app_limited, rtt_ms * 1000, min_ms * 1000 };
  return s;
}

GST_START_TEST (test_estimate)
{
  SinkLinkEstimate e = { 0 };
  SinkLinkSample s;

  /* no sample: unknown */
  s = sample (0, FALSE, 10, 10);
  sink_link_estimate_update (&e, &s);
  fail_unless_equals_uint64 (e.bps, 0);
  /* a zero app-limited sample says nothing (the zero above was a
   * path-limited sample: counted, estimate still unknown) */
  s = sample (0, TRUE, 10, 10);
  sink_link_estimate_update (&e, &s);
  fail_unless_equals_int (e.samples, 1);
  /* first sample taken as is */
  s = sample (10000000, FALSE, 12, 10);
  sink_link_estimate_update (&e, &s);
  fail_unless_equals_uint64 (e.bps, 10000000);
  fail_unless_equals_int (e.queue_delay_us, 2000);
  fail_if (e.congested);
  /* path-limited samples: followed both ways with gain 1/2 */
  s = sample (6000000, FALSE, 12, 10);
  sink_link_estimate_update (&e, &s);
  fail_unless_equals_uint64 (e.bps, 8000000);
  s = sample (12000000, FALSE, 12, 10);
  sink_link_estimate_update (&e, &s);
  fail_unless_equals_uint64 (e.bps, 10000000);
  /* application-limited: a lower sample says nothing, a higher one raises */
  s = sample (1000000, TRUE, 10, 10);
  sink_link_estimate_update (&e, &s);
  fail_unless_equals_uint64 (e.bps, 10000000);
  s = sample (20000000, TRUE, 10, 10);
  sink_link_estimate_update (&e, &s);
  fail_unless_equals_uint64 (e.bps, 12500000);
  s = sample (20000000, TRUE, 10, 10);
  sink_link_estimate_update (&e, &s);
  fail_unless_equals_uint64 (e.bps, 15625000);
  /* queueing delay 40 ms > 25: drop to the delivery rate at once, even if
   * the kernel called the sample app-limited */
  s = sample (3000000, TRUE, 120, 80);
  sink_link_estimate_update (&e, &s);
  fail_unless (e.congested);
  fail_unless_equals_int (e.queue_delay_us, 40000);
  fail_unless_equals_uint64 (e.bps, 3000000);
  /* 20 ms of queueing is not congestion */
  s = sample (3000000, TRUE, 100, 80);
  sink_link_estimate_update (&e, &s);
  fail_if (e.congested);
  /* a path-limited zero (receiver stalled) halves it */
  s = sample (0, FALSE, 10, 10);
  sink_link_estimate_update (&e, &s);
  fail_unless_equals_uint64 (e.bps, 1500000);
  /* app-limited hints raise by at most 25 % per sample */
  s = sample (100000000, TRUE, 10, 10);
  sink_link_estimate_update (&e, &s);
  fail_unless_equals_uint64 (e.bps, 1875000);
  /* rtt below min (min not known yet) is no delay */
  s = sample (3000000, FALSE, 5, 0);
  sink_link_estimate_update (&e, &s);
  fail_unless_equals_int (e.queue_delay_us, 0);
}

GST_END_TEST;

GST_START_TEST (test_sample)
{
  SinkLinkSample s;

  /* backlogged: goodput 250 000 bytes in 500 ms = 4 Mbit/s, path-limited */
  sink_link_sample_make (&s, 100000000, 250000, 500 * MS, TRUE, 900, 800);
  fail_unless_equals_uint64 (s.delivery_bps, 4000000);
  fail_if (s.app_limited);
  fail_unless_equals_int (s.rtt_us, 900);
  /* backlogged but nothing acked: 0, path-limited (receiver stalled) */
  sink_link_sample_make (&s, 100000000, 0, 250 * MS, TRUE, 900, 800);
  fail_unless_equals_uint64 (s.delivery_bps, 0);
  fail_if (s.app_limited);
  /* not backlogged: the kernel's delivery rate as a hint */
  sink_link_sample_make (&s, 1000000, 250000, 500 * MS, FALSE, 900, 800);
  fail_unless_equals_uint64 (s.delivery_bps, 8000000);
  fail_unless (s.app_limited);
}

GST_END_TEST;

static SinkRateInput
input (guint64 link, guint64 draws, guint n, guint64 initial, guint64 cur,
    gint64 since)
{
  SinkRateInput in = { link, draws, n, initial, cur, since };
  return in;
}

GST_START_TEST (test_decide)
{
  SinkRateInput in;
  SinkRateTarget t;

  /* unknown link: nothing */
  in = input (0, 0, 1, 2000000, 0, G_MAXINT64);
  fail_if (sink_rate_decide (&in, &t));
  /* fast link: 70 % of 100 Mbit/s >> initial 2 Mbit/s but < 4x rule?
   * budget 70 Mbit/s >= 4 x 2: ceiling 2 x initial = 4 Mbit/s */
  in = input (100000000, 0, 1, 2000000, 0, G_MAXINT64);
  fail_unless (sink_rate_decide (&in, &t));
  fail_unless_equals_uint64 (t.target_bps, 4000000);
  fail_unless_equals_int (t.fps_n, 0);
  /* budget 7 Mbit/s < 4 x 2: stays at the initial 2 Mbit/s: no change */
  in = input (10000000, 0, 1, 2000000, 0, G_MAXINT64);
  fail_if (sink_rate_decide (&in, &t));
  fail_unless_equals_uint64 (t.target_bps, 2000000);
  /* 2 Mbit/s link, 0.2 Mbit/s of draws: 0.7*2 - 0.2 = 1.2 Mbit/s */
  in = input (2000000, 200000, 1, 2000000, 0, G_MAXINT64);
  fail_unless (sink_rate_decide (&in, &t));
  fail_unless_equals_uint64 (t.target_bps, 1200000);
  fail_unless_equals_int (t.fps_n, 0);
  /* two streams share it */
  in = input (2000000, 200000, 2, 2000000, 0, G_MAXINT64);
  fail_unless (sink_rate_decide (&in, &t));
  fail_unless_equals_uint64 (t.target_bps, 600000);
  fail_unless_equals_int (t.fps_n, 15);
  /* slow link: floor 100 kbit/s, 10 fps */
  in = input (200000, 150000, 1, 2000000, 0, G_MAXINT64);
  fail_unless (sink_rate_decide (&in, &t));
  fail_unless_equals_uint64 (t.target_bps, SINK_RATE_MIN_BPS);
  fail_unless_equals_int (t.fps_n, 10);
  /* hysteresis: 1.2 -> 1.1 Mbit/s (8 %) is no change, 1.2 -> 0.98 is */
  in = input (1857143, 200000, 1, 2000000, 1200000, G_MAXINT64);
  fail_if (sink_rate_decide (&in, &t));
  in = input (1685714, 200000, 1, 2000000, 1200000, G_MAXINT64);
  fail_unless (sink_rate_decide (&in, &t));
  /* interval: not within 500 ms of the last change */
  in = input (500000, 0, 1, 2000000, 1200000, 400 * MS);
  fail_if (sink_rate_decide (&in, &t));
  in = input (500000, 0, 1, 2000000, 1200000, 500 * MS);
  fail_unless (sink_rate_decide (&in, &t));
  fail_unless_equals_uint64 (t.target_bps, 350000);
  /* back up when the slow client is gone: capped at the initial rate ... */
  in = input (5000000, 100000, 1, 2000000, 350000, G_MAXINT64);
  fail_unless (sink_rate_decide (&in, &t));
  fail_unless_equals_uint64 (t.target_bps, 2000000);
  /* ... unless the link clearly allows more (budget >= 4x): 2x initial */
  in = input (50000000, 100000, 1, 2000000, 350000, G_MAXINT64);
  fail_unless (sink_rate_decide (&in, &t));
  fail_unless_equals_uint64 (t.target_bps, 4000000);
  /* unknown encoder (no initial): the budget, applied at once, but frames
   * of at most 20 ms of the link: 25000 bytes x 30 fps = 6 Mbit/s */
  in = input (10000000, 0, 1, 0, 0, G_MAXINT64);
  fail_unless (sink_rate_decide (&in, &t));
  fail_unless_equals_uint64 (t.target_bps, 6000000);
  /* 2 Mbit/s, no draws: the budget 1.4 Mbit/s would make 5833-byte frames
   * at 30 fps; 20 ms is 5000 bytes: 1.2 Mbit/s */
  in = input (2000000, 0, 1, 2000000, 0, G_MAXINT64);
  fail_unless (sink_rate_decide (&in, &t));
  fail_unless_equals_uint64 (t.target_bps, 1200000);
  fail_unless_equals_int (t.fps_n, 0);
  /* 500 kbit/s: 15 fps, frames at least 4 KiB (SINK_LINK_MIN_BYTES) */
  in = input (500000, 0, 1, 2000000, 0, G_MAXINT64);
  fail_unless (sink_rate_decide (&in, &t));
  fail_unless_equals_uint64 (t.target_bps, 350000);
  in = input (800000, 0, 1, 2000000, 0, G_MAXINT64);
  fail_unless (sink_rate_decide (&in, &t));
  fail_unless_equals_int (t.fps_n, 15);
  fail_unless_equals_uint64 (t.target_bps, 4096 * 8 * 15);
}

GST_END_TEST;

GST_START_TEST (test_pace)
{
  /* 40 ms of queueing with data in flight: hold */
  fail_unless (sink_pace_should_hold (120000, 80000, 10, 0));
  fail_unless (sink_pace_should_hold (120000, 80000, 10, 100 * MS));
  /* ... but never longer than the bound */
  fail_if (sink_pace_should_hold (120000, 80000, 10, 200 * MS));
  /* nothing in flight: the queue is empty whatever srtt says */
  fail_if (sink_pace_should_hold (120000, 80000, 0, 0));
  /* 20 ms: fine */
  fail_if (sink_pace_should_hold (100000, 80000, 10, 0));
  /* no minimum known */
  fail_if (sink_pace_should_hold (100000, 0, 10, 0));
}

GST_END_TEST;

/* @n frames of @size bytes (the first a key frame when @key), then the tick
 * 500 ms later for @c */
static void
frames_then_tick (SinkRate * r, SinkRateStream * st, guint n, gsize size,
    gboolean key, const SinkRateClients * c, gint64 * now, GArray * d)
{
  gdouble dt;
  guint f;

  for (f = 0; f < n; f++)
    sink_rate_stream_frame (st, size, key && f == 0);
  *now += 500 * G_TIME_SPAN_MILLISECOND;
  fail_if (sink_rate_due (r, *now - 100 * G_TIME_SPAN_MILLISECOND, &dt));
  fail_unless (sink_rate_due (r, *now, &dt));
  sink_rate_tick (r, c, &st, 1, dt, *now, d);
}

/* 12 frames (24 fps), then the tick */
static void
half_second (SinkRate * r, SinkRateStream * st, gsize size, gboolean key,
    const SinkRateClients * c, gint64 * now, GArray * d)
{
  frames_then_tick (r, st, 12, size, key, c, now, d);
}

#define DECISION(d) (&g_array_index (d, SinkRateDecision, 0))

/* The orchestration (SinkRate): decisions start once the stream's own rate
 * is measured; a fast link gives what the link takes, with no ceiling from
 * the sink (the encoder's owner, spicestreamenc, never goes above its
 * description: a ceiling of the first measured rate held LAN streams that
 * started small at that rate); a slow link gives a lower target; nobody
 * watching gives bitrate 0 (the encoder's owner goes back to its own
 * setting); frames of a paused stream are not decided on. */
GST_START_TEST (test_orchestration)
{
  SinkRate *r = sink_rate_new ();
  SinkRateClients fast = { 1, 100000000, 0 }, slow = { 1, 800000, 0 },
      none = { 0, 0, 0 };
  GArray *d = g_array_new (FALSE, FALSE, sizeof (SinkRateDecision));
  SinkRateStream *st = sink_rate_stream_add (r, 0);
  gint64 now = G_TIME_SPAN_SECOND;
  gdouble dt;
  guint i;

  fail_unless (sink_rate_due (r, now, &dt));
  fail_unless (dt == 0);
  sink_rate_tick (r, &fast, &st, 1, dt, now, d);
  fail_unless_equals_int (d->len, 0);   /* nothing measured yet */
  /* 2 Mbit/s in: 25 frames of 10 kB per second, for 2 s */
  for (i = 0; i < 4; i++)
    half_second (r, st, 10000, TRUE, &fast, &now, d);
  /* a fast link (100 Mbit/s): once, what the link takes, far above the
   * stream's own ~1.9 Mbit/s */
  fail_unless_equals_int (d->len, 1);
  fail_unless (DECISION (d)->bitrate > 20000000, "%u",
      DECISION (d)->bitrate);
  g_array_set_size (d, 0);
  /* a slow link: a lower target */
  half_second (r, st, 10000, FALSE, &slow, &now, d);
  fail_unless_equals_int (d->len, 1);
  fail_unless_equals_int (DECISION (d)->index, 0);
  fail_unless (DECISION (d)->bitrate < 800000);
  fail_unless (DECISION (d)->bitrate > 0);
  /* nobody watches: bitrate 0, full size */
  g_array_set_size (d, 0);
  half_second (r, st, 5000, FALSE, &none, &now, d);
  fail_unless_equals_int (d->len, 1);
  fail_unless_equals_int (DECISION (d)->bitrate, 0);
  fail_unless_equals_int (DECISION (d)->scale, 1);
  /* a stream that is not live is left alone */
  g_array_set_size (d, 0);
  now += 500 * G_TIME_SPAN_MILLISECOND;
  fail_unless (sink_rate_due (r, now, &dt));
  sink_rate_tick (r, &slow, NULL, 0, dt, now, d);
  fail_unless_equals_int (d->len, 0);
  g_array_unref (d);
  sink_rate_free (r);
}

GST_END_TEST;

/* A stream the link holds to a few large frames a second is measured over
 * several ticks: one 35 kB key frame (MJPEG) per tick on a 700 kbit/s link
 * (a 20 ms frame budget of 1750 bytes) is made smaller once
 * SINK_SCALE_MIN_FRAMES frames are in, not before; the frames a tick
 * within a second of that change sees are not counted (500 ms after it),
 * the next three make it smaller again. (Measured per tick, such a stream
 * was never measured, so never made smaller: the 150/2 heavy MJPEG cells
 * stuck at 2 fps, key presses 0.5-2 s.) */
GST_START_TEST (test_scale_few_frames)
{
  SinkRate *r = sink_rate_new ();
  SinkRateClients slow = { 1, 700000, 0 };
  GArray *d = g_array_new (FALSE, FALSE, sizeof (SinkRateDecision));
  SinkRateStream *st = sink_rate_stream_add (r, 0);
  gint64 now = G_TIME_SPAN_SECOND;
  guint i, scale = 1, ticks_at_2 = 0, ticks_at_4 = 0;
  gdouble dt;

  fail_unless (sink_rate_due (r, now, &dt));
  sink_rate_tick (r, &slow, &st, 1, dt, now, d);
  for (i = 1; i <= 10; i++) {
    g_array_set_size (d, 0);
    frames_then_tick (r, st, 1, 35000, TRUE, &slow, &now, d);
    if (d->len)
      scale = DECISION (d)->scale;
    if (scale == 2 && !ticks_at_2)
      ticks_at_2 = i;
    if (scale == 4 && !ticks_at_4)
      ticks_at_4 = i;
  }
  /* the third frame measures; one tick settles, three measure again */
  fail_unless_equals_int (ticks_at_2, SINK_SCALE_MIN_FRAMES);
  fail_unless_equals_int (ticks_at_4, SINK_SCALE_MIN_FRAMES + 1 +
      SINK_SCALE_MIN_FRAMES);
  g_array_unref (d);
  sink_rate_free (r);
}

GST_END_TEST;

/* The draw budget's last announced value belongs to SinkRate: announced
 * when it changes by 15 % or more. */
GST_START_TEST (test_draw_budget_due)
{
  SinkRate *r = sink_rate_new ();
  guint b = 0;

  fail_if (sink_rate_draw_budget_due (r, 0, &b));
  fail_unless (sink_rate_draw_budget_due (r, 10000000, &b));
  fail_unless_equals_int (b, sink_draw_budget (10000000));
  fail_if (sink_rate_draw_budget_due (r, 10500000, &b));
  fail_unless (sink_rate_draw_budget_due (r, 5000000, &b));
  fail_unless_equals_int (b, sink_draw_budget (5000000));
  sink_rate_free (r);
}

GST_END_TEST;

/* The spice-draw-budget event carries the link too, and the tiler paces
 * its updates to it (tiler_draw_pace_us()). Below ~3.3 Mbit/s every budget
 * is the SINK_LINK_MIN_BYTES floor: a new link estimate is announced all
 * the same, else the tiler keeps pacing to the first one, taken while the
 * first picture queued (app-limited: 0.6-0.9 Mbit/s of 2 in the rig's
 * 150/2 cells). */
GST_START_TEST (test_draw_budget_due_link)
{
  SinkRate *r = sink_rate_new ();
  guint b = 0;

  fail_unless (sink_rate_draw_budget_due (r, 600000, &b));
  fail_unless_equals_int (b, SINK_LINK_MIN_BYTES);
  /* the link is three times faster, the budget still at its floor */
  fail_unless_equals_int (sink_draw_budget (2000000), SINK_LINK_MIN_BYTES);
  fail_unless (sink_rate_draw_budget_due (r, 2000000, &b));
  fail_unless_equals_int (b, SINK_LINK_MIN_BYTES);
  /* within the hysteresis either way: not announced */
  fail_if (sink_rate_draw_budget_due (r, 2200000, &b));
  fail_if (sink_rate_draw_budget_due (r, 1800000, &b));
  /* a drop is */
  fail_unless (sink_rate_draw_budget_due (r, 1200000, &b));
  /* at the budget's cap the link is still news */
  fail_unless (sink_rate_draw_budget_due (r, 1000000000, &b));
  fail_unless_equals_int (b, SINK_DRAW_BUDGET_MAX);
  fail_unless (sink_rate_draw_budget_due (r, 3000000000ULL, &b));
  fail_unless_equals_int (b, SINK_DRAW_BUDGET_MAX);
  /* no client: no budget, announced once */
  fail_unless (sink_rate_draw_budget_due (r, 0, &b));
  fail_unless_equals_int (b, 0);
  fail_if (sink_rate_draw_budget_due (r, 0, &b));
  sink_rate_free (r);
}

GST_END_TEST;

/* Queues sized in link time: a few ms of the estimate, within
 * [SINK_LINK_MIN_BYTES, max]; the property (max) while unknown. */
GST_START_TEST (test_link_bytes)
{
  /* unknown link: the property */
  fail_unless_equals_uint64 (sink_link_bytes (0, 10, 262144), 262144);
  /* 10 Mbit/s: 10 ms = 12500 bytes */
  fail_unless_equals_uint64 (sink_link_bytes (10000000, 10, 262144), 12500);
  /* 2 Mbit/s, 5 ms = 1250 bytes: the floor */
  fail_unless_equals_uint64 (sink_link_bytes (2000000, 5, 262144),
      SINK_LINK_MIN_BYTES);
  /* 10 Gbit/s: the property caps it */
  fail_unless_equals_uint64 (sink_link_bytes (10000000000ULL, 10, 65536),
      65536);
  /* a property below the floor wins */
  fail_unless_equals_uint64 (sink_link_bytes (10000000, 10, 1024), 1024);
}

GST_END_TEST;

GST_START_TEST (test_draw_budget)
{
  guint b10 = sink_draw_budget (10000000);

  fail_unless_equals_int (sink_draw_budget (0), 0);
  fail_unless_equals_int (b10, 10000000 / 8 * SINK_UPDATE_LINK_MS / 1000);
  fail_unless_equals_int (sink_draw_budget (2000000),
      MAX (2000000 / 8 * SINK_UPDATE_LINK_MS / 1000, SINK_LINK_MIN_BYTES));
  fail_unless_equals_int (sink_draw_budget (100000000000ULL),
      SINK_DRAW_BUDGET_MAX);
  /* hysteresis: small changes are not announced, 0 <-> known always */
  fail_unless (sink_draw_budget_changed (0, b10));
  fail_unless (sink_draw_budget_changed (b10, 0));
  fail_if (sink_draw_budget_changed (0, 0));
  fail_if (sink_draw_budget_changed (b10, b10 * 105 / 100));
  fail_unless (sink_draw_budget_changed (b10, b10 * 2));
  fail_unless (sink_draw_budget_changed (b10, b10 / 2));
}

GST_END_TEST;

/* the in-flight cap: windowed max of delivery-rate samples times
 * (min RTT + slack) */
GST_START_TEST (test_inflight_cap)
{
  SinkLinkEstimate e;
  gint64 t = 1000000;

  memset (&e, 0, sizeof (e));
  fail_unless_equals_uint64 (sink_inflight_cap (0, 80000), 0);
  fail_unless_equals_uint64 (sink_inflight_cap (10000000, 0), 0);
  /* 10 Mbit/s, 80 ms: BDP 100000 bytes + 10 ms (12500) */
  fail_unless_equals_uint64 (sink_inflight_cap (10000000, 80000),
      (guint64) 10000000 / 8 * (80000 + SINK_INFLIGHT_SLACK_MS * 1000) /
      1000000);
  /* the cap holds only while a queue builds */
  fail_if (sink_inflight_hold (200000, 0, 200000, 80000));
  fail_if (sink_inflight_hold (50000, 100000, 200000, 80000));
  fail_if (sink_inflight_hold (150000, 100000, 85000, 80000));
  fail_unless (sink_inflight_hold (150000, 100000, 95000, 80000));
  fail_unless (sink_inflight_hold (100000, 100000, 95000, 80000));
  /* the max over the window */
  fail_unless_equals_uint64 (sink_link_btl_update (&e, 8000000, t), 8000000);
  fail_unless_equals_uint64 (sink_link_btl_update (&e, 10000000, t + 1000),
      10000000);
  fail_unless_equals_uint64 (sink_link_btl_update (&e, 5000000, t + 2000),
      10000000);
  /* next window: the previous one still counts */
  fail_unless_equals_uint64 (sink_link_btl_update (&e, 4000000,
          t + SINK_BTL_WINDOW_US), 10000000);
  /* two windows on: forgotten */
  fail_unless_equals_uint64 (sink_link_btl_update (&e, 4000000,
          t + 2 * SINK_BTL_WINDOW_US), 4000000);
  /* after a long silence nothing old remains */
  fail_unless_equals_uint64 (sink_link_btl_update (&e, 1000000,
          t + 10 * SINK_BTL_WINDOW_US), 1000000);
}

GST_END_TEST;

/* a path-limited sample is not taken below the recent bottleneck rate */
GST_START_TEST (test_estimate_btl_floor)
{
  SinkLinkEstimate e;
  SinkLinkSample smp;

  memset (&e, 0, sizeof (e));
  e.bps = 2000000;
  sink_link_btl_update (&e, 1900000, 1000000);
  /* congested, goodput 200 kbit/s: the estimate drops to 1.9 Mbit/s only */
  sink_link_sample_make (&smp, 0, 6250, 250000, TRUE, 220000, 150000);
  sink_link_estimate_update (&e, &smp);
  fail_unless (e.congested);
  fail_unless_equals_uint64 (e.bps, 1900000);
  /* congested, and the kernel's last delivery rate (120 kbit/s: a small
   * flight sent while the smoothed RTT was still up after a burst) is
   * app-limited: the same floor (the rig at 80/10 logged such a hint of
   * 0.14 Mbit/s while the estimate stood at 9.7) */
  memset (&e, 0, sizeof (e));
  e.bps = 2000000;
  sink_link_btl_update (&e, 1900000, 1000000);
  sink_link_sample_make (&smp, 15000, 0, 250000, FALSE, 220000, 150000);
  fail_unless (smp.app_limited);
  sink_link_estimate_update (&e, &smp);
  fail_unless (e.congested);
  fail_unless_equals_uint64 (e.bps, 1900000);
  /* a slow receiver (no queueing delay): the goodput counts as it is */
  memset (&e, 0, sizeof (e));
  e.bps = 2000000;
  sink_link_btl_update (&e, 1900000, 1000000);
  sink_link_sample_make (&smp, 0, 6250, 250000, TRUE, 152000, 150000);
  sink_link_estimate_update (&e, &smp);
  fail_if (e.congested);
  fail_unless_equals_uint64 (e.bps, (2000000 + 200000) / 2);
  sink_link_sample_make (&smp, 0, 6250, 250000, TRUE, 220000, 150000);
  /* without a bottleneck rate the goodput counts as it is */
  memset (&e, 0, sizeof (e));
  e.bps = 2000000;
  sink_link_estimate_update (&e, &smp);
  fail_unless_equals_uint64 (e.bps, 200000);
}

GST_END_TEST;

/* behind/resync is for a client that stopped reading (no write progress
 * and a closed window) or holds up faster ones; a lone slow client that
 * drains, or whose writes wait on TCP with its window open,
 * back-pressures */
GST_START_TEST (test_leave_behind)
{
  gint progressing, reading;

  for (progressing = 0; progressing <= 1; progressing++)
    for (reading = 0; reading <= 1; reading++) {
      fail_unless (sink_leave_behind (progressing, reading, TRUE));
      fail_unless_equals_int (sink_leave_behind (progressing, reading,
              FALSE), !progressing && !reading);
    }
}

GST_END_TEST;

/* the stream picture follows the frame size against the link: 2 Mbit/s
 * gives 20 ms = 5000 bytes per frame. Down above 1.5x, up only when the
 * bigger picture (4x the bytes) would take less than half, never below 1
 * or above SINK_STREAM_SCALE_MAX; unknown link or no frames: unchanged. */
GST_START_TEST (test_stream_scale)
{
  const guint64 link = 2000000;

  fail_unless_equals_int (sink_stream_scale_decide (7500, link, 1), 1);
  fail_unless_equals_int (sink_stream_scale_decide (7501, link, 1), 2);
  fail_unless_equals_int (sink_stream_scale_decide (40000, link, 2), 4);
  fail_unless_equals_int (sink_stream_scale_decide (40000, link, 4), 4);
  /* 1000 bytes at 1/2 would be ~4000 at full size: still below 1.5x,
   * but not below half: stays */
  fail_unless_equals_int (sink_stream_scale_decide (1000, link, 2), 2);
  fail_unless_equals_int (sink_stream_scale_decide (624, link, 2), 1);
  fail_unless_equals_int (sink_stream_scale_decide (600, link, 4), 2);
  fail_unless_equals_int (sink_stream_scale_decide (100, link, 1), 1);
  fail_unless_equals_int (sink_stream_scale_decide (40000, 0, 2), 2);
  fail_unless_equals_int (sink_stream_scale_decide (0, link, 4), 4);
  /* a fast link takes big frames at full size: 100 Mbit/s, 250 KB */
  fail_unless_equals_int (sink_stream_scale_decide (200000, 100000000, 1), 1);
  /* no flapping: whatever a step down gives (~1/4 of the bytes), the
   * step back up is not taken right after it */
  {
    guint64 b;

    for (b = 7501; b < 200000; b += 997) {
      fail_unless_equals_int (sink_stream_scale_decide (b, link, 1), 2);
      fail_unless (sink_stream_scale_decide (b / 4, link, 2) >= 2);
    }
  }
}

GST_END_TEST;

/* The host's frame-rate cap (SinkRateClients.fps_cap) on a fast link: it
 * lowers a stream's frame rate on its own (the bitrate in force stays),
 * the lower of it and the link's wins, and its end gives the stream its
 * own frame rate back; no change, no decision. */
GST_START_TEST (test_fps_cap)
{
  SinkRate *r = sink_rate_new ();
  SinkRateClients fast = { 1, 100000000, 0, 0 }, slow = { 1, 250000, 0, 0 };
  GArray *d = g_array_new (FALSE, FALSE, sizeof (SinkRateDecision));
  SinkRateStream *st = sink_rate_stream_add (r, 0);
  gint64 now = G_TIME_SPAN_SECOND;
  guint bitrate, i;
  gdouble dt;

  fail_unless (sink_rate_due (r, now, &dt));
  sink_rate_tick (r, &fast, &st, 1, dt, now, d);
  for (i = 0; i < 4; i++)
    half_second (r, st, 10000, TRUE, &fast, &now, d);
  fail_unless_equals_int (d->len, 1);
  fail_unless_equals_int (DECISION (d)->fps_n, 0);
  bitrate = DECISION (d)->bitrate;
  /* the host saturated: 15 fps, the same bitrate */
  g_array_set_size (d, 0);
  fast.fps_cap = 15;
  half_second (r, st, 10000, FALSE, &fast, &now, d);
  fail_unless_equals_int (d->len, 1);
  fail_unless_equals_int (DECISION (d)->fps_n, 15);
  fail_unless_equals_int (DECISION (d)->bitrate, bitrate);
  /* nothing changed: nothing to say */
  g_array_set_size (d, 0);
  half_second (r, st, 10000, FALSE, &fast, &now, d);
  fail_unless_equals_int (d->len, 0);
  /* a link that allows 10 fps: the lower wins */
  half_second (r, st, 10000, FALSE, &slow, &now, d);
  fail_unless_equals_int (d->len, 1);
  fail_unless_equals_int (DECISION (d)->fps_n, 10);
  /* the host's cap at 5 below the link's 10 */
  g_array_set_size (d, 0);
  slow.fps_cap = 5;
  half_second (r, st, 10000, FALSE, &slow, &now, d);
  fail_unless_equals_int (d->len, 1);
  fail_unless_equals_int (DECISION (d)->fps_n, 5);
  /* the host calm again, the link fast: no cap */
  g_array_set_size (d, 0);
  fast.fps_cap = 0;
  half_second (r, st, 10000, FALSE, &fast, &now, d);
  fail_unless_equals_int (d->len, 1);
  fail_unless_equals_int (DECISION (d)->fps_n, 0);
  g_array_unref (d);
  sink_rate_free (r);
}

GST_END_TEST;

/* A PSI file's "some" line: its avg10 and its total (µs); a file without
 * them is refused */
GST_START_TEST (test_pressure_parse)
{
  gdouble avg10 = -1;
  guint64 total = 0;

  fail_unless (sink_pressure_parse ("some avg10=12.50 avg60=3.00 "
          "avg300=1.00 total=987654321\nfull avg10=0.00 avg60=0.00 "
          "avg300=0.00 total=5\n", &avg10, &total));
  fail_unless (avg10 == 12.5);
  fail_unless_equals_uint64 (total, 987654321);
  /* total not asked for */
  fail_unless (sink_pressure_parse ("some avg10=1.00 avg60=0 avg300=0\n",
          &avg10, NULL));
  /* asked for and missing (not taken from the "full" line) */
  fail_if (sink_pressure_parse ("some avg10=1.00 avg60=0 avg300=0\n"
          "full avg10=0.00 avg60=0.00 avg300=0.00 total=5\n", &avg10, &total));
  fail_if (sink_pressure_parse ("full avg10=1.00 total=5\n", &avg10, &total));
  fail_if (sink_pressure_parse ("some avg10=x total=5\n", &avg10, &total));
}

GST_END_TEST;

/* one second of @share percent pressure fed to @p: whether the cap changed */
static gboolean
pressure_second (SinkPressureFps * p, guint64 * total, gint64 * now,
    guint share, guint limit)
{
  *total += (guint64) share * G_TIME_SPAN_SECOND / 100;
  *now += G_TIME_SPAN_SECOND;
  return sink_pressure_fps_feed (p, *total, *now, limit);
}

/* The cap's steps: two saturated seconds in a row per step down, one busy
 * second is none; between half the limit and the limit it stays; three
 * seconds below half give one step back; 5 fps is the floor. */
GST_START_TEST (test_pressure_fps)
{
  SinkPressureFps p = { 0, };
  guint64 total = 1000000;
  gint64 now = 5 * G_TIME_SPAN_SECOND;
  guint i;

  fail_if (sink_pressure_fps_feed (&p, total, now, 60));       /* a start */
  fail_unless_equals_int (sink_pressure_fps_cap (&p), 0);
  /* one busy second (clients connecting): nothing */
  fail_if (pressure_second (&p, &total, &now, 100, 60));
  fail_if (pressure_second (&p, &total, &now, 10, 60));
  fail_if (pressure_second (&p, &total, &now, 90, 60));
  fail_unless_equals_int (sink_pressure_fps_cap (&p), 0);
  /* saturated: a step every two seconds down to the floor */
  fail_unless (pressure_second (&p, &total, &now, 95, 60));
  fail_unless_equals_int (sink_pressure_fps_cap (&p), 20);
  fail_unless (p.share > 94.9 && p.share < 95.1, "%f", p.share);
  fail_if (pressure_second (&p, &total, &now, 95, 60));
  fail_unless (pressure_second (&p, &total, &now, 60, 60));
  fail_unless_equals_int (sink_pressure_fps_cap (&p), 15);
  for (i = 0; i < 4; i++)
    pressure_second (&p, &total, &now, 99, 60);
  fail_unless_equals_int (sink_pressure_fps_cap (&p), 5);
  for (i = 0; i < 6; i++)
    fail_if (pressure_second (&p, &total, &now, 100, 60));
  fail_unless_equals_int (sink_pressure_fps_cap (&p), 5);
  /* between half and the limit: stays */
  for (i = 0; i < 10; i++)
    fail_if (pressure_second (&p, &total, &now, 45, 60));
  /* below half: a step back after three seconds, then the next three
   * seconds later; a second above half starts the count again */
  fail_if (pressure_second (&p, &total, &now, 20, 60));
  fail_if (pressure_second (&p, &total, &now, 20, 60));
  fail_unless (pressure_second (&p, &total, &now, 20, 60));
  fail_unless_equals_int (sink_pressure_fps_cap (&p), 10);
  fail_if (pressure_second (&p, &total, &now, 20, 60));
  fail_if (pressure_second (&p, &total, &now, 35, 60));
  fail_if (pressure_second (&p, &total, &now, 20, 60));
  fail_if (pressure_second (&p, &total, &now, 20, 60));
  fail_unless (pressure_second (&p, &total, &now, 20, 60));
  fail_unless_equals_int (sink_pressure_fps_cap (&p), 15);
  for (i = 0; i < 6; i++)
    pressure_second (&p, &total, &now, 0, 60);
  fail_unless_equals_int (sink_pressure_fps_cap (&p), 0);
  /* readings closer than a second are one window; a total that goes
   * back (another file) starts afresh */
  fail_if (sink_pressure_fps_feed (&p, total + G_TIME_SPAN_SECOND,
          now + G_TIME_SPAN_SECOND / 2, 60));
  fail_if (sink_pressure_fps_feed (&p, 10, now + G_TIME_SPAN_SECOND, 60));
  fail_if (sink_pressure_fps_feed (&p, 10 + 2 * G_TIME_SPAN_SECOND,
          now + 3 * G_TIME_SPAN_SECOND, 60));
  fail_unless (p.share == 100.0);
  fail_unless_equals_int (sink_pressure_fps_cap (&p), 0);
}

GST_END_TEST;

static Suite *
rate_suite (void)
{
  Suite *s = suite_create ("spicesink-rate");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_estimate);
  tcase_add_test (tc, test_sample);
  tcase_add_test (tc, test_decide);
  tcase_add_test (tc, test_pace);
  tcase_add_test (tc, test_orchestration);
  tcase_add_test (tc, test_draw_budget_due);
  tcase_add_test (tc, test_draw_budget_due_link);
  tcase_add_test (tc, test_link_bytes);
  tcase_add_test (tc, test_draw_budget);
  tcase_add_test (tc, test_leave_behind);
  tcase_add_test (tc, test_inflight_cap);
  tcase_add_test (tc, test_estimate_btl_floor);
  tcase_add_test (tc, test_stream_scale);
  tcase_add_test (tc, test_scale_few_frames);
  tcase_add_test (tc, test_fps_cap);
  tcase_add_test (tc, test_pressure_parse);
  tcase_add_test (tc, test_pressure_fps);
  return s;
}

GST_CHECK_MAIN (rate);
