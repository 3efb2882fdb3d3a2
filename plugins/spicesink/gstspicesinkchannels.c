/* spicesink: channel handlers (main, display, inputs, cursor) and the
 * last-known picture served to late joiners
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Sequences sent (see docs/spicesink.md):
 *   main:    MAIN_INIT; CHANNELS_LIST on ATTACH_CHANNELS; MOUSE_MODE on
 *            request; PING every second
 *   display: SURFACE_CREATE, the whole picture as one DRAW_COPY (a REFRESH
 *            update or a one-region cache; after 2 s whatever the cache
 *            has), MARK; then
 *            updates as DRAW_COPY; streams as STREAM_CREATE
 *            (+ STREAM_ACTIVATE_REPORT) / STREAM_DATA / STREAM_DESTROY
 *   inputs:  INPUTS_INIT; MOUSE_MOTION_ACK after every 4 motion messages
 *   cursor:  CURSOR_INIT; CURSOR_SET / CURSOR_MOVE on changes
 */
#include <string.h>
#include <gst/video/navigation.h>

#include "gstspicesinkpriv.h"

#define CACHE_MAX_ENTRIES 4096
#define CACHE_MAX_BYTES (96 * 1024 * 1024)

/* ------------------------------------------------------------ helpers */

gboolean
gst_spice_sink_session_display_ready (SinkSession * s)
{
  return s->display && s->display->state == CONN_DATA && s->surface_sent;
}

gboolean
gst_spice_sink_session_supports_codec (SinkSession * s, guint8 codec)
{
  SinkConn *d = s->display;
  const guint32 *caps;
  guint n, bit;

  if (!d)
    return TRUE;
  if (s->codec_failed & (1u << codec))
    return FALSE;
  caps = d->link.channel_caps;
  n = d->link.n_channel;
  if (!gst_spice_caps_test (caps, n, SPICE_DISPLAY_CAP_MULTI_CODEC))
    return codec == SPICE_VIDEO_CODEC_TYPE_MJPEG;
  switch (codec) {
    case SPICE_VIDEO_CODEC_TYPE_MJPEG:
      bit = SPICE_DISPLAY_CAP_CODEC_MJPEG;
      break;
    case SPICE_VIDEO_CODEC_TYPE_VP8:
      bit = SPICE_DISPLAY_CAP_CODEC_VP8;
      break;
    case SPICE_VIDEO_CODEC_TYPE_H264:
      bit = SPICE_DISPLAY_CAP_CODEC_H264;
      break;
    case SPICE_VIDEO_CODEC_TYPE_VP9:
      bit = SPICE_DISPLAY_CAP_CODEC_VP9;
      break;
    case SPICE_VIDEO_CODEC_TYPE_H265:
      bit = SPICE_DISPLAY_CAP_CODEC_H265;
      break;
    default:
      return FALSE;
  }
  return gst_spice_caps_test (caps, n, bit);
}

static void
send_fixed (SinkConn * conn, guint16 type, GByteArray * a)
{
  gst_spice_sink_conn_send (conn, type, a, NULL);
  g_byte_array_set_size (a, 0);
}

void
gst_spice_sink_send_draw (SinkConn * conn, const GstVideoRectangle * dest,
    guint8 type, GBytes * payload)
{
  GByteArray *a = g_byte_array_sized_new (GST_SPICE_WIRE_DRAW_COPY_HEAD_SIZE);

  if (type == GST_SPICE_IMAGE_COPY_BITS) {
    gint sx, sy;

    /* the draw chain checked that the source lies on the surface */
    gst_spice_copy_bits_payload_parse (g_bytes_get_data (payload, NULL), dest,
        G_MAXINT, G_MAXINT, &sx, &sy);
    gst_spice_wire_write_copy_bits (a, 0, dest, sx, sy);
    gst_spice_sink_conn_send (conn, SPICE_MSG_DISPLAY_COPY_BITS, a, NULL);
    g_byte_array_unref (a);
    if (conn->session)
      conn->session->copies++;
    return;
  }
  gst_spice_wire_write_draw_copy_head (a, 0, dest, type, 0);
  gst_spice_sink_conn_send (conn, SPICE_MSG_DISPLAY_DRAW_COPY, a, payload);
  g_byte_array_unref (a);
  if (conn->session) {
    conn->session->draws++;
    conn->session->draw_bytes += g_bytes_get_size (payload);
  }
}

/* --------------------------------------------------- last-known picture */

static void
cache_entry_free (gpointer p)
{
  SinkCacheEntry *e = p;

  g_bytes_unref (e->payload);
  g_free (e);
}

void
gst_spice_sink_cache_clear (GstSpiceSink * sink)
{
  if (!sink->cache)
    sink->cache = g_ptr_array_new_with_free_func (cache_entry_free);
  g_ptr_array_set_size (sink->cache, 0);
  sink->cache_bytes = 0;
  sink->cache_complete = FALSE;
}

void
gst_spice_sink_cache_add (GstSpiceSink * sink, const GstVideoRectangle * dest,
    guint8 type, gboolean lossy, GBytes * payload)
{
  SinkCacheEntry *e;
  guint i;

  if (!sink->cache)
    gst_spice_sink_cache_clear (sink);
  /* drop what this region hides completely */
  for (i = 0; i < sink->cache->len;) {
    SinkCacheEntry *o = g_ptr_array_index (sink->cache, i);

    if (gst_spice_rect_contains (dest, &o->dest)) {
      sink->cache_bytes -= g_bytes_get_size (o->payload);
      g_ptr_array_remove_index (sink->cache, i);
    } else {
      i++;
    }
  }
  if (sink->cache->len >= CACHE_MAX_ENTRIES ||
      sink->cache_bytes + g_bytes_get_size (payload) > CACHE_MAX_BYTES) {
    GST_DEBUG_OBJECT (sink, "last-known picture too fragmented, dropped");
    gst_spice_sink_cache_clear (sink);
    sink->cache_lossy_unknown = TRUE;
  }
  e = g_new (SinkCacheEntry, 1);
  e->dest = *dest;
  e->type = type;
  e->lossy = lossy || type == GST_SPICE_IMAGE_JPEG;
  e->payload = g_bytes_ref (payload);
  sink->cache_bytes += g_bytes_get_size (payload);
  g_ptr_array_add (sink->cache, e);
}

/* A copy (COPY_BITS) moves pixels of the picture: the cached regions,
 * replayed without it, would no longer make that picture. The cache is
 * dropped; a joining client then waits for a refresh. */
void
gst_spice_sink_cache_copy (GstSpiceSink * sink)
{
  if (gst_spice_sink_cache_has_lossy (sink))
    sink->cache_lossy_unknown = TRUE;
  gst_spice_sink_cache_clear (sink);
}

/* Whether clients that are up to date may hold lossy pixels somewhere
 * (a lossy region of the last-known picture, or a dropped cache). */
gboolean
gst_spice_sink_cache_has_lossy (GstSpiceSink * sink)
{
  guint i;

  if (sink->cache_lossy_unknown)
    return TRUE;
  for (i = 0; sink->cache && i < sink->cache->len; i++)
    if (((SinkCacheEntry *) g_ptr_array_index (sink->cache, i))->lossy)
      return TRUE;
  return FALSE;
}

static gint
cmp_int (gconstpointer a, gconstpointer b)
{
  return *(const gint *) a - *(const gint *) b;
}

/* Exact coverage test of the surface by the cached rectangles
 * (coordinate compression). Only run until it first succeeds: adding
 * regions never uncovers anything. */
void
gst_spice_sink_cache_update_complete (GstSpiceSink * sink)
{
  GArray *xs, *ys;
  guint i, j, k, nx, ny;
  guint8 *grid;
  gboolean complete = TRUE;

  if (sink->cache_complete || !sink->cache || sink->cache->len == 0 ||
      sink->width <= 0)
    return;
  xs = g_array_new (FALSE, FALSE, sizeof (gint));
  ys = g_array_new (FALSE, FALSE, sizeof (gint));
  {
    gint zero = 0;
    g_array_append_val (xs, zero);
    g_array_append_val (ys, zero);
    g_array_append_val (xs, sink->width);
    g_array_append_val (ys, sink->height);
  }
  for (i = 0; i < sink->cache->len; i++) {
    SinkCacheEntry *e = g_ptr_array_index (sink->cache, i);
    gint x1 = CLAMP (e->dest.x, 0, sink->width);
    gint x2 = CLAMP (e->dest.x + e->dest.w, 0, sink->width);
    gint y1 = CLAMP (e->dest.y, 0, sink->height);
    gint y2 = CLAMP (e->dest.y + e->dest.h, 0, sink->height);

    g_array_append_val (xs, x1);
    g_array_append_val (xs, x2);
    g_array_append_val (ys, y1);
    g_array_append_val (ys, y2);
  }
  g_array_sort (xs, cmp_int);
  g_array_sort (ys, cmp_int);
  /* unique */
  for (i = 1, nx = 1; i < xs->len; i++)
    if (g_array_index (xs, gint, i) != g_array_index (xs, gint, nx - 1))
      g_array_index (xs, gint, nx++) = g_array_index (xs, gint, i);
  for (i = 1, ny = 1; i < ys->len; i++)
    if (g_array_index (ys, gint, i) != g_array_index (ys, gint, ny - 1))
      g_array_index (ys, gint, ny++) = g_array_index (ys, gint, i);
  grid = g_malloc0 ((gsize) nx * ny);
  for (k = 0; k < sink->cache->len; k++) {
    SinkCacheEntry *e = g_ptr_array_index (sink->cache, k);
    gint x1 = e->dest.x, x2 = e->dest.x + e->dest.w;
    gint y1 = e->dest.y, y2 = e->dest.y + e->dest.h;

    for (j = 0; j + 1 < ny; j++) {
      gint cy = g_array_index (ys, gint, j);
      if (cy < y1 || cy >= y2)
        continue;
      for (i = 0; i + 1 < nx; i++) {
        gint cx = g_array_index (xs, gint, i);
        if (cx >= x1 && cx < x2)
          grid[j * nx + i] = 1;
      }
    }
  }
  for (j = 0; j + 1 < ny && complete; j++)
    for (i = 0; i + 1 < nx; i++)
      if (!grid[j * nx + i]) {
        complete = FALSE;
        break;
      }
  g_free (grid);
  g_array_unref (xs);
  g_array_unref (ys);
  sink->cache_complete = complete;
}

void
gst_spice_sink_replay_cache (GstSpiceSink * sink, SinkConn * conn)
{
  guint i;

  for (i = 0; sink->cache && i < sink->cache->len; i++) {
    SinkCacheEntry *e = g_ptr_array_index (sink->cache, i);

    gst_spice_sink_send_draw (conn, &e->dest, e->type, e->payload);
  }
}

/* The last-known picture is one region covering the whole surface (a
 * client's first draw would then be the whole picture). */
gboolean
gst_spice_sink_cache_is_one_full_region (GstSpiceSink * sink)
{
  SinkCacheEntry *e;

  if (!sink->cache || sink->cache->len != 1)
    return FALSE;
  e = g_ptr_array_index (sink->cache, 0);
  return e->dest.x == 0 && e->dest.y == 0 && e->dest.w == sink->width &&
      e->dest.h == sink->height;
}

/* ------------------------------------------------------------- display */

static void
request_all_key_units (GstSpiceSink * sink)
{
  guint i;

  for (i = 0; i < sink->streams->len; i++)
    gst_spice_sink_request_key_unit (sink, g_ptr_array_index (sink->streams,
            i), TRUE);
}

/* Sends the surface and the best picture we have to a display channel that
 * has none yet. */
void
gst_spice_sink_display_start (GstSpiceSink * sink, SinkSession * s)
{
  SinkConn *d = s->display;
  GByteArray *a;
  guint i;

  if (!d || d->state != CONN_DATA || sink->width <= 0)
    return;
  a = g_byte_array_new ();
  if (s->surface_sent) {
    /* new size: streams first, then the surface */
    for (i = 0; i < SINK_MAX_STREAMS; i++) {
      if (s->streams[i].created) {
        gst_spice_wire_write_stream_destroy (a, i);
        send_fixed (d, SPICE_MSG_DISPLAY_STREAM_DESTROY, a);
      }
      memset (&s->streams[i], 0, sizeof (s->streams[i]));
    }
    gst_spice_wire_write_surface_destroy (a, 0);
    send_fixed (d, SPICE_MSG_DISPLAY_SURFACE_DESTROY, a);
  }
  s->awaiting_refresh = FALSE;
  gst_spice_wire_write_surface_create (a, 0, sink->width, sink->height,
      SPICE_SURFACE_FMT_32_xRGB, SPICE_SURFACE_FLAGS_PRIMARY);
  send_fixed (d, SPICE_MSG_DISPLAY_SURFACE_CREATE, a);
  g_byte_array_unref (a);
  s->surface_sent = TRUE;
  gst_spice_sink_session_start_picture (sink, s);
}

/* The client has the whole picture: MARK, then normal updates (and streams
 * from their next key frame). */
void
gst_spice_sink_session_picture_done (GstSpiceSink * sink, SinkSession * s)
{
  GByteArray *a = g_byte_array_new ();

  send_fixed (s->display, SPICE_MSG_DISPLAY_MARK, a);
  g_byte_array_unref (a);
  s->awaiting_refresh = FALSE;
}

/* A client with a surface but without the picture (joined, or resyncs
 * after falling behind). Its first draw must be the whole picture (simple
 * clients such as spicy-screenshot save the surface at the first
 * invalidate): the cache is sent at once only when it is one region
 * covering the surface; otherwise the client gets nothing until the
 * REFRESH update that is requested here (see the draw chain), or the cache
 * as it is after SINK_REFRESH_WAIT_US (timer). */
void
gst_spice_sink_session_start_picture (GstSpiceSink * sink, SinkSession * s)
{
  s->partial_picture = FALSE;
  if (gst_spice_sink_cache_is_one_full_region (sink)) {
    gst_spice_sink_replay_cache (sink, s->display);
    gst_spice_sink_session_picture_done (sink, s);
    s->updates++;
  } else {
    s->awaiting_refresh = TRUE;
    s->await_since_us = g_get_monotonic_time ();
    gst_spice_sink_request_refresh (sink, TRUE);
  }
  request_all_key_units (sink);
}

/* Timer, lock held: bounds the wait for a REFRESH update. */
void
gst_spice_sink_session_check_wait (GstSpiceSink * sink, SinkSession * s,
    gint64 now)
{
  if (!s->awaiting_refresh || s->behind ||
      !gst_spice_sink_session_display_ready (s) ||
      now - s->await_since_us < SINK_REFRESH_WAIT_US)
    return;
  if (!sink->cache || sink->cache->len == 0)
    return;                     /* nothing to give yet */
  GST_WARNING_OBJECT (sink, "client %s (session %08x): no one-region "
      "picture after %" G_GINT64_FORMAT " ms, sending the cached picture as "
      "%u draws%s", s->peer_host, s->id,
      (now - s->await_since_us) / G_TIME_SPAN_MILLISECOND, sink->cache->len,
      sink->cache_complete ? "" : " (incomplete: the next refresh follows)");
  gst_spice_sink_replay_cache (sink, s->display);
  gst_spice_sink_session_picture_done (sink, s);
  s->partial_picture = !sink->cache_complete;
  s->wait_fallbacks++;
  s->updates++;
}

/* A client that fell behind has drained its queue: give it the picture
 * again instead of the updates it missed. */
void
gst_spice_sink_session_resync (GstSpiceSink * sink, SinkSession * s)
{
  s->behind = FALSE;
  s->refreshes++;
  GST_INFO_OBJECT (sink, "resynchronising %s", s->peer_host);
  gst_spice_sink_session_start_picture (sink, s);
}

void
gst_spice_sink_stream_destroy_all_clients (GstSpiceSink * sink, SinkStream * st)
{
  GList *l;
  GByteArray *a;

  if (!st->active)
    return;
  a = g_byte_array_new ();
  for (l = sink->sessions; l; l = l->next) {
    SinkSession *s = l->data;
    SinkClientStream *cs = &s->streams[st->spice_id];

    if (cs->created && s->display && s->display->state == CONN_DATA) {
      gst_spice_wire_write_stream_destroy (a, st->spice_id);
      send_fixed (s->display, SPICE_MSG_DISPLAY_STREAM_DESTROY, a);
    }
    memset (cs, 0, sizeof (*cs));
  }
  g_byte_array_unref (a);
  sink->stream_ids_used &= ~(G_GUINT64_CONSTANT (1) << st->spice_id);
  st->active = FALSE;
}

static SinkStream *
stream_by_spice_id (GstSpiceSink * sink, guint id)
{
  guint i;

  for (i = 0; i < sink->streams->len; i++) {
    SinkStream *st = g_ptr_array_index (sink->streams, i);

    if (st->active && st->spice_id == id)
      return st;
  }
  return NULL;
}

static gboolean
handle_stream_report (SinkConn * conn, const guint8 * body, gsize size)
{
  GstSpiceSink *sink = conn->sink;
  SinkSession *s = conn->session;
  GstSpiceStreamReport r;
  SinkClientStream *cs;
  SinkStream *st;

  if (!gst_spice_wire_parse_stream_report (body, size, &r)) {
    gst_spice_sink_conn_close (conn, "malformed STREAM_REPORT");
    return FALSE;
  }
  cs = &s->streams[r.stream_id];
  st = stream_by_spice_id (sink, r.stream_id);
  if (r.num_frames == 0 && r.num_drops == 0xffffffff) {
    /* the client cannot decode (or does not know) the stream */
    if (st && cs->created) {
      GST_WARNING_OBJECT (sink, "%s cannot decode stream %u (codec %u)",
          s->peer_host, r.stream_id, st->active_codec);
      s->codec_failed |= 1u << st->active_codec;
      memset (cs, 0, sizeof (*cs));
      gst_spice_sink_update_stream_control (sink);
    }
    return TRUE;
  }
  if (!cs->created || r.unique_id != cs->unique_id)
    return TRUE;                /* stale */
  s->last_margin_ms = r.last_frame_delay;
  s->report_drops += r.num_drops;
  s->have_margin = TRUE;
  GST_LOG_OBJECT (sink, "%s stream %u: %u frames, %u drops, margin %d ms",
      s->peer_host, r.stream_id, r.num_frames, r.num_drops, r.last_frame_delay);
  return TRUE;
}

/* -------------------------------------------------------------- inputs */

static GstNavigationModifierType
nav_state (SinkSession * s)
{
  guint32 st = s->mods;

  if (s->locks & 4)
    st |= GST_NAVIGATION_MODIFIER_LOCK_MASK;
  if (s->locks & 2)
    st |= GST_NAVIGATION_MODIFIER_MOD2_MASK;
  if (s->buttons & 1)
    st |= GST_NAVIGATION_MODIFIER_BUTTON1_MASK;
  if (s->buttons & 2)
    st |= GST_NAVIGATION_MODIFIER_BUTTON2_MASK;
  if (s->buttons & 4)
    st |= GST_NAVIGATION_MODIFIER_BUTTON3_MASK;
  if (s->buttons & 8)
    st |= GST_NAVIGATION_MODIFIER_BUTTON4_MASK;
  if (s->buttons & 16)
    st |= GST_NAVIGATION_MODIFIER_BUTTON5_MASK;
  return (GstNavigationModifierType) st;
}

static void
emit_key (GstSpiceSink * sink, SinkSession * s, const GstSpiceKeyEvent * k)
{
  const gchar *name = gst_spice_keymap_name_from_scancode (k->scancode);
  GstEvent *ev;

  if (!name)
    name = "VoidSymbol";
  ev = k->release ?
      gst_navigation_event_new_key_release (name, nav_state (s)) :
      gst_navigation_event_new_key_press (name, nav_state (s));
  gst_structure_set (gst_event_writable_structure (ev), "scancode",
      G_TYPE_UINT, k->scancode, NULL);
  if (k->release)
    s->mods &= ~gst_spice_keymap_modifier_mask (k->scancode);
  else
    s->mods |= gst_spice_keymap_modifier_mask (k->scancode);
  s->key_events++;
  GST_LOG_OBJECT (sink, "key %s 0x%x (%s)", k->release ? "up" : "down",
      k->scancode, name);
  gst_spice_sink_post_upstream (sink, sink->draw_pad, ev);
}

static void
emit_pointer (GstSpiceSink * sink, SinkSession * s, GstEvent * ev)
{
  s->pointer_events++;
  gst_spice_sink_post_upstream (sink, sink->draw_pad, ev);
}

static void
motion_done (SinkConn * conn)
{
  SinkSession *s = conn->session;

  if (++s->motion_count % SPICE_INPUT_MOTION_ACK_BUNCH == 0)
    gst_spice_sink_conn_send (conn, SPICE_MSG_INPUTS_MOUSE_MOTION_ACK,
        NULL, NULL);
}

static void
move_pointer (GstSpiceSink * sink, SinkSession * s, gint x, gint y)
{
  gint w = MAX (sink->width, 1), h = MAX (sink->height, 1);

  x = CLAMP (x, 0, w - 1);
  y = CLAMP (y, 0, h - 1);
  if (x == s->mouse_x && y == s->mouse_y)
    return;
  s->mouse_x = x;
  s->mouse_y = y;
  emit_pointer (sink, s, gst_navigation_event_new_mouse_move (x, y,
          nav_state (s)));
}

static gboolean
handle_inputs (SinkConn * conn, guint16 type, const guint8 * body, gsize size)
{
  GstSpiceSink *sink = conn->sink;
  SinkSession *s = conn->session;
  GstSpiceKeyEvent keys[8];
  gint n = -1, i;

  switch (type) {
    case SPICE_MSGC_INPUTS_KEY_DOWN:
    case SPICE_MSGC_INPUTS_KEY_UP:{
      guint32 code;

      if (gst_spice_wire_parse_key (body, size, &code))
        n = gst_spice_wire_decode_key_code (code, keys, G_N_ELEMENTS (keys));
      if (n <= 0) {
        gst_spice_sink_conn_close (conn, "malformed key code");
        return FALSE;
      }
      for (i = 0; i < n; i++) {
        /* KEY_UP carries release codes; trust the message type */
        keys[i].release = type == SPICE_MSGC_INPUTS_KEY_UP;
        emit_key (sink, s, &keys[i]);
      }
      return TRUE;
    }
    case SPICE_MSGC_INPUTS_KEY_SCANCODE:
      n = gst_spice_wire_decode_key_bytes (body, size, keys,
          G_N_ELEMENTS (keys));
      if (n <= 0) {
        gst_spice_sink_conn_close (conn, "malformed KEY_SCANCODE");
        return FALSE;
      }
      for (i = 0; i < n; i++)
        emit_key (sink, s, &keys[i]);
      return TRUE;
    case SPICE_MSGC_INPUTS_KEY_MODIFIERS:{
      guint16 m;

      if (!gst_spice_wire_parse_key_modifiers (body, size, &m)) {
        gst_spice_sink_conn_close (conn, "malformed KEY_MODIFIERS");
        return FALSE;
      }
      s->locks = m & 7;
      return TRUE;
    }
    case SPICE_MSGC_INPUTS_MOUSE_POSITION:{
      guint32 x, y;
      guint16 b;
      guint8 disp;

      if (!gst_spice_wire_parse_mouse_position (body, size, &x, &y, &b, &disp)) {
        gst_spice_sink_conn_close (conn, "malformed MOUSE_POSITION");
        return FALSE;
      }
      motion_done (conn);
      if (disp != 0)
        return TRUE;
      s->buttons = b;
      move_pointer (sink, s, (gint) MIN (x, G_MAXINT16 * 2),
          (gint) MIN (y, G_MAXINT16 * 2));
      return TRUE;
    }
    case SPICE_MSGC_INPUTS_MOUSE_MOTION:{
      gint32 dx, dy;
      guint16 b;

      if (!gst_spice_wire_parse_mouse_motion (body, size, &dx, &dy, &b)) {
        gst_spice_sink_conn_close (conn, "malformed MOUSE_MOTION");
        return FALSE;
      }
      motion_done (conn);
      s->buttons = b;
      dx = CLAMP (dx, -65536, 65536);
      dy = CLAMP (dy, -65536, 65536);
      move_pointer (sink, s, s->mouse_x + dx, s->mouse_y + dy);
      return TRUE;
    }
    case SPICE_MSGC_INPUTS_MOUSE_PRESS:
    case SPICE_MSGC_INPUTS_MOUSE_RELEASE:{
      guint8 button;
      guint16 b;
      gboolean press = type == SPICE_MSGC_INPUTS_MOUSE_PRESS;
      GstEvent *ev;

      if (!gst_spice_wire_parse_mouse_button (body, size, &button, &b)) {
        gst_spice_sink_conn_close (conn, "malformed mouse button message");
        return FALSE;
      }
      ev = press ? gst_navigation_event_new_mouse_button_press (button,
          s->mouse_x, s->mouse_y, nav_state (s)) :
          gst_navigation_event_new_mouse_button_release (button, s->mouse_x,
          s->mouse_y, nav_state (s));
      s->buttons = b;
      emit_pointer (sink, s, ev);
      return TRUE;
    }
    default:
      break;
  }
  return TRUE;
}

/* -------------------------------------------------------------- cursor */

void
gst_spice_sink_send_cursor (GstSpiceSink * sink, SinkSession * s, gboolean init)
{
  SinkConn *c = s->cursor;
  GByteArray *a;
  const GstSpiceCursor *cur = &sink->cursor;
  gboolean has_shape = sink->cursor_shape != NULL;
  gint16 x = (gint16) CLAMP (cur->x, G_MININT16, G_MAXINT16);
  gint16 y = (gint16) CLAMP (cur->y, G_MININT16, G_MAXINT16);
  guint64 unique = cur->serial + 1;

  if (!c || c->state != CONN_DATA)
    return;
  a = g_byte_array_new ();
  if (init) {
    gst_spice_wire_write_cursor_init_head (a, x, y, cur->visible, has_shape,
        unique, cur->width, cur->height, cur->hot_x, cur->hot_y);
    gst_spice_sink_conn_send (c, SPICE_MSG_CURSOR_INIT, a,
        has_shape ? sink->cursor_shape : NULL);
  } else if (s->cursor_serial_sent != unique ||
      s->cursor_visible_sent != cur->visible) {
    gst_spice_wire_write_cursor_set_head (a, x, y, cur->visible, has_shape,
        unique, cur->width, cur->height, cur->hot_x, cur->hot_y);
    gst_spice_sink_conn_send (c, SPICE_MSG_CURSOR_SET, a,
        has_shape ? sink->cursor_shape : NULL);
  } else {
    gst_spice_wire_write_cursor_move (a, x, y);
    gst_spice_sink_conn_send (c, SPICE_MSG_CURSOR_MOVE, a, NULL);
  }
  s->cursor_serial_sent = unique;
  s->cursor_visible_sent = cur->visible;
  g_byte_array_unref (a);
}

/* ---------------------------------------------------------------- main */

static gboolean
handle_main (SinkConn * conn, guint16 type, const guint8 * body, gsize size)
{
  GByteArray *a;

  switch (type) {
    case SPICE_MSGC_MAIN_ATTACH_CHANNELS:{
      static const guint8 types[] = { SPICE_CHANNEL_DISPLAY,
        SPICE_CHANNEL_INPUTS, SPICE_CHANNEL_CURSOR
      };
      static const guint8 ids[] = { 0, 0, 0 };

      if (conn->attached) {
        gst_spice_sink_conn_close (conn, "ATTACH_CHANNELS sent twice");
        return FALSE;
      }
      conn->attached = TRUE;
      a = g_byte_array_new ();
      gst_spice_wire_write_channels_list (a, 3, types, ids);
      gst_spice_sink_conn_send (conn, SPICE_MSG_MAIN_CHANNELS_LIST, a, NULL);
      g_byte_array_unref (a);
      return TRUE;
    }
    case SPICE_MSGC_MAIN_MOUSE_MODE_REQUEST:{
      guint16 mode;

      if (!gst_spice_wire_parse_mouse_mode_request (body, size, &mode) ||
          (mode != SPICE_MOUSE_MODE_CLIENT &&
              mode != SPICE_MOUSE_MODE_SERVER)) {
        gst_spice_sink_conn_close (conn, "bad MOUSE_MODE_REQUEST");
        return FALSE;
      }
      conn->session->mouse_mode = mode;
      a = g_byte_array_new ();
      gst_spice_wire_write_mouse_mode (a, SPICE_MOUSE_MODE_CLIENT |
          SPICE_MOUSE_MODE_SERVER, mode);
      gst_spice_sink_conn_send (conn, SPICE_MSG_MAIN_MOUSE_MODE, a, NULL);
      g_byte_array_unref (a);
      return TRUE;
    }
    default:
      return TRUE;              /* CLIENT_INFO: nothing to do */
  }
}

/* ------------------------------------------------------------- dispatch */

void
gst_spice_sink_channel_linked (SinkConn * conn)
{
  GstSpiceSink *sink = conn->sink;
  SinkSession *s = conn->session;
  GByteArray *a = g_byte_array_new ();

  switch (conn->type) {
    case SPICE_CHANNEL_MAIN:
      gst_spice_wire_write_main_init (a, s->id,
          SPICE_MOUSE_MODE_CLIENT | SPICE_MOUSE_MODE_SERVER,
          SPICE_MOUSE_MODE_CLIENT, gst_spice_sink_mm_time (sink));
      gst_spice_sink_conn_send (conn, SPICE_MSG_MAIN_INIT, a, NULL);
      break;
    case SPICE_CHANNEL_DISPLAY:
      s->surface_sent = FALSE;
      memset (s->streams, 0, sizeof (s->streams));
      gst_spice_sink_display_start (sink, s);
      gst_spice_sink_update_stream_control (sink);
      break;
    case SPICE_CHANNEL_INPUTS:
      gst_spice_wire_write_inputs_init (a, 0);
      gst_spice_sink_conn_send (conn, SPICE_MSG_INPUTS_INIT, a, NULL);
      break;
    case SPICE_CHANNEL_CURSOR:
      gst_spice_sink_send_cursor (sink, s, TRUE);
      break;
    default:
      break;
  }
  g_byte_array_unref (a);
}

void
gst_spice_sink_channel_closed (SinkConn * conn)
{
  SinkSession *s = conn->session;

  if (s && s->display == conn) {
    memset (s->streams, 0, sizeof (s->streams));
    s->surface_sent = FALSE;
    s->behind = FALSE;
    s->awaiting_refresh = FALSE;
    s->partial_picture = FALSE;
  }
}

/* Returns FALSE if the connection was closed. */
gboolean
gst_spice_sink_channel_handle (SinkConn * conn, guint16 type,
    const guint8 * body, gsize size)
{
  SinkSession *s = conn->session;

  switch (type) {
    case SPICE_MSGC_ACK_SYNC:
    case SPICE_MSGC_ACK:
      return TRUE;              /* we never send SET_ACK; harmless */
    case SPICE_MSGC_PONG:{
      guint32 id;
      guint64 ts;
      gint64 now = g_get_monotonic_time ();

      if (!gst_spice_wire_parse_pong (body, size, &id, &ts)) {
        gst_spice_sink_conn_close (conn, "malformed PONG");
        return FALSE;
      }
      if (conn->type == SPICE_CHANNEL_MAIN && ts <= (guint64) now &&
          (gint64) ts > now - 60 * G_TIME_SPAN_SECOND)
        s->rtt_us = now - (gint64) ts;
      return TRUE;
    }
    case SPICE_MSGC_DISCONNECTING:
      gst_spice_sink_conn_close (conn, "client disconnecting");
      return FALSE;
    default:
      break;
  }
  switch (conn->type) {
    case SPICE_CHANNEL_MAIN:
      return handle_main (conn, type, body, size);
    case SPICE_CHANNEL_DISPLAY:
      if (type == SPICE_MSGC_DISPLAY_STREAM_REPORT)
        return handle_stream_report (conn, body, size);
      return TRUE;              /* DISPLAY_INIT: no caches to set up */
    case SPICE_CHANNEL_INPUTS:
      return handle_inputs (conn, type, body, size);
    default:
      return TRUE;
  }
}
