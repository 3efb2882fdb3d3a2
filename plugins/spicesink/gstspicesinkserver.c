/* spicesink: listener, TLS, link stage, client sessions, reading
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Every connection runs the SPICE link handshake on its own (header, link
 * message, reply with our RSA key and capabilities, auth mechanism, 128-byte
 * ticket, result) and then carries one channel. A main channel creates a
 * session (random non-zero id); display, inputs and cursor channels join
 * the session whose id they give as connection_id.
 */
#include <string.h>

#include "gstspicesinkpriv.h"

#define READ_BUDGET 64          /* messages per dispatch */
#define STALL_TIMEOUT_US (20 * G_TIME_SPAN_SECOND)
/* the per-address connection buckets are dropped when full again; above
 * this many addresses all of them are (memory bound against many sources) */
#define MAX_RATE_BUCKETS 4096

/* token bucket of one source address (max-connections-per-second) */
typedef struct
{
  gdouble tokens;
  gint64 last_us;
  gint64 last_warn_us;
  guint64 suppressed;           /* refusals not logged since last_warn_us */
} SinkRateBucket;


static guint32
server_common_caps (void)
{
  guint32 w = 0;

  gst_spice_caps_set (&w, 1, SPICE_COMMON_CAP_PROTOCOL_AUTH_SELECTION);
  gst_spice_caps_set (&w, 1, SPICE_COMMON_CAP_AUTH_SPICE);
  gst_spice_caps_set (&w, 1, SPICE_COMMON_CAP_MINI_HEADER);
  /* never AUTH_SASL: spice-gtk would pick it */
  return w;
}

static guint32
server_channel_caps (guint8 type)
{
  guint32 w = 0;

  switch (type) {
    case SPICE_CHANNEL_DISPLAY:
      gst_spice_caps_set (&w, 1, SPICE_DISPLAY_CAP_STREAM_REPORT);
      break;
    case SPICE_CHANNEL_INPUTS:
      gst_spice_caps_set (&w, 1, SPICE_INPUTS_CAP_KEY_SCANCODE);
      break;
    default:
      break;
  }
  return w;
}

guint32
gst_spice_sink_mm_time (GstSpiceSink * sink)
{
  guint32 t = (guint32) ((g_get_monotonic_time () - sink->mm_base_us) /
      1000) + 1000;

  return t ? t : 1;
}

/* ------------------------------------------------------------ sessions */

static SinkSession *
session_find (GstSpiceSink * sink, guint32 id)
{
  GList *l;

  for (l = sink->sessions; l; l = l->next) {
    SinkSession *s = l->data;

    if (s->id == id)
      return s;
  }
  return NULL;
}

static SinkSession *
session_new (GstSpiceSink * sink, SinkConn * main_conn)
{
  SinkSession *s = g_new0 (SinkSession, 1);

  do {
    s->id = g_random_int ();
  } while (s->id == 0 || session_find (sink, s->id));
  s->peer_host = g_strdup (main_conn->peer_host);
  s->peer = g_strdup (main_conn->peer);
  s->main = main_conn;
  s->rtt_us = -1;
  s->mouse_mode = SPICE_MOUSE_MODE_CLIENT;
  sink->sessions = g_list_append (sink->sessions, s);
  sink->clients_total++;
  return s;
}

static void
session_free (GstSpiceSink * sink, SinkSession * s)
{
  sink->sessions = g_list_remove (sink->sessions, s);
  g_free (s->peer_host);
  g_free (s->peer);
  g_free (s);
}

/* --------------------------------------------------------- connections */

static void conn_set_need (SinkConn * conn, SinkConnState state, gsize need);

void
gst_spice_sink_conn_close (SinkConn * conn, const gchar * reason)
{
  GstSpiceSink *sink = conn->sink;
  SinkSession *s = conn->session;

  if (conn->state == CONN_DEAD)
    return;
  if (conn->state == CONN_DATA)
    GST_INFO_OBJECT (sink, "closing %s channel %u of %s: %s",
        conn->type == SPICE_CHANNEL_MAIN ? "main" :
        conn->type == SPICE_CHANNEL_DISPLAY ? "display" :
        conn->type == SPICE_CHANNEL_INPUTS ? "inputs" : "cursor",
        conn->channel_id, conn->peer, reason);
  else
    GST_WARNING_OBJECT (sink, "closing connection from %s during link: %s",
        conn->peer, reason);
  conn->state = CONN_DEAD;
  if (conn->in_src) {
    g_source_destroy (conn->in_src);
    g_source_unref (conn->in_src);
    conn->in_src = NULL;
  }
  if (conn->out_src) {
    g_source_destroy (conn->out_src);
    g_source_unref (conn->out_src);
    conn->out_src = NULL;
  }
  if (conn->pace_src) {
    g_source_destroy (conn->pace_src);
    g_source_unref (conn->pace_src);
    conn->pace_src = NULL;
  }
  gst_spice_sink_conn_clear_queue (conn);
  g_socket_close (conn->socket, NULL);
  if (s) {
    gst_spice_sink_channel_closed (conn);
    if (s->main == conn) {
      s->main = NULL;
      if (s->display)
        gst_spice_sink_conn_close (s->display, "session ended");
      if (s->inputs)
        gst_spice_sink_conn_close (s->inputs, "session ended");
      if (s->cursor)
        gst_spice_sink_conn_close (s->cursor, "session ended");
      session_free (sink, s);
      gst_spice_sink_update_stream_control (sink);
    } else if (s->display == conn) {
      s->display = NULL;
      gst_spice_sink_update_stream_control (sink);
    } else if (s->inputs == conn) {
      s->inputs = NULL;
    } else if (s->cursor == conn) {
      s->cursor = NULL;
    }
    conn->session = NULL;
  }
  g_cond_broadcast (&sink->cond);
  /* freed by the timer (never under a caller's feet) */
}

static void
conn_free (SinkConn * conn)
{
  gst_spice_sink_conn_clear_queue (conn);
  g_clear_object (&conn->io);
  g_clear_object (&conn->socket);
  g_free (conn->rbuf);
  g_free (conn->peer);
  g_free (conn->peer_host);
  g_free (conn);
}

static void
conn_send_raw (SinkConn * conn, GByteArray * data)
{
  SinkMsg *m = g_new0 (SinkMsg, 1);

  /* link-stage data: no data header; kept in the body */
  m->mm_off = -1;
  m->head_len = 0;
  m->body = g_byte_array_free_to_bytes (g_byte_array_ref (data));
  gst_spice_sink_conn_send_msg (conn, m);
}

static void
conn_link_error (SinkConn * conn, guint32 err, const gchar * reason)
{
  GByteArray *a = g_byte_array_new ();

  GST_WARNING_OBJECT (conn->sink, "link from %s refused (error %u): %s",
      conn->peer, err, reason);
  gst_spice_wire_write_link_reply (a, err, NULL, NULL, 0, NULL, 0);
  conn_send_raw (conn, a);
  g_byte_array_unref (a);
  conn->close_when_flushed = TRUE;
  conn->state = CONN_LINK_HEADER;
  conn->rneed = 0;              /* stop reading */
  if (conn->in_src) {
    g_source_destroy (conn->in_src);
    g_source_unref (conn->in_src);
    conn->in_src = NULL;
  }
  gst_spice_sink_conn_flush (conn);
}

static void
conn_link_result (SinkConn * conn, guint32 result, const gchar * reason)
{
  GByteArray *a = g_byte_array_new ();

  gst_spice_put_u32 (a, result);
  conn_send_raw (conn, a);
  g_byte_array_unref (a);
  if (result != SPICE_LINK_ERR_OK) {
    GST_WARNING_OBJECT (conn->sink, "link from %s refused (result %u): %s",
        conn->peer, result, reason);
    conn->close_when_flushed = TRUE;
    conn->rneed = 0;
    if (conn->in_src) {
      g_source_destroy (conn->in_src);
      g_source_unref (conn->in_src);
      conn->in_src = NULL;
    }
  }
  gst_spice_sink_conn_flush (conn);
}

static void
conn_set_need (SinkConn * conn, SinkConnState state, gsize need)
{
  conn->state = state;
  conn->rneed = need;
  conn->rlen = 0;
  if (need > conn->rcap) {
    conn->rcap = MAX (need, 256);
    conn->rbuf = g_realloc (conn->rbuf, conn->rcap);
  }
}

static void
handle_link_mess (SinkConn * conn)
{
  GstSpiceSink *sink = conn->sink;
  GstSpiceLinkMess *m = &conn->link;
  GByteArray *a;
  guint32 common = server_common_caps ();
  guint32 channel;
  const guint8 *pub;

  if (!gst_spice_wire_parse_link_mess (conn->rbuf, conn->rlen, m)) {
    conn_link_error (conn, SPICE_LINK_ERR_INVALID_DATA,
        "malformed link message");
    return;
  }
  conn->type = m->channel_type;
  conn->channel_id = m->channel_id;
  conn->mini = gst_spice_caps_test (m->common_caps, m->n_common,
      SPICE_COMMON_CAP_MINI_HEADER);
  if (m->channel_type < SPICE_CHANNEL_MAIN ||
      m->channel_type > SPICE_CHANNEL_CURSOR || m->channel_id != 0) {
    conn_link_error (conn, SPICE_LINK_ERR_CHANNEL_NOT_AVAILABLE,
        "channel not served");
    return;
  }
  if (gst_spice_caps_test (m->common_caps, m->n_common,
          SPICE_COMMON_CAP_PROTOCOL_AUTH_SELECTION) == FALSE &&
      gst_spice_caps_test (m->common_caps, m->n_common,
          SPICE_COMMON_CAP_AUTH_SASL)) {
    /* nothing to do: we only speak SPICE ticket auth */
  }
  channel = server_channel_caps (m->channel_type);
  pub = gst_spice_ticket_key_get_public (sink->ticket_key, NULL);
  a = g_byte_array_new ();
  gst_spice_wire_write_link_reply (a, SPICE_LINK_ERR_OK, pub, &common, 1,
      &channel, 1);
  conn_send_raw (conn, a);
  g_byte_array_unref (a);
  gst_spice_sink_conn_flush (conn);
  if (gst_spice_caps_test (m->common_caps, m->n_common,
          SPICE_COMMON_CAP_PROTOCOL_AUTH_SELECTION))
    conn_set_need (conn, CONN_AUTH_MECH, 4);
  else
    conn_set_need (conn, CONN_TICKET, GST_SPICE_WIRE_TICKET_SIZE);
}

static gboolean
password_required (GstSpiceSink * sink)
{
  return sink->password && sink->password[0] && !sink->disable_ticketing;
}

static guint
count_sessions (GstSpiceSink * sink)
{
  return g_list_length (sink->sessions);
}

static void
handle_ticket (SinkConn * conn)
{
  GstSpiceSink *sink = conn->sink;
  GstSpiceLinkMess *m = &conn->link;
  SinkSession *s;

  if (password_required (sink) &&
      !gst_spice_ticket_key_check (sink->ticket_key, conn->rbuf, conn->rlen,
          sink->password)) {
    sink->auth_failures++;
    conn_link_result (conn, SPICE_LINK_ERR_PERMISSION_DENIED, "wrong password");
    return;
  }
  if (m->channel_type == SPICE_CHANNEL_MAIN) {
    if (count_sessions (sink) >= sink->max_clients) {
      gchar *r;

      r = g_strdup_printf ("max-clients=%u reached", sink->max_clients);
      sink->clients_refused++;

      conn_link_result (conn, SPICE_LINK_ERR_ERROR, r);
      g_free (r);
      return;
    }
    s = session_new (sink, conn);
  } else {
    SinkConn **slot;

    s = session_find (sink, m->connection_id);
    if (!s || !s->main || s->main->state != CONN_DATA) {
      conn_link_result (conn, SPICE_LINK_ERR_BAD_CONNECTION_ID,
          "unknown session id");
      return;
    }
    slot = m->channel_type == SPICE_CHANNEL_DISPLAY ? &s->display :
        m->channel_type == SPICE_CHANNEL_INPUTS ? &s->inputs : &s->cursor;
    if (*slot) {
      conn_link_result (conn, SPICE_LINK_ERR_CHANNEL_NOT_AVAILABLE,
          "channel already linked in this session");
      return;
    }
    *slot = conn;
  }
  conn->session = s;
  conn_link_result (conn, SPICE_LINK_ERR_OK, NULL);
  GST_INFO_OBJECT (sink, "%s: linked channel type %u (session %08x%s)",
      conn->peer, conn->type, s->id, conn->tls ? ", TLS" : "");
  conn_set_need (conn, CONN_DATA, gst_spice_wire_header_size (conn->mini));
  conn->in_body = FALSE;
  gst_spice_sink_channel_linked (conn);
}

/* A complete chunk (conn->rneed bytes) is in rbuf. */
static void
conn_process (SinkConn * conn)
{
  GstSpiceSink *sink = conn->sink;

  switch (conn->state) {
    case CONN_LINK_HEADER:{
      GstSpiceLinkHeader h;
      guint32 err;

      if (!gst_spice_wire_parse_link_header (conn->rbuf, conn->rlen,
              GST_SPICE_WIRE_LINK_MESS_SIZE, &h, &err)) {
        conn_link_error (conn, err, err == SPICE_LINK_ERR_INVALID_MAGIC ?
            "wrong magic" : err == SPICE_LINK_ERR_VERSION_MISMATCH ?
            "unsupported protocol version" : "bad link message size");
        return;
      }
      conn_set_need (conn, CONN_LINK_MESS, h.size);
      break;
    }
    case CONN_LINK_MESS:
      handle_link_mess (conn);
      break;
    case CONN_AUTH_MECH:{
      guint32 mech = GST_READ_UINT32_LE (conn->rbuf);

      if (mech != SPICE_COMMON_CAP_AUTH_SPICE) {
        conn_link_result (conn, SPICE_LINK_ERR_INVALID_DATA,
            "unsupported auth mechanism");
        return;
      }
      conn_set_need (conn, CONN_TICKET, GST_SPICE_WIRE_TICKET_SIZE);
      break;
    }
    case CONN_TICKET:
      handle_ticket (conn);
      break;
    case CONN_DATA:
      if (!conn->in_body) {
        guint32 min, max;
        GstSpiceMsgHeader *h = &conn->hdr;

        if (!gst_spice_wire_parse_header (conn->rbuf, conn->rlen, conn->mini,
                h)) {
          sink->closed_bad_message++;
          gst_spice_sink_conn_close (conn, "malformed message header");
          return;
        }
        if (!gst_spice_wire_client_msg_limits (conn->type, h->type, &min, &max)) {
          gchar *r = g_strdup_printf ("unexpected message type %u",
              h->type);
          sink->closed_bad_message++;
          GST_WARNING_OBJECT (sink, "%s: %s", conn->peer, r);
          gst_spice_sink_conn_close (conn, r);
          g_free (r);
          return;
        }
        if (h->size < min || h->size > max) {
          gchar *r = g_strdup_printf ("message %s has bad size %u "
              "(allowed %u..%u)", gst_spice_wire_client_msg_name (conn->type,
                  h->type), h->size, min, max);
          sink->closed_bad_message++;
          GST_WARNING_OBJECT (sink, "%s: message size limit: %s", conn->peer,
              r);
          gst_spice_sink_conn_close (conn, r);
          g_free (r);
          return;
        }
        if (h->size > 0) {
          conn->in_body = TRUE;
          conn_set_need (conn, CONN_DATA, h->size);
          return;
        }
      }
      conn->stats.msgs_in++;
      conn->in_body = FALSE;
      if (!gst_spice_sink_channel_handle (conn, conn->hdr.type,
              conn->hdr.size ? conn->rbuf : NULL, conn->hdr.size))
        return;                 /* closed */
      if (conn->state == CONN_DATA)
        conn_set_need (conn, CONN_DATA,
            gst_spice_wire_header_size (conn->mini));
      break;
    default:
      break;
  }
  (void) sink;
}

static gboolean
in_ready_cb (GObject * stream, gpointer user_data)
{
  SinkConn *conn = user_data;
  GstSpiceSink *sink = conn->sink;
  guint budget = READ_BUDGET;
  gboolean keep = G_SOURCE_CONTINUE;

  g_mutex_lock (&sink->lock);
  while (conn->state != CONN_DEAD && conn->rneed > 0 && budget > 0) {
    GError *err = NULL;
    gssize n;

    n = g_pollable_input_stream_read_nonblocking (conn->in,
        conn->rbuf + conn->rlen, conn->rneed - conn->rlen, NULL, &err);
    if (n < 0) {
      if (g_error_matches (err, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK)) {
        g_error_free (err);
        break;
      } else {
        gchar *r = g_strdup_printf ("read failed: %s", err->message);
        g_error_free (err);
        gst_spice_sink_conn_close (conn, r);
        g_free (r);
        break;
      }
    }
    if (n == 0) {
      gst_spice_sink_conn_close (conn, conn->state == CONN_DATA &&
          conn->rlen == 0 && !conn->in_body ? "client disconnected" :
          "connection closed in the middle of a message");
      break;
    }
    conn->stats.bytes_in += n;
    conn->last_rx_us = g_get_monotonic_time ();
    conn->rlen += n;
    if (conn->rlen == conn->rneed) {
      conn_process (conn);
      budget--;
    }
  }
  if (conn->state == CONN_DEAD || !conn->in_src)
    keep = G_SOURCE_REMOVE;
  if (keep == G_SOURCE_REMOVE && conn->in_src) {
    g_source_unref (conn->in_src);
    conn->in_src = NULL;
  }
  g_mutex_unlock (&sink->lock);
  return keep;
}

static void
conn_start_reading (SinkConn * conn)
{
  conn->in = G_POLLABLE_INPUT_STREAM (g_io_stream_get_input_stream (conn->io));
  conn->out =
      G_POLLABLE_OUTPUT_STREAM (g_io_stream_get_output_stream (conn->io));
  conn_set_need (conn, CONN_LINK_HEADER, GST_SPICE_WIRE_LINK_HEADER_SIZE);
  conn->in_src = g_pollable_input_stream_create_source (conn->in, NULL);
  g_source_set_callback (conn->in_src, G_SOURCE_FUNC (in_ready_cb), conn, NULL);
  g_source_attach (conn->in_src, conn->sink->ctx);
}

static void
tls_handshake_done (GObject * source, GAsyncResult * res, gpointer user_data)
{
  SinkConn *conn = user_data;
  GstSpiceSink *sink = conn->sink;
  GError *err = NULL;
  gboolean ok;

  ok = g_tls_connection_handshake_finish (G_TLS_CONNECTION (source), res, &err);
  g_mutex_lock (&sink->lock);
  conn->handshake_pending = FALSE;
  if (conn->state == CONN_TLS_HANDSHAKE) {
    if (!ok) {
      gchar *r = g_strdup_printf ("TLS handshake failed: %s", err->message);
      gst_spice_sink_conn_close (conn, r);
      g_free (r);
    } else {
      conn_start_reading (conn);
    }
  }
  g_mutex_unlock (&sink->lock);
  g_clear_error (&err);
}

static gchar *
socket_peer_host (GSocket * sock)
{
  GSocketAddress *addr = g_socket_get_remote_address (sock, NULL);
  gchar *host = NULL;

  if (addr && G_IS_INET_SOCKET_ADDRESS (addr))
    host = g_inet_address_to_string (g_inet_socket_address_get_address
        (G_INET_SOCKET_ADDRESS (addr)));
  g_clear_object (&addr);
  return host ? host : g_strdup ("?");
}

static guint
count_live (GstSpiceSink * sink)
{
  GList *l;
  guint n = 0;

  for (l = sink->conns; l; l = l->next)
    if (((SinkConn *) l->data)->state != CONN_DEAD)
      n++;
  return n;
}

static guint
count_pending (GstSpiceSink * sink)
{
  GList *l;
  guint n = 0;

  for (l = sink->conns; l; l = l->next) {
    SinkConn *c = l->data;

    if (c->state != CONN_DATA && c->state != CONN_DEAD)
      n++;
  }
  return n;
}

/* Connection limits checked before anything is allocated for a new
 * socket: max-pending-links (all addresses) and max-connections-per-second
 * with connection-burst (per source address). Called with the lock not
 * held, on the server thread. */
static gboolean
accept_allowed (GstSpiceSink * sink, GSocket * sock)
{
  gchar *host;
  gint64 now = g_get_monotonic_time ();
  gboolean ok = TRUE;

  g_mutex_lock (&sink->lock);
  if (count_pending (sink) >= sink->max_pending) {
    host = socket_peer_host (sock);
    sink->refused_pending++;
    GST_WARNING_OBJECT (sink, "connection from %s refused: %u connections "
        "already in the link stage (max-pending-links=%u)", host,
        count_pending (sink), sink->max_pending);
    g_free (host);
    g_mutex_unlock (&sink->lock);
    return FALSE;
  }
  if (sink->max_conn_rate > 0 && sink->rate_buckets) {
    SinkRateBucket *b;

    host = socket_peer_host (sock);
    b = g_hash_table_lookup (sink->rate_buckets, host);
    if (!b) {
      if (g_hash_table_size (sink->rate_buckets) >= MAX_RATE_BUCKETS) {
        GST_WARNING_OBJECT (sink, "%u source addresses in the connection "
            "rate table: starting it afresh",
            g_hash_table_size (sink->rate_buckets));
        g_hash_table_remove_all (sink->rate_buckets);
      }
      b = g_new0 (SinkRateBucket, 1);
      b->tokens = sink->conn_burst;
      b->last_us = now;
      g_hash_table_insert (sink->rate_buckets, g_strdup (host), b);
    }
    b->tokens = MIN ((gdouble) sink->conn_burst, b->tokens +
        (now - b->last_us) * (gdouble) sink->max_conn_rate /
        G_TIME_SPAN_SECOND);
    b->last_us = now;
    if (b->tokens >= 1.0) {
      b->tokens -= 1.0;
    } else {
      ok = FALSE;
      sink->refused_rate++;
      /* one warning per address and second, with the count in between */
      if (now - b->last_warn_us >= G_TIME_SPAN_SECOND) {
        GST_WARNING_OBJECT (sink, "connection from %s refused: more than "
            "max-connections-per-second=%u (connection-burst=%u) from this "
            "address (%" G_GUINT64_FORMAT " more refused since the last "
            "warning)", host, sink->max_conn_rate, sink->conn_burst,
            b->suppressed);
        b->last_warn_us = now;
        b->suppressed = 0;
      } else {
        b->suppressed++;
      }
    }
    g_free (host);
  }
  if (ok)
    sink->connections_total++;
  g_mutex_unlock (&sink->lock);
  return ok;
}

static gboolean
prune_bucket (gpointer key, gpointer value, gpointer user_data)
{
  GstSpiceSink *sink = user_data;
  SinkRateBucket *b = value;
  gint64 now = g_get_monotonic_time ();

  /* full again (and no refusal to report): forget the address */
  return b->suppressed == 0 && (b->tokens + (now - b->last_us) *
      (gdouble) sink->max_conn_rate / G_TIME_SPAN_SECOND >= sink->conn_burst
      || sink->max_conn_rate == 0);
}

static gboolean
accept_cb (GSocket * lsock, GIOCondition cond, gpointer user_data)
{
  GstSpiceSink *sink = user_data;
  gboolean tls = lsock == sink->listen_sock[1];
  guint i;

  for (i = 0; i < 16; i++) {
    GError *err = NULL;
    GSocket *sock = g_socket_accept (lsock, NULL, &err);
    GSocketAddress *addr;
    SinkConn *conn;

    if (!sock) {
      if (!g_error_matches (err, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK))
        GST_WARNING_OBJECT (sink, "accept failed: %s", err->message);
      g_error_free (err);
      break;
    }
    g_socket_set_blocking (sock, FALSE);
    if (!accept_allowed (sink, sock)) {
      g_socket_close (sock, NULL);
      g_object_unref (sock);
      continue;
    }
    conn = g_new0 (SinkConn, 1);
    conn->sink = sink;
    conn->socket = sock;
    conn->tls = tls;
    conn->start_us = g_get_monotonic_time ();
    conn->last_rx_us = conn->start_us;
    addr = g_socket_get_remote_address (sock, NULL);
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
    g_clear_object (&addr);
    g_mutex_lock (&sink->lock);
    conn->id = ++sink->next_conn_id;
    sink->conns = g_list_append (sink->conns, conn);
    gst_spice_sink_conn_setup_socket (sink, conn);
    conn->io = G_IO_STREAM (g_socket_connection_factory_create_connection
        (sock));
    GST_DEBUG_OBJECT (sink, "connection %u from %s%s", conn->id, conn->peer,
        tls ? " (TLS)" : "");
    if (tls) {
      GIOStream *t = g_tls_server_connection_new (conn->io, sink->cert, &err);

      if (!t) {
        gst_spice_sink_conn_close (conn, err->message);
        g_error_free (err);
      } else {
        g_object_unref (conn->io);
        conn->io = t;
        conn->state = CONN_TLS_HANDSHAKE;
        conn->handshake_pending = TRUE;
        g_tls_connection_handshake_async (G_TLS_CONNECTION (t),
            G_PRIORITY_DEFAULT, NULL, tls_handshake_done, conn);
      }
    } else {
      conn_start_reading (conn);
    }
    g_mutex_unlock (&sink->lock);
  }
  return G_SOURCE_CONTINUE;
}

/* -------------------------------------------------------------- timers */

static gboolean
kick_dispatch (GSource * source, GSourceFunc cb, gpointer user_data)
{
  GstSpiceSink *sink = user_data;
  GList *l;

  g_source_set_ready_time (source, -1);
  g_mutex_lock (&sink->lock);
  for (l = sink->conns; l; l = l->next) {
    SinkConn *conn = l->data;

    if (conn->state != CONN_DEAD && !conn->out_src &&
        !g_queue_is_empty (&conn->outq))
      gst_spice_sink_conn_flush (conn);
  }
  g_mutex_unlock (&sink->lock);
  return G_SOURCE_CONTINUE;
}

static GSourceFuncs kick_funcs = {
  NULL, NULL, kick_dispatch, NULL,
};

static gboolean
timer_cb (gpointer user_data)
{
  GstSpiceSink *sink = user_data;
  GList *l, *next;
  gint64 now = g_get_monotonic_time ();
  gboolean second = now - sink->last_stats_us >= G_TIME_SPAN_SECOND;
  gdouble dt = (now - sink->last_stats_us) / (gdouble) G_TIME_SPAN_SECOND;
  gboolean want_refresh = FALSE;

  g_mutex_lock (&sink->lock);
  for (l = sink->conns; l; l = next) {
    SinkConn *conn = l->data;

    next = l->next;
    if (conn->state == CONN_DEAD) {
      if (!conn->in_src && !conn->out_src && !conn->handshake_pending) {
        sink->conns = g_list_delete_link (sink->conns, l);
        conn_free (conn);
      }
      continue;
    }
    if (conn->state != CONN_DATA && !conn->close_when_flushed &&
        now - conn->start_us >
        (gint64) sink->handshake_timeout * G_TIME_SPAN_MILLISECOND) {
      gchar *r = g_strdup_printf ("handshake-timeout=%u ms",
          sink->handshake_timeout);

      sink->closed_handshake_timeout++;
      gst_spice_sink_conn_close (conn, r);
      g_free (r);
      continue;
    }
    if (conn->close_when_flushed &&
        now - conn->start_us >
        (gint64) sink->handshake_timeout * G_TIME_SPAN_MILLISECOND) {
      sink->closed_handshake_timeout++;
      gst_spice_sink_conn_close (conn, "peer does not read the link error");
      continue;
    }
    if (!g_queue_is_empty (&conn->outq) &&
        now - conn->last_progress_us > STALL_TIMEOUT_US) {
      sink->closed_stalled++;
      GST_WARNING_OBJECT (sink, "%s: no write progress for %d s (stall "
          "limit), %" G_GSIZE_FORMAT " bytes queued", conn->peer,
          (gint) (STALL_TIMEOUT_US / G_TIME_SPAN_SECOND), conn->out_bytes);
      gst_spice_sink_conn_close (conn, "client stopped reading");
      continue;
    }
    if (sink->idle_timeout && conn->state == CONN_DATA && conn->session &&
        conn->session->main == conn) {
      SinkSession *is = conn->session;
      SinkConn *chans[4] = { is->main, is->display, is->inputs, is->cursor };
      gint64 last = 0;
      guint i;

      for (i = 0; i < 4; i++)
        if (chans[i])
          last = MAX (last, chans[i]->last_rx_us);
      if (now - last > (gint64) sink->idle_timeout * G_TIME_SPAN_MILLISECOND) {
        sink->closed_idle++;
        GST_WARNING_OBJECT (sink, "%s: nothing received for %" G_GINT64_FORMAT
            " ms (idle-timeout=%u ms): closing the session", conn->peer,
            (now - last) / 1000, sink->idle_timeout);
        gst_spice_sink_conn_close (conn, "idle timeout");
        /* the session's other channels are closed with it */
        next = sink->conns;
        continue;
      }
    }
    if (conn->state == CONN_DATA && (second || (conn->session &&
                conn->session->display == conn)))
      gst_spice_sink_conn_update_tcp_info (conn);
  }
  for (l = sink->sessions; l; l = l->next) {
    SinkSession *s = l->data;

    gst_spice_sink_session_check_wait (sink, s, now);
    if ((s->awaiting_refresh || s->partial_picture) && !s->behind)
      want_refresh = TRUE;
    if (second && dt > 0) {
      s->draws_per_s = (s->draws - s->last_draws) / dt;
      s->stream_fps = (s->stream_frames - s->last_stream_frames) / dt;
      s->last_draws = s->draws;
      s->last_stream_frames = s->stream_frames;
      if (s->main && s->main->state == CONN_DATA) {
        GByteArray *a = g_byte_array_new ();

        gst_spice_wire_write_ping (a, ++s->ping_id,
            (guint64) g_get_monotonic_time ());
        gst_spice_sink_conn_send (s->main, SPICE_MSG_PING, a, NULL);
        g_byte_array_unref (a);
      }
    }
  }
  if (second) {
    sink->last_stats_us = now;
    if (sink->rate_buckets)
      g_hash_table_foreach_remove (sink->rate_buckets, prune_bucket, sink);
  }
  gst_spice_sink_rate_tick (sink, now);
  if (want_refresh)
    gst_spice_sink_request_refresh (sink, TRUE);
  g_mutex_unlock (&sink->lock);
  return G_SOURCE_CONTINUE;
}

static gpointer
server_thread (gpointer data)
{
  GstSpiceSink *sink = data;

  g_main_context_push_thread_default (sink->ctx);
  g_main_loop_run (sink->loop);
  g_main_context_pop_thread_default (sink->ctx);
  return NULL;
}

/* --------------------------------------------------------- start/stop */

static gboolean
is_loopback (GInetAddress * a)
{
  return g_inet_address_get_is_loopback (a);
}

static GSocket *
listen_on (GstSpiceSink * sink, GInetAddress * addr, gint port, gint * bound,
    GError ** error)
{
  GSocket *sock;
  GSocketAddress *sa;
  GSocketAddress *local;

  sock = g_socket_new (g_inet_address_get_family (addr),
      G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, error);
  if (!sock)
    return NULL;
  g_socket_set_blocking (sock, FALSE);
  sa = g_inet_socket_address_new (addr, (guint16) port);
  if (!g_socket_bind (sock, sa, TRUE, error) || !g_socket_listen (sock, error)) {
    g_object_unref (sa);
    g_object_unref (sock);
    return NULL;
  }
  g_object_unref (sa);
  local = g_socket_get_local_address (sock, NULL);
  *bound = local ? g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS
      (local)) : port;
  g_clear_object (&local);
  return sock;
}

gboolean
gst_spice_sink_server_start (GstSpiceSink * sink, GError ** error)
{
  GInetAddress *addr;
  const gchar *astr = sink->address ? sink->address : "127.0.0.1";
  guint i;

  if (g_strcmp0 (astr, "localhost") == 0)
    astr = "127.0.0.1";
  addr = g_inet_address_new_from_string (astr);
  if (!addr) {
    g_set_error (error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS,
        "address '%s' is not an IP address", astr);
    return FALSE;
  }
  if (!is_loopback (addr) && !password_required (sink) &&
      !sink->disable_ticketing) {
    g_set_error (error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS,
        "refusing to listen on non-loopback address %s without a password: "
        "set 'password', or set 'disable-ticketing=true' to allow anyone "
        "who can reach the port", astr);
    g_object_unref (addr);
    return FALSE;
  }
  if (sink->port < 0 && sink->tls_port < 0) {
    g_set_error (error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS,
        "neither 'port' nor 'tls-port' is set");
    g_object_unref (addr);
    return FALSE;
  }
  if (sink->tls_port >= 0) {
    if (!sink->cert_file || !sink->key_file) {
      g_set_error (error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS,
          "'tls-port' needs 'tls-cert-file' and 'tls-key-file'");
      g_object_unref (addr);
      return FALSE;
    }
    sink->cert = g_tls_certificate_new_from_files (sink->cert_file,
        sink->key_file, error);
    if (!sink->cert) {
      g_object_unref (addr);
      return FALSE;
    }
  }
  sink->ticket_key = gst_spice_ticket_key_new (error);
  if (!sink->ticket_key) {
    g_object_unref (addr);
    return FALSE;
  }
  sink->bound_port = sink->bound_tls_port = -1;
  if (sink->port >= 0) {
    sink->listen_sock[0] = listen_on (sink, addr, sink->port,
        &sink->bound_port, error);
    if (!sink->listen_sock[0])
      goto fail;
  }
  if (sink->tls_port >= 0) {
    sink->listen_sock[1] = listen_on (sink, addr, sink->tls_port,
        &sink->bound_tls_port, error);
    if (!sink->listen_sock[1])
      goto fail;
  }
  g_object_unref (addr);
  addr = NULL;

  sink->mm_base_us = g_get_monotonic_time ();
  sink->last_stats_us = sink->mm_base_us;
  g_mutex_lock (&sink->lock);
  sink->rate_buckets = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
      g_free);
  g_mutex_unlock (&sink->lock);
  sink->ctx = g_main_context_new ();
  sink->loop = g_main_loop_new (sink->ctx, FALSE);
  for (i = 0; i < 2; i++) {
    if (!sink->listen_sock[i])
      continue;
    sink->listen_src[i] = g_socket_create_source (sink->listen_sock[i],
        G_IO_IN, NULL);
    g_source_set_callback (sink->listen_src[i], G_SOURCE_FUNC (accept_cb),
        sink, NULL);
    g_source_attach (sink->listen_src[i], sink->ctx);
  }
  sink->kick_src = g_source_new (&kick_funcs, sizeof (GSource));
  g_source_set_callback (sink->kick_src, NULL, sink, NULL);
  g_source_set_priority (sink->kick_src, G_PRIORITY_HIGH);
  g_source_attach (sink->kick_src, sink->ctx);
  sink->timer_src = g_timeout_source_new (250);
  g_source_set_callback (sink->timer_src, timer_cb, sink, NULL);
  g_source_attach (sink->timer_src, sink->ctx);
  sink->thread = g_thread_new ("spicesink-server", server_thread, sink);
  GST_INFO_OBJECT (sink, "listening on %s port %d tls-port %d",
      sink->address, sink->bound_port, sink->bound_tls_port);
  return TRUE;

fail:
  if (addr)
    g_object_unref (addr);
  for (i = 0; i < 2; i++)
    g_clear_object (&sink->listen_sock[i]);
  g_clear_object (&sink->cert);
  gst_spice_ticket_key_free (sink->ticket_key);
  sink->ticket_key = NULL;
  return FALSE;
}

static gboolean
quit_cb (gpointer data)
{
  GstSpiceSink *sink = data;
  GList *l;

  g_mutex_lock (&sink->lock);
  for (l = sink->conns; l; l = l->next)
    gst_spice_sink_conn_close (l->data, "server stopping");
  g_mutex_unlock (&sink->lock);
  g_main_loop_quit (sink->loop);
  return G_SOURCE_REMOVE;
}

void
gst_spice_sink_server_stop (GstSpiceSink * sink)
{
  guint i;

  if (sink->thread) {
    GSource *q = g_idle_source_new ();

    g_source_set_callback (q, quit_cb, sink, NULL);
    g_source_attach (q, sink->ctx);
    g_source_unref (q);
    g_thread_join (sink->thread);
    sink->thread = NULL;
  }
  /* the loop is gone: tear everything down here */
  g_mutex_lock (&sink->lock);
  while (sink->conns) {
    SinkConn *conn = sink->conns->data;

    gst_spice_sink_conn_close (conn, "server stopped");
    if (conn->in_src) {
      g_source_destroy (conn->in_src);
      g_source_unref (conn->in_src);
    }
    if (conn->out_src) {
      g_source_destroy (conn->out_src);
      g_source_unref (conn->out_src);
    }
    sink->conns = g_list_delete_link (sink->conns, sink->conns);
    conn_free (conn);
  }
  g_mutex_unlock (&sink->lock);
  for (i = 0; i < 2; i++) {
    if (sink->listen_src[i]) {
      g_source_destroy (sink->listen_src[i]);
      g_source_unref (sink->listen_src[i]);
      sink->listen_src[i] = NULL;
    }
    if (sink->listen_sock[i]) {
      g_socket_close (sink->listen_sock[i], NULL);
      g_clear_object (&sink->listen_sock[i]);
    }
  }
  if (sink->kick_src) {
    GSource *k = sink->kick_src;

    g_mutex_lock (&sink->lock);
    sink->kick_src = NULL;
    g_mutex_unlock (&sink->lock);
    g_source_destroy (k);
    g_source_unref (k);
  }
  if (sink->timer_src) {
    g_source_destroy (sink->timer_src);
    g_source_unref (sink->timer_src);
    sink->timer_src = NULL;
  }
  if (sink->loop) {
    g_main_loop_unref (sink->loop);
    sink->loop = NULL;
  }
  if (sink->ctx) {
    g_main_context_unref (sink->ctx);
    sink->ctx = NULL;
  }
  g_clear_object (&sink->cert);
  gst_spice_ticket_key_free (sink->ticket_key);
  sink->ticket_key = NULL;
  g_mutex_lock (&sink->lock);
  g_clear_pointer (&sink->rate_buckets, g_hash_table_unref);
  g_mutex_unlock (&sink->lock);
}

/* --------------------------------------------------------------- stats */

static GstStructure *
chan_stats (SinkConn * c)
{
  return gst_structure_new ("channel",
      "bytes-sent", G_TYPE_UINT64, c->stats.bytes_out,
      "messages-sent", G_TYPE_UINT64, c->stats.msgs_out,
      "bytes-received", G_TYPE_UINT64, c->stats.bytes_in,
      "messages-received", G_TYPE_UINT64, c->stats.msgs_in,
      "queued-bytes", G_TYPE_UINT64, (guint64) c->out_bytes,
      "tls", G_TYPE_BOOLEAN, c->tls, NULL);
}

GstStructure *
gst_spice_sink_server_stats (GstSpiceSink * sink)
{
  GstStructure *st;
  GValue arr = G_VALUE_INIT;
  GList *l;

  g_value_init (&arr, GST_TYPE_ARRAY);
  for (l = sink->sessions; l; l = l->next) {
    SinkSession *s = l->data;
    GstStructure *c = gst_structure_new ("client",
        "address", G_TYPE_STRING, s->peer_host,
        "peer", G_TYPE_STRING, s->peer,
        "session-id", G_TYPE_UINT, s->id,
        "draws", G_TYPE_UINT64, s->draws,
        "copies", G_TYPE_UINT64, s->copies,
        "updates", G_TYPE_UINT64, s->updates,
        "updates-skipped", G_TYPE_UINT64, s->updates_skipped,
        "draws-per-second", G_TYPE_DOUBLE, s->draws_per_s,
        "stream-frames", G_TYPE_UINT64, s->stream_frames,
        "stream-fps", G_TYPE_DOUBLE, s->stream_fps,
        "frames-dropped", G_TYPE_UINT64, s->frames_dropped,
        "behind", G_TYPE_BOOLEAN, s->behind,
        "behind-count", G_TYPE_UINT64, s->behind_count,
        "refreshes", G_TYPE_UINT64, s->refreshes,
        "refresh-wait-fallbacks", G_TYPE_UINT64, s->wait_fallbacks,
        "awaiting-picture", G_TYPE_BOOLEAN, s->awaiting_refresh,
        "key-events", G_TYPE_UINT64, s->key_events,
        "pointer-events", G_TYPE_UINT64, s->pointer_events,
        "ping-rtt-us", G_TYPE_INT64, s->rtt_us, NULL);
    GValue v = G_VALUE_INIT;
    SinkConn *chans[4] = { s->main, s->display, s->inputs, s->cursor };
    const gchar *names[4] = { "main", "display", "inputs", "cursor" };
    guint i;

    if (s->have_margin)
      gst_structure_set (c, "stream-margin-ms", G_TYPE_INT, s->last_margin_ms,
          "stream-report-drops", G_TYPE_UINT64, s->report_drops, NULL);
    for (i = 0; i < 4; i++) {
      if (chans[i]) {
        GstStructure *cs = chan_stats (chans[i]);

        gst_structure_set (c, names[i], GST_TYPE_STRUCTURE, cs, NULL);
        gst_structure_free (cs);
      }
    }
    if (s->display && s->display->have_tcpi) {
      SinkConn *d = s->display;

      gst_structure_set (c,
          "socket-queue-bytes", G_TYPE_UINT, d->tcpi_notsent,
          "tcp-rtt-us", G_TYPE_UINT, d->tcpi_rtt_us,
          "tcp-min-rtt-us", G_TYPE_UINT, d->tcpi_min_rtt_us,
          "tcp-delivery-rate", G_TYPE_UINT64, d->tcpi_delivery_rate,
          "tcp-cwnd", G_TYPE_UINT, d->tcpi_cwnd,
          "tcp-retransmits", G_TYPE_UINT, d->tcpi_retrans,
          "link-estimate-bps", G_TYPE_UINT64, s->link.bps,
          "queue-delay-us", G_TYPE_UINT, s->link.queue_delay_us,
          "draw-bps", G_TYPE_UINT64, s->draw_bps,
          "pace-holds", G_TYPE_UINT64, d->pace_holds,
          "paced-ms", G_TYPE_UINT64, d->paced_us / 1000, NULL);
    }
    g_value_init (&v, GST_TYPE_STRUCTURE);
    gst_value_set_structure (&v, c);
    gst_structure_free (c);
    gst_value_array_append_and_take_value (&arr, &v);
  }
  st = gst_structure_new ("application/x-spice-sink-stats",
      "clients", G_TYPE_UINT, g_list_length (sink->sessions),
      "clients-total", G_TYPE_UINT64, sink->clients_total,
      "clients-refused", G_TYPE_UINT64, sink->clients_refused,
      "updates-in", G_TYPE_UINT64, sink->updates_in,
      "regions-in", G_TYPE_UINT64, sink->regions_in,
      "regions-invalid", G_TYPE_UINT64, sink->regions_invalid,
      "stream-frames-in", G_TYPE_UINT64, sink->stream_frames_in,
      "refresh-requests", G_TYPE_UINT64, sink->refresh_requests,
      "connections", G_TYPE_UINT, count_live (sink),
      "connections-total", G_TYPE_UINT64, sink->connections_total,
      "refused-rate", G_TYPE_UINT64, sink->refused_rate,
      "refused-pending", G_TYPE_UINT64, sink->refused_pending,
      "closed-handshake-timeout", G_TYPE_UINT64,
      sink->closed_handshake_timeout,
      "closed-idle", G_TYPE_UINT64, sink->closed_idle,
      "closed-stalled", G_TYPE_UINT64, sink->closed_stalled,
      "closed-bad-message", G_TYPE_UINT64, sink->closed_bad_message,
      "auth-failures", G_TYPE_UINT64, sink->auth_failures,
      "input-events-dropped", G_TYPE_UINT64,
      (guint64) g_atomic_pointer_get (&sink->input_events_dropped), NULL);
  gst_structure_take_value (st, "client-stats", &arr);
  gst_structure_set (st, "link-estimate-bps", G_TYPE_UINT64, sink->link_bps,
      "link-draw-bps", G_TYPE_UINT64, sink->link_draw_bps, NULL);
  g_value_init (&arr, GST_TYPE_ARRAY);
  {
    guint i;

    for (i = 0; i < sink->streams->len; i++) {
      SinkStream *sst = g_ptr_array_index (sink->streams, i);
      GValue v = G_VALUE_INIT;
      GstStructure *t = gst_structure_new ("stream",
          "pad", G_TYPE_STRING, GST_PAD_NAME (sst->pad),
          "encoder", G_TYPE_STRING, sst->encoder ?
          GST_OBJECT_NAME (sst->encoder) : "",
          "measured-bps", G_TYPE_UINT64, sst->in_bps,
          "initial-bps", G_TYPE_UINT64, sst->initial_bps,
          "target-bps", G_TYPE_UINT64, sst->target_bps ? sst->target_bps :
          sst->initial_bps,
          "target-fps", G_TYPE_INT, sst->fps_n,
          "scale", G_TYPE_UINT, MAX (sst->scale, 1),
          "mean-frame-bytes", G_TYPE_UINT64, sst->mean_frame_bytes,
          "encoder-value", G_TYPE_UINT, sst->enc_value,
          "rate-changes", G_TYPE_UINT64, sst->rate_changes, NULL);

      g_value_init (&v, GST_TYPE_STRUCTURE);
      gst_value_set_structure (&v, t);
      gst_structure_free (t);
      gst_value_array_append_and_take_value (&arr, &v);
    }
  }
  gst_structure_take_value (st, "stream-rates", &arr);
  return st;
}
