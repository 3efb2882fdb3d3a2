/* libFuzzer: spicesink as a whole. A real sink server runs in this process
 * (`appsrc ! spicesink`, fed with the draws spicetiler made from a real
 * picture, JPEG stream frames on request pads, an audio branch), and each
 * input is a program of operations on up to N_SOCKS client sockets at
 * once: connect, link any channel (served or not) with chosen
 * capabilities and connection id, ticket, messages of every type and
 * size, partial writes, half close, RST, stalls, pushes of draws and
 * stream frames, stream pads requested and released (also while their
 * chain waits for a client that does not read), state changes, a
 * reload's redirect of every client (redirect-clients, on the harness's
 * own listening socket: listen-fd), the guest agent's and the clients'
 * clipboard, cursor and audio.
 *
 * Program format (tests/fuzz/session-seeds.py writes the seed corpus):
 * a sequence of operations, each an opcode byte (taken modulo N_OPS)
 * followed by its argument bytes; a missing byte reads as 0 and the
 * program ends with the input. "sock" arguments pick the (b % n)-th open
 * socket. See the OP_* enum for every operation and its arguments.
 *
 * Executions are independent: at the end of each one every socket is
 * reset, the element's settings, state, stream pads, surface, agent and
 * picture are put back as they were, and the harness waits (bounded;
 * a hang aborts) until the appsrcs are idle and the sink's `stats` shows
 * no connection and no client left. The pipeline lives across
 * executions.
 *
 * Needs the gst-spice plugin (GST_PLUGIN_PATH=BUILD/plugins, as the
 * test environment sets it) for spicesink and spicetiler.
 * bench/fuzz-session.sh runs it long and measures the coverage;
 * tests/fuzz/crashes-found/ holds what it found.
 *
 * Environment: FUZZ_SESSION_MAX_SLEEP_MS (OP_SLEEP's budget, 300),
 * FUZZ_SESSION_VERBOSE=1 (the draws made at start, each execution's
 * sockets and stats), FUZZ_SESSION_PROFILE=1 (time per operation, at
 * exit). Best run on one core (taskset): a wake-up across cores cost
 * ~3x more than on the same one here.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <gst/gst.h>
#include <gst/app/gstappsrc.h>
#include <gst/app/gstappsink.h>
#include <gst/video/video.h>
#include <gst/spice/gstspice.h>

#include "spice-client-wire.h"
#include "test-picture.h"
#include "threads-idle.h"
#include "ws-client.h"

int LLVMFuzzerInitialize (int *argc, char ***argv);
int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);
const char *__asan_default_options (void);

/* GStreamer's one-time allocations are not leaks of an input */
const char *
__asan_default_options (void)
{
  return "detect_leaks=0";
}

#define N_SOCKS 6
#define N_STREAM_SLOTS 3
#define SURF_A_W 320
#define SURF_A_H 200
#define SURF_B_W 160
#define SURF_B_H 96
#define PASSWORD "fuzz-secret"
#define BARRIER_TIMEOUT_US (10 * G_TIME_SPAN_SECOND)
#define DEFAULT_MAX_SLEEP_MS 300
/* the sleep budget refills by the execution's length over this: OP_SLEEP
 * takes at most ~1/16 of the time */
#define SLEEP_SHARE 16
/* how long an operation that needs the server's answer (a link reply,
 * MAIN_INIT) waits for it */
#define ANSWER_WAIT_MS 30

/* the element's settings, as every execution starts */
static const struct
{
  guint client_timeout, handshake_timeout, queue_size, notsent_lowat;
  guint max_clipboard;
} base = { 20, 150, 32768, 8192, 65536 };

/* ------------------------------------------------------------ input */

typedef struct
{
  const guint8 *p;
  gsize left;
} Input;

static guint8
in_u8 (Input * in)
{
  if (!in->left)
    return 0;
  in->left--;
  return *in->p++;
}

static guint16
in_u16 (Input * in)
{
  guint16 lo = in_u8 (in);

  return lo | (guint16) in_u8 (in) << 8;
}

static guint32
in_u32 (Input * in)
{
  guint32 lo = in_u16 (in);

  return lo | (guint32) in_u16 (in) << 16;
}

/* @n bytes from the input (zeros once it ends) */
static void
in_bytes (Input * in, guint8 * out, gsize n)
{
  gsize k = MIN (n, in->left);

  if (n == 0)
    return;

  memcpy (out, in->p, k);
  memset (out + k, 0, n - k);
  in->p += k;
  in->left -= k;
}

/* ------------------------------------------------------------ state */

/* what a client socket has received so far */
typedef enum
{
  RS_LINK_HDR,
  RS_LINK_BODY,
  RS_RESULT,
  RS_HDR,
  RS_BODY,
  RS_IGNORE,
} ReadStage;

#define KEEP_BODY 64

typedef struct
{
  gint fd;                      /* -1: free */
  gboolean stalled;             /* we do not read it */
  gboolean eof;                 /* the server closed it */
  gboolean shut;                /* we shut our side down */
  guint8 chan;                  /* the channel type we asked to link */
  gboolean mini, auth_sel;      /* what we announced */
  gboolean agent_sel;           /* agent clipboard selection announced */
  gboolean link_sent, ticket_sent;
  gboolean link_odd;            /* we sent a link the server may not answer
                                 * (corrupted, channel id 1) */
  GByteArray *out;              /* not written yet */
  gsize hold;                   /* trailing bytes of @out held back */
  /* reading */
  ReadStage stage;
  guint8 buf[GST_SPICE_WIRE_MAX_LINK_SIZE];
  gsize have, need, skip;
  guint16 msg_type;
  guint32 msg_size;
  gboolean have_reply;
  guint8 pub_key[SPICE_TICKET_PUBKEY_BYTES];
  gint64 link_result;           /* -1: not yet */
  guint32 session_id;           /* from MAIN_INIT, 0 none */
  guint32 report_stream, report_unique;
  gboolean have_report;
  guint msgs_in;
  guint msgs_out;               /* appends framed (ws_style 7) */
  /* SPICE over WebSocket (OP_CONNECT flag 4): the upgrade goes first,
   * then what is appended is framed as ws_style says (ws_frame()), and the
   * server's frames are read through ws_reader */
  gboolean ws;
  guint8 ws_style;
  guint32 ws_mask;
  gboolean ws_closed;           /* we sent close: nothing is framed after */
  TestWsReader *ws_reader;
  GByteArray *ws_payload;
} Sock;

typedef struct
{
  GstPad *pad;                  /* the sink's stream_%u, NULL: none */
  GstElement *src;
  guint codec;                  /* index in codec_caps */
  gboolean eos;
} StreamSlot;

typedef struct
{
  GstElement *pipeline, *sink, *draw_src, *audio_src;
  gint port;
  GPtrArray *draws[2];          /* updates for surface A, B */
  GstBuffer *refresh[2];        /* one full REFRESH region per surface */
  GPtrArray *frames;            /* JPEG frames */
  StreamSlot streams[N_STREAM_SLOTS];
  Sock socks[N_SOCKS];
  gint answer_refresh;          /* atomic */
  gint surface;                 /* atomic: 0 A, 1 B */
  GstClockTime pts;
  /* what this execution changed (put back at its end) */
  gboolean draws_pushed, agent_touched, audio_changed, state_changed,
      surface_changed, cursor_changed;
  guint32 settings_changed;
  gint64 sleep_left_us;
  guint max_sleep_ms;
  gint64 exec_start_us;         /* when this execution started */
  gboolean password;
} Harness;

static Harness H;

/* ----------------------------------------------------------- sockets */

static void
sock_reset_state (Sock * s)
{
  s->fd = -1;
  s->stalled = s->eof = s->shut = FALSE;
  s->chan = 0;
  s->mini = s->auth_sel = s->agent_sel = FALSE;
  s->link_sent = s->ticket_sent = s->link_odd = FALSE;
  g_byte_array_set_size (s->out, 0);
  s->hold = 0;
  s->stage = RS_LINK_HDR;
  s->have = 0;
  s->need = GST_SPICE_WIRE_LINK_HEADER_SIZE;
  s->skip = 0;
  s->have_reply = FALSE;
  s->link_result = -1;
  s->session_id = 0;
  s->have_report = FALSE;
  s->msgs_in = s->msgs_out = 0;
  s->ws = s->ws_closed = FALSE;
  s->ws_style = 0;
  if (s->ws_reader)
    test_ws_reader_reset (s->ws_reader);
  if (s->ws_payload)
    g_byte_array_set_size (s->ws_payload, 0);
}

/* one complete data message (its first KEEP_BODY bytes in buf) */
static void
sock_message (Sock * s)
{
  s->msgs_in++;
  if (s->chan == SPICE_CHANNEL_MAIN && s->msg_type == SPICE_MSG_MAIN_INIT &&
      s->have >= 4)
    s->session_id = GST_READ_UINT32_LE (s->buf);
  if (s->chan == SPICE_CHANNEL_DISPLAY &&
      s->msg_type == SPICE_MSG_DISPLAY_STREAM_ACTIVATE_REPORT && s->have >= 8) {
    s->report_stream = GST_READ_UINT32_LE (s->buf);
    s->report_unique = GST_READ_UINT32_LE (s->buf + 4);
    s->have_report = TRUE;
  }
}

static void
sock_expect (Sock * s, ReadStage stage, gsize need)
{
  s->stage = stage;
  s->have = 0;
  s->need = MIN (need, sizeof (s->buf));
}

/* @s->need bytes are in buf */
static void
sock_stage_done (Sock * s)
{
  GstSpiceLinkHeader h;
  TestWireLinkReply r;
  GstSpiceMsgHeader mh;

  switch (s->stage) {
    case RS_LINK_HDR:
      if (!gst_spice_wire_parse_link_header (s->buf, s->have, 4, &h, NULL))
        sock_expect (s, RS_IGNORE, 0);
      else
        sock_expect (s, RS_LINK_BODY, h.size);
      break;
    case RS_LINK_BODY:
      if (!test_wire_parse_link_reply (s->buf, s->have, &r) || r.error) {
        sock_expect (s, RS_IGNORE, 0);
        break;
      }
      memcpy (s->pub_key, r.pub_key, sizeof (s->pub_key));
      s->have_reply = TRUE;
      sock_expect (s, RS_RESULT, 4);
      break;
    case RS_RESULT:
      s->link_result = GST_READ_UINT32_LE (s->buf);
      if (s->link_result == SPICE_LINK_ERR_OK)
        sock_expect (s, RS_HDR, gst_spice_wire_header_size (s->mini));
      else
        sock_expect (s, RS_IGNORE, 0);
      break;
    case RS_HDR:
      if (!gst_spice_wire_parse_header (s->buf, s->have, s->mini, &mh)) {
        sock_expect (s, RS_IGNORE, 0);
        break;
      }
      s->msg_type = mh.type;
      s->msg_size = mh.size;
      sock_expect (s, RS_BODY, MIN (mh.size, KEEP_BODY));
      s->skip = mh.size - s->need;
      if (mh.size == 0) {
        sock_message (s);
        sock_expect (s, RS_HDR, gst_spice_wire_header_size (s->mini));
      }
      break;
    case RS_BODY:
      sock_message (s);
      sock_expect (s, RS_HDR, gst_spice_wire_header_size (s->mini));
      break;
    case RS_IGNORE:
      break;
  }
}

static void
sock_feed (Sock * s, const guint8 * d, gsize n)
{
  while (n > 0 && s->stage != RS_IGNORE) {
    if (s->have < s->need) {
      gsize k = MIN (n, s->need - s->have);

      memcpy (s->buf + s->have, d, k);
      s->have += k;
      d += k;
      n -= k;
    }
    if (s->have == s->need && s->skip > 0) {
      gsize k = MIN (n, s->skip);

      s->skip -= k;
      d += k;
      n -= k;
    }
    if (s->have == s->need && s->skip == 0)
      sock_stage_done (s);
  }
}

/* bytes from a WebSocket connection's server: the payload of its frames
 * goes on to the SPICE reader; an answer other than 101, or a close, is
 * the end of what we read */
static void
ws_feed (Sock * s, const guint8 * d, gsize n)
{
  TestWsReadResult res = test_ws_reader_feed (s->ws_reader, d, n,
      s->ws_payload);

  if (s->ws_payload->len > 0) {
    sock_feed (s, s->ws_payload->data, s->ws_payload->len);
    g_byte_array_set_size (s->ws_payload, 0);
  }
  if (res != TEST_WS_READ_OK)
    s->eof = TRUE;
}

/* writes what is not held back */
static void
sock_flush (Sock * s)
{
  gsize n;

  if (s->fd < 0 || s->shut)
    return;
  n = s->out->len - MIN (s->hold, s->out->len);
  while (n > 0) {
    gssize w = send (s->fd, s->out->data, n, MSG_DONTWAIT | MSG_NOSIGNAL);

    if (w < 0) {
      if (errno == EINTR)
        continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        /* the server closed it: what is left never goes */
        g_byte_array_set_size (s->out, 0);
        s->hold = 0;
      }
      return;
    }
    g_byte_array_remove_range (s->out, 0, w);
    n -= w;
  }
}

/* reads what is there (unless stalled) and writes what can go */
static void
sock_pump (Sock * s)
{
  static guint8 tmp[65536];
  guint i;

  if (s->fd < 0)
    return;
  sock_flush (s);
  for (i = 0; i < 64 && !s->stalled && !s->eof; i++) {
    gssize r = recv (s->fd, tmp, sizeof (tmp), MSG_DONTWAIT);

    if (r > 0) {
      if (s->ws)
        ws_feed (s, tmp, r);
      else
        sock_feed (s, tmp, r);
      continue;
    }
    if (r < 0 && errno == EINTR)
      continue;
    if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
      s->eof = TRUE;
    break;
  }
}

/* what @s waits for: to read (unless stalled or at its end), to write
 * while it holds something to write */
static gshort
sock_events (Sock * s)
{
  gshort ev = 0;

  if (s->fd < 0)
    return 0;
  if (!s->stalled && !s->eof)
    ev |= POLLIN;
  if (!s->shut && s->out->len > s->hold)
    ev |= POLLOUT;
  return ev;
}

/* polls the sockets (and @extra_fd, if not -1: readable) for up to @us
 * (0: a look; less when one becomes ready; a sleep when none waits for
 * anything) and pumps the ready ones; TRUE if a socket was */
static gboolean
poll_socks_and (gint64 us, gint extra_fd)
{
  struct pollfd pfd[N_SOCKS + 1];
  Sock *which[N_SOCKS];
  struct timespec ts = { us / G_USEC_PER_SEC, (us % G_USEC_PER_SEC) * 1000 };
  guint i, n = 0;
  gint r;
  gboolean ready = FALSE;

  for (i = 0; i < N_SOCKS; i++) {
    Sock *s = &H.socks[i];
    gshort ev = sock_events (s);

    if (!ev)
      continue;
    pfd[n].fd = s->fd;
    pfd[n].events = ev;
    pfd[n].revents = 0;
    which[n++] = s;
  }
  if (n == 0 && us == 0)
    return FALSE;
  if (extra_fd >= 0) {
    pfd[n].fd = extra_fd;
    pfd[n].events = POLLIN;
    pfd[n].revents = 0;
  }
  r = ppoll (pfd, n + (extra_fd >= 0), &ts, NULL);
  if (r <= 0)
    return FALSE;
  for (i = 0; i < n; i++)
    if (pfd[i].revents) {
      sock_pump (which[i]);
      ready = TRUE;
    }
  return ready;
}

static gboolean
poll_socks (gint64 us)
{
  return poll_socks_and (us, -1);
}

/* reads what is there and writes what can go, on every socket */
static void
pump_all (void)
{
  poll_socks (0);
}

/* the other threads of the process (the sink's server, the streaming
 * threads): settle() waits until they are all asleep */
static TestThreadsIdle *others;

/* without the watcher (more than one CPU): naps between looks */
#define SETTLE_NAP_MIN_US 10
#define SETTLE_NAP_MAX_US 100
/* with it: the longest wait for it between looks */
#define SETTLE_WATCH_US 2000

/* lets the sink act on what the program did: pumps the sockets until
 * @done (if given; TRUE), or until nothing can happen any more without us
 * (every other thread asleep, none ran while we looked, and no socket has
 * anything to read or room for what we write: TRUE without @done), or
 * until @max_us passed (FALSE). What the sink does on a timer is not
 * waited for (OP_SLEEP is). */
static gboolean
settle_until (gboolean (*done) (Sock * s), Sock * s, gint64 max_us)
{
  gint64 deadline = g_get_monotonic_time () + max_us;
  gint64 nap = SETTLE_NAP_MIN_US, left;
  gboolean watcher = test_threads_idle_fd (others) >= 0, first;

  for (first = TRUE;; first = FALSE) {
    if (done && done (s))
      return TRUE;
    /* with the watcher, the first look waits for it (what the program
     * just did keeps someone busy) */
    if ((!first || !watcher) && test_threads_idle_check (others) &&
        !poll_socks (0))
      return done == NULL;
    left = deadline - g_get_monotonic_time ();
    if (left <= 0)
      return FALSE;
    if (watcher) {
      /* one CPU: until it has nothing else to run */
      test_threads_idle_arm (others);
      poll_socks_and (MIN (left, SETTLE_WATCH_US),
          test_threads_idle_fd (others));
    } else if (poll_socks (MIN (left, nap))) {
      nap = SETTLE_NAP_MIN_US;
    } else {
      nap = MIN (nap * 2, SETTLE_NAP_MAX_US);
    }
  }
}

static gboolean
settle (gint64 max_us)
{
  return settle_until (NULL, NULL, max_us);
}

static gboolean
sock_gone (Sock * s)
{
  return s->fd < 0 || s->eof || s->stage == RS_IGNORE;
}

/* an answer can come: all we wrote is out, and we read it */
static gboolean
sock_answerable (Sock * s)
{
  return s->fd >= 0 && !s->stalled && !s->eof && s->stage != RS_IGNORE &&
      s->out->len == 0;
}

static gboolean
have_reply (Sock * s)
{
  return s->have_reply || sock_gone (s);
}

static gboolean
have_session (Sock * s)
{
  return s->session_id != 0 || sock_gone (s) || s->link_result > 0;
}

static Sock *
sock_free_slot (void)
{
  guint i;

  for (i = 0; i < N_SOCKS; i++)
    if (H.socks[i].fd < 0)
      return &H.socks[i];
  return NULL;
}

/* the (b % n)-th open socket */
static Sock *
sock_pick (Input * in)
{
  guint8 b = in_u8 (in);
  guint i, n = 0;

  for (i = 0; i < N_SOCKS; i++)
    n += H.socks[i].fd >= 0;
  if (n == 0)
    return NULL;
  b %= n;
  for (i = 0; i < N_SOCKS; i++)
    if (H.socks[i].fd >= 0 && b-- == 0)
      return &H.socks[i];
  return NULL;
}

/* a linked main channel's session (the (b % n)-th known), waiting for
 * MAIN_INIT of one that linked but did not say yet */
static guint32
live_session (guint8 b)
{
  guint i, n = 0;

  for (i = 0; i < N_SOCKS; i++) {
    Sock *s = &H.socks[i];

    if (s->chan == SPICE_CHANNEL_MAIN && s->ticket_sent && !s->session_id &&
        s->link_result <= 0 && sock_answerable (s))
      settle_until (have_session, s, ANSWER_WAIT_MS * 1000);
  }
  for (i = 0; i < N_SOCKS; i++)
    n += H.socks[i].session_id != 0;
  if (n == 0)
    return 0;
  b %= n;
  for (i = 0; i < N_SOCKS; i++)
    if (H.socks[i].session_id && b-- == 0)
      return H.socks[i].session_id;
  return 0;
}

static Sock *
sock_connect (guint8 flags)
{
  Sock *s = sock_free_slot ();
  struct sockaddr_in a;
  gint fd, one = 1;

  if (!s || H.port <= 0)
    return NULL;
  fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return NULL;
  memset (&a, 0, sizeof (a));
  a.sin_family = AF_INET;
  if (flags & 1) {
    /* another source for the per-source limits */
    a.sin_addr.s_addr = htonl (0x7f000002);
    (void) bind (fd, (struct sockaddr *) &a, sizeof (a));
  }
  if (flags & 2) {
    /* a client that fills up at once when it stops reading */
    gint small = 2048;

    setsockopt (fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof (small));
  }
  setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof (one));
  a.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
  a.sin_port = htons ((guint16) H.port);
  if (connect (fd, (struct sockaddr *) &a, sizeof (a)) < 0) {
    close (fd);
    return NULL;
  }
  fcntl (fd, F_SETFL, fcntl (fd, F_GETFL) | O_NONBLOCK);
  sock_reset_state (s);
  s->fd = fd;
  if (flags & 4) {
    const gchar *req = test_ws_upgrade_request ((flags & 0x40) != 0);

    /* the request, raw; everything after it in frames */
    g_byte_array_append (s->out, (const guint8 *) req, strlen (req));
    if (!s->ws_reader) {
      s->ws_reader = test_ws_reader_new ();
      s->ws_payload = g_byte_array_new ();
    }
    s->ws = TRUE;
    s->ws_style = (flags >> 3) & 7;
    s->ws_mask = 0x9e3779b9u * (guint32) (s - H.socks + 1) ^ flags;
  }
  return s;
}

/* closes and forgets @s; @rst: with a reset (no FIN, no TIME_WAIT) */
static void
sock_close (Sock * s, gboolean rst)
{
  if (s->fd < 0)
    return;
  if (rst) {
    struct linger l = { 1, 0 };

    setsockopt (s->fd, SOL_SOCKET, SO_LINGER, &l, sizeof (l));
  }
  close (s->fd);
  sock_reset_state (s);
}

/* @n bytes of SPICE framed for a WebSocket connection, in its style:
 * 0 one binary frame, 1 two fragments with a ping between them, 2 the
 * 64-bit length form, 3 a text frame (refused), 4 unmasked (refused),
 * 5 fragments of 7 bytes, 6 an unsolicited pong before a binary frame,
 * 7 binary frames, the second append a close (then nothing more) */
static void
ws_frame (Sock * s, const guint8 * d, gsize n)
{
  const guint8 bin = TEST_WS_FIN | TEST_WS_OP_BINARY;
  guint8 ping[4];
  gsize at, k;

  if (s->ws_closed)
    return;
  s->ws_mask = s->ws_mask * 1103515245u + 12345u;
  switch (s->ws_style) {
    case 1:
      k = n / 2;
      GST_WRITE_UINT32_BE (ping, s->ws_mask);
      test_ws_put_frame (s->out, TEST_WS_OP_BINARY, TRUE, s->ws_mask, FALSE,
          d, k);
      test_ws_put_frame (s->out, TEST_WS_FIN | TEST_WS_OP_PING, TRUE,
          ~s->ws_mask, FALSE, ping, s->ws_mask % 5);
      test_ws_put_frame (s->out, TEST_WS_FIN | TEST_WS_OP_CONTINUATION, TRUE,
          s->ws_mask ^ 0x5a5a5a5au, FALSE, d + k, n - k);
      break;
    case 2:
      test_ws_put_frame (s->out, bin, TRUE, s->ws_mask, TRUE, d, n);
      break;
    case 3:
      test_ws_put_frame (s->out, TEST_WS_FIN | TEST_WS_OP_TEXT, TRUE,
          s->ws_mask, FALSE, d, n);
      break;
    case 4:
      test_ws_put_frame (s->out, bin, FALSE, 0, FALSE, d, n);
      break;
    case 5:
      for (at = 0; at < n || at == 0; at += 7) {
        k = MIN (7, n - at);
        test_ws_put_frame (s->out, (at ? TEST_WS_OP_CONTINUATION :
                TEST_WS_OP_BINARY) | (at + k >= n ? TEST_WS_FIN : 0), TRUE,
            s->ws_mask + (guint32) at, FALSE, d + at, k);
        if (n == 0)
          break;
      }
      break;
    case 6:
      test_ws_put_frame (s->out, TEST_WS_FIN | TEST_WS_OP_PONG, TRUE,
          s->ws_mask, FALSE, d, MIN (n, 125));
      test_ws_put_frame (s->out, bin, TRUE, ~s->ws_mask, FALSE, d, n);
      break;
    case 7:
      if (s->msgs_out++ == 1) {
        guint8 close[2] = { 0x03, 0xe8 };       /* 1000 */

        test_ws_put_frame (s->out, TEST_WS_FIN | TEST_WS_OP_CLOSE, TRUE,
            s->ws_mask, FALSE, close, sizeof (close));
        s->ws_closed = TRUE;
        break;
      }
      test_ws_put_frame (s->out, bin, TRUE, s->ws_mask, FALSE, d, n);
      break;
    default:
      test_ws_put_frame (s->out, bin, TRUE, s->ws_mask, FALSE, d, n);
      break;
  }
}

static void
sock_append (Sock * s, const guint8 * d, gsize n)
{
  if (s->ws)
    ws_frame (s, d, n);
  else
    g_byte_array_append (s->out, d, n);
}

/* one data message, header as announced (or the other one: @flip_mini) */
static void
sock_msg (Sock * s, guint16 type, const guint8 * body, gsize size,
    guint32 hdr_size, gboolean flip_mini)
{
  guint8 h[GST_SPICE_WIRE_FULL_HEADER_SIZE];
  gboolean mini = s->mini != flip_mini;

  gst_spice_wire_put_header (h, mini, 1, type, hdr_size);
  sock_append (s, h, gst_spice_wire_header_size (mini));
  if (size)
    sock_append (s, body, size);
}

/* ------------------------------------------------------- link stage */

static const guint8 chan_table[16] = {
  SPICE_CHANNEL_MAIN, SPICE_CHANNEL_MAIN, SPICE_CHANNEL_DISPLAY,
  SPICE_CHANNEL_DISPLAY, SPICE_CHANNEL_DISPLAY, SPICE_CHANNEL_INPUTS,
  SPICE_CHANNEL_INPUTS, SPICE_CHANNEL_CURSOR, SPICE_CHANNEL_PLAYBACK,
  SPICE_CHANNEL_RECORD, SPICE_CHANNEL_TUNNEL, SPICE_CHANNEL_SMARTCARD,
  SPICE_CHANNEL_USBREDIR, SPICE_CHANNEL_PORT, SPICE_CHANNEL_WEBDAV, 0,
};

/* what spice-gtk 0.42 announces per channel */
static guint32
typical_caps (guint8 chan)
{
  switch (chan) {
    case SPICE_CHANNEL_MAIN:
      return 0xf;               /* migrations, NAME_AND_UUID,
                                 * AGENT_CONNECTED_TOKENS */
    case SPICE_CHANNEL_DISPLAY:
      return 0x6f3d;
    case SPICE_CHANNEL_INPUTS:
      return 1u << SPICE_INPUTS_CAP_KEY_SCANCODE;
    case SPICE_CHANNEL_PLAYBACK:
      return (1u << SPICE_PLAYBACK_CAP_VOLUME) |
          (1u << SPICE_PLAYBACK_CAP_OPUS);
    case SPICE_CHANNEL_RECORD:
      return (1u << SPICE_RECORD_CAP_VOLUME) | (1u << SPICE_RECORD_CAP_OPUS);
    default:
      return 0;
  }
}

/* @password encrypted with @key: the last key's tickets are kept (the
 * server's key changes only with a new RSA key, at NULL; OpenSSL 3 took
 * ~0.3 ms a ticket to decode the key). RSA-OAEP is randomized: any of its
 * ciphertexts decrypts alike. */
static gboolean
encrypt_ticket (const guint8 * key, gboolean good,
    guint8 t[GST_SPICE_WIRE_TICKET_SIZE])
{
  static guint8 last_key[SPICE_TICKET_PUBKEY_BYTES];
  static guint8 tickets[2][GST_SPICE_WIRE_TICKET_SIZE];
  static gboolean have[2];

  if (memcmp (key, last_key, sizeof (last_key)) != 0) {
    memcpy (last_key, key, sizeof (last_key));
    have[0] = have[1] = FALSE;
  }
  if (!have[good]) {
    if (!test_wire_encrypt_ticket (key, sizeof (last_key),
            good ? PASSWORD : "wrong", tickets[good],
            GST_SPICE_WIRE_TICKET_SIZE))
      return FALSE;
    have[good] = TRUE;
  }
  memcpy (t, tickets[good], GST_SPICE_WIRE_TICKET_SIZE);
  return TRUE;
}

/* the ticket: @mode 0 zeros, 1 our password encrypted with the server's
 * key (waits for its reply), 2 a wrong one, 3 128 bytes of the input */
static void
make_ticket (Sock * s, guint mode, Input * in,
    guint8 t[GST_SPICE_WIRE_TICKET_SIZE])
{
  memset (t, 0, GST_SPICE_WIRE_TICKET_SIZE);
  if ((mode == 1 || mode == 2) && s->link_sent) {
    if (sock_answerable (s) && !s->link_odd)
      settle_until (have_reply, s, ANSWER_WAIT_MS * 1000);
    if (!s->have_reply || !encrypt_ticket (s->pub_key, mode == 1, t))
      memset (t, 0, GST_SPICE_WIRE_TICKET_SIZE);
  } else if (mode == 3) {
    in_bytes (in, t, GST_SPICE_WIRE_TICKET_SIZE);
  }
}

/* the ticket mode that links when nothing else is wrong */
static guint
good_ticket (void)
{
  return H.password ? 1 : 0;
}

static void
sock_link (Sock * s, guint8 chan, guint32 conn_id, guint8 caps_sel,
    guint32 raw_caps, gboolean channel_id, gboolean two_words)
{
  GstSpiceLinkMess m = { 0, };
  GByteArray *a = g_byte_array_new ();

  s->chan = chan;
  s->mini = !(caps_sel & 1);
  s->auth_sel = !(caps_sel & 2);
  m.connection_id = conn_id;
  m.channel_type = chan;
  m.channel_id = channel_id ? 1 : 0;
  m.n_common = 1;
  m.common_caps[0] = 1u << SPICE_COMMON_CAP_AUTH_SPICE;
  if (s->mini)
    m.common_caps[0] |= 1u << SPICE_COMMON_CAP_MINI_HEADER;
  if (s->auth_sel)
    m.common_caps[0] |= 1u << SPICE_COMMON_CAP_PROTOCOL_AUTH_SELECTION;
  if (caps_sel & 4)
    m.common_caps[0] |= 1u << SPICE_COMMON_CAP_AUTH_SASL;
  m.n_channel = two_words ? 2 : 1;
  switch ((caps_sel >> 3) & 3) {
    case 0:
      m.channel_caps[0] = typical_caps (chan);
      break;
    case 1:
      m.channel_caps[0] = 0;
      break;
    case 2:
      m.channel_caps[0] = 0xffffffff;
      break;
    default:
      m.channel_caps[0] = raw_caps;
      break;
  }
  m.channel_caps[1] = two_words ? raw_caps : 0;
  test_wire_write_link_mess (a, &m);
  sock_append (s, a->data, a->len);
  s->link_sent = TRUE;
  g_byte_array_unref (a);
}

/* the auth mechanism (if selection was announced; @mode & 4: another
 * one) and the ticket (make_ticket(): @mode & 3) */
static void
sock_auth (Sock * s, guint mode, Input * in)
{
  guint8 mech[4], t[GST_SPICE_WIRE_TICKET_SIZE];

  GST_WRITE_UINT32_LE (mech, (mode & 4) ? in_u32 (in) :
      SPICE_COMMON_CAP_AUTH_SPICE);
  make_ticket (s, mode & 3, in, t);
  if (s->auth_sel)
    sock_append (s, mech, 4);
  sock_append (s, t, sizeof (t));
  s->ticket_sent = TRUE;
}

/* ---------------------------------------------------- messages bodies */

static const guint16 msg_types[] = {
  SPICE_MSGC_ACK_SYNC, SPICE_MSGC_ACK, SPICE_MSGC_PONG,
  SPICE_MSGC_MIGRATE_FLUSH_MARK, SPICE_MSGC_MIGRATE_DATA,
  SPICE_MSGC_DISCONNECTING, 101, 102, 103, 104, 105, 106, 107, 108, 109,
  110, 111, 112, 113, 114, 0, 7, 99, 100, 115, 200, 201, 0xffff,
};

/* the body a client sends for @type on @chan, fields from the input */
static void
natural_body (Sock * s, guint16 type, Input * in, GByteArray * b)
{
  guint8 tmp[64];
  guint8 v = in_u8 (in);
  guint n;

  switch (type) {
    case SPICE_MSGC_ACK_SYNC:
      gst_spice_put_u32 (b, in_u32 (in));
      return;
    case SPICE_MSGC_ACK:
    case SPICE_MSGC_MIGRATE_FLUSH_MARK:
      return;
    case SPICE_MSGC_PONG:
      gst_spice_put_u32 (b, in_u32 (in));
      gst_spice_put_u64 (b, (v & 1) ? (guint64) g_get_monotonic_time () -
          in_u16 (in) : ((guint64) in_u32 (in) << 32) | in_u32 (in));
      return;
    case SPICE_MSGC_DISCONNECTING:
      in_bytes (in, tmp, 12);
      gst_spice_put_bytes (b, tmp, 12);
      return;
    default:
      break;
  }
  switch (s->chan) {
    case SPICE_CHANNEL_MAIN:
      switch (type) {
        case SPICE_MSGC_MAIN_CLIENT_INFO:
          in_bytes (in, tmp, 8);
          gst_spice_put_bytes (b, tmp, 8);
          return;
        case SPICE_MSGC_MAIN_ATTACH_CHANNELS:
          return;
        case SPICE_MSGC_MAIN_MOUSE_MODE_REQUEST:
          gst_spice_put_u16 (b, v < 0xf0 ? 1 + (v & 1) : in_u16 (in));
          return;
        case SPICE_MSGC_MAIN_AGENT_START:
        case SPICE_MSGC_MAIN_AGENT_TOKEN:{
          static const guint32 tokens[] = { 0, 1, 5, 10, G_MAXUINT32 };

          gst_spice_put_u32 (b, v < 0xf0 ? tokens[v % G_N_ELEMENTS (tokens)]
              : in_u32 (in));
          return;
        }
        case SPICE_MSGC_MAIN_AGENT_DATA:{
          gsize len = 1 + in_u16 (in) % VD_AGENT_MAX_DATA_SIZE;
          guint8 *p = g_malloc (len);

          in_bytes (in, p, len);
          gst_spice_put_bytes (b, p, len);
          g_free (p);
          return;
        }
        default:
          break;
      }
      break;
    case SPICE_CHANNEL_DISPLAY:
      switch (type) {
        case SPICE_MSGC_DISPLAY_INIT:
          in_bytes (in, tmp, 14);
          gst_spice_put_bytes (b, tmp, 14);
          return;
        case SPICE_MSGC_DISPLAY_STREAM_REPORT:{
          /* the stream the server announced last, or another one */
          gboolean known = s->have_report && !(v & 1);
          guint32 id = in_u8 (in) % 72, unique = in_u32 (in);

          gst_spice_put_u32 (b, known ? s->report_stream : id);
          gst_spice_put_u32 (b, known ? s->report_unique : unique);
          gst_spice_put_u32 (b, in_u32 (in));   /* start mm time */
          gst_spice_put_u32 (b, in_u32 (in));   /* end mm time */
          gst_spice_put_u32 (b, (v & 2) ? 0 : in_u8 (in));
          gst_spice_put_u32 (b, (v & 2) ? 0xffffffff : in_u8 (in));
          gst_spice_put_u32 (b, (guint32) (gint32) (gint8) in_u8 (in));
          gst_spice_put_u32 (b, in_u8 (in));
          return;
        }
        case SPICE_MSGC_DISPLAY_PREFERRED_COMPRESSION:
          gst_spice_put_u8 (b, in_u8 (in));
          return;
        case SPICE_MSGC_DISPLAY_PREFERRED_VIDEO_CODEC_TYPE:
          n = in_u8 (in) % 8;
          gst_spice_put_u8 (b, n);
          in_bytes (in, tmp, n);
          gst_spice_put_bytes (b, tmp, n);
          return;
        default:
          break;
      }
      break;
    case SPICE_CHANNEL_INPUTS:
      switch (type) {
        case SPICE_MSGC_INPUTS_KEY_DOWN:
        case SPICE_MSGC_INPUTS_KEY_UP:
          gst_spice_put_u32 (b, v < 0xc0 ? test_wire_encode_key_code
              ((v & 0x80 ? 0x100 : 0) | (in_u8 (in) & 0x7f),
                  type == SPICE_MSGC_INPUTS_KEY_UP) : in_u32 (in));
          return;
        case SPICE_MSGC_INPUTS_KEY_MODIFIERS:
          gst_spice_put_u16 (b, in_u16 (in));
          return;
        case SPICE_MSGC_INPUTS_KEY_SCANCODE:
          n = 1 + v % 16;
          in_bytes (in, tmp, n);
          gst_spice_put_bytes (b, tmp, n);
          return;
        case SPICE_MSGC_INPUTS_MOUSE_MOTION:
          gst_spice_put_u32 (b, (guint32) (gint32) (gint16) in_u16 (in));
          gst_spice_put_u32 (b, (guint32) (gint32) (gint16) in_u16 (in));
          gst_spice_put_u16 (b, in_u8 (in));
          return;
        case SPICE_MSGC_INPUTS_MOUSE_POSITION:
          gst_spice_put_u32 (b, (v & 1) ? in_u32 (in) : in_u16 (in) % 400);
          gst_spice_put_u32 (b, (v & 1) ? in_u32 (in) : in_u16 (in) % 300);
          gst_spice_put_u16 (b, in_u8 (in));
          gst_spice_put_u8 (b, (v & 2) ? 1 : 0);
          return;
        case SPICE_MSGC_INPUTS_MOUSE_PRESS:
        case SPICE_MSGC_INPUTS_MOUSE_RELEASE:
          gst_spice_put_u8 (b, in_u8 (in) % 9);
          gst_spice_put_u16 (b, in_u8 (in));
          return;
        default:
          break;
      }
      break;
    case SPICE_CHANNEL_RECORD:
      switch (type) {
        case SPICE_MSGC_RECORD_DATA:{
          gsize len = (v & 1) ? in_u16 (in) % 2000 : 4 * (in_u16 (in) % 500);
          guint8 *p = g_malloc0 (len + 1);

          gst_spice_put_u32 (b, in_u32 (in));
          in_bytes (in, p, MIN (len, 16));
          gst_spice_put_bytes (b, p, len);
          g_free (p);
          return;
        }
        case SPICE_MSGC_RECORD_MODE:
          gst_spice_put_u32 (b, in_u32 (in));
          gst_spice_put_u16 (b, (v & 1) ? SPICE_AUDIO_DATA_MODE_OPUS :
              (v & 2) ? in_u16 (in) : SPICE_AUDIO_DATA_MODE_RAW);
          n = in_u8 (in) % 8;
          in_bytes (in, tmp, n);
          gst_spice_put_bytes (b, tmp, n);
          return;
        case SPICE_MSGC_RECORD_START_MARK:
          gst_spice_put_u32 (b, in_u32 (in));
          return;
        default:
          break;
      }
      break;
    default:
      break;
  }
  /* anything else: a few bytes of the input */
  n = v % 24;
  in_bytes (in, tmp, n);
  gst_spice_put_bytes (b, tmp, n);
}

/* OP_MSG: type, size mode (bits 0-2: 0-4 natural body, 5 one byte off
 * the allowed sizes, 6 a body of the input, 7 a huge size in the header
 * only; bit 3: the other header format), then the body's fields */
static void
op_msg (Input * in)
{
  Sock *s = sock_pick (in);
  guint8 tsel = in_u8 (in), sm = in_u8 (in);
  guint16 type = tsel < 0xf0 ? msg_types[tsel % G_N_ELEMENTS (msg_types)] :
      in_u16 (in);
  gboolean flip = (sm & 8) != 0;
  GByteArray *b;
  guint32 min = 0, max = 0;

  if (!s)
    return;
  b = g_byte_array_new ();
  switch (sm & 7) {
    case 5:
      if (gst_spice_wire_client_msg_limits (s->chan, type, &min, &max) &&
          min > 0 && (sm & 0x10))
        g_byte_array_set_size (b, min - 1);
      else
        g_byte_array_set_size (b, MIN (max + 1, 70000));
      if (b->len)
        memset (b->data, in_u8 (in), b->len);
      break;
    case 6:
      g_byte_array_set_size (b, in_u8 (in));
      in_bytes (in, b->data, b->len);
      break;
    case 7:
      sock_msg (s, type, NULL, 0, 0x7fff0000u | in_u16 (in), flip);
      g_byte_array_unref (b);
      sock_flush (s);
      return;
    default:
      natural_body (s, type, in, b);
      break;
  }
  sock_msg (s, type, b->data, b->len, b->len, flip);
  g_byte_array_unref (b);
  sock_flush (s);
}

/* AGENT_DATA messages carrying @msg in chunks of @chunk bytes */
static void
sock_agent_chunks (Sock * s, const GByteArray * msg, gsize chunk)
{
  gsize off;

  for (off = 0; off < msg->len; off += chunk) {
    gsize n = MIN (chunk, msg->len - off);

    sock_msg (s, SPICE_MSGC_MAIN_AGENT_DATA, msg->data + off, n, n, FALSE);
  }
}

static const guint32 clip_types[] = {
  VD_AGENT_CLIPBOARD_UTF8_TEXT, VD_AGENT_CLIPBOARD_IMAGE_PNG,
  VD_AGENT_CLIPBOARD_IMAGE_BMP, VD_AGENT_CLIPBOARD_NONE, 77,
};

static const gsize clip_sizes[] = { 0, 5, 3000, 65536, 70000 };

static void
fill_clipboard (GstSpiceClipboard * c, Input * in, GstSpiceClipboardAction a)
{
  guint8 v = in_u8 (in);
  guint i;

  memset (c, 0, sizeof (*c));
  c->action = a;
  c->selection = v % 4;         /* 3: no such selection */
  c->type = clip_types[(v >> 2) % G_N_ELEMENTS (clip_types)];
  c->n_types = 1 + (v >> 5) % 3;
  for (i = 0; i < c->n_types; i++)
    c->types[i] = clip_types[(v + i) % G_N_ELEMENTS (clip_types)];
  if (a == GST_SPICE_CLIPBOARD_DATA) {
    gsize n = clip_sizes[in_u8 (in) % G_N_ELEMENTS (clip_sizes)];
    guint8 *p = g_malloc0 (n + 1);

    in_bytes (in, p, MIN (n, 8));
    c->data = g_bytes_new_take (p, n);
  }
}

/* OP_AGENT: one VDAgentMessage from a client in AGENT_DATA chunks:
 * kind, chunk size, then its fields */
static void
op_agent (Input * in)
{
  Sock *s = sock_pick (in);
  guint8 kind = in_u8 (in), cs = in_u8 (in);
  gsize chunk = cs < 0xc0 ? VD_AGENT_MAX_DATA_SIZE : 1 + cs % 64;
  GByteArray *a;
  GstSpiceClipboard c;
  guint8 tmp[64];

  if (!s)
    return;
  a = g_byte_array_new ();
  switch (kind % 10) {
    case 0:{
      guint32 caps[VD_AGENT_CAPS_SIZE] = { 0, };
      guint8 v = in_u8 (in);

      VD_AGENT_SET_CAPABILITY (caps, VD_AGENT_CAP_CLIPBOARD_BY_DEMAND);
      if (!(v & 1))
        VD_AGENT_SET_CAPABILITY (caps, VD_AGENT_CAP_CLIPBOARD_SELECTION);
      if (v & 2)
        VD_AGENT_SET_CAPABILITY (caps, VD_AGENT_CAP_MONITORS_CONFIG);
      s->agent_sel = !(v & 1);
      gst_spice_agent_write_caps (a, (v & 4) != 0, caps);
      break;
    }
    case 1:
      fill_clipboard (&c, in, GST_SPICE_CLIPBOARD_GRAB);
      test_agent_write_clipboard (a, &c, s->agent_sel, FALSE, 0);
      break;
    case 2:
      fill_clipboard (&c, in, GST_SPICE_CLIPBOARD_REQUEST);
      test_agent_write_clipboard (a, &c, s->agent_sel, FALSE, 0);
      break;
    case 3:
      fill_clipboard (&c, in, GST_SPICE_CLIPBOARD_DATA);
      test_agent_write_clipboard (a, &c, s->agent_sel, FALSE, 0);
      gst_spice_clipboard_clear (&c);
      break;
    case 4:
      fill_clipboard (&c, in, GST_SPICE_CLIPBOARD_RELEASE);
      test_agent_write_clipboard (a, &c, s->agent_sel, FALSE, 0);
      break;
    case 5:{
      GstSpiceMonitor mons[3];
      guint n = 1 + in_u8 (in) % 3, i;

      for (i = 0; i < n; i++) {
        mons[i].x = (gint8) in_u8 (in);
        mons[i].y = 0;
        mons[i].width = in_u16 (in);
        mons[i].height = in_u16 (in);
      }
      test_agent_write_monitors_config (a, mons, n);
      break;
    }
    case 6:{
      static const gchar text[] = "[vdagent-file-xfer]\nname=a\nsize=1\n";
      guint n = (in_u8 (in) & 1) ? 4 + sizeof (text) : in_u8 (in) % 4;

      GST_WRITE_UINT32_LE (tmp, in_u32 (in));   /* id */
      memcpy (tmp + 4, text, sizeof (text));
      gst_spice_agent_write_message (a, VD_AGENT_FILE_XFER_START, tmp, n);
      break;
    }
    case 7:{
      /* a message of another type (or out of range), raw body */
      guint n = in_u8 (in) % 48;

      in_bytes (in, tmp, n);
      gst_spice_agent_write_message (a, in_u8 (in) % 24, tmp, n);
      break;
    }
    case 8:{
      /* a header that lies: protocol, or a huge size */
      guint8 h[20];

      in_bytes (in, h, sizeof (h));
      if (h[0] & 1) {
        GST_WRITE_UINT32_LE (h, VD_AGENT_PROTOCOL);
        GST_WRITE_UINT32_LE (h + 16, 0x00100000u | in_u16 (in));
      }
      gst_spice_put_bytes (a, h, sizeof (h));
      break;
    }
    default:{
      /* a clipboard above the limit, declared in the header only */
      guint8 h[20];

      GST_WRITE_UINT32_LE (h, VD_AGENT_PROTOCOL);
      GST_WRITE_UINT32_LE (h + 4, VD_AGENT_CLIPBOARD);
      GST_WRITE_UINT64_LE (h + 8, 0);
      GST_WRITE_UINT32_LE (h + 16, 16u << 20);
      gst_spice_put_bytes (a, h, sizeof (h));
      g_byte_array_set_size (a, 20 + 3 * VD_AGENT_MAX_DATA_SIZE);
      memset (a->data + 20, 0x61, a->len - 20);
      break;
    }
  }
  sock_agent_chunks (s, a, chunk);
  g_byte_array_unref (a);
  sock_flush (s);
}

/* ---------------------------------------------------------- element */

static gboolean
set_state (GstState st)
{
  GstStateChangeReturn r = gst_element_set_state (H.pipeline, st);

  if (r == GST_STATE_CHANGE_ASYNC)
    r = gst_element_get_state (H.pipeline, NULL, NULL, 5 * GST_SECOND);
  return r != GST_STATE_CHANGE_FAILURE;
}

/* a listening TCP socket on 127.0.0.1, any port */
static gint
listen_socket (void)
{
  struct sockaddr_in a = { 0 };
  gint fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
  if (fd < 0 || bind (fd, (struct sockaddr *) &a, sizeof (a)) != 0 ||
      listen (fd, 64) != 0)
    g_error ("fuzz-session: no listening socket: %s", g_strerror (errno));
  return fd;
}

static void
read_port (void)
{
  g_object_get (H.sink, "bound-port", &H.port, NULL);
}

static GstCaps *
draws_caps (gint surface)
{
  return gst_caps_new_simple (GST_SPICE_DRAWS_MEDIA_TYPE, "width",
      G_TYPE_INT, surface ? SURF_B_W : SURF_A_W, "height", G_TYPE_INT,
      surface ? SURF_B_H : SURF_A_H, NULL);
}

/* a copy sharing the memory, with @pts */
static GstBuffer *
with_pts (GstBuffer * buf, GstClockTime pts)
{
  GstBuffer *b = gst_buffer_copy (buf);

  GST_BUFFER_PTS (b) = pts;
  return b;
}

/* the draw pad's upstream events: a refresh is answered like the tiler
 * (a full REFRESH update), from the sink's event thread */
static GstPadProbeReturn
draw_upstream_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  GstEvent *ev = GST_PAD_PROBE_INFO_EVENT (info);

  if (gst_spice_event_is_refresh (ev) && g_atomic_int_get (&H.answer_refresh)) {
    gint surface = g_atomic_int_get (&H.surface);

    gst_app_src_push_buffer (GST_APP_SRC (H.draw_src),
        with_pts (H.refresh[surface], GST_CLOCK_TIME_NONE));
  }
  return GST_PAD_PROBE_OK;
}

static const gchar *codec_caps[] = {
  "image/jpeg, width=(int)96, height=(int)64",
  "video/x-vp8, width=(int)96, height=(int)64",
  "video/x-h264, stream-format=(string)byte-stream, alignment=(string)au",
  "video/x-vp9",
  "image/jpeg",
};

static GstElement *
make_appsrc (GstCaps * caps)
{
  GstElement *src = gst_element_factory_make ("appsrc", NULL);

  g_assert (src);
  g_object_set (src, "caps", caps, "format", GST_FORMAT_TIME, "block", FALSE,
      "max-bytes", (guint64) 16 * 1024 * 1024, NULL);
  gst_caps_unref (caps);
  return src;
}

static void
stream_request (StreamSlot * st)
{
  GstPad *srcpad;

  if (st->pad)
    return;
  st->pad = gst_element_request_pad_simple (H.sink, "stream_%u");
  g_assert (st->pad);
  st->codec = 0;
  st->eos = FALSE;
  st->src = make_appsrc (gst_caps_from_string (codec_caps[0]));
  gst_bin_add (GST_BIN (H.pipeline), gst_object_ref (st->src));
  srcpad = gst_element_get_static_pad (st->src, "src");
  g_assert (gst_pad_link (srcpad, st->pad) == GST_PAD_LINK_OK);
  gst_object_unref (srcpad);
  gst_element_sync_state_with_parent (st->src);
}

/* releases the sink's pad first: its chain may be waiting for room */
static void
stream_release (StreamSlot * st)
{
  if (!st->pad)
    return;
  gst_element_release_request_pad (H.sink, st->pad);
  gst_object_unref (st->pad);
  st->pad = NULL;
  gst_element_set_state (st->src, GST_STATE_NULL);
  gst_bin_remove (GST_BIN (H.pipeline), st->src);
  gst_object_unref (st->src);
  st->src = NULL;
}

/* ------------------------------------------------------------ ops */

/* the FNV-1a hash of the whole input being run */
static guint32 input_hash;

static void
hash_input (const guint8 * data, gsize size)
{
  guint32 h = 2166136261u;
  gsize i;

  for (i = 0; i < size; i++)
    h = (h ^ data[i]) * 16777619u;
  input_hash = h;
}

/* TRUE for one input in @n, by its hash: a costly operation made rare
 * whatever the corpus holds (a found value of a byte would be kept by
 * every mutation), the same each time an input runs (a budget would
 * make a run differ from the input run alone) */
static gboolean
input_gate (guint n)
{
  return input_hash % n == 0;
}

/* OP_STATE's NULL runs in one input of this (a new RSA key: the fuzzer
 * soon learns 0x5a, and then spent 10 % of its time in key generation) */
#define NULL_RARITY 8

enum
{
  OP_CONNECT,                   /* flags: 1 from 127.0.0.2, 2 SO_RCVBUF 2 KiB,
                                 * 4 WebSocket (bits 3-5: its framing,
                                 * ws_frame(); 0x40: deflate offered) */
  OP_LINK,                      /* sock, chan, id mode, caps, flags [u32] */
  OP_AUTH,                      /* sock, mode: ticket (& 3), bad mechanism */
  OP_MSG,                       /* sock, type, size mode, fields */
  OP_MSG2,
  OP_AGENT,                     /* sock, kind, chunk, fields */
  OP_HOLD,                      /* sock, u16: keep that many bytes back */
  OP_UNHOLD,                    /* sock */
  OP_SHUT,                      /* sock: shutdown (SHUT_WR) */
  OP_RST,                       /* sock: SO_LINGER {1, 0} + close */
  OP_CLOSE,                     /* sock */
  OP_STALL,                     /* sock: stop / resume reading it */
  OP_WAIT,                      /* n: let the server act for 1..8 ms */
  OP_DRAW,                      /* update index, pts mode */
  OP_FRAME,                     /* slot, frame, meta mode, flags [rect] */
  OP_PAD,                       /* slot, action */
  OP_STATE,                     /* which [confirm] */
  OP_GUEST,                     /* kind, fields */
  OP_CURSOR,                    /* kind, fields */
  OP_AUDIO,                     /* kind, fields */
  OP_SETTING,                   /* which, value */
  OP_SLEEP,                     /* how long */
  OP_SESSION,                   /* channel mask, flags */
  OP_SURFACE,                   /* none: switches between A and B */
  N_OPS
};

static void
op_connect (Input * in)
{
  sock_connect (in_u8 (in));
}

/* OP_LINK: sock, channel (table; >= 0xf8: raw type byte), connection id
 * mode (& 3: 0-1 a live session's, 2 zero, 3 u32), caps selector
 * (sock_link()), flags (1 ticket follows (mode (f >> 1) & 3), 8 corrupt a
 * byte (pos, xor), 16 channel id 1, 32 two caps words) */
static void
op_link (Input * in)
{
  Sock *s = sock_pick (in);
  guint8 cb = in_u8 (in), idm = in_u8 (in), caps = in_u8 (in), f = in_u8 (in);
  guint8 chan = cb >= 0xf8 ? in_u8 (in) : chan_table[cb % 16];
  guint32 id = 0, raw = 0;
  gsize start;

  if (!s)
    return;
  switch (idm & 3) {
    case 0:
    case 1:
      id = chan == SPICE_CHANNEL_MAIN ? 0 : live_session (idm >> 2);
      break;
    case 2:
      id = 0;
      break;
    default:
      id = in_u32 (in);
      break;
  }
  if (((caps >> 3) & 3) == 3 || (f & 32))
    raw = in_u32 (in);
  start = s->out->len;
  sock_link (s, chan, id, caps, raw, (f & 16) != 0, (f & 32) != 0);
  s->link_odd = (f & (8 | 16)) != 0;
  if (f & 8) {
    guint8 pos = in_u8 (in), x = in_u8 (in) | 1;

    /* (a WebSocket closed on our side frames nothing more) */
    if (s->out->len > start)
      s->out->data[start + pos % (s->out->len - start)] ^= x;
  }
  if (f & 1) {
    sock_flush (s);
    sock_auth (s, (f >> 1) & 3, in);
  }
  sock_flush (s);
}

static void
op_auth (Input * in)
{
  Sock *s = sock_pick (in);
  guint8 mode = in_u8 (in);

  if (!s)
    return;
  sock_auth (s, mode, in);
  sock_flush (s);
}

static void
op_hold (Input * in)
{
  Sock *s = sock_pick (in);
  guint16 n = in_u16 (in);

  if (s)
    s->hold = n;
}

static void
op_unhold (Input * in)
{
  Sock *s = sock_pick (in);

  if (!s)
    return;
  s->hold = 0;
  sock_flush (s);
}

static void
op_shut (Input * in)
{
  Sock *s = sock_pick (in);

  if (!s || s->shut)
    return;
  sock_flush (s);
  shutdown (s->fd, SHUT_WR);
  s->shut = TRUE;
}

static void
op_stall (Input * in)
{
  Sock *s = sock_pick (in);

  if (s)
    s->stalled = !s->stalled;
}

/* OP_WAIT: lets the sink act: reads and writes until it did all it could
 * (settle(); at most 1..8 ms) */
static void
op_wait (Input * in)
{
  settle ((1 + in_u8 (in) % 8) * 1000);
}

/* OP_DRAW: update (index into the surface's list), pts mode */
static void
op_draw (Input * in)
{
  gint surface = g_atomic_int_get (&H.surface);
  GPtrArray *d = H.draws[surface];
  guint8 i = in_u8 (in), pm = in_u8 (in);
  GstClockTime pts;

  H.pts += 33 * GST_MSECOND;
  pts = (pm & 3) == 3 ? GST_CLOCK_TIME_NONE : H.pts;
  gst_app_src_push_buffer (GST_APP_SRC (H.draw_src),
      with_pts (g_ptr_array_index (d, i % d->len), pts));
  H.draws_pushed = TRUE;
}

/* OP_FRAME: slot, frame, meta (& 3: none, inside the surface, from the
 * input, off the surface; >> 2: stream id), flags (1 delta unit, 2
 * keyframe wish, 4 empty frame, & 0x18: pts none / older / same / newer
 * than the last draw) */
static void
op_frame (Input * in)
{
  StreamSlot *st = &H.streams[in_u8 (in) % N_STREAM_SLOTS];
  guint8 fi = in_u8 (in), mm = in_u8 (in), f = in_u8 (in);
  GstBuffer *b;
  GstVideoRectangle r = { 16, 16, 96, 64 };
  static const GstClockTimeDiff dpts[] = { 0, -100 * GST_MSECOND, 0,
    50 * GST_MSECOND
  };

  if (!st->pad)
    return;
  if (f & 4)
    b = gst_buffer_new ();
  else
    b = gst_buffer_copy (g_ptr_array_index (H.frames, fi % H.frames->len));
  switch (mm & 3) {
    case 1:
      r.x = (fi >> 2) * 8 % 200;
      r.y = (fi >> 5) * 8;
      break;
    case 2:
      r.x = in_u8 (in);
      r.y = in_u8 (in);
      r.w = 1 + in_u8 (in);
      r.h = 1 + in_u8 (in);
      break;
    case 3:
      /* off the surface, or partly */
      r.x = (gint8) in_u8 (in) * 64;
      r.y = (gint8) in_u8 (in) * 64;
      r.w = 1 + in_u16 (in);
      r.h = 1 + in_u16 (in);
      break;
    default:
      break;
  }
  if (mm & 3)
    gst_buffer_add_spice_stream_meta (b, &r, mm >> 2, (f & 2) != 0);
  if (f & 1)
    GST_BUFFER_FLAG_SET (b, GST_BUFFER_FLAG_DELTA_UNIT);
  GST_BUFFER_PTS (b) = ((f >> 3) & 3) == 0 ? GST_CLOCK_TIME_NONE :
      (GstClockTime) MAX ((GstClockTimeDiff) H.pts + dpts[(f >> 3) & 3], 0);
  gst_app_src_push_buffer (GST_APP_SRC (st->src), b);
}

/* OP_PAD: slot, action (& 3: request, release, EOS, caps of another
 * codec (>> 2)) */
static void
op_pad (Input * in)
{
  StreamSlot *st = &H.streams[in_u8 (in) % N_STREAM_SLOTS];
  guint8 a = in_u8 (in);

  switch (a & 3) {
    case 0:
      stream_request (st);
      break;
    case 1:
      stream_release (st);
      break;
    case 2:
      if (st->pad && !st->eos) {
        gst_app_src_end_of_stream (GST_APP_SRC (st->src));
        st->eos = TRUE;
      }
      break;
    default:
      if (st->pad) {
        GstCaps *caps;

        st->codec = (a >> 2) % G_N_ELEMENTS (codec_caps);
        caps = gst_caps_from_string (codec_caps[st->codec]);
        g_object_set (st->src, "caps", caps, NULL);
        gst_caps_unref (caps);
      }
      break;
  }
}

/* OP_STATE: & 7: 0-1 PAUSED, 2-3 PLAYING, 4 READY, 5 READY and back (4
 * and 5 only with bits 3-4 clear: each costs ~2 ms), 6 NULL and back
 * (slow: a new RSA key, ~5 ms; only with a second byte 0x5a, and in one
 * input of NULL_RARITY: input_gate()), 7 PAUSED and back */
static void
op_state (Input * in)
{
  guint8 w = in_u8 (in);

  if ((w & 7) >= 4 && (w & 7) <= 5 && (w & 0x18))
    w = 7;
  H.state_changed = TRUE;
  switch (w & 7) {
    case 0:
    case 1:
      set_state (GST_STATE_PAUSED);
      break;
    case 2:
    case 3:
      set_state (GST_STATE_PLAYING);
      break;
    case 4:
      set_state (GST_STATE_READY);
      break;
    case 5:
      set_state (GST_STATE_READY);
      set_state (GST_STATE_PLAYING);
      break;
    case 6:
      if (in_u8 (in) != 0x5a || !input_gate (NULL_RARITY))
        break;
      set_state (GST_STATE_NULL);
      set_state (GST_STATE_PLAYING);
      read_port ();
      break;
    default:
      set_state (GST_STATE_PAUSED);
      set_state (GST_STATE_PLAYING);
      break;
  }
}

/* OP_GUEST: the guest's agent (events on the draw pad): kind (% 6:
 * connected with caps, grab, request, data, release, gone), fields */
static void
op_guest (Input * in)
{
  guint8 kind = in_u8 (in);
  GstSpiceClipboard c;
  GstEvent *ev = NULL;

  H.agent_touched = TRUE;
  switch (kind % 6) {
    case 0:{
      GstSpiceAgentInfo info = { 0, };
      guint8 v = in_u8 (in);

      info.connected = TRUE;
      info.client_mouse = (v & 1) != 0;
      if (v & 2)
        VD_AGENT_SET_CAPABILITY (info.caps, VD_AGENT_CAP_MONITORS_CONFIG);
      if (v & 4)
        VD_AGENT_SET_CAPABILITY (info.caps, VD_AGENT_CAP_GUEST_LINEEND_CRLF);
      VD_AGENT_SET_CAPABILITY (info.caps, VD_AGENT_CAP_CLIPBOARD_BY_DEMAND);
      VD_AGENT_SET_CAPABILITY (info.caps, VD_AGENT_CAP_CLIPBOARD_SELECTION);
      ev = gst_spice_event_new_agent (&info);
      break;
    }
    case 1:
      fill_clipboard (&c, in, GST_SPICE_CLIPBOARD_GRAB);
      ev = gst_spice_event_new_clipboard (FALSE, &c);
      break;
    case 2:
      fill_clipboard (&c, in, GST_SPICE_CLIPBOARD_REQUEST);
      ev = gst_spice_event_new_clipboard (FALSE, &c);
      break;
    case 3:
      fill_clipboard (&c, in, GST_SPICE_CLIPBOARD_DATA);
      ev = gst_spice_event_new_clipboard (FALSE, &c);
      gst_spice_clipboard_clear (&c);
      break;
    case 4:
      fill_clipboard (&c, in, GST_SPICE_CLIPBOARD_RELEASE);
      ev = gst_spice_event_new_clipboard (FALSE, &c);
      break;
    default:{
      GstSpiceAgentInfo none = { 0, };

      ev = gst_spice_event_new_agent (&none);
      break;
    }
  }
  gst_element_send_event (H.draw_src, ev);
}

/* OP_CURSOR: kind (1 visible, 2 new shape, & 0xc: size), x, y */
static void
op_cursor (Input * in)
{
  static const gint sizes[] = { 0, 16, 64, 600 };
  static guint64 serial = 1;
  guint8 k = in_u8 (in);
  GstSpiceCursor c = { 0, };
  GstEvent *ev;

  c.visible = (k & 1) != 0;
  c.x = (gint8) in_u8 (in) * 4;
  c.y = (gint8) in_u8 (in) * 4;
  c.width = c.height = sizes[(k >> 2) & 3];
  c.hot_x = c.hot_y = k >> 4;
  if (k & 2)
    serial++;
  c.serial = serial;
  if (c.width) {
    c.shape = gst_buffer_new_and_alloc ((gsize) c.width * c.height * 4);
    gst_buffer_memset (c.shape, 0, k, (gsize) c.width * c.height * 4);
  }
  ev = gst_spice_event_new_cursor (&c);
  if (c.shape)
    gst_buffer_unref (c.shape);
  gst_element_send_event (H.draw_src, ev);
  H.cursor_changed = TRUE;
}

/* OP_AUDIO: kind (% 5: samples (size), raw caps (rate, channels), Opus
 * caps and a packet (TOC), stop, volume), fields */
static void
op_audio (Input * in)
{
  static const gint rates[] = { 48000, 44100, 8000, 1 };
  guint8 k = in_u8 (in), v = in_u8 (in);
  GstCaps *caps;

  switch (k % 5) {
    case 0:{
      gsize n = (v & 0x80) ? v : (gsize) (v & 0x7f) * 64;
      GstBuffer *b = gst_buffer_new_and_alloc (n);

      gst_buffer_memset (b, 0, v, n);
      gst_app_src_push_buffer (GST_APP_SRC (H.audio_src), b);
      break;
    }
    case 1:
      caps = gst_caps_new_simple ("audio/x-raw", "format", G_TYPE_STRING,
          "S16LE", "layout", G_TYPE_STRING, "interleaved", "rate", G_TYPE_INT,
          rates[v % 4], "channels", G_TYPE_INT, 1 + ((v >> 2) & 1), NULL);
      g_object_set (H.audio_src, "caps", caps, NULL);
      gst_caps_unref (caps);
      H.audio_changed = TRUE;
      break;
    case 2:{
      guint8 pkt[8];
      GstBuffer *b;

      caps = gst_caps_new_simple ("audio/x-opus", "rate", G_TYPE_INT, 48000,
          "channels", G_TYPE_INT, 1 + (v & 1), "channel-mapping-family",
          G_TYPE_INT, 0, NULL);
      g_object_set (H.audio_src, "caps", caps, NULL);
      gst_caps_unref (caps);
      in_bytes (in, pkt, sizeof (pkt));
      b = gst_buffer_new_memdup (pkt, 1 + (v >> 1) % 8);
      gst_app_src_push_buffer (GST_APP_SRC (H.audio_src), b);
      H.audio_changed = TRUE;
      break;
    }
    case 3:
      gst_element_send_event (H.audio_src, gst_spice_event_new_audio_stop ());
      break;
    default:{
      guint16 vol[2] = { in_u16 (in), in_u16 (in) };

      gst_element_send_event (H.audio_src,
          gst_spice_event_new_audio_volume (v % 3, vol, v & 4));
      break;
    }
  }
}

enum
{
  SET_MAX_CLIENTS,
  SET_MAX_CLIPBOARD,
  SET_PASSWORD,
  SET_QUEUE,
  SET_CLIENT_TIMEOUT,
  SET_IDLE,
  SET_SOURCE_LIMITS,
  SET_PACING,
  SET_REFRESH,
  SET_REDIRECT,
  N_SETTINGS
};

/* the element's settings as every execution starts */
static void
settings_base (guint32 which)
{
  if (which & (1u << SET_MAX_CLIENTS))
    g_object_set (H.sink, "max-clients", 4, NULL);
  if (which & (1u << SET_MAX_CLIPBOARD))
    g_object_set (H.sink, "max-clipboard", base.max_clipboard, NULL);
  if (which & (1u << SET_PASSWORD)) {
    g_object_set (H.sink, "password", NULL, NULL);
    H.password = FALSE;
  }
  if (which & (1u << SET_QUEUE))
    g_object_set (H.sink, "queue-size", base.queue_size, "notsent-lowat",
        base.notsent_lowat, NULL);
  if (which & (1u << SET_CLIENT_TIMEOUT))
    g_object_set (H.sink, "client-timeout", base.client_timeout, NULL);
  if (which & (1u << SET_IDLE))
    g_object_set (H.sink, "idle-timeout", 0, "handshake-timeout",
        base.handshake_timeout, NULL);
  if (which & (1u << SET_SOURCE_LIMITS))
    g_object_set (H.sink, "max-links-per-source", 8,
        "max-sessions-per-source", -1, "max-pending-links", 64,
        "max-connections-per-second", -1, NULL);
  if (which & (1u << SET_PACING))
    g_object_set (H.sink, "tcp-pacing", TRUE, "stream-latency", 20, NULL);
  if (which & (1u << SET_REFRESH))
    g_atomic_int_set (&H.answer_refresh, TRUE);
  if (which & (1u << SET_REDIRECT)) {
    /* redirected: the sink accepts again once started again (NULL and
     * back, below: the server starts at NULL -> READY), on the same
     * listen-fd */
    g_object_set (H.sink, "redirect-host", NULL, NULL);
    set_state (GST_STATE_NULL);
    H.state_changed = TRUE;
  }
}

/* OP_SETTING: which, value */
static void
op_setting (Input * in)
{
  guint8 w = in_u8 (in) % N_SETTINGS, v = in_u8 (in);

  H.settings_changed |= 1u << w;
  switch (w) {
    case SET_MAX_CLIENTS:
      g_object_set (H.sink, "max-clients", 1 + v % 4, NULL);
      break;
    case SET_MAX_CLIPBOARD:{
      static const guint sizes[] = { 0, 1000, 4096, 16 << 20 };

      g_object_set (H.sink, "max-clipboard", sizes[v % 4], NULL);
      break;
    }
    case SET_PASSWORD:
      H.password = !(v & 1);
      g_object_set (H.sink, "password", H.password ? PASSWORD : "", NULL);
      break;
    case SET_QUEUE:{
      static const guint sizes[] = { 1024, 4096, 262144 };

      g_object_set (H.sink, "queue-size", sizes[v % 3], "notsent-lowat",
          (v & 4) ? 0 : 1024, NULL);
      break;
    }
    case SET_CLIENT_TIMEOUT:
      g_object_set (H.sink, "client-timeout", v % 3 == 0 ? 0 : v % 3 == 1 ?
          1 : 100, NULL);
      break;
    case SET_IDLE:
      /* the handshake timeout is at least 100 ms */
      g_object_set (H.sink, "idle-timeout", 20 + v % 100, "handshake-timeout",
          100 + v % 50, NULL);
      break;
    case SET_SOURCE_LIMITS:
      g_object_set (H.sink, "max-links-per-source", v % 3,
          "max-sessions-per-source", (gint) ((v >> 2) % 3) - 1,
          "max-pending-links", 1 + (v >> 4) % 4,
          "max-connections-per-second", (v & 0x40) ? 1 : -1,
          "connection-burst", 2, NULL);
      break;
    case SET_PACING:
      g_object_set (H.sink, "tcp-pacing", (v & 1) != 0, "stream-latency",
          v * 4 % 1000, NULL);
      break;
    case SET_REDIRECT:{
      guint n = 0;

      /* what gst-spice-run does on a changed reload: the clients are sent
       * to the next pipeline (here the same sink, started again by
       * reset(): NULL and back, a new RSA key, so in one input of
       * NULL_RARITY); a main channel that links after this is sent at
       * once */
      if (!input_gate (NULL_RARITY)) {
        H.settings_changed &= ~(1u << SET_REDIRECT);
        break;
      }
      if (v & 1)
        g_object_set (H.sink, "redirect-host", (v & 2) ? "fuzz.example" :
            "", NULL);
      g_signal_emit_by_name (H.sink, "redirect-clients", &n);
      break;
    }
    default:
      g_atomic_int_set (&H.answer_refresh, v & 1);
      break;
  }
}

/* OP_SLEEP: 1..300 ms with the sockets read meanwhile (timers: handshake
 * and idle timeouts, the 250 ms tick that frees sessions, link samples),
 * within the sleep budget (FUZZ_SESSION_MAX_SLEEP_MS, refilled by an
 * execution's length over SLEEP_SHARE) */
static void
op_sleep (Input * in)
{
  static const guint ms[] = { 1, 5, 20, 60, 150, 300 };
  guint8 v = in_u8 (in);
  gint64 t = MIN (ms[v % G_N_ELEMENTS (ms)] * 1000, H.sleep_left_us);
  gint64 end = g_get_monotonic_time () + t;

  H.sleep_left_us -= t;
  for (;;) {
    gint64 left = end - g_get_monotonic_time ();

    if (left <= 0)
      break;
    poll_socks (left);
  }
}

/* OP_SESSION: a spice-gtk-like session: main (linked, MAIN_INIT read),
 * then mask: 1 display, 2 inputs, 4 cursor, 8 playback, 16 record, 32
 * ATTACH_CHANNELS first, 64 the display stops reading, 128 its receive
 * buffer is small; flags: caps selector of every link (& 7), 8 every
 * channel over WebSocket, 16 with permessage-deflate offered */
static void
op_session (Input * in)
{
  static const guint8 chans[] = { SPICE_CHANNEL_DISPLAY, SPICE_CHANNEL_INPUTS,
    SPICE_CHANNEL_CURSOR, SPICE_CHANNEL_PLAYBACK, SPICE_CHANNEL_RECORD
  };
  guint8 mask = in_u8 (in), cb = in_u8 (in), caps = cb & 0x7;
  /* caps byte 8: every channel over WebSocket, 16: deflate offered */
  guint8 ws = (cb & 8) ? 4 | ((cb & 16) ? 0x40 : 0) : 0;
  Sock *m = sock_connect (ws);
  guint i;

  if (!m)
    return;
  sock_link (m, SPICE_CHANNEL_MAIN, 0, caps, 0, FALSE, FALSE);
  sock_flush (m);
  sock_auth (m, good_ticket (), in);
  sock_flush (m);
  if (!settle_until (have_session, m, 200 * 1000) || !m->session_id)
    return;
  if (mask & 32) {
    sock_msg (m, SPICE_MSGC_MAIN_ATTACH_CHANNELS, NULL, 0, 0, FALSE);
    sock_flush (m);
  }
  for (i = 0; i < G_N_ELEMENTS (chans); i++) {
    gboolean disp = chans[i] == SPICE_CHANNEL_DISPLAY;
    Sock *s;

    if (!(mask & (1 << i)))
      continue;
    s = sock_connect ((disp && (mask & 128) ? 2 : 0) | ws);
    if (!s)
      return;
    sock_link (s, chans[i], m->session_id, caps, 0, FALSE, FALSE);
    sock_flush (s);
    sock_auth (s, good_ticket (), in);
    sock_flush (s);
    if (disp && (mask & 64))
      s->stalled = TRUE;
  }
}

static void
op_surface (Input * in)
{
  gint surface = !g_atomic_int_get (&H.surface);
  GstCaps *caps = draws_caps (surface);

  g_atomic_int_set (&H.surface, surface);
  g_object_set (H.draw_src, "caps", caps, NULL);
  gst_caps_unref (caps);
  gst_app_src_push_buffer (GST_APP_SRC (H.draw_src),
      with_pts (H.refresh[surface], GST_CLOCK_TIME_NONE));
  H.surface_changed = H.draws_pushed = TRUE;
}

/* FUZZ_SESSION_PROFILE=1: where the time goes (printed at exit) */
enum
{
  PROF_RESET = N_OPS,
  PROF_PUMP,
  PROF_RESTORE,
  PROF_APPSRC,
  PROF_SERVER,
  PROF_OUTSIDE,
  N_PROF
};
static gboolean profile;
static gint64 prof_us[N_PROF];
static guint64 prof_n[N_PROF];

/* the sanitizer allocator's live bytes (ASan builds) */
size_t __sanitizer_get_current_allocated_bytes (void) __attribute__((weak));
int __lsan_do_recoverable_leak_check (void) __attribute__((weak));
void __sanitizer_print_memory_profile (size_t top_percent,
    size_t max_contexts) __attribute__((weak));

/* FUZZ_SESSION_LEAKS=1 (and ASAN_OPTIONS=detect_leaks=1): at exit, the
 * pipeline still alive, what nobody points to any more (GLib and
 * GStreamer have one-time blocks of their own: look for this plugin's)
 * and where the live heap was allocated (what grows with executions) */
static void
check_leaks (void)
{
  if (__lsan_do_recoverable_leak_check)
    __lsan_do_recoverable_leak_check ();
  if (__sanitizer_print_memory_profile)
    __sanitizer_print_memory_profile (90, 15);
}

/* every 1000 executions: the live heap after the reset (a leak grows it) */
static void
prof_heap (void)
{
  static guint64 n;

  if (++n % 1000 == 0 && __sanitizer_get_current_allocated_bytes)
    g_printerr ("fuzz-session profile: %" G_GUINT64_FORMAT " executions, "
        "heap %.1f MB\n", n,
        __sanitizer_get_current_allocated_bytes () / 1048576.0);
}

/* adds the time since @t0 to @what; returns now */
static gint64
prof_add (guint what, gint64 t0)
{
  gint64 now;

  if (!profile)
    return 0;
  now = g_get_monotonic_time ();
  prof_us[what] += now - t0;
  prof_n[what]++;
  return now;
}

static const gchar *prof_names[N_PROF] = { "connect", "link", "auth", "msg",
  "msg2", "agent", "hold", "unhold", "shut", "rst", "close", "stall",
  "wait", "draw", "frame", "pad", "state", "guest", "cursor", "audio",
  "setting", "sleep", "session", "surface", "reset", "pump",
  "-restore", "-appsrc", "-server", "outside"
};

static void
print_profile (void)
{
  guint i;

  for (i = 0; i < N_PROF; i++)
    if (prof_n[i])
      g_printerr ("fuzz-session profile: %-8s %8" G_GUINT64_FORMAT " times "
          "%8.1f ms %7.1f us each\n", prof_names[i], prof_n[i],
          prof_us[i] / 1e3, (gdouble) prof_us[i] / prof_n[i]);
}

static void
run_op (guint8 op, Input * in)
{
  Sock *s;

  switch (op % N_OPS) {
    case OP_CONNECT:
      op_connect (in);
      break;
    case OP_LINK:
      op_link (in);
      break;
    case OP_AUTH:
      op_auth (in);
      break;
    case OP_MSG:
    case OP_MSG2:
      op_msg (in);
      break;
    case OP_AGENT:
      op_agent (in);
      break;
    case OP_HOLD:
      op_hold (in);
      break;
    case OP_UNHOLD:
      op_unhold (in);
      break;
    case OP_SHUT:
      op_shut (in);
      break;
    case OP_RST:
    case OP_CLOSE:
      s = sock_pick (in);
      if (s) {
        sock_flush (s);
        sock_close (s, op % N_OPS == OP_RST);
      }
      break;
    case OP_STALL:
      op_stall (in);
      break;
    case OP_WAIT:
      op_wait (in);
      break;
    case OP_DRAW:
      op_draw (in);
      break;
    case OP_FRAME:
      op_frame (in);
      break;
    case OP_PAD:
      op_pad (in);
      break;
    case OP_STATE:
      op_state (in);
      break;
    case OP_GUEST:
      op_guest (in);
      break;
    case OP_CURSOR:
      op_cursor (in);
      break;
    case OP_AUDIO:
      op_audio (in);
      break;
    case OP_SETTING:
      op_setting (in);
      break;
    case OP_SLEEP:
      op_sleep (in);
      break;
    case OP_SESSION:
      op_session (in);
      break;
    default:
      op_surface (in);
      break;
  }
}

/* --------------------------------------------------------- barrier */

static GMutex idle_lock;
static GCond idle_cond;

static GstPadProbeReturn
idle_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  g_mutex_lock (&idle_lock);
  *(gboolean *) data = TRUE;
  g_cond_broadcast (&idle_cond);
  g_mutex_unlock (&idle_lock);
  return GST_PAD_PROBE_REMOVE;
}

/* waits until @src has pushed everything it holds and its chain returned */
static void
appsrc_idle (GstElement * src, const gchar * what)
{
  gint64 deadline = g_get_monotonic_time () + BARRIER_TIMEOUT_US;
  GstPad *pad = gst_element_get_static_pad (src, "src");

  for (;;) {
    guint64 level = 0;
    gboolean idle = FALSE;

    g_object_get (src, "current-level-buffers", &level, NULL);
    if (level == 0) {
      gulong id = gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_IDLE,
          idle_probe, &idle, NULL);

      g_mutex_lock (&idle_lock);
      while (!idle && g_cond_wait_until (&idle_cond, &idle_lock, deadline));
      g_mutex_unlock (&idle_lock);
      if (!idle)
        gst_pad_remove_probe (pad, id);
      g_object_get (src, "current-level-buffers", &level, NULL);
      if (idle && level == 0)
        break;
    }
    if (g_get_monotonic_time () > deadline) {
      g_printerr ("fuzz-session: the %s branch did not drain in %d s "
          "(%" G_GUINT64_FORMAT " buffers queued): hang\n", what,
          (gint) (BARRIER_TIMEOUT_US / G_TIME_SPAN_SECOND), level);
      abort ();
    }
    settle (1000);
  }
  gst_object_unref (pad);
}

/* waits until the server holds no connection and no client */
static void
server_idle (void)
{
  gint64 deadline = g_get_monotonic_time () + BARRIER_TIMEOUT_US;

  for (;;) {
    GstStructure *st = NULL;
    guint conns = 1, clients = 1;

    g_object_get (H.sink, "stats", &st, NULL);
    gst_structure_get_uint (st, "connections", &conns);
    gst_structure_get_uint (st, "clients", &clients);
    gst_structure_free (st);
    if (conns == 0 && clients == 0)
      return;
    if (g_get_monotonic_time () > deadline) {
      g_printerr ("fuzz-session: %u connections and %u clients left %d s "
          "after every client closed: hang or leak\n", conns, clients,
          (gint) (BARRIER_TIMEOUT_US / G_TIME_SPAN_SECOND));
      abort ();
    }
    /* everything asleep and still not there: a timer's work */
    if (settle (1000))
      g_usleep (200);
  }
}

static gboolean verbose;

/* FUZZ_SESSION_VERBOSE=1: what an execution left, before the reset */
static void
print_execution (void)
{
  GstStructure *st = NULL;
  gchar *str;
  guint i;

  for (i = 0; i < N_SOCKS; i++) {
    Sock *s = &H.socks[i];

    if (s->fd >= 0)
      g_printerr ("  sock %u: channel %u, link result %" G_GINT64_FORMAT
          ", session %08x, %u messages in%s%s%s%s\n", i, s->chan,
          s->link_result, s->session_id, s->msgs_in, s->stalled ?
          ", stalled" : "", s->eof ? ", closed by the server" : "",
          s->shut ? ", shut" : "", s->ws ? ", WebSocket" : "");
  }
  g_object_get (H.sink, "stats", &st, NULL);
  gst_structure_remove_field (st, "stream-rates");
  str = gst_structure_to_string (st);
  g_printerr ("  %s\n", str);
  g_free (str);
  gst_structure_free (st);
}

/* puts everything back as every execution starts */
static void
reset (void)
{
  guint i;

  gint64 t = profile ? g_get_monotonic_time () : 0;

  if (verbose)
    print_execution ();
  g_atomic_int_set (&H.answer_refresh, FALSE);
  for (i = 0; i < N_SOCKS; i++)
    sock_close (&H.socks[i], TRUE);
  if (H.settings_changed)
    settings_base (H.settings_changed);
  if (H.state_changed) {
    GstState cur = GST_STATE_VOID_PENDING;

    gst_element_get_state (H.pipeline, &cur, NULL, 0);
    if (cur != GST_STATE_PLAYING && !set_state (GST_STATE_PLAYING))
      g_error ("fuzz-session: the pipeline does not play again");
    read_port ();
  }
  for (i = 0; i < N_STREAM_SLOTS; i++) {
    StreamSlot *st = &H.streams[i];

    if (st->pad && (i > 0 || st->eos))
      stream_release (st);
    if (i == 0 && !st->pad)
      stream_request (st);
    if (st->pad && st->codec != 0) {
      GstCaps *caps = gst_caps_from_string (codec_caps[0]);

      g_object_set (st->src, "caps", caps, NULL);
      gst_caps_unref (caps);
      st->codec = 0;
    }
  }
  if (H.agent_touched) {
    GstSpiceAgentInfo none = { 0, };

    gst_element_send_event (H.draw_src, gst_spice_event_new_agent (&none));
  }
  if (H.audio_changed) {
    GstCaps *caps = gst_spice_audio_raw_caps (48000, 2);

    g_object_set (H.audio_src, "caps", caps, NULL);
    gst_caps_unref (caps);
  }
  if (H.surface_changed && g_atomic_int_get (&H.surface)) {
    GstCaps *caps = draws_caps (0);

    g_atomic_int_set (&H.surface, 0);
    g_object_set (H.draw_src, "caps", caps, NULL);
    gst_caps_unref (caps);
  }
  if (H.draws_pushed || H.state_changed)
    gst_app_src_push_buffer (GST_APP_SRC (H.draw_src),
        with_pts (H.refresh[0], GST_CLOCK_TIME_NONE));
  t = prof_add (PROF_RESTORE, t);
  settle (BARRIER_TIMEOUT_US);
  appsrc_idle (H.draw_src, "draw");
  appsrc_idle (H.audio_src, "audio");
  for (i = 0; i < N_STREAM_SLOTS; i++)
    if (H.streams[i].pad)
      appsrc_idle (H.streams[i].src, "stream");
  t = prof_add (PROF_APPSRC, t);
  server_idle ();
  prof_add (PROF_SERVER, t);
  H.draws_pushed = H.agent_touched = H.audio_changed = H.state_changed =
      H.surface_changed = H.cursor_changed = FALSE;
  H.settings_changed = 0;
  /* sleeping costs throughput: the budget refills by 1/SLEEP_SHARE of the
   * time executions take (an input run alone has it all) */
  H.sleep_left_us = MIN (H.sleep_left_us + (g_get_monotonic_time () -
          H.exec_start_us) / SLEEP_SHARE, (gint64) H.max_sleep_ms * 1000);
  g_atomic_int_set (&H.answer_refresh, TRUE);
}

/* ------------------------------------------------------------ setup */

/* BGRx @w x @h of videotestsrc @pattern */
static guint8 *
test_picture (const gchar * pattern, gint w, gint h)
{
  guint8 *p = test_picture_bgrx (pattern, w, h);

  if (!p)
    g_error ("fuzz-session: no picture of videotestsrc pattern=%s", pattern);
  return p;
}

/* the updates spicetiler makes of @n frames */
static GPtrArray *
tile (guint8 ** frames, guint n, gint w, gint h)
{
  GstElement *p = gst_parse_launch ("appsrc name=in format=time ! "
      "spicetiler name=t streaming=off ! appsink name=out sync=false async=false "
      "t.stream ! fakesink async=false", NULL);
  GstElement *src, *out;
  GPtrArray *res = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_buffer_unref);
  GstCaps *caps;
  GstSample *s;
  guint i;

  if (!p)
    g_error ("fuzz-session: no spicetiler (GST_PLUGIN_PATH=BUILD/plugins)");
  src = gst_bin_get_by_name (GST_BIN (p), "in");
  out = gst_bin_get_by_name (GST_BIN (p), "out");
  caps = gst_caps_new_simple ("video/x-raw", "format", G_TYPE_STRING, "BGRx",
      "width", G_TYPE_INT, w, "height", G_TYPE_INT, h, "framerate",
      GST_TYPE_FRACTION, 30, 1, NULL);
  g_object_set (src, "caps", caps, NULL);
  gst_caps_unref (caps);
  gst_element_set_state (p, GST_STATE_PLAYING);
  /* one frame at a time: the tiler merges what waits */
  for (i = 0; i < n; i++) {
    GstBuffer *b = gst_buffer_new_memdup (frames[i], (gsize) w * h * 4);
    GstClockTime timeout = GST_SECOND;

    GST_BUFFER_PTS (b) = i * 33 * GST_MSECOND;
    gst_app_src_push_buffer (GST_APP_SRC (src), b);
    while ((s = gst_app_sink_try_pull_sample (GST_APP_SINK (out), timeout))) {
      g_ptr_array_add (res, gst_buffer_ref (gst_sample_get_buffer (s)));
      gst_sample_unref (s);
      timeout = 100 * GST_MSECOND;
    }
  }
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (src);
  gst_object_unref (out);
  gst_object_unref (p);
  return res;
}

/* @buf's regions again, as one update with @flags */
static GstBuffer *
reflag (GstBuffer * buf, guint32 flags)
{
  GstSpiceDrawsWriter *wr = gst_spice_draws_writer_new (flags, 0);
  GstSpiceDrawsReader rd;
  GstSpiceDraw d;

  g_assert (gst_spice_draws_reader_init (&rd, buf));
  while (gst_spice_draws_reader_next (&rd, &d))
    gst_spice_draws_writer_add (wr, &d.dest, d.type, d.flags, d.payload,
        d.payload_size);
  gst_spice_draws_reader_clear (&rd);
  return gst_spice_draws_writer_finish (wr);
}

/* a full REFRESH bitmap of @pic */
static GstBuffer *
full_bitmap (const guint8 * pic, gint w, gint h, guint32 flags)
{
  GstSpiceDrawsWriter *wr = gst_spice_draws_writer_new (flags, 0);
  GstVideoRectangle r = { 0, 0, w, h };

  gst_spice_draws_writer_add_bitmap (wr, &r, pic, w * 4);
  return gst_spice_draws_writer_finish (wr);
}

/* rows that are unique (a scroll can be found) and runs of equal pixels
 * (text-like: lossless) */
static void
paint_text (guint8 * pic, gint w, gint y0, gint y1, guint seed)
{
  gint x, y;

  for (y = y0; y < y1; y++)
    for (x = 0; x < w; x++) {
      guint32 v = ((guint32) (y + seed) * 131 + x / 8) * 2654435761u;
      guint8 *q = pic + ((gsize) y * w + x) * 4;

      q[0] = v;
      q[1] = v >> 8;
      q[2] = v >> 16;
      q[3] = 0xff;
    }
}

static void
make_draws (void)
{
  const gint w = SURF_A_W, h = SURF_A_H;
  gsize size = (gsize) w * h * 4;
  guint8 *f[6], *snow = test_picture ("snow", 64, 64);
  GstSpiceDrawsWriter *wr;
  GstVideoRectangle r;
  guint8 *small;
  gint y;
  guint i;

  /* the picture, a key press, a scroll, a photo, a ball */
  f[0] = test_picture ("smpte", w, h);
  paint_text (f[0], w, 100, 180, 0);
  f[1] = g_memdup2 (f[0], size);
  for (y = 20; y < 44; y++)
    memset (f[1] + ((gsize) y * w + 20) * 4, 0x40, 24 * 4);
  f[2] = g_memdup2 (f[1], size);
  memmove (f[2] + (gsize) 100 * w * 4, f[2] + (gsize) 116 * w * 4,
      (gsize) 64 * w * 4);
  paint_text (f[2], w, 164, 180, 64);
  f[3] = g_memdup2 (f[2], size);
  for (y = 0; y < 64; y++)
    memcpy (f[3] + ((gsize) (y + 30) * w + 200) * 4, snow + y * 64 * 4, 64 * 4);
  f[4] = test_picture ("ball", w, h);
  f[5] = g_memdup2 (f[0], size);
  H.draws[0] = tile (f, G_N_ELEMENTS (f), w, h);
  g_assert (H.draws[0]->len > 0);

  /* the first update is the whole picture: as a REFRESH answer */
  H.refresh[0] = reflag (g_ptr_array_index (H.draws[0], 0),
      GST_SPICE_DRAWS_FLAG_REFRESH);
  g_ptr_array_add (H.draws[0], gst_buffer_ref (H.refresh[0]));
  g_ptr_array_add (H.draws[0], full_bitmap (f[3], w, h, 0));
  /* copies: a good one, one whose source is off the surface */
  wr = gst_spice_draws_writer_new (0, 0);
  r.x = 0;
  r.y = 40;
  r.w = w;
  r.h = 100;
  gst_spice_draws_writer_add_copy_bits (wr, &r, 0, 60);
  g_ptr_array_add (H.draws[0], gst_spice_draws_writer_finish (wr));
  wr = gst_spice_draws_writer_new (0, 0);
  gst_spice_draws_writer_add_copy_bits (wr, &r, 0, h - 10);
  g_ptr_array_add (H.draws[0], gst_spice_draws_writer_finish (wr));
  /* a region off the surface, and an empty update */
  wr = gst_spice_draws_writer_new (0, 0);
  r.x = w - 8;
  r.y = h - 8;
  r.w = r.h = 16;
  gst_spice_draws_writer_add_bitmap (wr, &r, f[0], w * 4);
  g_ptr_array_add (H.draws[0], gst_spice_draws_writer_finish (wr));
  g_ptr_array_add (H.draws[0], gst_spice_draws_writer_finish
      (gst_spice_draws_writer_new (0, 0)));

  /* surface B: its whole picture, and a part of it */
  small = test_picture ("smpte75", SURF_B_W, SURF_B_H);
  H.refresh[1] = full_bitmap (small, SURF_B_W, SURF_B_H,
      GST_SPICE_DRAWS_FLAG_REFRESH);
  H.draws[1] = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_buffer_unref);
  g_ptr_array_add (H.draws[1], gst_buffer_ref (H.refresh[1]));
  g_ptr_array_add (H.draws[1], full_bitmap (small, SURF_B_W, SURF_B_H, 0));
  wr = gst_spice_draws_writer_new (0, 0);
  r.x = r.y = 8;
  r.w = r.h = 32;
  gst_spice_draws_writer_add_bitmap (wr, &r, small + (8 * SURF_B_W + 8) * 4,
      SURF_B_W * 4);
  g_ptr_array_add (H.draws[1], gst_spice_draws_writer_finish (wr));
  g_free (small);
  for (i = 0; i < G_N_ELEMENTS (f); i++)
    g_free (f[i]);
  g_free (snow);
}

/* FUZZ_SESSION_VERBOSE=1: what the updates hold */
static void
print_draws (GPtrArray * draws, const gchar * what)
{
  guint i;

  for (i = 0; i < draws->len; i++) {
    GstSpiceDrawsReader rd;
    GstSpiceDraw d;

    if (!gst_spice_draws_reader_init (&rd, g_ptr_array_index (draws, i)))
      continue;
    g_printerr ("%s update %u (flags %x):", what, i, rd.flags);
    while (gst_spice_draws_reader_next (&rd, &d))
      g_printerr (" %dx%d+%d+%d type %u%s (%" G_GSIZE_FORMAT " B)", d.dest.w,
          d.dest.h, d.dest.x, d.dest.y, d.type, d.flags ? " lossy" : "",
          d.payload_size);
    g_printerr ("\n");
    gst_spice_draws_reader_clear (&rd);
  }
}

static void
make_frames (void)
{
  GstElement *p = gst_parse_launch ("videotestsrc num-buffers=3 "
      "pattern=ball ! video/x-raw,width=96,height=64 ! jpegenc ! "
      "appsink name=out sync=false", NULL);
  GstElement *out;
  GstSample *s;

  g_assert (p);
  out = gst_bin_get_by_name (GST_BIN (p), "out");
  H.frames = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_buffer_unref);
  gst_element_set_state (p, GST_STATE_PLAYING);
  while ((s = gst_app_sink_pull_sample (GST_APP_SINK (out)))) {
    g_ptr_array_add (H.frames, gst_buffer_ref (gst_sample_get_buffer (s)));
    gst_sample_unref (s);
  }
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (out);
  gst_object_unref (p);
  g_assert (H.frames->len == 3);
}

/* the bus's sync handler: a message it drops is its own to unref */
static GstBusSyncReply
drop_message (GstBus * bus, GstMessage * message, gpointer data)
{
  gst_message_unref (message);
  return GST_BUS_DROP;
}

static void
make_pipeline (void)
{
  GstPad *pad;
  GstBus *bus;
  GstCaps *caps;

  H.pipeline = gst_pipeline_new ("fuzz-session");
  H.sink = gst_element_factory_make ("spicesink", "sink");
  if (!H.sink)
    g_error ("fuzz-session: no spicesink (GST_PLUGIN_PATH=BUILD/plugins)");
  /* the listening socket is the harness's, as gst-spice-run's is: the
   * sink accepts on a duplicate (listen-fd) and keeps its port across
   * state changes and redirects */
  g_object_set (H.sink, "listen-fd", listen_socket (), "address",
      "127.0.0.1", "port", 0,
      "client-timeout", base.client_timeout, "handshake-timeout",
      base.handshake_timeout, "idle-timeout", 0, "queue-size",
      base.queue_size, "notsent-lowat", base.notsent_lowat, "max-clipboard",
      base.max_clipboard, NULL);
  H.draw_src = make_appsrc (draws_caps (0));
  caps = gst_spice_audio_raw_caps (48000, 2);
  H.audio_src = make_appsrc (caps);
  gst_bin_add_many (GST_BIN (H.pipeline), H.draw_src, H.audio_src, H.sink,
      NULL);
  g_assert (gst_element_link_pads (H.draw_src, "src", H.sink, "draw"));
  g_assert (gst_element_link_pads (H.audio_src, "src", H.sink, "audio"));
  pad = gst_element_get_static_pad (H.draw_src, "src");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_EVENT_UPSTREAM,
      draw_upstream_probe, NULL, NULL);
  gst_object_unref (pad);
  /* security and health reports, state changes: nobody reads them here
   * (a flushing bus would not do: the pipeline's NULL -> READY sets it
   * flushing no more, and the messages piled up with references to the
   * elements they came from) */
  bus = gst_element_get_bus (H.pipeline);
  gst_bus_set_sync_handler (bus, drop_message, NULL, NULL);
  gst_object_unref (bus);
  stream_request (&H.streams[0]);
  if (!set_state (GST_STATE_PLAYING))
    g_error ("fuzz-session: the pipeline does not play");
  read_port ();
  g_atomic_int_set (&H.answer_refresh, TRUE);
  gst_app_src_push_buffer (GST_APP_SRC (H.draw_src),
      with_pts (H.refresh[0], GST_CLOCK_TIME_NONE));
}

/* adds the libFuzzer flag @flag ("-name=value") unless the command line
 * has one of that name (LLVMFuzzerInitialize runs before the flags are
 * parsed) */
static void
default_flag (int *argc, char ***argv, const gchar * flag)
{
  gsize n = strchr (flag, '=') + 1 - flag;
  char **args;
  int i;

  for (i = 1; i < *argc; i++)
    if (strncmp ((*argv)[i], flag, n) == 0)
      return;
  args = g_new0 (char *, *argc + 2);
  args[0] = (*argv)[0];
  args[1] = g_strdup (flag);
  for (i = 1; i < *argc; i++)
    args[i + 1] = (*argv)[i];
  *argv = args;
  (*argc)++;
}

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  const gchar *ms = g_getenv ("FUZZ_SESSION_MAX_SLEEP_MS");
  guint i;

  /* libFuzzer runs an input a second time whenever it allocated more than
   * it freed, to look for leaks: GStreamer and GLib always do (caches,
   * pools). The entropic schedule updates the frequency of every feature
   * an input hit: an execution here hits ~30 000, which cost 3 ms an
   * execution (perf: UpdateFeatureFrequency, 45 % of the CPU). */
  default_flag (argc, argv, "-detect_leaks=0");
  default_flag (argc, argv, "-entropic=0");
  /* one process: nobody else adds to the corpus directory (rereading it
   * every second cost 4 % with 1500 inputs) */
  default_flag (argc, argv, "-reload=0");
  /* plugins are scanned in this process (the scanner has no ASan) */
  g_setenv ("GST_REGISTRY_FORK", "no", FALSE);
  signal (SIGPIPE, SIG_IGN);
  g_log_set_always_fatal (G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_ERROR);
  gst_init (NULL, NULL);
  for (i = 0; i < N_SOCKS; i++) {
    H.socks[i].out = g_byte_array_new ();
    sock_reset_state (&H.socks[i]);
  }
  H.max_sleep_ms = ms ? (guint) atoi (ms) : DEFAULT_MAX_SLEEP_MS;
  profile = g_getenv ("FUZZ_SESSION_PROFILE") != NULL;
  if (profile)
    atexit (print_profile);
  if (g_getenv ("FUZZ_SESSION_LEAKS"))
    atexit (check_leaks);
  H.sleep_left_us = H.max_sleep_ms * 1000;
  make_draws ();
  make_frames ();
  verbose = g_getenv ("FUZZ_SESSION_VERBOSE") != NULL;
  if (verbose) {
    print_draws (H.draws[0], "A");
    print_draws (H.draws[1], "B");
  }
  make_pipeline ();
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  static gint64 last_end;
  Input in = { data, size };
  gint64 t = profile ? g_get_monotonic_time () : 0;

  /* the thread that runs the inputs (libFuzzer's main thread) */
  if (!others) {
    others = test_threads_idle_new ();
    if (!others)
      g_error ("fuzz-session: no /proc/self (Linux only)");
    /* naps of settle() as short as asked */
    prctl (PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  }

  if (profile && last_end)
    prof_add (PROF_OUTSIDE, last_end);
  H.exec_start_us = g_get_monotonic_time ();
  hash_input (data, size);
  while (in.left > 0) {
    guint8 op = in_u8 (&in);

    if (verbose)
      g_printerr ("  %s at %" G_GSIZE_FORMAT "\n", prof_names[op % N_OPS],
          size - in.left - 1);
    run_op (op, &in);
    t = prof_add (op % N_OPS, t);
    pump_all ();
    t = prof_add (PROF_PUMP, t);
  }
  reset ();
  last_end = prof_add (PROF_RESET, t);
  if (profile)
    prof_heap ();
  return 0;
}
