/* tests/hardening: no client reset takes the gateway down. The shipped
 * transcode-vp8 pipeline (gst-spice-run) in front of the test guest; for
 * each channel type the sink serves (main, display, inputs, cursor, and
 * playback and record: the pipeline links the audio branch), a raw client
 * resets the connection (RST: SO_LINGER {1, 0}, then close) after the link
 * message, after the ticket, after a message header and inside a body,
 * with connection id 0 and with a live session's id, 100 times each.
 * gst-spice-run stays alive, the live session's main channel stays open
 * and answers its PINGs, the service log holds nothing worse than
 * warnings, and spicy-screenshot then gets the guest's exact picture.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <gst/check/gstcheck.h>
#include <signal.h>
#include <string.h>

#include "guest-launcher.h"
#include "ppm.h"
#include "runner-process.h"
#include "spice-raw-client.h"

#define ATTEMPTS 100

typedef enum
{
  AFTER_LINK,                   /* link header + message sent */
  AFTER_TICKET,                 /* auth mechanism + ticket sent */
  AFTER_HEADER,                 /* linked (or refused): a message header */
  IN_BODY,                      /* ... and part of its body */
  N_POINTS
} ResetPoint;

static const gchar *point_names[N_POINTS] = {
  "after the link message", "after the ticket", "after a message header",
  "inside a body"
};

/* a client message of each channel with a nonzero body */
static const struct
{
  guint8 type;
  const gchar *name;
  guint16 msg;
} channels[] = {
  {SPICE_CHANNEL_MAIN, "main", SPICE_MSGC_MAIN_CLIENT_INFO},
  {SPICE_CHANNEL_DISPLAY, "display", SPICE_MSGC_DISPLAY_INIT},
  {SPICE_CHANNEL_INPUTS, "inputs", SPICE_MSGC_INPUTS_MOUSE_POSITION},
  {SPICE_CHANNEL_CURSOR, "cursor", SPICE_MSGC_PONG},
  {SPICE_CHANNEL_PLAYBACK, "playback", SPICE_MSGC_PONG},
  {SPICE_CHANNEL_RECORD, "record", SPICE_MSGC_RECORD_DATA},
};

TEST_TMPDIR_FIXTURE (tmpdir, "gst-spice-reset");

/* What one reset connection saw before it reset. */
typedef struct
{
  gboolean connected;
  gboolean replied;             /* the link reply came (error 0) */
  gint result;                  /* the link result; -1: none read */
} Outcome;

/* One hostile client on @port: links channel @ch with @id up to @point and
 * resets the connection there. AFTER_LINK resets before the reply on even
 * attempts and right after it on odd ones; AFTER_HEADER and IN_BODY send
 * their header (and half the body) whatever the link result was. */
static Outcome
reset_once (guint16 port, guint ch, ResetPoint point, guint32 id,
    guint attempt, guint timeout_ms)
{
  Outcome o = { FALSE, FALSE, -1 };
  SpiceRawConn *c = spice_raw_connect (port, timeout_ms / 1000);
  TestWireLinkReply r;
  guint8 buf[64] = { 0, };
  guint32 size;
  gsize hs;

  if (!c)
    return o;
  o.connected = TRUE;
  if (!spice_raw_link_send_mess (c, id, channels[ch].type,
          SPICE_RAW_COMMON_CAPS, 0) || (point == AFTER_LINK
          && attempt % 2 == 0))
    goto out;
  if (!spice_raw_link_read_reply (c, &r, timeout_ms) || r.error)
    goto out;
  o.replied = TRUE;
  if (point == AFTER_LINK || !spice_raw_link_send_ticket (c, &r, NULL) ||
      point == AFTER_TICKET || !spice_raw_link_read_result (c, timeout_ms))
    goto out;
  o.result = c->link_result;
  fail_unless (gst_spice_wire_client_msg_limits (channels[ch].type,
          channels[ch].msg, &size, NULL) && size > 0 && size <= 32);
  hs = gst_spice_wire_header_size (c->mini);
  gst_spice_wire_put_header (buf, c->mini, 1, channels[ch].msg, size);
  /* a refused link was closed by the sink: the send may fail */
  spice_raw_send (c, buf, hs + (point == IN_BODY ? (size + 1) / 2 : 0));
out:
  spice_raw_reset (c);
  return o;
}

/* Reads what the live session's main channel has for up to @wait_ms,
 * answering each PING with its PONG, until @pings_wanted PINGs came (0:
 * until nothing is left). FALSE when the channel was closed. */
static gboolean
serve_main (SpiceRawConn * m, guint wait_ms, guint pings_wanted, guint * pings)
{
  gint64 end = g_get_monotonic_time () + wait_ms * (gint64) 1000;
  guint got = 0;

  for (;;) {
    gint64 left = end - g_get_monotonic_time ();
    guint16 type;
    guint8 *body;
    gsize size;
    gboolean ok = TRUE;

    if (pings_wanted && got >= pings_wanted)
      return TRUE;
    if (!g_socket_condition_timed_wait (m->sock, G_IO_IN, MAX (left, 0),
            NULL, NULL))
      return TRUE;
    if (!spice_raw_read_msg (m, 10000, &type, &body, &size))
      return FALSE;
    if (type == SPICE_MSG_PING) {
      ok = spice_raw_send_msg (m, SPICE_MSGC_PONG, body, size);
      got++;
      (*pings)++;
    }
    g_free (body);
    if (!ok)
      return FALSE;
  }
}

/* @run is gone (or goes within a few seconds): how it ended */
static gchar *
describe_death (RunnerProcess * run)
{
  gint64 end = g_get_monotonic_time () + 5 * G_USEC_PER_SEC;
  GSubprocess *p = run->proc;

  while (runner_process_is_running (run) && g_get_monotonic_time () < end)
    g_usleep (10 * 1000);
  if (runner_process_is_running (run))
    return NULL;
  g_subprocess_wait (p, NULL, NULL);
  if (g_subprocess_get_if_signaled (p))
    return g_strdup_printf ("killed by signal %d (%s)",
        g_subprocess_get_term_sig (p),
        g_strsignal (g_subprocess_get_term_sig (p)));
  return g_strdup_printf ("exited with status %d",
      g_subprocess_get_exit_status (p));
}

/* the last @n lines of the runner's log */
static gchar *
log_tail (RunnerProcess * run, guint n)
{
  gchar *log = runner_process_log (run), *p = log + strlen (log), *tail;

  while (p > log && n > 0)
    if (*--p == '\n' && p[1] != '\0')
      n--;
  tail = g_strdup (p);
  g_free (log);
  return tail;
}

/* Nothing worse than the warnings of closed and refused links in the
 * service log: no GStreamer ERROR, no GLib critical or error, no
 * assertion, and no connection read or written after it was closed
 * (GIO's "Socket is already closed"). Returns the first bad line. */
static gchar *
log_worse_than_warning (const gchar * log, guint * warnings)
{
  gchar **lines = g_strsplit (log, "\n", -1), *bad = NULL;
  guint i;

  *warnings = 0;
  for (i = 0; lines[i]; i++) {
    const gchar *l = lines[i];

    if (strstr (l, " WARN "))
      (*warnings)++;
    if (!bad && (strstr (l, " ERROR ") || strstr (l, "CRITICAL") ||
            strstr (l, "ERROR **") || strstr (l, "assertion") ||
            strstr (l, "Assertion") || strstr (l, "already closed")))
      bad = g_strdup (l);
  }
  g_strfreev (lines);
  return bad;
}

/* one spicy-screenshot of the sink: the number of pixels that differ from
 * @expected (w x h), G_MAXUINT64 without a picture of that size */
static guint64
screenshot_diff (guint port, const guint8 * expected, gint ew, gint eh)
{
  guint8 *shot = NULL;
  gint w = 0, h = 0;
  guint64 diff = G_MAXUINT64;

  if (test_spicy_screenshot ("127.0.0.1", port, NULL,
          20 * test_time_factor (), &shot, &w, &h, NULL) && w == ew && h == eh)
    diff = test_bgrx_count_diff (shot, w * 4, expected, ew * 4, w, h, NULL,
        NULL);
  g_free (shot);
  return diff;
}

GST_START_TEST (test_reset_matrix)
{
  const gchar *guest_args[] = { "--activity", "idle", NULL };
  guint factor = test_time_factor ();
  guint timeout_ms = 10000 * factor;
  GError *err = NULL;
  GuestProcess *gp = guest_process_start (guest_args, &err);
  gchar *path = runner_process_shipped_pipeline ("transcode-vp8");
  gchar *bin = runner_process_binary (), *uri, *upstream, *listen, *line;
  guint port = test_pick_free_port (), ch, attempts, pings = 0, warnings;
  guint pings_before;
  const gchar *argv[9];
  const gchar *env[] = { "GST_DEBUG=*:2", NULL };
  RunnerProcess *run;
  SpiceRawSession *live;
  guint8 *expected;
  gint ew, eh;
  guint64 diff;
  guint replies[N_POINTS] = { 0, }, results[N_POINTS] = { 0, };
  ResetPoint point;
  gint64 t0, end;
  gchar *log, *bad;

  fail_unless (gp != NULL, "%s", err ? err->message : "");
  /* a distinctive picture: the key box toggled once */
  guest_process_command (gp, "key");
  line = guest_process_wait_line (gp, "box 1", GUEST_LINE_TIMEOUT_MS);
  fail_unless (line != NULL);
  g_free (line);
  fail_unless (guest_process_dump (gp, &expected, &ew, &eh));

  uri = guest_process_get_uri (gp);
  upstream = g_strdup_printf ("UPSTREAM=%s", uri);
  listen = g_strdup_printf ("LISTEN_PORT=%u", port);
  argv[0] = bin;
  argv[1] = "--stats-interval";
  argv[2] = "0";
  argv[3] = "-D";
  argv[4] = upstream;
  argv[5] = "-D";
  argv[6] = listen;
  argv[7] = path;
  argv[8] = NULL;
  run = runner_process_start (tmpdir, argv, env);
  fail_unless (runner_process_wait_log (run, "playing", 1, 60000 * factor),
      "transcode-vp8 did not start");
  /* the pipeline serves the exact picture before the resets (it may take
   * a few screenshots while it starts) */
  end = g_get_monotonic_time () + 60 * factor * G_USEC_PER_SEC;
  for (attempts = 1; (diff = screenshot_diff (port, expected, ew, eh)) != 0 &&
      g_get_monotonic_time () < end; attempts++)
    g_usleep (100 * 1000);
  fail_unless (diff == 0, "before the resets: %" G_GUINT64_FORMAT " pixels "
      "differ after %u screenshots", diff, attempts);
  g_print ("RESULT exact picture before the resets at screenshot %u\n",
      attempts);

  /* a live session: only its main channel, so that every other channel
   * of a reset client attaches to it */
  live = spice_raw_session_new_main (port, NULL);
  fail_unless (live != NULL);
  fail_unless (live->session_id != 0);

  t0 = g_get_monotonic_time ();
  for (ch = 0; ch < G_N_ELEMENTS (channels); ch++) {
    for (point = 0; point < N_POINTS; point++) {
      guint k;

      for (k = 0; k < 2; k++) {
        guint32 id = k ? live->session_id : 0;
        guint i, replied = 0, linked = 0, others = 0, answered = 0;
        /* a main channel creates a session whatever its id; the others
         * join the live session, or are refused with id 0 */
        guint32 want = channels[ch].type == SPICE_CHANNEL_MAIN || id ?
            SPICE_LINK_ERR_OK : SPICE_LINK_ERR_BAD_CONNECTION_ID;

        for (i = 0; i < ATTEMPTS; i++) {
          Outcome o = reset_once (port, ch, point, id, i, timeout_ms);

          if (!o.connected || !runner_process_is_running (run)) {
            gchar *how = describe_death (run), *tail = log_tail (run, 15);

            fail_unless (FALSE, "gst-spice-run %s at channel %s, reset %s, "
                "connection id %s: noticed at attempt %u of %u (%s), the "
                "last answer came in attempt %u\n%s", how ? how :
                "refused a connection", channels[ch].name,
                point_names[point], k ? "of the live session" : "0", i + 1,
                ATTEMPTS, o.connected ? "after its reset" :
                "its connection was refused", answered, tail);
          }
          if (o.replied)
            answered = i + 1;
          replied += o.replied;
          if (o.result == (gint) want)
            linked++;
          else if (o.result >= 0)
            others++;
        }
        /* every client got as far as its reset point */
        fail_unless_equals_int (replied, point == AFTER_LINK ?
            ATTEMPTS / 2 : ATTEMPTS);
        if (point >= AFTER_HEADER) {
          fail_unless (linked == ATTEMPTS, "%s, %s, id %s: %u of %u link "
              "results were %u, %u others", channels[ch].name,
              point_names[point], k ? "live" : "0", linked, ATTEMPTS, want,
              others);
        }
        replies[point] += replied;
        results[point] += linked;
        fail_unless (serve_main (live->main, 0, 0, &pings),
            "the live session's main channel was closed after %s, %s, id %s",
            channels[ch].name, point_names[point], k ? "live" : "0");
      }
    }
  }
  g_print ("RESULT %u reset connections (%" G_GSIZE_FORMAT " channels x %u "
      "points x 2 ids x %u) in %.1f s; gst-spice-run alive\n",
      (guint) G_N_ELEMENTS (channels) * N_POINTS * 2 * ATTEMPTS,
      G_N_ELEMENTS (channels), N_POINTS, ATTEMPTS,
      (g_get_monotonic_time () - t0) / 1e6);
  for (point = 0; point < N_POINTS; point++)
    g_print ("RESULT reset %s: %u connections, %u link replies read, %u "
        "link results as expected read\n", point_names[point],
        (guint) G_N_ELEMENTS (channels) * 2 * ATTEMPTS, replies[point],
        results[point]);
  fail_unless (runner_process_is_running (run));

  /* the live session is still served: its main channel sends PINGs (one
   * a second) and takes the PONGs */
  pings_before = pings;
  fail_unless (serve_main (live->main, 10000 * factor, 2, &pings),
      "the live session's main channel was closed after the resets");
  fail_unless (pings >= pings_before + 2, "the live session's main channel "
      "went silent after the resets (%u PINGs in 10 s)", pings - pings_before);

  /* a new client gets the exact picture at once */
  diff = screenshot_diff (port, expected, ew, eh);
  fail_unless (diff == 0, "after the resets: %" G_GUINT64_FORMAT " pixels "
      "differ", diff);
  fail_unless (runner_process_is_running (run));

  log = runner_process_log (run);
  bad = log_worse_than_warning (log, &warnings);
  fail_unless (bad == NULL, "the service log holds worse than the "
      "expected warnings: %s", bad);
  g_print ("RESULT service log: %u warnings, nothing worse; %u PINGs "
      "answered on the live session\n", warnings, pings);
  g_free (log);

  spice_raw_session_free (live);
  runner_process_signal (run, SIGTERM);
  fail_unless_equals_int (runner_process_wait_exit (run, 20000 * factor), 0);
  runner_process_free (run);
  guest_process_stop (gp);
  g_free (expected);
  g_free (uri);
  g_free (upstream);
  g_free (listen);
  g_free (path);
  g_free (bin);
}

GST_END_TEST;

static Suite *
hardening_reset_suite (void)
{
  Suite *s = suite_create ("hardening-reset");
  TCase *tc = tcase_create ("reset");

  tcase_set_timeout (tc, 600);
  tcase_add_checked_fixture (tc, tmpdir_setup, tmpdir_teardown);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_reset_matrix);
  return s;
}

GST_CHECK_MAIN (hardening_reset);
