/* tests/agent: files from spice-gtk clients to the guest through the
 * shipped transcode-vp8 pipeline (gst-spice-run). Upstream: the test guest
 * with its agent saving files in a directory (--agent --agent-xfer-dir);
 * downstream: spice-test-client --send-file (spice_main_channel_file_copy_async,
 * what remote-viewer does with a dropped file). The runner spools in a
 * TMPDIR of the test's own, so what it leaves there is seen.
 *   - 5 MiB of random bytes arrive with the same sha256, the client says
 *     so, and the runner's peak RSS does not grow by the file's size;
 *     two clients at once each get theirs there;
 *   - a file over max-file-transfer (1 GiB, a sparse file) is refused
 *     before any data moves: the client's error says why, the service log
 *     has the health event;
 *   - the guest's refusals reach the client as spice-gtk shows them;
 *   - a transfer cancelled mid-way and a client that vanishes mid-way
 *     leave nothing in the spool nor in the guest, and no growth.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <gst/check/gstcheck.h>
#include <glib/gstdio.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include <spice/vd_agent.h>

#include "guest-launcher.h"
#include "runner-process.h"
#include "agent-log.h"

#define MIB (1024 * 1024)

typedef struct
{
  gchar *tmpdir, *guest_dir, *spool_dir;
  GuestProcess *gp;
  RunnerProcess *run;
  guint port;
} Setup;

/* the guest with its agent, the shipped pipeline in front of it */
static Setup *
setup_new (void)
{
  Setup *s = g_new0 (Setup, 1);
  GError *err = NULL;
  gchar *path = runner_process_shipped_pipeline ("transcode-vp8");
  gchar *uri, *upstream, *listen, *tmp_env, *runner;
  const gchar *guest_args[] = { "--agent", "--agent-xfer-dir", NULL,
    "--activity", "idle", NULL
  };
  const gchar *argv[8];
  const gchar *env[3];

  t0 = g_get_monotonic_time ();
  s->tmpdir = test_tmpdir_new ("gst-spice-filexfer");
  s->guest_dir = g_build_filename (s->tmpdir, "guest", NULL);
  s->spool_dir = g_build_filename (s->tmpdir, "spool", NULL);
  fail_unless (g_mkdir (s->guest_dir, 0700) == 0);
  fail_unless (g_mkdir (s->spool_dir, 0700) == 0);
  guest_args[2] = s->guest_dir;
  s->gp = guest_process_start (guest_args, &err);
  fail_unless (s->gp != NULL, "%s", err ? err->message : "");
  uri = guest_process_get_uri (s->gp);
  upstream = g_strdup_printf ("UPSTREAM=%s", uri);
  s->port = test_pick_free_port ();
  listen = g_strdup_printf ("LISTEN_PORT=%u", s->port);
  tmp_env = g_strdup_printf ("TMPDIR=%s", s->spool_dir);
  runner = runner_process_binary ();
  argv[0] = runner;
  argv[1] = "-D";
  argv[2] = upstream;
  argv[3] = "-D";
  argv[4] = listen;
  argv[5] = "--stats-interval=0";
  argv[6] = path;
  argv[7] = NULL;
  env[0] = tmp_env;
  env[1] = "GST_DEBUG=spicesinkagent:4,spicesrcagent:4,2";
  env[2] = NULL;
  s->run = runner_process_start (s->tmpdir, argv, env);
  fail_unless (runner_process_wait_log (s->run, "playing", 1,
          60000 * test_time_factor ()), "transcode-vp8 did not start");
  g_free (runner);
  g_free (tmp_env);
  g_free (listen);
  g_free (upstream);
  g_free (uri);
  g_free (path);
  return s;
}

static void
setup_free (Setup * s)
{
  fail_unless (runner_process_is_running (s->run), "the runner died");
  runner_process_free (s->run);
  guest_process_stop (s->gp);
  g_free (s->guest_dir);
  g_free (s->spool_dir);
  test_tmpdir_remove (s->tmpdir);
  g_free (s);
}

/* waits (generously) until @path is empty */
static gboolean
dir_empties (const gchar * path)
{
  gint64 end = g_get_monotonic_time () +
      10 * G_USEC_PER_SEC * test_time_factor ();

  while (test_dir_entries (path) > 0) {
    if (g_get_monotonic_time () > end)
      return FALSE;
    g_usleep (20 * 1000);
  }
  return TRUE;
}

/* @size random bytes in tmpdir/NAME */
static gchar *
random_file (Setup * s, const gchar * name, gsize size)
{
  gchar *path = g_build_filename (s->tmpdir, name, NULL);
  guint8 *d = g_malloc (size);
  gsize i;

  for (i = 0; i < size; i++)
    d[i] = (guint8) g_random_int ();
  fail_unless (g_file_set_contents (path, (gchar *) d, size, NULL));
  g_free (d);
  return path;
}

static gchar *
sha256_of (const gchar * path)
{
  gchar *data, *sum;
  gsize n;

  fail_unless (g_file_get_contents (path, &data, &n, NULL), "no %s", path);
  sum = g_compute_checksum_for_data (G_CHECKSUM_SHA256, (guint8 *) data, n);
  g_free (data);
  return sum;
}

/* spice-test-client --send-file @paths… with @extra options */
static RunnerProcess *
client_start (Setup * s, const gchar * const *paths, const gchar * const *extra)
{
  gchar *tc = g_build_filename (g_getenv ("GST_SPICE_BUILD_DIR"), "tests",
      "common", "spice-test-client", NULL);
  gchar *ps = g_strdup_printf ("%u", s->port);
  gchar *timeout = g_strdup_printf ("%u", 120 * test_time_factor ());
  const gchar *argv[24];
  RunnerProcess *c;
  guint n = 0, i;

  argv[n++] = tc;
  argv[n++] = "-p";
  argv[n++] = ps;
  argv[n++] = "--timeout";
  argv[n++] = timeout;
  for (i = 0; paths[i] && n < 18; i++) {
    argv[n++] = "--send-file";
    argv[n++] = paths[i];
  }
  for (i = 0; extra && extra[i] && n < 22; i++)
    argv[n++] = extra[i];
  argv[n] = NULL;
  c = runner_process_start (s->tmpdir, argv, NULL);
  g_free (timeout);
  g_free (ps);
  g_free (tc);
  return c;
}

/* the client's exit status; *@log its output */
static gint
client_wait (RunnerProcess * c, gchar ** log)
{
  gint st = runner_process_wait_exit (c, 150000 * test_time_factor ());

  *log = runner_process_log (c);
  runner_process_free (c);
  return st;
}

/* the stamp (monotonic us) of the client's line @prefix, relative to t0 */
static gint64
stamp (const gchar * log, const gchar * prefix)
{
  const gchar *p = strstr (log, prefix);

  fail_unless (p != NULL, "no %s in:\n%s", prefix, log);
  return g_ascii_strtoll (p + strlen (prefix), NULL, 10) - t0;
}

/* 5 MiB of random bytes arrive with the same sha256, the client reports
 * success, and the runner's peak RSS does not grow by the file's size;
 * then two clients at once */
GST_START_TEST (test_file_arrives)
{
  Setup *s = setup_new ();
  gchar *small = random_file (s, "warm-up", 64 * 1024);
  gchar *big = random_file (s, "random-5MiB.bin", 5 * MIB);
  gchar *a = random_file (s, "client-a.bin", 5 * MIB);
  gchar *b = random_file (s, "client-b.bin", 5 * MIB);
  const gchar *one[] = { NULL, NULL };
  const gchar *pa[] = { a, NULL }, *pb[] = { b, NULL };
  gchar *log, *log_b, *got, *want, *got_b, *want_b, *line, *run_log;
  guint64 hwm0, hwm1, rss1;
  RunnerProcess *c, *cb;
  gint64 us;

  /* a first client and file: every path of the runner used once */
  one[0] = small;
  fail_unless_equals_int (client_wait (client_start (s, one, NULL), &log), 0);
  g_free (log);
  hwm0 = runner_process_status_kib (s->run, "VmHWM");

  one[0] = big;
  c = client_start (s, one, NULL);
  fail_unless_equals_int (client_wait (c, &log), 0);
  hwm1 = runner_process_status_kib (s->run, "VmHWM");
  rss1 = runner_process_status_kib (s->run, "VmRSS");
  fail_unless (strstr (log, "XFER-FILE random-5MiB.bin OK") != NULL, "%s", log);
  fail_unless (strstr (log, "XFER-DONE OK") != NULL, "%s", log);
  us = stamp (log, "XFER-DONE OK ") - stamp (log, "XFER-BEGIN ");
  line = guest_process_wait_line (s->gp, "agent xfer done ",
      GUEST_LINE_TIMEOUT_MS);
  fail_unless (line != NULL);
  g_free (line);
  line = guest_process_wait_line (s->gp, "agent xfer done ",
      GUEST_LINE_TIMEOUT_MS);
  fail_unless (line != NULL);
  fail_unless (g_str_has_suffix (line, " random-5MiB.bin 5242880"), "%s", line);
  g_free (line);
  want = sha256_of (big);
  got = g_build_filename (s->guest_dir, "random-5MiB.bin", NULL);
  g_free (log);
  log = sha256_of (got);
  fail_unless_equals_string (log, want);
  fail_unless (dir_empties (s->spool_dir), "the spool is not empty");
  g_print ("RESULT 5 MiB through transcode-vp8: sha256 %s (guest) = %s "
      "(client), %.2f s from the client's start to its success, runner "
      "peak RSS %" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT " KiB (+%"
      G_GINT64_FORMAT "), RSS after %" G_GUINT64_FORMAT " KiB\n", log, want,
      us / 1e6, hwm0, hwm1, (gint64) (hwm1 - hwm0), rss1);
  /* how long the sink's writes took (the server lock is held) */
  fail_unless (runner_process_wait_log (s->run, "received (5242880 bytes in ",
          1, 10000));
  run_log = runner_process_log (s->run);
  line = g_strndup (strstr (run_log, "received (5242880 bytes in "), 80);
  *strchr (line, ')') = '\0';
  g_print ("RESULT the sink spooled the 5 MiB: %s)\n", line);
  g_free (line);
  g_free (run_log);
  /* spooled on disk, never in memory (a release build's figure: under
   * ASan every freed 64 KiB message waits in its quarantine, and the
   * runner's peak grows by about three times the file) */
#ifndef __SANITIZE_ADDRESS__
  fail_unless (hwm1 < hwm0 + 5 * 1024 / 2, "peak RSS grew by %"
      G_GUINT64_FORMAT " KiB over a 5 MiB transfer", hwm1 - hwm0);
#endif
  g_free (log);
  g_free (got);
  g_free (want);

  /* two clients at once, a file each */
  c = client_start (s, pa, NULL);
  cb = client_start (s, pb, NULL);
  fail_unless_equals_int (client_wait (c, &log), 0);
  fail_unless_equals_int (client_wait (cb, &log_b), 0);
  fail_unless (strstr (log, "XFER-FILE client-a.bin OK") != NULL, "%s", log);
  fail_unless (strstr (log_b, "XFER-FILE client-b.bin OK") != NULL, "%s",
      log_b);
  /* whether they overlapped (agent-sink's test_file_one_at_a_time makes
   * them overlap for sure) */
  LOG ("client a sent from %.3f to %.3f s, client b from %.3f to %.3f s",
      stamp (log, "XFER-BEGIN ") / 1e6, stamp (log, "XFER-DONE OK ") / 1e6,
      stamp (log_b, "XFER-BEGIN ") / 1e6, stamp (log_b, "XFER-DONE OK ") / 1e6);
  g_free (log);
  g_free (log_b);
  want = sha256_of (a);
  want_b = sha256_of (b);
  log = g_build_filename (s->guest_dir, "client-a.bin", NULL);
  log_b = g_build_filename (s->guest_dir, "client-b.bin", NULL);
  got = sha256_of (log);
  got_b = sha256_of (log_b);
  fail_unless_equals_string (got, want);
  fail_unless_equals_string (got_b, want_b);
  fail_unless (dir_empties (s->spool_dir), "the spool is not empty");
  LOG ("two clients at once: both files arrived whole");
  g_free (got);
  g_free (got_b);
  g_free (want);
  g_free (want_b);
  g_free (log);
  g_free (log_b);
  g_free (small);
  g_free (big);
  g_free (a);
  g_free (b);
  setup_free (s);
}

GST_END_TEST;

/* a file over max-file-transfer (the default, 1 GiB) is refused before
 * any data moves: the client's error says why, the service log too */
GST_START_TEST (test_file_over_limit)
{
  Setup *s = setup_new ();
  gchar *big = g_build_filename (s->tmpdir, "over-1GiB.iso", NULL);
  const gchar *one[] = { big, NULL };
  gint fd = g_open (big, O_WRONLY | O_CREAT, 0600);
  gchar *log, *run_log;
  guint mark = guest_process_mark (s->gp);

  /* sparse: its size, none of its bytes on disk */
  fail_unless (fd >= 0 && ftruncate (fd, (1 << 30) + 1) == 0);
  close (fd);
  fail_unless_equals_int (client_wait (client_start (s, one, NULL), &log), 3);
  fail_unless (strstr (log, "XFER-FILE over-1GiB.iso ERROR "
          "spice-client-error-quark 0 File transfer failed due to lack of "
          "free space on remote machine (") != NULL, "%s", log);
  /* the limit it was refused at and the size, as spice-gtk formats them
   * ("1.1 GB"; g_print writes the no-break space in the locale's charset) */
  fail_unless (strstr (log, "GB free, ") && strstr (log, "GB to transfer)"),
      "%s", log);
  /* no data moved: spice-gtk reports progress as its data leaves */
  fail_if (strstr (log, "XFER-PROGRESS") != NULL, "%s", log);
  fail_unless (runner_process_wait_log (s->run, "gst-spice-run: health: "
          "event=file-transfer-refused peer=127.0.0.1 element=s "
          "reason=max-file-transfer limit=1073741824", 1, 10000));
  run_log = runner_process_log (s->run);
  LOG ("client: %s", strstr (log, "XFER-FILE"));
  LOG ("service log: %s", strstr (run_log, "gst-spice-run: health: "
          "event=file-transfer-refused"));
  fail_unless_equals_int (guest_process_count_lines (s->gp, mark,
          "agent xfer"), 0);
  fail_unless_equals_int (test_dir_entries (s->spool_dir), 0);
  g_free (run_log);
  g_free (log);
  g_free (big);
  setup_free (s);
}

GST_END_TEST;

/* The guest's agent refuses (the test guest's `agent xfer-answer`): the
 * client shows what spice-gtk shows for that status straight from a
 * guest, since spicesrc reads the status back from spice-gtk's message;
 * the service log has the reason */
GST_START_TEST (test_file_guest_refuses)
{
  static const struct
  {
    guint status;
    const gchar *client_says, *reason;
  } answers[] = {
    {VD_AGENT_FILE_XFER_STATUS_NOT_ENOUGH_SPACE, "File transfer failed due "
          "to lack of free space on remote machine", "guest-no-space"},
    {VD_AGENT_FILE_XFER_STATUS_SESSION_LOCKED, "User's session is locked",
        "guest-session-locked"},
    {VD_AGENT_FILE_XFER_STATUS_ERROR, "The spice agent reported an error",
        "guest-error"},
    {VD_AGENT_FILE_XFER_STATUS_CANCELLED, "The spice agent cancelled",
        "guest-cancelled"},
    {VD_AGENT_FILE_XFER_STATUS_VDAGENT_NOT_CONNECTED, "Session agent not "
          "connected", "guest-no-agent"},
    {VD_AGENT_FILE_XFER_STATUS_DISABLED, "File transfer is disabled.",
        "guest-disabled"},
  };
  Setup *s = setup_new ();
  gchar *small = random_file (s, "refused.txt", 10000);
  const gchar *one[] = { small, NULL };
  gchar *log, *want, *line, *reason;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (answers); i++) {
    want = g_strdup_printf ("agent xfer-answer %u", answers[i].status);
    guest_process_command (s->gp, "agent xfer-answer %u", answers[i].status);
    line = guest_process_wait_line (s->gp, want, GUEST_LINE_TIMEOUT_MS);
    fail_unless (line != NULL, "the guest did not take: %s", want);
    fail_unless_equals_int (client_wait (client_start (s, one, NULL), &log),
        3);
    fail_unless (strstr (log, "XFER-FILE refused.txt ERROR") != NULL &&
        strstr (strstr (log, "XFER-FILE"), answers[i].client_says) != NULL,
        "status %u: the client does not say \"%s\":\n%s",
        answers[i].status, answers[i].client_says, log);
    reason = g_strdup_printf ("event=file-transfer-failed peer=127.0.0.1 "
        "element=s reason=%s ", answers[i].reason);
    fail_unless (runner_process_wait_log (s->run, reason, 1, 10000),
        "no health line with %s", reason);
    fail_unless (dir_empties (s->spool_dir), "the spool is not empty");
    LOG ("guest status %u: the client says \"%s\"", answers[i].status,
        answers[i].client_says);
    g_free (reason);
    g_free (log);
    g_free (line);
    g_free (want);
  }
  fail_unless_equals_int (test_dir_entries (s->guest_dir), 0);
  g_free (small);
  setup_free (s);
}

GST_END_TEST;

/* a transfer cancelled mid-way (the client's GCancellable) and a client
 * that vanishes mid-way leave no file in the spool nor in the guest, and
 * the runner does not grow over several of them */
GST_START_TEST (test_file_cancel_and_vanish)
{
  Setup *s = setup_new ();
  gchar *big = random_file (s, "unfinished.bin", 5 * MIB);
  const gchar *one[] = { big, NULL };
  const gchar *cancel[] = { "--cancel-at", "1048576", NULL };
  const gchar *quit[] = { "--quit-at", "2097152", NULL };
  guint mark = guest_process_mark (s->gp);
  guint64 rss[4], hwm[4];
  gchar *log;
  guint i;

  for (i = 0; i < 4; i++) {
    gboolean vanish = i % 2 == 1;

    fail_unless_equals_int (client_wait (client_start (s, one, vanish ? quit :
                cancel), &log), vanish ? 4 : 3);
    if (vanish) {
      fail_unless (strstr (log, "XFER-QUIT") != NULL, "%s", log);
      fail_unless (runner_process_wait_log (s->run, "left during file 1 (",
              i / 2 + 1, 10000));
    } else {
      fail_unless (strstr (log, "XFER-CANCEL") != NULL, "%s", log);
      fail_unless (strstr (log, "XFER-DONE ERROR g-io-error-quark 19") !=
          NULL, "%s", log);
      /* the client's CANCELLED status reached the sink */
      fail_unless (runner_process_wait_log (s->run, "the client ended file "
              "1 (status 1)", i / 2 + 1, 10000));
    }
    fail_unless (dir_empties (s->spool_dir), "the spool is not empty");
    rss[i] = runner_process_status_kib (s->run, "VmRSS");
    hwm[i] = runner_process_status_kib (s->run, "VmHWM");
    LOG ("%s: spool empty, runner RSS %" G_GUINT64_FORMAT " KiB, peak %"
        G_GUINT64_FORMAT " KiB", vanish ? "vanished" : "cancelled", rss[i],
        hwm[i]);
    g_free (log);
  }
  /* the upstream copy never started: nothing reached the guest */
  fail_unless_equals_int (guest_process_count_lines (s->gp, mark,
          "agent xfer"), 0);
  fail_unless_equals_int (test_dir_entries (s->guest_dir), 0);
  g_print ("RESULT cancel / vanish x2: spool empty each time; runner RSS %"
      G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT " KiB, peak %"
      G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT " KiB\n", rss[1], rss[3],
      hwm[1], hwm[3]);
  /* no growth from the second pair on (the first warmed up the paths) */
  fail_unless (hwm[3] < hwm[1] + 1024, "peak RSS grew by %" G_GUINT64_FORMAT
      " KiB", hwm[3] - hwm[1]);
  g_free (big);
  setup_free (s);
}

GST_END_TEST;

static Suite *
agent_filexfer_suite (void)
{
  Suite *s = suite_create ("agent-filexfer");
  TCase *tc = tcase_create ("filexfer");

  tcase_set_timeout (tc, 300);
  tcase_add_test (tc, test_file_arrives);
  tcase_add_test (tc, test_file_over_limit);
  tcase_add_test (tc, test_file_guest_refuses);
  tcase_add_test (tc, test_file_cancel_and_vanish);
  suite_add_tcase (s, tc);
  return s;
}

GST_CHECK_MAIN (agent_filexfer);
