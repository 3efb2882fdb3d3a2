/* spicesink: the CPU pressure that admits or refuses new sessions and
 * caps the streams' frame rate
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdlib.h>
#include <string.h>

#include "sinkpressure.h"

/* any thread */
gboolean
sink_pressure_parse (const gchar * text, gdouble * avg10, guint64 * total_us)
{
  const gchar *line = text, *p;
  gchar *end;
  gdouble v;
  guint64 t;

  while (line && *line) {
    if (g_str_has_prefix (line, "some ")) {
      p = strstr (line, " avg10=");
      if (!p)
        return FALSE;
      v = g_ascii_strtod (p + 7, &end);
      if (end == p + 7 || v < 0 || v > 100)
        return FALSE;
      if (total_us) {
        p = strstr (line, " total=");
        if (!p || (strchr (line, '\n') && p > strchr (line, '\n')))
          return FALSE;
        t = g_ascii_strtoull (p + 7, &end, 10);
        if (end == p + 7)
          return FALSE;
        *total_us = t;
      }
      *avg10 = v;
      return TRUE;
    }
    line = strchr (line, '\n');
    if (line)
      line++;
  }
  return FALSE;
}

/* any thread */
gboolean
sink_pressure_read (const gchar * path, gdouble * avg10, guint64 * total_us,
    GError ** error)
{
  gchar *text = NULL;
  gboolean ok;

  if (!g_file_get_contents (path, &text, NULL, error))
    return FALSE;
  ok = sink_pressure_parse (text, avg10, total_us);
  if (!ok)
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
        "%s has no \"some avg10=%s\" line", path, total_us ? "... total=" : "");
  g_free (text);
  return ok;
}

const gint SINK_PRESSURE_FPS_STEPS[SINK_PRESSURE_N_STEPS] = {
  0, 20, 15, 10, 5
};

/* any thread */
gboolean
sink_pressure_fps_feed (SinkPressureFps * p, guint64 total_us, gint64 now_us,
    guint limit)
{
  gint64 span;

  if (!p->at_us || total_us < p->total_us || now_us <= p->at_us) {
    p->total_us = total_us;
    p->at_us = now_us;
    return FALSE;
  }
  span = now_us - p->at_us;
  if (span < SINK_PRESSURE_WINDOW_US)
    return FALSE;
  p->share = MIN (100.0 * (gdouble) (total_us - p->total_us) / span, 100.0);
  p->total_us = total_us;
  p->at_us = now_us;
  if (p->share >= limit) {
    p->calm_since_us = 0;
    if (++p->high_windows < SINK_PRESSURE_HIGH_WINDOWS ||
        p->step + 1 >= SINK_PRESSURE_N_STEPS)
      return FALSE;
    p->high_windows = 0;
    p->step++;
    return TRUE;
  }
  p->high_windows = 0;
  if (p->share >= limit / 2.0) {
    p->calm_since_us = 0;
    return FALSE;
  }
  if (!p->calm_since_us) {
    /* calm from the start of this window on */
    p->calm_since_us = now_us - span;
  }
  if (p->step == 0 || now_us - p->calm_since_us < SINK_PRESSURE_RAISE_HOLD_US)
    return FALSE;
  p->step--;
  p->calm_since_us = now_us;
  return TRUE;
}

/* any thread */
gint
sink_pressure_fps_cap (const SinkPressureFps * p)
{
  return SINK_PRESSURE_FPS_STEPS[MIN (p->step, SINK_PRESSURE_N_STEPS - 1)];
}
