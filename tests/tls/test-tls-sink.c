/* gst-spice tests: spicesink on a TLS-only port, against spice-gtk clients
 * that check its certificate (ca-file, cert-subject)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The right CA and subject give the exact picture; a CA that did not sign
 * the certificate or another subject make the client fail, and the sink
 * logs the failed TLS handshake with the peer's address.
 */
#include <glib/gstdio.h>
#include <spice/enums.h>

#include "runner-process.h"
#include "tls-util.h"

/* spicesink's warnings (as the service log shows them) and infos */
static GMutex log_lock;
static GString *sink_log;

static void
collect_log (GstDebugCategory * cat, GstDebugLevel level, const gchar * file,
    const gchar * function, gint line, GObject * object,
    GstDebugMessage * message, gpointer data)
{
  if (level > GST_LEVEL_INFO ||
      !g_str_has_prefix (gst_debug_category_get_name (cat), "spicesink"))
    return;
  g_mutex_lock (&log_lock);
  g_string_append_printf (sink_log, "%s: %s\n",
      gst_debug_category_get_name (cat), gst_debug_message_get (message));
  g_mutex_unlock (&log_lock);
}

static gboolean
log_has (const gchar * a, const gchar * b, guint timeout_ms)
{
  gint64 end = g_get_monotonic_time () + timeout_ms * (gint64) 1000;
  gboolean found = FALSE;

  /* at least one look, also with a timeout of 0 */
  for (;;) {
    gchar **lines;
    guint i;

    g_mutex_lock (&log_lock);
    lines = g_strsplit (sink_log->str, "\n", -1);
    g_mutex_unlock (&log_lock);
    for (i = 0; lines[i] && !found; i++)
      found = strstr (lines[i], a) && strstr (lines[i], b);
    g_strfreev (lines);
    if (found || g_get_monotonic_time () >= end)
      return found;
    g_usleep (20 * 1000);
  }
}

GST_START_TEST (test_sink_tls_verified)
{
  TlsDir *t = tls_dir_new ();
  gchar *props = g_strdup_printf ("port=-1 tls-port=0 tls-cert-file=%s "
      "tls-key-file=%s", t->cert, t->key);
  Fixture *f;
  guint8 *shot = NULL;
  gint w, h, st;

  sink_log = g_string_new (NULL);
  gst_debug_set_threshold_for_name ("spicesink*", GST_LEVEL_INFO);
  gst_debug_add_log_function (collect_log, NULL, NULL);

  f = fixture_new (320, 200, props);
  fixture_start (f, TRUE);
  fail_unless (f->tls_port > 0);
  fail_unless_equals_int (f->port, 0);

  /* CA and subject right: the exact picture */
  st = tls_client_shot (f->tls_port, t->ca, TLS_SUBJECT, &shot, &w, &h);
  fail_unless_equals_int (st, 0);
  fail_unless_equals_uint64 (diff_full (f, shot, w, h), 0);
  g_clear_pointer (&shot, g_free);
  /* the host name check (IP:127.0.0.1 in the certificate) */
  fail_unless_equals_int (tls_client_shot (f->tls_port, t->ca, NULL, &shot,
          &w, &h), 0);
  fail_unless_equals_uint64 (diff_full (f, shot, w, h), 0);
  g_clear_pointer (&shot, g_free);
  fail_unless (!log_has ("TLS handshake failed", "127.0.0.1", 0));

  /* a CA that did not sign the sink's certificate: the client refuses
   * it, and the sink logs the failed handshake and from where */
  st = tls_client_shot (f->tls_port, t->other_ca, NULL, NULL, NULL, NULL);
  fail_unless_equals_int (st, 2);
  fail_unless (log_has ("TLS handshake failed", "127.0.0.1", 5000),
      "sink log: %s", sink_log->str);

  /* the right CA, another subject */
  g_mutex_lock (&log_lock);
  g_string_truncate (sink_log, 0);
  g_mutex_unlock (&log_lock);
  st = tls_client_shot (f->tls_port, t->ca, TLS_WRONG_SUBJECT, NULL, NULL,
      NULL);
  fail_unless_equals_int (st, 2);
  fail_unless (log_has ("TLS handshake failed", "127.0.0.1", 5000),
      "sink log: %s", sink_log->str);

  /* and the right one still works afterwards */
  fail_unless_equals_int (tls_client_shot (f->tls_port, t->ca, TLS_SUBJECT,
          &shot, &w, &h), 0);
  fail_unless_equals_uint64 (diff_full (f, shot, w, h), 0);
  g_free (shot);

  gst_debug_remove_log_function (collect_log);
  fixture_free (f);
  g_free (props);
  g_string_free (sink_log, TRUE);
  tls_dir_free (t);
}

GST_END_TEST;

/* remote-viewer in its own process group (xvfb-run, Xvfb, the viewer) */
static GPid
viewer_start (guint16 tls_port, const gchar * ca, const gchar * subject)
{
  gchar *ca_arg = g_strdup_printf ("--spice-ca-file=%s", ca);
  gchar *subj_arg = g_strdup_printf ("--spice-host-subject=%s", subject);
  gchar *uri = g_strdup_printf ("spice://127.0.0.1?tls-port=%u", tls_port);
  const gchar *argv[] = { "xvfb-run", "-a", "-s", "-screen 0 1024x768x24",
    "timeout", "30", "remote-viewer", ca_arg, subj_arg, uri, NULL
  };
  GError *err = NULL;
  GPid pid = 0;

  fail_unless (g_spawn_async (NULL, (gchar **) argv, NULL,
          G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD |
          G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL, test_child_new_group,
          NULL, &pid, &err), "%s", err ? err->message : "");
  g_free (ca_arg);
  g_free (subj_arg);
  g_free (uri);
  return pid;
}

static void
viewer_stop (GPid pid)
{
  kill (-pid, SIGTERM);
  waitpid (pid, NULL, 0);
}

/* remote-viewer under Xvfb with --spice-ca-file and --spice-host-subject
 * links its display channel over TLS; with another CA it does not, and
 * the sink logs the failed handshake */
GST_START_TEST (test_remote_viewer_tls)
{
  gchar *rv = g_find_program_in_path ("remote-viewer");
  gchar *xr = g_find_program_in_path ("xvfb-run");
  gboolean have = rv && xr;
  TlsDir *t;
  gchar *props, *linked;
  Fixture *f;
  GPid pid;

  g_free (rv);
  g_free (xr);
  if (!have) {
    g_printerr ("SKIP: remote-viewer or xvfb-run not installed\n");
    return;
  }
  t = tls_dir_new ();
  props = g_strdup_printf ("port=-1 tls-port=0 tls-cert-file=%s "
      "tls-key-file=%s", t->cert, t->key);
  sink_log = g_string_new (NULL);
  gst_debug_set_threshold_for_name ("spicesink*", GST_LEVEL_INFO);
  gst_debug_add_log_function (collect_log, NULL, NULL);
  f = fixture_new (320, 200, props);
  fixture_start (f, TRUE);
  linked = g_strdup_printf ("linked channel type %u (TLS)",
      SPICE_CHANNEL_DISPLAY);

  pid = viewer_start (f->tls_port, t->ca, TLS_SUBJECT);
  fail_unless (log_has ("127.0.0.1", linked, 20000 * test_time_factor ()),
      "sink log: %s", sink_log->str);
  viewer_stop (pid);

  g_mutex_lock (&log_lock);
  g_string_truncate (sink_log, 0);
  g_mutex_unlock (&log_lock);
  pid = viewer_start (f->tls_port, t->other_ca, TLS_SUBJECT);
  fail_unless (log_has ("TLS handshake failed", "127.0.0.1",
          20000 * test_time_factor ()), "sink log: %s", sink_log->str);
  fail_unless (!log_has ("linked channel type", "(TLS)", 0), "%s",
      sink_log->str);
  viewer_stop (pid);

  gst_debug_remove_log_function (collect_log);
  fixture_free (f);
  g_free (linked);
  g_free (props);
  g_string_free (sink_log, TRUE);
  tls_dir_free (t);
}

GST_END_TEST;

static Suite *
tls_sink_suite (void)
{
  Suite *s = suite_create ("tls-sink");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 120);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_sink_tls_verified);
  tcase_add_test (tc, test_remote_viewer_tls);
  return s;
}

GST_CHECK_MAIN (tls_sink);
