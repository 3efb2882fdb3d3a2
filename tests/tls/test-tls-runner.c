/* gst-spice tests: the shipped pipelines with TLS on both sides, run by
 * gst-spice-run (UPSTREAM_CA_FILE, UPSTREAM_HOST_SUBJECT, TLS_PORT,
 * TLS_CERT_FILE, TLS_KEY_FILE; docs/operator-guide.md "TLS")
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <string.h>
#include <sysexits.h>

#include "runner-process.h"
#include "tls-util.h"

/* docs/operator-guide.md: a configuration that cannot work */
#define EXIT_REFUSED EX_NOPERM

static const gchar *shipped[] = { "transcode-vp8", "transcode-mjpeg",
  "transcode-lossless", "viewer", "record", "serve-desktop", "serve-test"
};

/* every shipped pipeline with a spicesrc takes the upstream's CA and
 * subject, every one with a served spicesink the TLS port, certificate
 * and key; --check accepts them and refuses unreadable files by name */
GST_START_TEST (test_tls_variables_in_every_pipeline)
{
  TlsDir *t = tls_dir_new ();
  gchar *tmp = test_tmpdir_new ("gst-spice-tls-check");
  gchar *ca = g_strdup_printf ("UPSTREAM_CA_FILE=%s", t->ca);
  gchar *cert = g_strdup_printf ("TLS_CERT_FILE=%s", t->cert);
  gchar *key = g_strdup_printf ("TLS_KEY_FILE=%s", t->key);
  guint i;

  for (i = 0; i < G_N_ELEMENTS (shipped); i++) {
    gchar *path = runner_process_shipped_pipeline (shipped[i]);
    gchar *text = NULL, *log = NULL;
    gboolean src, sink;

    fail_unless (g_file_get_contents (path, &text, NULL, NULL));
    src = strstr (text, "spicesrc") != NULL;
    sink = strstr (text, "spicesink") != NULL;
    fail_unless (!src || (strstr (text, "${UPSTREAM_CA_FILE:-}") &&
            strstr (text, "${UPSTREAM_HOST_SUBJECT:-}")), "%s", shipped[i]);
    /* and the proxy and connection file (tests/tls/test-tls-proxy.c) */
    fail_unless (!src || (strstr (text, "proxy=\"${UPSTREAM_PROXY:-}\"") &&
            strstr (text, "vv-file=\"${UPSTREAM_VV:-}\"")), "%s",
        shipped[i]);
    fail_unless (!sink || (strstr (text, "${TLS_PORT:--1}") &&
            strstr (text, "${TLS_CERT_FILE:-}") &&
            strstr (text, "${TLS_KEY_FILE:-}")), "%s", shipped[i]);

    fail_unless_equals_int (runner_process_run_sync (tmp, 60000, &log, "--check", "-D",
            "UPSTREAM=spice://127.0.0.1?tls-port=5901", "-D", "OUTPUT=/tmp/x",
            "-D", ca, "-D", "UPSTREAM_HOST_SUBJECT=" TLS_SUBJECT, "-D",
            "TLS_PORT=0", "-D", cert, "-D", key, path, NULL), 0);
    g_free (log);
    if (src) {
      fail_unless_equals_int (runner_process_run_sync (tmp, 60000, &log, "--check", "-D",
              "UPSTREAM=spice://127.0.0.1?tls-port=5901", "-D",
              "UPSTREAM_CA_FILE=/nonexistent/ca.pem", path, NULL),
          EXIT_REFUSED);
      fail_unless (strstr (log, "cannot read CA file /nonexistent/ca.pem"),
          "%s: %s", shipped[i], log);
      g_free (log);
    }
    if (sink) {
      fail_unless_equals_int (runner_process_run_sync (tmp, 60000, &log, "--check", "-D",
              "UPSTREAM=spice://127.0.0.1:5900", "-D", "TLS_PORT=0", "-D",
              "TLS_CERT_FILE=/nonexistent/cert.pem", "-D", key, path, NULL),
          EXIT_REFUSED);
      fail_unless (strstr (log,
              "cannot read TLS certificate /nonexistent/cert.pem"), "%s: %s",
          shipped[i], log);
      g_free (log);
    }
    g_free (text);
    g_free (path);
  }
  g_free (ca);
  g_free (cert);
  g_free (key);
  test_tmpdir_remove (tmp);
  tls_dir_free (t);
}

GST_END_TEST;

/* transcode-lossless run by the runner from the test guest's TLS port */
typedef struct
{
  TlsDir *t;
  GuestProcess *gp;
  gchar *tmp, *path, *up;
} Upstream;

static void
upstream_start (Upstream * u)
{
  guint up_port;

  u->t = tls_dir_new ();
  u->gp = tls_guest_start (u->t, &up_port);
  u->tmp = test_tmpdir_new ("gst-spice-tls-run");
  u->path = runner_process_shipped_pipeline ("transcode-lossless");
  u->up = g_strdup_printf ("UPSTREAM=spice://127.0.0.1?tls-port=%u", up_port);
}

static void
upstream_stop (Upstream * u)
{
  guest_process_stop (u->gp);
  g_free (u->up);
  g_free (u->path);
  test_tmpdir_remove (u->tmp);
  tls_dir_free (u->t);
}

/* transcode-lossless from a TLS-only upstream (the test guest, CA and
 * subject checked) to a TLS-only listener: a client that checks the
 * certificate gets the guest's exact picture */
GST_START_TEST (test_runner_tls_both_sides)
{
  Upstream u;
  guint port = test_pick_free_port ();
  gchar *ca, *tls_port, *cert, *key;
  RunnerProcess *run;
  guint8 *dump = NULL, *shot = NULL;
  gint w, h, sw = 0, sh = 0;
  guint64 diff = G_MAXUINT64;
  gint64 end;

  upstream_start (&u);
  ca = g_strdup_printf ("UPSTREAM_CA_FILE=%s", u.t->ca);
  tls_port = g_strdup_printf ("TLS_PORT=%u", port);
  cert = g_strdup_printf ("TLS_CERT_FILE=%s", u.t->cert);
  key = g_strdup_printf ("TLS_KEY_FILE=%s", u.t->key);
  run = runner_process_start_runner (u.tmp, "--stats-interval", "0", "-D",
      u.up, "-D", ca, "-D", "UPSTREAM_HOST_SUBJECT=" TLS_SUBJECT, "-D",
      "LISTEN_PORT=-1", "-D", tls_port, "-D", cert, "-D", key, u.path, NULL);
  fail_unless (runner_process_wait_log (run, "playing", 1,
          30000 * test_time_factor ()), "%s", runner_process_log (run));
  fail_unless (guest_process_dump (u.gp, &dump, &w, &h));
  end = g_get_monotonic_time () + 20 * G_USEC_PER_SEC * test_time_factor ();
  while (diff != 0 && g_get_monotonic_time () < end) {
    if (tls_client_shot (port, u.t->ca, TLS_SUBJECT, &shot, &sw, &sh) == 0) {
      diff = sw == w && sh == h ? test_bgrx_count_diff (shot, w * 4, dump,
          w * 4, w, h, NULL, NULL) : G_MAXUINT64;
      g_clear_pointer (&shot, g_free);
    }
    if (diff)
      g_usleep (200 * 1000);
  }
  fail_unless (diff == 0, "no exact picture (%" G_GUINT64_FORMAT " pixels "
      "differ): %s", diff, runner_process_log (run));

  runner_process_signal (run, SIGTERM);
  fail_unless_equals_int (runner_process_wait_exit (run, 20000), 0);
  runner_process_free (run);
  g_free (dump);
  g_free (ca);
  g_free (tls_port);
  g_free (cert);
  g_free (key);
  upstream_stop (&u);
}

GST_END_TEST;

/* the upstream's certificate is not signed by UPSTREAM_CA_FILE: one line
 * says so and the runner exits 77 (not restarted by systemd) */
GST_START_TEST (test_runner_wrong_upstream_ca)
{
  Upstream u;
  gchar *ca, *why, *log = NULL;

  upstream_start (&u);
  ca = g_strdup_printf ("UPSTREAM_CA_FILE=%s", u.t->other_ca);
  why = g_strdup_printf ("is not signed by a CA in ca-file %s", u.t->other_ca);
  fail_unless_equals_int (runner_process_run_sync (u.tmp, 60000, &log, "--stats-interval", "0",
          "-D", u.up, "-D", ca, "-D", "UPSTREAM_HOST_SUBJECT=" TLS_SUBJECT,
          "-D", "LISTEN_PORT=0", u.path, NULL), EXIT_REFUSED);
  fail_unless (strstr (log, why), "%s", log);
  fail_unless (strstr (log, "not restarting (exit 77)"), "%s", log);
  g_printerr ("%s", log);
  g_free (log);
  g_free (why);
  g_free (ca);
  upstream_stop (&u);
}

GST_END_TEST;

static Suite *
tls_runner_suite (void)
{
  Suite *s = suite_create ("tls-runner");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 120);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_tls_variables_in_every_pipeline);
  tcase_add_test (tc, test_runner_tls_both_sides);
  tcase_add_test (tc, test_runner_wrong_upstream_ca);
  return s;
}

GST_CHECK_MAIN (tls_runner);
