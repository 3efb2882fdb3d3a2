/* tests/agent: spicesink's agent endpoint against spice-gtk clients (the
 * public clipboard and update_display API of spice-client-glib, in this
 * process) and a raw hostile client; the guest side is played by events
 * sent on the sink's draw pad and seen upstream of it.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <glib/gstdio.h>
#include "spicesink-test-util.h"

#include <spice-client.h>
#include "agent-spin.h"

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
      gst_event_has_name (ev, GST_SPICE_EVENT_MONITORS_CONFIG)) {
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

static Guest *
guest_new (const gchar * props, gboolean monitors)
{
  Guest *g = g_new0 (Guest, 1);
  GstSpiceAgentInfo info = { TRUE, {0,}, TRUE };
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
  if (monitors)
    VD_AGENT_SET_CAPABILITY (info.caps, VD_AGENT_CAP_MONITORS_CONFIG);
  fail_unless (gst_pad_send_event (g->drawpad,
          gst_spice_event_new_agent (&info)));
  the_guest = g;
  return g;
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
  GstSpiceMainInit init;

  fail_unless (c != NULL);
  fail_unless (spice_raw_link (c, 0, SPICE_CHANNEL_MAIN, 0x0d,
          1u << SPICE_MAIN_CAP_AGENT_CONNECTED_TOKENS, NULL, NULL));
  for (;;) {
    fail_unless (spice_raw_read_msg (c, 5000, &type, &body, &size));
    if (type == SPICE_MSG_MAIN_INIT)
      break;
    g_free (body);
  }
  fail_unless (gst_spice_wire_parse_main_init (body, size, &init));
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
  gst_spice_agent_write_clipboard (a, &clip, FALSE, FALSE, 0);
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
    gst_spice_agent_write_clipboard (a, &clip, FALSE, FALSE, 0);
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
    gst_spice_agent_write_clipboard (a, &req, FALSE, FALSE, 0);
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

static Suite *
agent_sink_suite (void)
{
  Suite *s = suite_create ("agent-sink");
  TCase *tc = tcase_create ("general");

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
  return s;
}

GST_CHECK_MAIN (agent_sink);
