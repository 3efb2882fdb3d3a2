/* tests/streamenc: what a spice-rate target means for each known encoder
 * (plugins/streamenc/streamencrate.h), as pure functions
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <gst/check/gstcheck.h>
#include "streamencrate.h"

GST_START_TEST (test_kinds)
{
  fail_unless_equals_int (streamenc_kind_from_factory ("vp8enc"),
      STREAMENC_KIND_VPX);
  fail_unless_equals_int (streamenc_kind_from_factory ("vp9enc"),
      STREAMENC_KIND_VPX);
  fail_unless_equals_int (streamenc_kind_from_factory ("x264enc"),
      STREAMENC_KIND_X264);
  fail_unless_equals_int (streamenc_kind_from_factory ("openh264enc"),
      STREAMENC_KIND_OPENH264);
  fail_unless_equals_int (streamenc_kind_from_factory ("jpegenc"),
      STREAMENC_KIND_JPEG);
  fail_unless_equals_int (streamenc_kind_from_factory ("av1enc"),
      STREAMENC_KIND_AOM);
  fail_unless_equals_int (streamenc_kind_from_factory ("avenc_mjpeg"),
      STREAMENC_KIND_UNKNOWN);
  fail_unless_equals_int (streamenc_kind_from_factory (NULL),
      STREAMENC_KIND_UNKNOWN);
  fail_unless_equals_string (streamenc_kind_property (STREAMENC_KIND_VPX),
      "target-bitrate");
  fail_unless_equals_string (streamenc_kind_property (STREAMENC_KIND_X264),
      "bitrate");
  fail_unless_equals_string (streamenc_kind_property
      (STREAMENC_KIND_OPENH264), "bitrate");
  fail_unless_equals_string (streamenc_kind_property (STREAMENC_KIND_JPEG),
      "quality");
  fail_unless_equals_string (streamenc_kind_property (STREAMENC_KIND_AOM),
      "target-bitrate");
  fail_unless (streamenc_kind_property (STREAMENC_KIND_UNKNOWN) == NULL);
  /* units */
  fail_unless_equals_uint64 (streamenc_value_to_bps (STREAMENC_KIND_VPX,
          2000000), 2000000);
  fail_unless_equals_uint64 (streamenc_value_to_bps (STREAMENC_KIND_X264,
          2000), 2000000);
  fail_unless_equals_uint64 (streamenc_value_to_bps
      (STREAMENC_KIND_OPENH264, 2000000), 2000000);
  fail_unless_equals_uint64 (streamenc_value_to_bps (STREAMENC_KIND_JPEG,
          70), 0);
  fail_unless_equals_uint64 (streamenc_value_to_bps (STREAMENC_KIND_AOM,
          1500), 1500000);
}

GST_END_TEST;

GST_START_TEST (test_bitrate_values)
{
  /* vp8enc/vp9enc: bit/s in whole kbit/s, never above the description */
  fail_unless_equals_int (streamenc_bitrate_value (STREAMENC_KIND_VPX,
          800000, 2000000), 800000);
  fail_unless_equals_int (streamenc_bitrate_value (STREAMENC_KIND_VPX,
          1234567, 2000000), 1234000);
  fail_unless_equals_int (streamenc_bitrate_value (STREAMENC_KIND_VPX,
          5000000, 2000000), 2000000);
  fail_unless_equals_int (streamenc_bitrate_value (STREAMENC_KIND_VPX,
          0, 2000000), 2000000);
  /* never 0 (= "auto" to vp8enc) */
  fail_unless_equals_int (streamenc_bitrate_value (STREAMENC_KIND_VPX,
          500, 2000000), 1000);
  /* a description that left the rate to the encoder (0): no ceiling */
  fail_unless_equals_int (streamenc_bitrate_value (STREAMENC_KIND_VPX,
          5000000, 0), 5000000);
  fail_unless_equals_int (streamenc_bitrate_value (STREAMENC_KIND_VPX,
          0, 0), 0);
  /* x264enc: kbit/s */
  fail_unless_equals_int (streamenc_bitrate_value (STREAMENC_KIND_X264,
          800000, 2000), 800);
  fail_unless_equals_int (streamenc_bitrate_value (STREAMENC_KIND_X264,
          5000000, 2000), 2000);
  fail_unless_equals_int (streamenc_bitrate_value (STREAMENC_KIND_X264,
          999, 2000), 1);
  fail_unless_equals_int (streamenc_bitrate_value (STREAMENC_KIND_X264,
          0, 2000), 2000);
  /* av1enc: kbit/s, never 0 */
  fail_unless_equals_int (streamenc_bitrate_value (STREAMENC_KIND_AOM,
          812345, 2000), 812);
  fail_unless_equals_int (streamenc_bitrate_value (STREAMENC_KIND_AOM,
          5000000, 2000), 2000);
  fail_unless_equals_int (streamenc_bitrate_value (STREAMENC_KIND_AOM,
          10, 2000), 1);
  /* openh264enc: bit/s */
  fail_unless_equals_int (streamenc_bitrate_value (STREAMENC_KIND_OPENH264,
          812345, 2000000), 812345);
  fail_unless_equals_int (streamenc_bitrate_value (STREAMENC_KIND_OPENH264,
          3000000, 2000000), 2000000);
  /* others: what the description set */
  fail_unless_equals_int (streamenc_bitrate_value (STREAMENC_KIND_UNKNOWN,
          800000, 7), 7);
}

GST_END_TEST;

GST_START_TEST (test_jpeg_quality)
{
  guint q, q0;

  /* q = (q0 + 25) * target / measured - 25: half the rate at q0 = 70 is
   * 95 / 2 - 25 = 22.5 */
  fail_unless_equals_int (streamenc_jpeg_quality (70, 1000000, 2000000), 23);
  fail_unless_equals_int (streamenc_jpeg_quality (85, 3000000, 4000000),
      58);                      /* 110 * 0.75 - 25 = 57.5 */
  /* the same rate: q0 */
  fail_unless_equals_int (streamenc_jpeg_quality (70, 2000000, 2000000), 70);
  /* never above the description (the ceiling) */
  fail_unless_equals_int (streamenc_jpeg_quality (70, 9000000, 2000000), 70);
  /* never below 10 */
  fail_unless_equals_int (streamenc_jpeg_quality (70, 100000, 2000000), 10);
  fail_unless_equals_int (streamenc_jpeg_quality (70, 1, 2000000), 10);
  /* unknown target or nothing measured yet: q0 */
  fail_unless_equals_int (streamenc_jpeg_quality (70, 0, 2000000), 70);
  fail_unless_equals_int (streamenc_jpeg_quality (70, 1000000, 0), 70);
  /* a description below the floor keeps its quality */
  fail_unless_equals_int (streamenc_jpeg_quality (5, 100000, 2000000), 5);
  fail_unless_equals_int (streamenc_jpeg_quality (150, 2000000, 2000000),
      100);
  /* monotonic in the target, within [10, q0], for every q0 */
  for (q0 = 10; q0 <= 100; q0 += 5) {
    guint prev = 0;
    guint64 t;

    for (t = 50000; t <= 4000000; t += 50000) {
      q = streamenc_jpeg_quality (q0, t, 2000000);
      fail_unless (q >= 10 && q <= q0, "q0 %u target %" G_GUINT64_FORMAT
          " -> %u", q0, t, q);
      fail_unless (q >= prev);
      prev = q;
    }
  }
  /* the model solved both ways: the quality picked for a target is
   * expected to give about that target */
  q = streamenc_jpeg_quality (80, 1200000, 2000000);
  fail_unless (ABS ((gint64) streamenc_jpeg_expected_bps (80, q, 2000000) -
          1200000) <= 2000000 / (80 + 25));
  fail_unless_equals_uint64 (streamenc_jpeg_expected_bps (70, 70, 2000000),
      2000000);
  fail_unless_equals_uint64 (streamenc_jpeg_expected_bps (70, 10, 950000),
      350000);
}

GST_END_TEST;

static Suite *
streamenc_rate_suite (void)
{
  Suite *s = suite_create ("streamenc-rate");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_kinds);
  tcase_add_test (tc, test_bitrate_values);
  tcase_add_test (tc, test_jpeg_quality);
  return s;
}

GST_CHECK_MAIN (streamenc_rate);
