/* spicesink: link estimate, rate policy and write pacing as pure functions
 * (inputs -> decisions; no sockets, no clocks, no GStreamer objects), so
 * that they can be unit-tested, and the rate control's per-stream state
 * (SinkRate: samples in, decisions out; it calls nobody).
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * See docs/spicesink.md "Rate control" for the policy in words.
 */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

/* "spicesinkrate": the link estimate and the stream decisions */
GST_DEBUG_CATEGORY_EXTERN (sink_rate_debug);
void sink_rate_debug_init (void);

/* --- policy constants --- */
#define SINK_RATE_SHARE            0.70   /* of the link for streams+draws */
#define SINK_RATE_MIN_BPS          100000 /* never ask for less per stream */
#define SINK_RATE_HYSTERESIS       0.15   /* relative change that counts */
#define SINK_RATE_MIN_INTERVAL_US  (500 * G_TIME_SPAN_MILLISECOND)
#define SINK_RATE_RAISE_FACTOR     4      /* budget >= 4x initial ... */
#define SINK_RATE_RAISE_CEILING    2      /* ... allows up to 2x initial */
#define SINK_RATE_FPS_FULL_BPS     1000000 /* >= this: no frame-rate cap */
#define SINK_RATE_FPS_15_BPS       300000  /* >= this: 15 fps, else 10 */
#define SINK_RATE_SOURCE_FPS       30     /* frame rate assumed uncapped */
#define SINK_QDELAY_HIGH_US        (25 * G_TIME_SPAN_MILLISECOND)
#define SINK_PACE_MAX_HOLD_US      (200 * G_TIME_SPAN_MILLISECOND)
#define SINK_RATE_RAISE_STEP       1.25   /* app-limited hints raise the
                                           * estimate by at most 25 %/sample */

/* One TCP_INFO reading of a client's display socket. */
typedef struct {
  guint64 delivery_bps;         /* tcpi_delivery_rate * 8; 0 = no sample */
  gboolean app_limited;         /* the sample was limited by what we
                                 * offered, not by the path */
  guint32 rtt_us, min_rtt_us;   /* tcpi_rtt, tcpi_min_rtt */
} SinkLinkSample;

/* Per-client link estimate. Zero-initialise. */
typedef struct {
  guint64 bps;                  /* bit/s the path carries; 0 = unknown */
  guint32 queue_delay_us;       /* last rtt - min_rtt */
  gboolean congested;           /* last sample showed queueing delay */
  guint samples;
  /* bottleneck rate for the in-flight cap: the largest kernel delivery
   * rate seen over the last one to two SINK_BTL_WINDOW_US */
  guint64 btl_bps, btl_prev_bps;
  gint64 btl_window_us;
  guint64 inflight_bytes;       /* last tcpi_unacked * tcpi_snd_mss */
} SinkLinkEstimate;

#define SINK_BTL_WINDOW_US         (1 * G_TIME_SPAN_SECOND)
#define SINK_INFLIGHT_QDELAY_US    (10 * G_TIME_SPAN_MILLISECOND)
#define SINK_INFLIGHT_SLACK_MS     5

/* Feeds one kernel delivery-rate sample (bit/s, 0 = none) at @now_us into
 * the windowed maximum; returns the bottleneck rate estimate. */
guint64  sink_link_btl_update (SinkLinkEstimate * e, guint64 delivery_bps,
    gint64 now_us);

/* Bytes that may be in flight on a path of bottleneck rate @btl_bps and
 * minimum RTT @min_rtt_us: one bandwidth-delay product plus
 * SINK_INFLIGHT_SLACK_MS of the rate (the bottleneck queue we allow);
 * 0 = no cap (nothing known). Writes wait while more is in flight, so
 * that the sink stays application-limited: the congestion window alone
 * would fill the bottleneck queue (ARCHITECTURE.md "The queue we do not
 * own"). */
guint64  sink_inflight_cap (guint64 btl_bps, guint32 min_rtt_us);

/* Whether writes wait for the in-flight cap: @inflight bytes reach @cap
 * while the smoothed RTT stands more than SINK_INFLIGHT_QDELAY_US above
 * the minimum (a queue builds). Without queueing delay the cap does not
 * apply, so an underestimated bottleneck rate (app-limited samples) cannot
 * throttle the path: TCP grows and the delivery rate shows the path. */
gboolean sink_inflight_hold (guint64 inflight, guint64 cap, guint32 rtt_us,
    guint32 min_rtt_us);

void     sink_link_estimate_update (SinkLinkEstimate * e,
    const SinkLinkSample * s);

/* Builds a sample from one interval of a display socket: @backlogged when
 * our own queue held data at both ends of the interval (we offered more
 * than the path took): the goodput (@acked_bytes over @dt_us) then measures
 * the path, receiver included. Otherwise the kernel's delivery rate
 * (@delivery_Bps, bytes/s, from the last ACKed burst) is only a hint that
 * the path carries at least that much (app-limited). */
void     sink_link_sample_make (SinkLinkSample * s, guint64 delivery_Bps,
    guint64 acked_bytes, gint64 dt_us, gboolean backlogged, guint32 rtt_us,
    guint32 min_rtt_us);

/* Inputs of the per-stream rate decision. */
typedef struct {
  guint64 link_bps;             /* slowest active client's estimate, 0 =
                                 * unknown */
  guint64 draw_bps;             /* draw traffic to that client (bit/s) */
  guint n_streams;              /* stream pads that share the budget (>= 1) */
  guint64 initial_bps;          /* the stream's own rate before the first
                                 * change (0 = unknown: no ceiling) */
  guint64 current_bps;          /* target in force (0 = none yet: the
                                 * initial one) */
  gint64 since_change_us;       /* time since the last change (G_MAXINT64
                                 * if none) */
} SinkRateInput;

typedef struct {
  guint64 target_bps;           /* per stream */
  gint fps_n, fps_d;            /* 0/1 = no cap */
} SinkRateTarget;

/* Fills @out with the target the inputs call for; returns TRUE when it
 * should be applied now (meaningful change, interval respected). */
gboolean sink_rate_decide (const SinkRateInput * in, SinkRateTarget * out);

/* Whether writes to a client should wait: the smoothed RTT is more than
 * SINK_QDELAY_HIGH_US above the minimum (the bottleneck queue is growing)
 * while data is in flight, for at most SINK_PACE_MAX_HOLD_US. */
gboolean sink_pace_should_hold (guint32 rtt_us, guint32 min_rtt_us,
    guint32 unacked, gint64 held_for_us);

/* --- link-sized queues (docs/spicesink.md "Rate control") ---
 * Every byte beyond the socket's in-flight window delays the next keypress
 * draw by its transmission time, so the queues are sized in link time, not
 * in bytes: what the render waits for, the kernel's unsent bytes, and the
 * update size the tiler is told (spice-draw-budget). With no estimate yet
 * the properties apply. */
#define SINK_QUEUE_LINK_MS         5      /* render waits until the user-space
                                           * queue holds at most this */
#define SINK_NOTSENT_LINK_MS       5      /* TCP_NOTSENT_LOWAT */
#define SINK_UPDATE_LINK_MS        10     /* one draw update */
#define SINK_LINK_MIN_BYTES        (4 * 1024)
#define SINK_DRAW_BUDGET_MAX       (256 * 1024)
#define SINK_DRAW_BUDGET_HYSTERESIS 0.15

/* @ms of @link_bps in bytes, at least SINK_LINK_MIN_BYTES and at most
 * @max; @max when the link is unknown (0). */
gsize    sink_link_bytes (guint64 link_bps, guint ms, gsize max);

/* The draw budget to announce upstream for @link_bps (0 = unknown: none),
 * and whether a budget or link rate differs enough from @last (what was
 * announced) to send (0, unknown, differs from anything else). */
guint    sink_draw_budget (guint64 link_bps);
gboolean sink_draw_budget_changed (guint64 last, guint64 now);

/* Whether a display client that has been too full for client-timeout is
 * left behind (and resynchronised later): when it stopped reading (no
 * write progress for client-timeout and @peer_reading FALSE: its receive
 * window is closed), or when another up-to-date client waits for it (a
 * slow client among faster ones). A single slow client that drains, or
 * whose writes wait on TCP (a retransmission timeout on a long path) while
 * its window is open, just back-pressures the render: the tiler merges. */
gboolean sink_leave_behind (gboolean progressing, gboolean peer_reading,
    gboolean others_waiting);

/* --- stream frame size ---
 * A keypress draw cannot overtake a stream frame the socket is already
 * carrying: it waits for the rest of it. Frames are kept near
 * SINK_FRAME_LINK_MS of the slowest client's link: sink_rate_decide() caps
 * the target at that many bytes per frame at the frame rate it asks for.
 * Where the encoder still makes bigger frames (JPEG: its quality has a
 * floor; any codec on noise overshoots its rate) the stream's picture is
 * scaled down (by 2 per step, up to SINK_STREAM_SCALE_MAX) and the client
 * scales it back up; once frames would fit at twice the size, the size
 * comes back. */
#define SINK_FRAME_LINK_MS         20
#define SINK_STREAM_SCALE_MAX      4
#define SINK_SCALE_MIN_FRAMES      3      /* frames an estimate needs */
#define SINK_SCALE_UP_HOLD_US      (5 * G_TIME_SPAN_SECOND) /* small frames
                                           * for this long before a bigger
                                           * picture is tried */

/* The scale (1, 2, 4) for a stream whose last frames (delta frames where
 * there are some: a keyframe now and then is no reason) averaged
 * @mean_frame_bytes at scale @scale, on a link of @link_bps (0 = unknown:
 * @scale stays). */
guint    sink_stream_scale_decide (guint64 mean_frame_bytes,
    guint64 link_bps, guint scale);

/* ---- orchestration: the per-stream state of the rate control ----
 * The server feeds it (frames in, the slowest client every tick) and
 * applies what it returns (a spice-rate event per decision, the draw
 * budget upstream). All calls with the server lock held. */
typedef struct _SinkRate SinkRate;
typedef struct _SinkRateStream SinkRateStream;

/* One decision for stream pad @index: what its spice-rate event says.
 * @bitrate 0 = unknown (nobody watches: the encoder's owner goes back to
 * its own setting). */
typedef struct {
  guint index;
  guint bitrate;
  gint fps_n;
  guint scale;
} SinkRateDecision;

/* What the server knows about the clients at a tick. */
typedef struct {
  guint clients;                /* clients with a display */
  guint64 link_bps;             /* the slowest one's estimate, 0 unknown */
  guint64 draw_bps;             /* draw traffic to that client */
  gint fps_cap;                 /* the host's CPU pressure allows at most
                                 * this many frames a second to every
                                 * stream (sinkpressure.h), 0 = no cap */
} SinkRateClients;

SinkRate *sink_rate_new (void);
void      sink_rate_free (SinkRate * rate);
/* the rate state of stream pad @index, until removed */
SinkRateStream *sink_rate_stream_add (SinkRate * rate, guint index);
void      sink_rate_stream_remove (SinkRate * rate, SinkRateStream * st);
/* a frame of @size bytes arrived on stream pad @index */
void      sink_rate_stream_frame (SinkRateStream * st, gsize size, gboolean key);
/* Whether the stream targets are due (every ~500 ms); then *@dt is the
 * time since the last ones in seconds (0 the first time). */
gboolean  sink_rate_due (SinkRate * rate, gint64 now, gdouble * dt);
/* When due: @live are the streams whose pads carry frames to clients.
 * Appends to @decisions (SinkRateDecision) what to send upstream. A
 * stream's frame rate is the lower of its link's (sink_rate_decide()) and
 * @clients->fps_cap; a change of either is a decision. */
void      sink_rate_tick (SinkRate * rate, const SinkRateClients * clients,
    SinkRateStream * const *live, guint n_live, gdouble dt, gint64 now,
    GArray * decisions);
/* The draw budget for @link_bps when the budget or the link changed
 * enough since the last announcement (then TRUE and *@budget set): the
 * event carries both, and the tiler paces its updates to the link. */
gboolean  sink_rate_draw_budget_due (SinkRate * rate, guint64 link_bps,
    guint * budget);
/* appends one structure per stream pad to @array (the stats' stream-rates) */
void      sink_rate_stats (SinkRate * rate, GValue * array);

G_END_DECLS
