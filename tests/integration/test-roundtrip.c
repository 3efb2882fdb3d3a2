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

#include "guest-launcher.h"
#include "guest-render.h"
#include "ppm.h"

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
      " ! appsink name=out sync=false max-buffers=1 drop=true", c->port);
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
  return s;
}

GST_CHECK_MAIN (roundtrip);
