/* gst-spice tests: the client side of SPICE over WebSocket (ws-client.h)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <string.h>
#include <zlib.h>

#include "ws-client.h"

/* an answer longer than this is no server's */
#define ANSWER_MAX 8192
/* a compressed message (or a frame) larger than this is none of ours */
#define MESSAGE_MAX (64 * 1024 * 1024)

const gchar *
test_ws_upgrade_request (gboolean deflate)
{
  if (deflate)
    return "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Upgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: binary\r\n"
        "Sec-WebSocket-Extensions: permessage-deflate; "
        "client_max_window_bits\r\n\r\n";
  return "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"
      "Upgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
      "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: binary\r\n\r\n";
}

void
test_ws_put_frame (GByteArray * out, guint8 first, gboolean masked,
    guint32 mask, gboolean long_form, const guint8 * data, gsize len)
{
  guint8 h[14], m[4];
  gsize hl = 2, at, i;

  h[0] = first;
  if (len < 126 && !long_form) {
    h[1] = (guint8) len;
  } else if (len <= 0xffff && !long_form) {
    h[1] = 126;
    h[2] = (guint8) (len >> 8);
    h[3] = (guint8) len;
    hl = 4;
  } else {
    h[1] = 127;
    for (i = 0; i < 8; i++)
      h[2 + i] = (guint8) ((guint64) len >> (56 - 8 * i));
    hl = 10;
  }
  m[0] = (guint8) (mask >> 24);
  m[1] = (guint8) (mask >> 16);
  m[2] = (guint8) (mask >> 8);
  m[3] = (guint8) mask;
  if (masked) {
    h[1] |= 0x80;
    memcpy (h + hl, m, 4);
    hl += 4;
  }
  g_byte_array_append (out, h, hl);
  at = out->len;
  g_byte_array_append (out, data, len);
  if (masked)
    for (i = 0; i < len; i++)
      out->data[at + i] ^= m[i & 3];
}

typedef enum
{
  ST_ANSWER,
  ST_HEAD,
  ST_EXT,
  ST_PAYLOAD,
  ST_DONE,
} ReaderState;

struct _TestWsReader
{
  ReaderState st;
  TestWsReadResult result;
  GString *answer;
  gboolean upgraded, deflate;
  guint8 head[10];
  guint head_have, head_need;
  guint8 opcode;                /* of the frame being read */
  gboolean compressed;          /* the message being read */
  guint64 left;                 /* payload bytes of the frame still due */
  GByteArray *message;          /* a compressed message so far */
  guint8 control[125];          /* a control frame's payload */
  guint control_have;
  gint close_code;              /* -1: no close read */
  gchar *close_reason;
  z_stream z;
  gboolean z_ready;
};

TestWsReader *
test_ws_reader_new (void)
{
  TestWsReader *r = g_new0 (TestWsReader, 1);

  r->answer = g_string_new (NULL);
  r->message = g_byte_array_new ();
  test_ws_reader_reset (r);
  return r;
}

void
test_ws_reader_free (TestWsReader * r)
{
  if (!r)
    return;
  if (r->z_ready)
    inflateEnd (&r->z);
  g_string_free (r->answer, TRUE);
  g_byte_array_unref (r->message);
  g_free (r->close_reason);
  g_free (r);
}

void
test_ws_reader_reset (TestWsReader * r)
{
  r->st = ST_ANSWER;
  r->result = TEST_WS_READ_OK;
  g_string_truncate (r->answer, 0);
  r->upgraded = r->deflate = FALSE;
  r->head_have = 0;
  r->compressed = FALSE;
  g_byte_array_set_size (r->message, 0);
  r->control_have = 0;
  r->close_code = -1;
  g_clear_pointer (&r->close_reason, g_free);
  if (r->z_ready)
    inflateEnd (&r->z);
  r->z_ready = FALSE;
}

gboolean
test_ws_reader_upgraded (TestWsReader * r)
{
  return r->upgraded;
}

gboolean
test_ws_reader_deflate (TestWsReader * r)
{
  return r->deflate;
}

gint
test_ws_reader_close_code (TestWsReader * r)
{
  return r->close_code;
}

const gchar *
test_ws_reader_close_reason (TestWsReader * r)
{
  return r->close_reason;
}

static TestWsReadResult
stop (TestWsReader * r, TestWsReadResult res)
{
  r->st = ST_DONE;
  r->result = res;
  return res;
}

/* the answer is complete in r->answer */
static TestWsReadResult
answer_done (TestWsReader * r)
{
  gchar *lower;

  if (!g_str_has_prefix (r->answer->str, "HTTP/1.1 101 "))
    return stop (r, TEST_WS_READ_REFUSED);
  lower = g_ascii_strdown (r->answer->str, -1);
  r->deflate = strstr (lower, "sec-websocket-extensions: permessage-deflate")
      != NULL;
  g_free (lower);
  if (r->deflate) {
    memset (&r->z, 0, sizeof (r->z));
    if (inflateInit2 (&r->z, -15) != Z_OK)
      return stop (r, TEST_WS_READ_BROKEN);
    r->z_ready = TRUE;
  }
  r->upgraded = TRUE;
  r->st = ST_HEAD;
  r->head_have = 0;
  return TEST_WS_READ_OK;
}

/* a compressed message is complete: its inflated bytes to @payload */
static gboolean
inflate_message (TestWsReader * r, GByteArray * payload)
{
  static const guint8 tail[4] = { 0x00, 0x00, 0xff, 0xff };
  guint8 buf[16384];
  gint ret;

  g_byte_array_append (r->message, tail, sizeof (tail));
  r->z.next_in = r->message->data;
  r->z.avail_in = r->message->len;
  do {
    r->z.next_out = buf;
    r->z.avail_out = sizeof (buf);
    ret = inflate (&r->z, Z_SYNC_FLUSH);
    if (ret != Z_OK && ret != Z_BUF_ERROR)
      return FALSE;
    g_byte_array_append (payload, buf, sizeof (buf) - r->z.avail_out);
    if (payload->len > MESSAGE_MAX)
      return FALSE;
  } while (r->z.avail_in > 0 || r->z.avail_out == 0);
  g_byte_array_set_size (r->message, 0);
  return TRUE;
}

/* the frame header is complete in r->head */
static TestWsReadResult
head_done (TestWsReader * r, GByteArray * payload)
{
  guint8 b0 = r->head[0], b1 = r->head[1], len7 = b1 & 0x7f;
  guint i;

  if (r->st == ST_HEAD && (len7 == 126 || len7 == 127)) {
    r->st = ST_EXT;
    r->head_need = len7 == 126 ? 4 : 10;
    return TEST_WS_READ_OK;
  }
  if (b1 & 0x80)
    return stop (r, TEST_WS_READ_BROKEN);       /* servers do not mask */
  r->opcode = b0 & 0x0f;
  if (len7 == 126)
    r->left = ((guint) r->head[2] << 8) | r->head[3];
  else if (len7 == 127)
    for (r->left = 0, i = 2; i < 10; i++)
      r->left = (r->left << 8) | r->head[i];
  else
    r->left = len7;
  if (r->left > MESSAGE_MAX || (r->opcode >= 0x8 && r->left > 125))
    return stop (r, TEST_WS_READ_BROKEN);
  r->control_have = 0;
  if (r->opcode == TEST_WS_OP_CLOSE && r->left == 0) {
    r->close_code = 1005;       /* no status */
    return stop (r, TEST_WS_READ_CLOSED);
  }
  if (r->opcode == TEST_WS_OP_BINARY || r->opcode == TEST_WS_OP_TEXT)
    r->compressed = (b0 & 0x40) != 0;
  if ((b0 & 0x40) && !r->deflate)
    return stop (r, TEST_WS_READ_BROKEN);
  r->st = ST_PAYLOAD;
  if (r->left == 0 && (b0 & TEST_WS_FIN) && r->opcode < 0x8 && r->compressed) {
    r->st = ST_HEAD;
    r->head_have = 0;
    if (!inflate_message (r, payload))
      return stop (r, TEST_WS_READ_BROKEN);
  } else if (r->left == 0) {
    r->st = ST_HEAD;
    r->head_have = 0;
  }
  return TEST_WS_READ_OK;
}

TestWsReadResult
test_ws_reader_feed (TestWsReader * r, const guint8 * data, gsize len,
    GByteArray * payload)
{
  while (len > 0 && r->st != ST_DONE) {
    switch (r->st) {
      case ST_ANSWER:
        g_string_append_c (r->answer, (gchar) * data);
        data++;
        len--;
        if (g_str_has_suffix (r->answer->str, "\r\n\r\n")) {
          if (answer_done (r) != TEST_WS_READ_OK)
            return r->result;
        } else if (r->answer->len > ANSWER_MAX)
          return stop (r, TEST_WS_READ_REFUSED);
        break;
      case ST_HEAD:
      case ST_EXT:{
        guint need = r->st == ST_HEAD ? 2 : r->head_need;
        guint k = MIN ((gsize) (need - r->head_have), len);

        memcpy (r->head + r->head_have, data, k);
        r->head_have += k;
        data += k;
        len -= k;
        if (r->head_have == need && head_done (r, payload) != TEST_WS_READ_OK)
          return r->result;
        break;
      }
      case ST_PAYLOAD:{
        gsize k = (gsize) MIN (r->left, (guint64) len);
        gboolean fin = (r->head[0] & TEST_WS_FIN) != 0;

        if (r->opcode < 0x8 && r->compressed) {
          g_byte_array_append (r->message, data, k);
          if (r->message->len > MESSAGE_MAX)
            return stop (r, TEST_WS_READ_BROKEN);
        } else if (r->opcode < 0x8) {
          g_byte_array_append (payload, data, k);
        } else {
          memcpy (r->control + r->control_have, data, k);
          r->control_have += k;
        }
        data += k;
        len -= k;
        r->left -= k;
        if (r->left == 0) {
          if (fin && r->opcode < 0x8 && r->compressed &&
              !inflate_message (r, payload))
            return stop (r, TEST_WS_READ_BROKEN);
          if (r->opcode == TEST_WS_OP_CLOSE) {
            if (r->control_have < 2)
              return stop (r, TEST_WS_READ_BROKEN);
            r->close_code = (r->control[0] << 8) | r->control[1];
            r->close_reason = g_strndup ((const gchar *) r->control + 2,
                r->control_have - 2);
            return stop (r, TEST_WS_READ_CLOSED);
          }
          r->st = ST_HEAD;
          r->head_have = 0;
        }
        break;
      }
      case ST_DONE:
        break;
    }
  }
  return r->result;
}
