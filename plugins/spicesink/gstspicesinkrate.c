/* spicesink: link estimate, rate policy and write pacing (pure functions)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <string.h>

#include "gstspicesinkrate.h"

/* A sample limited by the path (not by us) measures the path: the estimate
 * follows it both ways (gain 1/2). An application-limited sample only shows
 * that the path carries at least that much: it can raise the estimate (by
 * at most 25 % per sample: burst rates overstate), never lower it. Queueing delay above SINK_QDELAY_HIGH_US means we offer
 * more than the path carries: the delivery rate then is the path's rate and
 * the estimate drops to it at once. A congested sample counts as at least
 * the bottleneck rate of the in-flight cap (sink_link_btl_update()), so
 * that the estimate cannot spiral down below what the kernel saw the path
 * deliver in the last one to two seconds. */
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
  /* while a queue builds the path is the bottleneck: a goodput sample is
   * then not taken below the bottleneck rate the kernel measured lately
   * (an interval backlogged only at its ends understates the path, and a
   * lower estimate would shrink what we offer and with it the next
   * samples). Without queueing delay a low goodput is a slow receiver,
   * whose bursts the kernel's delivery rate overstates: it counts. */
  if (!s->app_limited && e->congested)
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
  out->target_bps = target;
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
sink_draw_budget_changed (guint last, guint budget)
{
  if (last == 0 || budget == 0)
    return last != budget;
  return ABS ((gdouble) budget - (gdouble) last) >=
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
sink_leave_behind (gboolean progressing, gboolean others_waiting)
{
  return !progressing || others_waiting;
}

SinkEncKind
sink_rate_encoder_kind (const gchar * name)
{
  if (!name)
    return SINK_ENC_UNKNOWN;
  if (!strcmp (name, "vp8enc") || !strcmp (name, "vp9enc"))
    return SINK_ENC_VPX;
  if (!strcmp (name, "x264enc"))
    return SINK_ENC_X264;
  if (!strcmp (name, "openh264enc"))
    return SINK_ENC_OPENH264;
  if (!strcmp (name, "jpegenc"))
    return SINK_ENC_JPEG;
  return SINK_ENC_UNKNOWN;
}

const gchar *
sink_rate_encoder_property (SinkEncKind kind)
{
  switch (kind) {
    case SINK_ENC_VPX:
      return "target-bitrate";
    case SINK_ENC_X264:
    case SINK_ENC_OPENH264:
      return "bitrate";
    case SINK_ENC_JPEG:
      return "quality";
    default:
      return NULL;
  }
}

guint64
sink_rate_encoder_initial_bps (SinkEncKind kind, guint value)
{
  switch (kind) {
    case SINK_ENC_VPX:
    case SINK_ENC_OPENH264:
      return value;
    case SINK_ENC_X264:
      return (guint64) value *1000;
    default:
      return 0;
  }
}

guint
sink_rate_encoder_value (SinkEncKind kind, guint64 target_bps,
    guint64 ref_bps, guint initial_quality)
{
  switch (kind) {
    case SINK_ENC_VPX:         /* libvpx counts in kbit/s */
      return (guint) MIN (target_bps / 1000 * 1000, G_MAXINT);
    case SINK_ENC_OPENH264:
      return (guint) MIN (target_bps, G_MAXINT);
    case SINK_ENC_X264:
      return (guint) MAX (MIN (target_bps / 1000, 2048000), 1);
    case SINK_ENC_JPEG:{
      gdouble q;
      guint q0 = CLAMP (initial_quality, SINK_JPEG_MIN_QUALITY, 100);

      if (ref_bps == 0)
        return q0;
      /* JPEG bytes grow about linearly with q + SINK_JPEG_SIZE_OFFSET
       * (q 10 is about a third of q 70): solve for the target's share */
      q = (q0 + SINK_JPEG_SIZE_OFFSET) * ((gdouble) target_bps /
          (gdouble) ref_bps) - SINK_JPEG_SIZE_OFFSET;
      return (guint) CLAMP (q + 0.5, SINK_JPEG_MIN_QUALITY, q0);
    }
    default:
      return 0;
  }
}
