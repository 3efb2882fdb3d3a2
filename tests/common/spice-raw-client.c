/* gst-spice tests: raw-socket SPICE client (see spice-raw-client.h)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <string.h>
#include <sys/socket.h>
#include "spice-raw-client.h"
#include "ppm.h"

GSocket *
spice_raw_tcp_connect_from (const gchar * from, guint16 port, guint timeout_s)
{
  GSocket *sock = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM,
      G_SOCKET_PROTOCOL_TCP, NULL);
  GInetAddress *ia = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  GSocketAddress *sa = g_inet_socket_address_new (ia, port);

  if (sock) {
    gboolean ok = TRUE;

    g_socket_set_timeout (sock, timeout_s);
    if (from) {
      GInetAddress *src = g_inet_address_new_from_string (from);
      GSocketAddress *ssa = g_inet_socket_address_new (src, 0);

      ok = g_socket_bind (sock, ssa, FALSE, NULL);
      g_object_unref (ssa);
      g_object_unref (src);
    }
    if (!ok || !g_socket_connect (sock, sa, NULL, NULL))
      g_clear_object (&sock);
  }
  g_object_unref (sa);
  g_object_unref (ia);
  return sock;
}

GSocket *
spice_raw_tcp_connect (guint16 port, guint timeout_s)
{
  return spice_raw_tcp_connect_from (NULL, port, timeout_s);
}

gboolean
spice_raw_tcp_wait_listen (guint16 port, guint timeout_ms)
{
  gint64 end = g_get_monotonic_time () + timeout_ms * (gint64) 1000;
  GSocket *s = NULL;
  gboolean ok;

  while (!(s = spice_raw_tcp_connect (port, 2)) &&
      g_get_monotonic_time () < end)
    g_usleep (50 * 1000);
  ok = s != NULL;
  spice_raw_tcp_close (&s);
  return ok;
}

GSocket *
spice_raw_tcp_listen (guint16 * port)
{
  GSocket *sock = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM,
      G_SOCKET_PROTOCOL_TCP, NULL);
  GInetAddress *lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  GSocketAddress *sa = g_inet_socket_address_new (lo, 0), *local = NULL;

  if (!sock || !g_socket_bind (sock, sa, TRUE, NULL) ||
      !g_socket_listen (sock, NULL) ||
      !(local = g_socket_get_local_address (sock, NULL)))
    g_clear_object (&sock);
  else
    *port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (local));
  g_clear_object (&local);
  g_object_unref (sa);
  g_object_unref (lo);
  return sock;
}

void
spice_raw_tcp_close (GSocket ** sock)
{
  if (*sock) {
    g_socket_close (*sock, NULL);
    g_clear_object (sock);
  }
}

void
spice_raw_append_msg (GByteArray * a, guint16 type, const guint8 * body,
    guint32 size)
{
  guint8 h[6];

  gst_spice_wire_put_header (h, TRUE, 0, type, size);
  g_byte_array_append (a, h, sizeof (h));
  if (size)
    g_byte_array_append (a, body, size);
}

void
spice_raw_append_mouse_position (GByteArray * a, guint32 x, guint32 y)
{
  guint8 b[11] = { 0, };        /* x, y, buttons (16), display id (8) */

  GST_WRITE_UINT32_LE (b, x);
  GST_WRITE_UINT32_LE (b + 4, y);
  spice_raw_append_msg (a, SPICE_MSGC_INPUTS_MOUSE_POSITION, b, sizeof (b));
}

SpiceRawConn *
spice_raw_connect (guint16 port, guint timeout_s)
{
  return spice_raw_connect_from (NULL, port, timeout_s);
}

gboolean
spice_raw_websocket (void)
{
  return g_strcmp0 (g_getenv ("GST_SPICE_TEST_WEBSOCKET"), "1") == 0;
}

/* TRUE when @c can be read (bytes or EOF) before @deadline (monotonic) */
static gboolean
wait_readable (SpiceRawConn * c, gint64 deadline)
{
  gint64 left = deadline - g_get_monotonic_time ();

  return left > 0 &&
      g_socket_condition_timed_wait (c->sock, G_IO_IN, left, NULL, NULL);
}

static gboolean
send_all (GSocket * sock, const guint8 * data, gsize size)
{
  while (size > 0) {
    gssize n = g_socket_send (sock, (const gchar *) data, size, NULL, NULL);
    if (n <= 0)
      return FALSE;
    data += n;
    size -= n;
  }
  return TRUE;
}

static gboolean
recv_all (SpiceRawConn * c, guint8 * buf, gsize size, gint64 deadline)
{
  while (size > 0) {
    gssize n;

    if (!wait_readable (c, deadline))
      return FALSE;
    n = g_socket_receive (c->sock, (gchar *) buf, size, NULL, NULL);
    if (n <= 0)
      return FALSE;
    buf += n;
    size -= n;
  }
  return TRUE;
}

/* the next bytes from the server, through the WebSocket reader: the
 * frames' payload to c->ws_in; FALSE at the end, a close, a refusal or
 * @deadline */
static gboolean
ws_read_more (SpiceRawConn * c, gint64 deadline)
{
  guint8 buf[16384];
  gssize n;

  if (!wait_readable (c, deadline))
    return FALSE;
  n = g_socket_receive (c->sock, (gchar *) buf, sizeof (buf), NULL, NULL);
  if (n <= 0)
    return FALSE;
  return test_ws_reader_feed (c->ws_reader, buf, n, c->ws_in) ==
      TEST_WS_READ_OK;
}

/* the HTTP upgrade; TRUE when answered 101 */
static gboolean
ws_upgrade (SpiceRawConn * c, guint timeout_s)
{
  const gchar *req = test_ws_upgrade_request (FALSE);
  gint64 deadline = g_get_monotonic_time () + timeout_s * G_USEC_PER_SEC;

  if (!send_all (c->sock, (const guint8 *) req, strlen (req)))
    return FALSE;
  while (!test_ws_reader_upgraded (c->ws_reader))
    if (!ws_read_more (c, deadline))
      return FALSE;
  return TRUE;
}

SpiceRawConn *
spice_raw_connect_from (const gchar * from, guint16 port, guint timeout_s)
{
  GSocket *sock = spice_raw_tcp_connect_from (from, port, timeout_s);
  SpiceRawConn *c;

  if (!sock)
    return NULL;
  c = g_new0 (SpiceRawConn, 1);
  c->sock = sock;
  if (spice_raw_websocket ()) {
    c->ws = TRUE;
    c->ws_in = g_byte_array_new ();
    c->ws_reader = test_ws_reader_new ();
    c->ws_upgraded = ws_upgrade (c, MAX (timeout_s, 1));
  }
  return c;
}

void
spice_raw_close (SpiceRawConn * c)
{
  if (!c)
    return;
  spice_raw_tcp_close (&c->sock);
  if (c->ws_in)
    g_byte_array_unref (c->ws_in);
  test_ws_reader_free (c->ws_reader);
  g_free (c);
}

void
spice_raw_reset (SpiceRawConn * c)
{
  struct linger l = { 1, 0 };

  if (!c)
    return;
  setsockopt (g_socket_get_fd (c->sock), SOL_SOCKET, SO_LINGER, &l, sizeof (l));
  spice_raw_close (c);
}

gboolean
spice_raw_send (SpiceRawConn * c, const guint8 * data, gsize size)
{
  GByteArray *f;
  gboolean ok;

  if (!c->ws)
    return send_all (c->sock, data, size);
  if (!c->ws_upgraded)
    return FALSE;
  /* one masked binary frame */
  f = g_byte_array_sized_new (size + 14);
  test_ws_put_frame (f, TEST_WS_FIN | TEST_WS_OP_BINARY, TRUE,
      g_random_int (), FALSE, data, size);
  ok = send_all (c->sock, f->data, f->len);
  g_byte_array_unref (f);
  return ok;
}

gboolean
spice_raw_recv_exact (SpiceRawConn * c, guint8 * buf, gsize size,
    guint timeout_ms)
{
  gint64 deadline = g_get_monotonic_time () + timeout_ms * (gint64) 1000;

  if (!c->ws)
    return recv_all (c, buf, size, deadline);
  /* (a close may come in the same read as the last payload: that
   * payload still counts) */
  while (c->ws_in->len < size)
    if (!c->ws_upgraded || !ws_read_more (c, deadline))
      break;
  if (c->ws_in->len < size)
    return FALSE;
  memcpy (buf, c->ws_in->data, size);
  g_byte_array_remove_range (c->ws_in, 0, size);
  return TRUE;
}

gboolean
spice_raw_wait_closed (SpiceRawConn * c, guint timeout_ms)
{
  gint64 deadline = g_get_monotonic_time () + timeout_ms * (gint64) 1000;
  guint8 buf[4096];

  for (;;) {
    gssize n;

    if (!wait_readable (c, deadline))
      return FALSE;
    n = g_socket_receive (c->sock, (gchar *) buf, sizeof (buf), NULL, NULL);
    if (n <= 0)
      return TRUE;
    /* the server's close frame, if it sends one, is kept */
    if (c->ws_upgraded)
      test_ws_reader_feed (c->ws_reader, buf, n, c->ws_in);
  }
}

gint
spice_raw_ws_close_code (SpiceRawConn * c, const gchar ** reason)
{
  if (reason)
    *reason = c->ws_reader ? test_ws_reader_close_reason (c->ws_reader) : NULL;
  return c->ws_reader ? test_ws_reader_close_code (c->ws_reader) : -1;
}

gboolean
spice_raw_link_send_mess (SpiceRawConn * c, guint32 connection_id,
    guint8 channel_type, guint32 common_caps, guint32 channel_caps)
{
  GstSpiceLinkMess m = { 0, };
  GByteArray *a = g_byte_array_new ();
  gboolean ok;

  m.connection_id = connection_id;
  m.channel_type = channel_type;
  m.n_common = 1;
  m.n_channel = 1;
  m.common_caps[0] = common_caps;
  m.channel_caps[0] = channel_caps;
  c->common_caps = common_caps;
  test_wire_write_link_mess (a, &m);
  ok = spice_raw_send (c, a->data, a->len);
  g_byte_array_unref (a);
  return ok;
}

gboolean
spice_raw_link_read_reply (SpiceRawConn * c, TestWireLinkReply * r,
    guint timeout_ms)
{
  GstSpiceLinkHeader h;
  guint8 hdr[16], *body;
  gboolean ok;

  if (!spice_raw_recv_exact (c, hdr, 16, timeout_ms) ||
      !gst_spice_wire_parse_link_header (hdr, 16,
          GST_SPICE_WIRE_LINK_REPLY_SIZE, &h, NULL))
    return FALSE;
  body = g_malloc (h.size);
  ok = spice_raw_recv_exact (c, body, h.size, timeout_ms) &&
      test_wire_parse_link_reply (body, h.size, r);
  g_free (body);
  if (ok)
    c->mini = gst_spice_caps_test (r->common_caps, r->n_common,
        SPICE_COMMON_CAP_MINI_HEADER) &&
        (c->common_caps & (1u << SPICE_COMMON_CAP_MINI_HEADER));
  return ok;
}

gboolean
spice_raw_link_send_ticket (SpiceRawConn * c, const TestWireLinkReply * r,
    const gchar * password)
{
  GByteArray *a = g_byte_array_new ();
  guint8 ticket[128];
  gboolean ok = FALSE;

  if (c->common_caps & (1u << SPICE_COMMON_CAP_PROTOCOL_AUTH_SELECTION))
    gst_spice_put_u32 (a, SPICE_COMMON_CAP_AUTH_SPICE);
  if (test_wire_encrypt_ticket (r->pub_key, SPICE_TICKET_PUBKEY_BYTES,
          password ? password : "", ticket, sizeof (ticket))) {
    gst_spice_put_bytes (a, ticket, 128);
    ok = spice_raw_send (c, a->data, a->len);
  }
  g_byte_array_unref (a);
  return ok;
}

gboolean
spice_raw_link_read_result (SpiceRawConn * c, guint timeout_ms)
{
  guint8 res[4];

  if (!spice_raw_recv_exact (c, res, 4, timeout_ms))
    return FALSE;
  c->link_result = GST_READ_UINT32_LE (res);
  return TRUE;
}

gboolean
spice_raw_link (SpiceRawConn * c, guint32 connection_id, guint8 channel_type,
    guint32 common_caps, guint32 channel_caps, const gchar * password,
    guint32 * reply_error)
{
  TestWireLinkReply r;

  if (reply_error)
    *reply_error = 0;
  if (!spice_raw_link_send_mess (c, connection_id, channel_type, common_caps,
          channel_caps) || !spice_raw_link_read_reply (c, &r, 10000))
    return FALSE;
  if (r.error) {
    if (reply_error)
      *reply_error = r.error;
    return FALSE;
  }
  c->type = channel_type;
  return spice_raw_link_send_ticket (c, &r, password) &&
      spice_raw_link_read_result (c, 10000);
}

gboolean
spice_raw_send_msg (SpiceRawConn * c, guint16 type, const guint8 * body,
    gsize size)
{
  guint8 h[18];
  gsize hs = gst_spice_wire_header_size (c->mini);

  gst_spice_wire_put_header (h, c->mini, 1, type, (guint32) size);
  return spice_raw_send (c, h, hs) && spice_raw_send (c, body, size);
}

gboolean
spice_raw_read_msg (SpiceRawConn * c, guint timeout_ms, guint16 * type,
    guint8 ** body, gsize * size)
{
  guint8 h[18];
  gsize hs = gst_spice_wire_header_size (c->mini);
  GstSpiceMsgHeader mh;

  *body = NULL;
  *size = 0;
  if (!spice_raw_recv_exact (c, h, hs, timeout_ms) ||
      !gst_spice_wire_parse_header (h, hs, c->mini, &mh))
    return FALSE;
  if (mh.size > 64 * 1024 * 1024)
    return FALSE;
  *type = mh.type;
  *size = mh.size;
  if (mh.size) {
    *body = g_malloc (mh.size);
    if (!spice_raw_recv_exact (c, *body, mh.size, MAX (timeout_ms, 10000))) {
      g_free (*body);
      *body = NULL;
      return FALSE;
    }
  }
  return TRUE;
}

SpiceRawSession *
spice_raw_session_new_main (guint16 port, const gchar * password)
{
  SpiceRawSession *s = g_new0 (SpiceRawSession, 1);
  guint16 type;
  guint8 *body;
  gsize size;
  TestWireMainInit init;

  s->main = spice_raw_connect (port, 10);
  if (!s->main || !spice_raw_link (s->main, 0, SPICE_CHANNEL_MAIN,
          SPICE_RAW_COMMON_CAPS, 0, password, NULL)
      || s->main->link_result != 0)
    goto fail;
  if (!spice_raw_read_msg (s->main, 10000, &type, &body, &size))
    goto fail;
  if (type != SPICE_MSG_MAIN_INIT ||
      !test_wire_parse_main_init (body, size, &init)) {
    g_free (body);
    goto fail;
  }
  g_free (body);
  s->session_id = init.session_id;
  s->mm_time = init.multi_media_time;
  if (!spice_raw_send_msg (s->main, SPICE_MSGC_MAIN_ATTACH_CHANNELS, NULL, 0))
    goto fail;
  for (;;) {
    if (!spice_raw_read_msg (s->main, 10000, &type, &body, &size))
      goto fail;
    g_free (body);
    if (type == SPICE_MSG_MAIN_CHANNELS_LIST)
      break;
  }
  return s;
fail:
  spice_raw_session_free (s);
  return NULL;
}

SpiceRawSession *
spice_raw_session_new (guint16 port, const gchar * password,
    guint32 display_caps)
{
  SpiceRawSession *s = spice_raw_session_new_main (port, password);

  if (!s)
    return NULL;
  s->display = spice_raw_connect (port, 10);
  if (!s->display || !spice_raw_link (s->display, s->session_id,
          SPICE_CHANNEL_DISPLAY, SPICE_RAW_COMMON_CAPS, display_caps, password,
          NULL) || s->display->link_result != 0)
    goto fail;
  return s;
fail:
  spice_raw_session_free (s);
  return NULL;
}

void
spice_raw_session_free (SpiceRawSession * s)
{
  if (!s)
    return;
  spice_raw_close (s->main);
  spice_raw_close (s->display);
  g_free (s->canvas);
  gst_spice_image_decoder_free (s->images);
  g_free (s->error);
  g_free (s);
}

static gboolean
proto_error (SpiceRawSession * s, const gchar * what)
{
  s->protocol_error = TRUE;
  if (!s->error)
    s->error = g_strdup (what);
  return FALSE;
}

/* a DRAW_COPY's image into the canvas, as a SPICE client paints it */
static gboolean
paint (SpiceRawSession * s, const GstVideoRectangle * d, guint8 type,
    const guint8 * p, gsize size)
{
  if (!s->images)
    s->images = gst_spice_image_decoder_new ();
  return gst_spice_image_decoder_decode (s->images, type, d->w, d->h, p, size,
      s->canvas + ((gsize) d->y * s->width + d->x) * 4, (gsize) s->width * 4,
      NULL);
}

guint64
spice_raw_session_compare (SpiceRawSession * s, const guint8 * bgrx,
    gint stride)
{
  if (!s->canvas)
    return G_MAXUINT64;
  return test_bgrx_count_diff (s->canvas, s->width * 4, bgrx, stride,
      s->width, s->height, NULL, NULL);
}

static gboolean
handle_display (SpiceRawSession * s, guint16 type, const guint8 * body,
    gsize size)
{
  switch (type) {
    case SPICE_MSG_DISPLAY_SURFACE_CREATE:{
      guint32 id, w, h, fmt, flags;

      if (!test_wire_parse_surface_create (body, size, &id, &w, &h, &fmt,
              &flags) || id != 0 || fmt != 32 || w == 0 || h == 0 ||
          w > 16384 || h > 16384)
        return proto_error (s, "bad SURFACE_CREATE");
      g_free (s->canvas);
      s->canvas = g_malloc0 ((gsize) w * h * 4);
      s->width = w;
      s->height = h;
      return TRUE;
    }
    case SPICE_MSG_DISPLAY_SURFACE_DESTROY:
      if (s->streams_live)
        return proto_error (s, "surface destroyed under a live stream");
      return TRUE;
    case SPICE_MSG_DISPLAY_MARK:
      if (!s->canvas)
        return proto_error (s, "MARK before SURFACE_CREATE");
      if (s->marks++ == 0)
        s->draws_at_first_mark = s->draws;
      s->last_draw_area_at_mark = s->last_draw_area;
      return TRUE;
    case SPICE_MSG_DISPLAY_DRAW_COPY:{
      TestWireDrawCopy dc;
      GstVideoRectangle dest;

      if (!s->canvas)
        return proto_error (s, "draw before SURFACE_CREATE");
      if (!test_wire_parse_draw_copy (body, size, &dc) ||
          dc.rop != 8 || dc.box.w != (gint) dc.image_width ||
          dc.box.h != (gint) dc.image_height || dc.box.w <= 0)
        return proto_error (s, "bad DRAW_COPY");
      dest = dc.box;
      if (dest.x < 0 || dest.y < 0 || dest.x + dest.w > s->width ||
          dest.y + dest.h > s->height ||
          !paint (s, &dest, dc.image_type, dc.payload, dc.payload_size))
        return proto_error (s, "undecodable DRAW_COPY image");
      if (dc.image_type == SPICE_IMAGE_TYPE_BITMAP)
        s->draws_bitmap++;
      else if (dc.image_type == SPICE_IMAGE_TYPE_LZ4)
        s->draws_lz4++;
      else if (dc.image_type == SPICE_IMAGE_TYPE_JPEG)
        s->draws_jpeg++;
      if (s->draws++ == 0)
        s->first_draw_area = (guint64) dest.w * dest.h;
      s->last_draw_area = (guint64) dest.w * dest.h;
      return TRUE;
    }
    case SPICE_MSG_DISPLAY_STREAM_CREATE:{
      TestWireStreamCreate sc;

      if (!s->canvas)
        return proto_error (s, "STREAM_CREATE before SURFACE_CREATE");
      if (!test_wire_parse_stream_create (body, size, &sc) ||
          sc.surface_id != 0 || !(sc.flags & 1))
        return proto_error (s, "bad STREAM_CREATE");
      if (s->streams_live & (1u << (sc.id % 32)))
        return proto_error (s, "STREAM_CREATE of a live stream id");
      s->streams_live |= 1u << (sc.id % 32);
      s->streams_hidden &= ~(1u << (sc.id % 32));
      s->stream_creates++;
      s->last_codec = sc.codec;
      return TRUE;
    }
    case SPICE_MSG_DISPLAY_STREAM_DATA:{
      guint32 id, mm;
      const guint8 *f;
      gsize fs;

      if (!test_wire_parse_stream_data (body, size, &id, &mm, &f, &fs) ||
          mm == 0)
        return proto_error (s, "bad STREAM_DATA");
      if (!(s->streams_live & (1u << (id % 32))))
        return proto_error (s, "STREAM_DATA for an unknown stream");
      s->stream_datas++;
      if (s->streams_hidden & (1u << (id % 32)))
        s->stream_datas_hidden++;
      s->last_stream_mm = mm;
      return TRUE;
    }
    case SPICE_MSG_DISPLAY_STREAM_DESTROY:{
      guint32 id;

      if (size != 4)
        return proto_error (s, "bad STREAM_DESTROY");
      id = GST_READ_UINT32_LE (body);
      if (!(s->streams_live & (1u << (id % 32))))
        return proto_error (s, "STREAM_DESTROY of an unknown stream");
      s->streams_live &= ~(1u << (id % 32));
      s->stream_destroys++;
      return TRUE;
    }
    case SPICE_MSG_DISPLAY_STREAM_CLIP:{
      guint32 id;
      gint64 n;

      if (!test_wire_parse_stream_clip (body, size, &id, &n))
        return proto_error (s, "bad STREAM_CLIP");
      if (!(s->streams_live & (1u << (id % 32))))
        return proto_error (s, "STREAM_CLIP of an unknown stream");
      if (n == 0)
        s->streams_hidden |= 1u << (id % 32);
      else
        s->streams_hidden &= ~(1u << (id % 32));
      s->stream_clips++;
      return TRUE;
    }
    case SPICE_MSG_DISPLAY_STREAM_ACTIVATE_REPORT:
      s->stream_reports++;
      return TRUE;
    case SPICE_MSG_PING:
      return TRUE;
    default:
      return proto_error (s, "unexpected display message");
  }
}

gboolean
spice_raw_session_pump (SpiceRawSession * s, guint timeout_ms,
    gboolean (*until) (SpiceRawSession * s, gpointer data), gpointer data)
{
  gint64 deadline = g_get_monotonic_time () + timeout_ms * (gint64) 1000;

  if (until && until (s, data))
    return TRUE;
  for (;;) {
    gint64 left = (deadline - g_get_monotonic_time ()) / 1000;
    guint16 type;
    guint8 *body;
    gsize size;
    gboolean ok;

    if (left <= 0)
      return !s->protocol_error;
    if (!g_socket_condition_timed_wait (s->display->sock, G_IO_IN,
            left * 1000, NULL, NULL))
      return !s->protocol_error;
    if (!spice_raw_read_msg (s->display, 10000, &type, &body, &size))
      return FALSE;
    ok = handle_display (s, type, body, size);
    g_free (body);
    if (!ok)
      return FALSE;
    if (until && until (s, data))
      return TRUE;
  }
}
