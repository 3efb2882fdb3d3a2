/* tests/agent: progress lines on stderr, seconds since the test started
 * (set t0 at its start).
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef AGENT_LOG_H
#define AGENT_LOG_H

#include <glib.h>

static gint64 t0;
#define LOG(...) G_STMT_START { \
    gchar *m_ = g_strdup_printf (__VA_ARGS__); \
    g_printerr ("[%.2f] %s\n", (g_get_monotonic_time () - t0) / 1e6, m_); \
    g_free (m_); \
  } G_STMT_END

#endif /* AGENT_LOG_H */
