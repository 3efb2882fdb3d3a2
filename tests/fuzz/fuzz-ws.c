/* libFuzzer: SPICE over WebSocket as spicesink reads it
 * (plugins/spicesink/sinkws.h). The first byte picks the mode: 0 the HTTP
 * upgrade request (the rest, as received in pieces of the second byte's
 * size), anything else the client's frames with permessage-deflate agreed
 * (odd) or not (even), fed in pieces. Checks the bounds the connection
 * relies on: no more data out than fed or one inflated message, replies
 * made of whole frames, nothing taken after the end.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <stdint.h>
#include <stddef.h>
#include <string.h>

#include "sinkws.h"

int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

#define MAX_MESSAGE (64 * 1024)

static void
request (const uint8_t * data, size_t size, size_t step)
{
  SinkWsRequest req;
  gsize consumed = 0;
  guint status;
  const gchar *why;
  size_t len;

  for (len = MIN (step, size);; len = MIN (len + step, size)) {
    SinkWsRequestResult r = sink_ws_parse_request (data, len, &consumed,
        &req, &status, &why);

    if (r == SINK_WS_REQUEST_OK) {
      gchar *answer = sink_ws_accept_response (&req, TRUE);

      g_assert (consumed <= len && consumed <= SINK_WS_REQUEST_MAX);
      g_assert (g_str_has_suffix (answer, "\r\n\r\n"));
      g_free (answer);
      sink_ws_origin_allowed ("https://a.example", req.origin);
      sink_ws_request_clear (&req);
      return;
    }
    if (r != SINK_WS_REQUEST_INCOMPLETE) {
      g_assert (why != NULL);
      g_free (sink_ws_refusal (status, why));
      return;
    }
    g_assert (len < SINK_WS_REQUEST_MAX);
    if (len == size)
      return;
  }
}

static void
frames (const uint8_t * data, size_t size, size_t step, gboolean deflate)
{
  SinkWsDecoder *dec = sink_ws_decoder_new (deflate, MAX_MESSAGE);
  GByteArray *out = g_byte_array_new ();
  SinkWsDecodeOut o = { g_byte_array_new () };
  size_t pos;

  for (pos = 0; pos < size; pos += step) {
    size_t n = MIN (step, size - pos);
    guint before = out->len;
    SinkWsDecodeResult r;

    g_byte_array_set_size (o.replies, 0);
    r = sink_ws_decoder_feed (dec, data + pos, n, out, &o);

    /* what one feed adds: its bytes, or one inflated message */
    g_assert (out->len - before <= MAX (n, (size_t) MAX_MESSAGE));
    g_byte_array_set_size (out, 0);
    if (r != SINK_WS_DECODE_OK) {
      guint before_end = out->len;

      const guint8 *e = o.replies->data + o.replies->len;

      /* the replies end with our close frame (with a code, or empty) */
      g_assert ((o.replies->len >= 4 && e[-4] == 0x88 && e[-3] == 2) ||
          (o.replies->len >= 2 && e[-2] == 0x88 && e[-1] == 0));
      g_free (o.detail);
      o.detail = NULL;
      g_assert (sink_ws_decoder_feed (dec, data, size, out, &o) ==
          SINK_WS_DECODE_OK && out->len == before_end);
      break;
    }
  }
  g_byte_array_unref (o.replies);
  g_byte_array_unref (out);
  sink_ws_decoder_free (dec);
}

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  size_t step;

  if (size < 2)
    return 0;
  step = data[1] ? data[1] : 4096;
  if (data[0] == 0)
    request (data + 2, size - 2, step);
  else
    frames (data + 2, size - 2, step, data[0] & 1);
  return 0;
}
