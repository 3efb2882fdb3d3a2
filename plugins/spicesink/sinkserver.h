/* spicesink: the SPICE server — its thread and GMainContext, listeners,
 * TLS, connection limits, the sessions, the timer, the streams' SPICE side,
 * the last-known picture and the rate control; the one shared lock.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Threads: the element's streaming threads (the "render path") call
 * sink_server_draw_update() / sink_server_stream_frame(); the server
 * thread owns every socket and is the only one that closes them (other
 * threads mark a connection dead, sinkconn.h); the element's upstream
 * threads push what the server asks for upstream (SinkServerCallbacks) so
 * that neither ever blocks on upstream. The server lock guards the sessions, their output
 * queues and the picture; it is never held while a draw is marshalled, nor
 * while the inputs channel turns a key into a navigation event.
 */
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>
#include <gst/spice/gstspice.h>

G_BEGIN_DECLS

typedef struct _SinkServer SinkServer;

/* SinkServerCallbacks.post_upstream's index of the audio pad */
#define SINK_SERVER_AUDIO_PAD (-2)

/* How the server reaches the element (which implements it). */
typedef struct
{
  /* lock held: a client waits for the whole picture (spice-refresh) */
  void (*request_refresh) (gpointer user_data);
  /* lock held: stream pad @index should send a key unit */
  void (*request_key_unit) (guint index, gpointer user_data);
  /* lock held: every client decodes stream pad @index's codec, or not */
  void (*stream_control) (guint index, gboolean enabled, gpointer user_data);
  /* lock held: post @report (a spice-security or spice-health structure,
   * taken) as an element message, not from this thread */
  void (*post_report) (GstStructure * report, gpointer user_data);
  /* any thread, lock held or not: push @event upstream from the draw pad
   * (@index -1), the audio pad (SINK_SERVER_AUDIO_PAD) or stream pad
   * @index; never blocks */
  void (*post_upstream) (gint index, GstEvent * event, gpointer user_data);
  /* server thread, lock not held: a navigation @event of the client of
   * session @client, upstream from the draw pad; never blocks, and one
   * client's flood must not cost another its input */
  void (*post_input) (guint32 client, GstEvent * event, gpointer user_data);
} SinkServerCallbacks;

/* The element's properties that the server uses (docs/spicesink.md) */
typedef struct
{
  gchar *address;
  gint port, tls_port;
  gint listen_fd, tls_listen_fd;        /* the owner's sockets, -1 none */
  gchar *redirect_host;         /* sent by sink_server_redirect(); NULL or
                                 * "": each connection's local address */
  gchar *cert_file, *key_file;
  gchar *password;              /* the ticket (read from password-file) */
  gboolean disable_ticketing;
  guint max_clients;
  guint stream_latency;
  guint client_timeout;
  guint queue_size;
  guint notsent_lowat;
  gboolean tcp_pacing;
  guint handshake_timeout;
  guint idle_timeout;
  gint max_conn_rate;           /* -1: automatic (by address) */
  guint conn_burst;
  guint max_pending;
  guint max_links_per_source;   /* 0: no per-source limit */
  gint max_sessions_per_source; /* -1: automatic (by address) */
  guint ipv6_source_prefix;     /* bits of an IPv6 address that make its
                                 * source */
  guint max_clipboard;          /* bytes of one clipboard (agent) */
  guint64 max_file_transfer;    /* bytes of one file to the guest, 0 off */
  guint max_cpu_pressure;       /* percent of PSI "some avg10" from which
                                 * new sessions are refused, 0 off */
  guint stream_cpu_pressure;    /* percent of the PSI "some" share of a
                                 * second from which the streams' frame
                                 * rate is lowered, 0 off */
  gchar *cpu_pressure_file;     /* the PSI file read (sinkpressure.h) */
  gchar *allowed_origins;       /* WebSocket origins, NULL: not checked */
} SinkServerSettings;

/* One validated region of an update (the payload shares the buffer) */
typedef struct
{
  GstVideoRectangle dest;
  guint8 type;                  /* GstSpiceImageType */
  gboolean lossy;
  GBytes *payload;
} SinkUpdateRegion;

/* deep copy (strings duplicated) / frees the strings */
void     sink_server_settings_copy (SinkServerSettings * dst,
    const SinkServerSettings * src);
void     sink_server_settings_clear (SinkServerSettings * s);

SinkServer *sink_server_new (GstObject * owner,
    const SinkServerCallbacks * callbacks, gpointer user_data);
void     sink_server_free (SinkServer * server);
/* any thread: copies @settings */
void     sink_server_configure (SinkServer * server,
    const SinkServerSettings * settings);
gboolean sink_server_start (SinkServer * server, GError ** error);
void     sink_server_stop (SinkServer * server);
/* after stop: forgets the surface, the picture and the streams' ids */
void     sink_server_reset (SinkServer * server);
gint     sink_server_bound_port (SinkServer * server, gboolean tls);
/* any thread: stops accepting and asks every client to reconnect to the
 * address it connected to (MAIN_MIGRATE_SWITCH_HOST), also those whose
 * main channel links later; returns the number of sessions asked */
guint    sink_server_redirect (SinkServer * server);
GstStructure *sink_server_stats (SinkServer * server);

/* ---- draw path (the draw pad's streaming thread) ---- */
void     sink_server_set_surface (SinkServer * server, gint width,
    gint height);
void     sink_server_set_cursor (SinkServer * server,
    const GstSpiceCursor * cursor, GBytes * shape);
/* the upstream's lock LEDs (spice-key-locks): KEY_MODIFIERS to every
 * client when they changed */
void     sink_server_set_key_locks (SinkServer * server, guint locks);
void     sink_server_set_monitors (SinkServer * server,
    const GstSpiceHeads * monitors);
/* the guest agent's events (spice-agent, spice-clipboard); FALSE if
 * @event is none */
gboolean sink_server_agent_event (SinkServer * server, GstEvent * event);
/* @regions: SinkUpdateRegion (validated against the surface). FLUSHING
 * while the draw path flushes. */
GstFlowReturn sink_server_draw_update (SinkServer * server, GArray * regions,
    gboolean refresh, GstClockTime pts);

/* ---- stream pads ---- */
void     sink_server_stream_add (SinkServer * server, guint index);
void     sink_server_stream_remove (SinkServer * server, guint index);
void     sink_server_stream_set_caps (SinkServer * server, guint index,
    guint8 codec, gint width, gint height);
void     sink_server_stream_eos (SinkServer * server, guint index,
    gboolean eos);
/* a frame of stream pad @index (its streaming thread); @dest NULL = the
 * whole surface (or the caps' size); @pts on the draws' timeline (a frame
 * not newer than a draw over its area stays hidden); FLUSHING while that
 * pad flushes */
GstFlowReturn sink_server_stream_frame (SinkServer * server, guint index,
    const GstVideoRectangle * dest, guint meta_id, gboolean key,
    GstClockTime pts, GBytes * frame);

/* ---- audio pad (sinkplayback.c, sinkrecord.c) ---- */
/* application thread: the audio pad is linked (playback and record are
 * served to the clients that connect from now on) */
void     sink_server_audio_enable (SinkServer * server, gboolean enabled);
/* the audio pad's streaming thread: caps (@mode SPICE_AUDIO_DATA_MODE_*)
 * start playback, EOS stops it; @packet raw samples or one Opus packet */
void     sink_server_audio_start (SinkServer * server, guint16 mode,
    gint rate, gint channels);
void     sink_server_audio_stop (SinkServer * server);
void     sink_server_audio_data (SinkServer * server, GBytes * packet);
void     sink_server_audio_volume (SinkServer * server, guint n_channels,
    const guint16 * volume, gboolean mute);

/* @index -1: the draw path, else stream pad @index; FLUSH_START/STOP */
void     sink_server_set_flushing (SinkServer * server, gint index,
    gboolean flushing);
/* state changes: every path */
void     sink_server_set_all_flushing (SinkServer * server,
    gboolean flushing);

G_END_DECLS
