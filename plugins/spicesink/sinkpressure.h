/* spicesink: the CPU pressure that admits or refuses new sessions and
 * caps the streams' frame rate
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Linux's pressure stall information (PSI): /proc/pressure/cpu for the
 * host, or a cgroup v2 group's cpu.pressure for a service's or a pod's
 * share of it. The "some" line's avg10 is the share of the last ~10 s in
 * which at least one task was ready to run and waited for a CPU; it rises
 * when the host has more work than cores, before the sessions it serves
 * lose their latency (docs/operator-guide.md "Capacity"). Its total is
 * that waiting time in microseconds since boot, from which the stream
 * frame-rate cap measures the share of each second itself.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* any thread: parses a PSI file's text; TRUE with the "some" line's avg10
 * (percent) in @avg10 and, if @total_us is not NULL, its total (µs) */
gboolean sink_pressure_parse (const gchar * text, gdouble * avg10,
    guint64 * total_us);

/* any thread (reads a small procfs or cgroupfs file, does not block on
 * I/O): TRUE with @path's "some avg10" and total (@total_us may be NULL);
 * FALSE with @error if it cannot be read or parsed (no PSI in the kernel,
 * no such cgroup) */
gboolean sink_pressure_read (const gchar * path, gdouble * avg10,
    guint64 * total_us, GError ** error);

/* The stream frame-rate cap (spicesink's stream-cpu-pressure): while the
 * share of each second in which some task waited for a CPU is at or above
 * the limit, for SINK_PRESSURE_HIGH_WINDOWS seconds in a row, every
 * stream loses one step of SINK_PRESSURE_FPS_STEPS (30 → 20 → 15 → 10 →
 * 5 fps), so that the draws and the input of every session on the host
 * keep their latency: the stream is the part of a session that can give
 * way. A single busy second (clients connecting, a cron job) is no
 * saturation. Below half the limit for SINK_PRESSURE_RAISE_HOLD_US it
 * gets one step back, and so on up to no cap. In between it stays (the
 * hysteresis that keeps sessions that fit at the lower rate from climbing
 * back into the saturation). */
#define SINK_PRESSURE_WINDOW_US      G_TIME_SPAN_SECOND
#define SINK_PRESSURE_HIGH_WINDOWS   2
#define SINK_PRESSURE_RAISE_HOLD_US  (3 * G_TIME_SPAN_SECOND)
#define SINK_PRESSURE_N_STEPS        5
extern const gint SINK_PRESSURE_FPS_STEPS[SINK_PRESSURE_N_STEPS];

/* Zero-initialise. */
typedef struct
{
  guint64 total_us;             /* the window's start: PSI total ... */
  gint64 at_us;                 /* ... read then, 0 = none yet */
  gint64 calm_since_us;         /* below half the limit since, 0 = not */
  guint high_windows;           /* windows at or above it in a row */
  guint step;                   /* into SINK_PRESSURE_FPS_STEPS, 0 = none */
  gdouble share;                /* the last window's, percent */
} SinkPressureFps;

/* any thread (pure): feeds one reading of the PSI total at @now_us with
 * the limit @limit (percent, > 0); TRUE when the cap changed
 * (sink_pressure_fps_cap()). A total that goes back (another file) starts
 * a new window. */
gboolean sink_pressure_fps_feed (SinkPressureFps * p, guint64 total_us,
    gint64 now_us, guint limit);

/* the frame-rate cap in force: frames a second, 0 = none */
gint     sink_pressure_fps_cap (const SinkPressureFps * p);

G_END_DECLS
