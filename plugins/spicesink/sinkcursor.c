/* spicesink: the cursor channel
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Sent: CURSOR_INIT; CURSOR_SET / CURSOR_MOVE on changes. The client sends
 * nothing of its own here. A change while the previous message is still
 * queued waits until it drained, and then goes out as the latest state:
 * a client that reads slowly costs one message, never a backlog of moves.
 */
#include "sinksession.h"

/* lock held: CURSOR_INIT (@init), CURSOR_SET or CURSOR_MOVE with the
 * shared cursor as it is now */
static void
send_state (SinkSession * s, gboolean init)
{
  SinkConn *c = s->cursor;
  GByteArray *a = g_byte_array_new ();
  const GstSpiceCursor *cur = &s->shared->cursor;
  GBytes *shape = s->shared->cursor_shape;
  gint16 x = (gint16) CLAMP (cur->x, G_MININT16, G_MAXINT16);
  gint16 y = (gint16) CLAMP (cur->y, G_MININT16, G_MAXINT16);
  guint64 unique = cur->serial + 1;

  if (init) {
    gst_spice_wire_write_cursor_init_head (a, x, y, cur->visible,
        shape != NULL, unique, cur->width, cur->height, cur->hot_x, cur->hot_y);
    sink_conn_send (c, SPICE_MSG_CURSOR_INIT, a, shape);
  } else if (s->cur.serial_sent != unique ||
      s->cur.visible_sent != cur->visible) {
    gst_spice_wire_write_cursor_set_head (a, x, y, cur->visible,
        shape != NULL, unique, cur->width, cur->height, cur->hot_x, cur->hot_y);
    sink_conn_send (c, SPICE_MSG_CURSOR_SET, a, shape);
  } else {
    gst_spice_wire_write_cursor_move (a, x, y);
    sink_conn_send (c, SPICE_MSG_CURSOR_MOVE, a, NULL);
  }
  s->cur.serial_sent = unique;
  s->cur.visible_sent = cur->visible;
  s->cur.pending = FALSE;
  g_byte_array_unref (a);
}

void
sink_cursor_linked (SinkSession * s)
{
  sink_conn_set_limit (s->cursor, SINK_CURSOR_MAX_QUEUED);
  send_state (s, TRUE);
}

void
sink_cursor_send (SinkSession * s)
{
  if (!sink_conn_is_linked (s->cursor))
    return;
  if (sink_conn_has_queued (s->cursor)) {
    s->cur.pending = TRUE;
    return;
  }
  send_state (s, FALSE);
}

void
sink_cursor_drained (SinkSession * s)
{
  if (s->cur.pending && sink_conn_is_linked (s->cursor))
    send_state (s, FALSE);
}
