/* tests/agent: spicesink's agent endpoint against spice-gtk clients (the
 * public clipboard, update_display and file copy API of spice-client-glib,
 * in this process) and a raw hostile client; the guest side is played by
 * events sent on the sink's draw pad and seen upstream of it. The sink
 * spools files in this process's $TMPDIR, a directory of the test's own
 * (made by the suite), so what it leaves there is seen.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <glib/gstdio.h>
#include "spicesink-test-util.h"

#include <spice-client.h>
#include "agent-spin.h"
#include "runner-process.h"

/* ------------------------------------------------ the guest's side */

typedef struct
{
  Fixture *f;
  GstPad *drawpad;
  GMutex lock;
  GPtrArray *up;                /* GstEvent: agent events upstream */
  GPtrArray *warnings;          /* gchar*: spicesink* warnings */
} Guest;

static Guest *the_guest;

static GstPadProbeReturn
agent_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  Guest *g = data;
  GstEvent *ev = GST_PAD_PROBE_INFO_EVENT (info);

  if (gst_event_has_name (ev, GST_SPICE_EVENT_CLIPBOARD) ||
      gst_event_has_name (ev, GST_SPICE_EVENT_MONITORS_CONFIG) ||
      gst_event_has_name (ev, GST_SPICE_EVENT_FILE_XFER)) {
    g_mutex_lock (&g->lock);
    g_ptr_array_add (g->up, gst_event_ref (ev));
    g_mutex_unlock (&g->lock);
  }
  return GST_PAD_PROBE_OK;
}

static void
log_func (GstDebugCategory * cat, GstDebugLevel level, const gchar * file,
    const gchar * function, gint line, GObject * object,
    GstDebugMessage * message, gpointer data)
{
  Guest *g = the_guest;

  if (!g || level != GST_LEVEL_WARNING ||
      !g_str_has_prefix (gst_debug_category_get_name (cat), "spicesink"))
    return;
  g_mutex_lock (&g->lock);
  g_ptr_array_add (g->warnings, g_strdup (gst_debug_message_get (message)));
  g_mutex_unlock (&g->lock);
}

/* @caps: VD_AGENT_CAP_* bits of the guest's agent besides the clipboard's */
static Guest *
guest_new_caps (const gchar * props, const guint * caps, guint n_caps)
{
  Guest *g = g_new0 (Guest, 1);
  GstSpiceAgentInfo info = { TRUE, {0,}, TRUE };
  guint i;
  GstPad *pad;

  g_mutex_init (&g->lock);
  g->up = g_ptr_array_new_with_free_func ((GDestroyNotify) gst_event_unref);
  g->warnings = g_ptr_array_new_with_free_func (g_free);
  g->f = fixture_new (320, 200, props);
  pad = gst_element_get_static_pad (g->f->src, "src");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_EVENT_UPSTREAM, agent_probe, g,
      NULL);
  gst_object_unref (pad);
  g->drawpad = gst_element_get_static_pad (g->f->sink, "draw");
  fixture_start (g->f, TRUE);
  VD_AGENT_SET_CAPABILITY (info.caps, VD_AGENT_CAP_CLIPBOARD_BY_DEMAND);
  VD_AGENT_SET_CAPABILITY (info.caps, VD_AGENT_CAP_CLIPBOARD_SELECTION);
  for (i = 0; i < n_caps; i++)
    VD_AGENT_SET_CAPABILITY (info.caps, caps[i]);
  fail_unless (gst_pad_send_event (g->drawpad,
          gst_spice_event_new_agent (&info)));
  the_guest = g;
  return g;
}

static Guest *
guest_new (const gchar * props, gboolean monitors)
{
  static const guint mon = VD_AGENT_CAP_MONITORS_CONFIG;

  return guest_new_caps (props, &mon, monitors ? 1 : 0);
}

static void
guest_free (Guest * g)
{
  the_guest = NULL;
  gst_object_unref (g->drawpad);
  fixture_free (g->f);
  g_ptr_array_unref (g->up);
  g_ptr_array_unref (g->warnings);
  g_mutex_clear (&g->lock);
  g_free (g);
}

static void
guest_send (Guest * g, const GstSpiceClipboard * clip)
{
  fail_unless (gst_pad_send_event (g->drawpad,
          gst_spice_event_new_clipboard (FALSE, clip)));
}

typedef struct
{
  Guest *g;
  GstSpiceClipboardAction action;
  const gchar *name;
  GstSpiceClipboard got;
  GstSpiceMonitor mons[GST_SPICE_MAX_MONITORS];
  guint n_mons;
  GstSpiceFileXfer xfer;        /* its path a copy */
} UpWait;

static gboolean
up_seen (gpointer data)
{
  UpWait *w = data;
  gboolean found = FALSE;
  guint i;

  g_mutex_lock (&w->g->lock);
  for (i = 0; i < w->g->up->len && !found; i++) {
    GstEvent *ev = w->g->up->pdata[i];

    if (!gst_event_has_name (ev, w->name))
      continue;
    if (g_str_equal (w->name, GST_SPICE_EVENT_MONITORS_CONFIG)) {
      found = gst_spice_event_parse_monitors_config (ev, w->mons, &w->n_mons);
    } else if (g_str_equal (w->name, GST_SPICE_EVENT_FILE_XFER)) {
      found = gst_spice_event_parse_file_xfer (ev, &w->xfer) &&
          w->xfer.action == (GstSpiceFileXferAction) w->action;
      if (found)
        w->xfer.path = g_strdup (w->xfer.path);
    } else if (gst_spice_event_parse_clipboard (ev, &w->got)) {
      if (w->got.action == w->action)
        found = TRUE;
      else
        gst_spice_clipboard_clear (&w->got);
    }
    if (found)
      g_ptr_array_remove_index (w->g->up, i);
  }
  g_mutex_unlock (&w->g->lock);
  return found;
}

/* the next upstream clipboard event of @action */
static void
wait_up (Guest * g, GstSpiceClipboardAction action, GstSpiceClipboard * out)
{
  UpWait w = { g, action, GST_SPICE_EVENT_CLIPBOARD };

  fail_unless (spin_until (up_seen, &w, 10000),
      "no upstream clipboard event %d", action);
  *out = w.got;
}

/* ------------------------------------------------ a spice-gtk client */

typedef struct
{
  SpiceSession *session;
  SpiceMainChannel *main;
  gboolean agent;
  /* what the sink sent it */
  guint grabs[3];
  guint32 grab_type[3];
  guint releases[3];
  GByteArray *data;
  gboolean have_data;
  guint32 data_type;
  /* its clipboard, given when the sink asks */
  GBytes *mine;
  guint requests;
} Client;

static void
on_agent (GObject * o, GParamSpec * p, Client * c)
{
  g_object_get (o, "agent-connected", &c->agent, NULL);
}

static gboolean
on_grab (SpiceMainChannel * ch, guint sel, guint32 * types, guint n, Client * c)
{
  if (sel < 3) {
    c->grabs[sel]++;
    c->grab_type[sel] = n ? types[0] : 0;
  }
  return TRUE;
}

static void
on_release (SpiceMainChannel * ch, guint sel, Client * c)
{
  if (sel < 3)
    c->releases[sel]++;
}

static void
on_data (SpiceMainChannel * ch, guint sel, guint type, const guint8 * d,
    guint size, Client * c)
{
  g_byte_array_set_size (c->data, 0);
  g_byte_array_append (c->data, d, size);
  c->data_type = type;
  c->have_data = TRUE;
}

static gboolean
on_request (SpiceMainChannel * ch, guint sel, guint type, Client * c)
{
  gsize n = 0;
  const guint8 *d = c->mine ? g_bytes_get_data (c->mine, &n) : NULL;

  c->requests++;
  spice_main_channel_clipboard_selection_notify (ch, sel, type, d, n);
  return TRUE;
}

static void
on_channel_new (SpiceSession * s, SpiceChannel * ch, Client * c)
{
  if (!SPICE_IS_MAIN_CHANNEL (ch))
    return;
  c->main = SPICE_MAIN_CHANNEL (ch);
  g_signal_connect (ch, "notify::agent-connected", G_CALLBACK (on_agent), c);
  g_signal_connect (ch, "main-clipboard-selection-grab",
      G_CALLBACK (on_grab), c);
  g_signal_connect (ch, "main-clipboard-selection-release",
      G_CALLBACK (on_release), c);
  g_signal_connect (ch, "main-clipboard-selection", G_CALLBACK (on_data), c);
  g_signal_connect (ch, "main-clipboard-selection-request",
      G_CALLBACK (on_request), c);
}

static gboolean
client_ready (gpointer data)
{
  Client *c = data;

  return c->agent && c->main &&
      spice_main_channel_agent_test_capability (c->main,
      VD_AGENT_CAP_CLIPBOARD_BY_DEMAND);
}

static Client *
client_new (guint16 port)
{
  Client *c = g_new0 (Client, 1);
  gchar *ps = g_strdup_printf ("%u", port);

  c->data = g_byte_array_new ();
  c->session = spice_session_new ();
  g_object_set (c->session, "host", "127.0.0.1", "port", ps, NULL);
  g_free (ps);
  g_signal_connect (c->session, "channel-new", G_CALLBACK (on_channel_new), c);
  fail_unless (spice_session_connect (c->session));
  fail_unless (spin_until (client_ready, c, 10000),
      "the client never saw the agent");
  return c;
}

static void
client_free (Client * c)
{
  if (c->main)
    g_signal_handlers_disconnect_by_data (c->main, c);
  g_signal_handlers_disconnect_by_data (c->session, c);
  spice_session_disconnect (c->session);
  g_object_unref (c->session);
  g_byte_array_unref (c->data);
  if (c->mine)
    g_bytes_unref (c->mine);
  g_free (c);
}

static gboolean
client_has_data (gpointer data)
{
  return ((Client *) data)->have_data;
}

static gboolean
client_has_grab (gpointer data)
{
  return ((Client *) data)->grabs[VD_AGENT_CLIPBOARD_SELECTION_PRIMARY] > 0;
}

static gboolean
client_has_release (gpointer data)
{
  return ((Client *) data)->releases[VD_AGENT_CLIPBOARD_SELECTION_CLIPBOARD]
      > 0;
}

/* iterates the default context, without sleeping while it has work, until
 * @c saw @n grabs of CLIPBOARD or @ms */
static gboolean
client_drain_grabs (Client * c, guint n, guint ms)
{
  gint64 deadline = g_get_monotonic_time () + ms * (gint64) 1000;

  while (c->grabs[VD_AGENT_CLIPBOARD_SELECTION_CLIPBOARD] < n) {
    if (g_get_monotonic_time () > deadline)
      return FALSE;
    if (!g_main_context_iteration (NULL, FALSE))
      g_usleep (1000);
  }
  return TRUE;
}

static GBytes *
big_text (gsize size)
{
  static const gchar *words[] = { "grüße ", "世界 ", "naïve ", "ASCII ",
    "emoji 😀 ", "\n"
  };
  GString *s = g_string_new (NULL);
  guint i = 0;

  while (s->len < size)
    g_string_append (s, words[i++ % G_N_ELEMENTS (words)]);
  return g_string_free_to_bytes (s);
}

/* --------------------------------------------------------------- tests */

/* client copies (1 MiB of non-ASCII text), the guest pastes it */
GST_START_TEST (test_client_to_guest)
{
  Guest *g = guest_new (NULL, FALSE);
  Client *c = client_new (g->f->port);
  guint32 utf8 = VD_AGENT_CLIPBOARD_UTF8_TEXT;
  GstSpiceClipboard got, req = { GST_SPICE_CLIPBOARD_REQUEST,
    VD_AGENT_CLIPBOARD_SELECTION_CLIPBOARD, 0, {0,}, utf8,
  };

  c->mine = big_text (1024 * 1024);
  spice_main_channel_clipboard_selection_grab (c->main,
      VD_AGENT_CLIPBOARD_SELECTION_CLIPBOARD, &utf8, 1);
  wait_up (g, GST_SPICE_CLIPBOARD_GRAB, &got);
  fail_unless_equals_int (got.n_types, 1);
  fail_unless_equals_int (got.types[0], utf8);
  /* nothing moved before the paste */
  fail_unless_equals_int (c->requests, 0);
  guest_send (g, &req);
  wait_up (g, GST_SPICE_CLIPBOARD_DATA, &got);
  fail_unless_equals_int (c->requests, 1);
  fail_unless_equals_int (got.type, utf8);
  fail_unless (got.data && g_bytes_equal (got.data, c->mine),
      "the guest got %" G_GSIZE_FORMAT " bytes, not the client's %"
      G_GSIZE_FORMAT, got.data ? g_bytes_get_size (got.data) : 0,
      g_bytes_get_size (c->mine));
  gst_spice_clipboard_clear (&got);

  /* the client releases: the guest hears it */
  spice_main_channel_clipboard_selection_release (c->main,
      VD_AGENT_CLIPBOARD_SELECTION_CLIPBOARD);
  wait_up (g, GST_SPICE_CLIPBOARD_RELEASE, &got);
  client_free (c);
  guest_free (g);
}

GST_END_TEST;

/* the guest copies a PNG on PRIMARY, the client pastes it */
GST_START_TEST (test_guest_to_client)
{
  Guest *g = guest_new (NULL, FALSE);
  Client *c = client_new (g->f->port);
  guint32 png = VD_AGENT_CLIPBOARD_IMAGE_PNG;
  GstSpiceClipboard got, clip = { GST_SPICE_CLIPBOARD_GRAB,
    VD_AGENT_CLIPBOARD_SELECTION_PRIMARY, 1, {png},
  };
  guint8 *img = g_malloc (200000);
  GBytes *bytes;
  guint i;

  for (i = 0; i < 200000; i++)
    img[i] = (guint8) g_random_int ();
  memcpy (img, "\x89PNG\r\n\x1a\n", 8);
  bytes = g_bytes_new_take (img, 200000);
  guest_send (g, &clip);
  fail_unless (spin_until (client_has_grab, c, 10000));
  fail_unless_equals_int (c->grab_type[1], png);
  spice_main_channel_clipboard_selection_request (c->main,
      VD_AGENT_CLIPBOARD_SELECTION_PRIMARY, png);
  wait_up (g, GST_SPICE_CLIPBOARD_REQUEST, &got);
  fail_unless_equals_int (got.selection, VD_AGENT_CLIPBOARD_SELECTION_PRIMARY);
  fail_unless_equals_int (got.type, png);
  clip.action = GST_SPICE_CLIPBOARD_DATA;
  clip.type = png;
  clip.data = bytes;
  guest_send (g, &clip);
  fail_unless (spin_until (client_has_data, c, 10000));
  fail_unless_equals_int (c->data_type, png);
  fail_unless_equals_int (c->data->len, 200000);
  fail_unless (memcmp (c->data->data, g_bytes_get_data (bytes, NULL),
          200000) == 0);
  g_bytes_unref (bytes);
  client_free (c);
  guest_free (g);
}

GST_END_TEST;

/* above max-clipboard the paste gets an empty answer, both ways */
GST_START_TEST (test_max_clipboard)
{
  Guest *g = guest_new ("max-clipboard=1000", FALSE);
  Client *c = client_new (g->f->port);
  guint32 utf8 = VD_AGENT_CLIPBOARD_UTF8_TEXT;
  GstSpiceClipboard got, clip = { GST_SPICE_CLIPBOARD_GRAB,
    VD_AGENT_CLIPBOARD_SELECTION_PRIMARY, 1, {utf8},
  };

  guest_send (g, &clip);
  fail_unless (spin_until (client_has_grab, c, 10000));
  spice_main_channel_clipboard_selection_request (c->main,
      VD_AGENT_CLIPBOARD_SELECTION_PRIMARY, utf8);
  wait_up (g, GST_SPICE_CLIPBOARD_REQUEST, &got);
  clip.action = GST_SPICE_CLIPBOARD_DATA;
  clip.type = utf8;
  clip.data = big_text (5000);
  guest_send (g, &clip);
  fail_unless (spin_until (client_has_data, c, 10000));
  fail_unless_equals_int (c->data->len, 0);
  g_bytes_unref (clip.data);

  /* the client's 5000 bytes: the guest gets an empty answer, and the
   * client stays connected */
  c->mine = big_text (5000);
  spice_main_channel_clipboard_selection_grab (c->main,
      VD_AGENT_CLIPBOARD_SELECTION_CLIPBOARD, &utf8, 1);
  wait_up (g, GST_SPICE_CLIPBOARD_GRAB, &got);
  clip = (GstSpiceClipboard) {
    GST_SPICE_CLIPBOARD_REQUEST, VD_AGENT_CLIPBOARD_SELECTION_CLIPBOARD, 0, {
    0}
  , utf8};
  guest_send (g, &clip);
  wait_up (g, GST_SPICE_CLIPBOARD_DATA, &got);
  fail_unless (got.data == NULL || g_bytes_get_size (got.data) == 0);
  gst_spice_clipboard_clear (&got);
  fail_unless (c->agent);
  client_free (c);
  guest_free (g);
}

GST_END_TEST;

/* two clients: one's grab is offered to the other (and the guest), the
 * paste reaches the owner; the owner leaves: its grab is released */
GST_START_TEST (test_two_clients)
{
  Guest *g = guest_new (NULL, FALSE);
  Client *a = client_new (g->f->port), *b = client_new (g->f->port);
  guint32 utf8 = VD_AGENT_CLIPBOARD_UTF8_TEXT;
  GstSpiceClipboard got;

  a->mine = big_text (3000);
  spice_main_channel_clipboard_selection_grab (a->main,
      VD_AGENT_CLIPBOARD_SELECTION_PRIMARY, &utf8, 1);
  wait_up (g, GST_SPICE_CLIPBOARD_GRAB, &got);
  fail_unless (spin_until (client_has_grab, b, 10000));
  fail_unless_equals_int (a->grabs[1], 0);
  spice_main_channel_clipboard_selection_request (b->main,
      VD_AGENT_CLIPBOARD_SELECTION_PRIMARY, utf8);
  fail_unless (spin_until (client_has_data, b, 10000));
  fail_unless_equals_int (a->requests, 1);
  fail_unless_equals_int (b->data->len, g_bytes_get_size (a->mine));
  fail_unless (memcmp (b->data->data, g_bytes_get_data (a->mine, NULL),
          b->data->len) == 0);

  /* a's CLIPBOARD grab, then a leaves: b and the guest see it released */
  spice_main_channel_clipboard_selection_grab (a->main,
      VD_AGENT_CLIPBOARD_SELECTION_CLIPBOARD, &utf8, 1);
  wait_up (g, GST_SPICE_CLIPBOARD_GRAB, &got);
  client_free (a);
  fail_unless (spin_until (client_has_release, b, 10000));
  wait_up (g, GST_SPICE_CLIPBOARD_RELEASE, &got);
  client_free (b);
  guest_free (g);
}

GST_END_TEST;

/* the client's window size goes upstream as a monitors config */
GST_START_TEST (test_monitors_config)
{
  Guest *g = guest_new (NULL, TRUE);
  Client *c = client_new (g->f->port);
  UpWait w = { g, 0, GST_SPICE_EVENT_MONITORS_CONFIG };

  fail_unless (spice_main_channel_agent_test_capability (c->main,
          VD_AGENT_CAP_MONITORS_CONFIG));
  spice_main_channel_update_display_enabled (c->main, 0, TRUE, FALSE);
  spice_main_channel_update_display (c->main, 0, 0, 0, 1000, 640, FALSE);
  fail_unless (spice_main_channel_send_monitor_config (c->main));
  fail_unless (spin_until (up_seen, &w, 10000));
  fail_unless_equals_int (w.n_mons, 1);
  fail_unless_equals_int (w.mons[0].width, 1000);
  fail_unless_equals_int (w.mons[0].height, 640);
  client_free (c);
  guest_free (g);
}

GST_END_TEST;

/* ------------------------------------------------ hostile raw clients */

/* a raw client that started the agent with @tokens for the sink */
static SpiceRawConn *
raw_agent_tokens (Guest * g, guint32 tokens)
{
  SpiceRawConn *c = spice_raw_connect (g->f->port, 5);
  guint16 type;
  guint8 *body = NULL, start[4];
  gsize size;
  TestWireMainInit init;

  fail_unless (c != NULL);
  fail_unless (spice_raw_link (c, 0, SPICE_CHANNEL_MAIN, 0x0d,
          1u << SPICE_MAIN_CAP_AGENT_CONNECTED_TOKENS, NULL, NULL));
  for (;;) {
    fail_unless (spice_raw_read_msg (c, 5000, &type, &body, &size));
    if (type == SPICE_MSG_MAIN_INIT)
      break;
    g_free (body);
  }
  fail_unless (test_wire_parse_main_init (body, size, &init));
  g_free (body);
  fail_unless_equals_int (init.agent_connected, 1);
  fail_unless_equals_int (init.agent_tokens, 10);
  GST_WRITE_UINT32_LE (start, tokens);
  fail_unless (spice_raw_send_msg (c, SPICE_MSGC_MAIN_AGENT_START, start, 4));
  return c;
}

static SpiceRawConn *
raw_agent (Guest * g)
{
  return raw_agent_tokens (g, G_MAXUINT32);
}

static gboolean
warned (Guest * g, const gchar * reason)
{
  gboolean found = FALSE;
  guint i;

  g_mutex_lock (&g->lock);
  for (i = 0; i < g->warnings->len && !found; i++)
    found = strstr (g->warnings->pdata[i], reason) != NULL;
  g_mutex_unlock (&g->lock);
  return found;
}

static void
raw_send_stream (SpiceRawConn * c, GByteArray * stream)
{
  gsize off;

  for (off = 0; off < stream->len; off += VD_AGENT_MAX_DATA_SIZE)
    fail_unless (spice_raw_send_msg (c, SPICE_MSGC_MAIN_AGENT_DATA,
            stream->data + off, MIN (VD_AGENT_MAX_DATA_SIZE,
                stream->len - off)));
}

static void
expect_closed (Guest * g, SpiceRawConn * c, Client * good, const gchar * reason)
{
  guint32 utf8 = VD_AGENT_CLIPBOARD_UTF8_TEXT;
  GstSpiceClipboard got;

  fail_unless (spice_raw_wait_closed (c, 5000), "not closed for: %s", reason);
  fail_unless (warned (g, reason), "no warning \"%s\"", reason);
  spice_raw_close (c);
  /* the other client and the guest are unaffected */
  spice_main_channel_clipboard_selection_grab (good->main,
      VD_AGENT_CLIPBOARD_SELECTION_CLIPBOARD, &utf8, 1);
  wait_up (g, GST_SPICE_CLIPBOARD_GRAB, &got);
  fail_unless (good->agent);
}

GST_START_TEST (test_hostile)
{
  Guest *g = guest_new (NULL, FALSE);
  Client *good = client_new (g->f->port);
  SpiceRawConn *c;
  GByteArray *a;
  guint8 big[VD_AGENT_MAX_DATA_SIZE + 1] = { 0, };
  GstSpiceClipboard clip = { GST_SPICE_CLIPBOARD_DATA, 0, 0, {0,},
  VD_AGENT_CLIPBOARD_UTF8_TEXT, NULL
  };
  guint i;

  gst_debug_set_threshold_for_name ("spicesink*", GST_LEVEL_WARNING);
  gst_debug_add_log_function (log_func, NULL, NULL);

  /* a chunk larger than VD_AGENT_MAX_DATA_SIZE */
  c = raw_agent (g);
  fail_unless (spice_raw_send_msg (c, SPICE_MSGC_MAIN_AGENT_DATA, big,
          sizeof (big)));
  expect_closed (g, c, good, "message AGENT_DATA has bad size 2049");

  /* a message of another protocol */
  c = raw_agent (g);
  a = g_byte_array_new ();
  gst_spice_agent_write_message (a, VD_AGENT_CLIPBOARD_RELEASE, big, 4);
  a->data[0] = 7;
  raw_send_stream (c, a);
  g_byte_array_unref (a);
  expect_closed (g, c, good, "unknown protocol");

  /* clipboard data nobody asked for */
  c = raw_agent (g);
  a = g_byte_array_new ();
  clip.data = g_bytes_new_static ("hello", 5);
  test_agent_write_clipboard (a, &clip, FALSE, FALSE, 0);
  g_bytes_unref (clip.data);
  raw_send_stream (c, a);
  g_byte_array_unref (a);
  expect_closed (g, c, good, "clipboard data without a request");

  /* a malformed grab (types not u32) */
  c = raw_agent (g);
  a = g_byte_array_new ();
  gst_spice_agent_write_message (a, VD_AGENT_CLIPBOARD_GRAB, big, 3);
  raw_send_stream (c, a);
  g_byte_array_unref (a);
  expect_closed (g, c, good, "malformed clipboard message");

  /* a grab flood */
  c = raw_agent (g);
  a = g_byte_array_new ();
  clip.action = GST_SPICE_CLIPBOARD_GRAB;
  clip.n_types = 1;
  clip.types[0] = VD_AGENT_CLIPBOARD_UTF8_TEXT;
  for (i = 0; i < 40; i++)      /* spicesink allows 20 a second */
    test_agent_write_clipboard (a, &clip, FALSE, FALSE, 0);
  raw_send_stream (c, a);
  g_byte_array_unref (a);
  expect_closed (g, c, good, "clipboard grab flood");

  gst_debug_remove_log_function (log_func);
  client_free (good);
  guest_free (g);
}

GST_END_TEST;

/* a client that takes one AGENT_DATA and never gives the token back: the
 * guest's messages for it pile up in spicesink; past max-clipboard + 64 KiB
 * it is closed with its reason, and the other client and the guest go on */
GST_START_TEST (test_tokens_not_returned)
{
  Guest *g = guest_new ("max-clipboard=1000", FALSE);
  Client *good = client_new (g->f->port);
  SpiceRawConn *c;
  GstSpiceClipboard grab = { GST_SPICE_CLIPBOARD_GRAB,
    VD_AGENT_CLIPBOARD_SELECTION_CLIPBOARD, 1,
    {VD_AGENT_CLIPBOARD_UTF8_TEXT,}, 0, NULL
  };
  guint i;

  gst_debug_set_threshold_for_name ("spicesink*", GST_LEVEL_WARNING);
  gst_debug_add_log_function (log_func, NULL, NULL);
  c = raw_agent_tokens (g, 1);
  /* each guest grab is one small message to every client */
  for (i = 0; i < 20000 && !warned (g, "agent tokens not returned"); i++) {
    guest_send (g, &grab);
    if (i % 64 == 0)
      g_main_context_iteration (NULL, FALSE);
  }
  GST_INFO ("closed after %u guest grabs", i);
  fail_unless (i > 1000, "closed too early, after %u small messages", i);
  /* the good client gets every one of them: spice-gtk reads its socket dry,
   * one signal per main-context iteration, before it writes its own grab */
  fail_unless (client_drain_grabs (good, i, 60000),
      "the good client got %u of the %u guest grabs",
      good->grabs[VD_AGENT_CLIPBOARD_SELECTION_CLIPBOARD], i);
  expect_closed (g, c, good, "agent tokens not returned");
  fail_unless_equals_int (good->grabs[VD_AGENT_CLIPBOARD_SELECTION_CLIPBOARD],
      i);
  gst_debug_remove_log_function (log_func);
  client_free (good);
  guest_free (g);
}

GST_END_TEST;

/* whether the peer of @data (a SpiceRawConn) closed; reads what it has */
static gboolean
raw_closed_now (gpointer data)
{
  SpiceRawConn *c = data;
  guint8 buf[4096];

  while (g_socket_condition_check (c->sock, G_IO_IN | G_IO_HUP)) {
    gssize n = g_socket_receive (c->sock, (gchar *) buf, sizeof (buf), NULL,
        NULL);

    if (n <= 0)
      return TRUE;
  }
  return FALSE;
}

typedef struct
{
  Client *c;
  guint n;
} RequestsWait;

static gboolean
has_requests (gpointer data)
{
  RequestsWait *w = data;

  return w->c->requests >= w->n;
}

/* A client that takes no AGENT_DATA (0 tokens) asks five times for the
 * clipboard of another client, which answers each request with 900 KB:
 * the answers wait for its tokens until they are more than max-clipboard +
 * 64 KiB; it is closed with its reason, while the answers still come in.
 * The owner gets one request per ask and none of its answers is refused
 * as unasked-for; it and the guest go on. */
GST_START_TEST (test_withholder_requests_clipboard)
{
  Guest *g = guest_new ("max-clipboard=1000000", FALSE);
  Client *owner = client_new (g->f->port);
  SpiceRawConn *c;
  GByteArray *a = g_byte_array_new ();
  guint32 utf8 = VD_AGENT_CLIPBOARD_UTF8_TEXT;
  GstSpiceClipboard got, req = { GST_SPICE_CLIPBOARD_REQUEST,
    VD_AGENT_CLIPBOARD_SELECTION_CLIPBOARD, 0, {0,}, utf8, NULL
  };
  guint i;

  gst_debug_set_threshold_for_name ("spicesink*", GST_LEVEL_WARNING);
  gst_debug_add_log_function (log_func, NULL, NULL);
  owner->mine = big_text (900 * 1000);
  spice_main_channel_clipboard_selection_grab (owner->main,
      VD_AGENT_CLIPBOARD_SELECTION_CLIPBOARD, &utf8, 1);
  wait_up (g, GST_SPICE_CLIPBOARD_GRAB, &got);
  gst_spice_clipboard_clear (&got);
  c = raw_agent_tokens (g, 0);
  for (i = 0; i < 5; i++)
    test_agent_write_clipboard (a, &req, FALSE, FALSE, 0);
  raw_send_stream (c, a);
  g_byte_array_unref (a);
  fail_unless (spin_until (raw_closed_now, c, 20000),
      "the client that takes no answer was not closed");
  fail_unless (warned (g, "agent tokens not returned"));
  /* the owner answered every request, and none of its answers closed it */
  fail_unless (spin_until (has_requests, &(RequestsWait) {
          owner, 5}, 20000), "the owner got %u requests", owner->requests);
  fail_if (warned (g, "clipboard data without a request"));
  expect_closed (g, c, owner, "agent tokens not returned");
  gst_debug_remove_log_function (log_func);
  client_free (owner);
  guest_free (g);
}

GST_END_TEST;

/* ------------------------------------------------------------- files */

static gchar *spool_dir;        /* this process's $TMPDIR (the suite's) */

/* entries in $TMPDIR: the sink's spool directory while a transfer runs */
static guint
spool_entries (void)
{
  return test_dir_entries (spool_dir);
}

/* after the files' tests (in the process that runs them all) */
static void
spool_dir_remove (void)
{
  fail_unless (g_rmdir (spool_dir) == 0, "the spool %s stays: %s", spool_dir,
      g_strerror (errno));
}

static gboolean
spool_empty (gpointer data)
{
  return spool_entries () == 0;
}

/* a client's spice_main_channel_file_copy_async of one or more files */
typedef struct
{
  gboolean done;
  GError *error;                /* the operation's */
  guint finished;               /* files ended */
  GPtrArray *file_errors;       /* each file's message, "" arrived */
} Copy;

static void
copy_file_finished (SpiceFileTransferTask * task, GError * error, Copy * cp)
{
  cp->finished++;
  g_ptr_array_add (cp->file_errors, g_strdup (error ? error->message : ""));
}

static void
copy_new_task (SpiceMainChannel * ch, SpiceFileTransferTask * task, Copy * cp)
{
  g_signal_connect (task, "finished", G_CALLBACK (copy_file_finished), cp);
}

static void
copy_done (GObject * src, GAsyncResult * res, gpointer data)
{
  Copy *cp = data;

  spice_main_channel_file_copy_finish (SPICE_MAIN_CHANNEL (src), res,
      &cp->error);
  cp->done = TRUE;
}

static gboolean
copy_is_done (gpointer data)
{
  return ((Copy *) data)->done;
}

/* @c sends @paths (NULL-terminated) in one operation */
static void
client_send_files (Client * c, const gchar * const *paths, Copy * cp)
{
  GFile *files[4] = { NULL, };
  gulong id;
  guint i;

  memset (cp, 0, sizeof (*cp));
  cp->file_errors = g_ptr_array_new_with_free_func (g_free);
  for (i = 0; paths[i] && i < G_N_ELEMENTS (files) - 1; i++)
    files[i] = g_file_new_for_path (paths[i]);
  id = g_signal_connect (c->main, "new-file-transfer",
      G_CALLBACK (copy_new_task), cp);
  spice_main_channel_file_copy_async (c->main, files, G_FILE_COPY_NONE, NULL,
      NULL, NULL, copy_done, cp);
  g_signal_handler_disconnect (c->main, id);
  for (i = 0; files[i]; i++)
    g_object_unref (files[i]);
}

static void
client_send_file (Client * c, const gchar * path, Copy * cp)
{
  const gchar *paths[] = { path, NULL };

  client_send_files (c, paths, cp);
}

static void
copy_clear (Copy * cp)
{
  g_clear_error (&cp->error);
  g_ptr_array_unref (cp->file_errors);
}

/* @c's copy ends, its one file with a message containing @error ("" it
 * arrived) */
static void
copy_wait (Copy * cp, const gchar * error)
{
  fail_unless (spin_until (copy_is_done, cp, 10000), "the copy never ended");
  fail_unless_equals_int (cp->finished, 1);
  if (!*error) {
    fail_unless (cp->error == NULL, "the copy failed: %s", cp->error ?
        cp->error->message : "");
    fail_unless_equals_string (cp->file_errors->pdata[0], "");
  } else {
    fail_unless (cp->error != NULL);
    fail_unless (strstr (cp->file_errors->pdata[0], error) != NULL,
        "the client's error is \"%s\", not \"%s\"",
        (gchar *) cp->file_errors->pdata[0], error);
  }
}

/* a file of @size random bytes in a directory of its own (not the spool);
 * g_free the path, test_tmpdir_remove its directory */
static gchar *
random_file (const gchar * name, gsize size, GBytes ** contents)
{
  gchar *dir = g_build_filename (g_getenv ("GST_SPICE_BUILD_DIR"), "tests",
      "agent-files-XXXXXX", NULL);
  gchar *path;
  guint8 *d = g_malloc (size + 1);
  gsize i;

  fail_unless (g_mkdtemp (dir) != NULL);
  path = g_build_filename (dir, name, NULL);
  for (i = 0; i < size; i++)
    d[i] = (guint8) g_random_int ();
  fail_unless (g_file_set_contents (path, (gchar *) d, size, NULL));
  *contents = g_bytes_new_take (d, size);
  g_free (dir);
  return path;
}

static void
random_file_remove (gchar * path, GBytes * contents)
{
  gchar *dir = g_path_get_dirname (path);

  g_unlink (path);
  g_rmdir (dir);
  g_free (dir);
  g_free (path);
  g_bytes_unref (contents);
}

/* the next upstream spice-file-xfer of @action; g_free out->path */
static void
wait_up_file (Guest * g, GstSpiceFileXferAction action,
    GstSpiceFileXfer * out)
{
  UpWait w = { g, (GstSpiceClipboardAction) action,
    GST_SPICE_EVENT_FILE_XFER
  };

  fail_unless (spin_until (up_seen, &w, 10000),
      "no upstream file transfer event (action %d)", action);
  *out = w.xfer;
}

static gboolean
up_has_file_xfer (Guest * g)
{
  gboolean found = FALSE;
  guint i;

  g_mutex_lock (&g->lock);
  for (i = 0; i < g->up->len; i++)
    found |= gst_event_has_name (g->up->pdata[i], GST_SPICE_EVENT_FILE_XFER);
  g_mutex_unlock (&g->lock);
  return found;
}

/* upstream (spicesrc) answers transfer @key */
static void
guest_answer_file (Guest * g, guint64 key, guint32 status, gint io_error)
{
  GstSpiceFileXferStatus st = { key, status, io_error, "the test's answer" };

  fail_unless (gst_pad_send_event (g->drawpad,
          gst_spice_event_new_file_xfer_status (&st)));
}

static gboolean
client_file_xfer_off (gpointer data)
{
  return spice_main_channel_agent_test_capability (((Client *) data)->main,
      VD_AGENT_CAP_FILE_XFER_DISABLED);
}

static gboolean
client_file_xfer_on (gpointer data)
{
  return !client_file_xfer_off (data);
}

static guint
mode_of (const gchar * path)
{
  GStatBuf st;

  fail_unless (g_stat (path, &st) == 0, "%s: %s", path, g_strerror (errno));
  return st.st_mode & 0777;
}

/* A client's file reaches upstream whole, in a private spool file named as
 * the client named it; the client's copy ends when the guest's answer
 * comes, and the spool is empty then. */
GST_START_TEST (test_file_to_guest)
{
  Guest *g = guest_new (NULL, FALSE);
  Client *c = client_new (g->f->port);
  GBytes *want, *got;
  gchar *path = random_file ("report 1.bin", 300000, &want);
  gchar *data, *base, *dir, *spool;
  GstSpiceFileXfer up;
  gsize n;
  Copy cp;

  fail_unless_equals_string (g_get_tmp_dir (), spool_dir);
  fail_unless (spice_main_channel_agent_test_capability (c->main,
          VD_AGENT_CAP_FILE_XFER_DETAILED_ERRORS));
  fail_if (spice_main_channel_agent_test_capability (c->main,
          VD_AGENT_CAP_FILE_XFER_DISABLED));
  client_send_file (c, path, &cp);
  wait_up_file (g, GST_SPICE_FILE_XFER_START, &up);
  fail_unless_equals_uint64 (up.size, 300000);
  base = g_path_get_basename (up.path);
  fail_unless_equals_string (base, "report 1.bin");
  fail_unless (g_str_has_prefix (up.path, spool_dir), "%s", up.path);
  fail_unless (g_file_get_contents (up.path, &data, &n, NULL));
  got = g_bytes_new_take (data, n);
  fail_unless (g_bytes_equal (got, want), "the spooled file differs");
  /* private: the transfer's directory and the spool's, the file */
  dir = g_path_get_dirname (up.path);
  spool = g_path_get_dirname (dir);
  fail_unless_equals_int (mode_of (dir), 0700);
  fail_unless_equals_int (mode_of (spool), 0700);
  fail_unless_equals_int (mode_of (up.path), 0600);
  /* the client waits for the guest */
  fail_if (cp.done);
  guest_answer_file (g, up.key, VD_AGENT_FILE_XFER_STATUS_SUCCESS, -1);
  copy_wait (&cp, "");
  fail_unless (spin_until (spool_empty, NULL, 10000), "the spool stays");
  copy_clear (&cp);
  g_bytes_unref (got);
  g_free (spool);
  g_free (dir);
  g_free (base);
  g_free ((gchar *) up.path);
  random_file_remove (path, want);
  client_free (c);
  guest_free (g);
}

GST_END_TEST;

/* the guest's refusals reach the client as spice-gtk shows them */
GST_START_TEST (test_file_guest_refuses)
{
  static const struct
  {
    guint32 status;
    gint io_error;
    const gchar *client_says;
  } answers[] = {
    {VD_AGENT_FILE_XFER_STATUS_NOT_ENOUGH_SPACE, -1, "lack of free space"},
    {VD_AGENT_FILE_XFER_STATUS_SESSION_LOCKED, -1, "session is locked"},
    {VD_AGENT_FILE_XFER_STATUS_CANCELLED, -1, "agent cancelled"},
    {VD_AGENT_FILE_XFER_STATUS_ERROR, G_IO_ERROR_INVALID_FILENAME,
        "Invalid filename"},
    {VD_AGENT_FILE_XFER_STATUS_ERROR, G_IO_ERROR_PERMISSION_DENIED,
        "reported an error"},
  };
  Guest *g = guest_new (NULL, FALSE);
  Client *c = client_new (g->f->port);
  GBytes *want;
  gchar *path = random_file ("x.txt", 5000, &want);
  GstSpiceFileXfer up;
  Copy cp;
  guint i;

  gst_debug_set_threshold_for_name ("spicesink*", GST_LEVEL_WARNING);
  gst_debug_add_log_function (log_func, NULL, NULL);
  for (i = 0; i < G_N_ELEMENTS (answers); i++) {
    client_send_file (c, path, &cp);
    wait_up_file (g, GST_SPICE_FILE_XFER_START, &up);
    guest_answer_file (g, up.key, answers[i].status, answers[i].io_error);
    copy_wait (&cp, answers[i].client_says);
    fail_unless (spin_until (spool_empty, NULL, 10000), "the spool stays");
    copy_clear (&cp);
    g_free ((gchar *) up.path);
  }
  fail_unless (warned (g, "the guest did not take it"));
  gst_debug_remove_log_function (log_func);
  random_file_remove (path, want);
  client_free (c);
  guest_free (g);
}

GST_END_TEST;

/* above max-file-transfer a file is refused before any data moves (the
 * client says why, with the limit); at the limit it goes; 0 turns file
 * transfer off, as does a guest agent that has it off */
GST_START_TEST (test_file_limits)
{
  static const guint off = VD_AGENT_CAP_FILE_XFER_DISABLED;
  Guest *g = guest_new ("max-file-transfer=1000", FALSE);
  Client *c = client_new (g->f->port);
  GBytes *w1, *w2;
  gchar *over = random_file ("over", 1001, &w1);
  gchar *at = random_file ("at", 1000, &w2);
  gchar *limit = g_format_size (1000), *size = g_format_size (1001);
  gchar *want = g_strdup_printf ("lack of free space on remote machine (%s "
      "free, %s to transfer)", limit, size);
  GstSpiceFileXfer up;
  Copy cp;

  gst_debug_set_threshold_for_name ("spicesink*", GST_LEVEL_WARNING);
  gst_debug_add_log_function (log_func, NULL, NULL);
  client_send_file (c, over, &cp);
  copy_wait (&cp, want);
  fail_unless (warned (g, "above max-file-transfer (1000)"));
  fail_if (up_has_file_xfer (g));
  fail_unless_equals_int (spool_entries (), 0);
  copy_clear (&cp);

  client_send_file (c, at, &cp);
  wait_up_file (g, GST_SPICE_FILE_XFER_START, &up);
  fail_unless_equals_uint64 (up.size, 1000);
  guest_answer_file (g, up.key, VD_AGENT_FILE_XFER_STATUS_SUCCESS, -1);
  copy_wait (&cp, "");
  copy_clear (&cp);
  g_free ((gchar *) up.path);

  /* off: the clients are told (spice-gtk then refuses at once), and on
   * again */
  g_object_set (g->f->sink, "max-file-transfer", G_GUINT64_CONSTANT (0),
      NULL);
  fail_unless (spin_until (client_file_xfer_off, c, 10000));
  client_send_file (c, at, &cp);
  copy_wait (&cp, "disabled");
  fail_if (up_has_file_xfer (g));
  copy_clear (&cp);
  g_object_set (g->f->sink, "max-file-transfer", G_GUINT64_CONSTANT (1000),
      NULL);
  fail_unless (spin_until (client_file_xfer_on, c, 10000));
  gst_debug_remove_log_function (log_func);
  client_free (c);
  guest_free (g);

  /* the guest's agent has it off */
  g = guest_new_caps (NULL, &off, 1);
  c = client_new (g->f->port);
  fail_unless (spice_main_channel_agent_test_capability (c->main,
          VD_AGENT_CAP_FILE_XFER_DISABLED));
  client_send_file (c, at, &cp);
  copy_wait (&cp, "disabled");
  fail_if (up_has_file_xfer (g));
  copy_clear (&cp);
  client_free (c);
  guest_free (g);
  random_file_remove (over, w1);
  random_file_remove (at, w2);
  g_free (limit);
  g_free (size);
  g_free (want);
}

GST_END_TEST;

/* a client that leaves while upstream copies its file: the copy is
 * cancelled upstream, the spool emptied; the guest's late answer is for
 * nobody */
GST_START_TEST (test_file_client_leaves)
{
  Guest *g = guest_new (NULL, FALSE);
  Client *c = client_new (g->f->port);
  GBytes *want;
  gchar *path = random_file ("leaving", 200000, &want);
  GstSpiceFileXfer up, cancel;
  Copy cp;

  client_send_file (c, path, &cp);
  wait_up_file (g, GST_SPICE_FILE_XFER_START, &up);
  client_free (c);
  wait_up_file (g, GST_SPICE_FILE_XFER_CANCEL, &cancel);
  fail_unless_equals_uint64 (cancel.key, up.key);
  fail_unless (spin_until (spool_empty, NULL, 10000), "the spool stays");
  fail_if (g_file_test (up.path, G_FILE_TEST_EXISTS));
  guest_answer_file (g, up.key, VD_AGENT_FILE_XFER_STATUS_SUCCESS, -1);
  /* the sink goes on: another client's file */
  c = client_new (g->f->port);
  copy_clear (&cp);
  client_send_file (c, path, &cp);
  g_free ((gchar *) up.path);
  wait_up_file (g, GST_SPICE_FILE_XFER_START, &up);
  guest_answer_file (g, up.key, VD_AGENT_FILE_XFER_STATUS_SUCCESS, -1);
  copy_wait (&cp, "");
  copy_clear (&cp);
  g_free ((gchar *) up.path);
  random_file_remove (path, want);
  client_free (c);
  guest_free (g);
}

GST_END_TEST;

/* the guest's agent leaves during a transfer: the client's copy fails
 * (spice-gtk drops it at AGENT_DISCONNECTED), the spool empties, the
 * service log says why */
GST_START_TEST (test_file_agent_gone)
{
  Guest *g = guest_new (NULL, FALSE);
  Client *c = client_new (g->f->port);
  GstSpiceAgentInfo gone = { FALSE, };
  GBytes *want;
  gchar *path = random_file ("orphan", 200000, &want);
  GstSpiceFileXfer up;
  Copy cp;

  gst_debug_set_threshold_for_name ("spicesink*", GST_LEVEL_WARNING);
  gst_debug_add_log_function (log_func, NULL, NULL);
  client_send_file (c, path, &cp);
  wait_up_file (g, GST_SPICE_FILE_XFER_START, &up);
  fail_unless (gst_pad_send_event (g->drawpad,
          gst_spice_event_new_agent (&gone)));
  copy_wait (&cp, "Agent connection closed");
  fail_unless (spin_until (spool_empty, NULL, 10000), "the spool stays");
  fail_unless (warned (g, "the guest's agent left"));
  /* its late answer is for nobody */
  guest_answer_file (g, up.key, VD_AGENT_FILE_XFER_STATUS_SUCCESS, -1);
  gst_debug_remove_log_function (log_func);
  copy_clear (&cp);
  g_free ((gchar *) up.path);
  random_file_remove (path, want);
  client_free (c);
  guest_free (g);
}

GST_END_TEST;

/* One file at a time per client: of two files in one operation (spice-gtk
 * starts both), the second is refused at once and the first goes on.
 * Two clients send at once: each gets its own transfer and answer. */
GST_START_TEST (test_file_one_at_a_time)
{
  Guest *g = guest_new (NULL, FALSE);
  Client *a = client_new (g->f->port), *b = client_new (g->f->port);
  GBytes *w1, *w2;
  gchar *f1 = random_file ("one", 100000, &w1);
  gchar *f2 = random_file ("two", 100000, &w2);
  const gchar *both[] = { f1, f2, NULL };
  GstSpiceFileXfer up, up_b;
  gchar *name;
  Copy cp, cp_b;

  gst_debug_set_threshold_for_name ("spicesink*", GST_LEVEL_WARNING);
  gst_debug_add_log_function (log_func, NULL, NULL);
  client_send_files (a, both, &cp);
  wait_up_file (g, GST_SPICE_FILE_XFER_START, &up);
  fail_unless (warned (g, "is still being sent"));
  /* and b's file meanwhile */
  client_send_file (b, f2, &cp_b);
  wait_up_file (g, GST_SPICE_FILE_XFER_START, &up_b);
  fail_if (up_b.key == up.key);
  fail_if (g_str_equal (up_b.path, up.path));
  guest_answer_file (g, up_b.key, VD_AGENT_FILE_XFER_STATUS_SUCCESS, -1);
  copy_wait (&cp_b, "");
  fail_if (cp.done);
  guest_answer_file (g, up.key, VD_AGENT_FILE_XFER_STATUS_SUCCESS, -1);
  fail_unless (spin_until (copy_is_done, &cp, 10000));
  fail_unless_equals_int (cp.finished, 2);
  /* one arrived, the other was refused */
  fail_unless ((*(gchar *) cp.file_errors->pdata[0] == 0) !=
      (*(gchar *) cp.file_errors->pdata[1] == 0));
  fail_if (up_has_file_xfer (g));
  name = g_path_get_basename (up.path);
  fail_unless (g_str_equal (name, "one") || g_str_equal (name, "two"));
  fail_unless (spin_until (spool_empty, NULL, 10000), "the spool stays");
  gst_debug_remove_log_function (log_func);
  g_free (name);
  copy_clear (&cp);
  copy_clear (&cp_b);
  g_free ((gchar *) up.path);
  g_free ((gchar *) up_b.path);
  random_file_remove (f1, w1);
  random_file_remove (f2, w2);
  client_free (a);
  client_free (b);
  guest_free (g);
}

GST_END_TEST;

/* VD_AGENT_FILE_XFER_START of file @id, @size bytes, as spice-gtk words it */
static void
raw_file_start (SpiceRawConn * c, guint32 id, guint64 size)
{
  gchar *text = g_strdup_printf ("[vdagent-file-xfer]\nname=raw\nsize=%"
      G_GUINT64_FORMAT "\n", size);
  gsize n = 4 + strlen (text) + 1;
  guint8 *body = g_malloc (n);
  GByteArray *a = g_byte_array_new ();

  GST_WRITE_UINT32_LE (body, id);
  memcpy (body + 4, text, n - 4);
  gst_spice_agent_write_message (a, VD_AGENT_FILE_XFER_START, body, n);
  raw_send_stream (c, a);
  g_byte_array_unref (a);
  g_free (body);
  g_free (text);
}

/* VD_AGENT_FILE_XFER_DATA of @n bytes that says it has @declared */
static void
raw_file_data (SpiceRawConn * c, guint32 id, gsize n, guint64 declared)
{
  guint8 *body = g_malloc0 (12 + n);
  GByteArray *a = g_byte_array_new ();

  GST_WRITE_UINT32_LE (body, id);
  GST_WRITE_UINT64_LE (body + 4, declared);
  gst_spice_agent_write_message (a, VD_AGENT_FILE_XFER_DATA, body, 12 + n);
  raw_send_stream (c, a);
  g_byte_array_unref (a);
  g_free (body);
}

static gboolean
warned_start (gpointer data)
{
  return warned (data, "file 10: its start (5000 bytes) has no name or size");
}

/* a client that sends more than it announced loses that file (a
 * protocol-violation) but keeps its session, as one whose start is too
 * large; malformed messages close it */
GST_START_TEST (test_file_hostile)
{
  Guest *g = guest_new (NULL, FALSE);
  Client *good = client_new (g->f->port);
  SpiceRawConn *c;
  GstSpiceFileXfer up;
  GByteArray *a;
  guint8 two[2] = { 1, 2 }, *big;

  gst_debug_set_threshold_for_name ("spicesink*", GST_LEVEL_WARNING);
  gst_debug_add_log_function (log_func, NULL, NULL);
  c = raw_agent (g);
  raw_file_start (c, 7, 10);
  raw_file_data (c, 7, 20, 20);
  fail_unless (spin_until ((GSourceFunc) spool_empty, NULL, 10000));
  /* its session stays: the next file goes through */
  raw_file_start (c, 8, 5);
  raw_file_data (c, 8, 5, 5);
  wait_up_file (g, GST_SPICE_FILE_XFER_START, &up);
  fail_unless_equals_uint64 (up.size, 5);
  fail_unless (warned (g, "data beyond the 10 bytes announced"));
  guest_answer_file (g, up.key, VD_AGENT_FILE_XFER_STATUS_SUCCESS, -1);
  g_free ((gchar *) up.path);
  fail_unless (spin_until (spool_empty, NULL, 10000));
  /* a start too large to be spice-gtk's key file is not parsed: refused,
   * the session stays */
  a = g_byte_array_new ();
  big = g_malloc0 (5000);
  GST_WRITE_UINT32_LE (big, 10);
  gst_spice_agent_write_message (a, VD_AGENT_FILE_XFER_START, big, 5000);
  raw_send_stream (c, a);
  g_byte_array_unref (a);
  g_free (big);
  fail_unless (spin_until (warned_start, g, 10000));
  /* data whose declared size is not what follows */
  raw_file_start (c, 9, 10);
  raw_file_data (c, 9, 4, 10);
  expect_closed (g, c, good, "malformed file transfer data");
  fail_unless (spin_until (spool_empty, NULL, 10000), "the spool stays");

  /* a start shorter than its id */
  c = raw_agent (g);
  a = g_byte_array_new ();
  gst_spice_agent_write_message (a, VD_AGENT_FILE_XFER_START, two, 2);
  raw_send_stream (c, a);
  g_byte_array_unref (a);
  expect_closed (g, c, good, "malformed file transfer");
  gst_debug_remove_log_function (log_func);
  client_free (good);
  guest_free (g);
}

GST_END_TEST;

static Suite *
agent_sink_suite (void)
{
  Suite *s = suite_create ("agent-sink");
  TCase *tc = tcase_create ("general");
  TCase *files = tcase_create ("files");
  const gchar *tmp = g_getenv ("TMPDIR");

  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_client_to_guest);
  tcase_add_test (tc, test_guest_to_client);
  tcase_add_test (tc, test_max_clipboard);
  tcase_add_test (tc, test_two_clients);
  tcase_add_test (tc, test_monitors_config);
  tcase_add_test (tc, test_hostile);
  tcase_add_test (tc, test_tokens_not_returned);
  tcase_add_test (tc, test_withholder_requests_clipboard);

  /* the sink's spool goes to $TMPDIR: a directory of this run's (GLib
   * reads it once, at the first g_get_tmp_dir ()) */
  spool_dir = g_build_filename (tmp && *tmp ? tmp : "/tmp",
      "agent-sink-spool-XXXXXX", NULL);
  g_assert (g_mkdtemp (spool_dir) != NULL);
  g_setenv ("TMPDIR", spool_dir, TRUE);
  suite_add_tcase (s, files);
  tcase_add_unchecked_fixture (files, NULL, spool_dir_remove);
  tcase_set_timeout (files, 120);
  tcase_add_test (files, test_file_to_guest);
  tcase_add_test (files, test_file_guest_refuses);
  tcase_add_test (files, test_file_limits);
  tcase_add_test (files, test_file_client_leaves);
  tcase_add_test (files, test_file_agent_gone);
  tcase_add_test (files, test_file_one_at_a_time);
  tcase_add_test (files, test_file_hostile);
  return s;
}

GST_CHECK_MAIN (agent_sink);
