/* gst-spice: custom events between spicesrc, spicetiler and spicesink
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "gstspiceevents.h"

#include <spice/enums.h>

static const GstStructure *
event_structure (GstEvent * event, GstEventType type, const gchar * name)
{
  const GstStructure *s;

  if (GST_EVENT_TYPE (event) != type)
    return NULL;
  s = gst_event_get_structure (event);
  if (!s || !gst_structure_has_name (s, name))
    return NULL;
  return s;
}

GstEvent *
gst_spice_event_new_refresh (void)
{
  return gst_event_new_custom (GST_EVENT_CUSTOM_UPSTREAM,
      gst_structure_new_empty (GST_SPICE_EVENT_REFRESH));
}

gboolean
gst_spice_event_is_refresh (GstEvent * event)
{
  return event_structure (event, GST_EVENT_CUSTOM_UPSTREAM,
      GST_SPICE_EVENT_REFRESH) != NULL;
}

GstEvent *
gst_spice_event_new_rate (guint bitrate, gint fps_n, gint fps_d, guint scale)
{
  return gst_event_new_custom (GST_EVENT_CUSTOM_UPSTREAM,
      gst_structure_new (GST_SPICE_EVENT_RATE,
          "bitrate", G_TYPE_UINT, bitrate,
          "framerate", GST_TYPE_FRACTION, fps_n, MAX (fps_d, 1),
          "scale", G_TYPE_UINT, MAX (scale, 1), NULL));
}

gboolean
gst_spice_event_parse_rate (GstEvent * event, guint * bitrate, gint * fps_n,
    gint * fps_d, guint * scale)
{
  const GstStructure *s = event_structure (event, GST_EVENT_CUSTOM_UPSTREAM,
      GST_SPICE_EVENT_RATE);
  gint n = 0, d = 1;
  guint b = 0, sc = 1;

  if (!s)
    return FALSE;
  gst_structure_get_uint (s, "bitrate", &b);
  gst_structure_get_fraction (s, "framerate", &n, &d);
  if (bitrate)
    *bitrate = b;
  if (fps_n)
    *fps_n = n;
  if (fps_d)
    *fps_d = d;
  if (scale) {
    gst_structure_get_uint (s, "scale", &sc);
    *scale = MAX (sc, 1);
  }
  return TRUE;
}

GstEvent *
gst_spice_event_new_draw_budget (guint64 bitrate, guint update_bytes)
{
  return gst_event_new_custom (GST_EVENT_CUSTOM_UPSTREAM,
      gst_structure_new (GST_SPICE_EVENT_DRAW_BUDGET,
          "bitrate", G_TYPE_UINT64, bitrate,
          "update-bytes", G_TYPE_UINT, update_bytes, NULL));
}

gboolean
gst_spice_event_parse_draw_budget (GstEvent * event, guint64 * bitrate,
    guint * update_bytes)
{
  const GstStructure *s = event_structure (event, GST_EVENT_CUSTOM_UPSTREAM,
      GST_SPICE_EVENT_DRAW_BUDGET);
  guint64 b = 0;
  guint u = 0;

  if (!s)
    return FALSE;
  gst_structure_get_uint64 (s, "bitrate", &b);
  gst_structure_get_uint (s, "update-bytes", &u);
  if (bitrate)
    *bitrate = b;
  if (update_bytes)
    *update_bytes = u;
  return TRUE;
}

GstEvent *
gst_spice_event_new_stream_control (gboolean enabled)
{
  return gst_event_new_custom (GST_EVENT_CUSTOM_UPSTREAM,
      gst_structure_new (GST_SPICE_EVENT_STREAM_CONTROL,
          "enabled", G_TYPE_BOOLEAN, enabled, NULL));
}

gboolean
gst_spice_event_parse_stream_control (GstEvent * event, gboolean * enabled)
{
  const GstStructure *s = event_structure (event, GST_EVENT_CUSTOM_UPSTREAM,
      GST_SPICE_EVENT_STREAM_CONTROL);
  gboolean e = TRUE;

  if (!s)
    return FALSE;
  gst_structure_get_boolean (s, "enabled", &e);
  if (enabled)
    *enabled = e;
  return TRUE;
}

GstEvent *
gst_spice_event_new_key_locks (gboolean upstream, guint locks)
{
  GstStructure *s = gst_structure_new (GST_SPICE_EVENT_KEY_LOCKS,
      "locks", G_TYPE_UINT, locks & SPICE_KEYBOARD_MODIFIER_FLAGS_MASK, NULL);

  return gst_event_new_custom (upstream ? GST_EVENT_CUSTOM_UPSTREAM :
      GST_EVENT_CUSTOM_DOWNSTREAM_STICKY, s);
}

gboolean
gst_spice_event_parse_key_locks (GstEvent * event, guint * locks)
{
  const GstStructure *s = event_structure (event, GST_EVENT_CUSTOM_UPSTREAM,
      GST_SPICE_EVENT_KEY_LOCKS);
  guint l = 0;

  if (!s)
    s = event_structure (event, GST_EVENT_CUSTOM_DOWNSTREAM_STICKY,
        GST_SPICE_EVENT_KEY_LOCKS);
  if (!s)
    return FALSE;
  gst_structure_get_uint (s, "locks", &l);
  if (locks)
    *locks = l & SPICE_KEYBOARD_MODIFIER_FLAGS_MASK;
  return TRUE;
}

GstEvent *
gst_spice_event_new_cursor (const GstSpiceCursor * c)
{
  GstStructure *s = gst_structure_new (GST_SPICE_EVENT_CURSOR,
      "visible", G_TYPE_BOOLEAN, c->visible,
      "x", G_TYPE_INT, c->x, "y", G_TYPE_INT, c->y,
      "hot-x", G_TYPE_INT, c->hot_x, "hot-y", G_TYPE_INT, c->hot_y,
      "width", G_TYPE_INT, c->width, "height", G_TYPE_INT, c->height,
      "serial", G_TYPE_UINT64, c->serial, NULL);

  if (c->shape)
    gst_structure_set (s, "shape", GST_TYPE_BUFFER, c->shape, NULL);
  return gst_event_new_custom (GST_EVENT_CUSTOM_DOWNSTREAM_STICKY, s);
}

gboolean
gst_spice_event_parse_cursor (GstEvent * event, GstSpiceCursor * c)
{
  const GstStructure *s = event_structure (event,
      GST_EVENT_CUSTOM_DOWNSTREAM_STICKY, GST_SPICE_EVENT_CURSOR);
  const GValue *v;

  if (!s)
    return FALSE;
  *c = (GstSpiceCursor) {
  0,};
  gst_structure_get_boolean (s, "visible", &c->visible);
  gst_structure_get_int (s, "x", &c->x);
  gst_structure_get_int (s, "y", &c->y);
  gst_structure_get_int (s, "hot-x", &c->hot_x);
  gst_structure_get_int (s, "hot-y", &c->hot_y);
  gst_structure_get_int (s, "width", &c->width);
  gst_structure_get_int (s, "height", &c->height);
  gst_structure_get_uint64 (s, "serial", &c->serial);
  v = gst_structure_get_value (s, "shape");
  if (v && GST_VALUE_HOLDS_BUFFER (v)) {
    GstBuffer *shape = gst_value_get_buffer (v);

    if (shape && c->width > 0 && c->height > 0 &&
        gst_buffer_get_size (shape) >= (gsize) c->width * c->height * 4)
      c->shape = gst_buffer_ref (shape);
  }
  if (!c->shape)
    c->width = c->height = 0;
  return TRUE;
}
