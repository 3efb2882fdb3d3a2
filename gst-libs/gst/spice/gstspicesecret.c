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
    if (len == 0)
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
          "password file %s: its first line is empty (it must hold the "
          "password, 1 to %d bytes)", path, GST_SPICE_MAX_PASSWORD);
    else
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
          "password file %s: its first line is %" G_GSIZE_FORMAT " bytes "
          "long, more than the %d a SPICE password can have", path, len,
          GST_SPICE_MAX_PASSWORD);
    memset (text, 0, len);
    g_free (text);
    return NULL;
  }
  return text;
}

void
gst_spice_post_password_file_error (GstElement * element, const GError * err)
{
  /* a file that holds no usable password does not get better by
   * retrying; one that cannot be read might */
  gint code = g_error_matches (err, G_FILE_ERROR, G_FILE_ERROR_INVAL) ?
      GST_RESOURCE_ERROR_SETTINGS : GST_RESOURCE_ERROR_OPEN_READ;

  gst_element_message_full (element, GST_MESSAGE_ERROR, GST_RESOURCE_ERROR,
      code, g_strdup_printf ("Could not read the password file: %s",
          err->message), NULL, __FILE__, G_STRFUNC, __LINE__);
}
