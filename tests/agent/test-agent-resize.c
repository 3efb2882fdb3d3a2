/* tests/agent: the desktop follows the client's window. The test guest with
 * its agent (--agent: a vdagent char device on libspice-server) behind the
 * shipped transcode-vp8 pipeline (gst-spice-run); a spice-client-glib client
 * in this process asks for other sizes with the public update_display +
 * send_monitor_config API, as remote-viewer does when its window changes.
 * The guest's primary surface must become that size, and the client's own
 * display must then show the guest's exact picture at the new size.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <gst/check/gstcheck.h>
#include <spice-client.h>
#include <spice/vd_agent.h>
#include <string.h>

#include "guest-launcher.h"
#include "guest-render.h"
#include "ppm.h"
#include "runner-process.h"
#include "agent-spin.h"
#include "agent-log.h"

typedef struct
{
  SpiceSession *session;
  SpiceMainChannel *main;
  SpiceInputsChannel *inputs;
  gboolean agent;
  /* the primary surface spice-gtk keeps for the display channel */
  gint w, h, stride;
  const guint8 *pixels;
  guint creates;
} Client;

/* default context (spice-gtk's) */
static void
on_agent (GObject * o, GParamSpec * p, Client * c)
{
  g_object_get (o, "agent-connected", &c->agent, NULL);
}

static void
on_primary_create (SpiceChannel * ch, gint format, gint w, gint h,
    gint stride, gint shmid, gpointer imgdata, Client * c)
{
  c->w = w;
  c->h = h;
  c->stride = stride;
  c->pixels = imgdata;
  c->creates++;
  LOG ("client: primary %dx%d (format %d)", w, h, format);
}

static void
on_primary_destroy (SpiceChannel * ch, Client * c)
{
  c->pixels = NULL;
}

static void
on_channel_new (SpiceSession * s, SpiceChannel * ch, Client * c)
{
  if (SPICE_IS_MAIN_CHANNEL (ch)) {
    c->main = SPICE_MAIN_CHANNEL (ch);
    g_signal_connect (ch, "notify::agent-connected", G_CALLBACK (on_agent),
        c);
  } else if (SPICE_IS_DISPLAY_CHANNEL (ch)) {
    g_signal_connect (ch, "display-primary-create",
        G_CALLBACK (on_primary_create), c);
    g_signal_connect (ch, "display-primary-destroy",
        G_CALLBACK (on_primary_destroy), c);
    spice_channel_connect (ch);
  } else if (SPICE_IS_INPUTS_CHANNEL (ch)) {
    c->inputs = SPICE_INPUTS_CHANNEL (ch);
    spice_channel_connect (ch);
  }
}

static gboolean
client_ready (gpointer data)
{
  Client *c = data;

  return c->agent && c->main && c->pixels && c->inputs &&
      spice_main_channel_agent_test_capability (c->main,
      VD_AGENT_CAP_MONITORS_CONFIG);
}

typedef struct
{
  Client *c;
  gint w, h;
  guint8 *expected;
  guint64 diff;
  gint fx, fy;
  gint64 next_log;
} Shows;

/* the client shows @w x @h, and exactly the expected picture */
static gboolean
client_shows (gpointer data)
{
  Shows *s = data;
  Client *c = s->c;
  gint64 now = g_get_monotonic_time ();

  if (!c->pixels || c->w != s->w || c->h != s->h) {
    s->diff = G_MAXUINT64;
    return FALSE;
  }
  s->diff = test_bgrx_count_diff (c->pixels, c->stride, s->expected,
      s->w * 4, s->w, s->h, &s->fx, &s->fy);
  if (s->diff && now > s->next_log) {
    LOG ("client at %dx%d: %" G_GUINT64_FORMAT " pixels differ (first "
        "%d,%d)", c->w, c->h, s->diff, s->fx, s->fy);
    s->next_log = now + G_USEC_PER_SEC;
  }
  return s->diff == 0;
}

static void
assert_client_shows (Client * c, gint w, gint h)
{
  Shows s = { c, w, h, NULL, G_MAXUINT64, -1, -1, 0 };

  s.expected = guest_render_frame_new (w, h, 1, 0, GUEST_ACTIVITY_IDLE,
      GUEST_FRAME_NONE);
  fail_unless (spin_until (client_shows, &s, 60000),
      "the client shows %dx%d, not the guest's %dx%d picture (%"
      G_GUINT64_FORMAT " pixels differ, first at %d,%d)", c->w, c->h, w, h,
      s.diff, s.fx, s.fy);
  g_free (s.expected);
}

/* the client's window becomes @w x @h: monitor 0 only */
static void
client_resize (Client * c, gint w, gint h)
{
  spice_main_channel_update_display_enabled (c->main, 0, TRUE, FALSE);
  spice_main_channel_update_display (c->main, 0, 0, 0, w, h, FALSE);
  fail_unless (spice_main_channel_send_monitor_config (c->main));
}

GST_START_TEST (test_desktop_follows_window)
{
  const gchar *guest_args[] = { "--agent", "--activity", "idle", NULL };
  gchar *tmpdir = test_tmpdir_new ("gst-spice-agent-resize");
  GError *err = NULL;
  GuestProcess *gp = guest_process_start (guest_args, &err);
  gchar *path = runner_process_shipped_pipeline ("transcode-vp8");
  gchar *uri, *upstream, *listen, *ps, *line;
  guint port = test_pick_free_port ();
  RunnerProcess *run;
  Client c = { 0, };
  guint mark;
  static const gint sizes[][2] = { {1000, 640}, {800, 600}, {1366, 768} };
  guint i, j;

  t0 = g_get_monotonic_time ();
  fail_unless (gp != NULL, "%s", err ? err->message : "");
  fail_unless (guest_process_find_line (gp, 0, "agent attached", NULL) !=
      NULL);
  uri = guest_process_get_uri (gp);
  upstream = g_strdup_printf ("UPSTREAM=%s", uri);
  listen = g_strdup_printf ("LISTEN_PORT=%u", port);
  run = runner_process_start_runner (tmpdir, "--stats-interval", "0",
      "-D", upstream, "-D", listen, path, NULL);
  fail_unless (runner_process_wait_log (run, "playing", 1, 60000),
      "transcode-vp8 did not start");

  c.session = spice_session_new ();
  ps = g_strdup_printf ("%u", port);
  /* no sound: spice-gtk's audio pipelines would outlive the session */
  g_object_set (c.session, "host", "127.0.0.1", "port", ps,
      "enable-audio", FALSE, NULL);
  g_signal_connect (c.session, "channel-new", G_CALLBACK (on_channel_new),
      &c);
  fail_unless (spice_session_connect (c.session));
  fail_unless (spin_until (client_ready, &c, 60000),
      "the client never saw the guest's agent (agent %d) or a display",
      c.agent);
  assert_client_shows (&c, GUEST_DEFAULT_WIDTH, GUEST_DEFAULT_HEIGHT);

  for (i = 0; i < G_N_ELEMENTS (sizes); i++) {
    gint w = sizes[i][0], h = sizes[i][1];
    gchar *want = g_strdup_printf ("resized %d %d", w, h);

    mark = guest_process_mark (gp);
    client_resize (&c, w, h);
    /* the guest's surface follows (spicesrc debounces 200 ms) */
    line = guest_process_wait_line_from (gp, mark, want,
        GUEST_LINE_TIMEOUT_MS, NULL);
    fail_unless (line != NULL, "the guest never became %dx%d", w, h);
    g_free (line);
    line = guest_process_find_line (gp, mark, "agent monitors", NULL);
    fail_unless (line != NULL);
    LOG ("guest: %s", line);
    g_free (line);
    /* one config, one resize: no other size on the way */
    fail_unless_equals_int (guest_process_count_lines (gp, mark, "resized "),
        1);
    assert_client_shows (&c, w, h);
    LOG ("client shows the exact %dx%d picture", w, h);
    /* and the pointer (client mode) lands where the client puts it, up to
     * the new bottom-right corner */
    for (j = 0; j < 2; j++) {
      gint x = j ? w - 1 : w / 3, y = j ? h - 1 : h / 5;
      gchar *pos = g_strdup_printf ("mouse position %d %d ", x, y);

      gint64 end = g_get_monotonic_time () + 20 * G_USEC_PER_SEC;

      mark = guest_process_mark (gp);
      spice_inputs_channel_position (c.inputs, x, y, 0, 0);
      while (!(line = guest_process_find_line (gp, mark, pos, NULL)) &&
          g_get_monotonic_time () < end) {
        g_main_context_iteration (NULL, FALSE);
        g_usleep (10 * 1000);
      }
      fail_unless (line != NULL, "the guest never saw the pointer at %d,%d",
          x, y);
      LOG ("guest: %s", line);
      g_free (line);
      g_free (pos);
    }
    g_free (want);
  }

  fail_unless (runner_process_is_running (run));
  LOG ("done");
  spice_session_disconnect (c.session);
  g_object_unref (c.session);
  runner_process_free (run);
  guest_process_stop (gp);
  g_free (ps);
  g_free (listen);
  g_free (upstream);
  g_free (uri);
  g_free (path);
  test_tmpdir_remove (tmpdir);
}

GST_END_TEST;

static Suite *
agent_resize_suite (void)
{
  Suite *s = suite_create ("agent-resize");
  TCase *tc = tcase_create ("resize");

  tcase_set_timeout (tc, 240);
  tcase_add_test (tc, test_desktop_follows_window);
  suite_add_tcase (s, tc);
  return s;
}

GST_CHECK_MAIN (agent_resize);
