/* spicesink: the main channel
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Sent: MAIN_INIT; CHANNELS_LIST on ATTACH_CHANNELS; MOUSE_MODE on
 * request; PING every second; MIGRATE_SWITCH_HOST when the server hands
 * its clients to the next pipeline (sink_server_redirect()). AGENT_START / AGENT_DATA / AGENT_TOKEN go to
 * the agent endpoint (sinkagent.c).
 */
#include "sinksession.h"

#include "sinkdebug.h"

static SINK_DEBUG_CATEGORY (sink_main_debug, "spicesinkmain",
    "spicesink main channel");
#define GST_CAT_DEFAULT sink_main_debug ()

void
sink_main_init (SinkSession * s)
{
  GST_DEBUG ("session %08x: main channel of %s", s->id, s->peer);
  s->main_st.rtt_us = -1;
  s->main_st.mouse_mode = SPICE_MOUSE_MODE_CLIENT;
}

void
sink_main_linked (SinkSession * s)
{
  GByteArray *a = g_byte_array_new ();

  gst_spice_wire_write_main_init (a, s->id,
      SPICE_MOUSE_MODE_CLIENT | SPICE_MOUSE_MODE_SERVER,
      SPICE_MOUSE_MODE_CLIENT, sink_agent_hub_connected (s->shared->agent),
      SINK_AGENT_CLIENT_TOKENS, sink_conn_env_mm_time (s->shared->env));
  sink_conn_send (s->main, SPICE_MSG_MAIN_INIT, a, NULL);
  g_byte_array_unref (a);
  sink_agent_join (s);
  /* linked after the clients were asked to go: this one goes too */
  if (s->shared->redirected)
    sink_main_redirect (s);
}

static gboolean
sink_main_handle_attach_channels (SinkSession * s, guint16 type,
    const guint8 * body, gsize size)
{
  /* playback and record last, while the audio pad is linked */
  static const guint8 types[] = { SPICE_CHANNEL_DISPLAY,
    SPICE_CHANNEL_INPUTS, SPICE_CHANNEL_CURSOR, SPICE_CHANNEL_PLAYBACK,
    SPICE_CHANNEL_RECORD
  };
  static const guint8 ids[] = { 0, 0, 0, 0, 0 };
  guint n = s->shared->audio.enabled ? 5 : 3;
  GByteArray *a;

  if (s->main_st.attached) {
    sink_conn_close (s->main, "ATTACH_CHANNELS sent twice");
    return FALSE;
  }
  s->main_st.attached = TRUE;
  a = g_byte_array_new ();
  gst_spice_wire_write_channels_list (a, n, types, ids);
  sink_conn_send (s->main, SPICE_MSG_MAIN_CHANNELS_LIST, a, NULL);
  g_byte_array_unref (a);
  return TRUE;
}

static gboolean
sink_main_handle_mouse_mode_request (SinkSession * s, guint16 type,
    const guint8 * body, gsize size)
{
  GByteArray *a;
  guint16 mode;

  if (!gst_spice_wire_parse_mouse_mode_request (body, size, &mode) ||
      (mode != SPICE_MOUSE_MODE_CLIENT && mode != SPICE_MOUSE_MODE_SERVER)) {
    sink_conn_close (s->main, "bad MOUSE_MODE_REQUEST");
    return FALSE;
  }
  s->main_st.mouse_mode = mode;
  a = g_byte_array_new ();
  gst_spice_wire_write_mouse_mode (a, SPICE_MOUSE_MODE_CLIENT |
      SPICE_MOUSE_MODE_SERVER, mode);
  sink_conn_send (s->main, SPICE_MSG_MAIN_MOUSE_MODE, a, NULL);
  g_byte_array_unref (a);
  return TRUE;
}

static const SinkHandler handlers[] = {
  [SPICE_MSGC_MAIN_ATTACH_CHANNELS] = sink_main_handle_attach_channels,
  [SPICE_MSGC_MAIN_MOUSE_MODE_REQUEST] = sink_main_handle_mouse_mode_request,
  [SPICE_MSGC_MAIN_AGENT_START] = sink_agent_handle,
  [SPICE_MSGC_MAIN_AGENT_DATA] = sink_agent_handle,
  [SPICE_MSGC_MAIN_AGENT_TOKEN] = sink_agent_handle,
  /* CLIENT_INFO: nothing to do */
};

gboolean
sink_main_handle (SinkSession * s, guint16 type, const guint8 * body,
    gsize size)
{
  return sink_handlers_dispatch (GST_CAT_DEFAULT, handlers,
      G_N_ELEMENTS (handlers), s, type, body, size);
}

void
sink_main_ping (SinkSession * s)
{
  GByteArray *a;

  if (!sink_conn_is_linked (s->main))
    return;
  a = g_byte_array_new ();
  gst_spice_wire_write_ping (a, ++s->main_st.ping_id,
      (guint64) g_get_monotonic_time ());
  sink_conn_send (s->main, SPICE_MSG_PING, a, NULL);
  g_byte_array_unref (a);
}

void
sink_main_pong (SinkSession * s, guint64 ts)
{
  gint64 now = g_get_monotonic_time ();

  if (ts <= (guint64) now && (gint64) ts > now - 60 * G_TIME_SPAN_SECOND)
    s->main_st.rtt_us = now - (gint64) ts;
}

gboolean
sink_main_redirect (SinkSession * s)
{
  GInetSocketAddress *local;
  gchar *host;
  gint ports[2];
  gboolean tls;
  GByteArray *a;

  if (!sink_conn_is_linked (s->main) || sink_conn_is_dead (s->main))
    return FALSE;
  local = sink_conn_local_address (s->main);
  if (!local)
    return FALSE;
  /* spice-gtk reconnects its main channel the way it came (plain or
   * TLS) to the port of that kind, the others as usual */
  tls = sink_conn_tls (s->main);
  ports[0] = s->shared->ports[0];
  ports[1] = s->shared->ports[1];
  ports[tls ? 1 : 0] = g_inet_socket_address_get_port (local);
  host = s->shared->redirect_host ? g_strdup (s->shared->redirect_host) :
      g_inet_address_to_string (g_inet_socket_address_get_address (local));
  GST_INFO ("session %08x: %s asked to reconnect to %s port %d tls-port %d "
      "(subject %s)", s->id, s->peer, host, ports[0], ports[1],
      GST_STR_NULL (s->shared->cert_subject));
  a = g_byte_array_new ();
  /* the client verifies the certificate by its subject then, not by the
   * address it is sent to */
  gst_spice_wire_write_switch_host (a, (guint16) MAX (ports[0], 0),
      (guint16) MAX (ports[1], 0), host, s->shared->cert_subject);
  sink_conn_send (s->main, SPICE_MSG_MAIN_MIGRATE_SWITCH_HOST, a, NULL);
  g_byte_array_unref (a);
  g_free (host);
  g_object_unref (local);
  return TRUE;
}
