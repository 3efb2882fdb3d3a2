/* spicesink: one client connection — link stage, message framing, output
 * queue, writes and socket pacing. Knows no session: it reports through
 * SinkConnHooks.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Threads and lock: every connection lives on the server thread (its
 * GMainContext). Functions marked "lock held" expect the server's lock
 * (SinkConnEnv.lock); the render path only enqueues (sink_conn_send*()),
 * writes a draw at once where the socket has room (sink_conn_write_now()) and
 * reads the queue state, with that lock held. Reading and framing run on
 * the server thread without the lock: hooks that need it take it.
 *
 * A connection's life has one owner, the server thread. sink_conn_close()
 * may be called from any thread (lock held): it only marks the connection
 * dead, drops its queue, shuts the socket down (which wakes the poll, while
 * the descriptor stays valid for a reader that is still in it) and kicks
 * the server thread. The server thread then finishes it
 * (sink_conn_finish(): sources gone, socket closed, on_closed) from a
 * dispatch of its own, never under the feet of a caller that still uses
 * the connection, and frees it once freeable. No hook runs from
 * sink_conn_close().
 *
 * Bounds: every connection has a byte limit (sink_conn_set_limit()) on what
 * it makes us hold: its queue plus what its channel keeps for it elsewhere
 * (sink_conn_hold(), e.g. agent data waiting for tokens). Over it the
 * connection is closed with a spice-health "queue-limit" event. A queue
 * that does not drain SINK_CONN_PROGRESS_BYTES (or empty) within
 * SINK_CONN_STALL_TIMEOUT_MS is stalled (sink_conn_check_timeouts()), so a
 * client that reads a byte now and then is closed like one that reads
 * nothing.
 */
#pragma once

#include <gst/gst.h>
#include <gio/gio.h>
#include <gst/spice/gstspice.h>

#include "sinkrate.h"

G_BEGIN_DECLS

#define SINK_MSG_HEAD_MAX 240

typedef struct _SinkConn SinkConn;

/* One security or health event of the server (a `spice-security` /
 * `spice-health` element message, docs/spicesink.md "Events"). Strings
 * are static or outlive the call. */
typedef struct
{
  gboolean health;              /* spice-health, else spice-security */
  const gchar *event;           /* "wrong-ticket", "refused", ... */
  const gchar *reason;          /* a stable token: the limit or the cause */
  guint limit;                  /* the limit's value, 0 none */
  const gchar *detail;          /* for people, may be NULL */
  gint msg_type, msg_size;      /* bad-message in the data stage, else -1 */
} SinkEvent;

#define SINK_EVENT_INIT(health_, event_, reason_) \
  { (health_), (event_), (reason_), 0, NULL, -1, -1 }

/* What connections share, owned by the server: resources and settings
 * (settings read with the lock held). */
typedef struct
{
  GMutex *lock;
  GCond *room;                  /* broadcast when a queue has room again */
  GMainContext *ctx;
  GSource *kick;                /* wakes the server thread to write */
  GstSpiceTicketKey *ticket_key;
  gint64 mm_base_us;
  guint32 channel_caps[SPICE_END_CHANNEL];   /* 0 for channels not served */
  gboolean channel_served[SPICE_END_CHANNEL];
  /* settings */
  guint queue_size;
  guint notsent_lowat;
  gboolean tcp_pacing;
  guint stream_latency;
  const gchar *allowed_origins; /* WebSocket origins (sinkws.h), NULL: any */
  /* counted by the connections (lock held) */
  guint64 closed_bad_message;
  /* lock held, any stage: the owner posts @ev about @conn */
  void (*report) (SinkConn * conn, const SinkEvent * ev, gpointer data);
  gpointer report_data;
} SinkConnEnv;

typedef struct
{
  /* server thread, lock held: link message and ticket read; returns the
   * link result (SPICE_LINK_ERR_*; *@reason for the log). On success the
   * hook owner may replace the hooks (sink_conn_set_hooks()). */
  guint32 (*on_link) (SinkConn * conn, const GstSpiceLinkMess * link,
      const guint8 * ticket, gsize ticket_size, const gchar ** reason,
      gpointer user_data);
  /* server thread, lock held: the channel is linked (data stage) */
  void (*on_linked) (SinkConn * conn, gpointer user_data);
  /* server thread, lock NOT held: one message of the data stage. Returns
   * FALSE when it closed the connection. */
  gboolean (*on_message) (SinkConn * conn, guint16 type, const guint8 * body,
      gsize size, gpointer user_data);
  /* server thread, lock held, from sink_conn_finish(): the connection is
   * gone (any stage); the last hook it calls */
  void (*on_closed) (SinkConn * conn, gpointer user_data);
  /* server thread, lock held: everything queued was written */
  void (*on_drained) (SinkConn * conn, gpointer user_data);
} SinkConnHooks;

typedef struct
{
  guint64 bytes_out, msgs_out, bytes_in, msgs_in;
} SinkConnCounters;

/* server thread: takes @socket (connected, non-blocking); @addr is the
 * peer's address as accept() gave it */
SinkConn *sink_conn_new (SinkConnEnv * env, GSocket * socket,
    GSocketAddress * addr, gboolean tls, guint id);
/* server thread, lock held, after sink_conn_is_freeable() (or once the
 * loop is gone, after sink_conn_finish()) */
void      sink_conn_free (SinkConn * conn);
void      sink_conn_set_hooks (SinkConn * conn, const SinkConnHooks * hooks,
    gpointer user_data);
/* server thread, lock held: TLS handshake (tls) or link stage */
void      sink_conn_start (SinkConn * conn, GTlsCertificate * cert);

/* lock held, any thread: marks @conn dead (see above); the server thread
 * finishes it */
void      sink_conn_close (SinkConn * conn, const gchar * reason);
/* server thread, lock held (or the loop is gone): a dead connection's
 * end: sources destroyed, socket closed, on_closed. FALSE if @conn is not
 * dead or was finished before. */
gboolean  sink_conn_finish (SinkConn * conn);
/* lock held: dead and not finished yet */
gboolean  sink_conn_needs_finish (SinkConn * conn);
/* any thread (atomic) */
gboolean  sink_conn_is_dead (SinkConn * conn);
gboolean  sink_conn_is_linked (SinkConn * conn);
gboolean  sink_conn_is_freeable (SinkConn * conn);
guint     sink_conn_id (SinkConn * conn);
const gchar *sink_conn_peer (SinkConn * conn);
const gchar *sink_conn_peer_host (SinkConn * conn);
/* the source the admission limits count it under (the owner's key) */
void      sink_conn_set_source (SinkConn * conn, const gchar * source);
const gchar *sink_conn_source (SinkConn * conn);
gboolean  sink_conn_tls (SinkConn * conn);
/* the connection carries SPICE in WebSocket frames (sinkws.h) */
gboolean  sink_conn_websocket (SinkConn * conn);
/* the address and port the client connected to (the socket's local
 * address, a new reference), NULL when the socket has none any more */
GInetSocketAddress *sink_conn_local_address (SinkConn * conn);
guint8    sink_conn_channel_type (SinkConn * conn);
/* the channel capabilities the client announced */
gboolean  sink_conn_has_channel_cap (SinkConn * conn, guint cap);
gint64    sink_conn_last_rx_us (SinkConn * conn);
gsize     sink_conn_queued_bytes (SinkConn * conn);
/* the last write of any size (the render path's "still moving") */
gint64    sink_conn_last_write_us (SinkConn * conn);
/* lock held: the peer's receive window is open (fresh TCP_INFO) */
gboolean  sink_conn_peer_reading (SinkConn * conn);
void      sink_conn_counters (SinkConn * conn, SinkConnCounters * c);

/* a connection whose queue does not drain SINK_CONN_PROGRESS_BYTES (or
 * all it had) in this long is closed */
#define SINK_CONN_STALL_TIMEOUT_MS 20000
#define SINK_CONN_PROGRESS_BYTES (16 * 1024)
/* the limit of a connection until its channel sets one */
#define SINK_CONN_LINK_LIMIT (64 * 1024)

/* lock held: what @conn may make us hold (its queue plus sink_conn_hold()),
 * 0 no limit. Over it: closed with a spice-health "queue-limit" event
 * whose reason is "<channel>-queue" (or the holder's reason). */
void      sink_conn_set_limit (SinkConn * conn, gsize max_bytes);
/* lock held: the channel keeps @bytes for @conn outside its queue (waiting
 * for the client's tokens, say), counted against its limit, and at most
 * @max of them: above, it is closed with the event's reason @reason and
 * @what (for people) in the log. FALSE when that closed it. */
gboolean  sink_conn_hold (SinkConn * conn, gsize bytes, gsize max,
    const gchar * reason, const gchar * what);
/* lock held: posts @ev about @conn (SinkConnEnv.report) */
void      sink_conn_report (SinkConn * conn, const SinkEvent * ev);

typedef enum
{
  SINK_CONN_IN_TIME,
  SINK_CONN_LINK_EXPIRED,       /* not linked in handshake-timeout */
  SINK_CONN_ERROR_UNREAD,       /* does not read the link error */
  SINK_CONN_STALLED,            /* no write progress for 20 s */
} SinkConnTimeout;

/* Server thread, lock held, from the timer: the connection limits that
 * depend on time */
SinkConnTimeout sink_conn_check_timeouts (SinkConn * conn, gint64 now,
    guint handshake_timeout_ms);

/* ---- output (lock held, any thread) ---- */
/* the multimedia time (ms) of the session's clock */
guint32   sink_conn_env_mm_time (SinkConnEnv * env);
void      sink_conn_send (SinkConn * conn, guint16 type,
    const GByteArray * fixed, GBytes * body);
/* like sink_conn_send() with @fixed in a GBytes; @mm_off >= 0: a u32 at
 * that offset of @fixed is stamped with the mm time + stream-latency when
 * the first byte is written */
void      sink_conn_send_bytes (SinkConn * conn, guint16 type,
    GBytes * fixed, gint mm_off, GBytes * body);
/* server thread: writes as much as the socket takes */
void      sink_conn_flush (SinkConn * conn);
/* the render path, lock held: what the socket takes now, without waiting
 * for the server thread (which still gets the kick: errors, hooks) */
void      sink_conn_write_now (SinkConn * conn);
gboolean  sink_conn_has_queued (SinkConn * conn);

/* ---- pacing (display connections) ---- */
/* lock held: this connection carries the display: its writes are paced
 * and its queue and TCP_NOTSENT_LOWAT follow its link estimate */
void      sink_conn_set_paced (SinkConn * conn, gboolean paced);
/* lock held: kernel TCP pacing on, once (tcp-pacing; first stream) */
void      sink_conn_enable_tcp_pacing (SinkConn * conn);
/* lock held: whether its queue is above the link-sized limit */
gboolean  sink_conn_queue_full (SinkConn * conn);
/* server thread, lock held: reads TCP_INFO */
void      sink_conn_update_tcp_info (SinkConn * conn);
/* server thread, lock held, every 250 ms: one link sample from TCP_INFO */
void      sink_conn_sample_link (SinkConn * conn, gint64 now);
const SinkLinkEstimate *sink_conn_link (SinkConn * conn);
/* adds the TCP_INFO and pacing fields to a client's stats */
void      sink_conn_tcp_stats (SinkConn * conn, GstStructure * s);

G_END_DECLS
