/* spicesink: the CPU pressure that admits or refuses new sessions
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
sink_pressure_parse (const gchar * text, gdouble * avg10)
{
  const gchar *line = text, *p;
  gchar *end;
  gdouble v;

  while (line && *line) {
    if (g_str_has_prefix (line, "some ")) {
      p = strstr (line, " avg10=");
      if (!p)
        return FALSE;
      v = g_ascii_strtod (p + 7, &end);
      if (end == p + 7 || v < 0 || v > 100)
        return FALSE;
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
sink_pressure_read (const gchar * path, gdouble * avg10, GError ** error)
{
  gchar *text = NULL;
  gboolean ok;

  if (!g_file_get_contents (path, &text, NULL, error))
    return FALSE;
  ok = sink_pressure_parse (text, avg10);
  if (!ok)
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
        "%s has no \"some avg10=\" line", path);
  g_free (text);
  return ok;
}
