/* gst-spice: custom events between spicesrc, spicetiler and spicesink
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "gstspiceevents.h"

#include <spice/enums.h>
#include <string.h>

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

GstStructure *
gst_spice_report_new (gboolean health, const gchar * event,
    const gchar * peer, const gchar * source, const gchar * reason)
{
  return gst_structure_new (health ? GST_SPICE_MESSAGE_HEALTH :
      GST_SPICE_MESSAGE_SECURITY, "event", G_TYPE_STRING, event,
      "peer", G_TYPE_STRING, peer, "source", G_TYPE_STRING, source,
      "reason", G_TYPE_STRING, reason, NULL);
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

GstEvent *
gst_spice_event_new_monitors (const GstSpiceHeads * m)
{
  GstStructure *s = gst_structure_new (GST_SPICE_EVENT_MONITORS,
      "count", G_TYPE_UINT, m->count, "max", G_TYPE_UINT, m->max, NULL);
  GValue arr = G_VALUE_INIT;
  guint i;

  gst_value_array_init (&arr, m->count);
  for (i = 0; i < m->count && i < GST_SPICE_MAX_HEADS; i++) {
    const GstSpiceHead *h = &m->monitors[i];
    GValue v = G_VALUE_INIT;

    g_value_init (&v, GST_TYPE_STRUCTURE);
    g_value_take_boxed (&v, gst_structure_new ("monitor",
            "id", G_TYPE_UINT, h->id, "x", G_TYPE_INT, h->x,
            "y", G_TYPE_INT, h->y, "width", G_TYPE_INT, h->width,
            "height", G_TYPE_INT, h->height, NULL));
    gst_value_array_append_and_take_value (&arr, &v);
  }
  gst_structure_take_value (s, "monitors", &arr);
  return gst_event_new_custom (GST_EVENT_CUSTOM_DOWNSTREAM_STICKY, s);
}

gboolean
gst_spice_event_parse_monitors (GstEvent * event, GstSpiceHeads * m)
{
  const GstStructure *s = event_structure (event,
      GST_EVENT_CUSTOM_DOWNSTREAM_STICKY, GST_SPICE_EVENT_MONITORS);
  const GValue *arr;
  guint i, n;

  if (!s)
    return FALSE;
  memset (m, 0, sizeof (*m));
  arr = gst_structure_get_value (s, "monitors");
  if (!arr || !GST_VALUE_HOLDS_ARRAY (arr))
    return FALSE;
  n = gst_value_array_get_size (arr);
  if (n == 0 || n > GST_SPICE_MAX_HEADS)
    return FALSE;
  for (i = 0; i < n; i++) {
    const GValue *v = gst_value_array_get_value (arr, i);
    const GstStructure *h;
    GstSpiceHead *o = &m->monitors[i];

    if (!GST_VALUE_HOLDS_STRUCTURE (v))
      return FALSE;
    h = gst_value_get_structure (v);
    if (!gst_structure_get_uint (h, "id", &o->id) ||
        !gst_structure_get_int (h, "x", &o->x) ||
        !gst_structure_get_int (h, "y", &o->y) ||
        !gst_structure_get_int (h, "width", &o->width) ||
        !gst_structure_get_int (h, "height", &o->height) ||
        o->x < 0 || o->y < 0 || o->width <= 0 || o->height <= 0)
      return FALSE;
  }
  m->count = n;
  if (!gst_structure_get_uint (s, "max", &m->max) || m->max < n)
    m->max = n;
  return TRUE;
}

gboolean
gst_spice_heads_fit (const GstSpiceHeads * m, gint width, gint height)
{
  guint i;

  if (m->count == 0)
    return FALSE;
  for (i = 0; i < m->count; i++) {
    const GstSpiceHead *h = &m->monitors[i];
    if (h->x < 0 || h->y < 0 || h->width <= 0 || h->height <= 0 ||
        h->x > width - h->width || h->y > height - h->height)
      return FALSE;
  }
  return TRUE;
}

gint
gst_spice_heads_find (const GstSpiceHeads * m, gint x, gint y)
{
  guint i;

  for (i = 0; i < m->count; i++) {
    const GstSpiceHead *h = &m->monitors[i];
    if (x >= h->x && y >= h->y && x < h->x + h->width && y < h->y + h->height)
      return (gint) i;
  }
  return -1;
}
