/* Fair admission and the security events in the runner's log, against the
 * shipped transcode-lossless pipeline with PASSWORD set, the real test
 * guest and spicy-screenshot (spice-gtk).
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One source address (127.0.0.9: Linux loopback takes all of 127/8) holds
 * 400 idle connections and 100 that send a byte a second, reconnecting
 * whatever the server closes; a client from 127.0.0.1 with the right
 * ticket must still get the guest's exact picture within 2 s. The
 * flooder's connections are refused or closed, the runner's log has one
 * line per event class with its reason, the metrics count them as the
 * sink does, and the shipped fail2ban filter matches exactly those lines.
 *
 * ADMISSION_SINK_EXTRA (e.g. "max-links-per-source=0") adds properties to
 * the pipeline's spicesink, to show that the test fails without the
 * per-source limit.
 */
#include <gst/check/gstcheck.h>
#include <poll.h>
#include <stdio.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>

#include "guest-launcher.h"
#include "guest-render.h"
#include "ppm.h"
#include "prom-strict.h"
#include "runner-process.h"
#include "spice-raw-client.h"

#define FLOOD_ADDR "127.0.0.9"
#define N_IDLE 400
#define N_SLOW 100
#define TICKET "adm-Secret-7"
#define PICTURE_BOUND_US (2 * G_USEC_PER_SEC)

TEST_TMPDIR_FIXTURE (tmpdir, "gst-spice-admission");

/* ---- the flooder (its own thread) ---- */

typedef struct
{
  guint16 port;
  GSocket *socks[N_IDLE + N_SLOW];
  gint stop;                    /* atomic */
  gint passes;                  /* atomic: rounds done */
  gint opened;                  /* atomic: connects that succeeded */
  gint closed;                  /* atomic: closed by the server */
  gint open_after_first;        /* the fewest still open one second after
                                 * a round (at load the server may take
                                 * longer than a second to accept and
                                 * refuse 500 connects: each round is
                                 * another look) */
  GThread *thread;
} Flood;

/* whether the server closed @s (EOF or reset), without waiting */
static gboolean
peer_closed (GSocket * s)
{
  struct pollfd p = { g_socket_get_fd (s), POLLIN, 0 };
  gchar buf[64];

  if (poll (&p, 1, 0) <= 0)
    return FALSE;
  return recv (g_socket_get_fd (s), buf, sizeof (buf), MSG_DONTWAIT) <= 0;
}

static gpointer
flood_thread (gpointer data)
{
  Flood *f = data;
  static const gchar header[] = "REDQ";
  guint i, pass = 0;

  while (!g_atomic_int_get (&f->stop)) {
    gint64 next = g_get_monotonic_time () + G_USEC_PER_SEC;

    for (i = 0; i < G_N_ELEMENTS (f->socks); i++) {
      if (f->socks[i] && peer_closed (f->socks[i])) {
        g_atomic_int_inc (&f->closed);
        spice_raw_tcp_close (&f->socks[i]);
      }
      if (pass >= 1 && i == 0) {
        gint j, open = 0;

        for (j = 0; j < (gint) G_N_ELEMENTS (f->socks); j++)
          open += f->socks[j] != NULL && !peer_closed (f->socks[j]);
        if (pass == 1 || open < f->open_after_first)
          f->open_after_first = open;
      }
      /* an attacker reconnects what was closed */
      if (!f->socks[i] && (f->socks[i] = spice_raw_tcp_connect_from (FLOOD_ADDR, f->port, 3)))
        g_atomic_int_inc (&f->opened);
      /* slowloris: one byte a second of a link header */
      if (f->socks[i] && i >= N_IDLE)
        g_socket_send (f->socks[i], header + pass % 4, 1, NULL, NULL);
    }
    pass++;
    g_atomic_int_set (&f->passes, pass);
    while (!g_atomic_int_get (&f->stop) && g_get_monotonic_time () < next)
      g_usleep (20000);
  }
  for (i = 0; i < G_N_ELEMENTS (f->socks); i++)
    spice_raw_tcp_close (&f->socks[i]);
  return NULL;
}

/* ---- helpers ---- */

static gboolean
shot_exact (guint port, const gchar * ticket, const guint8 * expected,
    gint64 * took_us, gchar ** why)
{
  GError *err = NULL;
  guint8 *shot = NULL;
  gint w = 0, h = 0;
  gint64 t0 = g_get_monotonic_time ();
  gboolean ok;

  ok = test_spicy_screenshot ("127.0.0.1", port, ticket, 20, &shot, &w, &h,
      &err);
  *took_us = g_get_monotonic_time () - t0;
  if (!ok) {
    *why = g_strdup (err->message);
    g_clear_error (&err);
    return FALSE;
  }
  ok = w == GUEST_DEFAULT_WIDTH && h == GUEST_DEFAULT_HEIGHT &&
      test_bgrx_count_diff (shot, w * 4, expected, w * 4, w, h, NULL,
      NULL) == 0;
  *why = ok ? NULL : g_strdup_printf ("picture %dx%d differs", w, h);
  g_free (shot);
  return ok;
}

/* lines of @log that hold every one of the NULL-terminated strings */
static guint
count_lines (const gchar * log, const gchar * first, ...)
{
  gchar **lines = g_strsplit (log, "\n", -1);
  guint n = 0, i;

  for (i = 0; lines[i]; i++) {
    const gchar *s;
    gboolean all = TRUE;
    va_list ap;

    va_start (ap, first);
    for (s = first; s && all; s = va_arg (ap, const gchar *))
      all = strstr (lines[i], s) != NULL;
    va_end (ap);
    n += all;
  }
  g_strfreev (lines);
  return n;
}

/* the metrics, parsed strictly; the event counters' samples printed */
static GHashTable *
scrape_events (guint port)
{
  gchar *resp = test_http_get (port, "/metrics"), *body, *error = NULL;
  gchar **lines;
  GHashTable *series;
  guint i;

  fail_unless (resp != NULL && (body = strstr (resp, "\r\n\r\n")));
  series = prom_strict_parse (body + 4, &error);
  fail_unless (series != NULL, "%s in:\n%s", error, body + 4);
  lines = g_strsplit (body + 4, "\n", -1);
  for (i = 0; lines[i]; i++)
    if (g_str_has_prefix (lines[i], "gst_spice_run_events_total"))
      g_print ("METRIC %s\n", lines[i]);
  g_strfreev (lines);
  g_free (resp);
  return series;
}

/* prints the event lines of @log (the docs show them) */
static void
print_events (const gchar * log)
{
  gchar **lines = g_strsplit (log, "\n", -1);
  guint i;

  for (i = 0; lines[i]; i++)
    if (strstr (lines[i], "gst-spice-run: security: ") ||
        strstr (lines[i], "gst-spice-run: health: "))
      g_print ("EVENT %s\n", lines[i]);
  g_strfreev (lines);
}

static gdouble
series_value (GHashTable * m, const gchar * key)
{
  gdouble *v = g_hash_table_lookup (m, key);

  return v ? *v : -1;
}

/* fail2ban-regex's "Lines: N lines, I ignored, M matched" of @log with
 * the shipped filter; -1 if it did not run */
static gint
fail2ban_matched (const gchar * log_path, gchar ** out)
{
  gchar *filter = g_build_filename (g_getenv ("GST_SPICE_SOURCE_DIR"),
      "tools", "fail2ban", "gst-spice.conf", NULL);
  const gchar *argv[] = { "fail2ban-regex", "--print-all-matched", log_path,
    filter, NULL
  };
  gint status = 0, matched = -1;
  guint lines, ignored;
  gchar *err = NULL;
  const gchar *p;

  if (g_spawn_sync (NULL, (gchar **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL,
          NULL, out, &err, &status, NULL) && (p = strstr (*out, "Lines: ")))
    if (sscanf (p, "Lines: %u lines, %u ignored, %d matched", &lines,
            &ignored, &matched) != 3)
      matched = -1;
  if (matched < 0)
    GST_WARNING ("fail2ban-regex: %s %s", *out ? *out : "", err ? err : "");
  g_free (err);
  g_free (filter);
  return matched;
}

/* ---- the test ---- */

GST_START_TEST (test_one_source_cannot_lock_out_the_rest)
{
  const gchar *guest_args[] = { "--activity", "idle", NULL };
  const gchar *extra = g_getenv ("ADMISSION_SINK_EXTRA");
  GError *err = NULL;
  GuestProcess *gp = guest_process_start (guest_args, &err);
  guint port = test_pick_free_port (), mport = test_pick_free_port ();
  gchar *path = runner_process_shipped_pipeline ("transcode-lossless");
  gchar *uri, *upstream, *listen, *maddr, *line, *log, *why = NULL, *f2b;
  gchar *key_refused, *key_sink;
  guint8 *expected;
  RunnerProcess *run;
  Flood flood = { 0, };
  SpiceRawConn *c;
  GHashTable *m;
  gint64 took, base_took = 0, end;
  guint32 lerr = 0;
  gint matched;
  guint expect_matched;
  gboolean ok;

  fail_unless (gp != NULL, "%s", err ? err->message : "");
  guest_process_command (gp, "key");
  line = guest_process_wait_line (gp, "box 1", GUEST_LINE_TIMEOUT_MS);
  fail_unless (line != NULL);
  g_free (line);
  expected = guest_render_frame_new (GUEST_DEFAULT_WIDTH,
      GUEST_DEFAULT_HEIGHT, 1, 1, GUEST_ACTIVITY_IDLE, GUEST_FRAME_NONE);

  if (extra && *extra) {
    gchar *text = NULL, *patched, **parts;

    fail_unless (g_file_get_contents (path, &text, NULL, NULL));
    parts = g_strsplit (text, "! spicesink name=s ", 2);
    fail_unless (parts[1] != NULL);
    patched = g_strdup_printf ("%s! spicesink name=s %s %s", parts[0], extra,
        parts[1]);
    g_free (path);
    path = g_build_filename (tmpdir, "transcode-lossless.pipeline", NULL);
    fail_unless (g_file_set_contents (path, patched, -1, NULL));
    g_print ("spicesink with %s\n", extra);
    g_strfreev (parts);
    g_free (patched);
    g_free (text);
  }
  uri = guest_process_get_uri (gp);
  upstream = g_strdup_printf ("UPSTREAM=%s", uri);
  listen = g_strdup_printf ("LISTEN_PORT=%u", port);
  maddr = g_strdup_printf ("127.0.0.1:%u", mport);
  run = runner_process_start_runner (tmpdir, "--stats-interval", "0",
      "--metrics", maddr, "-D", upstream, "-D", listen, "-D",
      "PASSWORD=" TICKET, path, NULL);
  fail_unless (runner_process_wait_log (run, "playing", 1, 60000));

  /* before the flood: the exact picture with the ticket */
  end = g_get_monotonic_time () + 60 * G_USEC_PER_SEC;
  do {
    g_clear_pointer (&why, g_free);
    ok = shot_exact (port, TICKET, expected, &base_took, &why);
  } while (!ok && g_get_monotonic_time () < end && (g_usleep (300000), 1));
  fail_unless (ok, "no exact picture before the flood: %s", why);

  /* the flood: 400 idle + 100 slowloris from one address, reconnecting */
  flood.port = port;
  flood.thread = g_thread_new ("flood", flood_thread, &flood);
  end = g_get_monotonic_time () + 30 * G_USEC_PER_SEC;
  while (g_atomic_int_get (&flood.passes) < 2 &&
      g_get_monotonic_time () < end)
    g_usleep (50000);
  fail_unless (g_atomic_int_get (&flood.passes) >= 2);
  g_print ("flood from " FLOOD_ADDR ": %d connects, %d closed by the server, "
      "%d of %d still open one second after a round (the fewest so far)\n",
      g_atomic_int_get (&flood.opened), g_atomic_int_get (&flood.closed),
      flood.open_after_first, N_IDLE + N_SLOW);
  fail_unless (g_atomic_int_get (&flood.opened) >= N_IDLE + N_SLOW);

  /* a client from another address gets in, at once */
  ok = shot_exact (port, TICKET, expected, &took, &why);
  g_print ("RESULT client from 127.0.0.1 during the flood: %s in %.2f s "
      "(%.2f s before the flood)\n", ok ? "exact picture" : why,
      took / 1e6, base_took / 1e6);
  fail_unless (ok, "no exact picture during the flood: %s", why);
  fail_unless (took <= PICTURE_BOUND_US * test_time_factor (),
      "the picture took %.2f s during the flood", took / 1e6);

  /* the flooder's connections in the link stage time out (10 s) */
  fail_unless (runner_process_wait_log (run, "security: event=handshake-"
          "timeout peer=" FLOOD_ADDR, 1, 20000 * test_time_factor ()));
  g_atomic_int_set (&flood.stop, 1);
  g_thread_join (flood.thread);
  g_print ("flood stopped: %d connects, %d closed by the server\n",
      g_atomic_int_get (&flood.opened), g_atomic_int_get (&flood.closed));
  /* refused or closed: all but the few the source may hold */
  fail_unless (flood.open_after_first <= 8, "%d flood connections held",
      flood.open_after_first);
  fail_unless (g_atomic_int_get (&flood.closed) >= N_IDLE + N_SLOW - 8);
  /* the server sees the flooder's sockets close */
  g_usleep (500 * 1000);

  /* the same source: a wrong ticket and a wrong magic */
  c = spice_raw_connect_from (FLOOD_ADDR, port, 3);
  fail_unless (c != NULL);
  fail_unless (spice_raw_link (c, 0, SPICE_CHANNEL_MAIN, 0, 0, "wrong", &lerr));
  fail_unless_equals_int (c->link_result, SPICE_LINK_ERR_PERMISSION_DENIED);
  spice_raw_close (c);
  c = spice_raw_connect_from (FLOOD_ADDR, port, 3);
  fail_unless (c != NULL);
  /* an SSH client on the wrong port (an HTTP GET is a WebSocket upgrade,
   * refused as ws-upgrade: tests/html5) */
  g_socket_send (c->sock, "SSH-2.0-OpenSSH_9.2\r\n", 21, NULL, NULL);
  fail_unless (spice_raw_wait_closed (c, 5000));
  spice_raw_close (c);
  fail_unless (runner_process_wait_log (run, "security: event=wrong-ticket "
          "peer=" FLOOD_ADDR, 1, 10000));
  fail_unless (runner_process_wait_log (run, "security: event=bad-message "
          "peer=" FLOOD_ADDR, 1, 10000));
  /* the suppressed refusals are posted within a second or two */
  g_usleep (2500 * 1000);

  /* the metrics count what the sink counted, suppressed lines included */
  m = scrape_events (mport);
  key_refused = g_strdup ("gst_spice_run_events_total{class=\"security\","
      "element=\"s\",event=\"refused\",reason=\"max-links-per-source\"}");
  key_sink = g_strdup ("gst_spice_spicesink_refused_source_links_total"
      "{element=\"s\"}");
  g_print ("RESULT events_total refused/max-links-per-source %.0f, sink "
      "refused-source-links %.0f, wrong-ticket %.0f\n",
      series_value (m, key_refused), series_value (m, key_sink),
      series_value (m, "gst_spice_run_events_total{class=\"security\","
          "element=\"s\",event=\"wrong-ticket\",reason=\"wrong-password\"}"));
  fail_unless (series_value (m, key_refused) > 0);
  fail_unless (series_value (m, key_refused) == series_value (m, key_sink));
  fail_unless (series_value (m, "gst_spice_run_events_total{class="
          "\"security\",element=\"s\",event=\"wrong-ticket\",reason="
          "\"wrong-password\"}") == 1);
  g_hash_table_unref (m);

  runner_process_signal (run, SIGTERM);
  fail_unless_equals_int (runner_process_wait_exit (run, 20000), 0);
  log = runner_process_log (run);
  print_events (log);
  /* one line per event class with its reason, and rate limited: a few
   * lines for thousands of refusals */
  fail_unless (count_lines (log, "gst-spice-run: security: event=refused "
          "peer=" FLOOD_ADDR " element=s reason=max-links-per-source limit=8 "
          "suppressed=", NULL) >= 1, "%s", log);
  fail_unless (count_lines (log, "event=refused", NULL) <= 4 * 40);
  fail_unless (count_lines (log, "event=handshake-timeout peer=" FLOOD_ADDR
          " element=s reason=handshake-timeout limit=10000", NULL) >= 1);
  fail_unless (count_lines (log, "event=wrong-ticket peer=" FLOOD_ADDR
          " element=s reason=wrong-password", NULL) == 1);
  fail_unless (count_lines (log, "event=bad-message peer=" FLOOD_ADDR
          " element=s reason=wrong-magic", NULL) == 1);
  /* the legitimate client caused none */
  fail_unless_equals_int (count_lines (log, "security:", "peer=127.0.0.1 ",
          NULL), 0);

  /* fail2ban: the shipped filter matches the lines that should ban
   * (everything of the flooder but refusals for a full server) */
  expect_matched = count_lines (log, "security: event=", "peer="
      FLOOD_ADDR " ", NULL) - count_lines (log, "security: event=refused",
      "reason=max-pending-links", NULL);
  f2b = NULL;
  matched = fail2ban_matched (run->log_path, &f2b);
  g_print ("RESULT fail2ban-regex: %d of the %u security lines of "
      FLOOD_ADDR " matched\n", matched, expect_matched);
  fail_unless (matched >= 0, "fail2ban-regex did not run (package "
      "fail2ban): %s", f2b ? f2b : "");
  fail_unless_equals_int (matched, expect_matched);
  fail_unless (expect_matched >= 4);

  g_free (f2b);
  g_free (log);
  g_free (key_refused);
  g_free (key_sink);
  runner_process_free (run);
  guest_process_stop (gp);
  g_free (expected);
  g_free (why);
  g_free (uri);
  g_free (upstream);
  g_free (listen);
  g_free (maddr);
  g_free (path);
}

GST_END_TEST;

/* ---- every event class: one line each ---- */

#define COMMON_CAPS 0x0d        /* AUTH_SELECTION, AUTH_SASL, MINI_HEADER */

/* the test guest on a fixed port (it comes back on the same one) */
static GSubprocess *
guest_on_port (guint port)
{
  gchar *bin = guest_process_find_binary ();
  gchar *port_str = g_strdup_printf ("%u", port);
  const gchar *argv[] = { bin, "--port", port_str, "--activity", "busy",
    NULL
  };
  GSubprocess *p = g_subprocess_newv (argv, G_SUBPROCESS_FLAGS_STDIN_PIPE |
      G_SUBPROCESS_FLAGS_STDOUT_SILENCE, NULL);

  fail_unless (p != NULL);
  fail_unless (spice_raw_tcp_wait_listen (port, 30000),
      "the guest does not listen on %u", port);
  g_free (port_str);
  g_free (bin);
  return p;
}

static void
guest_kill (GSubprocess * p)
{
  g_subprocess_send_signal (p, SIGTERM);
  g_subprocess_wait (p, NULL, NULL);
  g_object_unref (p);
}

GST_START_TEST (test_every_event_class_is_one_line)
{
  guint gport = test_pick_free_port (), port = test_pick_free_port ();
  guint tport = test_pick_free_port ();
  const gchar *ossl[] = { "req", "-x509", "-newkey", "rsa:2048", "-nodes",
    "-keyout", "key.pem", "-out", "cert.pem", "-days", "2", "-subj",
    "/CN=localhost", NULL
  };
  GSubprocess *guest = guest_on_port (gport);
  gchar *text, *file, *log, **lines, *f2b = NULL;
  GSocket *silent[3];
  SpiceRawSession *idle, *stalled;
  SpiceRawConn *c;
  RunnerProcess *run;
  gint rcv = 4096, matched;
  guint i, n_ban = 0;
  gint64 end;
  static const gchar *const classes[] = {
    "security: event=refused peer=127.0.0.9 element=s "
        "reason=max-links-per-source limit=2",
    "security: event=handshake-timeout peer=127.0.0.9 element=s "
        "reason=handshake-timeout limit=1500",
    "security: event=wrong-ticket peer=127.0.0.10 element=s "
        "reason=wrong-password",
    "security: event=tls-failure peer=127.0.0.11 element=s reason=handshake",
    "security: event=bad-message peer=127.0.0.1 element=s "
        "reason=unexpected-type type=999 size=0",
    "health: event=idle-close peer=127.0.0.1 element=s reason=idle-timeout "
        "limit=3000",
    "health: event=stalled-close peer=127.0.0.1 element=s "
        "reason=stall-timeout limit=20000",
    "health: event=upstream-lost peer=127.0.0.1 element=src reason=lost",
    "health: event=upstream-reconnected peer=127.0.0.1 element=src "
        "reason=connected",
  };

  fail_unless (test_run_openssl (tmpdir, ossl));
  text = g_strdup_printf ("spicesrc name=src uri=spice://127.0.0.1:%u "
      "reconnect=always reconnect-interval=300\n"
      "  ! spicetiler name=t streaming=off\n"
      "  ! spicesink name=s port=%u tls-port=%u tls-cert-file=%s/cert.pem "
      "tls-key-file=%s/key.pem password=" TICKET " handshake-timeout=1500 "
      "idle-timeout=3000 max-links-per-source=2\n", gport, port, tport,
      tmpdir, tmpdir);
  file = g_build_filename (tmpdir, "events.pipeline", NULL);
  fail_unless (g_file_set_contents (file, text, -1, NULL));
  run = runner_process_start_runner (tmpdir, "--stats-interval", "0", file,
      NULL);
  fail_unless (runner_process_wait_log (run, "playing", 1, 60000));

  /* stalled: reads nothing, sends an ACK every 500 ms (not idle) */
  stalled = spice_raw_session_new (port, TICKET, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (stalled != NULL);
  setsockopt (g_socket_get_fd (stalled->display->sock), SOL_SOCKET,
      SO_RCVBUF, &rcv, sizeof (rcv));
  /* idle: sends nothing */
  idle = spice_raw_session_new (port, TICKET, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (idle != NULL);

  /* refused and handshake-timeout: 3 silent links, 2 allowed */
  for (i = 0; i < 3; i++) {
    silent[i] = spice_raw_tcp_connect_from (FLOOD_ADDR, port, 3);
    fail_unless (silent[i] != NULL);
  }
  /* wrong ticket */
  c = spice_raw_connect_from ("127.0.0.10", port, 3);
  fail_unless (c != NULL);
  fail_unless (spice_raw_link (c, 0, SPICE_CHANNEL_MAIN, COMMON_CAPS, 0,
          "wrong", NULL));
  spice_raw_close (c);
  /* TLS failure: plain bytes to the TLS port */
  c = spice_raw_connect_from ("127.0.0.11", tport, 3);
  fail_unless (c != NULL);
  g_socket_send (c->sock, "REDQ plain text, not TLS\r\n\r\n", 28, NULL, NULL);
  spice_raw_wait_closed (c, 5000);
  spice_raw_close (c);
  /* bad message: a linked main channel sends type 999 */
  c = spice_raw_connect (port, 5);
  fail_unless (c != NULL);
  fail_unless (spice_raw_link (c, 0, SPICE_CHANNEL_MAIN, COMMON_CAPS, 0,
          TICKET, NULL));
  fail_unless_equals_int (c->link_result, SPICE_LINK_ERR_OK);
  fail_unless (spice_raw_send_msg (c, 999, NULL, 0));
  fail_unless (spice_raw_wait_closed (c, 5000));
  spice_raw_close (c);
  /* upstream lost and back on the same port */
  guest_kill (guest);
  fail_unless (runner_process_wait_log (run, "health: event=upstream-lost",
          1, 20000));
  guest = guest_on_port (gport);
  fail_unless (runner_process_wait_log (run, "health: event=upstream-"
          "reconnected", 1, 30000));

  end = g_get_monotonic_time () + 40 * G_USEC_PER_SEC;
  while (!runner_process_wait_log (run, "event=stalled-close", 1, 500) &&
      g_get_monotonic_time () < end)
    spice_raw_send_msg (stalled->display, SPICE_MSGC_ACK, NULL, 0);
  for (i = 0; i < G_N_ELEMENTS (classes); i++)
    fail_unless (runner_process_wait_log (run, classes[i], 1, 10000),
        "no line with: %s", classes[i]);

  runner_process_signal (run, SIGTERM);
  fail_unless_equals_int (runner_process_wait_exit (run, 20000), 0);
  log = runner_process_log (run);
  lines = g_strsplit (log, "\n", -1);
  print_events (log);
  for (i = 0; lines[i]; i++) {
    if (strstr (lines[i], "gst-spice-run: security: ") &&
        !strstr (lines[i], "reason=max-pending-links") &&
        !strstr (lines[i], "reason=max-clients") &&
        !strstr (lines[i], "reason=max-sessions-per-source"))
      n_ban++;
  }
  matched = fail2ban_matched (run->log_path, &f2b);
  g_print ("RESULT fail2ban-regex: %d matched, %u security lines to ban\n",
      matched, n_ban);
  fail_unless_equals_int (matched, n_ban);

  g_strfreev (lines);
  g_free (log);
  g_free (f2b);
  for (i = 0; i < 3; i++)
    spice_raw_tcp_close (&silent[i]);
  spice_raw_session_free (idle);
  spice_raw_session_free (stalled);
  runner_process_free (run);
  guest_kill (guest);
  g_free (file);
  g_free (text);
}

GST_END_TEST;

/* IPv6: a /64 is one source (::1 counts as ::/64), and the element's own
 * message has the fields the runner prints */
GST_START_TEST (test_ipv6_prefix_is_one_source)
{
  GstElement *pipe = gst_parse_launch ("videotestsrc is-live=true ! "
      "video/x-raw,format=BGRx,width=64,height=48 ! spicetiler ! "
      "spicesink name=s address=::1 port=0 max-links-per-source=1", NULL);
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipe), "s");
  GstBus *bus = gst_element_get_bus (pipe);
  GSocketClient *client = g_socket_client_new ();
  GSocketConnection *c[2];
  const GstStructure *st = NULL;
  GstMessage *msg = NULL;
  gint port = -1, i;
  gint64 end;

  fail_unless (pipe != NULL && sink != NULL);
  fail_unless (gst_element_set_state (pipe, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  g_object_get (sink, "bound-port", &port, NULL);
  fail_unless (port > 0);
  for (i = 0; i < 2; i++) {
    c[i] = g_socket_client_connect_to_host (client, "::1", port, NULL, NULL);
    fail_unless (c[i] != NULL);
  }
  end = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
  while (!st && g_get_monotonic_time () < end) {
    gst_clear_message (&msg);
    msg = gst_bus_timed_pop_filtered (bus, 100 * GST_MSECOND,
        GST_MESSAGE_ELEMENT);
    if (msg && gst_structure_has_name (gst_message_get_structure (msg),
            "spice-security"))
      st = gst_message_get_structure (msg);
  }
  fail_unless (st != NULL, "no spice-security message");
  GST_INFO ("%" GST_PTR_FORMAT, st);
  fail_unless_equals_string (gst_structure_get_string (st, "event"),
      "refused");
  fail_unless_equals_string (gst_structure_get_string (st, "reason"),
      "max-links-per-source");
  fail_unless_equals_string (gst_structure_get_string (st, "peer"), "::1");
  fail_unless_equals_string (gst_structure_get_string (st, "source"),
      "::/64");
  gst_message_unref (msg);
  for (i = 0; i < 2; i++)
    g_object_unref (c[i]);
  g_object_unref (client);
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (sink);
  gst_object_unref (pipe);
}

GST_END_TEST;

/* The fail2ban filter shown in docs/operator-guide.md is the shipped one */
GST_START_TEST (test_documented_filter_is_shipped)
{
  const gchar *src = g_getenv ("GST_SPICE_SOURCE_DIR");
  gchar *fpath = g_build_filename (src, "tools", "fail2ban", "gst-spice.conf",
      NULL);
  gchar *gpath = g_build_filename (src, "docs", "operator-guide.md", NULL);
  gchar *filter = NULL, *guide = NULL;

  fail_unless (g_file_get_contents (fpath, &filter, NULL, NULL));
  fail_unless (g_file_get_contents (gpath, &guide, NULL, NULL));
  fail_unless (strstr (guide, filter) != NULL,
      "docs/operator-guide.md does not show tools/fail2ban/gst-spice.conf");
  g_free (filter);
  g_free (guide);
  g_free (fpath);
  g_free (gpath);
}

GST_END_TEST;

static Suite *
admission_suite (void)
{
  Suite *s = suite_create ("admission");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 120);
  tcase_add_checked_fixture (tc, tmpdir_setup, tmpdir_teardown);
  tcase_add_test (tc, test_documented_filter_is_shipped);
  tcase_add_test (tc, test_ipv6_prefix_is_one_source);
  tcase_add_test (tc, test_one_source_cannot_lock_out_the_rest);
  tcase_add_test (tc, test_every_event_class_is_one_line);
  suite_add_tcase (s, tc);
  return s;
}

GST_CHECK_MAIN (admission);
