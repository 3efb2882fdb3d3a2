/* spicesink: SPICE over WebSocket (RFC 6455), permessage-deflate (RFC 7692)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A browser cannot open a TCP connection: spice-html5 (and every web
 * console that embeds it) opens `new WebSocket (uri, "binary")` and sends
 * each SPICE message as one binary message. The connection recognises the
 * HTTP request where a SPICE link header would start, answers it here, and
 * from then on carries the same byte stream inside frames: what the client
 * sends is unmasked and joined into one stream whatever its framing, what
 * we send goes out as one binary frame per SPICE message.
 */
#include <string.h>
#include <zlib.h>

#include "sinkws.h"

/* RFC 6455 section 1.3 */
#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define WS_CONTROL_MAX 125

/* ------------------------------------------------------------ request */

gboolean
sink_ws_is_request (const guint8 * data, gsize len)
{
  return len >= 4 && memcmp (data, "GET ", 4) == 0;
}

void
sink_ws_request_clear (SinkWsRequest * req)
{
  g_free (req->path);
  g_free (req->key);
  g_free (req->origin);
  memset (req, 0, sizeof (*req));
}

/* whether the comma-separated @list holds @token (case-insensitive) */
static gboolean
list_has_token (const gchar * list, const gchar * token)
{
  gchar **items = g_strsplit (list, ",", -1);
  gboolean found = FALSE;

  for (gchar ** i = items; *i && !found; i++)
    found = g_ascii_strcasecmp (g_strstrip (*i), token) == 0;
  g_strfreev (items);
  return found;
}

/* the first permessage-deflate offer of @value we can honour */
static void
parse_extensions (const gchar * value, SinkWsRequest * req)
{
  gchar **offers = g_strsplit (value, ",", -1);

  for (gchar ** o = offers; *o && !req->deflate; o++) {
    gchar **params = g_strsplit (*o, ";", -1);
    gboolean ok = params[0] &&
        g_ascii_strcasecmp (g_strstrip (params[0]), "permessage-deflate") == 0;
    gboolean no_ctx = FALSE;
    gint bits = 15;

    for (gchar ** p = params + (params[0] ? 1 : 0); ok && *p; p++) {
      gchar *name = g_strstrip (*p), *eq = strchr (name, '=');
      gchar *val = NULL;

      if (eq) {
        *eq = '\0';
        g_strstrip (name);
        val = g_strstrip (eq + 1);
        if (val[0] == '"' && strlen (val) >= 2 && val[strlen (val) - 1] == '"') {
          val[strlen (val) - 1] = '\0';
          val++;
        }
      }
      if (g_ascii_strcasecmp (name, "server_no_context_takeover") == 0 && !val)
        no_ctx = TRUE;
      else if (g_ascii_strcasecmp (name, "client_no_context_takeover") == 0 && !val);   /* the client resets; we inflate either way */
      else if (g_ascii_strcasecmp (name, "client_max_window_bits") == 0);       /* we inflate with any window */
      else if (g_ascii_strcasecmp (name, "server_max_window_bits") == 0 && val) {
        gchar *end;
        gint64 b = g_ascii_strtoll (val, &end, 10);

        /* zlib's raw deflate cannot promise a 256-byte window */
        if (*end || b < 9 || b > 15)
          ok = FALSE;
        else
          bits = (gint) b;
      } else
        ok = FALSE;             /* a parameter we do not know: decline it */
    }
    if (ok) {
      req->deflate = TRUE;
      req->server_no_context_takeover = no_ctx;
      req->server_max_window_bits = bits;
    }
    g_strfreev (params);
  }
  g_strfreev (offers);
}

SinkWsRequestResult
sink_ws_parse_request (const guint8 * data, gsize len, gsize * consumed,
    SinkWsRequest * req, guint * status, const gchar ** why)
{
  const guint8 *end = NULL;
  gchar *text, **lines, **req_line;
  gboolean upgrade = FALSE, connection = FALSE, version = FALSE;
  gboolean other_version = FALSE;
  gsize i;

  memset (req, 0, sizeof (*req));
  *status = 400;
  for (i = 0; i + 4 <= len && i + 4 <= SINK_WS_REQUEST_MAX; i++) {
    if (memcmp (data + i, "\r\n\r\n", 4) == 0) {
      end = data + i;
      break;
    }
  }
  if (!end) {
    if (len >= SINK_WS_REQUEST_MAX) {
      *why = "request larger than its bound";
      return SINK_WS_REQUEST_TOO_LARGE;
    }
    return SINK_WS_REQUEST_INCOMPLETE;
  }
  *consumed = (gsize) (end - data) + 4;
  if (memchr (data, '\0', end - data)) {
    *why = "NUL byte in the request";
    return SINK_WS_REQUEST_BAD;
  }
  text = g_strndup ((const gchar *) data, end - data);
  lines = g_strsplit (text, "\r\n", -1);
  g_free (text);
  req_line = g_strsplit (lines[0], " ", -1);
  if (g_strv_length (req_line) != 3 || strcmp (req_line[0], "GET") != 0 ||
      req_line[1][0] != '/' || strcmp (req_line[2], "HTTP/1.1") != 0) {
    *why = "not an HTTP/1.1 GET request";
    g_strfreev (req_line);
    g_strfreev (lines);
    return SINK_WS_REQUEST_BAD;
  }
  req->path = g_strdup (req_line[1]);
  req->server_max_window_bits = 15;
  g_strfreev (req_line);

  for (gchar ** l = lines + 1; *l; l++) {
    gchar *colon = strchr (*l, ':'), *name, *value;

    if (!colon || colon == *l) {
      *why = "malformed header line";
      g_strfreev (lines);
      sink_ws_request_clear (req);
      return SINK_WS_REQUEST_BAD;
    }
    *colon = '\0';
    name = *l;
    value = g_strstrip (colon + 1);
    if (g_ascii_strcasecmp (name, "Upgrade") == 0)
      upgrade = upgrade || list_has_token (value, "websocket");
    else if (g_ascii_strcasecmp (name, "Connection") == 0)
      connection = connection || list_has_token (value, "upgrade");
    else if (g_ascii_strcasecmp (name, "Sec-WebSocket-Version") == 0) {
      if (strcmp (value, "13") == 0)
        version = TRUE;
      else
        other_version = TRUE;
    } else if (g_ascii_strcasecmp (name, "Sec-WebSocket-Key") == 0) {
      gsize n = 0;
      guchar *k;

      k = strlen (value) == 24 ? g_base64_decode (value, &n) : NULL;
      g_free (k);
      if (n == 16 && !req->key)
        req->key = g_strdup (value);
    } else if (g_ascii_strcasecmp (name, "Sec-WebSocket-Protocol") == 0) {
      req->protocol_binary = req->protocol_binary ||
          list_has_token (value, "binary");
    } else if (g_ascii_strcasecmp (name, "Origin") == 0) {
      if (!req->origin)
        req->origin = g_strdup (value);
    } else if (g_ascii_strcasecmp (name, "Sec-WebSocket-Extensions") == 0) {
      parse_extensions (value, req);
    }
  }
  g_strfreev (lines);
  if (!upgrade || !connection) {
    *why = "not a WebSocket upgrade (Upgrade: websocket, Connection: Upgrade)";
  } else if (!version) {
    *why = "unsupported Sec-WebSocket-Version (13 only)";
    if (other_version)
      *status = 426;
  } else if (!req->key) {
    *why = "missing or malformed Sec-WebSocket-Key";
  } else {
    return SINK_WS_REQUEST_OK;
  }
  sink_ws_request_clear (req);
  return SINK_WS_REQUEST_BAD;
}

gchar *
sink_ws_accept_key (const gchar * key)
{
  GChecksum *sha = g_checksum_new (G_CHECKSUM_SHA1);
  guint8 digest[20];
  gsize dlen = sizeof (digest);
  gchar *accept;

  g_checksum_update (sha, (const guchar *) key, strlen (key));
  g_checksum_update (sha, (const guchar *) WS_GUID, strlen (WS_GUID));
  g_checksum_get_digest (sha, digest, &dlen);
  g_checksum_free (sha);
  accept = g_base64_encode (digest, dlen);
  return accept;
}

gchar *
sink_ws_accept_response (const SinkWsRequest * req, gboolean deflate)
{
  GString *s = g_string_new ("HTTP/1.1 101 Switching Protocols\r\n"
      "Upgrade: websocket\r\nConnection: Upgrade\r\n");
  gchar *accept = sink_ws_accept_key (req->key);

  g_string_append_printf (s, "Sec-WebSocket-Accept: %s\r\n", accept);
  g_free (accept);
  if (req->protocol_binary)
    g_string_append (s, "Sec-WebSocket-Protocol: binary\r\n");
  if (deflate && req->deflate) {
    g_string_append (s, "Sec-WebSocket-Extensions: permessage-deflate");
    if (req->server_no_context_takeover)
      g_string_append (s, "; server_no_context_takeover");
    if (req->server_max_window_bits < 15)
      g_string_append_printf (s, "; server_max_window_bits=%d",
          req->server_max_window_bits);
    g_string_append (s, "\r\n");
  }
  g_string_append (s, "\r\n");
  return g_string_free (s, FALSE);
}

gchar *
sink_ws_refusal (guint status, const gchar * why)
{
  const gchar *text = status == 403 ? "Forbidden" :
      status == 426 ? "Upgrade Required" : "Bad Request";

  return g_strdup_printf ("HTTP/1.1 %u %s\r\nConnection: close\r\n"
      "Content-Type: text/plain\r\n%s"
      "Content-Length: %" G_GSIZE_FORMAT "\r\n\r\n%s\n", status, text,
      status == 426 ? "Sec-WebSocket-Version: 13\r\n" : "",
      strlen (why) + 1, why);
}

gboolean
sink_ws_origin_allowed (const gchar * allowed, const gchar * origin)
{
  if (!allowed || !*allowed)
    return TRUE;
  return origin && list_has_token (allowed, origin);
}

/* ------------------------------------------------------- server frames */

gsize
sink_ws_frame_head (guint8 * out, SinkWsOpcode op, gboolean rsv1, guint64 len)
{
  out[0] = 0x80 | (rsv1 ? 0x40 : 0) | (op & 0x0f);
  if (len < 126) {
    out[1] = (guint8) len;
    return 2;
  }
  if (len <= G_MAXUINT16) {
    out[1] = 126;
    out[2] = (guint8) (len >> 8);
    out[3] = (guint8) len;
    return 4;
  }
  out[1] = 127;
  for (guint i = 0; i < 8; i++)
    out[2 + i] = (guint8) (len >> (56 - 8 * i));
  return 10;
}

struct _SinkWsDeflater
{
  z_stream z;
  gboolean no_context_takeover;
};

SinkWsDeflater *
sink_ws_deflater_new (gint window_bits, gboolean no_context_takeover)
{
  SinkWsDeflater *d = g_new0 (SinkWsDeflater, 1);

  /* negative window bits: raw deflate, no zlib header (RFC 7692) */
  if (deflateInit2 (&d->z, 1, Z_DEFLATED, -CLAMP (window_bits, 9, 15), 8,
          Z_DEFAULT_STRATEGY) != Z_OK) {
    g_free (d);
    return NULL;
  }
  d->no_context_takeover = no_context_takeover;
  return d;
}

void
sink_ws_deflater_free (SinkWsDeflater * d)
{
  if (!d)
    return;
  deflateEnd (&d->z);
  g_free (d);
}

void
sink_ws_deflater_message (SinkWsDeflater * d, const guint8 ** piece,
    const gsize * piece_len, guint n, GByteArray * out)
{
  gsize start = out->len;

  for (guint i = 0; i < n; i++) {
    d->z.next_in = (Bytef *) piece[i];
    d->z.avail_in = (uInt) piece_len[i];
    do {
      gsize at = out->len;
      gsize room = deflateBound (&d->z, d->z.avail_in) + 64;

      g_byte_array_set_size (out, at + room);
      d->z.next_out = out->data + at;
      d->z.avail_out = (uInt) room;
      deflate (&d->z, i + 1 == n ? Z_SYNC_FLUSH : Z_NO_FLUSH);
      g_byte_array_set_size (out, at + room - d->z.avail_out);
    } while (d->z.avail_in > 0 || d->z.avail_out == 0);
  }
  /* a sync flush ends in an empty stored block: 00 00 ff ff */
  if (out->len - start >= 4 &&
      memcmp (out->data + out->len - 4, "\x00\x00\xff\xff", 4) == 0)
    g_byte_array_set_size (out, out->len - 4);
  if (d->no_context_takeover)
    deflateReset (&d->z);
}

/* ------------------------------------------------------- client frames */

struct _SinkWsDecoder
{
  gboolean deflate;
  gsize max_message;
  gboolean done;                /* closed or failed */
  /* the frame being read */
  guint8 head[14];
  guint head_len, head_need;
  gboolean fin, rsv1, masked;
  guint8 opcode;
  guint8 mask[4];
  guint64 payload_len, payload_done;
  /* the message being read */
  gboolean in_message;          /* a data message awaits its FIN frame */
  gboolean compressed;          /* its first frame had RSV1 */
  gsize message_len;
  GByteArray *zbuf;             /* a compressed message's payload */
  guint8 control[WS_CONTROL_MAX];
  z_stream inflate;
  gboolean inflate_ready;
  guint64 frames, messages;
};

SinkWsDecoder *
sink_ws_decoder_new (gboolean deflate, gsize max_message)
{
  SinkWsDecoder *dec = g_new0 (SinkWsDecoder, 1);

  dec->deflate = deflate;
  dec->max_message = max_message;
  dec->head_need = 2;
  dec->zbuf = g_byte_array_new ();
  if (deflate)
    dec->inflate_ready = inflateInit2 (&dec->inflate, -15) == Z_OK;
  return dec;
}

void
sink_ws_decoder_free (SinkWsDecoder * dec)
{
  if (!dec)
    return;
  if (dec->inflate_ready)
    inflateEnd (&dec->inflate);
  g_byte_array_unref (dec->zbuf);
  g_free (dec);
}

guint64
sink_ws_decoder_frames (SinkWsDecoder * dec)
{
  return dec->frames;
}

guint64
sink_ws_decoder_messages (SinkWsDecoder * dec)
{
  return dec->messages;
}

gsize
sink_ws_close_frame (guint8 * out, guint16 code, const gchar * reason)
{
  const gchar *end = reason;
  gsize n, hl;

  if (reason)
    g_utf8_validate (reason, MIN (strlen (reason), 123), &end);
  n = reason ? (gsize) (end - reason) : 0;
  /* a control frame's payload is at most 125 bytes: a 2-byte head */
  hl = sink_ws_frame_head (out, SINK_WS_OP_CLOSE, FALSE, 2 + n);
  out[hl] = code >> 8;
  out[hl + 1] = code & 0xff;
  if (n)
    memcpy (out + hl + 2, reason, n);
  return hl + 2 + n;
}

static void
put_reply (GByteArray * replies, SinkWsOpcode op, const guint8 * payload,
    gsize len)
{
  guint8 h[SINK_WS_FRAME_HEAD_MAX];
  gsize hl = sink_ws_frame_head (h, op, FALSE, len);

  g_byte_array_append (replies, h, (guint) hl);
  if (len)
    g_byte_array_append (replies, payload, (guint) len);
}

static SinkWsDecodeResult
fail (SinkWsDecoder * dec, SinkWsDecodeOut * out, guint16 code,
    const gchar * reason, gchar * detail)
{
  guint8 c[2] = { code >> 8, code & 0xff };

  dec->done = TRUE;
  out->reason = reason;
  out->detail = detail;
  out->close_code = code;
  put_reply (out->replies, SINK_WS_OP_CLOSE, c, 2);
  return SINK_WS_DECODE_ERROR;
}

/* inflates the finished compressed message into @data, at most
 * max_message bytes */
static gboolean
inflate_message (SinkWsDecoder * dec, GByteArray * data)
{
  static const guint8 tail[4] = { 0x00, 0x00, 0xff, 0xff };
  gsize start = data->len;
  int ret = Z_OK;

  if (!dec->inflate_ready)
    return FALSE;
  g_byte_array_append (dec->zbuf, tail, 4);
  dec->inflate.next_in = dec->zbuf->data;
  dec->inflate.avail_in = dec->zbuf->len;
  while (dec->inflate.avail_in > 0 && ret == Z_OK) {
    gsize at = data->len, room = 16384;

    if (at - start + room > dec->max_message + 1)
      room = dec->max_message + 1 - (at - start);
    if (room == 0)
      break;
    g_byte_array_set_size (data, at + room);
    dec->inflate.next_out = data->data + at;
    dec->inflate.avail_out = (uInt) room;
    ret = inflate (&dec->inflate, Z_SYNC_FLUSH);
    g_byte_array_set_size (data, at + room - dec->inflate.avail_out);
    if (ret == Z_BUF_ERROR && dec->inflate.avail_in > 0)
      ret = Z_OK;               /* output was full: go on */
  }
  g_byte_array_set_size (dec->zbuf, 0);
  if ((ret != Z_OK && ret != Z_BUF_ERROR && ret != Z_STREAM_END) ||
      data->len - start > dec->max_message) {
    g_byte_array_set_size (data, start);
    return FALSE;
  }
  dec->message_len = data->len - start;
  return TRUE;
}

/* the frame header is complete in dec->head: checks it */
static SinkWsDecodeResult
check_frame_head (SinkWsDecoder * dec, SinkWsDecodeOut * out)
{
  guint8 b0 = dec->head[0], b1 = dec->head[1];
  gboolean control;

  dec->fin = (b0 & 0x80) != 0;
  dec->rsv1 = (b0 & 0x40) != 0;
  dec->opcode = b0 & 0x0f;
  dec->masked = (b1 & 0x80) != 0;
  control = (dec->opcode & 0x08) != 0;
  if (!dec->masked)
    return fail (dec, out, 1002, "ws-frame",
        g_strdup ("unmasked client frame"));
  if ((b0 & 0x30) || (dec->rsv1 && (!dec->deflate || control ||
              dec->opcode == SINK_WS_OP_CONTINUATION)))
    return fail (dec, out, 1002, "ws-frame",
        g_strdup ("reserved bits set in a frame"));
  switch (dec->opcode) {
    case SINK_WS_OP_CONTINUATION:
      if (!dec->in_message)
        return fail (dec, out, 1002, "ws-frame",
            g_strdup ("continuation without a message"));
      break;
    case SINK_WS_OP_BINARY:
      if (dec->in_message)
        return fail (dec, out, 1002, "ws-frame",
            g_strdup ("new message inside a fragmented one"));
      break;
    case SINK_WS_OP_TEXT:
      return fail (dec, out, 1003, "ws-text",
          g_strdup ("text message (SPICE is binary)"));
    case SINK_WS_OP_CLOSE:
    case SINK_WS_OP_PING:
    case SINK_WS_OP_PONG:
      if (!dec->fin || dec->payload_len > WS_CONTROL_MAX)
        return fail (dec, out, 1002, "ws-frame",
            g_strdup ("fragmented or long control frame"));
      break;
    default:
      return fail (dec, out, 1002, "ws-frame",
          g_strdup_printf ("unknown opcode %u", dec->opcode));
  }
  if (!control) {
    guint64 total = (dec->in_message ? dec->message_len : 0) + dec->payload_len;

    if (dec->payload_len > dec->max_message || total > dec->max_message)
      return fail (dec, out, 1009, "ws-message-size",
          g_strdup_printf ("message of more than %" G_GSIZE_FORMAT " bytes",
              dec->max_message));
    if (!dec->in_message) {
      dec->in_message = TRUE;
      dec->compressed = dec->rsv1;
      dec->message_len = 0;
    }
  }
  return SINK_WS_DECODE_OK;
}

/* the frame's payload is complete: ends the frame, and its message */
static SinkWsDecodeResult
end_frame (SinkWsDecoder * dec, GByteArray * data, SinkWsDecodeOut * out)
{
  SinkWsDecodeResult res = SINK_WS_DECODE_OK;
  gsize plen = (gsize) dec->payload_len;

  dec->frames++;
  switch (dec->opcode) {
    case SINK_WS_OP_PING:
      put_reply (out->replies, SINK_WS_OP_PONG, dec->control, plen);
      break;
    case SINK_WS_OP_PONG:
      break;
    case SINK_WS_OP_CLOSE:
      /* echo the status code (a 1-byte body is a protocol error) */
      if (plen == 1)
        return fail (dec, out, 1002, "ws-frame", g_strdup ("close frame of "
                "one byte"));
      put_reply (out->replies, SINK_WS_OP_CLOSE, dec->control, MIN (plen, 2));
      dec->done = TRUE;
      out->close_code = plen >= 2 ? (dec->control[0] << 8) | dec->control[1] :
          1005;
      res = SINK_WS_DECODE_CLOSED;
      break;
    default:
      if (!dec->fin)
        break;
      dec->in_message = FALSE;
      dec->messages++;
      if (dec->compressed && !inflate_message (dec, data))
        return fail (dec, out, 1009, "ws-inflate-limit",
            g_strdup_printf ("compressed message not inflating within %"
                G_GSIZE_FORMAT " bytes", dec->max_message));
      break;
  }
  dec->head_len = 0;
  dec->head_need = 2;
  return res;
}

SinkWsDecodeResult
sink_ws_decoder_feed (SinkWsDecoder * dec, const guint8 * raw, gsize len,
    GByteArray * data, SinkWsDecodeOut * out)
{
  gsize pos = 0;

  while (!dec->done && pos < len) {
    if (dec->head_len < dec->head_need) {
      guint take = MIN (dec->head_need - dec->head_len, len - pos);

      memcpy (dec->head + dec->head_len, raw + pos, take);
      dec->head_len += take;
      pos += take;
      if (dec->head_len < dec->head_need)
        break;
      if (dec->head_need == 2) {
        guint8 l7 = dec->head[1] & 0x7f;

        /* the length field and the mask key follow */
        dec->head_need = 2 + (l7 == 126 ? 2 : l7 == 127 ? 8 : 0) +
            ((dec->head[1] & 0x80) ? 4 : 0);
        if (dec->head_need > 2)
          continue;
      }
      {
        guint8 l7 = dec->head[1] & 0x7f;
        guint off = 2;

        if (l7 == 126) {
          dec->payload_len = (dec->head[2] << 8) | dec->head[3];
          off = 4;
        } else if (l7 == 127) {
          dec->payload_len = 0;
          for (guint i = 0; i < 8; i++)
            dec->payload_len = (dec->payload_len << 8) | dec->head[2 + i];
          off = 10;
          if (dec->payload_len >> 63)
            return fail (dec, out, 1002, "ws-frame",
                g_strdup ("frame length with the top bit set"));
        } else {
          dec->payload_len = l7;
        }
        if (dec->head[1] & 0x80)
          memcpy (dec->mask, dec->head + off, 4);
        dec->payload_done = 0;
        if (check_frame_head (dec, out) != SINK_WS_DECODE_OK)
          return SINK_WS_DECODE_ERROR;
      }
    }
    /* payload */
    {
      gsize take = (gsize) MIN (dec->payload_len - dec->payload_done,
          (guint64) (len - pos));
      gboolean control = (dec->opcode & 0x08) != 0;
      guint8 *dst = NULL;

      if (control) {
        dst = dec->control + dec->payload_done;
      } else if (take > 0) {
        GByteArray *to = dec->compressed ? dec->zbuf : data;
        guint at = to->len;

        g_byte_array_set_size (to, at + take);
        dst = to->data + at;
        dec->message_len += take;
      }
      for (gsize i = 0; i < take; i++)
        dst[i] = raw[pos + i] ^ dec->mask[(dec->payload_done + i) & 3];
      pos += take;
      dec->payload_done += take;
      if (dec->payload_done == dec->payload_len) {
        SinkWsDecodeResult r = end_frame (dec, data, out);

        if (r != SINK_WS_DECODE_OK)
          return r;
      }
    }
  }
  return SINK_WS_DECODE_OK;
}
