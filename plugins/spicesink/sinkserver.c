/* spicesink: the SPICE server
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Owns the server thread and its GMainContext, the listeners, TLS, the
 * connection limits, the sessions, the 250 ms timer, the SPICE side of
 * the streams, the last-known picture, the rate control and the one lock
 * (`lock`) that guards them. Calls go down (session -> channel -> conn,
 * picture, rate); the element is reached only through
 * SinkServerCallbacks.
 */
#include <string.h>
#include <errno.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/socket.h>

#include "sinkserver.h"
#include "sinksession.h"
#include "sinkrate.h"
#include "sinkpressure.h"
#include "sinkdebug.h"

static SINK_DEBUG_CATEGORY (sink_server_debug, "spicesinkserver",
    "spicesink server (listeners, limits, sessions, fan-out)");
#define GST_CAT_DEFAULT sink_server_debug ()

#define FKU_MIN_INTERVAL_US (200 * G_TIME_SPAN_MILLISECOND)
/* the per-address connection buckets are dropped when full again; above
 * this many addresses all of them are (memory bound against many sources) */
#define MAX_RATE_BUCKETS 4096
/* events: at most one message per (source, event, reason) in this time;
 * the next says how many were suppressed (docs/spicesink.md "Events") */
#define EVENT_INTERVAL_US G_TIME_SPAN_SECOND
#define MAX_EVENT_SLOTS 4096
/* automatic limits on an address that is not loopback */
#define AUTO_CONN_RATE 10
#define LISTEN_BACKLOG 256

/* token bucket of one source address (max-connections-per-second) */
typedef struct
{
  gdouble tokens;
  gint64 last_us;
  gint64 last_warn_us;
  guint64 suppressed;           /* refusals not logged since last_warn_us */
} SinkRateBucket;

/* the SPICE side of one stream pad */
typedef struct
{
  guint index;
  guint8 codec;                 /* SPICE_VIDEO_CODEC_TYPE_*, 0 unknown */
  gint width, height;
  gboolean active;              /* a SPICE stream exists (spice_id valid) */
  guint spice_id;
  guint meta_id;
  GstVideoRectangle dest;
  guint8 active_codec;
  gboolean enabled;             /* what we last told upstream */
  gboolean eos;
  gboolean flushing;
  gint64 last_fku_us;
  guint64 frames_in, frames_dropped;
  SinkRateStream *rate;
} ServerStream;

struct _SinkServer
{
  GstObject *owner;             /* for logs only */
  const SinkServerCallbacks *cb;
  gpointer cb_data;

  GMutex lock;
  GCond room;                   /* room in output queues / flushing */
  SinkServerSettings set;       /* lock held */
  SinkConnEnv env;
  SinkShared shared;

  /* server thread */
  GMainLoop *loop;
  GThread *thread;
  GSocket *listen_sock[2];      /* plain, TLS */
  GSource *listen_src[2];
  GSource *timer_src;
  GTlsCertificate *cert;
  gint bound_port[2];
  GList *conns;                 /* SinkConn* */
  GHashTable *rate_buckets;     /* source -> SinkRateBucket */
  GstSpiceReportLimit *reports; /* by "source event reason" */
  gboolean loopback;            /* listening on a loopback address */
  GList *sessions;              /* SinkSession* (one reference each) */
  guint next_conn_id;
  gint64 last_stats_us;

  /* render state */
  gboolean draw_flushing;
  GPtrArray *streams;           /* ServerStream* */
  guint64 stream_ids_used;
  SinkRate *rate;
  guint64 link_bps, link_draw_bps;      /* slowest client's */

  /* audio */
  SinkSession *record_session;  /* whose record goes upstream */
  guint64 audio_packets_in;

  /* admission */
  gboolean pressure_unreadable; /* warned once: the PSI file failed */

  /* the streams' frame-rate cap (stream-cpu-pressure) */
  SinkPressureFps pressure_fps;
  gboolean fps_pressure_unreadable;     /* warned once */
  guint64 pressure_fps_changes;

  /* totals */
  guint64 updates_in, regions_in, stream_frames_in, clients_total,
      clients_refused;
  guint64 connections_total, refused_rate, refused_pending,
      refused_source_links, refused_source_sessions, refused_cpu_pressure,
      closed_handshake_timeout, closed_idle, closed_stalled, auth_failures;
};

static const SinkSessionHooks session_hooks;
static const SinkConnHooks link_hooks;
static ServerStream *stream_find (SinkServer * server, guint index);

/* ------------------------------------------------------------- events */

/* lock held: posts a report the limit handed out */
static void
event_post (GstStructure * st, gpointer data)
{
  SinkServer *server = data;

  server->cb->post_report (st, server->cb_data);
}

/* Lock held, any thread of the server: one event about @peer (counted
 * under @source). Posted at once unless one of the same (source, event,
 * reason) was posted within EVENT_INTERVAL_US; then it is kept, and the
 * timer posts the latest kept one with the count of the others. */
static void
server_report (SinkServer * server, const gchar * source, const gchar * peer,
    const SinkEvent * ev)
{
  GstStructure *st;
  gboolean afresh;
  gchar *key;

  st = gst_spice_report_new (ev->health, ev->event, peer, source, ev->reason);
  if (ev->limit)
    gst_structure_set (st, "limit", G_TYPE_UINT, ev->limit, NULL);
  if (ev->msg_type >= 0)
    gst_structure_set (st, "type", G_TYPE_UINT, (guint) ev->msg_type,
        "size", G_TYPE_UINT, (guint) ev->msg_size, NULL);
  if (ev->detail)
    gst_structure_set (st, "detail", G_TYPE_STRING, ev->detail, NULL);
  if (!server->reports) {
    gst_structure_set (st, "suppressed", G_TYPE_UINT64, (guint64) 0, NULL);
    event_post (st, server);
    return;
  }
  key = g_strdup_printf ("%s %s %s", source, ev->event, ev->reason);
  st = gst_spice_report_limit_offer (server->reports, key, st,
      g_get_monotonic_time (), &afresh);
  g_free (key);
  if (afresh)
    GST_WARNING_OBJECT (server->owner, "%u event sources: starting the "
        "event table afresh", MAX_EVENT_SLOTS);
  if (st)
    event_post (st, server);
}

/* lock held (SinkConnEnv.report) */
static void
conn_report (SinkConn * conn, const SinkEvent * ev, gpointer user_data)
{
  server_report (user_data, sink_conn_source (conn),
      sink_conn_peer_host (conn), ev);
}

/* Lock held: the admission key of @host: an IPv4 address itself, an IPv6
 * address its first ipv6-source-prefix bits ("2001:db8:1:2::/64"), an
 * IPv4-mapped IPv6 address the IPv4 one. */
static gchar *
source_key (SinkServer * server, const gchar * host)
{
  GInetAddress *a = g_inet_address_new_from_string (host);
  guint8 b[16];
  guint bits = MIN (server->set.ipv6_source_prefix, 128), i;
  gchar *str, *key;

  if (!a || g_inet_address_get_family (a) != G_SOCKET_FAMILY_IPV6) {
    g_clear_object (&a);
    return g_strdup (host);
  }
  memcpy (b, g_inet_address_to_bytes (a), 16);
  g_object_unref (a);
  if (memcmp (b, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12) == 0)
    return g_strdup_printf ("%u.%u.%u.%u", b[12], b[13], b[14], b[15]);
  for (i = 0; i < 16; i++) {
    if (bits >= 8 * (i + 1))
      continue;
    b[i] &= bits > 8 * i ? (guint8) (0xff << (8 - (bits - 8 * i))) : 0;
  }
  a = g_inet_address_new_from_bytes (b, G_SOCKET_FAMILY_IPV6);
  str = g_inet_address_to_string (a);
  g_object_unref (a);
  key = bits < 128 ? g_strdup_printf ("%s/%u", str, bits) : g_strdup (str);
  g_free (str);
  return key;
}

/* lock held: max-connections-per-second in effect */
static guint
conn_rate_limit (SinkServer * server)
{
  if (server->set.max_conn_rate >= 0)
    return (guint) server->set.max_conn_rate;
  return server->loopback ? 0 : AUTO_CONN_RATE;
}

/* lock held: max-sessions-per-source in effect, 0 none */
static guint
sessions_per_source_limit (SinkServer * server)
{
  if (server->set.max_sessions_per_source >= 0)
    return (guint) server->set.max_sessions_per_source;
  return server->loopback ? 0 : MAX (1, server->set.max_clients / 2);
}

/* ------------------------------------------------------------ lifetime */

/* lock held (SinkAgentHubCallbacks) */
static void
agent_post_upstream (GstEvent * event, gpointer user_data)
{
  SinkServer *server = user_data;

  server->cb->post_upstream (-1, event, server->cb_data);
}

static const SinkAgentHubCallbacks agent_hub_callbacks = {
  .post_upstream = agent_post_upstream,
};

/* the element's init */
SinkServer *
sink_server_new (GstObject * owner, const SinkServerCallbacks * callbacks,
    gpointer user_data)
{
  SinkServer *server = g_new0 (SinkServer, 1);

  server->owner = owner;
  server->cb = callbacks;
  server->cb_data = user_data;
  g_mutex_init (&server->lock);
  g_mutex_init (&server->shared.heads_lock);
  g_cond_init (&server->room);
  server->env.lock = &server->lock;
  server->env.room = &server->room;
  server->env.report = conn_report;
  server->env.report_data = server;
  server->env.channel_served[SPICE_CHANNEL_MAIN] = TRUE;
  server->env.channel_served[SPICE_CHANNEL_DISPLAY] = TRUE;
  server->env.channel_served[SPICE_CHANNEL_INPUTS] = TRUE;
  server->env.channel_served[SPICE_CHANNEL_CURSOR] = TRUE;
  gst_spice_caps_set (&server->env.channel_caps[SPICE_CHANNEL_DISPLAY], 1,
      SPICE_DISPLAY_CAP_STREAM_REPORT);
  /* the heads (spice-monitors) */
  gst_spice_caps_set (&server->env.channel_caps[SPICE_CHANNEL_DISPLAY], 1,
      SPICE_DISPLAY_CAP_MONITORS_CONFIG);
  /* a client may say what it prefers: its codec picks its stream branch,
   * its image compression is recorded (sinkdisplay.c) */
  gst_spice_caps_set (&server->env.channel_caps[SPICE_CHANNEL_DISPLAY], 1,
      SPICE_DISPLAY_CAP_PREF_COMPRESSION);
  gst_spice_caps_set (&server->env.channel_caps[SPICE_CHANNEL_DISPLAY], 1,
      SPICE_DISPLAY_CAP_PREF_VIDEO_CODEC_TYPE);
  gst_spice_caps_set (&server->env.channel_caps[SPICE_CHANNEL_INPUTS], 1,
      SPICE_INPUTS_CAP_KEY_SCANCODE);
  gst_spice_caps_set (&server->env.channel_caps[SPICE_CHANNEL_PLAYBACK], 1,
      SPICE_PLAYBACK_CAP_VOLUME);
  gst_spice_caps_set (&server->env.channel_caps[SPICE_CHANNEL_PLAYBACK], 1,
      SPICE_PLAYBACK_CAP_OPUS);
  gst_spice_caps_set (&server->env.channel_caps[SPICE_CHANNEL_RECORD], 1,
      SPICE_RECORD_CAP_VOLUME);
  server->shared.env = &server->env;
  server->shared.picture = sink_picture_new ();
  server->shared.agent = sink_agent_hub_new (&agent_hub_callbacks, server);
  server->streams = g_ptr_array_new_with_free_func (g_free);
  server->rate = sink_rate_new ();
  server->draw_flushing = TRUE;
  server->bound_port[0] = server->bound_port[1] = -1;
  return server;
}

void
sink_server_settings_clear (SinkServerSettings * s)
{
  g_clear_pointer (&s->address, g_free);
  g_clear_pointer (&s->cert_file, g_free);
  g_clear_pointer (&s->redirect_host, g_free);
  g_clear_pointer (&s->key_file, g_free);
  g_clear_pointer (&s->password, g_free);
  g_clear_pointer (&s->cpu_pressure_file, g_free);
  g_clear_pointer (&s->allowed_origins, g_free);
}

void
sink_server_settings_copy (SinkServerSettings * dst,
    const SinkServerSettings * src)
{
  *dst = *src;
  dst->address = g_strdup (src->address);
  dst->cert_file = g_strdup (src->cert_file);
  dst->redirect_host = g_strdup (src->redirect_host);
  dst->key_file = g_strdup (src->key_file);
  dst->password = g_strdup (src->password);
  dst->cpu_pressure_file = g_strdup (src->cpu_pressure_file);
  dst->allowed_origins = g_strdup (src->allowed_origins);
}

/* the element's finalize */
void
sink_server_free (SinkServer * server)
{
  sink_server_stop (server);
  sink_server_settings_clear (&server->set);
  sink_picture_free (server->shared.picture);
  sink_agent_hub_free (server->shared.agent);
  if (server->shared.cursor_shape)
    g_bytes_unref (server->shared.cursor_shape);
  g_ptr_array_unref (server->streams);
  sink_rate_free (server->rate);
  g_mutex_clear (&server->lock);
  g_mutex_clear (&server->shared.heads_lock);
  g_cond_clear (&server->room);
  g_free (server);
}

/* any thread (set_property, NULL -> READY); takes the lock */
void
sink_server_configure (SinkServer * server, const SinkServerSettings * set)
{
  g_mutex_lock (&server->lock);
  sink_server_settings_clear (&server->set);
  sink_server_settings_copy (&server->set, set);
  server->env.queue_size = set->queue_size;
  server->env.notsent_lowat = set->notsent_lowat;
  server->env.tcp_pacing = set->tcp_pacing;
  server->env.stream_latency = set->stream_latency;
  server->env.allowed_origins = server->set.allowed_origins;
  sink_agent_hub_set_max_clipboard (server->shared.agent, set->max_clipboard);
  sink_agent_hub_set_max_file_transfer (server->shared.agent,
      set->max_file_transfer);
  g_mutex_unlock (&server->lock);
}

/* after sink_server_start(), the thread that started it */
gint
sink_server_bound_port (SinkServer * server, gboolean tls)
{
  return server->bound_port[tls ? 1 : 0];
}

/* ------------------------------------------------------ upward requests */

/* lock held */
static void
request_refresh (SinkServer * server, gboolean force)
{
  if (sink_picture_refresh_due (server->shared.picture, force,
          g_get_monotonic_time ()))
    server->cb->request_refresh (server->cb_data);
}

/* lock held */
static void
request_key_unit (SinkServer * server, ServerStream * st, gboolean force)
{
  gint64 now = g_get_monotonic_time ();

  if (!force && now - st->last_fku_us < FKU_MIN_INTERVAL_US)
    return;
  st->last_fku_us = now;
  server->cb->request_key_unit (st->index, server->cb_data);
}

/* lock held */
static void
stream_destroy_all_clients (SinkServer * server, ServerStream * st)
{
  GList *l;

  if (!st->active)
    return;
  for (l = server->sessions; l; l = l->next)
    sink_display_stream_destroy (l->data, st->spice_id);
  server->stream_ids_used &= ~(G_GUINT64_CONSTANT (1) << st->spice_id);
  st->active = FALSE;
}

/* lock held: each client's branch (the stream pad whose frames it gets,
 * sinkdisplay.c), and whether the stream pads are enabled: while every
 * client with a display takes one of them. The pads are one stream region
 * in several codecs (the tiler has one stream), so they are all enabled
 * or all disabled: a client that decodes none of them gets the area as
 * draws, and so does everyone. */
static void
update_streams (SinkServer * server)
{
  SinkBranch branches[SINK_MAX_STREAMS];
  gboolean enabled = TRUE;
  guint i, n = 0;
  GList *l;

  for (i = 0; i < server->streams->len && n < G_N_ELEMENTS (branches); i++) {
    ServerStream *st = g_ptr_array_index (server->streams, i);

    if (st->codec == 0)
      continue;
    branches[n].index = st->index;
    branches[n].codec = st->codec;
    n++;
  }
  for (l = server->sessions; l; l = l->next) {
    SinkSession *s = l->data;
    gint b;
    ServerStream *st;

    if (!sink_conn_is_linked (s->display))
      continue;
    b = sink_display_choose_branch (s, branches, n);
    if (b < 0)
      enabled = FALSE;
    st = b >= 0 ? stream_find (server, b) : NULL;
    /* the new branch starts for it at a key frame of its own */
    if (sink_display_set_branch (s, b, st ? st->codec : 0) && st)
      request_key_unit (server, st, TRUE);
  }
  for (i = 0; i < server->streams->len; i++) {
    ServerStream *st = g_ptr_array_index (server->streams, i);

    if (st->codec == 0 || enabled == st->enabled)
      continue;
    st->enabled = enabled;
    GST_INFO_OBJECT (server->owner, "stream %u %s", st->index, enabled ?
        "enabled: every client decodes a stream pad's codec" :
        "disabled: a client decodes none, asking for draws");
    if (!enabled)
      stream_destroy_all_clients (server, st);
    else
      request_key_unit (server, st, TRUE);
    server->cb->stream_control (st->index, enabled, server->cb_data);
  }
}

/* ------------------------------------------------------ session hooks */

/* lock held (SinkSessionHooks) */
static void
session_wants (SinkSession * s, guint wants, gpointer user_data)
{
  SinkServer *server = user_data;
  guint i;

  if (wants & SINK_WANT_REFRESH)
    request_refresh (server, TRUE);
  if (wants & SINK_WANT_KEY_UNITS)
    for (i = 0; i < server->streams->len; i++)
      request_key_unit (server, g_ptr_array_index (server->streams, i), TRUE);
}

/* lock held (SinkSessionHooks) */
static void
session_display_changed (SinkSession * s, gpointer user_data)
{
  update_streams (user_data);
}

/* server thread, lock held (SinkSessionHooks, from a connection's
 * finish): the session leaves the list; it is freed when its last
 * connection is finished too */
static void
session_ended (SinkSession * s, gpointer user_data)
{
  SinkServer *server = user_data;
  GList *l = g_list_find (server->sessions, s);

  if (!l)
    return;
  server->sessions = g_list_delete_link (server->sessions, l);
  if (server->record_session == s)
    server->record_session = NULL;
  update_streams (server);
  sink_session_unref (s);
}

/* server thread, lock not held */
static void
session_navigation (SinkSession * s, GstEvent * event, gpointer user_data)
{
  SinkServer *server = user_data;

  server->cb->post_input (s->id, event, server->cb_data);
}

/* server thread, lock held: one client's record goes upstream at a time
 * (the first that started; the next after it stopped) */
static void
session_record (SinkSession * s, GstEvent * event, gpointer user_data)
{
  SinkServer *server = user_data;

  if (gst_spice_event_parse_record_start (event, NULL, NULL) &&
      !server->record_session)
    server->record_session = s;
  if (server->record_session != s) {
    gst_event_unref (event);
    return;
  }
  if (gst_spice_event_is_record_stop (event))
    server->record_session = NULL;
  server->cb->post_upstream (SINK_SERVER_AUDIO_PAD, event, server->cb_data);
}

static const SinkSessionHooks session_hooks = {
  .on_wants = session_wants,
  .on_display_changed = session_display_changed,
  .on_ended = session_ended,
  .on_navigation = session_navigation,
  .on_record = session_record,
};

/* ---------------------------------------------------------- link stage */

/* lock held */
static SinkSession *
session_find (SinkServer * server, guint32 id)
{
  GList *l;

  for (l = server->sessions; l; l = l->next)
    if (((SinkSession *) l->data)->id == id)
      return l->data;
  return NULL;
}

/* lock held */
static gboolean
password_required (SinkServer * server)
{
  return server->set.password && server->set.password[0] &&
      !server->set.disable_ticketing;
}

/* Server thread, lock held: reads the PSI file for the setting @name
 * (at @limit): TRUE with its avg10 and (if @total_us) its total; FALSE,
 * with one warning until it can be read again (*@warned), if it cannot */
static gboolean
read_pressure (SinkServer * server, const gchar * name, guint limit,
    gboolean * warned, gdouble * avg10, guint64 * total_us)
{
  GError *err = NULL;

  if (!sink_pressure_read (server->set.cpu_pressure_file, avg10, total_us,
          &err)) {
    if (!*warned)
      GST_WARNING_OBJECT (server->owner, "%s=%u has no effect: %s", name,
          limit, err->message);
    *warned = TRUE;
    g_error_free (err);
    return FALSE;
  }
  *warned = FALSE;
  return TRUE;
}

/* Server thread, lock held: whether a new session is refused because
 * the CPU it would run on is saturated (max-cpu-pressure); reports it.
 * A PSI file that cannot be read admits, with one warning. */
static gboolean
cpu_saturated (SinkServer * server, SinkConn * conn, SinkEvent * ev)
{
  gdouble avg10;
  gchar *detail;

  if (!server->set.max_cpu_pressure || !server->set.cpu_pressure_file ||
      !read_pressure (server, "max-cpu-pressure",
          server->set.max_cpu_pressure, &server->pressure_unreadable, &avg10,
          NULL))
    return FALSE;
  if (avg10 < server->set.max_cpu_pressure)
    return FALSE;
  server->refused_cpu_pressure++;
  detail = g_strdup_printf ("CPU pressure %.0f%% (%s) reached "
      "max-cpu-pressure", avg10, server->set.cpu_pressure_file);
  GST_WARNING_OBJECT (server->owner, "%s: new session refused: %s",
      sink_conn_peer (conn), detail);
  ev->health = TRUE;
  ev->reason = "cpu-pressure";
  ev->limit = server->set.max_cpu_pressure;
  ev->detail = detail;
  conn_report (conn, ev, server);
  ev->detail = NULL;
  g_free (detail);
  return TRUE;
}

/* server thread, lock held: which session a linking channel joins */
static guint32
link_session (SinkConn * conn, const GstSpiceLinkMess * m,
    const guint8 * ticket, gsize ticket_size, const gchar ** reason,
    gpointer user_data)
{
  SinkServer *server = user_data;
  SinkSession *s;

  if (password_required (server) &&
      !gst_spice_ticket_key_check (server->env.ticket_key, ticket,
          ticket_size, server->set.password)) {
    SinkEvent ev = SINK_EVENT_INIT (FALSE, "wrong-ticket", "wrong-password");

    server->auth_failures++;
    *reason = ev.detail = "wrong password";
    conn_report (conn, &ev, server);
    return SPICE_LINK_ERR_PERMISSION_DENIED;
  }
  if (m->channel_type == SPICE_CHANNEL_MAIN) {
    SinkEvent ev = SINK_EVENT_INIT (FALSE, "refused", NULL);
    guint per_source = sessions_per_source_limit (server), n = 0;
    guint32 id;
    GList *l;

    for (l = server->sessions; per_source && l; l = l->next) {
      gchar *src = source_key (server, ((SinkSession *) l->data)->peer_host);

      n += g_strcmp0 (src, sink_conn_source (conn)) == 0;
      g_free (src);
    }
    if (g_list_length (server->sessions) >= server->set.max_clients) {
      server->clients_refused++;
      GST_WARNING_OBJECT (server->owner, "%s: max-clients=%u reached",
          sink_conn_peer (conn), server->set.max_clients);
      *reason = ev.detail = "max-clients reached";
      ev.reason = "max-clients";
      ev.limit = server->set.max_clients;
      conn_report (conn, &ev, server);
      return SPICE_LINK_ERR_ERROR;
    }
    if (cpu_saturated (server, conn, &ev)) {
      *reason = "max-cpu-pressure reached";
      return SPICE_LINK_ERR_ERROR;
    }
    if (per_source && n >= per_source) {
      server->refused_source_sessions++;
      GST_WARNING_OBJECT (server->owner, "%s: %u sessions of source %s "
          "(max-sessions-per-source=%u)", sink_conn_peer (conn), n,
          sink_conn_source (conn), per_source);
      *reason = ev.detail = "max-sessions-per-source reached";
      ev.reason = "max-sessions-per-source";
      ev.limit = per_source;
      conn_report (conn, &ev, server);
      return SPICE_LINK_ERR_ERROR;
    }
    do {
      id = g_random_int ();
    } while (id == 0 || session_find (server, id));
    s = sink_session_new (id, conn, &server->shared, &session_hooks, server);
    server->sessions = g_list_append (server->sessions, s);
    server->clients_total++;
    return SPICE_LINK_ERR_OK;
  }
  s = session_find (server, m->connection_id);
  if (!s || !sink_conn_is_linked (s->main)) {
    SinkEvent ev = SINK_EVENT_INIT (FALSE, "refused", "unknown-session");

    *reason = ev.detail = "unknown session id";
    conn_report (conn, &ev, server);
    return SPICE_LINK_ERR_BAD_CONNECTION_ID;
  }
  if (!sink_session_attach (s, conn, m->channel_type)) {
    *reason = "channel already linked in this session";
    return SPICE_LINK_ERR_CHANNEL_NOT_AVAILABLE;
  }
  return SPICE_LINK_ERR_OK;
}

static const SinkConnHooks link_hooks = {
  .on_link = link_session,
};

/* ------------------------------------------------------------- accept */

static gchar *
peer_host (GSocketAddress * addr)
{
  gchar *host = NULL;

  if (addr && G_IS_INET_SOCKET_ADDRESS (addr))
    host = g_inet_address_to_string (g_inet_socket_address_get_address
        (G_INET_SOCKET_ADDRESS (addr)));
  return host ? host : g_strdup ("?");
}

/* Server thread: the next connection of @lsock (non-blocking) and the
 * address accept() gave for it (a client that resets at once has none
 * left for getpeername()); NULL when none is waiting. */
static GSocket *
accept_one (GSocket * lsock, GSocketAddress ** peer)
{
  struct sockaddr_storage ss;
  socklen_t len = sizeof (ss);
  GSocket *sock;
  GError *err = NULL;
  gint fd;

  *peer = NULL;
  do {
    len = sizeof (ss);
    fd = accept (g_socket_get_fd (lsock), (struct sockaddr *) &ss, &len);
  } while (fd < 0 && (errno == ECONNABORTED || errno == EINTR));
  if (fd < 0) {
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      GST_WARNING ("accept failed: %s", g_strerror (errno));
    return NULL;
  }
  fcntl (fd, F_SETFD, FD_CLOEXEC);
  sock = g_socket_new_from_fd (fd, &err);
  if (!sock) {
    GST_WARNING ("accepted socket: %s", err->message);
    g_error_free (err);
    close (fd);
    return NULL;
  }
  *peer = g_socket_address_new_from_native (&ss, len);
  return sock;
}

/* lock held */
static guint
count_conns (SinkServer * server, gboolean pending_only)
{
  GList *l;
  guint n = 0;

  for (l = server->conns; l; l = l->next) {
    SinkConn *c = l->data;

    if (!sink_conn_is_dead (c) && !(pending_only && sink_conn_is_linked (c)))
      n++;
  }
  return n;
}

/* lock held: connections of @source in the link stage */
static guint
count_source_pending (SinkServer * server, const gchar * source)
{
  GList *l;
  guint n = 0;

  for (l = server->conns; l; l = l->next) {
    SinkConn *c = l->data;

    if (!sink_conn_is_dead (c) && !sink_conn_is_linked (c) &&
        g_strcmp0 (sink_conn_source (c), source) == 0)
      n++;
  }
  return n;
}

/* lock held: a refusal at accept, reported */
static void
refuse (SinkServer * server, const gchar * source, const gchar * host,
    const gchar * reason, guint limit, const gchar * detail)
{
  SinkEvent ev = SINK_EVENT_INIT (FALSE, "refused", reason);

  ev.limit = limit;
  ev.detail = detail;
  server_report (server, source, host, &ev);
}

/* Server thread, lock held: connection limits checked before anything is
 * allocated for a new socket: max-pending-links (all sources),
 * max-links-per-source, and max-connections-per-second with
 * connection-burst (per source). *@source: the socket's admission key. */
static gboolean
accept_allowed (SinkServer * server, GSocketAddress * peer, gchar ** source)
{
  SinkServerSettings *set = &server->set;
  gint64 now = g_get_monotonic_time ();
  guint rate = conn_rate_limit (server), n;
  gboolean ok = TRUE;
  SinkRateBucket *b;
  gchar *host = peer_host (peer);
  gchar *key = source_key (server, host);

  if ((n = count_conns (server, TRUE)) >= set->max_pending) {
    server->refused_pending++;
    GST_WARNING_OBJECT (server->owner, "connection from %s refused: %u "
        "connections already in the link stage (max-pending-links=%u)", host,
        n, set->max_pending);
    refuse (server, key, host, "max-pending-links", set->max_pending,
        "connections in the link stage (all sources)");
    ok = FALSE;
  } else if (set->max_links_per_source &&
      (n = count_source_pending (server, key)) >= set->max_links_per_source) {
    server->refused_source_links++;
    /* a flood: the operator's line is the (rate-limited) event */
    GST_INFO_OBJECT (server->owner, "connection from %s refused: %u "
        "connections of source %s already in the link stage "
        "(max-links-per-source=%u)", host, n, key, set->max_links_per_source);
    refuse (server, key, host, "max-links-per-source",
        set->max_links_per_source, "connections of this source in the "
        "link stage");
    ok = FALSE;
  } else if (rate > 0 && server->rate_buckets) {
    b = g_hash_table_lookup (server->rate_buckets, key);
    if (!b) {
      if (g_hash_table_size (server->rate_buckets) >= MAX_RATE_BUCKETS) {
        GST_WARNING_OBJECT (server->owner, "%u source addresses in the "
            "connection rate table: starting it afresh",
            g_hash_table_size (server->rate_buckets));
        g_hash_table_remove_all (server->rate_buckets);
      }
      b = g_new0 (SinkRateBucket, 1);
      b->tokens = set->conn_burst;
      b->last_us = now;
      g_hash_table_insert (server->rate_buckets, g_strdup (key), b);
    }
    b->tokens = MIN ((gdouble) set->conn_burst, b->tokens +
        (now - b->last_us) * (gdouble) rate / G_TIME_SPAN_SECOND);
    b->last_us = now;
    if (b->tokens >= 1.0) {
      b->tokens -= 1.0;
    } else {
      ok = FALSE;
      server->refused_rate++;
      /* one warning per address and second, with the count in between */
      if (now - b->last_warn_us >= G_TIME_SPAN_SECOND) {
        GST_WARNING_OBJECT (server->owner, "connection from %s refused: "
            "more than max-connections-per-second=%u (connection-burst=%u) "
            "from this address (%" G_GUINT64_FORMAT " more refused since the "
            "last warning)", host, rate, set->conn_burst, b->suppressed);
        b->last_warn_us = now;
        b->suppressed = 0;
      } else {
        b->suppressed++;
      }
      refuse (server, key, host, "max-connections-per-second", rate,
          "new connections of this source per second");
    }
  }
  g_free (host);
  if (ok) {
    server->connections_total++;
    *source = key;
  } else {
    g_free (key);
  }
  return ok;
}

/* server thread, lock held (timer) */
static gboolean
prune_bucket (gpointer key, gpointer value, gpointer user_data)
{
  SinkServer *server = user_data;
  SinkRateBucket *b = value;
  gint64 now = g_get_monotonic_time ();

  /* full again (and no refusal to report): forget the address */
  guint rate = conn_rate_limit (server);

  return b->suppressed == 0 && (b->tokens + (now - b->last_us) *
      (gdouble) rate / G_TIME_SPAN_SECOND >= server->set.conn_burst ||
      rate == 0);
}

/* server thread */
static gboolean
accept_cb (GSocket * lsock, GIOCondition cond, gpointer user_data)
{
  SinkServer *server = user_data;
  gboolean tls = lsock == server->listen_sock[1];
  guint i;

  for (i = 0; i < 16; i++) {
    GSocketAddress *peer;
    GSocket *sock = accept_one (lsock, &peer);
    gchar *source = NULL;
    SinkConn *conn;

    if (!sock)
      break;
    g_socket_set_blocking (sock, FALSE);
    g_mutex_lock (&server->lock);
    if (!accept_allowed (server, peer, &source)) {
      g_mutex_unlock (&server->lock);
      g_socket_close (sock, NULL);
      g_object_unref (sock);
      g_clear_object (&peer);
      continue;
    }
    conn = sink_conn_new (&server->env, sock, peer, tls,
        ++server->next_conn_id);
    g_clear_object (&peer);
    sink_conn_set_source (conn, source);
    g_free (source);
    server->conns = g_list_append (server->conns, conn);
    GST_DEBUG_OBJECT (server->owner, "connection %u from %s%s",
        sink_conn_id (conn), sink_conn_peer (conn), tls ? " (TLS)" : "");
    sink_conn_set_hooks (conn, &link_hooks, server);
    sink_conn_start (conn, server->cert);
    g_mutex_unlock (&server->lock);
  }
  return G_SOURCE_CONTINUE;
}

/* -------------------------------------------------------------- timers */

/* Server thread, lock held: finishes the connections marked dead (from
 * any thread) and frees what nobody uses any more. A finish runs hooks that
 * may close other connections (a main channel takes its session with it):
 * the list is walked again until a walk finishes nothing. Runs from a
 * dispatch of its own (the kick, the timer), never inside a connection's
 * callback. */
static void
reap (SinkServer * server)
{
  GList *l, *next;
  gboolean again;

  do {
    again = FALSE;
    for (l = server->conns; l; l = l->next)
      again |= sink_conn_finish (l->data);
  } while (again);
  for (l = server->conns; l; l = next) {
    SinkConn *conn = l->data;

    next = l->next;
    if (sink_conn_is_freeable (conn)) {
      server->conns = g_list_delete_link (server->conns, l);
      sink_conn_free (conn);
    }
  }
}

/* server thread: finishes dead connections, writes what the render path
 * queued */
static gboolean
kick_dispatch (GSource * source, GSourceFunc cb, gpointer user_data)
{
  SinkServer *server = user_data;
  GList *l;

  g_source_set_ready_time (source, -1);
  g_mutex_lock (&server->lock);
  reap (server);
  for (l = server->conns; l; l = l->next)
    if (sink_conn_has_queued (l->data))
      sink_conn_flush (l->data);
  g_mutex_unlock (&server->lock);
  return G_SOURCE_CONTINUE;
}

static GSourceFuncs kick_funcs = {
  NULL, NULL, kick_dispatch, NULL,
};

/* server thread, lock held, at each stream-target tick: the frame-rate
 * cap the host's CPU pressure sets every stream (stream-cpu-pressure,
 * sinkpressure.h); 0 = none. A change is reported while a stream is
 * @streaming (an idle gateway on a busy host says nothing: it has no
 * frames to give up). */
static gint
pressure_fps_cap (SinkServer * server, gint64 now, gboolean streaming)
{
  SinkServerSettings *set = &server->set;
  SinkEvent ev = SINK_EVENT_INIT (TRUE, "stream-fps", "cpu-pressure");
  gdouble avg10;
  guint64 total;
  gchar *detail, *to;
  gint cap;

  if (!set->stream_cpu_pressure || !set->cpu_pressure_file ||
      !read_pressure (server, "stream-cpu-pressure", set->stream_cpu_pressure,
          &server->fps_pressure_unreadable, &avg10, &total)) {
    /* off, or nothing known: no cap */
    memset (&server->pressure_fps, 0, sizeof (server->pressure_fps));
    return 0;
  }
  if (!sink_pressure_fps_feed (&server->pressure_fps, total, now,
          set->stream_cpu_pressure))
    return sink_pressure_fps_cap (&server->pressure_fps);
  cap = sink_pressure_fps_cap (&server->pressure_fps);
  server->pressure_fps_changes++;
  if (!streaming)
    return cap;
  to = cap ? g_strdup_printf ("at most %d fps", cap) :
      g_strdup ("at its own frame rate");
  detail = g_strdup_printf ("CPU pressure %.0f%% of the last second (%s): "
      "every stream %s", server->pressure_fps.share, set->cpu_pressure_file,
      to);
  g_free (to);
  GST_WARNING_OBJECT (server->owner, "%s", detail);
  ev.limit = set->stream_cpu_pressure;
  ev.detail = detail;
  server_report (server, "all", "all", &ev);
  g_free (detail);
  return cap;
}

/* server thread, lock held: link estimates every tick, stream targets
 * every ~500 ms (sinkrate.h) */
static void
rate_tick (SinkServer * server, gint64 now)
{
  SinkRateClients clients = { 0, };
  GArray *decisions;
  GArray *live;
  gdouble dt;
  GList *l;
  guint i;

  for (l = server->sessions; l; l = l->next) {
    SinkSession *s = l->data;

    if (sink_display_ready (s))
      sink_conn_sample_link (s->display, now);
  }
  if (!sink_rate_due (server->rate, now, &dt))
    return;
  for (l = server->sessions; l; l = l->next) {
    SinkSession *s = l->data;
    guint64 bps;

    sink_display_count_rate (s, dt);
    if (!sink_display_ready (s))
      continue;
    clients.clients++;
    bps = sink_conn_link (s->display)->bps;
    if (bps && (clients.link_bps == 0 || bps < clients.link_bps)) {
      clients.link_bps = bps;
      clients.draw_bps = s->disp.draw_bps;
    }
  }
  server->link_bps = clients.link_bps;
  server->link_draw_bps = clients.draw_bps;
  live = g_array_new (FALSE, FALSE, sizeof (SinkRateStream *));
  for (i = 0; i < server->streams->len; i++) {
    ServerStream *st = g_ptr_array_index (server->streams, i);

    if (st->codec && st->enabled && !st->eos && st->frames_in > 0)
      g_array_append_val (live, st->rate);
  }
  clients.fps_cap = pressure_fps_cap (server, now, live->len > 0 &&
      clients.clients > 0);
  decisions = g_array_new (FALSE, FALSE, sizeof (SinkRateDecision));
  sink_rate_tick (server->rate, &clients, (SinkRateStream **) live->data,
      live->len, dt, now, decisions);
  for (i = 0; i < decisions->len; i++) {
    SinkRateDecision *d = &g_array_index (decisions, SinkRateDecision, i);

    server->cb->post_upstream (d->index, gst_spice_event_new_rate (d->bitrate,
            d->fps_n, 1, d->scale), server->cb_data);
  }
  g_array_unref (decisions);
  g_array_unref (live);
}

/* server thread, every 250 ms */
static gboolean
timer_cb (gpointer user_data)
{
  SinkServer *server = user_data;
  SinkServerSettings *set = &server->set;
  GList *l;
  gint64 now = g_get_monotonic_time ();
  gboolean second = now - server->last_stats_us >= G_TIME_SPAN_SECOND;
  gdouble dt = (now - server->last_stats_us) / (gdouble) G_TIME_SPAN_SECOND;
  gboolean want_refresh = FALSE;

  g_mutex_lock (&server->lock);
  reap (server);
  for (l = server->conns; l; l = l->next) {
    SinkConn *conn = l->data;
    gchar *reason;

    if (sink_conn_is_dead (conn))
      continue;
    switch (sink_conn_check_timeouts (conn, now, set->handshake_timeout)) {
      case SINK_CONN_LINK_EXPIRED:{
        SinkEvent ev = SINK_EVENT_INIT (FALSE, "handshake-timeout",
            "handshake-timeout");

        server->closed_handshake_timeout++;
        reason = g_strdup_printf ("handshake-timeout=%u ms",
            set->handshake_timeout);
        ev.limit = set->handshake_timeout;
        ev.detail = "no channel linked in time";
        conn_report (conn, &ev, server);
        sink_conn_close (conn, reason);
        g_free (reason);
        continue;
      }
      case SINK_CONN_ERROR_UNREAD:{
        SinkEvent ev = SINK_EVENT_INIT (FALSE, "handshake-timeout",
            "link-error-unread");

        server->closed_handshake_timeout++;
        ev.limit = set->handshake_timeout;
        ev.detail = "peer does not read the link error";
        conn_report (conn, &ev, server);
        sink_conn_close (conn, ev.detail);
        continue;
      }
      case SINK_CONN_STALLED:{
        SinkEvent ev = SINK_EVENT_INIT (TRUE, "stalled-close",
            "stall-timeout");

        server->closed_stalled++;
        ev.limit = SINK_CONN_STALL_TIMEOUT_MS;
        ev.detail = "client stopped reading (less than 16 KiB in the stall "
            "limit)";
        conn_report (conn, &ev, server);
        sink_conn_close (conn, ev.detail);
        continue;
      }
      case SINK_CONN_IN_TIME:
        break;
    }
    if (second && sink_conn_is_linked (conn))
      sink_conn_update_tcp_info (conn);
  }
  for (l = server->sessions; l; l = l->next) {
    SinkSession *s = l->data;
    gint64 last = sink_session_last_rx_us (s);

    if (set->idle_timeout && sink_conn_is_linked (s->main) &&
        now - last > (gint64) set->idle_timeout * G_TIME_SPAN_MILLISECOND) {
      SinkEvent ev = SINK_EVENT_INIT (TRUE, "idle-close", "idle-timeout");
      gchar *src = source_key (server, s->peer_host);

      server->closed_idle++;
      GST_WARNING_OBJECT (server->owner, "%s: nothing received for %"
          G_GINT64_FORMAT " ms (idle-timeout=%u ms): closing the session",
          s->peer, (now - last) / 1000, set->idle_timeout);
      ev.limit = set->idle_timeout;
      ev.detail = "nothing received from the client";
      server_report (server, src, s->peer_host, &ev);
      g_free (src);
      sink_session_close (s, "idle timeout");
      continue;
    }
    if (sink_conn_is_linked (s->display))
      sink_conn_update_tcp_info (s->display);
    sink_display_check_wait (s, now);
    if ((s->disp.awaiting_refresh || s->disp.partial_picture) &&
        !s->disp.behind)
      want_refresh = TRUE;
    if (second && dt > 0) {
      sink_display_count_second (s, dt);
      sink_main_ping (s);
    }
  }
  if (second) {
    server->last_stats_us = now;
    if (server->rate_buckets)
      g_hash_table_foreach_remove (server->rate_buckets, prune_bucket, server);
    if (server->reports)
      gst_spice_report_limit_flush (server->reports, now, event_post, server);
  }
  rate_tick (server, now);
  if (want_refresh)
    request_refresh (server, FALSE);
  g_mutex_unlock (&server->lock);
  return G_SOURCE_CONTINUE;
}

/* the server thread: runs the GMainContext until stopped */
static gpointer
server_thread (gpointer data)
{
  SinkServer *server = data;

  g_main_context_push_thread_default (server->env.ctx);
  g_main_loop_run (server->loop);
  g_main_context_pop_thread_default (server->env.ctx);
  return NULL;
}

/* ---------------------------------------------------------- start/stop */

static GSocket *
listen_on (GInetAddress * addr, gint port, gint * bound, GError ** error)
{
  GSocket *sock;
  GSocketAddress *sa, *local;

  sock = g_socket_new (g_inet_address_get_family (addr),
      G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, error);
  if (!sock)
    return NULL;
  g_socket_set_blocking (sock, FALSE);
  /* a flood of one source must not fill the accept queue for the rest */
  g_socket_set_listen_backlog (sock, LISTEN_BACKLOG);
  sa = g_inet_socket_address_new (addr, (guint16) port);
  if (!g_socket_bind (sock, sa, TRUE, error) || !g_socket_listen (sock, error)) {
    g_object_unref (sa);
    g_object_unref (sock);
    return NULL;
  }
  g_object_unref (sa);
  local = g_socket_get_local_address (sock, NULL);
  *bound = local ? g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS
      (local)) : port;
  g_clear_object (&local);
  return sock;
}

/* The subject of @cert the way spice-gtk's cert-subject reads it:
 * "KEY=VALUE" in the certificate's order (which GLib's TLS backends keep),
 * joined by ',', with ',' and '\\' escaped by '\\'. NULL for a subject that
 * cannot be written so (a multi-valued or hex-encoded name). */
static gchar *
cert_subject_for_spice (GTlsCertificate * cert)
{
  gchar *dn = g_tls_certificate_get_subject_name (cert);
  GPtrArray *rdns = g_ptr_array_new_with_free_func (g_free);
  GString *cur = g_string_new (NULL), *out = NULL;
  gboolean ok = dn != NULL && *dn != '\0';
  const gchar *p;
  gchar c;
  guint i;

  for (p = dn; ok && *p; p++) {
    if (*p == '\\') {
      p++;
      /* \XX (hex) is a byte of UTF-8; anything else stands for itself */
      if (g_ascii_isxdigit (p[0]) && g_ascii_isxdigit (p[1])) {
        c = (gchar) (g_ascii_xdigit_value (p[0]) * 16 +
            g_ascii_xdigit_value (p[1]));
        p++;
      } else if (*p) {
        c = *p;
      } else {
        ok = FALSE;
        break;
      }
      /* spice's own escapes */
      if (c == ',' || c == '\\')
        g_string_append_c (cur, '\\');
      g_string_append_c (cur, c);
    } else if (*p == '+' || (*p == '#' && cur->len > 0 &&
            cur->str[cur->len - 1] == '=')) {
      ok = FALSE;
    } else if (*p == ',') {
      g_ptr_array_add (rdns, g_string_free (cur, FALSE));
      cur = g_string_new (NULL);
    } else {
      g_string_append_c (cur, *p);
    }
  }
  g_ptr_array_add (rdns, g_string_free (cur, FALSE));
  if (ok) {
    out = g_string_new (NULL);
    for (i = 0; i < rdns->len; i++) {
      const gchar *rdn = g_ptr_array_index (rdns, i);

      if (!strchr (rdn, '=')) {
        ok = FALSE;
        break;
      }
      g_string_append_printf (out, "%s%s", out->len ? "," : "", rdn);
    }
  }
  g_ptr_array_unref (rdns);
  g_free (dn);
  if (!ok) {
    if (out)
      g_string_free (out, TRUE);
    return NULL;
  }
  return g_string_free (out, FALSE);
}

/* A listening TCP socket of the owner's (listen-fd): a duplicate of its
 * own, so that the owner's stays open when this one closes. *@loopback is
 * cleared when it listens on an address that is not loopback. */
static GSocket *
listen_adopt (gint fd, gint * bound, gboolean * loopback, GError ** error)
{
  gint own = fcntl (fd, F_DUPFD_CLOEXEC, 3);
  GSocket *sock;
  GSocketAddress *local;
  gint listening = 0;
  socklen_t len = sizeof (listening);

  if (own < 0) {
    g_set_error (error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS,
        "listen fd %d: %s", fd, g_strerror (errno));
    return NULL;
  }
  if (getsockopt (own, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 ||
      !listening) {
    g_set_error (error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS,
        "listen fd %d is not a listening socket", fd);
    close (own);
    return NULL;
  }
  sock = g_socket_new_from_fd (own, error);
  if (!sock) {
    close (own);
    return NULL;
  }
  local = g_socket_get_local_address (sock, NULL);
  if (!G_IS_INET_SOCKET_ADDRESS (local) ||
      g_socket_get_protocol (sock) != G_SOCKET_PROTOCOL_TCP) {
    g_set_error (error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS,
        "listen fd %d is not a TCP socket", fd);
    g_clear_object (&local);
    g_object_unref (sock);
    return NULL;
  }
  /* shared with the owner's copy: nobody else reads it while we do */
  g_socket_set_blocking (sock, FALSE);
  *bound = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (local));
  if (!g_inet_address_get_is_loopback (g_inet_socket_address_get_address
          (G_INET_SOCKET_ADDRESS (local))))
    *loopback = FALSE;
  g_object_unref (local);
  return sock;
}

/* the element's state change (NULL -> READY) */
gboolean
sink_server_start (SinkServer * server, GError ** error)
{
  SinkServerSettings *set = &server->set;
  GInetAddress *addr;
  const gchar *astr = set->address ? set->address : "127.0.0.1";
  gint ports[2] = { set->port, set->tls_port };
  gint fds[2] = { set->listen_fd, set->tls_listen_fd };
  gchar *subject = NULL;
  guint i;

  if (g_strcmp0 (astr, "localhost") == 0)
    astr = "127.0.0.1";
  addr = g_inet_address_new_from_string (astr);
  if (!addr) {
    g_set_error (error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS,
        "address '%s' is not an IP address", astr);
    return FALSE;
  }
  server->loopback = g_inet_address_get_is_loopback (addr);
  if (!server->loopback && !password_required (server) &&
      !set->disable_ticketing) {
    g_set_error (error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS,
        "refusing to listen on non-loopback address %s without a password: "
        "set 'password', or set 'disable-ticketing=true' to allow anyone "
        "who can reach the port", astr);
    goto fail;
  }
  if (set->port < 0 && set->tls_port < 0 && fds[0] < 0 && fds[1] < 0) {
    g_set_error (error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS,
        "neither 'port' nor 'tls-port' is set");
    goto fail;
  }
  if (set->tls_port >= 0 || fds[1] >= 0) {
    /* "" is unset: pipelines pass tls-cert-file="${TLS_CERT_FILE:-}" */
    if (!set->cert_file || !*set->cert_file || !set->key_file ||
        !*set->key_file) {
      g_set_error (error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS,
          "'tls-port' needs 'tls-cert-file' and 'tls-key-file'");
      goto fail;
    }
    server->cert = g_tls_certificate_new_from_files (set->cert_file,
        set->key_file, error);
    if (!server->cert)
      goto fail;
    subject = cert_subject_for_spice (server->cert);
    if (!subject)
      GST_WARNING_OBJECT (server->owner, "the certificate's subject cannot be "
          "given to clients; those sent elsewhere verify the host name");
  }
  server->env.ticket_key = gst_spice_ticket_key_new (error);
  if (!server->env.ticket_key)
    goto fail;
  for (i = 0; i < 2; i++) {
    server->bound_port[i] = -1;
    if (fds[i] >= 0)
      server->listen_sock[i] = listen_adopt (fds[i], &server->bound_port[i],
          &server->loopback, error);
    else if (ports[i] >= 0)
      server->listen_sock[i] = listen_on (addr, ports[i],
          &server->bound_port[i], error);
    else
      continue;
    if (!server->listen_sock[i])
      goto fail;
  }
  g_clear_object (&addr);
  /* an adopted socket decides: on another address it needs a password */
  if (!server->loopback && !password_required (server) &&
      !set->disable_ticketing) {
    g_set_error (error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS,
        "refusing to listen on a non-loopback address without a password: "
        "set 'password', or set 'disable-ticketing=true' to allow anyone "
        "who can reach the port");
    goto fail;
  }
  g_mutex_lock (&server->lock);
  server->shared.ports[0] = server->bound_port[0];
  server->shared.ports[1] = server->bound_port[1];
  server->shared.redirected = FALSE;
  g_free (server->shared.cert_subject);
  server->shared.cert_subject = g_steal_pointer (&subject);
  g_mutex_unlock (&server->lock);

  server->env.mm_base_us = g_get_monotonic_time ();
  server->last_stats_us = server->env.mm_base_us;
  server->rate_buckets = g_hash_table_new_full (g_str_hash, g_str_equal,
      g_free, g_free);
  server->reports = gst_spice_report_limit_new (EVENT_INTERVAL_US,
      MAX_EVENT_SLOTS);
  server->env.ctx = g_main_context_new ();
  server->loop = g_main_loop_new (server->env.ctx, FALSE);
  for (i = 0; i < 2; i++) {
    if (!server->listen_sock[i])
      continue;
    server->listen_src[i] = g_socket_create_source (server->listen_sock[i],
        G_IO_IN, NULL);
    g_source_set_callback (server->listen_src[i], G_SOURCE_FUNC (accept_cb),
        server, NULL);
    g_source_attach (server->listen_src[i], server->env.ctx);
  }
  g_mutex_lock (&server->lock);
  server->env.kick = g_source_new (&kick_funcs, sizeof (GSource));
  g_source_set_callback (server->env.kick, NULL, server, NULL);
  g_source_set_priority (server->env.kick, G_PRIORITY_HIGH);
  g_source_attach (server->env.kick, server->env.ctx);
  g_mutex_unlock (&server->lock);
  server->timer_src = g_timeout_source_new (250);
  g_source_set_callback (server->timer_src, timer_cb, server, NULL);
  g_source_attach (server->timer_src, server->env.ctx);
  server->thread = g_thread_new ("spicesink-server", server_thread, server);
  GST_INFO_OBJECT (server->owner, "listening on %s port %d tls-port %d",
      astr, server->bound_port[0], server->bound_port[1]);
  return TRUE;

fail:
  g_free (subject);
  g_clear_object (&addr);
  for (i = 0; i < 2; i++)
    g_clear_object (&server->listen_sock[i]);
  g_clear_object (&server->cert);
  gst_spice_ticket_key_free (server->env.ticket_key);
  server->env.ticket_key = NULL;
  return FALSE;
}

/* server thread: closes every connection, ends the loop */
static gboolean
quit_cb (gpointer data)
{
  SinkServer *server = data;
  GList *l;

  g_mutex_lock (&server->lock);
  for (l = server->conns; l; l = l->next)
    sink_conn_close (l->data, "server stopping");
  g_mutex_unlock (&server->lock);
  g_main_loop_quit (server->loop);
  return G_SOURCE_REMOVE;
}

static void
clear_source (GSource ** src)
{
  if (*src) {
    g_source_destroy (*src);
    g_source_unref (*src);
    *src = NULL;
  }
}

/* the element's state change (READY -> NULL) */
void
sink_server_stop (SinkServer * server)
{
  GSource *kick;
  GList *l;
  guint i;

  if (server->thread) {
    GSource *q = g_idle_source_new ();

    g_source_set_callback (q, quit_cb, server, NULL);
    g_source_attach (q, server->env.ctx);
    g_source_unref (q);
    g_thread_join (server->thread);
    server->thread = NULL;
  }
  /* the loop is gone: this thread is the server thread now */
  g_mutex_lock (&server->lock);
  for (l = server->conns; l; l = l->next)
    sink_conn_close (l->data, "server stopped");
  reap (server);
  /* a TLS handshake callback that never came cannot come any more */
  while (server->conns) {
    sink_conn_free (server->conns->data);
    server->conns = g_list_delete_link (server->conns, server->conns);
  }
  g_assert (server->sessions == NULL);
  kick = server->env.kick;
  server->env.kick = NULL;
  g_mutex_unlock (&server->lock);
  clear_source (&kick);
  for (i = 0; i < 2; i++) {
    clear_source (&server->listen_src[i]);
    if (server->listen_sock[i]) {
      g_socket_close (server->listen_sock[i], NULL);
      g_clear_object (&server->listen_sock[i]);
    }
  }
  clear_source (&server->timer_src);
  g_clear_pointer (&server->loop, g_main_loop_unref);
  g_clear_pointer (&server->env.ctx, g_main_context_unref);
  g_clear_object (&server->cert);
  gst_spice_ticket_key_free (server->env.ticket_key);
  server->env.ticket_key = NULL;
  g_mutex_lock (&server->lock);
  g_clear_pointer (&server->rate_buckets, g_hash_table_unref);
  g_clear_pointer (&server->reports, gst_spice_report_limit_free);
  g_clear_pointer (&server->shared.cert_subject, g_free);
  g_clear_pointer (&server->shared.redirect_host, g_free);
  g_mutex_unlock (&server->lock);
}

/* any thread */
guint
sink_server_redirect (SinkServer * server)
{
  guint n = 0, i;
  GList *l;

  g_mutex_lock (&server->lock);
  /* no new connection: the next pipeline accepts them on the same
   * socket; a main channel that links from now on is redirected too */
  server->shared.redirected = TRUE;
  g_free (server->shared.redirect_host);
  server->shared.redirect_host = server->set.redirect_host &&
      *server->set.redirect_host ? g_strdup (server->set.redirect_host) : NULL;
  for (i = 0; i < 2; i++)
    if (server->listen_src[i])
      g_source_destroy (server->listen_src[i]);
  for (l = server->sessions; l; l = l->next)
    if (sink_main_redirect (l->data))
      n++;
  g_mutex_unlock (&server->lock);
  GST_INFO_OBJECT (server->owner, "%u client(s) asked to reconnect", n);
  return n;
}

/* the element's READY -> NULL, after sink_server_stop() */
void
sink_server_reset (SinkServer * server)
{
  SinkPictureEdit *e;
  guint i;

  e = sink_picture_edit (server->shared.picture, 0, 0);
  sink_picture_edit_clear (e);
  g_mutex_lock (&server->lock);
  g_atomic_int_set (&server->shared.width, 0);
  g_atomic_int_set (&server->shared.height, 0);
  sink_picture_commit (server->shared.picture, e);
  sink_picture_refresh_done (server->shared.picture);
  server->stream_ids_used = 0;
  server->shared.audio.playing = FALSE;
  server->shared.key_locks = 0;
  sink_agent_hub_reset (server->shared.agent);
  for (i = 0; i < server->streams->len; i++)
    ((ServerStream *) g_ptr_array_index (server->streams, i))->active = FALSE;
  g_mutex_unlock (&server->lock);
}

/* ------------------------------------------------------------ flushing */

/* any thread (FLUSH_START/STOP of one pad); takes the lock */
void
sink_server_set_flushing (SinkServer * server, gint index, gboolean flushing)
{
  guint i;

  g_mutex_lock (&server->lock);
  if (index < 0)
    server->draw_flushing = flushing;
  for (i = 0; index >= 0 && i < server->streams->len; i++) {
    ServerStream *st = g_ptr_array_index (server->streams, i);

    if (st->index == (guint) index)
      st->flushing = flushing;
  }
  g_cond_broadcast (&server->room);
  g_mutex_unlock (&server->lock);
}

/* the element's state changes; takes the lock */
void
sink_server_set_all_flushing (SinkServer * server, gboolean flushing)
{
  guint i;

  g_mutex_lock (&server->lock);
  server->draw_flushing = flushing;
  for (i = 0; i < server->streams->len; i++)
    ((ServerStream *) g_ptr_array_index (server->streams, i))->flushing =
        flushing;
  g_cond_broadcast (&server->room);
  g_mutex_unlock (&server->lock);
}

/* lock held */
static gboolean
display_blocked (SinkSession * s)
{
  return sink_conn_is_linked (s->display) && !s->disp.behind &&
      sink_conn_queue_full (s->display);
}

/* Render path, lock held: tells the tiler how big a draw update may be for
 * the slowest client's link, when that changed enough. */
static void
announce_draw_budget (SinkServer * server)
{
  guint budget;

  if (sink_rate_draw_budget_due (server->rate, server->link_bps, &budget))
    server->cb->post_upstream (-1,
        gst_spice_event_new_draw_budget (server->link_bps, budget),
        server->cb_data);
}

/* Render path, lock held: a display client left behind, for the service
 * log (spice-health "fell-behind") */
static void
report_behind (SinkServer * server, SinkSession * s, gboolean others_waiting)
{
  SinkEvent ev = SINK_EVENT_INIT (TRUE, "fell-behind",
      others_waiting ? "slower-than-others" : "not-reading");
  gchar *detail = g_strdup_printf ("%" G_GSIZE_FORMAT " bytes queued%s",
      sink_conn_queued_bytes (s->display), others_waiting ?
      ", an up-to-date client waited" : ", receive window closed");

  ev.limit = server->set.client_timeout;
  ev.detail = detail;
  conn_report (s->display, &ev, server);
  g_free (detail);
}

/* lock held: whether the path of @index (-1 the draws, else a stream
 * pad) flushes; a stream that was removed flushes */
static gboolean
path_flushing (SinkServer * server, gint index)
{
  ServerStream *st;

  if (index < 0)
    return server->draw_flushing;
  st = stream_find (server, (guint) index);
  return !st || st->flushing;
}

/* Render path, lock held: waits until every up-to-date display client has
 * room. After client-timeout, clients still full fall behind when they
 * stopped reading (no write progress, receive window closed) or hold up a
 * faster client (sink_leave_behind());
 * otherwise the render keeps waiting. FALSE when the path of @index
 * flushes (path_flushing()); the lock is released while waiting, so the
 * caller looks up what it holds again afterwards. */
static gboolean
wait_for_room (SinkServer * server, gint index)
{
  /* at least a millisecond: client-timeout=0 would spin here with the
   * lock held while a client drains (the stateful fuzzer's hang) */
  gint64 timeout = MAX ((gint64) server->set.client_timeout *
      G_TIME_SPAN_MILLISECOND, G_TIME_SPAN_MILLISECOND);
  gint64 deadline = g_get_monotonic_time () + timeout;

  announce_draw_budget (server);
  for (;;) {
    GList *l;
    gboolean blocked = FALSE;
    gint64 now;

    if (path_flushing (server, index))
      return FALSE;
    for (l = server->sessions; l; l = l->next)
      blocked |= display_blocked (l->data);
    if (!blocked)
      return TRUE;
    now = g_get_monotonic_time ();
    if (now >= deadline) {
      gboolean others_waiting = FALSE, left = FALSE;

      for (l = server->sessions; l; l = l->next) {
        SinkSession *s = l->data;

        if (sink_display_ready (s) && !s->disp.behind &&
            !s->disp.awaiting_refresh && !display_blocked (s))
          others_waiting = TRUE;
      }
      for (l = server->sessions; l; l = l->next) {
        SinkSession *s = l->data;
        gboolean progressing;

        if (!display_blocked (s))
          continue;
        progressing = now - sink_conn_last_write_us (s->display) < timeout;
        if (!sink_leave_behind (progressing,
                sink_conn_peer_reading (s->display), others_waiting))
          continue;
        left = TRUE;
        report_behind (server, s, others_waiting);
        sink_display_leave_behind (s);
      }
      if (left)
        return TRUE;
      /* only draining slow clients: back-pressure, look again later */
      deadline = now + timeout;
      continue;
    }
    g_cond_wait_until (&server->room, &server->lock, deadline);
  }
}

/* ----------------------------------------------------------- draw path */

/* draw pad's streaming thread (caps); takes the lock */
void
sink_server_set_surface (SinkServer * server, gint width, gint height)
{
  SinkPictureEdit *e = sink_picture_edit (server->shared.picture, width,
      height);
  GList *l;
  guint i;

  sink_picture_edit_clear (e);
  g_mutex_lock (&server->lock);
  GST_INFO_OBJECT (server->owner, "surface %dx%d", width, height);
  for (i = 0; i < server->streams->len; i++)
    stream_destroy_all_clients (server, g_ptr_array_index (server->streams, i));
  g_atomic_int_set (&server->shared.width, width);
  g_atomic_int_set (&server->shared.height, height);
  sink_picture_commit (server->shared.picture, e);
  for (l = server->sessions; l; l = l->next)
    sink_display_start (l->data);
  g_mutex_unlock (&server->lock);
}

/* draw pad's streaming thread (spice-monitors); takes the lock: the heads,
 * announced to every client now and to each one that joins */
void
sink_server_set_monitors (SinkServer * server, const GstSpiceHeads * m)
{
  GList *l;

  g_mutex_lock (&server->lock);
  if (memcmp (&server->shared.monitors, m, sizeof (*m)) != 0) {
    GST_INFO_OBJECT (server->owner, "%u monitors", m->count);
    g_mutex_lock (&server->shared.heads_lock);
    server->shared.monitors = *m;
    g_mutex_unlock (&server->shared.heads_lock);
    for (l = server->sessions; l; l = l->next)
      sink_display_send_monitors (l->data);
  }
  g_mutex_unlock (&server->lock);
}

/* draw pad's streaming thread (spice-cursor); takes the lock */
void
sink_server_set_cursor (SinkServer * server, const GstSpiceCursor * cursor,
    GBytes * shape)
{
  GList *l;

  g_mutex_lock (&server->lock);
  if (server->shared.cursor_shape)
    g_bytes_unref (server->shared.cursor_shape);
  server->shared.cursor = *cursor;
  server->shared.cursor.shape = NULL;
  if (shape && (cursor->width > SINK_CURSOR_MAX_SIZE ||
          cursor->height > SINK_CURSOR_MAX_SIZE || cursor->width <= 0 ||
          cursor->height <= 0 || g_bytes_get_size (shape) !=
          (gsize) cursor->width * cursor->height * 4)) {
    GST_WARNING_OBJECT (server->owner, "cursor shape %dx%d not served "
        "(at most %d pixels a side)", cursor->width, cursor->height,
        SINK_CURSOR_MAX_SIZE);
    shape = NULL;
  }
  if (!shape)
    server->shared.cursor.width = server->shared.cursor.height = 0;
  server->shared.cursor_shape = shape ? g_bytes_ref (shape) : NULL;
  for (l = server->sessions; l; l = l->next)
    sink_cursor_send (l->data);
  g_mutex_unlock (&server->lock);
}

/* draw pad's streaming thread (spice-key-locks); takes the lock. Only a
 * change reaches the clients: spice-server repeats its KEY_MODIFIERS (2 s
 * after a client's), and a client that re-syncs its own locks against
 * each KEY_MODIFIERS (remote-viewer) must not be sent an echo. */
void
sink_server_set_key_locks (SinkServer * server, guint locks)
{
  GList *l;

  g_mutex_lock (&server->lock);
  if (server->shared.key_locks != locks) {
    GST_INFO_OBJECT (server->owner, "upstream lock LEDs 0x%x (were 0x%x)",
        locks, server->shared.key_locks);
    server->shared.key_locks = locks;
    for (l = server->sessions; l; l = l->next)
      sink_inputs_send_locks (l->data);
  }
  g_mutex_unlock (&server->lock);
}

/* draw pad's streaming thread (its serialized agent events); takes the
 * lock. FALSE if @event is no agent event. */
gboolean
sink_server_agent_event (SinkServer * server, GstEvent * event)
{
  gboolean ret;

  g_mutex_lock (&server->lock);
  ret = sink_agent_hub_guest_event (server->shared.agent, event);
  g_mutex_unlock (&server->lock);
  return ret;
}

/* Render path. The draws are marshalled and the picture edited without
 * the lock; with it held only the queues are filled (and waited for). */
GstFlowReturn
sink_server_draw_update (SinkServer * server, GArray * regions,
    gboolean refresh, GstClockTime pts)
{
  SinkPicture *pic = server->shared.picture;
  SinkPictureEdit *e;
  SinkDraw *draws;
  gboolean refresh_all = FALSE, one_full;
  GList *l;
  guint i;

  /* --- without the lock --- */
  e = sink_picture_edit (pic, g_atomic_int_get (&server->shared.width),
      g_atomic_int_get (&server->shared.height));
  if (refresh) {
    /* the tiler counts a REFRESH as making every client's picture exact
     * (it stops refining): clients that may hold lossy areas need it */
    refresh_all = sink_picture_edit_has_lossy (e);
    sink_picture_edit_refresh (e);
  }
  draws = g_new0 (SinkDraw, MAX (regions->len, 1));
  for (i = 0; i < regions->len; i++) {
    SinkUpdateRegion *r = &g_array_index (regions, SinkUpdateRegion, i);

    sink_draw_marshal (&draws[i], &r->dest, r->type, r->payload);
    draws[i].pts = pts;
    if (r->type == GST_SPICE_IMAGE_COPY_BITS)
      sink_picture_edit_copy (e);
    else
      sink_picture_edit_add (e, &r->dest, r->type, r->lossy, r->payload);
  }

  /* --- with the lock: wait, enqueue, publish --- */
  g_mutex_lock (&server->lock);
  server->updates_in++;
  server->regions_in += regions->len;
  if (!wait_for_room (server, -1)) {
    g_mutex_unlock (&server->lock);
    sink_picture_edit_discard (e);
    for (i = 0; i < regions->len; i++)
      sink_draw_clear (&draws[i]);
    g_free (draws);
    return GST_FLOW_FLUSHING;
  }
  if (refresh)
    sink_picture_refresh_done (pic);
  /* A REFRESH update goes only to the clients that wait for the picture
   * (or got an incomplete one); the others already have it, unless their
   * picture may be lossy somewhere (refresh_all). Any other update goes
   * only to clients that have the picture. */
  for (l = server->sessions; l; l = l->next) {
    SinkSession *s = l->data;

    if (!sink_display_ready (s) || s->disp.behind)
      continue;
    if (refresh ? !(refresh_all || s->disp.awaiting_refresh ||
            s->disp.partial_picture) : s->disp.awaiting_refresh)
      continue;
    for (i = 0; i < regions->len; i++)
      sink_display_send_draw (s, &draws[i]);
    /* the draw need not wait for the server thread to be scheduled */
    if (regions->len)
      sink_conn_write_now (s->display);
  }
  sink_picture_commit (pic, e);
  one_full = sink_picture_is_one_full_region (pic);
  for (l = server->sessions; l; l = l->next) {
    SinkSession *s = l->data;

    if (!sink_display_ready (s))
      continue;
    if (s->disp.behind) {
      s->disp.updates_skipped++;
      continue;
    }
    if (refresh && (s->disp.awaiting_refresh || s->disp.partial_picture)) {
      GST_DEBUG_OBJECT (server->owner, "%s gets the refresh (%u regions)",
          s->peer_host, regions->len);
      if (s->disp.awaiting_refresh)
        sink_display_picture_done (s);
      s->disp.partial_picture = FALSE;
      s->disp.updates++;
    } else if (s->disp.awaiting_refresh && one_full) {
      /* this update made the last-known picture one full region */
      sink_display_send_picture (s);
      sink_display_picture_done (s);
      s->disp.updates++;
    } else if (s->disp.awaiting_refresh) {
      s->disp.updates_skipped++;
    } else if (!refresh || refresh_all) {
      s->disp.updates++;
    }
  }
  g_mutex_unlock (&server->lock);

  for (i = 0; i < regions->len; i++)
    sink_draw_clear (&draws[i]);
  g_free (draws);
  return GST_FLOW_OK;
}

/* ---------------------------------------------------------- stream path */

/* lock held */
static ServerStream *
stream_find (SinkServer * server, guint index)
{
  guint i;

  for (i = 0; i < server->streams->len; i++) {
    ServerStream *st = g_ptr_array_index (server->streams, i);

    if (st->index == index)
      return st;
  }
  return NULL;
}

/* request_new_pad; takes the lock */
void
sink_server_stream_add (SinkServer * server, guint index)
{
  ServerStream *st = g_new0 (ServerStream, 1);

  st->index = index;
  st->enabled = TRUE;
  g_mutex_lock (&server->lock);
  g_ptr_array_add (server->streams, st);
  st->rate = sink_rate_stream_add (server->rate, index);
  st->flushing = server->draw_flushing;
  g_mutex_unlock (&server->lock);
}

/* release_pad; takes the lock */
void
sink_server_stream_remove (SinkServer * server, guint index)
{
  ServerStream *st;

  g_mutex_lock (&server->lock);
  st = stream_find (server, index);
  if (st) {
    stream_destroy_all_clients (server, st);
    sink_rate_stream_remove (server->rate, st->rate);
    g_ptr_array_remove (server->streams, st);
    /* its clients take another */
    update_streams (server);
  }
  g_mutex_unlock (&server->lock);
}

/* the stream pad's streaming thread (caps); takes the lock */
void
sink_server_stream_set_caps (SinkServer * server, guint index, guint8 codec,
    gint width, gint height)
{
  ServerStream *st;

  g_mutex_lock (&server->lock);
  st = stream_find (server, index);
  if (st) {
    st->codec = codec;
    st->width = width;
    st->height = height;
    update_streams (server);
  }
  g_mutex_unlock (&server->lock);
}

/* the stream pad's streaming thread (EOS, FLUSH_STOP); takes the lock */
void
sink_server_stream_eos (SinkServer * server, guint index, gboolean eos)
{
  ServerStream *st;

  g_mutex_lock (&server->lock);
  st = stream_find (server, index);
  if (st) {
    st->eos = eos;
    if (eos)
      stream_destroy_all_clients (server, st);
  }
  g_mutex_unlock (&server->lock);
}

/* ---------------------------------------------------------------- audio */

void
sink_server_audio_enable (SinkServer * server, gboolean enabled)
{
  g_mutex_lock (&server->lock);
  server->shared.audio.enabled = enabled;
  server->env.channel_served[SPICE_CHANNEL_PLAYBACK] = enabled;
  server->env.channel_served[SPICE_CHANNEL_RECORD] = enabled;
  g_mutex_unlock (&server->lock);
}

void
sink_server_audio_start (SinkServer * server, guint16 mode, gint rate,
    gint channels)
{
  SinkAudio *au = &server->shared.audio;
  GList *l;

  g_mutex_lock (&server->lock);
  if (!au->playing || au->mode != mode || au->rate != rate ||
      au->channels != channels) {
    au->playing = TRUE;
    au->mode = mode;
    au->rate = rate;
    au->channels = channels;
    for (l = server->sessions; l; l = l->next)
      sink_playback_start (l->data);
  }
  g_mutex_unlock (&server->lock);
}

void
sink_server_audio_stop (SinkServer * server)
{
  GList *l;

  g_mutex_lock (&server->lock);
  server->shared.audio.playing = FALSE;
  for (l = server->sessions; l; l = l->next)
    sink_playback_stop (l->data);
  g_mutex_unlock (&server->lock);
}

void
sink_server_audio_data (SinkServer * server, GBytes * packet)
{
  GList *l;

  g_mutex_lock (&server->lock);
  server->audio_packets_in++;
  for (l = server->sessions; l; l = l->next)
    sink_playback_data (l->data, packet);
  g_mutex_unlock (&server->lock);
}

void
sink_server_audio_volume (SinkServer * server, guint n_channels,
    const guint16 * volume, gboolean mute)
{
  SinkAudio *au = &server->shared.audio;
  GList *l;

  g_mutex_lock (&server->lock);
  au->have_volume = TRUE;
  au->n_volume = MIN (n_channels, GST_SPICE_AUDIO_MAX_CHANNELS);
  memcpy (au->volume, volume, au->n_volume * sizeof (guint16));
  au->mute = mute;
  for (l = server->sessions; l; l = l->next)
    sink_playback_volume (l->data);
  g_mutex_unlock (&server->lock);
}

/* lock held */
static gint
alloc_spice_id (SinkServer * server)
{
  guint i;

  for (i = 0; i < SINK_MAX_STREAMS; i++)
    if (!(server->stream_ids_used & (G_GUINT64_CONSTANT (1) << i))) {
      server->stream_ids_used |= G_GUINT64_CONSTANT (1) << i;
      return (gint) i;
    }
  return -1;
}

/* lock held: the SPICE stream for a frame at @dest (a new one when the
 * rectangle, the upstream stream or the codec changed). FALSE: no id. */
static gboolean
stream_place (SinkServer * server, ServerStream * st,
    const GstVideoRectangle * dest, guint meta_id, gboolean has_meta)
{
  gint id;

  if (st->active && ((has_meta && meta_id != st->meta_id) ||
          dest->x != st->dest.x || dest->y != st->dest.y ||
          dest->w != st->dest.w || dest->h != st->dest.h ||
          st->active_codec != st->codec))
    stream_destroy_all_clients (server, st);
  if (st->active)
    return TRUE;
  id = alloc_spice_id (server);
  if (id < 0)
    return FALSE;
  st->spice_id = id;
  st->active = TRUE;
  st->dest = *dest;
  st->meta_id = has_meta ? meta_id : 0;
  st->active_codec = st->codec;
  GST_DEBUG_OBJECT (server->owner, "stream %u: SPICE stream %u at "
      "%dx%d+%d+%d", st->index, id, dest->w, dest->h, dest->x, dest->y);
  return TRUE;
}

/* the stream pad's streaming thread: waits for room (lock held, released while waiting), then enqueues */
GstFlowReturn
sink_server_stream_frame (SinkServer * server, guint index,
    const GstVideoRectangle * dest, guint meta_id, gboolean key,
    GstClockTime pts, GBytes * frame)
{
  gsize size = g_bytes_get_size (frame);
  gint width = g_atomic_int_get (&server->shared.width);
  gint height = g_atomic_int_get (&server->shared.height);
  gboolean want_key = FALSE;
  GstVideoRectangle r;
  SinkStreamInfo info;
  ServerStream *st;
  GBytes *head = NULL;
  GList *l;

  g_mutex_lock (&server->lock);
  st = stream_find (server, index);
  if (!st) {
    g_mutex_unlock (&server->lock);
    return GST_FLOW_OK;
  }
  st->frames_in++;
  server->stream_frames_in++;
  sink_rate_stream_frame (st->rate, size, key);
  if (!wait_for_room (server, (gint) index)) {
    g_mutex_unlock (&server->lock);
    return GST_FLOW_FLUSHING;
  }
  /* the lock was released while waiting */
  st = stream_find (server, index);
  if (width <= 0 || st->codec == 0 || !st->enabled || size == 0)
    goto dropped;
  if (dest) {
    r = *dest;
  } else {
    r.x = r.y = 0;
    r.w = st->width > 0 ? st->width : width;
    r.h = st->height > 0 ? st->height : height;
  }
  if (!gst_spice_rect_clip (&r, width, height) ||
      !stream_place (server, st, &r, meta_id, dest != NULL))
    goto dropped;
  info.index = st->index;
  info.spice_id = st->spice_id;
  info.codec = st->active_codec;
  info.width = st->width;
  info.height = st->height;
  info.dest = st->dest;
  info.pts = pts;
  head = sink_display_marshal_stream_data (st->spice_id, size);
  for (l = server->sessions; l; l = l->next)
    if (sink_display_send_frame (l->data, &info, head, frame, key) ==
        SINK_FRAME_WANT_KEY)
      want_key = TRUE;
  if (want_key)
    request_key_unit (server, st, FALSE);
  g_mutex_unlock (&server->lock);
  g_bytes_unref (head);
  return GST_FLOW_OK;

dropped:
  st->frames_dropped++;
  g_mutex_unlock (&server->lock);
  return GST_FLOW_OK;
}

/* --------------------------------------------------------------- stats */

/* any thread */
GstStructure *
sink_server_stats (SinkServer * server)
{
  GstStructure *st;
  GValue arr = G_VALUE_INIT;
  GList *l;

  g_mutex_lock (&server->lock);
  g_value_init (&arr, GST_TYPE_ARRAY);
  for (l = server->sessions; l; l = l->next) {
    GValue v = G_VALUE_INIT;

    g_value_init (&v, GST_TYPE_STRUCTURE);
    g_value_take_boxed (&v, sink_session_stats (l->data));
    gst_value_array_append_and_take_value (&arr, &v);
  }
  st = gst_structure_new ("application/x-spice-sink-stats",
      "clients", G_TYPE_UINT, g_list_length (server->sessions),
      "clients-total", G_TYPE_UINT64, server->clients_total,
      "clients-refused", G_TYPE_UINT64, server->clients_refused,
      "updates-in", G_TYPE_UINT64, server->updates_in,
      "regions-in", G_TYPE_UINT64, server->regions_in,
      "stream-frames-in", G_TYPE_UINT64, server->stream_frames_in,
      "audio-packets-in", G_TYPE_UINT64, server->audio_packets_in,
      "refresh-requests", G_TYPE_UINT64,
      sink_picture_refresh_requests (server->shared.picture),
      "connections", G_TYPE_UINT, count_conns (server, FALSE),
      "connections-total", G_TYPE_UINT64, server->connections_total,
      "refused-rate", G_TYPE_UINT64, server->refused_rate,
      "refused-pending", G_TYPE_UINT64, server->refused_pending,
      "refused-source-links", G_TYPE_UINT64, server->refused_source_links,
      "refused-source-sessions", G_TYPE_UINT64,
      server->refused_source_sessions,
      "refused-cpu-pressure", G_TYPE_UINT64, server->refused_cpu_pressure,
      "stream-fps-cap", G_TYPE_INT,
      sink_pressure_fps_cap (&server->pressure_fps),
      "stream-fps-cap-changes", G_TYPE_UINT64, server->pressure_fps_changes,
      "closed-handshake-timeout", G_TYPE_UINT64,
      server->closed_handshake_timeout,
      "closed-idle", G_TYPE_UINT64, server->closed_idle,
      "closed-stalled", G_TYPE_UINT64, server->closed_stalled,
      "closed-bad-message", G_TYPE_UINT64, server->env.closed_bad_message,
      "auth-failures", G_TYPE_UINT64, server->auth_failures,
      "link-estimate-bps", G_TYPE_UINT64, server->link_bps,
      "link-draw-bps", G_TYPE_UINT64, server->link_draw_bps,
      "key-locks", G_TYPE_UINT, (guint) server->shared.key_locks, NULL);
  gst_structure_take_value (st, "client-stats", &arr);
  g_value_init (&arr, GST_TYPE_ARRAY);
  sink_rate_stats (server->rate, &arr);
  gst_structure_take_value (st, "stream-rates", &arr);
  g_mutex_unlock (&server->lock);
  return st;
}
