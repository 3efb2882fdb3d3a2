/* gst-spice: custom events between spicesrc, spicetiler and spicesink
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "gstspice-prelude.h"

#include <gst/gst.h>

G_BEGIN_DECLS

/* Element messages (GST_MESSAGE_ELEMENT) of spicesink and spicesrc: one
 * security or health event each, with string fields `event`, `peer`,
 * `source`, `reason` (a stable token) and optionally `detail`, uint
 * `limit`, `type`, `size`, and uint64 `suppressed` (events of the same
 * source, event and reason not posted since the previous one). Rate
 * limited by the element; gst-spice-run prints each as one line
 * (docs/operator-guide.md "Security and health events"). */
#define GST_SPICE_MESSAGE_SECURITY "spice-security"
#define GST_SPICE_MESSAGE_HEALTH "spice-health"

/* the structure of one such message (@health: spice-health, else
 * spice-security) with its string fields; the caller adds the others */
GST_SPICE_API
GstStructure *gst_spice_report_new (gboolean health, const gchar * event,
    const gchar * peer, const gchar * source, const gchar * reason);

/* Upstream, from spicesink: a client needs the whole picture. The tiler
 * answers with a full lossless redraw from its shadow (an update flagged
 * GST_SPICE_DRAWS_FLAG_REFRESH) and a force-key-unit on every stream. */
#define GST_SPICE_EVENT_REFRESH "spice-refresh"
GST_SPICE_API
GstEvent *gst_spice_event_new_refresh (void);
GST_SPICE_API
gboolean  gst_spice_event_is_refresh (GstEvent * event);

/* Upstream on a stream pad, from spicesink: the link estimate changed.
 * @bitrate in bits/s (0 = unknown), @fps_n/@fps_d the frame rate the
 * stream should not exceed (0/1 = unlimited), @scale the divisor of the
 * stream's picture size (1 = full size; 2 = half width and height, the
 * client scales the frames up to the stream's rectangle), so that one
 * frame stays a small part of a second of the link. */
#define GST_SPICE_EVENT_RATE "spice-rate"
GST_SPICE_API
GstEvent *gst_spice_event_new_rate (guint bitrate, gint fps_n, gint fps_d,
    guint scale);
GST_SPICE_API
gboolean  gst_spice_event_parse_rate (GstEvent * event, guint * bitrate,
    gint * fps_n, gint * fps_d, guint * scale);

/* Upstream on the draw pad, from spicesink: what the slowest client's link
 * takes. @bitrate in bits/s (0 = unknown), @update_bytes the size one draw
 * update should not exceed (0 = no limit from the sink), so that a keypress
 * draw never waits behind much more than that. */
#define GST_SPICE_EVENT_DRAW_BUDGET "spice-draw-budget"
GST_SPICE_API
GstEvent *gst_spice_event_new_draw_budget (guint64 bitrate,
    guint update_bytes);
GST_SPICE_API
gboolean  gst_spice_event_parse_draw_budget (GstEvent * event,
    guint64 * bitrate, guint * update_bytes);

/* Upstream on a stream pad, from spicesink: whether every client can take
 * the stream. With enabled=FALSE the tiler sends that area as draws. */
#define GST_SPICE_EVENT_STREAM_CONTROL "spice-stream-control"
GST_SPICE_API
GstEvent *gst_spice_event_new_stream_control (gboolean enabled);
GST_SPICE_API
gboolean  gst_spice_event_parse_stream_control (GstEvent * event,
    gboolean * enabled);

/* The keyboard's lock LEDs (SPICE_KEYBOARD_MODIFIER_FLAGS_*: Scroll 1,
 * Num 2, Caps 4; spice-gtk's SPICE_INPUTS_*_LOCK are the same bits).
 * Downstream, sticky, from spicesrc: the upstream's state (its
 * INPUTS_INIT / KEY_MODIFIERS), forwarded by the tiler on `draw`, served
 * by spicesink to its clients. Upstream, serialized with the navigation
 * events, from spicesink: a client asks for these locks (its
 * KEY_MODIFIERS); spicesrc sets them on the upstream. */
#define GST_SPICE_EVENT_KEY_LOCKS "spice-key-locks"
GST_SPICE_API
GstEvent *gst_spice_event_new_key_locks (gboolean upstream, guint locks);
/* either direction; @locks (may be NULL) masked to the three bits */
GST_SPICE_API
gboolean  gst_spice_event_parse_key_locks (GstEvent * event, guint * locks);

/**
 * GstSpiceCursor:
 * @visible: whether the pointer is shown
 * @x, @y: pointer position on the surface
 * @hot_x, @hot_y: hot spot inside the shape
 * @width, @height: shape size (0 when there is no shape)
 * @shape: (nullable): @width x @height pixels, 4 bytes each, B,G,R,A with
 *   straight (not premultiplied) alpha
 * @serial: changes whenever the shape changes (a position-only update
 *   keeps it)
 *
 * Cursor state, travelling downstream as a sticky custom event from
 * spicesrc through spicetiler (`draw` pad) to spicesink.
 */
typedef struct {
  gboolean visible;
  gint x, y;
  gint hot_x, hot_y;
  gint width, height;
  GstBuffer *shape;
  guint64 serial;
} GstSpiceCursor;

#define GST_SPICE_EVENT_CURSOR "spice-cursor"
GST_SPICE_API
GstEvent *gst_spice_event_new_cursor (const GstSpiceCursor * cursor);
/* fills @cursor; cursor->shape is a new reference (unref it) or NULL */
GST_SPICE_API
gboolean  gst_spice_event_parse_cursor (GstEvent * event,
    GstSpiceCursor * cursor);

/**
 * GstSpiceHead:
 * @id: the monitor's id (spice-gtk's SpiceDisplayMonitorConfig.id)
 * @x, @y: where the head is on the surface (the frames)
 * @width, @height: its size
 *
 * One head of the picture.
 */
typedef struct {
  guint id;
  gint x, y;
  gint width, height;
} GstSpiceHead;

#define GST_SPICE_MAX_HEADS 16

/**
 * GstSpiceHeads:
 * @count: heads in @monitors (1..GST_SPICE_MAX_HEADS)
 * @max: how many the upstream allows (at least @count)
 * @monitors: the heads, each inside the frame
 *
 * The heads of the picture (issue 29), travelling downstream as a sticky
 * custom event from spicesrc through spicetiler (`draw` pad) to spicesink,
 * which announces them to its clients (DISPLAY_MONITORS_CONFIG). No event
 * means one head covering the whole frame.
 */
typedef struct {
  guint count;
  guint max;
  GstSpiceHead monitors[GST_SPICE_MAX_HEADS];
} GstSpiceHeads;

#define GST_SPICE_EVENT_MONITORS "spice-monitors"
GST_SPICE_API
GstEvent *gst_spice_event_new_monitors (const GstSpiceHeads * monitors);
/* FALSE if @event is not a spice-monitors event or holds no valid head
 * (count 0 or above GST_SPICE_MAX_HEADS, a size <= 0, a negative
 * position) */
GST_SPICE_API
gboolean  gst_spice_event_parse_monitors (GstEvent * event,
    GstSpiceHeads * monitors);
/* TRUE if every head of @m lies inside a @width x @height frame */
GST_SPICE_API
gboolean  gst_spice_heads_fit (const GstSpiceHeads * m, gint width,
    gint height);
/* the head of @m that contains (@x, @y) of the frame, or -1 */
GST_SPICE_API
gint      gst_spice_heads_find (const GstSpiceHeads * m, gint x,
    gint y);

G_END_DECLS
