/* gst-spice tests: are all the other threads of this process asleep?
 * (threads-idle.h)
 *
 * A look first compares the CPU time of the other threads (the process's
 * less the caller's) with the last look's: if they ran, they are busy.
 * Otherwise it takes each other thread's CPU time (its thread CPU clock), then
 * its state (/proc/self/task/TID/stat, kept open), then its CPU time
 * again. A thread that was asleep when its state was read and whose CPU
 * time did not move did not run between the two readings of its clock;
 * every first reading comes before every state and every second reading
 * after, so no thread ran in between and all slept: none can have woken
 * another (a wake-up from a timer is later work, not the caller's).
 *
 * The watcher (a process on one CPU only): a thread of the SCHED_IDLE
 * class, which the kernel runs when no other thread wants that CPU (and
 * preempts at once when one does). Armed, it writes an eventfd the
 * caller polls: the caller sleeps until the others are done instead of
 * napping and looking. It is left out of the looks.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#define _GNU_SOURCE
#include "threads-idle.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>

typedef struct
{
  pid_t tid;
  gint fd;                      /* /proc/self/task/TID/stat */
  clockid_t clock;              /* its CPU clock */
  struct timespec cpu;
} Peer;

struct _TestThreadsIdle
{
  pid_t self;
  gint task_fd;                 /* /proc/self/task: the thread count */
  GArray *peers;
  gint64 others_ns;             /* the other threads' CPU time, last look */
  /* the watcher (one CPU only) */
  GThread *watcher;
  pid_t watcher_tid;            /* 0: none (yet) */
  gint event_fd;                /* -1: no watcher */
  GMutex lock;
  GCond cond;
  gboolean armed, quit, started;
};

static gint64
ts_ns (const struct timespec *t)
{
  return t->tv_sec * G_GINT64_CONSTANT (1000000000) + t->tv_nsec;
}

/* a thread's CPU clock (the kernel's MAKE_THREAD_CPUCLOCK: CPUCLOCK_SCHED
 * | CPUCLOCK_PERTHREAD_MASK) */
static clockid_t
thread_clock (pid_t tid)
{
  return (clockid_t) (((guint) ~tid << 3) | 6);
}

/* the CPU time of the process less the calling thread's and the
 * watcher's (less the ~1 us the calling thread spends between the
 * readings) */
static gint64
others_cpu_ns (TestThreadsIdle * ti)
{
  struct timespec proc, self, w = { 0, 0 };

  clock_gettime (CLOCK_PROCESS_CPUTIME_ID, &proc);
  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &self);
  if (ti->watcher_tid)
    clock_gettime (thread_clock (ti->watcher_tid), &w);
  return ts_ns (&proc) - ts_ns (&self) - ts_ns (&w);
}

/* the other threads ran more than a few us since the last look: busy,
 * without reading their states */
#define RAN_NS 5000

static void
peers_clear (TestThreadsIdle * ti)
{
  guint i;

  for (i = 0; i < ti->peers->len; i++)
    close (g_array_index (ti->peers, Peer, i).fd);
  g_array_set_size (ti->peers, 0);
}

/* the threads there are now */
static void
peers_scan (TestThreadsIdle * ti)
{
  DIR *d = opendir ("/proc/self/task");
  struct dirent *e;

  peers_clear (ti);
  if (!d)
    return;
  while ((e = readdir (d))) {
    gchar path[64];
    Peer p;

    p.tid = (pid_t) atoi (e->d_name);
    if (p.tid <= 0 || p.tid == ti->self || p.tid == ti->watcher_tid)
      continue;
    g_snprintf (path, sizeof (path), "/proc/self/task/%d/stat", p.tid);
    p.fd = open (path, O_RDONLY | O_CLOEXEC);
    if (p.fd < 0)
      continue;                 /* it ended */
    p.clock = thread_clock (p.tid);
    g_array_append_val (ti->peers, p);
  }
  closedir (d);
}

/* field @n (1-based, as in proc(5)) of the stat line in @buf: fields from
 * 3 on follow the last ')' (the name may hold anything) */
static const gchar *
stat_field (const gchar * buf, guint n)
{
  const gchar *p = strrchr (buf, ')');
  guint i;

  if (!p || n < 3 || p[1] != ' ')
    return NULL;
  p += 2;
  for (i = 3; i < n; i++) {
    p = strchr (p, ' ');
    if (!p)
      return NULL;
    p++;
  }
  return p;
}

static gssize
read_stat (gint fd, gchar * buf, gsize size)
{
  gssize n;

  do
    n = pread (fd, buf, size - 1, 0);
  while (n < 0 && errno == EINTR);
  if (n >= 0)
    buf[n] = '\0';
  return n;
}

/* the process's thread count, 0 if unknown: procfs gives the task
 * directory 2 links plus one a thread */
static guint
thread_count (TestThreadsIdle * ti)
{
  struct stat st;

  if (fstat (ti->task_fd, &st) != 0 || st.st_nlink < 2)
    return 0;
  return (guint) st.st_nlink - 2;
}

/* the watcher: runs when nothing else wants the CPU, then writes the
 * eventfd once an arming */
static gpointer
watcher_thread (gpointer data)
{
  TestThreadsIdle *ti = data;
  struct sched_param param = { 0 };
  gboolean ok = sched_setscheduler (0, SCHED_IDLE, &param) == 0;

  g_mutex_lock (&ti->lock);
  if (ok)
    ti->watcher_tid = (pid_t) syscall (SYS_gettid);
  ti->started = TRUE;
  g_cond_broadcast (&ti->cond);
  while (ok && !ti->quit) {
    guint64 one = 1;

    if (!ti->armed) {
      g_cond_wait (&ti->cond, &ti->lock);
      continue;
    }
    ti->armed = FALSE;
    g_mutex_unlock (&ti->lock);
    /* nothing else ran the CPU to let us here (or it was our turn of
     * the little time the idle class gets: the caller looks anyway) */
    if (write (ti->event_fd, &one, sizeof (one)) < 0)
      g_warning ("threads-idle: eventfd write: %s", g_strerror (errno));
    g_mutex_lock (&ti->lock);
  }
  g_mutex_unlock (&ti->lock);
  return NULL;
}

/* TRUE if the process may run on one CPU only */
static gboolean
one_cpu (void)
{
  cpu_set_t set;

  return sched_getaffinity (0, sizeof (set), &set) == 0 &&
      CPU_COUNT (&set) == 1;
}

TestThreadsIdle *
test_threads_idle_new (void)
{
  TestThreadsIdle *ti;
  gint fd = open ("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

  if (fd < 0)
    return NULL;
  ti = g_new0 (TestThreadsIdle, 1);
  ti->self = (pid_t) syscall (SYS_gettid);
  ti->task_fd = fd;
  ti->peers = g_array_new (FALSE, FALSE, sizeof (Peer));
  ti->event_fd = -1;
  g_mutex_init (&ti->lock);
  g_cond_init (&ti->cond);
  if (one_cpu ()) {
    ti->event_fd = eventfd (0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ti->event_fd >= 0) {
      ti->watcher = g_thread_new ("threads-idle", watcher_thread, ti);
      g_mutex_lock (&ti->lock);
      while (!ti->started)
        g_cond_wait (&ti->cond, &ti->lock);
      g_mutex_unlock (&ti->lock);
      if (!ti->watcher_tid) {
        /* no SCHED_IDLE here: short naps */
        g_thread_join (ti->watcher);
        ti->watcher = NULL;
        close (ti->event_fd);
        ti->event_fd = -1;
      }
    }
  }
  peers_scan (ti);
  ti->others_ns = others_cpu_ns (ti);
  return ti;
}

void
test_threads_idle_free (TestThreadsIdle * ti)
{
  if (!ti)
    return;
  if (ti->watcher) {
    g_mutex_lock (&ti->lock);
    ti->quit = TRUE;
    g_cond_broadcast (&ti->cond);
    g_mutex_unlock (&ti->lock);
    g_thread_join (ti->watcher);
    close (ti->event_fd);
  }
  peers_clear (ti);
  g_array_unref (ti->peers);
  close (ti->task_fd);
  g_mutex_clear (&ti->lock);
  g_cond_clear (&ti->cond);
  g_free (ti);
}

/* TRUE if the watcher ran since the last arming (drains its eventfd) */
static gboolean
watcher_fired (TestThreadsIdle * ti)
{
  guint64 n;
  gboolean fired = FALSE;

  if (ti->event_fd < 0)
    return FALSE;
  while (read (ti->event_fd, &n, sizeof (n)) > 0)
    fired = TRUE;
  return fired;
}

gint
test_threads_idle_fd (TestThreadsIdle * ti)
{
  return ti->event_fd;
}

void
test_threads_idle_arm (TestThreadsIdle * ti)
{
  if (ti->event_fd < 0)
    return;
  watcher_fired (ti);
  g_mutex_lock (&ti->lock);
  ti->armed = TRUE;
  g_cond_signal (&ti->cond);
  g_mutex_unlock (&ti->lock);
}

guint
test_threads_idle_count (TestThreadsIdle * ti)
{
  return ti->peers->len;
}

gboolean
test_threads_idle_check (TestThreadsIdle * ti)
{
  gint64 others = others_cpu_ns (ti);
  gboolean ran = ABS (others - ti->others_ns) > RAN_NS;
  guint i;

  ti->others_ns = others;
  /* the others ran since the last look: busy, unless the watcher ran
   * after them (the CPU had nothing else to do) */
  if (ran && !watcher_fired (ti))
    return FALSE;
  if (thread_count (ti) != ti->peers->len + 1 + (ti->watcher_tid != 0))
    peers_scan (ti);
  for (i = 0; i < ti->peers->len; i++) {
    Peer *p = &g_array_index (ti->peers, Peer, i);

    if (clock_gettime (p->clock, &p->cpu) != 0)
      goto gone;
  }
  for (i = 0; i < ti->peers->len; i++) {
    Peer *p = &g_array_index (ti->peers, Peer, i);
    gchar buf[1024];
    const gchar *state;

    if (read_stat (p->fd, buf, sizeof (buf)) <= 0)
      goto gone;
    state = stat_field (buf, 3);
    if (!state)
      goto gone;
    /* asleep, stopped, or ending */
    if (!*state || !strchr ("StTZX", *state)) {
      /* the busy one first next time */
      if (i > 0) {
        Peer tmp = *p;

        *p = g_array_index (ti->peers, Peer, 0);
        g_array_index (ti->peers, Peer, 0) = tmp;
      }
      return FALSE;
    }
  }
  for (i = 0; i < ti->peers->len; i++) {
    Peer *p = &g_array_index (ti->peers, Peer, i);
    struct timespec now;

    if (clock_gettime (p->clock, &now) != 0)
      goto gone;
    if (now.tv_sec != p->cpu.tv_sec || now.tv_nsec != p->cpu.tv_nsec)
      return FALSE;
  }
  /* a thread that ran while we looked may have started another one */
  others = others_cpu_ns (ti);
  if (ABS (others - ti->others_ns) > RAN_NS) {
    ti->others_ns = others;
    return FALSE;
  }
  return TRUE;

gone:
  /* a thread ended: look again next time */
  peers_scan (ti);
  return FALSE;
}
