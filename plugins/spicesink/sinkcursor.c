/* spicesink: the cursor channel
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Sent: CURSOR_INIT; CURSOR_SET / CURSOR_MOVE on changes. The client sends
 * nothing of its own here.
 */
#include "sinksession.h"

void
sink_cursor_send (SinkSession * s, gboolean init)
{
  SinkConn *c = s->cursor;
  GByteArray *a;
  const GstSpiceCursor *cur = &s->shared->cursor;
  GBytes *shape = s->shared->cursor_shape;
  gint16 x = (gint16) CLAMP (cur->x, G_MININT16, G_MAXINT16);
  gint16 y = (gint16) CLAMP (cur->y, G_MININT16, G_MAXINT16);
  guint64 unique = cur->serial + 1;

  if (!sink_conn_is_linked (c))
    return;
  a = g_byte_array_new ();
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
  g_byte_array_unref (a);
}
