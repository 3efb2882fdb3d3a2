/* spicesink: an application's listening socket (listen-fd) and the
 * redirect-clients action (MIGRATE_SWITCH_HOST), against raw clients
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The socket serves a client, outlives the pipeline (a second pipeline
 * serves on it, and a connection made meanwhile waits in its backlog);
 * redirect-clients sends exactly the message spice-gtk follows, also to a
 * main channel that links after it; a descriptor that is not a listening
 * socket fails the start with a message saying so.
 */
#include <fcntl.h>
#include <string.h>
#include <glib/gstdio.h>
#include <gst/base/gstbytewriter.h>
#include <sys/socket.h>
#include <unistd.h>
#include <spice/enums.h>

#include "spicesink-test-util.h"

/* A listening socket on 127.0.0.1, any port: *@port */
static GSocket *
app_socket (guint16 * port)
{
  GSocket *sock = spice_raw_tcp_listen (port);

  fail_unless (sock != NULL);
  return sock;
}

static Fixture *
fixture_on (GSocket * sock, const gchar * more)
{
  gchar *props = g_strdup_printf ("port=-1 listen-fd=%d %s",
      g_socket_get_fd (sock), more ? more : "");
  Fixture *f = fixture_new (64, 48, props);

  g_free (props);
  fixture_start (f, TRUE);
  return f;
}

/* the next message of @type on @c (others skipped); its body */
static guint8 *
read_until (SpiceRawConn * c, guint16 want, gsize * size)
{
  gint64 end = g_get_monotonic_time () + 10 * G_USEC_PER_SEC *
      test_time_factor ();

  while (g_get_monotonic_time () < end) {
    guint16 type = 0;
    guint8 *body = NULL;

    if (!spice_raw_read_msg (c, 1000, &type, &body, size))
      continue;
    if (type == want)
      return body;
    g_free (body);
  }
  return NULL;
}

/* the body MIGRATE_SWITCH_HOST must have: ports, then (size, offset) of
 * the host and of the subject, the strings after them */
static void
check_switch_host (const guint8 * body, gsize size, guint16 port,
    guint16 sport, const gchar * host)
{
  gsize hs = strlen (host) + 1;
  GstByteWriter w;
  guint8 *expected;

  gst_byte_writer_init (&w);
  gst_byte_writer_put_uint16_le (&w, port);
  gst_byte_writer_put_uint16_le (&w, sport);
  gst_byte_writer_put_uint32_le (&w, hs);
  gst_byte_writer_put_uint32_le (&w, 20);
  gst_byte_writer_put_uint32_le (&w, 0);
  gst_byte_writer_put_uint32_le (&w, 0);
  gst_byte_writer_put_data (&w, (const guint8 *) host, hs);
  fail_unless_equals_int (size, 20 + hs);
  expected = gst_byte_writer_reset_and_get_data (&w);
  fail_unless (memcmp (body, expected, size) == 0);
  g_free (expected);
}

/* the session shows the fixture's picture */
static gboolean
shows_picture (SpiceRawSession * s, gpointer data)
{
  Fixture *f = data;

  return s->canvas && spice_raw_session_compare (s, f->picture, f->w * 4) == 0;
}

static void
expect_picture (SpiceRawSession * s, Fixture * f)
{
  fail_unless (spice_raw_session_pump (s, 10000 * test_time_factor (),
          shows_picture, f));
  fail_unless (shows_picture (s, f));
}

static guint64
connections_total (Fixture * f)
{
  GstStructure *st = NULL;
  guint64 n = 0;

  g_object_get (f->sink, "stats", &st, NULL);
  gst_structure_get_uint64 (st, "connections-total", &n);
  gst_structure_free (st);
  return n;
}

GST_START_TEST (test_listen_fd_outlives_pipeline)
{
  guint16 port;
  GSocket *sock = app_socket (&port), *waiting, *accepted;
  Fixture *f = fixture_on (sock, NULL);
  SpiceRawSession *s;
  gint bound = -1, fd = -1, listening = 0;
  socklen_t len = sizeof (listening);
  guint n = 0;
  guint8 *body;
  gsize size = 0;

  g_object_get (f->sink, "bound-port", &bound, "listen-fd", &fd, NULL);
  fail_unless_equals_int (bound, port);
  fail_unless_equals_int (fd, g_socket_get_fd (sock));
  s = spice_raw_session_new (port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (s != NULL);
  expect_picture (s, f);

  /* asked to come back where it connected */
  g_signal_emit_by_name (f->sink, "redirect-clients", &n);
  fail_unless_equals_int (n, 1);
  body = read_until (s->main, SPICE_MSG_MAIN_MIGRATE_SWITCH_HOST, &size);
  fail_unless (body != NULL);
  check_switch_host (body, size, port, 0, "127.0.0.1");
  g_free (body);

  /* the sink accepts no more; the connection waits in the backlog, and
   * the socket stays the application's after the pipeline stops */
  waiting = spice_raw_tcp_connect (port, 5);
  fail_unless (waiting != NULL);
  spice_raw_session_free (s);
  fixture_free (f);
  fail_unless (getsockopt (g_socket_get_fd (sock), SOL_SOCKET, SO_ACCEPTCONN,
          &listening, &len) == 0 && listening);
  g_socket_set_blocking (sock, TRUE);
  accepted = g_socket_accept (sock, NULL, NULL);
  fail_unless (accepted != NULL, "the waiting connection is gone");
  g_object_unref (accepted);
  spice_raw_tcp_close (&waiting);

  /* the next pipeline serves on it */
  f = fixture_on (sock, NULL);
  s = spice_raw_session_new (port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (s != NULL);
  expect_picture (s, f);
  spice_raw_session_free (s);
  fixture_free (f);
  g_object_unref (sock);
}

GST_END_TEST;

/* redirect-host names the host; a main channel that links after the
 * redirect gets MAIN_INIT and then MIGRATE_SWITCH_HOST */
GST_START_TEST (test_redirect_host_and_late_link)
{
  guint16 port;
  GSocket *sock = app_socket (&port);
  Fixture *f = fixture_on (sock, "redirect-host=vdi.example.org");
  SpiceRawConn *late = spice_raw_connect (port, 5);
  gint64 end = g_get_monotonic_time () + 10 * G_USEC_PER_SEC *
      test_time_factor ();
  guint32 error = 0;
  guint16 type = 0;
  guint8 *body;
  gsize size = 0;
  guint n = 1;

  /* accepted, still in the link stage */
  fail_unless (late != NULL);
  while (connections_total (f) < 1 && g_get_monotonic_time () < end)
    g_usleep (10 * 1000);
  fail_unless (connections_total (f) == 1);
  g_signal_emit_by_name (f->sink, "redirect-clients", &n);
  fail_unless_equals_int (n, 0);
  fail_unless (spice_raw_link (late, 0, SPICE_CHANNEL_MAIN,
          SPICE_RAW_COMMON_CAPS, 0, NULL, &error));
  fail_unless (spice_raw_read_msg (late, 5000, &type, &body, &size));
  fail_unless_equals_int (type, SPICE_MSG_MAIN_INIT);
  g_free (body);
  body = read_until (late, SPICE_MSG_MAIN_MIGRATE_SWITCH_HOST, &size);
  fail_unless (body != NULL);
  check_switch_host (body, size, port, 0, "vdi.example.org");
  g_free (body);
  spice_raw_close (late);
  fixture_free (f);
  g_object_unref (sock);
}

GST_END_TEST;

/* a descriptor that is not a listening socket fails the start, saying
 * so, and is not closed */
GST_START_TEST (test_listen_fd_not_listening)
{
  gint fds[2];
  gchar *props;
  GstElement *pipeline;
  GstBus *bus;
  GstMessage *msg;
  GError *err = NULL;

  fail_unless (pipe (fds) == 0);
  props = g_strdup_printf ("appsrc ! spicesink port=-1 listen-fd=%d", fds[0]);
  pipeline = gst_parse_launch (props, NULL);
  g_free (props);
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  bus = gst_element_get_bus (pipeline);
  msg = gst_bus_timed_pop_filtered (bus, 0, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL);
  gst_message_parse_error (msg, &err, NULL);
  fail_unless (strstr (err->message, "is not a listening socket") != NULL,
      "%s", err->message);
  g_error_free (err);
  gst_message_unref (msg);
  gst_object_unref (bus);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pipeline);
  fail_unless (fcntl (fds[0], F_GETFD) >= 0, "the application's fd closed");
  close (fds[0]);
  close (fds[1]);
}

GST_END_TEST;

static Suite *
spicesink_listen_suite (void)
{
  Suite *s = suite_create ("spicesink-listen");
  TCase *tc = tcase_create ("listen");

  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_listen_fd_outlives_pipeline);
  tcase_add_test (tc, test_redirect_host_and_late_link);
  tcase_add_test (tc, test_listen_fd_not_listening);
  suite_add_tcase (s, tc);
  return s;
}

GST_CHECK_MAIN (spicesink_listen);
