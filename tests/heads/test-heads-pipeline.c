/* tests/heads: several heads through the shipped transcode-vp8 pipeline
 * (gst-spice-run) from the test guest (issue 29). A spice-client-glib client
 * through the pipeline sees the heads it sees straight from the guest, each
 * head's picture exact, and so does a client that joins later.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <gst/check/gstcheck.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include "guest-launcher.h"
#include "guest-render.h"
#include "heads-client.h"
#include "runner-process.h"

#define HEAD_W 640
#define HEAD_H 480
#define WAIT_MS (60000 * test_time_factor ())

typedef struct
{
  GuestProcess *gp;
  gchar *tmpdir;
  RunnerProcess *run;
  guint port;
} Gateway;

/* the test's gateway, for assert_picture()'s report of a failure */
static Gateway *current;

/* transcode-vp8 in front of @uri */
static void
gateway_start_uri (Gateway * g, const gchar * uri)
{
  gchar *path, *upstream, *listen;

  g->tmpdir = test_tmpdir_new ("gst-spice-heads");
  /* the service log tells the surfaces, heads and refreshes, for
   * report_picture_failure() */
  g_setenv ("GST_DEBUG", "spicesrc*:5,spicetiler*:5,spicesink*:5", FALSE);
  path = runner_process_shipped_pipeline ("transcode-vp8");
  upstream = g_strdup_printf ("UPSTREAM=%s", uri);
  g->port = test_pick_free_port ();
  listen = g_strdup_printf ("LISTEN_PORT=%u", g->port);
  g->run = runner_process_start_runner (g->tmpdir, "--stats-interval", "0",
      "-D", upstream, "-D", listen, path, NULL);
  fail_unless (runner_process_wait_log (g->run, "playing", 1, WAIT_MS),
      "transcode-vp8 did not start");
  g_free (path);
  g_free (upstream);
  g_free (listen);
}

/* the guest with @args (NULL-terminated), what a client sees straight from
 * it (*@direct), then transcode-vp8 in front of it */
static void
gateway_start (Gateway * g, const gchar * const *args, guint displays,
    gchar ** direct)
{
  GError *err = NULL;
  HeadsClient *c;
  gchar *uri;

  g->gp = guest_process_start (args, &err);
  fail_unless (g->gp != NULL, "%s", err ? err->message : "");
  c = heads_client_connect ("127.0.0.1", guest_process_get_port (g->gp));
  fail_unless (heads_client_wait_displays (c, displays, 300, WAIT_MS));
  *direct = heads_client_describe (c);
  GST_INFO ("straight from the guest: %s", *direct);
  heads_client_free (c);
  uri = guest_process_get_uri (g->gp);
  gateway_start_uri (g, uri);
  g_free (uri);
  current = g;
}

static void
gateway_stop (Gateway * g)
{
  current = NULL;
  fail_unless (runner_process_is_running (g->run));
  runner_process_free (g->run);
  if (g->gp)
    guest_process_stop (g->gp);
  test_tmpdir_remove (g->tmpdir);
}

/* the pixels of @c's display 0 in (@x, 0, @w x @h) that are black */
static guint64
count_black (HeadsClient * c, gint x, gint w, gint h)
{
  gint sw, sh, stride, i, j;
  const guint8 *s = heads_client_surface (c, 0, &sw, &sh, &stride);
  guint64 n = 0;

  if (!s || x + w > sw || h > sh)
    return G_MAXUINT64;
  for (j = 0; j < h; j++)
    for (i = 0; i < w; i++) {
      const guint8 *p = s + (gsize) j * stride + (gsize) (x + i) * 4;

      n += p[0] == 0 && p[1] == 0 && p[2] == 0;
    }
  return n;
}

/* what a new client of @port sees at (@x, 0) after up to 10 s: its heads
 * and the pixels that differ from @expected */
static gchar *
fresh_client_view (guint port, gint x, const guint8 * expected, gint w,
    gint h)
{
  HeadsClient *c = heads_client_connect ("127.0.0.1", port);
  gchar *describe, *view;
  guint64 diff;

  heads_client_wait_displays (c, 1, 300, 10000);
  diff = heads_client_wait_picture (c, 0, x, 0, expected, w, h, 10000);
  describe = heads_client_describe (c);
  view = g_strdup_printf ("\"%s\", %" G_GUINT64_FORMAT " pixels differ",
      describe, diff);
  g_free (describe);
  heads_client_free (c);
  return view;
}

/* a picture that did not come: where it went wrong (a new client of the
 * gateway, one straight to the guest, the service log's end), on stderr */
static void
report_picture_failure (HeadsClient * c, gint x, const guint8 * expected,
    gint w, gint h, const gchar * what)
{
  gchar *describe = heads_client_describe (c), *via, *direct, *log;
  gsize len;

  g_printerr ("%s: the client sees \"%s\", %" G_GUINT64_FORMAT
      " of the pixels black\n", what, describe, count_black (c, x, w, h));
  g_free (describe);
  if (!current)
    return;
  via = fresh_client_view (current->port, x, expected, w, h);
  direct = fresh_client_view (guest_process_get_port (current->gp), x,
      expected, w, h);
  g_printerr ("%s: a new client of the gateway sees %s; straight from the "
      "guest, %s\n", what, via, direct);
  log = runner_process_log (current->run);
  len = log ? strlen (log) : 0;
  g_printerr ("%s: the service log's end:\n%s\n", what,
      len > 20000 ? log + len - 20000 : (log ? log : ""));
  g_free (via);
  g_free (direct);
  g_free (log);
}

/* @c shows, on its display 0, @expected (@w x @h) at (@x, 0) */
static void
assert_picture (HeadsClient * c, gint x, const guint8 * expected, gint w,
    gint h, const gchar * what)
{
  guint64 diff = heads_client_wait_picture (c, 0, x, 0, expected, w, h,
      WAIT_MS);

  if (diff != 0)
    report_picture_failure (c, x, expected, w, h, what);
  fail_unless (diff == 0, "%s: %" G_GUINT64_FORMAT " pixels differ", what,
      diff);
}

static void
expect_heads (HeadsClient * c, const gchar * want, const gchar * who)
{
  gchar *got = heads_client_wait_describe (c, want, WAIT_MS);

  fail_unless (g_strcmp0 (got, want) == 0, "%s sees \"%s\", not \"%s\"",
      who, got, want);
  g_free (got);
}

/* a client of the gateway that sees @want */
static HeadsClient *
connect_expecting (Gateway * g, const gchar * want, const gchar * who)
{
  HeadsClient *c = heads_client_connect ("127.0.0.1", g->port);

  expect_heads (c, want, who);
  return c;
}

/* the guest's @n-th key press, drawn */
static void
press_key (Gateway * g, guint n)
{
  gchar *want = g_strdup_printf ("box %u", n);
  gchar *line;

  guest_process_command (g->gp, "key");
  line = guest_process_wait_line (g->gp, want, GUEST_LINE_TIMEOUT_MS);
  fail_unless (line != NULL, "the guest never printed \"%s\"", want);
  g_free (line);
  g_free (want);
}

typedef void (*CheckPicture) (HeadsClient * c, guint presses,
    const gchar * what);

/* a first client sees the heads @want and @check's picture, also after a
 * key press (on every head: damage at each head's place); a late joiner
 * (*@b) sees the same while the first (*@a) stays */
static void
two_clients (Gateway * g, const gchar * want, CheckPicture check,
    HeadsClient ** a, HeadsClient ** b)
{
  *a = connect_expecting (g, want, "first client");
  check (*a, 0, "first client");
  press_key (g, 1);
  check (*a, 1, "first client after a key");
  *b = connect_expecting (g, want, "late joiner");
  check (*b, 1, "late joiner");
  expect_heads (*a, want, "first client");
}

/* --heads 2: one surface, two monitors */
static void
check_heads_picture (HeadsClient * c, guint presses, const gchar * what)
{
  guint8 *expected = g_malloc ((gsize) 2 * HEAD_W * HEAD_H * 4);

  guest_render_heads_frame (expected, HEAD_W, HEAD_H, 2 * HEAD_W * 4, 2, 1,
      presses, GUEST_ACTIVITY_IDLE, GUEST_FRAME_NONE, FALSE);
  assert_picture (c, 0, expected, 2 * HEAD_W, HEAD_H, what);
  g_free (expected);
}

GST_START_TEST (test_heads_through_pipeline)
{
  const gchar *args[] = { "--heads=2", "--width=640", "--height=480",
    "--fps=0", NULL
  };
  Gateway g = { 0, };
  HeadsClient *a, *b;
  gchar *direct, *line;

  gateway_start (&g, args, 1, &direct);
  fail_unless_equals_string (direct, "display 0 1280x480 monitors 2 max 2: "
      "0@0,0 640x480 1@640,0 640x480");

  two_clients (&g, direct, check_heads_picture, &a, &b);

  /* the heads change size: both clients follow */
  guest_process_command (g.gp, "resize 320 240");
  line = guest_process_wait_line (g.gp, "resized", GUEST_LINE_TIMEOUT_MS);
  fail_unless (line != NULL);
  g_free (line);
  expect_heads (a, "display 0 640x240 monitors 2 max 2: 0@0,0 320x240 "
      "1@320,0 320x240", "first client");
  expect_heads (b, "display 0 640x240 monitors 2 max 2: 0@0,0 320x240 "
      "1@320,0 320x240", "late joiner");

  heads_client_free (b);
  heads_client_free (a);
  gateway_stop (&g);
  g_free (direct);
}

GST_END_TEST;

/* --displays 2: two display channels, composed side by side */
static void
check_displays_picture (HeadsClient * c, guint presses, const gchar * what)
{
  guint8 *expected = g_malloc ((gsize) HEAD_W * HEAD_H * 4);
  guint i;

  for (i = 0; i < 2; i++) {
    gchar *w = g_strdup_printf ("%s, head %u", what, i);

    guest_render_display_frame (expected, HEAD_W, HEAD_H, HEAD_W * 4, i, 2,
        1, presses, GUEST_ACTIVITY_IDLE, GUEST_FRAME_NONE, FALSE);
    assert_picture (c, i * HEAD_W, expected, HEAD_W, HEAD_H, w);
    g_free (w);
  }
  g_free (expected);
}

#define COMPOSED "display 0 1280x480 monitors 2 max 2: " \
  "0@0,0 640x480 1@640,0 640x480"
#define ONE_DISPLAY "display 0 640x480 monitors 1 max 2: 0@0,0 640x480"

GST_START_TEST (test_displays_through_pipeline)
{
  const gchar *args[] = { "--displays=2", "--width=640", "--height=480",
    "--fps=0", NULL
  };
  Gateway g = { 0, };
  HeadsClient *a, *b;
  gchar *direct;

  gateway_start (&g, args, 2, &direct);
  fail_unless_equals_string (direct, "display 0 640x480 monitors 1 max 1: "
      "0@0,0 640x480; display 1 640x480 monitors 1 max 1: 0@0,0 640x480");

  /* the same two heads, as one surface with two monitors */
  two_clients (&g, COMPOSED, check_displays_picture, &a, &b);

  heads_client_free (b);
  heads_client_free (a);
  gateway_stop (&g);
  g_free (direct);
}

GST_END_TEST;

/* waits until the client shows the gateway's surface (a pointer has no
 * place before: the sink clamps it to a surface) and is in client mouse
 * mode with its inputs open */
static void
wait_inputs (HeadsClient * c)
{
  gint64 end = g_get_monotonic_time () + (gint64) WAIT_MS * 1000;

  fail_unless (heads_client_wait_displays (c, 1, 100, WAIT_MS));

  while (!heads_client_inputs_ready (c) && g_get_monotonic_time () < end)
    heads_client_pump (50);
  fail_unless (heads_client_inputs_ready (c), "no client mouse mode");
}

/* a position the client sends with display id @disp (its monitor: 0 with
 * surface positions, as a one-window client does, or a monitor's id with
 * the position inside that monitor, as remote-viewer's window of that
 * monitor does) lands as @want in the guest's log */
static void
assert_lands (Gateway * g, HeadsClient * c, guint disp, gint x, gint y,
    const gchar * want)
{
  guint mark = guest_process_mark (g->gp);
  gint64 end = g_get_monotonic_time () + (gint64) WAIT_MS * 1000;
  gchar *line = NULL;

  /* the gateway's upstream inputs channel may still be linking: spicesrc
   * sends the position once it is open */
  heads_client_position (c, disp, x, y, 0);
  while (!(line = guest_process_find_line (g->gp, mark, want, NULL)) &&
      g_get_monotonic_time () < end)
    heads_client_pump (20);
  if (!line) {
    gchar *log = runner_process_log (g->run);
    g_printerr ("%s\n", log);
    g_free (log);
  }
  fail_unless (line != NULL, "(%d,%d) never reached the guest as \"%s\"",
      x, y, want);
  g_free (line);
}

GST_START_TEST (test_input_per_head)
{
  const gchar *heads_args[] = { "--heads=2", "--width=640", "--height=480",
    "--fps=0", NULL
  };
  const gchar *displays_args[] = { "--displays=2", "--width=640",
    "--height=480", "--fps=0", "--agent-mouse", NULL
  };
  Gateway g = { 0, };
  HeadsClient *c;
  gchar *direct;

  /* one surface: the tablet gets surface positions, head 1 from x 640 on */
  gateway_start (&g, heads_args, 1, &direct);
  c = heads_client_connect ("127.0.0.1", g.port);
  wait_inputs (c);
  assert_lands (&g, c, 0, 100, 50, "mouse position 100 50 ");
  assert_lands (&g, c, 0, 640 + 100, 60, "mouse position 740 60 ");
  assert_lands (&g, c, 0, 1279, 479, "mouse position 1279 479 ");
  /* remote-viewer's window of monitor 1: inside the monitor */
  assert_lands (&g, c, 1, 20, 30, "mouse position 660 30 ");
  assert_lands (&g, c, 1, 639, 479, "mouse position 1279 479 ");
  assert_lands (&g, c, 0, 5, 6, "mouse position 5 6 ");
  heads_client_free (c);
  gateway_stop (&g);
  g_free (direct);

  /* one display channel per head: the agent mouse logs the display */
  memset (&g, 0, sizeof (g));
  gateway_start (&g, displays_args, 2, &direct);
  c = heads_client_connect ("127.0.0.1", g.port);
  wait_inputs (c);
  assert_lands (&g, c, 0, 100, 50,
      "agent mouse 100 50 buttons=0 display=0");
  assert_lands (&g, c, 0, 640 + 100, 60,
      "agent mouse 100 60 buttons=0 display=1");
  assert_lands (&g, c, 0, 1279, 479,
      "agent mouse 639 479 buttons=0 display=1");
  assert_lands (&g, c, 0, 639, 10, "agent mouse 639 10 buttons=0 display=0");
  assert_lands (&g, c, 1, 30, 40, "agent mouse 30 40 buttons=0 display=1");
  heads_client_free (c);
  gateway_stop (&g);
  g_free (direct);
}

GST_END_TEST;

/* waits for @gp's line @want after @mark (pumping the clients) */
static void
wait_guest_line (GuestProcess * gp, guint mark, const gchar * want)
{
  gint64 end = g_get_monotonic_time () + (gint64) WAIT_MS * 1000;
  gchar *line = NULL;

  while (!(line = guest_process_find_line (gp, mark, want, NULL)) &&
      g_get_monotonic_time () < end)
    heads_client_pump (20);
  fail_unless (line != NULL, "the guest never printed \"%s\"", want);
  g_free (line);
}

/* waits until both clients see the guest's agent */
static void
wait_agents (HeadsClient * a, HeadsClient * b)
{
  gint64 end = g_get_monotonic_time () + (gint64) WAIT_MS * 1000;

  while ((!heads_client_agent_ready (a) || !heads_client_agent_ready (b)) &&
      g_get_monotonic_time () < end)
    heads_client_pump (50);
  fail_unless (heads_client_agent_ready (a) && heads_client_agent_ready (b),
      "the clients never saw the guest's agent");
}

GST_START_TEST (test_layout_from_client)
{
  const gchar *args[] = { "--heads=2", "--width=640", "--height=480",
    "--fps=0", "--agent", NULL
  };
  const gint two[2][4] = { {0, 0, 800, 600}, {800, 0, 800, 600} };
  const gint one[2][4] = { {0, 0, 800, 600}, {0, 0, 0, 0} };
  const gint other[2][4] = { {0, 0, 704, 512}, {704, 0, 704, 512} };
  Gateway g = { 0, };
  HeadsClient *a, *b;
  gchar *direct;
  guint8 *expected;
  guint mark;

  gateway_start (&g, args, 1, &direct);
  a = heads_client_connect ("127.0.0.1", g.port);
  b = heads_client_connect ("127.0.0.1", g.port);
  expect_heads (a, direct, "client a");
  expect_heads (b, direct, "client b");
  wait_agents (a, b);

  /* a's two windows of 800x600: the guest lays out two such heads, and
   * every client follows */
  mark = guest_process_mark (g.gp);
  fail_unless (heads_client_send_monitors (a, 2, two));
  wait_guest_line (g.gp, mark, "monitors 2 max 2: 0@0,0 800x600 "
      "1@800,0 800x600");
  expect_heads (a, "display 0 1600x600 monitors 2 max 2: 0@0,0 800x600 "
      "1@800,0 800x600", "client a");
  expect_heads (b, "display 0 1600x600 monitors 2 max 2: 0@0,0 800x600 "
      "1@800,0 800x600", "client b");
  expected = g_malloc ((gsize) 1600 * 600 * 4);
  guest_render_heads_frame (expected, 800, 600, 1600 * 4, 2, 1, 0,
      GUEST_ACTIVITY_IDLE, GUEST_FRAME_NONE, FALSE);
  fail_unless (heads_client_wait_picture (b, 0, 0, 0, expected, 1600, 600,
          WAIT_MS) == 0, "client b's picture is not the guest's");
  g_free (expected);

  /* b's layout does not win while a, which set one first, is there */
  mark = guest_process_mark (g.gp);
  fail_unless (heads_client_send_monitors (b, 2, other));
  heads_client_pump (1000);
  /* a disables its second window: one head at every client */
  fail_unless (heads_client_send_monitors (a, 2, one));
  wait_guest_line (g.gp, mark, "monitors 1 max 2: 0@0,0 800x600");
  fail_if (guest_process_find_line (g.gp, mark, "704x512", NULL) != NULL,
      "b's layout reached the guest while a drives it");
  expect_heads (a, "display 0 800x600 monitors 1 max 2: 0@0,0 800x600",
      "client a");
  expect_heads (b, "display 0 800x600 monitors 1 max 2: 0@0,0 800x600",
      "client b");

  /* a leaves: b's layout, the next one set, applies */
  mark = guest_process_mark (g.gp);
  heads_client_free (a);
  wait_guest_line (g.gp, mark, "monitors 2 max 2: 0@0,0 704x512 "
      "1@704,0 704x512");
  expect_heads (b, "display 0 1408x512 monitors 2 max 2: 0@0,0 704x512 "
      "1@704,0 704x512", "client b");

  heads_client_free (b);
  gateway_stop (&g);
  g_free (direct);
}

GST_END_TEST;

/* --displays 2 --agent: a client's layout turns the second display off and
 * on again (the guest destroys and recreates its surface, as a guest OS
 * turns that output off): every client follows, the picture stays exact */
GST_START_TEST (test_displays_layout_from_client)
{
  const gchar *args[] = { "--displays=2", "--width=640", "--height=480",
    "--fps=0", "--agent", NULL
  };
  const gint two[2][4] = { {0, 0, 640, 480}, {640, 0, 640, 480} };
  const gint one[2][4] = { {0, 0, 640, 480}, {0, 0, 0, 0} };
  Gateway g = { 0, };
  HeadsClient *a, *b;
  gchar *direct;
  guint8 *expected;
  guint mark;

  gateway_start (&g, args, 2, &direct);
  a = connect_expecting (&g, COMPOSED, "client a");
  b = connect_expecting (&g, COMPOSED, "client b");
  wait_agents (a, b);

  /* a disables its second window: the guest's display 1 has no surface,
   * and every client has one head, display 0's picture */
  mark = guest_process_mark (g.gp);
  fail_unless (heads_client_send_monitors (a, 2, one));
  wait_guest_line (g.gp, mark, "displays 1 of 2");
  expect_heads (a, ONE_DISPLAY, "client a");
  expect_heads (b, ONE_DISPLAY, "client b");
  expected = g_malloc ((gsize) HEAD_W * HEAD_H * 4);
  guest_render_display_frame (expected, HEAD_W, HEAD_H, HEAD_W * 4, 0, 2, 1,
      0, GUEST_ACTIVITY_IDLE, GUEST_FRAME_NONE, FALSE);
  assert_picture (b, 0, expected, HEAD_W, HEAD_H, "client b, one display");
  g_free (expected);

  /* and enables it again: two heads at every client, both exact */
  mark = guest_process_mark (g.gp);
  fail_unless (heads_client_send_monitors (a, 2, two));
  wait_guest_line (g.gp, mark, "displays 2 of 2");
  expect_heads (a, COMPOSED, "client a");
  expect_heads (b, COMPOSED, "client b");
  check_displays_picture (a, 0, "client a, two displays again");
  check_displays_picture (b, 0, "client b, two displays again");

  heads_client_free (b);
  heads_client_free (a);
  gateway_stop (&g);
  g_free (direct);
}

GST_END_TEST;

/* @describe with its " max N:" as @max */
static gchar *
replace_max (const gchar * describe, guint max)
{
  const gchar *at = strstr (describe, " max ");
  const gchar *colon = at ? strchr (at, ':') : NULL;

  fail_unless (colon != NULL, "no max in \"%s\"", describe);
  return g_strdup_printf ("%.*s max %u%s", (gint) (at - describe), describe,
      max, colon);
}

/* the client's heads once they stayed the same for 2 s */
static gchar *
settled_describe (HeadsClient * c)
{
  gint64 end = g_get_monotonic_time () + (gint64) WAIT_MS * 1000;
  gchar *last = NULL;

  while (g_get_monotonic_time () < end) {
    gchar *now;

    /* no quiet wait: SeaBIOS's cursor blinks */
    if (!heads_client_wait_displays (c, 1, 0, WAIT_MS))
      break;
    heads_client_pump (2000);
    now = heads_client_describe (c);
    if (last && g_str_equal (now, last)) {
      g_free (last);
      return now;
    }
    g_free (last);
    last = now;
  }
  g_free (last);
  return NULL;
}

/* waits until something listens on @port of 127.0.0.1 */
static gboolean
wait_listening (guint port)
{
  gint64 end = g_get_monotonic_time () + (gint64) WAIT_MS * 1000;
  GSocketClient *client = g_socket_client_new ();
  gboolean ok = FALSE;

  while (!ok && g_get_monotonic_time () < end) {
    GSocketConnection *conn = g_socket_client_connect_to_host (client,
        "127.0.0.1", port, NULL, NULL);

    ok = conn != NULL;
    if (conn)
      g_object_unref (conn);
    else
      g_usleep (100 * 1000);
  }
  g_object_unref (client);
  return ok;
}

/* qemu with two QXL devices and no guest OS: the second device has no
 * surface, so it is no head, straight or through the pipeline */
GST_START_TEST (test_qemu_two_qxl)
{
  gchar *qemu = g_find_program_in_path ("qemu-system-x86_64");
  gchar *spice_arg, *uri, *direct, *got;
  Gateway g = { 0, };
  GError *err = NULL;
  HeadsClient *c;
  GPid pid = 0;
  guint port;

  if (!qemu) {
    g_printerr ("SKIP: qemu-system-x86_64 not installed\n");
    return;
  }
  port = test_pick_free_port ();
  spice_arg = g_strdup_printf ("port=%u,addr=127.0.0.1,disable-ticketing=on",
      port);
  {
    const gchar *argv[] = { qemu, "-display", "none", "-spice", spice_arg,
      "-m", "64", "-nodefaults", "-vga", "none", "-device", "qxl-vga",
      "-device", "qxl", "-accel", "tcg", NULL
    };
    fail_unless (g_spawn_async (NULL, (gchar **) argv, NULL,
            G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL,
            test_child_new_group, NULL, &pid, &err), "%s",
        err ? err->message : "");
  }

  /* straight from qemu (one client at a time: this one leaves first) */
  fail_unless (wait_listening (port), "qemu never listened");
  c = heads_client_connect ("127.0.0.1", port);
  direct = settled_describe (c);
  fail_unless (direct != NULL, "qemu's display never settled");
  GST_INFO ("straight from qemu: %s", direct);
  fail_unless_equals_int (heads_client_n_display_channels (c), 2);
  fail_unless (g_str_has_prefix (direct, "display 0 ") &&
      strstr (direct, "display 1") == NULL, "%s", direct);
  heads_client_free (c);

  uri = g_strdup_printf ("spice://127.0.0.1:%u", port);
  gateway_start_uri (&g, uri);
  c = heads_client_connect ("127.0.0.1", g.port);
  /* the same one head; its max counts the device without a surface (two
   * display channels: a head that may come, as the client sees straight) */
  {
    gchar *want = replace_max (direct, 2);

    got = heads_client_wait_describe (c, want, WAIT_MS);
    fail_unless_equals_string (got, want);
    g_free (want);
  }
  g_free (got);
  fail_unless_equals_int (heads_client_n_display_channels (c), 1);
  heads_client_free (c);

  gateway_stop (&g);
  kill (-pid, SIGKILL);
  waitpid (pid, NULL, 0);
  g_free (direct);
  g_free (uri);
  g_free (spice_arg);
  g_free (qemu);
}

GST_END_TEST;

static Suite *
heads_pipeline_suite (void)
{
  Suite *s = suite_create ("heads-pipeline");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 300);
  tcase_add_test (tc, test_heads_through_pipeline);
  tcase_add_test (tc, test_displays_through_pipeline);
  tcase_add_test (tc, test_input_per_head);
  tcase_add_test (tc, test_layout_from_client);
  tcase_add_test (tc, test_displays_layout_from_client);
  tcase_add_test (tc, test_qemu_two_qxl);
  suite_add_tcase (s, tc);
  return s;
}

GST_CHECK_MAIN (heads_pipeline);
