/* gst-spice tests: a spice-client-glib client that watches every display
 * channel's surface and monitors (heads-client.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "heads-client.h"

#include <spice-client.h>
#include <spice/vd_agent.h>
#include <string.h>

typedef struct
{
  SpiceDisplayChannel *channel;
  const guint8 *surface;
  gint w, h, stride;
} HeadsDisplay;

struct _HeadsClient
{
  SpiceSession *session;
  SpiceMainChannel *main;
  SpiceInputsChannel *inputs;
  gboolean inputs_open;
  HeadsDisplay displays[HEADS_CLIENT_MAX_DISPLAYS];
  gint64 last_change_us;
};

static void
touch (HeadsClient * c)
{
  c->last_change_us = g_get_monotonic_time ();
}

static HeadsDisplay *
display_of (HeadsClient * c, SpiceChannel * ch)
{
  gint id = -1;

  g_object_get (ch, "channel-id", &id, NULL);
  if (id < 0 || id >= HEADS_CLIENT_MAX_DISPLAYS)
    return NULL;
  return &c->displays[id];
}

static void
on_primary_create (SpiceChannel * ch, gint format, gint width, gint height,
    gint stride, gint shmid, gpointer imgdata, HeadsClient * c)
{
  HeadsDisplay *d = display_of (c, ch);

  if (!d)
    return;
  d->surface = imgdata;
  d->w = width;
  d->h = height;
  d->stride = stride;
  touch (c);
}

static void
on_primary_destroy (SpiceChannel * ch, HeadsClient * c)
{
  HeadsDisplay *d = display_of (c, ch);

  if (!d)
    return;
  d->surface = NULL;
  d->w = d->h = 0;
  touch (c);
}

static void
on_changed (GObject * obj, GParamSpec * pspec, HeadsClient * c)
{
  touch (c);
}

static void
on_invalidate (SpiceChannel * ch, gint x, gint y, gint w, gint h,
    HeadsClient * c)
{
  touch (c);
}

static void
on_channel_event (SpiceChannel * ch, SpiceChannelEvent ev, HeadsClient * c)
{
  if (SPICE_IS_INPUTS_CHANNEL (ch))
    c->inputs_open = ev == SPICE_CHANNEL_OPENED;
}

static void
on_channel_new (SpiceSession * s, SpiceChannel * ch, HeadsClient * c)
{
  g_signal_connect (ch, "channel-event", G_CALLBACK (on_channel_event), c);
  if (SPICE_IS_MAIN_CHANNEL (ch)) {
    c->main = SPICE_MAIN_CHANNEL (ch);
    g_signal_connect (ch, "notify::mouse-mode", G_CALLBACK (on_changed), c);
    return;
  }
  if (SPICE_IS_INPUTS_CHANNEL (ch))
    c->inputs = SPICE_INPUTS_CHANNEL (ch);
  if (SPICE_IS_DISPLAY_CHANNEL (ch)) {
    HeadsDisplay *d = display_of (c, ch);
    if (!d)
      return;
    d->channel = SPICE_DISPLAY_CHANNEL (ch);
    g_signal_connect (ch, "display-primary-create",
        G_CALLBACK (on_primary_create), c);
    g_signal_connect (ch, "display-primary-destroy",
        G_CALLBACK (on_primary_destroy), c);
    g_signal_connect (ch, "display-invalidate", G_CALLBACK (on_invalidate),
        c);
    g_signal_connect (ch, "notify::monitors", G_CALLBACK (on_changed), c);
    g_signal_connect (ch, "notify::monitors-max", G_CALLBACK (on_changed), c);
  }
  if (SPICE_IS_INPUTS_CHANNEL (ch) || SPICE_IS_CURSOR_CHANNEL (ch) ||
      SPICE_IS_DISPLAY_CHANNEL (ch))
    spice_channel_connect (ch);
  touch (c);
}

HeadsClient *
heads_client_connect (const gchar * host, guint port)
{
  HeadsClient *c = g_new0 (HeadsClient, 1);
  gchar *p = g_strdup_printf ("%u", port);

  c->session = spice_session_new ();
  g_object_set (c->session, "host", host, "port", p, NULL);
  g_free (p);
  g_signal_connect (c->session, "channel-new", G_CALLBACK (on_channel_new), c);
  spice_session_connect (c->session);
  touch (c);
  return c;
}

void
heads_client_free (HeadsClient * c)
{
  if (!c)
    return;
  g_signal_handlers_disconnect_by_data (c->session, c);
  spice_session_disconnect (c->session);
  heads_client_pump (200);
  g_object_unref (c->session);
  g_free (c);
}

static gboolean
wake (gpointer unused)
{
  return G_SOURCE_CONTINUE;
}

void
heads_client_pump (guint ms)
{
  gint64 end = g_get_monotonic_time () + (gint64) ms * 1000;
  guint id = g_timeout_add (10, wake, NULL);

  while (g_get_monotonic_time () < end)
    g_main_context_iteration (NULL, TRUE);
  g_source_remove (id);
}

gchar *
heads_client_describe (HeadsClient * c)
{
  GString *s = g_string_new (NULL);
  guint i, j;

  for (i = 0; i < HEADS_CLIENT_MAX_DISPLAYS; i++) {
    HeadsDisplay *d = &c->displays[i];
    GArray *monitors = NULL;
    guint max = 0;

    if (!d->channel || !d->surface)
      continue;
    g_object_get (d->channel, "monitors", &monitors, "monitors-max", &max,
        NULL);
    g_string_append_printf (s, "%sdisplay %u %dx%d monitors %u max %u:",
        s->len ? "; " : "", i, d->w, d->h, monitors ? monitors->len : 0, max);
    for (j = 0; monitors && j < monitors->len; j++) {
      SpiceDisplayMonitorConfig *m =
          &g_array_index (monitors, SpiceDisplayMonitorConfig, j);
      g_string_append_printf (s, " %u@%u,%u %ux%u", m->id, m->x, m->y,
          m->width, m->height);
    }
    if (monitors)
      g_array_unref (monitors);
  }
  return g_string_free (s, FALSE);
}

gchar *
heads_client_wait_describe (HeadsClient * c, const gchar * expected,
    guint timeout_ms)
{
  gint64 end = g_get_monotonic_time () + (gint64) timeout_ms * 1000;
  gchar *got = heads_client_describe (c);

  while (g_strcmp0 (got, expected) != 0 && g_get_monotonic_time () < end) {
    heads_client_pump (50);
    g_free (got);
    got = heads_client_describe (c);
  }
  return got;
}

gboolean
heads_client_wait_displays (HeadsClient * c, guint n, guint settle_ms,
    guint timeout_ms)
{
  gint64 end = g_get_monotonic_time () + (gint64) timeout_ms * 1000;

  while (g_get_monotonic_time () < end) {
    guint i, have = 0;

    heads_client_pump (50);
    for (i = 0; i < HEADS_CLIENT_MAX_DISPLAYS; i++)
      if (c->displays[i].channel && c->displays[i].surface)
        have++;
    if (have >= n && g_get_monotonic_time () - c->last_change_us >
        (gint64) settle_ms * 1000)
      return TRUE;
  }
  return FALSE;
}

guint
heads_client_n_display_channels (HeadsClient * c)
{
  guint i, n = 0;

  for (i = 0; i < HEADS_CLIENT_MAX_DISPLAYS; i++)
    n += c->displays[i].channel != NULL;
  return n;
}

const guint8 *
heads_client_surface (HeadsClient * c, guint id, gint * w, gint * h,
    gint * stride)
{
  HeadsDisplay *d;

  if (id >= HEADS_CLIENT_MAX_DISPLAYS)
    return NULL;
  d = &c->displays[id];
  *w = d->w;
  *h = d->h;
  *stride = d->stride;
  return d->surface;
}

static guint64
count_diff (HeadsClient * c, guint id, gint x, gint y, const guint8 * expected,
    gint w, gint h)
{
  HeadsDisplay *d = &c->displays[id];
  guint64 n = 0;
  gint i, j;

  if (!d->surface || x < 0 || y < 0 || x + w > d->w || y + h > d->h)
    return G_MAXUINT64;
  for (j = 0; j < h; j++) {
    const guint8 *a = d->surface + (gsize) (y + j) * d->stride + x * 4;
    const guint8 *b = expected + (gsize) j * w * 4;
    for (i = 0; i < w; i++)
      n += memcmp (a + i * 4, b + i * 4, 3) != 0;
  }
  return n;
}

guint64
heads_client_wait_picture (HeadsClient * c, guint id, gint x, gint y,
    const guint8 * expected, gint w, gint h, guint timeout_ms)
{
  gint64 end = g_get_monotonic_time () + (gint64) timeout_ms * 1000;
  guint64 n;

  if (id >= HEADS_CLIENT_MAX_DISPLAYS)
    return G_MAXUINT64;
  while ((n = count_diff (c, id, x, y, expected, w, h)) != 0 &&
      g_get_monotonic_time () < end)
    heads_client_pump (50);
  return n;
}

gboolean
heads_client_inputs_ready (HeadsClient * c)
{
  gint mode = 0;

  if (!c->main || !c->inputs || !c->inputs_open)
    return FALSE;
  g_object_get (c->main, "mouse-mode", &mode, NULL);
  return mode == SPICE_MOUSE_MODE_CLIENT;
}

void
heads_client_position (HeadsClient * c, guint display, gint x, gint y,
    guint buttons)
{
  spice_inputs_channel_position (c->inputs, x, y, display, buttons);
}

gboolean
heads_client_agent_ready (HeadsClient * c)
{
  gboolean agent = FALSE;

  if (!c->main)
    return FALSE;
  g_object_get (c->main, "agent-connected", &agent, NULL);
  return agent && spice_main_channel_agent_test_capability (c->main,
      VD_AGENT_CAP_MONITORS_CONFIG);
}

gboolean
heads_client_send_monitors (HeadsClient * c, guint n, const gint (*rects)[4])
{
  guint i;

  for (i = 0; i < n; i++) {
    gboolean on = rects[i][2] > 0 && rects[i][3] > 0;

    spice_main_channel_update_display_enabled (c->main, i, on, FALSE);
    if (on)
      spice_main_channel_update_display (c->main, i, rects[i][0],
          rects[i][1], rects[i][2], rects[i][3], FALSE);
  }
  return spice_main_channel_send_monitor_config (c->main);
}
