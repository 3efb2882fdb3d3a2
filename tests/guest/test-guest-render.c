/* gst-spice tests/guest: the guest_render library (the test guest's pixel
 * model) on its own: determinism, geometry and the character of each
 * activity. */
#include "guest-test-util.h"

#define W GUEST_DEFAULT_WIDTH
#define H GUEST_DEFAULT_HEIGHT

static guint32
px_at (const guint8 * buf, gint stride, gint x, gint y)
{
  const guint8 *p = buf + (gsize) y * stride + (gsize) x * 4;
  return ((guint32) p[2] << 16) | ((guint32) p[1] << 8) | p[0];
}

GST_START_TEST (test_deterministic)
{
  GuestActivity k;

  for (k = GUEST_ACTIVITY_IDLE; k < GUEST_ACTIVITY_N; k++) {
    guint8 *a = guest_render_frame_new (W, H, 42, 3, k, 17);
    guint8 *b = guest_render_frame_new (W, H, 42, 3, k, 17);
    guint8 *c = guest_render_frame_new (W, H, 43, 3, k, 17);
    fail_unless (memcmp (a, b, (gsize) W * H * 4) == 0, "%s",
        guest_activity_to_string (k));
    fail_unless (memcmp (a, c, (gsize) W * H * 4) != 0, "%s: seed ignored",
        guest_activity_to_string (k));
    g_free (a);
    g_free (b);
    g_free (c);
  }
}

GST_END_TEST;

GST_START_TEST (test_activity_names)
{
  GuestActivity k, parsed;

  for (k = GUEST_ACTIVITY_IDLE; k < GUEST_ACTIVITY_N; k++) {
    fail_unless (guest_activity_from_string (guest_activity_to_string (k),
            &parsed));
    fail_unless_equals_int (parsed, k);
  }
  fail_if (guest_activity_from_string ("disco", &parsed));
  fail_if (guest_activity_from_string (NULL, &parsed));
}

GST_END_TEST;

GST_START_TEST (test_background)
{
  guint8 *bg = g_malloc ((gsize) W * H * 4);
  guint32 fg = GUEST_COLOR_GLYPH, back = GUEST_COLOR_BACKGROUND;
  gint cx, cy, x, y, blank = 0, cells = 0, bad_colour = 0, bad_gap = 0;

  guest_render_background (bg, W, H, W * 4, 1);
  for (cy = 0; cy < H / GUEST_CELL_HEIGHT; cy++) {
    for (cx = 0; cx < W / GUEST_CELL_WIDTH; cx++) {
      gboolean any = FALSE;
      for (y = 0; y < GUEST_CELL_HEIGHT; y++) {
        for (x = 0; x < GUEST_CELL_WIDTH; x++) {
          guint32 v = px_at (bg, W * 4, cx * 8 + x, cy * 16 + y);
          bad_colour += !(v == fg || v == back);
          any |= v == fg;
          /* glyphs keep a blank column 0 and rows 0..2: cells separate */
          bad_gap += (x == 0 || y < 3) && v != back;
        }
      }
      cells++;
      blank += !any;
    }
  }
  fail_unless_equals_int (bad_colour, 0);
  fail_unless_equals_int (bad_gap, 0);
  /* about one cell in five is blank */
  fail_unless (blank * 100 / cells >= 15 && blank * 100 / cells <= 25,
      "%d of %d blank", blank, cells);

  /* a sub-rectangle renders exactly what the full render has there */
  {
    guint8 *part = g_malloc0 ((gsize) W * H * 4);
    GuestRect r = { 13, 7, 301, 99 };
    gint bad = 0;
    guest_render_background_rect (part, W * 4, 1, &r);
    for (y = 0; y < H; y++)
      for (x = 0; x < W; x++) {
        gboolean in = x >= r.x && x < r.x + r.width && y >= r.y &&
            y < r.y + r.height;
        if (in)
          bad += px_at (part, W * 4, x, y) != px_at (bg, W * 4, x, y);
        else
          bad += px_at (part, W * 4, x, y) != 0;
      }
    fail_unless_equals_int (bad, 0);
    g_free (part);
  }
  g_free (bg);
}

GST_END_TEST;

GST_START_TEST (test_key_box)
{
  guint8 *f0 = guest_render_frame_new (W, H, 1, 0, GUEST_ACTIVITY_IDLE,
      GUEST_FRAME_NONE);
  guint8 *f3 = guest_render_frame_new (W, H, 1, 3, GUEST_ACTIVITY_IDLE,
      GUEST_FRAME_NONE);
  gint x, y, bad = 0;

  for (y = 0; y < H; y++)
    for (x = 0; x < W; x++) {
      gboolean in = x >= 16 && x < 112 && y >= 16 && y < 112;
      if (in) {
        bad += px_at (f0, W * 4, x, y) != GUEST_COLOR_BOX_OFF;
        bad += px_at (f3, W * 4, x, y) != GUEST_COLOR_BOX_ON;
      } else {
        bad += px_at (f0, W * 4, x, y) != px_at (f3, W * 4, x, y);
      }
    }
  fail_unless_equals_int (bad, 0);
  /* the x byte is always 0xff */
  fail_unless (f0[3] == 0xff && f3[(20 * W + 20) * 4 + 3] == 0xff);
  g_free (f0);
  g_free (f3);
}

GST_END_TEST;

GST_START_TEST (test_activity_rect)
{
  GuestRect a, box;
  gint w, h;

  fail_unless (guest_render_activity_rect (1280, 800, &a));
  fail_unless (a.x == 1280 - 640 - 16 && a.y == 160 && a.width == 640 &&
      a.height == 480);

  for (w = GUEST_MIN_SIZE; w <= 2000; w += 37) {
    for (h = GUEST_MIN_SIZE; h <= 1300; h += 41) {
      fail_unless (guest_render_key_box_rect (w, h, &box));
      if (!guest_render_activity_rect (w, h, &a))
        continue;
      fail_unless (a.width > 0 && a.height > 0);
      fail_unless (a.width <= 640 && a.height <= 480);
      fail_unless (a.x >= 0 && a.y >= 0 && a.x + a.width <= w &&
          a.y + a.height <= h, "%dx%d", w, h);
      /* more than 32 px right of the key box */
      fail_unless (a.x > box.x + box.width + 32, "%dx%d: area at %d", w, h,
          a.x);
    }
  }
  fail_if (guest_render_activity_rect (256, 800, &a));
  fail_unless (a.width == 0);
}

GST_END_TEST;

/* mean absolute difference of horizontally adjacent pixels (green channel) */
static double
roughness (const guint8 * buf, gint w, gint h, gint stride)
{
  guint64 sum = 0;
  gint x, y;

  for (y = 0; y < h; y++)
    for (x = 1; x < w; x++) {
      gint d = buf[(gsize) y * stride + x * 4 + 1] -
          buf[(gsize) y * stride + (x - 1) * 4 + 1];
      sum += ABS (d);
    }
  return (double) sum / ((double) (w - 1) * h);
}

GST_START_TEST (test_activity_character)
{
  gint aw = 640, ah = 480, stride = aw * 4;
  guint8 *a = g_malloc ((gsize) stride * ah);
  guint8 *b = g_malloc ((gsize) stride * ah);
  double busy, heavy, video, busy_hi;
  gint i;

  /* busy: smooth high bits, noisy low 3 bits */
  guest_render_activity (GUEST_ACTIVITY_BUSY, 1, 10, a, aw, ah, stride);
  busy = roughness (a, aw, ah, stride);
  for (i = 0; i < aw * ah * 4; i++)
    b[i] = a[i] & 0xf8;
  busy_hi = roughness (b, aw, ah, stride);
  fail_unless (busy > 2.0 && busy < 6.0, "busy roughness %f", busy);
  fail_unless (busy_hi < 5.0, "busy high bits roughness %f", busy_hi);

  /* heavy: noise all over (~85 for uniform bytes) */
  guest_render_activity (GUEST_ACTIVITY_HEAVY, 1, 10, a, aw, ah, stride);
  heavy = roughness (a, aw, ah, stride);
  fail_unless (heavy > 70.0, "heavy roughness %f", heavy);

  /* video: smooth */
  guest_render_activity (GUEST_ACTIVITY_VIDEO, 1, 10, a, aw, ah, stride);
  video = roughness (a, aw, ah, stride);
  fail_unless (video < 3.0, "video roughness %f", video);
  guest_render_activity (GUEST_ACTIVITY_VIDEO, 1, 11, b, aw, ah, stride);
  fail_unless (memcmp (a, b, (gsize) stride * ah) != 0, "video static");

  /* text: frame t+1 is frame t scrolled up by GUEST_TEXT_SCROLL_PX */
  guest_render_activity (GUEST_ACTIVITY_TEXT, 1, 10, a, aw, ah, stride);
  guest_render_activity (GUEST_ACTIVITY_TEXT, 1, 11, b, aw, ah, stride);
  fail_unless (memcmp (b, a + (gsize) GUEST_TEXT_SCROLL_PX * stride,
          (gsize) (ah - GUEST_TEXT_SCROLL_PX) * stride) == 0);
  fail_unless (memcmp (a, b, (gsize) stride * ah) != 0);

  /* idle draws nothing */
  memset (a, 0x5a, (gsize) stride * ah);
  memset (b, 0x5a, (gsize) stride * ah);
  guest_render_activity (GUEST_ACTIVITY_IDLE, 1, 10, a, aw, ah, stride);
  fail_unless (memcmp (a, b, (gsize) stride * ah) == 0);
  g_free (a);
  g_free (b);
}

GST_END_TEST;

GST_START_TEST (test_film_and_desktop_video)
{
  gint aw = 640, ah = 480, stride = aw * 4;
  guint8 *a = g_malloc ((gsize) stride * ah);
  guint8 *b = g_malloc ((gsize) stride * ah);
  guint8 *c = g_malloc ((gsize) stride * ah);
  double film, film_far;
  GuestRect d;
  gint x, y, outside = 0, inside = 0;

  /* film: natural (mostly smooth, grain of +-8 on top), moving every
   * frame, and the zoom takes it far from where it started */
  guest_render_activity (GUEST_ACTIVITY_FILM, 1, 10, a, aw, ah, stride);
  film = roughness (a, aw, ah, stride);
  fail_unless (film > 2.0 && film < 12.0, "film roughness %f", film);
  guest_render_activity (GUEST_ACTIVITY_FILM, 1, 11, b, aw, ah, stride);
  fail_unless (memcmp (a, b, (gsize) stride * ah) != 0, "film static");
  /* grain aside, frame 11 is close to frame 10, frame 300 (1.5x) is not */
  guest_render_activity (GUEST_ACTIVITY_FILM, 1, GUEST_FILM_ZOOM_PERIOD / 2,
      c, aw, ah, stride);
  film_far = 0;
  for (y = 0; y < ah; y++)
    for (x = 0; x < aw; x++) {
      gsize i = (gsize) y * stride + x * 4 + 1;
      film_far += ABS ((gint) c[i] - a[i]) - ABS ((gint) b[i] - a[i]);
    }
  fail_unless (film_far / (aw * ah) > 4.0, "zoom barely moves: %f",
      film_far / (aw * ah));
  /* film frames repeat with the zoom period (the grain does not) */
  guest_render_activity (GUEST_ACTIVITY_FILM, 2, 10, c, aw, ah, stride);
  fail_unless (memcmp (a, c, (gsize) stride * ah) != 0, "seed ignored");

  /* desktop-video: a 480x270 window on the 8-px grid, off the 64-px grid
   * of the default surface; only the window changes between frames */
  fail_unless (guest_render_damage_rect (GUEST_ACTIVITY_DESKTOP_VIDEO, aw, ah,
          &d));
  fail_unless_equals_int (d.width, GUEST_DESKTOP_VIDEO_WIDTH);
  fail_unless_equals_int (d.height, GUEST_DESKTOP_VIDEO_HEIGHT);
  fail_unless (d.x % 8 == 0 && d.y % 8 == 0 && (624 + d.x) % 64 != 0);
  fail_unless (d.x >= GUEST_QUALITY_TEXT_WIDTH && d.x + d.width <= aw);
  guest_render_activity (GUEST_ACTIVITY_DESKTOP_VIDEO, 1, 10, a, aw, ah,
      stride);
  guest_render_activity (GUEST_ACTIVITY_DESKTOP_VIDEO, 1, 11, b, aw, ah,
      stride);
  for (y = 0; y < ah; y++)
    for (x = 0; x < aw; x++) {
      gboolean in = x >= d.x && x < d.x + d.width && y >= d.y &&
          y < d.y + d.height;
      gboolean diff = px_at (a, stride, x, y) != px_at (b, stride, x, y);
      if (in)
        inside += diff;
      else
        outside += diff;
    }
  fail_unless_equals_int (outside, 0);
  fail_unless (inside > d.width * d.height / 20, "window static: %d", inside);
  /* the window shows the video landscape */
  guest_render_activity (GUEST_ACTIVITY_VIDEO, 1, 10, c, d.width, d.height,
      stride);
  for (y = 0, outside = 0; y < d.height; y++)
    outside += memcmp (c + (gsize) y * stride, a + (gsize) (y + d.y) * stride
        + (gsize) d.x * 4, (gsize) d.width * 4) != 0;
  fail_unless_equals_int (outside, 0);
  /* the other activities change the whole area */
  fail_unless (guest_render_damage_rect (GUEST_ACTIVITY_FILM, aw, ah, &d));
  fail_unless (d.x == 0 && d.y == 0 && d.width == aw && d.height == ah);
  g_free (a);
  g_free (b);
  g_free (c);
}

GST_END_TEST;

GST_START_TEST (test_frame_stamp)
{
  const gint64 numbers[] = { 0, 1, 2, 255, 256, 12345, 0xabcdef,
    GUEST_STAMP_MODULO - 1
  };
  gint stride = GUEST_STAMP_WIDTH * 4, i, j, x, y;
  guint8 *s = g_malloc0 ((gsize) stride * GUEST_STAMP_HEIGHT);
  guint8 *half = g_malloc0 ((gsize) stride * GUEST_STAMP_HEIGHT);
  GuestActivity k;
  GuestRect st, pic, text, area;

  for (i = 0; i < (gint) G_N_ELEMENTS (numbers); i++) {
    gint64 n = numbers[i];
    guint32 state = 0x1234567 + i;

    guest_render_stamp (s, stride, n);
    fail_unless_equals_int64 (guest_read_stamp (s, stride), n);
    /* one cell flipped: refused */
    for (j = 0; j < 32; j += 7) {
      guint8 *cell = s + (gsize) (j / 16) * 8 * stride + (gsize) (j % 16) * 64;
      for (y = 0; y < GUEST_STAMP_CELL_H; y++)
        for (x = 0; x < GUEST_STAMP_CELL_W * 4; x++)
          cell[(gsize) y * stride + x] ^= 0xff;
      fail_unless_equals_int64 (guest_read_stamp (s, stride), -1);
      for (y = 0; y < GUEST_STAMP_CELL_H; y++)
        for (x = 0; x < GUEST_STAMP_CELL_W * 4; x++)
          cell[(gsize) y * stride + x] ^= 0xff;
    }
    /* a lossy copy still reads: +-100 of noise on every sample */
    memcpy (half, s, (gsize) stride * GUEST_STAMP_HEIGHT);
    for (j = 0; j < stride * GUEST_STAMP_HEIGHT; j++) {
      gint v = half[j] + (gint) ((state = state * 1103515245 + 12345) >> 16)
          % 201 - 100;
      half[j] = (guint8) CLAMP (v, 0, 255);
    }
    fail_unless_equals_int64 (guest_read_stamp (half, stride), n);
    /* and a stream scaled to a quarter and back up (nearest) */
    for (y = 0; y < GUEST_STAMP_HEIGHT; y++)
      for (x = 0; x < GUEST_STAMP_WIDTH; x++)
        memcpy (half + (gsize) y * stride + x * 4, s + (gsize) (y & ~3) *
            stride + (x & ~3) * 4, 4);
    fail_unless_equals_int64 (guest_read_stamp (half, stride), n);
  }
  /* modulo 2^24 */
  guest_render_stamp (s, stride, GUEST_STAMP_MODULO + 5);
  fail_unless_equals_int64 (guest_read_stamp (s, stride), 5);
  memset (s, 0x80, (gsize) stride * GUEST_STAMP_HEIGHT);
  fail_unless_equals_int64 (guest_read_stamp (s, stride), -1);

  /* geometry: the stamp is in the top-left corner of what changes every
   * frame, on the 8-px grid; the picture measured is below it, the text
   * strip left of it, static and clear of the key box */
  fail_unless (guest_render_activity_rect (W, H, &area));
  fail_if (guest_render_stamp_rect (GUEST_ACTIVITY_IDLE, W, H, &st));
  for (k = GUEST_ACTIVITY_BUSY; k < GUEST_ACTIVITY_N; k++) {
    guint8 *f0, *f1;
    gint64 bad = 0;

    fail_unless (guest_render_stamp_rect (k, W, H, &st), "%s",
        guest_activity_to_string (k));
    fail_unless (guest_render_quality_rects (k, W, H, &pic, &text));
    fail_unless (st.x % 8 == 0 && st.y % 8 == 0);
    fail_unless (pic.x == st.x && pic.y == st.y + GUEST_STAMP_HEIGHT);
    fail_unless (pic.y + pic.height <= area.y + area.height);
    fail_unless_equals_int (text.width, GUEST_QUALITY_TEXT_WIDTH);
    fail_unless (text.x + text.width == pic.x && text.y == pic.y &&
        text.height == pic.height && text.x > GUEST_KEY_BOX_X +
        GUEST_KEY_BOX_SIZE);
    f0 = g_malloc ((gsize) W * H * 4);
    f1 = g_malloc ((gsize) W * H * 4);
    guest_render_frame_full (f0, W, H, W * 4, 1, 0, k, 40, TRUE);
    guest_render_frame_full (f1, W, H, W * 4, 1, 0, k, 41, TRUE);
    fail_unless_equals_int64 (guest_read_stamp (f0 + (gsize) st.y * W * 4 +
            (gsize) st.x * 4, W * 4), 40);
    fail_unless_equals_int64 (guest_read_stamp (f1 + (gsize) st.y * W * 4 +
            (gsize) st.x * 4, W * 4), 41);
    for (y = text.y; y < text.y + text.height; y++)
      for (x = text.x; x < text.x + text.width; x++)
        bad += px_at (f0, W * 4, x, y) != px_at (f1, W * 4, x, y);
    fail_unless_equals_int64 (bad, 0);
    /* without the stamp the frame is guest_render_frame's */
    guest_render_frame_full (f1, W, H, W * 4, 1, 0, k, 40, FALSE);
    g_free (f0);
    f0 = guest_render_frame_new (W, H, 1, 0, k, 40);
    fail_unless (memcmp (f0, f1, (gsize) W * H * 4) == 0);
    g_free (f0);
    g_free (f1);
  }
  /* no room, no stamp */
  fail_if (guest_render_stamp_rect (GUEST_ACTIVITY_BUSY, 400, 300, &st));
  g_free (s);
  g_free (half);
}

GST_END_TEST;

GST_START_TEST (test_frame_composition)
{
  guint8 *f = guest_render_frame_new (W, H, 1, 1, GUEST_ACTIVITY_VIDEO, 5);
  guint8 *idle = guest_render_frame_new (W, H, 1, 1, GUEST_ACTIVITY_IDLE, 5);
  guint8 *none = guest_render_frame_new (W, H, 1, 1, GUEST_ACTIVITY_VIDEO,
      GUEST_FRAME_NONE);
  guint8 *act = g_malloc (640 * 480 * 4);
  GuestRect r;
  gint x, y, bad = 0;

  fail_unless (memcmp (idle, none, (gsize) W * H * 4) == 0);
  fail_unless (guest_render_activity_rect (W, H, &r));
  guest_render_activity (GUEST_ACTIVITY_VIDEO, 1, 5, act, r.width, r.height,
      r.width * 4);
  for (y = 0; y < H; y++)
    for (x = 0; x < W; x++) {
      gboolean in = x >= r.x && x < r.x + r.width && y >= r.y &&
          y < r.y + r.height;
      if (in)
        bad += px_at (f, W * 4, x, y) !=
            px_at (act, r.width * 4, x - r.x, y - r.y);
      else
        bad += px_at (f, W * 4, x, y) != px_at (idle, W * 4, x, y);
    }
  fail_unless_equals_int (bad, 0);
  g_free (f);
  g_free (idle);
  g_free (none);
  g_free (act);
}

GST_END_TEST;

GST_START_TEST (test_ppm_roundtrip)
{
  guint8 *f = guest_render_frame_new (333, 222, 8, 1, GUEST_ACTIVITY_BUSY, 2);
  gchar *path = g_build_filename (g_get_tmp_dir (), "gst-spice-ppm-test.ppm",
      NULL);
  guint8 *back = NULL;
  gint w = 0, h = 0;
  GError *err = NULL;

  fail_unless (test_ppm_write (path, f, 333, 222, 333 * 4, &err));
  fail_unless (test_ppm_read (path, &back, &w, &h, &err), "%s",
      err ? err->message : "");
  fail_unless (w == 333 && h == 222);
  fail_unless (memcmp (f, back, 333 * 222 * 4) == 0);
  g_free (back);

  /* a truncated file is refused */
  fail_unless (g_file_set_contents (path, "P6\n10 10\n255\nabc", -1, NULL));
  fail_if (test_ppm_read (path, &back, &w, &h, &err));
  g_clear_error (&err);
  g_unlink (path);
  g_free (path);
  g_free (f);
}

GST_END_TEST;

static Suite *
guest_render_suite (void)
{
  Suite *s = suite_create ("guest-render");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_deterministic);
  tcase_add_test (tc, test_activity_names);
  tcase_add_test (tc, test_background);
  tcase_add_test (tc, test_key_box);
  tcase_add_test (tc, test_activity_rect);
  tcase_add_test (tc, test_activity_character);
  tcase_add_test (tc, test_film_and_desktop_video);
  tcase_add_test (tc, test_frame_stamp);
  tcase_add_test (tc, test_frame_composition);
  tcase_add_test (tc, test_ppm_roundtrip);
  return s;
}

GST_CHECK_MAIN (guest_render);
