/* A saturated host refuses new sessions (spicesink max-cpu-pressure), with
 * a health line in the runner's log, and keeps serving the sessions it
 * has; it serves its streams at a lower frame rate (stream-cpu-pressure)
 * and gives them their rate back when the pressure goes; against the
 * shipped transcode-lossless and transcode-vp8 pipelines, the real test
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

/* The group that makes the pressure: a cgroup2 group of its own, its
 * cpu.pressure, the busy loops put in it. */
typedef struct
{
  gchar *mnt, *group, *pressure, *procs;
  GSubprocess *hogs[MAX_HOGS];
  guint n_hogs;
} Hogs;

static void hogs_free (Hogs * h);

/* a new group; NULL (after a SKIP line) without root, a writable cgroup2
 * mount or PSI */
static Hogs *
hogs_new (void)
{
  Hogs *h = g_new0 (Hogs, 1);

  h->mnt = cgroup2_mount ();
  h->n_hogs = MIN (2 * g_get_num_processors () + 1, MAX_HOGS);
  if (!h->mnt || geteuid () != 0) {
    g_print ("SKIP: needs root and a writable cgroup2 mount\n");
    g_free (h->mnt);
    g_free (h);
    return NULL;
  }
  h->group = g_strdup_printf ("%s/gst-spice-capacity-%d", h->mnt,
      (gint) getpid ());
  h->pressure = g_build_filename (h->group, "cpu.pressure", NULL);
  h->procs = g_build_filename (h->group, "cgroup.procs", NULL);
  fail_unless (g_mkdir (h->group, 0755) == 0 || errno == EEXIST);
  if (some_avg10 (h->pressure) < 0) {
    g_print ("SKIP: no PSI in %s (a kernel without CONFIG_PSI, or psi=0)\n",
        h->pressure);
    hogs_free (h);
    return NULL;
  }
  return h;
}

/* the busy loops start, in the group */
static void
hogs_start (Hogs * h)
{
  const gchar *hog_argv[] = { "chrt", "-i", "0", "sh", "-c",
    "while :; do :; done", NULL
  };
  guint i;

  for (i = 0; i < h->n_hogs; i++) {
    GError *err = NULL;
    FILE *f;

    h->hogs[i] = g_subprocess_newv (hog_argv, G_SUBPROCESS_FLAGS_NONE, &err);
    fail_unless (h->hogs[i] != NULL, "chrt: %s", err ? err->message : "?");
    /* (cgroupfs: one write, no temporary file and rename) */
    f = fopen (h->procs, "w");
    fail_unless (f != NULL, "%s: %s", h->procs, g_strerror (errno));
    fprintf (f, "%s\n", g_subprocess_get_identifier (h->hogs[i]));
    fail_unless (fclose (f) == 0, "%s: %s", h->procs, g_strerror (errno));
  }
}

static void
hogs_stop (Hogs * h)
{
  guint i;

  for (i = 0; i < h->n_hogs; i++) {
    if (!h->hogs[i])
      continue;
    g_subprocess_force_exit (h->hogs[i]);
    g_subprocess_wait (h->hogs[i], NULL, NULL);
    g_clear_object (&h->hogs[i]);
  }
}

static void
hogs_free (Hogs * h)
{
  if (!h)
    return;
  hogs_stop (h);
  g_rmdir (h->group);
  g_free (h->group);
  g_free (h->pressure);
  g_free (h->procs);
  g_free (h->mnt);
  g_free (h);
}

/* A busy test guest and a shipped pipeline in front of it, on a free
 * port, with the pipeline variable @limit_name at @limit and the
 * group's pressure as its CPU_PRESSURE_FILE. */
typedef struct
{
  GuestProcess *guest;
  RunnerProcess *run;
  guint port;
} Gateway;

static void
gateway_start (Gateway * g, Hogs * h, const gchar * pipeline_name,
    const gchar * limit_name, guint limit)
{
  const gchar *args[] = { "--activity", "busy", NULL };
  gchar *uri, *pipeline, *limit_var, *file_var, *up_var, *port_var;

  g->port = test_pick_free_port ();
  g->guest = guest_process_start (args, NULL);
  fail_unless (g->guest != NULL);
  uri = guest_process_get_uri (g->guest);
  up_var = g_strdup_printf ("UPSTREAM=%s", uri);
  port_var = g_strdup_printf ("LISTEN_PORT=%u", g->port);
  limit_var = g_strdup_printf ("%s=%u", limit_name, limit);
  file_var = g_strdup_printf ("CPU_PRESSURE_FILE=%s", h->pressure);
  pipeline = runner_process_shipped_pipeline (pipeline_name);
  g->run = runner_process_start_runner (tmpdir, "--stats-interval", "0",
      pipeline, "-D", up_var, "-D", port_var, "-D", limit_var, "-D",
      file_var, NULL);
  fail_unless (runner_process_wait_log (g->run, "playing", 1, 60000));
  g_free (pipeline);
  g_free (limit_var);
  g_free (file_var);
  g_free (up_var);
  g_free (port_var);
  g_free (uri);
}

/* the pipeline ends cleanly on SIGTERM; the guest stops */
static void
gateway_stop (Gateway * g)
{
  runner_process_signal (g->run, SIGTERM);
  fail_unless_equals_int (runner_process_wait_exit (g->run, 20000), 0);
  runner_process_free (g->run);
  guest_process_stop (g->guest);
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
  Hogs *h = hogs_new ();
  SpiceRawSession *kept;
  Gateway g;
  guint port;
  guint64 draws;
  gint64 end;

  if (!h)
    return;
  gateway_start (&g, h, "transcode-lossless", "MAX_CPU_PRESSURE", LIMIT);
  port = g.port;

  /* no pressure: a session is admitted, it gets the picture */
  fail_unless (wait_pressure (h->pressure, LIMIT / 2, FALSE, 60, NULL));
  kept = spice_raw_session_new (port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (kept != NULL, "refused without pressure");

  /* saturated */
  hogs_start (h);
  fail_unless (wait_pressure (h->pressure, LIMIT + 20, TRUE, 60, kept));
  fail_unless_equals_int (link_main (port, 0, SPICE_CHANNEL_MAIN),
      SPICE_LINK_ERR_ERROR);
  fail_unless (runner_process_wait_log (g.run, "health: event=refused "
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
  hogs_stop (h);
  fail_unless (wait_pressure (h->pressure, LIMIT / 2, FALSE, 90, kept));
  fail_unless_equals_int (link_main (port, 0, SPICE_CHANNEL_MAIN),
      SPICE_LINK_ERR_OK);

  spice_raw_session_free (kept);
  gateway_stop (&g);
  hogs_free (h);
}

GST_END_TEST;

/* reads @s's display until @needle is in @run's log (at most @timeout_s) */
static gboolean
pump_until_log (SpiceRawSession * s, RunnerProcess * run,
    const gchar * needle, guint timeout_s)
{
  gint64 end = g_get_monotonic_time () + (gint64) timeout_s * G_USEC_PER_SEC;

  do {
    if (runner_process_wait_log (run, needle, 1, 0))
      return TRUE;
    fail_unless (spice_raw_session_pump (s, 200, NULL, NULL),
        "the session lost its display: %s", s->error);
  } while (g_get_monotonic_time () < end);
  return FALSE;
}

/* the stream frames and the draws @s gets in @secs seconds while the
 * guest gets a key press every 500 ms (each one draws its key box) */
static void
count_frames (SpiceRawSession * s, GuestProcess * guest, guint secs,
    guint64 * frames, guint64 * draws)
{
  guint64 f0 = s->stream_datas, d0 = s->draws;
  gint64 end = g_get_monotonic_time () + (gint64) secs * G_USEC_PER_SEC;
  gint64 key = 0;

  while (g_get_monotonic_time () < end) {
    if (g_get_monotonic_time () >= key) {
      guest_process_command (guest, "key");
      key = g_get_monotonic_time () + 500 * G_TIME_SPAN_MILLISECOND;
    }
    fail_unless (spice_raw_session_pump (s, 100, NULL, NULL),
        "the session lost its display: %s", s->error);
  }
  *frames = s->stream_datas - f0;
  *draws = s->draws - d0;
}

#define FPS_LIMIT 60
#define FPS_SECS 4

/* A saturated host serves its streams at a lower frame rate: with the
 * pressure at 100 % the shipped transcode-vp8's stream steps down to 5
 * fps (a health line per step, the last "at most 5 fps"), the client then
 * gets at most 5 stream frames a second while the key presses' draws
 * beside the stream keep coming; once the pressure is gone the steps come back up to the
 * stream's own rate ("at its own frame rate"), more than twice as many
 * frames again (30 fps here; a loaded machine's pipeline may not keep
 * 30). The busy loops run at SCHED_IDLE in a group of their
 * own: the pressure is theirs, the pipeline's CPU is not taken. */
GST_START_TEST (test_saturated_host_lowers_stream_fps)
{
  Hogs *h = hogs_new ();
  guint64 before, during, after, draws;
  SpiceRawSession *s;
  Gateway g;

  if (!h)
    return;
  gateway_start (&g, h, "transcode-vp8", "STREAM_CPU_PRESSURE", FPS_LIMIT);
  fail_unless (wait_pressure (h->pressure, FPS_LIMIT / 2, FALSE, 60, NULL));
  s = spice_raw_session_new (g.port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (s != NULL);
  /* the stream at its own rate */
  while (s->stream_datas < 10)
    fail_unless (spice_raw_session_pump (s, 20000, NULL, NULL),
        "no stream: %s", s->error ? s->error : "timeout");
  count_frames (s, g.guest, FPS_SECS, &before, &draws);

  /* saturated: down to 5 fps, a step every 2 s */
  hogs_start (h);
  fail_unless (pump_until_log (s, g.run, "health: event=stream-fps peer=all "
          "element=s reason=cpu-pressure limit=60", 30));
  fail_unless (pump_until_log (s, g.run, "every stream at most 5 fps", 30));
  fail_unless (runner_process_wait_log (g.run, "every stream at most 20 fps",
          1, 0));
  count_frames (s, g.guest, FPS_SECS, &during, &draws);
  fail_unless (during <= 5 * FPS_SECS + 2, "%" G_GUINT64_FORMAT " frames "
      "in %u s at most 5 fps", during, FPS_SECS);
  fail_unless (draws >= FPS_SECS, "%" G_GUINT64_FORMAT " draws in %u s "
      "of key presses", draws, FPS_SECS);
  fail_unless (before > 2 * during, "%" G_GUINT64_FORMAT " frames in %u s "
      "before the pressure, %" G_GUINT64_FORMAT " with it", before, FPS_SECS,
      during);

  /* the pressure gone: back to the stream's own rate */
  hogs_stop (h);
  fail_unless (pump_until_log (s, g.run, "every stream at its own frame rate",
          60));
  count_frames (s, g.guest, FPS_SECS, &after, &draws);
  fail_unless (after > 2 * during, "%" G_GUINT64_FORMAT " frames in %u s "
      "after the pressure, %" G_GUINT64_FORMAT " with it", after, FPS_SECS,
      during);

  g_print ("stream frames in %u s: %" G_GUINT64_FORMAT " before, %"
      G_GUINT64_FORMAT " saturated, %" G_GUINT64_FORMAT " after\n", FPS_SECS,
      before, during, after);
  spice_raw_session_free (s);
  gateway_stop (&g);
  hogs_free (h);
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
  tcase_add_test (tc, test_saturated_host_lowers_stream_fps);
  suite_add_tcase (s, tc);
  return s;
}

GST_CHECK_MAIN (capacity);
