/* The shipped pipelines, run by gst-spice-run against the real test guest
 * and checked with spicy-screenshot (a real spice-gtk client), and, idle,
 * with a raw client that counts what arrives.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <gst/check/gstcheck.h>
#include <gst/pbutils/pbutils.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <unistd.h>

#include "guest-launcher.h"
#include "guest-render.h"
#include "ppm.h"
#include "runner-process.h"
#include "spice-raw-client.h"

TEST_TMPDIR_FIXTURE (tmpdir, "gst-spice-pipelines");

static const gchar *shipped[] = { "demo", "transcode-vp8", "transcode-mjpeg",
  "transcode-lossless", "viewer", "record", "serve-desktop", "serve-test",
#ifdef GST_SPICE_HAVE_WEBRTC
  /* spicewebrtcsink's (tests/webrtc plays them in a browser) */
  "browser", "transcode-vp8-browser",
#endif
};

#define pipeline_path runner_process_shipped_pipeline

/* Takes screenshots until one equals @expected (w x h, stride w * 4) or
 * @timeout_s passes; returns the number of differing pixels of the last. */
static guint64
screenshot_until_exact (guint port, const guint8 * expected, gint ew, gint eh,
    guint timeout_s, guint * attempts)
{
  gint64 end = g_get_monotonic_time () + (gint64) timeout_s * G_USEC_PER_SEC;
  guint64 diff = G_MAXUINT64;

  *attempts = 0;
  while (g_get_monotonic_time () < end) {
    GError *err = NULL;
    guint8 *shot = NULL;
    gint w = 0, h = 0, fx = -1, fy = -1;

    (*attempts)++;
    if (!test_spicy_screenshot ("127.0.0.1", port, NULL, 20, &shot, &w, &h,
            &err)) {
      GST_INFO ("screenshot failed: %s", err->message);
      g_clear_error (&err);
      g_usleep (200 * 1000);
      continue;
    }
    if (w == ew && h == eh) {
      diff = test_bgrx_count_diff (shot, w * 4, expected, ew * 4, w, h, &fx,
          &fy);
      GST_INFO ("attempt %u: %" G_GUINT64_FORMAT " pixels differ (first at "
          "%d,%d)", *attempts, diff, fx, fy);
    } else {
      GST_INFO ("attempt %u: size %dx%d", *attempts, w, h);
    }
    g_free (shot);
    if (diff == 0)
      break;
    g_usleep (300 * 1000);
  }
  return diff;
}

/* ---- each element's gst-inspect example ---- */

/* The first element of @bin made by factory @name, or NULL */
static GstElement *
find_by_factory (GstElement * bin, const gchar * name)
{
  GstIterator *it = gst_bin_iterate_all_by_element_factory_name (GST_BIN
      (bin), name);
  GValue v = G_VALUE_INIT;
  GstElement *e = NULL;

  if (gst_iterator_next (it, &v) == GST_ITERATOR_OK) {
    e = g_value_dup_object (&v);
    g_value_unset (&v);
  }
  gst_iterator_free (it);
  return e;
}

static gboolean
got_draws (SpiceRawSession * s, gpointer data)
{
  return s->draws > 0;
}

/* Every element of the plugin ends its gst-inspect description with an
 * example launch line that uses it; the line parses, and one that serves
 * (with the test guest as its upstream and a free port instead of 5910)
 * gives a SPICE client draws. The plugin's origin is the meson option's. */
GST_START_TEST (test_inspect_examples)
{
  GstPlugin *plugin = gst_registry_find_plugin (gst_registry_get (), "spice");
  GList *features = gst_registry_get_feature_list_by_plugin
      (gst_registry_get (), "spice"), *l;
  GuestProcess *guest = guest_process_start (NULL, NULL);
  gchar *uri = guest ? guest_process_get_uri (guest) : NULL;
  guint n = 0, served = 0;

  fail_unless (plugin != NULL);
  fail_unless_equals_string (gst_plugin_get_origin (plugin),
      GST_SPICE_PACKAGE_ORIGIN);
  gst_object_unref (plugin);
  fail_unless (guest != NULL);
  for (l = features; l; l = l->next) {
    const gchar *name = GST_OBJECT_NAME (l->data), *desc, *ex;
    GstElement *p, *self, *src, *sink;
    GError *err = NULL;
    SpiceRawSession *client;
    gint port = -1;

    if (!GST_IS_ELEMENT_FACTORY (l->data))
      continue;
    n++;
    desc = gst_element_factory_get_metadata (l->data,
        GST_ELEMENT_METADATA_DESCRIPTION);
    ex = strstr (desc, " Example: gst-launch-1.0 ");
    fail_unless (ex != NULL, "%s has no example: %s", name, desc);
    ex += strlen (" Example: gst-launch-1.0 ");
    p = gst_parse_launch (ex, &err);
    fail_unless (p != NULL && err == NULL, "%s: %s: %s", name, ex,
        err ? err->message : "");
    self = find_by_factory (p, name);
    fail_unless (self != NULL, "%s's example does not use it: %s", name, ex);
    gst_object_unref (self);
    sink = find_by_factory (p, "spicesink");
    if (!sink) {
      /* spicesrc ! videoconvert ! autovideosink: a window, not run here */
      gst_object_unref (p);
      continue;
    }
    if ((src = find_by_factory (p, "spicesrc"))) {
      g_object_set (src, "uri", uri, NULL);
      gst_object_unref (src);
    }
    g_object_set (sink, "port", 0, NULL);
    fail_if (gst_element_set_state (p, GST_STATE_PLAYING) ==
        GST_STATE_CHANGE_FAILURE, "%s: %s", name, ex);
    g_object_get (sink, "bound-port", &port, NULL);
    fail_unless (port > 0);
    client = spice_raw_session_new (port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
    fail_unless (client != NULL, "%s: %s", name, ex);
    spice_raw_session_pump (client, 30000 * test_time_factor (), got_draws,
        NULL);
    fail_unless (client->draws > 0, "%s: no draw from %s", name, ex);
    spice_raw_session_free (client);
    gst_element_set_state (p, GST_STATE_NULL);
    gst_object_unref (sink);
    gst_object_unref (p);
    served++;
  }
  gst_plugin_feature_list_free (features);
  fail_unless (n >= 4, "%u elements", n);
  fail_unless (served >= 3, "%u examples served", served);
  g_free (uri);
  guest_process_stop (guest);
}

GST_END_TEST;

/* ---- every shipped pipeline parses and finds its elements ---- */

GST_START_TEST (test_shipped_pipelines_check)
{
  guint i;

  for (i = 0; i < G_N_ELEMENTS (shipped); i++) {
    gchar *path = pipeline_path (shipped[i]), *log;
    RunnerProcess *run = runner_process_start_runner (tmpdir, "--check",
        "-D", "UPSTREAM=spice://127.0.0.1:5900", "-D", "OUTPUT=/tmp/x.webm",
        path, NULL);
    gint code = runner_process_wait_exit (run, 60000);

    log = runner_process_log (run);
    fail_unless_equals_int (code, 0);
    fail_unless (strstr (log, "OK") != NULL, "%s: %s", shipped[i], log);
    g_free (log);
    runner_process_free (run);
    g_free (path);
  }
}

GST_END_TEST;

/* ---- the transcoding pipelines serve the guest's exact picture ---- */

static const gchar *served[] = { "demo", "transcode-vp8", "transcode-mjpeg",
  "transcode-lossless"
};

GST_START_TEST (test_pipeline_serves_exact_picture)
{
  const gchar *name = served[__i__];
  const gchar *guest_args[] = { "--activity", "idle", NULL };
  GError *err = NULL;
  GuestProcess *gp = guest_process_start (guest_args, &err);
  gchar *path = pipeline_path (name), *upstream, *guest_port, *listen, *line;
  gchar *uri;
  guint port = test_pick_free_port (), attempts;
  guint8 *expected;
  RunnerProcess *run;
  guint64 diff;

  fail_unless (gp != NULL, "%s", err ? err->message : "");
  /* a distinctive picture: the key box toggled once */
  guest_process_command (gp, "key");
  line = guest_process_wait_line (gp, "box 1", GUEST_LINE_TIMEOUT_MS);
  fail_unless (line != NULL);
  g_free (line);

  uri = guest_process_get_uri (gp);
  upstream = g_strdup_printf ("UPSTREAM=%s", uri);
  g_free (uri);
  guest_port = g_strdup_printf ("GUEST_PORT=%u", guest_process_get_port (gp));
  listen = g_strdup_printf ("LISTEN_PORT=%u", port);
  run = runner_process_start_runner (tmpdir, "--stats-interval", "0",
      "-D", upstream, "-D", guest_port, "-D", listen, path, NULL);
  fail_unless (runner_process_wait_log (run, "playing", 1, 60000),
      "%s did not start", name);

  expected = guest_render_frame_new (GUEST_DEFAULT_WIDTH,
      GUEST_DEFAULT_HEIGHT, 1, 1, GUEST_ACTIVITY_IDLE, GUEST_FRAME_NONE);
  diff = screenshot_until_exact (port, expected, GUEST_DEFAULT_WIDTH,
      GUEST_DEFAULT_HEIGHT, 60, &attempts);
  fail_unless (diff == 0, "%s: the served picture differs in %"
      G_GUINT64_FORMAT " pixels after %u screenshots", name, diff, attempts);
  GST_INFO ("%s: exact after %u screenshot(s)", name, attempts);

  /* it follows the guest: a key press shows in a later picture */
  guest_process_command (gp, "key");
  line = guest_process_wait_line (gp, "box 2", GUEST_LINE_TIMEOUT_MS);
  fail_unless (line != NULL);
  g_free (line);
  g_free (expected);
  expected = guest_render_frame_new (GUEST_DEFAULT_WIDTH,
      GUEST_DEFAULT_HEIGHT, 1, 2, GUEST_ACTIVITY_IDLE, GUEST_FRAME_NONE);
  diff = screenshot_until_exact (port, expected, GUEST_DEFAULT_WIDTH,
      GUEST_DEFAULT_HEIGHT, 60, &attempts);
  fail_unless (diff == 0, "%s: the picture after a key press differs in %"
      G_GUINT64_FORMAT " pixels", name, diff);

  runner_process_signal (run, SIGTERM);
  fail_unless_equals_int (runner_process_wait_exit (run, 20000), 0);
  runner_process_free (run);
  guest_process_stop (gp);
  g_free (expected);
  g_free (upstream);
  g_free (guest_port);
  g_free (listen);
  g_free (path);
}

GST_END_TEST;

/* ---- the upstream guest goes away and comes back ---- */

static RunnerProcess *
start_guest_on (guint port, guint seed)
{
  gchar *bin = guest_process_find_binary ();
  gchar *port_s = g_strdup_printf ("%u", port);
  gchar *seed_s = g_strdup_printf ("%u", seed);
  const gchar *argv[] = { bin, "--port", port_s, "--seed", seed_s,
    "--activity", "idle", NULL
  };
  RunnerProcess *guest = runner_process_start (tmpdir, argv, NULL);

  fail_unless (runner_process_wait_log (guest, "listening", 1, 30000));
  g_free (bin);
  g_free (port_s);
  g_free (seed_s);
  return guest;
}

GST_START_TEST (test_upstream_killed_frames_resume)
{
  guint guest_port = test_pick_free_port (), port = test_pick_free_port ();
  gchar *path = pipeline_path ("transcode-lossless");
  gchar *upstream = g_strdup_printf ("UPSTREAM=spice://127.0.0.1:%u",
      guest_port);
  gchar *listen = g_strdup_printf ("LISTEN_PORT=%u", port);
  RunnerProcess *guest = start_guest_on (guest_port, 1), *run;
  guint8 *expected;
  guint attempts;
  guint64 diff;

  run = runner_process_start_runner (tmpdir, "--stats-interval", "0",
      "-D", upstream, "-D", listen, path, NULL);
  fail_unless (runner_process_wait_log (run, "playing", 1, 60000));
  expected = guest_render_frame_new (GUEST_DEFAULT_WIDTH,
      GUEST_DEFAULT_HEIGHT, 1, 0, GUEST_ACTIVITY_IDLE, GUEST_FRAME_NONE);
  diff = screenshot_until_exact (port, expected, GUEST_DEFAULT_WIDTH,
      GUEST_DEFAULT_HEIGHT, 60, &attempts);
  fail_unless (diff == 0, "first picture differs in %" G_GUINT64_FORMAT
      " pixels", diff);
  g_free (expected);

  /* kill the guest hard, and bring up another one (another seed, so
   * another picture) on the same port */
  runner_process_signal (guest, SIGKILL);
  runner_process_wait_exit (guest, 10000);
  runner_process_free (guest);
  g_usleep (500 * 1000);
  guest = start_guest_on (guest_port, 7);

  expected = guest_render_frame_new (GUEST_DEFAULT_WIDTH,
      GUEST_DEFAULT_HEIGHT, 7, 0, GUEST_ACTIVITY_IDLE, GUEST_FRAME_NONE);
  diff = screenshot_until_exact (port, expected, GUEST_DEFAULT_WIDTH,
      GUEST_DEFAULT_HEIGHT, 90, &attempts);
  fail_unless (diff == 0, "frames did not resume: %" G_GUINT64_FORMAT
      " pixels differ after %u screenshots", diff, attempts);
  fail_unless (runner_process_is_running (run));

  runner_process_signal (run, SIGTERM);
  fail_unless_equals_int (runner_process_wait_exit (run, 20000), 0);
  runner_process_free (run);
  runner_process_free (guest);
  g_free (expected);
  g_free (upstream);
  g_free (listen);
  g_free (path);
}

GST_END_TEST;

/* ---- tickets from files: both ends, and never in the log ---- */

GST_START_TEST (test_password_files_not_logged)
{
  const gchar *guest_args[] = { "--activity", "idle", "--password",
    "up-Secret-1", NULL
  };
  GuestProcess *gp = guest_process_start (guest_args, NULL);
  gchar *path = pipeline_path ("transcode-lossless");
  gchar *up_file = g_build_filename (tmpdir, "upstream.pw", NULL);
  gchar *cl_file = g_build_filename (tmpdir, "clients.pw", NULL);
  guint port = test_pick_free_port ();
  gchar *bin = runner_process_binary ();
  gchar *upstream, *up_def, *cl_def, *listen, *log, *uri;
  guint8 *shot = NULL, *expected;
  RunnerProcess *run;
  gint w = 0, h = 0;
  gint64 end;

  fail_unless (gp != NULL);
  fail_unless (g_file_set_contents (up_file, "up-Secret-1\n", -1, NULL));
  fail_unless (g_file_set_contents (cl_file, "cl-Secret-2\n", -1, NULL));
  uri = guest_process_get_uri (gp);
  upstream = g_strdup_printf ("UPSTREAM=%s", uri);
  g_free (uri);
  up_def = g_strdup_printf ("UPSTREAM_PASSWORD_FILE=%s", up_file);
  cl_def = g_strdup_printf ("PASSWORD_FILE=%s", cl_file);
  listen = g_strdup_printf ("LISTEN_PORT=%u", port);
  {
    const gchar *argv[] = { bin, "--stats-interval", "1", "-D", upstream,
      "-D", up_def, "-D", cl_def, "-D", listen, path, NULL
    };
    const gchar *env[] = { "GST_DEBUG=GST_PIPELINE:5,spicesrc:9,spicesink:9",
      NULL
    };
    run = runner_process_start (tmpdir, argv, env);
  }
  fail_unless (runner_process_wait_log (run, "playing", 1, 60000));

  /* the right ticket gives the guest's exact picture */
  expected = guest_render_frame_new (GUEST_DEFAULT_WIDTH,
      GUEST_DEFAULT_HEIGHT, 1, 0, GUEST_ACTIVITY_IDLE, GUEST_FRAME_NONE);
  end = g_get_monotonic_time () + 60 * G_USEC_PER_SEC;
  while (g_get_monotonic_time () < end) {
    g_clear_pointer (&shot, g_free);
    if (test_spicy_screenshot ("127.0.0.1", port, "cl-Secret-2", 20, &shot,
            &w, &h, NULL) && w == GUEST_DEFAULT_WIDTH &&
        test_bgrx_count_diff (shot, w * 4, expected, w * 4, w, h, NULL,
            NULL) == 0)
      break;
    g_usleep (300 * 1000);
  }
  fail_unless (shot != NULL && test_bgrx_count_diff (shot, w * 4, expected,
          w * 4, w, h, NULL, NULL) == 0, "no exact picture with the ticket");
  g_clear_pointer (&shot, g_free);
  /* no ticket, no picture */
  fail_if (test_spicy_screenshot ("127.0.0.1", port, NULL, 20, &shot, &w, &h,
          NULL));
  g_clear_pointer (&shot, g_free);

  runner_process_signal (run, SIGTERM);
  fail_unless_equals_int (runner_process_wait_exit (run, 20000), 0);
  log = runner_process_log (run);
  /* the parser's log is on (it names the files) but holds no secret */
  fail_unless (strstr (log, "clients.pw") != NULL, "debug log not enabled");
  fail_if (strstr (log, "up-Secret-1") != NULL, "upstream ticket logged");
  fail_if (strstr (log, "cl-Secret-2") != NULL, "client ticket logged");
  g_free (log);

  runner_process_free (run);
  guest_process_stop (gp);
  g_free (expected);
  g_free (upstream);
  g_free (up_def);
  g_free (cl_def);
  g_free (listen);
  g_free (bin);
  g_free (up_file);
  g_free (cl_file);
  g_free (path);
}

GST_END_TEST;

/* ---- the metrics endpoint shows the sink's counters ---- */

GST_START_TEST (test_metrics_sink_counters)
{
  const gchar *guest_args[] = { "--activity", "idle", NULL };
  GuestProcess *gp = guest_process_start (guest_args, NULL);
  guint port = test_pick_free_port (), mport = test_pick_free_port ();
  gchar *path = pipeline_path ("transcode-lossless");
  gchar *upstream, *listen, *maddr, *body = NULL, *uri;
  RunnerProcess *run;
  guint8 *shot = NULL;
  gint w, h;
  gint64 end;

  fail_unless (gp != NULL);
  uri = guest_process_get_uri (gp);
  upstream = g_strdup_printf ("UPSTREAM=%s", uri);
  g_free (uri);
  listen = g_strdup_printf ("LISTEN_PORT=%u", port);
  maddr = g_strdup_printf ("127.0.0.1:%u", mport);
  run = runner_process_start_runner (tmpdir, "--stats-interval", "0",
      "--metrics", maddr, "-D", upstream, "-D", listen, path, NULL);
  fail_unless (runner_process_wait_log (run, "playing", 1, 60000));
  /* one client, so that the per-client counters exist */
  end = g_get_monotonic_time () + 60 * G_USEC_PER_SEC;
  while (!test_spicy_screenshot ("127.0.0.1", port, NULL, 20, &shot, &w, &h,
          NULL) && g_get_monotonic_time () < end)
    g_usleep (200 * 1000);
  fail_unless (shot != NULL);
  g_free (shot);

  body = test_http_get (mport, "/metrics");
  fail_unless (body != NULL);
  GST_INFO ("metrics:\n%s", body);
  fail_unless (strstr (body, "200 OK") != NULL);
  fail_unless (strstr (body, "gst_spice_spicesink_") != NULL, "%s", body);
  fail_unless (strstr (body, "gst_spice_spicesrc_") != NULL, "%s", body);

  runner_process_signal (run, SIGTERM);
  fail_unless_equals_int (runner_process_wait_exit (run, 20000), 0);
  runner_process_free (run);
  guest_process_stop (gp);
  g_free (body);
  g_free (upstream);
  g_free (listen);
  g_free (maddr);
  g_free (path);
}

GST_END_TEST;

/* ---- the upstream refuses our ticket: permanent, no restarts ---- */

GST_START_TEST (test_upstream_auth_refused)
{
  const gchar *guest_args[] = { "--activity", "idle", "--password",
    "right-Secret", NULL
  };
  GuestProcess *gp = guest_process_start (guest_args, NULL);
  gchar *path = pipeline_path ("transcode-lossless");
  gchar *pw = g_build_filename (tmpdir, "wrong.pw", NULL);
  gchar *uri, *upstream, *pw_def, *listen, *log;
  RunnerProcess *run;
  gint64 t0 = g_get_monotonic_time ();

  fail_unless (gp != NULL);
  fail_unless (g_file_set_contents (pw, "wrong-Secret\n", -1, NULL));
  uri = guest_process_get_uri (gp);
  upstream = g_strdup_printf ("UPSTREAM=%s", uri);
  pw_def = g_strdup_printf ("UPSTREAM_PASSWORD_FILE=%s", pw);
  listen = g_strdup_printf ("LISTEN_PORT=%u", test_pick_free_port ());
  run = runner_process_start_runner (tmpdir, "--stats-interval", "0",
      "-D", upstream, "-D", pw_def, "-D", listen, path, NULL);
  fail_unless_equals_int (runner_process_wait_exit (run, 60000), EX_NOPERM);
  log = runner_process_log (run);
  fail_unless (strstr (log, "SPICE authentication failed") != NULL, "%s",
      log);
  fail_unless (strstr (log, "not restarting (exit 77)") != NULL, "%s", log);
  fail_if (strstr (log, "restart 1") != NULL, "%s", log);
  fail_if (strstr (log, "wrong-Secret") != NULL, "%s", log);
  fail_unless (g_get_monotonic_time () - t0 < 20 * G_USEC_PER_SEC);
  g_free (log);
  runner_process_free (run);
  guest_process_stop (gp);
  g_free (uri);
  g_free (upstream);
  g_free (pw_def);
  g_free (listen);
  g_free (pw);
  g_free (path);
}

GST_END_TEST;

/* ---- a recording survives reloads with all its seconds ---- */

/* seconds of media in @file (GstDiscoverer); -1 if unknown */
static gdouble
media_seconds (const gchar * file)
{
  GstDiscoverer *d = gst_discoverer_new (10 * GST_SECOND, NULL);
  gchar *uri = gst_filename_to_uri (file, NULL);
  GstDiscovererInfo *info = d ? gst_discoverer_discover_uri (d, uri, NULL) :
      NULL;
  gdouble s = -1;

  if (info && gst_discoverer_info_get_result (info) == GST_DISCOVERER_OK &&
      GST_CLOCK_TIME_IS_VALID (gst_discoverer_info_get_duration (info)))
    s = gst_discoverer_info_get_duration (info) / (gdouble) GST_SECOND;
  g_clear_object (&info);
  g_clear_object (&d);
  g_free (uri);
  return s;
}

static gint
compare_paths (gconstpointer a, gconstpointer b)
{
  return g_strcmp0 (*(const gchar * const *) a, *(const gchar * const *) b);
}

/* rec-START_TIME.webm in tmpdir, oldest first */
static GPtrArray *
recordings (void)
{
  GDir *dir = g_dir_open (tmpdir, 0, NULL);
  GPtrArray *files = g_ptr_array_new_with_free_func (g_free);
  const gchar *name;

  while ((name = g_dir_read_name (dir)))
    if (g_str_has_prefix (name, "rec-") && g_str_has_suffix (name, ".webm"))
      g_ptr_array_add (files, g_build_filename (tmpdir, name, NULL));
  g_dir_close (dir);
  g_ptr_array_sort (files, compare_paths);
  return files;
}

static void
write_record_env (const gchar * env, const gchar * uri, guint fps)
{
  gchar *record = pipeline_path ("record");
  gchar *text = g_strdup_printf ("PIPELINE=%s\nUPSTREAM=%s\nOUTPUT=%s/rec\n"
      "FPS=%u\nWIDTH=320\nHEIGHT=200\n", record, uri, tmpdir, fps);

  fail_unless (g_file_set_contents (env, text, -1, NULL));
  g_free (text);
  g_free (record);
}

GST_START_TEST (test_record_survives_reload)
{
  const gchar *guest_args[] = { "--activity", "busy", NULL };
  GuestProcess *gp = guest_process_start (guest_args, NULL);
  gchar *env = g_build_filename (tmpdir, "rec.conf", NULL);
  gchar *uri;
  RunnerProcess *run;
  GPtrArray *files;
  gdouble dur1, dur2;

  fail_unless (gp != NULL);
  uri = guest_process_get_uri (gp);
  /* small and slow: the encoder keeps up with real time even on a loaded
   * machine (and under meson's MALLOC_PERTURB_), so that the file's
   * length measures what was kept */
  write_record_env (env, uri, 5);
  run = runner_process_start_runner (tmpdir, "--stats-interval", "0",
      "--env-file", env, NULL);
  fail_unless (runner_process_wait_log (run, "playing", 1, 60000));
  g_usleep (3 * G_USEC_PER_SEC);
  /* unchanged: the same recording goes on */
  runner_process_signal (run, SIGHUP);
  fail_unless (runner_process_wait_log (run, "nothing to do", 1, 10000));
  g_usleep (2 * G_USEC_PER_SEC);
  /* changed: the first file is finished, a second one starts */
  write_record_env (env, uri, 4);
  runner_process_signal (run, SIGHUP);
  fail_unless (runner_process_wait_log (run, "reloaded", 1, 20000));
  fail_unless (runner_process_wait_log (run, "playing", 2, 20000));
  g_usleep (2 * G_USEC_PER_SEC);
  runner_process_signal (run, SIGTERM);
  fail_unless_equals_int (runner_process_wait_exit (run, 20000), 0);

  files = recordings ();
  fail_unless_equals_int (files->len, 2);
  dur1 = media_seconds (g_ptr_array_index (files, 0));
  dur2 = media_seconds (g_ptr_array_index (files, 1));
  GST_INFO ("recordings: %.2f s and %.2f s", dur1, dur2);
  /* 3 s + 2 s before the changing reload: nothing of it lost */
  fail_unless (dur1 >= 4.0, "first recording %s: %.2f s (second %s: "
      "%.2f s)", (gchar *) g_ptr_array_index (files, 0), dur1,
      (gchar *) g_ptr_array_index (files, 1), dur2);
  fail_unless (dur2 >= 1.0, "second recording %.2f s", dur2);
  g_ptr_array_unref (files);
  runner_process_free (run);
  guest_process_stop (gp);
  g_free (uri);
  g_free (env);
}

GST_END_TEST;

/* ---- an idle desktop costs nothing: only keep-alives, next to no CPU ---- */

/* the idle window, and the CPU the pipeline process may use in it: the
 * target is 0.005 cores; the bound leaves room for a loaded machine and
 * still fails on any loop that polls (a thread spinning is 1 core, one
 * waking 1000 times a second with a little work a few hundredths) */
#define IDLE_WINDOW_S 10
#define IDLE_CORES_MAX 0.02
/* no display message for this long: the picture (and its refinement) is
 * complete */
#define SETTLE_S 3

static const gchar *idle_pipelines[] = { "transcode-vp8", "transcode-mjpeg" };

static guint64
proc_ticks (const gchar * pid)
{
  gchar *path = g_strdup_printf ("/proc/%s/stat", pid), *text = NULL, *p;
  gchar **f;
  guint64 t;

  fail_unless (g_file_get_contents (path, &text, NULL, NULL));
  /* fields after the command name, which may hold spaces: state is 3 */
  p = strrchr (text, ')');
  fail_unless (p != NULL);
  f = g_strsplit (p + 2, " ", 0);
  fail_unless (g_strv_length (f) > 13);
  t = g_ascii_strtoull (f[11], NULL, 10) + g_ascii_strtoull (f[12], NULL,
      10);
  g_strfreev (f);
  g_free (text);
  g_free (path);
  return t;
}

static gboolean
picture_is (SpiceRawSession * s, gpointer expected)
{
  return s->canvas && s->width == GUEST_DEFAULT_WIDTH &&
      s->height == GUEST_DEFAULT_HEIGHT &&
      spice_raw_session_compare (s, expected, GUEST_DEFAULT_WIDTH * 4) == 0;
}

/* one message from @c, a PING answered with its PONG; counts it */
static gboolean
read_one (SpiceRawConn * c, guint * pings, guint * others, guint16 * other,
    guint64 * bytes)
{
  guint16 type;
  guint8 *body;
  gsize size;

  if (!spice_raw_read_msg (c, 5000, &type, &body, &size))
    return FALSE;
  *bytes += size + 6;           /* mini header */
  if (type == SPICE_MSG_PING) {
    (*pings)++;
    /* PONG carries the PING's id and timestamp */
    spice_raw_send_msg (c, SPICE_MSGC_PONG, body, MIN (size, 12));
  } else {
    (*others)++;
    *other = type;
  }
  g_free (body);
  return TRUE;
}

GST_START_TEST (test_idle_sends_only_keepalives)
{
  const gchar *name = idle_pipelines[__i__];
  const gchar *guest_args[] = { "--activity", "idle", NULL };
  GError *err = NULL;
  GuestProcess *gp = guest_process_start (guest_args, &err);
  gchar *path = pipeline_path (name), *upstream, *listen;
  gchar *uri;
  const gchar *pid;
  guint port = test_pick_free_port ();
  guint pings = 0, others = 0;
  guint16 other = 0;
  guint64 bytes = 0, draws, t0, t1;
  guint8 *expected;
  RunnerProcess *run;
  SpiceRawSession *s;
  gint64 start, end;
  gdouble cores;

  fail_unless (gp != NULL, "%s", err ? err->message : "");
  uri = guest_process_get_uri (gp);
  upstream = g_strdup_printf ("UPSTREAM=%s", uri);
  g_free (uri);
  listen = g_strdup_printf ("LISTEN_PORT=%u", port);
  run = runner_process_start_runner (tmpdir, "--stats-interval", "0",
      "-D", upstream, "-D", listen, path, NULL);
  fail_unless (runner_process_wait_log (run, "playing", 1, 60000),
      "%s did not start", name);
  pid = g_subprocess_get_identifier (run->proc);
  fail_unless (pid != NULL);

  s = spice_raw_session_new (port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (s != NULL, "no SPICE session with %s", name);
  expected = guest_render_frame_new (GUEST_DEFAULT_WIDTH,
      GUEST_DEFAULT_HEIGHT, 1, 0, GUEST_ACTIVITY_IDLE, GUEST_FRAME_NONE);
  fail_unless (spice_raw_session_pump (s, 60000, picture_is, expected),
      "%s: %s", name, s->error ? s->error : "session failed");
  fail_unless (picture_is (s, expected), "%s: the picture never became "
      "exact", name);
  /* refinement and the last marks: wait until the display is quiet */
  start = g_get_monotonic_time ();
  do {
    draws = s->draws + s->marks;
    fail_unless (spice_raw_session_pump (s, SETTLE_S * 1000, NULL, NULL));
    fail_unless (g_get_monotonic_time () - start < 60 * G_USEC_PER_SEC,
        "%s: the display of an idle guest never became quiet", name);
  } while (s->draws + s->marks != draws);
  fail_unless (picture_is (s, expected));

  /* the idle window: every message on either channel is a PING */
  t0 = proc_ticks (pid);
  start = g_get_monotonic_time ();
  end = start + IDLE_WINDOW_S * G_USEC_PER_SEC;
  for (;;) {
    gint64 left = end - g_get_monotonic_time ();

    if (left <= 0)
      break;
    if (g_socket_condition_timed_wait (s->main->sock, G_IO_IN,
            MIN (left, 50000), NULL, NULL))
      fail_unless (read_one (s->main, &pings, &others, &other, &bytes),
          "%s: main channel closed", name);
    if (g_socket_condition_timed_wait (s->display->sock, G_IO_IN, 0, NULL,
            NULL))
      fail_unless (read_one (s->display, &pings, &others, &other, &bytes),
          "%s: display channel closed", name);
  }
  t1 = proc_ticks (pid);
  cores = (gdouble) (t1 - t0) / sysconf (_SC_CLK_TCK) /
      ((g_get_monotonic_time () - start) / (gdouble) G_USEC_PER_SEC);
  GST_INFO ("%s idle for %d s: %u pings, %u other messages, %"
      G_GUINT64_FORMAT " bytes, %.4f cores", name, IDLE_WINDOW_S, pings,
      others, bytes, cores);
  fail_unless (others == 0, "%s: %u messages other than PING in %d s of "
      "idle (the last of type %u)", name, others, IDLE_WINDOW_S, other);
  fail_unless (pings >= IDLE_WINDOW_S / 2, "%s: only %u keep-alives in %d s",
      name, pings, IDLE_WINDOW_S);
  fail_unless (cores < IDLE_CORES_MAX, "%s: the idle pipeline used %.4f "
      "cores (bound %.3f)", name, cores, IDLE_CORES_MAX);
  fail_unless (runner_process_is_running (run));

  spice_raw_session_free (s);
  runner_process_signal (run, SIGTERM);
  fail_unless_equals_int (runner_process_wait_exit (run, 20000), 0);
  runner_process_free (run);
  guest_process_stop (gp);
  g_free (expected);
  g_free (upstream);
  g_free (listen);
  g_free (path);
}

GST_END_TEST;

/* ---- the lock keys both ways through transcode-vp8 ---- */

/* transcode-vp8 (gst-spice-run) in front of an idle test guest */
static RunnerProcess *
start_transcode_vp8 (GuestProcess ** gp, guint port)
{
  const gchar *guest_args[] = { "--activity", "idle", NULL };
  GError *err = NULL;
  gchar *path = pipeline_path ("transcode-vp8"), *uri, *upstream, *listen;
  RunnerProcess *run;

  *gp = guest_process_start (guest_args, &err);
  fail_unless (*gp != NULL, "%s", err ? err->message : "");
  uri = guest_process_get_uri (*gp);
  upstream = g_strdup_printf ("UPSTREAM=%s", uri);
  listen = g_strdup_printf ("LISTEN_PORT=%u", port);
  run = runner_process_start_runner (tmpdir, "--stats-interval", "0",
      "-D", upstream, "-D", listen, path, NULL);
  fail_unless (runner_process_wait_log (run, "playing", 1,
          60000 * test_time_factor ()), "transcode-vp8 did not start");
  g_free (uri);
  g_free (upstream);
  g_free (listen);
  g_free (path);
  return run;
}

/* ends what start_transcode_vp8() started; the runner exits cleanly */
static void
stop_transcode (RunnerProcess * run, GuestProcess * gp)
{
  runner_process_signal (run, SIGTERM);
  fail_unless_equals_int (runner_process_wait_exit (run, 20000), 0);
  runner_process_free (run);
  guest_process_stop (gp);
}

/* the guest's first line @want from line @from on; fails with @what */
static void
expect_guest_from (GuestProcess * gp, guint from, const gchar * want,
    const gchar * what)
{
  gchar *line = guest_process_wait_line_from (gp, from, want,
      GUEST_LINE_TIMEOUT_MS, NULL);

  fail_unless (line != NULL, "%s: the guest never printed \"%s\"", what,
      want);
  g_free (line);
}

/* the "LOCKS M US" lines of spice-test-client's log: M and US each */
static guint
client_locks (RunnerProcess * client, GArray * values, GArray * times)
{
  gchar *log = runner_process_log (client);
  gchar **lines = g_strsplit (log ? log : "", "\n", -1);
  guint i, n = 0;

  if (values)
    g_array_set_size (values, 0);
  if (times)
    g_array_set_size (times, 0);
  for (i = 0; lines[i]; i++) {
    gint m;
    gint64 us;

    if (sscanf (lines[i], "LOCKS %d %" G_GINT64_FORMAT, &m, &us) != 2)
      continue;
    n++;
    if (values)
      g_array_append_val (values, m);
    if (times)
      g_array_append_val (times, us);
  }
  g_strfreev (lines);
  g_free (log);
  return n;
}

/* waits until the client logged @n LOCKS lines */
static gboolean
client_locks_wait (RunnerProcess * client, guint n, guint timeout_ms)
{
  gint64 end = g_get_monotonic_time () + timeout_ms * (gint64) 1000;

  while (client_locks (client, NULL, NULL) < n) {
    if (g_get_monotonic_time () > end)
      return FALSE;
    g_usleep (2000);
  }
  return TRUE;
}

static gint
cmp_int64 (gconstpointer a, gconstpointer b)
{
  gint64 x = *(const gint64 *) a, y = *(const gint64 *) b;

  return x < y ? -1 : x > y;
}

#define LOCK_TOGGLES 8
/* what the test claims, and the bound it asserts on each toggle */
#define LOCK_MEDIAN_MS 200
#define LOCK_MAX_MS 1000

/* Caps Lock set inside the guest reaches a spice-gtk client's
 * `key-modifiers` (the inputs-modifiers signal) through the shipped
 * pipeline: each of LOCK_TOGGLES toggles once, measured from the command
 * to the guest to the client's signal (median within LOCK_MEDIAN_MS).
 * Num Lock set by the client (spice_inputs_channel_set_key_locks) reaches
 * the guest: one LED change, and in the 3 s after it (spice-server
 * repeats its state after 2 s) neither the guest nor the client sees
 * another. */
GST_START_TEST (test_pipeline_lock_keys)
{
  guint port = test_pick_free_port ();
  guint factor = test_time_factor ();
  GuestProcess *gp;
  RunnerProcess *run = start_transcode_vp8 (&gp, port), *client;
  gchar *tc = g_build_filename (g_getenv ("GST_SPICE_BUILD_DIR"), "tests",
      "common", "spice-test-client", NULL);
  gchar *ps = g_strdup_printf ("%u", port), *line, *want;
  const gchar *argv[] = { tc, "-p", ps, "--log-locks", "--keys", "0x1e",
    "--later-locks", "2", "--duration-ms", "600000", "--timeout", "600",
    NULL
  };
  GArray *values = g_array_new (FALSE, FALSE, sizeof (gint));
  GArray *times = g_array_new (FALSE, FALSE, sizeof (gint64));
  GArray *lat = g_array_new (FALSE, FALSE, sizeof (gint64));
  guint i, mark;
  gint64 median, max;

  client = runner_process_start (tmpdir, argv, NULL);
  /* the client's key shows that its KEY_MODIFIERS of the connect (its
   * locks: none), sent before it, reached the guest */
  fail_unless (runner_process_wait_log (client, "KEYS-SENT", 1,
          30000 * factor), "%s", runner_process_log (client));
  line = guest_process_wait_line (gp, "key up 0x1e", GUEST_LINE_TIMEOUT_MS);
  fail_unless (line != NULL);
  g_free (line);
  /* INPUTS_INIT: no lock */
  fail_unless (client_locks_wait (client, 1, 10000 * factor));
  client_locks (client, values, NULL);
  fail_unless_equals_int (g_array_index (values, gint, 0), 0);

  for (i = 0; i < LOCK_TOGGLES; i++) {
    gint expect = i % 2 ? 0 : SPICE_KEYBOARD_MODIFIER_FLAGS_CAPS_LOCK;
    gint64 t0, dt;

    g_usleep (100 * 1000);
    want = g_strdup_printf ("leds %d", expect);
    t0 = g_get_monotonic_time ();
    guest_process_command (gp, "key 0x3a");
    line = guest_process_wait_line (gp, want, GUEST_LINE_TIMEOUT_MS);
    fail_unless (line != NULL, "the guest never printed \"%s\"", want);
    g_free (line);
    g_free (want);
    fail_unless (client_locks_wait (client, 2 + i, 10000 * factor),
        "toggle %u never reached the client", i);
    client_locks (client, values, times);
    fail_unless_equals_int (g_array_index (values, gint, 1 + i), expect);
    dt = g_array_index (times, gint64, 1 + i) - t0;
    g_array_append_val (lat, dt);
    GST_INFO ("toggle %u: %.1f ms", i, dt / 1000.0);
  }
  g_array_sort (lat, cmp_int64);
  median = g_array_index (lat, gint64, LOCK_TOGGLES / 2);
  max = g_array_index (lat, gint64, LOCK_TOGGLES - 1);
  g_print ("RESULT Caps Lock inside the guest to a spice-gtk client's "
      "key-modifiers through transcode-vp8: median %.1f ms, min %.1f, max "
      "%.1f (%u toggles)\n", median / 1000.0,
      g_array_index (lat, gint64, 0) / 1000.0, max / 1000.0, LOCK_TOGGLES);
  fail_unless (median < LOCK_MEDIAN_MS * 1000 * (gint64) factor,
      "median %.1f ms", median / 1000.0);
  fail_unless (max < LOCK_MAX_MS * 1000 * (gint64) factor, "max %.1f ms",
      max / 1000.0);

  /* Num Lock from the client */
  mark = guest_process_mark (gp);
  runner_process_signal (client, SIGUSR2);
  expect_guest_from (gp, mark, "leds 2", "Num Lock set by the client");
  fail_unless (guest_process_find_line (gp, mark, "key down 0x45", NULL)
      != NULL);
  fail_unless (client_locks_wait (client, 2 + LOCK_TOGGLES, 10000 * factor));
  g_usleep (3 * G_USEC_PER_SEC);
  fail_unless_equals_int (guest_process_count_lines (gp, mark, "leds "), 1);
  fail_unless_equals_int (client_locks (client, values, NULL),
      2 + LOCK_TOGGLES);
  fail_unless_equals_int (g_array_index (values, gint, 1 + LOCK_TOGGLES),
      SPICE_KEYBOARD_MODIFIER_FLAGS_NUM_LOCK);
  fail_unless (runner_process_is_running (client));

  runner_process_free (client);
  stop_transcode (run, gp);
  g_array_unref (values);
  g_array_unref (times);
  g_array_unref (lat);
  g_free (ps);
  g_free (tc);
}

GST_END_TEST;

/* spice-gtk's debug line when SpiceGtkSession sets the guest's locks to
 * its keyboard's */
#define RV_SYNC "client_modifiers:"

/* the occurrences of @needle in the file @path */
static guint
count_text (const gchar * path, const gchar * needle)
{
  gchar *text = NULL;
  const gchar *p;
  guint n = 0;

  g_file_get_contents (path, &text, NULL, NULL);
  for (p = text; p && (p = strstr (p, needle)); p++)
    n++;
  g_free (text);
  return n;
}

/* `xdotool ARGS…` on remote-viewer's X server (@xenv: "DISPLAY XAUTHORITY") */
static gboolean
xdotool (const gchar * xenv, const gchar * const *args)
{
  gchar **envp = g_get_environ ();
  gchar **x = g_strsplit (xenv, " ", 2);
  GPtrArray *argv = g_ptr_array_new ();
  gint status = -1;
  gboolean ok;

  envp = g_environ_setenv (envp, "DISPLAY", x[0], TRUE);
  if (x[1])
    envp = g_environ_setenv (envp, "XAUTHORITY", x[1], TRUE);
  g_ptr_array_add (argv, (gpointer) "xdotool");
  for (; *args; args++)
    g_ptr_array_add (argv, (gpointer) * args);
  g_ptr_array_add (argv, NULL);
  ok = g_spawn_sync (NULL, (gchar **) argv->pdata, envp, G_SPAWN_SEARCH_PATH,
      NULL, NULL, NULL, NULL, &status, NULL) && status == 0;
  g_ptr_array_unref (argv);
  g_strfreev (x);
  g_strfreev (envp);
  return ok;
}

/* remote-viewer (spice-gtk's SpiceGtkSession: it sets the guest's locks
 * to its own keyboard's whenever the server reports others, and when its
 * keyboard's change while it has no focus) under Xvfb, through
 * transcode-vp8: Num Lock switched on the viewer's X server reaches the
 * guest once; Caps Lock set inside the guest is set back by the viewer
 * (its keyboard has none) once; nothing more in the 3 s after either. */
GST_START_TEST (test_pipeline_lock_keys_remote_viewer)
{
  const gchar *tools[] = { "remote-viewer", "xvfb-run", "xdotool" };
  /* outside its window (the guest's 1280x800 and the toolbar) */
  const gchar *corner[] = { "mousemove", "1275", "1019", NULL };
  const gchar *numlock[] = { "key", "Num_Lock", NULL };
  guint port = test_pick_free_port (), factor = test_time_factor (), i;
  GuestProcess *gp;
  RunnerProcess *run;
  gchar *rv_log, *uri, *log, *xenv, *p;
  GPid pid = 0;
  guint mark, syncs;

  for (i = 0; i < G_N_ELEMENTS (tools); i++) {
    gchar *t = g_find_program_in_path (tools[i]);

    g_free (t);
    if (!t) {
      g_printerr ("SKIP: %s not installed\n", tools[i]);
      return;
    }
  }
  run = start_transcode_vp8 (&gp, port);
  rv_log = g_build_filename (tmpdir, "remote-viewer.log", NULL);
  uri = g_strdup_printf ("spice://127.0.0.1:%u", port);
  pid = test_remote_viewer_start (uri, rv_log, TRUE);
  fail_unless (pid > 0);
  fail_unless (test_file_wait_text (rv_log, "Insert display 0", 1,
          60000 * factor), "remote-viewer did not connect");
  g_file_get_contents (rv_log, &log, NULL, NULL);
  p = strstr (log, "XENV ");
  fail_unless (p != NULL, "%s", log);
  xenv = g_strndup (p + 5, strcspn (p + 5, "\n"));
  g_free (log);
  /* no focus: its keyboard's locks are the X server's, synced by it */
  fail_unless (xdotool (xenv, corner));
  /* its inputs channel is up (spice-gtk's debug log), and the locks it
   * set then (its keyboard's: none) went before anything below */
  fail_unless (test_file_wait_text (rv_log, "inputs-3:0: channel up", 1,
          30000 * factor), "remote-viewer's inputs channel never came up");
  /* its first syncs can follow that line: the count holds still for 1 s */
  syncs = count_text (rv_log, RV_SYNC);
  for (i = 0; i < 20; i++) {
    guint now;

    g_usleep (G_USEC_PER_SEC * factor);
    now = count_text (rv_log, RV_SYNC);
    if (now == syncs)
      break;
    syncs = now;
  }

  mark = guest_process_mark (gp);
  fail_unless (xdotool (xenv, numlock));
  expect_guest_from (gp, mark, "leds 2", "Num Lock on the viewer's keyboard");
  g_usleep (3 * G_USEC_PER_SEC);
  fail_unless_equals_int (guest_process_count_lines (gp, mark, "leds "), 1);
  /* it set them once */
  fail_unless_equals_int (count_text (rv_log, RV_SYNC), syncs + 1);

  mark = guest_process_mark (gp);
  guest_process_command (gp, "key 0x3a");
  expect_guest_from (gp, mark, "leds 6", "Caps Lock inside the guest");
  expect_guest_from (gp, mark, "leds 2", "the viewer sets Caps Lock back");
  g_usleep (3 * G_USEC_PER_SEC);
  fail_unless_equals_int (guest_process_count_lines (gp, mark, "leds "), 2);
  fail_unless_equals_int (count_text (rv_log, RV_SYNC), syncs + 2);
  fail_unless_equals_int (waitpid (pid, NULL, WNOHANG), 0);

  test_remote_viewer_stop (pid);
  stop_transcode (run, gp);
  g_free (xenv);
  g_free (uri);
  g_free (rv_log);
}

GST_END_TEST;

static Suite *
pipelines_suite (void)
{
  Suite *s = suite_create ("pipelines");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_checked_fixture (tc, tmpdir_setup, tmpdir_teardown);
  tcase_set_timeout (tc, 300);
  tcase_add_test (tc, test_shipped_pipelines_check);
  tcase_add_test (tc, test_inspect_examples);
  tcase_add_loop_test (tc, test_pipeline_serves_exact_picture, 0,
      G_N_ELEMENTS (served));
  tcase_add_test (tc, test_upstream_killed_frames_resume);
  tcase_add_test (tc, test_metrics_sink_counters);
  tcase_add_test (tc, test_password_files_not_logged);
  tcase_add_test (tc, test_upstream_auth_refused);
  tcase_add_test (tc, test_record_survives_reload);
  tcase_add_test (tc, test_pipeline_lock_keys);
  tcase_add_test (tc, test_pipeline_lock_keys_remote_viewer);
  tcase_add_loop_test (tc, test_idle_sends_only_keepalives, 0,
      G_N_ELEMENTS (idle_pipelines));
  return s;
}

GST_CHECK_MAIN (pipelines);
