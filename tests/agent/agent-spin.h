/* tests/agent: waiting on spice-gtk, which runs on the default context.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef AGENT_SPIN_H
#define AGENT_SPIN_H

#include <glib.h>

/* iterates the default context (spice-gtk's) until @cond or @ms */
static inline gboolean
spin_until (gboolean (*cond) (gpointer), gpointer data, guint ms)
{
  gint64 deadline = g_get_monotonic_time () + ms * (gint64) 1000;

  while (!cond (data)) {
    if (g_get_monotonic_time () > deadline)
      return FALSE;
    g_main_context_iteration (NULL, FALSE);
    g_usleep (1000);
  }
  return TRUE;
}

#endif /* AGENT_SPIN_H */
