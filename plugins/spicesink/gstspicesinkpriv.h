/* spicesink: internal structures shared by the element, server, channel and
 * pacing code.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Threads: the streaming threads of the `draw` and `stream_%u` pads (the
 * "render path") marshal messages into per-connection output queues; one
 * server thread with its own GMainContext owns every socket (accept, TLS,
 * link, reads, writes); one event thread pushes upstream events (navigation,
 * refresh, force-key-unit, stream-control) so that neither of the others
 * ever blocks on upstream. All shared state is under GstSpiceSink.lock.
 */
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>
#include <gio/gio.h>
#include <gst/spice/gstspice.h>

#include "gstspicesink.h"
#include "gstspicesinkrate.h"

G_BEGIN_DECLS

GST_DEBUG_CATEGORY_EXTERN (gst_spice_sink_debug);
#define GST_CAT_DEFAULT gst_spice_sink_debug

#define SINK_MSG_HEAD_MAX 240
#define SINK_MAX_STREAMS GST_SPICE_WIRE_MAX_STREAMS
/* upstream events waiting for the event thread above which client input
 * (navigation) events are dropped */
#define SINK_MAX_QUEUED_EVENTS 1024
/* how long a joining (or resynchronising) client waits for a one-region
 * picture (REFRESH update) before it gets the cached picture as it is */
#define SINK_REFRESH_WAIT_US (2 * G_TIME_SPAN_SECOND)

/* One queued server -> client message: a small per-connection head (data
 * header + fixed fields) and an optional shared body (image, frame). */
typedef struct {
  guint8 head[SINK_MSG_HEAD_MAX];
  guint16 head_len;
  gint16 mm_off;                /* offset of a u32 mm time to stamp when the
                                 * first byte is written, or -1 */
  guint16 type;
  GBytes *body;                 /* may be NULL */
  gsize done;                   /* bytes of head+body already written */
} SinkMsg;

typedef enum {
  CONN_TLS_HANDSHAKE,
  CONN_LINK_HEADER,
  CONN_LINK_MESS,
  CONN_AUTH_MECH,
  CONN_TICKET,
  CONN_DATA,
  CONN_DEAD,
} SinkConnState;

typedef struct _SinkSession SinkSession;
typedef struct _SinkConn SinkConn;

typedef struct {
  guint64 bytes_out, msgs_out, bytes_in, msgs_in;
} SinkChanStats;

struct _SinkConn {
  GstSpiceSink *sink;
  guint id;
  GSocket *socket;
  GIOStream *io;
  GPollableInputStream *in;
  GPollableOutputStream *out;
  GSource *in_src, *out_src;
  gboolean tls;
  gchar *peer;                  /* "address:port" */
  gchar *peer_host;
  SinkConnState state;
  gint64 start_us;
  gint64 last_progress_us;      /* last successful write (or enqueue on empty) */
  gint64 last_rx_us;            /* last byte received */

  /* reading */
  guint8 *rbuf;
  gsize rlen, rneed, rcap;
  gboolean in_body;
  GstSpiceMsgHeader hdr;
  GstSpiceLinkMess link;
  gboolean mini;

  /* linked channel */
  guint8 type, channel_id;
  SinkSession *session;

  /* writing */
  GQueue outq;                  /* SinkMsg* */
  gsize out_bytes;              /* unwritten bytes in outq */
  guint64 out_serial;
  gboolean close_when_flushed;
  gboolean handshake_pending;   /* TLS handshake callback outstanding */
  gboolean attached;            /* main: ATTACH_CHANNELS seen */

  SinkChanStats stats;

  /* TCP_INFO snapshot */
  gboolean have_tcpi;
  guint32 tcpi_rtt_us, tcpi_min_rtt_us, tcpi_notsent, tcpi_cwnd,
      tcpi_retrans;
  guint64 tcpi_delivery_rate;   /* bytes/s */
  guint32 tcpi_unacked;
  gboolean tcpi_app_limited;
  guint64 tcpi_bytes_acked;
  /* previous rate sample */
  guint64 rate_last_acked;
  gint64 rate_last_us;
  gboolean rate_last_backlogged;

  /* pacing (display): writes wait while the path queues (gstspicesinkrate.h) */
  GSource *pace_src;
  gint64 pace_since_us;         /* holding since, 0 = not holding */
  guint64 pace_holds, paced_us;
};

typedef struct {
  gboolean created;             /* the client was sent STREAM_CREATE */
  gboolean need_key;            /* deltas are withheld until a key unit */
  guint32 unique_id;            /* for stream reports */
  guint64 frames;
} SinkClientStream;

struct _SinkSession {
  guint32 id;
  gchar *peer_host;
  gchar *peer;                  /* address:port of the main channel */
  SinkConn *main, *display, *inputs, *cursor;

  /* display */
  gboolean surface_sent;
  gboolean awaiting_refresh;    /* waits for a full picture: gets no draws
                                 * and no stream frames until a REFRESH
                                 * update (or a one-region full cache) */
  gint64 await_since_us;        /* when awaiting_refresh was set */
  gboolean partial_picture;     /* got an incomplete cache after the wait
                                 * bound: takes the next REFRESH update */
  gboolean behind;              /* fell behind: gets nothing until drained */
  SinkClientStream streams[SINK_MAX_STREAMS];
  guint32 codec_failed;         /* bit per SPICE codec the client reported
                                 * as undecodable */

  /* inputs */
  guint motion_count;
  gint mouse_x, mouse_y;
  guint16 buttons;
  guint16 locks;
  guint32 mods;                 /* GstNavigationModifierType of held keys */
  guint16 mouse_mode;

  /* cursor */
  guint64 cursor_serial_sent;
  gboolean cursor_visible_sent;

  /* main */
  guint32 ping_id;
  gint64 rtt_us;                /* last PING round trip, -1 unknown */

  /* stats */
  guint64 draws, copies, updates, stream_frames, frames_dropped;
  guint64 updates_skipped;
  guint64 behind_count, refreshes, key_events, pointer_events;
  guint64 wait_fallbacks;       /* waits for a refresh that hit the bound */
  guint64 last_draws, last_stream_frames;
  gdouble draws_per_s, stream_fps;
  gint32 last_margin_ms;        /* from stream reports */
  guint64 report_drops;
  gboolean have_margin;

  /* rate control */
  SinkLinkEstimate link;
  guint64 draw_bytes, last_draw_bytes;
  guint64 draw_bps;
};

/* one request pad stream_%u */
typedef struct {
  GstPad *pad;
  guint index;
  guint8 codec;                 /* SPICE_VIDEO_CODEC_TYPE_*, 0 unknown */
  gint width, height;
  gboolean active;              /* a SPICE stream exists (spice_id valid) */
  guint spice_id;
  guint meta_id;                /* GstSpiceStreamMeta.stream_id in use */
  GstVideoRectangle dest;
  guint8 active_codec;
  gboolean enabled;             /* what we last told upstream */
  gboolean eos;
  gint64 last_fku_us;
  guint64 frames_in, frames_dropped;

  /* rate control */
  guint64 bytes_in, last_bytes_in;
  guint64 in_bps;               /* measured stream rate */
  gboolean enc_probed, enc_probe_pending;
  GstElement *encoder;          /* known encoder upstream, or NULL */
  SinkEncKind enc_kind;
  guint64 initial_bps;          /* what the pipeline set (JPEG: measured
                                 * rate at the initial quality) */
  guint initial_value;          /* initial property value */
  guint64 target_bps;           /* current target, 0 = initial */
  gint fps_n;
  guint scale;                  /* picture size divisor asked for (0/1 =
                                 * full size) */
  guint64 last_frames_in;
  guint64 delta_frames_in, delta_bytes_in, last_delta_frames_in,
      last_delta_bytes_in;
  guint64 mean_frame_bytes;     /* over the last rate interval (delta frames
                                 * if any), 0 = too few frames */
  gint64 last_scale_us;
  gint64 scale_up_since_us;     /* frames small enough for a bigger
                                 * picture since then, 0 = not */
  guint enc_value;              /* property value we set last */
  gint64 last_change_us;
  guint64 rate_changes;
} SinkStream;

typedef struct {
  GstVideoRectangle dest;
  guint8 type;
  gboolean lossy;               /* JPEG or flagged GST_SPICE_DRAW_FLAG_LOSSY */
  GBytes *payload;
} SinkCacheEntry;

struct _GstSpiceSink {
  GstElement parent;

  GstPad *draw_pad;
  GMutex lock;
  GCond cond;                   /* room in output queues / flushing */

  /* properties */
  gchar *address;
  gint port, tls_port;
  gchar *cert_file, *key_file;
  gchar *password;
  gchar *password_file;
  gboolean disable_ticketing;
  guint max_clients;
  guint stream_latency;
  guint client_timeout;
  guint queue_size;
  guint notsent_lowat;
  guint handshake_timeout;
  guint idle_timeout;           /* ms without a byte from a session, 0 off */
  guint max_conn_rate;          /* new connections/s per address, 0 off */
  guint conn_burst;             /* ... of which this many at once */
  guint max_pending;            /* connections in the link stage */
  gint bound_port, bound_tls_port;

  /* server thread */
  GMainContext *ctx;
  GMainLoop *loop;
  GThread *thread;
  GSocket *listen_sock[2];      /* plain, TLS */
  GSource *listen_src[2];
  GSource *kick_src;
  GSource *timer_src;
  GTlsCertificate *cert;
  GstSpiceTicketKey *ticket_key;
  GList *conns;                 /* SinkConn* */
  GHashTable *rate_buckets;     /* address -> SinkRateBucket (server thread) */
  GList *sessions;              /* SinkSession* */
  guint next_conn_id;
  gint64 mm_base_us;
  gint64 last_stats_us;

  /* event thread */
  GThreadPool *event_pool;

  /* render state */
  gboolean flushing;
  gboolean running;
  gint width, height;
  GPtrArray *cache;             /* SinkCacheEntry*, oldest first */
  gsize cache_bytes;
  gboolean cache_complete;
  gboolean cache_lossy_unknown; /* the cache was dropped since the last
                                 * REFRESH: clients may hold lossy areas */
  gboolean have_cursor;
  GstSpiceCursor cursor;
  GBytes *cursor_shape;         /* BGRA pixels of cursor (or default) */
  GPtrArray *streams;           /* SinkStream* */
  guint64 stream_ids_used;
  guint next_pad_index;
  gint64 refresh_requested_us;
  gboolean refresh_outstanding;
  gboolean draw_eos;

  /* rate control */
  guint64 link_bps;             /* slowest active client's estimate */
  guint64 link_draw_bps;        /* draw traffic to that client */
  gint64 last_rate_us;

  /* totals */
  guint64 updates_in, regions_in, regions_invalid, stream_frames_in,
      refresh_requests, clients_total, clients_refused;
  /* limits hit (each also logged as a warning with address and limit) */
  guint64 connections_total, refused_rate, refused_pending,
      closed_handshake_timeout, closed_idle, closed_stalled,
      closed_bad_message, auth_failures;
  gsize input_events_dropped;   /* atomic (any thread) */
  gsize input_drop_warned_us;   /* atomic; monotonic us (any thread) */
};

/* ---- gstspicesink.c (element) ---- */
void  gst_spice_sink_post_upstream (GstSpiceSink * sink, GstPad * pad,
    GstEvent * event);
void  gst_spice_sink_request_refresh (GstSpiceSink * sink, gboolean force);
void  gst_spice_sink_request_key_unit (GstSpiceSink * sink,
    SinkStream * st, gboolean force);
void  gst_spice_sink_update_stream_control (GstSpiceSink * sink);
void  gst_spice_sink_rate_tick (GstSpiceSink * sink, gint64 now);

/* ---- gstspicesinkserver.c (listener, sessions, link stage) ---- */
gboolean gst_spice_sink_server_start (GstSpiceSink * sink, GError ** error);
void     gst_spice_sink_server_stop (GstSpiceSink * sink);
void     gst_spice_sink_conn_close (SinkConn * conn, const gchar * reason);
guint32  gst_spice_sink_mm_time (GstSpiceSink * sink);
GstStructure *gst_spice_sink_server_stats (GstSpiceSink * sink);

/* ---- gstspicesinkchannels.c (channel handlers) ---- */
void     gst_spice_sink_channel_linked (SinkConn * conn);
gboolean gst_spice_sink_channel_handle (SinkConn * conn, guint16 type,
    const guint8 * body, gsize size);
void     gst_spice_sink_channel_closed (SinkConn * conn);
void     gst_spice_sink_display_start (GstSpiceSink * sink,
    SinkSession * s);
void     gst_spice_sink_send_draw (SinkConn * conn,
    const GstVideoRectangle * dest, guint8 type, GBytes * payload);
void     gst_spice_sink_send_cursor (GstSpiceSink * sink, SinkSession * s,
    gboolean init);
void     gst_spice_sink_stream_destroy_all_clients (GstSpiceSink * sink,
    SinkStream * st);
void     gst_spice_sink_session_resync (GstSpiceSink * sink, SinkSession * s);
void     gst_spice_sink_session_start_picture (GstSpiceSink * sink,
    SinkSession * s);
void     gst_spice_sink_session_picture_done (GstSpiceSink * sink,
    SinkSession * s);
void     gst_spice_sink_session_check_wait (GstSpiceSink * sink,
    SinkSession * s, gint64 now);
gboolean gst_spice_sink_cache_is_one_full_region (GstSpiceSink * sink);
void     gst_spice_sink_replay_cache (GstSpiceSink * sink, SinkConn * conn);
gboolean gst_spice_sink_session_display_ready (SinkSession * s);
gboolean gst_spice_sink_session_supports_codec (SinkSession * s,
    guint8 codec);
void     gst_spice_sink_cache_add (GstSpiceSink * sink,
    const GstVideoRectangle * dest, guint8 type, gboolean lossy,
    GBytes * payload);
gboolean gst_spice_sink_cache_has_lossy (GstSpiceSink * sink);
void     gst_spice_sink_cache_clear (GstSpiceSink * sink);
void     gst_spice_sink_cache_copy (GstSpiceSink * sink);
void     gst_spice_sink_cache_update_complete (GstSpiceSink * sink);

/* ---- gstspicesinkpacing.c (output queues, writes, backpressure) ---- */
SinkMsg *gst_spice_sink_msg_new (SinkConn * conn, guint16 type,
    const GByteArray * fixed, GBytes * body);
void     gst_spice_sink_conn_send (SinkConn * conn, guint16 type,
    const GByteArray * fixed, GBytes * body);
void     gst_spice_sink_conn_send_msg (SinkConn * conn, SinkMsg * msg);
void     gst_spice_sink_msg_free (SinkMsg * msg);
void     gst_spice_sink_conn_flush (SinkConn * conn);
void     gst_spice_sink_kick (GstSpiceSink * sink);
gboolean gst_spice_sink_wait_for_room (GstSpiceSink * sink);
void     gst_spice_sink_conn_setup_socket (GstSpiceSink * sink,
    SinkConn * conn);
void     gst_spice_sink_conn_update_tcp_info (SinkConn * conn);
void     gst_spice_sink_conn_clear_queue (SinkConn * conn);

G_END_DECLS
