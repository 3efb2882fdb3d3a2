/* gst-spice bench: one hostile SPICE client, for bench/offenders.py
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *   spice-offender --port N --from ADDR --role ROLE [OPTION…]
 *
 * A raw client (tests/common/spice-raw-client.h on the library's wire,
 * audio and agent writers, constants from spice-protocol) that connects
 * from its own loopback address, so that the server's per-source limits
 * and event lines name it, and misbehaves in one way. When the server
 * closes it, it connects again --reconnect s later, until SIGTERM/SIGINT
 * or --duration s.
 *
 *  record           main (ATTACH_CHANNELS) and record with MAIN_INIT's
 *                   session id; RECORD_MODE raw and RECORD_START_MARK as
 *                   spice-gtk sends them, then RECORD_DATA of
 *                   --record-bytes S16 stereo samples (a 1 kHz tone) back
 *                   to back, as fast as the socket takes them
 *  cursor-drip      main and cursor, the cursor socket with SO_RCVBUF
 *                   --rcvbuf set before connect (so the kernel's buffers
 *                   fill): reads --drip-bytes (1) of the cursor channel
 *                   every --drip s; the main channel is read as usual
 *  agent            main; AGENT_START giving the server --tokens (0)
 *                   tokens and never an AGENT_TOKEN, while it asks for the
 *                   clipboard (CLIPBOARD_REQUEST, UTF-8 text) every
 *                   --interval s within the tokens the server gives
 *  clipboard-owner  main, well behaved (unlimited tokens for the server,
 *                   its own within the server's): grabs the clipboard
 *                   (UTF-8 text) and answers every request with
 *                   --clipboard-bytes of text; grabs again 1 s after
 *                   another client did
 *
 * With --hold a role connects (and links its channels) and then waits,
 * an idle client, until SIGUSR1 before it misbehaves.
 * Every role answers the server's PINGs and reads its main channel.
 * stdout: one line per event, `offender t=SECS role=R from=A event=E …`
 * (connected, holding, offending, closed, refused, error), and at exit one JSON
 * object (`{"role":…}`) with the counters. Exit status 0, 2 on bad usage.
 *
 * Everything runs on the main thread, except the record role's reader of
 * its main channel (one thread per session, it only reads main and writes
 * PONGs there; the main thread writes only the record channel).
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <gio/gio.h>
#include <gst/spice/gstspice.h>

#include "spice-raw-client.h"

#define SOCKET_TIMEOUT_S 2
#define REPLY_TIMEOUT_MS 10000
#define RECORD_CHANNELS 2
#define RECORD_RATE 48000
#define RECORD_BATCH 16         /* RECORD_DATA messages per write */
#define REGRAB_DELAY_US G_USEC_PER_SEC

typedef enum
{
  ROLE_RECORD,
  ROLE_CURSOR_DRIP,
  ROLE_AGENT,
  ROLE_CLIPBOARD_OWNER,
} Role;

static const gchar *const role_names[] = {
  [ROLE_RECORD] = "record",
  [ROLE_CURSOR_DRIP] = "cursor-drip",
  [ROLE_AGENT] = "agent",
  [ROLE_CLIPBOARD_OWNER] = "clipboard-owner",
};

typedef struct
{
  /* options */
  gchar *role_name, *from;
  gint port, rcvbuf, drip_bytes, tokens, record_bytes, clipboard_bytes;
  gdouble duration, reconnect_s, drip_s, interval_s;

  Role role;
  gint64 t0;

  /* counters over all sessions */
  guint connects, refusals, closes, errors;
  gdouble first_offending_s, first_close_s;
  gchar *last_close;
  guint64 record_msgs, record_bytes_sent;
  guint64 drip_read;
  gint drip_inq_max, rcvbuf_effective;
  guint64 requests, answers, answer_bytes, grabs;
  guint64 agent_data_in, requests_in;

  /* the session now */
  gint64 sink_tokens;           /* AGENT_DATA we may send */
  GBytes *answer;               /* the clipboard answer (whole message) */
  guint answers_due;
  gsize answer_off;             /* of the answer being sent */
  gint64 regrab_at;             /* 0: no grab due */
  GstSpiceAgentReader *reader;
} Offender;

static Offender o;
static volatile sig_atomic_t stopping;
/* 0 with --hold until SIGUSR1 */
static volatile sig_atomic_t released = 1;

/* signal handler */
static void
on_signal (int sig)
{
  stopping = 1;
}

/* signal handler */
static void
on_release (int sig)
{
  released = 1;
}

static gdouble
now_s (void)
{
  return (g_get_monotonic_time () - o.t0) / 1e6;
}

/* CPU time of the process, in seconds */
static gdouble
cpu_s (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static gboolean
should_stop (void)
{
  return stopping || (o.duration > 0 && now_s () >= o.duration);
}

static void
emit (const gchar * event, const gchar * fmt, ...)
G_GNUC_PRINTF (2, 3);

     static void emit (const gchar * event, const gchar * fmt, ...)
{
  va_list ap;

  printf ("offender t=%.3f role=%s from=%s event=%s", now_s (), o.role_name,
      o.from, event);
  if (fmt) {
    putchar (' ');
    va_start (ap, fmt);
    vprintf (fmt, ap);
    va_end (ap);
  }
  putchar ('\n');
  fflush (stdout);
}

/* the session ended: what closed and why (first one counts) */
static void
closed (const gchar * what)
{
  o.closes++;
  if (o.first_close_s < 0)
    o.first_close_s = now_s ();
  g_free (o.last_close);
  o.last_close = g_strdup (what);
  emit ("closed", "what=\"%s\"", what);
}

static void
error (const gchar * what)
{
  o.errors++;
  emit ("error", "what=\"%s\"", what);
}

/* the session misbehaves from now on; @detail: key=value words */
static void
offending (gchar * detail)
{
  if (o.first_offending_s < 0)
    o.first_offending_s = now_s ();
  emit ("offending", "%s", detail);
  g_free (detail);
}

/* ------------------------------------------------------------ connecting */

/* a TCP connection from o.from, SO_RCVBUF @rcvbuf (0: the kernel's)
 * set before connecting, TCP_NODELAY as spice-gtk's (a message's header
 * and body are two writes) */
static SpiceRawConn *
tcp_connect (gint rcvbuf)
{
  GSocket *sock;
  GInetAddress *src, *dst;
  GSocketAddress *ssa, *dsa;
  SpiceRawConn *c = NULL;

  sock = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM,
      G_SOCKET_PROTOCOL_TCP, NULL);
  if (!sock)
    return NULL;
  g_socket_set_timeout (sock, SOCKET_TIMEOUT_S);
  src = g_inet_address_new_from_string (o.from);
  dst = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  ssa = g_inet_socket_address_new (src, 0);
  dsa = g_inet_socket_address_new (dst, o.port);
  if ((!rcvbuf || g_socket_set_option (sock, SOL_SOCKET, SO_RCVBUF, rcvbuf,
              NULL)) && g_socket_set_option (sock, IPPROTO_TCP, TCP_NODELAY,
          1, NULL) && g_socket_bind (sock, ssa, FALSE, NULL) &&
      g_socket_connect (sock, dsa, NULL, NULL)) {
    c = g_new0 (SpiceRawConn, 1);
    c->sock = g_steal_pointer (&sock);
  }
  g_clear_object (&sock);
  g_object_unref (ssa);
  g_object_unref (dsa);
  g_object_unref (src);
  g_object_unref (dst);
  return c;
}

/* links @c as a channel of @type in session @id; FALSE (reported) if the
 * server refused or the link failed */
static gboolean
link_channel (SpiceRawConn * c, guint32 id, guint8 type, guint32 caps)
{
  guint32 err = 0;

  if (!spice_raw_link (c, id, type, SPICE_RAW_COMMON_CAPS, caps, NULL, &err)) {
    if (err) {
      o.refusals++;
      emit ("refused", "channel=%u link-error=%u", type, err);
    } else {
      error ("link failed");
    }
    return FALSE;
  }
  if (c->link_result != SPICE_LINK_ERR_OK) {
    o.refusals++;
    emit ("refused", "channel=%u link-result=%u", type, c->link_result);
    return FALSE;
  }
  return TRUE;
}

/* --------------------------------------------------------- main channel */

static gboolean
send_u32 (SpiceRawConn * c, guint16 type, guint32 v)
{
  guint8 b[4];

  GST_WRITE_UINT32_LE (b, v);
  return spice_raw_send_msg (c, type, b, sizeof (b));
}

/* one whole VDAgentMessage, already written in @msg, as AGENT_DATA chunks
 * (counted against the server's tokens) */
static gboolean
send_agent_message (SpiceRawConn * c, GByteArray * msg)
{
  gsize off;

  for (off = 0; off < msg->len; off += VD_AGENT_MAX_DATA_SIZE) {
    if (!spice_raw_send_msg (c, SPICE_MSGC_MAIN_AGENT_DATA, msg->data + off,
            MIN (VD_AGENT_MAX_DATA_SIZE, msg->len - off)))
      return FALSE;
    o.sink_tokens--;
  }
  return TRUE;
}

static gboolean
send_clipboard (SpiceRawConn * c, GstSpiceClipboardAction action)
{
  GstSpiceClipboard clip = { action, VD_AGENT_CLIPBOARD_SELECTION_CLIPBOARD,
    1, {VD_AGENT_CLIPBOARD_UTF8_TEXT,}, VD_AGENT_CLIPBOARD_UTF8_TEXT, NULL
  };
  GByteArray *a = g_byte_array_new ();
  gboolean ok;

  /* no VD_AGENT_CAP_CLIPBOARD_SELECTION announced: no selection field */
  test_agent_write_clipboard (a, &clip, FALSE, FALSE, 0);
  ok = send_agent_message (c, a);
  g_byte_array_unref (a);
  return ok;
}

/* a whole agent message from the server (the clipboard owner's reader) */
static gboolean
owner_agent_message (guint32 type, guint64 opaque, const guint8 * body,
    gsize size, gpointer user_data)
{
  if (type == VD_AGENT_CLIPBOARD_REQUEST) {
    o.requests_in++;
    o.answers_due++;
  } else if (type == VD_AGENT_CLIPBOARD_GRAB) {
    /* another client took the clipboard */
    if (!o.regrab_at)
      o.regrab_at = g_get_monotonic_time () + REGRAB_DELAY_US;
  }
  return TRUE;
}

/* one message of the main channel, in any role; FALSE: the connection
 * failed */
static gboolean
main_message (SpiceRawConn * c, guint16 type, const guint8 * body, gsize size)
{
  const gchar *reason = NULL;

  switch (type) {
    case SPICE_MSG_PING:
      /* PONG echoes the PING's id and timestamp */
      return size < 12 || spice_raw_send_msg (c, SPICE_MSGC_PONG, body, 12);
    case SPICE_MSG_MAIN_AGENT_CONNECTED_TOKENS:
      if (size >= 4)
        o.sink_tokens = GST_READ_UINT32_LE (body);
      break;
    case SPICE_MSG_MAIN_AGENT_TOKEN:
      if (size >= 4)
        o.sink_tokens += GST_READ_UINT32_LE (body);
      break;
    case SPICE_MSG_MAIN_AGENT_DATA:
      o.agent_data_in += size;
      if (o.reader && !gst_spice_agent_reader_push (o.reader, body, size,
              owner_agent_message, NULL, &reason))
        error (reason);
      break;
    default:
      break;
  }
  return TRUE;
}

/* waits up to @timeout_ms for the main channel and handles one message;
 * FALSE when it closed */
static gboolean
main_pump (SpiceRawConn * c, gint timeout_ms)
{
  guint16 type;
  guint8 *body;
  gsize size;
  gboolean ok;

  if (timeout_ms > 0 && !g_socket_condition_timed_wait (c->sock, G_IO_IN,
          timeout_ms * (gint64) 1000, NULL, NULL))
    return TRUE;
  if (timeout_ms <= 0 && !(g_socket_condition_check (c->sock, G_IO_IN)))
    return TRUE;
  if (!spice_raw_read_msg (c, REPLY_TIMEOUT_MS, &type, &body, &size))
    return FALSE;
  ok = main_message (c, type, body, size);
  g_free (body);
  return ok;
}

/* reads main until a message of @type (kept in *@body, *@size), handling
 * the others; FALSE on closing or after REPLY_TIMEOUT_MS */
static gboolean
main_wait (SpiceRawConn * c, guint16 want, guint8 ** body, gsize * size)
{
  gint64 end = g_get_monotonic_time () + REPLY_TIMEOUT_MS * (gint64) 1000;
  guint16 type;

  while (g_get_monotonic_time () < end && !should_stop ()) {
    if (!g_socket_condition_timed_wait (c->sock, G_IO_IN, 200 * 1000, NULL,
            NULL))
      continue;
    if (!spice_raw_read_msg (c, REPLY_TIMEOUT_MS, &type, body, size))
      return FALSE;
    if (type == want)
      return TRUE;
    main_message (c, type, *body, *size);
    g_free (*body);
  }
  *body = NULL;
  return FALSE;
}

/* a new session: main linked with @caps, MAIN_INIT read (*@init), and with
 * @attach the channel list (TRUE in @listed[type] for each) */
static SpiceRawConn *
main_open (guint32 caps, gboolean attach, TestWireMainInit * init,
    gboolean listed[256])
{
  SpiceRawConn *c = tcp_connect (0);
  guint8 *body = NULL, types[32], ids[32];
  gsize size;
  gint n, i;

  if (!c) {
    error ("connect failed");
    return NULL;
  }
  if (!link_channel (c, 0, SPICE_CHANNEL_MAIN, caps))
    goto fail;
  if (!main_wait (c, SPICE_MSG_MAIN_INIT, &body, &size) ||
      !test_wire_parse_main_init (body, size, init)) {
    error ("no MAIN_INIT");
    goto fail;
  }
  g_clear_pointer (&body, g_free);
  o.connects++;
  o.sink_tokens = init->agent_tokens;
  if (attach) {
    if (!spice_raw_send_msg (c, SPICE_MSGC_MAIN_ATTACH_CHANNELS, NULL, 0) ||
        !main_wait (c, SPICE_MSG_MAIN_CHANNELS_LIST, &body, &size) ||
        (n = test_wire_parse_channels_list (body, size, types, ids,
                G_N_ELEMENTS (types))) < 0) {
      error ("no CHANNELS_LIST");
      goto fail;
    }
    g_clear_pointer (&body, g_free);
    for (i = 0; i < n; i++)
      listed[types[i]] = TRUE;
  }
  emit ("connected", "session=%08x agent=%u", init->session_id,
      init->agent_connected);
  return c;
fail:
  g_free (body);
  spice_raw_close (c);
  return NULL;
}

/* waits until the server says that the guest's agent is there */
static gboolean
wait_agent (SpiceRawConn * c, const TestWireMainInit * init)
{
  guint8 *body = NULL;
  gsize size;

  if (init->agent_connected)
    return TRUE;
  if (!main_wait (c, SPICE_MSG_MAIN_AGENT_CONNECTED_TOKENS, &body, &size)) {
    error ("no guest agent");
    return FALSE;
  }
  main_message (c, SPICE_MSG_MAIN_AGENT_CONNECTED_TOKENS, body, size);
  g_free (body);
  return TRUE;
}

/* the record role's reader of its main channel (a thread) */
typedef struct
{
  SpiceRawConn *main;
  gint done;                    /* atomic: 1 stop reading, 2 main closed */
} MainReader;

/* --hold: the session waits, reading its main channel (or letting @r's
 * thread read it), until SIGUSR1; FALSE if it closed or the run stops */
static gboolean
hold (SpiceRawConn * main, MainReader * r)
{
  if (released)
    return TRUE;
  emit ("holding", "%s", "until SIGUSR1");
  while (!released && !should_stop ()) {
    if (r ? g_atomic_int_get (&r->done) == 2 : !main_pump (main, 200)) {
      closed ("main channel");
      return FALSE;
    }
    if (r)
      g_usleep (50 * 1000);
  }
  return !should_stop ();
}

/* ------------------------------------------------------------- record */

/* the record role's reader thread */
static gpointer
main_reader (gpointer data)
{
  MainReader *r = data;

  while (!g_atomic_int_get (&r->done)) {
    if (!main_pump (r->main, 200)) {
      g_atomic_int_set (&r->done, 2);
      break;
    }
  }
  return NULL;
}

/* sends @size bytes of @data on the record channel, waiting as long as the
 * server does not read; FALSE when the connection failed */
static gboolean
send_all (SpiceRawConn * c, const guint8 * data, gsize size, MainReader * r)
{
  while (size > 0) {
    GError *err = NULL;
    gssize n = g_socket_send (c->sock, (const gchar *) data, size, NULL,
        &err);

    if (n > 0) {
      data += n;
      size -= n;
      continue;
    }
    if (n < 0 && g_error_matches (err, G_IO_ERROR, G_IO_ERROR_TIMED_OUT) &&
        !should_stop () && g_atomic_int_get (&r->done) != 2) {
      g_error_free (err);
      continue;
    }
    g_clear_error (&err);
    return FALSE;
  }
  return TRUE;
}

static void
record_session (void)
{
  TestWireMainInit init;
  gboolean listed[256] = { FALSE, };
  SpiceRawConn *main, *rec = NULL;
  MainReader r = { NULL, 0 };
  GThread *th = NULL;
  GByteArray *a = NULL;
  guint8 *body = NULL, head[6];
  gsize size, msg_size = 4 + (gsize) o.record_bytes, i, k;
  gint64 t_start;

  if (!(main = main_open (0, TRUE, &init, listed)))
    return;
  if (!listed[SPICE_CHANNEL_RECORD]) {
    error ("no record channel listed (the pipeline's audio is not linked)");
    goto out;
  }
  if (!(rec = tcp_connect (0))) {
    error ("connect failed");
    goto out;
  }
  if (!link_channel (rec, init.session_id, SPICE_CHANNEL_RECORD, 0))
    goto out;
  if (!main_wait (rec, SPICE_MSG_RECORD_START, &body, &size)) {
    error ("no RECORD_START");
    goto out;
  }
  g_clear_pointer (&body, g_free);
  r.main = main;
  th = g_thread_new ("main-reader", main_reader, &r);
  if (!hold (main, &r))
    goto out;

  /* RECORD_MODE (time, raw, no data) and RECORD_START_MARK (time) */
  t_start = g_get_monotonic_time ();
  a = g_byte_array_new ();
  gst_spice_put_u32 (a, init.multi_media_time);
  gst_spice_put_u16 (a, SPICE_AUDIO_DATA_MODE_RAW);
  if (!spice_raw_send_msg (rec, SPICE_MSGC_RECORD_MODE, a->data, a->len) ||
      !send_u32 (rec, SPICE_MSGC_RECORD_START_MARK, init.multi_media_time)) {
    closed ("record channel (RECORD_MODE)");
    goto out;
  }
  /* RECORD_BATCH RECORD_DATA messages, their times set before each write */
  g_byte_array_set_size (a, 0);
  for (k = 0; k < RECORD_BATCH; k++) {
    gst_spice_wire_put_header (head, rec->mini, 0, SPICE_MSGC_RECORD_DATA,
        (guint32) msg_size);
    g_byte_array_append (a, head, gst_spice_wire_header_size (rec->mini));
    gst_spice_put_u32 (a, 0);
    for (i = 0; i < (gsize) o.record_bytes / (2 * RECORD_CHANNELS); i++) {
      gint16 v = (gint16) (8000 * sin (2 * G_PI * 1000 * i / RECORD_RATE));

      gst_spice_put_u16 (a, (guint16) v);
      gst_spice_put_u16 (a, (guint16) v);
    }
  }
  offending (g_strdup_printf ("record-bytes=%d", o.record_bytes));
  while (!should_stop () && g_atomic_int_get (&r.done) != 2) {
    guint32 mm = init.multi_media_time +
        (guint32) ((g_get_monotonic_time () - t_start) / 1000);
    gsize off = gst_spice_wire_header_size (rec->mini);

    for (k = 0; k < RECORD_BATCH; k++, off += msg_size +
        gst_spice_wire_header_size (rec->mini))
      GST_WRITE_UINT32_LE (a->data + off, mm);
    if (!send_all (rec, a->data, a->len, &r)) {
      closed ("record channel");
      goto out;
    }
    o.record_msgs += RECORD_BATCH;
    o.record_bytes_sent += a->len;
  }
  if (g_atomic_int_get (&r.done) == 2)
    closed ("main channel");
out:
  if (th) {
    g_atomic_int_compare_and_exchange (&r.done, 0, 1);
    g_thread_join (th);
  }
  if (a)
    g_byte_array_unref (a);
  g_free (body);
  spice_raw_close (rec);
  spice_raw_close (main);
}

/* -------------------------------------------------------- cursor drip */

/* TRUE while @c is an established TCP connection (FALSE once the server
 * closed or reset it); *@inq: bytes waiting in the receive buffer */
static gboolean
tcp_alive (SpiceRawConn * c, gint * inq)
{
  gint fd = g_socket_get_fd (c->sock);
  struct tcp_info ti;
  socklen_t len = sizeof (ti);

  if (ioctl (fd, FIONREAD, inq) < 0)
    *inq = 0;
  if (getsockopt (fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0)
    return FALSE;
  return ti.tcpi_state == TCP_ESTABLISHED;
}

static void
cursor_session (void)
{
  TestWireMainInit init;
  gboolean listed[256] = { FALSE, };
  SpiceRawConn *main, *cur = NULL;
  gint64 next_drip, next_check;
  gint fd, inq;
  socklen_t len = sizeof (o.rcvbuf_effective);

  if (!(main = main_open (0, TRUE, &init, listed)))
    return;
  if (!listed[SPICE_CHANNEL_CURSOR]) {
    error ("no cursor channel listed");
    goto out;
  }
  if (!(cur = tcp_connect (o.rcvbuf))) {
    error ("connect failed");
    goto out;
  }
  if (!link_channel (cur, init.session_id, SPICE_CHANNEL_CURSOR, 0) ||
      !hold (main, NULL))
    goto out;
  fd = g_socket_get_fd (cur->sock);
  getsockopt (fd, SOL_SOCKET, SO_RCVBUF, &o.rcvbuf_effective, &len);
  offending (g_strdup_printf ("rcvbuf=%d", o.rcvbuf_effective));
  next_drip = g_get_monotonic_time () + (gint64) (o.drip_s * G_USEC_PER_SEC);
  next_check = 0;
  while (!should_stop ()) {
    gint64 now = g_get_monotonic_time ();

    if (now >= next_check) {
      if (!tcp_alive (cur, &inq)) {
        closed ("cursor channel");
        goto out;
      }
      o.drip_inq_max = MAX (o.drip_inq_max, inq);
      next_check = now + G_USEC_PER_SEC;
    }
    if (now >= next_drip) {
      gchar *buf = g_malloc (o.drip_bytes);
      gssize n = g_socket_receive_with_blocking (cur->sock, buf, o.drip_bytes,
          FALSE, NULL, NULL);

      g_free (buf);
      if (n == 0) {
        closed ("cursor channel (EOF)");
        goto out;
      }
      if (n > 0)
        o.drip_read += n;
      next_drip = now + (gint64) (o.drip_s * G_USEC_PER_SEC);
    }
    if (!main_pump (main, 500)) {
      closed ("main channel");
      goto out;
    }
  }
out:
  spice_raw_close (cur);
  spice_raw_close (main);
}

/* --------------------------------------------------------------- agent */

static void
agent_session (void)
{
  TestWireMainInit init;
  SpiceRawConn *main;
  gint64 next;

  if (!(main = main_open (1u << SPICE_MAIN_CAP_AGENT_CONNECTED_TOKENS, FALSE,
              &init, NULL)))
    return;
  if (!wait_agent (main, &init) || !hold (main, NULL))
    goto out;
  if (!send_u32 (main, SPICE_MSGC_MAIN_AGENT_START, (guint32) o.tokens)) {
    closed ("main channel (AGENT_START)");
    goto out;
  }
  offending (g_strdup_printf ("tokens=%d", o.tokens));
  next = g_get_monotonic_time ();
  while (!should_stop ()) {
    gint64 now = g_get_monotonic_time ();

    if (now >= next && o.sink_tokens > 0) {
      if (!send_clipboard (main, GST_SPICE_CLIPBOARD_REQUEST)) {
        closed ("main channel");
        goto out;
      }
      o.requests++;
      next = now + (gint64) (o.interval_s * G_USEC_PER_SEC);
    }
    if (!main_pump (main, MAX (1, (gint) ((next - now) / 1000)))) {
      closed ("main channel");
      goto out;
    }
  }
out:
  spice_raw_close (main);
}

/* ---------------------------------------------------- clipboard owner */

/* sends the answer's chunks due while the server's tokens last */
static gboolean
owner_flush (SpiceRawConn * c)
{
  gsize total = g_bytes_get_size (o.answer);
  const guint8 *data = g_bytes_get_data (o.answer, NULL);

  while (o.answers_due > 0 && o.sink_tokens > 0) {
    gsize n = MIN (VD_AGENT_MAX_DATA_SIZE, total - o.answer_off);

    if (!spice_raw_send_msg (c, SPICE_MSGC_MAIN_AGENT_DATA,
            data + o.answer_off, n))
      return FALSE;
    o.sink_tokens--;
    o.answer_off += n;
    if (o.answer_off == total) {
      o.answer_off = 0;
      o.answers_due--;
      o.answers++;
      o.answer_bytes += total;
    }
  }
  return TRUE;
}

static gboolean
owner_grab (SpiceRawConn * c)
{
  o.regrab_at = 0;
  o.grabs++;
  return send_clipboard (c, GST_SPICE_CLIPBOARD_GRAB);
}

static void
owner_session (void)
{
  TestWireMainInit init;
  SpiceRawConn *main;

  if (!(main = main_open (1u << SPICE_MAIN_CAP_AGENT_CONNECTED_TOKENS, FALSE,
              &init, NULL)))
    return;
  o.answers_due = 0;
  o.answer_off = 0;
  o.regrab_at = 0;
  o.reader = gst_spice_agent_reader_new (64 * 1024);
  if (!wait_agent (main, &init) || !hold (main, NULL))
    goto out;
  if (!send_u32 (main, SPICE_MSGC_MAIN_AGENT_START, G_MAXUINT32) ||
      !owner_grab (main)) {
    closed ("main channel (AGENT_START)");
    goto out;
  }
  offending (g_strdup_printf ("answer-bytes=%" G_GSIZE_FORMAT,
          g_bytes_get_size (o.answer)));
  while (!should_stop ()) {
    gboolean busy;

    if (o.regrab_at && g_get_monotonic_time () >= o.regrab_at &&
        !owner_grab (main)) {
      closed ("main channel");
      goto out;
    }
    if (!owner_flush (main)) {
      closed ("main channel");
      goto out;
    }
    /* while an answer waits for tokens, read at once */
    busy = o.answers_due > 0;
    if (!main_pump (main, busy ? 0 : 200) || (busy && !main_pump (main, 200))) {
      closed ("main channel");
      goto out;
    }
  }
out:
  g_clear_pointer (&o.reader, gst_spice_agent_reader_free);
  spice_raw_close (main);
}

/* ------------------------------------------------------------------ main */

static gchar *
json_str (const gchar * s)
{
  gchar *e, *out;

  if (!s)
    return g_strdup ("null");
  e = g_strescape (s, NULL);
  out = g_strdup_printf ("\"%s\"", e);
  g_free (e);
  return out;
}

static void
print_json (void)
{
  gchar *role = json_str (o.role_name), *from = json_str (o.from),
      *last = json_str (o.last_close);

  printf ("{\"role\":%s,\"from\":%s,\"seconds\":%.3f,\"connects\":%u,"
      "\"cpu_s\":%.3f,\"refusals\":%u,\"closes\":%u,\"errors\":%u,"
      "\"first_offending_s\":%.3f,\"first_close_s\":%.3f,\"last_close\":%s,"
      "\"record_msgs\":%" G_GUINT64_FORMAT ",\"record_bytes\":%"
      G_GUINT64_FORMAT ",\"drip_read\":%" G_GUINT64_FORMAT
      ",\"drip_inq_max\":%d,\"rcvbuf\":%d,\"requests\":%" G_GUINT64_FORMAT
      ",\"requests_in\":%" G_GUINT64_FORMAT ",\"answers\":%" G_GUINT64_FORMAT
      ",\"answer_bytes\":%" G_GUINT64_FORMAT ",\"grabs\":%" G_GUINT64_FORMAT
      ",\"agent_data_in\":%" G_GUINT64_FORMAT "}\n", role, from, now_s (),
      o.connects, cpu_s (), o.refusals, o.closes, o.errors, o.first_offending_s,
      o.first_close_s, last, o.record_msgs, o.record_bytes_sent,
      o.drip_read, o.drip_inq_max, o.rcvbuf_effective, o.requests,
      o.requests_in, o.answers, o.answer_bytes, o.grabs, o.agent_data_in);
  fflush (stdout);
  g_free (role);
  g_free (from);
  g_free (last);
}

/* the clipboard owner's answer: one VD_AGENT_CLIPBOARD message of
 * o.clipboard_bytes of text */
static GBytes *
make_answer (void)
{
  static const gchar line[] = "The quick brown fox jumps over the lazy dog. ";
  guint8 *text = g_malloc (o.clipboard_bytes);
  GstSpiceClipboard clip = { GST_SPICE_CLIPBOARD_DATA,
    VD_AGENT_CLIPBOARD_SELECTION_CLIPBOARD, 0, {0,},
    VD_AGENT_CLIPBOARD_UTF8_TEXT, NULL
  };
  GByteArray *a = g_byte_array_new ();
  gint i;

  for (i = 0; i < o.clipboard_bytes; i++)
    text[i] = line[i % (sizeof (line) - 1)];
  clip.data = g_bytes_new_take (text, o.clipboard_bytes);
  test_agent_write_clipboard (a, &clip, FALSE, FALSE, 0);
  g_bytes_unref (clip.data);
  return g_byte_array_free_to_bytes (a);
}

int
main (int argc, char **argv)
{
  gboolean hold_opt = FALSE;
  GOptionEntry entries[] = {
    {"port", 'p', 0, G_OPTION_ARG_INT, &o.port, "Server port on 127.0.0.1",
        "N"},
    {"from", 'f', 0, G_OPTION_ARG_STRING, &o.from,
        "Local address to connect from (127.0.0.2)", "ADDR"},
    {"role", 'r', 0, G_OPTION_ARG_STRING, &o.role_name,
        "record, cursor-drip, agent or clipboard-owner", "ROLE"},
    {"duration", 'd', 0, G_OPTION_ARG_DOUBLE, &o.duration,
        "Stop after S seconds (0: at SIGTERM)", "S"},
    {"reconnect", 0, 0, G_OPTION_ARG_DOUBLE, &o.reconnect_s,
        "Connect again S s after a close (1)", "S"},
    {"hold", 0, 0, G_OPTION_ARG_NONE, &hold_opt,
        "Connect, then wait for SIGUSR1 before misbehaving", NULL},
    {"record-bytes", 0, 0, G_OPTION_ARG_INT, &o.record_bytes,
        "record: sample bytes per RECORD_DATA (65536)", "N"},
    {"rcvbuf", 0, 0, G_OPTION_ARG_INT, &o.rcvbuf,
        "cursor-drip: SO_RCVBUF of the cursor socket (4096)", "BYTES"},
    {"drip", 0, 0, G_OPTION_ARG_DOUBLE, &o.drip_s,
        "cursor-drip: seconds between two reads (19)", "S"},
    {"drip-bytes", 0, 0, G_OPTION_ARG_INT, &o.drip_bytes,
        "cursor-drip: bytes read each time (1)", "N"},
    {"tokens", 0, 0, G_OPTION_ARG_INT, &o.tokens,
        "agent: tokens given to the server in AGENT_START (0)", "N"},
    {"interval", 0, 0, G_OPTION_ARG_DOUBLE, &o.interval_s,
        "agent: seconds between clipboard requests (1)", "S"},
    {"clipboard-bytes", 0, 0, G_OPTION_ARG_INT, &o.clipboard_bytes,
        "clipboard-owner: text bytes of each answer (16 MiB)", "N"},
    {NULL}
  };
  GOptionContext *oc;
  GError *err = NULL;
  struct sigaction sa;
  guint i;

  o.from = g_strdup ("127.0.0.2");
  o.reconnect_s = 1;
  o.record_bytes = 65536;
  o.rcvbuf = 4096;
  o.drip_s = 19;
  o.drip_bytes = 1;
  o.interval_s = 1;
  o.clipboard_bytes = 16 * 1024 * 1024;
  o.first_offending_s = o.first_close_s = -1;

  oc = g_option_context_new ("- one hostile SPICE client (bench/offenders.py)");
  g_option_context_add_main_entries (oc, entries, NULL);
  if (!g_option_context_parse (oc, &argc, &argv, &err)) {
    fprintf (stderr, "spice-offender: %s\n", err->message);
    return 2;
  }
  g_option_context_free (oc);
  for (i = 0; i < G_N_ELEMENTS (role_names); i++)
    if (o.role_name && g_str_equal (o.role_name, role_names[i]))
      break;
  if (i == G_N_ELEMENTS (role_names) || o.port <= 0 || o.port > 65535 ||
      o.record_bytes < 4 || o.record_bytes % (2 * RECORD_CHANNELS) ||
      o.clipboard_bytes < 0 || o.tokens < 0 || o.drip_s <= 0 || o.drip_bytes < 1
      || o.interval_s <= 0) {
    fprintf (stderr,
        "spice-offender: give --port and --role (record, "
        "cursor-drip, agent, clipboard-owner); see --help\n");
    return 2;
  }
  o.role = i;

  memset (&sa, 0, sizeof (sa));
  sa.sa_handler = on_signal;
  sigaction (SIGTERM, &sa, NULL);
  sigaction (SIGINT, &sa, NULL);
  sa.sa_handler = on_release;
  sigaction (SIGUSR1, &sa, NULL);
  released = !hold_opt;
  signal (SIGPIPE, SIG_IGN);

  o.t0 = g_get_monotonic_time ();
  if (o.role == ROLE_CLIPBOARD_OWNER)
    o.answer = make_answer ();
  while (!should_stop ()) {
    gint64 end;

    switch (o.role) {
      case ROLE_RECORD:
        record_session ();
        break;
      case ROLE_CURSOR_DRIP:
        cursor_session ();
        break;
      case ROLE_AGENT:
        agent_session ();
        break;
      case ROLE_CLIPBOARD_OWNER:
        owner_session ();
        break;
    }
    end = g_get_monotonic_time () + (gint64) (o.reconnect_s * G_USEC_PER_SEC);
    while (!should_stop () && g_get_monotonic_time () < end)
      g_usleep (50 * 1000);
  }
  print_json ();
  if (o.answer)
    g_bytes_unref (o.answer);
  g_free (o.last_close);
  return 0;
}
