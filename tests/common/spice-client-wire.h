/* gst-spice tests: the SPICE client's side of the wire, for the test peers
 * (the raw client, the fuzz harnesses, bench/ programs and the unit tests).
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * libgstspice holds what the elements need: the server's writers and its
 * strict parsers of what clients send. A client reads what a server sends
 * and writes what a client sends; no element does either, so that half
 * lives here, on the library's public gst_spice_put_* writers and
 * GstByteReader. Parsers take (data, size), check every length and offset
 * and return FALSE on anything malformed. Every function touches only its
 * arguments: any thread.
 */
#pragma once

#include <glib.h>
#include <gst/video/video.h>
#include <gst/spice/gstspicewire.h>
#include <gst/spice/gstspiceagent.h>
#include <gst/spice/gstspiceevents.h>

G_BEGIN_DECLS

/* ---- link stage ---- */
/* a SpiceLinkHeader announcing @size bytes of link message */
void     test_wire_write_link_header (GByteArray * a, guint32 size);
/* link header + SpiceLinkMess + its caps */
void     test_wire_write_link_mess (GByteArray * a, const GstSpiceLinkMess * m);

typedef struct {
  guint32 error;
  guint8 pub_key[SPICE_TICKET_PUBKEY_BYTES];
  guint n_common;
  guint n_channel;
  guint32 common_caps[GST_SPICE_WIRE_MAX_CAPS_WORDS];
  guint32 channel_caps[GST_SPICE_WIRE_MAX_CAPS_WORDS];
} TestWireLinkReply;

/* @data/@size = the reply (the link header's size bytes); an error reply
 * carries nothing after its error */
gboolean test_wire_parse_link_reply (const guint8 * data, gsize size,
    TestWireLinkReply * out);

/* Encrypts @password plus its NUL with the server's DER public key
 * (RSA-OAEP, SHA-1). @out must hold GST_SPICE_WIRE_TICKET_SIZE bytes. */
gboolean test_wire_encrypt_ticket (const guint8 * pub_der, gsize pub_size,
    const gchar * password, guint8 * out, gsize out_size);

/* ---- server -> client bodies ---- */
typedef struct {
  guint32 session_id;
  guint32 display_channels_hint;
  guint32 supported_mouse_modes;
  guint32 current_mouse_mode;
  guint32 agent_connected;
  guint32 agent_tokens;
  guint32 multi_media_time;
  guint32 ram_hint;
} TestWireMainInit;
gboolean test_wire_parse_main_init (const guint8 * data, gsize size,
    TestWireMainInit * out);
/* returns the number of channels (<= max) or -1 */
gint     test_wire_parse_channels_list (const guint8 * data, gsize size,
    guint8 * types, guint8 * ids, guint max);
gboolean test_wire_parse_surface_create (const guint8 * data, gsize size,
    guint32 * surface_id, guint32 * width, guint32 * height, guint32 * format,
    guint32 * flags);

typedef struct {
  guint32 surface_id;
  GstVideoRectangle box;
  GstVideoRectangle src_area;
  guint16 rop;
  guint8 image_type;
  guint8 image_flags;
  guint32 image_width;
  guint32 image_height;
  const guint8 *payload;        /* after the image descriptor */
  gsize payload_size;           /* to the end of the body */
} TestWireDrawCopy;
/* DRAW_COPY without a mask; a RECTS clip is skipped */
gboolean test_wire_parse_draw_copy (const guint8 * data, gsize size,
    TestWireDrawCopy * out);

typedef struct {
  guint32 surface_id;
  guint32 id;
  guint8 flags;
  guint8 codec;
  guint32 width, height;
  GstVideoRectangle dest;
} TestWireStreamCreate;
/* clip NONE only (what spicesink sends), id below
 * GST_SPICE_WIRE_MAX_STREAMS */
gboolean test_wire_parse_stream_create (const guint8 * data, gsize size,
    TestWireStreamCreate * out);
gboolean test_wire_parse_stream_data (const guint8 * data, gsize size,
    guint32 * id, guint32 * mm_time, const guint8 ** frame, gsize * frame_size);
/* STREAM_CLIP; @n_rects: -1 for clip NONE, else the number of rectangles */
gboolean test_wire_parse_stream_clip (const guint8 * data, gsize size,
    guint32 * id, gint64 * n_rects);
/* DISPLAY_MONITORS_CONFIG; FALSE if malformed, no head or more than
 * GST_SPICE_MAX_HEADS */
gboolean test_wire_parse_monitors_config (const guint8 * data, gsize size,
    GstSpiceHeads * m);

/* ---- client -> server bodies ---- */
void     test_wire_write_mouse_position (GByteArray * a, guint32 x, guint32 y,
    guint16 buttons, guint8 display_id);
/* the u32 of KEY_DOWN (@release FALSE) or KEY_UP for a scancode in
 * spice-gtk's 0x100|code convention */
guint32  test_wire_encode_key_code (guint scancode, gboolean release);

/* ---- the agent's messages a client sends (VDAgentMessage included) ---- */
/* @clip's data bytes follow its head (see gst_spice_agent_write_clipboard_head) */
void     test_agent_write_clipboard (GByteArray * a,
    const GstSpiceClipboard * clip, gboolean selection, gboolean serial,
    guint32 serial_value);
/* VD_AGENT_MONITORS_CONFIG with USE_POS, depth 32 */
void     test_agent_write_monitors_config (GByteArray * a,
    const GstSpiceMonitor * mons, guint n);
/* gst_spice_agent_parse_clipboard_bytes() on a copy of (@body, @size) */
gboolean test_agent_parse_clipboard (guint32 type, const guint8 * body,
    gsize size, gboolean selection, gboolean serial,
    GstSpiceClipboard * clip);

G_END_DECLS
