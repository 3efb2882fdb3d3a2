/* gst-spice tests/guest: what spice-test-guest shows, checked against real
 * peers (spicy-screenshot) and its own framebuffer dump, pixel-exact against
 * the guest_render library. */
#include "guest-test-util.h"

#define W GUEST_DEFAULT_WIDTH
#define H GUEST_DEFAULT_HEIGHT

GST_START_TEST (test_screenshot_idle_exact)
{
  GuestProcess *gp = start_guest ("--image-compression=off",
      "--jpeg-wan-compression=never", NULL);
  guint8 *expected = guest_render_frame_new (W, H, 1, 0, GUEST_ACTIVITY_IDLE,
      GUEST_FRAME_NONE);

  assert_screenshot_equals (gp, NULL, expected, W, H, "idle, no compression");
  /* the screenshot client really came and went */
  expect_line_free (gp, "client connected");
  expect_line_free (gp, "client disconnected");
  g_free (expected);
  fail_unless_equals_int (guest_process_stop (gp), 0);
}

GST_END_TEST;

GST_START_TEST (test_screenshot_default_compression_exact)
{
  /* spice-server's default, auto_glz, is lossless on a fast link */
  GuestProcess *gp = start_guest ("--seed=7", "--width=1024", "--height=768",
      NULL);
  guint8 *expected = guest_render_frame_new (1024, 768, 7, 0,
      GUEST_ACTIVITY_IDLE, GUEST_FRAME_NONE);

  assert_screenshot_equals (gp, NULL, expected, 1024, 768,
      "idle, seed 7, 1024x768, auto_glz");
  g_free (expected);
  guest_process_stop (gp);
}

GST_END_TEST;

GST_START_TEST (test_seed_changes_picture)
{
  GuestProcess *gp = start_guest ("--seed=12345", NULL);
  guint8 *seed1 = guest_render_frame_new (W, H, 1, 0, GUEST_ACTIVITY_IDLE,
      GUEST_FRAME_NONE);
  guint8 *expected = guest_render_frame_new (W, H, 12345, 0,
      GUEST_ACTIVITY_IDLE, GUEST_FRAME_NONE);

  fail_unless (test_bgrx_count_diff (seed1, W * 4, expected, W * 4, W, H,
          NULL, NULL) > (guint64) W * H / 50);
  assert_dump_equals (gp, expected, W, H, "seed 12345 dump");
  g_free (seed1);
  g_free (expected);
  guest_process_stop (gp);
}

GST_END_TEST;

GST_START_TEST (test_key_toggles_box)
{
  GuestProcess *gp = start_guest ("--image-compression=off", NULL);
  guint8 *f0 = guest_render_frame_new (W, H, 1, 0, GUEST_ACTIVITY_IDLE,
      GUEST_FRAME_NONE);
  guint8 *f1 = guest_render_frame_new (W, H, 1, 1, GUEST_ACTIVITY_IDLE,
      GUEST_FRAME_NONE);
  guint8 *f2 = guest_render_frame_new (W, H, 1, 2, GUEST_ACTIVITY_IDLE,
      GUEST_FRAME_NONE);
  const guint8 *px;

  /* reddish at the start, greenish after one press */
  px = f0 + (20 * W + 20) * 4;
  fail_unless (px[2] == 0xc0 && px[1] == 0x30 && px[0] == 0x30);
  px = f1 + (20 * W + 20) * 4;
  fail_unless (px[2] == 0x30 && px[1] == 0xc0 && px[0] == 0x30);
  fail_unless (memcmp (f0, f2, (gsize) W * H * 4) == 0);

  guest_process_command (gp, "key");
  expect_line_free (gp, "key down 0x39");
  expect_line_free (gp, "box 1");
  expect_line_free (gp, "key up 0x39");
  assert_dump_equals (gp, f1, W, H, "after one press (dump)");
  assert_screenshot_equals (gp, NULL, f1, W, H, "after one press (client)");

  guest_process_command (gp, "key 0x11d");
  expect_line_free (gp, "key down 0x11d");
  expect_line_free (gp, "box 2");
  expect_line_free (gp, "key up 0x11d");
  assert_dump_equals (gp, f2, W, H, "after two presses (dump)");
  assert_screenshot_equals (gp, NULL, f2, W, H, "after two presses (client)");

  g_free (f0);
  g_free (f1);
  g_free (f2);
  guest_process_stop (gp);
}

GST_END_TEST;

GST_START_TEST (test_resize)
{
  GuestProcess *gp = start_guest ("--image-compression=off", "--seed=5",
      NULL);
  guint8 *expected;

  guest_process_command (gp, "key");
  expect_line_free (gp, "box 1");
  guest_process_command (gp, "resize 800 600");
  expect_line_free (gp, "resized 800 600");
  expected = guest_render_frame_new (800, 600, 5, 1, GUEST_ACTIVITY_IDLE,
      GUEST_FRAME_NONE);
  assert_dump_equals (gp, expected, 800, 600, "800x600 dump");
  assert_screenshot_equals (gp, NULL, expected, 800, 600, "800x600 client");
  g_free (expected);

  guest_process_command (gp, "resize 64 64");
  expect_line_free (gp, "resized 64 64");
  expected = guest_render_frame_new (64, 64, 5, 1, GUEST_ACTIVITY_IDLE,
      GUEST_FRAME_NONE);
  assert_screenshot_equals (gp, NULL, expected, 64, 64, "64x64 client");
  g_free (expected);

  /* out of range: refused, the surface stays */
  guest_process_command (gp, "resize 10 10");
  expect_line_free (gp, "error bad size");
  guest_process_stop (gp);
}

GST_END_TEST;

GST_START_TEST (test_password)
{
  GuestProcess *gp = start_guest ("--password=s3cret",
      "--image-compression=off", NULL);
  guint8 *expected = guest_render_frame_new (W, H, 1, 0, GUEST_ACTIVITY_IDLE,
      GUEST_FRAME_NONE);
  guint8 *pix = NULL;
  gint w = 0, h = 0;
  GError *err = NULL;
  const gchar *bad_passwords[] = { "wrong", "s3cret2", NULL };
  guint mark, i;

  assert_screenshot_equals (gp, "s3cret", expected, W, H, "right password");
  expect_line_free (gp, "client connected");
  expect_line_free (gp, "client disconnected");

  for (i = 0; bad_passwords[i]; i++) {
    const gchar *bad = bad_passwords[i];
    gchar *line;

    mark = guest_process_mark (gp);
    fail_if (test_spicy_screenshot ("127.0.0.1", guest_process_get_port (gp),
            bad, 60, &pix, &w, &h, &err), "password \"%s\" was accepted",
        bad);
    g_clear_error (&err);
    line = guest_process_wait_line_from (gp, mark, "connection dropped",
        GUEST_LINE_TIMEOUT_MS, NULL);
    fail_unless (line != NULL);
    g_free (line);
    fail_if (guest_process_find_line (gp, mark, "client connected", NULL));
  }
  g_free (expected);
  guest_process_stop (gp);
}

GST_END_TEST;

static void
check_activity_frames (GuestActivity kind)
{
  const gchar *name = guest_activity_to_string (kind);
  gchar *arg = g_strdup_printf ("--activity=%s", name);
  gchar *line_prefix = g_strdup_printf ("frame %s 1", name);
  GuestProcess *gp = start_guest ("--fps=0", arg, NULL);
  guint8 *f0 = guest_render_frame_new (W, H, 1, 0, kind, 0);
  guint8 *f1 = guest_render_frame_new (W, H, 1, 0, kind, 1);
  guint8 *idle = guest_render_frame_new (W, H, 1, 0, GUEST_ACTIVITY_IDLE,
      GUEST_FRAME_NONE);
  GuestRect a;

  /* the activity shows, and moves */
  fail_unless (guest_render_activity_rect (W, H, &a));
  fail_unless (test_bgrx_count_diff (f0, W * 4, idle, W * 4, W, H, NULL,
          NULL) > (guint64) a.width * a.height / 4, "%s frame 0", name);
  fail_unless (test_bgrx_count_diff (f0, W * 4, f1, W * 4, W, H, NULL,
          NULL) > 0, "%s frame 0 == frame 1", name);

  expect_line_free (gp, "activity ");
  assert_dump_equals (gp, f0, W, H, name);
  guest_process_command (gp, "step");
  expect_line_free (gp, line_prefix);
  assert_dump_equals (gp, f1, W, H, name);

  /* the window closes: the area shows the background again */
  guest_process_command (gp, "activity idle");
  expect_line_free (gp, "activity idle");
  assert_dump_equals (gp, idle, W, H, "after activity idle");

  g_free (f0);
  g_free (f1);
  g_free (idle);
  g_free (arg);
  g_free (line_prefix);
  guest_process_stop (gp);
}

GST_START_TEST (test_activity_frames)
{
  check_activity_frames (GUEST_ACTIVITY_BUSY);
  check_activity_frames (GUEST_ACTIVITY_HEAVY);
  check_activity_frames (GUEST_ACTIVITY_TEXT);
  check_activity_frames (GUEST_ACTIVITY_VIDEO);
  check_activity_frames (GUEST_ACTIVITY_FILM);
  check_activity_frames (GUEST_ACTIVITY_DESKTOP_VIDEO);
}

GST_END_TEST;

GST_START_TEST (test_activity_screenshot_exact)
{
  /* incompressible noise must cross the wire untouched too */
  GuestProcess *gp = start_guest ("--fps=0", "--activity=heavy", "--seed=9",
      "--image-compression=off", "--jpeg-wan-compression=never", NULL);
  guint8 *expected = guest_render_frame_new (W, H, 9, 0,
      GUEST_ACTIVITY_HEAVY, 0);

  expect_line_free (gp, "activity heavy");
  assert_screenshot_equals (gp, NULL, expected, W, H, "heavy frame 0");
  g_free (expected);
  guest_process_stop (gp);
}

GST_END_TEST;

GST_START_TEST (test_activity_runs_and_freezes)
{
  GuestProcess *gp = start_guest ("--activity=busy", "--fps=30",
      "--log-frames", NULL);
  gchar *line;
  gint64 frame = -1;
  guint8 *expected;

  expect_line_free (gp, "activity busy");
  /* frames come by themselves */
  expect_line_free (gp, "frame busy 3");
  guest_process_command (gp, "freeze");
  line = expect_line (gp, "frozen busy ");
  frame = g_ascii_strtoll (line + strlen ("frozen busy "), NULL, 10);
  fail_unless (frame >= 3, "%s", line);
  g_free (line);

  expected = guest_render_frame_new (W, H, 1, 0, GUEST_ACTIVITY_BUSY, frame);
  assert_dump_equals (gp, expected, W, H, "frozen busy frame");
  g_free (expected);

  /* a new activity starts at frame 0 */
  guest_process_command (gp, "activity video");
  expect_line_free (gp, "activity video");
  guest_process_command (gp, "freeze");
  line = expect_line (gp, "frozen video ");
  frame = g_ascii_strtoll (line + strlen ("frozen video "), NULL, 10);
  g_free (line);
  expected = guest_render_frame_new (W, H, 1, 0, GUEST_ACTIVITY_VIDEO, frame);
  assert_dump_equals (gp, expected, W, H, "frozen video frame");
  g_free (expected);
  guest_process_stop (gp);
}

GST_END_TEST;

GST_START_TEST (test_activity_after_connect)
{
  GuestProcess *gp = start_guest ("--activity=text", "--fps=0",
      "--activity-after-connect", "--image-compression=off", NULL);
  guint8 *idle = guest_render_frame_new (W, H, 1, 0, GUEST_ACTIVITY_IDLE,
      GUEST_FRAME_NONE);
  guint8 *text0 = guest_render_frame_new (W, H, 1, 0, GUEST_ACTIVITY_TEXT, 0);
  guint8 *pix = NULL;
  gint w, h;
  GError *err = NULL;

  expect_line_free (gp, "activity-deferred text");
  fail_if (guest_process_find_line (gp, 0, "activity text", NULL));
  assert_dump_equals (gp, idle, W, H, "before any client");

  /* the first client sees the idle picture; the activity starts as its
   * display channel links */
  fail_unless (test_spicy_screenshot ("127.0.0.1",
          guest_process_get_port (gp), NULL, 60, &pix, &w, &h, &err), "%s",
      err ? err->message : "");
  g_free (pix);
  expect_line_free (gp, "channel up display");
  expect_line_free (gp, "activity text");
  assert_dump_equals (gp, text0, W, H, "after connect");
  g_free (idle);
  g_free (text0);
  guest_process_stop (gp);
}

GST_END_TEST;

GST_START_TEST (test_frame_stamp_and_times)
{
  gchar *times = g_build_filename (g_get_tmp_dir (),
      "gst-spice-frame-times-XXXXXX", NULL);
  gint fd = g_mkstemp (times);
  gchar *arg, *data = NULL, **lines;
  GuestProcess *gp;
  guint8 *expected;
  gint64 last = 0;
  gint i;

  fail_unless (fd >= 0);
  close (fd);
  arg = g_strdup_printf ("--frame-times=%s", times);
  /* desktop-video redraws only its window after frame 0: the client's
   * picture must still be the whole frame, stamp included */
  gp = start_guest ("--fps=0", "--activity=desktop-video", "--frame-stamp",
      arg, "--image-compression=off", NULL);
  expect_line_free (gp, "activity desktop-video");
  guest_process_command (gp, "step");
  expect_line_free (gp, "frame desktop-video 1");
  guest_process_command (gp, "step");
  expect_line_free (gp, "frame desktop-video 2");
  expected = g_malloc ((gsize) W * H * 4);
  guest_render_frame_full (expected, W, H, W * 4, 1, 0,
      GUEST_ACTIVITY_DESKTOP_VIDEO, 2, TRUE);
  assert_dump_equals (gp, expected, W, H, "stamped desktop-video frame 2");
  assert_screenshot_equals (gp, NULL, expected, W, H,
      "stamped desktop-video frame 2 (client)");

  /* one line per drawn frame, in order, monotonic times */
  fail_unless (g_file_get_contents (times, &data, NULL, NULL));
  lines = g_strsplit (g_strstrip (data), "\n", -1);
  fail_unless_equals_int (g_strv_length (lines), 3);
  for (i = 0; i < 3; i++) {
    gchar **f = g_strsplit (lines[i], " ", -1);
    fail_unless_equals_int (g_strv_length (f), 3);
    fail_unless_equals_string (f[0], "desktop-video");
    fail_unless_equals_int (atoi (f[1]), i);
    fail_unless (g_ascii_strtoll (f[2], NULL, 10) >= last);
    last = g_ascii_strtoll (f[2], NULL, 10);
    g_strfreev (f);
  }
  fail_unless (last > 0 && last <= g_get_monotonic_time ());
  g_strfreev (lines);
  g_free (data);
  g_free (expected);
  guest_process_stop (gp);
  g_unlink (times);
  g_free (times);
  g_free (arg);
}

GST_END_TEST;

GST_START_TEST (test_bad_commands)
{
  GuestProcess *gp = start_guest (NULL);

  guest_process_command (gp, "frobnicate");
  expect_line_free (gp, "error unknown command");
  guest_process_command (gp, "activity disco");
  expect_line_free (gp, "error unknown activity");
  guest_process_command (gp, "step");
  expect_line_free (gp, "error no activity");
  guest_process_command (gp, "dump /nonexistent-dir/x.ppm");
  expect_line_free (gp, "error dump");
  guest_process_command (gp, "quit");
  expect_line_free (gp, "quitting");
  fail_unless_equals_int (guest_process_stop (gp), 0);
}

GST_END_TEST;

static Suite *
guest_screen_suite (void)
{
  Suite *s = suite_create ("guest-screen");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 300);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_screenshot_idle_exact);
  tcase_add_test (tc, test_screenshot_default_compression_exact);
  tcase_add_test (tc, test_seed_changes_picture);
  tcase_add_test (tc, test_key_toggles_box);
  tcase_add_test (tc, test_resize);
  tcase_add_test (tc, test_password);
  tcase_add_test (tc, test_activity_frames);
  tcase_add_test (tc, test_activity_screenshot_exact);
  tcase_add_test (tc, test_activity_runs_and_freezes);
  tcase_add_test (tc, test_activity_after_connect);
  tcase_add_test (tc, test_frame_stamp_and_times);
  tcase_add_test (tc, test_bad_commands);
  return s;
}

GST_CHECK_MAIN (guest_screen);
