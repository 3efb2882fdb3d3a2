/* gst-spice tests/guest: the test guest's several heads (issue 29), seen by
 * a spice-client-glib client: --heads N is one surface with N monitors
 * (MONITORS_CONFIG), --displays N is N display channels with a surface
 * each; every head's picture is exact, and a key press redraws the key box
 * on every display. */
#include "guest-test-util.h"
#include "heads-client.h"

#define WAIT_MS (60000 * test_time_factor ())

/* display @id of the client equals @expected (w x h, stride w * 4) */
static void
assert_display (HeadsClient * c, guint id, const guint8 * expected, gint w,
    gint h, const gchar * what)
{
  gint cw = 0, ch = 0, stride = 0, y;
  const guint8 *s = heads_client_surface (c, id, &cw, &ch, &stride);
  guint8 *copy;

  fail_unless (s != NULL, "%s: display %u has no surface", what, id);
  copy = g_malloc ((gsize) cw * ch * 4);
  for (y = 0; y < ch; y++)
    memcpy (copy + (gsize) y * cw * 4, s + (gsize) y * stride, cw * 4);
  assert_frames_equal (copy, cw, ch, expected, w, h, what);
  g_free (copy);
}

static void
expect_describe (HeadsClient * c, const gchar * expected)
{
  gchar *got = heads_client_wait_describe (c, expected, WAIT_MS);
  fail_unless_equals_string (got, expected);
  g_free (got);
}

GST_START_TEST (test_heads)
{
  GuestProcess *gp = start_guest ("--heads=2", "--width=640",
      "--height=480", "--fps=0", NULL);
  HeadsClient *c = heads_client_connect ("127.0.0.1",
      guest_process_get_port (gp));
  guint8 *expected = g_malloc (1280 * 480 * 4);
  guint8 *small = g_malloc (640 * 240 * 4);
  gchar *line;

  fail_unless (heads_client_wait_displays (c, 1, 300, WAIT_MS));
  expect_describe (c, "display 0 1280x480 monitors 2 max 2: "
      "0@0,0 640x480 1@640,0 640x480");
  guest_render_heads_frame (expected, 640, 480, 1280 * 4, 2, 1, 0,
      GUEST_ACTIVITY_IDLE, GUEST_FRAME_NONE, FALSE);
  assert_display (c, 0, expected, 1280, 480, "--heads 2");
  /* the heads differ: head 1 is not head 0 moved */
  fail_if (test_bgrx_count_diff (expected, 1280 * 4, expected + 640 * 4,
          1280 * 4, 640, 480, NULL, NULL) == 0);

  /* a new size: each head 320x240, the monitors follow */
  guest_process_command (gp, "resize 320 240");
  line = guest_process_wait_line (gp, "resized", GUEST_LINE_TIMEOUT_MS);
  fail_unless (line != NULL);
  g_free (line);
  expect_describe (c, "display 0 640x240 monitors 2 max 2: "
      "0@0,0 320x240 1@320,0 320x240");
  fail_unless (heads_client_wait_displays (c, 1, 300, WAIT_MS));
  guest_render_heads_frame (small, 320, 240, 640 * 4, 2, 1, 0,
      GUEST_ACTIVITY_IDLE, GUEST_FRAME_NONE, FALSE);
  assert_display (c, 0, small, 640, 240, "--heads 2 resized");

  heads_client_free (c);
  guest_process_stop (gp);
  g_free (expected);
  g_free (small);
}

GST_END_TEST;

GST_START_TEST (test_displays)
{
  GuestProcess *gp = start_guest ("--displays=2", "--width=640",
      "--height=480", "--fps=0", NULL);
  HeadsClient *c = heads_client_connect ("127.0.0.1",
      guest_process_get_port (gp));
  guint8 *expected = g_malloc (640 * 480 * 4);
  guint8 *other = g_malloc (640 * 480 * 4);
  guint presses, i;

  fail_unless (heads_client_wait_displays (c, 2, 300, WAIT_MS));
  expect_describe (c, "display 0 640x480 monitors 1 max 1: 0@0,0 640x480; "
      "display 1 640x480 monitors 1 max 1: 0@0,0 640x480");
  for (presses = 0; presses < 2; presses++) {
    if (presses) {
      gchar *line;
      guest_process_command (gp, "key");
      line = guest_process_wait_line (gp, "box 1", GUEST_LINE_TIMEOUT_MS);
      fail_unless (line != NULL);
      g_free (line);
      fail_unless (heads_client_wait_displays (c, 2, 500, WAIT_MS));
    }
    for (i = 0; i < 2; i++) {
      guest_render_display_frame (expected, 640, 480, 640 * 4, i, 2, 1,
          presses, GUEST_ACTIVITY_IDLE, GUEST_FRAME_NONE, FALSE);
      assert_display (c, i, expected, 640, 480, presses ?
          "--displays 2 after a key" : "--displays 2");
    }
  }
  /* the two displays' pictures differ */
  guest_render_display_frame (expected, 640, 480, 640 * 4, 0, 2, 1, 0,
      GUEST_ACTIVITY_IDLE, GUEST_FRAME_NONE, FALSE);
  guest_render_display_frame (other, 640, 480, 640 * 4, 1, 2, 1, 0,
      GUEST_ACTIVITY_IDLE, GUEST_FRAME_NONE, FALSE);
  fail_if (test_bgrx_count_diff (expected, 640 * 4, other, 640 * 4, 640, 480,
          NULL, NULL) == 0);

  heads_client_free (c);
  guest_process_stop (gp);
  g_free (expected);
  g_free (other);
}

GST_END_TEST;

GST_START_TEST (test_bad_options)
{
  const gchar *bad[][2] = { {"--heads=0", NULL}, {"--displays=9", NULL},
  {"--heads=2", "--displays=2"}
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (bad); i++) {
    GError *err = NULL;
    const gchar *args[] = { bad[i][0], bad[i][1], NULL };
    GuestProcess *gp = guest_process_start (args, &err);
    fail_unless (gp == NULL, "%s %s accepted", bad[i][0],
        bad[i][1] ? bad[i][1] : "");
    g_clear_error (&err);
  }
}

GST_END_TEST;

static Suite *
guest_heads_suite (void)
{
  Suite *s = suite_create ("guest-heads");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 300);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_heads);
  tcase_add_test (tc, test_displays);
  tcase_add_test (tc, test_bad_options);
  return s;
}

GST_CHECK_MAIN (guest_heads);
