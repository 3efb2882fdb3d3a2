/* gst-spice tests: spicesrc against a real qemu (TCG, -vga std, no disk)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * spicesrc's frame must equal what spicy-screenshot captures from the same
 * qemu. SeaBIOS ends on "No bootable device." with a blinking text cursor,
 * so the screen alternates between two pictures: we collect the distinct
 * screenshots once the screen is stable and accept a frame equal to any.
 * Skipped (not failed) when qemu-system-x86_64 is not installed.
 */
#include "spicesrc-test-util.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

typedef struct
{
  guint8 *px;
  gint w, h;
} Shot;

static void
shot_free (gpointer p)
{
  Shot *s = p;

  g_free (s->px);
  g_free (s);
}

static gboolean
shot_equal (const Shot * a, const guint8 * px, gint w, gint h)
{
  return a->w == w && a->h == h &&
      test_bgrx_count_diff (a->px, w * 4, px, w * 4, w, h, NULL, NULL) == 0;
}

static GPid qemu_pid;

/* qemu dies with the test process, whatever happens to it */
static void
child_setup (gpointer data)
{
  prctl (PR_SET_PDEATHSIG, SIGKILL);
}

static void
kill_qemu (void)
{
  if (qemu_pid > 0) {
    kill (qemu_pid, SIGKILL);
    waitpid (qemu_pid, NULL, 0);
    qemu_pid = 0;
  }
}

GST_START_TEST (test_qemu_matches_screenshot)
{
  gchar *qemu = g_find_program_in_path ("qemu-system-x86_64");
  gchar *spicy = g_find_program_in_path ("spicy-screenshot");
  guint port;
  gchar *spice_arg, *uri;
  GError *err = NULL;
  GPtrArray *shots;
  GstHarness *h;
  gint64 end;
  gboolean stable = FALSE, matched = FALSE;
  guint64 best = G_MAXUINT64;
  guint frames = 0;

  if (!qemu || !spicy) {
    g_printerr ("SKIP: qemu-system-x86_64 or spicy-screenshot not installed\n");
    g_free (qemu);
    g_free (spicy);
    return;
  }

  port = test_pick_free_port ();
  spice_arg = g_strdup_printf ("port=%u,addr=127.0.0.1,disable-ticketing=on",
      port);
  {
    const gchar *argv[] = { qemu, "-display", "none", "-spice", spice_arg,
      "-m", "64", "-nodefaults", "-vga", "std", "-accel", "tcg", NULL
    };
    fail_unless (g_spawn_async (NULL, (gchar **) argv, NULL,
            G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL, child_setup,
            NULL, &qemu_pid, &err), "%s", err ? err->message : "");
  }

  /* screenshots until the screen alternates between at most 2 pictures:
   * 6 consecutive shots with at most 2 distinct ones */
  shots = g_ptr_array_new_with_free_func (shot_free);
  end = g_get_monotonic_time () + 60 * G_USEC_PER_SEC;
  while (!stable && g_get_monotonic_time () < end) {
    Shot *s = g_new0 (Shot, 1);
    GError *e = NULL;

    if (!test_spicy_screenshot ("127.0.0.1", port, NULL, 20, &s->px, &s->w,
            &s->h, &e)) {
      GST_INFO ("no screenshot yet: %s", e ? e->message : "");
      g_clear_error (&e);
      shot_free (s);
      g_usleep (200 * 1000);
      continue;
    }
    g_ptr_array_add (shots, s);
    if (shots->len > 6)
      g_ptr_array_remove_index (shots, 0);
    if (shots->len == 6) {
      guint i, j, distinct = 0;

      for (i = 0; i < shots->len; i++) {
        Shot *a = g_ptr_array_index (shots, i);
        gboolean dup = FALSE;

        for (j = 0; j < i && !dup; j++)
          dup = shot_equal (g_ptr_array_index (shots, j), a->px, a->w, a->h);
        distinct += !dup;
      }
      stable = distinct <= 2;
    }
    g_usleep (150 * 1000);
  }
  fail_unless (stable, "qemu's screen never settled");
  {
    Shot *s = g_ptr_array_index (shots, shots->len - 1);
    g_printerr ("qemu screen %dx%d is stable\n", s->w, s->h);
  }

  /* spicesrc (qemu takes one client at a time: screenshots are done) */
  uri = g_strdup_printf ("spice://127.0.0.1:%u", port);
  h = harness_for (uri, NULL);
  end = g_get_monotonic_time () + 60 * G_USEC_PER_SEC;
  while (!matched && g_get_monotonic_time () < end) {
    GstBuffer *buf = pull_within (h, 1000);
    gint w, ht;
    GstMapInfo map;
    guint i;

    if (!buf)
      continue;
    frames++;
    current_size (h, &w, &ht);
    fail_unless (gst_buffer_map (buf, &map, GST_MAP_READ));
    for (i = 0; i < shots->len && !matched; i++) {
      Shot *s = g_ptr_array_index (shots, i);

      if (s->w == w && s->h == ht) {
        guint64 d = test_bgrx_count_diff (s->px, w * 4, map.data, w * 4, w,
            ht, NULL, NULL);

        best = MIN (best, d);
        matched = d == 0;
      }
    }
    gst_buffer_unmap (buf, &map);
    gst_buffer_unref (buf);
  }
  g_printerr ("qemu: %u spicesrc frames, match %d (best diff %"
      G_GUINT64_FORMAT ")\n", frames, matched, best);
  fail_unless (matched, "no spicesrc frame equals a spicy-screenshot "
      "(%u frames, best diff %" G_GUINT64_FORMAT " pixels)", frames, best);

  /* negotiation waited for the real size: every caps event is the
   * server's (720x400 text mode), none is the 1280x800 fallback */
  {
    GstEvent *ev;
    guint n_caps = 0;

    while ((ev = gst_harness_try_pull_event (h))) {
      if (GST_EVENT_TYPE (ev) == GST_EVENT_CAPS) {
        GstCaps *caps;
        gint cw = 0, ch = 0;
        Shot *s = g_ptr_array_index (shots, shots->len - 1);

        gst_event_parse_caps (ev, &caps);
        gst_structure_get_int (gst_caps_get_structure (caps, 0), "width", &cw);
        gst_structure_get_int (gst_caps_get_structure (caps, 0), "height",
            &ch);
        fail_unless (cw == s->w && ch == s->h, "caps %dx%d, screen %dx%d",
            cw, ch, s->w, s->h);
        n_caps++;
      }
      gst_event_unref (ev);
    }
    fail_unless_equals_int (n_caps, 1);
  }

  gst_harness_teardown (h);
  g_ptr_array_unref (shots);
  kill_qemu ();
  g_free (uri);
  g_free (spice_arg);
  g_free (qemu);
  g_free (spicy);
}

GST_END_TEST;

static void
teardown (void)
{
  kill_qemu ();
}

static Suite *
spicesrc_qemu_suite (void)
{
  Suite *s = suite_create ("spicesrc-qemu");
  TCase *tc = tcase_create ("qemu");

  tcase_set_timeout (tc, 240);
  tcase_add_checked_fixture (tc, NULL, teardown);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_qemu_matches_screenshot);
  return s;
}

GST_CHECK_MAIN (spicesrc_qemu);
