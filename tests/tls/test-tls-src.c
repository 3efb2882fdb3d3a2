/* gst-spice tests: spicesrc to TLS-only upstreams (qemu with tls-port and
 * an x509-dir made here; the test guest with --tls-port)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The right CA and subject give pictures (the guest's exactly); a CA that
 * did not sign the certificate, a wrong cert-subject and a host name the
 * certificate does not hold are each refused with RESOURCE/NOT_AUTHORIZED
 * and a message that names that reason.
 */
#include <string.h>

#include "tls-util.h"

/* spicesrc @uri with ca-file @ca and cert-subject @subject (may be NULL)
 * until its first frame or its first error */
static void
run_src (const gchar * uri, const gchar * ca, const gchar * subject,
    SrcResult * r)
{
  tls_src_run (r, "uri", uri, "ca-file", ca, "cert-subject", subject, NULL);
}

/* the error is a refused certificate and its message says @why */
static void
assert_refused (const SrcResult * r, const gchar * why)
{
  fail_unless (r->err != NULL, "connected although %s", why);
  fail_unless (g_error_matches (r->err, GST_RESOURCE_ERROR,
          GST_RESOURCE_ERROR_NOT_AUTHORIZED), "%s: %d %s", why,
      r->err->code, r->err->message);
  fail_unless (strstr (r->err->message, "TLS connection to SPICE server"),
      "%s", r->err->message);
  fail_unless (strstr (r->err->message, why), "'%s' does not say '%s'",
      r->err->message, why);
  g_printerr ("refused: %s\n", r->err->message);
}

GST_START_TEST (test_qemu_tls_only)
{
  TlsDir *t;
  guint port;
  gchar *uri, *uri_tls, *uri_name, *why;
  SrcResult r;

  t = tls_dir_new ();
  port = tls_qemu_start (t);
  if (!port) {
    g_printerr ("SKIP: qemu-system-x86_64 not installed\n");
    tls_dir_free (t);
    return;
  }
  uri = g_strdup_printf ("spice://127.0.0.1?tls-port=%u", port);
  uri_tls = g_strdup_printf ("spice+tls://127.0.0.1:%u", port);
  uri_name = g_strdup_printf ("spice://localhost?tls-port=%u", port);

  /* CA and subject right: qemu's display (640x480 before the BIOS draws,
   * then SeaBIOS's 720x400 text mode) */
  run_src (uri, t->ca, TLS_SUBJECT, &r);
  fail_unless (r.px != NULL, "%s", r.err ? r.err->message : "");
  fail_unless (r.w >= 640 && r.h >= 400, "%dx%d", r.w, r.h);
  src_result_clear (&r);
  /* spice+tls:// and the host name check (IP:127.0.0.1 in the
   * certificate) without a subject */
  run_src (uri_tls, t->ca, NULL, &r);
  fail_unless (r.px != NULL, "%s", r.err ? r.err->message : "");
  src_result_clear (&r);

  /* a CA that did not sign it */
  run_src (uri, t->other_ca, TLS_SUBJECT, &r);
  why = g_strdup_printf ("the server's certificate (subject '%s', issuer "
      "'%s') is not signed by a CA in ca-file %s", TLS_SUBJECT, TLS_CA_NAME,
      t->other_ca);
  assert_refused (&r, why);
  g_free (why);
  src_result_clear (&r);
  /* the right CA, another subject */
  run_src (uri, t->ca, TLS_WRONG_SUBJECT, &r);
  why = g_strdup_printf ("the server's certificate subject is '%s', not "
      "cert-subject '%s'", TLS_SUBJECT, TLS_WRONG_SUBJECT);
  assert_refused (&r, why);
  g_free (why);
  src_result_clear (&r);
  /* the right CA, no subject, a host name that the certificate lacks */
  run_src (uri_name, t->ca, NULL, &r);
  assert_refused (&r, "does not name host localhost");
  src_result_clear (&r);

  tls_qemu_stop ();
  g_free (uri);
  g_free (uri_tls);
  g_free (uri_name);
  tls_dir_free (t);
}

GST_END_TEST;

/* Over TLS only, the first frame is the guest's picture, pixel for pixel */
GST_START_TEST (test_guest_tls_exact)
{
  TlsDir *t = tls_dir_new ();
  guint tls_port;
  GuestProcess *gp = tls_guest_start (t, &tls_port);
  gchar *uri = g_strdup_printf ("spice://127.0.0.1?tls-port=%u", tls_port);
  SrcResult r;

  run_src (uri, t->ca, TLS_SUBJECT, &r);
  tls_src_assert_guest_frame (&r, gp);
  src_result_clear (&r);
  /* the guest's plain port is no way around a wrong CA: the URI names
   * only the TLS port */
  run_src (uri, t->other_ca, TLS_SUBJECT, &r);
  assert_refused (&r, "is not signed by a CA in ca-file");
  src_result_clear (&r);

  guest_process_stop (gp);
  g_free (uri);
  tls_dir_free (t);
}

GST_END_TEST;

/* A plain SPICE port given as the TLS port: no certificate was seen, so
 * not a refused one; the message says what it saw */
GST_START_TEST (test_plain_port_as_tls_port)
{
  TlsDir *t = tls_dir_new ();
  GuestProcess *gp = guest_process_start (NULL, NULL);
  gchar *uri;
  SrcResult r;

  fail_unless (gp != NULL);
  uri = g_strdup_printf ("spice://127.0.0.1?tls-port=%u",
      guest_process_get_port (gp));
  run_src (uri, t->ca, NULL, &r);
  fail_unless (r.err != NULL);
  fail_unless (g_error_matches (r.err, GST_RESOURCE_ERROR,
          GST_RESOURCE_ERROR_OPEN_READ), "%s", r.err->message);
  fail_unless (strstr (r.err->message, "is it the server's TLS port?"), "%s",
      r.err->message);
  g_printerr ("failed: %s\n", r.err->message);
  src_result_clear (&r);
  guest_process_stop (gp);
  g_free (uri);
  tls_dir_free (t);
}

GST_END_TEST;

/* A "TLS port" that closes the first connection at once (spice-gtk's
 * handshake fails: SPICE_CHANNEL_ERROR_TLS, no reason) and holds every
 * later one open without a word, so spicesrc's own diagnosis handshake
 * waits for its timeout. */
typedef struct
{
  GSocket *sock;
  guint port;
  GThread *thread;
  gint stop;                    /* atomic */
  GMutex lock;
  guint accepted;
  gint64 stalled_us;            /* when the first held connection came */
  GPtrArray *held;
} StallListener;

static gpointer
stall_listener_thread (gpointer data)
{
  StallListener *l = data;

  while (!g_atomic_int_get (&l->stop)) {
    GSocket *c;

    if (!g_socket_condition_timed_wait (l->sock, G_IO_IN, 20000, NULL, NULL))
      continue;
    c = g_socket_accept (l->sock, NULL, NULL);
    if (!c)
      continue;
    g_mutex_lock (&l->lock);
    if (l->accepted++ == 0) {
      g_socket_close (c, NULL);
      g_object_unref (c);
    } else {
      if (!l->stalled_us)
        l->stalled_us = g_get_monotonic_time ();
      g_ptr_array_add (l->held, c);
    }
    g_mutex_unlock (&l->lock);
  }
  return NULL;
}

static StallListener *
stall_listener_new (void)
{
  StallListener *l = g_new0 (StallListener, 1);
  GInetAddress *lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  GSocketAddress *addr = g_inet_socket_address_new (lo, 0), *bound;

  l->sock = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM,
      G_SOCKET_PROTOCOL_TCP, NULL);
  fail_unless (g_socket_bind (l->sock, addr, TRUE, NULL));
  fail_unless (g_socket_listen (l->sock, NULL));
  bound = g_socket_get_local_address (l->sock, NULL);
  l->port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound));
  g_mutex_init (&l->lock);
  l->held = g_ptr_array_new_with_free_func (g_object_unref);
  l->thread = g_thread_new ("stall-listener", stall_listener_thread, l);
  g_object_unref (bound);
  g_object_unref (addr);
  g_object_unref (lo);
  return l;
}

/* when the diagnosis connected (0: not yet) */
static gint64
stall_listener_stalled_us (StallListener * l)
{
  gint64 t;

  g_mutex_lock (&l->lock);
  t = l->stalled_us;
  g_mutex_unlock (&l->lock);
  return t;
}

static void
stall_listener_free (StallListener * l)
{
  g_atomic_int_set (&l->stop, 1);
  g_thread_join (l->thread);
  g_ptr_array_unref (l->held);
  g_object_unref (l->sock);
  g_mutex_clear (&l->lock);
  g_free (l);
}

typedef struct
{
  GMainLoop *loop;
  GstBus *bus;
  gint64 last_tick_us, max_gap_us, error_us, end_us;
  guint ticks;
  GError *err;
} Ticker;

/* every 10 ms on the default context: spicesrc's context, here iterated
 * by the application's loop (like gst-launch-1.0 and every GUI) */
static gboolean
ticker_tick (gpointer data)
{
  Ticker *t = data;
  gint64 now = g_get_monotonic_time ();
  GstMessage *m;

  if (t->last_tick_us)
    t->max_gap_us = MAX (t->max_gap_us, now - t->last_tick_us);
  t->last_tick_us = now;
  t->ticks++;
  m = gst_bus_pop_filtered (t->bus, GST_MESSAGE_ERROR);
  if (m) {
    gst_message_parse_error (m, &t->err, NULL);
    t->error_us = now;
    gst_message_unref (m);
  }
  if (t->err || now > t->end_us) {
    g_main_loop_quit (t->loop);
    return G_SOURCE_REMOVE;
  }
  return G_SOURCE_CONTINUE;
}

/* spice-gtk's TLS handshake fails; spicesrc's diagnosis then waits for an
 * answer that never comes (its handshake times out after connect-timeout-ms,
 * 3 s here). Meanwhile the application's loop, which owns spicesrc's
 * context, keeps ticking every 10 ms (before the fix the diagnosis ran on
 * it: no tick for 3 s), and the error still names the reason. */
GST_START_TEST (test_tls_diagnosis_off_context)
{
  StallListener *l = stall_listener_new ();
  gchar *uri = g_strdup_printf ("spice://127.0.0.1?tls-port=%u", l->port);
  gchar *where = g_strdup_printf ("no TLS handshake with 127.0.0.1 port %u",
      l->port);
  GstElement *pipe = gst_pipeline_new (NULL);
  GstElement *src = gst_element_factory_make ("spicesrc", NULL);
  GstElement *sink = gst_element_factory_make ("fakesink", NULL);
  Ticker t = { 0, };
  gint64 stalled_us;

  g_object_set (src, "uri", uri, "connect-timeout-ms", 3000, NULL);
  gst_bin_add_many (GST_BIN (pipe), src, sink, NULL);
  fail_unless (gst_element_link (src, sink));
  t.loop = g_main_loop_new (NULL, FALSE);
  t.bus = gst_element_get_bus (pipe);
  t.end_us = g_get_monotonic_time () + 60 * G_USEC_PER_SEC *
      test_time_factor ();
  g_timeout_add (10, ticker_tick, &t);
  fail_unless (gst_element_set_state (pipe, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  g_main_loop_run (t.loop);

  stalled_us = stall_listener_stalled_us (l);
  fail_unless (t.err != NULL, "no error");
  g_printerr ("error after the diagnosis connected: %.2f s; %u ticks, "
      "largest gap %.1f ms: %s\n", (t.error_us - stalled_us) / 1e6, t.ticks,
      t.max_gap_us / 1e3, t.err->message);
  fail_unless (g_error_matches (t.err, GST_RESOURCE_ERROR,
          GST_RESOURCE_ERROR_OPEN_READ), "%s", t.err->message);
  fail_unless (strstr (t.err->message, "TLS connection to SPICE server"),
      "%s", t.err->message);
  fail_unless (strstr (t.err->message, where), "%s", t.err->message);
  /* the diagnosis ran into its timeout: it took seconds... */
  fail_unless (stalled_us > 0, "the diagnosis never connected");
  fail_unless (t.error_us - stalled_us > 2 * G_USEC_PER_SEC,
      "the diagnosis took only %.2f s", (t.error_us - stalled_us) / 1e6);
  /* ...and the context went on meanwhile */
  fail_unless (t.max_gap_us < 500 * 1000, "the context stood still for "
      "%.2f s", t.max_gap_us / 1e6);

  gst_element_set_state (pipe, GST_STATE_NULL);
  g_clear_error (&t.err);
  gst_object_unref (t.bus);
  gst_object_unref (pipe);
  g_main_loop_unref (t.loop);
  g_free (where);
  g_free (uri);
  stall_listener_free (l);
}

GST_END_TEST;

static void
on_finalized (gpointer data, GObject * where_the_object_was)
{
  g_atomic_int_set ((gint *) data, 1);
}

/* NULL while the diagnosis waits for its handshake (5 s at the default
 * connect-timeout): returns at once, and the diagnosis, cancelled, lets go
 * of the element (finalized soon after, not after the 5 s) */
GST_START_TEST (test_null_while_tls_diagnosis)
{
  StallListener *l = stall_listener_new ();
  gchar *uri = g_strdup_printf ("spice://127.0.0.1?tls-port=%u", l->port);
  GstElement *pipe = gst_pipeline_new (NULL);
  GstElement *src = gst_element_factory_make ("spicesrc", NULL);
  GstElement *sink = gst_element_factory_make ("fakesink", NULL);
  gint finalized = 0;
  gint64 end, t0, null_us, gone_us;

  g_object_set (src, "uri", uri, NULL);
  g_object_weak_ref (G_OBJECT (src), on_finalized, &finalized);
  gst_bin_add_many (GST_BIN (pipe), src, sink, NULL);
  fail_unless (gst_element_link (src, sink));
  fail_unless (gst_element_set_state (pipe, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  end = g_get_monotonic_time () + 30 * G_USEC_PER_SEC * test_time_factor ();
  while (!stall_listener_stalled_us (l) && g_get_monotonic_time () < end)
    g_usleep (10 * 1000);
  fail_unless (stall_listener_stalled_us (l) > 0,
      "the diagnosis never connected");
  g_usleep (200 * 1000);        /* into its handshake */

  t0 = g_get_monotonic_time ();
  fail_unless (gst_element_set_state (pipe, GST_STATE_NULL) ==
      GST_STATE_CHANGE_SUCCESS);
  null_us = g_get_monotonic_time () - t0;
  gst_object_unref (pipe);
  while (!g_atomic_int_get (&finalized) &&
      g_get_monotonic_time () < t0 + 10 * G_USEC_PER_SEC)
    g_usleep (10 * 1000);
  gone_us = g_get_monotonic_time () - t0;
  g_printerr ("NULL while diagnosing: %.3f s; element finalized after "
      "%.3f s\n", null_us / 1e6, gone_us / 1e6);
  fail_unless (null_us < G_USEC_PER_SEC, "NULL took %.3f s", null_us / 1e6);
  fail_unless (g_atomic_int_get (&finalized), "the element was never "
      "finalized");
  fail_unless (gone_us < 2 * G_USEC_PER_SEC, "the element lived %.3f s",
      gone_us / 1e6);

  g_free (uri);
  stall_listener_free (l);
}

GST_END_TEST;

static Suite *
tls_src_suite (void)
{
  Suite *s = suite_create ("tls-src");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 120);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_qemu_tls_only);
  tcase_add_test (tc, test_guest_tls_exact);
  tcase_add_test (tc, test_plain_port_as_tls_port);
  tcase_add_test (tc, test_tls_diagnosis_off_context);
  tcase_add_test (tc, test_null_while_tls_diagnosis);
  return s;
}

GST_CHECK_MAIN (tls_src);
