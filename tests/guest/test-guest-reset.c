/* gst-spice tests/guest: clients that reset their connections (RST, not
 * FIN) while libspice-server writes to them. spice-server then writes to
 * a socket the peer reset; with SIGPIPE at its default that kills the
 * process (status 141 in a shell), which is why qemu ignores SIGPIPE and
 * so does the guest. The guest must survive any number of them and still
 * serve its exact picture.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <sys/socket.h>

#include "guest-test-util.h"
#include "spice-raw-client.h"

#define W GUEST_DEFAULT_WIDTH
#define H GUEST_DEFAULT_HEIGHT
#define RESETS 200

/* fails the test: step @i of @what failed; says whether the guest died of
 * a signal (SIGPIPE: guest_process_stop() gives -1 for a guest that a
 * signal killed, 0 for one that was alive and quit at its SIGTERM) */
static void
fail_guest_gone (GuestProcess * gp, const gchar * what, guint i)
{
  gint status = guest_process_stop (gp);

  fail ("%s %u failed: %s (exit status %d)", what, i, status == -1 ?
      "the guest was killed by a signal" : "the guest was alive", status);
}

/* the guest is still there, and a real client gets its picture exactly */
static void
assert_guest_serves (GuestProcess * gp, const gchar * what)
{
  guint8 *dump = NULL;
  gint w = 0, h = 0;

  fail_unless (guest_process_is_running (gp), "%s: the guest died", what);
  fail_unless (guest_process_dump (gp, &dump, &w, &h), "%s: no dump", what);
  assert_screenshot_equals (gp, NULL, dump, w, h, what);
  g_free (dump);
  fail_unless (guest_process_is_running (gp), "%s: the guest died", what);
}

/* A channel's link up to its ticket (empty password), without waiting
 * for the link result: a reset right after it reaches the guest before it
 * writes the result, so spice-server writes to a socket that the peer
 * reset. FALSE if the guest stopped answering. */
static gboolean
link_send_ticket (SpiceRawConn * c, guint8 type)
{
  TestWireLinkReply r;

  return spice_raw_link_send_mess (c, 0, type, SPICE_RAW_COMMON_CAPS, 0) &&
      spice_raw_link_read_reply (c, &r, GUEST_LINE_TIMEOUT_MS) &&
      spice_raw_link_send_ticket (c, &r, "");
}

/* RESETS main channels, each reset right after its ticket (without the
 * fix the guest died of SIGPIPE within the first three) */
GST_START_TEST (test_reset_after_ticket)
{
  GuestProcess *gp = start_guest ("--image-compression=off", NULL);
  guint port = guest_process_get_port (gp);
  guint i;

  for (i = 0; i < RESETS; i++) {
    SpiceRawConn *c = spice_raw_connect (port, 10);

    if (!c || !link_send_ticket (c, SPICE_CHANNEL_MAIN))
      fail_guest_gone (gp, "link", i);
    spice_raw_reset (c);
  }
  assert_guest_serves (gp, "after resets at the link");
  fail_unless_equals_int (guest_process_stop (gp), 0);
}

GST_END_TEST;

/* Sessions reset while the guest writes to them: main and display linked,
 * the display channel's DISPLAY_INIT sent (no caches), and once its first
 * 64 KiB arrived (the surface's 4 MB bitmap and the activity's draws are
 * on their way: `busy` draws 640x480 30 times a second) both channels are
 * reset. (A display channel reset alone while its main channel stays, or
 * right after its link, crashes spice-server 0.15.1 itself with SIGSEGV in
 * its display worker, qemu 7.2 as well as the guest: not what this test
 * is about.) */
GST_START_TEST (test_reset_while_drawing)
{
  GuestProcess *gp = start_guest ("--image-compression=off",
      "--activity=busy", NULL);
  guint port = guest_process_get_port (gp);
  static const guint8 display_init[14] = { 0 };
  static guint8 head[64 * 1024];
  guint i;

  expect_line_free (gp, "activity busy");
  for (i = 0; i < RESETS / 4; i++) {
    guint mark = guest_process_mark (gp);
    SpiceRawSession *s = spice_raw_session_new (port, NULL,
        SPICE_RAW_DISPLAY_CAPS_ALL);
    gchar *line;

    if (!s || !spice_raw_send_msg (s->display, SPICE_MSGC_DISPLAY_INIT,
            display_init, sizeof (display_init)) ||
        !spice_raw_recv_exact (s->display, head, sizeof (head),
            GUEST_LINE_TIMEOUT_MS))
      fail_guest_gone (gp, "session", i);
    spice_raw_reset (s->display);
    spice_raw_reset (s->main);
    s->display = s->main = NULL;
    spice_raw_session_free (s);
    /* the next session once the guest has let this one go */
    line = guest_process_wait_line_from (gp, mark, "client disconnected",
        GUEST_LINE_TIMEOUT_MS, NULL);
    if (!line)
      fail_guest_gone (gp, "disconnect", i);
    g_free (line);
  }
  guest_process_command (gp, "freeze");
  expect_line_free (gp, "frozen busy ");
  assert_guest_serves (gp, "after resets while drawing");
  fail_unless_equals_int (guest_process_stop (gp), 0);
}

GST_END_TEST;

static Suite *
guest_reset_suite (void)
{
  Suite *s = suite_create ("guest-reset");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 300);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_reset_after_ticket);
  tcase_add_test (tc, test_reset_while_drawing);
  return s;
}

GST_CHECK_MAIN (guest_reset);
