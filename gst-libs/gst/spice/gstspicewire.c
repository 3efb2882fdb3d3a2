/* gst-spice: SPICE wire format (see gstspicewire.h)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Layouts follow the project's protocol note (shared/design/spice-protocol.md):
 * all integers little-endian, structures packed, Rect = top, left, bottom,
 * right, pointers are u32 offsets from the start of the message body. The
 * link stage and the data headers are spice-protocol's packed structs
 * (<spice/protocol.h>): their sizes are sizeof and G_STRUCT_OFFSET of those.
 *
 * Writers: every body has a size known before it is written; the
 * GByteArray grows once and a fixed GstByteWriter fills the new bytes,
 * which wire_close() checks were filled exactly. Parsers: a GstByteReader
 * over (data, size), so no read can leave it.
 */
#include <string.h>
#include <gst/gst.h>
#include <gst/base/gstbytereader.h>
#include <gst/base/gstbytewriter.h>
#include <spice/vd_agent.h>

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

/* ------------------------------------------------------------- writers */

#define RECT_SIZE 16            /* SpiceRect: i32 top, left, bottom, right */
#define CLIP_NONE_SIZE 1        /* SpiceClip type NONE */
#define IMAGE_DESCRIPTOR_SIZE 18        /* u64 id, u8 type, u8 flags, u32 w, h */

/* Appends @size bytes to @a and points @w at them. */
static void
wire_open (GstByteWriter * w, GByteArray * a, gsize size)
{
  guint start = a->len;

  g_byte_array_set_size (a, start + size);
  gst_byte_writer_init_with_data (w, a->data + start, size, FALSE);
}

/* The layout written must fill what wire_open() reserved. */
static void
wire_close (GstByteWriter * w)
{
  g_assert (gst_byte_writer_get_remaining (w) == 0);
}

static void
write_rect (GstByteWriter * w, const GstVideoRectangle * r)
{
  gst_byte_writer_put_int32_le (w, r->y);
  gst_byte_writer_put_int32_le (w, r->x);
  gst_byte_writer_put_int32_le (w, r->y + r->h);
  gst_byte_writer_put_int32_le (w, r->x + r->w);
}

/* gst_spice_put_u8 () ... gst_spice_put_u64 (): one integer each */
#define DEFINE_PUT_INT(name, type, bytes, writer_put) \
void \
gst_spice_put_##name (GByteArray * a, type v) \
{ \
  GstByteWriter w; \
  \
  wire_open (&w, a, bytes); \
  writer_put (&w, v); \
  wire_close (&w); \
}

DEFINE_PUT_INT (u8, guint8, 1, gst_byte_writer_put_uint8);
DEFINE_PUT_INT (u16, guint16, 2, gst_byte_writer_put_uint16_le);
DEFINE_PUT_INT (u32, guint32, 4, gst_byte_writer_put_uint32_le);
DEFINE_PUT_INT (u64, guint64, 8, gst_byte_writer_put_uint64_le);

void
gst_spice_put_rect (GByteArray * a, const GstVideoRectangle * r)
{
  GstByteWriter w;

  wire_open (&w, a, RECT_SIZE);
  write_rect (&w, r);
  wire_close (&w);
}

void
gst_spice_put_bytes (GByteArray * a, const guint8 * data, gsize size)
{
  if (size)
    g_byte_array_append (a, data, size);
}

/* ------------------------------------------------------------- readers */

/* FALSE for (NULL, size > 0) and for sizes a GstByteReader cannot hold;
 * the reader is then empty. */
static gboolean
wire_reader_init (GstByteReader * r, const guint8 * data, gsize size)
{
  gboolean ok = (data != NULL || size == 0) && size <= G_MAXUINT;

  gst_byte_reader_init (r, data, ok ? (guint) size : 0);
  return ok;
}

/* Reads @n u32 words into @out. */
static gboolean
read_words (GstByteReader * r, guint32 * out, guint n)
{
  guint i;

  for (i = 0; i < n; i++)
    if (!gst_byte_reader_get_uint32_le (r, &out[i]))
      return FALSE;
  return TRUE;
}

/* ----------------------------------------------------------- link stage */

gboolean
gst_spice_wire_parse_link_header (const guint8 * data, gsize size,
    guint32 min_size, GstSpiceLinkHeader * out, guint32 * error)
{
  GstByteReader r;
  guint32 err = SPICE_LINK_ERR_INVALID_DATA;

  memset (out, 0, sizeof (*out));
  if (!wire_reader_init (&r, data, size) ||
      gst_byte_reader_get_remaining (&r) < sizeof (SpiceLinkHeader))
    goto fail;
  out->magic = gst_byte_reader_get_uint32_le_unchecked (&r);
  out->major = gst_byte_reader_get_uint32_le_unchecked (&r);
  out->minor = gst_byte_reader_get_uint32_le_unchecked (&r);
  out->size = gst_byte_reader_get_uint32_le_unchecked (&r);
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

static void
write_link_header (GstByteWriter * w, guint32 size)
{
  gst_byte_writer_put_uint32_le (w, SPICE_MAGIC);
  gst_byte_writer_put_uint32_le (w, SPICE_VERSION_MAJOR);
  gst_byte_writer_put_uint32_le (w, SPICE_VERSION_MINOR);
  gst_byte_writer_put_uint32_le (w, size);
}

/* caps arrays shared by link message and reply: @r reads the structure
 * that caps_offset is relative to */
static gboolean
read_caps (GstByteReader * r, guint32 caps_offset, guint32 n_common,
    guint32 n_channel, guint32 * common, guint32 * channel)
{
  if (n_common > GST_SPICE_WIRE_MAX_CAPS_WORDS ||
      n_channel > GST_SPICE_WIRE_MAX_CAPS_WORDS)
    return FALSE;
  return gst_byte_reader_set_pos (r, caps_offset) &&
      read_words (r, common, n_common) && read_words (r, channel, n_channel);
}

gboolean
gst_spice_wire_parse_link_mess (const guint8 * data, gsize size,
    GstSpiceLinkMess * out)
{
  GstByteReader r;
  guint32 n_common, n_channel, caps_offset;

  memset (out, 0, sizeof (*out));
  if (!wire_reader_init (&r, data, size) ||
      gst_byte_reader_get_remaining (&r) < sizeof (SpiceLinkMess))
    return FALSE;
  out->connection_id = gst_byte_reader_get_uint32_le_unchecked (&r);
  out->channel_type = gst_byte_reader_get_uint8_unchecked (&r);
  out->channel_id = gst_byte_reader_get_uint8_unchecked (&r);
  n_common = gst_byte_reader_get_uint32_le_unchecked (&r);
  n_channel = gst_byte_reader_get_uint32_le_unchecked (&r);
  caps_offset = gst_byte_reader_get_uint32_le_unchecked (&r);
  if (caps_offset < sizeof (SpiceLinkMess) ||
      !read_caps (&r, caps_offset, n_common, n_channel, out->common_caps,
          out->channel_caps))
    return FALSE;
  out->n_common = n_common;
  out->n_channel = n_channel;
  return TRUE;
}

void
gst_spice_wire_write_link_reply (GByteArray * a, guint32 error,
    const guint8 * pub_key, const guint32 * common, guint n_common,
    const guint32 * channel, guint n_channel)
{
  GstByteWriter w;
  gsize size = sizeof (SpiceLinkReply) + 4 * (n_common + n_channel);
  guint i;

  wire_open (&w, a, sizeof (SpiceLinkHeader) + size);
  write_link_header (&w, size);
  gst_byte_writer_put_uint32_le (&w, error);
  if (pub_key)
    gst_byte_writer_put_data (&w, pub_key, SPICE_TICKET_PUBKEY_BYTES);
  else
    gst_byte_writer_fill (&w, 0, SPICE_TICKET_PUBKEY_BYTES);
  gst_byte_writer_put_uint32_le (&w, n_common);
  gst_byte_writer_put_uint32_le (&w, n_channel);
  gst_byte_writer_put_uint32_le (&w, sizeof (SpiceLinkReply));
  for (i = 0; i < n_common; i++)
    gst_byte_writer_put_uint32_le (&w, common[i]);
  for (i = 0; i < n_channel; i++)
    gst_byte_writer_put_uint32_le (&w, channel[i]);
  wire_close (&w);
}

/* ------------------------------------------------------------- headers */

void
gst_spice_wire_put_header (guint8 * out, gboolean mini, guint64 serial,
    guint16 type, guint32 size)
{
  GstByteWriter w;

  gst_byte_writer_init_with_data (&w, out, gst_spice_wire_header_size (mini),
      FALSE);
  if (!mini)
    gst_byte_writer_put_uint64_le (&w, serial);
  gst_byte_writer_put_uint16_le (&w, type);
  gst_byte_writer_put_uint32_le (&w, size);
  if (!mini)
    gst_byte_writer_put_uint32_le (&w, 0);      /* sub_list */
  wire_close (&w);
}

gboolean
gst_spice_wire_parse_header (const guint8 * data, gsize size, gboolean mini,
    GstSpiceMsgHeader * out)
{
  GstByteReader r;
  guint32 sub_list = 0;

  memset (out, 0, sizeof (*out));
  if (!wire_reader_init (&r, data, size) ||
      gst_byte_reader_get_remaining (&r) < gst_spice_wire_header_size (mini))
    return FALSE;
  if (!mini)
    out->serial = gst_byte_reader_get_uint64_le_unchecked (&r);
  out->type = gst_byte_reader_get_uint16_le_unchecked (&r);
  out->size = gst_byte_reader_get_uint32_le_unchecked (&r);
  if (!mini)
    sub_list = gst_byte_reader_get_uint32_le_unchecked (&r);
  return sub_list == 0;         /* sub-message lists: never used by clients */
}

/* --------------------------------------------- client message limits */

typedef struct
{
  guint8 channel;               /* 0 = any channel */
  guint16 type;
  guint32 min, max;
  const gchar *name;
} MsgLimit;

/* Every client message spice.proto defines for the channels the sink
 * serves, also those it does not act on (migration, preferences, quality
 * indicator): a valid message is never a reason to close; the limits of
 * opaque bodies are generous bounds, not the protocol's. */
static const MsgLimit client_limits[] = {
  {0, SPICE_MSGC_ACK_SYNC, 4, 4, "ACK_SYNC"},
  {0, SPICE_MSGC_ACK, 0, 0, "ACK"},
  /* PONG echoes PING; a client may echo padding, we never send any */
  {0, SPICE_MSGC_PONG, 12, 12, "PONG"},
  {0, SPICE_MSGC_MIGRATE_FLUSH_MARK, 0, 0, "MIGRATE_FLUSH_MARK"},
  {0, SPICE_MSGC_MIGRATE_DATA, 0, 65536, "MIGRATE_DATA"},
  {0, SPICE_MSGC_DISCONNECTING, 12, 12, "DISCONNECTING"},
  {SPICE_CHANNEL_MAIN, SPICE_MSGC_MAIN_MIGRATE_CONNECTED, 0, 0,
      "MIGRATE_CONNECTED"},
  {SPICE_CHANNEL_MAIN, SPICE_MSGC_MAIN_MIGRATE_CONNECT_ERROR, 0, 0,
      "MIGRATE_CONNECT_ERROR"},
  {SPICE_CHANNEL_MAIN, SPICE_MSGC_MAIN_MIGRATE_END, 0, 0, "MIGRATE_END"},
  {SPICE_CHANNEL_MAIN, SPICE_MSGC_MAIN_MIGRATE_DST_DO_SEAMLESS, 4, 4,
      "MIGRATE_DST_DO_SEAMLESS"},
  {SPICE_CHANNEL_MAIN, SPICE_MSGC_MAIN_MIGRATE_CONNECTED_SEAMLESS, 0, 0,
      "MIGRATE_CONNECTED_SEAMLESS"},
  {SPICE_CHANNEL_MAIN, SPICE_MSGC_MAIN_QUALITY_INDICATOR, 0, 4096,
      "QUALITY_INDICATOR"},
  {SPICE_CHANNEL_MAIN, SPICE_MSGC_MAIN_ATTACH_CHANNELS, 0, 0,
      "ATTACH_CHANNELS"},
  {SPICE_CHANNEL_MAIN, SPICE_MSGC_MAIN_MOUSE_MODE_REQUEST, 2, 2,
      "MOUSE_MODE_REQUEST"},
  {SPICE_CHANNEL_MAIN, SPICE_MSGC_MAIN_CLIENT_INFO, 8, 8,
      "CLIENT_INFO"},
  {SPICE_CHANNEL_MAIN, SPICE_MSGC_MAIN_AGENT_START, 4, 4, "AGENT_START"},
  /* one chunk of the VDAgentMessage stream (<spice/vd_agent.h>) */
  {SPICE_CHANNEL_MAIN, SPICE_MSGC_MAIN_AGENT_DATA, 1, VD_AGENT_MAX_DATA_SIZE,
      "AGENT_DATA"},
  {SPICE_CHANNEL_MAIN, SPICE_MSGC_MAIN_AGENT_TOKEN, 4, 4, "AGENT_TOKEN"},
  {SPICE_CHANNEL_DISPLAY, SPICE_MSGC_DISPLAY_INIT, 14, 14,
      "DISPLAY_INIT"},
  {SPICE_CHANNEL_DISPLAY, SPICE_MSGC_DISPLAY_STREAM_REPORT, 32, 32,
      "STREAM_REPORT"},
  /* u8 SpiceImageCompression */
  {SPICE_CHANNEL_DISPLAY, SPICE_MSGC_DISPLAY_PREFERRED_COMPRESSION, 1, 1,
      "PREFERRED_COMPRESSION"},
  {SPICE_CHANNEL_DISPLAY, SPICE_MSGC_DISPLAY_GL_DRAW_DONE, 0, 0,
      "GL_DRAW_DONE"},
  /* u8 count, then count u8 SpiceVideoCodecType */
  {SPICE_CHANNEL_DISPLAY, SPICE_MSGC_DISPLAY_PREFERRED_VIDEO_CODEC_TYPE, 1,
      1 + 255, "PREFERRED_VIDEO_CODEC_TYPE"},
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
  /* record: raw samples (at most 64 KiB a message), mode, start mark */
  {SPICE_CHANNEL_RECORD, SPICE_MSGC_RECORD_DATA, 4, 4 + 65536,
      "RECORD_DATA"},
  {SPICE_CHANNEL_RECORD, SPICE_MSGC_RECORD_MODE, 6, 6 + 4096, "RECORD_MODE"},
  {SPICE_CHANNEL_RECORD, SPICE_MSGC_RECORD_START_MARK, 4, 4,
      "RECORD_START_MARK"},
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

/* body sizes (spice.proto's message layouts) */
#define PING_SIZE 12            /* u32 id, u64 timestamp */
#define MAIN_INIT_SIZE 32       /* eight u32 */
#define SURFACE_CREATE_SIZE 20  /* u32 id, width, height, format, flags */
#define DISPLAY_BASE_SIZE (4 + RECT_SIZE + CLIP_NONE_SIZE)
/* Copy: u32 src_bitmap, Rect src_area, u16 rop, u8 scale_mode, QMask
 * (u8 flags, Point pos, u32 bitmap) */
#define COPY_SIZE (4 + RECT_SIZE + 2 + 1 + 1 + 8 + 4)
#define STREAM_CREATE_SIZE (4 + 4 + 1 + 1 + 8 + 4 * 4 + RECT_SIZE + \
    CLIP_NONE_SIZE)
#define STREAM_DATA_HEAD_SIZE 12        /* u32 id, mm time, data size */
#define STREAM_REPORT_SIZE 32   /* eight u32 */
/* CursorHeader: u64 unique, u8 type, u16 width, height, hot x, hot y */
#define CURSOR_HEADER_SIZE (8 + 1 + 4 * 2)

G_STATIC_ASSERT (DISPLAY_BASE_SIZE + COPY_SIZE + IMAGE_DESCRIPTOR_SIZE ==
    GST_SPICE_WIRE_DRAW_COPY_HEAD_SIZE);
G_STATIC_ASSERT (DISPLAY_BASE_SIZE + 8 == GST_SPICE_WIRE_COPY_BITS_SIZE);

void
gst_spice_wire_write_ping (GByteArray * a, guint32 id, guint64 timestamp)
{
  GstByteWriter w;

  wire_open (&w, a, PING_SIZE);
  gst_byte_writer_put_uint32_le (&w, id);
  gst_byte_writer_put_uint64_le (&w, timestamp);
  wire_close (&w);
}

void
gst_spice_wire_write_main_init (GByteArray * a, guint32 session_id,
    guint32 supported_mouse_modes, guint32 current_mouse_mode,
    guint32 agent_connected, guint32 agent_tokens, guint32 mm_time)
{
  GstByteWriter w;

  wire_open (&w, a, MAIN_INIT_SIZE);
  gst_byte_writer_put_uint32_le (&w, session_id);
  gst_byte_writer_put_uint32_le (&w, 1);        /* display_channels_hint */
  gst_byte_writer_put_uint32_le (&w, supported_mouse_modes);
  gst_byte_writer_put_uint32_le (&w, current_mouse_mode);
  gst_byte_writer_put_uint32_le (&w, agent_connected);
  gst_byte_writer_put_uint32_le (&w, agent_tokens);
  gst_byte_writer_put_uint32_le (&w, mm_time);
  gst_byte_writer_put_uint32_le (&w, 0);        /* ram_hint */
  wire_close (&w);
}

void
gst_spice_wire_write_channels_list (GByteArray * a, guint n,
    const guint8 * types, const guint8 * ids)
{
  GstByteWriter w;
  guint i;

  wire_open (&w, a, 4 + 2 * (gsize) n);
  gst_byte_writer_put_uint32_le (&w, n);
  for (i = 0; i < n; i++) {
    gst_byte_writer_put_uint8 (&w, types[i]);
    gst_byte_writer_put_uint8 (&w, ids[i]);
  }
  wire_close (&w);
}

void
gst_spice_wire_write_mouse_mode (GByteArray * a, guint16 supported,
    guint16 current)
{
  GstByteWriter w;

  wire_open (&w, a, 4);
  gst_byte_writer_put_uint16_le (&w, supported);
  gst_byte_writer_put_uint16_le (&w, current);
  wire_close (&w);
}

/* port, sport, then (size, offset) of host and of the certificate
 * subject; the strings follow, NUL included */
#define SWITCH_HOST_FIXED_SIZE 20

void
gst_spice_wire_write_switch_host (GByteArray * a, guint16 port,
    guint16 sport, const gchar * host, const gchar * cert_subject)
{
  GstByteWriter w;
  gsize host_size = strlen (host) + 1;
  gsize subject_size = cert_subject ? strlen (cert_subject) + 1 : 0;

  g_return_if_fail (a->len == 0);
  wire_open (&w, a, SWITCH_HOST_FIXED_SIZE + host_size + subject_size);
  gst_byte_writer_put_uint16_le (&w, port);
  gst_byte_writer_put_uint16_le (&w, sport);
  gst_byte_writer_put_uint32_le (&w, host_size);
  gst_byte_writer_put_uint32_le (&w, SWITCH_HOST_FIXED_SIZE);
  gst_byte_writer_put_uint32_le (&w, subject_size);
  /* offset 0 is no subject */
  gst_byte_writer_put_uint32_le (&w, subject_size ?
      SWITCH_HOST_FIXED_SIZE + host_size : 0);
  gst_byte_writer_put_data (&w, (const guint8 *) host, host_size);
  if (subject_size)
    gst_byte_writer_put_data (&w, (const guint8 *) cert_subject, subject_size);
  wire_close (&w);
}

void
gst_spice_wire_write_surface_create (GByteArray * a, guint32 surface_id,
    guint32 width, guint32 height, guint32 format, guint32 flags)
{
  GstByteWriter w;

  wire_open (&w, a, SURFACE_CREATE_SIZE);
  gst_byte_writer_put_uint32_le (&w, surface_id);
  gst_byte_writer_put_uint32_le (&w, width);
  gst_byte_writer_put_uint32_le (&w, height);
  gst_byte_writer_put_uint32_le (&w, format);
  gst_byte_writer_put_uint32_le (&w, flags);
  wire_close (&w);
}

void
gst_spice_wire_write_surface_destroy (GByteArray * a, guint32 surface_id)
{
  gst_spice_put_u32 (a, surface_id);
}

#define MONITORS_CONFIG_HEAD_SIZE 28

void
gst_spice_wire_write_monitors_config (GByteArray * a, guint32 surface_id,
    const GstSpiceHeads * m)
{
  GstByteWriter w;
  guint i, n = MIN (m->count, GST_SPICE_MAX_HEADS);

  wire_open (&w, a, 4 + n * MONITORS_CONFIG_HEAD_SIZE);
  gst_byte_writer_put_uint16_le (&w, n);
  gst_byte_writer_put_uint16_le (&w, MAX (m->max, n));
  for (i = 0; i < n; i++) {
    const GstSpiceHead *h = &m->monitors[i];

    gst_byte_writer_put_uint32_le (&w, h->id);
    gst_byte_writer_put_uint32_le (&w, surface_id);
    gst_byte_writer_put_uint32_le (&w, h->width);
    gst_byte_writer_put_uint32_le (&w, h->height);
    gst_byte_writer_put_uint32_le (&w, h->x);
    gst_byte_writer_put_uint32_le (&w, h->y);
    gst_byte_writer_put_uint32_le (&w, 0);
  }
  wire_close (&w);
}

/* DisplayBase: surface, box, clip NONE */
static void
write_display_base (GstByteWriter * w, guint32 surface_id,
    const GstVideoRectangle * box)
{
  gst_byte_writer_put_uint32_le (w, surface_id);
  write_rect (w, box);
  gst_byte_writer_put_uint8 (w, SPICE_CLIP_TYPE_NONE);
}

void
gst_spice_wire_write_draw_copy_head (GByteArray * a, guint32 surface_id,
    const GstVideoRectangle * dest, guint8 image_type, guint8 image_flags)
{
  GstVideoRectangle src = { 0, 0, dest->w, dest->h };
  GstByteWriter w;

  wire_open (&w, a, GST_SPICE_WIRE_DRAW_COPY_HEAD_SIZE);
  write_display_base (&w, surface_id, dest);
  /* Copy; the image descriptor follows it */
  gst_byte_writer_put_uint32_le (&w, DISPLAY_BASE_SIZE + COPY_SIZE);
  write_rect (&w, &src);
  gst_byte_writer_put_uint16_le (&w, SPICE_ROPD_OP_PUT);
  /* sizes are equal: no scaling */
  gst_byte_writer_put_uint8 (&w, SPICE_IMAGE_SCALE_MODE_NEAREST);
  gst_byte_writer_fill (&w, 0, 1 + 8 + 4);      /* no mask */
  /* SpiceImageDescriptor */
  gst_byte_writer_put_uint64_le (&w, 0);
  gst_byte_writer_put_uint8 (&w, image_type);
  gst_byte_writer_put_uint8 (&w, image_flags);
  gst_byte_writer_put_uint32_le (&w, (guint32) dest->w);
  gst_byte_writer_put_uint32_le (&w, (guint32) dest->h);
  wire_close (&w);
}

void
gst_spice_wire_write_copy_bits (GByteArray * a, guint32 surface_id,
    const GstVideoRectangle * dest, gint32 src_x, gint32 src_y)
{
  GstByteWriter w;

  wire_open (&w, a, GST_SPICE_WIRE_COPY_BITS_SIZE);
  write_display_base (&w, surface_id, dest);
  gst_byte_writer_put_int32_le (&w, src_x);
  gst_byte_writer_put_int32_le (&w, src_y);
  wire_close (&w);
}

void
gst_spice_wire_write_stream_create (GByteArray * a, guint32 surface_id,
    guint32 id, guint8 codec, guint8 flags, guint32 width, guint32 height,
    const GstVideoRectangle * dest)
{
  GstByteWriter w;

  wire_open (&w, a, STREAM_CREATE_SIZE);
  gst_byte_writer_put_uint32_le (&w, surface_id);
  gst_byte_writer_put_uint32_le (&w, id);
  gst_byte_writer_put_uint8 (&w, flags);
  gst_byte_writer_put_uint8 (&w, codec);
  gst_byte_writer_put_uint64_le (&w, 0);        /* stamp */
  gst_byte_writer_put_uint32_le (&w, width);    /* stream size */
  gst_byte_writer_put_uint32_le (&w, height);
  gst_byte_writer_put_uint32_le (&w, width);    /* source size */
  gst_byte_writer_put_uint32_le (&w, height);
  write_rect (&w, dest);
  gst_byte_writer_put_uint8 (&w, SPICE_CLIP_TYPE_NONE);
  wire_close (&w);
}

void
gst_spice_wire_write_stream_data_head (GByteArray * a, guint32 id,
    guint32 mm_time, guint32 data_size)
{
  GstByteWriter w;

  wire_open (&w, a, STREAM_DATA_HEAD_SIZE);
  gst_byte_writer_put_uint32_le (&w, id);
  gst_byte_writer_put_uint32_le (&w, mm_time);
  gst_byte_writer_put_uint32_le (&w, data_size);
  wire_close (&w);
}

void
gst_spice_wire_write_stream_destroy (GByteArray * a, guint32 id)
{
  gst_spice_put_u32 (a, id);
}

void
gst_spice_wire_write_stream_clip (GByteArray * a, guint32 id, gboolean hide)
{
  GstByteWriter w;

  /* id, clip type, and with RECTS their number */
  wire_open (&w, a, hide ? 4 + 1 + 4 : 4 + 1);
  gst_byte_writer_put_uint32_le (&w, id);
  if (hide) {
    gst_byte_writer_put_uint8 (&w, SPICE_CLIP_TYPE_RECTS);
    gst_byte_writer_put_uint32_le (&w, 0);      /* no rectangle */
  } else {
    gst_byte_writer_put_uint8 (&w, SPICE_CLIP_TYPE_NONE);
  }
  wire_close (&w);
}

void
gst_spice_wire_write_stream_activate_report (GByteArray * a,
    guint32 stream_id, guint32 unique_id, guint32 max_window,
    guint32 timeout_ms)
{
  GstByteWriter w;

  wire_open (&w, a, 16);
  gst_byte_writer_put_uint32_le (&w, stream_id);
  gst_byte_writer_put_uint32_le (&w, unique_id);
  gst_byte_writer_put_uint32_le (&w, max_window);
  gst_byte_writer_put_uint32_le (&w, timeout_ms);
  wire_close (&w);
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

/* CURSOR_INIT and CURSOR_SET: @position_size bytes of position (and
 * trail), u8 visible, then the cursor: u16 flags (NONE alone), or flags 0
 * and an ALPHA CursorHeader before the pixels the caller appends */
static void
write_cursor_head (GByteArray * a, gint16 x, gint16 y, gboolean with_trail,
    gboolean visible, gboolean has_shape, guint64 unique, guint16 width,
    guint16 height, guint16 hot_x, guint16 hot_y)
{
  GstByteWriter w;

  wire_open (&w, a, 4 + (with_trail ? 4 : 0) + 1 + 2 +
      (has_shape ? CURSOR_HEADER_SIZE : 0));
  gst_byte_writer_put_int16_le (&w, x);
  gst_byte_writer_put_int16_le (&w, y);
  if (with_trail) {
    gst_byte_writer_put_uint16_le (&w, 0);      /* trail length */
    gst_byte_writer_put_uint16_le (&w, 0);      /* trail frequency */
  }
  gst_byte_writer_put_uint8 (&w, visible ? 1 : 0);
  gst_byte_writer_put_uint16_le (&w, has_shape ? 0 : SPICE_CURSOR_FLAGS_NONE);
  if (has_shape) {
    gst_byte_writer_put_uint64_le (&w, unique);
    gst_byte_writer_put_uint8 (&w, SPICE_CURSOR_TYPE_ALPHA);
    gst_byte_writer_put_uint16_le (&w, width);
    gst_byte_writer_put_uint16_le (&w, height);
    gst_byte_writer_put_uint16_le (&w, MIN (hot_x, width ? width - 1 : 0));
    gst_byte_writer_put_uint16_le (&w, MIN (hot_y, height ? height - 1 : 0));
  }
  wire_close (&w);
}

void
gst_spice_wire_write_cursor_init_head (GByteArray * a, gint16 x, gint16 y,
    gboolean visible, gboolean has_shape, guint64 unique, guint16 width,
    guint16 height, guint16 hot_x, guint16 hot_y)
{
  write_cursor_head (a, x, y, TRUE, visible, has_shape, unique, width, height,
      hot_x, hot_y);
}

void
gst_spice_wire_write_cursor_set_head (GByteArray * a, gint16 x, gint16 y,
    gboolean visible, gboolean has_shape, guint64 unique, guint16 width,
    guint16 height, guint16 hot_x, guint16 hot_y)
{
  write_cursor_head (a, x, y, FALSE, visible, has_shape, unique, width,
      height, hot_x, hot_y);
}

void
gst_spice_wire_write_cursor_move (GByteArray * a, gint16 x, gint16 y)
{
  GstByteWriter w;

  wire_open (&w, a, 4);
  gst_byte_writer_put_int16_le (&w, x);
  gst_byte_writer_put_int16_le (&w, y);
  wire_close (&w);
}

/* ------------------------------------------- client -> server parsers */

/* A reader over a body that must be exactly @n bytes. */
static gboolean
exact_reader_init (GstByteReader * r, const guint8 * data, gsize size, gsize n)
{
  return data && size == n && wire_reader_init (r, data, size);
}

gboolean
gst_spice_wire_parse_pong (const guint8 * data, gsize size, guint32 * id,
    guint64 * timestamp)
{
  GstByteReader r;

  /* a PONG may carry what the PING carried after its fields */
  if (!data || !wire_reader_init (&r, data, size) ||
      gst_byte_reader_get_remaining (&r) < PING_SIZE)
    return FALSE;
  *id = gst_byte_reader_get_uint32_le_unchecked (&r);
  *timestamp = gst_byte_reader_get_uint64_le_unchecked (&r);
  return TRUE;
}

/* a body that is exactly one little-endian u32 / u16 */
static gboolean
parse_u32_body (const guint8 * data, gsize size, guint32 * v)
{
  GstByteReader r;

  return exact_reader_init (&r, data, size, 4) &&
      gst_byte_reader_get_uint32_le (&r, v);
}

static gboolean
parse_u16_body (const guint8 * data, gsize size, guint16 * v)
{
  GstByteReader r;

  return exact_reader_init (&r, data, size, 2) &&
      gst_byte_reader_get_uint16_le (&r, v);
}

gboolean
gst_spice_wire_parse_mouse_mode_request (const guint8 * data, gsize size,
    guint16 * mode)
{
  return parse_u16_body (data, size, mode);
}

gboolean
gst_spice_wire_parse_stream_report (const guint8 * data, gsize size,
    GstSpiceStreamReport * out)
{
  GstByteReader r;

  if (!exact_reader_init (&r, data, size, STREAM_REPORT_SIZE))
    return FALSE;
  out->stream_id = gst_byte_reader_get_uint32_le_unchecked (&r);
  out->unique_id = gst_byte_reader_get_uint32_le_unchecked (&r);
  out->start_frame_mm_time = gst_byte_reader_get_uint32_le_unchecked (&r);
  out->end_frame_mm_time = gst_byte_reader_get_uint32_le_unchecked (&r);
  out->num_frames = gst_byte_reader_get_uint32_le_unchecked (&r);
  out->num_drops = gst_byte_reader_get_uint32_le_unchecked (&r);
  out->last_frame_delay = gst_byte_reader_get_int32_le_unchecked (&r);
  out->audio_delay = gst_byte_reader_get_uint32_le_unchecked (&r);
  return out->stream_id < GST_SPICE_WIRE_MAX_STREAMS;
}

gboolean
gst_spice_wire_parse_preferred_video_codecs (const guint8 * data, gsize size,
    guint8 * codecs, guint max, guint * n)
{
  GstByteReader r;
  guint8 count;
  const guint8 *list;

  if (!wire_reader_init (&r, data, size) ||
      !gst_byte_reader_get_uint8 (&r, &count) ||
      gst_byte_reader_get_remaining (&r) != count ||
      !gst_byte_reader_get_data (&r, count, &list))
    return FALSE;
  *n = MIN (count, max);
  memcpy (codecs, list, *n);
  return TRUE;
}

gboolean
gst_spice_wire_parse_key (const guint8 * data, gsize size, guint32 * code)
{
  return parse_u32_body (data, size, code);
}

gboolean
gst_spice_wire_parse_key_modifiers (const guint8 * data, gsize size,
    guint16 * modifiers)
{
  return parse_u16_body (data, size, modifiers);
}

gboolean
gst_spice_wire_parse_mouse_position (const guint8 * data, gsize size,
    guint32 * x, guint32 * y, guint16 * buttons, guint8 * display_id)
{
  GstByteReader r;

  if (!exact_reader_init (&r, data, size, 4 + 4 + 2 + 1))
    return FALSE;
  *x = gst_byte_reader_get_uint32_le_unchecked (&r);
  *y = gst_byte_reader_get_uint32_le_unchecked (&r);
  *buttons = gst_byte_reader_get_uint16_le_unchecked (&r);
  *display_id = gst_byte_reader_get_uint8_unchecked (&r);
  return TRUE;
}

gboolean
gst_spice_wire_parse_mouse_motion (const guint8 * data, gsize size,
    gint32 * dx, gint32 * dy, guint16 * buttons)
{
  GstByteReader r;

  if (!exact_reader_init (&r, data, size, 4 + 4 + 2))
    return FALSE;
  *dx = gst_byte_reader_get_int32_le_unchecked (&r);
  *dy = gst_byte_reader_get_int32_le_unchecked (&r);
  *buttons = gst_byte_reader_get_uint16_le_unchecked (&r);
  return TRUE;
}

gboolean
gst_spice_wire_parse_mouse_button (const guint8 * data, gsize size,
    guint8 * button, guint16 * buttons)
{
  GstByteReader r;

  if (!exact_reader_init (&r, data, size, 1 + 2))
    return FALSE;
  *button = gst_byte_reader_get_uint8_unchecked (&r);
  *buttons = gst_byte_reader_get_uint16_le_unchecked (&r);
  return *button >= SPICE_MOUSE_BUTTON_LEFT &&
      *button < SPICE_MOUSE_BUTTON_ENUM_END;
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
