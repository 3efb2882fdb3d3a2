/* gst-spice tests: a TCP proxy on loopback that can stop forwarding what
 * its clients send (a link that stalls one way: the client keeps writing,
 * its data waits in its own buffers, and arrives at once when the link is
 * back). One thread, poll() over every connection.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _PauseProxy PauseProxy;

/* listens on a free loopback port and forwards each connection to
 * 127.0.0.1:@target_port */
PauseProxy *pause_proxy_new (guint16 target_port);
guint16  pause_proxy_port (PauseProxy * p);
/* any thread: stops (TRUE) or resumes forwarding client -> server */
void     pause_proxy_pause (PauseProxy * p, gboolean paused);
/* any thread: bytes forwarded client -> server so far */
guint64  pause_proxy_bytes_up (PauseProxy * p);
void     pause_proxy_free (PauseProxy * p);

G_END_DECLS
