/* Unit tests for the shared library libgstspice-1.0: metas survive the
 * elements that must keep them, regions cover what was added, the draws
 * format round-trips and rejects malformed input, events and the keymap.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <gst/check/gstcheck.h>
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <string.h>

#include <gst/spice/gstspice.h>

/* ---- regions ---- */

static gboolean
region_covers (const GstSpiceRegion * r, const GstVideoRectangle * rect)
{
  gint x, y;

  for (y = rect->y; y < rect->y + rect->h; y++)
    for (x = rect->x; x < rect->x + rect->w; x++)
      if (!gst_spice_region_contains_point (r, x, y))
        return FALSE;
  return TRUE;
}

GST_START_TEST (test_region_limit_covers_everything)
{
  GstSpiceRegion r;
  GstVideoRectangle added[40];
  GRand *rand = g_rand_new_with_seed (42);
  guint i;

  gst_spice_region_init (&r);
  for (i = 0; i < G_N_ELEMENTS (added); i++) {
    added[i].x = g_rand_int_range (rand, 0, 300);
    added[i].y = g_rand_int_range (rand, 0, 200);
    added[i].w = g_rand_int_range (rand, 1, 60);
    added[i].h = g_rand_int_range (rand, 1, 60);
    gst_spice_region_add (&r, &added[i]);
  }
  gst_spice_region_limit (&r, 5);
  fail_unless (gst_spice_region_n_rects (&r) <= 5);
  for (i = 0; i < G_N_ELEMENTS (added); i++)
    fail_unless (region_covers (&r, &added[i]), "rect %u lost", i);
  g_rand_free (rand);
  gst_spice_region_clear (&r);
}

GST_END_TEST;

GST_START_TEST (test_region_least_growth)
{
  GstSpiceRegion r;
  GstVideoRectangle a = { 0, 0, 10, 10 }, b = { 12, 0, 10, 10 },
      far = { 500, 500, 10, 10 };
  const GstVideoRectangle *rects;
  guint i;
  gboolean found_far = FALSE;

  gst_spice_region_init (&r);
  gst_spice_region_add (&r, &a);
  gst_spice_region_add (&r, &far);
  gst_spice_region_add (&r, &b);
  gst_spice_region_limit (&r, 2);
  fail_unless_equals_int (gst_spice_region_n_rects (&r), 2);
  rects = gst_spice_region_rects (&r);
  for (i = 0; i < 2; i++) {
    if (rects[i].x == 500)
      found_far = TRUE;
    else {
      /* the two neighbours merged, not a neighbour with the far one */
      fail_unless_equals_int (rects[i].x, 0);
      fail_unless_equals_int (rects[i].w, 22);
      fail_unless_equals_int (rects[i].h, 10);
    }
  }
  fail_unless (found_far);
  /* a contained rectangle adds nothing */
  gst_spice_region_add (&r, &(GstVideoRectangle) { 2, 2, 3, 3 });
  fail_unless_equals_int (gst_spice_region_n_rects (&r), 2);
  gst_spice_region_clear (&r);
}

GST_END_TEST;

/* ---- damage meta ---- */

GST_START_TEST (test_damage_meta_copy)
{
  GstVideoRectangle rects[2] = { {1, 2, 3, 4}, {10, 20, 30, 40} };
  GstBuffer *buf = gst_buffer_new_allocate (NULL, 64 * 64 * 4, NULL);
  GstBuffer *copy;
  GstSpiceDamageMeta *m;

  gst_buffer_add_spice_damage_meta (buf, 7, rects, 2);
  copy = gst_buffer_copy (buf);
  m = gst_buffer_get_spice_damage_meta (copy);
  fail_unless (m != NULL);
  fail_unless_equals_uint64 (m->seq, 7);
  fail_unless_equals_int (m->n_rects, 2);
  fail_unless (memcmp (m->rects, rects, sizeof (rects)) == 0);
  /* the copy owns its rectangles */
  gst_buffer_unref (buf);
  fail_unless_equals_int (m->rects[1].w, 30);
  gst_buffer_unref (copy);
}

GST_END_TEST;

/* Pushes one 64x64 BGRx frame with damage through @desc (which must start
 * with appsrc name=src and end with appsink name=sink) and returns the meta
 * found on the output, or NULL. */
static GstBuffer *
run_through (const gchar * desc, GstBuffer * in)
{
  GstElement *pipe = gst_parse_launch (desc, NULL);
  GstElement *src, *sink;
  GstSample *sample;
  GstBuffer *out = NULL;

  fail_unless (pipe != NULL);
  src = gst_bin_get_by_name (GST_BIN (pipe), "src");
  sink = gst_bin_get_by_name (GST_BIN (pipe), "sink");
  fail_unless_equals_int (gst_element_set_state (pipe, GST_STATE_PLAYING),
      GST_STATE_CHANGE_ASYNC);
  fail_unless_equals_int (gst_app_src_push_buffer (GST_APP_SRC (src), in),
      GST_FLOW_OK);
  gst_app_src_end_of_stream (GST_APP_SRC (src));
  sample = gst_app_sink_try_pull_sample (GST_APP_SINK (sink), 20 * GST_SECOND);
  if (sample) {
    out = gst_buffer_ref (gst_sample_get_buffer (sample));
    gst_sample_unref (sample);
  }
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (src);
  gst_object_unref (sink);
  gst_object_unref (pipe);
  return out;
}

static GstBuffer *
make_frame (gint w, gint h)
{
  GstBuffer *buf = gst_buffer_new_allocate (NULL, (gsize) w * h * 4, NULL);

  gst_buffer_memset (buf, 0, 0x40, (gsize) w * h * 4);
  GST_BUFFER_PTS (buf) = 0;
  GST_BUFFER_DURATION (buf) = GST_SECOND / 30;
  return buf;
}

GST_START_TEST (test_damage_meta_scales_outward)
{
  GstVideoRectangle r = { 3, 5, 7, 9 };
  GstBuffer *in = make_frame (64, 64), *out;
  GstSpiceDamageMeta *m;

  gst_buffer_add_spice_damage_meta (in, 3, &r, 1);
  out = run_through ("appsrc name=src format=time "
      "caps=video/x-raw,format=BGRx,width=64,height=64,framerate=30/1 ! "
      "videoscale ! video/x-raw,width=32,height=32 ! "
      "appsink name=sink sync=false", in);
  fail_unless (out != NULL);
  m = gst_buffer_get_spice_damage_meta (out);
  fail_unless (m != NULL, "videoscale dropped the damage meta");
  fail_unless_equals_uint64 (m->seq, 3);
  fail_unless_equals_int (m->n_rects, 1);
  /* (3,5)-(10,14) halved outward: (1,2)-(5,7) */
  fail_unless_equals_int (m->rects[0].x, 1);
  fail_unless_equals_int (m->rects[0].y, 2);
  fail_unless_equals_int (m->rects[0].w, 4);
  fail_unless_equals_int (m->rects[0].h, 5);
  gst_buffer_unref (out);
}

GST_END_TEST;

/* ---- stream meta ---- */

static void
check_stream_meta_survives (const gchar * chain)
{
  GstVideoRectangle dest = { 640, 160, 640, 480 };
  GstBuffer *in = make_frame (64, 64), *out;
  GstSpiceStreamMeta *m;
  gchar *desc;

  gst_buffer_add_spice_stream_meta (in, &dest, 5, TRUE);
  desc = g_strdup_printf ("appsrc name=src format=time "
      "caps=video/x-raw,format=BGRx,width=64,height=64,framerate=30/1 ! %s ! "
      "appsink name=sink sync=false", chain);
  out = run_through (desc, in);
  g_free (desc);
  fail_unless (out != NULL, "nothing came out of %s", chain);
  m = gst_buffer_get_spice_stream_meta (out);
  fail_unless (m != NULL, "%s dropped the stream meta", chain);
  fail_unless (memcmp (&m->dest, &dest, sizeof (dest)) == 0);
  fail_unless_equals_int (m->stream_id, 5);
  fail_unless (m->keyframe);
  gst_buffer_unref (out);
}

GST_START_TEST (test_stream_meta_survives_encoders)
{
  check_stream_meta_survives ("videoconvert ! videoscale ! "
      "video/x-raw,format=I420,width=32,height=32");
  check_stream_meta_survives ("videoconvert ! vp8enc deadline=1");
  check_stream_meta_survives ("videoconvert ! jpegenc");
}

GST_END_TEST;

/* ---- draws format ---- */

GST_START_TEST (test_draws_roundtrip)
{
  guint8 pixels[8 * 4 * 3];
  GstVideoRectangle d1 = { 5, 6, 8, 3 }, d2 = { 100, 200, 2, 2 };
  const guint8 jpeg_like[] = { 6, 0, 0, 0, 0xff, 0xd8, 1, 2, 0xff, 0xd9 };
  GstSpiceDrawsWriter *w;
  GstSpiceDrawsReader r;
  GstSpiceDraw d;
  GstBuffer *buf;
  guint i;

  for (i = 0; i < sizeof (pixels); i++)
    pixels[i] = i;
  w = gst_spice_draws_writer_new (GST_SPICE_DRAWS_FLAG_REFRESH, 0);
  gst_spice_draws_writer_add_bitmap (w, &d1, pixels, 8 * 4);
  gst_spice_draws_writer_add (w, &d2, GST_SPICE_IMAGE_JPEG,
      GST_SPICE_DRAW_FLAG_LOSSY, jpeg_like, sizeof (jpeg_like));
  gst_spice_draws_writer_add_copy_bits (w, &d1, 7, 300);
  fail_unless_equals_int (gst_spice_draws_writer_n_regions (w), 3);
  buf = gst_spice_draws_writer_finish (w);

  fail_unless (gst_spice_draws_reader_init (&r, buf));
  fail_unless_equals_int (r.n_regions, 3);
  fail_unless_equals_int (r.flags, GST_SPICE_DRAWS_FLAG_REFRESH);
  fail_unless (gst_spice_draws_reader_next (&r, &d));
  fail_unless (memcmp (&d.dest, &d1, sizeof (d1)) == 0);
  fail_unless_equals_int (d.type, GST_SPICE_IMAGE_BITMAP);
  fail_unless (gst_spice_payload_validate (d.type, d.dest.w, d.dest.h,
          d.payload, d.payload_size));
  fail_unless (memcmp (d.payload + GST_SPICE_BITMAP_HEADER_SIZE, pixels,
          sizeof (pixels)) == 0);
  fail_unless (gst_spice_draws_reader_next (&r, &d));
  fail_unless_equals_int (d.type, GST_SPICE_IMAGE_JPEG);
  fail_unless_equals_int (d.flags, GST_SPICE_DRAW_FLAG_LOSSY);
  fail_unless_equals_int (d.payload_size, sizeof (jpeg_like));
  fail_unless (memcmp (d.payload, jpeg_like, sizeof (jpeg_like)) == 0);
  /* a copy: its source corner, nothing else; a negative corner is invalid */
  fail_unless (gst_spice_draws_reader_next (&r, &d));
  fail_unless_equals_int (d.type, GST_SPICE_IMAGE_COPY_BITS);
  fail_unless (memcmp (&d.dest, &d1, sizeof (d1)) == 0);
  fail_unless (gst_spice_payload_validate (d.type, d.dest.w, d.dest.h,
          d.payload, d.payload_size));
  {
    gint sx = 0, sy = 0;
    guint8 neg[GST_SPICE_COPY_BITS_PAYLOAD_SIZE];

    fail_unless (gst_spice_copy_bits_payload_parse (d.payload, &d.dest,
            1000, 1000, &sx, &sy));
    fail_unless_equals_int (sx, 7);
    fail_unless_equals_int (sy, 300);
    /* the source must lie on the surface */
    fail_if (gst_spice_copy_bits_payload_parse (d.payload, &d.dest, 1000,
            300 + d.dest.h - 1, &sx, &sy));
    memcpy (neg, d.payload, sizeof (neg));
    GST_WRITE_UINT32_LE (neg + 4, (guint32) - 1);
    fail_if (gst_spice_payload_validate (d.type, d.dest.w, d.dest.h, neg,
            sizeof (neg)));
    fail_if (gst_spice_payload_validate (d.type, d.dest.w, d.dest.h,
            d.payload, d.payload_size - 1));
  }
  fail_unless (!gst_spice_draws_reader_next (&r, &d));
  fail_unless (!r.error);
  gst_spice_draws_reader_clear (&r);
  gst_buffer_unref (buf);
}

GST_END_TEST;

GST_START_TEST (test_draws_reader_rejects_malformed)
{
  GstVideoRectangle dest = { 0, 0, 4, 4 };
  guint8 px[4 * 4 * 4] = { 0 };
  GstSpiceDrawsWriter *w = gst_spice_draws_writer_new (0, 0);
  GstSpiceDrawsReader r;
  GstSpiceDraw d;
  GstBuffer *good, *bad;
  GstMapInfo map;
  gsize size, cut;

  gst_spice_draws_writer_add_bitmap (w, &dest, px, 16);
  good = gst_spice_draws_writer_finish (w);
  size = gst_buffer_get_size (good);

  /* every truncation is either rejected or yields only complete regions */
  for (cut = 0; cut < size; cut++) {
    bad = gst_buffer_copy_region (good, GST_BUFFER_COPY_ALL, 0, cut);
    if (gst_spice_draws_reader_init (&r, bad)) {
      while (gst_spice_draws_reader_next (&r, &d))
        fail_unless (d.payload + d.payload_size <= r.map.data + cut);
      /* only the zero padding after the last payload may go unnoticed */
      if (cut < 16 + 24 + gst_spice_bitmap_payload_size (4, 4))
        fail_unless (r.error, "truncated at %" G_GSIZE_FORMAT " not noticed",
            cut);
      gst_spice_draws_reader_clear (&r);
    }
    gst_buffer_unref (bad);
  }

  /* a payload size beyond the buffer */
  bad = gst_buffer_copy_deep (good);
  gst_buffer_map (bad, &map, GST_MAP_WRITE);
  GST_WRITE_UINT32_LE (map.data + 16 + 20, 0xfffffff0u);
  gst_buffer_unmap (bad, &map);
  fail_unless (gst_spice_draws_reader_init (&r, bad));
  fail_unless (!gst_spice_draws_reader_next (&r, &d));
  fail_unless (r.error);
  gst_spice_draws_reader_clear (&r);
  gst_buffer_unref (bad);

  /* wrong magic */
  bad = gst_buffer_copy_deep (good);
  gst_buffer_memset (bad, 0, 'X', 1);
  fail_unless (!gst_spice_draws_reader_init (&r, bad));
  gst_buffer_unref (bad);

  /* a BITMAP payload that does not match its rectangle */
  fail_unless (!gst_spice_payload_validate (GST_SPICE_IMAGE_BITMAP, 5, 4,
          px, sizeof (px)));
  gst_buffer_unref (good);
}

GST_END_TEST;

/* ---- events ---- */

GST_START_TEST (test_events_roundtrip)
{
  GstSpiceCursor c = { TRUE, 10, 20, 1, 2, 2, 2, NULL, 99 }, out;
  GstEvent *ev;
  guint bitrate, scale;
  gint n, d;
  gboolean enabled;

  ev = gst_spice_event_new_refresh ();
  fail_unless (gst_spice_event_is_refresh (ev));
  fail_unless (!gst_spice_event_parse_rate (ev, NULL, NULL, NULL, NULL));
  gst_event_unref (ev);

  ev = gst_spice_event_new_rate (2000000, 15, 1, 2);
  fail_unless (gst_spice_event_parse_rate (ev, &bitrate, &n, &d, &scale));
  fail_unless_equals_int (bitrate, 2000000);
  fail_unless_equals_int (n, 15);
  fail_unless_equals_int (d, 1);
  fail_unless_equals_int (scale, 2);
  gst_event_unref (ev);
  /* a rate event without a scale field means full size */
  ev = gst_event_new_custom (GST_EVENT_CUSTOM_UPSTREAM,
      gst_structure_new (GST_SPICE_EVENT_RATE, "bitrate", G_TYPE_UINT, 5,
          NULL));
  fail_unless (gst_spice_event_parse_rate (ev, &bitrate, &n, &d, &scale));
  fail_unless_equals_int (scale, 1);
  gst_event_unref (ev);

  ev = gst_spice_event_new_stream_control (FALSE);
  fail_unless (gst_spice_event_parse_stream_control (ev, &enabled));
  fail_if (enabled);
  gst_event_unref (ev);

  c.shape = gst_buffer_new_allocate (NULL, 16, NULL);
  ev = gst_spice_event_new_cursor (&c);
  fail_unless (GST_EVENT_IS_STICKY (ev));
  fail_unless (gst_spice_event_parse_cursor (ev, &out));
  fail_unless (out.visible);
  fail_unless_equals_int (out.x, 10);
  fail_unless_equals_int (out.hot_y, 2);
  fail_unless_equals_uint64 (out.serial, 99);
  fail_unless (out.shape == c.shape);
  gst_buffer_unref (out.shape);
  gst_event_unref (ev);

  /* a shape smaller than width x height x 4 is not passed on */
  c.width = 8;
  ev = gst_spice_event_new_cursor (&c);
  fail_unless (gst_spice_event_parse_cursor (ev, &out));
  fail_unless (out.shape == NULL);
  fail_unless_equals_int (out.width, 0);
  gst_event_unref (ev);
  gst_buffer_unref (c.shape);
}

GST_END_TEST;

/* ---- keymap ---- */

GST_START_TEST (test_keymap)
{
  gboolean shifted;

  fail_unless_equals_int (gst_spice_keymap_scancode_from_name ("space", NULL),
      0x39);
  fail_unless_equals_int (gst_spice_keymap_scancode_from_name ("a",
          &shifted), 0x1e);
  fail_if (shifted);
  fail_unless_equals_int (gst_spice_keymap_scancode_from_name ("A",
          &shifted), 0x1e);
  fail_unless (shifted);
  fail_unless_equals_int (gst_spice_keymap_scancode_from_name ("exclam",
          &shifted), 0x02);
  fail_unless (shifted);
  fail_unless_equals_int (gst_spice_keymap_scancode_from_name ("Control_R",
          NULL), 0x11d);
  fail_unless_equals_int (gst_spice_keymap_scancode_from_name ("Up", NULL),
      0x148);
  fail_unless_equals_int (gst_spice_keymap_scancode_from_name ("nosuchkey",
          NULL), 0);
  fail_unless_equals_string (gst_spice_keymap_name_from_scancode (0x39),
      "space");
  fail_unless_equals_string (gst_spice_keymap_name_from_scancode (0x148),
      "Up");
  fail_unless_equals_string (gst_spice_keymap_name_from_scancode (0x02), "1");
  fail_unless (gst_spice_keymap_name_from_scancode (0x7f) == NULL);
  fail_unless (gst_spice_keymap_is_modifier (0x2a));
  fail_if (gst_spice_keymap_is_modifier (0x1e));

  /* every canonical name maps back to its own scancode */
  {
    guint sc;

    for (sc = 0; sc < 0x200; sc++) {
      const gchar *name = gst_spice_keymap_name_from_scancode (sc);

      if (name)
        fail_unless_equals_int (gst_spice_keymap_scancode_from_name (name,
                NULL), sc);
    }
  }
}

GST_END_TEST;

static Suite *
gstspice_suite (void)
{
  Suite *s = suite_create ("gstspice");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_region_limit_covers_everything);
  tcase_add_test (tc, test_region_least_growth);
  tcase_add_test (tc, test_damage_meta_copy);
  tcase_add_test (tc, test_damage_meta_scales_outward);
  tcase_add_test (tc, test_stream_meta_survives_encoders);
  tcase_add_test (tc, test_draws_roundtrip);
  tcase_add_test (tc, test_draws_reader_rejects_malformed);
  tcase_add_test (tc, test_events_roundtrip);
  tcase_add_test (tc, test_keymap);
  return s;
}

GST_CHECK_MAIN (gstspice);
