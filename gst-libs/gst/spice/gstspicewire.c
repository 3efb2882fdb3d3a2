/* gst-spice: SPICE wire format (see gstspicewire.h)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Layouts follow the project's protocol note (shared/design/spice-protocol.md):
 * all integers little-endian, structures packed, Rect = top, left, bottom,
 * right, pointers are u32 offsets from the start of the message body.
 */
#include <string.h>
#include <gst/gst.h>

#include "gstspicewire.h"

/* ---------------------------------------------------------------- caps */

gboolean
gst_spice_caps_test (const guint32 * words, guint n_words, guint cap)
{
  guint w = cap / 32;

  return w < n_words && (words[w] & (1u << (cap % 32))) != 0;
}

void
gst_spice_caps_set (guint32 * words, guint n_words, guint cap)
{
  guint w = cap / 32;

  if (w < n_words)
    words[w] |= 1u << (cap % 32);
}

/* -------------------------------------------------------- byte writers */

void
gst_spice_put_u8 (GByteArray * a, guint8 v)
{
  g_byte_array_append (a, &v, 1);
}

void
gst_spice_put_u16 (GByteArray * a, guint16 v)
{
  guint8 b[2];

  GST_WRITE_UINT16_LE (b, v);
  g_byte_array_append (a, b, 2);
}

void
gst_spice_put_u32 (GByteArray * a, guint32 v)
{
  guint8 b[4];

  GST_WRITE_UINT32_LE (b, v);
  g_byte_array_append (a, b, 4);
}

void
gst_spice_put_u64 (GByteArray * a, guint64 v)
{
  guint8 b[8];

  GST_WRITE_UINT64_LE (b, v);
  g_byte_array_append (a, b, 8);
}

void
gst_spice_put_rect (GByteArray * a, const GstVideoRectangle * r)
{
  gst_spice_put_u32 (a, (guint32) r->y);
  gst_spice_put_u32 (a, (guint32) r->x);
  gst_spice_put_u32 (a, (guint32) (r->y + r->h));
  gst_spice_put_u32 (a, (guint32) (r->x + r->w));
}

void
gst_spice_put_bytes (GByteArray * a, const guint8 * data, gsize size)
{
  if (size)
    g_byte_array_append (a, data, size);
}

/* -------------------------------------------------------- byte readers */

typedef struct
{
  const guint8 *p;
  gsize left;
  gboolean ok;
} Rd;

static inline void
rd_init (Rd * r, const guint8 * data, gsize size)
{
  r->p = data;
  r->left = data ? size : 0;
  r->ok = data != NULL || size == 0;
}

static inline const guint8 *
rd_take (Rd * r, gsize n)
{
  const guint8 *p;

  if (!r->ok || r->left < n) {
    r->ok = FALSE;
    return NULL;
  }
  p = r->p;
  r->p += n;
  r->left -= n;
  return p;
}

static inline guint8
rd_u8 (Rd * r)
{
  const guint8 *p = rd_take (r, 1);
  return p ? p[0] : 0;
}

static inline guint16
rd_u16 (Rd * r)
{
  const guint8 *p = rd_take (r, 2);
  return p ? GST_READ_UINT16_LE (p) : 0;
}

static inline guint32
rd_u32 (Rd * r)
{
  const guint8 *p = rd_take (r, 4);
  return p ? GST_READ_UINT32_LE (p) : 0;
}

static inline guint64
rd_u64 (Rd * r)
{
  const guint8 *p = rd_take (r, 8);
  return p ? GST_READ_UINT64_LE (p) : 0;
}

/* Reads a SPICE Rect; FALSE if it is inverted or out of int range. */
static gboolean
rd_rect (Rd * r, GstVideoRectangle * out)
{
  gint64 top = (gint32) rd_u32 (r), left = (gint32) rd_u32 (r);
  gint64 bottom = (gint32) rd_u32 (r), right = (gint32) rd_u32 (r);

  if (!r->ok || bottom < top || right < left)
    return FALSE;
  out->x = (gint) left;
  out->y = (gint) top;
  out->w = (gint) (right - left);
  out->h = (gint) (bottom - top);
  return TRUE;
}

/* ----------------------------------------------------------- link stage */

gboolean
gst_spice_wire_parse_link_header (const guint8 * data, gsize size,
    guint32 min_size, GstSpiceLinkHeader * out, guint32 * error)
{
  Rd r;
  guint32 err = SPICE_LINK_ERR_INVALID_DATA;

  rd_init (&r, data, size);
  out->magic = rd_u32 (&r);
  out->major = rd_u32 (&r);
  out->minor = rd_u32 (&r);
  out->size = rd_u32 (&r);
  if (!r.ok)
    goto fail;
  if (out->magic != SPICE_MAGIC) {
    err = SPICE_LINK_ERR_INVALID_MAGIC;
    goto fail;
  }
  if (out->major != SPICE_VERSION_MAJOR) {
    err = SPICE_LINK_ERR_VERSION_MISMATCH;
    goto fail;
  }
  if (out->size < min_size || out->size > GST_SPICE_WIRE_MAX_LINK_SIZE)
    goto fail;
  return TRUE;

fail:
  if (error)
    *error = err;
  return FALSE;
}

void
gst_spice_wire_write_link_header (GByteArray * a, guint32 size)
{
  gst_spice_put_u32 (a, SPICE_MAGIC);
  gst_spice_put_u32 (a, SPICE_VERSION_MAJOR);
  gst_spice_put_u32 (a, SPICE_VERSION_MINOR);
  gst_spice_put_u32 (a, size);
}

/* caps arrays shared by link message and reply: @base is the start of the
 * structure that caps_offset is relative to */
static gboolean
read_caps (const guint8 * base, gsize size, guint32 caps_offset,
    guint32 n_common, guint32 n_channel, guint32 * common, guint32 * channel)
{
  guint i;
  Rd r;

  if (n_common > GST_SPICE_WIRE_MAX_CAPS_WORDS ||
      n_channel > GST_SPICE_WIRE_MAX_CAPS_WORDS)
    return FALSE;
  if (caps_offset > size ||
      (size - caps_offset) / 4 < (gsize) n_common + n_channel)
    return FALSE;
  rd_init (&r, base + caps_offset, size - caps_offset);
  for (i = 0; i < n_common; i++)
    common[i] = rd_u32 (&r);
  for (i = 0; i < n_channel; i++)
    channel[i] = rd_u32 (&r);
  return r.ok;
}

gboolean
gst_spice_wire_parse_link_mess (const guint8 * data, gsize size,
    GstSpiceLinkMess * out)
{
  Rd r;
  guint32 n_common, n_channel, caps_offset;

  memset (out, 0, sizeof (*out));
  rd_init (&r, data, size);
  out->connection_id = rd_u32 (&r);
  out->channel_type = rd_u8 (&r);
  out->channel_id = rd_u8 (&r);
  n_common = rd_u32 (&r);
  n_channel = rd_u32 (&r);
  caps_offset = rd_u32 (&r);
  if (!r.ok || caps_offset < GST_SPICE_WIRE_LINK_MESS_SIZE)
    return FALSE;
  if (!read_caps (data, size, caps_offset, n_common, n_channel,
          out->common_caps, out->channel_caps))
    return FALSE;
  out->n_common = n_common;
  out->n_channel = n_channel;
  return TRUE;
}

void
gst_spice_wire_write_link_mess (GByteArray * a, const GstSpiceLinkMess * m)
{
  guint i;
  guint n_common = MIN (m->n_common, GST_SPICE_WIRE_MAX_CAPS_WORDS);
  guint n_channel = MIN (m->n_channel, GST_SPICE_WIRE_MAX_CAPS_WORDS);

  gst_spice_wire_write_link_header (a,
      GST_SPICE_WIRE_LINK_MESS_SIZE + 4 * (n_common + n_channel));
  gst_spice_put_u32 (a, m->connection_id);
  gst_spice_put_u8 (a, m->channel_type);
  gst_spice_put_u8 (a, m->channel_id);
  gst_spice_put_u32 (a, n_common);
  gst_spice_put_u32 (a, n_channel);
  gst_spice_put_u32 (a, GST_SPICE_WIRE_LINK_MESS_SIZE);
  for (i = 0; i < n_common; i++)
    gst_spice_put_u32 (a, m->common_caps[i]);
  for (i = 0; i < n_channel; i++)
    gst_spice_put_u32 (a, m->channel_caps[i]);
}

void
gst_spice_wire_write_link_reply (GByteArray * a, guint32 error,
    const guint8 * pub_key, const guint32 * common, guint n_common,
    const guint32 * channel, guint n_channel)
{
  static const guint8 zeros[SPICE_TICKET_PUBKEY_BYTES];
  guint i;

  gst_spice_wire_write_link_header (a,
      GST_SPICE_WIRE_LINK_REPLY_SIZE + 4 * (n_common + n_channel));
  gst_spice_put_u32 (a, error);
  gst_spice_put_bytes (a, pub_key ? pub_key : zeros, SPICE_TICKET_PUBKEY_BYTES);
  gst_spice_put_u32 (a, n_common);
  gst_spice_put_u32 (a, n_channel);
  gst_spice_put_u32 (a, GST_SPICE_WIRE_LINK_REPLY_SIZE);
  for (i = 0; i < n_common; i++)
    gst_spice_put_u32 (a, common[i]);
  for (i = 0; i < n_channel; i++)
    gst_spice_put_u32 (a, channel[i]);
}

gboolean
gst_spice_wire_parse_link_reply (const guint8 * data, gsize size,
    GstSpiceLinkReply * out)
{
  Rd r;
  const guint8 *key;
  guint32 n_common, n_channel, caps_offset;

  memset (out, 0, sizeof (*out));
  rd_init (&r, data, size);
  out->error = rd_u32 (&r);
  key = rd_take (&r, SPICE_TICKET_PUBKEY_BYTES);
  n_common = rd_u32 (&r);
  n_channel = rd_u32 (&r);
  caps_offset = rd_u32 (&r);
  if (!r.ok)
    return FALSE;
  memcpy (out->pub_key, key, SPICE_TICKET_PUBKEY_BYTES);
  if (out->error != SPICE_LINK_ERR_OK)
    return TRUE;                /* error replies carry nothing else */
  if (caps_offset < GST_SPICE_WIRE_LINK_REPLY_SIZE)
    return FALSE;
  if (!read_caps (data, size, caps_offset, n_common, n_channel,
          out->common_caps, out->channel_caps))
    return FALSE;
  out->n_common = n_common;
  out->n_channel = n_channel;
  return TRUE;
}

/* ------------------------------------------------------------- headers */

void
gst_spice_wire_put_header (guint8 * out, gboolean mini, guint64 serial,
    guint16 type, guint32 size)
{
  if (mini) {
    GST_WRITE_UINT16_LE (out, type);
    GST_WRITE_UINT32_LE (out + 2, size);
  } else {
    GST_WRITE_UINT64_LE (out, serial);
    GST_WRITE_UINT16_LE (out + 8, type);
    GST_WRITE_UINT32_LE (out + 10, size);
    GST_WRITE_UINT32_LE (out + 14, 0);
  }
}

gboolean
gst_spice_wire_parse_header (const guint8 * data, gsize size, gboolean mini,
    GstSpiceMsgHeader * out)
{
  Rd r;

  rd_init (&r, data, size);
  out->serial = mini ? 0 : rd_u64 (&r);
  out->type = rd_u16 (&r);
  out->size = rd_u32 (&r);
  if (!mini && rd_u32 (&r) != 0)        /* sub_list: never used by clients */
    return FALSE;
  return r.ok;
}

/* --------------------------------------------- client message limits */

typedef struct
{
  guint8 channel;               /* 0 = any channel */
  guint16 type;
  guint32 min, max;
  const gchar *name;
} MsgLimit;

static const MsgLimit client_limits[] = {
  {0, SPICE_MSGC_ACK_SYNC, 4, 4, "ACK_SYNC"},
  {0, SPICE_MSGC_ACK, 0, 0, "ACK"},
  /* PONG echoes PING; a client may echo padding, we never send any */
  {0, SPICE_MSGC_PONG, 12, 12, "PONG"},
  {0, SPICE_MSGC_DISCONNECTING, 12, 12, "DISCONNECTING"},
  {SPICE_CHANNEL_MAIN, SPICE_MSGC_MAIN_ATTACH_CHANNELS, 0, 0,
      "ATTACH_CHANNELS"},
  {SPICE_CHANNEL_MAIN, SPICE_MSGC_MAIN_MOUSE_MODE_REQUEST, 2, 2,
      "MOUSE_MODE_REQUEST"},
  {SPICE_CHANNEL_MAIN, SPICE_MSGC_MAIN_CLIENT_INFO, 8, 8,
      "CLIENT_INFO"},
  {SPICE_CHANNEL_DISPLAY, SPICE_MSGC_DISPLAY_INIT, 14, 14,
      "DISPLAY_INIT"},
  {SPICE_CHANNEL_DISPLAY, SPICE_MSGC_DISPLAY_STREAM_REPORT, 32, 32,
      "STREAM_REPORT"},
  {SPICE_CHANNEL_INPUTS, SPICE_MSGC_INPUTS_KEY_DOWN, 4, 4,
      "KEY_DOWN"},
  {SPICE_CHANNEL_INPUTS, SPICE_MSGC_INPUTS_KEY_UP, 4, 4, "KEY_UP"},
  {SPICE_CHANNEL_INPUTS, SPICE_MSGC_INPUTS_KEY_MODIFIERS, 2, 2,
      "KEY_MODIFIERS"},
  {SPICE_CHANNEL_INPUTS, SPICE_MSGC_INPUTS_KEY_SCANCODE, 1, 16,
      "KEY_SCANCODE"},
  {SPICE_CHANNEL_INPUTS, SPICE_MSGC_INPUTS_MOUSE_MOTION, 10, 10,
      "MOUSE_MOTION"},
  {SPICE_CHANNEL_INPUTS, SPICE_MSGC_INPUTS_MOUSE_POSITION, 11, 11,
      "MOUSE_POSITION"},
  {SPICE_CHANNEL_INPUTS, SPICE_MSGC_INPUTS_MOUSE_PRESS, 3, 3,
      "MOUSE_PRESS"},
  {SPICE_CHANNEL_INPUTS, SPICE_MSGC_INPUTS_MOUSE_RELEASE, 3, 3,
      "MOUSE_RELEASE"},
};

static const MsgLimit *
find_limit (guint8 channel_type, guint16 type)
{
  guint i;

  for (i = 0; i < G_N_ELEMENTS (client_limits); i++) {
    const MsgLimit *l = &client_limits[i];

    if (l->type == type && (l->channel == 0 || l->channel == channel_type) &&
        (l->channel != 0 || type < 100))
      return l;
  }
  return NULL;
}

gboolean
gst_spice_wire_client_msg_limits (guint8 channel_type, guint16 type,
    guint32 * min_size, guint32 * max_size)
{
  const MsgLimit *l = find_limit (channel_type, type);

  if (!l)
    return FALSE;
  if (min_size)
    *min_size = l->min;
  if (max_size)
    *max_size = l->max;
  return TRUE;
}

const gchar *
gst_spice_wire_client_msg_name (guint8 channel_type, guint16 type)
{
  const MsgLimit *l = find_limit (channel_type, type);

  return l ? l->name : "unknown";
}

/* ------------------------------------------- server -> client bodies */

void
gst_spice_wire_write_ping (GByteArray * a, guint32 id, guint64 timestamp)
{
  gst_spice_put_u32 (a, id);
  gst_spice_put_u64 (a, timestamp);
}

void
gst_spice_wire_write_main_init (GByteArray * a, guint32 session_id,
    guint32 supported_mouse_modes, guint32 current_mouse_mode, guint32 mm_time)
{
  gst_spice_put_u32 (a, session_id);
  gst_spice_put_u32 (a, 1);     /* display_channels_hint */
  gst_spice_put_u32 (a, supported_mouse_modes);
  gst_spice_put_u32 (a, current_mouse_mode);
  gst_spice_put_u32 (a, 0);     /* agent_connected */
  gst_spice_put_u32 (a, 0);     /* agent_tokens */
  gst_spice_put_u32 (a, mm_time);
  gst_spice_put_u32 (a, 0);     /* ram_hint */
}

void
gst_spice_wire_write_channels_list (GByteArray * a, guint n,
    const guint8 * types, const guint8 * ids)
{
  guint i;

  gst_spice_put_u32 (a, n);
  for (i = 0; i < n; i++) {
    gst_spice_put_u8 (a, types[i]);
    gst_spice_put_u8 (a, ids[i]);
  }
}

void
gst_spice_wire_write_mouse_mode (GByteArray * a, guint16 supported,
    guint16 current)
{
  gst_spice_put_u16 (a, supported);
  gst_spice_put_u16 (a, current);
}

void
gst_spice_wire_write_mm_time (GByteArray * a, guint32 mm_time)
{
  gst_spice_put_u32 (a, mm_time);
}

void
gst_spice_wire_write_surface_create (GByteArray * a, guint32 surface_id,
    guint32 width, guint32 height, guint32 format, guint32 flags)
{
  gst_spice_put_u32 (a, surface_id);
  gst_spice_put_u32 (a, width);
  gst_spice_put_u32 (a, height);
  gst_spice_put_u32 (a, format);
  gst_spice_put_u32 (a, flags);
}

void
gst_spice_wire_write_surface_destroy (GByteArray * a, guint32 surface_id)
{
  gst_spice_put_u32 (a, surface_id);
}

#define ROPD_OP_PUT 8

void
gst_spice_wire_write_draw_copy_head (GByteArray * a, guint32 surface_id,
    const GstVideoRectangle * dest, guint8 image_type, guint8 image_flags)
{
  GstVideoRectangle src = { 0, 0, dest->w, dest->h };
  guint start = a->len;

  /* DisplayBase */
  gst_spice_put_u32 (a, surface_id);
  gst_spice_put_rect (a, dest);
  gst_spice_put_u8 (a, 0);      /* clip NONE */
  /* Copy */
  gst_spice_put_u32 (a, 57);    /* src_bitmap: offset of the image */
  gst_spice_put_rect (a, &src);
  gst_spice_put_u16 (a, ROPD_OP_PUT);
  gst_spice_put_u8 (a, 1);      /* scale_mode NEAREST (sizes are equal) */
  gst_spice_put_u8 (a, 0);      /* mask flags */
  gst_spice_put_u32 (a, 0);     /* mask pos */
  gst_spice_put_u32 (a, 0);
  gst_spice_put_u32 (a, 0);     /* mask bitmap: none */
  /* SpiceImageDescriptor */
  gst_spice_put_u64 (a, 0);
  gst_spice_put_u8 (a, image_type);
  gst_spice_put_u8 (a, image_flags);
  gst_spice_put_u32 (a, (guint32) dest->w);
  gst_spice_put_u32 (a, (guint32) dest->h);
  g_assert (a->len - start == GST_SPICE_WIRE_DRAW_COPY_HEAD_SIZE);
}

void
gst_spice_wire_write_copy_bits (GByteArray * a, guint32 surface_id,
    const GstVideoRectangle * dest, gint32 src_x, gint32 src_y)
{
  guint start = a->len;

  gst_spice_put_u32 (a, surface_id);
  gst_spice_put_rect (a, dest);
  gst_spice_put_u8 (a, 0);      /* clip NONE */
  gst_spice_put_u32 (a, (guint32) src_x);
  gst_spice_put_u32 (a, (guint32) src_y);
  g_assert (a->len - start == GST_SPICE_WIRE_COPY_BITS_SIZE);
}

void
gst_spice_wire_write_stream_create (GByteArray * a, guint32 surface_id,
    guint32 id, guint8 codec, guint8 flags, guint32 width, guint32 height,
    const GstVideoRectangle * dest)
{
  gst_spice_put_u32 (a, surface_id);
  gst_spice_put_u32 (a, id);
  gst_spice_put_u8 (a, flags);
  gst_spice_put_u8 (a, codec);
  gst_spice_put_u64 (a, 0);     /* stamp */
  gst_spice_put_u32 (a, width);
  gst_spice_put_u32 (a, height);
  gst_spice_put_u32 (a, width);
  gst_spice_put_u32 (a, height);
  gst_spice_put_rect (a, dest);
  gst_spice_put_u8 (a, 0);      /* clip NONE */
}

void
gst_spice_wire_write_stream_data_head (GByteArray * a, guint32 id,
    guint32 mm_time, guint32 data_size)
{
  gst_spice_put_u32 (a, id);
  gst_spice_put_u32 (a, mm_time);
  gst_spice_put_u32 (a, data_size);
}

void
gst_spice_wire_write_stream_destroy (GByteArray * a, guint32 id)
{
  gst_spice_put_u32 (a, id);
}

void
gst_spice_wire_write_stream_activate_report (GByteArray * a,
    guint32 stream_id, guint32 unique_id, guint32 max_window,
    guint32 timeout_ms)
{
  gst_spice_put_u32 (a, stream_id);
  gst_spice_put_u32 (a, unique_id);
  gst_spice_put_u32 (a, max_window);
  gst_spice_put_u32 (a, timeout_ms);
}

void
gst_spice_wire_write_inputs_init (GByteArray * a, guint16 modifiers)
{
  gst_spice_put_u16 (a, modifiers);
}

void
gst_spice_wire_write_key_modifiers (GByteArray * a, guint16 modifiers)
{
  gst_spice_put_u16 (a, modifiers);
}

#define CURSOR_FLAGS_NONE 1
#define CURSOR_TYPE_ALPHA 0

static void
write_cursor (GByteArray * a, gboolean has_shape, guint64 unique,
    guint16 width, guint16 height, guint16 hot_x, guint16 hot_y)
{
  if (!has_shape) {
    gst_spice_put_u16 (a, CURSOR_FLAGS_NONE);
    return;
  }
  gst_spice_put_u16 (a, 0);
  gst_spice_put_u64 (a, unique);
  gst_spice_put_u8 (a, CURSOR_TYPE_ALPHA);
  gst_spice_put_u16 (a, width);
  gst_spice_put_u16 (a, height);
  gst_spice_put_u16 (a, MIN (hot_x, width ? width - 1 : 0));
  gst_spice_put_u16 (a, MIN (hot_y, height ? height - 1 : 0));
}

void
gst_spice_wire_write_cursor_init_head (GByteArray * a, gint16 x, gint16 y,
    gboolean visible, gboolean has_shape, guint64 unique, guint16 width,
    guint16 height, guint16 hot_x, guint16 hot_y)
{
  gst_spice_put_u16 (a, (guint16) x);
  gst_spice_put_u16 (a, (guint16) y);
  gst_spice_put_u16 (a, 0);     /* trail length */
  gst_spice_put_u16 (a, 0);     /* trail frequency */
  gst_spice_put_u8 (a, visible ? 1 : 0);
  write_cursor (a, has_shape, unique, width, height, hot_x, hot_y);
}

void
gst_spice_wire_write_cursor_set_head (GByteArray * a, gint16 x, gint16 y,
    gboolean visible, gboolean has_shape, guint64 unique, guint16 width,
    guint16 height, guint16 hot_x, guint16 hot_y)
{
  gst_spice_put_u16 (a, (guint16) x);
  gst_spice_put_u16 (a, (guint16) y);
  gst_spice_put_u8 (a, visible ? 1 : 0);
  write_cursor (a, has_shape, unique, width, height, hot_x, hot_y);
}

void
gst_spice_wire_write_cursor_move (GByteArray * a, gint16 x, gint16 y)
{
  gst_spice_put_u16 (a, (guint16) x);
  gst_spice_put_u16 (a, (guint16) y);
}

/* ------------------------------------------- client -> server parsers */

#define EXACT(n) do { if (!data || size != (n)) return FALSE; } while (0)

gboolean
gst_spice_wire_parse_pong (const guint8 * data, gsize size, guint32 * id,
    guint64 * timestamp)
{
  if (!data || size < 12)
    return FALSE;
  *id = GST_READ_UINT32_LE (data);
  *timestamp = GST_READ_UINT64_LE (data + 4);
  return TRUE;
}

gboolean
gst_spice_wire_parse_ack_sync (const guint8 * data, gsize size,
    guint32 * generation)
{
  EXACT (4);
  *generation = GST_READ_UINT32_LE (data);
  return TRUE;
}

gboolean
gst_spice_wire_parse_mouse_mode_request (const guint8 * data, gsize size,
    guint16 * mode)
{
  EXACT (2);
  *mode = GST_READ_UINT16_LE (data);
  return TRUE;
}

gboolean
gst_spice_wire_parse_display_init (const guint8 * data, gsize size)
{
  EXACT (14);
  return TRUE;
}

gboolean
gst_spice_wire_parse_stream_report (const guint8 * data, gsize size,
    GstSpiceStreamReport * out)
{
  EXACT (32);
  out->stream_id = GST_READ_UINT32_LE (data);
  out->unique_id = GST_READ_UINT32_LE (data + 4);
  out->start_frame_mm_time = GST_READ_UINT32_LE (data + 8);
  out->end_frame_mm_time = GST_READ_UINT32_LE (data + 12);
  out->num_frames = GST_READ_UINT32_LE (data + 16);
  out->num_drops = GST_READ_UINT32_LE (data + 20);
  out->last_frame_delay = (gint32) GST_READ_UINT32_LE (data + 24);
  out->audio_delay = GST_READ_UINT32_LE (data + 28);
  return out->stream_id < GST_SPICE_WIRE_MAX_STREAMS;
}

gboolean
gst_spice_wire_parse_key (const guint8 * data, gsize size, guint32 * code)
{
  EXACT (4);
  *code = GST_READ_UINT32_LE (data);
  return TRUE;
}

gboolean
gst_spice_wire_parse_key_modifiers (const guint8 * data, gsize size,
    guint16 * modifiers)
{
  EXACT (2);
  *modifiers = GST_READ_UINT16_LE (data);
  return TRUE;
}

gboolean
gst_spice_wire_parse_mouse_position (const guint8 * data, gsize size,
    guint32 * x, guint32 * y, guint16 * buttons, guint8 * display_id)
{
  EXACT (11);
  *x = GST_READ_UINT32_LE (data);
  *y = GST_READ_UINT32_LE (data + 4);
  *buttons = GST_READ_UINT16_LE (data + 8);
  *display_id = data[10];
  return TRUE;
}

gboolean
gst_spice_wire_parse_mouse_motion (const guint8 * data, gsize size,
    gint32 * dx, gint32 * dy, guint16 * buttons)
{
  EXACT (10);
  *dx = (gint32) GST_READ_UINT32_LE (data);
  *dy = (gint32) GST_READ_UINT32_LE (data + 4);
  *buttons = GST_READ_UINT16_LE (data + 8);
  return TRUE;
}

gboolean
gst_spice_wire_parse_mouse_button (const guint8 * data, gsize size,
    guint8 * button, guint16 * buttons)
{
  EXACT (3);
  *button = data[0];
  *buttons = GST_READ_UINT16_LE (data + 1);
  return *button >= 1 && *button <= 7;
}

gint
gst_spice_wire_decode_key_bytes (const guint8 * bytes, gsize n,
    GstSpiceKeyEvent * out, guint max)
{
  gsize i = 0;
  guint count = 0;

  while (i < n) {
    guint sc;
    guint8 b = bytes[i];

    if (b == 0)
      break;                    /* u32 codes end at the first zero byte */
    if (b == 0xe0) {
      if (i + 1 >= n || bytes[i + 1] == 0 || bytes[i + 1] == 0xe0)
        return -1;
      b = bytes[i + 1];
      sc = 0x100 | (b & 0x7f);
      i += 2;
    } else if (b == 0xe1) {
      return -1;                /* Pause/Break sequences: not supported */
    } else {
      sc = b & 0x7f;
      i += 1;
    }
    if (count >= max)
      return -1;
    out[count].scancode = sc;
    out[count].release = (b & 0x80) != 0;
    count++;
  }
  return (gint) count;
}

gint
gst_spice_wire_decode_key_code (guint32 code, GstSpiceKeyEvent * out, guint max)
{
  guint8 b[4];

  GST_WRITE_UINT32_LE (b, code);
  return gst_spice_wire_decode_key_bytes (b, 4, out, max);
}

guint32
gst_spice_wire_encode_key_code (guint scancode, gboolean release)
{
  guint8 code = (scancode & 0x7f) | (release ? 0x80 : 0);

  if (scancode & 0x100)
    return 0xe0 | ((guint32) code << 8);
  return code;
}

/* ------------------------------- server -> client parsers (client side) */

gboolean
gst_spice_wire_parse_main_init (const guint8 * data, gsize size,
    GstSpiceMainInit * out)
{
  Rd r;

  EXACT (32);
  rd_init (&r, data, size);
  out->session_id = rd_u32 (&r);
  out->display_channels_hint = rd_u32 (&r);
  out->supported_mouse_modes = rd_u32 (&r);
  out->current_mouse_mode = rd_u32 (&r);
  out->agent_connected = rd_u32 (&r);
  out->agent_tokens = rd_u32 (&r);
  out->multi_media_time = rd_u32 (&r);
  out->ram_hint = rd_u32 (&r);
  return r.ok;
}

gint
gst_spice_wire_parse_channels_list (const guint8 * data, gsize size,
    guint8 * types, guint8 * ids, guint max)
{
  Rd r;
  guint32 n, i;

  rd_init (&r, data, size);
  n = rd_u32 (&r);
  if (!r.ok || n > max || size != 4 + 2 * (gsize) n)
    return -1;
  for (i = 0; i < n; i++) {
    types[i] = rd_u8 (&r);
    ids[i] = rd_u8 (&r);
  }
  return r.ok ? (gint) n : -1;
}

gboolean
gst_spice_wire_parse_surface_create (const guint8 * data, gsize size,
    guint32 * surface_id, guint32 * width, guint32 * height, guint32 * format,
    guint32 * flags)
{
  EXACT (20);
  *surface_id = GST_READ_UINT32_LE (data);
  *width = GST_READ_UINT32_LE (data + 4);
  *height = GST_READ_UINT32_LE (data + 8);
  *format = GST_READ_UINT32_LE (data + 12);
  *flags = GST_READ_UINT32_LE (data + 16);
  return TRUE;
}

gboolean
gst_spice_wire_parse_draw_copy (const guint8 * data, gsize size,
    GstSpiceDrawCopy * out)
{
  Rd r;
  guint8 clip;
  guint32 src_bitmap, mask_bitmap;

  memset (out, 0, sizeof (*out));
  rd_init (&r, data, size);
  out->surface_id = rd_u32 (&r);
  if (!rd_rect (&r, &out->box))
    return FALSE;
  clip = rd_u8 (&r);
  if (clip == 1) {
    guint32 n = rd_u32 (&r);

    if (!r.ok || n > r.left / 16)
      return FALSE;
    rd_take (&r, (gsize) n * 16);
  } else if (clip != 0) {
    return FALSE;
  }
  src_bitmap = rd_u32 (&r);
  if (!rd_rect (&r, &out->src_area))
    return FALSE;
  out->rop = rd_u16 (&r);
  rd_u8 (&r);                   /* scale mode */
  rd_u8 (&r);                   /* mask flags */
  rd_u32 (&r);
  rd_u32 (&r);
  mask_bitmap = rd_u32 (&r);
  if (!r.ok || mask_bitmap != 0 || src_bitmap == 0 ||
      src_bitmap > size || size - src_bitmap < 18)
    return FALSE;
  rd_init (&r, data + src_bitmap, size - src_bitmap);
  rd_u64 (&r);
  out->image_type = rd_u8 (&r);
  out->image_flags = rd_u8 (&r);
  out->image_width = rd_u32 (&r);
  out->image_height = rd_u32 (&r);
  if (!r.ok)
    return FALSE;
  out->payload = r.p;
  out->payload_size = r.left;
  return TRUE;
}

gboolean
gst_spice_wire_parse_stream_create (const guint8 * data, gsize size,
    GstSpiceStreamCreate * out)
{
  Rd r;

  memset (out, 0, sizeof (*out));
  rd_init (&r, data, size);
  out->surface_id = rd_u32 (&r);
  out->id = rd_u32 (&r);
  out->flags = rd_u8 (&r);
  out->codec = rd_u8 (&r);
  rd_u64 (&r);
  out->width = rd_u32 (&r);
  out->height = rd_u32 (&r);
  rd_u32 (&r);
  rd_u32 (&r);
  if (!rd_rect (&r, &out->dest))
    return FALSE;
  if (rd_u8 (&r) != 0)
    return FALSE;               /* we only ever send clip NONE */
  return r.ok && r.left == 0 && out->id < GST_SPICE_WIRE_MAX_STREAMS;
}

gboolean
gst_spice_wire_parse_stream_data (const guint8 * data, gsize size,
    guint32 * id, guint32 * mm_time, const guint8 ** frame, gsize * frame_size)
{
  guint32 n;

  if (!data || size < 12)
    return FALSE;
  *id = GST_READ_UINT32_LE (data);
  *mm_time = GST_READ_UINT32_LE (data + 4);
  n = GST_READ_UINT32_LE (data + 8);
  if (n != size - 12)
    return FALSE;
  *frame = data + 12;
  *frame_size = n;
  return TRUE;
}

/* ------------------------------------------- client -> server writers */

void
gst_spice_wire_write_mouse_position (GByteArray * a, guint32 x, guint32 y,
    guint16 buttons, guint8 display_id)
{
  gst_spice_put_u32 (a, x);
  gst_spice_put_u32 (a, y);
  gst_spice_put_u16 (a, buttons);
  gst_spice_put_u8 (a, display_id);
}

void
gst_spice_wire_write_u32_body (GByteArray * a, guint32 v)
{
  gst_spice_put_u32 (a, v);
}
