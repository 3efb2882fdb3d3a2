/* gst-spice tests: a raw-socket SPICE client (loopback only) built on the
 * shared wire code. Blocking sockets with timeouts; used for hostile-input
 * tests and for clients with chosen capabilities.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <gio/gio.h>
#include <gst/spice/gstspice.h>
#include "spice-client-wire.h"
#include "ws-client.h"

G_BEGIN_DECLS

typedef struct {
  GSocket *sock;
  gboolean mini;
  guint8 type;
  guint32 link_result;
  guint32 common_caps;          /* the client's, as sent in the link */
  /* SPICE over WebSocket (see spice_raw_websocket()) */
  gboolean ws;
  gboolean ws_upgraded;         /* the server answered 101 */
  GByteArray *ws_in;            /* unframed bytes not read yet */
  TestWsReader *ws_reader;
} SpiceRawConn;

/* Whether connections go over WebSocket: with GST_SPICE_TEST_WEBSOCKET=1 in
 * the environment every spice_raw_connect*() sends an HTTP upgrade first
 * (subprotocol binary, no extension); spice_raw_send() then sends each
 * call's bytes as one masked binary frame and spice_raw_recv_exact()
 * reads the server's frames' payload (a close frame: the end). An upgrade
 * that is not answered leaves a connection whose reads fail, like one the
 * server closed at accept. */
gboolean spice_raw_websocket (void);

/* A TCP connection to 127.0.0.1:@port with @timeout_s for every socket
 * call, nothing sent; NULL if refused. */
GSocket *spice_raw_tcp_connect (guint16 port, guint timeout_s);
/* The same from the local address @from (e.g. "127.0.0.10"; NULL: any),
 * so that the server sees another source. */
GSocket *spice_raw_tcp_connect_from (const gchar * from, guint16 port,
    guint timeout_s);
/* TRUE once 127.0.0.1:@port accepts a TCP connection (closed at once),
 * FALSE after @timeout_ms */
gboolean spice_raw_tcp_wait_listen (guint16 port, guint timeout_ms);
/* A listening TCP socket on 127.0.0.1, a free port (*@port); NULL if it
 * cannot be made */
GSocket *spice_raw_tcp_listen (guint16 * port);
/* closes and unrefs *@sock and clears it; nothing where it is NULL */
void     spice_raw_tcp_close (GSocket ** sock);
/* appends one message with a mini header (type, size) and @body to @a,
 * to be sent in one write with others */
void     spice_raw_append_msg (GByteArray * a, guint16 type,
    const guint8 * body, guint32 size);
/* appends an INPUTS_MOUSE_POSITION to (@x, @y), no button, display 0 */
void     spice_raw_append_mouse_position (GByteArray * a, guint32 x,
    guint32 y);
SpiceRawConn *spice_raw_connect (guint16 port, guint timeout_s);
SpiceRawConn *spice_raw_connect_from (const gchar * from, guint16 port,
    guint timeout_s);
void     spice_raw_close (SpiceRawConn * c);
/* closes with SO_LINGER {1, 0}: the peer gets a reset (RST), not a FIN,
 * and whatever is unsent or unread is dropped; frees @c. NULL-safe. */
void     spice_raw_reset (SpiceRawConn * c);
gboolean spice_raw_send (SpiceRawConn * c, const guint8 * data, gsize size);
gboolean spice_raw_recv_exact (SpiceRawConn * c, guint8 * buf, gsize size,
    guint timeout_ms);
/* TRUE when the peer closed (EOF or reset) within @timeout_ms */
gboolean spice_raw_wait_closed (SpiceRawConn * c, guint timeout_ms);
/* Over WebSocket, once the server closed: the code of the close frame it
 * sent (-1: none came) and its reason (*@reason, may be NULL) */
gint spice_raw_ws_close_code (SpiceRawConn * c, const gchar ** reason);

/* the common caps spice-gtk sends: AUTH_SELECTION, AUTH_SASL, MINI_HEADER */
#define SPICE_RAW_COMMON_CAPS 0x0d

/* Full link handshake. Returns TRUE if it reached the link result (stored
 * in c->link_result); with @reply_error set to the error of an error
 * reply, if any. */
gboolean spice_raw_link (SpiceRawConn * c, guint32 connection_id,
    guint8 channel_type, guint32 common_caps, guint32 channel_caps,
    const gchar * password, guint32 * reply_error);

/* The same in its steps, for clients that stop anywhere in between: the
 * link header and message; the server's reply (*@r; FALSE if none came;
 * also sets c->mini); the auth mechanism (with AUTH_SELECTION in the
 * common caps) and the 128-byte ticket, @password encrypted with the
 * reply's key; the 4-byte link result (in c->link_result). */
gboolean spice_raw_link_send_mess (SpiceRawConn * c, guint32 connection_id,
    guint8 channel_type, guint32 common_caps, guint32 channel_caps);
gboolean spice_raw_link_read_reply (SpiceRawConn * c, TestWireLinkReply * r,
    guint timeout_ms);
gboolean spice_raw_link_send_ticket (SpiceRawConn * c,
    const TestWireLinkReply * r, const gchar * password);
gboolean spice_raw_link_read_result (SpiceRawConn * c, guint timeout_ms);

gboolean spice_raw_send_msg (SpiceRawConn * c, guint16 type,
    const guint8 * body, gsize size);
/* one message; *body is g_malloc'd (may be NULL when size is 0) */
gboolean spice_raw_read_msg (SpiceRawConn * c, guint timeout_ms,
    guint16 * type, guint8 ** body, gsize * size);

/* A session: main (+ ATTACH_CHANNELS) and display with @display_caps. */
typedef struct {
  SpiceRawConn *main;
  SpiceRawConn *display;
  guint32 session_id;
  guint32 mm_time;
  guint8 *canvas;               /* BGRx, width*4 stride; NULL until
                                 * SURFACE_CREATE; BITMAP, LZ4 and JPEG
                                 * images painted as a client paints them */
  gint width, height;
  guint64 draws, marks;
  guint64 draws_bitmap, draws_lz4, draws_jpeg;    /* DRAW_COPY by image */
  guint64 draws_at_first_mark;  /* draws received before the first MARK */
  guint64 first_draw_area;      /* pixels of the first DRAW_COPY */
  guint64 last_draw_area;       /* pixels of the latest DRAW_COPY */
  guint64 last_draw_area_at_mark;       /* ... as of the latest MARK */
  guint64 stream_creates, stream_datas, stream_destroys, stream_reports;
  guint32 streams_live;         /* bit per stream id */
  guint32 streams_hidden;       /* bit per stream id clipped to nothing */
  guint64 stream_clips;
  guint64 stream_datas_hidden;  /* STREAM_DATA of a hidden stream */
  gboolean protocol_error;      /* message order or layout violated */
  gchar *error;
  guint8 last_codec;
  guint32 last_stream_mm;
  GstSpiceImageDecoder *images; /* paints DRAW_COPY images */
} SpiceRawSession;

#define SPICE_RAW_DISPLAY_CAPS_ALL 0x6f3d       /* spice-gtk 0.42 minus MONITORS_CONFIG, GL */

SpiceRawSession *spice_raw_session_new (guint16 port, const gchar * password,
    guint32 display_caps);
/* Only its main channel (ATTACH_CHANNELS answered); display is NULL. */
SpiceRawSession *spice_raw_session_new_main (guint16 port,
    const gchar * password);
void     spice_raw_session_free (SpiceRawSession * s);
/* pixels (B,G,R) differing from @bgrx (same size, @stride) */
guint64  spice_raw_session_compare (SpiceRawSession * s, const guint8 * bgrx,
    gint stride);
/* Processes display messages for up to @timeout_ms or until @until returns
 * TRUE. Returns FALSE on a protocol error or closed connection. */
gboolean spice_raw_session_pump (SpiceRawSession * s, guint timeout_ms,
    gboolean (*until) (SpiceRawSession * s, gpointer data), gpointer data);

G_END_DECLS
