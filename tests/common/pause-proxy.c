/* gst-spice tests: a TCP proxy that can stall one way (pause-proxy.h)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "pause-proxy.h"

#define MAX_PAIRS 32

typedef struct
{
  gint client, server;          /* -1: closed */
} Pair;

struct _PauseProxy
{
  gint listen_fd, wake[2];
  guint16 port, target;
  GThread *thread;
  gint paused, stop;            /* atomic */
  gsize up;                     /* atomic */
  Pair pairs[MAX_PAIRS];
};

static gint
connect_target (guint16 port)
{
  struct sockaddr_in sa = { 0, };
  gint fd = socket (AF_INET, SOCK_STREAM, 0);

  sa.sin_family = AF_INET;
  sa.sin_port = htons (port);
  sa.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
  if (fd >= 0 && connect (fd, (struct sockaddr *) &sa, sizeof (sa)) < 0) {
    close (fd);
    fd = -1;
  }
  return fd;
}

static void
pair_close (Pair * pr)
{
  if (pr->client >= 0)
    close (pr->client);
  if (pr->server >= 0)
    close (pr->server);
  pr->client = pr->server = -1;
}

/* copies what @from has to @to (blocking writes: loopback); FALSE at EOF
 * or error */
static gboolean
forward (gint from, gint to, gsize * count)
{
  guint8 buf[65536];
  gssize n = read (from, buf, sizeof (buf)), off = 0;

  if (n <= 0)
    return FALSE;
  while (off < n) {
    gssize w = write (to, buf + off, n - off);

    if (w <= 0)
      return FALSE;
    off += w;
  }
  if (count)
    g_atomic_pointer_add (count, n);
  return TRUE;
}

static gpointer
proxy_thread (gpointer data)
{
  PauseProxy *p = data;

  while (!g_atomic_int_get (&p->stop)) {
    struct pollfd fds[2 + 2 * MAX_PAIRS];
    gint who[2 + 2 * MAX_PAIRS];
    gboolean paused = g_atomic_int_get (&p->paused);
    guint n = 0, i;

    fds[n].fd = p->listen_fd;
    fds[n].events = POLLIN;
    who[n++] = -1;
    fds[n].fd = p->wake[0];
    fds[n].events = POLLIN;
    who[n++] = -2;
    for (i = 0; i < MAX_PAIRS; i++) {
      if (p->pairs[i].client < 0)
        continue;
      if (!paused) {
        fds[n].fd = p->pairs[i].client;
        fds[n].events = POLLIN;
        who[n++] = 2 * i;
      }
      fds[n].fd = p->pairs[i].server;
      fds[n].events = POLLIN;
      who[n++] = 2 * i + 1;
    }
    if (poll (fds, n, 100) <= 0)
      continue;
    for (i = 0; i < n; i++) {
      Pair *pr;

      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      if (who[i] == -1) {
        gint c = accept (p->listen_fd, NULL, NULL), j;

        for (j = 0; c >= 0 && j < MAX_PAIRS; j++)
          if (p->pairs[j].client < 0)
            break;
        if (c >= 0 && j < MAX_PAIRS &&
            (p->pairs[j].server = connect_target (p->target)) >= 0)
          p->pairs[j].client = c;
        else if (c >= 0)
          close (c);
        continue;
      }
      if (who[i] == -2) {
        gchar b[16];

        if (read (p->wake[0], b, sizeof (b)) < 0)
          continue;
        continue;
      }
      pr = &p->pairs[who[i] / 2];
      if (pr->client < 0)
        continue;
      if (who[i] % 2 == 0 ? !forward (pr->client, pr->server, &p->up) :
          !forward (pr->server, pr->client, NULL))
        pair_close (pr);
    }
  }
  return NULL;
}

PauseProxy *
pause_proxy_new (guint16 target_port)
{
  PauseProxy *p = g_new0 (PauseProxy, 1);
  struct sockaddr_in sa = { 0, };
  socklen_t len = sizeof (sa);
  guint i;

  for (i = 0; i < MAX_PAIRS; i++)
    p->pairs[i].client = p->pairs[i].server = -1;
  p->target = target_port;
  p->listen_fd = socket (AF_INET, SOCK_STREAM, 0);
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
  g_assert (bind (p->listen_fd, (struct sockaddr *) &sa, sizeof (sa)) == 0);
  g_assert (listen (p->listen_fd, 16) == 0);
  g_assert (getsockname (p->listen_fd, (struct sockaddr *) &sa, &len) == 0);
  p->port = ntohs (sa.sin_port);
  g_assert (pipe (p->wake) == 0);
  p->thread = g_thread_new ("pause-proxy", proxy_thread, p);
  return p;
}

guint16
pause_proxy_port (PauseProxy * p)
{
  return p->port;
}

void
pause_proxy_pause (PauseProxy * p, gboolean paused)
{
  g_atomic_int_set (&p->paused, paused);
  if (write (p->wake[1], "w", 1) < 0)
    g_warning ("pause-proxy: %s", g_strerror (errno));
}

guint64
pause_proxy_bytes_up (PauseProxy * p)
{
  return (guint64) g_atomic_pointer_get (&p->up);
}

void
pause_proxy_free (PauseProxy * p)
{
  guint i;

  g_atomic_int_set (&p->stop, 1);
  pause_proxy_pause (p, FALSE);
  g_thread_join (p->thread);
  for (i = 0; i < MAX_PAIRS; i++)
    pair_close (&p->pairs[i]);
  close (p->listen_fd);
  close (p->wake[0]);
  close (p->wake[1]);
  g_free (p);
}
