/* spicesink: the CPU pressure that admits or refuses new sessions
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Linux's pressure stall information (PSI): /proc/pressure/cpu for the
 * host, or a cgroup v2 group's cpu.pressure for a service's or a pod's
 * share of it. The "some" line's avg10 is the share of the last ~10 s in
 * which at least one task was ready to run and waited for a CPU; it rises
 * when the host has more work than cores, before the sessions it serves
 * lose their latency (docs/operator-guide.md "Capacity").
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS
/* any thread: parses a PSI file's text; TRUE with the "some" line's avg10
 * (percent) in @avg10 */
    gboolean sink_pressure_parse (const gchar * text, gdouble * avg10);

/* any thread (reads a small procfs or cgroupfs file, does not block on
 * I/O): TRUE with @path's "some avg10"; FALSE with @error if it cannot be
 * read or parsed (no PSI in the kernel, no such cgroup) */
gboolean sink_pressure_read (const gchar * path, gdouble * avg10,
    GError ** error);

G_END_DECLS
