/* gst-spice: who iterates the GMainContext that spice-gtk runs on
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* spice-gtk attaches all of its I/O, idle and timeout sources to the global
 * default GMainContext. These functions keep a process-wide helper thread
 * that iterates that context whenever nobody else owns it, and steps aside
 * (within one time slice) as soon as an application runs its own loop on
 * it. */
void     gst_spice_src_context_ref (void);
void     gst_spice_src_context_unref (void);
gboolean gst_spice_src_context_is_driver_thread (void);

/* Runs @func on the thread that currently drives the default context (or
 * directly, if the calling thread can own the context right now). */
void     gst_spice_src_context_invoke (GSourceFunc func, gpointer data,
    GDestroyNotify notify);

/* Attaches @source to the default context (never dispatched on the
 * calling thread) and wakes whoever drives it. */
void     gst_spice_src_context_attach (GSource * source);

G_END_DECLS
