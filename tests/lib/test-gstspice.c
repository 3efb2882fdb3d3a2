/* Unit tests for the shared library libgstspice-1.0: metas survive the
 * elements that must keep them, regions cover what was added, the draws
 * format round-trips and rejects malformed input, events and the keymap;
 * every server-side SPICE wire writer writes the bytes it should, the
 * client -> server parsers refuse short and long bodies (the round trips
 * through the client's side are test-client-wire.c's); the BGRx blit and
 * the image decoder (BITMAP, LZ4, JPEG).
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <gst/check/gstcheck.h>
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <string.h>
#include <lz4.h>
#include <turbojpeg.h>

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
  guint bitrate, scale, locks;
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

  /* lock LEDs: sticky downstream, serialized upstream, three bits */
  ev = gst_spice_event_new_key_locks (FALSE, 0xff);
  fail_unless (GST_EVENT_IS_STICKY (ev));
  fail_unless (gst_spice_event_parse_key_locks (ev, &locks));
  fail_unless_equals_int (locks, SPICE_KEYBOARD_MODIFIER_FLAGS_MASK);
  gst_event_unref (ev);
  ev = gst_spice_event_new_key_locks (TRUE,
      SPICE_KEYBOARD_MODIFIER_FLAGS_NUM_LOCK);
  fail_unless (GST_EVENT_IS_UPSTREAM (ev));
  fail_if (GST_EVENT_IS_STICKY (ev));
  fail_unless (gst_spice_event_parse_key_locks (ev, &locks));
  fail_unless_equals_int (locks, SPICE_KEYBOARD_MODIFIER_FLAGS_NUM_LOCK);
  fail_if (gst_spice_event_parse_stream_control (ev, NULL));
  gst_event_unref (ev);
  ev = gst_spice_event_new_stream_control (TRUE);
  fail_if (gst_spice_event_parse_key_locks (ev, &locks));
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

  /* the heads: a round trip; no head, a negative position are refused */
  {
    GstSpiceHeads m = { 2, 2, {{0, 0, 0, 640, 480}, {7, 640, 0, 320, 240}}
    }, back;

    ev = gst_spice_event_new_monitors (&m);
    fail_unless (GST_EVENT_IS_STICKY (ev));
    fail_unless (gst_spice_event_parse_monitors (ev, &back));
    fail_unless (memcmp (&m, &back, sizeof (m)) == 0);
    gst_event_unref (ev);
    fail_unless (gst_spice_heads_fit (&m, 960, 480));
    fail_if (gst_spice_heads_fit (&m, 959, 480));
    fail_unless_equals_int (gst_spice_heads_find (&m, 700, 10), 1);
    fail_unless_equals_int (gst_spice_heads_find (&m, 700, 300), -1);
    m.monitors[1].x = -1;
    ev = gst_spice_event_new_monitors (&m);
    fail_if (gst_spice_event_parse_monitors (ev, &back));
    gst_event_unref (ev);
    m.count = 0;
    ev = gst_spice_event_new_monitors (&m);
    fail_if (gst_spice_event_parse_monitors (ev, &back));
    gst_event_unref (ev);
  }

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

/* One report per key a second: the first at once, the latest of those
 * within the second from the flush after it with the count of the others,
 * a quiet key forgotten, the table bounded. */
static void
collect_report (GstStructure * st, gpointer data)
{
  g_ptr_array_add (data, st);
}

static guint64
suppressed_of (const GstStructure * st)
{
  guint64 n = G_MAXUINT64;

  fail_unless (gst_structure_get_uint64 (st, "suppressed", &n));
  return n;
}

static GstStructure *
numbered_report (gint i)
{
  GstStructure *st = gst_spice_report_new (FALSE, "flood", "peer", "src",
      "r");

  gst_structure_set (st, "n", G_TYPE_INT, i, NULL);
  return st;
}

GST_START_TEST (test_report_limit)
{
  const gint64 s = G_TIME_SPAN_SECOND, t0 = 100 * s;
  GstSpiceReportLimit *limit = gst_spice_report_limit_new (s, 2);
  GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_structure_free);
  GstStructure *st;
  gboolean afresh = TRUE;
  gint n = -1;

  st = gst_spice_report_limit_offer (limit, "a", numbered_report (1), t0,
      &afresh);
  fail_unless (st != NULL && !afresh);
  fail_unless_equals_uint64 (suppressed_of (st), 0);
  gst_structure_free (st);
  fail_unless (gst_spice_report_limit_offer (limit, "a", numbered_report (2),
          t0 + s / 10, NULL) == NULL);
  fail_unless (gst_spice_report_limit_offer (limit, "a", numbered_report (3),
          t0 + s / 5, NULL) == NULL);
  /* another key is not limited by the first */
  st = gst_spice_report_limit_offer (limit, "b", numbered_report (9),
      t0 + s / 5, NULL);
  fail_unless (st != NULL);
  gst_structure_free (st);
  gst_spice_report_limit_flush (limit, t0 + s / 2, collect_report, out);
  fail_unless_equals_int (out->len, 0);
  /* the second is over: the latest kept (3), one other not posted (2) */
  gst_spice_report_limit_flush (limit, t0 + s, collect_report, out);
  fail_unless_equals_int (out->len, 1);
  fail_unless (gst_structure_get_int (g_ptr_array_index (out, 0), "n", &n));
  fail_unless_equals_int (n, 3);
  fail_unless_equals_uint64 (suppressed_of (g_ptr_array_index (out, 0)), 1);
  g_ptr_array_set_size (out, 0);
  /* kept at 1.5 s and replaced by the one at 2.1 s, which goes at once */
  fail_unless (gst_spice_report_limit_offer (limit, "a", numbered_report (4),
          t0 + 3 * s / 2, NULL) == NULL);
  st = gst_spice_report_limit_offer (limit, "a", numbered_report (5),
      t0 + 21 * s / 10, NULL);
  fail_unless (st != NULL);
  fail_unless (gst_structure_get_int (st, "n", &n));
  fail_unless_equals_int (n, 5);
  fail_unless_equals_uint64 (suppressed_of (st), 1);
  gst_structure_free (st);
  gst_spice_report_limit_flush (limit, t0 + 5 * s, collect_report, out);
  fail_unless_equals_int (out->len, 0);
  /* a and b are forgotten after ten quiet seconds: c fits without a
   * fresh start */
  gst_spice_report_limit_flush (limit, t0 + 13 * s, collect_report, out);
  st = gst_spice_report_limit_offer (limit, "c", numbered_report (6),
      t0 + 13 * s, &afresh);
  fail_unless (st != NULL && !afresh);
  gst_structure_free (st);
  st = gst_spice_report_limit_offer (limit, "d", numbered_report (7),
      t0 + 13 * s, &afresh);
  fail_unless (st != NULL && !afresh);
  gst_structure_free (st);
  /* a third key at once: the table of two starts afresh */
  st = gst_spice_report_limit_offer (limit, "e", numbered_report (8),
      t0 + 13 * s, &afresh);
  fail_unless (st != NULL && afresh);
  gst_structure_free (st);
  g_ptr_array_unref (out);
  gst_spice_report_limit_free (limit);
}

GST_END_TEST;

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
  fail_unless_equals_int (gst_spice_keymap_modifier_mask (0x2a),
      GST_NAVIGATION_MODIFIER_SHIFT_MASK);
  fail_unless_equals_int (gst_spice_keymap_modifier_mask (0x1e), 0);

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

/* ---- SPICE wire code ---- */

/* Compares @a with @hex (two digits a byte, spaces ignored) and prints
 * what was written when they differ. */
static void
assert_bytes (GByteArray * a, const gchar * hex, const gchar * what)
{
  GString *want = g_string_new (NULL), *got = g_string_new (NULL);
  const gchar *p;
  guint i;

  for (p = hex; *p; p++)
    if (g_ascii_isxdigit (*p))
      g_string_append_c (want, g_ascii_tolower (*p));
  for (i = 0; i < a->len; i++)
    g_string_append_printf (got, "%02x", a->data[i]);
  fail_unless (g_str_equal (want->str, got->str),
      "%s: wrote\n  %s\nwanted\n  %s", what, got->str, want->str);
  g_string_free (want, TRUE);
  g_string_free (got, TRUE);
  g_byte_array_set_size (a, 0);
}

GST_START_TEST (test_wire_writers_bytes)
{
  GByteArray *a = g_byte_array_new ();
  GstVideoRectangle dest = { 0x10, 0x20, 0x30, 0x40 };
  const guint8 types[] = { SPICE_CHANNEL_MAIN, SPICE_CHANNEL_DISPLAY };
  const guint8 ids[] = { 0, 1 };
  const guint8 bytes[] = { 0xde, 0xad };
  guint8 header[sizeof (SpiceDataHeader)];

  gst_spice_put_u8 (a, 0x01);
  gst_spice_put_u16 (a, 0x0302);
  gst_spice_put_u32 (a, 0x07060504);
  gst_spice_put_u64 (a, G_GUINT64_CONSTANT (0x0f0e0d0c0b0a0908));
  gst_spice_put_bytes (a, bytes, 2);
  gst_spice_put_bytes (a, NULL, 0);
  assert_bytes (a, "01 0203 04050607 08090a0b0c0d0e0f dead", "put_*");
  gst_spice_put_rect (a, &dest);
  assert_bytes (a, "20000000 10000000 60000000 40000000", "put_rect");

  gst_spice_wire_write_ping (a, 7, G_GUINT64_CONSTANT (0x1122334455667788));
  assert_bytes (a, "07000000 8877665544332211", "ping");
  gst_spice_wire_write_main_init (a, 0xabcd, 3, 2, 0, 0, 1000);
  assert_bytes (a, "cdab0000 01000000 03000000 02000000 00000000 00000000"
      "e8030000 00000000", "main_init");
  gst_spice_wire_write_channels_list (a, 2, types, ids);
  assert_bytes (a, "02000000 0100 0201", "channels_list");
  gst_spice_wire_write_mouse_mode (a, 3, 2);
  assert_bytes (a, "0300 0200", "mouse_mode");
  gst_spice_wire_write_surface_create (a, 0, 1280, 800,
      SPICE_SURFACE_FMT_32_xRGB, SPICE_SURFACE_FLAGS_PRIMARY);
  assert_bytes (a, "00000000 00050000 20030000 20000000 01000000",
      "surface_create");
  gst_spice_wire_write_surface_destroy (a, 5);
  assert_bytes (a, "05000000", "surface_destroy");
  {
    GstSpiceHeads m = { 2, 4, {{0, 0, 0, 640, 480}, {1, 640, 0, 320, 240}}
    };

    gst_spice_wire_write_monitors_config (a, 0, &m);
    assert_bytes (a, "0200 0400 00000000 00000000 80020000 e0010000 00000000"
        "00000000 00000000 01000000 00000000 40010000 f0000000 80020000"
        "00000000 00000000", "monitors_config");
  }
  gst_spice_wire_write_draw_copy_head (a, 0, &dest, SPICE_IMAGE_TYPE_LZ4, 0);
  assert_bytes (a, "00000000 20000000 10000000 60000000 40000000 00"
      "39000000 00000000 00000000 40000000 30000000 0800 01 00"
      "00000000 00000000 00000000"
      "0000000000000000 6d 00 30000000 40000000", "draw_copy_head");
  gst_spice_wire_write_copy_bits (a, 0, &dest, 3, -1);
  assert_bytes (a, "00000000 20000000 10000000 60000000 40000000 00"
      "03000000 ffffffff", "copy_bits");
  gst_spice_wire_write_stream_create (a, 0, 2, SPICE_VIDEO_CODEC_TYPE_VP8,
      SPICE_STREAM_FLAGS_TOP_DOWN, 0x30, 0x40, &dest);
  assert_bytes (a, "00000000 02000000 01 02 0000000000000000"
      "30000000 40000000 30000000 40000000"
      "20000000 10000000 60000000 40000000 00", "stream_create");
  gst_spice_wire_write_stream_data_head (a, 2, 0x1000, 0x55);
  assert_bytes (a, "02000000 00100000 55000000", "stream_data_head");
  gst_spice_wire_write_stream_destroy (a, 2);
  assert_bytes (a, "02000000", "stream_destroy");
  gst_spice_wire_write_stream_activate_report (a, 2, 9, 30, 1000);
  assert_bytes (a, "02000000 09000000 1e000000 e8030000",
      "stream_activate_report");
  gst_spice_wire_write_inputs_init (a, 5);
  assert_bytes (a, "0500", "inputs_init");
  gst_spice_wire_write_key_modifiers (a, 6);
  assert_bytes (a, "0600", "key_modifiers");
  gst_spice_wire_write_cursor_init_head (a, -1, 2, TRUE, FALSE, 0, 0, 0, 0,
      0);
  assert_bytes (a, "ffff 0200 0000 0000 01 0100", "cursor_init no shape");
  /* the hot spot is clamped into the shape */
  gst_spice_wire_write_cursor_init_head (a, 1, 2, FALSE, TRUE, 77, 32, 16,
      40, 3);
  assert_bytes (a, "0100 0200 0000 0000 00 0000 4d00000000000000 00"
      "2000 1000 1f00 0300", "cursor_init shape");
  gst_spice_wire_write_cursor_set_head (a, 1, 2, TRUE, TRUE, 77, 32, 16, 4,
      3);
  assert_bytes (a, "0100 0200 01 0000 4d00000000000000 00"
      "2000 1000 0400 0300", "cursor_set");
  gst_spice_wire_write_cursor_set_head (a, 1, 2, FALSE, FALSE, 0, 0, 0, 0,
      0);
  assert_bytes (a, "0100 0200 00 0100", "cursor_set no shape");
  gst_spice_wire_write_cursor_move (a, -2, 3);
  assert_bytes (a, "feff 0300", "cursor_move");
  gst_spice_wire_put_header (header, TRUE, 99, SPICE_MSG_PING, 12);
  g_byte_array_append (a, header, sizeof (SpiceMiniDataHeader));
  assert_bytes (a, "0400 0c000000", "mini header");
  gst_spice_wire_put_header (header, FALSE, 99, SPICE_MSG_PING, 12);
  g_byte_array_append (a, header, sizeof (SpiceDataHeader));
  assert_bytes (a, "6300000000000000 0400 0c000000 00000000", "full header");
  g_byte_array_unref (a);
}

GST_END_TEST;

/* the data headers the server writes, read back; the sub-message list
 * that spicesink never sends is refused */
GST_START_TEST (test_wire_headers)
{
  GstSpiceMsgHeader mh;
  guint8 hdr[sizeof (SpiceDataHeader)];

  /* data headers */
  gst_spice_wire_put_header (hdr, TRUE, 5, SPICE_MSG_DISPLAY_MARK, 0x10203);
  fail_unless (gst_spice_wire_parse_header (hdr, gst_spice_wire_header_size
          (TRUE), TRUE, &mh));
  fail_unless (mh.serial == 0 && mh.type == SPICE_MSG_DISPLAY_MARK &&
      mh.size == 0x10203);
  fail_if (gst_spice_wire_parse_header (hdr, 5, TRUE, &mh));
  gst_spice_wire_put_header (hdr, FALSE, 5, SPICE_MSG_DISPLAY_MARK, 7);
  fail_unless (gst_spice_wire_parse_header (hdr, sizeof (hdr), FALSE, &mh));
  fail_unless (mh.serial == 5 && mh.type == SPICE_MSG_DISPLAY_MARK &&
      mh.size == 7);
  fail_if (gst_spice_wire_parse_header (hdr, sizeof (hdr) - 1, FALSE, &mh));
  hdr[sizeof (hdr) - 1] = 1;    /* a sub-message list */
  fail_if (gst_spice_wire_parse_header (hdr, sizeof (hdr), FALSE, &mh));
}

GST_END_TEST;

typedef gboolean (*BodyParser) (const guint8 * data, gsize size);

static gboolean
parse_pong (const guint8 * d, gsize n)
{
  guint32 id;
  guint64 ts;

  return gst_spice_wire_parse_pong (d, n, &id, &ts);
}

static gboolean
parse_mouse_mode_request (const guint8 * d, gsize n)
{
  guint16 m;

  return gst_spice_wire_parse_mouse_mode_request (d, n, &m);
}

static gboolean
parse_stream_report (const guint8 * d, gsize n)
{
  GstSpiceStreamReport r;

  return gst_spice_wire_parse_stream_report (d, n, &r);
}

static gboolean
parse_key_modifiers (const guint8 * d, gsize n)
{
  guint16 m;

  return gst_spice_wire_parse_key_modifiers (d, n, &m);
}

static gboolean
parse_mouse_motion (const guint8 * d, gsize n)
{
  gint32 dx, dy;
  guint16 b;

  return gst_spice_wire_parse_mouse_motion (d, n, &dx, &dy, &b);
}

static gboolean
parse_mouse_button (const guint8 * d, gsize n)
{
  guint16 b;
  guint8 button;

  return gst_spice_wire_parse_mouse_button (d, n, &button, &b);
}

static gboolean
parse_mouse_position (const guint8 * d, gsize n)
{
  guint32 x, y;
  guint16 b;
  guint8 id;

  return gst_spice_wire_parse_mouse_position (d, n, &x, &y, &b, &id);
}

/* The client -> server parsers read exactly their body: each refuses every
 * shorter body and (but PONG, which may carry padding) a longer one. */
/* the playback and record bodies, byte for byte (spice-common's layouts:
 * playback start u32 channels, u16 format, u32 frequency, u32 time; volume
 * u8 n, u16 × n; record data u32 time then the samples) */
GST_START_TEST (test_audio_wire_bytes)
{
  static const guint8 start[] = { 2, 0, 0, 0, SPICE_AUDIO_FMT_S16, 0,
    0x80, 0xbb, 0, 0, 0x78, 0x56, 0x34, 0x12
  };
  static const guint8 volume[] = { 2, 0x34, 0x12, 0xff, 0xff };
  static const guint8 mode[] = { 1, 0, 0, 0, SPICE_AUDIO_DATA_MODE_OPUS, 0 };
  static const guint8 record[] = { 0x10, 0, 0, 0, 0xaa, 0xbb };
  const guint16 vol[] = { 0x1234, 0xffff };
  GByteArray *a = g_byte_array_new ();
  const guint8 *data;
  gsize data_size;
  guint32 time;
  guint16 m;

  gst_spice_audio_write_playback_start (a, 2, 48000, 0x12345678);
  fail_unless_equals_int (a->len, sizeof (start));
  fail_unless (memcmp (a->data, start, sizeof (start)) == 0);
  g_byte_array_set_size (a, 0);
  gst_spice_audio_write_volume (a, 2, vol);
  fail_unless_equals_int (a->len, sizeof (volume));
  fail_unless (memcmp (a->data, volume, sizeof (volume)) == 0);
  g_byte_array_set_size (a, 0);
  gst_spice_audio_write_playback_mode (a, 1, SPICE_AUDIO_DATA_MODE_OPUS);
  fail_unless (a->len == sizeof (mode) && !memcmp (a->data, mode, a->len));
  g_byte_array_unref (a);

  fail_unless (gst_spice_audio_parse_record_data (record, sizeof (record),
          &time, &data, &data_size));
  fail_unless_equals_int (time, 0x10);
  fail_unless (data == record + 4 && data_size == 2);
  fail_unless (gst_spice_audio_parse_record_data (record, 4, &time, &data,
          &data_size) && data_size == 0);
  fail_if (gst_spice_audio_parse_record_data (record, 3, &time, &data,
          &data_size));
  fail_unless (gst_spice_audio_parse_record_mode (mode, sizeof (mode), &time,
          &m));
  fail_unless (time == 1 && m == SPICE_AUDIO_DATA_MODE_OPUS);
  fail_if (gst_spice_audio_parse_record_mode (mode, 5, &time, &m));
}

GST_END_TEST;

GST_START_TEST (test_wire_parsers_strict)
{
  static const guint8 pong[12] = { 1, 0, 0, 0, 2 };
  static const guint8 report[32] = { 63 };
  static const guint8 button[3] = { 7, 1, 0 };
  static const guint8 any[40] = { 1 };
  const struct
  {
    const gchar *name;
    BodyParser parse;
    const guint8 *body;
    gsize size;
    gboolean longer_ok;
  } cases[] = {
    {"PONG", parse_pong, pong, 12, TRUE},
    {"MOUSE_MODE_REQUEST", parse_mouse_mode_request, any, 2, FALSE},
    {"STREAM_REPORT", parse_stream_report, report, 32, FALSE},
    {"KEY_MODIFIERS", parse_key_modifiers, any, 2, FALSE},
    {"MOUSE_MOTION", parse_mouse_motion, any, 10, FALSE},
    {"MOUSE_POSITION", parse_mouse_position, any, 11, FALSE},
    {"MOUSE_PRESS", parse_mouse_button, button, 3, FALSE},
  };
  guint8 longer[64] = { 0 };
  GstSpiceStreamReport r;
  guint8 b;
  guint16 bs;
  guint i;
  gsize n;

  for (i = 0; i < G_N_ELEMENTS (cases); i++) {
    fail_unless (cases[i].parse (cases[i].body, cases[i].size), "%s",
        cases[i].name);
    fail_if (cases[i].parse (NULL, cases[i].size), "%s NULL", cases[i].name);
    for (n = 0; n < cases[i].size; n++)
      fail_if (cases[i].parse (cases[i].body, n), "%s cut at %"
          G_GSIZE_FORMAT, cases[i].name, n);
    memcpy (longer, cases[i].body, cases[i].size);
    fail_unless (cases[i].parse (longer, cases[i].size + 1) ==
        cases[i].longer_ok, "%s one byte longer", cases[i].name);
  }
  /* values that are refused */
  fail_unless (gst_spice_wire_parse_stream_report (report, 32, &r));
  fail_unless_equals_int (r.stream_id, 63);
  memcpy (longer, report, 32);
  longer[0] = GST_SPICE_WIRE_MAX_STREAMS;
  fail_if (gst_spice_wire_parse_stream_report (longer, 32, &r));
  memcpy (longer, button, 3);
  longer[0] = 0;
  fail_if (gst_spice_wire_parse_mouse_button (longer, 3, &b, &bs));
  longer[0] = 8;
  fail_if (gst_spice_wire_parse_mouse_button (longer, 3, &b, &bs));
}

GST_END_TEST;

/* ---- blit ---- */

/* a pattern no two pixels share */
static void
fill_pattern (guint8 * p, gsize size, guint seed)
{
  gsize i;

  for (i = 0; i < size; i++)
    p[i] = (guint8) (i * 7 + seed + i / 251);
}

/* Copies the rectangle the slow way, as the reference. */
static void
blit_reference (guint8 * dst, gsize dst_stride, gint dx, gint dy,
    const guint8 * src, gsize src_stride, gint sx, gint sy, gint w, gint h)
{
  gint x, y, k;

  for (y = 0; y < h; y++)
    for (x = 0; x < w; x++)
      for (k = 0; k < 4; k++)
        dst[(dy + y) * dst_stride + (dx + x) * 4 + k] =
            src[(sy + y) * src_stride + (sx + x) * 4 + k];
}

GST_START_TEST (test_blit_bgrx)
{
  const struct
  {
    gsize dst_stride, src_stride;
    gint dx, dy, sx, sy, w, h;
  } cases[] = {
    /* odd strides (not multiples of 4), offsets on both sides */
    {4 * 13 + 3, 4 * 11 + 1, 2, 3, 1, 2, 7, 5},
    {4 * 9, 4 * 17 + 2, 0, 1, 9, 0, 9, 4},
    /* whole rows in both: the one-memcpy path */
    {4 * 8, 4 * 8, 0, 2, 0, 1, 8, 6},
    /* same width but other strides: row by row */
    {4 * 8, 4 * 8 + 4, 0, 0, 0, 0, 8, 3},
    /* one pixel, one row, one column, nothing */
    {4 * 5, 4 * 5, 4, 4, 0, 0, 1, 1},
    {4 * 20, 4 * 6, 3, 0, 0, 5, 6, 1},
    {4 * 3, 4 * 7, 2, 0, 6, 0, 1, 9},
    {4 * 3, 4 * 7, 0, 0, 0, 0, 0, 5},
    {4 * 3, 4 * 7, 0, 0, 0, 0, 3, -1},
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (cases); i++) {
    gsize dsize = cases[i].dst_stride * 16, ssize = cases[i].src_stride * 16;
    guint8 *src = g_malloc (ssize), *dst = g_malloc (dsize);
    guint8 *want = g_malloc (dsize);

    fill_pattern (src, ssize, i);
    fill_pattern (dst, dsize, 100 + i);
    memcpy (want, dst, dsize);
    if (cases[i].w > 0 && cases[i].h > 0)
      blit_reference (want, cases[i].dst_stride, cases[i].dx, cases[i].dy,
          src, cases[i].src_stride, cases[i].sx, cases[i].sy, cases[i].w,
          cases[i].h);
    gst_spice_blit_bgrx (dst, cases[i].dst_stride, cases[i].dx, cases[i].dy,
        src, cases[i].src_stride, cases[i].sx, cases[i].sy, cases[i].w,
        cases[i].h);
    /* the rectangle is copied and not one byte around it is touched */
    fail_unless (memcmp (dst, want, dsize) == 0, "case %u", i);
    g_free (src);
    g_free (dst);
    g_free (want);
  }
}

GST_END_TEST;

/* ---- damage-only buffers (memory:SpiceDamage) ---- */

/* a 6x4 picture, stride 6 * 4 + 8: pixel (x, y) is bytes
 * { x, y, 0x10 + x + 6 * y, 0xff } */
#define DMG_W 6
#define DMG_H 4
#define DMG_STRIDE (DMG_W * 4 + 8)

static guint8 *
damage_picture (void)
{
  guint8 *p = g_malloc0 (DMG_STRIDE * DMG_H);
  gint x, y;

  for (y = 0; y < DMG_H; y++)
    for (x = 0; x < DMG_W; x++) {
      guint8 *px = p + y * DMG_STRIDE + x * 4;

      px[0] = x;
      px[1] = y;
      px[2] = 0x10 + x + DMG_W * y;
      px[3] = 0xff;
    }
  return p;
}

/* a damage-only buffer of @size bytes (0xee) listing @rects, unchecked */
static GstBuffer *
damage_buffer_raw (const GstVideoRectangle * rects, guint n, gsize size)
{
  GstBuffer *b = gst_buffer_new_allocate (NULL, size, NULL);

  gst_buffer_memset (b, 0, 0xee, size);
  gst_buffer_add_spice_damage_meta (b, 9, rects, n);
  return b;
}

GST_START_TEST (test_damage_pack_apply_bytes)
{
  const GstVideoRectangle rects[] = { {1, 1, 2, 2}, {4, 0, 2, 1},
  {0, 3, 1, 1}
  };
  /* the pixels row by row, the rectangles one after the other */
  const guint8 want[] = {
    1, 1, 0x17, 0xff, 2, 1, 0x18, 0xff,
    1, 2, 0x1d, 0xff, 2, 2, 0x1e, 0xff,
    4, 0, 0x14, 0xff, 5, 0, 0x15, 0xff,
    0, 3, 0x22, 0xff,
  };
  guint8 *src = damage_picture (), *dst, *expect;
  GstSpiceDamageMeta *meta;
  GError *err = NULL;
  GstBuffer *b;
  GstMapInfo map;
  guint i;
  gint y;

  fail_unless_equals_uint64 (gst_spice_damage_packed_size (rects, 3),
      sizeof (want));
  b = gst_spice_damage_pack (src, DMG_STRIDE, rects, 3, 42);
  fail_unless_equals_int (gst_buffer_get_size (b), sizeof (want));
  fail_unless (gst_buffer_map (b, &map, GST_MAP_READ));
  fail_unless (memcmp (map.data, want, sizeof (want)) == 0);
  gst_buffer_unmap (b, &map);
  meta = gst_spice_damage_validate (b, DMG_W, DMG_H, &err);
  fail_unless (meta != NULL, "%s", err ? err->message : "");
  fail_unless_equals_uint64 (meta->seq, 42);
  fail_unless_equals_int (meta->n_rects, 3);
  for (i = 0; i < 3; i++)
    fail_unless (memcmp (&meta->rects[i], &rects[i], sizeof (rects[i])) == 0);
  fail_if (gst_spice_damage_covers (meta, DMG_W, DMG_H));

  /* applied onto a picture of 0x55: those pixels and not a byte more */
  dst = g_malloc (DMG_STRIDE * DMG_H);
  memset (dst, 0x55, DMG_STRIDE * DMG_H);
  expect = g_memdup2 (dst, DMG_STRIDE * DMG_H);
  for (i = 0; i < 3; i++)
    for (y = rects[i].y; y < rects[i].y + rects[i].h; y++)
      memcpy (expect + y * DMG_STRIDE + rects[i].x * 4,
          src + y * DMG_STRIDE + rects[i].x * 4, rects[i].w * 4);
  fail_unless (gst_spice_damage_apply (b, dst, DMG_STRIDE, DMG_W, DMG_H,
          &err), "%s", err ? err->message : "");
  fail_unless (memcmp (dst, expect, DMG_STRIDE * DMG_H) == 0);
  gst_buffer_unref (b);

  /* the whole surface: one rectangle covering it, every byte */
  {
    GstVideoRectangle all = { 0, 0, DMG_W, DMG_H };

    b = gst_spice_damage_pack (src, DMG_STRIDE, &all, 1, 43);
    fail_unless_equals_int (gst_buffer_get_size (b), DMG_W * DMG_H * 4);
    meta = gst_spice_damage_validate (b, DMG_W, DMG_H, NULL);
    fail_unless (gst_spice_damage_covers (meta, DMG_W, DMG_H));
    memset (dst, 0, DMG_STRIDE * DMG_H);
    fail_unless (gst_spice_damage_apply (b, dst, DMG_STRIDE, DMG_W, DMG_H,
            NULL));
    for (y = 0; y < DMG_H; y++)
      fail_unless (memcmp (dst + y * DMG_STRIDE, src + y * DMG_STRIDE,
              DMG_W * 4) == 0);
    gst_buffer_unref (b);
  }
  /* nothing damaged: an empty buffer, which applies as nothing */
  b = gst_spice_damage_pack (src, DMG_STRIDE, NULL, 0, 44);
  fail_unless_equals_int (gst_buffer_get_size (b), 0);
  fail_unless (gst_spice_damage_apply (b, dst, DMG_STRIDE, DMG_W, DMG_H,
          NULL));
  gst_buffer_unref (b);
  g_free (src);
  g_free (dst);
  g_free (expect);
}

GST_END_TEST;

/* malformed buffers are errors that change nothing, never overruns */
GST_START_TEST (test_damage_rejects_malformed)
{
  const struct
  {
    GstVideoRectangle r[2];
    guint n;
    gsize size;
  } bad[] = {
    {{{0, 0, 2, 2}}, 1, 2 * 2 * 4 - 1},   /* one byte short */
    {{{0, 0, 2, 2}}, 1, 2 * 2 * 4 + 4},   /* a pixel too many */
    {{{5, 0, 2, 1}}, 1, 2 * 4},   /* past the right edge */
    {{{0, 3, 1, 2}}, 1, 2 * 4},   /* past the bottom */
    {{{-1, 0, 1, 1}}, 1, 4},      /* negative origin */
    {{{0, 0, 0, 1}}, 1, 0},       /* empty */
    {{{0, 0, 1, -1}}, 1, 0},      /* negative size */
    {{{0, 0, 1, 1}, {G_MAXINT, 0, 2, 1}}, 2, 12},       /* overflowing */
  };
  GstVideoRectangle many[GST_SPICE_DAMAGE_MAX_RECTS + 1];
  guint8 *dst = g_malloc (DMG_STRIDE * DMG_H), *before;
  GstBuffer *b;
  GError *err = NULL;
  GstCaps *caps;
  guint i;

  memset (dst, 0x55, DMG_STRIDE * DMG_H);
  before = g_memdup2 (dst, DMG_STRIDE * DMG_H);
  for (i = 0; i < G_N_ELEMENTS (bad); i++) {
    b = damage_buffer_raw (bad[i].r, bad[i].n, bad[i].size);
    fail_if (gst_spice_damage_validate (b, DMG_W, DMG_H, NULL), "case %u", i);
    fail_if (gst_spice_damage_apply (b, dst, DMG_STRIDE, DMG_W, DMG_H, &err),
        "case %u", i);
    fail_unless (g_error_matches (err, GST_STREAM_ERROR,
            GST_STREAM_ERROR_FORMAT), "case %u", i);
    g_clear_error (&err);
    gst_buffer_unref (b);
  }
  /* too many rectangles, each fine */
  for (i = 0; i < G_N_ELEMENTS (many); i++) {
    GstVideoRectangle one = { 0, 0, 1, 1 };

    many[i] = one;
  }
  b = damage_buffer_raw (many, G_N_ELEMENTS (many), 4 * G_N_ELEMENTS (many));
  fail_if (gst_spice_damage_apply (b, dst, DMG_STRIDE, DMG_W, DMG_H, NULL));
  gst_buffer_unref (b);
  /* no meta */
  b = gst_buffer_new_allocate (NULL, 4, NULL);
  fail_if (gst_spice_damage_apply (b, dst, DMG_STRIDE, DMG_W, DMG_H, NULL));
  gst_buffer_unref (b);
  fail_unless (memcmp (dst, before, DMG_STRIDE * DMG_H) == 0);

  caps = gst_caps_from_string ("video/x-raw(" GST_CAPS_FEATURE_MEMORY_SPICE_DAMAGE
      "), format=BGRx, width=6, height=4");
  fail_unless (gst_spice_caps_is_damage_only (caps));
  gst_caps_unref (caps);
  caps = gst_caps_from_string ("video/x-raw, format=BGRx, width=6, height=4");
  fail_if (gst_spice_caps_is_damage_only (caps));
  gst_caps_unref (caps);
  g_free (dst);
  g_free (before);
}

GST_END_TEST;

/* ---- image decoder ---- */

#define IMG_W 37
#define IMG_H 23

/* @dst_stride apart, IMG_W x IMG_H at (3, 2) of a 48 x 30 canvas */
static guint8 *
decode_into_canvas (GstSpiceImageDecoder * dec, GstSpiceImageType type,
    const guint8 * payload, gsize size, gsize stride, GError ** error)
{
  guint8 *canvas = g_malloc0 (stride * 30);

  if (!gst_spice_image_decoder_decode (dec, type, IMG_W, IMG_H, payload, size,
          canvas + 2 * stride + 3 * 4, stride, error)) {
    g_free (canvas);
    return NULL;
  }
  return canvas;
}

/* TRUE if @canvas holds @px (IMG_W x IMG_H, packed) at (3, 2) on B,G,R,
 * within @tolerance per channel, and zeros elsewhere */
static gboolean
canvas_holds (const guint8 * canvas, gsize stride, const guint8 * px,
    gint tolerance)
{
  gint x, y, k;

  for (y = 0; y < 30; y++)
    for (x = 0; x < (gint) stride / 4; x++) {
      const guint8 *c = canvas + y * stride + x * 4;
      gboolean inside = x >= 3 && x < 3 + IMG_W && y >= 2 && y < 2 + IMG_H;

      for (k = 0; k < 3; k++) {
        gint want = inside ? px[((y - 2) * IMG_W + x - 3) * 4 + k] : 0;

        if (ABS (c[k] - want) > tolerance)
          return FALSE;
      }
    }
  return TRUE;
}

/* an LZ4 payload of @px in two blocks of one stream, rows in @top_down
 * order */
static GByteArray *
lz4_payload (const guint8 * px, gboolean top_down)
{
  gsize row = IMG_W * 4, half = row * (IMG_H / 2), all = row * IMG_H;
  guint8 *rows = g_malloc (all);
  GByteArray *a = g_byte_array_new ();
  LZ4_stream_t *st = LZ4_createStream ();
  gsize pos, done = 0;
  gint y;

  for (y = 0; y < IMG_H; y++)
    memcpy (rows + y * row, px + (top_down ? y : IMG_H - 1 - y) * row, row);
  g_byte_array_set_size (a, GST_SPICE_LZ4_HEADER_SIZE);
  while (done < all) {
    gsize n = done == 0 ? half : all - done;
    gint bound = LZ4_compressBound (n), out;

    pos = a->len;
    g_byte_array_set_size (a, pos + GST_SPICE_LZ4_BLOCK_HEADER_SIZE + bound);
    out = LZ4_compress_fast_continue (st, (const char *) rows + done,
        (char *) a->data + pos + GST_SPICE_LZ4_BLOCK_HEADER_SIZE, n, bound, 1);
    fail_unless (out > 0);
    gst_spice_lz4_block_write_header (a->data + pos, out);
    g_byte_array_set_size (a, pos + GST_SPICE_LZ4_BLOCK_HEADER_SIZE + out);
    done += n;
  }
  gst_spice_lz4_payload_write_header (a->data, a->len);
  a->data[4] = top_down ? 1 : 0;
  LZ4_freeStream (st);
  g_free (rows);
  return a;
}

GST_START_TEST (test_image_decoder)
{
  GstSpiceImageDecoder *dec = gst_spice_image_decoder_new ();
  gsize packed = IMG_W * 4, strided = 48 * 4 + 8;
  guint8 px[IMG_W * IMG_H * 4], *canvas, *bitmap;
  gsize bitmap_size = gst_spice_bitmap_payload_size (IMG_W, IMG_H);
  GByteArray *lz4;
  GError *err = NULL;
  tjhandle tj = tjInitCompress ();
  guint8 *jpeg = NULL, *framed;
  unsigned long jpeg_size = 0;
  gint y;

  fill_pattern (px, sizeof (px), 5);

  /* BITMAP, top-down (as spicetiler writes it) and bottom-up */
  bitmap = g_malloc (bitmap_size);
  gst_spice_bitmap_payload_write (bitmap, px, packed, IMG_W, IMG_H);
  canvas = decode_into_canvas (dec, GST_SPICE_IMAGE_BITMAP, bitmap,
      bitmap_size, strided, &err);
  fail_unless (canvas != NULL, "%s", err ? err->message : "");
  fail_unless (canvas_holds (canvas, strided, px, 0));
  g_free (canvas);
  bitmap[1] &= ~SPICE_BITMAP_FLAGS_TOP_DOWN;
  for (y = 0; y < IMG_H; y++)
    memcpy (bitmap + GST_SPICE_BITMAP_HEADER_SIZE + y * packed,
        px + (IMG_H - 1 - y) * packed, packed);
  canvas = decode_into_canvas (dec, GST_SPICE_IMAGE_BITMAP, bitmap,
      bitmap_size, strided, NULL);
  fail_unless (canvas && canvas_holds (canvas, strided, px, 0));
  g_free (canvas);
  fail_if (gst_spice_image_decoder_decode (dec, GST_SPICE_IMAGE_BITMAP,
          IMG_W + 1, IMG_H, bitmap, bitmap_size, px, sizeof (px), NULL));
  g_free (bitmap);

  /* LZ4, two blocks: into rows with padding and, top-down, into packed
   * rows (decompressed in place) */
  lz4 = lz4_payload (px, TRUE);
  canvas = decode_into_canvas (dec, GST_SPICE_IMAGE_LZ4, lz4->data, lz4->len,
      strided, &err);
  fail_unless (canvas != NULL, "%s", err ? err->message : "");
  fail_unless (canvas_holds (canvas, strided, px, 0));
  g_free (canvas);
  canvas = g_malloc0 (sizeof (px));
  fail_unless (gst_spice_image_decoder_decode (dec, GST_SPICE_IMAGE_LZ4,
          IMG_W, IMG_H, lz4->data, lz4->len, canvas, packed, NULL));
  fail_unless (memcmp (canvas, px, sizeof (px)) == 0);
  /* a block cut short, a wrong format, a smaller image */
  fail_if (gst_spice_image_decoder_decode (dec, GST_SPICE_IMAGE_LZ4, IMG_W,
          IMG_H, lz4->data, lz4->len - 1, canvas, packed, NULL));
  fail_if (gst_spice_image_decoder_decode (dec, GST_SPICE_IMAGE_LZ4, IMG_W,
          IMG_H - 1, lz4->data, lz4->len, canvas, packed, NULL));
  lz4->data[5] = SPICE_BITMAP_FMT_RGBA;
  fail_if (gst_spice_image_decoder_decode (dec, GST_SPICE_IMAGE_LZ4, IMG_W,
          IMG_H, lz4->data, lz4->len, canvas, packed, &err));
  fail_unless (err && err->domain == GST_STREAM_ERROR);
  g_clear_error (&err);
  g_free (canvas);
  g_byte_array_unref (lz4);
  lz4 = lz4_payload (px, FALSE);
  canvas = decode_into_canvas (dec, GST_SPICE_IMAGE_LZ4, lz4->data, lz4->len,
      strided, NULL);
  fail_unless (canvas && canvas_holds (canvas, strided, px, 0));
  g_free (canvas);
  g_byte_array_unref (lz4);

  /* JPEG (lossy: near the source), and one of another size */
  fail_unless (tjCompress2 (tj, px, IMG_W, packed, IMG_H, TJPF_BGRX, &jpeg,
          &jpeg_size, TJSAMP_444, 100, 0) == 0);
  framed = g_malloc (GST_SPICE_BINARY_HEADER_SIZE + jpeg_size);
  memcpy (framed + GST_SPICE_BINARY_HEADER_SIZE, jpeg, jpeg_size);
  gst_spice_binary_payload_set_size (framed,
      GST_SPICE_BINARY_HEADER_SIZE + jpeg_size);
  canvas = decode_into_canvas (dec, GST_SPICE_IMAGE_JPEG, framed,
      GST_SPICE_BINARY_HEADER_SIZE + jpeg_size, strided, &err);
  fail_unless (canvas != NULL, "%s", err ? err->message : "");
  fail_unless (canvas_holds (canvas, strided, px, 48));
  g_free (canvas);
  canvas = g_malloc0 (sizeof (px));
  fail_if (gst_spice_image_decoder_decode (dec, GST_SPICE_IMAGE_JPEG, IMG_W,
          IMG_H + 1, framed, GST_SPICE_BINARY_HEADER_SIZE + jpeg_size, canvas,
          packed, NULL));
  fail_if (gst_spice_image_decoder_decode (dec, GST_SPICE_IMAGE_JPEG, IMG_W,
          IMG_H, framed, GST_SPICE_BINARY_HEADER_SIZE + jpeg_size - 1, canvas,
          packed, NULL));
  /* no other type, no row shorter than the image */
  fail_if (gst_spice_image_decoder_decode (dec, GST_SPICE_IMAGE_COPY_BITS,
          IMG_W, IMG_H, framed, 8, canvas, packed, NULL));
  fail_if (gst_spice_image_decoder_decode (dec, GST_SPICE_IMAGE_JPEG, IMG_W,
          IMG_H, framed, GST_SPICE_BINARY_HEADER_SIZE + jpeg_size, canvas,
          packed - 4, NULL));
  g_free (canvas);
  g_free (framed);
  tjFree (jpeg);
  tjDestroy (tj);
  gst_spice_image_decoder_free (dec);
}

GST_END_TEST;

/* the draws layout, byte for byte: header, a region header, its payload
 * padded to 4 bytes */
GST_START_TEST (test_draws_bytes)
{
  GstVideoRectangle dest = { 1, 2, 3, 4 };
  const guint8 jpeg_like[] = { 1, 0, 0, 0, 0xaa };
  GstSpiceDrawsWriter *w = gst_spice_draws_writer_new (7, 0);
  GByteArray *a = g_byte_array_new ();
  GstBuffer *buf;
  GstMapInfo map;

  gst_spice_draws_writer_add_copy_bits (w, &dest, 5, 6);
  gst_spice_draws_writer_add (w, &dest, GST_SPICE_IMAGE_JPEG,
      GST_SPICE_DRAW_FLAG_LOSSY, jpeg_like, sizeof (jpeg_like));
  buf = gst_spice_draws_writer_finish (w);
  gst_buffer_map (buf, &map, GST_MAP_READ);
  g_byte_array_append (a, map.data, map.size);
  assert_bytes (a, "53504457 0100 0200 07000000 00000000"
      "01000000 02000000 03000000 04000000 ff 00 0000 08000000"
      "05000000 06000000"
      "01000000 02000000 03000000 04000000 69 01 0000 05000000"
      "01000000 aa000000", "draws");
  gst_buffer_unmap (buf, &map);
  gst_buffer_unref (buf);
  g_byte_array_unref (a);
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
  tcase_add_test (tc, test_report_limit);
  tcase_add_test (tc, test_keymap);
  tcase_add_test (tc, test_wire_writers_bytes);
  tcase_add_test (tc, test_draws_bytes);
  tcase_add_test (tc, test_wire_headers);
  tcase_add_test (tc, test_wire_parsers_strict);
  tcase_add_test (tc, test_audio_wire_bytes);
  tcase_add_test (tc, test_blit_bgrx);
  tcase_add_test (tc, test_damage_pack_apply_bytes);
  tcase_add_test (tc, test_damage_rejects_malformed);
  tcase_add_test (tc, test_image_decoder);
  return s;
}

GST_CHECK_MAIN (gstspice);
