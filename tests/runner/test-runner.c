/* gst-spice-run: pipeline files, exit codes, signals, restarts, metrics.
 * Runs the real runner binary on real pipelines.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <gst/check/gstcheck.h>
#include <gio/gio.h>
#include <gio/gunixsocketaddress.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sysexits.h>

#include "pipeline-file.h"
#include "runner-process.h"
#include "guest-launcher.h"
#include "spice-raw-client.h"
#include "prom-strict.h"

/* the runner's own exit codes (docs/operator-guide.md) */
#define EXIT_REFUSED EX_NOPERM
#define EXIT_PROPERTY EX_CONFIG

TEST_TMPDIR_FIXTURE (tmpdir, "gst-spice-run");

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
#define run_sync(log_out, ...) \
  runner_process_run_sync (tmpdir, 60000, log_out, __VA_ARGS__)

/* Fails unless @log holds printf (@fmt, …) */
static void
assert_logged (const gchar * log, const gchar * fmt, ...)
G_GNUC_PRINTF (2, 3);

static void
assert_logged (const gchar * log, const gchar * fmt, ...)
{
  va_list args;
  gchar *expect;

  va_start (args, fmt);
  expect = g_strdup_vprintf (fmt, args);
  va_end (args);
  fail_unless (strstr (log, expect) != NULL, "expected '%s' in: %s", expect,
      log);
  g_free (expect);
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

/* the line (and variables) a property's value comes from, for messages */
GST_START_TEST (test_find_property)
{
  GHashTable *vars = pipeline_vars_new ();
  const gchar *text = "# port=${COMMENTED}\n"
      "a port=${P1:-1} x=1 ! b name=\"n\"\n"
      "  ! c  port=\"${P2}\" uri=spice://h:${UP_PORT}?x=1!d\n"
      "d xport=9\n";
  GPtrArray *names = NULL;

  fail_unless (pipeline_vars_add_assignment (vars, "P2=abc", NULL));
  fail_unless (pipeline_vars_add_assignment (vars, "UP_PORT=5", NULL));
  /* the value picks the line; quotes are not part of it */
  fail_unless_equals_int (pipeline_text_find_property (text, vars, "port",
          "abc", &names), 3);
  fail_unless_equals_int (names->len, 1);
  fail_unless_equals_string (g_ptr_array_index (names, 0), "P2");
  g_ptr_array_unref (names);
  /* the default counts; comment lines and other words (xport=) do not */
  fail_unless_equals_int (pipeline_text_find_property (text, vars, "port",
          "1", &names), 2);
  fail_unless_equals_string (g_ptr_array_index (names, 0), "P1");
  g_ptr_array_unref (names);
  fail_unless_equals_int (pipeline_text_find_property (text, vars, "port",
          "9", NULL), 2);
  fail_unless_equals_int (pipeline_text_find_property (text, vars, "uri",
          "spice://h:5?x=1", &names), 3);
  fail_unless_equals_string (g_ptr_array_index (names, 0), "UP_PORT");
  g_ptr_array_unref (names);
  fail_unless_equals_int (pipeline_text_find_property (text, vars, "none",
          NULL, &names), 0);
  fail_unless_equals_int (names->len, 0);
  g_ptr_array_unref (names);
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

  fail_unless_equals_int (run_sync (&log, NULL, NULL), EX_USAGE);
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

/* The start line says where each spicesink listens, with the ports it
 * bound (0 = any free one) */
GST_START_TEST (test_start_line_listens)
{
  const gchar *ossl[] = { "req", "-x509", "-newkey", "rsa:2048", "-nodes",
    "-keyout", "key.pem", "-out", "cert.pem", "-days", "2", "-subj",
    "/CN=localhost", NULL
  };
  gchar *serve = runner_process_shipped_pipeline ("serve-test");
  gchar *cert = g_strdup_printf ("TLS_CERT_FILE=%s/cert.pem", tmpdir);
  gchar *key = g_strdup_printf ("TLS_KEY_FILE=%s/key.pem", tmpdir);
  gchar *log, *prefix, *line;
  guint port = 0, tls = 0;
  SpiceRawSession *client;
  GSocketClient *sc;
  GSocketConnection *conn;
  Run *run;

  fail_unless (test_run_openssl (tmpdir, ossl));
  run = run_start ("--stats-interval", "0", "-D", "LISTEN_PORT=0", "-D",
      "TLS_PORT=0", "-D", cert, "-D", key, serve, NULL);
  fail_unless (run_wait_log (run, "playing", 1, 30000));
  log = run_log (run);
  prefix = g_strdup_printf ("playing %s: s listens on 127.0.0.1:", serve);
  line = strstr (log, prefix);
  fail_unless (line != NULL, "expected '%s' in: %s", prefix, log);
  fail_unless (sscanf (line + strlen (prefix), "%u, tls 127.0.0.1:%u\n",
          &port, &tls) == 2, "%s", line);
  fail_unless (port > 0 && tls > 0 && port != tls, "%s", line);
  /* those are the ports it serves */
  client = spice_raw_session_new (port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (client != NULL, "no SPICE session on port %u", port);
  spice_raw_session_free (client);
  sc = g_socket_client_new ();
  conn = g_socket_client_connect_to_host (sc, "127.0.0.1", tls, NULL, NULL);
  fail_unless (conn != NULL, "nothing listens on the TLS port %u", tls);
  g_object_unref (conn);
  g_object_unref (sc);
  run_signal (run, SIGTERM);
  fail_unless_equals_int (run_wait_exit (run, 15000), 0);
  run_free (run);
  g_free (prefix);
  g_free (log);
  g_free (cert);
  g_free (key);
  g_free (serve);
}

GST_END_TEST;

/* The periodic stats line: prefixed like every runner line, short, the
 * main figures of each element (a connected client counted) */
GST_START_TEST (test_stats_line_short)
{
  gchar *serve = runner_process_shipped_pipeline ("serve-test");
  gchar *log, *prefix, **lines, **l;
  guint port = 0, n = 0;
  SpiceRawSession *client;
  Run *run;

  run = run_start ("--stats-interval", "1", "-D", "LISTEN_PORT=0", serve,
      NULL);
  fail_unless (run_wait_log (run, "playing", 1, 30000));
  log = run_log (run);
  prefix = g_strdup_printf ("playing %s: s listens on 127.0.0.1:", serve);
  fail_unless (strstr (log, prefix) != NULL, "%s", log);
  port = atoi (strstr (log, prefix) + strlen (prefix));
  g_free (log);
  client = spice_raw_session_new (port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (client != NULL);
  /* a line written while the client is connected */
  fail_unless (run_wait_log (run, "; s: clients=1 ", 1, 20000), "%s",
      run_log (run));
  spice_raw_session_free (client);
  log = run_log (run);
  lines = g_strsplit (log, "\n", -1);
  for (l = lines; *l; l++) {
    GRegex *re;

    if (!strstr (*l, "stats:"))
      continue;
    n++;
    fail_unless (g_str_has_prefix (*l, "gst-spice-run: stats: t: "), "%s",
        *l);
    fail_unless (strlen (*l) < 300, "%u bytes: %s", (guint) strlen (*l), *l);
    re = g_regex_new ("^gst-spice-run: stats: t: frames-in=\\d+ "
        "regions=\\d+ stream-frames=\\d+ stream-frames-dropped=\\d+; "
        "s: clients=\\d+ stream-frames-in=\\d+ link-estimate-bps=\\d+ "
        "clients-refused=0 auth-failures=0 closed-stalled=0$", 0, 0, NULL);
    fail_unless (g_regex_match (re, *l, 0, NULL), "%s", *l);
    g_regex_unref (re);
  }
  fail_unless (n >= 1);
  g_strfreev (lines);
  g_free (log);
  run_signal (run, SIGTERM);
  fail_unless_equals_int (run_wait_exit (run, 15000), 0);
  run_free (run);
  g_free (prefix);
  g_free (serve);
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
                "gst_spice_identity_num_buffers_total{element=\"probe\"} ")))
      break;
    g_usleep (100 * 1000);
  }
  fail_unless (body != NULL);
  fail_unless (strstr (body, "200 OK") != NULL, "%s", body);
  fail_unless (strstr (body,
          "# TYPE gst_spice_identity_num_buffers_total counter"), "%s", body);
  p = strstr (body, "gst_spice_identity_num_buffers_total{element=\"probe\"} ");
  fail_unless (p != NULL, "%s", body);
  n1 = g_ascii_strtod (strchr (p, '}') + 2, NULL);
  g_usleep (500 * 1000);
  g_free (body);
  body = test_http_get (port, "/metrics");
  p = strstr (body, "gst_spice_identity_num_buffers_total{element=\"probe\"} ");
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

/* ---- errors that name their cause ---- */

#define shipped_path runner_process_shipped_pipeline

GST_START_TEST (test_property_errors)
{
  gchar *typo = write_file ("typo.pipeline",
      "videotestsrc ! spicetiler streming=off ! fakesink\n");
  gchar *serve = shipped_path ("serve-test");
  gchar *env = write_file ("vm.conf", "# a comment\nLISTEN_PORT=abc\n");
  gchar *bin = runner_process_binary ();
  const gchar *argv[] = { bin, "--check", serve, NULL };
  const gchar *environ_abc[] = { "LISTEN_PORT=abc", NULL };
  gchar *log = NULL, *text = NULL, *at;
  guint port_line;
  Run *run;

  /* the line of serve-test.pipeline that sets spicesink's port */
  fail_unless (g_file_get_contents (serve, &text, NULL, NULL));
  at = strstr (text, "port=${LISTEN_PORT");
  fail_unless (at != NULL);
  *at = '\0';
  port_line = 1;
  for (at = text; (at = strchr (at, '\n')); at++)
    port_line++;
  g_free (text);

  /* a typo: the element, the property and the closest real one */
  fail_unless_equals_int (run_sync (&log, "--check", typo, NULL),
      EXIT_PROPERTY);
  fail_unless (strstr (log, "element spicetiler has no property streming "
          "(did you mean streaming?)") != NULL, "%s", log);
  fail_if (strstr (log, "missing element") != NULL, "%s", log);
  g_free (log);
  /* a bad value, through a variable: the pipeline's line, the variable
   * and where it was set (-D, an env file's line, the environment) */
  fail_unless_equals_int (run_sync (&log, "--check", "-D", "LISTEN_PORT=abc",
          serve, NULL), EXIT_PROPERTY);
  assert_logged (log, "%s:%u: bad value for port of element spicesink: "
      "\"abc\" (from LISTEN_PORT, set by -D)", serve, port_line);
  g_free (log);
  fail_unless_equals_int (run_sync (&log, "--check", "--env-file", env, serve,
          NULL), EXIT_PROPERTY);
  assert_logged (log, "%s:%u: bad value for port of element spicesink: "
      "\"abc\" (from LISTEN_PORT, set at %s:2)", serve, port_line, env);
  g_free (log);
  run = runner_process_start (tmpdir, argv, environ_abc);
  fail_unless_equals_int (run_wait_exit (run, 60000), EXIT_PROPERTY);
  log = run_log (run);
  fail_unless (strstr (log, "\"abc\" (from LISTEN_PORT, set in the "
          "environment)") != NULL, "%s", log);
  g_free (log);
  run_free (run);
  /* the same when running, not only with --check */
  fail_unless_equals_int (run_sync (&log, typo, NULL), EXIT_PROPERTY);
  g_free (log);
  g_free (typo);
  g_free (serve);
  g_free (env);
  g_free (bin);
}

GST_END_TEST;

/* --version: the meson project version, and GStreamer's, one line */
GST_START_TEST (test_version)
{
  gchar *log = NULL, *gst = gst_version_string (), *expect;

  expect = g_strdup_printf ("gst-spice-run %s (%s)\n", GST_SPICE_VERSION,
      gst);
  fail_unless_equals_int (run_sync (&log, "--version", NULL), 0);
  fail_unless_equals_string (log, expect);
  g_free (expect);
  g_free (gst);
  g_free (log);
}

GST_END_TEST;

GST_START_TEST (test_usage_and_check)
{
  gchar *serve = shipped_path ("serve-test");
  gchar *vp8 = shipped_path ("transcode-vp8");
  gchar *record = shipped_path ("record");
  gchar *log = NULL;

  fail_unless_equals_int (run_sync (&log, "-D", "foo", serve, NULL),
      EX_USAGE);
  fail_unless (strstr (log, "'foo' is not NAME=VALUE") != NULL, "%s", log);
  g_free (log);
  /* --check without the required variables: checked, and listed */
  fail_unless_equals_int (run_sync (&log, "--check", record, NULL), 0);
  fail_unless (strstr (log, "OK (to run it, set OUTPUT)") != NULL, "%s",
      log);
  g_free (log);
  /* running without them is still an error that names them */
  fail_unless_equals_int (run_sync (&log, record, NULL), EX_DATAERR);
  fail_unless (strstr (log, "'OUTPUT' is not set") != NULL, "%s", log);
  g_free (log);
  /* the upstream is UPSTREAM or UPSTREAM_VV: neither is required alone */
  fail_unless_equals_int (run_sync (&log, "--check", vp8, NULL), 0);
  fail_if (strstr (log, "to run it") != NULL, "%s", log);
  g_free (log);
  g_free (serve);
  g_free (vp8);
  g_free (record);
}

GST_END_TEST;

GST_START_TEST (test_unknown_variable_warning)
{
  gchar *serve = shipped_path ("serve-test");
  gchar *env = write_file ("vm.conf", "PIPELINE=serve-test\n"
      "LISTEN_PROT=5999\nPASWORD_FILE=/x\nCOMPLETELY_UNRELATED=1\n");
  gchar *log = NULL;

  fail_unless_equals_int (run_sync (&log, "--check", "--env-file", env,
          "-D", "PATERN=snow", serve, NULL), 0);
  fail_unless (strstr (log, "LISTEN_PROT") && strstr (log,
          "did you mean LISTEN_PORT?"), "%s", log);
  fail_unless (strstr (log, "vm.conf:2") != NULL, "%s", log);
  fail_unless (strstr (log, "did you mean PASSWORD_FILE?") != NULL, "%s", log);
  fail_unless (strstr (log, "PATERN (-D) is not a variable of "
          "serve-test.pipeline; did you mean PATTERN?") != NULL, "%s", log);
  fail_unless (strstr (log, "COMPLETELY_UNRELATED") != NULL, "%s", log);
  /* PIPELINE names the file: no warning */
  fail_if (strstr (log, "PIPELINE (") != NULL, "%s", log);
  g_free (log);
  g_free (env);
  g_free (serve);
}

GST_END_TEST;

/* Configuration that cannot work: one line, exit 77 at once, no restart */
static void
assert_refused (const gchar * expect, const gchar * secret,
    const gchar * first_arg, ...)
{
  va_list args;
  gint64 t0 = g_get_monotonic_time ();
  gchar *log;
  Run *run;

  va_start (args, first_arg);
  run = runner_process_start_runner_valist (tmpdir, first_arg, args);
  va_end (args);
  fail_unless_equals_int (run_wait_exit (run, 30000), EXIT_REFUSED);
  log = run_log (run);
  fail_unless (strstr (log, expect) != NULL, "expected '%s' in: %s", expect,
      log);
  fail_if (strstr (log, "restart") != NULL, "%s", log);
  fail_if (secret && strstr (log, secret) != NULL, "%s", log);
  fail_unless (g_get_monotonic_time () - t0 < 10 * G_USEC_PER_SEC);
  g_free (log);
  run_free (run);
}

GST_START_TEST (test_config_refused)
{
  gchar *vp8 = shipped_path ("transcode-vp8");
  gchar *serve = shipped_path ("serve-test");

  assert_refused ("element s listens on 0.0.0.0 without a password", NULL,
      "-D", "UPSTREAM=spice://127.0.0.1:1", "-D", "LISTEN_ADDRESS=0.0.0.0",
      vp8, NULL);
  assert_refused ("cannot read password file /nonexistent/pw", NULL,
      "-D", "PASSWORD_FILE=/nonexistent/pw", "-D", "LISTEN_PORT=0", serve,
      NULL);
  assert_refused ("element src: bad URI http://vm:5900", NULL,
      "-D", "UPSTREAM=http://vm:5900", "-D", "LISTEN_PORT=0", vp8, NULL);
  /* a URI's password stays out of the message */
  assert_refused ("bad URI spice://:5900:", "sekrit",
      "-D", "UPSTREAM=spice://:5900?password=sekrit", "-D", "LISTEN_PORT=0",
      vp8, NULL);
  g_free (vp8);
  g_free (serve);
}

GST_END_TEST;

/* A password file the elements would refuse (empty, or longer than a SPICE
 * password): --check and a start say so by cause and exit 77, never 75
 * after restarts */
GST_START_TEST (test_password_file_content_refused)
{
  gchar *serve = shipped_path ("serve-test");
  gchar *long_pw = g_strnfill (61, 'k'), *max_pw = g_strnfill (60, 'k');
  gchar *text = g_strdup_printf ("%s\n", long_pw);
  gchar *empty = write_file ("empty.pw", "");
  gchar *blank = write_file ("blank.pw", "\nsecond line\n");
  gchar *toolong = write_file ("long.pw", text);
  gchar *max = write_file ("max.pw", max_pw);
  gchar *d_empty = g_strdup_printf ("PASSWORD_FILE=%s", empty);
  gchar *d_blank = g_strdup_printf ("PASSWORD_FILE=%s", blank);
  gchar *d_long = g_strdup_printf ("PASSWORD_FILE=%s", toolong);
  gchar *d_max = g_strdup_printf ("PASSWORD_FILE=%s", max);
  gchar *log = NULL;

  fail_unless_equals_int (run_sync (&log, "--check", "-D", d_empty, serve,
          NULL), EXIT_REFUSED);
  assert_logged (log, "element s: password file %s: its first line is "
      "empty (it must hold the password, 1 to 60 bytes) (from PASSWORD_FILE, "
      "set by -D)", empty);
  g_free (log);
  fail_unless_equals_int (run_sync (&log, "--check", "-D", d_blank, serve,
          NULL), EXIT_REFUSED);
  fail_unless (strstr (log, "its first line is empty") != NULL, "%s", log);
  g_free (log);
  fail_unless_equals_int (run_sync (&log, "--check", "-D", d_long, serve,
          NULL), EXIT_REFUSED);
  fail_unless (strstr (log, "its first line is 61 bytes long, more than the "
          "60 a SPICE password can have") != NULL, "%s", log);
  fail_if (strstr (log, long_pw) != NULL, "%s", log);
  g_free (log);
  /* 60 bytes is a password */
  fail_unless_equals_int (run_sync (&log, "--check", "-D", d_max, serve,
          NULL), 0);
  g_free (log);
  /* and at start: one line, 77 at once, no restart */
  assert_refused ("its first line is empty", NULL, "-D", d_empty, "-D",
      "LISTEN_PORT=0", serve, NULL);
  assert_refused ("its first line is 61 bytes long", long_pw, "-D", d_long,
      "-D", "LISTEN_PORT=0", serve, NULL);
  g_free (d_empty);
  g_free (d_blank);
  g_free (d_long);
  g_free (d_max);
  g_free (empty);
  g_free (blank);
  g_free (toolong);
  g_free (max);
  g_free (text);
  g_free (long_pw);
  g_free (max_pw);
  g_free (serve);
}

GST_END_TEST;

/* PASSWORD_FILE and UPSTREAM_PASSWORD_FILE reach the elements of every
 * shipped pipeline that has them */
GST_START_TEST (test_password_file_in_every_pipeline)
{
  const gchar *names[] = { "demo", "transcode-vp8", "transcode-mjpeg",
    "transcode-lossless", "viewer", "record", "serve-desktop", "serve-test"
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (names); i++) {
    gchar *path = shipped_path (names[i]), *text = NULL, *log = NULL;
    gboolean sink, src;

    fail_unless (g_file_get_contents (path, &text, NULL, NULL));
    sink = strstr (text, "spicesink") != NULL;
    src = strstr (text, "spicesrc") && strstr (text, "${UPSTREAM}");
    if (sink) {
      fail_unless_equals_int (run_sync (&log, "--check", "-D",
              "PASSWORD_FILE=/nonexistent/clients", path, NULL),
          EXIT_REFUSED);
      fail_unless (strstr (log, "/nonexistent/clients"), "%s: %s", names[i],
          log);
      g_free (log);
    }
    if (src) {
      fail_unless_equals_int (run_sync (&log, "--check", "-D",
              "UPSTREAM_PASSWORD_FILE=/nonexistent/vm", path, NULL),
          EXIT_REFUSED);
      fail_unless (strstr (log, "/nonexistent/vm"), "%s: %s", names[i], log);
      g_free (log);
    }
    g_free (text);
    g_free (path);
  }
}

GST_END_TEST;

/* An upstream that accepts TCP but never answers: each attempt times out
 * with a message naming host and port, is retried with growing delays,
 * and systemd's STATUS says so; the runner keeps running. */
GST_START_TEST (test_upstream_unreachable_waits)
{
  GSocketListener *silent = g_socket_listener_new ();
  guint16 port = g_socket_listener_add_any_inet_port (silent, NULL, NULL);
  gchar *pipe = g_strdup_printf ("spicesrc name=src "
      "uri=spice://127.0.0.1:%u connect-timeout-ms=1000 reconnect=always "
      "! fakesink\n", port);
  gchar *file = write_file ("up.pipeline", pipe);
  gchar *sock_path = g_build_filename (tmpdir, "notify.sock", NULL);
  gchar *env_sock = g_strdup_printf ("NOTIFY_SOCKET=%s", sock_path);
  gchar *bin = runner_process_binary ();
  gchar *expect = g_strdup_printf ("at host 127.0.0.1 port %u: no answer "
      "within 1000 ms", port);
  const gchar *argv[] = { bin, "--stats-interval", "0", file, NULL };
  const gchar *env[] = { env_sock, NULL };
  GSocketAddress *addr = g_unix_socket_address_new (sock_path);
  GSocket *sock = g_socket_new (G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_DATAGRAM,
      0, NULL);
  GString *got = g_string_new (NULL);
  gint64 end;
  gchar *log;
  Run *run;

  fail_unless (port != 0);
  fail_unless (g_socket_bind (sock, addr, TRUE, NULL));
  g_socket_set_timeout (sock, 1);
  run = runner_process_start (tmpdir, argv, env);
  fail_unless (run_wait_log (run, "waiting for upstream", 3, 30000));
  end = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
  while (g_get_monotonic_time () < end &&
      !strstr (got->str, "STATUS=waiting for upstream")) {
    gchar buf[512];
    gssize n = g_socket_receive (sock, buf, sizeof (buf) - 1, NULL, NULL);

    if (n > 0) {
      buf[n] = '\0';
      g_string_append_printf (got, "%s\n", buf);
    }
  }
  fail_unless (strstr (got->str, "STATUS=waiting for upstream") != NULL,
      "%s", got->str);
  log = run_log (run);
  fail_unless (strstr (log, expect) != NULL, "%s", log);
  /* backoff: the delays grow */
  fail_unless (strstr (log, "next attempt in 2.0 s") != NULL, "%s", log);
  fail_unless (runner_process_is_running (run));
  g_free (log);
  run_signal (run, SIGTERM);
  fail_unless_equals_int (run_wait_exit (run, 15000), 0);
  run_free (run);
  g_socket_listener_close (silent);
  g_object_unref (silent);
  g_string_free (got, TRUE);
  g_object_unref (sock);
  g_object_unref (addr);
  g_free (expect);
  g_free (bin);
  g_free (env_sock);
  g_free (sock_path);
  g_free (file);
  g_free (pipe);
}

GST_END_TEST;

/* A pipeline whose streaming thread is stuck: SIGTERM still ends the
 * runner within --eos-timeout + a few seconds. */
GST_START_TEST (test_sigterm_stuck_pipeline)
{
  gchar *pipe = write_file ("stuck.pipeline", "videotestsrc is-live=true ! "
      "video/x-raw,width=16,height=16,framerate=30/1 ! "
      "identity sleep-time=60000000 ! fakesink async=false\n");
  Run *run = run_start ("--stats-interval", "0", "--eos-timeout", "1", pipe,
      NULL);
  gint64 t0;
  gint code;

  fail_unless (run_wait_log (run, "playing", 1, 30000));
  g_usleep (500 * 1000);
  t0 = g_get_monotonic_time ();
  run_signal (run, SIGTERM);
  code = run_wait_exit (run, 20000);
  fail_unless (code == 0, "exit %d", code);
  fail_unless (g_get_monotonic_time () - t0 < 6 * G_USEC_PER_SEC,
      "took %" G_GINT64_FORMAT " ms", (g_get_monotonic_time () - t0) / 1000);
  run_free (run);
  g_free (pipe);
}

GST_END_TEST;

/* ---- reload ---- */

static gchar *
serve_env (guint port, const gchar * extra)
{
  gchar *serve = shipped_path ("serve-test");
  gchar *text = g_strdup_printf ("PIPELINE=%s\nWIDTH=320\n"
      "HEIGHT=200\nFPS=10\nLISTEN_PORT=%u\n%s", serve, port, extra);
  gchar *path = write_file ("serve.conf", text);

  g_free (text);
  g_free (serve);
  return path;
}

/* an unchanged file is a no-op: a connected client stays connected */
GST_START_TEST (test_reload_unchanged_keeps_clients)
{
  guint port = test_pick_free_port ();
  gchar *env = serve_env (port, "");
  Run *run = run_start ("--stats-interval", "0", "--env-file", env, NULL);
  SpiceRawSession *client;
  gchar *log;

  fail_unless (run_wait_log (run, "playing", 1, 30000));
  client = spice_raw_session_new (port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (client != NULL);
  fail_unless (spice_raw_session_pump (client, 1000, NULL, NULL));
  run_signal (run, SIGHUP);
  fail_unless (run_wait_log (run, "is unchanged; nothing to do", 1, 10000));
  fail_unless (spice_raw_session_pump (client, 1500, NULL, NULL),
      "the client was disconnected by a no-op reload");
  fail_if (spice_raw_wait_closed (client->main, 200));
  log = run_log (run);
  fail_if (strstr (log, "reloaded") != NULL, "%s", log);
  g_free (log);

  /* a changed file restarts the pipeline: clients reconnect */
  g_free (serve_env (port, "FPS=15\n"));
  run_signal (run, SIGHUP);
  fail_unless (run_wait_log (run, "reloaded", 1, 10000));
  fail_unless (run_wait_log (run, "playing", 2, 10000));
  fail_unless (spice_raw_wait_closed (client->main, 5000));
  spice_raw_session_free (client);
  client = spice_raw_session_new (port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (client != NULL, "no reconnect after a reload");
  spice_raw_session_free (client);

  run_signal (run, SIGTERM);
  fail_unless_equals_int (run_wait_exit (run, 15000), 0);
  run_free (run);
  g_free (env);
}

GST_END_TEST;

/* a new file that parses but fails when it starts: the old one again */
GST_START_TEST (test_reload_failing_start_restores)
{
  gchar *pipe = write_file ("reload.pipeline", LIVE_PIPELINE);
  Run *run = run_start ("--stats-interval", "0", "--reload-check", "2", pipe,
      NULL);
  gchar *log;

  fail_unless (run_wait_log (run, "playing", 1, 30000));
  g_free (write_file ("reload.pipeline",
          "filesrc location=/nonexistent/input ! fakesink\n"));
  run_signal (run, SIGHUP);
  fail_unless (run_wait_log (run, "reload failed", 1, 15000), "%s",
      run_log (run));
  fail_unless (run_wait_log (run, "starting the previous pipeline again", 1,
          1000));
  /* the old description plays again, and stays */
  fail_unless (run_wait_log (run, "playing", 2, 10000));
  g_usleep (3 * G_USEC_PER_SEC);
  fail_unless (runner_process_is_running (run));
  log = run_log (run);
  fail_if (strstr (log, "restart 1") != NULL, "%s", log);
  g_free (log);
  run_signal (run, SIGTERM);
  fail_unless_equals_int (run_wait_exit (run, 15000), 0);
  run_free (run);
  g_free (pipe);
}

GST_END_TEST;

/* PIPELINE= in the env file is read again on reload */
GST_START_TEST (test_reload_pipeline_variable)
{
  gchar *a = write_file ("a.pipeline", LIVE_PIPELINE);
  gchar *b = write_file ("b.pipeline", "videotestsrc is-live=true ! "
      "video/x-raw,width=32,height=32,framerate=10/1 ! fakesink\n");
  gchar *text = g_strdup_printf ("PIPELINE=%s\n", a);
  gchar *env = write_file ("p.conf", text);
  Run *run = run_start ("--stats-interval", "0", "--env-file", env, NULL);

  fail_unless (run_wait_log (run, "playing", 1, 30000));
  fail_unless (run_wait_log (run, "a.pipeline", 1, 100));
  g_free (text);
  text = g_strdup_printf ("PIPELINE=%s\n", b);
  g_free (write_file ("p.conf", text));
  run_signal (run, SIGHUP);
  fail_unless (run_wait_log (run, "reloaded", 1, 10000));
  fail_unless (run_wait_log (run, "playing", 2, 10000));
  fail_unless (run_wait_log (run, "b.pipeline", 2, 100), "%s", run_log (run));
  run_signal (run, SIGTERM);
  fail_unless_equals_int (run_wait_exit (run, 15000), 0);
  run_free (run);
  g_free (text);
  g_free (env);
  g_free (a);
  g_free (b);
}

GST_END_TEST;

/* ---- metrics Prometheus accepts ---- */

static GHashTable *
scrape (guint port)
{
  gchar *resp = test_http_get (port, "/metrics"), *body, *error = NULL;
  GHashTable *series;

  fail_unless (resp != NULL);
  body = strstr (resp, "\r\n\r\n");
  fail_unless (body != NULL, "%s", resp);
  series = prom_strict_parse (body + 4, &error);
  fail_unless (series != NULL, "%s in:\n%s", error, body + 4);
  g_free (resp);
  return series;
}

GST_START_TEST (test_metrics_two_clients_strict)
{
  guint port = test_pick_free_port (), mport = test_pick_free_port ();
  gchar *env = serve_env (port, "");
  gchar *maddr = g_strdup_printf ("127.0.0.1:%u", mport);
  gchar *probe = write_file ("probe.pipeline", "videotestsrc is-live=true ! "
      "video/x-raw,width=16,height=16,framerate=10/1 ! identity ! "
      "fakesink\n");
  Run *run = run_start ("--stats-interval", "0", "--metrics", maddr,
      "--env-file", env, NULL);
  SpiceRawSession *c1, *c2;
  GHashTable *m;
  gchar *key;

  fail_unless (run_wait_log (run, "playing", 1, 30000));
  /* two clients from one address */
  c1 = spice_raw_session_new (port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  c2 = spice_raw_session_new (port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (c1 && c2);
  fail_unless (c1->session_id != c2->session_id);
  spice_raw_session_pump (c1, 500, NULL, NULL);
  spice_raw_session_pump (c2, 500, NULL, NULL);
  m = scrape (mport);
  /* one series per client, labelled by session */
  fail_unless_equals_int (prom_strict_count (m,
          "gst_spice_spicesink_client_stats_draws_total{"), 2);
  key = g_strdup_printf ("gst_spice_spicesink_client_stats_draws_total{"
      "client=\"127.0.0.1\",element=\"s\",session=\"%u\"}", c1->session_id);
  fail_unless (g_hash_table_contains (m, key), "no %s", key);
  g_free (key);
  /* counters are counters, levels are gauges */
  fail_unless (g_hash_table_contains (m,
          "gst_spice_spicesink_clients_total{element=\"s\"}"));
  fail_unless (g_hash_table_contains (m,
          "gst_spice_spicesink_clients{element=\"s\"}"));
  fail_unless (g_hash_table_contains (m,
          "gst_spice_spicetiler_frames_in_total{element=\"t\"}"));
  g_hash_table_unref (m);
  spice_raw_session_free (c1);
  spice_raw_session_free (c2);
  run_signal (run, SIGTERM);
  fail_unless_equals_int (run_wait_exit (run, 15000), 0);
  run_free (run);

  /* made-up element names (identity0, identity1, … per process) give
   * the same label after every reload */
  run = run_start ("--stats-interval", "0", "--metrics", maddr, probe, NULL);
  fail_unless (run_wait_log (run, "playing", 1, 30000));
  m = scrape (mport);
  fail_unless (g_hash_table_contains (m,
          "gst_spice_identity_num_buffers_total{element=\"identity0\"}"));
  g_hash_table_unref (m);
  g_free (write_file ("probe.pipeline", "videotestsrc is-live=true ! "
          "video/x-raw,width=16,height=16,framerate=15/1 ! identity ! "
          "fakesink\n"));
  run_signal (run, SIGHUP);
  fail_unless (run_wait_log (run, "playing", 2, 10000));
  m = scrape (mport);
  fail_unless (g_hash_table_contains (m,
          "gst_spice_identity_num_buffers_total{element=\"identity0\"}"));
  g_hash_table_unref (m);
  run_signal (run, SIGTERM);
  fail_unless_equals_int (run_wait_exit (run, 15000), 0);
  run_free (run);
  g_free (probe);
  g_free (maddr);
  g_free (env);
}

GST_END_TEST;

/* The parser used above rejects what Prometheus rejects */
GST_START_TEST (test_strict_parser_rejects)
{
  const gchar *bad[] = {
    "a{x=\"1\"} 1\na{x=\"1\"} 2\n",     /* duplicate series */
    "# TYPE a gauge\na 1\nb 1\na{x=\"2\"} 1\n", /* family split */
    "# TYPE a counter\na 1\n",  /* counter without _total */
    "# TYPE a gauge\n# TYPE a gauge\na 1\n",
    "a{x=1} 1\n", "a 1x\n", "a{x=\"1\",x=\"2\"} 1\n", "a 1",
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (bad); i++) {
    gchar *error = NULL;
    GHashTable *m = prom_strict_parse (bad[i], &error);

    fail_unless (m == NULL, "accepted: %s", bad[i]);
    g_free (error);
  }
}

GST_END_TEST;

GST_START_TEST (test_metrics_port_busy_is_transient)
{
  GSocketListener *l = g_socket_listener_new ();
  guint16 port = g_socket_listener_add_any_inet_port (l, NULL, NULL);
  gchar *addr = g_strdup_printf ("0.0.0.0:%u", port);
  gchar *pipe = write_file ("m.pipeline", LIVE_PIPELINE);
  gchar *log = NULL;

  fail_unless_equals_int (run_sync (&log, "--metrics", addr, pipe, NULL),
      EX_TEMPFAIL);
  fail_unless (strstr (log, addr) != NULL, "%s", log);
  g_free (log);
  g_socket_listener_close (l);
  g_object_unref (l);
  g_free (addr);
  g_free (pipe);
}

GST_END_TEST;

/* ---- probes for orchestrators ---- */

/* The status line of an HTTP response ("HTTP/1.1 200 OK"), or "" */
static gchar *
http_status (guint port, const gchar * path)
{
  gchar *resp = test_http_get (port, path), *eol;

  if (!resp)
    return g_strdup ("");
  if ((eol = strstr (resp, "\r\n")))
    *eol = '\0';
  return resp;
}

/* /healthz answers 200 while the runner runs; /ready 200 while the
 * pipeline plays and 503 while a restart is pending (docs/operator-guide.md
 * "Kubernetes"). */
GST_START_TEST (test_health_and_ready)
{
  gchar *live = write_file ("live.pipeline", LIVE_PIPELINE);
  gchar *eos = write_file ("eos.pipeline",
      "videotestsrc num-buffers=3 ! fakesink\n");
  guint port = test_pick_free_port ();
  gchar *addr = g_strdup_printf ("127.0.0.1:%u", port);
  gchar *st = NULL;
  gboolean saw_503 = FALSE;
  gint64 end;
  Run *run;

  /* a pipeline that ends at once: restarts after 1, 2, 4 … s, not ready
   * in between, alive all along */
  run = run_start ("--metrics", addr, "--stats-interval", "0",
      "--max-restarts", "5", eos, NULL);
  fail_unless (run_wait_log (run, "playing", 1, 30000));
  end = g_get_monotonic_time () + 15 * G_USEC_PER_SEC;
  while (g_get_monotonic_time () < end && !saw_503) {
    g_free (st);
    st = http_status (port, "/ready");
    if (g_str_has_suffix (st, " 503 Service Unavailable")) {
      saw_503 = TRUE;
      g_free (st);
      st = http_status (port, "/healthz");
      fail_unless (g_str_has_suffix (st, " 200 OK"), "/healthz: %s", st);
    }
    g_usleep (50 * 1000);
  }
  fail_unless (saw_503, "/ready never answered 503 between restarts: %s", st);
  g_free (st);
  run_signal (run, SIGTERM);
  fail_unless_equals_int (run_wait_exit (run, 10000), 0);
  run_free (run);

  /* a playing pipeline: ready */
  run = run_start ("--metrics", addr, "--stats-interval", "0", live, NULL);
  fail_unless (run_wait_log (run, "playing", 1, 30000));
  st = http_status (port, "/ready");
  fail_unless (g_str_has_suffix (st, " 200 OK"), "/ready: %s", st);
  g_free (st);
  st = test_http_get (port, "/ready");
  fail_unless (st && g_str_has_suffix (st, "\r\n\r\nplaying\n"), "%s", st);
  g_free (st);
  st = http_status (port, "/healthz");
  fail_unless (g_str_has_suffix (st, " 200 OK"), "/healthz: %s", st);
  g_free (st);
  run_signal (run, SIGTERM);
  fail_unless_equals_int (run_wait_exit (run, 10000), 0);
  run_free (run);
  g_free (addr);
  g_free (live);
  g_free (eos);
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
  tcase_add_checked_fixture (tc, tmpdir_setup, tmpdir_teardown);
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_comments_and_variables);
  tcase_add_test (tc, test_find_property);
  tcase_add_test (tc, test_env_file_precedence);
  tcase_add_test (tc, test_exit_codes);
  tcase_add_test (tc, test_sigterm_eos_exit_0);
  tcase_add_test (tc, test_sighup_broken_file_keeps_pipeline);
  tcase_add_test (tc, test_restart_backoff_and_give_up);
  tcase_add_test (tc, test_start_line_listens);
  tcase_add_test (tc, test_stats_line_short);
  tcase_add_test (tc, test_metrics_endpoint);
  tcase_add_test (tc, test_sd_notify_ready_and_watchdog);
  tcase_add_test (tc, test_property_errors);
  tcase_add_test (tc, test_usage_and_check);
  tcase_add_test (tc, test_version);
  tcase_add_test (tc, test_unknown_variable_warning);
  tcase_add_test (tc, test_config_refused);
  tcase_add_test (tc, test_password_file_content_refused);
  tcase_add_test (tc, test_password_file_in_every_pipeline);
  tcase_add_test (tc, test_upstream_unreachable_waits);
  tcase_add_test (tc, test_sigterm_stuck_pipeline);
  tcase_add_test (tc, test_reload_unchanged_keeps_clients);
  tcase_add_test (tc, test_reload_failing_start_restores);
  tcase_add_test (tc, test_reload_pipeline_variable);
  tcase_add_test (tc, test_metrics_two_clients_strict);
  tcase_add_test (tc, test_strict_parser_rejects);
  tcase_add_test (tc, test_metrics_port_busy_is_transient);
  tcase_add_test (tc, test_health_and_ready);
  return s;
}

GST_CHECK_MAIN (runner);
