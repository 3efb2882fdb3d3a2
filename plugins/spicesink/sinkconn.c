/* spicesink: one client connection — link stage, framing, output queue,
 * writes, socket pacing
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Every connection runs the SPICE link handshake on its own (header, link
 * message, reply with our RSA key and capabilities, auth mechanism, 128-byte
 * ticket, result) and then carries one channel; which session it belongs to
 * is its owner's business (SinkConnHooks.on_link).
 *
 * Pacing is on the socket, not on a SPICE ACK window (we never send
 * SET_ACK): every socket gets TCP_NOTSENT_LOWAT, so it only polls writable
 * while the kernel holds less than that many unsent bytes, and the server
 * thread writes only when it is writable. The render path waits while a
 * client's user-space queue is above its limit. Once a display link is
 * estimated, both are sized in link time (sinkrate.h: a few ms of the link
 * each, at most `notsent-lowat` and `queue-size`).
 */
#include <string.h>
#include <errno.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <linux/tcp.h>

#include "sinkconn.h"
#include "sinkws.h"

#include "sinkdebug.h"

static SINK_DEBUG_CATEGORY (sink_conn_debug, "spicesinkconn",
    "spicesink connections (link stage, framing, writes)");
static SINK_DEBUG_CATEGORY (sink_pacing_debug, "spicesinkpacing",
    "spicesink socket pacing (TCP_INFO, NOTSENT_LOWAT, holds)");
#define GST_CAT_DEFAULT sink_conn_debug ()

#define READ_BUDGET 64          /* messages per dispatch */
/* bytes per dispatch: a connection that floods (valid messages too) gives
 * the others their turn on the server thread */
#define READ_BYTES_BUDGET (256 * 1024)
#define STALL_TIMEOUT_US (SINK_CONN_STALL_TIMEOUT_MS * G_TIME_SPAN_MILLISECOND)
#define MAX_IOV 32
/* raw bytes read at a time from a WebSocket client */
#define WS_READ_CHUNK (16 * 1024)

typedef enum
{
  CONN_TLS_HANDSHAKE,
  CONN_WS_UPGRADE,              /* an HTTP request where a link began */
  CONN_LINK_HEADER,
  CONN_LINK_MESS,
  CONN_AUTH_MECH,
  CONN_TICKET,
  CONN_DATA,
  CONN_DEAD,
} SinkConnState;

/* One queued server -> client message: a small head (data header + fixed
 * fields) and an optional shared body (image, frame); on a WebSocket the
 * frame header before them (ws). */
typedef struct
{
  guint8 ws[SINK_WS_FRAME_HEAD_MAX];
  guint8 ws_len;
  gboolean ws_raw;              /* already WebSocket frames (pong, close) */
  guint8 head[SINK_MSG_HEAD_MAX];
  guint16 head_len;
  gint16 mm_off;                /* offset of a u32 mm time to stamp when the
                                 * first byte is written, or -1 */
  GBytes *body;                 /* may be NULL */
  gsize done;                   /* bytes of head+body already written */
} SinkMsg;

struct _SinkConn
{
  SinkConnEnv *env;
  const SinkConnHooks *hooks;
  gpointer hooks_data;
  guint id;
  GSocket *socket;
  GIOStream *io;
  GPollableInputStream *in;
  GPollableOutputStream *out;
  GSource *in_src, *out_src, *pace_src;
  gboolean tls;
  gchar *peer;                  /* "address:port" */
  gchar *peer_host;
  gchar *source;                /* the owner's admission key */
  gint state;                   /* SinkConnState, lock held to write; read
                                 * atomically (CONN_DEAD from any thread) */
  gboolean finished;            /* sink_conn_finish() ran */
  gint64 start_us;
  gint64 last_write_us;         /* last write (or enqueue on empty) */
  gint64 last_progress_us;      /* last SINK_CONN_PROGRESS_BYTES written, or
                                 * the queue emptied (or enqueue on empty) */
  gsize progress_bytes;         /* written since last_progress_us */
  gint64 last_rx_us;            /* last byte received (server thread) */
  gsize limit;                  /* bytes it may make us hold, 0 none */
  gsize held;                   /* held for it outside the queue */
  gsize held_max;
  const gchar *held_reason, *held_what;

  /* reading (server thread) */
  guint8 *rbuf;
  gsize rlen, rneed, rcap;
  gboolean in_body;
  GstSpiceMsgHeader hdr;
  GstSpiceLinkMess link;
  gboolean mini;

  /* WebSocket (sinkws.h): on once the upgrade was answered */
  gboolean ws;
  gboolean ws_close_sent;       /* a close frame is queued or written */
  SinkWsDecoder *ws_dec;        /* server thread */
  SinkWsDeflater *ws_def;       /* lock held; NULL: no permessage-deflate */
  GByteArray *ws_in;            /* unframed client bytes not read yet */
  guint ws_in_pos;
  guint8 *ws_raw;               /* WS_READ_CHUNK */

  /* writing (lock held) */
  GQueue outq;                  /* SinkMsg* */
  gsize out_bytes;              /* unwritten bytes in outq */
  guint64 out_serial;
  gboolean close_when_flushed;
  gboolean handshake_pending;   /* TLS handshake callback outstanding */

  guint64 bytes_out, msgs_out;
  gsize bytes_in, msgs_in;      /* atomic: counted without the lock */

  /* TCP_INFO snapshot */
  gboolean have_tcpi;
  guint32 tcpi_rtt_us, tcpi_min_rtt_us, tcpi_notsent, tcpi_cwnd,
      tcpi_retrans, tcpi_unacked, tcpi_snd_mss;
  guint32 tcpi_snd_wnd;         /* the peer's receive window (0: unknown) */
  guint64 tcpi_delivery_rate;   /* bytes/s */
  guint64 tcpi_bytes_acked;
  gboolean tcpi_kernel_paced;   /* a maximum pacing rate is set */
  /* previous link sample */
  guint64 rate_last_acked;
  gint64 rate_last_us;
  gboolean rate_last_backlogged;

  /* pacing (display) */
  gboolean paced;
  gboolean tcp_pacing_on;       /* SO_MAX_PACING_RATE set */
  SinkLinkEstimate link_estimate;
  gint64 pace_since_us;         /* holding since, 0 = not holding */
  guint64 pace_holds, paced_us;
};

static void
destroy_source (GSource ** src)
{
  if (*src) {
    g_source_destroy (*src);
    g_source_unref (*src);
    *src = NULL;
  }
}

static void
msg_free (SinkMsg * m)
{
  if (m->body)
    g_bytes_unref (m->body);
  g_free (m);
}

static inline gsize
msg_size (const SinkMsg * m)
{
  return m->ws_len + m->head_len + (m->body ? g_bytes_get_size (m->body) : 0);
}

static void
clear_queue (SinkConn * conn)
{
  SinkMsg *m;

  while ((m = g_queue_pop_head (&conn->outq)))
    msg_free (m);
  conn->out_bytes = 0;
}

/* ------------------------------------------------------------ lifetime */

SinkConn *
sink_conn_new (SinkConnEnv * env, GSocket * socket, GSocketAddress * addr,
    gboolean tls, guint id)
{
  SinkConn *conn = g_new0 (SinkConn, 1);
  gint fd = g_socket_get_fd (socket);
  gint one = 1;

  conn->env = env;
  conn->socket = socket;
  conn->tls = tls;
  conn->id = id;
  conn->start_us = g_get_monotonic_time ();
  conn->last_rx_us = conn->start_us;
  /* the link stage queues a reply of a few hundred bytes; each channel
   * sets its own limit when it links */
  conn->limit = SINK_CONN_LINK_LIMIT;
  if (addr && G_IS_INET_SOCKET_ADDRESS (addr)) {
    GInetSocketAddress *ia = G_INET_SOCKET_ADDRESS (addr);
    conn->peer_host =
        g_inet_address_to_string (g_inet_socket_address_get_address (ia));
    conn->peer = g_strdup_printf ("%s:%u", conn->peer_host,
        g_inet_socket_address_get_port (ia));
  } else {
    conn->peer_host = g_strdup ("?");
    conn->peer = g_strdup ("?");
  }
  if (setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof (one)) < 0)
    GST_DEBUG ("TCP_NODELAY: %s", g_strerror (errno));
  if (env->notsent_lowat > 0) {
    gint v = (gint) env->notsent_lowat;

    if (setsockopt (fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &v, sizeof (v)) < 0)
      GST_WARNING ("TCP_NOTSENT_LOWAT: %s", g_strerror (errno));
  }
  conn->io = G_IO_STREAM (g_socket_connection_factory_create_connection
      (socket));
  return conn;
}

static inline SinkConnState
conn_state (SinkConn * conn)
{
  return (SinkConnState) g_atomic_int_get (&conn->state);
}

void
sink_conn_free (SinkConn * conn)
{
  g_assert (conn_state (conn) == CONN_DEAD && conn->finished);
  destroy_source (&conn->in_src);
  destroy_source (&conn->out_src);
  destroy_source (&conn->pace_src);
  clear_queue (conn);
  g_clear_object (&conn->io);
  g_clear_object (&conn->socket);
  g_free (conn->rbuf);
  sink_ws_decoder_free (conn->ws_dec);
  sink_ws_deflater_free (conn->ws_def);
  if (conn->ws_in)
    g_byte_array_unref (conn->ws_in);
  g_free (conn->ws_raw);
  g_free (conn->peer);
  g_free (conn->peer_host);
  g_free (conn->source);
  g_free (conn);
}

void
sink_conn_set_hooks (SinkConn * conn, const SinkConnHooks * hooks,
    gpointer user_data)
{
  conn->hooks = hooks;
  conn->hooks_data = user_data;
}

/* Lock held, any thread: a WebSocket connection that we close gets a
 * close frame first (1001, going away, with @reason: a page can tell a
 * gateway's end from a broken network, which it sees as 1006), unless
 * one went already (the client's close was answered, or a protocol error
 * had its own), a message is half written (a frame in the middle of
 * another would be garbage) or writing failed. Best effort: written now,
 * without waiting for room. */
static void
ws_close_now (SinkConn * conn, const gchar * reason)
{
  SinkMsg *head = g_queue_peek_head (&conn->outq);
  guint8 f[SINK_WS_CLOSE_FRAME_MAX];
  gsize n;

  if (!conn->ws || conn->ws_close_sent || (head && head->done > 0) ||
      g_str_has_prefix (reason, "write failed"))
    return;
  conn->ws_close_sent = TRUE;
  n = sink_ws_close_frame (f, 1001, reason);
  /* through the connection's stream: TLS frames it too (wss) */
  if (conn->out)
    (void) g_pollable_output_stream_write_nonblocking (conn->out, f, n, NULL,
        NULL);
}

/* Lock held, any thread: marks the connection dead; the server thread
 * finishes it (sink_conn_finish()). The socket is shut down, not closed:
 * the server thread may be reading it without the lock, and only it
 * closes descriptors. */
void
sink_conn_close (SinkConn * conn, const gchar * reason)
{
  SinkConnState state = conn_state (conn);

  if (state == CONN_DEAD)
    return;
  ws_close_now (conn, reason);
  if (state == CONN_DATA)
    GST_INFO ("closing channel type %u of %s: %s", conn->link.channel_type,
        conn->peer, reason);
  else
    GST_WARNING ("closing connection from %s during link: %s", conn->peer,
        reason);
  g_atomic_int_set (&conn->state, CONN_DEAD);
  clear_queue (conn);
  conn->held = 0;
  /* the peer sees the end now; the poll of a reader wakes up */
  shutdown (g_socket_get_fd (conn->socket), SHUT_RDWR);
  g_cond_broadcast (conn->env->room);
  if (conn->env->kick)
    g_source_set_ready_time (conn->env->kick, 0);
}

/* Server thread, lock held (or the loop is gone) */
gboolean
sink_conn_finish (SinkConn * conn)
{
  if (!sink_conn_needs_finish (conn))
    return FALSE;
  conn->finished = TRUE;
  destroy_source (&conn->in_src);
  destroy_source (&conn->out_src);
  destroy_source (&conn->pace_src);
  g_socket_close (conn->socket, NULL);
  if (conn->hooks && conn->hooks->on_closed)
    conn->hooks->on_closed (conn, conn->hooks_data);
  conn->hooks = NULL;
  conn->hooks_data = NULL;
  return TRUE;
}

gboolean
sink_conn_needs_finish (SinkConn * conn)
{
  return conn_state (conn) == CONN_DEAD && !conn->finished;
}

gboolean
sink_conn_is_dead (SinkConn * conn)
{
  return conn_state (conn) == CONN_DEAD;
}

gboolean
sink_conn_is_linked (SinkConn * conn)
{
  return conn && conn_state (conn) == CONN_DATA;
}

gboolean
sink_conn_is_freeable (SinkConn * conn)
{
  return conn->finished && !conn->handshake_pending;
}

guint
sink_conn_id (SinkConn * conn)
{
  return conn->id;
}

const gchar *
sink_conn_peer (SinkConn * conn)
{
  return conn->peer;
}

const gchar *
sink_conn_peer_host (SinkConn * conn)
{
  return conn->peer_host;
}

GInetSocketAddress *
sink_conn_local_address (SinkConn * conn)
{
  GSocketAddress *a = g_socket_get_local_address (conn->socket, NULL);

  if (a && !G_IS_INET_SOCKET_ADDRESS (a))
    g_clear_object (&a);
  return (GInetSocketAddress *) a;
}

void
sink_conn_set_source (SinkConn * conn, const gchar * source)
{
  g_free (conn->source);
  conn->source = g_strdup (source);
}

const gchar *
sink_conn_source (SinkConn * conn)
{
  return conn->source ? conn->source : conn->peer_host;
}

/* lock held: hands @ev to the owner (SinkConnEnv.report) */
void
sink_conn_report (SinkConn * conn, const SinkEvent * ev)
{
  if (conn->env->report)
    conn->env->report (conn, ev, conn->env->report_data);
}

gboolean
sink_conn_websocket (SinkConn * conn)
{
  return conn->ws;
}

gboolean
sink_conn_tls (SinkConn * conn)
{
  return conn->tls;
}

guint8
sink_conn_channel_type (SinkConn * conn)
{
  return conn->link.channel_type;
}

gboolean
sink_conn_has_channel_cap (SinkConn * conn, guint cap)
{
  return gst_spice_caps_test (conn->link.channel_caps, conn->link.n_channel,
      cap);
}

gint64
sink_conn_last_rx_us (SinkConn * conn)
{
  return conn->last_rx_us;
}

gsize
sink_conn_queued_bytes (SinkConn * conn)
{
  return conn->out_bytes;
}

gint64
sink_conn_last_write_us (SinkConn * conn)
{
  return conn->last_write_us;
}

void
sink_conn_counters (SinkConn * conn, SinkConnCounters * c)
{
  c->bytes_out = conn->bytes_out;
  c->msgs_out = conn->msgs_out;
  c->bytes_in = (guint64) g_atomic_pointer_get (&conn->bytes_in);
  c->msgs_in = (guint64) g_atomic_pointer_get (&conn->msgs_in);
}

SinkConnTimeout
sink_conn_check_timeouts (SinkConn * conn, gint64 now,
    guint handshake_timeout_ms)
{
  gboolean expired = now - conn->start_us >
      (gint64) handshake_timeout_ms * G_TIME_SPAN_MILLISECOND;

  if (conn_state (conn) != CONN_DATA && !conn->close_when_flushed && expired)
    return SINK_CONN_LINK_EXPIRED;
  if (conn->close_when_flushed && expired)
    return SINK_CONN_ERROR_UNREAD;
  if (!g_queue_is_empty (&conn->outq) &&
      now - conn->last_progress_us > STALL_TIMEOUT_US) {
    GST_WARNING ("%s: less than %d bytes written in %d s (stall limit), %"
        G_GSIZE_FORMAT " bytes queued", conn->peer, SINK_CONN_PROGRESS_BYTES,
        (gint) (STALL_TIMEOUT_US / G_TIME_SPAN_SECOND), conn->out_bytes);
    return SINK_CONN_STALLED;
  }
  return SINK_CONN_IN_TIME;
}

/* ------------------------------------------------------------- output */

guint32
sink_conn_env_mm_time (SinkConnEnv * env)
{
  guint32 t = (guint32) ((g_get_monotonic_time () - env->mm_base_us) /
      1000) + 1000;

  return t ? t : 1;
}

static const gchar *
limit_reason (SinkConn * conn)
{
  switch (conn->link.channel_type) {
    case SPICE_CHANNEL_MAIN:
      return "main-queue";
    case SPICE_CHANNEL_DISPLAY:
      return "display-queue";
    case SPICE_CHANNEL_INPUTS:
      return "inputs-queue";
    case SPICE_CHANNEL_CURSOR:
      return "cursor-queue";
    case SPICE_CHANNEL_PLAYBACK:
      return "playback-queue";
    case SPICE_CHANNEL_RECORD:
      return "record-queue";
    default:
      return "link-queue";
  }
}

/* lock held: closes @conn when it makes us hold more than its limit;
 * FALSE then */
static gboolean
check_limit (SinkConn * conn)
{
  SinkEvent ev = SINK_EVENT_INIT (TRUE, "queue-limit", NULL);
  gchar *detail;

  if (conn->held > conn->held_max) {
    ev.reason = conn->held_reason;
    ev.limit = (guint) MIN (conn->held_max, (gsize) G_MAXUINT);
    detail = g_strdup_printf ("%s: %" G_GSIZE_FORMAT " bytes held for the "
        "client (limit %" G_GSIZE_FORMAT ")", conn->held_what, conn->held,
        conn->held_max);
  } else if (conn->limit && conn->out_bytes + conn->held > conn->limit) {
    ev.reason = limit_reason (conn);
    ev.limit = (guint) MIN (conn->limit, (gsize) G_MAXUINT);
    detail = g_strdup_printf ("the client does not read: %" G_GSIZE_FORMAT
        " bytes queued and %" G_GSIZE_FORMAT " held for it (limit %"
        G_GSIZE_FORMAT ")", conn->out_bytes, conn->held, conn->limit);
  } else {
    return TRUE;
  }
  ev.detail = detail;
  GST_WARNING ("%s: channel type %u closed (%s): %s", conn->peer,
      conn->link.channel_type, ev.reason, detail);
  sink_conn_report (conn, &ev);
  sink_conn_close (conn, ev.reason);
  g_free (detail);
  return FALSE;
}

void
sink_conn_set_limit (SinkConn * conn, gsize max_bytes)
{
  conn->limit = max_bytes;
  check_limit (conn);
}

gboolean
sink_conn_hold (SinkConn * conn, gsize bytes, gsize max, const gchar * reason,
    const gchar * what)
{
  if (conn_state (conn) == CONN_DEAD)
    return FALSE;
  conn->held = bytes;
  conn->held_max = max;
  conn->held_reason = reason;
  conn->held_what = what;
  return check_limit (conn);
}

/* Lock held: @m as one binary WebSocket message. With permessage-deflate
 * it is compressed now, its mm time stamped now (a compressed message
 * cannot be stamped at its first write); the queue holds, and pacing
 * counts, the bytes that go on the wire. */
static void
ws_frame (SinkConn * conn, SinkMsg * m)
{
  gsize blen = m->body ? g_bytes_get_size (m->body) : 0;

  if (conn->ws_def) {
    const guint8 *piece[2] = { m->head,
      m->body ? g_bytes_get_data (m->body, NULL) : NULL
    };
    gsize len[2] = { m->head_len, blen };
    GByteArray *z = g_byte_array_sized_new ((guint) (m->head_len + blen / 2));

    if (m->mm_off >= 0)
      GST_WRITE_UINT32_LE (m->head + m->mm_off,
          sink_conn_env_mm_time (conn->env) + conn->env->stream_latency);
    sink_ws_deflater_message (conn->ws_def, piece, len, blen ? 2 : 1, z);
    if (m->body)
      g_bytes_unref (m->body);
    m->body = g_byte_array_free_to_bytes (z);
    m->head_len = 0;
    m->mm_off = -1;
    blen = g_bytes_get_size (m->body);
  }
  m->ws_len = (guint8) sink_ws_frame_head (m->ws, SINK_WS_OP_BINARY,
      conn->ws_def != NULL, m->head_len + blen);
}

/* lock held */
static void
send_msg (SinkConn * conn, SinkMsg * m)
{
  if (conn_state (conn) == CONN_DEAD) {
    msg_free (m);
    return;
  }
  if (conn->ws && !m->ws_raw)
    ws_frame (conn, m);
  if (g_queue_is_empty (&conn->outq)) {
    conn->last_write_us = conn->last_progress_us = g_get_monotonic_time ();
    conn->progress_bytes = 0;
  }
  g_queue_push_tail (&conn->outq, m);
  conn->out_bytes += msg_size (m);
  if (!check_limit (conn))
    return;
  if (conn->env->kick)
    g_source_set_ready_time (conn->env->kick, 0);
}

static SinkMsg *
msg_new (SinkConn * conn, guint16 type, const guint8 * fixed, gsize flen,
    GBytes * body)
{
  SinkMsg *m = g_new (SinkMsg, 1);
  gsize hsize = gst_spice_wire_header_size (conn->mini);
  gsize blen = body ? g_bytes_get_size (body) : 0;

  g_assert (hsize + flen <= SINK_MSG_HEAD_MAX);
  gst_spice_wire_put_header (m->head, conn->mini, ++conn->out_serial, type,
      (guint32) (flen + blen));
  if (flen)
    memcpy (m->head + hsize, fixed, flen);
  m->head_len = (guint16) (hsize + flen);
  m->ws_len = 0;
  m->ws_raw = FALSE;
  m->mm_off = -1;
  m->body = body ? g_bytes_ref (body) : NULL;
  m->done = 0;
  return m;
}

void
sink_conn_send (SinkConn * conn, guint16 type, const GByteArray * fixed,
    GBytes * body)
{
  send_msg (conn, msg_new (conn, type, fixed ? fixed->data : NULL,
          fixed ? fixed->len : 0, body));
}

void
sink_conn_send_bytes (SinkConn * conn, guint16 type, GBytes * fixed,
    gint mm_off, GBytes * body)
{
  gsize flen;
  const guint8 *f = g_bytes_get_data (fixed, &flen);
  SinkMsg *m = msg_new (conn, type, f, flen, body);

  if (mm_off >= 0)
    m->mm_off = (gint16) (gst_spice_wire_header_size (conn->mini) + mm_off);
  send_msg (conn, m);
}

/* link-stage data: no data header; kept in the body */
static void
send_raw (SinkConn * conn, GByteArray * data)
{
  SinkMsg *m = g_new0 (SinkMsg, 1);

  m->mm_off = -1;
  m->body = g_byte_array_free_to_bytes (g_byte_array_ref (data));
  send_msg (conn, m);
}

/* lock held: WebSocket frames made by sinkws.c (pong, close), or the
 * HTTP answer before the upgrade */
static void
send_ws_raw (SinkConn * conn, const guint8 * data, gsize len)
{
  SinkMsg *m = g_new0 (SinkMsg, 1);

  m->mm_off = -1;
  m->ws_raw = TRUE;
  m->body = g_bytes_new (data, len);
  send_msg (conn, m);
}

gboolean
sink_conn_has_queued (SinkConn * conn)
{
  return conn_state (conn) != CONN_DEAD && !g_queue_is_empty (&conn->outq);
}

/* ------------------------------------------------------------- pacing */

static gsize
queue_limit (SinkConn * conn)
{
  return sink_link_bytes (conn->link_estimate.bps, SINK_QUEUE_LINK_MS,
      conn->env->queue_size);
}

/* Lock held, any thread. Turns Linux's internal TCP pacing on for a
 * display socket (once; when the tcp-pacing property is on): a maximum
 * pacing rate other than "unlimited" makes the stack space the segments at
 * its own rate (about 1.2x cwnd/srtt) where it would send a whole
 * congestion window at once; the maximum itself is left as high as it
 * goes, so TCP's rate, not our estimate, sets the pace. */
void
sink_conn_enable_tcp_pacing (SinkConn * conn)
{
  guint64 max_rate = G_MAXUINT64 - 1;

  if (!conn->env->tcp_pacing || !conn->socket || conn->tcp_pacing_on)
    return;
  conn->tcp_pacing_on = TRUE;
  if (setsockopt (g_socket_get_fd (conn->socket), SOL_SOCKET,
          SO_MAX_PACING_RATE, &max_rate, sizeof (max_rate)) < 0)
    GST_CAT_WARNING (sink_pacing_debug (), "%s: SO_MAX_PACING_RATE: %s",
        conn->peer, g_strerror (errno));
  else
    GST_CAT_DEBUG (sink_pacing_debug (), "%s: TCP pacing on", conn->peer);
}

void
sink_conn_set_paced (SinkConn * conn, gboolean paced)
{
  conn->paced = paced;
}

gboolean
sink_conn_queue_full (SinkConn * conn)
{
  return conn_state (conn) == CONN_DATA && conn->out_bytes > queue_limit (conn);
}

const SinkLinkEstimate *
sink_conn_link (SinkConn * conn)
{
  return &conn->link_estimate;
}

/* Server thread: TCP_NOTSENT_LOWAT of a display socket follows the link
 * estimate (a few ms of the link, at most the notsent-lowat property). */
static void
set_lowat (SinkConn * conn)
{
  gint fd, want, cur = 0;
  socklen_t len = sizeof (cur);

  if (conn->env->notsent_lowat == 0 || !conn->paced || !conn->socket)
    return;
  want = (gint) sink_link_bytes (conn->link_estimate.bps,
      SINK_NOTSENT_LINK_MS, conn->env->notsent_lowat);
  fd = g_socket_get_fd (conn->socket);
  if (getsockopt (fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &cur, &len) == 0 &&
      cur == want)
    return;
  if (setsockopt (fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &want, sizeof (want)) < 0)
    GST_CAT_DEBUG (sink_pacing_debug (), "TCP_NOTSENT_LOWAT: %s",
        g_strerror (errno));
  else
    GST_CAT_DEBUG (sink_pacing_debug (), "%s: notsent-lowat %d (link %"
        G_GUINT64_FORMAT " bit/s)", conn->peer, want, conn->link_estimate.bps);
}

void
sink_conn_update_tcp_info (SinkConn * conn)
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
  if (len >= offsetof (struct tcp_info, tcpi_max_pacing_rate) +
      sizeof (ti.tcpi_max_pacing_rate))
      conn->tcpi_kernel_paced = ti.tcpi_max_pacing_rate != G_MAXUINT64;
  if (conn->paced) {
    SinkLinkEstimate *e = &conn->link_estimate;

    e->inflight_bytes = (guint64) ti.tcpi_unacked * ti.tcpi_snd_mss;
    if (len >= offsetof (struct tcp_info, tcpi_delivery_rate) +
        sizeof (ti.tcpi_delivery_rate))
        sink_link_btl_update (e, ti.tcpi_delivery_rate * 8,
          g_get_monotonic_time ());
  }
  if (len >= offsetof (struct tcp_info, tcpi_bytes_acked) +
      sizeof (ti.tcpi_bytes_acked))
      conn->tcpi_bytes_acked = ti.tcpi_bytes_acked;
  conn->tcpi_snd_mss = ti.tcpi_snd_mss;
  if (len >= offsetof (struct tcp_info, tcpi_snd_wnd) +
      sizeof (ti.tcpi_snd_wnd))
      conn->tcpi_snd_wnd = ti.tcpi_snd_wnd;
}

/* Lock held, any thread. Whether the peer still reads, as TCP sees it
 * now: its advertised receive window (TCP_INFO's tcpi_snd_wnd) holds at
 * least a segment. A client that stops reading closes it once its receive
 * buffer is full; a client behind a retransmission timeout or our own
 * pacing keeps it open. FALSE when the kernel does not say. */
gboolean
sink_conn_peer_reading (SinkConn * conn)
{
  if (!conn->socket)
    return FALSE;
  conn->tcpi_snd_wnd = 0;
  sink_conn_update_tcp_info (conn);
  return conn->tcpi_snd_wnd >= MAX (conn->tcpi_snd_mss, 1);
}

void
sink_conn_sample_link (SinkConn * conn, gint64 now)
{
  gboolean backlogged;

  if (!conn->have_tcpi)
    return;
  backlogged = conn->out_bytes > 0;
  if (conn->rate_last_us) {
    SinkLinkSample smp;

    sink_link_sample_make (&smp, conn->tcpi_delivery_rate,
        conn->tcpi_bytes_acked - conn->rate_last_acked,
        now - conn->rate_last_us, backlogged && conn->rate_last_backlogged,
        conn->tcpi_rtt_us, conn->tcpi_min_rtt_us);
    sink_link_estimate_update (&conn->link_estimate, &smp);
    GST_CAT_LOG (sink_rate_debug, "%s: sample %" G_GUINT64_FORMAT " bit/s%s, "
        "rtt %u us (min %u), unacked %u, queued %" G_GSIZE_FORMAT
        " -> estimate %" G_GUINT64_FORMAT " bit/s", conn->peer_host,
        smp.delivery_bps, smp.app_limited ? " (app-limited)" : "",
        smp.rtt_us, smp.min_rtt_us, conn->tcpi_unacked, conn->out_bytes,
        conn->link_estimate.bps);
  }
  conn->rate_last_us = now;
  conn->rate_last_acked = conn->tcpi_bytes_acked;
  conn->rate_last_backlogged = backlogged;
}

void
sink_conn_tcp_stats (SinkConn * conn, GstStructure * s)
{
  if (!conn->have_tcpi)
    return;
  gst_structure_set (s,
      "socket-queue-bytes", G_TYPE_UINT, conn->tcpi_notsent,
      "tcp-rtt-us", G_TYPE_UINT, conn->tcpi_rtt_us,
      "tcp-min-rtt-us", G_TYPE_UINT, conn->tcpi_min_rtt_us,
      "tcp-delivery-rate", G_TYPE_UINT64, conn->tcpi_delivery_rate,
      "tcp-cwnd", G_TYPE_UINT, conn->tcpi_cwnd,
      "tcp-retransmits", G_TYPE_UINT, conn->tcpi_retrans,
      "tcp-peer-window", G_TYPE_UINT, conn->tcpi_snd_wnd,
      "tcp-paced", G_TYPE_BOOLEAN, conn->tcpi_kernel_paced,
      "link-estimate-bps", G_TYPE_UINT64, conn->link_estimate.bps,
      "queue-delay-us", G_TYPE_UINT, conn->link_estimate.queue_delay_us,
      "pace-holds", G_TYPE_UINT64, conn->pace_holds,
      "paced-ms", G_TYPE_UINT64, conn->paced_us / 1000, NULL);
}

static gboolean
pace_ready_cb (gpointer user_data)
{
  SinkConn *conn = user_data;

  g_mutex_lock (conn->env->lock);
  destroy_source (&conn->pace_src);
  sink_conn_flush (conn);
  g_mutex_unlock (conn->env->lock);
  return G_SOURCE_REMOVE;
}

/* whether a display socket has its in-flight cap (sink_inflight_cap())
 * or more unacknowledged while a queue builds (sink_inflight_hold()) */
static gboolean
inflight_full (SinkConn * conn)
{
  SinkLinkEstimate *e = &conn->link_estimate;
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
  if (!conn->paced || conn_state (conn) != CONN_DATA)
    return FALSE;
  sink_conn_update_tcp_info (conn);
  now = g_get_monotonic_time ();
  if (conn->have_tcpi && (sink_pace_should_hold (conn->tcpi_rtt_us,
              conn->tcpi_min_rtt_us, conn->tcpi_unacked,
              conn->pace_since_us ? now - conn->pace_since_us : 0) ||
          inflight_full (conn))) {
    if (!conn->pace_since_us) {
      conn->pace_since_us = now;
      conn->pace_holds++;
      GST_CAT_LOG (sink_pacing_debug (), "%s: queueing delay %u us, holding "
          "writes", conn->peer, conn->tcpi_rtt_us - conn->tcpi_min_rtt_us);
    }
    conn->pace_src = g_timeout_source_new (5);
    g_source_set_callback (conn->pace_src, pace_ready_cb, conn, NULL);
    g_source_attach (conn->pace_src, conn->env->ctx);
    return TRUE;
  }
  if (conn->pace_since_us) {
    conn->paced_us += now - conn->pace_since_us;
    conn->pace_since_us = 0;
  }
  return FALSE;
}

/* ------------------------------------------------------------- writing */

static gboolean
out_ready_cb (GObject * stream, gpointer user_data)
{
  SinkConn *conn = user_data;

  g_mutex_lock (conn->env->lock);
  destroy_source (&conn->out_src);
  sink_conn_flush (conn);
  g_mutex_unlock (conn->env->lock);
  return G_SOURCE_REMOVE;
}

/* Lock held: writes as much as the socket takes. On the server thread
 * (@server_thread) also what follows: a failed write closes, an emptied
 * queue is reported (on_drained) or closes after a final message. From
 * any other thread only data-stage writes are made, and a failure is left
 * to the server thread (the kick that follows every enqueue). */
static void
write_queue (SinkConn * conn, gboolean server_thread)
{
  SinkConnEnv *env = conn->env;
  gboolean progress = FALSE;

  if (conn_state (conn) == CONN_DEAD || conn->out_src)
    return;
  if (!server_thread && (conn_state (conn) != CONN_DATA ||
          conn->close_when_flushed || g_queue_is_empty (&conn->outq)))
    return;
  if (!g_queue_is_empty (&conn->outq) && pace_hold (conn))
    return;
  if (conn_state (conn) == CONN_DATA && server_thread)
    set_lowat (conn);

  while (conn_state (conn) != CONN_DEAD && !g_queue_is_empty (&conn->outq)) {
    GOutputVector vec[MAX_IOV];
    guint n = 0;
    GList *l;
    gsize written = 0;
    GError *err = NULL;
    GPollableReturn ret;

    for (l = conn->outq.head; l && n + 3 <= MAX_IOV; l = l->next) {
      SinkMsg *m = l->data;
      gsize done = m->done;

      if (done == 0 && m->mm_off >= 0)
        GST_WRITE_UINT32_LE (m->head + m->mm_off,
            sink_conn_env_mm_time (env) + env->stream_latency);
      if (done < m->ws_len) {
        vec[n].buffer = m->ws + done;
        vec[n].size = m->ws_len - done;
        n++;
        done = 0;
      } else {
        done -= m->ws_len;
      }
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
      conn->out_src = g_pollable_output_stream_create_source (conn->out, NULL);
      g_source_set_callback (conn->out_src, G_SOURCE_FUNC (out_ready_cb),
          conn, NULL);
      g_source_attach (conn->out_src, env->ctx);
      break;
    }
    if (ret == G_POLLABLE_RETURN_FAILED && !server_thread) {
      g_clear_error (&err);
      break;
    }
    if (ret == G_POLLABLE_RETURN_FAILED) {
      gchar *reason = g_strdup_printf ("write failed: %s",
          err ? err->message : "?");
      g_clear_error (&err);
      sink_conn_close (conn, reason);
      g_free (reason);
      return;
    }
    if (written)
      progress = TRUE;
    conn->bytes_out += written;
    conn->progress_bytes += written;
    conn->out_bytes -= MIN (written, conn->out_bytes);
    while (written && !g_queue_is_empty (&conn->outq)) {
      SinkMsg *m = g_queue_peek_head (&conn->outq);
      gsize left = msg_size (m) - m->done;

      if (written >= left) {
        written -= left;
        conn->msgs_out++;
        msg_free (g_queue_pop_head (&conn->outq));
      } else {
        m->done += written;
        written = 0;
      }
    }
  }
  if (progress) {
    gint64 now = g_get_monotonic_time ();

    conn->last_write_us = now;
    if (conn->progress_bytes >= SINK_CONN_PROGRESS_BYTES ||
        g_queue_is_empty (&conn->outq)) {
      conn->last_progress_us = now;
      conn->progress_bytes = 0;
    }
  }
  if (conn_state (conn) == CONN_DEAD)
    return;
  if (g_queue_is_empty (&conn->outq) && server_thread) {
    if (conn->close_when_flushed) {
      sink_conn_close (conn, "closed after final message");
      return;
    }
    if (conn_state (conn) == CONN_DATA && conn->hooks &&
        conn->hooks->on_drained)
      conn->hooks->on_drained (conn, conn->hooks_data);
  }
  if (progress && (!conn->paced || conn->out_bytes <= queue_limit (conn)))
    g_cond_broadcast (env->room);
}

/* Server thread, lock held: writes as much as the socket takes. */
void
sink_conn_flush (SinkConn * conn)
{
  write_queue (conn, TRUE);
}

/* The render path, lock held: a draw goes to the socket at once instead of
 * waiting for the server thread to be scheduled (on two cores that wait
 * was up to 2 ms at the LAN p95 of a key press's echo). */
void
sink_conn_write_now (SinkConn * conn)
{
  write_queue (conn, FALSE);
}

/* ----------------------------------------------------------- link stage */

/* server thread, lock held: the next stage reads @need bytes; a dead
 * connection stays dead */
static void
set_need (SinkConn * conn, SinkConnState state, gsize need)
{
  if (conn_state (conn) == CONN_DEAD)
    return;
  g_atomic_int_set (&conn->state, state);
  conn->rneed = need;
  conn->rlen = 0;
  if (need > conn->rcap) {
    conn->rcap = MAX (need, 256);
    conn->rbuf = g_realloc (conn->rbuf, conn->rcap);
  }
}

static void
stop_reading (SinkConn * conn)
{
  conn->close_when_flushed = TRUE;
  conn->rneed = 0;
  destroy_source (&conn->in_src);
}

/* lock held: @token is the event's reason (bad-message in the link
 * stage), @reason the text */
static void
link_error (SinkConn * conn, guint32 err, const gchar * token,
    const gchar * reason)
{
  GByteArray *a = g_byte_array_new ();
  SinkEvent ev = SINK_EVENT_INIT (FALSE, "bad-message", token);

  GST_WARNING ("link from %s refused (error %u): %s", conn->peer, err, reason);
  ev.detail = reason;
  sink_conn_report (conn, &ev);
  gst_spice_wire_write_link_reply (a, err, NULL, NULL, 0, NULL, 0);
  send_raw (conn, a);
  g_byte_array_unref (a);
  stop_reading (conn);
  sink_conn_flush (conn);
}

/* lock held */
static void
link_result (SinkConn * conn, guint32 result, const gchar * reason)
{
  GByteArray *a = g_byte_array_new ();

  gst_spice_put_u32 (a, result);
  send_raw (conn, a);
  g_byte_array_unref (a);
  if (result != SPICE_LINK_ERR_OK) {
    GST_WARNING ("link from %s refused (result %u): %s", conn->peer, result,
        reason ? reason : "");
    stop_reading (conn);
  }
  sink_conn_flush (conn);
}

static guint32
common_caps (void)
{
  guint32 w = 0;

  gst_spice_caps_set (&w, 1, SPICE_COMMON_CAP_PROTOCOL_AUTH_SELECTION);
  gst_spice_caps_set (&w, 1, SPICE_COMMON_CAP_AUTH_SPICE);
  gst_spice_caps_set (&w, 1, SPICE_COMMON_CAP_MINI_HEADER);
  /* never AUTH_SASL: spice-gtk would pick it */
  return w;
}

/* lock held */
static void
handle_link_mess (SinkConn * conn)
{
  GstSpiceLinkMess *m = &conn->link;
  GByteArray *a;
  guint32 common = common_caps ();
  guint32 channel;
  const guint8 *pub;

  if (!gst_spice_wire_parse_link_mess (conn->rbuf, conn->rlen, m)) {
    link_error (conn, SPICE_LINK_ERR_INVALID_DATA, "malformed-link",
        "malformed link message");
    return;
  }
  conn->mini = gst_spice_caps_test (m->common_caps, m->n_common,
      SPICE_COMMON_CAP_MINI_HEADER);
  if (m->channel_type >= SPICE_END_CHANNEL ||
      !conn->env->channel_served[m->channel_type] || m->channel_id != 0) {
    link_error (conn, SPICE_LINK_ERR_CHANNEL_NOT_AVAILABLE,
        "channel-not-served", "channel not served");
    return;
  }
  channel = conn->env->channel_caps[m->channel_type];
  pub = gst_spice_ticket_key_get_public (conn->env->ticket_key, NULL);
  a = g_byte_array_new ();
  gst_spice_wire_write_link_reply (a, SPICE_LINK_ERR_OK, pub, &common, 1,
      &channel, 1);
  send_raw (conn, a);
  g_byte_array_unref (a);
  sink_conn_flush (conn);
  /* the write may have failed: the connection is dead, nothing follows */
  if (conn_state (conn) == CONN_DEAD)
    return;
  if (gst_spice_caps_test (m->common_caps, m->n_common,
          SPICE_COMMON_CAP_PROTOCOL_AUTH_SELECTION))
    set_need (conn, CONN_AUTH_MECH, 4);
  else
    set_need (conn, CONN_TICKET, GST_SPICE_WIRE_TICKET_SIZE);
}

/* Server thread, lock held. on_link may have attached the connection to
 * a session; if the result cannot be written, the connection is dead and
 * its on_closed (from sink_conn_finish()) detaches it: nothing here goes
 * on with it. */
static void
handle_ticket (SinkConn * conn)
{
  const gchar *reason = NULL;
  guint32 result = SPICE_LINK_ERR_ERROR;

  if (conn->hooks && conn->hooks->on_link)
    result = conn->hooks->on_link (conn, &conn->link, conn->rbuf, conn->rlen,
        &reason, conn->hooks_data);
  if (conn_state (conn) == CONN_DEAD)
    return;
  link_result (conn, result, reason);
  if (result != SPICE_LINK_ERR_OK || conn_state (conn) == CONN_DEAD)
    return;
  GST_INFO ("%s: linked channel type %u%s", conn->peer,
      conn->link.channel_type, conn->tls ? " (TLS)" : "");
  set_need (conn, CONN_DATA, gst_spice_wire_header_size (conn->mini));
  conn->in_body = FALSE;
  if (conn->hooks && conn->hooks->on_linked)
    conn->hooks->on_linked (conn, conn->hooks_data);
}

/* ------------------------------------------------------------- reading */

static void
close_locked (SinkConn * conn, const gchar * reason)
{
  g_mutex_lock (conn->env->lock);
  sink_conn_close (conn, reason);
  g_mutex_unlock (conn->env->lock);
}

/* Server thread, lock NOT held: checks a data message header; FALSE when
 * it closed the connection. */
static gboolean
check_header (SinkConn * conn)
{
  GstSpiceMsgHeader *h = &conn->hdr;
  guint8 type = conn->link.channel_type;
  guint32 min, max;
  gchar *r = NULL;
  SinkEvent ev = SINK_EVENT_INIT (FALSE, "bad-message", NULL);

  if (!gst_spice_wire_parse_header (conn->rbuf, conn->rlen, conn->mini, h)) {
    r = g_strdup ("malformed message header");
    ev.reason = "malformed-header";
  } else if (!gst_spice_wire_client_msg_limits (type, h->type, &min, &max)) {
    r = g_strdup_printf ("unexpected message type %u", h->type);
    ev.reason = "unexpected-type";
  } else if (h->size < min || h->size > max) {
    r = g_strdup_printf ("message %s has bad size %u (allowed %u..%u)",
        gst_spice_wire_client_msg_name (type, h->type), h->size, min, max);
    ev.reason = "bad-size";
    ev.limit = max;
  }
  if (!r)
    return TRUE;
  GST_WARNING ("%s: %s", conn->peer, r);
  ev.detail = r;
  if (ev.reason != NULL && g_strcmp0 (ev.reason, "malformed-header") != 0) {
    ev.msg_type = h->type;
    ev.msg_size = (gint) MIN (h->size, (guint32) G_MAXINT);
  }
  g_mutex_lock (conn->env->lock);
  conn->env->closed_bad_message++;
  sink_conn_report (conn, &ev);
  sink_conn_close (conn, r);
  g_mutex_unlock (conn->env->lock);
  g_free (r);
  return FALSE;
}

/* Server thread, lock held: an upgrade refused with HTTP @status; the
 * event's reason is @token */
static void
ws_refuse (SinkConn * conn, guint status, const gchar * event,
    const gchar * token, guint limit, const gchar * why)
{
  SinkEvent ev = SINK_EVENT_INIT (FALSE, event, token);
  gchar *answer = sink_ws_refusal (status, why);

  GST_WARNING ("WebSocket upgrade from %s refused (HTTP %u): %s", conn->peer,
      status, why);
  ev.limit = limit;
  ev.detail = why;
  sink_conn_report (conn, &ev);
  send_ws_raw (conn, (const guint8 *) answer, strlen (answer));
  g_free (answer);
  stop_reading (conn);
  sink_conn_flush (conn);
}

/* Server thread, lock held: the client's bytes after the upgrade go
 * through the decoder; its replies (pong, close) are queued. FALSE when
 * the client closed the WebSocket or broke its framing: the connection
 * ends once the replies are written. */
static gboolean
ws_feed (SinkConn * conn, const guint8 * raw, gsize len)
{
  SinkWsDecodeOut out = { 0 };
  SinkWsDecodeResult res;

  out.replies = g_byte_array_new ();
  res = sink_ws_decoder_feed (conn->ws_dec, raw, len, conn->ws_in, &out);
  if (out.replies->len)
    send_ws_raw (conn, out.replies->data, out.replies->len);
  g_byte_array_unref (out.replies);
  /* the decoder's replies to a close or an error end with a close */
  conn->ws_close_sent |= res != SINK_WS_DECODE_OK;
  if (res == SINK_WS_DECODE_CLOSED) {
    GST_INFO ("%s: the client closed its WebSocket (code %u)", conn->peer,
        out.close_code);
    stop_reading (conn);
  } else if (res == SINK_WS_DECODE_ERROR) {
    SinkEvent ev = SINK_EVENT_INIT (FALSE, "bad-message", out.reason);

    GST_WARNING ("%s: WebSocket closed (%u): %s", conn->peer, out.close_code,
        out.detail);
    ev.detail = out.detail;
    if (g_str_has_prefix (out.reason, "ws-message") ||
        g_str_has_prefix (out.reason, "ws-inflate"))
      ev.limit = SINK_WS_MESSAGE_MAX;
    conn->env->closed_bad_message++;
    sink_conn_report (conn, &ev);
    g_free (out.detail);
    stop_reading (conn);
  }
  if (res != SINK_WS_DECODE_OK)
    sink_conn_flush (conn);
  return res == SINK_WS_DECODE_OK;
}

/* Server thread, lock NOT held: the HTTP request read so far is in rbuf;
 * answers it once complete (or refuses it), and from then on the
 * connection carries SPICE in WebSocket frames, from its link header. */
static void
ws_upgrade (SinkConn * conn)
{
  SinkWsRequest req;
  gsize consumed = 0;
  guint status = 400;
  const gchar *why = NULL;
  SinkWsRequestResult res;
  gchar *answer;

  res = sink_ws_parse_request (conn->rbuf, conn->rlen, &consumed, &req,
      &status, &why);
  if (res == SINK_WS_REQUEST_INCOMPLETE)
    return;
  g_mutex_lock (conn->env->lock);
  if (res == SINK_WS_REQUEST_TOO_LARGE) {
    ws_refuse (conn, 400, "bad-message", "ws-upgrade-size",
        SINK_WS_REQUEST_MAX, why);
  } else if (res == SINK_WS_REQUEST_BAD) {
    ws_refuse (conn, status, "bad-message", "ws-upgrade", 0, why);
  } else if (!sink_ws_origin_allowed (conn->env->allowed_origins, req.origin)) {
    gchar *r = g_strdup_printf ("origin %s not in allowed-origins",
        req.origin ? req.origin : "(none)");

    ws_refuse (conn, 403, "refused", "ws-origin", 0, r);
    g_free (r);
  } else {
    GST_INFO ("%s: WebSocket upgrade of %s (origin %s%s%s)", conn->peer,
        req.path, req.origin ? req.origin : "none",
        req.protocol_binary ? ", binary" : "",
        req.deflate ? ", permessage-deflate" : "");
    answer = sink_ws_accept_response (&req, TRUE);
    send_ws_raw (conn, (const guint8 *) answer, strlen (answer));
    g_free (answer);
    conn->ws = TRUE;
    conn->ws_dec = sink_ws_decoder_new (req.deflate, SINK_WS_MESSAGE_MAX);
    if (req.deflate)
      conn->ws_def = sink_ws_deflater_new (req.server_max_window_bits,
          req.server_no_context_takeover);
    conn->ws_in = g_byte_array_new ();
    conn->ws_raw = g_malloc (WS_READ_CHUNK);
    sink_conn_flush (conn);
    if (conn_state (conn) != CONN_DEAD) {
      gsize extra = conn->rlen - consumed;

      /* a client that did not wait for the answer: its first frames */
      if (extra)
        memcpy (conn->ws_raw, conn->rbuf + consumed, extra);
      set_need (conn, CONN_LINK_HEADER, GST_SPICE_WIRE_LINK_HEADER_SIZE);
      if (extra)
        ws_feed (conn, conn->ws_raw, extra);
    }
  }
  sink_ws_request_clear (&req);
  g_mutex_unlock (conn->env->lock);
}

/* Server thread, lock not held: reads what the client sent, at most @len
 * bytes; on a WebSocket the bytes its frames carry. Like
 * g_pollable_input_stream_read_nonblocking(): 0 at the end, -1 and @err
 * (WOULD_BLOCK too when the WebSocket ends after a close frame, the
 * connection then closes once its answer is written). */
static gssize
conn_read (SinkConn * conn, guint8 * buf, gsize len, GError ** err)
{
  gsize avail;

  if (!conn->ws)
    return g_pollable_input_stream_read_nonblocking (conn->in, buf, len,
        NULL, err);
  while (conn->ws_in_pos == conn->ws_in->len) {
    gssize n;
    gboolean go_on;

    g_byte_array_set_size (conn->ws_in, 0);
    conn->ws_in_pos = 0;
    n = g_pollable_input_stream_read_nonblocking (conn->in, conn->ws_raw,
        WS_READ_CHUNK, NULL, err);
    if (n <= 0)
      return n;
    g_mutex_lock (conn->env->lock);
    go_on = ws_feed (conn, conn->ws_raw, n);
    g_mutex_unlock (conn->env->lock);
    if (!go_on) {
      g_set_error_literal (err, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK,
          "WebSocket closed");
      return -1;
    }
  }
  avail = conn->ws_in->len - conn->ws_in_pos;
  len = MIN (len, avail);
  memcpy (buf, conn->ws_in->data + conn->ws_in_pos, len);
  conn->ws_in_pos += len;
  return len;
}

/* Server thread, lock NOT held: a complete chunk (conn->rneed bytes) is
 * in rbuf. The link stage takes the lock; data messages go to on_message
 * without it. */
static void
process_chunk (SinkConn * conn)
{
  switch (conn_state (conn)) {
    case CONN_WS_UPGRADE:
      ws_upgrade (conn);
      break;
    case CONN_LINK_HEADER:{
      GstSpiceLinkHeader h;
      guint32 err;

      if (!conn->ws && sink_ws_is_request (conn->rbuf, conn->rlen)) {
        /* a browser: the request is read whole, up to its bound */
        g_atomic_int_set (&conn->state, CONN_WS_UPGRADE);
        conn->rcap = MAX (conn->rcap, SINK_WS_REQUEST_MAX);
        conn->rbuf = g_realloc (conn->rbuf, conn->rcap);
        conn->rneed = SINK_WS_REQUEST_MAX;
        ws_upgrade (conn);
        break;
      }
      g_mutex_lock (conn->env->lock);
      if (!gst_spice_wire_parse_link_header (conn->rbuf, conn->rlen,
              GST_SPICE_WIRE_LINK_MESS_SIZE, &h, &err))
        link_error (conn, err, err == SPICE_LINK_ERR_INVALID_MAGIC ?
            "wrong-magic" : err == SPICE_LINK_ERR_VERSION_MISMATCH ?
            "version-mismatch" : "bad-link-size",
            err == SPICE_LINK_ERR_INVALID_MAGIC ? "wrong magic" :
            err == SPICE_LINK_ERR_VERSION_MISMATCH ?
            "unsupported protocol version" : "bad link message size");
      else
        set_need (conn, CONN_LINK_MESS, h.size);
      g_mutex_unlock (conn->env->lock);
      break;
    }
    case CONN_LINK_MESS:
      g_mutex_lock (conn->env->lock);
      handle_link_mess (conn);
      g_mutex_unlock (conn->env->lock);
      break;
    case CONN_AUTH_MECH:
      g_mutex_lock (conn->env->lock);
      if (GST_READ_UINT32_LE (conn->rbuf) != SPICE_COMMON_CAP_AUTH_SPICE) {
        SinkEvent ev = SINK_EVENT_INIT (FALSE, "bad-message", "auth-mechanism");

        ev.detail = "unsupported auth mechanism";
        sink_conn_report (conn, &ev);
        link_result (conn, SPICE_LINK_ERR_INVALID_DATA, ev.detail);
      } else
        set_need (conn, CONN_TICKET, GST_SPICE_WIRE_TICKET_SIZE);
      g_mutex_unlock (conn->env->lock);
      break;
    case CONN_TICKET:
      g_mutex_lock (conn->env->lock);
      handle_ticket (conn);
      g_mutex_unlock (conn->env->lock);
      break;
    case CONN_DATA:
      if (!conn->in_body) {
        if (!check_header (conn))
          return;
        if (conn->hdr.size > 0) {
          conn->in_body = TRUE;
          conn->rneed = conn->hdr.size;
          conn->rlen = 0;
          if (conn->rneed > conn->rcap) {
            conn->rcap = conn->rneed;
            conn->rbuf = g_realloc (conn->rbuf, conn->rcap);
          }
          return;
        }
      }
      g_atomic_pointer_add (&conn->msgs_in, 1);
      conn->in_body = FALSE;
      if (conn->hooks && conn->hooks->on_message &&
          !conn->hooks->on_message (conn, conn->hdr.type,
              conn->hdr.size ? conn->rbuf : NULL, conn->hdr.size,
              conn->hooks_data))
        return;                 /* closed */
      if (conn_state (conn) == CONN_DATA) {
        conn->rneed = gst_spice_wire_header_size (conn->mini);
        conn->rlen = 0;
      }
      break;
    default:
      break;
  }
}

/* Server thread, lock not held (see process_chunk()) */
static gboolean
in_ready_cb (GObject * stream, gpointer user_data)
{
  SinkConn *conn = user_data;
  guint budget = READ_BUDGET;
  gsize bytes = 0;

  if (conn->ws && conn->in_src)
    g_source_set_ready_time (conn->in_src, -1);
  while (conn_state (conn) != CONN_DEAD && conn->rneed > 0 && budget > 0 &&
      bytes < READ_BYTES_BUDGET) {
    GError *err = NULL;
    gssize n;

    n = conn_read (conn, conn->rbuf + conn->rlen, conn->rneed - conn->rlen,
        &err);
    if (n < 0) {
      if (!g_error_matches (err, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK)) {
        gchar *r = g_strdup_printf ("read failed: %s", err->message);

        close_locked (conn, r);
        g_free (r);
      }
      g_error_free (err);
      break;
    }
    if (n == 0) {
      close_locked (conn, conn_state (conn) == CONN_DATA && conn->rlen == 0 &&
          !conn->in_body ? "client disconnected" :
          "connection closed in the middle of a message");
      break;
    }
    g_atomic_pointer_add (&conn->bytes_in, n);
    conn->last_rx_us = g_get_monotonic_time ();
    conn->rlen += n;
    bytes += n;
    if (conn->rlen == conn->rneed || conn_state (conn) == CONN_WS_UPGRADE) {
      process_chunk (conn);
      budget--;
    }
  }
  /* unframed bytes wait in user space: no poll would wake us for them */
  if (conn->ws && conn->in_src && conn_state (conn) != CONN_DEAD &&
      conn->ws_in_pos < conn->ws_in->len)
    g_source_set_ready_time (conn->in_src, 0);
  if (conn_state (conn) != CONN_DEAD && conn->in_src)
    return G_SOURCE_CONTINUE;
  /* closed, or stopped reading: the source is gone or goes now */
  g_mutex_lock (conn->env->lock);
  if (conn->in_src) {
    g_source_unref (conn->in_src);
    conn->in_src = NULL;
  }
  g_mutex_unlock (conn->env->lock);
  return G_SOURCE_REMOVE;
}

/* lock held */
static void
start_reading (SinkConn * conn)
{
  conn->in = G_POLLABLE_INPUT_STREAM (g_io_stream_get_input_stream (conn->io));
  conn->out =
      G_POLLABLE_OUTPUT_STREAM (g_io_stream_get_output_stream (conn->io));
  set_need (conn, CONN_LINK_HEADER, GST_SPICE_WIRE_LINK_HEADER_SIZE);
  conn->in_src = g_pollable_input_stream_create_source (conn->in, NULL);
  g_source_set_callback (conn->in_src, G_SOURCE_FUNC (in_ready_cb), conn, NULL);
  g_source_attach (conn->in_src, conn->env->ctx);
}

static void
tls_handshake_done (GObject * source, GAsyncResult * res, gpointer user_data)
{
  SinkConn *conn = user_data;
  GError *err = NULL;
  gboolean ok;

  ok = g_tls_connection_handshake_finish (G_TLS_CONNECTION (source), res, &err);
  g_mutex_lock (conn->env->lock);
  conn->handshake_pending = FALSE;
  if (conn_state (conn) == CONN_TLS_HANDSHAKE) {
    if (!ok) {
      gchar *r = g_strdup_printf ("TLS handshake failed: %s", err->message);
      SinkEvent ev = SINK_EVENT_INIT (FALSE, "tls-failure", "handshake");

      ev.detail = r;
      sink_conn_report (conn, &ev);
      sink_conn_close (conn, r);
      g_free (r);
    } else {
      start_reading (conn);
    }
  }
  g_mutex_unlock (conn->env->lock);
  g_clear_error (&err);
}

void
sink_conn_start (SinkConn * conn, GTlsCertificate * cert)
{
  GError *err = NULL;
  GIOStream *t;

  if (!conn->tls) {
    start_reading (conn);
    return;
  }
  t = g_tls_server_connection_new (conn->io, cert, &err);
  if (!t) {
    sink_conn_close (conn, err->message);
    g_error_free (err);
    return;
  }
  g_object_unref (conn->io);
  conn->io = t;
  g_atomic_int_set (&conn->state, CONN_TLS_HANDSHAKE);
  conn->handshake_pending = TRUE;
  g_tls_connection_handshake_async (G_TLS_CONNECTION (t), G_PRIORITY_DEFAULT,
      NULL, tls_handshake_done, conn);
}
