/* Unit tests for the client's side of the SPICE wire (tests/common
 * spice-client-wire.h), against the server's side in libgstspice: what one
 * writes, the other reads back; the client's writers write the bytes they
 * should, and its parsers refuse short and long bodies.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <gst/check/gstcheck.h>
#include <string.h>

#include <gst/spice/gstspice.h>
#include "spice-client-wire.h"

/* the client's writers, byte for byte */
GST_START_TEST (test_client_writers_bytes)
{
  static const guint8 link_header[] = { 0x52, 0x45, 0x44, 0x51, 2, 0, 0, 0,
    2, 0, 0, 0, 18, 0, 0, 0
  };
  static const guint8 mouse_position[] = { 100, 0, 0, 0, 200, 0, 0, 0, 1, 0,
    0
  };
  GByteArray *a = g_byte_array_new ();

  test_wire_write_link_header (a, 18);
  fail_unless (a->len == sizeof (link_header) &&
      memcmp (a->data, link_header, a->len) == 0);
  g_byte_array_set_size (a, 0);
  test_wire_write_mouse_position (a, 100, 200, 1, 0);
  fail_unless (a->len == sizeof (mouse_position) &&
      memcmp (a->data, mouse_position, a->len) == 0);
  fail_unless_equals_int (test_wire_encode_key_code (0x1e, FALSE), 0x1e);
  fail_unless_equals_int (test_wire_encode_key_code (0x1e, TRUE), 0x9e);
  fail_unless_equals_int (test_wire_encode_key_code (0x148, FALSE), 0x48e0);
  g_byte_array_unref (a);
}

GST_END_TEST;

/* round trips: what the server's writer writes, the client's parser reads
 * back, and the other way round */
GST_START_TEST (test_wire_roundtrip)
{
  GByteArray *a = g_byte_array_new ();
  GstVideoRectangle dest = { 3, 4, 5, 6 };
  GstSpiceLinkMess m = { 0, }, mo;
  GstSpiceLinkHeader lh;
  TestWireLinkReply lr;
  TestWireMainInit init;
  TestWireDrawCopy dc;
  TestWireStreamCreate sc;
  guint8 key[SPICE_TICKET_PUBKEY_BYTES], types[4], ids[4];
  const guint8 t2[] = { SPICE_CHANNEL_MAIN, SPICE_CHANNEL_INPUTS };
  const guint8 i2[] = { 0, 3 };
  guint32 common[2] = { 0x0d, 0x1 }, channel[1] = { 0x6f3d };
  guint32 u1, u2, u3, u4, u5;
  guint16 u16;
  guint8 u8;
  const guint8 *frame;
  gsize frame_size;
  guint i;

  /* link message: header, then the message with its caps */
  m.connection_id = 0x12345678;
  m.channel_type = SPICE_CHANNEL_DISPLAY;
  m.channel_id = 1;
  m.n_common = 2;
  m.n_channel = 1;
  m.common_caps[0] = 0x0d;
  m.common_caps[1] = 0x80000000;
  m.channel_caps[0] = 0x6f3d;
  test_wire_write_link_mess (a, &m);
  fail_unless_equals_int (a->len, sizeof (SpiceLinkHeader) +
      sizeof (SpiceLinkMess) + 3 * 4);
  fail_unless (gst_spice_wire_parse_link_header (a->data,
          sizeof (SpiceLinkHeader), sizeof (SpiceLinkMess), &lh, NULL));
  fail_unless_equals_int (lh.magic, SPICE_MAGIC);
  fail_unless_equals_int (lh.major, SPICE_VERSION_MAJOR);
  fail_unless_equals_int (lh.minor, SPICE_VERSION_MINOR);
  fail_unless_equals_int (lh.size, a->len - sizeof (SpiceLinkHeader));
  fail_unless (gst_spice_wire_parse_link_mess (a->data +
          sizeof (SpiceLinkHeader), lh.size, &mo));
  fail_unless (memcmp (&m, &mo, sizeof (m)) == 0);
  /* every shorter message is refused */
  for (i = 0; i < lh.size; i++)
    fail_if (gst_spice_wire_parse_link_mess (a->data +
            sizeof (SpiceLinkHeader), i, &mo), "link mess cut at %u", i);
  g_byte_array_set_size (a, 0);

  /* link reply, with and without a key */
  for (i = 0; i < sizeof (key); i++)
    key[i] = i;
  gst_spice_wire_write_link_reply (a, SPICE_LINK_ERR_OK, key, common, 2,
      channel, 1);
  fail_unless (gst_spice_wire_parse_link_header (a->data,
          sizeof (SpiceLinkHeader), sizeof (SpiceLinkReply), &lh, NULL));
  fail_unless_equals_int (lh.size, sizeof (SpiceLinkReply) + 3 * 4);
  fail_unless (test_wire_parse_link_reply (a->data +
          sizeof (SpiceLinkHeader), lh.size, &lr));
  fail_unless_equals_int (lr.error, SPICE_LINK_ERR_OK);
  fail_unless (memcmp (lr.pub_key, key, sizeof (key)) == 0);
  fail_unless_equals_int (lr.n_common, 2);
  fail_unless_equals_int (lr.n_channel, 1);
  fail_unless_equals_int (lr.common_caps[1], 1);
  fail_unless_equals_int (lr.channel_caps[0], 0x6f3d);
  for (i = 0; i < lh.size; i++)
    fail_if (test_wire_parse_link_reply (a->data +
            sizeof (SpiceLinkHeader), i, &lr), "link reply cut at %u", i);
  g_byte_array_set_size (a, 0);
  gst_spice_wire_write_link_reply (a, SPICE_LINK_ERR_PERMISSION_DENIED, NULL,
      NULL, 0, NULL, 0);
  fail_unless_equals_int (a->len, sizeof (SpiceLinkHeader) +
      sizeof (SpiceLinkReply));
  fail_unless (test_wire_parse_link_reply (a->data +
          sizeof (SpiceLinkHeader), a->len - sizeof (SpiceLinkHeader), &lr));
  fail_unless_equals_int (lr.error, SPICE_LINK_ERR_PERMISSION_DENIED);
  fail_unless_equals_int (lr.pub_key[0], 0);
  g_byte_array_set_size (a, 0);

  /* link header: magic, version and size bounds, with the error to send */
  test_wire_write_link_header (a, 17);
  fail_if (gst_spice_wire_parse_link_header (a->data, a->len, 18, &lh, &u1));
  fail_unless_equals_int (u1, SPICE_LINK_ERR_INVALID_DATA);
  fail_if (gst_spice_wire_parse_link_header (a->data, a->len - 1, 0, &lh, &u1));
  a->data[0] ^= 1;
  fail_if (gst_spice_wire_parse_link_header (a->data, a->len, 0, &lh, &u1));
  fail_unless_equals_int (u1, SPICE_LINK_ERR_INVALID_MAGIC);
  a->data[0] ^= 1;
  a->data[4] = 1;
  fail_if (gst_spice_wire_parse_link_header (a->data, a->len, 0, &lh, &u1));
  fail_unless_equals_int (u1, SPICE_LINK_ERR_VERSION_MISMATCH);
  g_byte_array_set_size (a, 0);
  test_wire_write_link_header (a, GST_SPICE_WIRE_MAX_LINK_SIZE + 1);
  fail_if (gst_spice_wire_parse_link_header (a->data, a->len, 0, &lh, NULL));
  g_byte_array_set_size (a, 0);

  /* main */
  gst_spice_wire_write_main_init (a, 42, 3, 2, 0, 0, 1234);
  fail_unless (test_wire_parse_main_init (a->data, a->len, &init));
  fail_unless (init.session_id == 42 && init.display_channels_hint == 1 &&
      init.supported_mouse_modes == 3 && init.current_mouse_mode == 2 &&
      init.multi_media_time == 1234);
  g_byte_array_append (a, (const guint8 *) "", 1);
  fail_if (test_wire_parse_main_init (a->data, a->len, &init));
  g_byte_array_set_size (a, 0);
  gst_spice_wire_write_channels_list (a, 2, t2, i2);
  fail_unless_equals_int (test_wire_parse_channels_list (a->data, a->len,
          types, ids, 4), 2);
  fail_unless (types[1] == SPICE_CHANNEL_INPUTS && ids[1] == 3);
  fail_unless_equals_int (test_wire_parse_channels_list (a->data, a->len,
          types, ids, 1), -1);
  fail_unless_equals_int (test_wire_parse_channels_list (a->data,
          a->len - 1, types, ids, 4), -1);
  g_byte_array_set_size (a, 0);

  /* display */
  gst_spice_wire_write_surface_create (a, 0, 640, 480,
      SPICE_SURFACE_FMT_32_xRGB, SPICE_SURFACE_FLAGS_PRIMARY);
  fail_unless (test_wire_parse_surface_create (a->data, a->len, &u1, &u2,
          &u3, &u4, &u5));
  fail_unless (u1 == 0 && u2 == 640 && u3 == 480 &&
      u4 == SPICE_SURFACE_FMT_32_xRGB && u5 == SPICE_SURFACE_FLAGS_PRIMARY);
  g_byte_array_set_size (a, 0);
  gst_spice_wire_write_draw_copy_head (a, 0, &dest, SPICE_IMAGE_TYPE_JPEG, 0);
  fail_unless_equals_int (a->len, GST_SPICE_WIRE_DRAW_COPY_HEAD_SIZE);
  g_byte_array_append (a, (const guint8 *) "abc", 3);
  fail_unless (test_wire_parse_draw_copy (a->data, a->len, &dc));
  fail_unless (memcmp (&dc.box, &dest, sizeof (dest)) == 0);
  fail_unless (dc.src_area.x == 0 && dc.src_area.y == 0 &&
      dc.src_area.w == dest.w && dc.src_area.h == dest.h);
  fail_unless (dc.rop == SPICE_ROPD_OP_PUT &&
      dc.image_type == SPICE_IMAGE_TYPE_JPEG &&
      dc.image_width == (guint) dest.w && dc.image_height == (guint) dest.h);
  fail_unless (dc.payload == a->data + GST_SPICE_WIRE_DRAW_COPY_HEAD_SIZE &&
      dc.payload_size == 3);
  for (i = 0; i < GST_SPICE_WIRE_DRAW_COPY_HEAD_SIZE; i++)
    fail_if (test_wire_parse_draw_copy (a->data, i, &dc),
        "draw copy cut at %u", i);
  g_byte_array_set_size (a, 0);
  gst_spice_wire_write_stream_create (a, 0, 7, SPICE_VIDEO_CODEC_TYPE_VP8,
      SPICE_STREAM_FLAGS_TOP_DOWN, 64, 32, &dest);
  fail_unless (test_wire_parse_stream_create (a->data, a->len, &sc));
  fail_unless (sc.id == 7 && sc.codec == SPICE_VIDEO_CODEC_TYPE_VP8 &&
      sc.flags == SPICE_STREAM_FLAGS_TOP_DOWN && sc.width == 64 &&
      sc.height == 32 && memcmp (&sc.dest, &dest, sizeof (dest)) == 0);
  g_byte_array_append (a, (const guint8 *) "", 1);
  fail_if (test_wire_parse_stream_create (a->data, a->len, &sc));
  for (i = 0; i + 1 < a->len; i++)
    fail_if (test_wire_parse_stream_create (a->data, i, &sc));
  g_byte_array_set_size (a, 0);
  gst_spice_wire_write_stream_create (a, 0, GST_SPICE_WIRE_MAX_STREAMS,
      SPICE_VIDEO_CODEC_TYPE_VP8, 0, 64, 32, &dest);
  fail_if (test_wire_parse_stream_create (a->data, a->len, &sc));
  g_byte_array_set_size (a, 0);
  gst_spice_wire_write_stream_data_head (a, 3, 99, 4);
  g_byte_array_append (a, (const guint8 *) "vp8!", 4);
  fail_unless (test_wire_parse_stream_data (a->data, a->len, &u1, &u2,
          &frame, &frame_size));
  fail_unless (u1 == 3 && u2 == 99 && frame_size == 4 &&
      memcmp (frame, "vp8!", 4) == 0);
  fail_if (test_wire_parse_stream_data (a->data, a->len - 1, &u1, &u2,
          &frame, &frame_size));
  g_byte_array_set_size (a, 0);

  /* inputs, client side */
  test_wire_write_mouse_position (a, 100, 200, 5, 1);
  fail_unless (gst_spice_wire_parse_mouse_position (a->data, a->len, &u1, &u2,
          &u16, &u8));
  fail_unless (u1 == 100 && u2 == 200 && u16 == 5 && u8 == 1);
  g_byte_array_set_size (a, 0);
  gst_spice_put_u32 (a, test_wire_encode_key_code (0x11d, TRUE));
  fail_unless (gst_spice_wire_parse_key (a->data, a->len, &u1));
  fail_unless_equals_int (u1, 0x9de0);
  g_byte_array_unref (a);
}

GST_END_TEST;

/* STREAM_CLIP as spicesink writes it (hide: RECTS with no rectangle; show:
 * NONE), read back; a clip with rectangles, cut or with a trailing byte */
GST_START_TEST (test_stream_clip)
{
  static const guint8 rects[] = { 4, 0, 0, 0, SPICE_CLIP_TYPE_RECTS, 1, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0
  };
  GByteArray *a = g_byte_array_new ();
  guint32 id;
  gint64 n;
  guint i;

  gst_spice_wire_write_stream_clip (a, 3, TRUE);
  fail_unless (test_wire_parse_stream_clip (a->data, a->len, &id, &n));
  fail_unless (id == 3 && n == 0);
  g_byte_array_set_size (a, 0);
  gst_spice_wire_write_stream_clip (a, 5, FALSE);
  fail_unless (test_wire_parse_stream_clip (a->data, a->len, &id, &n));
  fail_unless (id == 5 && n == -1);
  g_byte_array_append (a, (const guint8 *) "", 1);
  fail_if (test_wire_parse_stream_clip (a->data, a->len, &id, &n));
  fail_unless (test_wire_parse_stream_clip (rects, sizeof (rects), &id, &n));
  fail_unless (id == 4 && n == 1);
  for (i = 0; i < sizeof (rects); i++)
    fail_if (test_wire_parse_stream_clip (rects, i, &id, &n), "cut at %u", i);
  g_byte_array_unref (a);
}

GST_END_TEST;

/* DISPLAY_MONITORS_CONFIG as spicesink writes it, read back; cut, with a
 * byte more, no head are refused */
GST_START_TEST (test_monitors_config)
{
  GstSpiceHeads m = { 2, 4, {{0, 0, 0, 640, 480}, {1, 640, 0, 320, 240}
      }
  }, back;
  GByteArray *a = g_byte_array_new ();
  guint i;

  gst_spice_wire_write_monitors_config (a, 0, &m);
  fail_unless (test_wire_parse_monitors_config (a->data, a->len, &back));
  fail_unless (memcmp (&m, &back, sizeof (m)) == 0);
  for (i = 0; i < a->len; i++)
    fail_if (test_wire_parse_monitors_config (a->data, i, &back),
        "cut at %u", i);
  g_byte_array_append (a, (const guint8 *) "", 1);
  fail_if (test_wire_parse_monitors_config (a->data, a->len, &back));
  g_byte_array_set_size (a, 0);
  m.count = 0;
  gst_spice_wire_write_monitors_config (a, 0, &m);
  fail_if (test_wire_parse_monitors_config (a->data, a->len, &back));
  g_byte_array_unref (a);
}

GST_END_TEST;

/* SURFACE_CREATE is exactly 20 bytes */
GST_START_TEST (test_surface_create_strict)
{
  static const guint8 body[21] = { 1 };
  guint32 id, w, h, format, flags;
  guint i;

  fail_unless (test_wire_parse_surface_create (body, 20, &id, &w, &h, &format,
          &flags));
  fail_unless_equals_int (id, 1);
  fail_if (test_wire_parse_surface_create (NULL, 20, &id, &w, &h, &format,
          &flags));
  fail_if (test_wire_parse_surface_create (body, 21, &id, &w, &h, &format,
          &flags));
  for (i = 0; i < 20; i++)
    fail_if (test_wire_parse_surface_create (body, i, &id, &w, &h, &format,
            &flags), "cut at %u", i);
}

GST_END_TEST;

static Suite *
client_wire_suite (void)
{
  Suite *s = suite_create ("client-wire");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_client_writers_bytes);
  tcase_add_test (tc, test_wire_roundtrip);
  tcase_add_test (tc, test_stream_clip);
  tcase_add_test (tc, test_surface_create_strict);
  tcase_add_test (tc, test_monitors_config);
  return s;
}

GST_CHECK_MAIN (client_wire);
