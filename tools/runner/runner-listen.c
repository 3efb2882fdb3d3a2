/* gst-spice-run: the listening sockets of the pipeline's spicesink
 * elements, owned by the runner so that they outlive a pipeline
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A spicesink given a socket (listen-fd, tls-listen-fd) accepts on a
 * duplicate and never closes the runner's. A changed reload gives the
 * same socket to the new pipeline's sink, asks the old sink's clients to
 * reconnect (redirect-clients: SPICE_MSG_MAIN_MIGRATE_SWITCH_HOST to the
 * address they connected to), and while the old pipeline drains and the
 * new one starts, their connections wait in the socket's backlog.
 *
 * Sockets from systemd (a .socket unit's ListenStream=) follow the
 * protocol of sd_listen_fds(3), read here without libsystemd so that
 * every build has it: LISTEN_PID is this process, LISTEN_FDS sockets
 * from fd 3 on. Such a socket serves the sink whose port or tls-port is
 * its port, on the socket's own address (the sink's `address` then only
 * decides nothing; the sink checks the password rule on the socket's
 * address).
 */
#include "runner-listen.h"

#include <gio/gio.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LISTEN_FDS_START 3
#define LISTEN_BACKLOG 256

#define LOG(...) g_printerr ("gst-spice-run: " __VA_ARGS__)

typedef struct
{
  GInetAddress *address;        /* what it was bound to */
  gint port;                    /* asked for (0: any, then kept) */
  GSocket *socket;
  gboolean activated;           /* from systemd: never closed */
} Listener;

struct _RunnerListeners
{
  GPtrArray *all;               /* Listener* */
};

static void
listener_free (gpointer data)
{
  Listener *li = data;

  g_clear_object (&li->address);
  if (li->socket) {
    g_socket_close (li->socket, NULL);
    g_object_unref (li->socket);
  }
  g_free (li);
}

/* A listening TCP socket passed by systemd, or NULL (logged). */
static Listener *
listener_from_fd (gint fd)
{
  GError *err = NULL;
  GSocket *sock;
  GSocketAddress *local;
  Listener *li;

  fcntl (fd, F_SETFD, FD_CLOEXEC);
  sock = g_socket_new_from_fd (fd, &err);
  if (!sock) {
    LOG ("socket activation: fd %d: %s; ignored\n", fd, err->message);
    g_error_free (err);
    return NULL;
  }
  local = g_socket_get_local_address (sock, NULL);
  if (!G_IS_INET_SOCKET_ADDRESS (local) ||
      g_socket_get_socket_type (sock) != G_SOCKET_TYPE_STREAM) {
    LOG ("socket activation: fd %d is not a TCP socket; ignored\n", fd);
    g_clear_object (&local);
    g_object_unref (sock);
    return NULL;
  }
  li = g_new0 (Listener, 1);
  li->address = g_object_ref (g_inet_socket_address_get_address
      (G_INET_SOCKET_ADDRESS (local)));
  li->port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (local));
  li->socket = sock;
  li->activated = TRUE;
  g_object_unref (local);
  return li;
}

RunnerListeners *
runner_listeners_new (void)
{
  RunnerListeners *l = g_new0 (RunnerListeners, 1);
  const gchar *pid = g_getenv ("LISTEN_PID"), *fds = g_getenv ("LISTEN_FDS");
  gint n, i;

  l->all = g_ptr_array_new_with_free_func (listener_free);
  if (!pid || !fds || g_ascii_strtoll (pid, NULL, 10) != (gint64) getpid ())
    return l;
  n = (gint) g_ascii_strtoll (fds, NULL, 10);
  for (i = 0; i < n && i < 64; i++) {
    Listener *li = listener_from_fd (LISTEN_FDS_START + i);

    if (li) {
      gchar *a = g_inet_address_to_string (li->address);

      LOG ("socket activation: listening socket %s port %d\n", a, li->port);
      g_free (a);
      g_ptr_array_add (l->all, li);
    }
  }
  /* not for the children (the guest tools, encoders' helpers) */
  g_unsetenv ("LISTEN_PID");
  g_unsetenv ("LISTEN_FDS");
  g_unsetenv ("LISTEN_FDNAMES");
  return l;
}

void
runner_listeners_free (RunnerListeners * l)
{
  if (!l)
    return;
  g_ptr_array_unref (l->all);
  g_free (l);
}

/* The sink's address as the sink reads it ("localhost" is 127.0.0.1) */
static GInetAddress *
sink_address (GstElement * sink)
{
  gchar *s = NULL;
  GInetAddress *a;

  g_object_get (sink, "address", &s, NULL);
  a = g_inet_address_new_from_string (!s || g_strcmp0 (s, "localhost") == 0 ?
      "127.0.0.1" : s);
  g_free (s);
  return a;
}

static Listener *
listener_bind (GInetAddress * address, gint port)
{
  GSocket *sock;
  GSocketAddress *sa;
  GError *err = NULL;
  Listener *li;

  sock = g_socket_new (g_inet_address_get_family (address),
      G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, NULL);
  if (!sock)
    return NULL;
  g_socket_set_listen_backlog (sock, LISTEN_BACKLOG);
  sa = g_inet_socket_address_new (address, (guint16) port);
  if (!g_socket_bind (sock, sa, TRUE, &err) || !g_socket_listen (sock, &err)) {
    /* the sink binds it itself and reports why it cannot */
    g_clear_error (&err);
    g_object_unref (sa);
    g_object_unref (sock);
    return NULL;
  }
  g_object_unref (sa);
  li = g_new0 (Listener, 1);
  li->address = g_object_ref (address);
  li->port = port;
  li->socket = sock;
  return li;
}

/* systemd's socket of @port, else the runner's of (@address, @port), else
 * a new one; not one in @taken (another sink of the pipeline has it: two
 * sinks on one port fail as they did without the runner). NULL if it
 * cannot be bound. */
static Listener *
listener_for (RunnerListeners * l, GInetAddress * address, gint port,
    GHashTable * taken)
{
  Listener *li;
  guint i;

  for (i = 0; i < l->all->len; i++) {
    li = g_ptr_array_index (l->all, i);
    if (g_hash_table_contains (taken,
            GINT_TO_POINTER (g_socket_get_fd (li->socket))))
      continue;
    if (li->activated && port > 0 && li->port == port)
      return li;
    if (!li->activated && li->port == port &&
        g_inet_address_equal (li->address, address))
      return li;
  }
  li = listener_bind (address, port);
  if (li)
    g_ptr_array_add (l->all, li);
  return li;
}

/* The spicesink elements (those with listen-fd) of @pipeline */
static GList *
listening_sinks (GstElement * pipeline)
{
  GList *sinks = NULL;
  GstIterator *it = gst_bin_iterate_recurse (GST_BIN (pipeline));
  GValue item = G_VALUE_INIT;

  while (gst_iterator_next (it, &item) == GST_ITERATOR_OK) {
    GstElement *e = g_value_get_object (&item);

    if (g_object_class_find_property (G_OBJECT_GET_CLASS (e), "listen-fd") &&
        g_object_class_find_property (G_OBJECT_GET_CLASS (e), "tls-listen-fd"))
      sinks = g_list_prepend (sinks, gst_object_ref (e));
    g_value_reset (&item);
  }
  g_value_unset (&item);
  gst_iterator_free (it);
  return sinks;
}

static const gchar *const port_props[2] = { "port", "tls-port" };
static const gchar *const fd_props[2] = { "listen-fd", "tls-listen-fd" };

/* The sockets the spicesinks of @pipeline have */
static GHashTable *
sockets_used (GstElement * pipeline)
{
  GHashTable *used = g_hash_table_new (NULL, NULL);
  GList *sinks = listening_sinks (pipeline), *s;
  guint i;

  for (s = sinks; s; s = s->next) {
    for (i = 0; i < 2; i++) {
      gint fd = -1;

      g_object_get (s->data, fd_props[i], &fd, NULL);
      if (fd >= 0)
        g_hash_table_add (used, GINT_TO_POINTER (fd));
    }
  }
  g_list_free_full (sinks, gst_object_unref);
  return used;
}

void
runner_listeners_attach (RunnerListeners * l, GstElement * pipeline)
{
  GHashTable *taken = sockets_used (pipeline);
  GList *sinks = listening_sinks (pipeline), *s;
  guint i;

  for (s = sinks; s; s = s->next) {
    GstElement *sink = s->data;
    GInetAddress *address = sink_address (sink);

    for (i = 0; address && i < 2; i++) {
      gint port = -1, fd = -1;
      Listener *li;

      g_object_get (sink, port_props[i], &port, fd_props[i], &fd, NULL);
      if (port < 0 || fd >= 0)
        continue;
      li = listener_for (l, address, port, taken);
      if (li) {
        fd = g_socket_get_fd (li->socket);
        g_object_set (sink, fd_props[i], fd, NULL);
        g_hash_table_add (taken, GINT_TO_POINTER (fd));
      }
    }
    g_clear_object (&address);
  }
  g_list_free_full (sinks, gst_object_unref);
  g_hash_table_unref (taken);
}

void
runner_listeners_prune (RunnerListeners * l, GstElement * pipeline)
{
  GHashTable *used = sockets_used (pipeline);
  guint i = 0;

  while (i < l->all->len) {
    Listener *li = g_ptr_array_index (l->all, i);

    gboolean in_use = g_hash_table_contains (used,
        GINT_TO_POINTER (g_socket_get_fd (li->socket)));

    if (li->activated && !in_use) {
      gchar *a = g_inet_address_to_string (li->address);

      /* its clients would wait for nothing */
      LOG ("warning: socket activation: no spicesink listens on %s:%d (set "
          "LISTEN_PORT or TLS_PORT to %d)\n", a, li->port, li->port);
      g_free (a);
    }
    if (!li->activated && !in_use)
      g_ptr_array_remove_index (l->all, i);
    else
      i++;
  }
  g_hash_table_unref (used);
}

guint
runner_listeners_redirect (GstElement * old, GstElement * next)
{
  GHashTable *used = sockets_used (next);
  GList *sinks = listening_sinks (old), *s;
  guint total = 0, i;

  for (s = sinks; s; s = s->next) {
    gboolean shared = FALSE;
    guint n = 0;

    for (i = 0; i < 2; i++) {
      gint fd = -1;

      g_object_get (s->data, fd_props[i], &fd, NULL);
      if (fd >= 0 && g_hash_table_contains (used, GINT_TO_POINTER (fd)))
        shared = TRUE;
    }
    if (!shared)
      continue;
    g_signal_emit_by_name (s->data, "redirect-clients", &n);
    total += n;
  }
  g_list_free_full (sinks, gst_object_unref);
  g_hash_table_unref (used);
  return total;
}
