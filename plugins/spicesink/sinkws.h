/* spicesink: SPICE over WebSocket (RFC 6455) — the HTTP upgrade, frames
 * both ways, permessage-deflate (RFC 7692, zlib). Pure code on bytes: no
 * socket, no lock; the connection (sinkconn.c) feeds it and writes what it
 * returns.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Threads: a request, a decoder and an encoder belong to one connection and
 * are used by one thread at a time (the decoder on the server thread, the
 * encoder with the server's lock held).
 *
 * Bounds: a request is at most SINK_WS_REQUEST_MAX bytes; a client's
 * message (all its fragments) at most the decoder's max_message bytes,
 * compressed and once inflated; a control frame 125 bytes. The decoder
 * appends to the caller's buffer no more data than it was fed, or one
 * message's inflated size.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* the whole upgrade request: request line, headers, blank line */
#define SINK_WS_REQUEST_MAX 8192
/* what a client's message may hold (compressed, and inflated) */
#define SINK_WS_MESSAGE_MAX (1024 * 1024)
/* longest server frame header: FIN/opcode, length 127, 64-bit length */
#define SINK_WS_FRAME_HEAD_MAX 10

typedef enum
{
  SINK_WS_OP_CONTINUATION = 0x0,
  SINK_WS_OP_TEXT = 0x1,
  SINK_WS_OP_BINARY = 0x2,
  SINK_WS_OP_CLOSE = 0x8,
  SINK_WS_OP_PING = 0x9,
  SINK_WS_OP_PONG = 0xa,
} SinkWsOpcode;

/* ---- the upgrade request ---- */

typedef struct
{
  gchar *path;                  /* the request target, "/" */
  gchar *key;                   /* Sec-WebSocket-Key */
  gchar *origin;                /* Origin, NULL when not sent */
  gboolean protocol_binary;     /* "binary" among Sec-WebSocket-Protocol */
  /* permessage-deflate was offered with parameters we can honour */
  gboolean deflate;
  gboolean server_no_context_takeover;
  gint server_max_window_bits;  /* 9..15; 15 when not asked */
} SinkWsRequest;

typedef enum
{
  SINK_WS_REQUEST_INCOMPLETE,   /* no blank line yet, below the bound */
  SINK_WS_REQUEST_OK,
  SINK_WS_REQUEST_BAD,          /* answer 400 (426: wrong version) */
  SINK_WS_REQUEST_TOO_LARGE,    /* no end within SINK_WS_REQUEST_MAX */
} SinkWsRequestResult;

/* Any thread. Parses the request in @data (@len bytes received so far).
 * OK: *@consumed is the request's length (what follows is WebSocket
 * data), @req filled (free with sink_ws_request_clear()). BAD: *@why says
 * why for the log, *@status is the HTTP status to answer. */
SinkWsRequestResult sink_ws_parse_request (const guint8 * data, gsize len,
    gsize * consumed, SinkWsRequest * req, guint * status,
    const gchar ** why);
void      sink_ws_request_clear (SinkWsRequest * req);
/* whether @data (at least 4 bytes) starts an HTTP GET */
gboolean  sink_ws_is_request (const guint8 * data, gsize len);
/* the 101 answer: accept key, "binary" when asked, permessage-deflate when
 * @deflate (the request offered it) */
gchar    *sink_ws_accept_response (const SinkWsRequest * req,
    gboolean deflate);
/* an HTTP refusal that closes the connection: 400, 403, 426 */
gchar    *sink_ws_refusal (guint status, const gchar * why);
/* Sec-WebSocket-Accept of @key */
gchar    *sink_ws_accept_key (const gchar * key);
/* whether @origin is one of the comma-separated @allowed (NULL or empty:
 * every origin, and requests without Origin, are allowed) */
gboolean  sink_ws_origin_allowed (const gchar * allowed, const gchar * origin);

/* ---- server frames ---- */

/* writes a FIN frame header (unmasked) for @len payload bytes into @out
 * (SINK_WS_FRAME_HEAD_MAX bytes); returns its length */
gsize     sink_ws_frame_head (guint8 * out, SinkWsOpcode op, gboolean rsv1,
    guint64 len);

/* a close frame (unmasked) with @code and as much of @reason as fits
 * (123 bytes, cut where UTF-8 stays valid) into @out
 * (SINK_WS_CLOSE_FRAME_MAX bytes); returns its length */
#define SINK_WS_CLOSE_FRAME_MAX (2 + 125)
gsize     sink_ws_close_frame (guint8 * out, guint16 code,
    const gchar * reason);

typedef struct _SinkWsDeflater SinkWsDeflater;
/* raw deflate at level 1 with 2^@window_bits bytes of history, reset
 * after each message if @no_context_takeover */
SinkWsDeflater *sink_ws_deflater_new (gint window_bits,
    gboolean no_context_takeover);
void      sink_ws_deflater_free (SinkWsDeflater * d);
/* one message: @n pieces compressed (RFC 7692 7.2.1: sync flush, the final
 * 00 00 ff ff removed) and appended to @out */
void      sink_ws_deflater_message (SinkWsDeflater * d, const guint8 ** piece,
    const gsize * piece_len, guint n, GByteArray * out);

/* ---- client frames ---- */

typedef struct _SinkWsDecoder SinkWsDecoder;

typedef enum
{
  SINK_WS_DECODE_OK,
  SINK_WS_DECODE_CLOSED,        /* the client sent close: reply, then end */
  SINK_WS_DECODE_ERROR,         /* a protocol error: reply, then end */
} SinkWsDecodeResult;

typedef struct
{
  GByteArray *replies;          /* frames to write back: pong, close */
  const gchar *reason;          /* ERROR: a stable token for the event */
  gchar *detail;                /* ERROR: for people (free it) */
  guint16 close_code;           /* the code of our close reply */
} SinkWsDecodeOut;

/* @deflate: permessage-deflate was agreed (RSV1 marks compressed
 * messages); @max_message: the bound of one message */
SinkWsDecoder *sink_ws_decoder_new (gboolean deflate, gsize max_message);
void      sink_ws_decoder_free (SinkWsDecoder * dec);
/* Feeds @len raw bytes from the client; appends the binary messages'
 * payload to @data, control replies to @out->replies. After CLOSED or
 * ERROR the decoder takes nothing more. */
SinkWsDecodeResult sink_ws_decoder_feed (SinkWsDecoder * dec,
    const guint8 * raw, gsize len, GByteArray * data, SinkWsDecodeOut * out);
/* frames and messages seen (for the log and the tests) */
guint64   sink_ws_decoder_frames (SinkWsDecoder * dec);
guint64   sink_ws_decoder_messages (SinkWsDecoder * dec);

G_END_DECLS
