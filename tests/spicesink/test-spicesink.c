/* tests/spicesink: spicesink against real SPICE clients (spicy-screenshot,
 * a spice-client-glib test client) and raw sockets.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <stdio.h>
#include <sys/wait.h>
#include <glib/gstdio.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <signal.h>
#include <poll.h>
#include <unistd.h>
#include "spicesink-test-util.h"

/* ------------------------------------------------------------- start-up */

GST_START_TEST (test_refuse_open_nonloopback)
{
  GstElement *sink = gst_element_factory_make ("spicesink", NULL);
  GstBus *bus = gst_bus_new ();
  GstMessage *msg;
  GError *err = NULL;

  gst_element_set_bus (sink, bus);
  g_object_set (sink, "address", "0.0.0.0", "port", 0, NULL);
  fail_unless_equals_int (gst_element_set_state (sink, GST_STATE_READY),
      GST_STATE_CHANGE_FAILURE);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL);
  gst_message_parse_error (msg, &err, NULL);
  GST_INFO ("error: %s", err->message);
  fail_unless (strstr (err->message, "password") != NULL);
  fail_unless (strstr (err->message, "disable-ticketing") != NULL);
  g_clear_error (&err);
  gst_message_unref (msg);

  /* explicitly allowed */
  g_object_set (sink, "disable-ticketing", TRUE, NULL);
  fail_unless_equals_int (gst_element_set_state (sink, GST_STATE_READY),
      GST_STATE_CHANGE_SUCCESS);
  gst_element_set_state (sink, GST_STATE_NULL);
  /* or with a password */
  g_object_set (sink, "disable-ticketing", FALSE, "password", "pw", NULL);
  fail_unless_equals_int (gst_element_set_state (sink, GST_STATE_READY),
      GST_STATE_CHANGE_SUCCESS);
  gst_element_set_state (sink, GST_STATE_NULL);
  gst_element_set_bus (sink, NULL);
  gst_object_unref (bus);
  gst_object_unref (sink);
}

GST_END_TEST;

/* a password file that holds no usable password is a permanent error
 * (RESOURCE SETTINGS: gst-spice-run exits 77 instead of restarting) that
 * says why; one that cannot be read stays OPEN_READ */
GST_START_TEST (test_password_file_errors)
{
  gchar *dir = g_dir_make_tmp ("spicesink-pw-XXXXXX", NULL);
  gchar *empty = g_build_filename (dir, "empty", NULL);
  gchar *absent = g_build_filename (dir, "absent", NULL);
  const gchar *files[] = { empty, absent };
  const gint codes[] = { GST_RESOURCE_ERROR_SETTINGS,
    GST_RESOURCE_ERROR_OPEN_READ
  };
  const gchar *why[] = { "its first line is empty", "absent" };
  guint i;

  fail_unless (g_file_set_contents (empty, "\n", -1, NULL));
  for (i = 0; i < G_N_ELEMENTS (files); i++) {
    GstElement *sink = gst_element_factory_make ("spicesink", NULL);
    GstBus *bus = gst_bus_new ();
    GstMessage *msg;
    GError *err = NULL;

    gst_element_set_bus (sink, bus);
    g_object_set (sink, "port", 0, "password-file", files[i], NULL);
    fail_unless_equals_int (gst_element_set_state (sink, GST_STATE_READY),
        GST_STATE_CHANGE_FAILURE);
    msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
    fail_unless (msg != NULL);
    gst_message_parse_error (msg, &err, NULL);
    fail_unless (err->domain == GST_RESOURCE_ERROR);
    fail_unless_equals_int (err->code, codes[i]);
    fail_unless (strstr (err->message, why[i]) != NULL, "%s", err->message);
    g_clear_error (&err);
    gst_message_unref (msg);
    gst_element_set_state (sink, GST_STATE_NULL);
    gst_element_set_bus (sink, NULL);
    gst_object_unref (bus);
    gst_object_unref (sink);
  }
  g_unlink (empty);
  g_rmdir (dir);
  g_free (empty);
  g_free (absent);
  g_free (dir);
}

GST_END_TEST;

/* the default port is not the upstream's usual 5900 (QEMU's first SPICE
 * display), so that `spicesrc uri=spice://127.0.0.1:5900 ! spicetiler !
 * spicesink` does not collide with its own upstream: 5910, the port of the
 * shipped pipelines and the docs */
GST_START_TEST (test_default_port)
{
  GstElement *sink = gst_element_factory_make ("spicesink", NULL);
  GParamSpec *pspec = g_object_class_find_property (G_OBJECT_GET_CLASS
      (sink), "port");
  gint port = 0;

  g_object_get (sink, "port", &port, NULL);
  fail_unless_equals_int (port, 5910);
  fail_unless_equals_int (G_PARAM_SPEC_INT (pspec)->default_value, 5910);
  gst_object_unref (sink);
}

GST_END_TEST;

/* ------------------------------------------------- pixel-exact pictures */

static void
check_screenshot_exact (gboolean lz4)
{
  Fixture *f = fixture_new (320, 200, NULL);
  guint8 *shot = NULL;
  gint w, h;

  f->use_lz4 = lz4;
  fixture_start (f, TRUE);
  fail_unless_equals_int (screenshot (f->port, FALSE, NULL, NULL, &shot, &w,
          &h), 0);
  fail_unless_equals_int (diff_full (f, shot, w, h), 0);
  g_free (shot);
  fixture_free (f);
}

GST_START_TEST (test_screenshot_bitmap)
{
  check_screenshot_exact (FALSE);
}

GST_END_TEST;

GST_START_TEST (test_screenshot_lz4)
{
  check_screenshot_exact (TRUE);
}

GST_END_TEST;

/* A client without SPICE_DISPLAY_CAP_LZ4_COMPRESSION (spice-html5) gets
 * the LZ4 draws as BITMAPs, the same pixels; a client with it, at the same
 * time, still gets LZ4. */
GST_START_TEST (test_client_without_lz4)
{
  Fixture *f = fixture_new (320, 200, NULL);
  SpiceRawSession *with, *without;
  GstVideoRectangle r = { 30, 40, 120, 60 };
  guint i;

  f->use_lz4 = TRUE;
  fixture_start (f, TRUE);
  with = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  without = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL &
      ~(1u << SPICE_DISPLAY_CAP_LZ4_COMPRESSION));
  fail_unless (with && without);
  for (i = 0; i < 5; i++) {
    update_rect (f, &r, 40 + i);
    fail_unless (spice_raw_session_pump (with, 200, NULL, NULL));
    fail_unless (spice_raw_session_pump (without, 200, NULL, NULL));
  }
  for (i = 0; i < 50 && (spice_raw_session_compare (with, f->picture,
              f->w * 4) || spice_raw_session_compare (without, f->picture,
              f->w * 4)); i++) {
    spice_raw_session_pump (with, 100, NULL, NULL);
    spice_raw_session_pump (without, 100, NULL, NULL);
  }
  fail_unless_equals_uint64 (spice_raw_session_compare (with, f->picture,
          f->w * 4), 0);
  fail_unless_equals_uint64 (spice_raw_session_compare (without, f->picture,
          f->w * 4), 0);
  /* the first picture and the five updates */
  fail_unless (with->draws_lz4 >= 6, "%" G_GUINT64_FORMAT, with->draws_lz4);
  fail_unless_equals_uint64 (with->draws_bitmap, 0);
  fail_unless (without->draws_bitmap >= 6, "%" G_GUINT64_FORMAT,
      without->draws_bitmap);
  fail_unless_equals_uint64 (without->draws_lz4, 0);
  spice_raw_session_free (with);
  spice_raw_session_free (without);
  fixture_free (f);
}

GST_END_TEST;

/* Partial updates after the full frame: a client joining later gets the
 * composed picture (the sink's last-known picture, no refresh answer). */
GST_START_TEST (test_late_join_composed_picture)
{
  Fixture *f = fixture_new (256, 160, NULL);
  GstVideoRectangle bands[3] = { {0, 0, 256, 60}, {0, 60, 256, 60},
  {0, 120, 256, 40}
  };
  GstVideoRectangle part[2] = { {10, 10, 50, 30}, {100, 90, 120, 50} };
  guint8 *shot = NULL;
  gint w, h, i;

  f->answer_refresh = FALSE;    /* only the sink's own picture can help */
  fixture_start (f, FALSE);
  push_rects (f, bands, 3, 0);
  for (i = 0; i < 3; i++) {
    update_rect (f, &part[0], 10 + i);
    update_rect (f, &part[1], 20 + i);
  }
  fail_unless_equals_int (client_shot (f->port, NULL, &shot, &w, &h, NULL),
      0);
  fail_unless_equals_int (diff_full (f, shot, w, h), 0);
  g_free (shot);
  fixture_free (f);
}

GST_END_TEST;

/* A client that joins before any picture exists waits for the refresh. */
GST_START_TEST (test_join_before_picture_refresh)
{
  Fixture *f = fixture_new (200, 120, NULL);
  guint8 *shot = NULL;
  gint w, h;

  fixture_start (f, FALSE);     /* nothing pushed: refresh answers */
  fail_unless_equals_int (screenshot (f->port, FALSE, NULL, NULL, &shot, &w,
          &h), 0);
  fail_unless_equals_int (diff_full (f, shot, w, h), 0);
  fail_unless (f->refresh_events >= 1);
  g_free (shot);
  fixture_free (f);
}

GST_END_TEST;

/* ------------------------------------ a joining client's first draw */

/* sets the fixture picture to pattern @seed and pushes it as @band_h-row
 * bands (like the tiler's full-frame updates) in one update */
static void
push_bands (Fixture * f, guint seed, gint band_h, guint32 flags)
{
  GArray *r = g_array_new (FALSE, FALSE, sizeof (GstVideoRectangle));
  gint y;

  g_mutex_lock (&f->lock);
  make_pattern (f->picture, f->w, f->h, seed);
  g_mutex_unlock (&f->lock);
  for (y = 0; y < f->h; y += band_h) {
    GstVideoRectangle b = { 0, y, f->w, MIN (band_h, f->h - y) };
    g_array_append_val (r, b);
  }
  push_rects (f, (GstVideoRectangle *) r->data, r->len, flags);
  g_array_unref (r);
}

static gboolean
has_mark (SpiceRawSession * s, gpointer data)
{
  return s->marks >= 1;
}

static gboolean
draws_at_least (SpiceRawSession * s, gpointer data)
{
  return s->draws >= *(guint64 *) data;
}

static guint64
client_stat_u64 (Fixture * f, guint index, const gchar * field)
{
  GstStructure *st = NULL;
  const GValue *arr;
  guint64 v = G_MAXUINT64;

  g_object_get (f->sink, "stats", &st, NULL);
  arr = gst_structure_get_value (st, "client-stats");
  if (index < gst_value_array_get_size (arr))
    gst_structure_get_uint64 (gst_value_get_structure
        (gst_value_array_get_value (arr, index)), field, &v);
  gst_structure_free (st);
  return v;
}

/* The last-known picture is banded (16-row bands, as the tiler sends a
 * full frame): a joining client gets SURFACE_CREATE, then the refresh
 * answer as ONE DRAW_COPY covering the surface, then MARK; spicy-screenshot
 * (which saves at the first invalidate) is exact; a client that already
 * has the picture does not get the refresh answer but still gets normal
 * updates. */
GST_START_TEST (test_join_first_draw_whole)
{
  Fixture *f = fixture_new (480, 320, NULL);
  SpiceRawSession *a;
  GstVideoRectangle r = { 40, 30, 100, 60 };
  guint8 *shot = NULL;
  guint64 a_draws, want;
  guint refreshes, i;
  gint w, h;

  f->use_lz4 = TRUE;
  fixture_start (f, FALSE);
  push_bands (f, 1, 16, 0);
  a = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (a != NULL);
  fail_unless (spice_raw_session_pump (a, 10000, has_mark, NULL), "%s",
      a->error ? a->error : "no MARK");
  fail_unless_equals_int (a->draws_at_first_mark, 1);
  fail_unless_equals_int (a->first_draw_area, 480 * 320);
  fail_unless_equals_int (spice_raw_session_compare (a, f->picture, 480 * 4),
      0);

  for (i = 0; i < 3; i++) {
    /* banded again: joining needs the refresh path each time */
    push_bands (f, 2 + i, 16, 0);
    want = a->draws + 20;
    fail_unless (spice_raw_session_pump (a, 10000, draws_at_least, &want));
    a_draws = a->draws;
    g_mutex_lock (&f->lock);
    refreshes = f->refresh_events;
    g_mutex_unlock (&f->lock);
    fail_unless_equals_int (screenshot (f->port, FALSE, NULL, NULL, &shot,
            &w, &h), 0);
    fail_unless_equals_int (diff_full (f, shot, w, h), 0);
    g_free (shot);
    shot = NULL;
    fail_unless (f->refresh_events > refreshes, "no refresh requested");
    /* A had the picture: no refresh answer for it */
    spice_raw_session_pump (a, 300, NULL, NULL);
    fail_unless_equals_int (a->draws, a_draws);
    fail_unless_equals_int (spice_raw_session_compare (a, f->picture,
            480 * 4), 0);
  }
  /* normal updates still reach A */
  update_rect (f, &r, 77);
  want = a_draws + 1;
  fail_unless (spice_raw_session_pump (a, 5000, draws_at_least, &want));
  fail_unless_equals_int (spice_raw_session_compare (a, f->picture, 480 * 4),
      0);
  /* the cache is the one-region refresh answer plus r: not one region, so
   * a raw joiner again waits for a refresh and gets one draw */
  {
    SpiceRawSession *b = spice_raw_session_new (f->port, NULL,
        SPICE_RAW_DISPLAY_CAPS_ALL);

    fail_unless (b != NULL);
    fail_unless (spice_raw_session_pump (b, 10000, has_mark, NULL));
    fail_unless_equals_int (b->draws_at_first_mark, 1);
    fail_unless_equals_int (spice_raw_session_compare (b, f->picture,
            480 * 4), 0);
    spice_raw_session_free (b);
  }
  spice_raw_session_free (a);
  fixture_free (f);
}

GST_END_TEST;

/* Without a refresh answer a joining client waits (nothing, not even MARK)
 * for the bound (2 s) and then gets the banded cache; it is exact, and the
 * fallback is counted in stats. */
GST_START_TEST (test_join_refresh_wait_bound)
{
  Fixture *f = fixture_new (320, 240, NULL);
  SpiceRawSession *b;
  gint64 t0, waited;
  guint64 draws;

  f->answer_refresh = FALSE;
  fixture_start (f, FALSE);
  push_bands (f, 5, 16, 0);
  /* t0 before the link: the sink's 2 s start later than t0 */
  t0 = g_get_monotonic_time ();
  b = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (b != NULL);
  waited = (g_get_monotonic_time () - t0) / 1000;
  if (waited < 1200)
    spice_raw_session_pump (b, 1200 - waited, has_mark, NULL);
  fail_unless_equals_int (b->marks, 0);
  fail_unless_equals_int (b->draws, 0);
  fail_unless (spice_raw_session_pump (b, 8000, has_mark, NULL));
  waited = g_get_monotonic_time () - t0;
  GST_INFO ("fallback after %" G_GINT64_FORMAT " ms", waited / 1000);
  fail_unless (waited >= 1990 * 1000, "fallback after %" G_GINT64_FORMAT
      " ms", waited / 1000);
  fail_unless_equals_int (b->draws_at_first_mark, 15);
  fail_unless_equals_int (spice_raw_session_compare (b, f->picture, 320 * 4),
      0);
  fail_unless_equals_int (client_stat_u64 (f, 0, "refresh-wait-fallbacks"),
      1);
  /* a late refresh answer is not sent again: the cache was complete */
  draws = b->draws;
  push_full (f, GST_SPICE_DRAWS_FLAG_REFRESH);
  spice_raw_session_pump (b, 300, NULL, NULL);
  fail_unless_equals_int (b->draws, draws);
  spice_raw_session_free (b);
  fixture_free (f);
}

GST_END_TEST;

/* The tiler counts a REFRESH as making every client's picture exact (it
 * stops refining lossy areas). So a client that has the picture still gets
 * the REFRESH answer when its picture may be lossy (a LOSSY-flagged or JPEG
 * region in the last-known picture), and only then. */
GST_START_TEST (test_refresh_to_lossy_clients)
{
  Fixture *f = fixture_new (320, 240, NULL);
  GstVideoRectangle r = { 20, 20, 64, 48 };
  SpiceRawSession *a, *b;
  GstSpiceDrawsWriter *wr;
  guint64 want;
  guint refreshes;

  f->use_lz4 = TRUE;
  fixture_start (f, TRUE);
  a = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (a != NULL);
  fail_unless (spice_raw_session_pump (a, 10000, has_mark, NULL));
  /* a "lossy" region (as the tiler flags JPEG-approximated areas) */
  wr = gst_spice_draws_writer_new (0, 0);
  g_mutex_lock (&f->lock);
  add_lz4_flags (wr, &r, f->picture + (r.y * 320 + r.x) * 4, 320 * 4,
      GST_SPICE_DRAW_FLAG_LOSSY);
  g_mutex_unlock (&f->lock);
  fail_unless_equals_int (gst_app_src_push_buffer (GST_APP_SRC (f->src),
          gst_spice_draws_writer_finish (wr)), GST_FLOW_OK);
  want = a->draws + 1;
  fail_unless (spice_raw_session_pump (a, 5000, draws_at_least, &want));
  /* B joins: refresh; A gets the answer too */
  refreshes = f->refresh_events;
  b = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (b != NULL);
  fail_unless (spice_raw_session_pump (b, 10000, has_mark, NULL));
  fail_unless_equals_int (b->draws_at_first_mark, 1);
  fail_unless (f->refresh_events > refreshes);
  want = a->draws + 1;
  fail_unless (spice_raw_session_pump (a, 5000, draws_at_least, &want),
      "a client with a lossy area did not get the refresh");
  fail_unless_equals_int (a->last_draw_area, 320 * 240);
  spice_raw_session_free (b);
  /* now everything is exact: a lossless update, another join, and A gets
   * nothing but that update */
  update_rect (f, &r, 9);
  want = a->draws + 1;
  fail_unless (spice_raw_session_pump (a, 5000, draws_at_least, &want));
  want = a->draws;
  b = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (b != NULL);
  fail_unless (spice_raw_session_pump (b, 10000, has_mark, NULL));
  fail_unless_equals_int (b->draws_at_first_mark, 1);
  fail_unless_equals_int (spice_raw_session_compare (b, f->picture, 320 * 4),
      0);
  spice_raw_session_pump (a, 300, NULL, NULL);
  fail_unless_equals_int (a->draws, want);
  fail_unless_equals_int (spice_raw_session_compare (a, f->picture, 320 * 4),
      0);
  spice_raw_session_free (b);
  spice_raw_session_free (a);
  fixture_free (f);
}

GST_END_TEST;

static gboolean
marks_at_least (SpiceRawSession * s, gpointer data)
{
  return s->marks >= *(guint64 *) data;
}

/* whether @event with @reason was posted as a spice-health element message
 * within @timeout_ms (other messages are dropped) */
static gboolean
health_event_posted (Fixture * f, const gchar * event, const gchar * reason,
    guint timeout_ms)
{
  GstBus *bus = gst_element_get_bus (f->pipeline);
  gint64 end = g_get_monotonic_time () + timeout_ms * G_TIME_SPAN_MILLISECOND;
  gboolean found = FALSE;

  while (!found && g_get_monotonic_time () < end) {
    GstMessage *m = gst_bus_timed_pop_filtered (bus, 100 * GST_MSECOND,
        GST_MESSAGE_ELEMENT);
    const GstStructure *st = m ? gst_message_get_structure (m) : NULL;

    found = st && gst_structure_has_name (st, GST_SPICE_MESSAGE_HEALTH) &&
        !g_strcmp0 (gst_structure_get_string (st, "event"), event) &&
        !g_strcmp0 (gst_structure_get_string (st, "reason"), reason);
    if (m)
      gst_message_unref (m);
  }
  gst_object_unref (bus);
  return found;
}

/* A client that stops reading falls behind while banded updates flow;
 * once it reads again and its queue drains it is resynchronised like a
 * joiner: the last draw before its second MARK is the whole surface (the
 * refresh answer), and the picture is exact. The service log hears of it
 * (spice-health fell-behind, reason not-reading: its receive window is
 * closed). */
GST_START_TEST (test_resync_behind_whole)
{
  Fixture *f = fixture_new (320, 240, "queue-size=65536 client-timeout=100");
  SpiceRawSession *s;
  guint64 want = 2, behind = 0, queued;
  gint64 start, end;
  guint i = 0;

  fixture_start (f, TRUE);
  s = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (s != NULL);
  fail_unless (spice_raw_session_pump (s, 10000, has_mark, NULL));
  g_socket_set_option (s->display->sock, SOL_SOCKET, SO_RCVBUF, 16384, NULL);
  /* not reading: 300 KB updates until the sink leaves it behind. The sink
   * decides that after client-timeout without progress, twice, however
   * fast the updates come: the bound is time (10 s), and the appsrc (which
   * does not block) holds at most a few updates while the render waits */
  start = g_get_monotonic_time ();
  end = start + 10 * G_TIME_SPAN_SECOND;
  while (behind == 0 && g_get_monotonic_time () < end) {
    g_object_get (f->src, "current-level-bytes", &queued, NULL);
    if (queued < 1024 * 1024)
      push_bands (f, 100 + i++, 16, 0);
    else
      g_usleep (10 * G_TIME_SPAN_MILLISECOND);
    behind = client_stat_u64 (f, 0, "behind-count");
  }
  GST_INFO ("behind after %u updates, %" G_GINT64_FORMAT " ms", i,
      (g_get_monotonic_time () - start) / G_TIME_SPAN_MILLISECOND);
  fail_unless (behind >= 1, "the client never fell behind in 10 s");
  fail_unless (health_event_posted (f, "fell-behind", "not-reading", 5000),
      "no spice-health fell-behind/not-reading message");
  fail_unless_equals_int (s->marks, 1);
  fail_unless (spice_raw_session_pump (s, 20000, marks_at_least, &want),
      "%s", s->error ? s->error : "no second MARK");
  fail_unless_equals_int (s->last_draw_area_at_mark, 320 * 240);
  spice_raw_session_pump (s, 300, NULL, NULL);
  fail_unless_equals_int (spice_raw_session_compare (s, f->picture, 320 * 4),
      0);
  fail_unless (client_stat_u64 (f, 0, "refreshes") >= 1);
  spice_raw_session_free (s);
  fixture_free (f);
}

GST_END_TEST;

GST_START_TEST (test_two_clients)
{
  Fixture *f = fixture_new (320, 240, NULL);
  gchar *tc = tool_path ("spice-test-client");
  gchar *dir = g_dir_make_tmp ("spicesink-XXXXXX", NULL);
  gchar *o1 = g_build_filename (dir, "a.ppm", NULL);
  gchar *o2 = g_build_filename (dir, "b.ppm", NULL);
  gchar *ps;
  GPid pids[2];
  guint i;
  guint8 *shot;
  gint w, h, status;

  fixture_start (f, TRUE);
  ps = g_strdup_printf ("%u", f->port);
  for (i = 0; i < 2; i++) {
    const gchar *argv[] = { "timeout", "60", tc, "-p", ps, "-o",
      i ? o2 : o1, "--settle-ms", "500", NULL
    };
    fail_unless (g_spawn_async (NULL, (gchar **) argv, NULL,
            G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD |
            G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, &pids[i], NULL));
  }
  /* keep updating while both are connected */
  for (i = 0; i < 10; i++) {
    GstVideoRectangle r = { 20, 20, 100, 80 };
    g_usleep (100 * 1000);
    update_rect (f, &r, 20 + i);
  }
  for (i = 0; i < 2; i++) {
    waitpid (pids[i], &status, 0);
    g_spawn_close_pid (pids[i]);
    fail_unless (WIFEXITED (status) && WEXITSTATUS (status) == 0,
        "client %u failed", i);
    fail_unless (test_ppm_read (i ? o2 : o1, &shot, &w, &h, NULL));
    fail_unless_equals_int (diff_full (f, shot, w, h), 0);
    g_free (shot);
    g_unlink (i ? o2 : o1);
  }
  g_rmdir (dir);
  g_free (o1);
  g_free (o2);
  g_free (dir);
  g_free (ps);
  g_free (tc);
  fixture_free (f);
}

GST_END_TEST;

/* ------------------------------------------------------------- tickets */

GST_START_TEST (test_password)
{
  Fixture *f = fixture_new (160, 100, "password=s3cret");
  guint8 *shot = NULL;
  gint w, h;
  SpiceRawConn *c;

  fixture_start (f, TRUE);
  fail_unless_equals_int (screenshot (f->port, FALSE, "s3cret", NULL, &shot,
          &w, &h), 0);
  fail_unless_equals_int (diff_full (f, shot, w, h), 0);
  g_free (shot);
  fail_unless (screenshot (f->port, FALSE, "wrong", NULL, NULL, NULL,
          NULL) != 0);
  fail_unless (screenshot (f->port, FALSE, NULL, NULL, NULL, NULL,
          NULL) != 0);
  /* raw: the link result says PERMISSION_DENIED, then the server closes */
  c = spice_raw_connect (f->port, 10);
  fail_unless (c != NULL);
  fail_unless (spice_raw_link (c, 0, SPICE_CHANNEL_MAIN, 0x0d, 0, "nope",
          NULL));
  fail_unless_equals_int (c->link_result,
      SPICE_LINK_ERR_PERMISSION_DENIED);
  fail_unless (spice_raw_wait_closed (c, 5000));
  spice_raw_close (c);
  c = spice_raw_connect (f->port, 10);
  fail_unless (spice_raw_link (c, 0, SPICE_CHANNEL_MAIN, 0x0d, 0,
          "s3cret", NULL));
  fail_unless_equals_int (c->link_result, 0);
  spice_raw_close (c);
  fixture_free (f);
}

GST_END_TEST;

/* ---------------------------------------------------------------- TLS */

GST_START_TEST (test_tls)
{
  gchar *dir = g_dir_make_tmp ("spicesink-tls-XXXXXX", NULL);
  gchar *ca = g_build_filename (dir, "ca.pem", NULL);
  gchar *cert = g_build_filename (dir, "cert.pem", NULL);
  gchar *key = g_build_filename (dir, "key.pem", NULL);
  gchar *props;
  const gchar *a1[] = { "req", "-x509", "-newkey", "rsa:2048", "-nodes",
    "-keyout", "ca-key.pem", "-out", "ca.pem", "-days", "2", "-subj",
    "/CN=gst-spice test CA", NULL
  };
  const gchar *a2[] = { "req", "-newkey", "rsa:2048", "-nodes", "-keyout",
    "key.pem", "-out", "req.csr", "-subj", "/CN=localhost", NULL
  };
  const gchar *a3[] = { "x509", "-req", "-in", "req.csr", "-CA", "ca.pem",
    "-CAkey", "ca-key.pem", "-CAcreateserial", "-out", "cert.pem", "-days",
    "2", "-extfile", "ext.cnf", NULL
  };
  gchar *ext = g_build_filename (dir, "ext.cnf", NULL);
  Fixture *f;
  guint8 *shot = NULL;
  gint w, h;
  const gchar *env[] = { "SSL_CERT_FILE", ca, NULL };
  const gchar *env_bad[] = { "SSL_CERT_FILE", "/nonexistent.pem", NULL };

  fail_unless (g_file_set_contents (ext,
          "subjectAltName=DNS:localhost,IP:127.0.0.1\n", -1, NULL));
  fail_unless (test_run_openssl (dir, a1));
  fail_unless (test_run_openssl (dir, a2));
  fail_unless (test_run_openssl (dir, a3));
  props = g_strdup_printf ("port=-1 tls-port=0 tls-cert-file=%s "
      "tls-key-file=%s", cert, key);
  f = fixture_new (240, 160, props);
  fixture_start (f, TRUE);
  fail_unless (f->tls_port > 0);
  fail_unless_equals_int (screenshot (f->tls_port, TRUE, NULL, env, &shot,
          &w, &h), 0);
  fail_unless_equals_int (diff_full (f, shot, w, h), 0);
  g_free (shot);
  /* an untrusted CA must fail */
  fail_unless (screenshot (f->tls_port, TRUE, NULL, env_bad, NULL, NULL,
          NULL) != 0);
  fixture_free (f);
  {
    GDir *d = g_dir_open (dir, 0, NULL);
    const gchar *n;
    while ((n = g_dir_read_name (d))) {
      gchar *p = g_build_filename (dir, n, NULL);
      g_unlink (p);
      g_free (p);
    }
    g_dir_close (d);
  }
  g_rmdir (dir);
  g_free (props);
  g_free (ext);
  g_free (ca);
  g_free (cert);
  g_free (key);
  g_free (dir);
}

GST_END_TEST;

/* -------------------------------------------------------------- inputs */

static gboolean
nav_count_at_least (Fixture * f, gpointer d)
{
  return f->nav->len >= GPOINTER_TO_UINT (d);
}

static const GstStructure *
nav_get (Fixture * f, guint i)
{
  return g_ptr_array_index (f->nav, i);
}

static void
check_key (const GstStructure * s, const gchar * ev, const gchar * key,
    guint sc)
{
  guint got = 0;

  fail_unless_equals_string (gst_structure_get_string (s, "event"), ev);
  fail_unless_equals_string (gst_structure_get_string (s, "key"), key);
  fail_unless (gst_structure_get_uint (s, "scancode", &got));
  fail_unless_equals_int (got, sc);
}

GST_START_TEST (test_inputs_raw)
{
  Fixture *f = fixture_new (320, 240, NULL);
  SpiceRawSession *s;
  SpiceRawConn *in;
  GByteArray *a = g_byte_array_new ();
  guint i, acks = 0;
  gdouble x, y;
  gint button;

  fixture_start (f, TRUE);
  s = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (s != NULL);
  in = spice_raw_connect (f->port, 10);
  fail_unless (spice_raw_link (in, s->session_id, SPICE_CHANNEL_INPUTS,
          0x0d, 0, NULL, NULL));
  fail_unless_equals_int (in->link_result, 0);
  /* 'a' (0x1e), Right Ctrl (E0 1D) */
  gst_spice_put_u32 (a, test_wire_encode_key_code (0x1e, FALSE));
  spice_raw_send_msg (in, SPICE_MSGC_INPUTS_KEY_DOWN, a->data, 4);
  g_byte_array_set_size (a, 0);
  gst_spice_put_u32 (a, test_wire_encode_key_code (0x1e, TRUE));
  spice_raw_send_msg (in, SPICE_MSGC_INPUTS_KEY_UP, a->data, 4);
  g_byte_array_set_size (a, 0);
  gst_spice_put_u32 (a, test_wire_encode_key_code (0x11d, FALSE));
  spice_raw_send_msg (in, SPICE_MSGC_INPUTS_KEY_DOWN, a->data, 4);
  g_byte_array_set_size (a, 0);
  /* KEY_SCANCODE: Up arrow press+release as raw bytes */
  {
    const guint8 up[] = { 0xe0, 0x48, 0xe0, 0xc8 };
    spice_raw_send_msg (in, SPICE_MSGC_INPUTS_KEY_SCANCODE, up, 4);
  }
  for (i = 0; i < 8; i++) {
    test_wire_write_mouse_position (a, 100 + i, 50 + i, 0, 0);
    spice_raw_send_msg (in, SPICE_MSGC_INPUTS_MOUSE_POSITION, a->data,
        a->len);
    g_byte_array_set_size (a, 0);
  }
  {
    const guint8 press[] = { 1, 1, 0 }, release[] = { 1, 0, 0 };
    spice_raw_send_msg (in, SPICE_MSGC_INPUTS_MOUSE_PRESS, press, 3);
    spice_raw_send_msg (in, SPICE_MSGC_INPUTS_MOUSE_RELEASE, release, 3);
  }
  /* INPUTS_INIT, then two MOTION_ACKs for 8 positions */
  for (;;) {
    guint16 type;
    guint8 *body;
    gsize size;

    if (!spice_raw_read_msg (in, 3000, &type, &body, &size))
      break;
    g_free (body);
    if (type == SPICE_MSG_INPUTS_MOUSE_MOTION_ACK && ++acks == 2)
      break;
  }
  fail_unless_equals_int (acks, 2);
  fail_unless (wait_for (f, nav_count_at_least, GUINT_TO_POINTER (15),
          20000));
  g_mutex_lock (&f->lock);
  check_key (nav_get (f, 0), "key-press", "a", 0x1e);
  check_key (nav_get (f, 1), "key-release", "a", 0x1e);
  check_key (nav_get (f, 2), "key-press", "Control_R", 0x11d);
  check_key (nav_get (f, 3), "key-press", "Up", 0x148);
  check_key (nav_get (f, 4), "key-release", "Up", 0x148);
  fail_unless_equals_string (gst_structure_get_string (nav_get (f, 5),
          "event"), "mouse-move");
  fail_unless (gst_structure_get_double (nav_get (f, 12), "pointer_x", &x));
  fail_unless (gst_structure_get_double (nav_get (f, 12), "pointer_y", &y));
  fail_unless_equals_int ((gint) x, 107);
  fail_unless_equals_int ((gint) y, 57);
  fail_unless_equals_string (gst_structure_get_string (nav_get (f, 13),
          "event"), "mouse-button-press");
  fail_unless (gst_structure_get_int (nav_get (f, 13), "button", &button));
  fail_unless_equals_int (button, 1);
  fail_unless_equals_string (gst_structure_get_string (nav_get (f, 14),
          "event"), "mouse-button-release");
  g_mutex_unlock (&f->lock);
  /* the Control_R press left CONTROL in the state of later events */
  {
    GstNavigationModifierType st = 0;
    GstEvent *ev = gst_event_new_navigation (gst_structure_copy (nav_get (f,
                5)));
    fail_unless (gst_navigation_event_parse_modifier_state (ev, &st));
    fail_unless (st & GST_NAVIGATION_MODIFIER_CONTROL_MASK);
    gst_event_unref (ev);
  }
  g_byte_array_unref (a);
  spice_raw_close (in);
  spice_raw_session_free (s);
  fixture_free (f);
}

GST_END_TEST;

/* the upstream's lock LEDs, as the tiler forwards them on draw */
static void
push_key_locks (Fixture * f, guint locks)
{
  GstPad *pad = gst_element_get_static_pad (f->src, "src");

  fail_unless (gst_pad_push_event (pad, gst_spice_event_new_key_locks (FALSE,
              locks)));
  gst_object_unref (pad);
  push_full (f, 0);             /* sticky events go with data */
}

static gboolean
key_locks_at_least (Fixture * f, gpointer d)
{
  return f->key_locks->len >= GPOINTER_TO_UINT (d);
}

/* the KEY_MODIFIERS a raw inputs channel reads in @ms (INPUTS_INIT's
 * modifiers too, as the first, when @init) */
static GArray *
read_modifiers (SpiceRawConn * in, guint ms, gboolean init)
{
  GArray *got = g_array_new (FALSE, FALSE, sizeof (guint));
  gint64 end = g_get_monotonic_time () + ms * 1000;
  guint16 type;
  guint8 *body;
  gsize size;

  while (g_get_monotonic_time () < end &&
      spice_raw_read_msg (in, MAX ((end - g_get_monotonic_time ()) / 1000, 1),
          &type, &body, &size)) {
    if ((type == SPICE_MSG_INPUTS_KEY_MODIFIERS ||
            (init && type == SPICE_MSG_INPUTS_INIT)) && size >= 2) {
      guint m = GST_READ_UINT16_LE (body);

      g_array_append_val (got, m);
    }
    g_free (body);
  }
  return got;
}

/* The upstream's lock LEDs (spice-key-locks on draw) are INPUTS_INIT's;
 * a change is one KEY_MODIFIERS to the client, the same state again
 * nothing (spice-server repeats its state; a client that re-syncs must
 * not get an echo). A client's KEY_MODIFIERS goes upstream as
 * spice-key-locks. */
GST_START_TEST (test_key_locks_raw)
{
  const guint caps = SPICE_KEYBOARD_MODIFIER_FLAGS_CAPS_LOCK;
  const guint num = SPICE_KEYBOARD_MODIFIER_FLAGS_NUM_LOCK;
  Fixture *f = fixture_new (320, 240, NULL);
  SpiceRawSession *s;
  SpiceRawConn *in;
  GByteArray *a = g_byte_array_new ();
  GArray *got;
  guint locks = 0;

  fixture_start (f, TRUE);
  push_key_locks (f, caps);
  s = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (s != NULL);
  /* the event reached the sink in the push: the state is there before
   * the client links */
  {
    GstStructure *st = NULL;

    g_object_get (f->sink, "stats", &st, NULL);
    fail_unless (gst_structure_get_uint (st, "key-locks", &locks));
    gst_structure_free (st);
  }
  fail_unless_equals_int (locks, caps);
  in = spice_raw_connect (f->port, 10);
  fail_unless (spice_raw_link (in, s->session_id, SPICE_CHANNEL_INPUTS,
          0x0d, 0, NULL, NULL));
  fail_unless_equals_int (in->link_result, 0);
  got = read_modifiers (in, 300, TRUE);
  fail_unless_equals_int (got->len, 1);
  fail_unless_equals_int (g_array_index (got, guint, 0), caps);
  g_array_unref (got);

  /* the same state again, then a change: one KEY_MODIFIERS */
  push_key_locks (f, caps);
  push_key_locks (f, caps | num);
  push_key_locks (f, caps | num);
  got = read_modifiers (in, 1000, FALSE);
  fail_unless_equals_int (got->len, 1);
  fail_unless_equals_int (g_array_index (got, guint, 0), caps | num);
  g_array_unref (got);

  /* the client's locks go upstream */
  gst_spice_put_u16 (a, num);
  fail_unless (spice_raw_send_msg (in, SPICE_MSGC_INPUTS_KEY_MODIFIERS,
          a->data, a->len));
  fail_unless (wait_for (f, key_locks_at_least, GUINT_TO_POINTER (1),
          10000));
  g_mutex_lock (&f->lock);
  fail_unless_equals_int (f->key_locks->len, 1);
  fail_unless_equals_int (g_array_index (f->key_locks, guint, 0), num);
  g_mutex_unlock (&f->lock);
  g_byte_array_unref (a);
  spice_raw_close (in);
  spice_raw_session_free (s);
  fixture_free (f);
}

GST_END_TEST;

/* -------------------------------------------------------------- cursor */

GST_START_TEST (test_cursor)
{
  Fixture *f = fixture_new (320, 240, NULL);
  SpiceRawSession *s;
  SpiceRawConn *cur;
  guint16 type;
  guint8 *body;
  gsize size;
  GstSpiceCursor c = { 0, };
  GstMapInfo map;
  gboolean got_set = FALSE;

  fixture_start (f, TRUE);
  s = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (s != NULL);
  cur = spice_raw_connect (f->port, 10);
  fail_unless (spice_raw_link (cur, s->session_id, SPICE_CHANNEL_CURSOR,
          0x0d, 0, NULL, NULL));
  fail_unless_equals_int (cur->link_result, 0);
  fail_unless (spice_raw_read_msg (cur, 5000, &type, &body, &size));
  fail_unless_equals_int (type, SPICE_MSG_CURSOR_INIT);
  /* default arrow: pos(4) trail(4) visible(1) flags(2) header(17) + pixels */
  fail_unless (size > 28);
  fail_unless_equals_int (GST_READ_UINT16_LE (body + 9), 0);
  g_free (body);
  /* a sticky spice-cursor event on draw becomes CURSOR_SET */
  c.visible = TRUE;
  c.x = 30;
  c.y = 40;
  c.hot_x = 1;
  c.hot_y = 2;
  c.width = 8;
  c.height = 8;
  c.serial = 7;
  c.shape = gst_buffer_new_allocate (NULL, 8 * 8 * 4, NULL);
  gst_buffer_map (c.shape, &map, GST_MAP_WRITE);
  memset (map.data, 0x80, map.size);
  gst_buffer_unmap (c.shape, &map);
  {
    GstPad *pad = gst_element_get_static_pad (f->src, "src");
    fail_unless (gst_pad_push_event (pad, gst_spice_event_new_cursor (&c)));
    gst_object_unref (pad);
  }
  gst_buffer_unref (c.shape);
  push_full (f, 0);             /* sticky events go with data */
  while (spice_raw_read_msg (cur, 5000, &type, &body, &size)) {
    if (type == SPICE_MSG_CURSOR_SET) {
      fail_unless_equals_int (size, 5 + 2 + 17 + 8 * 8 * 4);
      fail_unless_equals_int (GST_READ_UINT16_LE (body), 30);
      fail_unless_equals_int (GST_READ_UINT16_LE (body + 2), 40);
      fail_unless_equals_int (body[4], 1);
      fail_unless_equals_int (GST_READ_UINT16_LE (body + 5), 0);
      fail_unless_equals_int (body[24], 0x80);
      got_set = TRUE;
    }
    g_free (body);
    if (got_set)
      break;
  }
  fail_unless (got_set);
  spice_raw_close (cur);
  spice_raw_session_free (s);
  fixture_free (f);
}

GST_END_TEST;


/* ------------------------------------------------- clients in a thread */

typedef struct {
  Fixture *f;
  guint16 port;
  gchar *log;
  gint status;
  gint duration_ms;
} ClientRun;

static gpointer
client_thread (gpointer data)
{
  ClientRun *r = data;
  gchar *dur = g_strdup_printf ("%d", r->duration_ms);
  const gchar *extra[] = { "--log", "--duration-ms", dur, NULL };
  gint w, h;
  guint8 *shot = NULL;

  r->status = client_shot (r->port, extra, &shot, &w, &h, &r->log);
  g_free (dur);
  return shot;
}

/* a counter of the first client's stats */
static guint64
session_stat (Fixture * f, const gchar * field)
{
  GstStructure *st = NULL;
  const GValue *arr;
  guint64 v = 0;

  g_object_get (f->sink, "stats", &st, NULL);
  arr = gst_structure_get_value (st, "client-stats");
  if (gst_value_array_get_size (arr) > 0) {
    const GstStructure *c =
        gst_value_get_structure (gst_value_array_get_value (arr, 0));
    gst_structure_get_uint64 (c, field, &v);
  }
  gst_structure_free (st);
  return v;
}

static guint
session_updates (Fixture * f)
{
  return (guint) session_stat (f, "updates");
}

/* waits until a client has its first picture */
static void
wait_client_picture (Fixture * f)
{
  gint64 waited = 0;

  while (session_updates (f) < 1 && waited < 20000) {
    g_usleep (50 * 1000);
    waited += 50;
  }
  fail_unless (session_updates (f) >= 1, "client never got a picture");
}

/* ---------------------------------------------------------- COPY_BITS */

/* scrolls @win of the fixture's picture by @step rows (> 0: up), new
 * rows from pattern @seed, and pushes the copy plus the new rows */
static void
scroll_window (Fixture * f, const GstVideoRectangle * win, gint step,
    guint seed)
{
  GstSpiceDrawsWriter *wr = gst_spice_draws_writer_new (0, 0);
  GstVideoRectangle dest = *win, fresh = *win;
  guint8 *pat = g_malloc ((gsize) f->w * f->h * 4);
  gint y, src_y;

  dest.h = win->h - ABS (step);
  dest.y = step > 0 ? win->y : win->y - step;
  src_y = dest.y + step;
  fresh.h = ABS (step);
  fresh.y = step > 0 ? win->y + win->h - step : win->y;
  make_pattern (pat, f->w, f->h, seed);
  g_mutex_lock (&f->lock);
  gst_spice_copy_bits_apply (f->picture, f->w * 4, &dest, dest.x, src_y);
  for (y = fresh.y; y < fresh.y + fresh.h; y++)
    memcpy (f->picture + ((gsize) y * f->w + fresh.x) * 4,
        pat + ((gsize) y * f->w + fresh.x) * 4, (gsize) fresh.w * 4);
  gst_spice_draws_writer_add_copy_bits (wr, &dest, dest.x, src_y);
  add_lz4 (wr, &fresh, f->picture + ((gsize) fresh.y * f->w + fresh.x) * 4,
      f->w * 4);
  g_mutex_unlock (&f->lock);
  g_free (pat);
  fail_unless_equals_int (gst_app_src_push_buffer (GST_APP_SRC (f->src),
          gst_spice_draws_writer_finish (wr)), GST_FLOW_OK);
}

/* spice-gtk applies our COPY_BITS (up and down, overlapping source and
 * destination) and the rows drawn after it: its picture is exact. A client
 * that joins afterwards gets it exact too, by a refresh (a copy drops the
 * sink's last-known picture). Copies with a source off the surface are
 * dropped with a warning. */
GST_START_TEST (test_copy_bits_spicegtk)
{
  Fixture *f = fixture_new (320, 240, NULL);
  GstVideoRectangle win = { 21, 30, 270, 181 }, bad = { 0, 200, 320, 40 };
  const gint steps[] = { 4, 4, 4, 9, -6, -6, 12, 1, -3, 5, 60, -1 };
  ClientRun run = { f, 0, NULL, -1, 2500 };
  GstSpiceDrawsWriter *wr;
  guint refreshes;
  guint8 *shot;
  guint64 copies;
  GThread *t;
  gint w, h;
  guint i;

  fixture_start (f, TRUE);
  run.port = f->port;
  t = g_thread_new ("client", client_thread, &run);
  wait_client_picture (f);
  for (i = 0; i < G_N_ELEMENTS (steps); i++) {
    scroll_window (f, &win, steps[i], 40 + i);
    g_usleep (40 * 1000);
  }
  /* hostile: the source would be below the surface */
  wr = gst_spice_draws_writer_new (0, 0);
  gst_spice_draws_writer_add_copy_bits (wr, &bad, 0, 220);
  fail_unless_equals_int (gst_app_src_push_buffer (GST_APP_SRC (f->src),
          gst_spice_draws_writer_finish (wr)), GST_FLOW_OK);
  copies = session_stat (f, "copies");
  shot = g_thread_join (t);
  fail_unless_equals_int (run.status, 0);
  fail_unless_equals_int (copies, G_N_ELEMENTS (steps));
  fail_unless_equals_int (diff_full (f, shot, 320, 240), 0);
  g_free (shot);
  g_free (run.log);

  g_mutex_lock (&f->lock);
  refreshes = f->refresh_events;
  g_mutex_unlock (&f->lock);
  shot = NULL;
  fail_unless_equals_int (client_shot (f->port, NULL, &shot, &w, &h, NULL),
      0);
  fail_unless_equals_int (diff_full (f, shot, w, h), 0);
  g_mutex_lock (&f->lock);
  fail_unless (f->refresh_events > refreshes);
  g_mutex_unlock (&f->lock);
  g_free (shot);
  fixture_free (f);
}

GST_END_TEST;

/* -------------------------------------------------------------- streams */

static gint
cmp_i64 (gconstpointer a, gconstpointer b)
{
  gint64 x = *(const gint64 *) a, y = *(const gint64 *) b;
  return x < y ? -1 : x > y;
}

/* Streams frames spaced 300 ms apart to a spice-gtk client; each frame
 * must be shown (display-invalidate of the stream area) within that
 * interval: no mm-time lag, no dropped "late" frame. */
static void
check_stream_slack (const gchar * enc, gdouble min_psnr, gint first_ms,
    guint n_frames);

static void
check_stream (const gchar * enc, gdouble min_psnr)
{
  check_stream_slack (enc, min_psnr, 300, 10);
}

/* @first_ms: the slot of the first frame (the client may build its decoder
 * pipeline only when the first frame arrives); @n_frames (at most 32)
 * pushed 300 ms apart, at least half of them after that */
static void
check_stream_slack (const gchar * enc, gdouble min_psnr, gint first_ms,
    guint n_frames)
{
  gint64 first_inv;
  Fixture *f = fixture_new (320, 240,
      "appsrc name=vsrc format=time is-live=true ! sink.stream_0");
  GstVideoRectangle dest = { 80, 60, 160, 120 };
  GstCaps *caps = NULL;
  GPtrArray *frames = encode_frames ("colors", 160, 120, n_frames, enc,
      &caps);
  guint8 *ref = reference_frame ("colors", 160, 120);
  ClientRun run = { f, 0, NULL, -1, 2500 + 300 * (gint) n_frames };
  GThread *t;
  guint8 *shot;
  gint64 push[32];
  GArray *delays = g_array_new (FALSE, FALSE, sizeof (gint64));
  gchar **lines;
  guint i, j;
  gdouble psnr;

  f->stream_src = gst_bin_get_by_name (GST_BIN (f->pipeline), "vsrc");
  g_object_set (f->stream_src, "caps", caps, NULL);
  watch_stream_events (f, f->stream_src);
  fixture_start (f, TRUE);
  run.port = f->port;
  t = g_thread_new ("client", client_thread, &run);
  wait_client_picture (f);
  g_usleep (300 * 1000);
  for (i = 0; i < frames->len; i++) {
    push[i] = g_get_monotonic_time ();
    push_stream_frame (f, frames, i, &dest, GST_CLOCK_TIME_NONE);
    g_usleep (300 * 1000);
  }
  shot = g_thread_join (t);
  fail_unless_equals_int (run.status, 0);
  fail_unless (shot != NULL);
  /* the stream area shows the source */
  psnr = psnr_area (shot, 320 * 4, &dest, ref);
  GST_INFO ("%s: PSNR of the stream area %.2f dB", enc, psnr);
  fail_unless (psnr >= min_psnr, "PSNR %.2f < %.2f", psnr, min_psnr);
  /* the draws around it are exact */
  {
    GstVideoRectangle top = { 0, 0, 320, 60 };
    guint8 *exp = g_malloc (320 * 60 * 4);
    memcpy (exp, f->picture, 320 * 60 * 4);
    fail_unless_equals_int (test_bgrx_count_diff (shot, 320 * 4, exp,
            320 * 4, top.w, top.h, NULL, NULL), 0);
    g_free (exp);
  }
  GST_DEBUG ("%s client log:\n%s", enc, run.log);
  /* one invalidate of the stream area per frame, inside its interval */
  lines = g_strsplit (run.log, "\n", -1);
  /* the first display of the stream area: within first_ms of the first
   * frame; frames pushed before it (the client was still building its
   * decoder) may be shown until 300 ms after it */
  first_inv = -1;
  for (j = 0; lines[j] && first_inv < 0; j++) {
    gint64 ts;
    gint x, y, w, h;

    if (sscanf (lines[j], "INV %" G_GINT64_FORMAT " %d %d %d %d", &ts, &x,
            &y, &w, &h) == 5 && x >= dest.x && y >= dest.y &&
        x + w <= dest.x + dest.w && y + h <= dest.y + dest.h && ts >= push[0])
      first_inv = ts;
  }
  fail_unless (first_inv >= 0 && first_inv - push[0] < first_ms * 1000,
      "%s: the stream area was not shown within %d ms of the first frame",
      enc, first_ms);
  for (i = 0; i < frames->len; i++) {
    gint64 end = i + 1 < frames->len ? push[i + 1] : push[i] + 300000;
    gint64 d = -1;

    if (push[i] < first_inv)
      end = MAX (end, first_inv + 300000);

    for (j = 0; lines[j]; j++) {
      gint64 ts;
      gint x, y, w, h;

      if (sscanf (lines[j], "INV %" G_GINT64_FORMAT " %d %d %d %d", &ts, &x,
              &y, &w, &h) != 5)
        continue;
      if (x >= dest.x && y >= dest.y && x + w <= dest.x + dest.w &&
          y + h <= dest.y + dest.h && ts >= push[i] && ts < end) {
        d = ts - push[i];
        break;
      }
    }
    fail_unless (d >= 0, "%s frame %u was not shown in its slot", enc, i);
    /* the delay that counts is a frame's once the client has its decoder:
     * those before waited for it (bounded by @first_ms above) */
    if (push[i] >= first_inv)
      g_array_append_val (delays, d);
  }
  fail_unless (delays->len >= frames->len / 2, "%s: only %u frames after "
      "the first display", enc, delays->len);
  g_array_sort (delays, cmp_i64);
  GST_INFO ("%s frame delay push->display: min %.1f ms, median %.1f ms, "
      "max %.1f ms", enc, g_array_index (delays, gint64, 0) / 1000.0,
      g_array_index (delays, gint64, delays->len / 2) / 1000.0,
      g_array_index (delays, gint64, delays->len - 1) / 1000.0);
  g_print ("RESULT %s: PSNR %.2f dB, frame delay min %.1f median %.1f "
      "max %.1f ms\n", enc, psnr, g_array_index (delays, gint64, 0) / 1000.0,
      g_array_index (delays, gint64, delays->len / 2) / 1000.0,
      g_array_index (delays, gint64, delays->len - 1) / 1000.0);
  fail_unless (g_array_index (delays, gint64, delays->len / 2) < 150000);
  g_strfreev (lines);
  g_array_unref (delays);
  g_free (run.log);
  g_free (shot);
  g_free (ref);
  g_ptr_array_unref (frames);
  gst_caps_unref (caps);
  fixture_free (f);
}

GST_START_TEST (test_stream_mjpeg)
{
  check_stream ("jpegenc quality=90", 26.0);
}

GST_END_TEST;

GST_START_TEST (test_stream_vp8)
{
  check_stream ("vp8enc deadline=1 target-bitrate=2000000", 28.0);
}

GST_END_TEST;

/* H.264 as the tiler pipelines encode it (byte-stream, one AU per buffer).
 * spice-gtk builds its H.264 pipeline (uridecodebin, typefind, h264parse,
 * avdec_h264) when the first frame arrives: measured ~0.55 s on the 2-core
 * VM, so the first frame has a 1.5 s slot; every later one 300 ms. */
GST_START_TEST (test_stream_h264)
{
  /* spice-gtk builds its H.264 decoder when the stream starts: 1.4 s in
   * a plain build under load, more with ASan */
  check_stream_slack ("x264enc tune=zerolatency speed-preset=ultrafast "
      "byte-stream=true aud=true bitrate=2000 ! "
      "video/x-h264,stream-format=byte-stream,alignment=au", 28.0, 4000, 28);
}

GST_END_TEST;

GST_START_TEST (test_stream_vp9)
{
  check_stream ("vp9enc deadline=1 target-bitrate=2000000", 28.0);
}

GST_END_TEST;


/* ------------------------------------------- draws over a stream's area */

static gboolean
got_n_stream_datas (SpiceRawSession * s, gpointer data)
{
  return s->stream_datas >= GPOINTER_TO_UINT (data);
}

/* A client shows a stream frame at its multimedia time (here 700 ms after
 * it arrives: stream-latency), so a draw over the stream's area sent after
 * the frame would be painted over, leaving a lossy area that nothing
 * corrects (the rig's 80/10 video cell: refinement painted over by the
 * last frame, exact only at the stream's end). The sink hides the stream
 * under such a draw (STREAM_CLIP to nothing) until a frame newer than the
 * draw (by PTS) comes: spice-gtk ends on the exact picture, a frame older
 * than the draw that arrives after it stays hidden, a newer one shows the
 * stream again (STREAM_CLIP NONE before its data). */
GST_START_TEST (test_stream_hidden_under_draw)
{
  Fixture *f = fixture_new (320, 240, "stream-latency=700 "
      "appsrc name=vsrc format=time is-live=true ! sink.stream_0");
  GstVideoRectangle dest = { 80, 60, 160, 120 };
  GstCaps *caps = NULL;
  GPtrArray *frames = encode_frames ("colors", 160, 120, 3,
      "jpegenc quality=90", &caps);
  ClientRun run = { f, 0, NULL, -1, 2500 };
  SpiceRawSession *raw;
  GstBuffer *draw;
  GThread *t;
  guint8 *shot;

  f->stream_src = gst_bin_get_by_name (GST_BIN (f->pipeline), "vsrc");
  g_object_set (f->stream_src, "caps", caps, NULL);
  fixture_start (f, TRUE);
  run.port = f->port;
  t = g_thread_new ("client", client_thread, &run);
  wait_client_picture (f);
  raw = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (raw != NULL);
  fail_unless (spice_raw_session_pump (raw, 10000, has_mark, NULL));
  g_usleep (300 * 1000);

  /* a frame, then (while the client holds it) the area drawn exactly,
   * as refinement does: the same PTS as the frame */
  push_stream_frame (f, frames, 0, &dest, 1 * GST_SECOND);
  g_usleep (100 * 1000);
  draw = rects_buffer (f, &dest, 1, 0);
  GST_BUFFER_PTS (draw) = 1 * GST_SECOND;
  fail_unless_equals_int (gst_app_src_push_buffer (GST_APP_SRC (f->src),
          draw), GST_FLOW_OK);
  g_usleep (100 * 1000);
  /* a frame older than the draw comes late (a queue on the stream branch) */
  push_stream_frame (f, frames, 1, &dest, GST_SECOND / 2);

  /* spice-gtk, 2.5 s after it joined: the draw's pixels, not the frames */
  shot = g_thread_join (t);
  fail_unless_equals_int (run.status, 0);
  fail_unless (shot != NULL);
  fail_unless_equals_int (diff_full (f, shot, 320, 240), 0);
  fail_unless_equals_uint64 (session_stat (f, "stream-frames"), 2);
  fail_unless_equals_uint64 (session_stat (f, "stream-hides"), 1);

  /* a newer frame shows the stream again */
  push_stream_frame (f, frames, 2, &dest, 2 * GST_SECOND);
  fail_unless (spice_raw_session_pump (raw, 10000, got_n_stream_datas,
          GUINT_TO_POINTER (3)), "%s", raw->error ? raw->error : "timeout");
  fail_unless_equals_uint64 (raw->stream_datas, 3);
  fail_unless_equals_uint64 (raw->stream_clips, 2);
  fail_unless_equals_uint64 (raw->stream_datas_hidden, 1);
  fail_unless_equals_int (raw->streams_hidden, 0);
  fail_if (raw->protocol_error);

  spice_raw_session_free (raw);
  g_free (shot);
  g_free (run.log);
  g_ptr_array_unref (frames);
  gst_caps_unref (caps);
  fixture_free (f);
}

GST_END_TEST;

/* --------------------------------------------- late joiners and codecs */

#define LIVE_VP8 "videotestsrc name=vts is-live=true pattern=colors ! " \
  "video/x-raw,width=160,height=120,framerate=25/1 ! " \
  "vp8enc name=enc deadline=1 keyframe-max-dist=100000 ! sink.stream_0"

static gboolean
got_picture_and_stream (SpiceRawSession * s, gpointer data)
{
  return s->draws >= 1 && s->stream_datas >= 1;
}

/* 100 clients in a row join while a VP8 stream runs (key frames only on
 * request): each gets the surface, the exact picture, STREAM_CREATE before
 * data, and frames starting at a key frame. */
GST_START_TEST (test_late_join_stream_100)
{
  Fixture *f = fixture_new (320, 240, LIVE_VP8);
  GstElement *vts = gst_bin_get_by_name (GST_BIN (f->pipeline), "vts");
  guint i;
  gint64 t0;

  GstElement *enc = gst_bin_get_by_name (GST_BIN (f->pipeline), "enc");

  attach_meta (vts, 80, 60, 160, 120, 1);
  /* the encoder consumes force-key-unit: count them at its src pad */
  watch_stream_events (f, enc);
  gst_object_unref (enc);
  fixture_start (f, TRUE);
  t0 = g_get_monotonic_time ();
  for (i = 0; i < 100; i++) {
    SpiceRawSession *s = spice_raw_session_new (f->port, NULL,
        SPICE_RAW_DISPLAY_CAPS_ALL);

    fail_unless (s != NULL, "join %u failed", i);
    fail_unless (spice_raw_session_pump (s, 20000, got_picture_and_stream,
            NULL), "join %u: %s", i, s->error ? s->error : "timeout/closed");
    fail_unless (got_picture_and_stream (s, NULL), "join %u: no picture or "
        "no stream (draws %" G_GUINT64_FORMAT ", frames %" G_GUINT64_FORMAT
        ")", i, s->draws, s->stream_datas);
    fail_unless_equals_int (s->stream_creates, 1);
    fail_unless_equals_int (s->last_codec, SPICE_VIDEO_CODEC_TYPE_VP8);
    fail_unless_equals_int (spice_raw_session_compare (s, f->picture, 320 * 4), 0);
    spice_raw_session_free (s);
  }
  g_print ("RESULT 100 late joins with a VP8 stream: %.1f ms per join\n",
      (g_get_monotonic_time () - t0) / 100000.0);
  fail_unless (f->fku_events >= 100);
  gst_object_unref (vts);
  fixture_free (f);
}

GST_END_TEST;

/* The same with spice-gtk: the stream area decodes after joining. */
GST_START_TEST (test_late_join_stream_spicegtk)
{
  Fixture *f = fixture_new (320, 240, LIVE_VP8);
  GstElement *vts = gst_bin_get_by_name (GST_BIN (f->pipeline), "vts");
  guint8 *ref = reference_frame ("colors", 160, 120);
  GstVideoRectangle dest = { 80, 60, 160, 120 };
  guint i;

  attach_meta (vts, 80, 60, 160, 120, 1);
  fixture_start (f, TRUE);
  for (i = 0; i < 3; i++) {
    const gchar *extra[] = { "--duration-ms", "2000", NULL };
    guint8 *shot = NULL;
    gint w, h;
    gdouble psnr;

    fail_unless_equals_int (client_shot (f->port, extra, &shot, &w, &h,
            NULL), 0);
    psnr = psnr_area (shot, w * 4, &dest, ref);
    GST_INFO ("join %u: stream PSNR %.2f", i, psnr);
    fail_unless (psnr > 28.0, "join %u: PSNR %.2f", i, psnr);
    {
      GstVideoRectangle top = { 0, 0, 320, 60 };
      fail_unless_equals_int (test_bgrx_count_diff (shot, w * 4, f->picture,
              320 * 4, top.w, top.h, NULL, NULL), 0);
    }
    g_free (shot);
  }
  g_free (ref);
  gst_object_unref (vts);
  fixture_free (f);
}

GST_END_TEST;

static gboolean
stream_control_is (Fixture * f, gpointer d)
{
  return f->stream_control == GPOINTER_TO_INT (d);
}

static gboolean
has_stream (SpiceRawSession * s, gpointer d)
{
  return s->stream_datas >= 1;
}

static gboolean
stream_gone (SpiceRawSession * s, gpointer d)
{
  return s->stream_destroys >= 1 && s->streams_live == 0;
}

/* A client that cannot decode VP8 joins: the stream is disabled upstream
 * (spice-stream-control enabled=FALSE), the capable client sees it
 * destroyed, the area comes as draws and both have the exact picture. */
GST_START_TEST (test_client_without_codec)
{
  Fixture *f = fixture_new (320, 240, LIVE_VP8);
  GstElement *vts = gst_bin_get_by_name (GST_BIN (f->pipeline), "vts");
  GstVideoRectangle area = { 80, 60, 160, 120 };
  SpiceRawSession *good, *old;
  guint32 no_vp8 = (1u << SPICE_DISPLAY_CAP_LZ4_COMPRESSION) |
      (1u << SPICE_DISPLAY_CAP_MULTI_CODEC) |
      (1u << SPICE_DISPLAY_CAP_CODEC_MJPEG);

  attach_meta (vts, 80, 60, 160, 120, 1);
  watch_stream_events (f, vts);
  fixture_start (f, TRUE);
  good = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (good != NULL);
  fail_unless (spice_raw_session_pump (good, 20000, has_stream, NULL));
  fail_unless_equals_int (f->stream_control, -1);

  old = spice_raw_session_new (f->port, NULL, no_vp8);
  fail_unless (old != NULL);
  fail_unless (wait_for (f, stream_control_is, GINT_TO_POINTER (0), 10000));
  /* play the tiler: the stream area now comes as draws */
  update_rect (f, &area, 77);
  fail_unless (spice_raw_session_pump (good, 10000, stream_gone, NULL));
  fail_unless (spice_raw_session_pump (old, 1500, NULL, NULL));
  fail_unless (spice_raw_session_pump (good, 500, NULL, NULL));
  fail_unless_equals_int (old->stream_creates, 0);
  fail_unless_equals_int (spice_raw_session_compare (old, f->picture, 320 * 4), 0);
  fail_unless_equals_int (spice_raw_session_compare (good, f->picture, 320 * 4), 0);
  /* it leaves: the stream is enabled again */
  spice_raw_session_free (old);
  fail_unless (wait_for (f, stream_control_is, GINT_TO_POINTER (1), 10000));
  fail_unless (spice_raw_session_pump (good, 20000, has_stream, NULL));
  spice_raw_session_free (good);
  gst_object_unref (vts);
  fixture_free (f);
}

GST_END_TEST;

/* the same region in two codecs, as a tee after the tiler gives them */
#define LIVE_VP8_MJPEG LIVE_VP8 " videotestsrc name=vts1 is-live=true " \
  "pattern=colors ! video/x-raw,width=160,height=120,framerate=25/1 ! " \
  "jpegenc ! sink.stream_1"

static gboolean
stream_of_codec (SpiceRawSession * s, gpointer d)
{
  return s->streams_live != 0 && s->last_codec == GPOINTER_TO_UINT (d);
}

/* PREFERRED_VIDEO_CODEC_TYPE: @n codecs */
static void
prefer_codecs (SpiceRawSession * s, const guint8 * codecs, guint8 n)
{
  guint8 body[8];

  body[0] = n;
  memcpy (body + 1, codecs, n);
  fail_unless (spice_raw_send_msg (s->display,
          SPICE_MSGC_DISPLAY_PREFERRED_VIDEO_CODEC_TYPE, body, 1 + n));
}

/* Two stream pads (VP8 on stream_0, MJPEG on stream_1): each client gets
 * one of them: the lowest pad it decodes, or its preferred codec; a
 * preference mid-session moves that client alone (its stream destroyed,
 * the other created at a key frame); a client without VP8 takes the MJPEG
 * pad instead of disabling the stream for everyone. */
GST_START_TEST (test_stream_branches)
{
  Fixture *f = fixture_new (320, 240, LIVE_VP8_MJPEG);
  GstElement *vts = gst_bin_get_by_name (GST_BIN (f->pipeline), "vts");
  GstElement *vts1 = gst_bin_get_by_name (GST_BIN (f->pipeline), "vts1");
  /* a codec nobody knows first: skipped */
  const guint8 mjpeg[] = { 200, SPICE_VIDEO_CODEC_TYPE_MJPEG };
  const guint8 vp8_first[] = { SPICE_VIDEO_CODEC_TYPE_VP8,
    SPICE_VIDEO_CODEC_TYPE_MJPEG
  };
  guint32 no_vp8 = (1u << SPICE_DISPLAY_CAP_LZ4_COMPRESSION) |
      (1u << SPICE_DISPLAY_CAP_MULTI_CODEC) |
      (1u << SPICE_DISPLAY_CAP_CODEC_MJPEG);
  SpiceRawSession *a, *b, *c;
  guint64 a_datas;
  /* the counts once each has its VP8 stream: at the start the first MJPEG
   * frame can beat the first VP8 one, and a client gets MJPEG for a
   * moment (docs/spicesink.md) */
  guint a_creates, a_destroys, b_creates, b_destroys;

  attach_meta (vts, 80, 60, 160, 120, 1);
  attach_meta (vts1, 80, 60, 160, 120, 1);
  watch_stream_events (f, vts);
  fixture_start (f, TRUE);
  a = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (a != NULL);
  fail_unless (spice_raw_session_pump (a, 20000, stream_of_codec,
          GUINT_TO_POINTER (SPICE_VIDEO_CODEC_TYPE_VP8)));
  b = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (b != NULL);
  fail_unless (spice_raw_session_pump (b, 20000, stream_of_codec,
          GUINT_TO_POINTER (SPICE_VIDEO_CODEC_TYPE_VP8)));
  fail_unless (spice_raw_session_pump (a, 200, NULL, NULL));
  a_creates = a->stream_creates;
  a_destroys = a->stream_destroys;
  b_creates = b->stream_creates;
  b_destroys = b->stream_destroys;
  fail_unless_equals_int (a_creates, a_destroys + 1);
  fail_unless_equals_int (b_creates, b_destroys + 1);

  /* b prefers MJPEG: its VP8 stream goes, an MJPEG one comes */
  prefer_codecs (b, mjpeg, 2);
  fail_unless (spice_raw_session_pump (b, 20000, stream_of_codec,
          GUINT_TO_POINTER (SPICE_VIDEO_CODEC_TYPE_MJPEG)));
  fail_unless_equals_int (b->stream_destroys, b_destroys + 1);
  fail_unless_equals_int (b->stream_creates, b_creates + 1);
  a_datas = a->stream_datas;
  fail_unless (spice_raw_session_pump (a, 1000, NULL, NULL));
  fail_unless (spice_raw_session_pump (b, 500, NULL, NULL));
  /* one stream each, never both; a kept its own */
  fail_unless_equals_int (a->stream_creates, a_creates);
  fail_unless_equals_int (a->stream_destroys, a_destroys);
  fail_unless_equals_int (a->last_codec, SPICE_VIDEO_CODEC_TYPE_VP8);
  fail_unless (a->stream_datas > a_datas);
  fail_unless_equals_int (b->stream_creates, b_creates + 1);

  /* a client without VP8 takes MJPEG; nothing is disabled */
  c = spice_raw_session_new (f->port, NULL, no_vp8);
  fail_unless (c != NULL);
  fail_unless (spice_raw_session_pump (c, 20000, stream_of_codec,
          GUINT_TO_POINTER (SPICE_VIDEO_CODEC_TYPE_MJPEG)));
  fail_unless_equals_int (f->stream_control, -1);

  /* b back to VP8 (its first preference), from a key frame on */
  prefer_codecs (b, vp8_first, 2);
  fail_unless (spice_raw_session_pump (b, 20000, stream_of_codec,
          GUINT_TO_POINTER (SPICE_VIDEO_CODEC_TYPE_VP8)));
  fail_unless_equals_int (b->stream_destroys, b_destroys + 2);
  fail_unless_equals_int (b->stream_creates, b_creates + 2);
  fail_unless (b->error == NULL, "%s", b->error);
  fail_unless (!a->protocol_error && !b->protocol_error && !c->protocol_error);
  spice_raw_session_free (c);
  spice_raw_session_free (b);
  spice_raw_session_free (a);
  gst_object_unref (vts1);
  gst_object_unref (vts);
  fixture_free (f);
}

GST_END_TEST;

/* --------------------------------------------------------- hostile input */

typedef struct {
  Fixture *f;
  volatile gint stop;
  guint pushed;
  gboolean big;
} Pusher;

static gpointer
pusher_thread (gpointer data)
{
  Pusher *p = data;
  GstVideoRectangle r = { 40, 40, 64, 64 };
  GstVideoRectangle full = { 0, 0, p->f->w, p->f->h };

  while (!g_atomic_int_get (&p->stop)) {
    update_rect (p->f, p->big ? &full : &r, 100 + p->pushed % 7);
    p->pushed++;
    g_usleep (p->big ? 10 * 1000 : 40 * 1000);
  }
  return NULL;
}

static void
raw_bytes_expect_error (guint16 port, const guint8 * data, gsize size,
    guint32 expected_error)
{
  SpiceRawConn *c = spice_raw_connect (port, 10);
  guint8 hdr[16], reply[178];

  fail_unless (c != NULL);
  fail_unless (spice_raw_send (c, data, size));
  fail_unless (spice_raw_recv_exact (c, hdr, 16, 5000));
  fail_unless_equals_int (GST_READ_UINT32_LE (hdr), SPICE_MAGIC);
  fail_unless (spice_raw_recv_exact (c, reply, 178, 5000));
  fail_unless_equals_int (GST_READ_UINT32_LE (reply), expected_error);
  fail_unless (spice_raw_wait_closed (c, 5000));
  spice_raw_close (c);
}

static void
linked_then_expect_close (Fixture * f, guint32 session, guint8 type,
    guint16 msg, const guint8 * body, gsize size, gboolean raw)
{
  SpiceRawConn *c = spice_raw_connect (f->port, 10);

  fail_unless (spice_raw_link (c, session, type, 0x0d, 0, NULL, NULL));
  fail_unless_equals_int (c->link_result, 0);
  if (raw)
    spice_raw_send (c, body, size);
  else
    spice_raw_send_msg (c, msg, body, size);
  fail_unless (spice_raw_wait_closed (c, 5000), "connection not closed");
  spice_raw_close (c);
}

GST_START_TEST (test_hostile_input)
{
  /* 20 truncated links from one address come faster than the server reads
   * their ends: the per-source cap (tests/admission) would refuse the
   * links after them, so it is above them here */
  Fixture *f = fixture_new (320, 240, "handshake-timeout=1000 "
      "client-timeout=300 queue-size=65536 notsent-lowat=16384 "
      "max-links-per-source=32");
  SpiceRawSession *good, *lazy;
  Pusher p = { f, 0, 0, FALSE };
  GThread *t;
  guint8 buf[64];
  GByteArray *a = g_byte_array_new ();
  GstStructure *st;
  const GValue *arr;
  guint i;
  guint64 behind = 0;

  fixture_start (f, TRUE);
  good = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (good != NULL);
  t = g_thread_new ("pusher", pusher_thread, &p);

  /* wrong magic */
  memset (buf, 'X', 16);
  raw_bytes_expect_error (f->port, buf, 16, SPICE_LINK_ERR_INVALID_MAGIC);
  /* huge link size */
  test_wire_write_link_header (a, 0x7fffffff);
  raw_bytes_expect_error (f->port, a->data, a->len,
      SPICE_LINK_ERR_INVALID_DATA);
  g_byte_array_set_size (a, 0);
  /* wrong major version */
  gst_spice_put_u32 (a, SPICE_MAGIC);
  gst_spice_put_u32 (a, 1);
  gst_spice_put_u32 (a, 0);
  gst_spice_put_u32 (a, 18);
  raw_bytes_expect_error (f->port, a->data, a->len,
      SPICE_LINK_ERR_VERSION_MISMATCH);
  g_byte_array_set_size (a, 0);
  /* link message with caps beyond its end */
  {
    GstSpiceLinkMess m = { 0, };
    m.channel_type = 1;
    m.n_common = 1;
    test_wire_write_link_mess (a, &m);
    GST_WRITE_UINT32_LE (a->data + 16 + 6, 1000);       /* num_common_caps */
    raw_bytes_expect_error (f->port, a->data, a->len,
        SPICE_LINK_ERR_INVALID_DATA);
    g_byte_array_set_size (a, 0);
  }
  /* truncated link, then gone; and many of them */
  for (i = 0; i < 20; i++) {
    SpiceRawConn *c = spice_raw_connect (f->port, 10);
    test_wire_write_link_header (a, 40);
    spice_raw_send (c, a->data, a->len);
    spice_raw_send (c, (const guint8 *) "partial", 7);
    spice_raw_close (c);
    g_byte_array_set_size (a, 0);
  }
  /* handshake timeout: connects and says nothing */
  {
    SpiceRawConn *c = spice_raw_connect (f->port, 10);
    fail_unless (spice_raw_wait_closed (c, 8000));
    spice_raw_close (c);
  }
  /* after linking: unknown type, oversized known type, wrong channel */
  memset (buf, 0, sizeof (buf));
  linked_then_expect_close (f, good->session_id, SPICE_CHANNEL_INPUTS,
      999, buf, 8, FALSE);
  linked_then_expect_close (f, good->session_id, SPICE_CHANNEL_INPUTS,
      SPICE_MSGC_INPUTS_KEY_DOWN, buf, 40, FALSE);
  {
    /* a header announcing 1 GiB */
    guint8 h[6];
    gst_spice_wire_put_header (h, TRUE, 0, SPICE_MSGC_INPUTS_KEY_DOWN,
        1u << 30);
    linked_then_expect_close (f, good->session_id, SPICE_CHANNEL_INPUTS,
        0, h, 6, TRUE);
  }
  linked_then_expect_close (f, good->session_id, SPICE_CHANNEL_INPUTS,
      SPICE_MSGC_INPUTS_KEY_SCANCODE, (const guint8 *) "\xe0\xe0", 2,
      FALSE);
  {
    SpiceRawConn *c = spice_raw_connect (f->port, 10);
    /* a display channel for a session that does not exist */
    fail_unless (spice_raw_link (c, 0x12345678, SPICE_CHANNEL_DISPLAY,
            0x0d, 0, NULL, NULL));
    fail_unless_equals_int (c->link_result,
        SPICE_LINK_ERR_BAD_CONNECTION_ID);
    spice_raw_close (c);
  }

  /* a client that never reads, while big updates flow */
  lazy = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (lazy != NULL);
  p.big = TRUE;
  for (i = 0; i < 30; i++)
    fail_unless (spice_raw_session_pump (good, 100, NULL, NULL),
        "good client: %s", good->error ? good->error : "closed");
  g_atomic_int_set (&p.stop, 1);
  g_thread_join (t);
  fail_unless (spice_raw_session_pump (good, 1500, NULL, NULL));
  fail_unless_equals_int (spice_raw_session_compare (good, f->picture, 320 * 4), 0);
  g_object_get (f->sink, "stats", &st, NULL);
  arr = gst_structure_get_value (st, "client-stats");
  for (i = 0; i < gst_value_array_get_size (arr); i++) {
    guint64 b = 0;
    gst_structure_get_uint64 (gst_value_get_structure
        (gst_value_array_get_value (arr, i)), "behind-count", &b);
    behind += b;
  }
  GST_INFO ("stats %" GST_PTR_FORMAT, st);
  gst_structure_free (st);
  fail_unless (behind >= 1, "the lazy client never fell behind");
  g_print ("RESULT hostile: %u updates pushed, good client exact\n",
      p.pushed);
  spice_raw_session_free (lazy);
  spice_raw_session_free (good);
  g_byte_array_unref (a);
  fixture_free (f);
}

GST_END_TEST;


/* ------------------------------------------------- with the real tiler */

static GstPadProbeReturn
nav_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  Fixture *f = data;
  GstEvent *ev = GST_PAD_PROBE_INFO_EVENT (info);

  if (GST_EVENT_TYPE (ev) == GST_EVENT_NAVIGATION) {
    g_mutex_lock (&f->lock);
    g_ptr_array_add (f->nav, gst_structure_copy (gst_event_get_structure
            (ev)));
    g_cond_broadcast (&f->cond);
    g_mutex_unlock (&f->lock);
  }
  return GST_PAD_PROBE_OK;
}

/* videotestsrc ! spicetiler ! spicesink: spice-gtk shows the source (PSNR
 * bound, the tiler may send lossy regions) and its keys reach videotestsrc
 * through the tiler with their scancodes. */
GST_START_TEST (test_tiler_pipeline)
{
  GstElementFactory *tf = gst_element_factory_find ("spicetiler");
  Fixture *f;
  GstElement *p, *sink, *vts;
  GstPad *pad;
  GError *err = NULL;
  gint port = 0, w, h;
  guint8 *shot = NULL, *ref;
  const gchar *extra[] = { "--keys", "0x1e,0x148", "--settle-ms", "800",
    NULL
  };
  GstVideoRectangle all = { 0, 0, 320, 240 };
  gdouble psnr;
  guint i, keys = 0;

  if (!tf) {
    GST_WARNING ("spicetiler not built: skipped");
    return;
  }
  gst_object_unref (tf);
  f = g_new0 (Fixture, 1);
  g_mutex_init (&f->lock);
  g_cond_init (&f->cond);
  f->nav = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_structure_free);
  p = gst_parse_launch ("videotestsrc name=vts is-live=true pattern=colors ! "
      "video/x-raw,format=BGRx,width=320,height=240,framerate=15/1 ! "
      "spicetiler name=t "
      "t.draw ! spicesink name=sink port=0 t.stream ! fakesink", &err);
  fail_unless (p != NULL, "%s", err ? err->message : "");
  sink = gst_bin_get_by_name (GST_BIN (p), "sink");
  vts = gst_bin_get_by_name (GST_BIN (p), "vts");
  pad = gst_element_get_static_pad (vts, "src");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_EVENT_UPSTREAM, nav_probe, f,
      NULL);
  gst_object_unref (pad);
  fail_unless (gst_element_set_state (p, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  g_object_get (sink, "bound-port", &port, NULL);
  fail_unless_equals_int (client_shot (port, extra, &shot, &w, &h, NULL), 0);
  ref = reference_frame_bgrx ("colors", 320, 240);
  psnr = psnr_area (shot, w * 4, &all, ref);
  g_print ("RESULT videotestsrc ! spicetiler ! spicesink: PSNR %.2f dB\n",
      psnr);
  fail_unless (psnr > 30.0, "PSNR %.2f", psnr);
  g_mutex_lock (&f->lock);
  for (i = 0; i < f->nav->len; i++) {
    const GstStructure *s = g_ptr_array_index (f->nav, i);
    guint sc = 0;

    if (g_strcmp0 (gst_structure_get_string (s, "event"), "key-press") ||
        !gst_structure_get_uint (s, "scancode", &sc))
      continue;
    if ((keys == 0 && sc == 0x1e) || (keys == 1 && sc == 0x148))
      keys++;
  }
  g_mutex_unlock (&f->lock);
  fail_unless_equals_int (keys, 2);
  gst_element_set_state (p, GST_STATE_NULL);
  g_free (ref);
  g_free (shot);
  gst_object_unref (vts);
  gst_object_unref (sink);
  gst_object_unref (p);
  g_ptr_array_unref (f->nav);
  g_free (f);
}

GST_END_TEST;

/* --------------------------------------------------------------- stats */

GST_START_TEST (test_stats)
{
  Fixture *f = fixture_new (160, 120, NULL);
  SpiceRawSession *s;
  GstStructure *st = NULL;
  const GValue *arr;
  const GstStructure *c, *disp;
  guint64 bytes = 0;
  guint clients = 0;

  fixture_start (f, TRUE);
  s = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (s != NULL);
  fail_unless (spice_raw_session_pump (s, 2000, NULL, NULL));
  fail_unless (s->draws >= 1);
  g_usleep (1200 * 1000);       /* one ping and one TCP_INFO sample */
  spice_raw_session_pump (s, 200, NULL, NULL);
  g_object_get (f->sink, "stats", &st, NULL);
  fail_unless (st != NULL);
  GST_INFO ("stats: %" GST_PTR_FORMAT, st);
  fail_unless (gst_structure_get_uint (st, "clients", &clients));
  fail_unless_equals_int (clients, 1);
  arr = gst_structure_get_value (st, "client-stats");
  fail_unless_equals_int (gst_value_array_get_size (arr), 1);
  c = gst_value_get_structure (gst_value_array_get_value (arr, 0));
  fail_unless_equals_string (gst_structure_get_string (c, "address"),
      "127.0.0.1");
  fail_unless (gst_structure_has_field (c, "tcp-rtt-us"));
  fail_unless (gst_structure_has_field (c, "tcp-delivery-rate"));
  fail_unless (gst_structure_has_field (c, "link-estimate-bps"));
  fail_unless (gst_structure_has_field (c, "queue-delay-us"));
  fail_unless (gst_structure_has_field (c, "pace-holds"));
  fail_unless (gst_structure_has_field (c, "refresh-wait-fallbacks"));
  fail_unless (gst_structure_has_field (st, "link-estimate-bps"));
  fail_unless (gst_structure_has_field (st, "stream-rates"));
  disp = gst_value_get_structure (gst_structure_get_value (c, "display"));
  fail_unless (gst_structure_get_uint64 (disp, "bytes-sent", &bytes));
  fail_unless (bytes > 160 * 120 * 4);
  gst_structure_free (st);
  spice_raw_session_free (s);
  fixture_free (f);
}

GST_END_TEST;

/* "tcp-paced" of the only client, after a TCP_INFO sample */
static gboolean
client_tcp_paced (Fixture * f, SpiceRawSession * s)
{
  GstStructure *st = NULL;
  gboolean paced = -1;

  g_usleep (1200 * 1000);       /* one TCP_INFO sample */
  spice_raw_session_pump (s, 200, NULL, NULL);
  g_object_get (f->sink, "stats", &st, NULL);
  fail_unless (gst_structure_get_boolean (gst_value_get_structure
          (gst_value_array_get_value (gst_structure_get_value (st,
                      "client-stats"), 0)), "tcp-paced", &paced));
  gst_structure_free (st);
  return paced;
}

/* tcp-pacing: the kernel paces the display socket (TCP_INFO's
 * tcpi_max_pacing_rate, read back as "tcp-paced") from the client's first
 * stream on when the property is on; not while only draws went to it, and
 * never when the property is off */
GST_START_TEST (test_tcp_pacing)
{
  gint on;

  for (on = 0; on <= 1; on++) {
    Fixture *f = fixture_new (160, 120,
        "appsrc name=vsrc format=time is-live=true ! sink.stream_0");
    GstVideoRectangle dest = { 40, 30, 80, 60 };
    GstCaps *caps = NULL;
    GPtrArray *frames = encode_frames ("colors", 80, 60, 1, "jpegenc",
        &caps);
    SpiceRawSession *s;

    f->stream_src = gst_bin_get_by_name (GST_BIN (f->pipeline), "vsrc");
    g_object_set (f->stream_src, "caps", caps, NULL);
    g_object_set (f->sink, "tcp-pacing", on, NULL);
    fixture_start (f, TRUE);
    s = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
    fail_unless (s != NULL);
    fail_unless (spice_raw_session_pump (s, 10000, has_mark, NULL));
    fail_if (client_tcp_paced (f, s), "paced before any stream");
    push_stream_frame (f, frames, 0, &dest, GST_CLOCK_TIME_NONE);
    fail_unless (spice_raw_session_pump (s, 10000, got_n_stream_datas,
            GUINT_TO_POINTER (1)), "%s", s->error ? s->error : "no frame");
    fail_unless_equals_int (client_tcp_paced (f, s), on);
    spice_raw_session_free (s);
    g_ptr_array_unref (frames);
    gst_caps_unref (caps);
    fixture_free (f);
  }
}

GST_END_TEST;

/* ---------------------------------------------------------- rate control */

typedef struct {
  GMutex lock;
  guint events;
  guint last_bitrate;
  gint last_fps;
  guint lowest;                 /* lowest non-zero bitrate seen */
  gboolean restored;            /* bitrate 0 after a lower one */
} RateSeen;

static GstPadProbeReturn
rate_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  RateSeen *r = data;
  guint bitrate;
  gint fps_n, fps_d;

  if (gst_spice_event_parse_rate (GST_PAD_PROBE_INFO_EVENT (info), &bitrate,
          &fps_n, &fps_d, NULL)) {
    g_mutex_lock (&r->lock);
    r->events++;
    r->last_bitrate = bitrate;
    r->last_fps = fps_n;
    if (bitrate && (r->lowest == 0 || bitrate < r->lowest))
      r->lowest = bitrate;
    if (bitrate == 0 && r->lowest)
      r->restored = TRUE;
    g_mutex_unlock (&r->lock);
  }
  return GST_PAD_PROBE_OK;
}

typedef struct {
  GSocket *sock;
  guint bytes_per_tick;         /* every 20 ms */
  volatile gint stop;
  guint64 read;
} SlowReader;

static gpointer
slow_reader_thread (gpointer data)
{
  SlowReader *r = data;
  guint8 buf[65536];

  g_socket_set_blocking (r->sock, FALSE);
  while (!g_atomic_int_get (&r->stop)) {
    gssize n = g_socket_receive (r->sock, (gchar *) buf,
        MIN (r->bytes_per_tick, sizeof (buf)), NULL, NULL);

    if (n > 0)
      r->read += n;
    else if (n == 0)
      break;
    g_usleep (20 * 1000);
  }
  return NULL;
}

static guint
enc_bitrate (GstElement * enc)
{
  gint v = 0;

  g_object_get (enc, "target-bitrate", &v, NULL);
  return (guint) v;
}

static guint
rate_seen_last (RateSeen * r)
{
  guint v;

  g_mutex_lock (&r->lock);
  v = r->last_bitrate;
  g_mutex_unlock (&r->lock);
  return v;
}

/* A client that reads 100 KB/s (800 kbit/s) from its display socket: its
 * link estimate falls, and a spice-rate event with a bitrate below the
 * stream's own ~2 Mbit/s reaches the encoder's src pad (what applies it is
 * the encoder's owner: the sink sets no property of vp8enc, whose
 * target-bitrate stays 2000000); the stats show the same target. When the
 * client leaves, a spice-rate event with bitrate 0 (the encoder's own
 * setting) follows. */
GST_START_TEST (test_rate_slow_client)
{
  Fixture *f = fixture_new (320, 240,
      "videotestsrc is-live=true pattern=snow ! "
      "video/x-raw,width=320,height=240,framerate=25/1 ! "
      "vp8enc name=enc deadline=1 target-bitrate=2000000 ! "
      "queue name=q max-size-buffers=2 leaky=downstream ! sink.stream_0");
  GstElement *enc = gst_bin_get_by_name (GST_BIN (f->pipeline), "enc");
  GstPad *encsrc = gst_element_get_static_pad (enc, "src");
  RateSeen seen = { 0 };
  SpiceRawSession *s;
  SlowReader rd = { 0 };
  GThread *t;
  GstStructure *st = NULL;
  const GValue *rates;
  const GstStructure *r0;
  guint64 link = 0, target = 0, measured = 0;
  guint ev = 0, i;
  gint64 deadline;
  gboolean restored = FALSE;
  gint small = 16384;

  g_mutex_init (&seen.lock);
  gst_pad_add_probe (encsrc, GST_PAD_PROBE_TYPE_EVENT_UPSTREAM, rate_probe,
      &seen, NULL);
  f->use_lz4 = TRUE;
  fixture_start (f, TRUE);
  s = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (s != NULL);
  /* a small receive buffer: the window fills at once */
  g_socket_set_option (s->display->sock, SOL_SOCKET, SO_RCVBUF, small, NULL);
  rd.sock = s->display->sock;
  rd.bytes_per_tick = 2000;
  t = g_thread_new ("slow-reader", slow_reader_thread, &rd);

  deadline = g_get_monotonic_time () + 20 * G_TIME_SPAN_SECOND *
      test_time_factor ();
  while (g_get_monotonic_time () < deadline) {
    guint b = rate_seen_last (&seen);

    if (b > 0 && b < 1500000)
      break;
    g_usleep (100 * 1000);
  }
  /* the stats' target and the last event come from one decision: look
   * until a snapshot and the events agree (the rate may move on between) */
  for (i = 0; i < 50; i++) {
    if (st)
      gst_structure_free (st);
    g_object_get (f->sink, "stats", &st, NULL);
    rates = gst_structure_get_value (st, "stream-rates");
    if (gst_value_array_get_size (rates) != 1)
      break;
    r0 = gst_value_get_structure (gst_value_array_get_value (rates, 0));
    gst_structure_get_uint (r0, "event-bitrate", &ev);
    if (ev == rate_seen_last (&seen))
      break;
    g_usleep (50 * 1000);
  }
  /* the reader stops before any assertion can leave this function */
  g_atomic_int_set (&rd.stop, 1);
  g_thread_join (t);
  GST_INFO ("stats: %" GST_PTR_FORMAT, st);
  gst_structure_get_uint64 (st, "link-estimate-bps", &link);
  rates = gst_structure_get_value (st, "stream-rates");
  fail_unless_equals_int (gst_value_array_get_size (rates), 1);
  r0 = gst_value_get_structure (gst_value_array_get_value (rates, 0));
  fail_unless_equals_string (gst_structure_get_string (r0, "pad"),
      "stream_0");
  fail_if (gst_structure_has_field (r0, "encoder"));
  fail_if (gst_structure_has_field (r0, "encoder-value"));
  gst_structure_get_uint64 (r0, "target-bps", &target);
  gst_structure_get_uint64 (r0, "initial-bps", &measured);
  g_print ("RESULT slow client (100 KB/s): link estimate %" G_GUINT64_FORMAT
      " bit/s, stream's own rate %" G_GUINT64_FORMAT " bit/s, target %"
      G_GUINT64_FORMAT " bit/s, %u spice-rate events (last %u bit/s, %d fps),"
      " vp8enc target-bitrate %u (untouched)\n", link, measured, target,
      seen.events, seen.last_bitrate, seen.last_fps, enc_bitrate (enc));
  fail_unless (seen.events >= 1);
  fail_unless (seen.last_bitrate > 0 && seen.last_bitrate < 1500000,
      "last spice-rate %u bit/s", seen.last_bitrate);
  fail_unless_equals_int (ev, seen.last_bitrate);
  fail_unless (target / 1000 == ev / 1000, "target %" G_GUINT64_FORMAT
      " bit/s, event %u", target, ev);
  /* decisions start once the sink has measured the stream itself (no
   * ceiling from that measurement: the encoder's owner holds the ceiling;
   * its value depends on how much of the first interval had frames) */
  fail_unless (measured > 0, "stream's own rate %" G_GUINT64_FORMAT,
      measured);
  fail_unless (link > 0 && link < 4000000, "link estimate %" G_GUINT64_FORMAT,
      link);
  /* the sink sets no property of an element it did not create */
  fail_unless_equals_int (enc_bitrate (enc), 2000000);
  gst_structure_free (st);

  spice_raw_session_free (s);
  /* nobody left: bitrate 0, the encoder's own setting again */
  for (i = 0; i < 100 && !restored; i++) {
    g_usleep (100 * 1000);
    g_mutex_lock (&seen.lock);
    restored = seen.restored;
    g_mutex_unlock (&seen.lock);
  }
  fail_unless (restored, "no spice-rate with bitrate 0 after the client left");
  fail_unless_equals_int (enc_bitrate (enc), 2000000);
  gst_object_unref (encsrc);
  gst_object_unref (enc);
  fixture_free (f);
  g_mutex_clear (&seen.lock);
}

GST_END_TEST;

/* ------------------------------------------------ password-file, restarts */

static guint32
link_main_result (guint16 port, const gchar * password)
{
  SpiceRawConn *c = spice_raw_connect (port, 10);
  guint32 r;

  fail_unless (c != NULL);
  fail_unless (spice_raw_link (c, 0, SPICE_CHANNEL_MAIN, 0x0d, 0, password,
          NULL));
  r = c->link_result;
  spice_raw_close (c);
  return r;
}

/* password-file is read at every NULL -> READY and keeps its value (it was
 * freed there once: get_property then returned freed memory and the next
 * start read it); the ticket is the file's at that start. */
GST_START_TEST (test_password_file_restart)
{
  gchar *dir = g_dir_make_tmp ("spicesink-pw-XXXXXX", NULL);
  gchar *path = g_build_filename (dir, "ticket", NULL);
  const gchar *tickets[] = { "first", "second" };
  GstElement *sink = gst_element_factory_make ("spicesink", NULL);
  guint round;

  fail_unless (sink != NULL);
  fail_unless (g_file_set_contents (path, "first\n", -1, NULL));
  g_object_set (sink, "port", 0, "password-file", path, NULL);
  for (round = 0; round < 2; round++) {
    gchar *got = NULL;
    gint port = -1;

    fail_unless_equals_int (gst_element_set_state (sink, GST_STATE_READY),
        GST_STATE_CHANGE_SUCCESS);
    g_object_get (sink, "password-file", &got, "bound-port", &port, NULL);
    fail_unless_equals_string (got, path);
    g_free (got);
    fail_unless (port > 0);
    fail_unless_equals_int (link_main_result (port, tickets[round]),
        SPICE_LINK_ERR_OK);
    fail_unless_equals_int (link_main_result (port, tickets[1 - round]),
        SPICE_LINK_ERR_PERMISSION_DENIED);
    fail_unless_equals_int (gst_element_set_state (sink, GST_STATE_NULL),
        GST_STATE_CHANGE_SUCCESS);
    g_object_get (sink, "password-file", &got, NULL);
    fail_unless_equals_string (got, path);
    g_free (got);
    fail_unless (g_file_set_contents (path, "second\n", -1, NULL));
  }
  /* finalize frees it (ASan / valgrind runs) */
  gst_object_unref (sink);
  g_unlink (path);
  g_rmdir (dir);
  g_free (path);
  g_free (dir);
}

GST_END_TEST;

/* ------------------------------------------------- flushing a stream pad */

static GstBuffer *
fake_jpeg (void)
{
  static const guint8 jpeg[] = { 0xff, 0xd8, 0xff, 0xd9 };

  return gst_buffer_new_memdup (jpeg, sizeof (jpeg));
}

static void
stream_pad_start (GstPad * sp)
{
  GstSegment seg;
  GstCaps *caps = gst_caps_new_simple ("image/jpeg", "width", G_TYPE_INT, 64,
      "height", G_TYPE_INT, 64, NULL);

  gst_segment_init (&seg, GST_FORMAT_TIME);
  fail_unless (gst_pad_send_event (sp, gst_event_new_stream_start ("s0")));
  fail_unless (gst_pad_send_event (sp, gst_event_new_caps (caps)));
  fail_unless (gst_pad_send_event (sp, gst_event_new_segment (&seg)));
  gst_caps_unref (caps);
}

static guint64
sink_stat (Fixture * f, const gchar * field)
{
  GstStructure *st = NULL;
  guint64 v = 0;

  g_object_get (f->sink, "stats", &st, NULL);
  gst_structure_get_uint64 (st, field, &v);
  gst_structure_free (st);
  return v;
}

static gboolean
draws_more_than (SpiceRawSession * s, gpointer data)
{
  return s->draws > *(guint64 *) data;
}

/* A FLUSH on a stream pad flushes that stream only: while stream_0
 * flushes, an update on the draw pad is taken (GST_FLOW_OK) and reaches
 * the client; after FLUSH_STOP the stream takes frames again. */
GST_START_TEST (test_stream_flush_only_stream)
{
  Fixture *f = fixture_new (160, 120, NULL);
  GstPad *sp = gst_element_request_pad_simple (f->sink, "stream_%u");
  GstPad *dp = gst_element_get_static_pad (f->sink, "draw");
  GstVideoRectangle r = { 16, 16, 32, 32 };
  SpiceRawSession *s;
  guint64 updates, draws;

  fail_unless (sp != NULL);
  fixture_start (f, TRUE);
  stream_pad_start (sp);
  s = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (s != NULL);
  fail_unless (spice_raw_session_pump (s, 10000, has_mark, NULL));
  fail_unless_equals_int (gst_pad_chain (sp, fake_jpeg ()), GST_FLOW_OK);

  fail_unless (gst_pad_send_event (sp, gst_event_new_flush_start ()));
  updates = sink_stat (f, "updates-in");
  draws = s->draws;
  update_rect (f, &r, 7);
  fail_unless_equals_int (gst_pad_chain (dp, rects_buffer (f, &r, 1, 0)),
      GST_FLOW_OK);
  fail_unless (sink_stat (f, "updates-in") >= updates + 1);
  fail_unless (spice_raw_session_pump (s, 10000, draws_more_than, &draws));
  fail_unless_equals_int (spice_raw_session_compare (s, f->picture,
          f->w * 4), 0);
  /* the stream itself is flushing */
  fail_unless_equals_int (gst_pad_chain (sp, fake_jpeg ()),
      GST_FLOW_FLUSHING);

  fail_unless (gst_pad_send_event (sp, gst_event_new_flush_stop (TRUE)));
  stream_pad_start (sp);
  fail_unless_equals_int (gst_pad_chain (sp, fake_jpeg ()), GST_FLOW_OK);
  fail_unless_equals_int (sink_stat (f, "stream-frames-in"), 2);

  spice_raw_session_free (s);
  gst_object_unref (dp);
  gst_element_release_request_pad (f->sink, sp);
  gst_object_unref (sp);
  fixture_free (f);
}

GST_END_TEST;

/* ------------------------------------- key presses while draws marshal */

typedef struct {
  Fixture *f;
  GPtrArray *updates;           /* GstBuffer*, pushed round robin */
  volatile gint stop;
  guint pushed;
} HeavyPusher;

static gpointer
heavy_pusher_thread (gpointer data)
{
  HeavyPusher *p = data;

  while (!g_atomic_int_get (&p->stop)) {
    GstBuffer *b = g_ptr_array_index (p->updates,
        p->pushed % p->updates->len);

    if (gst_app_src_push_buffer (GST_APP_SRC (p->f->src),
            gst_buffer_ref (b)) != GST_FLOW_OK)
      break;
    p->pushed++;
  }
  return NULL;
}

typedef struct {
  GSocket *sock;
  volatile gint stop;
} Drainer;

static gpointer
drain_thread (gpointer data)
{
  Drainer *d = data;
  guint8 *buf = g_malloc (1 << 20);

  g_socket_set_timeout (d->sock, 1);
  while (!g_atomic_int_get (&d->stop))
    if (g_socket_receive (d->sock, (gchar *) buf, 1 << 20, NULL, NULL) == 0)
      break;
  g_free (buf);
  return NULL;
}

/* at least @n key presses (and releases) on @in, one every 20 ms, and
 * until the sink took @updates more updates; returns the median time from
 * sending a press to its navigation event upstream */
static gint64
key_latency_median (Fixture * f, SpiceRawConn * in, guint n, guint updates)
{
  guint64 until = sink_stat (f, "updates-in") + updates;
  gint64 deadline = g_get_monotonic_time () + 60 * G_TIME_SPAN_SECOND *
      test_time_factor ();
  GArray *lat = g_array_new (FALSE, FALSE, sizeof (gint64));
  GByteArray *a = g_byte_array_new ();
  gint64 median;
  guint i;

  for (i = 0; i < n || (sink_stat (f, "updates-in") < until &&
          g_get_monotonic_time () < deadline); i++) {
    gboolean release;

    for (release = FALSE; release <= TRUE; release++) {
      gint64 t0, t1;
      guint have;

      g_mutex_lock (&f->lock);
      have = f->nav_times->len;
      g_mutex_unlock (&f->lock);
      g_byte_array_set_size (a, 0);
      gst_spice_put_u32 (a, test_wire_encode_key_code (0x1e, release));
      t0 = g_get_monotonic_time ();
      fail_unless (spice_raw_send_msg (in, release ?
              SPICE_MSGC_INPUTS_KEY_UP : SPICE_MSGC_INPUTS_KEY_DOWN, a->data,
              a->len));
      fail_unless (wait_for (f, nav_count_at_least,
              GUINT_TO_POINTER (have + 1), 10000 * test_time_factor ()));
      g_mutex_lock (&f->lock);
      t1 = g_array_index (f->nav_times, gint64, have);
      g_mutex_unlock (&f->lock);
      if (!release)
        g_array_append_val (lat, (gint64) { t1 - t0 });
    }
    g_usleep (20 * 1000);
  }
  g_array_sort (lat, cmp_i64);
  median = g_array_index (lat, gint64, lat->len / 2);
  g_array_unref (lat);
  g_byte_array_unref (a);
  return median;
}

/* A key press is handled without waiting for the render path: while
 * full-screen updates of incompressible pixels in 16x16 regions (3600 per
 * update) are marshalled back to back, the median time from a real
 * client's KEY_DOWN to the navigation event upstream stays within the
 * median of key presses alone plus a quarter of the time one update takes
 * the render path (both measured in this run). When the inputs channel
 * waited for the lock that marshalling holds, a key waited about half an
 * update. */
GST_START_TEST (test_keys_while_marshalling)
{
  const gint W = 960, H = 960, T = 16;
  Fixture *f = fixture_new (W, H, NULL);
  HeavyPusher p = { f, g_ptr_array_new_with_free_func ((GDestroyNotify)
        gst_buffer_unref)
  };
  GArray *rects = g_array_new (FALSE, FALSE, sizeof (GstVideoRectangle));
  SpiceRawSession *s;
  SpiceRawConn *in;
  Drainer dr = { 0 };
  GThread *pt, *dt;
  gint64 idle, loaded, t_start, per_update;
  guint64 updates0, updates1;
  guint i, x, y;

  /* noise: LZ4 cannot compress it, the tiler would send it as it is */
  g_object_set (f->src, "block", TRUE, "max-buffers", (guint64) 2, NULL);
  for (y = 0; y < (guint) H; y += T)
    for (x = 0; x < (guint) W; x += T) {
      GstVideoRectangle r = { x, y, T, T };
      g_array_append_val (rects, r);
    }
  for (i = 0; i < 2; i++) {
    guint32 *px = (guint32 *) f->picture;
    guint k;

    for (k = 0; k < (guint) (W * H); k++)
      px[k] = g_random_int () & 0x00ffffff;
    g_ptr_array_add (p.updates, rects_buffer (f, (GstVideoRectangle *)
            rects->data, rects->len, 0));
  }
  fixture_start (f, TRUE);
  s = spice_raw_session_new (f->port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (s != NULL);
  fail_unless (spice_raw_session_pump (s, 20000, has_mark, NULL));
  in = spice_raw_connect (f->port, 10);
  fail_unless (spice_raw_link (in, s->session_id, SPICE_CHANNEL_INPUTS,
          0x0d, 0, NULL, NULL));
  fail_unless_equals_int (in->link_result, 0);
  /* the client reads its display as fast as it comes */
  dr.sock = s->display->sock;
  dt = g_thread_new ("drain", drain_thread, &dr);

  idle = key_latency_median (f, in, 25, 0);

  updates0 = sink_stat (f, "updates-in");
  t_start = g_get_monotonic_time ();
  pt = g_thread_new ("heavy", heavy_pusher_thread, &p);
  g_usleep (300 * 1000);
  loaded = key_latency_median (f, in, 25, 12);
  updates1 = sink_stat (f, "updates-in");
  per_update = (g_get_monotonic_time () - t_start) /
      (gint64) MAX (updates1 - updates0, 1);
  g_atomic_int_set (&p.stop, 1);
  g_thread_join (pt);
  g_atomic_int_set (&dr.stop, 1);
  g_thread_join (dt);

  g_print ("RESULT key press to navigation event, median: %" G_GINT64_FORMAT
      " us alone, %" G_GINT64_FORMAT " us while %" G_GUINT64_FORMAT
      " updates of %u regions were marshalled (%" G_GINT64_FORMAT
      " us each): ratio %.2f\n", idle, loaded, updates1 - updates0,
      rects->len, per_update, loaded / (gdouble) MAX (idle, 1));
  /* the load was real: updates kept coming during the key presses */
  fail_unless (updates1 - updates0 >= 10, "%" G_GUINT64_FORMAT " updates",
      updates1 - updates0);
  fail_unless (loaded <= idle + per_update / 4, "key latency %"
      G_GINT64_FORMAT " us under load, %" G_GINT64_FORMAT " us alone, one "
      "update %" G_GINT64_FORMAT " us", loaded, idle, per_update);

  spice_raw_close (in);
  spice_raw_session_free (s);
  g_ptr_array_unref (p.updates);
  g_array_unref (rects);
  fixture_free (f);
}

GST_END_TEST;

/* ------------------------------------------- remote-viewer under Xvfb */

static void
child_die_with_parent (gpointer data)
{
  prctl (PR_SET_PDEATHSIG, SIGKILL);
}

/* spawns @argv in the background (DISPLAY=@display); *out_fd = its stdout
 * if asked, else /dev/null */
static GPid
spawn_bg (const gchar * const *argv, const gchar * display, gint * out_fd)
{
  gchar **envp = g_get_environ ();
  GPid pid = 0;
  GError *err = NULL;

  if (display)
    envp = g_environ_setenv (envp, "DISPLAY", display, TRUE);
  if (!g_spawn_async_with_pipes (NULL, (gchar **) argv, envp,
          G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD |
          G_SPAWN_STDERR_TO_DEV_NULL | (out_fd ? 0 :
              G_SPAWN_STDOUT_TO_DEV_NULL), child_die_with_parent, NULL, &pid,
          NULL, out_fd, NULL, &err)) {
    GST_WARNING ("spawn %s: %s", argv[0], err->message);
    g_clear_error (&err);
    pid = 0;
  }
  g_strfreev (envp);
  return pid;
}

static void
kill_wait (GPid pid)
{
  gint i, status;

  if (pid <= 0)
    return;
  kill (pid, SIGTERM);
  for (i = 0; i < 50; i++) {
    if (waitpid (pid, &status, WNOHANG) == pid)
      return;
    g_usleep (20 * 1000);
  }
  kill (pid, SIGKILL);
  waitpid (pid, &status, 0);
}

/* Xvfb on a free display (-displayfd); returns its pid, *display ":N" */
static GPid
start_xvfb (gchar ** display)
{
  const gchar *argv[] = { "Xvfb", "-displayfd", "1", "-screen", "0",
    "1024x768x24", "-nolisten", "tcp", "-nolisten", "unix", NULL
  };
  gint fd = -1;
  GPid pid;
  gchar buf[32];
  gsize len = 0;
  gint64 deadline = g_get_monotonic_time () + 20 * G_TIME_SPAN_SECOND;

  *display = NULL;
  /* abstract socket only: -nolisten unix keeps /tmp/.X11-unix alone */
  pid = spawn_bg (argv, NULL, &fd);
  if (!pid)
    return 0;
  while (len < sizeof (buf) - 1 && g_get_monotonic_time () < deadline) {
    struct pollfd p = { fd, POLLIN, 0 };
    gssize n;

    if (poll (&p, 1, 200) <= 0)
      continue;
    n = read (fd, buf + len, 1);
    if (n <= 0)
      break;
    if (buf[len] == '\n')
      break;
    len++;
  }
  close (fd);
  buf[len] = 0;
  if (len == 0 || !g_ascii_isdigit (buf[0])) {
    kill_wait (pid);
    return 0;
  }
  *display = g_strdup_printf (":%s", buf);
  return pid;
}

static gchar *
x_tool (const gchar * display, const gchar * const *argv)
{
  const gchar *env[] = { "DISPLAY", display, NULL };
  gchar *out = NULL;

  if (run_tool (argv, env, &out) != 0) {
    g_free (out);
    return NULL;
  }
  return out;
}

/* finds the source picture (@pw x @ph) in @shot (inside @win), pixel values
 * within @tol per channel at 97 sample points; returns TRUE and its
 * position */
static gboolean
find_picture (const guint8 * shot, gint sw, gint sh, const guint8 * pic,
    gint pw, gint ph, const GstVideoRectangle * win, gint tol, gint * px,
    gint * py)
{
  gint x0, y0, k;

  for (y0 = MAX (win->y, 0); y0 + ph <= MIN (win->y + win->h, sh); y0++)
    for (x0 = MAX (win->x, 0); x0 + pw <= MIN (win->x + win->w, sw); x0++) {
      for (k = 0; k < 97; k++) {
        gint x = (k * 37) % pw, y = (k * 53) % ph, c;
        const guint8 *a = shot + ((gsize) (y0 + y) * sw + x0 + x) * 4;
        const guint8 *b = pic + ((gsize) y * pw + x) * 4;

        for (c = 0; c < 3; c++)
          if (ABS (a[c] - b[c]) > tol)
            break;
        if (c < 3)
          break;
      }
      if (k == 97) {
        *px = x0;
        *py = y0;
        return TRUE;
      }
    }
  return FALSE;
}

typedef struct {
  gchar *error;
  gint px, py;
  guint64 off_pixels;           /* pixels with a channel off by > tol */
  gint max_diff;
  gint64 picture_ms;
} RvResult;

static const guint rv_expected[] = { 0x23, 0x17, 0x1c, 0x14b, 0x2a, 0x1e };

/* key-press scancodes recorded so far contain @rv_expected in order */
static gboolean
rv_keys_arrived (Fixture * f, gpointer d)
{
  guint i, k = 0;

  for (i = 0; i < f->nav->len && k < G_N_ELEMENTS (rv_expected); i++) {
    const GstStructure *s = g_ptr_array_index (f->nav, i);
    guint sc = 0;

    if (g_strcmp0 (gst_structure_get_string (s, "event"), "key-press") ||
        !gst_structure_get_uint (s, "scancode", &sc))
      continue;
    if (sc == rv_expected[k])
      k++;
  }
  return k == G_N_ELEMENTS (rv_expected);
}

/* the focus click reached the sink: the window has the keyboard */
static gboolean
rv_click_arrived (Fixture * f, gpointer d)
{
  guint i;

  for (i = 0; i < f->nav->len; i++)
    if (!g_strcmp0 (gst_structure_get_string (g_ptr_array_index (f->nav, i),
                "event"), "mouse-button-press"))
      return TRUE;
  return FALSE;
}

#define RV_TOL 8

static void
rv_session (Fixture * f, const gchar * display, GPid rv, RvResult * res)
{
  gchar *pidstr = g_strdup_printf ("%d", (gint) rv);
  const gchar *search[] = { "xdotool", "search", "--sync", "--onlyvisible",
    "--pid", pidstr, NULL
  };
  gchar *out = NULL, **lines = NULL, *shotfile, *dir;
  GstVideoRectangle win = { 0, 0, 0, 0 };
  gint64 t0 = g_get_monotonic_time (), deadline;
  guint i;

  dir = g_dir_make_tmp ("spicesink-rv-XXXXXX", NULL);
  shotfile = g_build_filename (dir, "root.ppm", NULL);
  out = x_tool (display, search);
  if (!out || !*out) {
    res->error = g_strdup ("remote-viewer window not found");
    goto done;
  }
  lines = g_strsplit (out, "\n", -1);
  /* the largest visible window of remote-viewer */
  for (i = 0; lines[i] && *lines[i]; i++) {
    const gchar *geo[] = { "xdotool", "getwindowgeometry", "--shell",
      lines[i], NULL
    };
    gchar *g = x_tool (display, geo);
    gint x = 0, y = 0, w = 0, h = 0;
    gchar *p;

    if (!g)
      continue;
    if ((p = strstr (g, "X=")))
      x = atoi (p + 2);
    if ((p = strstr (g, "Y=")))
      y = atoi (p + 2);
    if ((p = strstr (g, "WIDTH=")))
      w = atoi (p + 6);
    if ((p = strstr (g, "HEIGHT=")))
      h = atoi (p + 7);
    g_free (g);
    if (w * h > win.w * win.h) {
      win.x = x;
      win.y = y;
      win.w = w;
      win.h = h;
    }
  }
  GST_INFO ("remote-viewer window %dx%d+%d+%d", win.w, win.h, win.x, win.y);
  if (win.w < f->w || win.h < f->h) {
    res->error = g_strdup_printf ("window %dx%d smaller than the picture",
        win.w, win.h);
    goto done;
  }
  /* the picture inside the window */
  deadline = g_get_monotonic_time () + 30 * G_TIME_SPAN_SECOND;
  for (;;) {
    const gchar *imp[] = { "import", "-window", "root", "-depth", "8",
      shotfile, NULL
    };
    guint8 *shot = NULL;
    gint sw, sh;
    gboolean found = FALSE;
    gchar *imported = x_tool (display, imp);

    if (imported != NULL && test_ppm_read (shotfile, &shot, &sw, &sh, NULL)) {
      g_mutex_lock (&f->lock);
      found = find_picture (shot, sw, sh, f->picture, f->w, f->h, &win,
          RV_TOL, &res->px, &res->py);
      if (found) {
        gint x, y, c;

        res->off_pixels = 0;
        res->max_diff = 0;
        for (y = 0; y < f->h; y++)
          for (x = 0; x < f->w; x++) {
            const guint8 *a = shot + ((gsize) (res->py + y) * sw + res->px +
                x) * 4;
            const guint8 *b = f->picture + ((gsize) y * f->w + x) * 4;
            gint m = 0;

            for (c = 0; c < 3; c++)
              m = MAX (m, ABS (a[c] - b[c]));
            res->max_diff = MAX (res->max_diff, m);
            if (m > RV_TOL)
              res->off_pixels++;
          }
      }
      g_mutex_unlock (&f->lock);
      g_free (shot);
    }
    g_free (imported);
    if (found)
      break;
    if (g_get_monotonic_time () > deadline) {
      gchar *keep = g_build_filename (g_get_tmp_dir (),
          "spicesink-rv-last.ppm", NULL);

      /* kept for a look at what remote-viewer showed */
      g_rename (shotfile, keep);
      res->error = g_strdup_printf ("the picture never appeared in the "
          "window (last screenshot: %s)", keep);
      g_free (keep);
      goto done;
    }
    g_usleep (300 * 1000);
  }
  res->picture_ms = (g_get_monotonic_time () - t0) / 1000;
  /* keys: click into the picture for focus, then type */
  {
    gchar *cx = g_strdup_printf ("%d", res->px + f->w / 2);
    gchar *cy = g_strdup_printf ("%d", res->py + f->h / 2);
    const gchar *click[] = { "xdotool", "mousemove", "--sync", cx, cy,
      "click", "1", NULL
    };
    const gchar *type[] = { "xdotool", "type", "--delay", "80", "hi", NULL };
    const gchar *keys[] = { "xdotool", "key", "--delay", "80", "Return",
      "Left", "shift+a", NULL
    };
    gchar *o;

    o = x_tool (display, click);
    g_free (o);
    /* typing before the window has the focus loses keys (a loaded
     * machine, valgrind) */
    if (!wait_for (f, rv_click_arrived, NULL, 10000 * test_time_factor ()))
      GST_WARNING ("the focus click did not arrive upstream");
    g_usleep (300 * 1000);
    o = x_tool (display, type);
    g_free (o);
    o = x_tool (display, keys);
    g_free (o);
    g_free (cx);
    g_free (cy);
    if (!wait_for (f, rv_keys_arrived, NULL, 10000 * test_time_factor ()))
      res->error = g_strdup ("typed keys did not arrive upstream with the "
          "expected scancodes");
  }
done:
  g_unlink (shotfile);
  g_rmdir (dir);
  g_free (shotfile);
  g_free (dir);
  g_strfreev (lines);
  g_free (out);
  g_free (pidstr);
}

/* remote-viewer (spice-gtk, GTK window) on Xvfb: the picture in its window
 * equals the source within RV_TOL per channel (24-bit Xvfb: exact
 * expected), and keys typed with xdotool arrive upstream as navigation
 * events with the right scancodes (h i Return Left Shift a). Skipped when
 * Xvfb, remote-viewer, xdotool or import are missing. */
GST_START_TEST (test_remote_viewer)
{
  const gchar *tools[] = { "Xvfb", "remote-viewer", "xdotool", "import" };
  Fixture *f;
  gchar *display = NULL, *uri;
  GPid xvfb, rv;
  RvResult res = { 0 };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (tools); i++) {
    gchar *p = g_find_program_in_path (tools[i]);

    if (!p) {
      g_print ("SKIP remote_viewer: %s not installed\n", tools[i]);
      return;
    }
    g_free (p);
  }
  f = fixture_new (480, 360, NULL);
  fixture_start (f, TRUE);
  xvfb = start_xvfb (&display);
  fail_unless (xvfb > 0, "Xvfb did not start");
  uri = g_strdup_printf ("spice://127.0.0.1:%u", f->port);
  {
    const gchar *argv[] = { "remote-viewer", uri, NULL };

    rv = spawn_bg (argv, display, NULL);
  }
  if (rv > 0)
    rv_session (f, display, rv, &res);
  else
    res.error = g_strdup ("remote-viewer did not start");
  /* kill everything before judging */
  kill_wait (rv);
  kill_wait (xvfb);
  g_print ("RESULT remote-viewer on Xvfb %s: picture at %d,%d after %"
      G_GINT64_FORMAT " ms, %" G_GUINT64_FORMAT " pixels off by > %d, max "
      "channel diff %d; %u navigation events\n", display, res.px, res.py,
      res.picture_ms, res.off_pixels, RV_TOL, res.max_diff, f->nav->len);
  fail_unless (res.error == NULL, "%s", res.error);
  fail_unless_equals_int (res.off_pixels, 0);
  g_free (uri);
  g_free (display);
  fixture_free (f);
}

GST_END_TEST;

static Suite *
spicesink_suite (void)
{
  Suite *s = suite_create ("spicesink");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 180);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_refuse_open_nonloopback);
  tcase_add_test (tc, test_default_port);
  tcase_add_test (tc, test_password_file_errors);
  tcase_add_test (tc, test_screenshot_bitmap);
  tcase_add_test (tc, test_screenshot_lz4);
  tcase_add_test (tc, test_client_without_lz4);
  tcase_add_test (tc, test_late_join_composed_picture);
  tcase_add_test (tc, test_copy_bits_spicegtk);
  tcase_add_test (tc, test_join_before_picture_refresh);
  tcase_add_test (tc, test_join_first_draw_whole);
  tcase_add_test (tc, test_join_refresh_wait_bound);
  tcase_add_test (tc, test_resync_behind_whole);
  tcase_add_test (tc, test_refresh_to_lossy_clients);
  tcase_add_test (tc, test_two_clients);
  tcase_add_test (tc, test_password);
  tcase_add_test (tc, test_tls);
  tcase_add_test (tc, test_inputs_raw);
  tcase_add_test (tc, test_key_locks_raw);
  tcase_add_test (tc, test_cursor);
  tcase_add_test (tc, test_stats);
  tcase_add_test (tc, test_tcp_pacing);
  tcase_add_test (tc, test_stream_mjpeg);
  tcase_add_test (tc, test_stream_vp8);
  tcase_add_test (tc, test_stream_h264);
  tcase_add_test (tc, test_stream_vp9);
  tcase_add_test (tc, test_stream_hidden_under_draw);
  tcase_add_test (tc, test_late_join_stream_spicegtk);
  tcase_add_test (tc, test_client_without_codec);
  tcase_add_test (tc, test_stream_branches);
  tcase_add_test (tc, test_hostile_input);
  tcase_add_test (tc, test_tiler_pipeline);
  tcase_add_test (tc, test_late_join_stream_100);
  tcase_add_test (tc, test_rate_slow_client);
  tcase_add_test (tc, test_password_file_restart);
  tcase_add_test (tc, test_stream_flush_only_stream);
  tcase_add_test (tc, test_keys_while_marshalling);
  tcase_add_test (tc, test_remote_viewer);
  return s;
}

GST_CHECK_MAIN (spicesink);
