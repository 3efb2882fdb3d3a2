/* gst-spice tests: the client side of SPICE over WebSocket (RFC 6455,
 * RFC 7692), for the raw client and the stateful fuzzer: the upgrade
 * request, client frames (masked or not, any opcode and length form),
 * and an incremental reader of the server's answer and frames that
 * inflates permessage-deflate messages. Pure: no sockets.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef TEST_WS_CLIENT_H
#define TEST_WS_CLIENT_H

#include <glib.h>

G_BEGIN_DECLS

#define TEST_WS_OP_CONTINUATION 0x0
#define TEST_WS_OP_TEXT 0x1
#define TEST_WS_OP_BINARY 0x2
#define TEST_WS_OP_CLOSE 0x8
#define TEST_WS_OP_PING 0x9
#define TEST_WS_OP_PONG 0xa
#define TEST_WS_FIN 0x80

/* The upgrade request spice-html5 makes (subprotocol "binary"), offering
 * permessage-deflate when @deflate. */
const gchar *test_ws_upgrade_request (gboolean deflate);

/* Appends a client frame to @out: @first is its first byte (FIN, RSV and
 * opcode), masked with @mask when @masked, its length in the 64-bit form
 * when @long_form (else the shortest one). */
void test_ws_put_frame (GByteArray * out, guint8 first, gboolean masked,
    guint32 mask, gboolean long_form, const guint8 * data, gsize len);

typedef struct _TestWsReader TestWsReader;

typedef enum
{
  TEST_WS_READ_OK,              /* reading on */
  TEST_WS_READ_REFUSED,         /* the server answered other than 101 */
  TEST_WS_READ_CLOSED,          /* the server sent close */
  TEST_WS_READ_BROKEN,          /* a frame no server may send */
} TestWsReadResult;

TestWsReader *test_ws_reader_new (void);
void test_ws_reader_free (TestWsReader * r);
/* Back to the start: the server's HTTP answer is read first. */
void test_ws_reader_reset (TestWsReader * r);
/* Feeds @len bytes from the server; the payload of its data frames (each
 * message inflated if it was compressed) is appended to @payload. Once
 * not OK, it stays so and reads nothing more. */
TestWsReadResult test_ws_reader_feed (TestWsReader * r, const guint8 * data,
    gsize len, GByteArray * payload);
/* whether the server's 101 has been read, and whether it took
 * permessage-deflate */
gboolean test_ws_reader_upgraded (TestWsReader * r);
gboolean test_ws_reader_deflate (TestWsReader * r);
/* the server's close frame once CLOSED: its code (1005: none given; -1
 * before) and reason (NULL before) */
gint test_ws_reader_close_code (TestWsReader * r);
const gchar *test_ws_reader_close_reason (TestWsReader * r);

G_END_DECLS
#endif /* TEST_WS_CLIENT_H */
