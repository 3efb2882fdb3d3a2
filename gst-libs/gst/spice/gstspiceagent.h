/* gst-spice: the guest agent's traffic between spicesrc and spicesink
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Guest -> clients travels downstream (the tiler forwards it on `draw`,
 * like the cursor): the agent's presence as a sticky event, clipboard
 * grab / request / data / release as serialized events. Clients -> guest
 * travels upstream, like navigation: the same clipboard events and the
 * monitors config. Selections are VD_AGENT_CLIPBOARD_SELECTION_*, types
 * VD_AGENT_CLIPBOARD_* and capabilities VD_AGENT_CAP_* (<spice/vd_agent.h>).
 * The bytes of a clipboard cross the pipeline only when someone pastes.
 */
#pragma once

#include "gstspice-prelude.h"

#include <gst/gst.h>
#include <spice/vd_agent.h>

G_BEGIN_DECLS

/**
 * GstSpiceAgentInfo:
 * @connected: the guest agent is there
 * @caps: its VD_AGENT_CAP_* bits (bit n of word n / 32)
 * @client_mouse: the upstream offers the client (absolute) mouse mode
 *
 * Sticky downstream event from spicesrc: what spicesink announces to its
 * clients (AGENT_CONNECTED, the capabilities it can honour, the mouse
 * modes).
 */
typedef struct
{
  gboolean connected;
  guint32 caps[VD_AGENT_CAPS_SIZE];
  gboolean client_mouse;
} GstSpiceAgentInfo;

#define GST_SPICE_EVENT_AGENT "spice-agent"
GST_SPICE_API
GstEvent *gst_spice_event_new_agent (const GstSpiceAgentInfo * info);
GST_SPICE_API
gboolean  gst_spice_event_parse_agent (GstEvent * event,
    GstSpiceAgentInfo * info);
GST_SPICE_API
gboolean  gst_spice_agent_info_has_cap (const GstSpiceAgentInfo * info,
    guint cap);

typedef enum
{
  GST_SPICE_CLIPBOARD_GRAB = 1, /* the sender owns the selection: @types */
  GST_SPICE_CLIPBOARD_REQUEST,  /* paste: the owner's data of @type */
  GST_SPICE_CLIPBOARD_DATA,     /* the answer to a request (@data may be
                                 * empty: refused) */
  GST_SPICE_CLIPBOARD_RELEASE,  /* the sender owns it no more */
} GstSpiceClipboardAction;

#define GST_SPICE_CLIPBOARD_MAX_TYPES 16

/**
 * GstSpiceClipboard:
 * @action: what happens
 * @selection: VD_AGENT_CLIPBOARD_SELECTION_*
 * @types: (GRAB) @n_types VD_AGENT_CLIPBOARD_* types offered
 * @type: (REQUEST, DATA) the type asked for / sent
 * @data: (DATA) the bytes, or NULL
 */
typedef struct
{
  GstSpiceClipboardAction action;
  guint selection;
  guint n_types;
  guint32 types[GST_SPICE_CLIPBOARD_MAX_TYPES];
  guint32 type;
  GBytes *data;
} GstSpiceClipboard;

/* serialized custom event, downstream (from the guest) or upstream (to
 * it); @clip->data is referenced, not copied */
#define GST_SPICE_EVENT_CLIPBOARD "spice-clipboard"
GST_SPICE_API
GstEvent *gst_spice_event_new_clipboard (gboolean upstream,
    const GstSpiceClipboard * clip);
/* fills @clip (either direction); @clip->data a new reference or NULL:
 * gst_spice_clipboard_clear() it */
GST_SPICE_API
gboolean  gst_spice_event_parse_clipboard (GstEvent * event,
    GstSpiceClipboard * clip);
GST_SPICE_API
void      gst_spice_clipboard_clear (GstSpiceClipboard * clip);

/**
 * GstSpiceMonitor:
 * @x, @y: position of the monitor on the desktop
 * @width, @height: its size; 0x0 = disabled
 */
typedef struct
{
  gint x, y;
  guint width, height;
} GstSpiceMonitor;

#define GST_SPICE_MAX_MONITORS 16

/* upstream from spicesink: a client asks the guest for these monitors
 * (the window was resized); @n at most GST_SPICE_MAX_MONITORS */
#define GST_SPICE_EVENT_MONITORS_CONFIG "spice-monitors-config"
GST_SPICE_API
GstEvent *gst_spice_event_new_monitors_config (const GstSpiceMonitor * mons,
    guint n);
/* fills @mons (room for GST_SPICE_MAX_MONITORS) and @n */
GST_SPICE_API
gboolean  gst_spice_event_parse_monitors_config (GstEvent * event,
    GstSpiceMonitor * mons, guint * n);

/* ------------------------------------------------------------- wire
 * The VDAgentMessage stream that SPICE's main channel carries in
 * AGENT_DATA messages (each at most VD_AGENT_MAX_DATA_SIZE bytes; a
 * message may span several, and one may end a message and start the
 * next). Used by spicesink, its tests and the fuzz harness. */

typedef struct _GstSpiceAgentReader GstSpiceAgentReader;

/* one whole message; @body NULL (and @size its declared size) when it was
 * larger than the reader's limit and skipped. Returns FALSE to stop. */
typedef gboolean (*GstSpiceAgentMessageFunc) (guint32 type, guint64 opaque,
    const guint8 * body, gsize size, gpointer user_data);

/* @max_size: the largest message body kept (larger ones are skipped) */
GST_SPICE_API
GstSpiceAgentReader *gst_spice_agent_reader_new (gsize max_size);
GST_SPICE_API
void      gst_spice_agent_reader_free (GstSpiceAgentReader * r);
/* Feeds one AGENT_DATA body; calls @func for every message it completes.
 * FALSE (with *@reason) on a malformed stream (wrong protocol, type out of
 * range) or when @func returned FALSE. */
GST_SPICE_API
gboolean  gst_spice_agent_reader_push (GstSpiceAgentReader * r,
    const guint8 * data, gsize size, GstSpiceAgentMessageFunc func,
    gpointer user_data, const gchar ** reason);
/* From the GstSpiceAgentMessageFunc of a kept message only: its body as
 * GBytes, without a copy (the reader takes a new buffer for the next). */
GST_SPICE_API
GBytes   *gst_spice_agent_reader_steal (GstSpiceAgentReader * r);

/* appends one whole message (header + @body) to @a */
GST_SPICE_API
void      gst_spice_agent_write_message (GByteArray * a, guint32 type,
    const guint8 * body, gsize size);

/* VD_AGENT_CLIPBOARD_GRAB / _REQUEST / VD_AGENT_CLIPBOARD / _RELEASE
 * bodies; @selection: both sides announced VD_AGENT_CAP_CLIPBOARD_SELECTION
 * (the 4-byte selection prefix), @serial: VD_AGENT_CAP_CLIPBOARD_GRAB_SERIAL
 * (a u32 serial after it in a grab, ignored when read). From a whole body
 * in a GBytes: @clip->data shares it and is to be
 * gst_spice_clipboard_clear()ed. */
GST_SPICE_API
gboolean  gst_spice_agent_parse_clipboard_bytes (guint32 type, GBytes * body,
    gboolean selection, gboolean serial, GstSpiceClipboard * clip);
/* appends the message for @clip (VDAgentMessage header included) but
 * @clip->data's bytes, which follow it in the stream: a writer that sends
 * the data without copying it */
GST_SPICE_API
void      gst_spice_agent_write_clipboard_head (GByteArray * a,
    const GstSpiceClipboard * clip, gboolean selection, gboolean serial,
    guint32 serial_value);

/* VD_AGENT_ANNOUNCE_CAPABILITIES */
GST_SPICE_API
gboolean  gst_spice_agent_parse_caps (const guint8 * body, gsize size,
    gboolean * request, guint32 caps[VD_AGENT_CAPS_SIZE]);
GST_SPICE_API
void      gst_spice_agent_write_caps (GByteArray * a, gboolean request,
    const guint32 caps[VD_AGENT_CAPS_SIZE]);

/* VD_AGENT_MONITORS_CONFIG (at most GST_SPICE_MAX_MONITORS are kept) */
GST_SPICE_API
gboolean  gst_spice_agent_parse_monitors_config (const guint8 * body,
    gsize size, GstSpiceMonitor * mons, guint * n);

G_END_DECLS
