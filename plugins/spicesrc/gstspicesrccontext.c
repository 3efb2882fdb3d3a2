/* gst-spice: who iterates the GMainContext that spice-gtk runs on
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * spice-gtk (0.42) runs every channel as a coroutine whose socket waits,
 * idles (signal emission) and timers are attached to the *global default*
 * GMainContext (g_source_attach (src, NULL), g_idle_add, g_timeout_add).
 * Nothing happens unless someone iterates that context:
 *
 *  - gst-launch-1.0 and most applications run a GMainLoop on it;
 *  - a GstHarness test, or an application that only polls the bus, never
 *    iterates it.
 *
 * So we keep one helper thread per process (while at least one spicesrc
 * is started, plus a short linger) that iterates the default context in
 * time slices, *only while it can own it*:
 *
 *  - it takes ownership with the non-blocking g_main_context_acquire(),
 *    never with g_main_context_iteration() (which would block until an
 *    application's g_main_loop_run() returns: that one keeps ownership for
 *    its whole run);
 *  - while it owns the context it polls with a timeout capped to the end
 *    of the current slice (SLICE_MS), then releases ownership and sleeps
 *    YIELD_US, which is when a thread blocked in g_main_loop_run() or
 *    g_main_context_iteration() (both wait on the context's condition for
 *    ownership) gets the context;
 *  - when acquire fails, somebody else owns the context and iterates it:
 *    the helper retries after PASSIVE_MS, doubling the wait on every
 *    failure up to PASSIVE_MAX_MS (an application's main loop owns the
 *    context for its whole run: polling it 100 times a second was most of
 *    an idle session's CPU), and at once when spicesrc invokes a call
 *    (gst_spice_src_context_invoke()), so a call never waits for the
 *    backoff.
 *
 * spice-gtk's coroutines keep their "current coroutine" in a plain static
 * variable: it must never run on two threads at once. Ownership of the
 * default context is exactly that mutual exclusion, and every spice-gtk
 * call spicesrc makes goes through gst_spice_src_context_invoke().
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/gst.h>

#include "gstspicesrccontext.h"

/* the helper thread's own category: `GST_DEBUG=spicesrccontext:6` */
GST_DEBUG_CATEGORY_STATIC (gst_spice_src_context_debug);
#define GST_CAT_DEFAULT gst_spice_src_context_debug

#define SLICE_MS 20
#define YIELD_US 1000
#define PASSIVE_MS 10
#define PASSIVE_MAX_MS 250
#define LINGER_US (2 * G_USEC_PER_SEC)

static GMutex driver_lock;
static GCond driver_cond;
static GThread *driver_thread;  /* under driver_lock */
static guint driver_users;      /* under driver_lock */
static gint64 driver_idle_since;        /* under driver_lock */
static gpointer driver_thread_id;       /* GThread of the running helper */
static gboolean driver_passive; /* under driver_lock: another thread owns
                                 * the context, the helper backs off */

static void
iterate_once (GMainContext * ctx, gint max_ms, GPollFD ** fds, gint * n_fds)
{
  gint max_priority = G_MAXINT, timeout = -1, nfds;
  GPollFunc poll_func;

  g_main_context_prepare (ctx, &max_priority);
  while ((nfds = g_main_context_query (ctx, max_priority, &timeout, *fds,
              *n_fds)) > *n_fds) {
    *n_fds = nfds;
    *fds = g_renew (GPollFD, *fds, *n_fds);
  }
  if (timeout < 0 || timeout > max_ms)
    timeout = max_ms;
  poll_func = g_main_context_get_poll_func (ctx);
  poll_func (*fds, nfds, timeout);
  g_main_context_check (ctx, max_priority, *fds, nfds);
  g_main_context_dispatch (ctx);
}

static gpointer
driver_func (gpointer data)
{
  GMainContext *ctx = g_main_context_default ();
  GPollFD *fds = g_new (GPollFD, 16);
  gint n_fds = 16;
  gint passive_ms = PASSIVE_MS;

  g_atomic_pointer_set (&driver_thread_id, g_thread_self ());
  GST_DEBUG ("default main context helper started");

  g_mutex_lock (&driver_lock);
  for (;;) {
    gint64 now = g_get_monotonic_time ();

    if (driver_users == 0 && now - driver_idle_since >= LINGER_US)
      break;
    g_mutex_unlock (&driver_lock);

    if (g_main_context_acquire (ctx)) {
      gint64 end = now + SLICE_MS * 1000;
      gint64 left;

      passive_ms = PASSIVE_MS;
      while ((left = end - g_get_monotonic_time ()) > 0)
        iterate_once (ctx, (gint) ((left + 999) / 1000), &fds, &n_fds);
      g_main_context_release (ctx);
      /* let a thread that waits for ownership (g_main_loop_run) in */
      g_mutex_lock (&driver_lock);
      g_cond_wait_until (&driver_cond, &driver_lock,
          g_get_monotonic_time () + YIELD_US);
    } else {
      g_mutex_lock (&driver_lock);
      driver_passive = TRUE;
      g_cond_wait_until (&driver_cond, &driver_lock,
          g_get_monotonic_time () + passive_ms * 1000);
      driver_passive = FALSE;
      passive_ms = MIN (passive_ms * 2, PASSIVE_MAX_MS);
    }
  }
  /* still holding driver_lock: a new user will start a new thread */
  g_thread_unref (driver_thread);
  driver_thread = NULL;
  g_atomic_pointer_set (&driver_thread_id, NULL);
  g_mutex_unlock (&driver_lock);

  g_free (fds);
  GST_DEBUG ("default main context helper stopped");
  return NULL;
}

/* any thread (spicesrc's start) */
void
gst_spice_src_context_ref (void)
{
  static gsize debug_done = 0;

  if (g_once_init_enter (&debug_done)) {
    GST_DEBUG_CATEGORY_INIT (gst_spice_src_context_debug, "spicesrccontext",
        0, "spicesrc: the helper thread that iterates spice-gtk's context");
    g_once_init_leave (&debug_done, 1);
  }
  g_mutex_lock (&driver_lock);
  driver_users++;
  if (!driver_thread)
    driver_thread = g_thread_new ("spicesrc-ctx", driver_func, NULL);
  g_mutex_unlock (&driver_lock);
}

void
gst_spice_src_context_unref (void)
{
  g_mutex_lock (&driver_lock);
  g_assert (driver_users > 0);
  if (--driver_users == 0)
    driver_idle_since = g_get_monotonic_time ();
  g_cond_broadcast (&driver_cond);
  g_mutex_unlock (&driver_lock);
}

gboolean
gst_spice_src_context_is_driver_thread (void)
{
  return g_atomic_pointer_get (&driver_thread_id) ==
      (gpointer) g_thread_self ();
}

/* if nobody iterates the context now, the helper must not sit out its
 * backoff with a call queued */
static void
driver_nudge (void)
{
  g_mutex_lock (&driver_lock);
  if (driver_passive)
    g_cond_broadcast (&driver_cond);
  g_mutex_unlock (&driver_lock);
}

void
gst_spice_src_context_invoke (GSourceFunc func, gpointer data,
    GDestroyNotify notify)
{
  /* g_main_context_invoke_full() calls @func right here if this thread
   * owns the default context or can acquire it, else queues an idle that
   * the owner dispatches (and wakes it up) */
  g_main_context_invoke_full (NULL, G_PRIORITY_DEFAULT, func, data, notify);
  driver_nudge ();
}

void
gst_spice_src_context_attach (GSource * source)
{
  g_source_attach (source, NULL);
  driver_nudge ();
}
