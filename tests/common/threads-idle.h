/* gst-spice tests: are all the other threads of this process asleep?
 *
 * For a test or harness that drives elements in its own process (a sink's
 * server thread, streaming threads) and wants to go on as soon as they did
 * everything they can with what they were given, instead of sleeping a
 * fixed time: test_threads_idle_check() is TRUE when every other thread
 * is blocked (state S) and none of them ran while it looked. After that,
 * only a timer or the caller can make anything happen (a socket the
 * caller reads may still hold what they wrote: poll it after the check).
 *
 * Linux only (/proc/self/task, per-thread CPU clocks). Not thread-safe:
 * one TestThreadsIdle per calling thread, which it leaves out.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _TestThreadsIdle TestThreadsIdle;

/* watches the other threads of the process (the calling thread is the
 * one left out); NULL if /proc is not there */
TestThreadsIdle *test_threads_idle_new (void);
void     test_threads_idle_free (TestThreadsIdle * ti);

/* TRUE: every other thread sleeps and none ran during the call (~2 us a
 * thread; ~1 us when they ran since the last call). Threads that start or
 * end are picked up by themselves. */
gboolean test_threads_idle_check (TestThreadsIdle * ti);

/* the number of other threads seen by the last check */
guint    test_threads_idle_count (TestThreadsIdle * ti);

/* A process that runs on one CPU only (taskset) has a watcher: a thread
 * of the SCHED_IDLE class, which that CPU runs when no other thread wants
 * it. test_threads_idle_fd() is an fd that becomes readable once the
 * watcher ran after test_threads_idle_arm(): poll it with what else is
 * waited for, then check (the watcher may also have had its small share
 * of a busy CPU). -1 elsewhere: check after short naps. The watcher is
 * not one of the threads checked. */
gint     test_threads_idle_fd (TestThreadsIdle * ti);
void     test_threads_idle_arm (TestThreadsIdle * ti);

G_END_DECLS
