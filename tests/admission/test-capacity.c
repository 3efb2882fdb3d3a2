/* A saturated host refuses new sessions (spicesink max-cpu-pressure), with
 * a health line in the runner's log, and keeps serving the sessions it
 * has; against the shipped transcode-lossless pipeline, the real test
 * guest and the kernel's own pressure stall information (PSI).
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The pressure is a cgroup v2 group's cpu.pressure (CPU_PRESSURE_FILE),
 * the file an operator names for a service's share of the host: two busy
 * loops per CPU and one more, at SCHED_IDLE, in a group of their own keep
 * one of them waiting on every CPU whatever else the machine runs (the
 * kernel counts "some" per CPU and weighs the CPUs: with one loop on a CPU
 * of its own that CPU adds nothing), so the group's "some" pressure goes
 * to 100 % and back to 0 when they stop; SCHED_IDLE gives the CPU to any
 * other task first. Needs root and a
 * cgroup2 mount with PSI (SKIP otherwise).
 */
#include <gst/check/gstcheck.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "guest-launcher.h"
#include "runner-process.h"
#include "spice-raw-client.h"

#define MAX_HOGS 65
#define LIMIT 40

TEST_TMPDIR_FIXTURE (tmpdir, "gst-spice-capacity");

/* the first cgroup2 mount point, NULL if none */
static gchar *
cgroup2_mount (void)
{
  gchar *text = NULL, **lines, *dir = NULL;
  guint i;

  if (!g_file_get_contents ("/proc/self/mounts", &text, NULL, NULL))
    return NULL;
  lines = g_strsplit (text, "\n", -1);
  for (i = 0; lines[i] && !dir; i++) {
    gchar **f = g_strsplit (lines[i], " ", -1);

    if (g_strv_length (f) > 2 && strcmp (f[2], "cgroup2") == 0 &&
        access (f[1], W_OK) == 0)
      dir = g_strdup (f[1]);
    g_strfreev (f);
  }
  g_strfreev (lines);
  g_free (text);
  return dir;
}

/* the "some avg10" of @path, -1 if unreadable */
static gdouble
some_avg10 (const gchar * path)
{
  gchar *text = NULL, *p;
  gdouble v = -1;

  if (g_file_get_contents (path, &text, NULL, NULL) &&
      (p = strstr (text, "some avg10=")))
    v = g_ascii_strtod (p + 11, NULL);
  g_free (text);
  return v;
}

/* waits until @path's avg10 is above (@above) or below @level; reads
 * @s's display meanwhile (NULL: none; a client that reads nothing is
 * closed as stalled) */
static gboolean
wait_pressure (const gchar * path, gdouble level, gboolean above,
    guint timeout_s, SpiceRawSession * s)
{
  gint64 end = g_get_monotonic_time () + (gint64) timeout_s * G_USEC_PER_SEC;
  gdouble v;

  do {
    v = some_avg10 (path);
    if (above ? v > level : (v >= 0 && v < level))
      return TRUE;
    if (s)
      fail_unless (spice_raw_session_pump (s, 200, NULL, NULL),
          "the session lost its display: %s", s->error);
    else
      g_usleep (200 * 1000);
  } while (g_get_monotonic_time () < end);
  g_printerr ("%s: avg10 %.2f after %u s (waited for %s %.0f)\n", path, v,
      timeout_s, above ? "above" : "below", level);
  return FALSE;
}

/* a link of a @type channel to session @session_id (0: a new one), no
 * ticket: its result */
static guint32
link_main (guint port, guint32 session_id, guint8 type)
{
  SpiceRawConn *c = spice_raw_connect (port, 5);
  guint32 result;

  fail_unless (c != NULL);
  fail_unless (spice_raw_link (c, session_id, type, SPICE_RAW_COMMON_CAPS, 0,
          NULL, NULL));
  result = c->link_result;
  spice_raw_close (c);
  return result;
}

GST_START_TEST (test_saturated_host_refuses_new_sessions)
{
  gchar *mnt = cgroup2_mount (), *group, *pressure, *procs, *gport_s;
  gchar *pipeline, *limit_var, *file_var, *up_var, *port_var;
  const gchar *hog_argv[] = { "chrt", "-i", "0", "sh", "-c",
    "while :; do :; done", NULL
  };
  GSubprocess *hogs[MAX_HOGS] = { NULL, };
  guint n_hogs = MIN (2 * g_get_num_processors () + 1, MAX_HOGS);
  SpiceRawSession *kept;
  GuestProcess *guest;
  RunnerProcess *run;
  guint port = test_pick_free_port (), i;
  guint64 draws;
  gint64 end;

  if (!mnt || geteuid () != 0) {
    g_print ("SKIP: needs root and a writable cgroup2 mount\n");
    g_free (mnt);
    return;
  }
  group = g_strdup_printf ("%s/gst-spice-capacity-%d", mnt, (gint) getpid ());
  pressure = g_build_filename (group, "cpu.pressure", NULL);
  procs = g_build_filename (group, "cgroup.procs", NULL);
  fail_unless (g_mkdir (group, 0755) == 0 || errno == EEXIST);
  if (some_avg10 (pressure) < 0) {
    g_print ("SKIP: no PSI in %s (a kernel without CONFIG_PSI, or psi=0)\n",
        pressure);
    g_rmdir (group);
    goto out;
  }

  {
    const gchar *args[] = { "--activity", "busy", NULL };

    guest = guest_process_start (args, NULL);
  }
  fail_unless (guest != NULL);
  gport_s = guest_process_get_uri (guest);
  up_var = g_strdup_printf ("UPSTREAM=%s", gport_s);
  port_var = g_strdup_printf ("LISTEN_PORT=%u", port);
  limit_var = g_strdup_printf ("MAX_CPU_PRESSURE=%u", LIMIT);
  file_var = g_strdup_printf ("CPU_PRESSURE_FILE=%s", pressure);
  pipeline = runner_process_shipped_pipeline ("transcode-lossless");
  run = runner_process_start_runner (tmpdir, "--stats-interval", "0",
      pipeline, "-D", up_var, "-D", port_var, "-D", limit_var, "-D",
      file_var, NULL);
  fail_unless (runner_process_wait_log (run, "playing", 1, 60000));

  /* no pressure: a session is admitted, it gets the picture */
  fail_unless (wait_pressure (pressure, LIMIT / 2, FALSE, 60, NULL));
  kept = spice_raw_session_new (port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (kept != NULL, "refused without pressure");

  /* saturated */
  for (i = 0; i < n_hogs; i++) {
    GError *err = NULL;
    FILE *f;

    hogs[i] = g_subprocess_newv (hog_argv, G_SUBPROCESS_FLAGS_NONE, &err);
    fail_unless (hogs[i] != NULL, "chrt: %s", err ? err->message : "?");
    /* (cgroupfs: one write, no temporary file and rename) */
    f = fopen (procs, "w");
    fail_unless (f != NULL, "%s: %s", procs, g_strerror (errno));
    fprintf (f, "%s\n", g_subprocess_get_identifier (hogs[i]));
    fail_unless (fclose (f) == 0, "%s: %s", procs, g_strerror (errno));
  }
  fail_unless (wait_pressure (pressure, LIMIT + 20, TRUE, 60, kept));
  fail_unless_equals_int (link_main (port, 0, SPICE_CHANNEL_MAIN),
      SPICE_LINK_ERR_ERROR);
  fail_unless (runner_process_wait_log (run, "health: event=refused "
          "peer=127.0.0.1 element=s reason=cpu-pressure limit=40", 1, 10000));
  /* the session it has keeps its channels and its picture */
  fail_unless_equals_int (link_main (port, kept->session_id,
          SPICE_CHANNEL_INPUTS), SPICE_LINK_ERR_OK);
  draws = kept->draws;
  end = g_get_monotonic_time () + 20 * G_USEC_PER_SEC;
  while (kept->draws < draws + 10 && g_get_monotonic_time () < end)
    fail_unless (spice_raw_session_pump (kept, 500, NULL, NULL),
        "the kept session lost its display: %s", kept->error);
  fail_unless (kept->draws >= draws + 10, "%" G_GUINT64_FORMAT " draws",
      kept->draws - draws);

  /* the pressure falls: new sessions again */
  for (i = 0; i < n_hogs; i++) {
    g_subprocess_force_exit (hogs[i]);
    g_subprocess_wait (hogs[i], NULL, NULL);
    g_clear_object (&hogs[i]);
  }
  fail_unless (wait_pressure (pressure, LIMIT / 2, FALSE, 90, kept));
  fail_unless_equals_int (link_main (port, 0, SPICE_CHANNEL_MAIN),
      SPICE_LINK_ERR_OK);

  spice_raw_session_free (kept);
  runner_process_signal (run, SIGTERM);
  fail_unless_equals_int (runner_process_wait_exit (run, 20000), 0);
  runner_process_free (run);
  guest_process_stop (guest);
  g_rmdir (group);
  g_free (pipeline);
  g_free (limit_var);
  g_free (file_var);
  g_free (up_var);
  g_free (port_var);
  g_free (gport_s);
out:
  for (i = 0; i < n_hogs; i++)
    if (hogs[i]) {
      g_subprocess_force_exit (hogs[i]);
      g_object_unref (hogs[i]);
    }
  g_free (procs);
  g_free (pressure);
  g_free (group);
  g_free (mnt);
}

GST_END_TEST;

static Suite *
capacity_suite (void)
{
  Suite *s = suite_create ("capacity");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 300);
  tcase_add_checked_fixture (tc, tmpdir_setup, tmpdir_teardown);
  tcase_add_test (tc, test_saturated_host_refuses_new_sessions);
  suite_add_tcase (s, tc);
  return s;
}

GST_CHECK_MAIN (capacity);
