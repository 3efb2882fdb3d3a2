/* gst-spice-run: pipeline files, exit codes, signals, restarts, metrics.
 * Runs the real runner binary on real pipelines.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <gst/check/gstcheck.h>
#include <gio/gio.h>
#include <gio/gunixsocketaddress.h>
#include <signal.h>
#include <string.h>
#include <sysexits.h>

#include "pipeline-file.h"
#include "runner-process.h"
#include "guest-launcher.h"

static gchar *tmpdir;

static gchar *
write_file (const gchar * name, const gchar * text)
{
  gchar *path = g_build_filename (tmpdir, name, NULL);

  fail_unless (g_file_set_contents (path, text, -1, NULL));
  return path;
}

typedef RunnerProcess Run;

#define run_start(...) runner_process_start_runner (tmpdir, __VA_ARGS__)
#define run_log runner_process_log
#define run_wait_log runner_process_wait_log
#define run_wait_exit runner_process_wait_exit
#define run_free runner_process_free
#define run_signal runner_process_signal

/* Runs to completion; returns the exit code and the log in @log_out. */
static gint
run_sync (gchar ** log_out, const gchar * first, ...)
{
  GPtrArray *argv = g_ptr_array_new_with_free_func (g_free);
  const gchar *a;
  va_list args;
  gint code;
  Run *run;

  g_ptr_array_add (argv, runner_process_binary ());
  va_start (args, first);
  for (a = first; a; a = va_arg (args, const gchar *))
    g_ptr_array_add (argv, g_strdup (a));
  va_end (args);
  g_ptr_array_add (argv, NULL);
  run = runner_process_start (tmpdir, (const gchar * const *) argv->pdata,
      NULL);
  g_ptr_array_unref (argv);
  code = run_wait_exit (run, 60000);
  *log_out = run_log (run);
  run_free (run);
  return code;
}

static void
setup (void)
{
  tmpdir = test_tmpdir_new ("gst-spice-run");
}

static void
teardown (void)
{
  test_tmpdir_remove (tmpdir);
  tmpdir = NULL;
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
  fail_unless (runner_process_is_running (run));
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

GST_START_TEST (test_metrics_endpoint)
{
  gchar *pipe = write_file ("metrics.pipeline", "videotestsrc is-live=true ! "
      "video/x-raw,width=32,height=32,framerate=30/1 ! identity name=probe ! "
      "fakesink\n");
  guint port = test_pick_free_port ();
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
    body = test_http_get (port, "/metrics");
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
  body = test_http_get (port, "/metrics");
  p = strstr (body, "gst_spice_identity_num_buffers{element=\"probe\"} ");
  fail_unless (p != NULL);
  n2 = g_ascii_strtod (strchr (p, '}') + 2, NULL);
  fail_unless (n2 > n1, "counter did not grow: %f -> %f", n1, n2);
  g_free (body);
  body = test_http_get (port, "/nothing");
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

/* ---- systemd notification ---- */

/* The runner speaks sd_notify to $NOTIFY_SOCKET: READY=1 once PLAYING,
 * WATCHDOG=1 every WATCHDOG_USEC/2, STOPPING=1 on the way out. */
GST_START_TEST (test_sd_notify_ready_and_watchdog)
{
  gchar *pipe = write_file ("notify.pipeline", LIVE_PIPELINE);
  gchar *sock_path = g_build_filename (tmpdir, "notify.sock", NULL);
  gchar *env_sock = g_strdup_printf ("NOTIFY_SOCKET=%s", sock_path);
  gchar *bin = runner_process_binary ();
  const gchar *argv[] = { bin, "--stats-interval", "0", pipe, NULL };
  const gchar *env[] = { env_sock, "WATCHDOG_USEC=400000", NULL };
  GSocketAddress *addr = g_unix_socket_address_new (sock_path);
  GSocket *sock = g_socket_new (G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_DATAGRAM,
      0, NULL);
  GString *got = g_string_new (NULL);
  gint64 end;
  guint watchdogs = 0;
  Run *run;

  fail_unless (sock != NULL);
  fail_unless (g_socket_bind (sock, addr, TRUE, NULL));
  g_socket_set_timeout (sock, 1);
  run = runner_process_start (tmpdir, argv, env);
  end = g_get_monotonic_time () + 30 * G_USEC_PER_SEC;
  while (g_get_monotonic_time () < end && watchdogs < 3) {
    gchar buf[512];
    gssize n = g_socket_receive (sock, buf, sizeof (buf) - 1, NULL, NULL);

    if (n <= 0)
      continue;
    buf[n] = '\0';
    g_string_append_printf (got, "%s\n", buf);
    if (strstr (buf, "WATCHDOG=1"))
      watchdogs++;
  }
  fail_unless (strstr (got->str, "READY=1") != NULL, "%s", got->str);
  fail_unless (strstr (got->str, "STATUS=playing") != NULL, "%s", got->str);
  fail_unless (watchdogs >= 3, "%u watchdog pings: %s", watchdogs, got->str);
  run_signal (run, SIGTERM);
  fail_unless_equals_int (run_wait_exit (run, 10000), 0);
  run_free (run);
  g_string_free (got, TRUE);
  g_object_unref (sock);
  g_object_unref (addr);
  g_free (bin);
  g_free (env_sock);
  g_free (sock_path);
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
  tcase_add_test (tc, test_sd_notify_ready_and_watchdog);
  return s;
}

GST_CHECK_MAIN (runner);
