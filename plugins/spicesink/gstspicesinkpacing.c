/* spicesink: output queues, socket writes and backpressure
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Pacing is on the socket, not on a SPICE ACK window (we never send
 * SET_ACK): every socket gets TCP_NOTSENT_LOWAT, so it only polls writable
 * while the kernel holds less than that many unsent bytes, and the server
 * thread writes only when it is writable. The render path waits while a
 * client's user-space queue is above its limit. Once a client's link is
 * estimated, both are sized in link time (gstspicesinkrate.h: a few ms of
 * the link each, at most `notsent-lowat` and `queue-size`), and the tiler is
 * told how big one update may be (spice-draw-budget), so that a keypress
 * draw never waits behind more than about one small update.
 *
 * A client that stays above its limit for `client-timeout` is marked
 * "behind" when it stopped reading or when it holds up faster clients: it
 * stops receiving updates (so it cannot stall the others any longer), and
 * once its queue has drained it is resynchronised with the full picture
 * instead of a backlog. A single slow client that keeps draining is never
 * left behind: it back-pressures the render and the tiler merges.
 */
#include <string.h>
#include <errno.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <linux/tcp.h>

#include "gstspicesinkpriv.h"

#define MAX_IOV 32

/* the user-space queue a display client may hold before the render waits */
static gsize
display_queue_limit (GstSpiceSink * sink, SinkSession * s)
{
  return sink_link_bytes (s->link.bps, SINK_QUEUE_LINK_MS, sink->queue_size);
}

/* Server thread: TCP_NOTSENT_LOWAT of a display socket follows the link
 * estimate (a few ms of the link, at most the notsent-lowat property). */
static void
display_set_lowat (SinkConn * conn)
{
  GstSpiceSink *sink = conn->sink;
  gint fd, want, cur = 0;
  socklen_t len = sizeof (cur);

  if (sink->notsent_lowat == 0 || !conn->session ||
      conn->session->display != conn || !conn->socket)
    return;
  want = (gint) sink_link_bytes (conn->session->link.bps,
      SINK_NOTSENT_LINK_MS, sink->notsent_lowat);
  fd = g_socket_get_fd (conn->socket);
  if (getsockopt (fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &cur, &len) == 0 &&
      cur == want)
    return;
  if (setsockopt (fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &want, sizeof (want)) < 0)
    GST_DEBUG_OBJECT (sink, "TCP_NOTSENT_LOWAT: %s", g_strerror (errno));
  else
    GST_DEBUG_OBJECT (sink, "%s: notsent-lowat %d (link %" G_GUINT64_FORMAT
        " bit/s)", conn->peer, want, conn->session->link.bps);
}

SinkMsg *
gst_spice_sink_msg_new (SinkConn * conn, guint16 type,
    const GByteArray * fixed, GBytes * body)
{
  SinkMsg *m = g_new (SinkMsg, 1);
  gsize hsize = gst_spice_wire_header_size (conn->mini);
  gsize flen = fixed ? fixed->len : 0;
  gsize blen = body ? g_bytes_get_size (body) : 0;

  g_assert (hsize + flen <= SINK_MSG_HEAD_MAX);
  gst_spice_wire_put_header (m->head, conn->mini, ++conn->out_serial, type,
      (guint32) (flen + blen));
  if (flen)
    memcpy (m->head + hsize, fixed->data, flen);
  m->head_len = (guint16) (hsize + flen);
  m->mm_off = -1;
  m->type = type;
  m->body = body ? g_bytes_ref (body) : NULL;
  m->done = 0;
  return m;
}

void
gst_spice_sink_msg_free (SinkMsg * m)
{
  if (m->body)
    g_bytes_unref (m->body);
  g_free (m);
}

static inline gsize
msg_size (const SinkMsg * m)
{
  return m->head_len + (m->body ? g_bytes_get_size (m->body) : 0);
}

/* lock held */
void
gst_spice_sink_conn_send_msg (SinkConn * conn, SinkMsg * m)
{
  if (conn->state == CONN_DEAD) {
    gst_spice_sink_msg_free (m);
    return;
  }
  if (g_queue_is_empty (&conn->outq))
    conn->last_progress_us = g_get_monotonic_time ();
  g_queue_push_tail (&conn->outq, m);
  conn->out_bytes += msg_size (m);
  gst_spice_sink_kick (conn->sink);
}

void
gst_spice_sink_conn_send (SinkConn * conn, guint16 type,
    const GByteArray * fixed, GBytes * body)
{
  gst_spice_sink_conn_send_msg (conn,
      gst_spice_sink_msg_new (conn, type, fixed, body));
}

void
gst_spice_sink_conn_clear_queue (SinkConn * conn)
{
  SinkMsg *m;

  while ((m = g_queue_pop_head (&conn->outq)))
    gst_spice_sink_msg_free (m);
  conn->out_bytes = 0;
}

/* Wakes the server thread to write what was queued (any thread). */
void
gst_spice_sink_kick (GstSpiceSink * sink)
{
  if (sink->kick_src)
    g_source_set_ready_time (sink->kick_src, 0);
}

static gboolean
out_ready_cb (GObject * stream, gpointer user_data)
{
  SinkConn *conn = user_data;
  GstSpiceSink *sink = conn->sink;

  g_mutex_lock (&sink->lock);
  g_source_destroy (conn->out_src);
  g_source_unref (conn->out_src);
  conn->out_src = NULL;
  gst_spice_sink_conn_flush (conn);
  g_mutex_unlock (&sink->lock);
  return G_SOURCE_REMOVE;
}

static gboolean
pace_ready_cb (gpointer user_data)
{
  SinkConn *conn = user_data;
  GstSpiceSink *sink = conn->sink;

  g_mutex_lock (&sink->lock);
  g_source_destroy (conn->pace_src);
  g_source_unref (conn->pace_src);
  conn->pace_src = NULL;
  gst_spice_sink_conn_flush (conn);
  g_mutex_unlock (&sink->lock);
  return G_SOURCE_REMOVE;
}

/* whether a display socket has its in-flight cap (sink_inflight_cap())
 * or more unacknowledged while a queue builds (sink_inflight_hold()) */
static gboolean
inflight_full (SinkConn * conn)
{
  SinkLinkEstimate *e = &conn->session->link;
  guint64 cap = sink_inflight_cap (MAX (e->btl_bps, e->btl_prev_bps),
      conn->tcpi_min_rtt_us);

  return sink_inflight_hold (e->inflight_bytes, cap, conn->tcpi_rtt_us,
      conn->tcpi_min_rtt_us);
}

/* Server thread, lock held. Keeps the sink application-limited on the
 * display channel: while the smoothed RTT stands more than
 * SINK_QDELAY_HIGH_US above the minimum (the bottleneck queue grows) and
 * data is in flight, nothing more is offered (for at most
 * SINK_PACE_MAX_HOLD_US at a time); a 5 ms timer looks again. Returns TRUE
 * while holding. */
static gboolean
pace_hold (SinkConn * conn)
{
  gint64 now;

  if (conn->pace_src)
    return TRUE;
  if (!conn->session || conn->session->display != conn ||
      conn->state != CONN_DATA)
    return FALSE;
  gst_spice_sink_conn_update_tcp_info (conn);
  now = g_get_monotonic_time ();
  if (conn->have_tcpi && (sink_pace_should_hold (conn->tcpi_rtt_us,
              conn->tcpi_min_rtt_us, conn->tcpi_unacked,
              conn->pace_since_us ? now - conn->pace_since_us : 0) ||
          inflight_full (conn))) {
    if (!conn->pace_since_us) {
      conn->pace_since_us = now;
      conn->pace_holds++;
      GST_LOG_OBJECT (conn->sink, "%s: queueing delay %u us, holding "
          "writes", conn->peer, conn->tcpi_rtt_us - conn->tcpi_min_rtt_us);
    }
    conn->pace_src = g_timeout_source_new (5);
    g_source_set_callback (conn->pace_src, pace_ready_cb, conn, NULL);
    g_source_attach (conn->pace_src, conn->sink->ctx);
    return TRUE;
  }
  if (conn->pace_since_us) {
    conn->paced_us += now - conn->pace_since_us;
    conn->pace_since_us = 0;
  }
  return FALSE;
}

/* Server thread, lock held: writes as much as the socket takes. */
void
gst_spice_sink_conn_flush (SinkConn * conn)
{
  GstSpiceSink *sink = conn->sink;
  gboolean progress = FALSE;

  if (!g_queue_is_empty (&conn->outq) && pace_hold (conn))
    return;
  if (conn->state == CONN_DATA)
    display_set_lowat (conn);

  while (conn->state != CONN_DEAD && !g_queue_is_empty (&conn->outq)) {
    GOutputVector vec[MAX_IOV];
    guint n = 0;
    GList *l;
    gsize written = 0;
    GError *err = NULL;
    GPollableReturn ret;

    for (l = conn->outq.head; l && n + 2 <= MAX_IOV; l = l->next) {
      SinkMsg *m = l->data;
      gsize done = m->done;

      if (done == 0 && m->mm_off >= 0)
        GST_WRITE_UINT32_LE (m->head + m->mm_off,
            gst_spice_sink_mm_time (sink) + sink->stream_latency);
      if (done < m->head_len) {
        vec[n].buffer = m->head + done;
        vec[n].size = m->head_len - done;
        n++;
        done = 0;
      } else {
        done -= m->head_len;
      }
      if (m->body && g_bytes_get_size (m->body) > done) {
        gsize bsize;
        const guint8 *b = g_bytes_get_data (m->body, &bsize);

        vec[n].buffer = b + done;
        vec[n].size = bsize - done;
        n++;
      }
    }
    ret = g_pollable_output_stream_writev_nonblocking (conn->out, vec, n,
        &written, NULL, &err);
    if (ret == G_POLLABLE_RETURN_WOULD_BLOCK) {
      if (!conn->out_src) {
        conn->out_src = g_pollable_output_stream_create_source (conn->out,
            NULL);
        g_source_set_callback (conn->out_src, G_SOURCE_FUNC (out_ready_cb),
            conn, NULL);
        g_source_attach (conn->out_src, sink->ctx);
      }
      break;
    }
    if (ret == G_POLLABLE_RETURN_FAILED) {
      gchar *reason = g_strdup_printf ("write failed: %s",
          err ? err->message : "?");
      g_clear_error (&err);
      gst_spice_sink_conn_close (conn, reason);
      g_free (reason);
      return;
    }
    if (written)
      progress = TRUE;
    conn->stats.bytes_out += written;
    conn->out_bytes -= MIN (written, conn->out_bytes);
    while (written && !g_queue_is_empty (&conn->outq)) {
      SinkMsg *m = g_queue_peek_head (&conn->outq);
      gsize left = msg_size (m) - m->done;

      if (written >= left) {
        written -= left;
        conn->stats.msgs_out++;
        gst_spice_sink_msg_free (g_queue_pop_head (&conn->outq));
      } else {
        m->done += written;
        written = 0;
      }
    }
  }
  if (progress)
    conn->last_progress_us = g_get_monotonic_time ();
  if (conn->state == CONN_DEAD)
    return;
  if (g_queue_is_empty (&conn->outq)) {
    if (conn->close_when_flushed) {
      gst_spice_sink_conn_close (conn, "closed after final message");
      return;
    }
    if (conn->session && conn->session->display == conn &&
        conn->session->behind)
      gst_spice_sink_session_resync (sink, conn->session);
  }
  if (progress && (!conn->session || conn->out_bytes <=
          display_queue_limit (sink, conn->session)))
    g_cond_broadcast (&sink->cond);
}

static gboolean
display_blocked (GstSpiceSink * sink, SinkSession * s)
{
  return s->display && s->display->state == CONN_DATA && !s->behind &&
      s->display->out_bytes > display_queue_limit (sink, s);
}

/* lock held: tells the tiler how big a draw update may be for the slowest
 * client's link, when that changed enough */
static GQuark draw_budget_quark;

static void
announce_draw_budget (GstSpiceSink * sink)
{
  guint budget = sink_draw_budget (sink->link_bps);
  guint last;

  if (!draw_budget_quark)
    draw_budget_quark = g_quark_from_static_string ("gst-spice-draw-budget");
  last = GPOINTER_TO_UINT (g_object_get_qdata (G_OBJECT (sink),
          draw_budget_quark));
  if (!sink->draw_pad || !sink_draw_budget_changed (last, budget))
    return;
  g_object_set_qdata (G_OBJECT (sink), draw_budget_quark,
      GUINT_TO_POINTER (budget));
  GST_DEBUG_OBJECT (sink, "draw budget %u bytes per update (link %"
      G_GUINT64_FORMAT " bit/s)", budget, sink->link_bps);
  gst_spice_sink_post_upstream (sink, sink->draw_pad,
      gst_spice_event_new_draw_budget (sink->link_bps, budget));
}

/* Render path, lock held: waits until every up-to-date display client has
 * room. After client-timeout, clients still full fall behind when they
 * stopped reading or hold up a faster client (sink_leave_behind());
 * otherwise the render keeps waiting. FALSE when flushing. */
gboolean
gst_spice_sink_wait_for_room (GstSpiceSink * sink)
{
  gint64 timeout = (gint64) sink->client_timeout * G_TIME_SPAN_MILLISECOND;
  gint64 deadline = g_get_monotonic_time () + timeout;

  announce_draw_budget (sink);
  for (;;) {
    GList *l;
    gboolean blocked = FALSE;
    gint64 now;

    if (sink->flushing)
      return FALSE;
    for (l = sink->sessions; l; l = l->next)
      blocked |= display_blocked (sink, l->data);
    if (!blocked)
      return TRUE;
    now = g_get_monotonic_time ();
    if (now >= deadline) {
      gboolean others_waiting = FALSE, left = FALSE;

      for (l = sink->sessions; l; l = l->next) {
        SinkSession *s = l->data;

        if (gst_spice_sink_session_display_ready (s) && !s->behind &&
            !s->awaiting_refresh && !display_blocked (sink, s))
          others_waiting = TRUE;
      }
      for (l = sink->sessions; l; l = l->next) {
        SinkSession *s = l->data;
        guint i;

        if (!display_blocked (sink, s))
          continue;
        if (!sink_leave_behind (now - s->display->last_progress_us < timeout,
                others_waiting))
          continue;
        left = TRUE;
        GST_WARNING_OBJECT (sink, "client %s (session %08x) fell behind "
            "(%" G_GSIZE_FORMAT " bytes queued): it will be resynchronised",
            s->peer_host, s->id, s->display->out_bytes);
        s->behind = TRUE;
        s->behind_count++;
        for (i = 0; i < SINK_MAX_STREAMS; i++)
          if (s->streams[i].created)
            s->streams[i].need_key = TRUE;
      }
      if (left)
        return TRUE;
      /* only draining slow clients: back-pressure, look again later */
      deadline = now + timeout;
      continue;
    }
    g_cond_wait_until (&sink->cond, &sink->lock, deadline);
  }
}

void
gst_spice_sink_conn_setup_socket (GstSpiceSink * sink, SinkConn * conn)
{
  gint fd = g_socket_get_fd (conn->socket);
  gint one = 1;

  if (setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof (one)) < 0)
    GST_DEBUG_OBJECT (sink, "TCP_NODELAY: %s", g_strerror (errno));
  if (sink->notsent_lowat > 0) {
    gint v = (gint) sink->notsent_lowat;

    if (setsockopt (fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &v, sizeof (v)) < 0)
      GST_WARNING_OBJECT (sink, "TCP_NOTSENT_LOWAT: %s", g_strerror (errno));
  }
}

void
gst_spice_sink_conn_update_tcp_info (SinkConn * conn)
{
  struct tcp_info ti;
  socklen_t len = sizeof (ti);

  memset (&ti, 0, sizeof (ti));
  if (getsockopt (g_socket_get_fd (conn->socket), IPPROTO_TCP, TCP_INFO, &ti,
          &len) < 0)
    return;
  conn->have_tcpi = TRUE;
  conn->tcpi_rtt_us = ti.tcpi_rtt;
  conn->tcpi_retrans = ti.tcpi_total_retrans;
  conn->tcpi_cwnd = ti.tcpi_snd_cwnd;
  if (len >= offsetof (struct tcp_info,
          tcpi_min_rtt) + sizeof (ti.tcpi_min_rtt))
      conn->tcpi_min_rtt_us = ti.tcpi_min_rtt;
  if (len >= offsetof (struct tcp_info, tcpi_notsent_bytes) +
      sizeof (ti.tcpi_notsent_bytes))
      conn->tcpi_notsent = ti.tcpi_notsent_bytes;
  if (len >= offsetof (struct tcp_info, tcpi_delivery_rate) +
      sizeof (ti.tcpi_delivery_rate))
      conn->tcpi_delivery_rate = ti.tcpi_delivery_rate;
  conn->tcpi_unacked = ti.tcpi_unacked;
  if (conn->session && conn->session->display == conn) {
    SinkLinkEstimate *e = &conn->session->link;

    e->inflight_bytes = (guint64) ti.tcpi_unacked * ti.tcpi_snd_mss;
    if (len >= offsetof (struct tcp_info, tcpi_delivery_rate) +
        sizeof (ti.tcpi_delivery_rate))
        sink_link_btl_update (e, ti.tcpi_delivery_rate * 8,
          g_get_monotonic_time ());
  }
  conn->tcpi_app_limited = ti.tcpi_delivery_rate_app_limited;
  if (len >= offsetof (struct tcp_info, tcpi_bytes_acked) +
      sizeof (ti.tcpi_bytes_acked))
      conn->tcpi_bytes_acked = ti.tcpi_bytes_acked;
}
