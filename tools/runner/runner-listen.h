/* gst-spice-run: the listening sockets of the pipeline's spicesink
 * elements, owned by the runner so that they outlive a pipeline
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS typedef struct _RunnerListeners RunnerListeners;

/* Takes the sockets systemd passes (LISTEN_PID, LISTEN_FDS: socket
 * activation, sd_listen_fds(3)) and unsets those variables. Main thread,
 * like everything here. */
RunnerListeners *runner_listeners_new (void);
void runner_listeners_free (RunnerListeners * l);
/* Sets listen-fd / tls-listen-fd of every spicesink of @pipeline (in
 * NULL) that listens on a port (port, tls-port >= 0) and has no socket
 * yet: the one systemd passed for that port, else the runner's socket of
 * the same address and port, else a new one. A port the runner cannot bind
 * is left to the sink, which reports it as before. */
void runner_listeners_attach (RunnerListeners * l, GstElement * pipeline);
/* Closes the runner's sockets that no spicesink of @pipeline uses
 * (systemd's stay, with a warning). */
void runner_listeners_prune (RunnerListeners * l, GstElement * pipeline);
/* Asks the clients of every spicesink of @old whose socket a spicesink
 * of @next also has to reconnect (its redirect-clients action): they
 * reconnect to the same socket, which @next accepts on once it runs.
 * Returns the number of clients asked. */
guint runner_listeners_redirect (GstElement * old, GstElement * next);

G_END_DECLS
