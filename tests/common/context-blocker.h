/* context-blocker.h: hold the global default GMainContext from a thread of
 * its own, so that nobody dispatches it meanwhile: spicesrc's helper
 * thread backs off (docs/spicesrc.md, "the main-context problem") and
 * every call spicesrc makes on the context (gst_spice_src_context_invoke)
 * queues until test_context_unblock(). Used to stall spice-gtk's thread
 * the way a busy application thread would.
 *
 *   TestContextBlocker *b = test_context_block ();
 *   ... everything spicesrc sends to its context waits ...
 *   test_context_unblock (b);
 */
#pragma once

#include <glib.h>

typedef struct
{
  GThread *thread;
  GMutex lock;
  GCond cond;
  gboolean holding;
  gboolean release;
} TestContextBlocker;

static gpointer
test_context_blocker_thread (gpointer data)
{
  TestContextBlocker *b = data;

  /* whoever owns it (spicesrc's helper) lets go within a time slice */
  while (!g_main_context_acquire (NULL))
    g_usleep (200);
  g_mutex_lock (&b->lock);
  b->holding = TRUE;
  g_cond_broadcast (&b->cond);
  while (!b->release)
    g_cond_wait (&b->cond, &b->lock);
  g_mutex_unlock (&b->lock);
  g_main_context_release (NULL);
  return NULL;
}

/* returns once the default context is held */
static inline TestContextBlocker *
test_context_block (void)
{
  TestContextBlocker *b = g_new0 (TestContextBlocker, 1);

  g_mutex_init (&b->lock);
  g_cond_init (&b->cond);
  b->thread = g_thread_new ("ctx-blocker", test_context_blocker_thread, b);
  g_mutex_lock (&b->lock);
  while (!b->holding)
    g_cond_wait (&b->cond, &b->lock);
  g_mutex_unlock (&b->lock);
  return b;
}

/* lets the default context go (the calls queued meanwhile then run) */
static inline void
test_context_unblock (TestContextBlocker * b)
{
  g_mutex_lock (&b->lock);
  b->release = TRUE;
  g_cond_broadcast (&b->cond);
  g_mutex_unlock (&b->lock);
  g_thread_join (b->thread);
  g_mutex_clear (&b->lock);
  g_cond_clear (&b->cond);
  g_free (b);
}
