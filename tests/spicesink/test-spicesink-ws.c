/* tests/spicesink: SPICE over WebSocket as pure functions
 * (plugins/spicesink/sinkws.h): the upgrade request and its bounds, the
 * answer (RFC 6455's example key), client frames (masking, fragments,
 * control frames, protocol errors), permessage-deflate both ways (zlib on
 * the other side)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <string.h>
#include <zlib.h>
#include <gst/check/gstcheck.h>
#include "sinkws.h"
#include "ws-client.h"

#define REQ(extra) \
  "GET /spice HTTP/1.1\r\nHost: gw:5910\r\nUpgrade: websocket\r\n" \
  "Connection: keep-alive, Upgrade\r\n" \
  "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" \
  "Sec-WebSocket-Version: 13\r\n" extra "\r\n"

static SinkWsRequestResult
parse (const gchar * text, SinkWsRequest * req, guint * status)
{
  gsize consumed = 0;
  const gchar *why = NULL;
  SinkWsRequestResult r = sink_ws_parse_request ((const guint8 *) text,
      strlen (text), &consumed, req, status, &why);

  if (r == SINK_WS_REQUEST_OK)
    fail_unless_equals_uint64 (consumed, strlen (text));
  if (r == SINK_WS_REQUEST_BAD || r == SINK_WS_REQUEST_TOO_LARGE)
    fail_unless (why != NULL);
  return r;
}

GST_START_TEST (test_request)
{
  SinkWsRequest req;
  guint status = 0;
  gchar *answer, *big;

  fail_unless (sink_ws_is_request ((const guint8 *) "GET /", 5));
  fail_if (sink_ws_is_request ((const guint8 *) "REDQ", 4));

  fail_unless_equals_int (parse (REQ ("Sec-WebSocket-Protocol: binary\r\n"
              "Origin: https://console.example.org\r\n"), &req, &status),
      SINK_WS_REQUEST_OK);
  fail_unless_equals_string (req.path, "/spice");
  fail_unless_equals_string (req.origin, "https://console.example.org");
  fail_unless (req.protocol_binary);
  fail_if (req.deflate);
  /* RFC 6455 1.3's example */
  answer = sink_ws_accept_response (&req, TRUE);
  fail_unless (g_str_has_prefix (answer, "HTTP/1.1 101 "));
  fail_unless (strstr (answer,
          "\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"));
  fail_unless (strstr (answer, "\r\nSec-WebSocket-Protocol: binary\r\n"));
  fail_if (strstr (answer, "permessage-deflate"));
  fail_unless (g_str_has_suffix (answer, "\r\n\r\n"));
  g_free (answer);
  fail_unless (sink_ws_origin_allowed (NULL, NULL));
  fail_unless (sink_ws_origin_allowed ("https://a.example, "
          "https://console.example.org", req.origin));
  fail_if (sink_ws_origin_allowed ("https://a.example", req.origin));
  fail_if (sink_ws_origin_allowed ("https://a.example", NULL));
  sink_ws_request_clear (&req);

  /* Chromium's offer: accepted with our parameters only */
  fail_unless_equals_int (parse (REQ ("Sec-WebSocket-Extensions: "
              "permessage-deflate; client_max_window_bits\r\n"), &req,
          &status), SINK_WS_REQUEST_OK);
  fail_unless (req.deflate);
  fail_unless_equals_int (req.server_max_window_bits, 15);
  answer = sink_ws_accept_response (&req, TRUE);
  fail_unless (strstr (answer,
          "\r\nSec-WebSocket-Extensions: permessage-deflate\r\n"));
  g_free (answer);
  sink_ws_request_clear (&req);
  fail_unless_equals_int (parse (REQ ("Sec-WebSocket-Extensions: x-foo, "
              "permessage-deflate; server_max_window_bits=8, "
              "permessage-deflate; server_no_context_takeover; "
              "server_max_window_bits=\"10\"\r\n"), &req, &status),
      SINK_WS_REQUEST_OK);
  fail_unless (req.deflate && req.server_no_context_takeover);
  fail_unless_equals_int (req.server_max_window_bits, 10);
  answer = sink_ws_accept_response (&req, TRUE);
  fail_unless (strstr (answer, "permessage-deflate; "
          "server_no_context_takeover; server_max_window_bits=10\r\n"));
  g_free (answer);
  sink_ws_request_clear (&req);

  /* incomplete below the bound, refused above it */
  fail_unless_equals_int (parse ("GET / HTTP/1.1\r\nHost: x\r\n", &req,
          &status), SINK_WS_REQUEST_INCOMPLETE);
  big = g_strnfill (SINK_WS_REQUEST_MAX, 'a');
  memcpy (big, "GET /", 5);
  fail_unless_equals_int (parse (big, &req, &status),
      SINK_WS_REQUEST_TOO_LARGE);
  g_free (big);
  /* malformed ones, with their status */
  fail_unless_equals_int (parse ("GET / HTTP/1.0\r\n\r\n", &req, &status),
      SINK_WS_REQUEST_BAD);
  fail_unless_equals_int (status, 400);
  fail_unless_equals_int (parse ("GET / HTTP/1.1\r\nHost: x\r\n\r\n", &req,
          &status), SINK_WS_REQUEST_BAD);
  fail_unless_equals_int (parse ("GET / HTTP/1.1\r\nUpgrade: websocket\r\n"
          "Connection: Upgrade\r\nSec-WebSocket-Key: short\r\n"
          "Sec-WebSocket-Version: 13\r\n\r\n", &req, &status),
      SINK_WS_REQUEST_BAD);
  fail_unless_equals_int (parse ("GET / HTTP/1.1\r\nUpgrade: websocket\r\n"
          "Connection: Upgrade\r\n"
          "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
          "Sec-WebSocket-Version: 8\r\n\r\n", &req, &status),
      SINK_WS_REQUEST_BAD);
  fail_unless_equals_int (status, 426);
  fail_unless_equals_int (parse ("GET / HTTP/1.1\r\nbroken line\r\n\r\n",
          &req, &status), SINK_WS_REQUEST_BAD);
  answer = sink_ws_refusal (403, "origin not allowed");
  fail_unless (g_str_has_prefix (answer, "HTTP/1.1 403 Forbidden\r\n"));
  fail_unless (g_str_has_suffix (answer, "\r\n\r\norigin not allowed\n"));
  g_free (answer);
}

GST_END_TEST;

/* a client frame: masked with @key (ws-client.h) */
static void
client_frame (GByteArray * a, guint8 b0, const guint8 * data, gsize len,
    guint32 key)
{
  test_ws_put_frame (a, b0, TRUE, key, FALSE, data, len);
}

static SinkWsDecodeResult
feed_bytewise (SinkWsDecoder * dec, GByteArray * raw, GByteArray * data,
    SinkWsDecodeOut * out, gsize step)
{
  SinkWsDecodeResult r = SINK_WS_DECODE_OK;

  for (gsize i = 0; i < raw->len && r == SINK_WS_DECODE_OK; i += step)
    r = sink_ws_decoder_feed (dec, raw->data + i, MIN (step, raw->len - i),
        data, out);
  return r;
}

GST_START_TEST (test_frames)
{
  guint8 payload[70000];
  GByteArray *raw = g_byte_array_new (), *data = g_byte_array_new ();
  SinkWsDecodeOut out = { g_byte_array_new () };
  SinkWsDecoder *dec;
  guint8 h[SINK_WS_FRAME_HEAD_MAX];

  for (guint i = 0; i < sizeof (payload); i++)
    payload[i] = (guint8) (i * 7 + (i >> 8));
  /* the three length forms, a fragmented message with a ping inside,
   * fed whole, in 1-byte and in 5-byte pieces */
  client_frame (raw, 0x82, payload, 5, 0x11223344);
  client_frame (raw, 0x82, payload + 5, 300, 0xa5a5a5a5);
  client_frame (raw, 0x02, payload + 305, 65695, 0x01020304);
  client_frame (raw, 0x89, (const guint8 *) "hi", 2, 0xdeadbeef);
  client_frame (raw, 0x80, payload + 66000, 4000, 0x0badf00d);
  for (guint k = 0; k < 3; k++) {
    gsize step = k == 0 ? 1 : k == 1 ? 5 : raw->len;

    dec = sink_ws_decoder_new (FALSE, SINK_WS_MESSAGE_MAX);
    g_byte_array_set_size (data, 0);
    g_byte_array_set_size (out.replies, 0);
    fail_unless_equals_int (feed_bytewise (dec, raw, data, &out, step),
        SINK_WS_DECODE_OK);
    fail_unless_equals_uint64 (data->len, sizeof (payload));
    fail_unless (memcmp (data->data, payload, sizeof (payload)) == 0);
    fail_unless_equals_uint64 (sink_ws_decoder_frames (dec), 5);
    fail_unless_equals_uint64 (sink_ws_decoder_messages (dec), 3);
    /* the pong, unmasked, with the ping's payload */
    fail_unless_equals_int (out.replies->len, 4);
    fail_unless (memcmp (out.replies->data, "\x8a\x02hi", 4) == 0);
    sink_ws_decoder_free (dec);
  }

  /* close: echoed with its code, nothing read after it */
  g_byte_array_set_size (raw, 0);
  g_byte_array_set_size (data, 0);
  g_byte_array_set_size (out.replies, 0);
  client_frame (raw, 0x88, (const guint8 *) "\x03\xe8", 2, 7);
  client_frame (raw, 0x82, payload, 10, 7);
  dec = sink_ws_decoder_new (FALSE, SINK_WS_MESSAGE_MAX);
  fail_unless_equals_int (sink_ws_decoder_feed (dec, raw->data, raw->len,
          data, &out), SINK_WS_DECODE_CLOSED);
  fail_unless_equals_int (out.close_code, 1000);
  fail_unless_equals_int (data->len, 0);
  fail_unless (out.replies->len == 4 &&
      memcmp (out.replies->data, "\x88\x02\x03\xe8", 4) == 0);
  sink_ws_decoder_free (dec);

  /* server frame heads */
  fail_unless_equals_int (sink_ws_frame_head (h, SINK_WS_OP_BINARY, FALSE,
          125), 2);
  fail_unless (h[0] == 0x82 && h[1] == 125);
  fail_unless_equals_int (sink_ws_frame_head (h, SINK_WS_OP_BINARY, TRUE,
          126), 4);
  fail_unless (h[0] == 0xc2 && h[1] == 126 && h[2] == 0 && h[3] == 126);
  fail_unless_equals_int (sink_ws_frame_head (h, SINK_WS_OP_BINARY, FALSE,
          0x10000), 10);
  fail_unless (h[1] == 127 && h[7] == 1 && h[8] == 0 && h[9] == 0);

  g_byte_array_unref (raw);
  g_byte_array_unref (data);
  g_byte_array_unref (out.replies);
}

GST_END_TEST;

/* each protocol error: an ERROR with its token and close code */
static void
expect_error (const guint8 * bytes, gsize len, gboolean deflate,
    const gchar * reason, guint16 code)
{
  SinkWsDecodeOut out = { g_byte_array_new () };
  GByteArray *data = g_byte_array_new ();
  SinkWsDecoder *dec = sink_ws_decoder_new (deflate, 1000);
  guint before;

  fail_unless_equals_int (sink_ws_decoder_feed (dec, bytes, len, data, &out),
      SINK_WS_DECODE_ERROR);
  fail_unless_equals_string (out.reason, reason);
  fail_unless_equals_int (out.close_code, code);
  fail_unless (out.detail != NULL);
  /* the close reply carries the code */
  fail_unless (out.replies->len == 4 && out.replies->data[0] == 0x88 &&
      out.replies->data[2] == code >> 8 && out.replies->data[3] ==
      (code & 0xff));
  /* nothing more is taken (what valid frames carried before stays) */
  before = data->len;
  fail_unless_equals_int (sink_ws_decoder_feed (dec, bytes, len, data, &out),
      SINK_WS_DECODE_OK);
  fail_unless_equals_int (data->len, before);
  g_free (out.detail);
  g_byte_array_unref (out.replies);
  g_byte_array_unref (data);
  sink_ws_decoder_free (dec);
}

GST_START_TEST (test_frame_errors)
{
  GByteArray *a = g_byte_array_new ();
  guint8 zeros[1001] = { 0 };

  expect_error ((const guint8 *) "\x82\x01x", 3, FALSE, "ws-frame", 1002);
  client_frame (a, 0x81, (const guint8 *) "text", 4, 1);
  expect_error (a->data, a->len, FALSE, "ws-text", 1003);
  g_byte_array_set_size (a, 0);
  client_frame (a, 0x80, (const guint8 *) "cont", 4, 1);
  expect_error (a->data, a->len, FALSE, "ws-frame", 1002);
  g_byte_array_set_size (a, 0);
  client_frame (a, 0x02, (const guint8 *) "a", 1, 1);
  client_frame (a, 0x82, (const guint8 *) "b", 1, 1);
  expect_error (a->data, a->len, FALSE, "ws-frame", 1002);
  g_byte_array_set_size (a, 0);
  client_frame (a, 0xc2, (const guint8 *) "z", 1, 1);   /* RSV1, no deflate */
  expect_error (a->data, a->len, FALSE, "ws-frame", 1002);
  g_byte_array_set_size (a, 0);
  client_frame (a, 0x09, (const guint8 *) "p", 1, 1);   /* ping without FIN */
  expect_error (a->data, a->len, FALSE, "ws-frame", 1002);
  g_byte_array_set_size (a, 0);
  client_frame (a, 0x89, zeros, 126, 1);
  expect_error (a->data, a->len, FALSE, "ws-frame", 1002);
  g_byte_array_set_size (a, 0);
  client_frame (a, 0x83, zeros, 1, 1);
  expect_error (a->data, a->len, FALSE, "ws-frame", 1002);
  /* the message bound (1000 here), in one frame and over fragments */
  g_byte_array_set_size (a, 0);
  client_frame (a, 0x82, zeros, 1001, 1);
  expect_error (a->data, a->len, FALSE, "ws-message-size", 1009);
  g_byte_array_set_size (a, 0);
  client_frame (a, 0x02, zeros, 600, 1);
  client_frame (a, 0x80, zeros, 401, 1);
  expect_error (a->data, a->len, FALSE, "ws-message-size", 1009);
  /* a 63-bit length is checked before any payload is read */
  expect_error ((const guint8 *)
      "\x82\xff\x7f\xff\xff\xff\xff\xff\xff\xff\0\0\0\0", 14, FALSE,
      "ws-message-size", 1009);
  expect_error ((const guint8 *)
      "\x82\xff\xff\xff\xff\xff\xff\xff\xff\xff\0\0\0\0", 14, FALSE,
      "ws-frame", 1002);
  g_byte_array_unref (a);
}

GST_END_TEST;

/* raw deflate of @len bytes the way a browser does it (sync flush, tail
 * removed) */
static GByteArray *
browser_deflate (const guint8 * data, gsize len)
{
  z_stream z = { 0 };
  GByteArray *out = g_byte_array_new ();

  g_byte_array_set_size (out, compressBound (len) + 64);
  fail_unless (deflateInit2 (&z, 6, Z_DEFLATED, -15, 8,
          Z_DEFAULT_STRATEGY) == Z_OK);
  z.next_in = (Bytef *) data;
  z.avail_in = len;
  z.next_out = out->data;
  z.avail_out = out->len;
  fail_unless (deflate (&z, Z_SYNC_FLUSH) == Z_OK);
  g_byte_array_set_size (out, out->len - z.avail_out - 4);
  deflateEnd (&z);
  return out;
}

GST_START_TEST (test_deflate)
{
  guint8 *msg = g_malloc (200000);
  GByteArray *raw = g_byte_array_new (), *data = g_byte_array_new ();
  GByteArray *z, *wire;
  SinkWsDecodeOut out = { g_byte_array_new () };
  SinkWsDecoder *dec;
  SinkWsDeflater *def;
  const guint8 *pieces[2];
  gsize lens[2];
  z_stream inf = { 0 };
  guint8 *back = g_malloc (400000);

  for (guint i = 0; i < 200000; i++)
    msg[i] = (guint8) ((i / 64) & 0xff);
  /* the client's compressed messages, split in fragments, inflated */
  z = browser_deflate (msg, 3000);
  client_frame (raw, 0x42, z->data, z->len / 2, 9);
  client_frame (raw, 0x80, z->data + z->len / 2, z->len - z->len / 2, 9);
  g_byte_array_unref (z);
  client_frame (raw, 0x82, msg, 10, 9); /* an uncompressed one between */
  z = browser_deflate (msg + 3000, 1000);
  client_frame (raw, 0xc2, z->data, z->len, 9);
  g_byte_array_unref (z);
  dec = sink_ws_decoder_new (TRUE, SINK_WS_MESSAGE_MAX);
  fail_unless_equals_int (feed_bytewise (dec, raw, data, &out, 7),
      SINK_WS_DECODE_OK);
  fail_unless_equals_int (data->len, 4010);
  fail_unless (memcmp (data->data, msg, 3000) == 0);
  fail_unless (memcmp (data->data + 3000, msg, 10) == 0);
  fail_unless (memcmp (data->data + 3010, msg + 3000, 1000) == 0);
  sink_ws_decoder_free (dec);

  /* a bomb: 200000 bytes of one value inflate beyond a 100000 bound */
  memset (msg, 'A', 200000);
  g_byte_array_set_size (raw, 0);
  z = browser_deflate (msg, 200000);
  fail_unless (z->len < 1000);
  client_frame (raw, 0xc2, z->data, z->len, 3);
  g_byte_array_unref (z);
  dec = sink_ws_decoder_new (TRUE, 100000);
  g_byte_array_set_size (data, 0);
  g_byte_array_set_size (out.replies, 0);
  fail_unless_equals_int (sink_ws_decoder_feed (dec, raw->data, raw->len,
          data, &out), SINK_WS_DECODE_ERROR);
  fail_unless_equals_string (out.reason, "ws-inflate-limit");
  fail_unless_equals_int (data->len, 0);
  g_free (out.detail);
  sink_ws_decoder_free (dec);

  /* ours: two messages with context takeover, inflated by zlib as a
   * browser inflates them */
  for (guint i = 0; i < 200000; i++)
    msg[i] = (guint8) (i % 251);
  def = sink_ws_deflater_new (15, FALSE);
  wire = g_byte_array_new ();
  fail_unless (inflateInit2 (&inf, -15) == Z_OK);
  for (guint round = 0; round < 2; round++) {
    pieces[0] = msg;
    lens[0] = 100;
    pieces[1] = msg + 100;
    lens[1] = 199900;
    g_byte_array_set_size (wire, 0);
    sink_ws_deflater_message (def, pieces, lens, 2, wire);
    fail_unless (wire->len < 200000 / 10);
    g_byte_array_append (wire, (const guint8 *) "\x00\x00\xff\xff", 4);
    inf.next_in = wire->data;
    inf.avail_in = wire->len;
    inf.next_out = back;
    inf.avail_out = 400000;
    fail_unless (inflate (&inf, Z_SYNC_FLUSH) == Z_OK);
    fail_unless_equals_uint64 (400000 - inf.avail_out, 200000);
    fail_unless (memcmp (back, msg, 200000) == 0);
  }
  inflateEnd (&inf);
  sink_ws_deflater_free (def);
  g_byte_array_unref (wire);
  g_byte_array_unref (raw);
  g_byte_array_unref (data);
  g_byte_array_unref (out.replies);
  g_free (msg);
  g_free (back);
}

GST_END_TEST;

/* the tests' client (ws-client.h) against the sink's side: the sink's
 * 101 answer and its frames (deflated with context takeover, control
 * frames between) read back exactly, in pieces of every size; the
 * client's frames in each form decoded by the sink */
GST_START_TEST (test_client_helpers)
{
  SinkWsRequest req;
  guint status = 0;
  GByteArray *wire = g_byte_array_new (), *back = g_byte_array_new ();
  GByteArray *raw = g_byte_array_new (), *data = g_byte_array_new ();
  SinkWsDecodeOut out = { g_byte_array_new () };
  SinkWsDeflater *def = sink_ws_deflater_new (15, FALSE);
  SinkWsDecoder *dec;
  guint8 *msg = g_malloc (100000), h[SINK_WS_FRAME_HEAD_MAX];
  gchar *answer;
  gsize hl;

  for (guint i = 0; i < 100000; i++)
    msg[i] = (guint8) ((i * 13) ^ (i >> 9));
  fail_unless_equals_int (parse (test_ws_upgrade_request (TRUE), &req,
          &status), SINK_WS_REQUEST_OK);
  fail_unless (req.deflate);
  answer = sink_ws_accept_response (&req, TRUE);
  g_byte_array_append (wire, (const guint8 *) answer, strlen (answer));
  g_free (answer);
  sink_ws_request_clear (&req);
  for (guint m = 0; m < 3; m++) {
    const guint8 *piece = msg + m * 30000;
    gsize len = 30000;
    GByteArray *z = g_byte_array_new ();

    sink_ws_deflater_message (def, &piece, &len, 1, z);
    hl = sink_ws_frame_head (h, SINK_WS_OP_BINARY, TRUE, z->len);
    g_byte_array_append (wire, h, hl);
    g_byte_array_append (wire, z->data, z->len);
    g_byte_array_unref (z);
    /* a pong between messages carries nothing for SPICE */
    hl = sink_ws_frame_head (h, SINK_WS_OP_PONG, FALSE, 2);
    g_byte_array_append (wire, h, hl);
    g_byte_array_append (wire, (const guint8 *) "hi", 2);
  }
  /* an uncompressed one */
  hl = sink_ws_frame_head (h, SINK_WS_OP_BINARY, FALSE, 10000);
  g_byte_array_append (wire, h, hl);
  g_byte_array_append (wire, msg + 90000, 10000);
  for (gsize step = 1; step <= wire->len; step = step * 7 + 3) {
    TestWsReader *r = test_ws_reader_new ();

    g_byte_array_set_size (back, 0);
    for (gsize i = 0; i < wire->len; i += step)
      fail_unless_equals_int (test_ws_reader_feed (r, wire->data + i,
              MIN (step, wire->len - i), back), TEST_WS_READ_OK);
    fail_unless (test_ws_reader_upgraded (r) && test_ws_reader_deflate (r));
    fail_unless_equals_uint64 (back->len, 100000);
    fail_unless (memcmp (back->data, msg, 100000) == 0);
    test_ws_reader_free (r);
  }
  /* a close ends the reading; a refusal is no upgrade */
  {
    TestWsReader *r = test_ws_reader_new ();
    gchar *no = sink_ws_refusal (403, "foreign");
    const gchar *closed = "HTTP/1.1 101 Switching Protocols\r\n\r\n"
        "\x88\x02\x03\xe8";

    fail_unless_equals_int (test_ws_reader_feed (r, (const guint8 *) no,
            strlen (no), back), TEST_WS_READ_REFUSED);
    fail_unless (!test_ws_reader_upgraded (r));
    g_free (no);
    test_ws_reader_reset (r);
    fail_unless_equals_int (test_ws_reader_feed (r, (const guint8 *) closed,
            strlen (closed), back), TEST_WS_READ_CLOSED);
    test_ws_reader_free (r);
  }

  /* our close frame: the code, the reason cut to 123 bytes where UTF-8
   * stays valid (60 two-byte characters: 122 bytes, not 123) */
  {
    GString *why = g_string_new ("x");
    guint8 f[SINK_WS_CLOSE_FRAME_MAX];
    gsize n;
    const gchar *got;

    for (guint i = 0; i < 80; i++)
      g_string_append (why, "\xc3\xa9");      /* é */
    n = sink_ws_close_frame (f, 1001, why->str);
    fail_unless_equals_uint64 (n, 4 + 123);
    n = sink_ws_close_frame (f, 1001, why->str + 1);
    fail_unless_equals_uint64 (n, 4 + 122);
    for (guint i = 0; i < 2; i++) {
      TestWsReader *r = test_ws_reader_new ();
      const gchar *ok = "HTTP/1.1 101 Switching Protocols\r\n\r\n";

      n = sink_ws_close_frame (f, 1001, i ? why->str + 1 : "server stopped");
      fail_unless_equals_int (test_ws_reader_feed (r, (const guint8 *) ok,
              strlen (ok), back), TEST_WS_READ_OK);
      fail_unless_equals_int (test_ws_reader_feed (r, f, n, back),
          TEST_WS_READ_CLOSED);
      fail_unless_equals_int (test_ws_reader_close_code (r), 1001);
      got = test_ws_reader_close_reason (r);
      fail_unless (g_utf8_validate (got, -1, NULL));
      if (i)
        fail_unless (strncmp (got, why->str + 1, 122) == 0 &&
            strlen (got) == 122);
      else
        fail_unless_equals_string (got, "server stopped");
      test_ws_reader_free (r);
    }
    g_string_free (why, TRUE);
  }

  /* the client's frames: the shortest length forms, the 64-bit form
   * for a short frame, unmasked (refused) */
  test_ws_put_frame (raw, TEST_WS_FIN | TEST_WS_OP_BINARY, TRUE, 1, FALSE,
      msg, 100);
  test_ws_put_frame (raw, TEST_WS_OP_BINARY, TRUE, 2, TRUE, msg + 100, 20);
  test_ws_put_frame (raw, TEST_WS_FIN | TEST_WS_OP_CONTINUATION, TRUE, 3,
      FALSE, msg + 120, 70000);
  dec = sink_ws_decoder_new (FALSE, SINK_WS_MESSAGE_MAX);
  fail_unless_equals_int (feed_bytewise (dec, raw, data, &out, 9),
      SINK_WS_DECODE_OK);
  fail_unless_equals_uint64 (data->len, 70120);
  fail_unless (memcmp (data->data, msg, 70120) == 0);
  sink_ws_decoder_free (dec);
  g_byte_array_set_size (raw, 0);
  test_ws_put_frame (raw, TEST_WS_FIN | TEST_WS_OP_BINARY, FALSE, 0, FALSE,
      msg, 10);
  expect_error (raw->data, raw->len, FALSE, "ws-frame", 1002);

  sink_ws_deflater_free (def);
  g_byte_array_unref (wire);
  g_byte_array_unref (back);
  g_byte_array_unref (raw);
  g_byte_array_unref (data);
  g_byte_array_unref (out.replies);
  g_free (msg);
}

GST_END_TEST;

static Suite *
ws_suite (void)
{
  Suite *s = suite_create ("spicesink-ws");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_request);
  tcase_add_test (tc, test_frames);
  tcase_add_test (tc, test_frame_errors);
  tcase_add_test (tc, test_deflate);
  tcase_add_test (tc, test_client_helpers);
  return s;
}

GST_CHECK_MAIN (ws);
