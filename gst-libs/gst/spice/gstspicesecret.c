/* gst-spice: reading a secret (SPICE ticket) from a file
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <glib.h>
#include <string.h>

#include "gstspicesecret.h"

gchar *
gst_spice_read_password_file (const gchar * path, GError ** error)
{
  gchar *text = NULL, *end;
  gsize len = 0;

  if (!g_file_get_contents (path, &text, &len, error))
    return NULL;
  end = strpbrk (text, "\r\n");
  if (end)
    *end = '\0';
  len = strlen (text);
  if (len == 0 || len > GST_SPICE_MAX_PASSWORD) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
        "password file %s: the first line must hold 1 to %d bytes", path,
        GST_SPICE_MAX_PASSWORD);
    memset (text, 0, len);
    g_free (text);
    return NULL;
  }
  return text;
}
