/* spicesink: one client session and the dispatch of its channels
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A main channel creates a session (random non-zero id, chosen by the
 * server); display, inputs and cursor channels join the session whose id
 * they give as connection_id. The session implements its connections'
 * hooks and hands each message to its channel's handler table
 * (sinkmain.c with its agent endpoint sinkagent.c, sinkdisplay.c,
 * sinkinputs.c, sinkcursor.c). The inputs
 * channel is dispatched without the server lock, the others with it.
 */
#include "sinksession.h"
#include "sinkdebug.h"

static SINK_DEBUG_CATEGORY (sink_session_debug, "spicesinksession",
    "spicesink client sessions");
#define GST_CAT_DEFAULT sink_session_debug ()

static SinkConn **
slot_of (SinkSession * s, guint8 type)
{
  switch (type) {
    case SPICE_CHANNEL_MAIN:
      return &s->main;
    case SPICE_CHANNEL_DISPLAY:
      return &s->display;
    case SPICE_CHANNEL_INPUTS:
      return &s->inputs;
    case SPICE_CHANNEL_CURSOR:
      return &s->cursor;
    case SPICE_CHANNEL_PLAYBACK:
      return &s->playback;
    case SPICE_CHANNEL_RECORD:
      return &s->record;
    default:
      return NULL;
  }
}

/* ------------------------------------------------ the connections' hooks */

/* server thread, lock held */
static void
session_linked (SinkConn * conn, gpointer user_data)
{
  SinkSession *s = user_data;

  switch (sink_conn_channel_type (conn)) {
    case SPICE_CHANNEL_MAIN:
      sink_main_linked (s);
      break;
    case SPICE_CHANNEL_DISPLAY:
      sink_display_linked (s);
      s->hooks->on_display_changed (s, s->hooks_data);
      break;
    case SPICE_CHANNEL_INPUTS:
      sink_inputs_linked (s);
      break;
    case SPICE_CHANNEL_CURSOR:
      sink_cursor_linked (s);
      break;
    case SPICE_CHANNEL_PLAYBACK:
      sink_playback_linked (s);
      break;
    case SPICE_CHANNEL_RECORD:
      sink_record_linked (s);
      break;
    default:
      break;
  }
}

/* server thread, lock held: messages every channel may send */
static gboolean
handle_common (SinkSession * s, SinkConn * conn, guint16 type,
    const guint8 * body, gsize size, gboolean * handled)
{
  *handled = TRUE;
  switch (type) {
    case SPICE_MSGC_ACK_SYNC:
    case SPICE_MSGC_ACK:
      return TRUE;              /* we never send SET_ACK; harmless */
    case SPICE_MSGC_PONG:{
      guint32 id;
      guint64 ts;

      if (!gst_spice_wire_parse_pong (body, size, &id, &ts)) {
        sink_conn_close (conn, "malformed PONG");
        return FALSE;
      }
      if (conn == s->main)
        sink_main_pong (s, ts);
      return TRUE;
    }
    case SPICE_MSGC_DISCONNECTING:
      sink_conn_close (conn, "client disconnecting");
      return FALSE;
    default:
      *handled = FALSE;
      return TRUE;
  }
}

/* server thread, lock NOT held */
static gboolean
session_message (SinkConn * conn, guint16 type, const guint8 * body,
    gsize size, gpointer user_data)
{
  SinkSession *s = user_data;
  GMutex *lock = s->shared->env->lock;
  guint8 channel = sink_conn_channel_type (conn);
  gboolean handled, ok;

  if (channel == SPICE_CHANNEL_INPUTS && type >= SPICE_MSGC_INPUTS_KEY_DOWN)
    return sink_inputs_handle (s, type, body, size);
  g_mutex_lock (lock);
  ok = handle_common (s, conn, type, body, size, &handled);
  if (!handled) {
    switch (channel) {
      case SPICE_CHANNEL_MAIN:
        ok = sink_main_handle (s, type, body, size);
        break;
      case SPICE_CHANNEL_DISPLAY:
        ok = sink_display_handle (s, type, body, size);
        break;
      case SPICE_CHANNEL_PLAYBACK:
        ok = sink_playback_handle (s, type, body, size);
        break;
      case SPICE_CHANNEL_RECORD:
        ok = sink_record_handle (s, type, body, size);
        break;
      default:
        break;
    }
  }
  g_mutex_unlock (lock);
  return ok;
}

/* Server thread, lock held, from the connection's finish: its slot is
 * free again; the session ends with its main channel. Drops the
 * connection's reference: @s may be freed on return. */
static void
session_closed (SinkConn * conn, gpointer user_data)
{
  SinkSession *s = user_data;
  SinkConn **slot = slot_of (s, sink_conn_channel_type (conn));

  if (slot && *slot == conn) {
    *slot = NULL;
    if (slot == &s->playback)
      s->play.started = FALSE;
    if (slot == &s->record)
      sink_record_closed (s);
    if (slot == &s->inputs)
      sink_inputs_closed (s);
    if (slot == &s->display) {
      sink_display_closed (s);
      s->hooks->on_display_changed (s, s->hooks_data);
    }
    if (slot == &s->main) {
      sink_agent_leave (s);
      sink_session_close (s, "session ended");
      s->hooks->on_ended (s, s->hooks_data);
    }
  }
  sink_session_unref (s);
}

/* server thread, lock held */
static void
session_drained (SinkConn * conn, gpointer user_data)
{
  SinkSession *s = user_data;

  if (conn == s->display)
    sink_display_drained (s);
  else if (conn == s->cursor)
    sink_cursor_drained (s);
  else if (conn == s->inputs)
    sink_inputs_drained (s);
}

static const SinkConnHooks session_conn_hooks = {
  .on_linked = session_linked,
  .on_message = session_message,
  .on_closed = session_closed,
  .on_drained = session_drained,
};

/* ------------------------------------------------------------ lifetime */

/* server thread, lock held (link stage of a main channel) */
SinkSession *
sink_session_new (guint32 id, SinkConn * main, const SinkShared * shared,
    const SinkSessionHooks * hooks, gpointer user_data)
{
  SinkSession *s = g_new0 (SinkSession, 1);

  s->refs = 2;
  s->id = id;
  s->peer_host = g_strdup (sink_conn_peer_host (main));
  s->peer = g_strdup (sink_conn_peer (main));
  s->shared = shared;
  s->hooks = hooks;
  s->hooks_data = user_data;
  s->main = main;
  sink_conn_set_hooks (main, &session_conn_hooks, s);
  sink_main_init (s);
  GST_INFO ("session %08x for %s", id, s->peer);
  return s;
}

/* server thread, lock held (or the loop is gone) */
void
sink_session_unref (SinkSession * s)
{
  g_assert (s->refs > 0);
  if (--s->refs > 0)
    return;
  g_assert (!s->main && !s->display && !s->inputs && !s->cursor &&
      !s->playback && !s->record && !s->agent.joined);
  GST_DEBUG ("session %08x freed", s->id);
  g_free (s->peer_host);
  g_free (s->peer);
  g_free (s);
}

/* server thread, lock held (link stage) */
gboolean
sink_session_attach (SinkSession * s, SinkConn * conn, guint8 type)
{
  SinkConn **slot = slot_of (s, type);

  if (!slot || *slot)
    return FALSE;
  *slot = conn;
  s->refs++;
  sink_conn_set_hooks (conn, &session_conn_hooks, s);
  return TRUE;
}

/* lock held */
void
sink_session_close (SinkSession * s, const gchar * reason)
{
  SinkConn *chans[] = { s->main, s->display, s->inputs, s->cursor,
    s->playback, s->record
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (chans); i++)
    if (chans[i])
      sink_conn_close (chans[i], reason);
}

/* server thread (timer) */
gint64
sink_session_last_rx_us (SinkSession * s)
{
  SinkConn *chans[] = { s->main, s->display, s->inputs, s->cursor,
    s->playback, s->record
  };
  gint64 last = 0;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (chans); i++)
    if (chans[i])
      last = MAX (last, sink_conn_last_rx_us (chans[i]));
  return last;
}

/* --------------------------------------------------------------- stats */

static GstStructure *
channel_stats (SinkConn * c)
{
  SinkConnCounters n;

  sink_conn_counters (c, &n);
  return gst_structure_new ("channel",
      "bytes-sent", G_TYPE_UINT64, n.bytes_out,
      "messages-sent", G_TYPE_UINT64, n.msgs_out,
      "bytes-received", G_TYPE_UINT64, n.bytes_in,
      "messages-received", G_TYPE_UINT64, n.msgs_in,
      "queued-bytes", G_TYPE_UINT64, (guint64) sink_conn_queued_bytes (c),
      "tls", G_TYPE_BOOLEAN, sink_conn_tls (c),
      "websocket", G_TYPE_BOOLEAN, sink_conn_websocket (c), NULL);
}

/* any thread, lock held (stats) */
GstStructure *
sink_session_stats (SinkSession * s)
{
  const SinkDisplayState *d = &s->disp;
  GstStructure *c = gst_structure_new ("client",
      "address", G_TYPE_STRING, s->peer_host,
      "peer", G_TYPE_STRING, s->peer,
      "session-id", G_TYPE_UINT, s->id,
      "draws", G_TYPE_UINT64, d->draws,
      "copies", G_TYPE_UINT64, d->copies,
      "updates", G_TYPE_UINT64, d->updates,
      "updates-skipped", G_TYPE_UINT64, d->updates_skipped,
      "draws-per-second", G_TYPE_DOUBLE, d->draws_per_s,
      "stream-frames", G_TYPE_UINT64, d->stream_frames,
      "stream-fps", G_TYPE_DOUBLE, d->stream_fps,
      "frames-dropped", G_TYPE_UINT64, d->frames_dropped,
      "stream-hides", G_TYPE_UINT64, d->stream_hides,
      "bitmaps", G_TYPE_UINT64, d->bitmaps,
      "behind", G_TYPE_BOOLEAN, d->behind,
      "behind-count", G_TYPE_UINT64, d->behind_count,
      "refreshes", G_TYPE_UINT64, d->refreshes,
      "refresh-wait-fallbacks", G_TYPE_UINT64, d->wait_fallbacks,
      "awaiting-picture", G_TYPE_BOOLEAN, d->awaiting_refresh,
      "key-events", G_TYPE_UINT64,
      (guint64) g_atomic_pointer_get (&s->in.key_events),
      "pointer-events", G_TYPE_UINT64,
      (guint64) g_atomic_pointer_get (&s->in.pointer_events),
      "ping-rtt-us", G_TYPE_INT64, s->main_st.rtt_us, NULL);
  SinkConn *chans[] = { s->main, s->display, s->inputs, s->cursor,
    s->playback, s->record
  };
  const gchar *names[] = { "main", "display", "inputs", "cursor",
    "playback", "record"
  };
  guint i;

  if (s->agent.joined) {
    GstStructure *as = sink_agent_stats (s);

    gst_structure_set (c, "agent", GST_TYPE_STRUCTURE, as, NULL);
    gst_structure_free (as);
  }
  if (d->pref_compression)
    gst_structure_set (c, "preferred-compression", G_TYPE_UINT,
        (guint) d->pref_compression, NULL);
  if (d->n_pref_codecs) {
    GValue arr = G_VALUE_INIT;

    g_value_init (&arr, GST_TYPE_ARRAY);
    for (i = 0; i < d->n_pref_codecs; i++) {
      GValue v = G_VALUE_INIT;

      g_value_init (&v, G_TYPE_UINT);
      g_value_set_uint (&v, d->pref_codecs[i]);
      gst_value_array_append_and_take_value (&arr, &v);
    }
    gst_structure_take_value (c, "preferred-video-codecs", &arr);
  }
  gst_structure_set (c, "stream-branch", G_TYPE_INT, d->branch,
      "stream-codec", G_TYPE_UINT, (guint) d->branch_codec,
      "stream-branch-changes", G_TYPE_UINT64, d->branch_changes,
      "stream-report-codec", G_TYPE_UINT, (guint) d->report_codec, NULL);
  if (d->have_margin)
    gst_structure_set (c, "stream-margin-ms", G_TYPE_INT, d->last_margin_ms,
        "stream-report-drops", G_TYPE_UINT64, d->report_drops, NULL);
  if (s->playback)
    gst_structure_set (c, "audio-packets", G_TYPE_UINT64, s->play.packets,
        "audio-bytes", G_TYPE_UINT64, s->play.bytes,
        "audio-dropped", G_TYPE_UINT64, s->play.dropped, NULL);
  if (s->record)
    gst_structure_set (c, "record-packets", G_TYPE_UINT64, s->rec.packets,
        "record-bytes", G_TYPE_UINT64, s->rec.bytes, NULL);
  for (i = 0; i < G_N_ELEMENTS (chans); i++) {
    if (chans[i]) {
      GstStructure *cs = channel_stats (chans[i]);

      gst_structure_set (c, names[i], GST_TYPE_STRUCTURE, cs, NULL);
      gst_structure_free (cs);
    }
  }
  if (s->display) {
    sink_conn_tcp_stats (s->display, c);
    if (gst_structure_has_field (c, "tcp-rtt-us"))
      gst_structure_set (c, "draw-bps", G_TYPE_UINT64, d->draw_bps, NULL);
  }
  return c;
}
