/* gst-spice: SPICE wire format — link stage, message headers, marshalling
 * of what a server sends and strict parsing of what a client sends (the
 * client's side, for tests and fuzzing, is tests/common/spice-client-wire.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Every parser takes (data, size), checks every length and offset, and
 * returns FALSE on anything malformed; it never reads outside [data, data +
 * size), reading it with a GstByteReader. Writers append little-endian
 * bytes to a GByteArray, written with a GstByteWriter. Message "bodies"
 * exclude the mini header (SpiceMiniDataHeader) / full header
 * (SpiceDataHeader). Every function touches only its arguments: any
 * thread.
 */
#pragma once

#include "gstspice-prelude.h"
#include "gstspiceevents.h"

#include <glib.h>
#include <gst/video/video.h>

#include <spice/protocol.h>
#include <spice/enums.h>

G_BEGIN_DECLS

/* Wire constants (channel types, message types, capabilities, link errors,
 * codecs, surface formats) are spice-protocol's, from <spice/protocol.h> and
 * <spice/enums.h>; so are the packed structs of the link stage and the data
 * headers, whose sizes follow. Then the sizes of message parts that
 * spice-protocol has no struct for, and this implementation's own limits. */
#define GST_SPICE_WIRE_LINK_HEADER_SIZE ((gint) sizeof (SpiceLinkHeader))
#define GST_SPICE_WIRE_LINK_MESS_SIZE ((gint) sizeof (SpiceLinkMess))
#define GST_SPICE_WIRE_LINK_REPLY_SIZE ((gint) sizeof (SpiceLinkReply))
#define GST_SPICE_WIRE_TICKET_SIZE ((gint) sizeof (SpiceLinkEncryptedTicket))
#define GST_SPICE_WIRE_MINI_HEADER_SIZE ((gint) sizeof (SpiceMiniDataHeader))
#define GST_SPICE_WIRE_FULL_HEADER_SIZE ((gint) sizeof (SpiceDataHeader))
/* DisplayBase (clip NONE), Copy (no mask) and the image descriptor */
#define GST_SPICE_WIRE_DRAW_COPY_HEAD_SIZE 75
#define GST_SPICE_WIRE_MAX_LINK_SIZE 4096
#define GST_SPICE_WIRE_MAX_CAPS_WORDS 16
#define GST_SPICE_WIRE_MAX_STREAMS SPICE_MAX_NUM_STREAMS

/* ---- capabilities ---- */
GST_SPICE_API
gboolean gst_spice_caps_test (const guint32 * words, guint n_words, guint cap);
GST_SPICE_API
void     gst_spice_caps_set (guint32 * words, guint n_words, guint cap);

/* ---- byte writers ---- */
GST_SPICE_API
void gst_spice_put_u8 (GByteArray * a, guint8 v);
GST_SPICE_API
void gst_spice_put_u16 (GByteArray * a, guint16 v);
GST_SPICE_API
void gst_spice_put_u32 (GByteArray * a, guint32 v);
GST_SPICE_API
void gst_spice_put_u64 (GByteArray * a, guint64 v);
/* SPICE Rect: top, left, bottom, right */
GST_SPICE_API
void gst_spice_put_rect (GByteArray * a, const GstVideoRectangle * r);
GST_SPICE_API
void gst_spice_put_bytes (GByteArray * a, const guint8 * data, gsize size);

/* ---- link stage ---- */
typedef struct {
  guint32 magic;
  guint32 major;
  guint32 minor;
  guint32 size;
} GstSpiceLinkHeader;

/* Checks magic, major version and that size is within
 * [min_size, GST_SPICE_WIRE_MAX_LINK_SIZE]. On failure *error (if given) is
 * the SpiceLinkErr to answer with. */
GST_SPICE_API
gboolean gst_spice_wire_parse_link_header (const guint8 * data, gsize size,
    guint32 min_size, GstSpiceLinkHeader * out, guint32 * error);

typedef struct {
  guint32 connection_id;
  guint8 channel_type;
  guint8 channel_id;
  guint n_common;
  guint n_channel;
  guint32 common_caps[GST_SPICE_WIRE_MAX_CAPS_WORDS];
  guint32 channel_caps[GST_SPICE_WIRE_MAX_CAPS_WORDS];
} GstSpiceLinkMess;

/* @data/@size: exactly the link message (header.size bytes) */
GST_SPICE_API
gboolean gst_spice_wire_parse_link_mess (const guint8 * data, gsize size,
    GstSpiceLinkMess * out);

/* server side: link header + reply + caps. @pub_key may be NULL (zeros). */
GST_SPICE_API
void     gst_spice_wire_write_link_reply (GByteArray * a, guint32 error,
    const guint8 * pub_key, const guint32 * common, guint n_common,
    const guint32 * channel, guint n_channel);

/* ---- data-stage headers ---- */
typedef struct {
  guint64 serial;               /* 0 with the mini header */
  guint16 type;
  guint32 size;
} GstSpiceMsgHeader;

static inline gsize
gst_spice_wire_header_size (gboolean mini)
{
  return mini ? GST_SPICE_WIRE_MINI_HEADER_SIZE :
      GST_SPICE_WIRE_FULL_HEADER_SIZE;
}

GST_SPICE_API
void     gst_spice_wire_put_header (guint8 * out, gboolean mini,
    guint64 serial, guint16 type, guint32 size);
GST_SPICE_API
gboolean gst_spice_wire_parse_header (const guint8 * data, gsize size,
    gboolean mini, GstSpiceMsgHeader * out);

/* Limits for messages a client may send to a server: returns FALSE for a
 * type that is not valid on @channel_type; otherwise the inclusive body size
 * bounds. */
GST_SPICE_API
gboolean gst_spice_wire_client_msg_limits (guint8 channel_type, guint16 type,
    guint32 * min_size, guint32 * max_size);
GST_SPICE_API
const gchar *gst_spice_wire_client_msg_name (guint8 channel_type,
    guint16 type);

/* ---- server -> client bodies ---- */
GST_SPICE_API
void gst_spice_wire_write_ping (GByteArray * a, guint32 id, guint64 timestamp);
GST_SPICE_API
void gst_spice_wire_write_main_init (GByteArray * a, guint32 session_id,
    guint32 supported_mouse_modes, guint32 current_mouse_mode,
    guint32 agent_connected, guint32 agent_tokens, guint32 mm_time);
GST_SPICE_API
void gst_spice_wire_write_channels_list (GByteArray * a, guint n,
    const guint8 * types, const guint8 * ids);
GST_SPICE_API
void gst_spice_wire_write_mouse_mode (GByteArray * a, guint16 supported,
    guint16 current);
/* MAIN_MIGRATE_SWITCH_HOST as the whole body of a message (its pointers
 * are offsets from the body's start): reconnect to @host, @port / @sport
 * (0 none); @cert_subject may be NULL */
GST_SPICE_API
void gst_spice_wire_write_switch_host (GByteArray * a, guint16 port,
    guint16 sport, const gchar * host, const gchar * cert_subject);
GST_SPICE_API
void gst_spice_wire_write_surface_create (GByteArray * a, guint32 surface_id,
    guint32 width, guint32 height, guint32 format, guint32 flags);
GST_SPICE_API
void gst_spice_wire_write_surface_destroy (GByteArray * a,
    guint32 surface_id);
/* DISPLAY_MONITORS_CONFIG: @m's heads on surface @surface_id (count,
 * max_allowed, then per head id, surface, width, height, x, y, flags 0) */
GST_SPICE_API
void gst_spice_wire_write_monitors_config (GByteArray * a,
    guint32 surface_id, const GstSpiceHeads * m);
/* fixed part of DRAW_COPY (clip NONE, rop PUT, no mask) and the 18-byte
 * image descriptor; the caller appends the image payload */
GST_SPICE_API
void gst_spice_wire_write_draw_copy_head (GByteArray * a, guint32 surface_id,
    const GstVideoRectangle * dest, guint8 image_type, guint8 image_flags);
/* COPY_BITS: DisplayBase (clip NONE) and the source's corner */
#define GST_SPICE_WIRE_COPY_BITS_SIZE 29
GST_SPICE_API
void gst_spice_wire_write_copy_bits (GByteArray * a, guint32 surface_id,
    const GstVideoRectangle * dest, gint32 src_x, gint32 src_y);
GST_SPICE_API
void gst_spice_wire_write_stream_create (GByteArray * a, guint32 surface_id,
    guint32 id, guint8 codec, guint8 flags, guint32 width, guint32 height,
    const GstVideoRectangle * dest);
/* STREAM_DATA head (12 bytes); the mm time is at body offset 4 */
#define GST_SPICE_WIRE_STREAM_DATA_MM_OFFSET 4
GST_SPICE_API
void gst_spice_wire_write_stream_data_head (GByteArray * a, guint32 id,
    guint32 mm_time, guint32 data_size);
GST_SPICE_API
void gst_spice_wire_write_stream_destroy (GByteArray * a, guint32 id);
/* STREAM_CLIP: @hide TRUE clips the stream to nothing (RECTS, no rect: the
 * client paints none of its frames), FALSE to its whole area (NONE) */
GST_SPICE_API
void gst_spice_wire_write_stream_clip (GByteArray * a, guint32 id,
    gboolean hide);
GST_SPICE_API
void gst_spice_wire_write_stream_activate_report (GByteArray * a,
    guint32 stream_id, guint32 unique_id, guint32 max_window,
    guint32 timeout_ms);
GST_SPICE_API
void gst_spice_wire_write_inputs_init (GByteArray * a, guint16 modifiers);
GST_SPICE_API
void gst_spice_wire_write_key_modifiers (GByteArray * a, guint16 modifiers);
/* CURSOR_INIT / CURSOR_SET up to the shape pixels. With @has_shape FALSE the
 * cursor flags are NONE and nothing follows; otherwise an ALPHA shape of
 * width*height*4 bytes (B,G,R,A) must be appended. */
GST_SPICE_API
void gst_spice_wire_write_cursor_init_head (GByteArray * a, gint16 x, gint16 y,
    gboolean visible, gboolean has_shape, guint64 unique, guint16 width,
    guint16 height, guint16 hot_x, guint16 hot_y);
GST_SPICE_API
void gst_spice_wire_write_cursor_set_head (GByteArray * a, gint16 x, gint16 y,
    gboolean visible, gboolean has_shape, guint64 unique, guint16 width,
    guint16 height, guint16 hot_x, guint16 hot_y);
GST_SPICE_API
void gst_spice_wire_write_cursor_move (GByteArray * a, gint16 x, gint16 y);

/* ---- client -> server bodies: parsers (server side) ---- */
GST_SPICE_API
gboolean gst_spice_wire_parse_pong (const guint8 * data, gsize size,
    guint32 * id, guint64 * timestamp);
GST_SPICE_API
gboolean gst_spice_wire_parse_mouse_mode_request (const guint8 * data,
    gsize size, guint16 * mode);

typedef struct {
  guint32 stream_id;
  guint32 unique_id;
  guint32 start_frame_mm_time;
  guint32 end_frame_mm_time;
  guint32 num_frames;
  guint32 num_drops;
  gint32 last_frame_delay;
  guint32 audio_delay;
} GstSpiceStreamReport;
GST_SPICE_API
gboolean gst_spice_wire_parse_stream_report (const guint8 * data, gsize size,
    GstSpiceStreamReport * out);

/* DISPLAY_PREFERRED_VIDEO_CODEC_TYPE: u8 count, then count codec types
 * (SpiceVideoCodecType, the client's order of preference); *@n of them
 * (at most @max) into @codecs. FALSE when the count does not match the
 * size. */
GST_SPICE_API
gboolean gst_spice_wire_parse_preferred_video_codecs (const guint8 * data,
    gsize size, guint8 * codecs, guint max, guint * n);

GST_SPICE_API
gboolean gst_spice_wire_parse_key (const guint8 * data, gsize size,
    guint32 * code);
GST_SPICE_API
gboolean gst_spice_wire_parse_key_modifiers (const guint8 * data, gsize size,
    guint16 * modifiers);
GST_SPICE_API
gboolean gst_spice_wire_parse_mouse_position (const guint8 * data, gsize size,
    guint32 * x, guint32 * y, guint16 * buttons, guint8 * display_id);
GST_SPICE_API
gboolean gst_spice_wire_parse_mouse_motion (const guint8 * data, gsize size,
    gint32 * dx, gint32 * dy, guint16 * buttons);
GST_SPICE_API
gboolean gst_spice_wire_parse_mouse_button (const guint8 * data, gsize size,
    guint8 * button, guint16 * buttons);

/* Key codes: decodes a KEY_DOWN/KEY_UP u32 or KEY_SCANCODE bytes into
 * (scancode in spice-gtk's 0x100|code convention, release flag) pairs.
 * Returns the number of keys written to @out (at most @max), or -1 when the
 * byte sequence is malformed. */
typedef struct {
  guint scancode;
  gboolean release;
} GstSpiceKeyEvent;
GST_SPICE_API
gint gst_spice_wire_decode_key_bytes (const guint8 * bytes, gsize n,
    GstSpiceKeyEvent * out, guint max);
GST_SPICE_API
gint gst_spice_wire_decode_key_code (guint32 code, GstSpiceKeyEvent * out,
    guint max);

G_END_DECLS
