/* gst-spice tests: spicetiler internals (diff, classifier, encoders, heat)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <lz4.h>

#include "tilerdiff.h"
#include "tilerclassify.h"
#include "tilerencode.h"
#include "tilerheat.h"
#include "tilerscroll.h"
#include "tiler-common.h"

static gboolean
scroll_find (TilerScroll * sc, const guint8 * frame, const guint8 * shadow,
    gint stride, const GstVideoRectangle * area, GstVideoRectangle * dest,
    gint * src_y)
{
  return tiler_scroll_begin (sc, frame, stride, shadow, stride, area) &&
      tiler_scroll_next (sc, dest, src_y);
}

/* the finder: the exact band and shift of a scrolled window, both ways,
 * none for noise or an unchanged area; applying the copy to the old
 * picture gives the new one on the band */
GST_START_TEST (test_scroll_find)
{
  const gint W = 300, H = 260;
  GstVideoRectangle win = { 21, 37, 230, 190 }, dest;
  guint32 *doc = g_new (guint32, (gsize) win.w * 600);
  guint8 *shadow = g_malloc ((gsize) W * H * 4);
  guint8 *frame = g_malloc ((gsize) W * H * 4);
  const gint shifts[] = { 4, 1, 37, -4, -13, 100 };
  guint32 seed = 77;
  TilerScroll sc;
  gint i, src_y, y;

  tiler_scroll_init (&sc);
  document_rows (doc, win.w, 600, 0x5eed);
  for (i = 0; i < W * H; i++)
    ((guint32 *) shadow)[i] = 0xff102030 + (i % W < 10 ? 0x40 : 0);
  memcpy (frame, shadow, (gsize) W * H * 4);

  for (i = 0; i < (gint) G_N_ELEMENTS (shifts); i++) {
    gint off0 = 200, off1 = off0 + shifts[i];

    show_rows (shadow, W, doc, &win, off0);
    show_rows (frame, W, doc, &win, off1);
    fail_unless (scroll_find (&sc, frame, shadow, W * 4, &win,
            &dest, &src_y), "shift %d not found", shifts[i]);
    /* frame row y shows shadow row y + shift */
    fail_unless_equals_int (src_y - dest.y, shifts[i]);
    fail_unless_equals_int (dest.x, win.x);
    fail_unless_equals_int (dest.w, win.w);
    fail_unless_equals_int (dest.h, win.h - ABS (shifts[i]));
    fail_unless_equals_int (dest.y, shifts[i] > 0 ? win.y : win.y -
        shifts[i]);
    gst_spice_copy_bits_apply (shadow, W * 4, &dest, dest.x, src_y);
    for (y = dest.y; y < dest.y + dest.h; y++)
      fail_unless (memcmp (shadow + ((gsize) y * W + dest.x) * 4,
              frame + ((gsize) y * W + dest.x) * 4, (gsize) dest.w * 4) == 0,
          "row %d differs after the copy (shift %d)", y, shifts[i]);
  }

  /* nothing moved */
  show_rows (shadow, W, doc, &win, 50);
  show_rows (frame, W, doc, &win, 50);
  fail_if (scroll_find (&sc, frame, shadow, W * 4, &win, &dest,
          &src_y));
  /* new content (noise) */
  for (y = win.y; y < win.y + win.h; y++)
    for (i = win.x; i < win.x + win.w; i++)
      ((guint32 *) frame)[(gsize) y * W + i] = 0xff000000 | rnd (&seed);
  fail_if (scroll_find (&sc, frame, shadow, W * 4, &win, &dest,
          &src_y));
  /* an area too small to be worth it */
  show_rows (frame, W, doc, &win, 54);
  win.h = TILER_SCROLL_MIN_AREA_ROWS - 1;
  fail_if (scroll_find (&sc, frame, shadow, W * 4, &win, &dest,
          &src_y));

  tiler_scroll_clear (&sc);
  g_free (doc);
  g_free (shadow);
  g_free (frame);
}

GST_END_TEST;

/* a shadow whose window is three bands that lag by different amounts
 * (updates cut by the budget): three copies, each found after the one
 * before was applied, make every band right */
GST_START_TEST (test_scroll_patchwork)
{
  const gint W = 200, H = 300;
  GstVideoRectangle win = { 10, 10, 180, 270 }, dest;
  guint32 *doc = g_new (guint32, (gsize) win.w * 800);
  guint8 *shadow = g_malloc0 ((gsize) W * H * 4);
  guint8 *frame = g_malloc0 ((gsize) W * H * 4);
  /* band top (window row), document offset the shadow shows there */
  const gint bands[3][2] = { {0, 380}, {90, 360}, {180, 320} };
  gint i, y, src_y, copies = 0;
  TilerScroll sc;

  tiler_scroll_init (&sc);
  document_rows (doc, win.w, 800, 0xfeed);
  show_rows (frame, W, doc, &win, 400);
  for (i = 0; i < 3; i++) {
    GstVideoRectangle b = { win.x, win.y + bands[i][0], win.w, 90 };

    show_rows (shadow, W, doc, &b, bands[i][1] + bands[i][0]);
  }
  fail_unless (tiler_scroll_begin (&sc, frame, W * 4, shadow, W * 4, &win));
  while (tiler_scroll_next (&sc, &dest, &src_y)) {
    gst_spice_copy_bits_apply (shadow, W * 4, &dest, dest.x, src_y);
    tiler_scroll_moved (&sc, &dest, src_y);
    fail_unless (++copies <= 3);
  }
  fail_unless_equals_int (copies, 3);
  /* every row that can come from the shadow did: rows whose content the
   * shadow never held stay for the draws */
  for (y = win.y; y < win.y + 20; y++)
    fail_unless (memcmp (shadow + ((gsize) y * W + win.x) * 4,
            frame + ((gsize) y * W + win.x) * 4, (gsize) win.w * 4) == 0,
        "row %d", y);
  tiler_scroll_clear (&sc);
  g_free (doc);
  g_free (shadow);
  g_free (frame);
}

GST_END_TEST;

/* the diff's cell boxes equal a brute-force search, inside the damage */
GST_START_TEST (test_diff_matches_brute_force)
{
  const gint w = 203, h = 157;  /* not multiples of the cell or tile */
  guint32 *a = g_new (guint32, w * h), *b = g_new (guint32, w * h);
  guint32 seed = 99;
  TilerDiff d;
  gint iter;

  tiler_diff_init (&d, w, h, 64);
  for (iter = 0; iter < 300; iter++) {
    GstVideoRectangle dmg[3];
    gint n_dmg = 1 + rnd (&seed) % 3, k, i, x, y, cx, cy;
    gint n_changes = rnd (&seed) % 40;

    for (i = 0; i < w * h; i++)
      a[i] = b[i] = 0xff000000 | (i * 2654435761u >> 8);
    for (k = 0; k < n_changes; k++) {
      gint rw = 1 + rnd (&seed) % 20, rh = 1 + rnd (&seed) % 20;
      gint rx = rnd (&seed) % (w - rw + 1), ry = rnd (&seed) % (h - rh + 1);

      for (y = ry; y < ry + rh; y++)
        for (x = rx; x < rx + rw; x++)
          if (rnd (&seed) % 3)
            a[y * w + x] ^= 1 + rnd (&seed) % 0xffffff;
    }
    for (k = 0; k < n_dmg; k++) {
      dmg[k].w = 1 + rnd (&seed) % w;
      dmg[k].h = 1 + rnd (&seed) % h;
      dmg[k].x = rnd (&seed) % (w - dmg[k].w + 1);
      dmg[k].y = rnd (&seed) % (h - dmg[k].h + 1);
    }
    if (iter % 10 == 0) {
      n_dmg = 1;
      dmg[0] = (GstVideoRectangle) { 0, 0, w, h };
    }

    tiler_diff_begin (&d);
    for (k = 0; k < n_dmg; k++)
      tiler_diff_mark (&d, &dmg[k]);
    tiler_diff_run (&d, (guint8 *) a, w * 4, (guint8 *) b, w * 4);

    for (cy = 0; cy < d.ncy; cy++)
      for (cx = 0; cx < d.ncx; cx++) {
        GstVideoRectangle got, want = { 0, 0, 0, 0 }, tclip = { 0, 0, 0, 0 };
        gboolean have = tiler_diff_cell_box (&d, cx, cy, &got);
        gint tx = cx * TILER_CELL / 64, ty = cy * TILER_CELL / 64;
        GstVideoRectangle tile = { tx * 64, ty * 64, 64, 64 };

        /* the diff compares the damage's bounding box inside each tile */
        for (k = 0; k < n_dmg; k++) {
          GstVideoRectangle in;

          if (gst_spice_rect_intersect (&dmg[k], &tile, &in))
            gst_spice_rect_union (&tclip, &in, &tclip);
        }
        for (y = cy * TILER_CELL; y < MIN (h, (cy + 1) * TILER_CELL); y++)
          for (x = cx * TILER_CELL; x < MIN (w, (cx + 1) * TILER_CELL); x++) {
            GstVideoRectangle p = { x, y, 1, 1 };

            if (a[y * w + x] != b[y * w + x] &&
                gst_spice_rect_contains (&tclip, &p))
              gst_spice_rect_union (&want, &p, &want);
          }
        if (gst_spice_rect_is_empty (&want)) {
          fail_if (have, "iter %d cell %d,%d: unexpected box", iter, cx, cy);
        } else {
          fail_unless (have, "iter %d cell %d,%d: change missed", iter, cx,
              cy);
          fail_unless (memcmp (&got, &want, sizeof (got)) == 0,
              "iter %d cell %d,%d: box %d,%d %dx%d, want %d,%d %dx%d", iter,
              cx, cy, got.x, got.y, got.w, got.h, want.x, want.y, want.w,
              want.h);
        }
      }
  }
  tiler_diff_clear (&d);
  g_free (a);
  g_free (b);
}

GST_END_TEST;

GST_START_TEST (test_collect_covers_and_limits)
{
  const gint w = 640, h = 480;
  guint32 *a = g_new0 (guint32, w * h), *b = g_new0 (guint32, w * h);
  GstSpiceRegion out;
  guint32 seed = 5;
  TilerDiff d;
  gint k, cx, cy;

  for (k = 0; k < 200; k++)
    a[(rnd (&seed) % h) * w + rnd (&seed) % w] = 0xffffffff;
  tiler_diff_init (&d, w, h, 64);
  gst_spice_region_init (&out);
  tiler_diff_begin (&d);
  tiler_diff_mark_all (&d);
  tiler_diff_run (&d, (guint8 *) a, w * 4, (guint8 *) b, w * 4);
  tiler_diff_collect (&d, NULL, 8, &out);
  fail_unless (gst_spice_region_n_rects (&out) <= 8);
  for (cy = 0; cy < d.ncy; cy++)
    for (cx = 0; cx < d.ncx; cx++) {
      GstVideoRectangle box;
      const GstVideoRectangle *r = gst_spice_region_rects (&out);
      guint i;
      gboolean inside = FALSE;

      if (!tiler_diff_cell_box (&d, cx, cy, &box))
        continue;
      for (i = 0; i < gst_spice_region_n_rects (&out); i++)
        inside |= gst_spice_rect_contains (&r[i], &box);
      fail_unless (inside, "cell %d,%d not covered by one region", cx, cy);
    }
  gst_spice_region_clear (&out);
  tiler_diff_clear (&d);
  g_free (a);
  g_free (b);
}

GST_END_TEST;

GST_START_TEST (test_classifier)
{
  guint32 px[16 * 16];
  guint32 seed = 1;
  gint x, y;

  /* text: glyph strokes on a flat page */
  for (y = 0; y < 16; y++)
    for (x = 0; x < 16; x++)
      px[y * 16 + x] = ((x % 5 == 1 && y % 12 > 2) || (y % 12 == 6 &&
              x % 5 < 4)) ? 0xff101010 : 0xfff0f0f0;
  fail_if (tiler_classify_is_photo ((guint8 *) px, 64, 16, 16));
  /* horizontal gradient: equal upper neighbours */
  for (y = 0; y < 16; y++)
    for (x = 0; x < 16; x++)
      px[y * 16 + x] = 0xff000000 | (x * 16);
  fail_if (tiler_classify_is_photo ((guint8 *) px, 64, 16, 16));
  /* noise */
  for (x = 0; x < 256; x++)
    px[x] = rnd (&seed);
  fail_unless (tiler_classify_is_photo ((guint8 *) px, 64, 16, 16));
  fail_unless_equals_int (tiler_classify_content ((guint8 *) px, 64, 16, 16),
      TILER_CONTENT_NOISY);
  /* smooth diagonal gradient with 2 noise bits: photographic */
  for (y = 0; y < 16; y++)
    for (x = 0; x < 16; x++)
      px[y * 16 + x] = 0xff000000 | (((x + y) * 5 + (rnd (&seed) & 3)) << 8);
  fail_unless (tiler_classify_is_photo ((guint8 *) px, 64, 16, 16));
  /* natural content with repeats (a quantised texture: every other pixel
   * equals its left neighbour, the rest are small steps): photographic,
   * although half of it repeats */
  for (y = 0; y < 16; y++)
    for (x = 0; x < 16; x++) {
      guint v = 60 + (x / 2) * 3 + y * 5;

      px[y * 16 + x] = 0xff000000 | (v << 16) | ((v / 2 + 40) << 8) | 30;
    }
  fail_unless (tiler_classify_is_photo ((guint8 *) px, 64, 16, 16));
  /* ... smooth: a stream's content, but lossless as draws */
  fail_unless_equals_int (tiler_classify_content ((guint8 *) px, 64, 16, 16),
      TILER_CONTENT_SMOOTH);
  /* anti-aliased text: strokes with a grey fringe, big steps only */
  for (y = 0; y < 16; y++)
    for (x = 0; x < 16; x++) {
      gboolean ink = x % 5 == 1 && y % 12 > 2, fringe = x % 5 == 2 &&
          y % 12 > 2;

      px[y * 16 + x] = ink ? 0xff101010 : fringe ? 0xff808080 : 0xfff0f0f0;
    }
  fail_if (tiler_classify_is_photo ((guint8 *) px, 64, 16, 16));
  /* two-pixel blocks of random colours: half repeats, big steps (LZ4
   * cannot compress it either, the cost rule of the heat map streams it) */
  for (y = 0; y < 16; y++)
    for (x = 0; x < 16; x += 2)
      px[y * 16 + x] = px[y * 16 + x + 1] = 0xff000000 | rnd (&seed);
  fail_if (tiler_classify_is_photo ((guint8 *) px, 64, 16, 16));
}

GST_END_TEST;

static void
roundtrip (GstBuffer * update, gint w, gint h, const guint8 * px, gint stride,
    gboolean exact)
{
  DrawsDecoder *dec = draws_decoder_new (w, h);
  GError *err = NULL;

  fail_unless (draws_decoder_apply (dec, update, &err), "%s",
      err ? err->message : "");
  if (exact) {
    fail_unless_equals_int (draws_decoder_compare (dec, px, stride, NULL), 0);
  } else {
    fail_unless (draws_decoder_psnr (dec, px, stride, NULL) > 25.0);
  }
  draws_decoder_free (dec);
}

GST_START_TEST (test_encoders_roundtrip)
{
  const gint w = 100, h = 70;
  guint32 *px = g_new (guint32, w * h);
  GstVideoRectangle all = { 0, 0, w, h }, tiny = { 3, 4, 5, 2 };
  TilerEncoder enc;
  GstSpiceDrawsWriter *wr;
  GstSpiceImageType type;
  GstBuffer *buf;
  gint x, y;

  for (y = 0; y < h; y++)
    for (x = 0; x < w; x++)
      px[y * w + x] = 0xff000000 | ((x / 10) * 0x102030) | (y * 3);
  tiler_encoder_init (&enc);

  wr = gst_spice_draws_writer_new (0, 0);
  fail_unless (tiler_encode_lossless (&enc, wr, &all, (guint8 *) px, w * 4,
          &type) > 0);
  fail_unless_equals_int (type, GST_SPICE_IMAGE_LZ4);
  buf = gst_spice_draws_writer_finish (wr);
  roundtrip (buf, w, h, (guint8 *) px, w * 4, TRUE);
  gst_buffer_unref (buf);

  wr = gst_spice_draws_writer_new (0, 0);
  tiler_encode_lossless (&enc, wr, &tiny, (guint8 *) (px + 4 * w + 3), w * 4,
      &type);
  fail_unless_equals_int (type, GST_SPICE_IMAGE_BITMAP);
  gst_buffer_unref (gst_spice_draws_writer_finish (wr));

  wr = gst_spice_draws_writer_new (0, 0);
  fail_unless (tiler_encode_jpeg (&enc, wr, &all, (guint8 *) px, w * 4,
          85) > 0);
  buf = gst_spice_draws_writer_finish (wr);
  roundtrip (buf, w, h, (guint8 *) px, w * 4, FALSE);
  gst_buffer_unref (buf);
  tiler_encoder_clear (&enc);
  g_free (px);
}

GST_END_TEST;

/* the decoder follows SPICE: several blocks, big-endian lengths, one
 * decompression stream (later blocks refer to earlier ones) */
GST_START_TEST (test_decoder_chained_lz4_blocks)
{
  const gint w = 64, h = 32;
  guint32 *px = g_new (guint32, w * h);
  gsize cap = 6 + h * (4 + LZ4_compressBound (w * 4));
  guint8 *payload = g_malloc (cap), *p = payload + 6;
  GstVideoRectangle all = { 0, 0, w, h };
  LZ4_stream_t *ls = LZ4_createStream ();
  GstSpiceDrawsWriter *wr;
  GstBuffer *buf;
  DrawsDecoder *dec;
  gint x, y;

  for (y = 0; y < h; y++)
    for (x = 0; x < w; x++)
      px[y * w + x] = 0xff000000 | (x * 4) | ((y & 3) << 16);
  for (y = 0; y < h; y++) {
    int n = LZ4_compress_fast_continue (ls, (const char *) (px + y * w),
        (char *) p + 4, w * 4, LZ4_compressBound (w * 4), 1);

    fail_unless (n > 0);
    gst_spice_lz4_block_write_header (p, n);
    fail_unless_equals_int (p[0], (n >> 24) & 0xff);    /* big-endian */
    fail_unless_equals_int (p[3], n & 0xff);
    p += 4 + n;
  }
  gst_spice_lz4_payload_write_header (payload, p - payload);
  wr = gst_spice_draws_writer_new (0, 0);
  gst_spice_draws_writer_add (wr, &all, GST_SPICE_IMAGE_LZ4, 0, payload,
      p - payload);
  buf = gst_spice_draws_writer_finish (wr);
  roundtrip (buf, w, h, (guint8 *) px, w * 4, TRUE);
  gst_buffer_unref (buf);

  /* a little-endian length is refused */
  {
    guint8 t = payload[6];

    payload[6] = payload[9];
    payload[9] = t;
    wr = gst_spice_draws_writer_new (0, 0);
    gst_spice_draws_writer_add (wr, &all, GST_SPICE_IMAGE_LZ4, 0, payload,
        p - payload);
    buf = gst_spice_draws_writer_finish (wr);
    dec = draws_decoder_new (w, h);
    fail_if (draws_decoder_apply (dec, buf, NULL));
    draws_decoder_free (dec);
    gst_buffer_unref (buf);
  }
  LZ4_freeStream (ls);
  g_free (payload);
  g_free (px);
}

GST_END_TEST;

GST_START_TEST (test_heat_hysteresis)
{
  TilerHeat heat = { 0, };
  TilerStreamState s = { FALSE, {0, 0, 0, 0}, GST_CLOCK_TIME_NONE,
    GST_CLOCK_TIME_NONE
  };
  GstVideoRectangle r;
  GstClockTime t = 0;
  gint i, tx, ty, starts = 0;
  TilerStreamAction a;

  tiler_heat_init (&heat, 1280, 800, 64);
  heat.min_frames = 20;
  heat.max_gap = 200 * GST_MSECOND;
  heat.timeout = GST_SECOND;
  heat.min_area = 9216;
  heat.all = FALSE;
  /* a 256x192 photographic animation; a small part of it moves per frame
   * after the start, the stream must keep its rectangle */
  for (i = 0; i < 100; i++, t += GST_SECOND / 30) {
    for (ty = 2; ty < 5; ty++)
      for (tx = 3; tx < 7; tx++)
        if (i < 30 || (tx == 3 + i % 4))
          tiler_heat_touch (&heat, tx, ty, t, TRUE);
    a = tiler_heat_decide (&heat, &s, t, TRUE, TRUE, &r);
    if (a == TILER_STREAM_START || a == TILER_STREAM_RESTART) {
      s.active = TRUE;
      s.rect = r;
      s.last_change = t;
      s.shrink_since = GST_CLOCK_TIME_NONE;
      starts++;
    }
    fail_if (a == TILER_STREAM_END);
  }
  fail_unless_equals_int (starts, 1);
  fail_unless_equals_int (s.rect.x, 192);
  fail_unless_equals_int (s.rect.y, 128);
  fail_unless_equals_int (s.rect.w, 256);
  fail_unless_equals_int (s.rect.h, 192);
  /* activity appears beside it: the stream grows once */
  for (i = 0; i < 30; i++, t += GST_SECOND / 30) {
    for (ty = 2; ty < 5; ty++)
      for (tx = 3; tx < 9; tx++)
        tiler_heat_touch (&heat, tx, ty, t, TRUE);
    a = tiler_heat_decide (&heat, &s, t, TRUE, TRUE, &r);
    if (a == TILER_STREAM_RESTART) {
      s.rect = r;
      starts++;
    }
  }
  fail_unless_equals_int (starts, 2);
  fail_unless_equals_int (s.rect.w, 384);
  /* nothing changes: the stream ends after the timeout, not before */
  for (i = 0; i < 29; i++, t += GST_SECOND / 30)
    fail_unless_equals_int (tiler_heat_decide (&heat, &s, t, FALSE, TRUE,
            &r), TILER_STREAM_CONTINUE);
  t += GST_SECOND;
  fail_unless_equals_int (tiler_heat_decide (&heat, &s, t, FALSE, TRUE, &r),
      TILER_STREAM_END);
  /* synthetic content in auto mode never gets hot */
  s.active = FALSE;
  tiler_heat_reset (&heat);
  for (i = 0; i < 100; i++, t += GST_SECOND / 30) {
    for (ty = 2; ty < 5; ty++)
      for (tx = 3; tx < 7; tx++)
        tiler_heat_touch (&heat, tx, ty, t, FALSE);
    fail_unless_equals_int (tiler_heat_decide (&heat, &s, t, FALSE, TRUE,
            &r), TILER_STREAM_NONE);
  }
  heat.all = TRUE;
  fail_unless_equals_int (tiler_heat_decide (&heat, &s, t, FALSE, TRUE, &r),
      TILER_STREAM_START);
  tiler_heat_clear (&heat);
}

GST_END_TEST;

/* a small hot spot elsewhere does not stretch the stream */
GST_START_TEST (test_heat_largest_group)
{
  TilerHeat heat = { 0, };
  GstVideoRectangle r;
  GstClockTime t = 0;
  gint i, tx, ty;

  tiler_heat_init (&heat, 1280, 800, 64);
  heat.min_frames = 20;
  heat.max_gap = 200 * GST_MSECOND;
  heat.timeout = GST_SECOND;
  heat.min_area = 9216;
  heat.all = TRUE;
  for (i = 0; i < 30; i++, t += GST_SECOND / 30) {
    for (ty = 5; ty < 10; ty++)
      for (tx = 8; tx < 16; tx++)
        tiler_heat_touch (&heat, tx, ty, t, TRUE);
    tiler_heat_touch (&heat, 0, 0, t, TRUE);    /* a spinner */
    tiler_heat_touch (&heat, 1, 0, t, TRUE);
  }
  fail_unless (tiler_heat_candidate (&heat, t - GST_SECOND / 30, &r));
  fail_unless_equals_int (r.x, 512);
  fail_unless_equals_int (r.y, 320);
  fail_unless_equals_int (r.w, 512);
  fail_unless_equals_int (r.h, 320);
  tiler_heat_clear (&heat);
}

GST_END_TEST;

/* spice-draw-budget: the smaller budget wins, bands follow it */
GST_START_TEST (test_draw_budget)
{
  guint budget = 256 * 1024, band = 128 * 1024;

  /* no budget from the sink: the properties */
  tiler_draw_budget_apply (0, &budget, &band);
  fail_unless_equals_int (budget, 256 * 1024);
  fail_unless_equals_int (band, 128 * 1024);
  /* 10 Mbit/s link: ~15 KB updates, bands of at least the minimum */
  tiler_draw_budget_apply (15000, &budget, &band);
  fail_unless_equals_int (budget, 15000);
  fail_unless_equals_int (band, TILER_BAND_MIN_BYTES);
  /* a fast link: the property stays the limit */
  budget = 256 * 1024;
  band = 128 * 1024;
  tiler_draw_budget_apply (1024 * 1024, &budget, &band);
  fail_unless_equals_int (budget, 256 * 1024);
  fail_unless_equals_int (band, 128 * 1024);
  /* update-budget=0 (unlimited) still takes the sink's */
  budget = 0;
  tiler_draw_budget_apply (40000, &budget, &band);
  fail_unless_equals_int (budget, 40000);
  fail_unless_equals_int (band, 40000);
  /* JPEG quality drops under pressure only, never below the floor */
  fail_unless_equals_int (tiler_jpeg_quality_for (85, FALSE), 85);
  fail_unless_equals_int (tiler_jpeg_quality_for (85, TRUE), 51);
  fail_unless_equals_int (tiler_jpeg_quality_for (40, TRUE),
      TILER_PRESSURE_QUALITY_MIN);
  fail_unless_equals_int (tiler_jpeg_quality_for (20, TRUE), 20);
  /* pacing: 12500 bytes take 10 ms at 10 Mbit/s, the next update is built
   * no earlier than that: the draws never offer more than the link
   * carries (a queue before the link delays the next key press' update);
   * an unknown link does not pace */
  fail_unless_equals_int64 (tiler_draw_pace_us (12500, 10000000),
      10000 * TILER_PACE_PERCENT / 100);
  fail_unless (tiler_draw_pace_us (12500, 10000000) > 10000);
  /* 5000 bytes on 2 Mbit/s: 20 ms on the wire */
  fail_unless (tiler_draw_pace_us (5000, 2000000) > 20000);
  fail_unless_equals_int64 (tiler_draw_pace_us (12500, 0), 0);
  /* a full-surface refresh on a slow link: bounded */
  fail_unless_equals_int64 (tiler_draw_pace_us (1500000, 200000),
      TILER_PACE_MAX_US);
}

GST_END_TEST;

static Suite *
tiler_internals_suite (void)
{
  Suite *s = suite_create ("tiler-internals");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_diff_matches_brute_force);
  tcase_add_test (tc, test_collect_covers_and_limits);
  tcase_add_test (tc, test_classifier);
  tcase_add_test (tc, test_encoders_roundtrip);
  tcase_add_test (tc, test_decoder_chained_lz4_blocks);
  tcase_add_test (tc, test_heat_hysteresis);
  tcase_add_test (tc, test_heat_largest_group);
  tcase_add_test (tc, test_draw_budget);
  tcase_add_test (tc, test_scroll_find);
  tcase_add_test (tc, test_scroll_patchwork);
  return s;
}

GST_CHECK_MAIN (tiler_internals);
