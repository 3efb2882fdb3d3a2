/* spicesink: serves a GStreamer picture to SPICE clients (element and pads)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
/**
 * SECTION:element-spicesink
 * @title: spicesink
 *
 * spicesink is a small SPICE server. It serves the draws that spicetiler
 * produces on its `draw` pad (application/x-spice-draws: DRAW_COPY regions
 * with BITMAP, LZ4 or JPEG images) and, on request pads `stream_%u`,
 * encoded video (image/jpeg, video/x-vp8, video/x-vp9, video/x-h264) as
 * SPICE video streams, to any number of ordinary SPICE clients
 * (remote-viewer, spicy, spice-html5...).
 *
 * Keyboard and mouse input of the clients travel upstream from the `draw`
 * pad as GstNavigation events (`key` is the X11 keysym name, plus an exact
 * `scancode` field in spice-gtk's convention: XT set 1, 0x100|code for
 * E0-prefixed keys; pointer positions in surface pixels).
 *
 * A client that connects is sent the surface and then the whole picture as
 * one draw: the last known picture if it is one region covering the
 * surface, otherwise the answer to a `spice-refresh` event sent upstream
 * (the tiler redraws everything as one region), or after 2 s without an
 * answer the last known picture as it is. Streams start for it at the next
 * key unit (a force-key-unit event is sent upstream). A client that cannot decode a stream's codec
 * makes spicesink send `spice-stream-control` (enabled=FALSE) upstream on
 * that stream pad so that the tiler sends the area as draws.
 *
 * Writes are paced by the sockets (TCP_NOTSENT_LOWAT): the render path
 * blocks while a client has no room, up to `client-timeout`; a client that
 * stays full for longer is resynchronised later instead of being fed a
 * backlog.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 videotestsrc is-live=true ! spicetiler name=t \
 *     t.draw ! spicesink name=s port=5910 \
 *     t.stream ! queue max-size-buffers=1 leaky=downstream ! \
 *     vp8enc deadline=1 ! s.stream_0
 * ]| Serves a test picture on spice://127.0.0.1:5910
 *
 * Since: 0.1
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdio.h>
#include <string.h>
#include <gst/video/video.h>

#include "gstspicesinkpriv.h"

GST_DEBUG_CATEGORY (gst_spice_sink_debug);

#define DEFAULT_ADDRESS "127.0.0.1"
#define DEFAULT_PORT 5900
#define DEFAULT_TLS_PORT -1
#define DEFAULT_MAX_CLIENTS 4
#define DEFAULT_STREAM_LATENCY 20
#define DEFAULT_CLIENT_TIMEOUT 500
#define DEFAULT_QUEUE_SIZE (256 * 1024)
#define DEFAULT_NOTSENT_LOWAT (64 * 1024)
#define DEFAULT_HANDSHAKE_TIMEOUT 10000
#define DEFAULT_IDLE_TIMEOUT 300000
#define DEFAULT_MAX_CONN_RATE 0
#define DEFAULT_CONN_BURST 20
#define DEFAULT_MAX_PENDING 64
#define FKU_MIN_INTERVAL_US (200 * G_TIME_SPAN_MILLISECOND)
#define REFRESH_RETRY_US (1000 * G_TIME_SPAN_MILLISECOND)

enum
{
  PROP_0,
  PROP_ADDRESS,
  PROP_PORT,
  PROP_TLS_PORT,
  PROP_TLS_CERT_FILE,
  PROP_TLS_KEY_FILE,
  PROP_PASSWORD,
  PROP_PASSWORD_FILE,
  PROP_DISABLE_TICKETING,
  PROP_MAX_CLIENTS,
  PROP_STREAM_LATENCY,
  PROP_CLIENT_TIMEOUT,
  PROP_QUEUE_SIZE,
  PROP_NOTSENT_LOWAT,
  PROP_HANDSHAKE_TIMEOUT,
  PROP_IDLE_TIMEOUT,
  PROP_MAX_CONN_RATE,
  PROP_CONN_BURST,
  PROP_MAX_PENDING,
  PROP_BOUND_PORT,
  PROP_BOUND_TLS_PORT,
  PROP_STATS,
};

static GstStaticPadTemplate draw_template = GST_STATIC_PAD_TEMPLATE ("draw",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS (GST_SPICE_DRAWS_CAPS));

static GstStaticPadTemplate stream_template =
    GST_STATIC_PAD_TEMPLATE ("stream_%u", GST_PAD_SINK, GST_PAD_REQUEST,
    GST_STATIC_CAPS ("image/jpeg; video/x-vp8; video/x-vp9; "
        "video/x-h264, stream-format = (string) byte-stream, "
        "alignment = (string) au"));

#define gst_spice_sink_parent_class parent_class
G_DEFINE_TYPE (GstSpiceSink, gst_spice_sink, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE_WITH_CODE (spicesink, "spicesink", GST_RANK_NONE,
    GST_TYPE_SPICE_SINK,
    GST_DEBUG_CATEGORY_INIT (gst_spice_sink_debug, "spicesink", 0,
        "SPICE server sink"));

/* ------------------------------------------------------- upstream events */

typedef void (*SinkJobFunc) (GstSpiceSink * sink, GstPad * pad, gpointer data);

typedef struct
{
  GstSpiceSink *sink;
  GstPad *pad;
  GstEvent *event;              /* pushed upstream from pad, or NULL */
  SinkJobFunc func;             /* or run on the event thread */
  gpointer data;
  GDestroyNotify free_data;
} PendingEvent;

static void
event_thread_func (gpointer data, gpointer user_data)
{
  PendingEvent *pe = data;

  if (pe->event && !gst_pad_push_event (pe->pad, pe->event))
    GST_LOG_OBJECT (pe->pad, "upstream event not handled");
  if (pe->func)
    pe->func (pe->sink, pe->pad, pe->data);
  if (pe->free_data)
    pe->free_data (pe->data);
  gst_object_unref (pe->pad);
  g_free (pe);
}

static void
post_job (GstSpiceSink * sink, GstPad * pad, GstEvent * event,
    SinkJobFunc func, gpointer data, GDestroyNotify free_data)
{
  PendingEvent *pe;

  if (!sink->event_pool) {
    if (event)
      gst_event_unref (event);
    if (free_data)
      free_data (data);
    return;
  }
  /* an input flood while upstream is slow must not queue without bound:
   * navigation events beyond SINK_MAX_QUEUED_EVENTS are dropped (refresh,
   * key-unit and rate events are rare and always queued) */
  if (event && GST_EVENT_TYPE (event) == GST_EVENT_NAVIGATION &&
      g_thread_pool_unprocessed (sink->event_pool) >= SINK_MAX_QUEUED_EVENTS) {
    gsize now = (gsize) g_get_monotonic_time ();

    g_atomic_pointer_add (&sink->input_events_dropped, 1);
    if (now - (gsize) g_atomic_pointer_get (&sink->input_drop_warned_us) >=
        G_TIME_SPAN_SECOND) {
      g_atomic_pointer_set (&sink->input_drop_warned_us, now);
      GST_WARNING_OBJECT (sink, "%u upstream events queued (limit %u): "
          "dropping input events (%" G_GSIZE_FORMAT " so far)",
          g_thread_pool_unprocessed (sink->event_pool),
          SINK_MAX_QUEUED_EVENTS,
          (gsize) g_atomic_pointer_get (&sink->input_events_dropped));
    }
    gst_event_unref (event);
    if (free_data)
      free_data (data);
    return;
  }
  pe = g_new0 (PendingEvent, 1);
  pe->sink = sink;
  pe->pad = gst_object_ref (pad);
  pe->event = event;
  pe->func = func;
  pe->data = data;
  pe->free_data = free_data;
  g_thread_pool_push (sink->event_pool, pe, NULL);
}

/* any thread: pushes @event upstream from @pad on the event thread */
void
gst_spice_sink_post_upstream (GstSpiceSink * sink, GstPad * pad,
    GstEvent * event)
{
  post_job (sink, pad, event, NULL, NULL, NULL);
}

/* -------------------------------------------------------- rate control */

/* elements the encoder search walks through (one sink pad, same stream) */
static const gchar *const passthrough_factories[] = {
  "queue", "queue2", "capsfilter", "videoconvert", "videoscale",
  "videorate", "identity", "valve", "tee", "h264parse", "vp9parse",
  "jpegparse", "videoconvertscale", NULL
};

static GstPad *
real_peer (GstPad * pad)
{
  GstPad *p = gst_pad_get_peer (pad);
  guint i;

  /* into bins: a ghost pad's target, out of bins: a proxy pad's ghost */
  for (i = 0; p && i < 8; i++) {
    if (GST_IS_GHOST_PAD (p)) {
      GstPad *t = gst_ghost_pad_get_target (GST_GHOST_PAD (p));

      gst_object_unref (p);
      p = t;
    } else if (GST_IS_PROXY_PAD (p) && GST_IS_GHOST_PAD (GST_OBJECT_PARENT (p))) {
      GstPad *ghost = GST_PAD (gst_object_get_parent (GST_OBJECT (p)));

      gst_object_unref (p);
      p = ghost ? gst_pad_get_peer (ghost) : NULL;
      if (ghost)
        gst_object_unref (ghost);
    } else {
      break;
    }
  }
  return p;
}

/* event thread: the known encoder upstream of @pad, or NULL */
static GstElement *
find_encoder (GstPad * pad, SinkEncKind * kind)
{
  GstPad *p = real_peer (pad);
  guint hops;

  *kind = SINK_ENC_UNKNOWN;
  for (hops = 0; p && hops < 16; hops++) {
    GstElement *el = gst_pad_get_parent_element (p);
    GstElementFactory *f;
    const gchar *name;
    GstPad *sinkpad;

    gst_object_unref (p);
    p = NULL;
    if (!el)
      break;
    f = gst_element_get_factory (el);
    name = f ? GST_OBJECT_NAME (f) : NULL;
    *kind = sink_rate_encoder_kind (name);
    if (*kind != SINK_ENC_UNKNOWN)
      return el;
    if (!name || !g_strv_contains (passthrough_factories, name) ||
        !(sinkpad = gst_element_get_static_pad (el, "sink"))) {
      gst_object_unref (el);
      break;
    }
    p = real_peer (sinkpad);
    gst_object_unref (sinkpad);
    gst_object_unref (el);
  }
  if (p)
    gst_object_unref (p);
  return NULL;
}

static guint
get_uint_property (GObject * obj, const gchar * name)
{
  GParamSpec *ps = g_object_class_find_property (G_OBJECT_GET_CLASS (obj),
      name);
  GValue v = G_VALUE_INIT, u = G_VALUE_INIT;
  guint r = 0;

  if (!ps)
    return 0;
  g_value_init (&v, ps->value_type);
  g_value_init (&u, G_TYPE_UINT);
  g_object_get_property (obj, name, &v);
  if (g_value_transform (&v, &u))
    r = g_value_get_uint (&u);
  g_value_unset (&v);
  g_value_unset (&u);
  return r;
}

static void
set_uint_property (GObject * obj, const gchar * name, guint value)
{
  GParamSpec *ps = g_object_class_find_property (G_OBJECT_GET_CLASS (obj),
      name);
  GValue v = G_VALUE_INIT, u = G_VALUE_INIT;

  if (!ps || !(ps->flags & G_PARAM_WRITABLE))
    return;
  g_value_init (&u, G_TYPE_UINT);
  g_value_set_uint (&u, value);
  g_value_init (&v, ps->value_type);
  if (g_value_transform (&u, &v)) {
    g_param_value_validate (ps, &v);
    g_object_set_property (obj, name, &v);
  }
  g_value_unset (&v);
  g_value_unset (&u);
}

/* event thread: finds the encoder of a stream pad and what it was set to */
static void
probe_encoder_job (GstSpiceSink * sink, GstPad * pad, gpointer data)
{
  SinkEncKind kind;
  GstElement *enc = find_encoder (pad, &kind);
  guint value = 0;
  SinkStream *st;

  if (enc)
    value = get_uint_property (G_OBJECT (enc),
        sink_rate_encoder_property (kind));
  g_mutex_lock (&sink->lock);
  st = gst_pad_get_element_private (pad);
  if (st) {
    st->enc_probe_pending = FALSE;
    st->enc_probed = TRUE;
    if (st->encoder)
      gst_object_unref (st->encoder);
    st->encoder = enc ? gst_object_ref (enc) : NULL;
    st->enc_kind = kind;
    st->initial_value = value;
    st->initial_bps = sink_rate_encoder_initial_bps (kind, value);
    st->enc_value = value;
    GST_INFO_OBJECT (sink, "%s: encoder %s (%s = %u)", GST_PAD_NAME (pad),
        enc ? GST_OBJECT_NAME (enc) : "unknown, only spice-rate is sent",
        enc ? sink_rate_encoder_property (kind) : "-", value);
  }
  g_mutex_unlock (&sink->lock);
  if (enc)
    gst_object_unref (enc);
}

typedef struct
{
  GstElement *encoder;
  const gchar *property;
  guint value;
} RateJob;

static void
rate_job_free (gpointer data)
{
  RateJob *j = data;

  if (j->encoder)
    gst_object_unref (j->encoder);
  g_free (j);
}

static void
rate_job (GstSpiceSink * sink, GstPad * pad, gpointer data)
{
  RateJob *j = data;

  if (j->encoder && j->property)
    set_uint_property (G_OBJECT (j->encoder), j->property, j->value);
}

/* lock held: applies @target to @st (spice-rate upstream + encoder) */
static void
apply_rate (GstSpiceSink * sink, SinkStream * st, guint64 target_bps,
    gint fps_n, gint64 now, gboolean restore)
{
  RateJob *j = g_new0 (RateJob, 1);
  guint64 ref = st->initial_bps;

  st->target_bps = restore ? 0 : target_bps;
  st->fps_n = restore ? 0 : fps_n;
  if (restore)
    st->scale = 1;
  st->last_change_us = now;
  st->rate_changes++;
  if (st->encoder) {
    j->encoder = gst_object_ref (st->encoder);
    j->property = sink_rate_encoder_property (st->enc_kind);
    j->value = restore ? st->initial_value :
        sink_rate_encoder_value (st->enc_kind, target_bps, ref,
        st->initial_value);
    st->enc_value = j->value;
  }
  GST_INFO_OBJECT (sink, "%s: link %" G_GUINT64_FORMAT " bit/s, draws %"
      G_GUINT64_FORMAT " bit/s -> stream target %" G_GUINT64_FORMAT
      " bit/s, %d fps%s, picture 1/%u (%s %s = %u)", GST_PAD_NAME (st->pad),
      sink->link_bps, sink->link_draw_bps, target_bps, fps_n,
      fps_n ? "" : " (no cap)", MAX (st->scale, 1),
      st->encoder ? GST_OBJECT_NAME (st->encoder) : "no known encoder",
      j->property ? j->property : "", j->value);
  post_job (sink, st->pad, gst_spice_event_new_rate ((guint) MIN (target_bps,
              G_MAXUINT), st->fps_n, 1, MAX (st->scale, 1)), rate_job, j,
      rate_job_free);
}

/* lock held: whether @st's picture size should change
 * (sink_stream_scale_decide()); sets st->scale. Frames measured within a
 * second of the last change may still be of the old size. A smaller
 * picture is taken at once, a bigger one only after frames stayed small
 * enough for SINK_SCALE_UP_HOLD_US: an encoder's frames at one size do not
 * tell its frames at four times the pixels (noise makes any rate control
 * overshoot). */
static gboolean
stream_rescale (SinkStream * st, guint64 link_bps, gint64 now)
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

/* Server thread, lock held, every 250 ms: per-client link estimates from
 * TCP_INFO (read by the caller), the slowest active client's, and every
 * ~500 ms the stream targets (gstspicesinkrate.h, docs "Rate control"). */
void
gst_spice_sink_rate_tick (GstSpiceSink * sink, gint64 now)
{
  GList *l;
  guint64 slowest = 0, draw_bps = 0;
  guint clients = 0, n_streams = 0, i;
  gdouble dt = (now - sink->last_rate_us) / (gdouble) G_TIME_SPAN_SECOND;

  for (l = sink->sessions; l; l = l->next) {
    SinkSession *s = l->data;
    SinkConn *d = s->display;
    SinkLinkSample smp;

    gboolean backlogged;

    if (!gst_spice_sink_session_display_ready (s) || !d->have_tcpi)
      continue;
    backlogged = d->out_bytes > 0;
    if (d->rate_last_us) {
      sink_link_sample_make (&smp, d->tcpi_delivery_rate,
          d->tcpi_bytes_acked - d->rate_last_acked, now - d->rate_last_us,
          backlogged && d->rate_last_backlogged, d->tcpi_rtt_us,
          d->tcpi_min_rtt_us);
      sink_link_estimate_update (&s->link, &smp);
      GST_LOG_OBJECT (sink, "%s: sample %" G_GUINT64_FORMAT " bit/s%s, rtt "
          "%u us (min %u), unacked %u, queued %" G_GSIZE_FORMAT
          " -> estimate %" G_GUINT64_FORMAT " bit/s", s->peer_host,
          smp.delivery_bps, smp.app_limited ? " (app-limited)" : "",
          smp.rtt_us, smp.min_rtt_us, d->tcpi_unacked, d->out_bytes,
          s->link.bps);
    }
    d->rate_last_us = now;
    d->rate_last_acked = d->tcpi_bytes_acked;
    d->rate_last_backlogged = backlogged;
  }
  if (sink->last_rate_us && now - sink->last_rate_us <
      SINK_RATE_MIN_INTERVAL_US - 50 * G_TIME_SPAN_MILLISECOND)
    return;
  if (!sink->last_rate_us)
    dt = 0;
  sink->last_rate_us = now;

  for (l = sink->sessions; l; l = l->next) {
    SinkSession *s = l->data;

    if (dt > 0) {
      guint64 x = (guint64) ((s->draw_bytes - s->last_draw_bytes) * 8 / dt);

      s->draw_bps = (s->draw_bps + x) / 2;
    }
    s->last_draw_bytes = s->draw_bytes;
    if (!gst_spice_sink_session_display_ready (s))
      continue;
    clients++;
    if (s->link.bps && (slowest == 0 || s->link.bps < slowest)) {
      slowest = s->link.bps;
      draw_bps = s->draw_bps;
    }
  }
  sink->link_bps = slowest;
  sink->link_draw_bps = draw_bps;

  for (i = 0; i < sink->streams->len; i++) {
    SinkStream *st = g_ptr_array_index (sink->streams, i);

    if (dt > 0) {
      guint64 nf = st->frames_in - st->last_frames_in;
      guint64 nd = st->delta_frames_in - st->last_delta_frames_in;

      st->in_bps = (guint64) ((st->bytes_in - st->last_bytes_in) * 8 / dt);
      if (nd >= SINK_SCALE_MIN_FRAMES)
        st->mean_frame_bytes = (st->delta_bytes_in -
            st->last_delta_bytes_in) / nd;
      else if (nd == 0 && nf >= SINK_SCALE_MIN_FRAMES)
        st->mean_frame_bytes = (st->bytes_in - st->last_bytes_in) / nf;
      else
        st->mean_frame_bytes = 0;
    }
    st->last_bytes_in = st->bytes_in;
    st->last_frames_in = st->frames_in;
    st->last_delta_bytes_in = st->delta_bytes_in;
    st->last_delta_frames_in = st->delta_frames_in;
    if (st->codec && st->enabled && !st->eos && st->frames_in > 0)
      n_streams++;
  }
  for (i = 0; i < sink->streams->len; i++) {
    SinkStream *st = g_ptr_array_index (sink->streams, i);
    SinkRateInput in;
    SinkRateTarget out;

    if (!st->codec || !st->enabled || st->eos || st->frames_in == 0)
      continue;
    if (!st->enc_probed) {
      if (!st->enc_probe_pending) {
        st->enc_probe_pending = TRUE;
        post_job (sink, st->pad, NULL, probe_encoder_job, NULL, NULL);
      }
      continue;
    }
    if (st->enc_kind == SINK_ENC_JPEG && st->initial_bps == 0) {
      /* JPEG has no bitrate: the reference is the measured rate at the
       * initial quality, taken before the first change */
      if (st->in_bps == 0)
        continue;
      st->initial_bps = st->in_bps;
    }
    if (clients == 0) {
      /* nobody watches: back to what the pipeline set */
      if (st->target_bps)
        apply_rate (sink, st, st->initial_bps, 0, now, TRUE);
      continue;
    }
    in.link_bps = slowest;
    in.draw_bps = draw_bps;
    in.n_streams = n_streams;
    in.initial_bps = st->initial_bps;
    in.current_bps = st->target_bps;
    in.since_change_us = st->last_change_us ? now - st->last_change_us :
        G_MAXINT64;
    if (sink_rate_decide (&in, &out) || stream_rescale (st, slowest, now))
      apply_rate (sink, st, out.target_bps, out.fps_n, now, FALSE);
  }
}

/* lock held */
void
gst_spice_sink_request_refresh (GstSpiceSink * sink, gboolean force)
{
  gint64 now = g_get_monotonic_time ();

  if (sink->refresh_outstanding && now - sink->refresh_requested_us <
      REFRESH_RETRY_US)
    return;
  if (!force && !sink->refresh_outstanding)
    return;
  sink->refresh_outstanding = TRUE;
  sink->refresh_requested_us = now;
  sink->refresh_requests++;
  GST_DEBUG_OBJECT (sink, "requesting a refresh upstream");
  gst_spice_sink_post_upstream (sink, sink->draw_pad,
      gst_spice_event_new_refresh ());
}

/* lock held */
void
gst_spice_sink_request_key_unit (GstSpiceSink * sink, SinkStream * st,
    gboolean force)
{
  gint64 now = g_get_monotonic_time ();

  if (!force && now - st->last_fku_us < FKU_MIN_INTERVAL_US)
    return;
  st->last_fku_us = now;
  gst_spice_sink_post_upstream (sink, st->pad,
      gst_video_event_new_upstream_force_key_unit (GST_CLOCK_TIME_NONE, TRUE,
          0));
}

/* lock held: a stream is enabled while every client with a display can
 * decode its codec */
void
gst_spice_sink_update_stream_control (GstSpiceSink * sink)
{
  guint i;

  for (i = 0; sink->streams && i < sink->streams->len; i++) {
    SinkStream *st = g_ptr_array_index (sink->streams, i);
    gboolean enabled = TRUE;
    GList *l;

    if (st->codec == 0)
      continue;
    for (l = sink->sessions; l; l = l->next) {
      SinkSession *s = l->data;

      if (s->display && s->display->state == CONN_DATA &&
          !gst_spice_sink_session_supports_codec (s, st->codec))
        enabled = FALSE;
    }
    if (enabled == st->enabled)
      continue;
    st->enabled = enabled;
    GST_INFO_OBJECT (sink, "stream %u %s", st->index, enabled ?
        "enabled: every client can decode it" :
        "disabled: a client cannot decode it, asking for draws");
    if (!enabled)
      gst_spice_sink_stream_destroy_all_clients (sink, st);
    else
      gst_spice_sink_request_key_unit (sink, st, TRUE);
    gst_spice_sink_post_upstream (sink, st->pad,
        gst_spice_event_new_stream_control (enabled));
  }
}

/* ----------------------------------------------------------- draw path */

typedef struct
{
  GstVideoRectangle dest;
  guint8 type;
  gboolean lossy;
  gsize offset, size;
} DrawRegion;

static void
unmap_free (gpointer data)
{
  GstMapInfo *map = data;
  GstBuffer *buf = map->user_data[0];

  gst_buffer_unmap (buf, map);
  gst_buffer_unref (buf);
  g_free (map);
}

static GBytes *
buffer_to_bytes (GstBuffer * buf)
{
  GstMapInfo *map = g_new0 (GstMapInfo, 1);

  if (!gst_buffer_map (buf, map, GST_MAP_READ)) {
    g_free (map);
    return NULL;
  }
  map->user_data[0] = gst_buffer_ref (buf);
  return g_bytes_new_with_free_func (map->data, map->size, unmap_free, map);
}

/* lock held: a COPY_BITS region's source lies on the surface */
static gboolean
copy_source_on_surface (GstSpiceSink * sink, const GstSpiceDraw * d)
{
  gint sx, sy;

  return d->type != GST_SPICE_IMAGE_COPY_BITS ||
      gst_spice_copy_bits_payload_parse (d->payload, &d->dest, sink->width,
      sink->height, &sx, &sy);
}

static GstFlowReturn
gst_spice_sink_draw_chain (GstPad * pad, GstObject * parent, GstBuffer * buf)
{
  GstSpiceSink *sink = GST_SPICE_SINK (parent);
  GstSpiceDrawsReader rd;
  GstSpiceDraw d;
  GArray *regions;
  GBytes *bytes;
  gboolean refresh, one_full, refresh_all = FALSE;
  GList *l;
  guint i;

  if (!gst_spice_draws_reader_init (&rd, buf)) {
    GST_ELEMENT_WARNING (sink, STREAM, FORMAT, (NULL),
        ("malformed draws buffer dropped"));
    gst_buffer_unref (buf);
    return GST_FLOW_OK;
  }
  bytes = buffer_to_bytes (buf);
  if (!bytes) {
    gst_spice_draws_reader_clear (&rd);
    gst_buffer_unref (buf);
    return GST_FLOW_ERROR;
  }
  refresh = (rd.flags & GST_SPICE_DRAWS_FLAG_REFRESH) != 0;
  regions = g_array_new (FALSE, FALSE, sizeof (DrawRegion));

  g_mutex_lock (&sink->lock);
  while (gst_spice_draws_reader_next (&rd, &d)) {
    DrawRegion r;

    if (d.dest.x + d.dest.w > sink->width ||
        d.dest.y + d.dest.h > sink->height ||
        !gst_spice_payload_validate (d.type, d.dest.w, d.dest.h, d.payload,
            d.payload_size) || !copy_source_on_surface (sink, &d)) {
      sink->regions_invalid++;
      GST_WARNING_OBJECT (sink, "dropping invalid region %dx%d+%d+%d "
          "type %u", d.dest.w, d.dest.h, d.dest.x, d.dest.y, d.type);
      continue;
    }
    r.dest = d.dest;
    r.type = d.type;
    r.lossy = (d.flags & GST_SPICE_DRAW_FLAG_LOSSY) != 0;
    r.offset = d.payload - rd.map.data;
    r.size = d.payload_size;
    g_array_append_val (regions, r);
  }
  if (rd.error) {
    sink->regions_invalid++;
    GST_WARNING_OBJECT (sink, "malformed region in draws buffer");
  }
  gst_spice_draws_reader_clear (&rd);
  /* rd.map and our own mapping point at the same memory */
  sink->updates_in++;
  sink->regions_in += regions->len;

  if (!gst_spice_sink_wait_for_room (sink)) {
    g_mutex_unlock (&sink->lock);
    g_array_unref (regions);
    g_bytes_unref (bytes);
    gst_buffer_unref (buf);
    return GST_FLOW_FLUSHING;
  }
  if (refresh) {
    /* the tiler counts a REFRESH as making every client's picture exact
     * (it stops refining): clients that may hold lossy areas need it */
    refresh_all = gst_spice_sink_cache_has_lossy (sink);
    gst_spice_sink_cache_clear (sink);
    sink->cache_lossy_unknown = FALSE;
    sink->refresh_outstanding = FALSE;
  }
  /* A REFRESH update goes only to the clients that wait for the picture
   * (or got an incomplete one); the others already have it, unless their
   * picture may be lossy somewhere (refresh_all). Any other update goes
   * only to clients that have the picture. */
  for (i = 0; i < regions->len; i++) {
    DrawRegion *r = &g_array_index (regions, DrawRegion, i);
    GBytes *payload = g_bytes_new_from_bytes (bytes, r->offset, r->size);

    for (l = sink->sessions; l; l = l->next) {
      SinkSession *s = l->data;

      if (!gst_spice_sink_session_display_ready (s) || s->behind)
        continue;
      if (refresh ? !(refresh_all || s->awaiting_refresh ||
              s->partial_picture) : s->awaiting_refresh)
        continue;
      gst_spice_sink_send_draw (s->display, &r->dest, r->type, payload);
    }
    if (r->type == GST_SPICE_IMAGE_COPY_BITS)
      gst_spice_sink_cache_copy (sink);
    else
      gst_spice_sink_cache_add (sink, &r->dest, r->type, r->lossy, payload);
    g_bytes_unref (payload);
  }
  one_full = gst_spice_sink_cache_is_one_full_region (sink);
  for (l = sink->sessions; l; l = l->next) {
    SinkSession *s = l->data;

    if (!gst_spice_sink_session_display_ready (s))
      continue;
    if (s->behind) {
      s->updates_skipped++;
      continue;
    }
    if (refresh && (s->awaiting_refresh || s->partial_picture)) {
      GST_DEBUG_OBJECT (sink, "%s gets the refresh (%u regions)",
          s->peer_host, regions->len);
      if (s->awaiting_refresh)
        gst_spice_sink_session_picture_done (sink, s);
      s->partial_picture = FALSE;
      s->updates++;
    } else if (s->awaiting_refresh && one_full) {
      /* this update made the last-known picture one full region */
      gst_spice_sink_replay_cache (sink, s->display);
      gst_spice_sink_session_picture_done (sink, s);
      s->updates++;
    } else if (s->awaiting_refresh) {
      s->updates_skipped++;
    } else if (!refresh || refresh_all) {
      s->updates++;
    }
  }
  gst_spice_sink_cache_update_complete (sink);
  g_mutex_unlock (&sink->lock);

  g_array_unref (regions);
  g_bytes_unref (bytes);
  gst_buffer_unref (buf);
  return GST_FLOW_OK;
}

/* ----------------------------------------------------------- cursor */

static GBytes *
default_cursor (gint * w, gint * h)
{
  /* a plain arrow: black outline, white inside */
  const gint W = 12, H = 19;
  guint8 *p = g_malloc0 (W * H * 4);
  gint x, y;

  for (y = 0; y < H; y++) {
    gint len = y < 12 ? y + 1 : (y < 16 ? 12 - (y - 12) * 3 : 0);

    if (y >= 12 && y < 19) {
      /* the tail */
      len = 0;
      if (y < 17) {
        for (x = 0; x < 2; x++) {
          guint8 *q = p + (y * W + x) * 4;
          q[0] = q[1] = q[2] = x == 0 ? 0 : 255;
          q[3] = 255;
        }
      }
      if (y == 12) {
        for (x = 0; x < 8; x++) {
          guint8 *q = p + (y * W + x) * 4;
          q[0] = q[1] = q[2] = 0;
          q[3] = 255;
        }
      }
    }
    for (x = 0; x < len && x < W; x++) {
      guint8 *q = p + (y * W + x) * 4;
      gboolean edge = x == 0 || x == len - 1 || y == 11;

      q[0] = q[1] = q[2] = edge ? 0 : 255;
      q[3] = 255;
    }
  }
  *w = W;
  *h = H;
  return g_bytes_new_take (p, W * H * 4);
}

static void
set_default_cursor (GstSpiceSink * sink)
{
  gint w, h;

  if (sink->cursor_shape)
    g_bytes_unref (sink->cursor_shape);
  memset (&sink->cursor, 0, sizeof (sink->cursor));
  sink->cursor_shape = default_cursor (&w, &h);
  sink->cursor.width = w;
  sink->cursor.height = h;
  sink->cursor.visible = TRUE;
  sink->cursor.serial = G_MAXUINT64 - 1;
  sink->have_cursor = FALSE;
}

static void
handle_cursor_event (GstSpiceSink * sink, GstEvent * event)
{
  GstSpiceCursor c;
  GList *l;

  if (!gst_spice_event_parse_cursor (event, &c))
    return;
  g_mutex_lock (&sink->lock);
  if (sink->cursor_shape && (c.serial != sink->cursor.serial ||
          !sink->have_cursor)) {
    g_bytes_unref (sink->cursor_shape);
    sink->cursor_shape = NULL;
  }
  if (c.shape && !sink->cursor_shape) {
    GstMapInfo map;

    if (gst_buffer_map (c.shape, &map, GST_MAP_READ)) {
      sink->cursor_shape = g_bytes_new (map.data,
          (gsize) c.width * c.height * 4);
      gst_buffer_unmap (c.shape, &map);
    }
  }
  if (!sink->cursor_shape)
    c.width = c.height = 0;
  if (c.shape)
    gst_buffer_unref (c.shape);
  c.shape = NULL;
  c.width = CLAMP (c.width, 0, 512);
  c.height = CLAMP (c.height, 0, 512);
  sink->cursor = c;
  sink->have_cursor = TRUE;
  for (l = sink->sessions; l; l = l->next)
    gst_spice_sink_send_cursor (sink, l->data, FALSE);
  g_mutex_unlock (&sink->lock);
}

/* ------------------------------------------------------------- events */

static void
check_all_eos (GstSpiceSink * sink)
{
  guint i;
  gboolean all = sink->draw_eos;

  g_mutex_lock (&sink->lock);
  for (i = 0; i < sink->streams->len; i++)
    all &= ((SinkStream *) g_ptr_array_index (sink->streams, i))->eos;
  g_mutex_unlock (&sink->lock);
  if (all)
    gst_element_post_message (GST_ELEMENT (sink),
        gst_message_new_eos (GST_OBJECT (sink)));
}

static void
set_flushing (GstSpiceSink * sink, gboolean flushing)
{
  g_mutex_lock (&sink->lock);
  sink->flushing = flushing;
  g_cond_broadcast (&sink->cond);
  g_mutex_unlock (&sink->lock);
}

static gboolean
gst_spice_sink_draw_event (GstPad * pad, GstObject * parent, GstEvent * event)
{
  GstSpiceSink *sink = GST_SPICE_SINK (parent);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:{
      GstCaps *caps;
      const GstStructure *s;
      gint w = 0, h = 0;
      GList *l;

      gst_event_parse_caps (event, &caps);
      s = gst_caps_get_structure (caps, 0);
      if (!gst_structure_get_int (s, "width", &w) ||
          !gst_structure_get_int (s, "height", &h) || w <= 0 || h <= 0) {
        gst_event_unref (event);
        return FALSE;
      }
      g_mutex_lock (&sink->lock);
      if (w != sink->width || h != sink->height) {
        guint i;

        GST_INFO_OBJECT (sink, "surface %dx%d", w, h);
        for (i = 0; i < sink->streams->len; i++)
          gst_spice_sink_stream_destroy_all_clients (sink,
              g_ptr_array_index (sink->streams, i));
        sink->width = w;
        sink->height = h;
        gst_spice_sink_cache_clear (sink);
        for (l = sink->sessions; l; l = l->next)
          gst_spice_sink_display_start (sink, l->data);
      }
      g_mutex_unlock (&sink->lock);
      gst_event_unref (event);
      return TRUE;
    }
    case GST_EVENT_CUSTOM_DOWNSTREAM_STICKY:
      if (gst_event_has_name (event, GST_SPICE_EVENT_CURSOR))
        handle_cursor_event (sink, event);
      gst_event_unref (event);
      return TRUE;
    case GST_EVENT_FLUSH_START:
      set_flushing (sink, TRUE);
      gst_event_unref (event);
      return TRUE;
    case GST_EVENT_FLUSH_STOP:
      set_flushing (sink, FALSE);
      sink->draw_eos = FALSE;
      gst_event_unref (event);
      return TRUE;
    case GST_EVENT_EOS:
      sink->draw_eos = TRUE;
      gst_event_unref (event);
      check_all_eos (sink);
      return TRUE;
    default:
      gst_event_unref (event);
      return TRUE;
  }
}

static gboolean
gst_spice_sink_query (GstPad * pad, GstObject * parent, GstQuery * query)
{
  return gst_pad_query_default (pad, parent, query);
}

/* ---------------------------------------------------------- stream path */

static SinkStream *
stream_for_pad (GstPad * pad)
{
  return gst_pad_get_element_private (pad);
}

static guint8
codec_from_caps (GstCaps * caps, gint * w, gint * h)
{
  const GstStructure *s = gst_caps_get_structure (caps, 0);
  const gchar *name = gst_structure_get_name (s);

  *w = *h = 0;
  gst_structure_get_int (s, "width", w);
  gst_structure_get_int (s, "height", h);
  if (g_str_equal (name, "image/jpeg"))
    return SPICE_VIDEO_CODEC_TYPE_MJPEG;
  if (g_str_equal (name, "video/x-vp8"))
    return SPICE_VIDEO_CODEC_TYPE_VP8;
  if (g_str_equal (name, "video/x-vp9"))
    return SPICE_VIDEO_CODEC_TYPE_VP9;
  if (g_str_equal (name, "video/x-h264"))
    return SPICE_VIDEO_CODEC_TYPE_H264;
  return 0;
}

static gint
alloc_spice_id (GstSpiceSink * sink)
{
  guint i;

  for (i = 0; i < SINK_MAX_STREAMS; i++)
    if (!(sink->stream_ids_used & (G_GUINT64_CONSTANT (1) << i))) {
      sink->stream_ids_used |= G_GUINT64_CONSTANT (1) << i;
      return (gint) i;
    }
  return -1;
}

static void
send_stream_create (GstSpiceSink * sink, SinkSession * s, SinkStream * st)
{
  SinkConn *d = s->display;
  SinkClientStream *cs = &s->streams[st->spice_id];
  GByteArray *a = g_byte_array_new ();

  gst_spice_wire_write_stream_create (a, 0, st->spice_id, st->active_codec,
      SPICE_STREAM_FLAGS_TOP_DOWN,
      st->width > 0 ? st->width : st->dest.w,
      st->height > 0 ? st->height : st->dest.h, &st->dest);
  gst_spice_sink_conn_send (d, SPICE_MSG_DISPLAY_STREAM_CREATE, a, NULL);
  g_byte_array_set_size (a, 0);
  /* per-client state exists exactly from the moment STREAM_CREATE is queued */
  memset (cs, 0, sizeof (*cs));
  cs->created = TRUE;
  cs->unique_id = g_random_int ();
  if (gst_spice_caps_test (d->link.channel_caps, d->link.n_channel,
          SPICE_DISPLAY_CAP_STREAM_REPORT)) {
    gst_spice_wire_write_stream_activate_report (a, st->spice_id,
        cs->unique_id, 5, 1000);
    gst_spice_sink_conn_send (d, SPICE_MSG_DISPLAY_STREAM_ACTIVATE_REPORT,
        a, NULL);
  }
  g_byte_array_unref (a);
}

static void
send_stream_data (SinkConn * d, SinkStream * st, GBytes * frame)
{
  GByteArray *a = g_byte_array_new ();
  SinkMsg *m;

  gst_spice_wire_write_stream_data_head (a, st->spice_id, 0,
      (guint32) g_bytes_get_size (frame));
  m = gst_spice_sink_msg_new (d, SPICE_MSG_DISPLAY_STREAM_DATA, a, frame);
  /* stamped when its first byte goes out: mm now + stream-latency */
  m->mm_off = (gint16) (gst_spice_wire_header_size (d->mini) +
      GST_SPICE_WIRE_STREAM_DATA_MM_OFFSET);
  gst_spice_sink_conn_send_msg (d, m);
  g_byte_array_unref (a);
}

static GstFlowReturn
gst_spice_sink_stream_chain (GstPad * pad, GstObject * parent, GstBuffer * buf)
{
  GstSpiceSink *sink = GST_SPICE_SINK (parent);
  SinkStream *st = stream_for_pad (pad);
  GstSpiceStreamMeta *meta = gst_buffer_get_spice_stream_meta (buf);
  gboolean key = !GST_BUFFER_FLAG_IS_SET (buf, GST_BUFFER_FLAG_DELTA_UNIT);
  GstVideoRectangle dest;
  gboolean want_key = FALSE;
  GBytes *frame = NULL;
  GList *l;

  g_mutex_lock (&sink->lock);
  st->frames_in++;
  st->bytes_in += gst_buffer_get_size (buf);
  if (!key) {
    st->delta_frames_in++;
    st->delta_bytes_in += gst_buffer_get_size (buf);
  }
  sink->stream_frames_in++;
  if (!gst_spice_sink_wait_for_room (sink)) {
    g_mutex_unlock (&sink->lock);
    gst_buffer_unref (buf);
    return GST_FLOW_FLUSHING;
  }
  if (sink->width <= 0 || st->codec == 0 || !st->enabled ||
      gst_buffer_get_size (buf) == 0) {
    st->frames_dropped++;
    goto done;
  }
  if (meta) {
    dest = meta->dest;
  } else {
    dest.x = dest.y = 0;
    dest.w = st->width > 0 ? st->width : sink->width;
    dest.h = st->height > 0 ? st->height : sink->height;
  }
  if (!gst_spice_rect_clip (&dest, sink->width, sink->height)) {
    st->frames_dropped++;
    goto done;
  }
  if (st->active && ((meta && meta->stream_id != st->meta_id) ||
          dest.x != st->dest.x || dest.y != st->dest.y ||
          dest.w != st->dest.w || dest.h != st->dest.h ||
          st->active_codec != st->codec))
    gst_spice_sink_stream_destroy_all_clients (sink, st);
  if (!st->active) {
    gint id = alloc_spice_id (sink);

    if (id < 0) {
      st->frames_dropped++;
      goto done;
    }
    st->spice_id = id;
    st->active = TRUE;
    st->dest = dest;
    st->meta_id = meta ? meta->stream_id : 0;
    st->active_codec = st->codec;
    GST_DEBUG_OBJECT (sink, "stream %u: SPICE stream %u at %dx%d+%d+%d",
        st->index, id, dest.w, dest.h, dest.x, dest.y);
  }
  frame = buffer_to_bytes (buf);
  if (!frame)
    goto done;
  for (l = sink->sessions; l; l = l->next) {
    SinkSession *s = l->data;
    SinkClientStream *cs = &s->streams[st->spice_id];

    if (!gst_spice_sink_session_display_ready (s) ||
        !gst_spice_sink_session_supports_codec (s, st->active_codec))
      continue;
    if (s->behind || s->awaiting_refresh) {
      if (cs->created)
        cs->need_key = TRUE;
      s->frames_dropped++;
      continue;
    }
    if (!cs->created || cs->need_key) {
      if (!key) {
        want_key = TRUE;
        s->frames_dropped++;
        continue;
      }
      if (!cs->created)
        send_stream_create (sink, s, st);
      cs->need_key = FALSE;
    }
    send_stream_data (s->display, st, frame);
    cs->frames++;
    s->stream_frames++;
  }
  if (want_key)
    gst_spice_sink_request_key_unit (sink, st, FALSE);
done:
  g_mutex_unlock (&sink->lock);
  if (frame)
    g_bytes_unref (frame);
  gst_buffer_unref (buf);
  return GST_FLOW_OK;
}

static gboolean
gst_spice_sink_stream_event (GstPad * pad, GstObject * parent, GstEvent * event)
{
  GstSpiceSink *sink = GST_SPICE_SINK (parent);
  SinkStream *st = stream_for_pad (pad);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:{
      GstCaps *caps;
      gint w, h;
      guint8 codec;

      gst_event_parse_caps (event, &caps);
      codec = codec_from_caps (caps, &w, &h);
      gst_event_unref (event);
      if (!codec)
        return FALSE;
      g_mutex_lock (&sink->lock);
      st->codec = codec;
      st->width = w;
      st->height = h;
      gst_spice_sink_update_stream_control (sink);
      g_mutex_unlock (&sink->lock);
      return TRUE;
    }
    case GST_EVENT_FLUSH_START:
      set_flushing (sink, TRUE);
      gst_event_unref (event);
      return TRUE;
    case GST_EVENT_FLUSH_STOP:
      set_flushing (sink, FALSE);
      st->eos = FALSE;
      gst_event_unref (event);
      return TRUE;
    case GST_EVENT_EOS:
      g_mutex_lock (&sink->lock);
      st->eos = TRUE;
      gst_spice_sink_stream_destroy_all_clients (sink, st);
      g_mutex_unlock (&sink->lock);
      gst_event_unref (event);
      check_all_eos (sink);
      return TRUE;
    default:
      gst_event_unref (event);
      return TRUE;
  }
}

static GstPad *
gst_spice_sink_request_new_pad (GstElement * element, GstPadTemplate * templ,
    const gchar * name, const GstCaps * caps)
{
  GstSpiceSink *sink = GST_SPICE_SINK (element);
  SinkStream *st;
  GstPad *pad;
  guint index;
  gchar *pad_name;

  g_mutex_lock (&sink->lock);
  if (name && sscanf (name, "stream_%u", &index) == 1) {
    guint i;

    for (i = 0; i < sink->streams->len; i++)
      if (((SinkStream *) g_ptr_array_index (sink->streams, i))->index == index) {
        g_mutex_unlock (&sink->lock);
        GST_WARNING_OBJECT (sink, "pad %s already exists", name);
        return NULL;
      }
  } else {
    index = sink->next_pad_index;
  }
  sink->next_pad_index = MAX (sink->next_pad_index, index + 1);
  pad_name = g_strdup_printf ("stream_%u", index);
  pad = gst_pad_new_from_template (templ, pad_name);
  g_free (pad_name);
  st = g_new0 (SinkStream, 1);
  st->pad = pad;
  st->index = index;
  st->enabled = TRUE;
  gst_pad_set_element_private (pad, st);
  g_ptr_array_add (sink->streams, st);
  g_mutex_unlock (&sink->lock);

  gst_pad_set_chain_function (pad,
      GST_DEBUG_FUNCPTR (gst_spice_sink_stream_chain));
  gst_pad_set_event_function (pad,
      GST_DEBUG_FUNCPTR (gst_spice_sink_stream_event));
  GST_PAD_SET_PROXY_ALLOCATION (pad);
  gst_pad_set_active (pad, TRUE);
  gst_element_add_pad (element, pad);
  return pad;
}

static void
gst_spice_sink_release_pad (GstElement * element, GstPad * pad)
{
  GstSpiceSink *sink = GST_SPICE_SINK (element);
  SinkStream *st = stream_for_pad (pad);

  g_mutex_lock (&sink->lock);
  if (st) {
    gst_spice_sink_stream_destroy_all_clients (sink, st);
    g_ptr_array_remove (sink->streams, st);
    gst_pad_set_element_private (pad, NULL);
    if (st->encoder)
      gst_object_unref (st->encoder);
  }
  g_mutex_unlock (&sink->lock);
  gst_pad_set_active (pad, FALSE);
  gst_element_remove_pad (element, pad);
  g_free (st);
}

/* ------------------------------------------------------ state changes */

static GstStateChangeReturn
gst_spice_sink_change_state (GstElement * element, GstStateChange transition)
{
  GstSpiceSink *sink = GST_SPICE_SINK (element);
  GstStateChangeReturn ret;
  GError *err = NULL;

  switch (transition) {
    case GST_STATE_CHANGE_NULL_TO_READY:
      if (sink->password_file && *sink->password_file) {
        gchar *secret = gst_spice_read_password_file (sink->password_file,
            &err);

        if (!secret) {
          GST_ELEMENT_ERROR (sink, RESOURCE, OPEN_READ,
              ("Could not read the password file: %s", err->message), (NULL));
          g_clear_error (&err);
          return GST_STATE_CHANGE_FAILURE;
        }
        g_free (sink->password);
        g_free (sink->password_file);
        sink->password = secret;
      }
      sink->event_pool = g_thread_pool_new (event_thread_func, sink, 1, TRUE,
          NULL);
      if (!gst_spice_sink_server_start (sink, &err)) {
        GST_ELEMENT_ERROR (sink, RESOURCE, OPEN_READ_WRITE,
            ("Could not start the SPICE server: %s", err->message),
            ("address %s port %d tls-port %d", sink->address, sink->port,
                sink->tls_port));
        g_clear_error (&err);
        g_thread_pool_free (sink->event_pool, TRUE, TRUE);
        sink->event_pool = NULL;
        return GST_STATE_CHANGE_FAILURE;
      }
      g_object_notify (G_OBJECT (sink), "bound-port");
      break;
    case GST_STATE_CHANGE_READY_TO_PAUSED:
      set_flushing (sink, FALSE);
      sink->draw_eos = FALSE;
      break;
    case GST_STATE_CHANGE_PAUSED_TO_READY:
      set_flushing (sink, TRUE);
      break;
    default:
      break;
  }

  ret = GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);

  switch (transition) {
    case GST_STATE_CHANGE_READY_TO_NULL:
      gst_spice_sink_server_stop (sink);
      if (sink->event_pool) {
        g_thread_pool_free (sink->event_pool, FALSE, TRUE);
        sink->event_pool = NULL;
      }
      g_mutex_lock (&sink->lock);
      sink->width = sink->height = 0;
      gst_spice_sink_cache_clear (sink);
      sink->stream_ids_used = 0;
      {
        guint i;
        for (i = 0; i < sink->streams->len; i++)
          ((SinkStream *) g_ptr_array_index (sink->streams, i))->active = FALSE;
      }
      sink->refresh_outstanding = FALSE;
      g_mutex_unlock (&sink->lock);
      break;
    default:
      break;
  }
  if (ret == GST_STATE_CHANGE_SUCCESS &&
      (transition == GST_STATE_CHANGE_READY_TO_PAUSED ||
          transition == GST_STATE_CHANGE_PLAYING_TO_PAUSED))
    ret = GST_STATE_CHANGE_NO_PREROLL;
  return ret;
}

/* --------------------------------------------------------- properties */

static void
gst_spice_sink_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstSpiceSink *sink = GST_SPICE_SINK (object);

  g_mutex_lock (&sink->lock);
  switch (prop_id) {
    case PROP_ADDRESS:
      g_free (sink->address);
      sink->address = g_value_dup_string (value);
      break;
    case PROP_PORT:
      sink->port = g_value_get_int (value);
      break;
    case PROP_TLS_PORT:
      sink->tls_port = g_value_get_int (value);
      break;
    case PROP_TLS_CERT_FILE:
      g_free (sink->cert_file);
      sink->cert_file = g_value_dup_string (value);
      break;
    case PROP_TLS_KEY_FILE:
      g_free (sink->key_file);
      sink->key_file = g_value_dup_string (value);
      break;
    case PROP_PASSWORD:
      g_free (sink->password);
      sink->password = g_value_dup_string (value);
      break;
    case PROP_PASSWORD_FILE:
      g_free (sink->password_file);
      sink->password_file = g_value_dup_string (value);
      break;
    case PROP_DISABLE_TICKETING:
      sink->disable_ticketing = g_value_get_boolean (value);
      break;
    case PROP_MAX_CLIENTS:
      sink->max_clients = g_value_get_uint (value);
      break;
    case PROP_STREAM_LATENCY:
      sink->stream_latency = g_value_get_uint (value);
      break;
    case PROP_CLIENT_TIMEOUT:
      sink->client_timeout = g_value_get_uint (value);
      break;
    case PROP_QUEUE_SIZE:
      sink->queue_size = g_value_get_uint (value);
      break;
    case PROP_NOTSENT_LOWAT:
      sink->notsent_lowat = g_value_get_uint (value);
      break;
    case PROP_HANDSHAKE_TIMEOUT:
      sink->handshake_timeout = g_value_get_uint (value);
      break;
    case PROP_IDLE_TIMEOUT:
      sink->idle_timeout = g_value_get_uint (value);
      break;
    case PROP_MAX_CONN_RATE:
      sink->max_conn_rate = g_value_get_uint (value);
      break;
    case PROP_CONN_BURST:
      sink->conn_burst = g_value_get_uint (value);
      break;
    case PROP_MAX_PENDING:
      sink->max_pending = g_value_get_uint (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  g_mutex_unlock (&sink->lock);
}

static void
gst_spice_sink_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstSpiceSink *sink = GST_SPICE_SINK (object);

  g_mutex_lock (&sink->lock);
  switch (prop_id) {
    case PROP_ADDRESS:
      g_value_set_string (value, sink->address);
      break;
    case PROP_PORT:
      g_value_set_int (value, sink->port);
      break;
    case PROP_TLS_PORT:
      g_value_set_int (value, sink->tls_port);
      break;
    case PROP_TLS_CERT_FILE:
      g_value_set_string (value, sink->cert_file);
      break;
    case PROP_TLS_KEY_FILE:
      g_value_set_string (value, sink->key_file);
      break;
    case PROP_PASSWORD:
      g_value_set_string (value, sink->password);
      break;
    case PROP_PASSWORD_FILE:
      g_value_set_string (value, sink->password_file);
      break;
    case PROP_DISABLE_TICKETING:
      g_value_set_boolean (value, sink->disable_ticketing);
      break;
    case PROP_MAX_CLIENTS:
      g_value_set_uint (value, sink->max_clients);
      break;
    case PROP_STREAM_LATENCY:
      g_value_set_uint (value, sink->stream_latency);
      break;
    case PROP_CLIENT_TIMEOUT:
      g_value_set_uint (value, sink->client_timeout);
      break;
    case PROP_QUEUE_SIZE:
      g_value_set_uint (value, sink->queue_size);
      break;
    case PROP_NOTSENT_LOWAT:
      g_value_set_uint (value, sink->notsent_lowat);
      break;
    case PROP_HANDSHAKE_TIMEOUT:
      g_value_set_uint (value, sink->handshake_timeout);
      break;
    case PROP_IDLE_TIMEOUT:
      g_value_set_uint (value, sink->idle_timeout);
      break;
    case PROP_MAX_CONN_RATE:
      g_value_set_uint (value, sink->max_conn_rate);
      break;
    case PROP_CONN_BURST:
      g_value_set_uint (value, sink->conn_burst);
      break;
    case PROP_MAX_PENDING:
      g_value_set_uint (value, sink->max_pending);
      break;
    case PROP_BOUND_PORT:
      g_value_set_int (value, sink->bound_port);
      break;
    case PROP_BOUND_TLS_PORT:
      g_value_set_int (value, sink->bound_tls_port);
      break;
    case PROP_STATS:
      g_value_take_boxed (value, gst_spice_sink_server_stats (sink));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  g_mutex_unlock (&sink->lock);
}

static void
gst_spice_sink_finalize (GObject * object)
{
  GstSpiceSink *sink = GST_SPICE_SINK (object);
  guint i;

  g_free (sink->address);
  g_free (sink->cert_file);
  g_free (sink->key_file);
  g_free (sink->password);
  if (sink->cache)
    g_ptr_array_unref (sink->cache);
  for (i = 0; i < sink->streams->len; i++) {
    SinkStream *st = g_ptr_array_index (sink->streams, i);

    if (st->encoder)
      gst_object_unref (st->encoder);
    g_free (st);
  }
  g_ptr_array_unref (sink->streams);
  if (sink->cursor_shape)
    g_bytes_unref (sink->cursor_shape);
  g_mutex_clear (&sink->lock);
  g_cond_clear (&sink->cond);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_spice_sink_init (GstSpiceSink * sink)
{
  g_mutex_init (&sink->lock);
  g_cond_init (&sink->cond);
  sink->address = g_strdup (DEFAULT_ADDRESS);
  sink->port = DEFAULT_PORT;
  sink->tls_port = DEFAULT_TLS_PORT;
  sink->max_clients = DEFAULT_MAX_CLIENTS;
  sink->stream_latency = DEFAULT_STREAM_LATENCY;
  sink->client_timeout = DEFAULT_CLIENT_TIMEOUT;
  sink->queue_size = DEFAULT_QUEUE_SIZE;
  sink->notsent_lowat = DEFAULT_NOTSENT_LOWAT;
  sink->handshake_timeout = DEFAULT_HANDSHAKE_TIMEOUT;
  sink->idle_timeout = DEFAULT_IDLE_TIMEOUT;
  sink->max_conn_rate = DEFAULT_MAX_CONN_RATE;
  sink->conn_burst = DEFAULT_CONN_BURST;
  sink->max_pending = DEFAULT_MAX_PENDING;
  sink->bound_port = sink->bound_tls_port = -1;
  sink->streams = g_ptr_array_new ();
  sink->flushing = TRUE;
  gst_spice_sink_cache_clear (sink);
  set_default_cursor (sink);

  sink->draw_pad = gst_pad_new_from_static_template (&draw_template, "draw");
  gst_pad_set_chain_function (sink->draw_pad,
      GST_DEBUG_FUNCPTR (gst_spice_sink_draw_chain));
  gst_pad_set_event_function (sink->draw_pad,
      GST_DEBUG_FUNCPTR (gst_spice_sink_draw_event));
  gst_pad_set_query_function (sink->draw_pad,
      GST_DEBUG_FUNCPTR (gst_spice_sink_query));
  gst_element_add_pad (GST_ELEMENT (sink), sink->draw_pad);
  GST_OBJECT_FLAG_SET (sink, GST_ELEMENT_FLAG_SINK);
}

static void
gst_spice_sink_class_init (GstSpiceSinkClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY;

  gobject_class->set_property = gst_spice_sink_set_property;
  gobject_class->get_property = gst_spice_sink_get_property;
  gobject_class->finalize = gst_spice_sink_finalize;

  g_object_class_install_property (gobject_class, PROP_ADDRESS,
      g_param_spec_string ("address", "Address",
          "IP address to listen on; a non-loopback address needs a password "
          "or disable-ticketing=true", DEFAULT_ADDRESS, rw));
  g_object_class_install_property (gobject_class, PROP_PORT,
      g_param_spec_int ("port", "Port",
          "TCP port for plain connections (0 = any free port, see "
          "bound-port; -1 = none)", -1, 65535, DEFAULT_PORT, rw));
  g_object_class_install_property (gobject_class, PROP_TLS_PORT,
      g_param_spec_int ("tls-port", "TLS port",
          "TCP port for TLS connections (0 = any free port, see "
          "bound-tls-port; -1 = none)", -1, 65535, DEFAULT_TLS_PORT, rw));
  g_object_class_install_property (gobject_class, PROP_TLS_CERT_FILE,
      g_param_spec_string ("tls-cert-file", "TLS certificate file",
          "PEM certificate (chain) served on tls-port", NULL, rw));
  g_object_class_install_property (gobject_class, PROP_TLS_KEY_FILE,
      g_param_spec_string ("tls-key-file", "TLS key file",
          "PEM private key of tls-cert-file", NULL, rw));
  g_object_class_install_property (gobject_class, PROP_PASSWORD,
      g_param_spec_string ("password", "Password",
          "SPICE ticket clients must present (NULL or empty: none)", NULL, rw));
  /**
   * GstSpiceSink:password-file:
   *
   * A file whose first line is the ticket; read when the element starts and
   * used instead of #GstSpiceSink:password. Keeps the secret out of the
   * pipeline description, which GStreamer's parser logs at GST_PIPELINE:4.
   */
  g_object_class_install_property (gobject_class, PROP_PASSWORD_FILE,
      g_param_spec_string ("password-file", "Password file",
          "File whose first line is the SPICE ticket (read at start; "
          "overrides password)", NULL, rw));
  g_object_class_install_property (gobject_class, PROP_DISABLE_TICKETING,
      g_param_spec_boolean ("disable-ticketing", "Disable ticketing",
          "Accept clients without checking a password, also on a "
          "non-loopback address", FALSE, rw));
  g_object_class_install_property (gobject_class, PROP_MAX_CLIENTS,
      g_param_spec_uint ("max-clients", "Max clients",
          "Maximum number of simultaneous client sessions", 1, 256,
          DEFAULT_MAX_CLIENTS, rw));
  g_object_class_install_property (gobject_class, PROP_STREAM_LATENCY,
      g_param_spec_uint ("stream-latency", "Stream latency",
          "Presentation margin of stream frames in ms: a frame is stamped "
          "with the multimedia time at which its first byte is written plus "
          "this margin", 0, 1000, DEFAULT_STREAM_LATENCY,
          rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_CLIENT_TIMEOUT,
      g_param_spec_uint ("client-timeout", "Client timeout",
          "How long (ms) the render path waits for a client whose queue is "
          "full before leaving it behind (it is resynchronised later)", 0,
          60000, DEFAULT_CLIENT_TIMEOUT, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_QUEUE_SIZE,
      g_param_spec_uint ("queue-size", "Queue size",
          "Bytes queued per client beyond the socket before the render path "
          "waits", 1024, G_MAXINT, DEFAULT_QUEUE_SIZE,
          rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_NOTSENT_LOWAT,
      g_param_spec_uint ("notsent-lowat", "Not-sent low water mark",
          "TCP_NOTSENT_LOWAT of client sockets in bytes (0 = system "
          "default)", 0, G_MAXINT, DEFAULT_NOTSENT_LOWAT, rw));
  g_object_class_install_property (gobject_class, PROP_HANDSHAKE_TIMEOUT,
      g_param_spec_uint ("handshake-timeout", "Handshake timeout",
          "Connections that have not linked a channel after this many ms "
          "are closed", 100, 600000, DEFAULT_HANDSHAKE_TIMEOUT, rw));
  g_object_class_install_property (gobject_class, PROP_IDLE_TIMEOUT,
      g_param_spec_uint ("idle-timeout", "Idle timeout",
          "A client session from which no byte arrived on any channel for "
          "this many ms is closed (spice-gtk answers the sink's PING every "
          "second); 0 = never", 0, G_MAXINT, DEFAULT_IDLE_TIMEOUT,
          rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_MAX_CONN_RATE,
      g_param_spec_uint ("max-connections-per-second",
          "Max connections per second",
          "New connections accepted per second from one source address "
          "(token bucket with connection-burst); over it they are closed at "
          "once. A SPICE session opens 4 connections. 0 = no limit", 0,
          100000, DEFAULT_MAX_CONN_RATE, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_CONN_BURST,
      g_param_spec_uint ("connection-burst", "Connection burst",
          "Connections one address may open at once before "
          "max-connections-per-second applies", 1, 100000,
          DEFAULT_CONN_BURST, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_MAX_PENDING,
      g_param_spec_uint ("max-pending-links", "Max pending links",
          "Connections allowed in the link stage at the same time (all "
          "addresses); further ones are closed at once", 1, 100000,
          DEFAULT_MAX_PENDING, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_BOUND_PORT,
      g_param_spec_int ("bound-port", "Bound port",
          "Port actually listened on (-1 if none)", -1, 65535, -1,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  g_object_class_install_property (gobject_class, PROP_BOUND_TLS_PORT,
      g_param_spec_int ("bound-tls-port", "Bound TLS port",
          "TLS port actually listened on (-1 if none)", -1, 65535, -1,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "application/x-spice-sink-stats: totals and, in client-stats, one "
          "structure per client (address, bytes and messages per channel, "
          "draws/s, stream frames/s, frames dropped, queue, ping RTT, "
          "TCP_INFO link estimate)", GST_TYPE_STRUCTURE,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_add_static_pad_template (element_class, &draw_template);
  gst_element_class_add_static_pad_template (element_class, &stream_template);
  gst_element_class_set_static_metadata (element_class, "SPICE server sink",
      "Sink/Network", "Serves draws and encoded video streams to SPICE "
      "clients", "gst-spice developers");

  element_class->change_state = GST_DEBUG_FUNCPTR (gst_spice_sink_change_state);
  element_class->request_new_pad =
      GST_DEBUG_FUNCPTR (gst_spice_sink_request_new_pad);
  element_class->release_pad = GST_DEBUG_FUNCPTR (gst_spice_sink_release_pad);
}
