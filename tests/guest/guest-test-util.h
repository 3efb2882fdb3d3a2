/* gst-spice tests/guest: small helpers shared by the guest tests. */
#ifndef GUEST_TEST_UTIL_H
#define GUEST_TEST_UTIL_H

#include <gst/check/gstcheck.h>
#include <glib/gstdio.h>
#include <unistd.h>
#include <stdarg.h>
#include <string.h>

#include "guest-launcher.h"
#include "guest-render.h"
#include "ppm.h"

/* Starts the guest with the given NULL-terminated arguments; fails the test
 * if it does not come up. */
static inline GuestProcess *
start_guest (const gchar * first, ...)
{
  GPtrArray *args = g_ptr_array_new ();
  GError *err = NULL;
  GuestProcess *gp;
  va_list ap;
  const gchar *a;

  va_start (ap, first);
  for (a = first; a != NULL; a = va_arg (ap, const gchar *))
    g_ptr_array_add (args, (gpointer) a);
  va_end (ap);
  g_ptr_array_add (args, NULL);
  gp = guest_process_start ((const gchar * const *) args->pdata, &err);
  g_ptr_array_unref (args);
  fail_unless (gp != NULL, "guest did not start: %s",
      err ? err->message : "?");
  return gp;
}

/* Exact RGB comparison (x byte ignored). On a mismatch both pictures are
 * written next to each other in the temp dir and the test fails. */
static inline void
assert_frames_equal (const guint8 * got, gint gw, gint gh,
    const guint8 * expected, gint ew, gint eh, const gchar * what)
{
  gint fx, fy;
  guint64 diff;

  fail_unless (gw == ew && gh == eh, "%s: size %dx%d, expected %dx%d", what,
      gw, gh, ew, eh);
  diff = test_bgrx_count_diff (got, gw * 4, expected, ew * 4, ew, eh, &fx,
      &fy);
  if (diff != 0) {
    gchar *base = g_strdup_printf ("%s/gst-spice-guest-mismatch-%d",
        g_get_tmp_dir (), (int) getpid ());
    gchar *p1 = g_strconcat (base, "-got.ppm", NULL);
    gchar *p2 = g_strconcat (base, "-expected.ppm", NULL);
    const guint8 *g = got + ((gsize) fy * gw + fx) * 4;
    const guint8 *e = expected + ((gsize) fy * ew + fx) * 4;
    test_ppm_write (p1, got, gw, gh, gw * 4, NULL);
    test_ppm_write (p2, expected, ew, eh, ew * 4, NULL);
    fail ("%s: %" G_GUINT64_FORMAT " pixels differ, first at (%d,%d): got "
        "#%02x%02x%02x expected #%02x%02x%02x (see %s, %s)", what, diff, fx,
        fy, g[2], g[1], g[0], e[2], e[1], e[0], p1, p2);
  }
}

/* The guest's framebuffer (dump) must equal expected. */
static inline void
assert_dump_equals (GuestProcess * gp, const guint8 * expected, gint w,
    gint h, const gchar * what)
{
  guint8 *pix = NULL;
  gint dw = 0, dh = 0;

  fail_unless (guest_process_dump (gp, &pix, &dw, &dh), "%s: dump failed",
      what);
  assert_frames_equal (pix, dw, dh, expected, w, h, what);
  g_free (pix);
}

/* A spicy-screenshot must equal expected. The screenshot is retried a few
 * times (a draw queued just before the client connected may reach the
 * server's canvas a moment later); the last one must be exact. */
static inline void
assert_screenshot_equals (GuestProcess * gp, const gchar * password,
    const guint8 * expected, gint w, gint h, const gchar * what)
{
  guint8 *pix = NULL;
  gint sw = 0, sh = 0, attempt;
  GError *err = NULL;

  for (attempt = 0; attempt < 4; attempt++) {
    g_clear_error (&err);
    g_free (pix);
    pix = NULL;
    if (test_spicy_screenshot ("127.0.0.1", guest_process_get_port (gp),
            password, 60, &pix, &sw, &sh, &err) && sw == w && sh == h &&
        test_bgrx_count_diff (pix, sw * 4, expected, w * 4, w, h, NULL,
            NULL) == 0)
      break;
    g_printerr ("%s: screenshot attempt %d not equal (%s), retrying\n", what,
        attempt, err ? err->message : "pixels differ");
    g_usleep (300 * 1000);
  }
  fail_unless (pix != NULL, "%s: no screenshot: %s", what,
      err ? err->message : "?");
  assert_frames_equal (pix, sw, sh, expected, w, h, what);
  g_free (pix);
  g_clear_error (&err);
}

/* Waits for a line (from the read cursor) or fails the test. */
static inline gchar *
expect_line (GuestProcess * gp, const gchar * prefix)
{
  gchar *line = guest_process_wait_line (gp, prefix, GUEST_LINE_TIMEOUT_MS);
  fail_unless (line != NULL, "guest never printed \"%s\"", prefix);
  return line;
}

static inline void
expect_line_free (GuestProcess * gp, const gchar * prefix)
{
  g_free (expect_line (gp, prefix));
}

#endif /* GUEST_TEST_UTIL_H */
