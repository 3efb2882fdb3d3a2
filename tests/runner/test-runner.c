/* gst-spice-run: pipeline files, exit codes, signals, restarts, metrics.
 * Runs the real runner binary on real pipelines.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <gst/check/gstcheck.h>
#include <gio/gio.h>
#include <signal.h>
#include <string.h>
#include <sysexits.h>

#include "pipeline-file.h"

static gchar *tmpdir;

static gchar *
runner_path (void)
{
  return g_build_filename (g_getenv ("GST_SPICE_BUILD_DIR"), "tools",
      "runner", "gst-spice-run", NULL);
}

static gchar *
write_file (const gchar * name, const gchar * text)
{
  gchar *path = g_build_filename (tmpdir, name, NULL);

  fail_unless (g_file_set_contents (path, text, -1, NULL));
  return path;
}

typedef struct {
  GSubprocess *proc;
  gchar *log_path;
} Run;

/* Starts the runner with @args (NULL-terminated); stdout and stderr go to
 * one log file. */
static Run *
run_start (const gchar * first, ...)
{
  GSubprocessLauncher *l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_NONE);
  GPtrArray *argv = g_ptr_array_new_with_free_func (g_free);
  Run *run = g_new0 (Run, 1);
  GError *err = NULL;
  const gchar *a;
  va_list args;
  static gint n = 0;

  g_ptr_array_add (argv, runner_path ());
  va_start (args, first);
  for (a = first; a; a = va_arg (args, const gchar *))
    g_ptr_array_add (argv, g_strdup (a));
  va_end (args);
  g_ptr_array_add (argv, NULL);

  run->log_path = g_strdup_printf ("%s/run-%d.log", tmpdir, n++);
  g_subprocess_launcher_set_stdout_file_path (l, run->log_path);
  g_subprocess_launcher_set_flags (l, G_SUBPROCESS_FLAGS_STDERR_MERGE);
  run->proc = g_subprocess_launcher_spawnv (l,
      (const gchar * const *) argv->pdata, &err);
  fail_unless (run->proc != NULL, "spawn: %s", err ? err->message : "?");
  g_ptr_array_unref (argv);
  g_object_unref (l);
  return run;
}

static gchar *
run_log (Run * run)
{
  gchar *text = NULL;

  if (!g_file_get_contents (run->log_path, &text, NULL, NULL))
    text = g_strdup ("");
  return text;
}

/* Waits until the log contains @needle @count times. */
static gboolean
run_wait_log (Run * run, const gchar * needle, guint count, guint timeout_ms)
{
  gint64 end = g_get_monotonic_time () + timeout_ms * 1000;

  do {
    gchar *text = run_log (run);
    const gchar *p = text;
    guint found = 0;

    while ((p = strstr (p, needle))) {
      found++;
      p++;
    }
    g_free (text);
    if (found >= count)
      return TRUE;
    g_usleep (20 * 1000);
  } while (g_get_monotonic_time () < end);
  return FALSE;
}

/* Waits for exit; returns the exit status, or -1 on timeout (then kills). */
static gint
run_wait_exit (Run * run, guint timeout_ms)
{
  gint64 end = g_get_monotonic_time () + timeout_ms * 1000;

  /* GSubprocess reaps the child on GLib's worker thread: no loop needed */
  while (g_get_monotonic_time () < end) {
    if (g_subprocess_get_identifier (run->proc) == NULL) {
      g_subprocess_wait (run->proc, NULL, NULL);
      if (g_subprocess_get_if_exited (run->proc))
        return g_subprocess_get_exit_status (run->proc);
      return -2;
    }
    g_usleep (20 * 1000);
  }
  g_subprocess_force_exit (run->proc);
  return -1;
}

static void
run_free (Run * run)
{
  if (g_subprocess_get_identifier (run->proc)) {
    g_subprocess_force_exit (run->proc);
    g_subprocess_wait (run->proc, NULL, NULL);
  }
  g_object_unref (run->proc);
  g_free (run->log_path);
  g_free (run);
}

static void
run_signal (Run * run, gint sig)
{
  g_subprocess_send_signal (run->proc, sig);
}

/* Runs to completion; returns the exit code and the log in @log_out. */
static gint
run_sync (gchar ** log_out, const gchar * first, ...)
{
  gchar *argv[16];
  va_list args;
  const gchar *a;
  gint n = 0, code;
  Run *run;

  va_start (args, first);
  for (a = first; a && n < 15; a = va_arg (args, const gchar *))
    argv[n++] = (gchar *) a;
  va_end (args);
  argv[n] = NULL;
  run = run_start (argv[0], n > 1 ? argv[1] : NULL, n > 2 ? argv[2] : NULL,
      n > 3 ? argv[3] : NULL, n > 4 ? argv[4] : NULL, n > 5 ? argv[5] : NULL,
      NULL);
  code = run_wait_exit (run, 60000);
  *log_out = run_log (run);
  run_free (run);
  return code;
}

static void
setup (void)
{
  tmpdir = g_dir_make_tmp ("gst-spice-run-XXXXXX", NULL);
  fail_unless (tmpdir != NULL);
}

static void
teardown (void)
{
  gchar *cmd = g_strdup_printf ("rm -rf '%s'", tmpdir);

  fail_unless (system (cmd) == 0);
  g_free (cmd);
  g_free (tmpdir);
}

/* ---- pipeline files (in process) ---- */

GST_START_TEST (test_comments_and_variables)
{
  GHashTable *vars = pipeline_vars_new ();
  GError *err = NULL;
  gchar *out;

  fail_unless (pipeline_vars_add_assignment (vars, "WIDTH=320", NULL));
  fail_unless (pipeline_vars_add_assignment (vars, "EMPTY=", NULL));
  fail_unless (pipeline_vars_add_assignment (vars, "Q=\"a b\"", NULL));
  out = pipeline_text_expand ("# heading comment\n"
      "videotestsrc ! video/x-raw,width=${WIDTH},height=${HEIGHT:-240}\n"
      "   # indented comment ! not an element\n"
      "  ! fakesink name=${EMPTY:-dflt}x${EMPTY} t=\"${Q}\" cost=$$5 p=$X\n",
      "test", vars, &err);
  fail_unless (out != NULL, "%s", err ? err->message : "");
  fail_unless_equals_string (out, "videotestsrc ! "
      "video/x-raw,width=320,height=240\n"
      "  ! fakesink name=dfltx t=\"a b\" cost=$5 p=$X");
  g_free (out);

  out = pipeline_text_expand ("a\nb ${NOPE} c\n", "f.pipeline", vars, &err);
  fail_unless (out == NULL);
  fail_unless_equals_int (err->code, PIPELINE_FILE_ERROR_UNSET);
  fail_unless (strstr (err->message, "f.pipeline:2") != NULL, "%s",
      err->message);
  fail_unless (strstr (err->message, "'NOPE'") != NULL);
  g_clear_error (&err);

  out = pipeline_text_expand ("x ${OPEN", "f", vars, &err);
  fail_unless (out == NULL);
  fail_unless_equals_int (err->code, PIPELINE_FILE_ERROR_SYNTAX);
  g_clear_error (&err);
  out = pipeline_text_expand ("x ${1BAD}", "f", vars, &err);
  fail_unless (out == NULL);
  g_clear_error (&err);

  fail_if (pipeline_vars_add_assignment (vars, "no equals", NULL));
  g_hash_table_unref (vars);
}

GST_END_TEST;

GST_START_TEST (test_env_file_precedence)
{
  gchar *env = write_file ("a.conf", "# comment\n\nSIZE=48\nexport "
      "NAME='fromfile'\n");
  gchar *pipe = write_file ("p.pipeline",
      "videotestsrc num-buffers=1 ! video/x-raw,width=${SIZE},height=16 "
      "! fakesink name=${NAME}\n");
  gchar *log = NULL;
  gint code;

  /* the env file sets SIZE; -D overrides it */
  code = run_sync (&log, "--check", "--env-file", env, pipe, NULL);
  fail_unless_equals_int (code, 0);
  g_free (log);
  code = run_sync (&log, "--check", "--env-file", env, "-D", "SIZE=x", pipe,
      NULL);
  /* width=x is a caps syntax error: proves -D won */
  fail_unless_equals_int (code, EX_DATAERR);
  g_free (log);
  g_free (env);
  g_free (pipe);
}

GST_END_TEST;

/* ---- exit codes ---- */

GST_START_TEST (test_exit_codes)
{
  gchar *good = write_file ("good.pipeline",
      "# fine\nvideotestsrc ! fakesink\n");
  gchar *syntax = write_file ("syntax.pipeline", "videotestsrc ! ! ! (\n");
  gchar *missing = write_file ("missing.pipeline",
      "videotestsrc ! nosuchelementfoo ! fakesink\n");
  gchar *unset = write_file ("unset.pipeline", "videotestsrc ! ${SINK}\n");
  gchar *nofile = g_build_filename (tmpdir, "absent.pipeline", NULL);
  gchar *log = NULL;

  fail_unless_equals_int (run_sync (&log, "--check", good, NULL), 0);
  fail_unless (strstr (log, "OK") != NULL);
  g_free (log);

  fail_unless_equals_int (run_sync (&log, "--check", syntax, NULL),
      EX_DATAERR);
  fail_unless (strstr (log, "syntax.pipeline") != NULL, "%s", log);
  g_free (log);

  fail_unless_equals_int (run_sync (&log, "--check", missing, NULL),
      EX_UNAVAILABLE);
  fail_unless (strstr (log, "nosuchelementfoo") != NULL, "%s", log);
  g_free (log);

  fail_unless_equals_int (run_sync (&log, "--check", unset, NULL),
      EX_DATAERR);
  fail_unless (strstr (log, "SINK") != NULL, "%s", log);
  g_free (log);

  fail_unless_equals_int (run_sync (&log, nofile, NULL), EX_NOINPUT);
  fail_unless (strstr (log, "absent.pipeline") != NULL, "%s", log);
  g_free (log);

  fail_unless_equals_int (run_sync (&log, NULL), EX_USAGE);
  g_free (log);

  g_free (good);
  g_free (syntax);
  g_free (missing);
  g_free (unset);
  g_free (nofile);
}

GST_END_TEST;

/* ---- signals ---- */

#define LIVE_PIPELINE "videotestsrc is-live=true ! " \
  "video/x-raw,width=64,height=48,framerate=30/1 ! fakesink\n"

GST_START_TEST (test_sigterm_eos_exit_0)
{
  gchar *pipe = write_file ("live.pipeline", LIVE_PIPELINE);
  Run *run = run_start ("--stats-interval", "0", pipe, NULL);
  gint64 t0;

  fail_unless (run_wait_log (run, "playing", 1, 30000));
  t0 = g_get_monotonic_time ();
  run_signal (run, SIGTERM);
  fail_unless_equals_int (run_wait_exit (run, 10000), 0);
  /* EOS went through the pipeline (not the timeout path) */
  fail_unless (run_wait_log (run, "stopped", 1, 1000));
  GST_INFO ("SIGTERM to exit: %" G_GINT64_FORMAT " ms",
      (g_get_monotonic_time () - t0) / 1000);
  fail_unless (g_get_monotonic_time () - t0 < 5 * G_USEC_PER_SEC);
  run_free (run);
  g_free (pipe);
}

GST_END_TEST;

GST_START_TEST (test_sighup_broken_file_keeps_pipeline)
{
  gchar *pipe = write_file ("reload.pipeline", LIVE_PIPELINE);
  Run *run = run_start ("--stats-interval", "0", pipe, NULL);
  gchar *log;

  fail_unless (run_wait_log (run, "playing", 1, 30000));
  g_free (write_file ("reload.pipeline", "videotestsrc ! ! broken (\n"));
  run_signal (run, SIGHUP);
  fail_unless (run_wait_log (run, "keeping the running pipeline", 1, 10000));
  /* still running, and only one pipeline ever started */
  g_usleep (300 * 1000);
  fail_unless (g_subprocess_get_identifier (run->proc) != NULL);
  log = run_log (run);
  fail_if (strstr (log, "stopped") != NULL, "%s", log);
  g_free (log);

  /* a good file is swapped in */
  g_free (write_file ("reload.pipeline", "videotestsrc is-live=true ! "
          "video/x-raw,width=32,height=32 ! fakesink\n"));
  run_signal (run, SIGHUP);
  fail_unless (run_wait_log (run, "reloaded", 1, 10000));
  fail_unless (run_wait_log (run, "playing", 2, 10000));

  run_signal (run, SIGINT);
  fail_unless_equals_int (run_wait_exit (run, 10000), 0);
  run_free (run);
  g_free (pipe);
}

GST_END_TEST;

/* ---- restarts ---- */

GST_START_TEST (test_restart_backoff_and_give_up)
{
  gchar *pipe = write_file ("eos.pipeline",
      "videotestsrc num-buffers=3 ! fakesink\n");
  Run *run = run_start ("--max-restarts", "2", "--stats-interval", "0", pipe,
      NULL);
  gint64 t0 = g_get_monotonic_time ();
  gchar *log;

  fail_unless_equals_int (run_wait_exit (run, 30000), EX_TEMPFAIL);
  log = run_log (run);
  /* one start and two restarts, 1 s and 2 s apart */
  fail_unless (run_wait_log (run, "playing", 3, 100));
  fail_if (run_wait_log (run, "playing", 4, 100), "%s", log);
  fail_unless (strstr (log, "giving up") != NULL, "%s", log);
  fail_unless (g_get_monotonic_time () - t0 >= 3 * G_USEC_PER_SEC);
  g_free (log);
  run_free (run);
  g_free (pipe);
}

GST_END_TEST;

/* ---- metrics ---- */

static guint
free_port (void)
{
  GSocket *s = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM,
      G_SOCKET_PROTOCOL_TCP, NULL);
  GInetAddress *lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  GSocketAddress *a = g_inet_socket_address_new (lo, 0), *bound;
  guint port;

  fail_unless (g_socket_bind (s, a, TRUE, NULL));
  bound = g_socket_get_local_address (s, NULL);
  port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound));
  g_object_unref (bound);
  g_object_unref (a);
  g_object_unref (lo);
  g_object_unref (s);
  return port;
}

static gchar *
http_get (guint port, const gchar * path)
{
  GSocketClient *c = g_socket_client_new ();
  GSocketConnection *conn;
  GString *resp = g_string_new (NULL);
  gchar *req, buf[4096];
  gssize n;

  conn = g_socket_client_connect_to_host (c, "127.0.0.1", port, NULL, NULL);
  if (!conn) {
    g_object_unref (c);
    g_string_free (resp, TRUE);
    return NULL;
  }
  req = g_strdup_printf ("GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
  g_output_stream_write_all (g_io_stream_get_output_stream (G_IO_STREAM
          (conn)), req, strlen (req), NULL, NULL, NULL);
  while ((n = g_input_stream_read (g_io_stream_get_input_stream (G_IO_STREAM
                  (conn)), buf, sizeof (buf), NULL, NULL)) > 0)
    g_string_append_len (resp, buf, n);
  g_free (req);
  g_object_unref (conn);
  g_object_unref (c);
  return g_string_free (resp, FALSE);
}

GST_START_TEST (test_metrics_endpoint)
{
  gchar *pipe = write_file ("metrics.pipeline", "videotestsrc is-live=true ! "
      "video/x-raw,width=32,height=32,framerate=30/1 ! identity name=probe ! "
      "fakesink\n");
  guint port = free_port ();
  gchar *addr = g_strdup_printf ("127.0.0.1:%u", port);
  Run *run = run_start ("--metrics", addr, "--stats-interval", "1", pipe,
      NULL);
  gchar *body = NULL, *p;
  gint64 end;
  gdouble n1 = 0, n2 = 0;

  fail_unless (run_wait_log (run, "playing", 1, 30000));
  end = g_get_monotonic_time () + 20 * G_USEC_PER_SEC;
  while (g_get_monotonic_time () < end) {
    g_free (body);
    body = http_get (port, "/metrics");
    if (body && (p = strstr (body,
                "gst_spice_identity_num_buffers{element=\"probe\"} ")))
      break;
    g_usleep (100 * 1000);
  }
  fail_unless (body != NULL);
  fail_unless (strstr (body, "200 OK") != NULL, "%s", body);
  fail_unless (strstr (body, "# TYPE gst_spice_identity_num_buffers gauge"),
      "%s", body);
  p = strstr (body, "gst_spice_identity_num_buffers{element=\"probe\"} ");
  fail_unless (p != NULL, "%s", body);
  n1 = g_ascii_strtod (strchr (p, '}') + 2, NULL);
  g_usleep (500 * 1000);
  g_free (body);
  body = http_get (port, "/metrics");
  p = strstr (body, "gst_spice_identity_num_buffers{element=\"probe\"} ");
  fail_unless (p != NULL);
  n2 = g_ascii_strtod (strchr (p, '}') + 2, NULL);
  fail_unless (n2 > n1, "counter did not grow: %f -> %f", n1, n2);
  g_free (body);
  body = http_get (port, "/nothing");
  fail_unless (strstr (body, "404") != NULL);
  g_free (body);
  /* the periodic stats line */
  fail_unless (run_wait_log (run, "stats: probe: num-bytes=", 1, 5000));

  run_signal (run, SIGTERM);
  fail_unless_equals_int (run_wait_exit (run, 10000), 0);
  run_free (run);
  g_free (addr);
  g_free (pipe);
}

GST_END_TEST;

static Suite *
runner_suite (void)
{
  Suite *s = suite_create ("runner");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_comments_and_variables);
  tcase_add_test (tc, test_env_file_precedence);
  tcase_add_test (tc, test_exit_codes);
  tcase_add_test (tc, test_sigterm_eos_exit_0);
  tcase_add_test (tc, test_sighup_broken_file_keeps_pipeline);
  tcase_add_test (tc, test_restart_backoff_and_give_up);
  tcase_add_test (tc, test_metrics_endpoint);
  return s;
}

GST_CHECK_MAIN (runner);
