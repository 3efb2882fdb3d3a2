/* linkemu: a userspace delay line between two network interfaces.
 *
 * Part of the gst-spice latency rig (docs/benchmarks.md).  The kernel this
 * rig runs on has no netem, so the propagation delay of a shaped link is
 * made here: every Ethernet frame that arrives on interface A is sent out of
 * interface B exactly DELAY_AB later, and vice versa.  Rate limiting is left
 * to `tc tbf` on the egress of the interfaces this program sends on (see
 * linkemu-setup.sh), so the bottleneck queue sits "in the network", after the
 * delay, and not in the sending host's qdisc.
 *
 *   linkemu --dev-a IF --dev-b IF --delay-ab MS --delay-ba MS
 *           [--limit-ab BYTES] [--limit-ba BYTES] [--stats FILE] [--no-rt]
 *
 * - Frames are read with AF_PACKET/SOCK_RAW/ETH_P_ALL sockets bound to each
 *   interface (own injections are ignored with PACKET_IGNORE_OUTGOING) and
 *   stamped with CLOCK_MONOTONIC when read.
 * - Each direction is a FIFO held in a byte ring; a frame that would make the
 *   queued frame bytes exceed the limit is dropped (drop-tail).
 * - One epoll loop; a CLOCK_MONOTONIC timerfd armed (absolute) for the
 *   earliest due frame; timer slack 1 ns; SCHED_FIFO and mlockall unless
 *   --no-rt, so that a loaded 2-core machine does not add scheduling jitter.
 * - Send lateness (time sent - time due) is kept in a 10 us histogram and
 *   reported with the counters as JSON on SIGUSR1 and at exit (SIGTERM or
 *   SIGINT) to --stats FILE (default stderr).
 * - Prints "linkemu ready" on stdout once both sockets are bound.
 *
 * Frames larger than LINKEMU_MAX_FRAME (GSO/GRO left on) are counted as
 * "oversize" and dropped: turn offloads off on every veth end.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

#define LINKEMU_MAX_FRAME 16384
#define REC_HDR 16u
#define ALIGN16(x) (((x) + 15u) & ~(size_t) 15u)
#define REC_MAX (REC_HDR + LINKEMU_MAX_FRAME)
#define HIST_BUCKET_NS 10000ull /* 10 us */
#define HIST_N 2000             /* up to 20 ms, then overflow */

struct rec
{
  uint64_t due_ns;
  uint32_t len;                 /* 0 = padding up to the ring end */
  uint32_t span;                /* bytes this record occupies */
};

struct dir
{
  const char *name;
  int rx_fd, tx_fd;
  uint64_t delay_ns;
  size_t limit;                 /* max queued frame bytes */
  uint8_t *ring;
  size_t cap, r, w, used;       /* ring bytes */
  size_t queued;                /* frame bytes queued */
  uint64_t rx_packets, rx_bytes, tx_packets, tx_bytes;
  uint64_t drops_queue, drops_tx, drops_sndbuf, oversize, tx_errors;
  size_t max_queued;
  uint64_t hist[HIST_N + 1];
  uint64_t late_max_ns;
};

static uint8_t scratch[65536];

/* Lateness of the first frame sent after each wake-up: the timer and
 * scheduling jitter alone.  The per-direction histograms also contain the
 * time spent sending the earlier frames of a burst that fell due together
 * (each send runs the receiving namespace's stack in this thread). */
static uint64_t wake_hist[HIST_N + 1];
static uint64_t wake_max_ns;
static int wake_first;

static uint64_t
now_ns (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

static void
die (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  fputs ("linkemu: ", stderr);
  vfprintf (stderr, fmt, ap);
  va_end (ap);
  fputc ('\n', stderr);
  exit (1);
}

static int
open_iface (const char *ifname, int *ifindex)
{
  struct sockaddr_ll sll;
  int one = 1, buf = 32 << 20;
  int fd = socket (AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC,
      htons (ETH_P_ALL));
  if (fd < 0)
    die ("socket(AF_PACKET): %s", strerror (errno));
  *ifindex = (int) if_nametoindex (ifname);
  if (*ifindex == 0)
    die ("no interface %s", ifname);
  memset (&sll, 0, sizeof sll);
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons (ETH_P_ALL);
  sll.sll_ifindex = *ifindex;
  if (bind (fd, (struct sockaddr *) &sll, sizeof sll) < 0)
    die ("bind %s: %s", ifname, strerror (errno));
  if (setsockopt (fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one) < 0)
    fprintf (stderr, "linkemu: PACKET_IGNORE_OUTGOING: %s (filtering by "
        "pkttype instead)\n", strerror (errno));
  /* large buffers: the receive side must absorb TCP bursts between two
   * wake-ups, the send side holds what waits in the tbf queue */
  if (setsockopt (fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf) < 0)
    setsockopt (fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
  if (setsockopt (fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof buf) < 0)
    setsockopt (fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
  /* drain whatever arrived before the bind took effect */
  while (recv (fd, scratch, sizeof scratch, MSG_DONTWAIT) >= 0);
  return fd;
}

static void
dir_init (struct dir *d, const char *name, int rx_fd, int tx_fd,
    double delay_ms, size_t limit)
{
  memset (d, 0, sizeof *d);
  d->name = name;
  d->rx_fd = rx_fd;
  d->tx_fd = tx_fd;
  d->delay_ns = (uint64_t) (delay_ms * 1e6 + 0.5);
  d->limit = limit;
  /* small frames cost up to ~1.6x their size in the ring (header+alignment) */
  d->cap = ALIGN16 (2 * limit + 8 * REC_MAX);
  d->ring = malloc (d->cap);
  if (!d->ring)
    die ("out of memory (%zu bytes)", d->cap);
  memset (d->ring, 0, d->cap);  /* fault the pages in before mlockall */
}

/* Reads every pending frame of one direction into its ring. */
static void
dir_receive (struct dir *d)
{
  for (;;) {
    struct sockaddr_ll from;
    socklen_t fromlen = sizeof from;
    uint8_t *dst;
    size_t room;
    ssize_t n;
    int into_ring = 0;

    /* make room for one maximal record at d->w */
    if (d->cap - d->used >= REC_MAX + (d->cap - d->w)
        || (d->w + REC_MAX <= d->cap && d->cap - d->used >= REC_MAX)) {
      if (d->w + REC_MAX > d->cap) {
        /* wrap: pad to the end of the ring */
        struct rec *pad = (struct rec *) (d->ring + d->w);
        pad->len = 0;
        pad->span = (uint32_t) (d->cap - d->w);
        pad->due_ns = 0;
        d->used += pad->span;
        d->w = 0;
      }
      into_ring = 1;
    }
    if (into_ring) {
      dst = d->ring + d->w + REC_HDR;
      room = LINKEMU_MAX_FRAME;
    } else {
      dst = scratch;
      room = sizeof scratch;
    }
    n = recvfrom (d->rx_fd, dst, room, MSG_DONTWAIT | MSG_TRUNC,
        (struct sockaddr *) &from, &fromlen);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK)
        return;
      /* the interface went away (or worse): never spin at SCHED_FIFO */
      die ("recv %s: %s", d->name, strerror (errno));
    }
    if (from.sll_pkttype == PACKET_OUTGOING)
      continue;
    d->rx_packets++;
    d->rx_bytes += (uint64_t) n;
    if ((size_t) n > LINKEMU_MAX_FRAME) {
      d->oversize++;
      continue;
    }
    if (!into_ring || d->queued + (size_t) n > d->limit) {
      d->drops_queue++;
      continue;
    }
    {
      struct rec *rec = (struct rec *) (d->ring + d->w);
      rec->due_ns = now_ns () + d->delay_ns;
      rec->len = (uint32_t) n;
      rec->span = (uint32_t) ALIGN16 (REC_HDR + (size_t) n);
      d->w += rec->span;
      if (d->w == d->cap)
        d->w = 0;
      d->used += rec->span;
      d->queued += (size_t) n;
      if (d->queued > d->max_queued)
        d->max_queued = d->queued;
    }
  }
}

/* The head record, skipping padding; NULL if the ring is empty. */
static struct rec *
dir_head (struct dir *d)
{
  while (d->used > 0) {
    struct rec *rec = (struct rec *) (d->ring + d->r);
    if (rec->len != 0)
      return rec;
    d->used -= rec->span;
    d->r = 0;
  }
  return NULL;
}

/* Sends every frame that is due; returns the due time of the next one or 0. */
static uint64_t
dir_transmit (struct dir *d)
{
  for (;;) {
    struct rec *rec = dir_head (d);
    uint64_t now, late;
    ssize_t n;

    if (!rec)
      return 0;
    now = now_ns ();
    if (rec->due_ns > now)
      return rec->due_ns;
    late = now - rec->due_ns;
    if (wake_first) {
      wake_first = 0;
      wake_hist[late / HIST_BUCKET_NS <
          HIST_N ? late / HIST_BUCKET_NS : HIST_N]++;
      if (late > wake_max_ns)
        wake_max_ns = late;
    }
    if (late > d->late_max_ns)
      d->late_max_ns = late;
    d->hist[late / HIST_BUCKET_NS < HIST_N ? late / HIST_BUCKET_NS : HIST_N]++;
    n = send (d->tx_fd, d->ring + d->r + REC_HDR, rec->len, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == ENOBUFS)
        d->drops_tx++;          /* the tbf queue is full: a drop-tail loss */
      else if (errno == EAGAIN || errno == EWOULDBLOCK)
        d->drops_sndbuf++;
      else
        d->tx_errors++;
    } else {
      d->tx_packets++;
      d->tx_bytes += rec->len;
    }
    d->queued -= rec->len;
    d->used -= rec->span;
    d->r += rec->span;
    if (d->r == d->cap)
      d->r = 0;
  }
}

static double
quantile_us (const uint64_t * hist, uint64_t max_ns, double q)
{
  uint64_t total = 0, acc = 0, target;
  int i;
  for (i = 0; i <= HIST_N; i++)
    total += hist[i];
  if (total == 0)
    return 0.0;
  target = (uint64_t) (q * (double) total);
  if (target >= total)
    target = total - 1;
  for (i = 0; i <= HIST_N; i++) {
    acc += hist[i];
    if (acc > target)
      return i == HIST_N ? (double) max_ns / 1000.0 : (double) ((i + 1) * HIST_BUCKET_NS) / 1000.0;     /* upper edge */
  }
  return (double) max_ns / 1000.0;
}

static double
hist_quantile_us (const struct dir *d, double q)
{
  return quantile_us (d->hist, d->late_max_ns, q);
}

static void
dir_json (FILE * f, const struct dir *d)
{
  fprintf (f, "\"%s\":{\"delay_ms\":%.3f,\"limit_bytes\":%zu,"
      "\"rx_packets\":%llu,\"rx_bytes\":%llu,\"tx_packets\":%llu,"
      "\"tx_bytes\":%llu,\"drops_queue\":%llu,\"drops_tx\":%llu,"
      "\"drops_sndbuf\":%llu,\"oversize\":%llu,\"tx_errors\":%llu,"
      "\"max_queued_bytes\":%zu,\"late_us_p50\":%.0f,\"late_us_p99\":%.0f,"
      "\"late_us_p999\":%.0f,\"late_us_max\":%.1f}",
      d->name, (double) d->delay_ns / 1e6, d->limit,
      (unsigned long long) d->rx_packets, (unsigned long long) d->rx_bytes,
      (unsigned long long) d->tx_packets, (unsigned long long) d->tx_bytes,
      (unsigned long long) d->drops_queue, (unsigned long long) d->drops_tx,
      (unsigned long long) d->drops_sndbuf, (unsigned long long) d->oversize,
      (unsigned long long) d->tx_errors, d->max_queued,
      hist_quantile_us (d, 0.5), hist_quantile_us (d, 0.99),
      hist_quantile_us (d, 0.999), (double) d->late_max_ns / 1000.0);
}

static void
write_stats (const char *path, const struct dir *ab, const struct dir *ba,
    const char *dev_a, const char *dev_b)
{
  FILE *f = stderr;
  char tmp[4096];
  if (path) {
    snprintf (tmp, sizeof tmp, "%s.tmp", path);
    f = fopen (tmp, "w");
    if (!f) {
      fprintf (stderr, "linkemu: %s: %s\n", tmp, strerror (errno));
      return;
    }
  }
  fprintf (f, "{\"dev_a\":\"%s\",\"dev_b\":\"%s\",\"wake_us_p50\":%.0f,"
      "\"wake_us_p99\":%.0f,\"wake_us_p999\":%.0f,\"wake_us_max\":%.1f,", dev_a,
      dev_b, quantile_us (wake_hist, wake_max_ns, 0.5),
      quantile_us (wake_hist, wake_max_ns, 0.99),
      quantile_us (wake_hist, wake_max_ns, 0.999),
      (double) wake_max_ns / 1000.0);
  dir_json (f, ab);
  fputc (',', f);
  dir_json (f, ba);
  fputs ("}\n", f);
  if (path) {
    fclose (f);
    if (rename (tmp, path) < 0)
      fprintf (stderr, "linkemu: rename %s: %s\n", path, strerror (errno));
  } else {
    fflush (f);
  }
}

static void
usage (FILE * f)
{
  fputs ("usage: linkemu --dev-a IF --dev-b IF --delay-ab MS --delay-ba MS\n"
      "               [--limit-ab BYTES] [--limit-ba BYTES] [--stats FILE]"
      " [--no-rt]\n"
      "Forwards every frame from IF A to IF B after DELAY_AB ms and from B to"
      " A after\nDELAY_BA ms (drop-tail above LIMIT queued bytes, default"
      " 4 MiB).\nStats JSON on SIGUSR1 and at exit.\n", f);
}

int
main (int argc, char **argv)
{
  static const struct option opts[] = {
    {"dev-a", required_argument, NULL, 'a'},
    {"dev-b", required_argument, NULL, 'b'},
    {"delay-ab", required_argument, NULL, 'x'},
    {"delay-ba", required_argument, NULL, 'y'},
    {"limit-ab", required_argument, NULL, 'l'},
    {"limit-ba", required_argument, NULL, 'm'},
    {"stats", required_argument, NULL, 's'},
    {"no-rt", no_argument, NULL, 'n'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}
  };
  const char *dev_a = NULL, *dev_b = NULL, *stats = NULL;
  double delay_ab = -1, delay_ba = -1;
  size_t limit_ab = 4u << 20, limit_ba = 4u << 20;
  int rt = 1, c, ifa, ifb, fd_a, fd_b, tfd, sfd, ep, running = 1;
  static struct dir ab, ba;
  struct epoll_event ev;
  sigset_t mask;

  while ((c = getopt_long (argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
      case 'a':
        dev_a = optarg;
        break;
      case 'b':
        dev_b = optarg;
        break;
      case 'x':
        delay_ab = atof (optarg);
        break;
      case 'y':
        delay_ba = atof (optarg);
        break;
      case 'l':
        limit_ab = (size_t) strtoull (optarg, NULL, 0);
        break;
      case 'm':
        limit_ba = (size_t) strtoull (optarg, NULL, 0);
        break;
      case 's':
        stats = optarg;
        break;
      case 'n':
        rt = 0;
        break;
      case 'h':
        usage (stdout);
        return 0;
      default:
        usage (stderr);
        return 2;
    }
  }
  if (!dev_a || !dev_b || delay_ab < 0 || delay_ba < 0 || delay_ab > 10000
      || delay_ba > 10000 || limit_ab < 2048 || limit_ba < 2048) {
    usage (stderr);
    return 2;
  }

  sigemptyset (&mask);
  sigaddset (&mask, SIGTERM);
  sigaddset (&mask, SIGINT);
  sigaddset (&mask, SIGUSR1);
  sigaddset (&mask, SIGHUP);
  sigprocmask (SIG_BLOCK, &mask, NULL);
  sfd = signalfd (-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0)
    die ("signalfd: %s", strerror (errno));

  fd_a = open_iface (dev_a, &ifa);
  fd_b = open_iface (dev_b, &ifb);
  dir_init (&ab, "ab", fd_a, fd_b, delay_ab, limit_ab);
  dir_init (&ba, "ba", fd_b, fd_a, delay_ba, limit_ba);

  prctl (PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  if (rt) {
    struct sched_param sp = {.sched_priority = 20 };
    if (sched_setscheduler (0, SCHED_FIFO, &sp) < 0)
      fprintf (stderr, "linkemu: SCHED_FIFO: %s (continuing)\n",
          strerror (errno));
    if (mlockall (MCL_CURRENT | MCL_FUTURE) < 0)
      fprintf (stderr, "linkemu: mlockall: %s (continuing)\n",
          strerror (errno));
  }

  tfd = timerfd_create (CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  ep = epoll_create1 (EPOLL_CLOEXEC);
  if (tfd < 0 || ep < 0)
    die ("timerfd/epoll: %s", strerror (errno));
  ev.events = EPOLLIN;
  ev.data.fd = fd_a;
  epoll_ctl (ep, EPOLL_CTL_ADD, fd_a, &ev);
  ev.data.fd = fd_b;
  epoll_ctl (ep, EPOLL_CTL_ADD, fd_b, &ev);
  ev.data.fd = tfd;
  epoll_ctl (ep, EPOLL_CTL_ADD, tfd, &ev);
  ev.data.fd = sfd;
  epoll_ctl (ep, EPOLL_CTL_ADD, sfd, &ev);

  printf ("linkemu ready %s<->%s delay %.3f/%.3f ms limit %zu/%zu\n",
      dev_a, dev_b, delay_ab, delay_ba, limit_ab, limit_ba);
  fflush (stdout);

  while (running) {
    struct epoll_event evs[8];
    uint64_t next_ab, next_ba, next;
    struct itimerspec its;
    int i, n = epoll_wait (ep, evs, 8, -1);

    if (n < 0 && errno != EINTR)
      die ("epoll_wait: %s", strerror (errno));
    for (i = 0; i < n; i++) {
      int fd = evs[i].data.fd;
      if (fd == fd_a) {
        dir_receive (&ab);
      } else if (fd == fd_b) {
        dir_receive (&ba);
      } else if (fd == tfd) {
        uint64_t exp;
        if (read (tfd, &exp, sizeof exp) < 0 && errno != EAGAIN)
          die ("timerfd read: %s", strerror (errno));
      } else if (fd == sfd) {
        struct signalfd_siginfo si;
        while (read (sfd, &si, sizeof si) == (ssize_t) sizeof si) {
          if (si.ssi_signo == SIGUSR1)
            write_stats (stats, &ab, &ba, dev_a, dev_b);
          else
            running = 0;
        }
      }
    }
    wake_first = 1;
    next_ab = dir_transmit (&ab);
    next_ba = dir_transmit (&ba);
    next = next_ab;
    if (next_ba && (!next || next_ba < next))
      next = next_ba;
    memset (&its, 0, sizeof its);
    if (next) {
      its.it_value.tv_sec = (time_t) (next / 1000000000ull);
      its.it_value.tv_nsec = (long) (next % 1000000000ull);
    }
    /* an all-zero value disarms the timer */
    timerfd_settime (tfd, TFD_TIMER_ABSTIME, &its, NULL);
  }
  write_stats (stats, &ab, &ba, dev_a, dev_b);
  return 0;
}
