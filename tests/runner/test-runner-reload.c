/* gst-spice-run: a changed reload keeps the clients (issue 28). The
 * shipped transcode-vp8 pipeline, run by the runner from an env file,
 * serves the real test guest; a spice-gtk client (spice-test-client) and
 * remote-viewer under Xvfb stay connected through a reload that changes
 * VP8_BITRATE and show the guest's picture again; over TLS too, with a
 * certificate the client checks by its subject (no name of the address
 * in it: the sink sends the subject along).
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <gst/check/gstcheck.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guest-launcher.h"
#include "guest-render.h"
#include "ppm.h"
#include "runner-process.h"

TEST_TMPDIR_FIXTURE (tmpdir, "gst-spice-reload");

/* with a comma to escape; no subjectAltName: 127.0.0.1 is not its name */
#define RELOAD_SUBJECT_ARG "/C=XX/O=gst-spice, reload/CN=reload.test"
#define RELOAD_SUBJECT "C=XX,O=gst-spice\\, reload,CN=reload.test"

/* A CA (ca.pem) and a server certificate it signed (cert.pem, key.pem)
 * in tmpdir */
static void
make_certificates (void)
{
  const gchar *ca[] = { "req", "-x509", "-newkey", "rsa:2048", "-nodes",
    "-keyout", "ca-key.pem", "-out", "ca.pem", "-days", "2", "-subj",
    "/CN=reload CA", NULL
  };
  const gchar *csr[] = { "req", "-newkey", "rsa:2048", "-nodes", "-keyout",
    "key.pem", "-out", "server.csr", "-subj", RELOAD_SUBJECT_ARG, NULL
  };
  const gchar *sign[] = { "x509", "-req", "-in", "server.csr", "-CA",
    "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial", "-out", "cert.pem",
    "-days", "2", NULL
  };

  fail_unless (test_run_openssl (tmpdir, ca));
  fail_unless (test_run_openssl (tmpdir, csr));
  fail_unless (test_run_openssl (tmpdir, sign));
}

/* transcode-vp8's variables: plain on @port, clients sent back to
 * "localhost" (REDIRECT_HOST); or TLS only, clients sent back to the
 * address they reached */
static gchar *
write_env (const gchar * upstream, guint port, gboolean tls, guint bitrate)
{
  gchar *pipeline = runner_process_shipped_pipeline ("transcode-vp8");
  gchar *listen = tls ? g_strdup_printf ("LISTEN_PORT=-1\nTLS_PORT=%u\n"
      "TLS_CERT_FILE=%s/cert.pem\nTLS_KEY_FILE=%s/key.pem\n", port, tmpdir,
      tmpdir) : g_strdup_printf ("LISTEN_PORT=%u\nREDIRECT_HOST=localhost\n",
      port);
  gchar *text = g_strdup_printf ("PIPELINE=%s\nUPSTREAM=%s\n%s"
      "VP8_BITRATE=%u\n", pipeline, upstream, listen, bitrate);
  gchar *path = g_build_filename (tmpdir, "reload.conf", NULL);

  fail_unless (g_file_set_contents (path, text, -1, NULL));
  g_free (text);
  g_free (listen);
  g_free (pipeline);
  return path;
}

/* The guest (idle, key box toggled @boxes times) and the runner serving
 * it with transcode-vp8 on @port */
static RunnerProcess *
start_transcode (GuestProcess ** gp, guint port, gboolean tls, gchar ** env)
{
  const gchar *guest_args[] = { "--activity", "idle", NULL };
  GError *err = NULL;
  gchar *uri, *line;
  RunnerProcess *run;

  *gp = guest_process_start (guest_args, &err);
  fail_unless (*gp != NULL, "%s", err ? err->message : "");
  guest_process_command (*gp, "key");
  line = guest_process_wait_line (*gp, "box 1", GUEST_LINE_TIMEOUT_MS);
  fail_unless (line != NULL);
  g_free (line);
  uri = guest_process_get_uri (*gp);
  *env = write_env (uri, port, tls, 2000000);
  run = runner_process_start_runner (tmpdir, "--stats-interval", "0",
      "--env-file", *env, NULL);
  fail_unless (runner_process_wait_log (run, "playing", 1,
          60000 * test_time_factor ()), "%s", runner_process_log (run));
  g_free (uri);
  return run;
}

/* Changes VP8_BITRATE and sends SIGHUP; waits until the runner asked one
 * client to reconnect and plays the new pipeline */
static void
reload_bitrate (RunnerProcess * run, GuestProcess * gp, guint port,
    gboolean tls)
{
  gchar *uri = guest_process_get_uri (gp);

  g_free (write_env (uri, port, tls, 1000000));
  g_free (uri);
  runner_process_signal (run, SIGHUP);
  fail_unless (runner_process_wait_log (run,
          "1 client(s) asked to reconnect", 1, 15000 * test_time_factor ()),
      "%s", runner_process_log (run));
  fail_unless (runner_process_wait_log (run, "reloaded", 1,
          15000 * test_time_factor ()));
  fail_unless (runner_process_wait_log (run, "playing", 2,
          30000 * test_time_factor ()), "%s", runner_process_log (run));
}

/* the client's dumps until they show @expected (the guest's size) */
static guint64
client_until_exact (RunnerProcess * client, const gchar * shot,
    const guint8 * expected, guint timeout_s)
{
  return runner_process_dump_until_exact (client, shot, expected,
      GUEST_DEFAULT_WIDTH, GUEST_DEFAULT_HEIGHT,
      timeout_s * 1000 * test_time_factor ());
}

/* The monotonic time (us) on the first line of @log that starts with
 * @prefix at or after @from, the time being its word @word; -1 none */
static gint64
log_time (const gchar * log, const gchar * from, const gchar * prefix,
    guint word)
{
  const gchar *p = from ? strstr (log, from) : log;
  gchar **lines;
  gint64 t = -1;
  guint i;

  if (!p)
    return -1;
  lines = g_strsplit (p, "\n", -1);
  for (i = 0; lines[i] && t < 0; i++) {
    gchar **words;

    if (!g_str_has_prefix (lines[i], prefix))
      continue;
    words = g_strsplit (lines[i], " ", -1);
    if (g_strv_length (words) > word)
      t = g_ascii_strtoll (words[word], NULL, 10);
    g_strfreev (words);
  }
  g_strfreev (lines);
  return t;
}

/* a spice-gtk client keeps its session through a changed reload: it is
 * asked to switch host, reconnects to the same port and shows the guest's
 * exact picture, also a change made after the reload */
GST_START_TEST (test_reload_keeps_spicegtk_session)
{
  gboolean tls = __i__ == 1;
  guint port = test_pick_free_port ();
  GuestProcess *gp;
  gchar *env, *shot = g_build_filename (tmpdir, "shot.ppm", NULL);
  gchar *tc = g_build_filename (g_getenv ("GST_SPICE_BUILD_DIR"), "tests",
      "common", "spice-test-client", NULL);
  gchar *ps = g_strdup_printf ("%u", port), *log, *line;
  gchar *ca = g_build_filename (tmpdir, "ca.pem", NULL);
  const gchar *argv[] = { tc, tls ? "-s" : "-p", ps, "--duration-ms",
    "600000", "--timeout", "600", "--log", "--dump-on-signal", "-o", shot,
    tls ? "--ca-file" : NULL, ca, "--cert-subject", RELOAD_SUBJECT, NULL
  };
  RunnerProcess *run, *client;
  guint8 *expected;
  gint64 switched, first_after, destroyed;
  guint64 diff;

  if (tls)
    make_certificates ();
  run = start_transcode (&gp, port, tls, &env);
  client = runner_process_start (tmpdir, argv, NULL);
  fail_unless (runner_process_wait_log (client, "MARK", 1,
          30000 * test_time_factor ()), "%s", runner_process_log (client));
  expected = guest_render_frame_new (GUEST_DEFAULT_WIDTH,
      GUEST_DEFAULT_HEIGHT, 1, 1, GUEST_ACTIVITY_IDLE, GUEST_FRAME_NONE);
  diff = client_until_exact (client, shot, expected, 60);
  fail_unless (diff == 0, "before the reload: %" G_GUINT64_FORMAT
      " pixels differ", diff);

  reload_bitrate (run, gp, port, tls);
  /* asked to switch, reconnected: a new display, marked */
  fail_unless (runner_process_wait_log (client, "MAIN-EVENT 11", 1,
          15000 * test_time_factor ()), "%s", runner_process_log (client));
  fail_unless (runner_process_wait_log (client, "MARK", 2,
          30000 * test_time_factor ()), "%s", runner_process_log (client));
  /* where it was sent */
  fail_unless (runner_process_wait_log (client, tls ? "HOST 127.0.0.1" :
          "HOST localhost", tls ? 2 : 1, 1000), "%s",
      runner_process_log (client));
  diff = client_until_exact (client, shot, expected, 60);
  fail_unless (diff == 0, "after the reload: %" G_GUINT64_FORMAT
      " pixels differ", diff);

  /* the new pipeline follows the guest: a key press shows */
  guest_process_command (gp, "key");
  line = guest_process_wait_line (gp, "box 2", GUEST_LINE_TIMEOUT_MS);
  fail_unless (line != NULL);
  g_free (line);
  g_free (expected);
  expected = guest_render_frame_new (GUEST_DEFAULT_WIDTH,
      GUEST_DEFAULT_HEIGHT, 1, 2, GUEST_ACTIVITY_IDLE, GUEST_FRAME_NONE);
  diff = client_until_exact (client, shot, expected, 60);
  fail_unless (diff == 0, "key press after the reload: %" G_GUINT64_FORMAT
      " pixels differ", diff);

  /* one session throughout: never disconnected, one switch */
  fail_unless (runner_process_is_running (client));
  log = runner_process_log (client);
  fail_if (strstr (log, "SESSION-DISCONNECTED") != NULL, "%s", log);
  fail_if (strstr (log, "channel error") != NULL, "%s", log);
  fail_unless_equals_int (g_strrstr (log, "MAIN-EVENT 11") - log,
      strstr (log, "MAIN-EVENT 11") - log);
  /* the time without a picture: the display destroyed by the switch to
   * the first update of the new one */
  switched = log_time (log, NULL, "MAIN-EVENT 11", 2);
  destroyed = log_time (log, "MAIN-EVENT 11", "CHANNEL-DESTROY 2", 2);
  first_after = log_time (log, "CHANNEL-DESTROY 2 ", "INV", 1);
  fail_unless (switched > 0 && destroyed >= switched &&
      first_after > destroyed, "%s", log);
  g_print ("RESULT reload with a spice-gtk client%s: no picture for %"
      G_GINT64_FORMAT " ms (display destroyed at the switch to the new "
      "display's first update)\n", tls ? " over TLS" : "",
      (first_after - destroyed) / 1000);
  g_free (log);

  runner_process_signal (run, SIGTERM);
  fail_unless_equals_int (runner_process_wait_exit (run, 20000), 0);
  runner_process_free (run);
  runner_process_free (client);
  guest_process_stop (gp);
  g_free (expected);
  g_free (env);
  g_free (shot);
  g_free (ps);
  g_free (ca);
  g_free (tc);
}

GST_END_TEST;

/* ---- remote-viewer under Xvfb ---- */

/* remote-viewer stays open through a changed reload (it used to quit:
 * "display has disconnected, shutting down") and links again */
GST_START_TEST (test_reload_keeps_remote_viewer)
{
  gchar *rv = g_find_program_in_path ("remote-viewer");
  gchar *xr = g_find_program_in_path ("xvfb-run");
  gboolean have = rv && xr;
  guint port;
  GuestProcess *gp;
  gchar *env, *uri, *rv_log, *text = NULL;
  RunnerProcess *run;
  GPid pid = 0;
  gint status;

  g_free (rv);
  g_free (xr);
  if (!have) {
    g_printerr ("SKIP: remote-viewer or xvfb-run not installed\n");
    return;
  }
  port = test_pick_free_port ();
  run = start_transcode (&gp, port, FALSE, &env);
  uri = g_strdup_printf ("spice://127.0.0.1:%u", port);
  rv_log = g_build_filename (tmpdir, "remote-viewer.log", NULL);
  pid = test_remote_viewer_start (uri, rv_log, FALSE);
  fail_unless (pid > 0);
  /* its --debug log: the display shown */
  fail_unless (test_file_wait_text (rv_log, "Insert display 0", 1,
          60000 * test_time_factor ()), "remote-viewer did not connect");

  /* the runner asks it (the one client) to switch */
  reload_bitrate (run, gp, port, FALSE);
  fail_unless (test_file_wait_text (rv_log, "main channel: switching host", 1,
          15000 * test_time_factor ()));
  fail_unless (test_file_wait_text (rv_log, "Insert display 0", 2,
          30000 * test_time_factor ()), "remote-viewer showed no display "
      "after the reload");
  /* and stays, connected */
  g_usleep (2 * G_USEC_PER_SEC);
  fail_unless_equals_int (waitpid (pid, &status, WNOHANG), 0);
  g_file_get_contents (rv_log, &text, NULL, NULL);
  fail_if (strstr (text, "shutting down") != NULL, "%s", text);
  fail_if (strstr (text, "main channel: closed") != NULL, "%s", text);
  g_free (text);

  test_remote_viewer_stop (pid);
  runner_process_signal (run, SIGTERM);
  fail_unless_equals_int (runner_process_wait_exit (run, 20000), 0);
  runner_process_free (run);
  guest_process_stop (gp);
  g_free (rv_log);
  g_free (uri);
  g_free (env);
}

GST_END_TEST;

/* ---- systemd socket activation ---- */

/* systemd-socket-activate holds the port (a .socket unit's
 * ListenStream=) and starts the runner when a client connects; the runner
 * serves on that socket (it cannot bind the port itself), also after a
 * changed reload, where the client switches to the new pipeline; a second
 * socket that no spicesink has is reported */
GST_START_TEST (test_socket_activation)
{
  gchar *sa = g_find_program_in_path ("systemd-socket-activate");
  guint port = test_pick_free_port ();
  gchar *listen = g_strdup_printf ("127.0.0.1:%u", port);
  guint unused_port = test_pick_free_port ();
  gchar *unused = NULL;
  gchar *ps = g_strdup_printf ("%u", port), *needle;
  gchar *runner = runner_process_binary ();
  gchar *serve = runner_process_shipped_pipeline ("serve-test");
  gchar *env = g_build_filename (tmpdir, "activated.conf", NULL);
  gchar *text = g_strdup_printf ("PIPELINE=%s\nLISTEN_PORT=%u\nWIDTH=320\n"
      "HEIGHT=200\nFPS=10\n", serve, port);
  gchar *tc = g_build_filename (g_getenv ("GST_SPICE_BUILD_DIR"), "tests",
      "common", "spice-test-client", NULL);
  /* systemd-socket-activate passes only the -E variables: the
   * sanitizers' options too (without them LeakSanitizer, on by default,
   * fails the runner's exit on GLib's one-time allocations) */
  const gchar *argv[] = { sa, "-l", listen, "-l", unused, "-E",
    "GST_PLUGIN_PATH_1_0", "-E",
    "GST_PLUGIN_SYSTEM_PATH_1_0", "-E", "GST_REGISTRY_1_0", "-E",
    "ASAN_OPTIONS", "-E", "UBSAN_OPTIONS", "-E", "GST_REGISTRY_FORK", runner,
    "--stats-interval", "0", "--env-file", env, NULL
  };
  const gchar *client_argv[] = { tc, "-p", ps, "--duration-ms", "600000",
    "--timeout", "600", NULL
  };
  RunnerProcess *run, *client;
  gchar *log;
  gint code;

  if (!sa) {
    g_printerr ("SKIP: systemd-socket-activate not installed\n");
    goto out;
  }
  while (unused_port == port)
    unused_port = test_pick_free_port ();
  unused = g_strdup_printf ("127.0.0.1:%u", unused_port);
  argv[4] = unused;
  fail_unless (g_file_set_contents (env, text, -1, NULL));
  run = runner_process_start (tmpdir, argv, NULL);
  fail_unless (runner_process_wait_log (run, "Listening on", 1, 10000));
  fail_if (runner_process_wait_log (run, "gst-spice-run:", 1, 500),
      "started before a client came");
  /* the client's connection starts it */
  client = runner_process_start (tmpdir, client_argv, NULL);
  needle = g_strdup_printf ("socket activation: listening socket "
      "127.0.0.1 port %u", port);
  fail_unless (runner_process_wait_log (run, needle, 1,
          30000 * test_time_factor ()), "%s", runner_process_log (run));
  g_free (needle);
  fail_unless (runner_process_wait_log (client, "MARK", 1,
          30000 * test_time_factor ()), "%s", runner_process_log (run));
  needle = g_strdup_printf ("warning: socket activation: no spicesink "
      "listens on 127.0.0.1:%u", unused_port);
  fail_unless (runner_process_wait_log (run, needle, 1, 1000), "%s",
      runner_process_log (run));
  g_free (needle);

  /* a changed reload: the same socket, the client follows */
  g_free (text);
  text = g_strdup_printf ("PIPELINE=%s\nLISTEN_PORT=%u\nWIDTH=320\n"
      "HEIGHT=200\nFPS=15\n", serve, port);
  fail_unless (g_file_set_contents (env, text, -1, NULL));
  runner_process_signal (run, SIGHUP);
  fail_unless (runner_process_wait_log (run,
          "1 client(s) asked to reconnect", 1, 15000 * test_time_factor ()),
      "%s", runner_process_log (run));
  fail_unless (runner_process_wait_log (client, "MARK", 2,
          30000 * test_time_factor ()), "%s", runner_process_log (client));
  fail_unless (runner_process_is_running (client));
  log = runner_process_log (client);
  fail_if (strstr (log, "SESSION-DISCONNECTED") != NULL, "%s", log);
  g_free (log);

  runner_process_signal (run, SIGTERM);
  code = runner_process_wait_exit (run, 20000);
  if (code != 0) {
    log = runner_process_log (run);
    g_printerr ("%s\n", log);
    g_free (log);
  }
  fail_unless_equals_int (code, 0);
  runner_process_free (client);
  runner_process_free (run);
out:
  g_free (sa);
  g_free (listen);
  g_free (unused);
  g_free (ps);
  g_free (runner);
  g_free (serve);
  g_free (env);
  g_free (text);
  g_free (tc);
}

GST_END_TEST;

static Suite *
runner_reload_suite (void)
{
  Suite *s = suite_create ("runner-reload");
  TCase *tc = tcase_create ("reload");

  tcase_set_timeout (tc, 300);
  tcase_add_checked_fixture (tc, tmpdir_setup, tmpdir_teardown);
  /* plain, TLS */
  tcase_add_loop_test (tc, test_reload_keeps_spicegtk_session, 0, 2);
  tcase_add_test (tc, test_reload_keeps_remote_viewer);
  tcase_add_test (tc, test_socket_activation);
  suite_add_tcase (s, tc);
  return s;
}

GST_CHECK_MAIN (runner_reload);
