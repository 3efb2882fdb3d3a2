/* gst-spice tests: the SPICE client's side of the wire (see
 * spice-client-wire.h)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Layouts as in gstspicewire.c (spice.proto): integers little-endian,
 * structures packed, Rect = top, left, bottom, right, pointers u32 offsets
 * from the start of the message body.
 */
#include <string.h>
#include <gst/base/gstbytereader.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include "spice-client-wire.h"

/* body sizes */
#define RECT_SIZE 16            /* i32 top, left, bottom, right */
#define IMAGE_DESCRIPTOR_SIZE 18        /* u64 id, u8 type, u8 flags, u32 w, h */
#define MAIN_INIT_SIZE 32       /* eight u32 */
#define SURFACE_CREATE_SIZE 20  /* u32 id, width, height, format, flags */
/* u32 surface, u32 id, u8 flags, u8 codec, u64 stamp, u32 width, height,
 * src width, src height, Rect dest, clip NONE */
#define STREAM_CREATE_SIZE (4 + 4 + 1 + 1 + 8 + 4 * 4 + RECT_SIZE + 1)
#define STREAM_DATA_HEAD_SIZE 12        /* u32 id, mm time, data size */

/* ------------------------------------------------------------- readers */

/* FALSE for (NULL, size > 0) and sizes a GstByteReader cannot hold */
static gboolean
reader_init (GstByteReader * r, const guint8 * data, gsize size)
{
  gboolean ok = (data != NULL || size == 0) && size <= G_MAXUINT;

  gst_byte_reader_init (r, data, ok ? (guint) size : 0);
  return ok;
}

/* a body that must be exactly @n bytes */
static gboolean
exact_reader_init (GstByteReader * r, const guint8 * data, gsize size, gsize n)
{
  return data && size == n && reader_init (r, data, size);
}

/* a SPICE Rect; FALSE if short or inverted */
static gboolean
read_rect (GstByteReader * r, GstVideoRectangle * out)
{
  gint32 top, left, bottom, right;

  if (!gst_byte_reader_get_int32_le (r, &top) ||
      !gst_byte_reader_get_int32_le (r, &left) ||
      !gst_byte_reader_get_int32_le (r, &bottom) ||
      !gst_byte_reader_get_int32_le (r, &right) || bottom < top || right < left)
    return FALSE;
  out->x = left;
  out->y = top;
  out->w = (gint) ((gint64) right - left);
  out->h = (gint) ((gint64) bottom - top);
  return TRUE;
}

/* a SpiceClip: NONE, or RECTS (u32 n, n Rects) skipped; *@n_rects -1 for
 * NONE */
static gboolean
read_clip (GstByteReader * r, gint64 * n_rects)
{
  guint8 type;
  guint32 n;

  if (!gst_byte_reader_get_uint8 (r, &type))
    return FALSE;
  if (type == SPICE_CLIP_TYPE_NONE) {
    *n_rects = -1;
    return TRUE;
  }
  if (type != SPICE_CLIP_TYPE_RECTS || !gst_byte_reader_get_uint32_le (r, &n)
      || n > gst_byte_reader_get_remaining (r) / RECT_SIZE)
    return FALSE;
  *n_rects = n;
  return gst_byte_reader_skip (r, n * RECT_SIZE);
}

/* ----------------------------------------------------------- link stage */

void
test_wire_write_link_header (GByteArray * a, guint32 size)
{
  gst_spice_put_u32 (a, SPICE_MAGIC);
  gst_spice_put_u32 (a, SPICE_VERSION_MAJOR);
  gst_spice_put_u32 (a, SPICE_VERSION_MINOR);
  gst_spice_put_u32 (a, size);
}

void
test_wire_write_link_mess (GByteArray * a, const GstSpiceLinkMess * m)
{
  guint n_common = MIN (m->n_common, GST_SPICE_WIRE_MAX_CAPS_WORDS);
  guint n_channel = MIN (m->n_channel, GST_SPICE_WIRE_MAX_CAPS_WORDS);
  guint i;

  test_wire_write_link_header (a, sizeof (SpiceLinkMess) +
      4 * (n_common + n_channel));
  gst_spice_put_u32 (a, m->connection_id);
  gst_spice_put_u8 (a, m->channel_type);
  gst_spice_put_u8 (a, m->channel_id);
  gst_spice_put_u32 (a, n_common);
  gst_spice_put_u32 (a, n_channel);
  gst_spice_put_u32 (a, sizeof (SpiceLinkMess));        /* caps offset */
  for (i = 0; i < n_common; i++)
    gst_spice_put_u32 (a, m->common_caps[i]);
  for (i = 0; i < n_channel; i++)
    gst_spice_put_u32 (a, m->channel_caps[i]);
}

static gboolean
read_words (GstByteReader * r, guint32 * out, guint n)
{
  guint i;

  for (i = 0; i < n; i++)
    if (!gst_byte_reader_get_uint32_le (r, &out[i]))
      return FALSE;
  return TRUE;
}

gboolean
test_wire_parse_link_reply (const guint8 * data, gsize size,
    TestWireLinkReply * out)
{
  GstByteReader r;
  guint32 n_common, n_channel, caps_offset;

  memset (out, 0, sizeof (*out));
  if (!reader_init (&r, data, size) ||
      gst_byte_reader_get_remaining (&r) < sizeof (SpiceLinkReply))
    return FALSE;
  out->error = gst_byte_reader_get_uint32_le_unchecked (&r);
  memcpy (out->pub_key, gst_byte_reader_get_data_unchecked (&r,
          SPICE_TICKET_PUBKEY_BYTES), SPICE_TICKET_PUBKEY_BYTES);
  n_common = gst_byte_reader_get_uint32_le_unchecked (&r);
  n_channel = gst_byte_reader_get_uint32_le_unchecked (&r);
  caps_offset = gst_byte_reader_get_uint32_le_unchecked (&r);
  if (out->error != SPICE_LINK_ERR_OK)
    return TRUE;
  if (caps_offset < sizeof (SpiceLinkReply) ||
      n_common > GST_SPICE_WIRE_MAX_CAPS_WORDS ||
      n_channel > GST_SPICE_WIRE_MAX_CAPS_WORDS ||
      !gst_byte_reader_set_pos (&r, caps_offset) ||
      !read_words (&r, out->common_caps, n_common) ||
      !read_words (&r, out->channel_caps, n_channel))
    return FALSE;
  out->n_common = n_common;
  out->n_channel = n_channel;
  return TRUE;
}

gboolean
test_wire_encrypt_ticket (const guint8 * pub_der, gsize pub_size,
    const gchar * password, guint8 * out, gsize out_size)
{
  const unsigned char *p = pub_der;
  EVP_PKEY *pkey;
  EVP_PKEY_CTX *ctx;
  size_t len = out_size;
  gboolean ok = FALSE;

  if (!password)
    password = "";
  if (strlen (password) > SPICE_MAX_PASSWORD_LENGTH)
    return FALSE;
  pkey = d2i_PUBKEY (NULL, &p, (long) pub_size);
  if (!pkey)
    return FALSE;
  ctx = EVP_PKEY_CTX_new (pkey, NULL);
  if (ctx && EVP_PKEY_encrypt_init (ctx) > 0 &&
      EVP_PKEY_CTX_set_rsa_padding (ctx, RSA_PKCS1_OAEP_PADDING) > 0 &&
      EVP_PKEY_encrypt (ctx, out, &len, (const guint8 *) password,
          strlen (password) + 1) > 0)
    ok = len == GST_SPICE_WIRE_TICKET_SIZE;
  EVP_PKEY_CTX_free (ctx);
  EVP_PKEY_free (pkey);
  return ok;
}

/* ------------------------------------------- server -> client bodies */

gboolean
test_wire_parse_main_init (const guint8 * data, gsize size,
    TestWireMainInit * out)
{
  GstByteReader r;

  if (!exact_reader_init (&r, data, size, MAIN_INIT_SIZE))
    return FALSE;
  out->session_id = gst_byte_reader_get_uint32_le_unchecked (&r);
  out->display_channels_hint = gst_byte_reader_get_uint32_le_unchecked (&r);
  out->supported_mouse_modes = gst_byte_reader_get_uint32_le_unchecked (&r);
  out->current_mouse_mode = gst_byte_reader_get_uint32_le_unchecked (&r);
  out->agent_connected = gst_byte_reader_get_uint32_le_unchecked (&r);
  out->agent_tokens = gst_byte_reader_get_uint32_le_unchecked (&r);
  out->multi_media_time = gst_byte_reader_get_uint32_le_unchecked (&r);
  out->ram_hint = gst_byte_reader_get_uint32_le_unchecked (&r);
  return TRUE;
}

gint
test_wire_parse_channels_list (const guint8 * data, gsize size,
    guint8 * types, guint8 * ids, guint max)
{
  GstByteReader r;
  guint32 n, i;

  if (!reader_init (&r, data, size) ||
      !gst_byte_reader_get_uint32_le (&r, &n) || n > max ||
      gst_byte_reader_get_remaining (&r) != 2 * (gsize) n)
    return -1;
  for (i = 0; i < n; i++) {
    types[i] = gst_byte_reader_get_uint8_unchecked (&r);
    ids[i] = gst_byte_reader_get_uint8_unchecked (&r);
  }
  return (gint) n;
}

gboolean
test_wire_parse_surface_create (const guint8 * data, gsize size,
    guint32 * surface_id, guint32 * width, guint32 * height, guint32 * format,
    guint32 * flags)
{
  GstByteReader r;

  if (!exact_reader_init (&r, data, size, SURFACE_CREATE_SIZE))
    return FALSE;
  *surface_id = gst_byte_reader_get_uint32_le_unchecked (&r);
  *width = gst_byte_reader_get_uint32_le_unchecked (&r);
  *height = gst_byte_reader_get_uint32_le_unchecked (&r);
  *format = gst_byte_reader_get_uint32_le_unchecked (&r);
  *flags = gst_byte_reader_get_uint32_le_unchecked (&r);
  return TRUE;
}

gboolean
test_wire_parse_draw_copy (const guint8 * data, gsize size,
    TestWireDrawCopy * out)
{
  GstByteReader r;
  guint32 src_bitmap, mask_bitmap;
  guint8 scale_mode, mask_flags;
  gint64 n_rects;

  memset (out, 0, sizeof (*out));
  /* DisplayBase: u32 surface, Rect box, Clip */
  if (!reader_init (&r, data, size) ||
      !gst_byte_reader_get_uint32_le (&r, &out->surface_id) ||
      !read_rect (&r, &out->box) || !read_clip (&r, &n_rects))
    return FALSE;
  /* Copy: u32 src_bitmap, Rect src_area, u16 rop, u8 scale_mode, QMask
   * (u8 flags, Point pos, u32 bitmap) */
  if (!gst_byte_reader_get_uint32_le (&r, &src_bitmap) ||
      !read_rect (&r, &out->src_area) ||
      !gst_byte_reader_get_uint16_le (&r, &out->rop) ||
      !gst_byte_reader_get_uint8 (&r, &scale_mode) ||
      !gst_byte_reader_get_uint8 (&r, &mask_flags) ||
      !gst_byte_reader_skip (&r, 8) ||
      !gst_byte_reader_get_uint32_le (&r, &mask_bitmap))
    return FALSE;
  if (mask_bitmap != 0 || src_bitmap == 0 ||
      !gst_byte_reader_set_pos (&r, src_bitmap) ||
      gst_byte_reader_get_remaining (&r) < IMAGE_DESCRIPTOR_SIZE)
    return FALSE;
  gst_byte_reader_skip_unchecked (&r, 8);       /* image id */
  out->image_type = gst_byte_reader_get_uint8_unchecked (&r);
  out->image_flags = gst_byte_reader_get_uint8_unchecked (&r);
  out->image_width = gst_byte_reader_get_uint32_le_unchecked (&r);
  out->image_height = gst_byte_reader_get_uint32_le_unchecked (&r);
  out->payload_size = gst_byte_reader_get_remaining (&r);
  out->payload = gst_byte_reader_get_data_unchecked (&r, out->payload_size);
  return TRUE;
}

gboolean
test_wire_parse_stream_create (const guint8 * data, gsize size,
    TestWireStreamCreate * out)
{
  GstByteReader r;
  guint8 clip;

  memset (out, 0, sizeof (*out));
  if (!exact_reader_init (&r, data, size, STREAM_CREATE_SIZE))
    return FALSE;
  out->surface_id = gst_byte_reader_get_uint32_le_unchecked (&r);
  out->id = gst_byte_reader_get_uint32_le_unchecked (&r);
  out->flags = gst_byte_reader_get_uint8_unchecked (&r);
  out->codec = gst_byte_reader_get_uint8_unchecked (&r);
  gst_byte_reader_skip_unchecked (&r, 8);       /* stamp */
  out->width = gst_byte_reader_get_uint32_le_unchecked (&r);
  out->height = gst_byte_reader_get_uint32_le_unchecked (&r);
  gst_byte_reader_skip_unchecked (&r, 8);       /* source size */
  if (!read_rect (&r, &out->dest))
    return FALSE;
  clip = gst_byte_reader_get_uint8_unchecked (&r);
  return clip == SPICE_CLIP_TYPE_NONE && out->id < GST_SPICE_WIRE_MAX_STREAMS;
}

gboolean
test_wire_parse_stream_data (const guint8 * data, gsize size,
    guint32 * id, guint32 * mm_time, const guint8 ** frame, gsize * frame_size)
{
  GstByteReader r;
  guint32 n;

  if (!data || !reader_init (&r, data, size) ||
      gst_byte_reader_get_remaining (&r) < STREAM_DATA_HEAD_SIZE)
    return FALSE;
  *id = gst_byte_reader_get_uint32_le_unchecked (&r);
  *mm_time = gst_byte_reader_get_uint32_le_unchecked (&r);
  n = gst_byte_reader_get_uint32_le_unchecked (&r);
  if (n != gst_byte_reader_get_remaining (&r))
    return FALSE;
  *frame = gst_byte_reader_get_data_unchecked (&r, n);
  *frame_size = n;
  return TRUE;
}

gboolean
test_wire_parse_stream_clip (const guint8 * data, gsize size,
    guint32 * id, gint64 * n_rects)
{
  GstByteReader r;

  return data && reader_init (&r, data, size) &&
      gst_byte_reader_get_uint32_le (&r, id) && read_clip (&r, n_rects) &&
      gst_byte_reader_get_remaining (&r) == 0;
}

/* DISPLAY_MONITORS_CONFIG: u16 count, u16 max_allowed, then per head u32
 * id, surface id, width, height, x, y, flags */
#define MONITORS_CONFIG_HEAD_SIZE 28

gboolean
test_wire_parse_monitors_config (const guint8 * data, gsize size,
    GstSpiceHeads * m)
{
  GstByteReader r;
  guint16 n, max;
  guint i;

  memset (m, 0, sizeof (*m));
  if (!data || !reader_init (&r, data, size) ||
      !gst_byte_reader_get_uint16_le (&r, &n) ||
      !gst_byte_reader_get_uint16_le (&r, &max) ||
      n == 0 || n > GST_SPICE_MAX_HEADS ||
      gst_byte_reader_get_remaining (&r) !=
      (gsize) n * MONITORS_CONFIG_HEAD_SIZE)
    return FALSE;
  for (i = 0; i < n; i++) {
    GstSpiceHead *h = &m->monitors[i];

    h->id = gst_byte_reader_get_uint32_le_unchecked (&r);
    gst_byte_reader_skip_unchecked (&r, 4);     /* surface id */
    h->width = (gint) gst_byte_reader_get_uint32_le_unchecked (&r);
    h->height = (gint) gst_byte_reader_get_uint32_le_unchecked (&r);
    h->x = (gint) gst_byte_reader_get_uint32_le_unchecked (&r);
    h->y = (gint) gst_byte_reader_get_uint32_le_unchecked (&r);
    gst_byte_reader_skip_unchecked (&r, 4);     /* flags */
  }
  m->count = n;
  m->max = MAX (max, n);
  return TRUE;
}

/* ------------------------------------------- client -> server bodies */

void
test_wire_write_mouse_position (GByteArray * a, guint32 x, guint32 y,
    guint16 buttons, guint8 display_id)
{
  gst_spice_put_u32 (a, x);
  gst_spice_put_u32 (a, y);
  gst_spice_put_u16 (a, buttons);
  gst_spice_put_u8 (a, display_id);
}

guint32
test_wire_encode_key_code (guint scancode, gboolean release)
{
  guint8 code = (scancode & 0x7f) | (release ? 0x80 : 0);

  /* extended keys: the 0xe0 prefix byte first */
  if (scancode & 0x100)
    return 0xe0 | ((guint32) code << 8);
  return code;
}

/* ---------------------------------------------------------------- agent */

void
test_agent_write_clipboard (GByteArray * a, const GstSpiceClipboard * clip,
    gboolean selection, gboolean serial, guint32 serial_value)
{
  gst_spice_agent_write_clipboard_head (a, clip, selection, serial,
      serial_value);
  if (clip->action == GST_SPICE_CLIPBOARD_DATA && clip->data) {
    gsize n;
    const guint8 *d = g_bytes_get_data (clip->data, &n);

    gst_spice_put_bytes (a, d, n);
  }
}

void
test_agent_write_monitors_config (GByteArray * a,
    const GstSpiceMonitor * mons, guint n)
{
  GByteArray *body = g_byte_array_new ();
  guint i;

  /* VDAgentMonitorsConfig: u32 count, u32 flags, then VDAgentMonConfig
   * (height, width, depth, x, y) each */
  gst_spice_put_u32 (body, n);
  gst_spice_put_u32 (body, VD_AGENT_CONFIG_MONITORS_FLAG_USE_POS);
  for (i = 0; i < n; i++) {
    gst_spice_put_u32 (body, mons[i].height);
    gst_spice_put_u32 (body, mons[i].width);
    gst_spice_put_u32 (body, 32);
    gst_spice_put_u32 (body, (guint32) mons[i].x);
    gst_spice_put_u32 (body, (guint32) mons[i].y);
  }
  gst_spice_agent_write_message (a, VD_AGENT_MONITORS_CONFIG, body->data,
      body->len);
  g_byte_array_unref (body);
}

gboolean
test_agent_parse_clipboard (guint32 type, const guint8 * body, gsize size,
    gboolean selection, gboolean serial, GstSpiceClipboard * clip)
{
  GBytes *b;
  gboolean ok;

  if (!body && size) {
    memset (clip, 0, sizeof (*clip));
    return FALSE;
  }
  b = g_bytes_new (body, size);
  ok = gst_spice_agent_parse_clipboard_bytes (type, b, selection, serial, clip);
  g_bytes_unref (b);
  return ok;
}
