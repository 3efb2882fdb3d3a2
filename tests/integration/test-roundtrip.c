/* The whole chain against real SPICE software on both ends:
 *   test guest (libspice-server) -> spicesrc -> spicetiler -> spicesink
 *   -> spicesrc (spice-client-glib, as a client) -> appsink
 * After motion stops the client's frame must equal the guest's picture bit
 * for bit, and keys pressed at the client must reach the guest with the
 * exact scancode.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <gst/check/gstcheck.h>
#include <gst/app/gstappsink.h>
#include <gst/video/navigation.h>
#include <gst/video/video.h>
#include <string.h>

#include <signal.h>
#include <spice/enums.h>

#include "guest-launcher.h"
#include "guest-render.h"
#include "ppm.h"
#include "runner-process.h"

typedef struct {
  GuestProcess *guest;
  GstElement *server;
  GstElement *client;
  GstElement *appsink;
  GstSample *last;              /* newest frame the client produced */
  guint port;
} Chain;

static void
chain_start (Chain * c, const gchar * activity, const gchar * tiler_props,
    const gchar * stream_branch)
{
  const gchar *args[] = { "--activity", activity, NULL };
  GError *err = NULL;
  gchar *uri, *desc;

  c->guest = guest_process_start (args, &err);
  fail_unless (c->guest != NULL, "%s", err ? err->message : "");
  uri = guest_process_get_uri (c->guest);
  c->port = test_pick_free_port ();
  desc = g_strdup_printf ("spicesrc uri=%s ! spicetiler name=t %s "
      "t.draw ! spicesink name=s port=%u %s", uri, tiler_props, c->port,
      stream_branch);
  c->server = gst_parse_launch (desc, &err);
  fail_unless (c->server != NULL, "%s: %s", desc, err ? err->message : "");
  g_free (desc);
  g_free (uri);
  fail_unless (gst_element_set_state (c->server, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);

  desc = g_strdup_printf ("spicesrc uri=spice://127.0.0.1:%u reconnect=always"
      " ! appsink name=out caps=video/x-raw sync=false max-buffers=1 "
      "drop=true", c->port);
  c->client = gst_parse_launch (desc, &err);
  fail_unless (c->client != NULL, "%s", err ? err->message : "");
  g_free (desc);
  c->appsink = gst_bin_get_by_name (GST_BIN (c->client), "out");
  fail_unless (gst_element_set_state (c->client, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
}

static void
chain_stop (Chain * c)
{
  gst_element_set_state (c->client, GST_STATE_NULL);
  gst_element_set_state (c->server, GST_STATE_NULL);
  if (c->last)
    gst_sample_unref (c->last);
  gst_object_unref (c->appsink);
  gst_object_unref (c->client);
  gst_object_unref (c->server);
  guest_process_stop (c->guest);
}

static void
check_no_error (GstElement * pipeline)
{
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);

  if (msg) {
    GError *err = NULL;
    gchar *dbg = NULL;

    gst_message_parse_error (msg, &err, &dbg);
    fail ("error from %s: %s (%s)", GST_MESSAGE_SRC_NAME (msg), err->message,
        dbg);
  }
  gst_object_unref (bus);
}

static guint64
sample_diff (GstSample * s, const guint8 * expected, gint w, gint h)
{
  GstVideoInfo info;
  GstVideoFrame frame;
  guint64 diff = G_MAXUINT64;

  fail_unless (gst_video_info_from_caps (&info, gst_sample_get_caps (s)));
  if (expected && GST_VIDEO_INFO_WIDTH (&info) == w &&
      GST_VIDEO_INFO_HEIGHT (&info) == h &&
      gst_video_frame_map (&frame, &info, gst_sample_get_buffer (s),
          GST_MAP_READ)) {
    diff = test_bgrx_count_diff (GST_VIDEO_FRAME_PLANE_DATA (&frame, 0),
        GST_VIDEO_FRAME_PLANE_STRIDE (&frame, 0), expected, w * 4, w, h,
        NULL, NULL);
    gst_video_frame_unmap (&frame);
  }
  return diff;
}

/* Until the client's newest frame equals @expected: returns the ms it took
 * or -1 (and the last difference in @diff). The client makes frames only
 * when something changes, so the newest frame seen so far counts too. */
static gint64
pull_until_exact (Chain * c, const guint8 * expected, gint w, gint h,
    guint timeout_ms, guint64 * diff)
{
  gint64 t0 = g_get_monotonic_time ();
  gint64 end = t0 + (gint64) timeout_ms * 1000;

  *diff = c->last ? sample_diff (c->last, expected, w, h) : G_MAXUINT64;
  while (*diff != 0 && g_get_monotonic_time () < end) {
    GstSample *s = gst_app_sink_try_pull_sample (GST_APP_SINK (c->appsink),
        500 * GST_MSECOND);

    check_no_error (c->server);
    check_no_error (c->client);
    if (!s)
      continue;
    if (c->last)
      gst_sample_unref (c->last);
    c->last = s;
    *diff = sample_diff (s, expected, w, h);
  }
  return *diff == 0 ? (g_get_monotonic_time () - t0) / 1000 : -1;
}

static guint64
frozen_frame (GuestProcess * gp)
{
  gchar *line, *p;
  guint64 n;

  guest_process_command (gp, "freeze");
  line = guest_process_wait_line (gp, "frozen", GUEST_LINE_TIMEOUT_MS);
  fail_unless (line != NULL);
  /* "frozen NAME N" */
  p = strrchr (line, ' ');
  n = g_ascii_strtoull (p + 1, NULL, 10);
  g_free (line);
  return n;
}

static guint64
sink_stream_frames_in (Chain * c)
{
  GstElement *sink = gst_bin_get_by_name (GST_BIN (c->server), "s");
  GstStructure *st = NULL;
  guint64 n = 0;

  g_object_get (sink, "stats", &st, NULL);
  fail_unless (st != NULL);
  fail_unless (gst_structure_get_uint64 (st, "stream-frames-in", &n));
  gst_structure_free (st);
  gst_object_unref (sink);
  return n;
}

static void
roundtrip_exact (const gchar * activity, GuestActivity kind,
    const gchar * tiler_props, const gchar * stream_branch,
    gboolean expect_stream)
{
  Chain c = { 0, };
  guint8 *expected;
  guint64 frame_no, diff;
  gint64 ms;
  gchar *line;

  chain_start (&c, activity, tiler_props, stream_branch);
  /* let it move for a while, then stop the motion */
  fail_unless (pull_until_exact (&c, NULL, 0, 0, 4000, &diff) < 0);
  line = guest_process_wait_line (c.guest, "client connected", 1000);
  g_free (line);
  if (expect_stream) {
    /* a stream starts after ~20 changes in a row: give a slow (sanitized,
     * loaded) machine time */
    gint64 end = g_get_monotonic_time () + 20 * G_USEC_PER_SEC *
        test_time_factor ();

    while (sink_stream_frames_in (&c) == 0 && g_get_monotonic_time () < end)
      pull_until_exact (&c, NULL, 0, 0, 500, &diff);
    fail_unless (sink_stream_frames_in (&c) > 0,
        "%s: the animation was not streamed", activity);
  }
  frame_no = frozen_frame (c.guest);
  expected = guest_render_frame_new (GUEST_DEFAULT_WIDTH,
      GUEST_DEFAULT_HEIGHT, 1, 0, kind, (gint64) frame_no);
  ms = pull_until_exact (&c, expected, GUEST_DEFAULT_WIDTH,
      GUEST_DEFAULT_HEIGHT, 30000 * test_time_factor (), &diff);
  fail_unless (ms >= 0, "%s: the client never got the exact picture (%"
      G_GUINT64_FORMAT " pixels differ)", activity, diff);
  GST_INFO ("%s (%s): exact picture at the client %" G_GINT64_FORMAT
      " ms after the motion stopped", activity, stream_branch, ms);
  g_free (expected);
  chain_stop (&c);
}

#define VP8_BRANCH "t.stream ! queue max-size-buffers=1 leaky=downstream ! " \
  "vp8enc deadline=1 ! s.stream_0"
#define MJPEG_BRANCH "t.stream ! queue max-size-buffers=1 leaky=downstream ! " \
  "jpegenc ! s.stream_0"

GST_START_TEST (test_roundtrip_exact_busy_vp8)
{
  roundtrip_exact ("busy", GUEST_ACTIVITY_BUSY, "", VP8_BRANCH, TRUE);
}

GST_END_TEST;

GST_START_TEST (test_roundtrip_exact_video_mjpeg)
{
  roundtrip_exact ("video", GUEST_ACTIVITY_VIDEO, "", MJPEG_BRANCH, TRUE);
}

GST_END_TEST;

GST_START_TEST (test_roundtrip_exact_text_lossless)
{
  roundtrip_exact ("text", GUEST_ACTIVITY_TEXT, "streaming=off", "",
      FALSE);
}

GST_END_TEST;

/* Presses and releases @key at the far client (with an exact @scancode when
 * non-zero) and waits for the guest to log both with @logged. */
static void
key_through_chain (Chain * c, const gchar * key, guint scancode,
    const gchar * logged)
{
  const gchar *events[] = { "key-press", "key-release" };
  const gchar *prefixes[] = { "key down", "key up" };
  guint mark = guest_process_mark (c->guest), i;

  for (i = 0; i < 2; i++) {
    GstStructure *s = gst_structure_new ("application/x-gst-navigation",
        "event", G_TYPE_STRING, events[i], "key", G_TYPE_STRING, key, NULL);

    if (scancode)
      gst_structure_set (s, "scancode", G_TYPE_UINT, scancode, NULL);
    fail_unless (gst_element_send_event (c->appsink,
            gst_event_new_navigation (s)));
  }
  for (i = 0; i < 2; i++) {
    gchar *want = g_strdup_printf ("%s %s", prefixes[i], logged);
    gchar *line = guest_process_wait_line_from (c->guest, mark, want,
        GUEST_LINE_TIMEOUT_MS, NULL);

    fail_unless (line != NULL, "%s: the guest never logged '%s'", key, want);
    g_free (line);
    g_free (want);
  }
}

/* keys at the far client reach the guest with the exact scancode */
GST_START_TEST (test_roundtrip_keys)
{
  Chain c = { 0, };
  guint8 *expected;
  guint64 diff;

  chain_start (&c, "idle", "", VP8_BRANCH);
  expected = guest_render_frame_new (GUEST_DEFAULT_WIDTH,
      GUEST_DEFAULT_HEIGHT, 1, 0, GUEST_ACTIVITY_IDLE, GUEST_FRAME_NONE);
  fail_unless (pull_until_exact (&c, expected, GUEST_DEFAULT_WIDTH,
          GUEST_DEFAULT_HEIGHT, 30000, &diff) >= 0, "%" G_GUINT64_FORMAT,
      diff);
  g_free (expected);

  /* a plain keysym: space; the key box toggles and the client sees it */
  key_through_chain (&c, "space", 0, "0x39");
  expected = guest_render_frame_new (GUEST_DEFAULT_WIDTH,
      GUEST_DEFAULT_HEIGHT, 1, 1, GUEST_ACTIVITY_IDLE, GUEST_FRAME_NONE);
  fail_unless (pull_until_exact (&c, expected, GUEST_DEFAULT_WIDTH,
          GUEST_DEFAULT_HEIGHT, 30000, &diff) >= 0, "%" G_GUINT64_FORMAT,
      diff);
  g_free (expected);

  /* an extended key given by exact scancode travels as that scancode */
  key_through_chain (&c, "Control_R", 0x11d, "0x11d");
  chain_stop (&c);
}

GST_END_TEST;

/* ---- the client's codec preference, with two stream branches ---- */

/* the tiler's stream region in VP8 (stream_0) and MJPEG (stream_1) */
#define TWO_BRANCHES "t.stream ! tee name=v " \
  "v. ! spicestreamenc encoder=\"vp8enc deadline=1 cpu-used=16 " \
  "end-usage=cbr target-bitrate=2000000 keyframe-max-dist=600 " \
  "lag-in-frames=0 threads=1\" ! s.stream_0 " \
  "v. ! spicestreamenc encoder=\"jpegenc quality=85\" ! s.stream_1"

/* a copy of the sink's per-client stats: the client that has
 * (@with_prefs) or has not a preferred-video-codecs field; NULL none */
static GstStructure *
client_of (GstElement * server, gboolean with_prefs)
{
  GstElement *sink = gst_bin_get_by_name (GST_BIN (server), "s");
  GstStructure *st = NULL, *c = NULL;
  const GValue *arr;
  guint i;

  g_object_get (sink, "stats", &st, NULL);
  arr = gst_structure_get_value (st, "client-stats");
  for (i = 0; arr && i < gst_value_array_get_size (arr) && !c; i++) {
    const GstStructure *s =
        gst_value_get_structure (gst_value_array_get_value (arr, i));

    if (gst_structure_has_field (s, "preferred-video-codecs") == with_prefs)
      c = gst_structure_copy (s);
  }
  gst_structure_free (st);
  gst_object_unref (sink);
  return c;
}

/* a number of a client's stats (uint or uint64), 0 without it */
static guint64
stat_of (const GstStructure * c, const gchar * field)
{
  const GValue *v = c ? gst_structure_get_value (c, field) : NULL;

  if (v && G_VALUE_HOLDS_UINT (v))
    return g_value_get_uint (v);
  if (v && G_VALUE_HOLDS_UINT64 (v))
    return g_value_get_uint64 (v);
  return 0;
}

/* waits until the client (with or without preferences) gets @codec's
 * branch and has reported on a stream of @codec (it decodes it) */
static GstStructure *
wait_client_codec (GstElement * server, gboolean with_prefs, guint codec,
    guint timeout_ms)
{
  gint64 end = g_get_monotonic_time () + (gint64) timeout_ms * 1000;
  GstStructure *c = NULL;

  for (;;) {
    if (c)
      gst_structure_free (c);
    c = client_of (server, with_prefs);
    if ((c && stat_of (c, "stream-codec") == codec &&
            stat_of (c, "stream-report-codec") == codec) ||
        g_get_monotonic_time () > end)
      return c;
    check_no_error (server);
    g_usleep (50 * 1000);
  }
}

/* Two spice-gtk clients of a pipeline with two stream branches, VP8 and
 * MJPEG, in front of the guest's moving video: both decode the VP8 stream
 * (the lowest pad); one asks for MJPEG (spice-gtk's
 * change_preferred_video_codec_types, what spicy's menu calls) and
 * decodes the MJPEG stream from then on while the other keeps VP8; both
 * pictures are exact once the motion stops. */
GST_START_TEST (test_roundtrip_codec_choice)
{
  const gchar *args[] = { "--activity", "video", NULL };
  guint factor = test_time_factor ();
  GError *err = NULL;
  GuestProcess *gp = guest_process_start (args, &err);
  gchar *dir = test_tmpdir_new ("gst-spice-codec-choice");
  gchar *shot_a = g_build_filename (dir, "a.ppm", NULL);
  gchar *shot_b = g_build_filename (dir, "b.ppm", NULL);
  gchar *tc = g_build_filename (g_getenv ("GST_SPICE_BUILD_DIR"), "tests",
      "common", "spice-test-client", NULL);
  gchar *uri, *desc, *ps, *mjpeg;
  guint port = test_pick_free_port ();
  GstElement *server;
  RunnerProcess *a, *b;
  GstStructure *ca, *cb;
  guint64 b_frames, frame_no, diff, changes[2] = { 0, 0 };
  guint session[2] = { 0, 0 };
  guint8 *expected;
  gint64 t0;

  fail_unless (gp != NULL, "%s", err ? err->message : "");
  uri = guest_process_get_uri (gp);
  desc = g_strdup_printf ("spicesrc uri=%s ! spicetiler name=t "
      "t.draw ! spicesink name=s port=%u " TWO_BRANCHES, uri, port);
  server = gst_parse_launch (desc, &err);
  fail_unless (server != NULL, "%s: %s", desc, err ? err->message : "");
  fail_unless (gst_element_set_state (server, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  ps = g_strdup_printf ("%u", port);
  mjpeg = g_strdup_printf ("%d", SPICE_VIDEO_CODEC_TYPE_MJPEG);
  {
    const gchar *argv_a[] = { tc, "-p", ps, "--duration-ms", "600000",
      "--timeout", "600", "--dump-on-signal", "-o", shot_a,
      "--later-codecs", mjpeg, NULL
    };
    const gchar *argv_b[] = { tc, "-p", ps, "--duration-ms", "600000",
      "--timeout", "600", "--dump-on-signal", "-o", shot_b, NULL
    };

    a = runner_process_start (dir, argv_a, NULL);
    b = runner_process_start (dir, argv_b, NULL);
  }
  fail_unless (runner_process_wait_log (a, "MARK", 1, 30000 * factor), "%s",
      runner_process_log (a));
  fail_unless (runner_process_wait_log (b, "MARK", 1, 30000 * factor), "%s",
      runner_process_log (b));

  /* both decode VP8: no preference, the lowest pad (before the first
   * VP8 frame, the first frame of MJPEG may have given them that pad) */
  {
    gint64 end = g_get_monotonic_time () + 60 * G_USEC_PER_SEC * factor;
    guint both = 0;

    while (both < 2 && g_get_monotonic_time () < end) {
      GstElement *sink = gst_bin_get_by_name (GST_BIN (server), "s");
      GstStructure *st = NULL;
      const GValue *arr;
      guint i;

      g_usleep (100 * 1000);
      check_no_error (server);
      g_object_get (sink, "stats", &st, NULL);
      arr = gst_structure_get_value (st, "client-stats");
      for (i = 0, both = 0; i < gst_value_array_get_size (arr); i++) {
        const GstStructure *c =
            gst_value_get_structure (gst_value_array_get_value (arr, i));

        both += stat_of (c, "stream-codec") == SPICE_VIDEO_CODEC_TYPE_VP8 &&
            stat_of (c, "stream-report-codec") == SPICE_VIDEO_CODEC_TYPE_VP8;
        changes[i % 2] = stat_of (c, "stream-branch-changes");
        session[i % 2] = stat_of (c, "session-id");
      }
      gst_structure_free (st);
      gst_object_unref (sink);
    }
    fail_unless_equals_int (both, 2);
  }

  /* a asks for MJPEG */
  t0 = g_get_monotonic_time ();
  runner_process_signal (a, SIGUSR2);
  fail_unless (runner_process_wait_log (a, "LATER-SENT", 1, 10000 * factor));
  ca = wait_client_codec (server, TRUE, SPICE_VIDEO_CODEC_TYPE_MJPEG,
      30000 * factor);
  g_print ("RESULT codec choice: the client decodes MJPEG %.0f ms after it "
      "asked (sink stats polled every 50 ms)\n",
      (g_get_monotonic_time () - t0) / 1000.0);
  fail_unless (ca != NULL, "the sink never saw a's preference");
  fail_unless_equals_int (stat_of (ca, "stream-codec"),
      SPICE_VIDEO_CODEC_TYPE_MJPEG);
  fail_unless_equals_int (stat_of (ca, "stream-report-codec"),
      SPICE_VIDEO_CODEC_TYPE_MJPEG);
  /* one move more than before */
  fail_unless_equals_int (stat_of (ca, "stream-branch-changes"),
      changes[stat_of (ca, "session-id") == session[0] ? 0 : 1] + 1);
  gst_structure_free (ca);
  /* b kept VP8, and its stream goes on */
  cb = client_of (server, FALSE);
  fail_unless (cb != NULL);
  b_frames = stat_of (cb, "stream-frames");
  fail_unless_equals_int (stat_of (cb, "stream-codec"),
      SPICE_VIDEO_CODEC_TYPE_VP8);
  fail_unless_equals_int (stat_of (cb, "stream-branch-changes"),
      changes[stat_of (cb, "session-id") == session[0] ? 0 : 1]);
  gst_structure_free (cb);
  g_usleep (G_USEC_PER_SEC);
  cb = wait_client_codec (server, FALSE, SPICE_VIDEO_CODEC_TYPE_VP8, 1000);
  fail_unless (stat_of (cb, "stream-frames") > b_frames);
  fail_unless_equals_int (stat_of (cb, "stream-report-codec"),
      SPICE_VIDEO_CODEC_TYPE_VP8);
  gst_structure_free (cb);

  /* the motion stops: both exact */
  frame_no = frozen_frame (gp);
  t0 = g_get_monotonic_time ();
  expected = guest_render_frame_new (GUEST_DEFAULT_WIDTH,
      GUEST_DEFAULT_HEIGHT, 1, 0, GUEST_ACTIVITY_VIDEO, (gint64) frame_no);
  diff = runner_process_dump_until_exact (a, shot_a, expected,
      GUEST_DEFAULT_WIDTH, GUEST_DEFAULT_HEIGHT, 30000 * factor);
  fail_unless (diff == 0, "a (MJPEG): %" G_GUINT64_FORMAT " pixels differ",
      diff);
  diff = runner_process_dump_until_exact (b, shot_b, expected,
      GUEST_DEFAULT_WIDTH, GUEST_DEFAULT_HEIGHT, 30000 * factor);
  fail_unless (diff == 0, "b (VP8): %" G_GUINT64_FORMAT " pixels differ",
      diff);
  g_print ("RESULT codec choice: both clients exact %.1f s after the motion "
      "stopped\n", (g_get_monotonic_time () - t0) / 1e6);
  fail_unless (runner_process_is_running (a));
  fail_unless (runner_process_is_running (b));
  check_no_error (server);

  runner_process_free (a);
  runner_process_free (b);
  gst_element_set_state (server, GST_STATE_NULL);
  gst_object_unref (server);
  guest_process_stop (gp);
  g_free (expected);
  g_free (mjpeg);
  g_free (ps);
  g_free (desc);
  g_free (uri);
  g_free (tc);
  g_free (shot_a);
  g_free (shot_b);
  test_tmpdir_remove (dir);
}

GST_END_TEST;

static Suite *
roundtrip_suite (void)
{
  Suite *s = suite_create ("roundtrip");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 180);
  tcase_add_test (tc, test_roundtrip_exact_busy_vp8);
  tcase_add_test (tc, test_roundtrip_exact_video_mjpeg);
  tcase_add_test (tc, test_roundtrip_exact_text_lossless);
  tcase_add_test (tc, test_roundtrip_keys);
  tcase_add_test (tc, test_roundtrip_codec_choice);
  return s;
}

GST_CHECK_MAIN (roundtrip);
