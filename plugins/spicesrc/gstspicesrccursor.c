/* gst-spice: spicesrc's cursor channel and the mouse mode
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The upstream cursor channel (the one of the captured display) becomes
 * self->cursor, which the streaming thread pushes downstream as the
 * sticky `spice-cursor` event (gstspiceevents.h); the main channel's
 * mouse mode decides how inputs send pointer positions
 * (gstspicesrcinputs.c).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstspicesrccursor.h"

/* context thread, self->lock held: the streaming thread pushes the cursor
 * event */
static void
cursor_changed_locked (GstSpiceSrc * self)
{
  self->cursor_pending = TRUE;
  g_cond_broadcast (&self->cond);
}

/* context thread (the cursor channel's notify::cursor): a new shape, or
 * none */
static void
on_cursor_shape (SpiceChannel * channel, GParamSpec * pspec, GstSpiceSrc * self)
{
  SpiceCursorShape *shape = NULL;
  GstBuffer *buf = NULL;
  gint w = 0, h = 0, hx = 0, hy = 0;

  if (gst_spice_src_session_stopped (self))
    return;
  g_object_get (channel, "cursor", &shape, NULL);
  if (shape && shape->data && shape->width > 0 && shape->height > 0) {
    gsize i, n = (gsize) shape->width * shape->height;
    const guint8 *s = shape->data;
    guint8 *d;
    GstMapInfo map;

    buf = gst_buffer_new_allocate (NULL, n * 4, NULL);
    gst_buffer_map (buf, &map, GST_MAP_WRITE);
    d = map.data;
    /* spice-gtk hands out R,G,B,A; the event carries B,G,R,A */
    for (i = 0; i < n; i++) {
      d[4 * i + 0] = s[4 * i + 2];
      d[4 * i + 1] = s[4 * i + 1];
      d[4 * i + 2] = s[4 * i + 0];
      d[4 * i + 3] = s[4 * i + 3];
    }
    gst_buffer_unmap (buf, &map);
    w = shape->width;
    h = shape->height;
    hx = MIN (shape->hot_spot_x, w - 1);
    hy = MIN (shape->hot_spot_y, h - 1);
  }
  if (shape)
    g_boxed_free (SPICE_TYPE_CURSOR_SHAPE, shape);

  g_mutex_lock (&self->lock);
  gst_clear_buffer (&self->cursor.shape);
  self->cursor.shape = buf;
  self->cursor.width = w;
  self->cursor.height = h;
  self->cursor.hot_x = hx;
  self->cursor.hot_y = hy;
  self->cursor.visible = TRUE;
  self->cursor.serial = ++self->cursor_serial;
  cursor_changed_locked (self);
  g_mutex_unlock (&self->lock);
}

/* context thread (cursor-move) */
static void
on_cursor_move (SpiceChannel * channel, gint x, gint y, GstSpiceSrc * self)
{
  if (gst_spice_src_session_stopped (self))
    return;
  g_mutex_lock (&self->lock);
  self->cursor.x = x;
  self->cursor.y = y;
  self->cursor.visible = TRUE;
  cursor_changed_locked (self);
  g_mutex_unlock (&self->lock);
}

/* context thread (cursor-hide) */
static void
on_cursor_hide (SpiceChannel * channel, GstSpiceSrc * self)
{
  if (gst_spice_src_session_stopped (self))
    return;
  g_mutex_lock (&self->lock);
  self->cursor.visible = FALSE;
  cursor_changed_locked (self);
  g_mutex_unlock (&self->lock);
}

/* context thread (cursor-reset): the default cursor */
static void
on_cursor_reset (SpiceChannel * channel, GstSpiceSrc * self)
{
  if (gst_spice_src_session_stopped (self))
    return;
  g_mutex_lock (&self->lock);
  gst_clear_buffer (&self->cursor.shape);
  self->cursor.width = self->cursor.height = 0;
  self->cursor.hot_x = self->cursor.hot_y = 0;
  self->cursor.visible = TRUE;
  self->cursor.serial = ++self->cursor_serial;
  cursor_changed_locked (self);
  g_mutex_unlock (&self->lock);
}

/* context thread (the main channel's notify::mouse-mode) */
static void
on_mouse_mode (SpiceChannel * channel, GParamSpec * pspec, GstSpiceSrc * self)
{
  gint mode = 0;

  if (gst_spice_src_session_stopped (self))
    return;
  g_object_get (channel, "mouse-mode", &mode, NULL);
  GST_INFO_OBJECT (self, "mouse mode %s",
      mode == SPICE_MOUSE_MODE_CLIENT ? "client" : "server");
  self->mouse_mode = mode;
  g_mutex_lock (&self->lock);
  self->mouse_mode_shared = mode;
  g_mutex_unlock (&self->lock);
}

/* context thread: follow @channel, the session's cursor channel for the
 * captured display (forgotten with g_signal_handlers_disconnect_by_data()) */
void
gst_spice_src_cursor_connect (GstSpiceSrc * self, SpiceChannel * channel)
{
  g_signal_connect (channel, "notify::cursor",
      G_CALLBACK (on_cursor_shape), self);
  g_signal_connect (channel, "cursor-move", G_CALLBACK (on_cursor_move), self);
  g_signal_connect (channel, "cursor-hide", G_CALLBACK (on_cursor_hide), self);
  g_signal_connect (channel, "cursor-reset", G_CALLBACK (on_cursor_reset),
      self);
}

/* context thread: follow the mouse mode of @channel, the session's main
 * channel (forgotten with g_signal_handlers_disconnect_by_data()) */
void
gst_spice_src_cursor_connect_mouse_mode (GstSpiceSrc * self,
    SpiceChannel * channel)
{
  g_signal_connect (channel, "notify::mouse-mode",
      G_CALLBACK (on_mouse_mode), self);
}
