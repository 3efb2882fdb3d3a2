/* tests/webrtc: spicertpav1pay, the AV1 payloader for browsers. Temporal
 * units of known OBUs go in; the RTP packets that come out are read back
 * as the RTP payload format for AV1 says a receiver reads them
 * (aggregation header, LEB128 element lengths, fragments joined by Z/Y),
 * and give back the same OBUs without their size fields, without the
 * temporal delimiter and padding; N on a key frame's first packet, the
 * marker on a unit's last, every packet within the MTU.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <string.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/rtp/gstrtpbuffer.h>

#define MTU 1200

/* appends an OBU of @type with a size field (and an extension byte
 * when @ext >= 0) and @len payload bytes of @seed */
static void
put_obu (GByteArray * a, guint type, gint ext, gsize len, guint8 seed)
{
  guint8 h = (guint8) ((type << 3) | 0x02 | (ext >= 0 ? 0x04 : 0));
  gsize v = len;

  g_byte_array_append (a, &h, 1);
  if (ext >= 0) {
    guint8 e = (guint8) ext;

    g_byte_array_append (a, &e, 1);
  }
  do {
    guint8 b = (v & 0x7f) | (v >= 0x80 ? 0x80 : 0);

    g_byte_array_append (a, &b, 1);
    v >>= 7;
  } while (v);
  for (gsize i = 0; i < len; i++) {
    guint8 b = (guint8) (seed + i * 31);

    g_byte_array_append (a, &b, 1);
  }
}

/* what a receiver gets back from @n packets: the OBUs (each as it was
 * sent, the element's bytes) in @obus; the flags seen in @aggs */
static void
depacketize (GstBuffer ** pkts, guint n, GPtrArray * obus, guint8 * aggs)
{
  GByteArray *cur = NULL;

  for (guint i = 0; i < n; i++) {
    GstRTPBuffer rtp = GST_RTP_BUFFER_INIT;
    const guint8 *p;
    gsize len, at = 1;
    guint8 agg;

    fail_unless (gst_rtp_buffer_map (pkts[i], GST_MAP_READ, &rtp));
    p = gst_rtp_buffer_get_payload (&rtp);
    len = gst_rtp_buffer_get_payload_len (&rtp);
    fail_unless (len >= 2);
    agg = aggs[i] = p[0];
    fail_unless_equals_int ((agg >> 4) & 3, 0);        /* W = 0 */
    /* Z: the first element continues the fragment before */
    fail_unless_equals_int ((agg & 0x80) != 0, cur != NULL);
    while (at < len) {
      guint64 el = 0;
      guint k = 0;

      do {
        fail_unless (at < len && k < 8);
        el |= (guint64) (p[at] & 0x7f) << (7 * k);
        k++;
      } while (p[at++] & 0x80);
      fail_unless (el > 0 && at + el <= len, "element of %" G_GUINT64_FORMAT
          " bytes at %" G_GSIZE_FORMAT " of %" G_GSIZE_FORMAT, el, at, len);
      if (!cur)
        cur = g_byte_array_new ();
      g_byte_array_append (cur, p + at, el);
      at += el;
      /* the last element goes on when Y says so */
      if (at < len || !(agg & 0x40)) {
        g_ptr_array_add (obus, cur);
        cur = NULL;
      }
    }
    gst_rtp_buffer_unmap (&rtp);
  }
  fail_unless (cur == NULL, "the last packet's Y promised more");
}

/* the element bytes an OBU put_obu() made should arrive as */
static GByteArray *
expected_obu (guint type, gint ext, gsize len, guint8 seed)
{
  GByteArray *a = g_byte_array_new ();
  guint8 h = (guint8) ((type << 3) | (ext >= 0 ? 0x04 : 0));

  g_byte_array_append (a, &h, 1);
  if (ext >= 0) {
    guint8 e = (guint8) ext;

    g_byte_array_append (a, &e, 1);
  }
  for (gsize i = 0; i < len; i++) {
    guint8 b = (guint8) (seed + i * 31);

    g_byte_array_append (a, &b, 1);
  }
  return a;
}

static GstHarness *
harness_new (void)
{
  GstHarness *h = gst_harness_new ("spicertpav1pay");

  g_object_set (h->element, "mtu", (guint) MTU, "pt", (guint) 100, NULL);
  gst_harness_set_src_caps_str (h, "video/x-av1, stream-format=obu-stream, "
      "alignment=tu, width=64, height=64, framerate=30/1");
  return h;
}

/* pushes @tu; the packets that came of it (*@n) */
static GstBuffer **
push_unit (GstHarness * h, GByteArray * tu, gboolean delta, GstClockTime pts,
    guint * n)
{
  GstBuffer *in = gst_buffer_new_memdup (tu->data, tu->len);
  GstBuffer **out;

  GST_BUFFER_PTS (in) = pts;
  if (delta)
    GST_BUFFER_FLAG_SET (in, GST_BUFFER_FLAG_DELTA_UNIT);
  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  *n = gst_harness_buffers_in_queue (h);
  out = g_new0 (GstBuffer *, *n + 1);
  for (guint i = 0; i < *n; i++)
    out[i] = gst_harness_pull (h);
  return out;
}

static void
free_packets (GstBuffer ** pkts, guint n)
{
  for (guint i = 0; i < n; i++)
    gst_buffer_unref (pkts[i]);
  g_free (pkts);
}

GST_START_TEST (test_key_unit)
{
  GstHarness *h = harness_new ();
  GByteArray *tu = g_byte_array_new ();
  GPtrArray *obus = g_ptr_array_new_with_free_func ((GDestroyNotify)
      g_byte_array_unref);
  GByteArray *want[3];
  guint8 aggs[64];
  GstBuffer **pkts;
  guint n, ts = 0;

  /* a temporal delimiter, a sequence header, a frame of 3000 bytes with
   * an extension byte, a padding OBU, a small frame */
  put_obu (tu, 2, -1, 0, 0);
  put_obu (tu, 1, -1, 12, 1);
  put_obu (tu, 6, 0x28, 3000, 2);
  put_obu (tu, 15, -1, 5, 3);
  put_obu (tu, 6, -1, 200, 4);
  want[0] = expected_obu (1, -1, 12, 1);
  want[1] = expected_obu (6, 0x28, 3000, 2);
  want[2] = expected_obu (6, -1, 200, 4);

  pkts = push_unit (h, tu, FALSE, 40 * GST_MSECOND, &n);
  fail_unless (n >= 3 && n < G_N_ELEMENTS (aggs), "%u packets", n);
  for (guint i = 0; i < n; i++) {
    GstRTPBuffer rtp = GST_RTP_BUFFER_INIT;

    fail_unless (gst_buffer_get_size (pkts[i]) <= MTU);
    fail_unless (gst_rtp_buffer_map (pkts[i], GST_MAP_READ, &rtp));
    fail_unless_equals_int (gst_rtp_buffer_get_marker (&rtp), i == n - 1);
    fail_unless_equals_int (gst_rtp_buffer_get_payload_type (&rtp), 100);
    if (i == 0)
      ts = gst_rtp_buffer_get_timestamp (&rtp);
    fail_unless_equals_int (gst_rtp_buffer_get_timestamp (&rtp), ts);
    gst_rtp_buffer_unmap (&rtp);
  }
  depacketize (pkts, n, obus, aggs);
  /* N on the first packet only: a key frame's unit with its sequence
   * header starts a coded video sequence */
  fail_unless (aggs[0] & 0x08);
  for (guint i = 1; i < n; i++)
    fail_if (aggs[i] & 0x08);
  fail_unless_equals_int (obus->len, 3);
  for (guint i = 0; i < 3; i++) {
    GByteArray *got = g_ptr_array_index (obus, i);

    fail_unless_equals_int (got->len, want[i]->len);
    fail_unless (memcmp (got->data, want[i]->data, got->len) == 0,
        "OBU %u differs", i);
    g_byte_array_unref (want[i]);
  }
  free_packets (pkts, n);

  /* a delta unit of one small frame: one packet, no N, the marker */
  g_byte_array_set_size (tu, 0);
  g_ptr_array_set_size (obus, 0);
  put_obu (tu, 2, -1, 0, 0);
  put_obu (tu, 6, -1, 40, 9);
  pkts = push_unit (h, tu, TRUE, 73 * GST_MSECOND, &n);
  fail_unless_equals_int (n, 1);
  depacketize (pkts, n, obus, aggs);
  fail_if (aggs[0] & 0x08);
  fail_unless_equals_int (obus->len, 1);
  want[0] = expected_obu (6, -1, 40, 9);
  fail_unless (memcmp (((GByteArray *) g_ptr_array_index (obus, 0))->data,
          want[0]->data, want[0]->len) == 0);
  g_byte_array_unref (want[0]);
  free_packets (pkts, n);

  /* a unit whose OBU claims more than there is: nothing is sent */
  g_byte_array_set_size (tu, 0);
  put_obu (tu, 6, -1, 40, 9);
  g_byte_array_set_size (tu, 20);
  pkts = push_unit (h, tu, TRUE, 100 * GST_MSECOND, &n);
  fail_unless_equals_int (n, 0);
  free_packets (pkts, n);

  g_ptr_array_unref (obus);
  g_byte_array_unref (tu);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* every size around the packet boundary: an OBU of each length from 1100
 * to 2500 bytes comes back whole */
GST_START_TEST (test_fragment_sizes)
{
  GstHarness *h = harness_new ();
  GByteArray *tu = g_byte_array_new ();
  GPtrArray *obus = g_ptr_array_new_with_free_func ((GDestroyNotify)
      g_byte_array_unref);
  guint8 aggs[64];

  for (gsize len = 1100; len <= 2500; len += 7) {
    GByteArray *want = expected_obu (6, -1, len, (guint8) len);
    GstBuffer **pkts;
    guint n;

    g_byte_array_set_size (tu, 0);
    g_ptr_array_set_size (obus, 0);
    put_obu (tu, 6, -1, len, (guint8) len);
    pkts = push_unit (h, tu, TRUE, len * GST_MSECOND, &n);
    for (guint i = 0; i < n; i++)
      fail_unless (gst_buffer_get_size (pkts[i]) <= MTU);
    depacketize (pkts, n, obus, aggs);
    fail_unless_equals_int (obus->len, 1);
    fail_unless_equals_int (((GByteArray *) g_ptr_array_index (obus,
                0))->len, want->len);
    fail_unless (memcmp (((GByteArray *) g_ptr_array_index (obus, 0))->data,
            want->data, want->len) == 0, "%" G_GSIZE_FORMAT " bytes", len);
    g_byte_array_unref (want);
    free_packets (pkts, n);
  }
  g_ptr_array_unref (obus);
  g_byte_array_unref (tu);
  gst_harness_teardown (h);
}

GST_END_TEST;

static Suite *
av1_suite (void)
{
  Suite *s = suite_create ("webrtc-av1");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_key_unit);
  tcase_add_test (tc, test_fragment_sizes);
  return s;
}

GST_CHECK_MAIN (av1);
