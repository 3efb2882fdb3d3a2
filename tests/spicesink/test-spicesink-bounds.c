/* tests/spicesink: a connection's life and the bounds on what a client can
 * make the sink hold (issue "No client can take the gateway down").
 *
 *  - record data far beyond real time closes that record channel alone,
 *    with a spice-security event; a client catching up after a stall is
 *    not closed;
 *  - cursor changes are coalesced for a client that reads slowly, a client
 *    that reads a byte now and then is closed as stalled, a client that
 *    reads gets the latest cursor;
 *  - one client's key flood while upstream is slow costs another client
 *    none of its keys;
 *  - valid messages the sink does not act on leave the channel open;
 *    spice-gtk's preferred compression and video codecs are recorded;
 *  - a stream pad released while its streaming thread waits for a client,
 *    and NULL -> PLAYING -> NULL with live clients and streams (the ASan
 *    run of this suite checks their memory).
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <sys/socket.h>
#include <sys/wait.h>
#include <signal.h>
#include <glib/gstdio.h>
#include "spicesink-test-util.h"

#define RECORD_BYTES_PER_S (48000 * 2 * 2)

/* ------------------------------------------------------------ helpers */

typedef struct {
  const gchar **argv;
  gchar *out;
  gint status;
} ToolRun;

/* runs a tool (run_tool()) in a thread */
static gpointer
tool_thread (gpointer data)
{
  ToolRun *r = data;

  r->status = run_tool ((const gchar * const *) r->argv, NULL, &r->out);
  return NULL;
}

/* links a channel of @type to session @id; fails the test unless linked */
static SpiceRawConn *
link_channel (guint16 port, guint32 id, guint8 type, guint32 caps)
{
  SpiceRawConn *c = spice_raw_connect (port, 10);

  fail_unless (c != NULL);
  fail_unless (spice_raw_link (c, id, type, SPICE_RAW_COMMON_CAPS, caps, NULL,
          NULL),
      "link of channel type %u failed", type);
  fail_unless_equals_int (c->link_result, SPICE_LINK_ERR_OK);
  return c;
}

/* the first message of @c, which must be @type */
static void
expect_msg (SpiceRawConn * c, guint16 want)
{
  guint16 type = 0;
  guint8 *body;
  gsize size;

  fail_unless (spice_raw_read_msg (c, 10000, &type, &body, &size));
  fail_unless_equals_int (type, want);
  g_free (body);
}

/* the next spice-security / spice-health message of the sink with @event
 * and @reason, within @timeout_ms; NULL if none */
static GstStructure *
wait_report (Fixture * f, const gchar * event, const gchar * reason,
    guint timeout_ms)
{
  GstBus *bus = gst_element_get_bus (f->pipeline);
  gint64 end = g_get_monotonic_time () + timeout_ms * (gint64) 1000;
  GstStructure *found = NULL;

  while (!found) {
    gint64 left = end - g_get_monotonic_time ();
    GstMessage *m;
    const GstStructure *s;

    if (left <= 0)
      break;
    m = gst_bus_timed_pop_filtered (bus, left * GST_USECOND,
        GST_MESSAGE_ELEMENT);
    if (!m)
      break;
    s = gst_message_get_structure (m);
    if (s && g_strcmp0 (gst_structure_get_string (s, "event"), event) == 0 &&
        g_strcmp0 (gst_structure_get_string (s, "reason"), reason) == 0)
      found = gst_structure_copy (s);
    gst_message_unref (m);
  }
  gst_object_unref (bus);
  return found;
}

/* the stats of the sink's only client (a copy), NULL if there is none */
static GstStructure *
client_stats (Fixture * f)
{
  GstStructure *st = NULL, *c = NULL;
  const GValue *arr;

  g_object_get (f->sink, "stats", &st, NULL);
  arr = gst_structure_get_value (st, "client-stats");
  if (arr && gst_value_array_get_size (arr) == 1)
    c = gst_structure_copy (gst_value_get_structure
        (gst_value_array_get_value (arr, 0)));
  gst_structure_free (st);
  return c;
}

/* a field of the sink's stats */
static guint64
sink_stat (Fixture * f, const gchar * field)
{
  GstStructure *st = NULL;
  guint64 v = 0;
  guint u;

  g_object_get (f->sink, "stats", &st, NULL);
  if (!gst_structure_get_uint64 (st, field, &v) &&
      gst_structure_get_uint (st, field, &u))
    v = u;
  gst_structure_free (st);
  return v;
}

/* queued bytes of channel @name of the only client, 0 if none */
static guint64
queued_bytes (Fixture * f, const gchar * name)
{
  GstStructure *c = client_stats (f);
  const GstStructure *ch;
  guint64 q = 0;

  if (c && gst_structure_get (c, name, GST_TYPE_STRUCTURE, &ch, NULL)) {
    gst_structure_get_uint64 (ch, "queued-bytes", &q);
    gst_structure_free ((GstStructure *) ch);
  }
  if (c)
    gst_structure_free (c);
  return q;
}

/* whether the main channel of @s is open: a PING (sent every second)
 * arrives within 5 s */
static gboolean
main_alive (SpiceRawSession * s)
{
  gint64 end = g_get_monotonic_time () + 5 * G_TIME_SPAN_SECOND;

  while (g_get_monotonic_time () < end) {
    guint16 type;
    guint8 *body;
    gsize size;

    if (!spice_raw_read_msg (s->main, 5000, &type, &body, &size))
      return FALSE;
    g_free (body);
    if (type == SPICE_MSG_PING)
      return TRUE;
  }
  return FALSE;
}

/* the sink with its audio pad linked (playback and record served);
 * upstream record events are counted on the audio source */
typedef struct {
  Fixture *f;
  guint64 record_bytes;         /* atomic */
} AudioFixture;

static GstPadProbeReturn
count_record (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  AudioFixture *af = data;
  GstBuffer *buf;

  if (gst_spice_event_parse_record_data (GST_PAD_PROBE_INFO_EVENT (info),
          &buf))
    g_atomic_pointer_add (&af->record_bytes, gst_buffer_get_size (buf));
  return GST_PAD_PROBE_OK;
}

static void
audio_fixture_start (AudioFixture * af)
{
  GstElement *asrc;
  GstPad *pad;

  af->f = fixture_new (320, 240, "audiotestsrc name=asrc is-live=true "
      "wave=silence ! audio/x-raw,format=S16LE,rate=48000,channels=2 ! "
      "sink.audio");
  asrc = gst_bin_get_by_name (GST_BIN (af->f->pipeline), "asrc");
  pad = gst_element_get_static_pad (asrc, "src");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_EVENT_UPSTREAM, count_record,
      af, NULL);
  gst_object_unref (pad);
  gst_object_unref (asrc);
  fixture_start (af->f, TRUE);
}

/* a record channel of @s, started (RECORD_START read, raw mode set) */
static SpiceRawConn *
record_open (AudioFixture * af, SpiceRawSession * s)
{
  SpiceRawConn *rec = link_channel (af->f->port, s->session_id,
      SPICE_CHANNEL_RECORD, 0);
  guint8 mode[6] = { 0, }, mark[4] = { 0, };

  expect_msg (rec, SPICE_MSG_RECORD_START);
  GST_WRITE_UINT16_LE (mode + 4, SPICE_AUDIO_DATA_MODE_RAW);
  fail_unless (spice_raw_send_msg (rec, SPICE_MSGC_RECORD_MODE, mode, 6));
  fail_unless (spice_raw_send_msg (rec, SPICE_MSGC_RECORD_START_MARK, mark,
          4));
  return rec;
}

/* @ms of silence as 10 ms RECORD_DATA messages in one write */
static gboolean
record_send_ms (SpiceRawConn * rec, guint ms)
{
  guint8 body[4 + 480 * 4] = { 0, };
  GByteArray *a = g_byte_array_new ();
  gboolean ok;
  guint i;

  for (i = 0; i < ms / 10; i++)
    spice_raw_append_msg (a, SPICE_MSGC_RECORD_DATA, body, sizeof (body));
  ok = spice_raw_send (rec, a->data, a->len);
  g_byte_array_unref (a);
  return ok;
}

/* ------------------------------------------------------------- record */

/* A client that records in real time, stalls for 1.5 s and then sends the
 * 1.5 s it has at once (what spice-gtk does after a stall: it queues what
 * its audio source gives and sends it when it can) keeps its record
 * channel. One that pours RECORD_DATA as fast as loopback takes it has its
 * record channel closed at once, with a spice-security event; its session
 * and the other channels stay. */
GST_START_TEST (test_record_flood)
{
  AudioFixture af = { 0, };
  SpiceRawSession *s;
  SpiceRawConn *rec;
  GstStructure *ev;
  guint8 *big = g_malloc0 (4 + 65536);
  guint64 sent = 0, forwarded;
  gint64 t0;
  guint i;

  audio_fixture_start (&af);
  s = spice_raw_session_new (af.f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (s != NULL);
  rec = record_open (&af, s);

  /* real time for 1 s, a 1.5 s stall, the 1.5 s at once, 0.5 s more */
  for (i = 0; i < 10; i++) {
    fail_unless (record_send_ms (rec, 100));
    g_usleep (100 * 1000);
  }
  g_usleep (1500 * 1000);
  fail_unless (record_send_ms (rec, 1500));
  for (i = 0; i < 5; i++) {
    fail_unless (record_send_ms (rec, 100));
    g_usleep (100 * 1000);
  }
  fail_if (spice_raw_wait_closed (rec, 500),
      "a client catching up after a stall lost its record channel");
  ev = wait_report (af.f, "protocol-violation", "record-rate", 100);
  fail_unless (ev == NULL, "%" GST_PTR_FORMAT, ev);

  /* the flood: 64 KiB messages as fast as they go */
  t0 = g_get_monotonic_time ();
  while (g_get_monotonic_time () - t0 < 10 * G_TIME_SPAN_SECOND &&
      spice_raw_send_msg (rec, SPICE_MSGC_RECORD_DATA, big, 4 + 65536))
    sent += 65536;
  fail_unless (spice_raw_wait_closed (rec, 10000),
      "the flooding record channel stays open");
  ev = wait_report (af.f, "protocol-violation", "record-rate", 10000);
  fail_unless (ev != NULL, "no spice-security record-rate event");
  fail_unless_equals_string (gst_structure_get_string (ev, "peer"),
      "127.0.0.1");
  gst_structure_free (ev);
  GST_INFO ("flood: %" G_GUINT64_FORMAT " bytes sent before the close (%"
      G_GINT64_FORMAT " ms)", sent, (g_get_monotonic_time () - t0) / 1000);
  /* what went upstream stays within real time plus the burst: the 4 s of
   * the first phase, the budget of SINK_RECORD_BURST_MS and the time the
   * flood took */
  forwarded = g_atomic_pointer_get (&af.record_bytes);
  fail_unless (forwarded <= (guint64) RECORD_BYTES_PER_S * (4 + 10 + 11),
      "%" G_GUINT64_FORMAT " bytes of record data went upstream", forwarded);
  /* the session and its display stay */
  fail_unless (main_alive (s), "the session ended with its record channel");
  fail_unless_equals_int (sink_stat (af.f, "clients"), 1);
  spice_raw_close (rec);
  spice_raw_session_free (s);
  fixture_free (af.f);
  g_free (big);
}

GST_END_TEST;

/* ------------------------------------------------------------- cursor */

/* a 64x64 shape of @seed at (@x, @y) on the sink's draw pad */
static void
send_cursor (Fixture * f, guint64 serial, gint x, gint y)
{
  GstSpiceCursor c = { 0, };
  GstPad *pad = gst_element_get_static_pad (f->sink, "draw");
  GstMapInfo map;

  c.visible = TRUE;
  c.x = x;
  c.y = y;
  c.width = c.height = 64;
  c.serial = serial;
  c.shape = gst_buffer_new_allocate (NULL, 64 * 64 * 4, NULL);
  gst_buffer_map (c.shape, &map, GST_MAP_WRITE);
  memset (map.data, (guint8) serial, map.size);
  gst_buffer_unmap (c.shape, &map);
  fail_unless (gst_pad_send_event (pad, gst_spice_event_new_cursor (&c)));
  gst_buffer_unref (c.shape);
  gst_object_unref (pad);
}

typedef struct {
  SpiceRawConn *c;
  gint interval_ms;
  gint stop;                    /* atomic */
  gboolean closed;
} Drip;

/* reads one byte every interval_ms until closed or stopped */
static gpointer
drip_thread (gpointer data)
{
  Drip *d = data;

  while (!g_atomic_int_get (&d->stop)) {
    guint8 b;
    gssize n;

    g_usleep (d->interval_ms * 1000);
    n = g_socket_receive (d->c->sock, (gchar *) & b, 1, NULL, NULL);
    if (n <= 0) {
      d->closed = TRUE;
      break;
    }
  }
  return NULL;
}

/* 3000 cursor changes (a new 16 KiB shape each) while one client reads
 * nothing: its cursor queue never holds more than two messages; a client
 * that reads ends with the latest cursor. The one that does not read is
 * then read a byte every 3 s: closed as stalled (spice-health
 * stalled-close) within the stall limit, its session stays. */
GST_START_TEST (test_cursor_coalesced_and_drip)
{
  Fixture *f = fixture_new (320, 240, NULL);
  SpiceRawSession *slow;
  SpiceRawConn *cur;
  Drip drip = { 0, };
  GThread *t;
  GstStructure *ev;
  guint64 q, max_q = 0;
  gint rcvbuf = 4096;
  guint i;

  fixture_start (f, TRUE);
  slow = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (slow != NULL);
  cur = link_channel (f->port, slow->session_id, SPICE_CHANNEL_CURSOR, 0);
  fail_unless (setsockopt (g_socket_get_fd (cur->sock), SOL_SOCKET,
          SO_RCVBUF, &rcvbuf, sizeof (rcvbuf)) == 0);
  for (i = 1; i <= 3000; i++) {
    send_cursor (f, i, (gint) (i % 300), (gint) (i % 200));
    if (i % 100 == 0) {
      q = queued_bytes (f, "cursor");
      max_q = MAX (max_q, q);
    }
  }
  GST_INFO ("largest cursor queue of the client that reads nothing: %"
      G_GUINT64_FORMAT " bytes", max_q);
  fail_unless (max_q > 0, "the cursor socket never filled");
  /* CURSOR_SET: position, visible, flags, header (17) + 16 KiB shape */
  fail_unless (max_q <= 2 * (5 + 2 + 17 + 64 * 64 * 4 + 6),
      "the cursor queue held %" G_GUINT64_FORMAT " bytes", max_q);

  /* a byte every 3 s is not reading */
  drip.c = cur;
  drip.interval_ms = 3000;
  t = g_thread_new ("drip", drip_thread, &drip);
  ev = wait_report (f, "stalled-close", "stall-timeout",
      (20000 + 15000) * test_time_factor ());
  g_atomic_int_set (&drip.stop, 1);
  g_thread_join (t);
  fail_unless (ev != NULL, "the dripping cursor client was not closed");
  gst_structure_free (ev);
  fail_unless (main_alive (slow), "its session ended with its cursor");
  spice_raw_close (cur);
  spice_raw_session_free (slow);
  fixture_free (f);
}

GST_END_TEST;

/* a client that reads its cursor channel gets the latest cursor after a
 * burst of changes (coalescing keeps the newest, not the oldest) */
GST_START_TEST (test_cursor_latest)
{
  Fixture *f = fixture_new (320, 240, NULL);
  SpiceRawSession *s;
  SpiceRawConn *cur;
  gint last_x = -1, last_y = -1;
  guint8 last_fill = 0;
  guint i;

  fixture_start (f, TRUE);
  s = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (s != NULL);
  cur = link_channel (f->port, s->session_id, SPICE_CHANNEL_CURSOR, 0);
  expect_msg (cur, SPICE_MSG_CURSOR_INIT);
  for (i = 1; i <= 500; i++)
    send_cursor (f, i, (gint) i % 300, (gint) i % 200);
  /* read until 1 s without a message */
  for (;;) {
    guint16 type;
    guint8 *body;
    gsize size;

    if (!spice_raw_read_msg (cur, 1000, &type, &body, &size))
      break;
    if (type == SPICE_MSG_CURSOR_SET || type == SPICE_MSG_CURSOR_MOVE) {
      last_x = GST_READ_UINT16_LE (body);
      last_y = GST_READ_UINT16_LE (body + 2);
    }
    if (type == SPICE_MSG_CURSOR_SET && size == 5 + 2 + 17 + 64 * 64 * 4)
      last_fill = body[24];
    g_free (body);
  }
  fail_unless_equals_int (last_x, 500 % 300);
  fail_unless_equals_int (last_y, 500 % 200);
  fail_unless_equals_int (last_fill, (guint8) 500);
  spice_raw_close (cur);
  spice_raw_session_free (s);
  fixture_free (f);
}

GST_END_TEST;

/* ------------------------------------------------------------- inputs */

static GstPadProbeReturn
slow_upstream (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  if (GST_EVENT_TYPE (GST_PAD_PROBE_INFO_EVENT (info)) == GST_EVENT_NAVIGATION)
    g_usleep (2000);
  return GST_PAD_PROBE_OK;
}

static guint
count_keys (Fixture * f, guint scancode)
{
  guint i, n = 0;

  g_mutex_lock (&f->lock);
  for (i = 0; i < f->nav->len; i++) {
    guint sc = 0;

    if (gst_structure_get_uint (g_ptr_array_index (f->nav, i), "scancode",
            &sc) && sc == scancode)
      n++;
  }
  g_mutex_unlock (&f->lock);
  return n;
}

/* Upstream takes 2 ms a navigation event; client A pours 20 000 key
 * events in, client B presses a key 20 times: every one of B's 40 events
 * arrives; A loses its own (input-events-dropped). */
GST_START_TEST (test_input_flood_fair)
{
  Fixture *f = fixture_new (320, 240, NULL);
  SpiceRawSession *a, *b;
  SpiceRawConn *ia, *ib;
  GByteArray *flood = g_byte_array_new ();
  GstPad *pad;
  guint8 key[4];
  gint64 end;
  guint i;

  pad = gst_element_get_static_pad (f->src, "src");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_EVENT_UPSTREAM, slow_upstream,
      NULL, NULL);
  gst_object_unref (pad);
  fixture_start (f, TRUE);
  a = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  b = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (a && b);
  ia = link_channel (f->port, a->session_id, SPICE_CHANNEL_INPUTS, 0);
  ib = link_channel (f->port, b->session_id, SPICE_CHANNEL_INPUTS, 0);
  for (i = 0; i < 10000; i++) {
    GST_WRITE_UINT32_LE (key, 0x1e);    /* 'a' down, then up */
    spice_raw_append_msg (flood, SPICE_MSGC_INPUTS_KEY_DOWN, key, 4);
    GST_WRITE_UINT32_LE (key, 0x9e);
    spice_raw_append_msg (flood, SPICE_MSGC_INPUTS_KEY_UP, key, 4);
  }
  fail_unless (spice_raw_send (ia, flood->data, flood->len));
  g_usleep (50 * 1000);
  for (i = 0; i < 20; i++) {
    GST_WRITE_UINT32_LE (key, 0x30);    /* 'b' */
    fail_unless (spice_raw_send_msg (ib, SPICE_MSGC_INPUTS_KEY_DOWN, key, 4));
    GST_WRITE_UINT32_LE (key, 0xb0);
    fail_unless (spice_raw_send_msg (ib, SPICE_MSGC_INPUTS_KEY_UP, key, 4));
  }
  end = g_get_monotonic_time () + 30 * G_TIME_SPAN_SECOND;
  while (count_keys (f, 0x30) < 40 && g_get_monotonic_time () < end)
    g_usleep (20 * 1000);
  GST_INFO ("A: %u of 20000 key events arrived, B: %u of 40; dropped %"
      G_GUINT64_FORMAT, count_keys (f, 0x1e), count_keys (f, 0x30),
      sink_stat (f, "input-events-dropped"));
  fail_unless_equals_int (count_keys (f, 0x30), 40);
  fail_unless (sink_stat (f, "input-events-dropped") > 0,
      "the flood was never above its bound");
  g_byte_array_unref (flood);
  spice_raw_close (ia);
  spice_raw_close (ib);
  spice_raw_session_free (a);
  spice_raw_session_free (b);
  fixture_free (f);
}

GST_END_TEST;

/* the last navigation event upstream with @scancode: its event type name
 * ("key-press"/"key-release"), NULL if none */
static gchar *
last_key_event (Fixture * f, guint scancode)
{
  gchar *ev = NULL;
  guint i;

  g_mutex_lock (&f->lock);
  for (i = 0; i < f->nav->len; i++) {
    GstStructure *st = g_ptr_array_index (f->nav, i);
    guint sc = 0;

    if (gst_structure_get_uint (st, "scancode", &sc) && sc == scancode) {
      g_free (ev);
      ev = g_strdup (gst_structure_get_string (st, "event"));
    }
  }
  g_mutex_unlock (&f->lock);
  return ev;
}

static gboolean
nav_has_button (Fixture * f, const gchar * event, gint button)
{
  gboolean found = FALSE;
  guint i;

  g_mutex_lock (&f->lock);
  for (i = 0; i < f->nav->len && !found; i++) {
    GstStructure *st = g_ptr_array_index (f->nav, i);
    gint b = 0;

    found = g_strcmp0 (gst_structure_get_string (st, "event"), event) == 0 &&
        gst_structure_get_int (st, "button", &b) && b == button;
  }
  g_mutex_unlock (&f->lock);
  return found;
}

/* A client that leaves (here: resets its connections) with a key and the
 * left button held: the sink releases both upstream, so the next client's
 * presses of that key are presses again (the guest toggled nothing for a
 * second spice-keypress run while the first one's last Space stayed
 * down). */
GST_START_TEST (test_inputs_released_on_leave)
{
  Fixture *f = fixture_new (320, 240, NULL);
  SpiceRawSession *s;
  SpiceRawConn *in;
  guint8 key[4], press[3] = { SPICE_MOUSE_BUTTON_LEFT,
    SPICE_MOUSE_BUTTON_MASK_LEFT, 0
  };
  gchar *ev = NULL;
  gint64 end;

  fixture_start (f, TRUE);
  s = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (s != NULL);
  in = link_channel (f->port, s->session_id, SPICE_CHANNEL_INPUTS, 0);
  GST_WRITE_UINT32_LE (key, 0x39);
  fail_unless (spice_raw_send_msg (in, SPICE_MSGC_INPUTS_KEY_DOWN, key, 4));
  fail_unless (spice_raw_send_msg (in, SPICE_MSGC_INPUTS_MOUSE_PRESS, press,
          3));
  end = g_get_monotonic_time () + 10 * G_TIME_SPAN_SECOND;
  /* both presses are in before the reset: a reset may drop what the sink
   * has not read yet, and a press never seen is no press to release */
  while (g_get_monotonic_time () < end &&
      (g_strcmp0 ((ev = last_key_event (f, 0x39)), "key-press") != 0 ||
          !nav_has_button (f, "mouse-button-press", 1))) {
    g_free (ev);
    ev = NULL;
    g_usleep (10 * 1000);
  }
  fail_unless_equals_string (ev, "key-press");
  fail_unless (nav_has_button (f, "mouse-button-press", 1));
  g_free (ev);
  spice_raw_reset (in);
  spice_raw_reset (s->display);
  spice_raw_reset (s->main);
  s->main = s->display = NULL;
  spice_raw_session_free (s);
  end = g_get_monotonic_time () + 10 * G_TIME_SPAN_SECOND;
  while (g_get_monotonic_time () < end &&
      (g_strcmp0 ((ev = last_key_event (f, 0x39)), "key-release") != 0 ||
          !nav_has_button (f, "mouse-button-release", 1))) {
    g_free (ev);
    ev = NULL;
    g_usleep (10 * 1000);
  }
  fail_unless_equals_string (ev, "key-release");
  fail_unless (nav_has_button (f, "mouse-button-release", 1),
      "the button stays down");
  g_free (ev);
  fixture_free (f);
}

GST_END_TEST;

/* ---------------------------------------------- messages we do not use */

static gboolean
got_mark (SpiceRawSession * s, gpointer data)
{
  return s->marks > 0;
}

/* Every message spice.proto defines for a channel that the sink does not
 * act on leaves the channel open; a malformed one of them closes it. */
GST_START_TEST (test_unused_messages_ignored)
{
  Fixture *f = fixture_new (320, 240, NULL);
  SpiceRawSession *s;
  SpiceRawConn *in;
  guint8 z[16] = { 0, }, codecs[3] = { 2, SPICE_VIDEO_CODEC_TYPE_VP8,
    SPICE_VIDEO_CODEC_TYPE_MJPEG
  }, bad_codecs[2] = { 3, 1 }, key[4];
  guint16 type;
  guint8 *body;
  gsize size;
  GstStructure *c;
  const GValue *v;
  guint64 draws;

  fixture_start (f, TRUE);
  s = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (s != NULL);
  in = link_channel (f->port, s->session_id, SPICE_CHANNEL_INPUTS, 0);
  /* main: migration, quality indicator, client info, common ones */
  fail_unless (spice_raw_send_msg (s->main, SPICE_MSGC_MIGRATE_FLUSH_MARK,
          NULL, 0));
  fail_unless (spice_raw_send_msg (s->main, SPICE_MSGC_MIGRATE_DATA, z, 16));
  fail_unless (spice_raw_send_msg (s->main, SPICE_MSGC_MAIN_CLIENT_INFO, z,
          8));
  fail_unless (spice_raw_send_msg (s->main,
          SPICE_MSGC_MAIN_MIGRATE_CONNECTED, NULL, 0));
  fail_unless (spice_raw_send_msg (s->main,
          SPICE_MSGC_MAIN_MIGRATE_CONNECT_ERROR, NULL, 0));
  fail_unless (spice_raw_send_msg (s->main, SPICE_MSGC_MAIN_MIGRATE_END,
          NULL, 0));
  fail_unless (spice_raw_send_msg (s->main,
          SPICE_MSGC_MAIN_MIGRATE_DST_DO_SEAMLESS, z, 4));
  fail_unless (spice_raw_send_msg (s->main,
          SPICE_MSGC_MAIN_MIGRATE_CONNECTED_SEAMLESS, NULL, 0));
  fail_unless (spice_raw_send_msg (s->main,
          SPICE_MSGC_MAIN_QUALITY_INDICATOR, z, 3));
  /* display: preferences, GL_DRAW_DONE */
  fail_unless (spice_raw_send_msg (s->display,
          SPICE_MSGC_DISPLAY_PREFERRED_COMPRESSION, (guint8[]) {
          SPICE_IMAGE_COMPRESSION_LZ4}, 1));
  fail_unless (spice_raw_send_msg (s->display,
          SPICE_MSGC_DISPLAY_PREFERRED_VIDEO_CODEC_TYPE, codecs, 3));
  fail_unless (spice_raw_send_msg (s->display,
          SPICE_MSGC_DISPLAY_GL_DRAW_DONE, NULL, 0));
  fail_unless (spice_raw_send_msg (s->display, SPICE_MSGC_MIGRATE_FLUSH_MARK,
          NULL, 0));
  /* inputs: a migration mark, then a key that must still arrive */
  fail_unless (spice_raw_send_msg (in, SPICE_MSGC_MIGRATE_FLUSH_MARK, NULL,
          0));
  GST_WRITE_UINT32_LE (key, 0x2c);
  fail_unless (spice_raw_send_msg (in, SPICE_MSGC_INPUTS_KEY_DOWN, key, 4));

  /* main answers after them */
  fail_unless (spice_raw_send_msg (s->main,
          SPICE_MSGC_MAIN_MOUSE_MODE_REQUEST, (guint8[]) {
          SPICE_MOUSE_MODE_SERVER, 0}, 2));
  do {
    fail_unless (spice_raw_read_msg (s->main, 5000, &type, &body, &size),
        "the main channel closed after a message it does not use");
    g_free (body);
  } while (type != SPICE_MSG_MAIN_MOUSE_MODE);
  /* the display still paints, and recorded the preferences */
  fail_unless (spice_raw_session_pump (s, 5000, got_mark, NULL));
  draws = s->draws;
  update_rect (f, &(GstVideoRectangle) {
      10, 10, 50, 50}, 7);
  fail_unless (spice_raw_session_pump (s, 1500, NULL, NULL),
      "the display channel closed after a message it does not use");
  fail_unless (s->draws > draws, "no draw after the preferences");
  c = client_stats (f);
  fail_unless (c != NULL);
  fail_unless (gst_structure_has_field (c, "display"));
  v = gst_structure_get_value (c, "preferred-video-codecs");
  fail_unless (v != NULL && gst_value_array_get_size (v) == 2);
  fail_unless_equals_int (g_value_get_uint (gst_value_array_get_value (v,
              0)), SPICE_VIDEO_CODEC_TYPE_VP8);
  gst_structure_free (c);
  {
    gint64 end = g_get_monotonic_time () + 10 * G_TIME_SPAN_SECOND;

    while (count_keys (f, 0x2c) == 0 && g_get_monotonic_time () < end)
      g_usleep (10 * 1000);
    fail_unless_equals_int (count_keys (f, 0x2c), 1);
  }
  /* a count that does not match the list is malformed: closed */
  fail_unless (spice_raw_send_msg (s->display,
          SPICE_MSGC_DISPLAY_PREFERRED_VIDEO_CODEC_TYPE, bad_codecs, 2));
  fail_unless (spice_raw_wait_closed (s->display, 5000));
  if (spice_raw_websocket ()) {
    const gchar *reason = NULL;

    /* over WebSocket the end is a close frame that says why */
    fail_unless_equals_int (spice_raw_ws_close_code (s->display, &reason),
        1001);
    fail_unless_equals_string (reason,
        "malformed PREFERRED_VIDEO_CODEC_TYPE");
  }
  fail_unless (main_alive (s));
  spice_raw_close (in);
  spice_raw_session_free (s);
  fixture_free (f);
}

GST_END_TEST;

/* spice-gtk tells the sink its preferred compression (LZ4) and video
 * codecs (VP8, then MJPEG) through its API, as spicy's menu does: the
 * display channel stays open (no channel event, the client runs its
 * course) and the sink records both in the client's stats. */
GST_START_TEST (test_preferences_spicegtk)
{
  Fixture *f = fixture_new (320, 240, NULL);
  gchar *port, *out = NULL, *tool = tool_path ("spice-test-client");
  gchar *codecs = g_strdup_printf ("%d,%d", SPICE_VIDEO_CODEC_TYPE_VP8,
      SPICE_VIDEO_CODEC_TYPE_MJPEG);
  gchar *comp = g_strdup_printf ("%d", SPICE_IMAGE_COMPRESSION_LZ4);
  const gchar *argv[] = { tool, "-p", NULL, "--duration-ms", "4000",
    "--prefer-compression", comp, "--prefer-codecs", codecs, NULL
  };
  GThread *t;
  ToolRun run = { argv, NULL, -1 };
  GstStructure *c = NULL;
  const GValue *v = NULL;
  guint comp_seen = 0;
  gint64 end;

  fixture_start (f, TRUE);
  port = g_strdup_printf ("%u", f->port);
  argv[2] = port;
  t = g_thread_new ("client", tool_thread, &run);
  end = g_get_monotonic_time () + 20 * G_TIME_SPAN_SECOND;
  while (g_get_monotonic_time () < end) {
    c = client_stats (f);
    if (c && (v = gst_structure_get_value (c, "preferred-video-codecs")))
      break;
    if (c)
      gst_structure_free (c);
    c = NULL;
    g_usleep (50 * 1000);
  }
  fail_unless (c != NULL && v != NULL, "no preferences recorded");
  fail_unless_equals_int (gst_value_array_get_size (v), 2);
  fail_unless_equals_int (g_value_get_uint (gst_value_array_get_value (v,
              0)), SPICE_VIDEO_CODEC_TYPE_VP8);
  fail_unless_equals_int (g_value_get_uint (gst_value_array_get_value (v,
              1)), SPICE_VIDEO_CODEC_TYPE_MJPEG);
  fail_unless (gst_structure_get_uint (c, "preferred-compression",
          &comp_seen));
  fail_unless_equals_int (comp_seen, SPICE_IMAGE_COMPRESSION_LZ4);
  gst_structure_free (c);
  g_thread_join (t);
  out = run.out;
  fail_unless_equals_int (run.status, 0);
  fail_unless (strstr (out, "PREFERRED-SENT") != NULL, "%s", out);
  fail_unless (strstr (out, "CHANNEL-EVENT") == NULL, "%s", out);
  g_free (out);
  g_free (port);
  g_free (comp);
  g_free (codecs);
  g_free (tool);
  fixture_free (f);
}

GST_END_TEST;

/* ------------------------------------------------- pads and states */

/* a fixture with a stream branch: appsrc "vsrc" of JPEG frames on
 * stream_0 (f->stream_src) */
static Fixture *
stream_fixture (const gchar * props, GPtrArray ** frames)
{
  gchar *desc = g_strdup_printf ("%s appsrc name=vsrc format=time "
      "is-live=true ! sink.stream_0", props);
  Fixture *f = fixture_new (320, 240, desc);
  GstCaps *caps = NULL;

  g_free (desc);
  *frames = encode_frames ("ball", 160, 120, 8, "jpegenc", &caps);
  f->stream_src = gst_bin_get_by_name (GST_BIN (f->pipeline), "vsrc");
  g_object_set (f->stream_src, "caps", caps, NULL);
  gst_caps_unref (caps);
  return f;
}

/* A client whose display socket is full (4 KiB receive buffer, never
 * read) makes the draw path and then the stream pad's streaming thread
 * wait for room (client-timeout 60 s). Releasing the stream pad then
 * returns at once; its streaming thread leaves the wait (FLUSHING) before
 * the stream is forgotten. Under ASan, a wait that wakes into the freed
 * stream fails here. */
GST_START_TEST (test_release_pad_while_blocked)
{
  GPtrArray *frames;
  Fixture *f = stream_fixture ("client-timeout=60000 queue-size=4096",
      &frames);
  GstVideoRectangle dest = { 80, 60, 160, 120 };
  SpiceRawSession *s;
  GstPad *pad;
  gint rcvbuf = 4096;
  guint64 level = 0;
  gint64 t0, end;
  guint i;

  fixture_start (f, TRUE);
  s = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (s != NULL);
  fail_unless (setsockopt (g_socket_get_fd (s->display->sock), SOL_SOCKET,
          SO_RCVBUF, &rcvbuf, sizeof (rcvbuf)) == 0);
  /* full pictures until the client's queue is above queue-size */
  end = g_get_monotonic_time () + 20 * G_TIME_SPAN_SECOND;
  for (i = 0; queued_bytes (f, "display") <= 4096; i++) {
    fail_unless (g_get_monotonic_time () < end, "the display never filled");
    update_rect (f, &(GstVideoRectangle) {
        0, 0, 320, 240}, i + 2);
    g_usleep (20 * 1000);
  }
  for (i = 0; i < frames->len; i++)
    push_stream_frame (f, frames, i, &dest, GST_CLOCK_TIME_NONE);
  /* its streaming thread took a frame and waits: the others stay queued */
  end = g_get_monotonic_time () + 10 * G_TIME_SPAN_SECOND;
  while (sink_stat (f, "stream-frames-in") == 0 &&
      g_get_monotonic_time () < end)
    g_usleep (10 * 1000);
  fail_unless (sink_stat (f, "stream-frames-in") >= 1);
  g_usleep (300 * 1000);
  g_object_get (f->stream_src, "current-level-buffers", &level, NULL);
  fail_unless (level > 0, "the stream pad is not blocked");

  pad = gst_element_get_static_pad (f->sink, "stream_0");
  t0 = g_get_monotonic_time ();
  gst_element_release_request_pad (f->sink, pad);
  GST_INFO ("released in %" G_GINT64_FORMAT " ms",
      (g_get_monotonic_time () - t0) / 1000);
  fail_unless (g_get_monotonic_time () - t0 < 5 * G_TIME_SPAN_SECOND,
      "releasing the blocked pad waited for the client-timeout");
  gst_object_unref (pad);
  fail_unless (gst_element_get_static_pad (f->sink, "stream_0") == NULL);
  /* the sink goes on: stats, and another stream pad */
  pad = gst_element_request_pad_simple (f->sink, "stream_%u");
  fail_unless (pad != NULL);
  gst_element_release_request_pad (f->sink, pad);
  gst_object_unref (pad);
  spice_raw_session_free (s);
  fixture_free (f);
  g_ptr_array_unref (frames);
}

GST_END_TEST;

typedef struct {
  Fixture *f;
  GPtrArray *frames;
  gint stop;                    /* atomic */
} Pusher;

/* stream frames at ~30 fps until stopped (whatever the state) */
static gpointer
pusher_thread (gpointer data)
{
  Pusher *p = data;
  GstVideoRectangle dest = { 80, 60, 160, 120 };
  guint i = 0;

  while (!g_atomic_int_get (&p->stop)) {
    GstBuffer *b = gst_buffer_copy (g_ptr_array_index (p->frames,
            i % p->frames->len));

    gst_buffer_add_spice_stream_meta (b, &dest, 1, i % p->frames->len == 0);
    gst_app_src_push_buffer (GST_APP_SRC (p->f->stream_src), b);
    i++;
    g_usleep (33 * 1000);
  }
  return NULL;
}

typedef struct {
  guint16 port;
  gint stop;                    /* atomic */
} Reader;

/* a raw session that reads its display until stopped or closed */
static gpointer
reader_thread (gpointer data)
{
  Reader *r = data;
  SpiceRawSession *s = spice_raw_session_new (r->port, NULL,
      SPICE_RAW_DISPLAY_CAPS_ALL);

  while (s && !g_atomic_int_get (&r->stop) &&
      spice_raw_session_pump (s, 50, NULL, NULL));
  spice_raw_session_free (s);
  return NULL;
}

/* Five times: PLAYING, a client that reads, one that never reads and a
 * spice-gtk client, stream frames flowing, then NULL while all of that
 * goes on. Each NULL returns at once; afterwards a client gets the exact
 * picture. */
GST_START_TEST (test_null_playing_null_live)
{
  GPtrArray *frames;
  Fixture *f = stream_fixture ("", &frames);
  Pusher p = { f, frames, 0 };
  GThread *pt;
  SpiceRawSession *s;
  guint cycle;

  pt = g_thread_new ("pusher", pusher_thread, &p);
  for (cycle = 0; cycle < 5; cycle++) {
    Reader r = { 0, 0 };
    GThread *rt;
    SpiceRawSession *idle;
    gchar *port;
    gchar *argv[8];
    GPid pid;
    gint64 t0;

    fixture_start (f, TRUE);
    r.port = f->port;
    rt = g_thread_new ("reader", reader_thread, &r);
    idle = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
    fail_unless (idle != NULL);
    port = g_strdup_printf ("%u", f->port);
    argv[0] = tool_path ("spice-test-client");
    argv[1] = (gchar *) "-p";
    argv[2] = port;
    argv[3] = (gchar *) "--duration-ms";
    argv[4] = (gchar *) "20000";
    argv[5] = NULL;
    fail_unless (g_spawn_async (NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD |
            G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL, NULL,
            NULL, &pid, NULL));
    g_usleep (600 * 1000);
    t0 = g_get_monotonic_time ();
    fail_unless_equals_int (gst_element_set_state (f->pipeline,
            GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
    GST_INFO ("cycle %u: NULL in %" G_GINT64_FORMAT " ms", cycle,
        (g_get_monotonic_time () - t0) / 1000);
    fail_unless (g_get_monotonic_time () - t0 < 5 * G_TIME_SPAN_SECOND);
    g_atomic_int_set (&r.stop, 1);
    g_thread_join (rt);
    spice_raw_session_free (idle);
    kill (pid, SIGTERM);
    waitpid (pid, NULL, 0);
    g_spawn_close_pid (pid);
    g_free (argv[0]);
    g_free (port);
  }
  g_atomic_int_set (&p.stop, 1);
  g_thread_join (pt);
  /* and once more: a client gets the exact picture */
  fixture_start (f, TRUE);
  s = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (s != NULL);
  fail_unless (spice_raw_session_pump (s, 10000, got_mark, NULL));
  fail_unless_equals_int (spice_raw_session_compare (s, f->picture,
          f->w * 4), 0);
  spice_raw_session_free (s);
  fixture_free (f);
  g_ptr_array_unref (frames);
}

GST_END_TEST;

static Suite *
spicesink_bounds_suite (void)
{
  Suite *s = suite_create ("spicesink-bounds");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 180);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_record_flood);
  tcase_add_test (tc, test_cursor_latest);
  tcase_add_test (tc, test_cursor_coalesced_and_drip);
  tcase_add_test (tc, test_input_flood_fair);
  tcase_add_test (tc, test_inputs_released_on_leave);
  tcase_add_test (tc, test_unused_messages_ignored);
  tcase_add_test (tc, test_preferences_spicegtk);
  tcase_add_test (tc, test_release_pad_while_blocked);
  tcase_add_test (tc, test_null_playing_null_live);
  return s;
}

GST_CHECK_MAIN (spicesink_bounds);
