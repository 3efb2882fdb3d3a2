/* spice-capture: a loopback TCP relay that records what SPICE clients send,
 * split into fuzzing seeds: the link stage (tests/fuzz/corpus/link) and the
 * data-stage messages of each channel (tests/fuzz/corpus/client-msg, with
 * the channel-type byte the harness expects in front).
 *
 *   spice-capture LISTEN_PORT SERVER_PORT OUTDIR SECONDS
 *
 * Point real clients (spicy-screenshot, remote-viewer) at LISTEN_PORT; the
 * relay forwards to 127.0.0.1:SERVER_PORT and stops after SECONDS.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <gio/gio.h>
#include <string.h>

#include <gst/spice/gstspicewire.h>

typedef struct {
  GSocketConnection *client, *server;
  GByteArray *sent;             /* everything the client sent */
  guint id;
  gint open;
} Relay;

static gchar *outdir;
static guint server_port;
static guint next_id;
static GList *relays;

/* Splits one connection's client bytes into the two kinds of seed. */
static void
save_seeds (Relay * r)
{
  const guint8 *d = r->sent->data;
  gsize n = r->sent->len, link_len, data_off;
  GstSpiceLinkHeader h;
  GstSpiceLinkMess m;
  GByteArray *msgs;
  gchar *path;

  if (!gst_spice_wire_parse_link_header (d, n, GST_SPICE_WIRE_LINK_MESS_SIZE,
          &h, NULL) || n < GST_SPICE_WIRE_LINK_HEADER_SIZE + h.size)
    return;
  link_len = GST_SPICE_WIRE_LINK_HEADER_SIZE + h.size;
  if (!gst_spice_wire_parse_link_mess (d + GST_SPICE_WIRE_LINK_HEADER_SIZE,
          h.size, &m))
    return;
  path = g_strdup_printf ("%s/link/captured-%u-ch%u", outdir, r->id,
      m.channel_type);
  g_file_set_contents (path, (const gchar *) d, link_len, NULL);
  g_free (path);

  /* auth mechanism word + RSA ticket, then the data stage */
  data_off = link_len + 4 + GST_SPICE_WIRE_TICKET_SIZE;
  if (n <= data_off || m.channel_type < 1 || m.channel_type > 4)
    return;
  msgs = g_byte_array_new ();
  g_byte_array_append (msgs, (guint8[]) { m.channel_type - 1 }, 1);
  g_byte_array_append (msgs, d + data_off, n - data_off);
  path = g_strdup_printf ("%s/client-msg/captured-%u-ch%u", outdir, r->id,
      m.channel_type);
  g_file_set_contents (path, (const gchar *) msgs->data, msgs->len, NULL);
  g_free (path);
  g_byte_array_unref (msgs);
}

static void
relay_close (Relay * r)
{
  if (--r->open > 0) {
    g_io_stream_close (G_IO_STREAM (r->client), NULL, NULL);
    g_io_stream_close (G_IO_STREAM (r->server), NULL, NULL);
    return;
  }
  save_seeds (r);
  relays = g_list_remove (relays, r);
  g_object_unref (r->client);
  g_object_unref (r->server);
  g_byte_array_unref (r->sent);
  g_free (r);
}

typedef struct {
  Relay *relay;
  GInputStream *in;
  GOutputStream *out;
  gboolean from_client;
  guint8 buf[65536];
} Pump;

static void pump_read (Pump * p);

static void
pump_read_done (GObject * src, GAsyncResult * res, gpointer data)
{
  Pump *p = data;
  gssize n = g_input_stream_read_finish (p->in, res, NULL);

  if (n <= 0 || !g_output_stream_write_all (p->out, p->buf, n, NULL, NULL,
          NULL)) {
    relay_close (p->relay);
    g_free (p);
    return;
  }
  if (p->from_client)
    g_byte_array_append (p->relay->sent, p->buf, n);
  pump_read (p);
}

static void
pump_read (Pump * p)
{
  g_input_stream_read_async (p->in, p->buf, sizeof (p->buf),
      G_PRIORITY_DEFAULT, NULL, pump_read_done, p);
}

static void
start_pump (Relay * r, GSocketConnection * from, GSocketConnection * to,
    gboolean from_client)
{
  Pump *p = g_new0 (Pump, 1);

  p->relay = r;
  p->in = g_io_stream_get_input_stream (G_IO_STREAM (from));
  p->out = g_io_stream_get_output_stream (G_IO_STREAM (to));
  p->from_client = from_client;
  pump_read (p);
}

static gboolean
on_incoming (GSocketService * service, GSocketConnection * conn,
    GObject * source, gpointer data)
{
  GSocketClient *c = g_socket_client_new ();
  GSocketConnection *server;
  Relay *r;

  server = g_socket_client_connect_to_host (c, "127.0.0.1", server_port,
      NULL, NULL);
  g_object_unref (c);
  if (!server)
    return TRUE;
  r = g_new0 (Relay, 1);
  r->client = g_object_ref (conn);
  r->server = server;
  r->sent = g_byte_array_new ();
  r->id = next_id++;
  r->open = 2;
  relays = g_list_prepend (relays, r);
  start_pump (r, r->client, r->server, TRUE);
  start_pump (r, r->server, r->client, FALSE);
  return TRUE;
}

static gboolean
quit_cb (gpointer loop)
{
  g_main_loop_quit (loop);
  return G_SOURCE_REMOVE;
}

int
main (int argc, char **argv)
{
  GSocketService *service;
  GMainLoop *loop;
  gchar *dir;

  if (argc != 5) {
    g_printerr ("usage: spice-capture LISTEN_PORT SERVER_PORT OUTDIR "
        "SECONDS\n");
    return 64;
  }
  server_port = atoi (argv[2]);
  outdir = argv[3];
  dir = g_build_filename (outdir, "link", NULL);
  g_mkdir_with_parents (dir, 0755);
  g_free (dir);
  dir = g_build_filename (outdir, "client-msg", NULL);
  g_mkdir_with_parents (dir, 0755);
  g_free (dir);

  service = g_socket_service_new ();
  if (!g_socket_listener_add_inet_port (G_SOCKET_LISTENER (service),
          atoi (argv[1]), NULL, NULL)) {
    g_printerr ("spice-capture: cannot listen on %s\n", argv[1]);
    return 1;
  }
  g_signal_connect (service, "incoming", G_CALLBACK (on_incoming), NULL);
  loop = g_main_loop_new (NULL, FALSE);
  g_timeout_add_seconds (atoi (argv[4]), quit_cb, loop);
  g_main_loop_run (loop);
  g_socket_service_stop (service);
  /* connections still open are saved with what they sent so far */
  for (GList * l = relays; l; l = l->next)
    save_seeds (l->data);
  g_print ("spice-capture: %u connection(s)\n", next_id);
  return 0;
}
