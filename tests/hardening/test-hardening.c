/* tests/hardening: spicesink against hostile and unlucky peers.
 *
 * In-process (appsrc fixture of tests/spicesink): connection rate per
 * address with 200 connects in 10 s, pending-link and idle limits, ACK and
 * input floods, a client that never reads (queue bound), TLS-only mode,
 * reconnect cycles with MJPEG and VP8 streams, a non-live pipeline that
 * never starts a stream. Every loop is bounded in count and time; every
 * client is on 127.0.0.1.
 *
 * Longer variants: GST_SPICE_HARDENING_SOAK=1 (see docs/reliability.md).
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <glib/gstdio.h>
#include <sys/socket.h>

#include "spicesink-test-util.h"
#include "element-stats.h"

#include <gio/gio.h>

static gboolean
soak (void)
{
  return g_getenv ("GST_SPICE_HARDENING_SOAK") != NULL;
}

/* ------------------------------------------------- warnings of the sink */

static GMutex log_lock;
static GPtrArray *warnings;     /* gchar*, spicesink warnings */

static void
log_func (GstDebugCategory * category, GstDebugLevel level,
    const gchar * file, const gchar * function, gint line, GObject * object,
    GstDebugMessage * message, gpointer user_data)
{
  if (level != GST_LEVEL_WARNING ||
      !g_str_has_prefix (gst_debug_category_get_name (category), "spicesink"))
    return;
  g_mutex_lock (&log_lock);
  if (warnings && warnings->len < 10000)
    g_ptr_array_add (warnings, g_strdup (gst_debug_message_get (message)));
  g_mutex_unlock (&log_lock);
}

static void
warnings_start (void)
{
  g_mutex_lock (&log_lock);
  if (warnings)
    g_ptr_array_unref (warnings);
  warnings = g_ptr_array_new_with_free_func (g_free);
  g_mutex_unlock (&log_lock);
  if (gst_debug_get_default_threshold () < GST_LEVEL_WARNING)
    gst_debug_set_threshold_for_name ("spicesink*", GST_LEVEL_WARNING);
  gst_debug_add_log_function (log_func, NULL, NULL);
}

/* the number of warnings containing every one of the NULL-terminated
 * strings */
static guint
warnings_count (const gchar * first, ...)
{
  guint n = 0, i;

  g_mutex_lock (&log_lock);
  for (i = 0; warnings && i < warnings->len; i++) {
    const gchar *w = g_ptr_array_index (warnings, i);
    const gchar *s;
    gboolean all = TRUE;
    va_list ap;

    va_start (ap, first);
    for (s = first; s && all; s = va_arg (ap, const gchar *))
      all = strstr (w, s) != NULL;
    va_end (ap);
    n += all;
  }
  g_mutex_unlock (&log_lock);
  return n;
}

static void
warnings_stop (void)
{
  gst_debug_remove_log_function (log_func);
  g_mutex_lock (&log_lock);
  g_clear_pointer (&warnings, g_ptr_array_unref);
  g_mutex_unlock (&log_lock);
}

/* ---------------------------------------------------------------- stats */

#define stat_u64(f, field) test_element_stat_u64 ((f)->sink, field)

/* the display channel's queued-bytes of the client whose peer is @peer_port
 * (main channel's local port), or of the largest queue with 0 */
static guint64
max_display_queue (Fixture * f)
{
  GstStructure *st = NULL;
  const GValue *arr;
  guint64 q = 0;
  guint i;

  g_object_get (f->sink, "stats", &st, NULL);
  arr = gst_structure_get_value (st, "client-stats");
  for (i = 0; i < gst_value_array_get_size (arr); i++) {
    const GstStructure *c =
        gst_value_get_structure (gst_value_array_get_value (arr, i));
    const GstStructure *d;
    guint64 v = 0;

    if (!gst_structure_has_field (c, "display"))
      continue;
    d = gst_value_get_structure (gst_structure_get_value (c, "display"));
    gst_structure_get_uint64 (d, "queued-bytes", &v);
    q = MAX (q, v);
  }
  gst_structure_free (st);
  return q;
}

/* ------------------------------------------------------- picture checks */

static gboolean
is_exact (SpiceRawSession * s, gpointer data)
{
  Fixture *f = data;

  return s->canvas && s->width == f->w && s->height == f->h &&
      spice_raw_session_compare (s, f->picture, f->w * 4) == 0;
}

/* a new picture (seed) over the whole surface, then the legitimate
 * client must show it exactly within @timeout_ms */
static void
check_follows (Fixture * f, SpiceRawSession * s, guint seed, guint timeout_ms,
    const gchar * when)
{
  GstVideoRectangle r = { 0, 0, f->w, f->h };

  update_rect (f, &r, seed);
  fail_unless (spice_raw_session_pump (s, timeout_ms, is_exact, f),
      "%s: the legitimate client %s (draws %" G_GUINT64_FORMAT ")", when,
      s->error ? s->error : "did not get the exact picture", s->draws);
}

/* ---------------------------------------------------- raw socket floods */

/* TRUE if the server closed @sock (EOF/reset) within @timeout_ms without
 * sending anything */
static gboolean
closed_silently (GSocket * sock, guint timeout_ms)
{
  guint8 b[64];
  gssize n;

  if (!g_socket_condition_timed_wait (sock, G_IO_IN, timeout_ms * 1000LL,
          NULL, NULL))
    return FALSE;
  n = g_socket_receive (sock, (gchar *) b, sizeof (b), NULL, NULL);
  return n <= 0;
}

typedef struct {
  guint16 port;
  guint count;                  /* connects to make */
  guint interval_ms;
  gint stop;
  /* results */
  guint connected, refused_at_once;
  gint64 elapsed_us;
} Flood;

/* connects @count times, @interval_ms apart: sends a link header and
 * looks whether the server closes at once (rate-limited) or answers */
static gpointer
flood_thread (gpointer data)
{
  Flood *fl = data;
  gint64 t0 = g_get_monotonic_time ();
  GByteArray *hdr = g_byte_array_new ();
  guint i;

  /* garbage that the link stage refuses when it gets to read it */
  g_byte_array_append (hdr, (const guint8 *) "GARBAGE!GARBAGE!", 16);
  for (i = 0; i < fl->count && !g_atomic_int_get (&fl->stop); i++) {
    gint64 due = t0 + (gint64) i * fl->interval_ms * 1000;
    GSocket *s;

    while (g_get_monotonic_time () < due)
      g_usleep (2000);
    s = spice_raw_tcp_connect (fl->port, 5);
    if (!s)
      continue;
    fl->connected++;
    g_socket_send (s, (const gchar *) hdr->data, hdr->len, NULL, NULL);
    /* a refused connection is closed before anything is read: no reply */
    if (closed_silently (s, 2000))
      fl->refused_at_once++;
    spice_raw_tcp_close (&s);
  }
  fl->elapsed_us = g_get_monotonic_time () - t0;
  g_byte_array_unref (hdr);
  return NULL;
}

/* ----------------------------------------------------------- the tests */

/* 200 connects in 10 s from 127.0.0.1 with max-connections-per-second=5,
 * connection-burst=10: at most burst + rate x elapsed get through, the
 * rest are closed at once (counted, one warning per second naming the
 * address and the limit); a session opened before keeps getting exact
 * pictures throughout, and a new one succeeds once the bucket refilled. */
GST_START_TEST (test_rate_limit_200_connects)
{
  Fixture *f = fixture_new (320, 240, "max-connections-per-second=5 "
      "connection-burst=10 handshake-timeout=2000");
  Flood fl = { 0, };
  SpiceRawSession *good, *late;
  GThread *t;
  guint seed = 10, accepted, bound;
  guint64 refused;

  warnings_start ();
  fixture_start (f, TRUE);
  good = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (good != NULL);
  fail_unless (spice_raw_session_pump (good, 10000, is_exact, f));

  fl.port = f->port;
  fl.count = 200;
  fl.interval_ms = 50;          /* 200 in 10 s */
  t = g_thread_new ("flood", flood_thread, &fl);
  while (!g_atomic_int_get (&fl.stop)) {
    check_follows (f, good, seed++, 10000, "during the connect flood");
    if (fl.elapsed_us)
      break;
    g_usleep (300 * 1000);
    if (seed > 200)             /* bound: ~60+ s */
      break;
  }
  g_thread_join (t);
  refused = stat_u64 (f, "refused-rate");
  accepted = fl.connected - fl.refused_at_once;
  /* the session's 2 connections came out of the same bucket */
  bound = 10 + (guint) (5 * (fl.elapsed_us / 1e6)) + 1;
  g_print ("RESULT rate limit: %u connects in %.1f s, %u refused at once "
      "(stats %" G_GUINT64_FORMAT "), %u accepted (bound %u), %u pictures "
      "exact meanwhile\n", fl.connected, fl.elapsed_us / 1e6,
      fl.refused_at_once, refused, accepted, bound, seed - 10);
  fail_unless_equals_int (fl.connected, 200);
  fail_unless (accepted <= bound, "%u accepted > %u", accepted, bound);
  fail_unless (refused >= 200 - bound, "only %" G_GUINT64_FORMAT
      " refused", refused);
  fail_unless (refused == fl.refused_at_once);
  fail_unless (warnings_count ("127.0.0.1", "max-connections-per-second=5",
          NULL) >= 1);
  /* one warning per second and address, not one per refusal */
  fail_unless (warnings_count ("max-connections-per-second=5", NULL) <=
      2 + fl.elapsed_us / G_USEC_PER_SEC);

  /* the bucket refills: a new client gets in after 2.5 s */
  g_usleep (2500 * 1000);
  late = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (late != NULL);
  fail_unless (spice_raw_session_pump (late, 10000, is_exact, f));
  check_follows (f, good, 999, 10000, "after the flood");
  spice_raw_session_free (late);
  spice_raw_session_free (good);
  warnings_stop ();
  fixture_free (f);
}

GST_END_TEST;

/* max-pending-links: 20 connections that never send a byte, limit 8: 12
 * are closed at once, 8 by the handshake timeout. idle-timeout: a session
 * that never sends anything is closed; one that sends an ACK now and then
 * on its display channel is not. */
GST_START_TEST (test_pending_and_idle_limits)
{
  Fixture *f = fixture_new (160, 120, "max-pending-links=8 "
      "handshake-timeout=2500 idle-timeout=1500");
  GSocket *socks[20];
  SpiceRawSession *silent, *alive, *good;
  guint i, at_once = 0, later = 0;
  guint64 idle0;
  gint64 t0;

  warnings_start ();
  fixture_start (f, TRUE);
  good = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (good != NULL);

  for (i = 0; i < 20; i++) {
    socks[i] = spice_raw_tcp_connect (f->port, 5);
    fail_unless (socks[i] != NULL);
    g_usleep (20 * 1000);       /* accepted in order */
  }
  for (i = 0; i < 20; i++)
    if (closed_silently (socks[i], i < 8 ? 200 : 1500))
      at_once++;
  fail_unless_equals_int (at_once, 12);
  fail_unless_equals_int (stat_u64 (f, "refused-pending"), 12);
  fail_unless (warnings_count ("max-pending-links=8", "127.0.0.1", NULL) >=
      1);
  t0 = g_get_monotonic_time ();
  for (i = 0; i < 8; i++)
    if (closed_silently (socks[i], 6000))
      later++;
  fail_unless_equals_int (later, 8);
  g_print ("RESULT pending links: 12 refused at once, 8 closed by the "
      "handshake timeout after %.1f s more\n",
      (g_get_monotonic_time () - t0) / 1e6);
  fail_unless (stat_u64 (f, "closed-handshake-timeout") >= 8);
  fail_unless (warnings_count ("handshake-timeout=2500", NULL) >= 8);
  for (i = 0; i < 20; i++)
    spice_raw_tcp_close (&socks[i]);
  /* the good session was linked before; it sent nothing either and is
   * closed by the idle timeout too: replace it with two new sessions */
  spice_raw_session_free (good);

  idle0 = stat_u64 (f, "closed-idle");
  silent = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  alive = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (silent && alive);
  t0 = g_get_monotonic_time ();
  for (i = 0; i < 40 && !spice_raw_wait_closed (silent->main, 100); i++) {
    fail_unless (spice_raw_send_msg (alive->display, SPICE_MSGC_ACK,
            NULL, 0));
    spice_raw_session_pump (alive, 100, NULL, NULL);
  }
  fail_unless (i < 40, "the silent session was not closed");
  g_print ("RESULT idle-timeout=1500: silent session closed after %.1f s\n",
      (g_get_monotonic_time () - t0) / 1e6);
  fail_unless (spice_raw_wait_closed (silent->display, 3000));
  fail_unless_equals_int (stat_u64 (f, "closed-idle"), idle0 + 1);
  fail_unless (warnings_count ("idle-timeout=1500", NULL) == idle0 + 1);
  /* the one that sends stays and follows the picture */
  fail_unless (spice_raw_send_msg (alive->display, SPICE_MSGC_ACK, NULL,
          0));
  check_follows (f, alive, 77, 5000, "after the idle close");
  fail_unless_equals_int (stat_u64 (f, "clients"), 1);
  spice_raw_session_free (silent);
  spice_raw_session_free (alive);
  warnings_stop ();
  fixture_free (f);
}

GST_END_TEST;

static SpiceRawConn *
link_inputs (guint16 port, guint32 session_id)
{
  SpiceRawConn *c = spice_raw_connect (port, 10);

  fail_unless (c != NULL);
  fail_unless (spice_raw_link (c, session_id, SPICE_CHANNEL_INPUTS,
          (1 << SPICE_COMMON_CAP_PROTOCOL_AUTH_SELECTION) |
          (1 << SPICE_COMMON_CAP_AUTH_SPICE) |
          (1 << SPICE_COMMON_CAP_MINI_HEADER), 0, NULL, NULL));
  fail_unless_equals_int (c->link_result, 0);
  return c;
}

static guint
nav_count (Fixture * f)
{
  guint n;

  g_mutex_lock (&f->lock);
  n = f->nav->len;
  g_mutex_unlock (&f->lock);
  return n;
}

/* ACK and input floods in big writes, and a client that never reads,
 * while a legitimate client follows exact pictures. The never-reading
 * client's queue stays within queue-size + one update (it is left behind
 * after client-timeout and gets nothing more). */
GST_START_TEST (test_floods_and_never_reading)
{
  Fixture *f = fixture_new (320, 240, "queue-size=65536 client-timeout=300");
  SpiceRawSession *good, *flooder, *lazy;
  SpiceRawConn *inputs;
  GByteArray *a = g_byte_array_new ();
  guint8 body[16];
  guint i, round, rounds = soak ()? 50 : 5, nav0;
  guint64 qmax = 0, bound;
  gint rcv = 4096;

  fixture_start (f, TRUE);
  good = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  flooder = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  lazy = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (good && flooder && lazy);
  fail_unless (spice_raw_session_pump (good, 10000, is_exact, f));
  fail_unless (spice_raw_session_pump (lazy, 10000, is_exact, f));
  /* from here on the lazy client reads nothing (small receive buffer) */
  setsockopt (g_socket_get_fd (lazy->display->sock), SOL_SOCKET, SO_RCVBUF,
      &rcv, sizeof (rcv));
  inputs = link_inputs (f->port, flooder->session_id);

  for (round = 0; round < rounds; round++) {
    /* 20000 ACKs (6-byte mini headers) in one write on display */
    g_byte_array_set_size (a, 0);
    for (i = 0; i < 20000; i++)
      spice_raw_append_msg (a, SPICE_MSGC_ACK, NULL, 0);
    fail_unless (spice_raw_send (flooder->display, a->data, a->len));
    /* 10000 pointer positions and 2000 key presses on inputs */
    g_byte_array_set_size (a, 0);
    nav0 = nav_count (f);
    for (i = 0; i < 10000; i++)
      spice_raw_append_mouse_position (a, i % f->w, i % f->h);
    for (i = 0; i < 2000; i++) {
      GST_WRITE_UINT32_LE (body, i % 2 ? 0x9e : 0x1e);
      spice_raw_append_msg (a,
          i % 2 ? SPICE_MSGC_INPUTS_KEY_UP : SPICE_MSGC_INPUTS_KEY_DOWN,
          body, 4);
    }
    fail_unless (spice_raw_send (inputs, a->data, a->len));
    /* draws keep flowing: the lazy client falls behind */
    for (i = 0; i < 10; i++) {
      GstVideoRectangle r = { 0, 0, f->w, f->h };

      update_rect (f, &r, 1000 + round * 10 + i);
      qmax = MAX (qmax, max_display_queue (f));
      g_usleep (20 * 1000);
    }
    check_follows (f, good, 50 + round, 10000, "during the floods");
    fail_unless (spice_raw_session_pump (flooder, 10000, is_exact, f),
        "the flooding client itself stops getting pictures: %s",
        flooder->error ? flooder->error : "timeout");
    qmax = MAX (qmax, max_display_queue (f));
    GST_INFO ("round %u: %u navigation events", round, nav_count (f) - nav0);
  }
  /* a full-surface LZ4 update of this picture is < 320*240*4 bytes */
  bound = 65536 + (guint64) f->w * f->h * 4 + 4096;
  g_print ("RESULT floods: %u rounds of 20000 ACKs + 12000 input messages; "
      "largest display queue %" G_GUINT64_FORMAT " bytes (bound %"
      G_GUINT64_FORMAT "), %" G_GUINT64_FORMAT " input events dropped\n",
      rounds, qmax, bound, stat_u64 (f, "input-events-dropped"));
  fail_unless (qmax <= bound);
  /* every message was accepted: no connection closed for bad input */
  fail_unless_equals_int (stat_u64 (f, "closed-bad-message"), 0);
  fail_unless_equals_int (stat_u64 (f, "clients"), 3);
  g_byte_array_unref (a);
  spice_raw_close (inputs);
  spice_raw_session_free (lazy);
  spice_raw_session_free (flooder);
  spice_raw_session_free (good);
  fixture_free (f);
}

GST_END_TEST;

/* ----------------------------------------------------------------- TLS */

static gboolean
accept_any (GTlsConnection * c, GTlsCertificate * cert,
    GTlsCertificateFlags errors, gpointer data)
{
  return TRUE;
}

/* TLS handshake and 16 bytes of garbage on @port: TRUE if the SPICE link
 * error reply (INVALID_MAGIC, a header with the magic) comes back */
static gboolean
tls_link_ok (guint16 port)
{
  GSocketClient *cl = g_socket_client_new ();
  GSocketConnection *sc;
  GIOStream *tls;
  GByteArray *a = g_byte_array_new ();
  guint8 reply[16];
  gsize n = 0;
  gboolean ok = FALSE;

  g_socket_client_set_timeout (cl, 10);
  g_socket_client_set_enable_proxy (cl, FALSE);
  sc = g_socket_client_connect_to_host (cl, "127.0.0.1", port, NULL, NULL);
  if (!sc)
    goto out;
  tls = g_tls_client_connection_new (G_IO_STREAM (sc), NULL, NULL);
  if (tls) {
    g_signal_connect (tls, "accept-certificate", G_CALLBACK (accept_any),
        NULL);
    g_byte_array_append (a, (const guint8 *) "XXXXXXXXXXXXXXXX", 16);
    if (g_tls_connection_handshake (G_TLS_CONNECTION (tls), NULL, NULL) &&
        g_output_stream_write_all (g_io_stream_get_output_stream (tls),
            a->data, a->len, NULL, NULL, NULL) &&
        g_input_stream_read_all (g_io_stream_get_input_stream (tls), reply,
            16, &n, NULL, NULL) && n == 16)
      ok = GST_READ_UINT32_LE (reply) == SPICE_MAGIC;
    g_io_stream_close (tls, NULL, NULL);
    g_object_unref (tls);
  }
  g_object_unref (sc);
out:
  g_byte_array_unref (a);
  g_object_unref (cl);
  return ok;
}

/* only tls-port: no plain listener; plain SPICE link attempts on the TLS
 * port are closed cleanly without a SPICE reply, and TLS clients are
 * served before, in between and after. */
GST_START_TEST (test_tls_only_refuses_plain)
{
  gchar *dir = g_dir_make_tmp ("hardening-tls-XXXXXX", NULL);
  const gchar *a1[] = { "req", "-x509", "-newkey", "rsa:2048", "-nodes",
    "-keyout", "key.pem", "-out", "cert.pem", "-days", "2", "-subj",
    "/CN=localhost", NULL
  };
  gchar *cert = g_build_filename (dir, "cert.pem", NULL);
  gchar *key = g_build_filename (dir, "key.pem", NULL);
  gchar *props;
  Fixture *f;
  gint plain_port = -2;
  guint i;

  fail_unless (test_run_openssl (dir, a1));
  props = g_strdup_printf ("port=-1 tls-port=0 tls-cert-file=%s "
      "tls-key-file=%s handshake-timeout=3000", cert, key);
  f = fixture_new (160, 120, props);
  fixture_start (f, TRUE);
  g_object_get (f->sink, "bound-port", &plain_port, NULL);
  fail_unless_equals_int (plain_port, -1);
  fail_unless (f->tls_port > 0);
  fail_unless (tls_link_ok (f->tls_port));
  for (i = 0; i < 5; i++) {
    SpiceRawConn *c = spice_raw_connect (f->tls_port, 10);
    guint32 err = 0;

    fail_unless (c != NULL);
    /* a plain link: the TLS server reads it as a bad ClientHello */
    fail_unless (!spice_raw_link (c, 0, SPICE_CHANNEL_MAIN, 0x0b, 0,
            NULL, &err));
    fail_unless (spice_raw_wait_closed (c, 5000));
    spice_raw_close (c);
  }
  fail_unless (tls_link_ok (f->tls_port));
  fail_unless_equals_int (stat_u64 (f, "clients"), 0);
  fixture_free (f);
  g_unlink (cert);
  g_unlink (key);
  g_rmdir (dir);
  g_free (cert);
  g_free (key);
  g_free (dir);
  g_free (props);
}

GST_END_TEST;

/* --------------------------------------------------- reconnect cycles */

#define STREAM_RECT_X 80
#define STREAM_RECT_Y 60
#define STREAM_RECT_W 160
#define STREAM_RECT_H 120

static gboolean
got_picture_and_stream (SpiceRawSession * s, gpointer data)
{
  return is_exact (s, data) && s->stream_datas >= 1;
}

/* pixels outside the stream rectangle that differ from the picture */
static guint64
diff_outside_stream (Fixture * f, const guint8 * shot, gint w, gint h)
{
  guint64 n = 0;
  gint x, y;

  if (w != f->w || h != f->h)
    return G_MAXUINT64;
  for (y = 0; y < h; y++)
    for (x = 0; x < w; x++) {
      const guint8 *a = shot + ((gsize) y * w + x) * 4;
      const guint8 *b = f->picture + ((gsize) y * w + x) * 4;

      if (x >= STREAM_RECT_X && x < STREAM_RECT_X + STREAM_RECT_W &&
          y >= STREAM_RECT_Y && y < STREAM_RECT_Y + STREAM_RECT_H)
        continue;
      n += memcmp (a, b, 3) != 0;
    }
  return n;
}

static void
reconnect_cycles (const gchar * encoder, guint8 codec)
{
  gchar *props = g_strdup_printf ("videotestsrc name=vts is-live=true "
      "pattern=colors ! video/x-raw,width=%d,height=%d,framerate=25/1 ! "
      "%s ! sink.stream_0", STREAM_RECT_W, STREAM_RECT_H, encoder);
  Fixture *f = fixture_new (320, 240, props);
  GstElement *vts = gst_bin_get_by_name (GST_BIN (f->pipeline), "vts");
  guint i, cycles = soak ()? 1000 : 100, gtk = 0;
  gint64 t0;

  attach_meta (vts, STREAM_RECT_X, STREAM_RECT_Y, STREAM_RECT_W,
      STREAM_RECT_H, 1);
  fixture_start (f, TRUE);
  t0 = g_get_monotonic_time ();
  for (i = 0; i < cycles; i++) {
    if (i % 25 == 24) {
      /* a sample with spice-gtk: the draws around the stream exact */
      guint8 *shot = NULL;
      gint w = 0, h = 0;
      gchar *log = NULL;

      const gchar *extra[] = { "--duration-ms", "2000", NULL };

      fail_unless_equals_int (client_shot (f->port, extra, &shot, &w, &h,
              &log), 0);
      fail_unless_equals_int (diff_outside_stream (f, shot, w, h), 0);
      g_free (shot);
      g_free (log);
      gtk++;
    } else {
      SpiceRawSession *s = spice_raw_session_new (f->port, NULL,
          SPICE_RAW_DISPLAY_CAPS_ALL);

      fail_unless (s != NULL, "cycle %u: no session", i);
      fail_unless (spice_raw_session_pump (s, 20000, got_picture_and_stream,
              f), "cycle %u: %s (draws %" G_GUINT64_FORMAT ", frames %"
          G_GUINT64_FORMAT ")", i, s->error ? s->error : "timeout", s->draws,
          s->stream_datas);
      fail_unless_equals_int (s->stream_creates, 1);
      fail_unless_equals_int (s->last_codec, codec);
      spice_raw_session_free (s);
    }
    if (i % 10 == 9) {
      /* the picture changes now and then */
      GstVideoRectangle r = { 0, 0, 64, 48 };

      update_rect (f, &r, 300 + i);
    }
  }
  g_print ("RESULT %u reconnect cycles with a %s stream: %.1f s, %u of them "
      "spice-gtk\n", cycles, encoder, (g_get_monotonic_time () - t0) / 1e6,
      gtk);
  /* every session left: nothing lingers */
  for (i = 0; i < 50 && stat_u64 (f, "clients") > 0; i++)
    g_usleep (100 * 1000);
  fail_unless_equals_int (stat_u64 (f, "clients"), 0);
  gst_object_unref (vts);
  fixture_free (f);
  g_free (props);
}

GST_START_TEST (test_reconnect_mjpeg)
{
  reconnect_cycles ("jpegenc quality=80", SPICE_VIDEO_CODEC_TYPE_MJPEG);
}

GST_END_TEST;

GST_START_TEST (test_reconnect_vp8)
{
  reconnect_cycles ("vp8enc deadline=1 keyframe-max-dist=100000",
      SPICE_VIDEO_CODEC_TYPE_VP8);
}

GST_END_TEST;

/* ------------------------------------------------- non-live pipelines */

static gboolean
bus_wait (GstElement * pipeline, GstMessageType types, guint timeout_ms,
    GstMessage ** out)
{
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *m = gst_bus_timed_pop_filtered (bus,
      timeout_ms * GST_MSECOND, types | GST_MESSAGE_ERROR);
  gboolean ok = m && GST_MESSAGE_TYPE (m) != GST_MESSAGE_ERROR;

  if (m && GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR) {
    GError *e = NULL;

    gst_message_parse_error (m, &e, NULL);
    GST_WARNING ("error: %s", e->message);
    g_error_free (e);
  }
  if (out)
    *out = m;
  else if (m)
    gst_message_unref (m);
  gst_object_unref (bus);
  return ok;
}

/* A non-live videotestsrc through spicetiler: the stream branch's encoder
 * never gets a frame (solid picture, no stream) and holds its GAP events;
 * spicesink's stream pad must not hold up preroll. The pipeline reaches
 * PAUSED and PLAYING and ends with EOS. The same with a moving picture in
 * real time (identity sync=true). */
static void
nonlive (const gchar * pattern, gboolean expect_stream)
{
  gchar *desc = g_strdup_printf ("videotestsrc num-buffers=%d pattern=%s ! "
      "video/x-raw,format=BGRx,width=320,height=240,framerate=30/1 ! "
      "%sspicetiler name=t t.draw ! spicesink name=s port=0 "
      "t.stream ! queue ! vp8enc deadline=1 ! s.stream_0",
      expect_stream ? 90 : 60, pattern,
      expect_stream ? "identity sync=true ! " : "");
  GstElement *p = gst_parse_launch (desc, NULL);
  GstElement *s;
  GstState st;
  GstStateChangeReturn r;
  gint64 t0 = g_get_monotonic_time ();
  GstStructure *stats = NULL;
  guint64 frames = 0;

  fail_unless (p != NULL);
  s = gst_bin_get_by_name (GST_BIN (p), "s");
  r = gst_element_set_state (p, GST_STATE_PAUSED);
  fail_unless (r != GST_STATE_CHANGE_FAILURE);
  r = gst_element_get_state (p, &st, NULL, 10 * GST_SECOND);
  fail_unless (r == GST_STATE_CHANGE_SUCCESS ||
      r == GST_STATE_CHANGE_NO_PREROLL, "PAUSED not reached: %s",
      gst_element_state_change_return_get_name (r));
  fail_unless_equals_int (st, GST_STATE_PAUSED);
  fail_unless (gst_element_set_state (p, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  fail_unless (bus_wait (p, GST_MESSAGE_EOS, 30000, NULL),
      "%s: no EOS", pattern);
  g_object_get (s, "stats", &stats, NULL);
  gst_structure_get_uint64 (stats, "stream-frames-in", &frames);
  g_print ("RESULT non-live %s: PAUSED, PLAYING and EOS in %.2f s, %"
      G_GUINT64_FORMAT " stream frames\n", pattern,
      (g_get_monotonic_time () - t0) / 1e6, frames);
  /* (whether the tiler starts a stream on the ball is its business) */
  if (!expect_stream)
    fail_unless_equals_int (frames, 0);
  gst_structure_free (stats);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (s);
  gst_object_unref (p);
  g_free (desc);
}

GST_START_TEST (test_nonlive_no_stream_prerolls)
{
  nonlive ("solid-color", FALSE);
}

GST_END_TEST;

GST_START_TEST (test_nonlive_moving_prerolls)
{
  nonlive ("ball", TRUE);
}

GST_END_TEST;

static Suite *
hardening_suite (void)
{
  Suite *s = suite_create ("hardening");
  TCase *tc = tcase_create ("sink");

  tcase_set_timeout (tc, 600);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_nonlive_no_stream_prerolls);
  tcase_add_test (tc, test_nonlive_moving_prerolls);
  tcase_add_test (tc, test_tls_only_refuses_plain);
  tcase_add_test (tc, test_pending_and_idle_limits);
  tcase_add_test (tc, test_rate_limit_200_connects);
  tcase_add_test (tc, test_floods_and_never_reading);
  tcase_add_test (tc, test_reconnect_mjpeg);
  tcase_add_test (tc, test_reconnect_vp8);
  return s;
}

GST_CHECK_MAIN (hardening);
