/* gst-spice tests: a spice-client-glib client that watches every display
 * channel of a session: its primary surface and its monitors (spice-gtk's
 * `monitors` and `monitors-max`), and sends mouse positions per display.
 * For the several-heads tests (issue 29): the same description of the heads
 * straight from a guest and through a pipeline.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define HEADS_CLIENT_MAX_DISPLAYS 8

typedef struct _HeadsClient HeadsClient;

/* Connects to host:port like a viewer (display, inputs and cursor channels)
 * on the default main context, which the waits below run. */
HeadsClient *heads_client_connect (const gchar * host, guint port);
void heads_client_free (HeadsClient * c);

/* The heads as the client sees them, one part per display channel that has
 * a primary surface, in channel id order:
 *   "display 0 WxH monitors N max M: ID@X,Y WxH ...; display 1 ..."
 * (g_free) */
gchar *heads_client_describe (HeadsClient * c);

/* Runs the main context until heads_client_describe() equals @expected or
 * @timeout_ms passed; returns the last description (g_free). */
gchar *heads_client_wait_describe (HeadsClient * c, const gchar * expected,
    guint timeout_ms);

/* Runs the main context until @n display channels have a primary surface and
 * monitors, and nothing changed for @settle_ms; FALSE at @timeout_ms. */
gboolean heads_client_wait_displays (HeadsClient * c, guint n,
    guint settle_ms, guint timeout_ms);

/* How many display channels the session has (with a surface or not). */
guint heads_client_n_display_channels (HeadsClient * c);

/* Runs the main context for @ms. */
void heads_client_pump (guint ms);

/* The client's copy of display channel @id's primary surface (BGRx), NULL
 * without one. */
const guint8 *heads_client_surface (HeadsClient * c, guint id, gint * w,
    gint * h, gint * stride);

/* Runs the main context until the @w x @h rectangle at (@x, @y) of display
 * channel @id's surface equals @expected (BGRx, stride @w * 4; RGB
 * compared) or @timeout_ms passed; returns the pixels that differ at the
 * end (G_MAXUINT64: no such surface or rectangle). */
guint64 heads_client_wait_picture (HeadsClient * c, guint id, gint x, gint y,
    const guint8 * expected, gint w, gint h, guint timeout_ms);

/* Whether the inputs channel is open and the session in client mouse mode. */
gboolean heads_client_inputs_ready (HeadsClient * c);
/* Client mouse mode: a position on display channel @display (the display id
 * spice-gtk sends, in that display's surface pixels), buttons as spice-gtk's
 * button state mask. */
void heads_client_position (HeadsClient * c, guint display, gint x, gint y,
    guint buttons);

/* Whether the guest agent is there and takes monitors configs. */
gboolean heads_client_agent_ready (HeadsClient * c);
/* The client's windows: @n monitors, monitor i at @rects[i] (x, y, width,
 * height; a width of 0: disabled), sent as one monitors config with
 * spice-gtk's public API (update_display_enabled, update_display,
 * send_monitor_config), as remote-viewer does. */
gboolean heads_client_send_monitors (HeadsClient * c, guint n,
    const gint (*rects)[4]);

G_END_DECLS
