/* gst-spice: a client's file for the guest, between spicesink and spicesrc
 * (see gstspicefilexfer.h)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The wire: spice-protocol's packed structs (VDAgentFileXferStartMessage,
 * VDAgentFileXferDataMessage, VDAgentFileXferStatusMessage and its
 * details) read with a GstByteReader and written with a GstByteWriter.
 */
#include <string.h>
#include <gst/base/gstbytereader.h>
#include <gst/base/gstbytewriter.h>

#include "gstspicefilexfer.h"
#include "gstspiceagent.h"

#define KEY_FILE_GROUP "vdagent-file-xfer"

/* -------------------------------------------------------------- events */

GstEvent *
gst_spice_event_new_file_xfer (const GstSpiceFileXfer * xfer)
{
  GstStructure *s = gst_structure_new (GST_SPICE_EVENT_FILE_XFER,
      "action", G_TYPE_STRING,
      xfer->action == GST_SPICE_FILE_XFER_START ? "start" : "cancel",
      "key", G_TYPE_UINT64, xfer->key, NULL);

  if (xfer->action == GST_SPICE_FILE_XFER_START)
    gst_structure_set (s, "path", G_TYPE_STRING, xfer->path,
        "size", G_TYPE_UINT64, xfer->size, NULL);
  return gst_event_new_custom (GST_EVENT_CUSTOM_UPSTREAM, s);
}

gboolean
gst_spice_event_parse_file_xfer (GstEvent * event, GstSpiceFileXfer * xfer)
{
  const GstStructure *s;
  const gchar *action;

  if (GST_EVENT_TYPE (event) != GST_EVENT_CUSTOM_UPSTREAM ||
      !gst_event_has_name (event, GST_SPICE_EVENT_FILE_XFER))
    return FALSE;
  s = gst_event_get_structure (event);
  memset (xfer, 0, sizeof (*xfer));
  action = gst_structure_get_string (s, "action");
  if (!gst_structure_get_uint64 (s, "key", &xfer->key) || !action)
    return FALSE;
  if (g_str_equal (action, "cancel")) {
    xfer->action = GST_SPICE_FILE_XFER_CANCEL;
    return TRUE;
  }
  xfer->action = GST_SPICE_FILE_XFER_START;
  xfer->path = gst_structure_get_string (s, "path");
  return g_str_equal (action, "start") && xfer->path &&
      gst_structure_get_uint64 (s, "size", &xfer->size);
}

GstEvent *
gst_spice_event_new_file_xfer_status (const GstSpiceFileXferStatus * st)
{
  GstStructure *s = gst_structure_new (GST_SPICE_EVENT_FILE_XFER_STATUS,
      "key", G_TYPE_UINT64, st->key,
      "status", G_TYPE_UINT, st->status,
      "io-error", G_TYPE_INT, st->io_error, NULL);

  if (st->message)
    gst_structure_set (s, "message", G_TYPE_STRING, st->message, NULL);
  return gst_event_new_custom (GST_EVENT_CUSTOM_DOWNSTREAM, s);
}

gboolean
gst_spice_event_parse_file_xfer_status (GstEvent * event,
    GstSpiceFileXferStatus * st)
{
  const GstStructure *s;

  if (GST_EVENT_TYPE (event) != GST_EVENT_CUSTOM_DOWNSTREAM ||
      !gst_event_has_name (event, GST_SPICE_EVENT_FILE_XFER_STATUS))
    return FALSE;
  s = gst_event_get_structure (event);
  memset (st, 0, sizeof (*st));
  st->io_error = -1;
  if (!gst_structure_get_uint64 (s, "key", &st->key))
    return FALSE;
  if (!gst_structure_get_uint (s, "status", &st->status) ||
      st->status == VD_AGENT_FILE_XFER_STATUS_CAN_SEND_DATA ||
      st->status > VD_AGENT_FILE_XFER_STATUS_DISABLED)
    st->status = VD_AGENT_FILE_XFER_STATUS_ERROR;
  gst_structure_get_int (s, "io-error", &st->io_error);
  st->message = gst_structure_get_string (s, "message");
  return TRUE;
}

/* ---------------------------------------------------------------- wire */

gboolean
gst_spice_agent_parse_file_xfer_start (const guint8 * body, gsize size,
    guint32 * id, gchar ** name, guint64 * file_size)
{
  GstByteReader r;
  const guint8 *text;
  guint len;
  GKeyFile *kf;
  GError *err = NULL;
  gboolean ok;

  *name = NULL;
  if (size > G_MAXUINT)
    return FALSE;
  gst_byte_reader_init (&r, body, (guint) size);
  if (!gst_byte_reader_get_uint32_le (&r, id))
    return FALSE;
  /* the key file's text, up to its NUL (spice-gtk sends one) */
  len = gst_byte_reader_get_remaining (&r);
  text = gst_byte_reader_peek_data_unchecked (&r);
  len = (guint) strnlen ((const gchar *) text, len);
  kf = g_key_file_new ();
  ok = g_key_file_load_from_data (kf, (const gchar *) text, len,
      G_KEY_FILE_NONE, NULL);
  if (ok) {
    *file_size = g_key_file_get_uint64 (kf, KEY_FILE_GROUP, "size", &err);
    ok = err == NULL;
    g_clear_error (&err);
  }
  if (ok)
    *name = g_key_file_get_string (kf, KEY_FILE_GROUP, "name", NULL);
  g_key_file_free (kf);
  return *name != NULL;
}

gboolean
gst_spice_agent_parse_file_xfer_data (const guint8 * body, gsize size,
    guint32 * id, const guint8 ** data, gsize * data_size)
{
  GstByteReader r;
  guint64 declared;

  if (size > G_MAXUINT)
    return FALSE;
  gst_byte_reader_init (&r, body, (guint) size);
  if (!gst_byte_reader_get_uint32_le (&r, id) ||
      !gst_byte_reader_get_uint64_le (&r, &declared) ||
      declared != gst_byte_reader_get_remaining (&r))
    return FALSE;
  *data_size = (gsize) declared;
  *data = gst_byte_reader_peek_data_unchecked (&r);
  return TRUE;
}

gboolean
gst_spice_agent_parse_file_xfer_status (const guint8 * body, gsize size,
    guint32 * id, guint32 * result)
{
  GstByteReader r;

  gst_byte_reader_init (&r, body, (guint) MIN (size, G_MAXUINT));
  return gst_byte_reader_get_uint32_le (&r, id) &&
      gst_byte_reader_get_uint32_le (&r, result);
}

void
gst_spice_agent_write_file_xfer_status (GByteArray * a, guint32 id,
    guint32 result, gint64 detail)
{
  guint8 b[sizeof (VDAgentFileXferStatusMessage) +
      MAX (sizeof (VDAgentFileXferStatusNotEnoughSpace),
          sizeof (VDAgentFileXferStatusError))];
  GstByteWriter w;

  gst_byte_writer_init_with_data (&w, b, sizeof (b), FALSE);
  gst_byte_writer_put_uint32_le (&w, id);
  gst_byte_writer_put_uint32_le (&w, result);
  if (detail >= 0 && result == VD_AGENT_FILE_XFER_STATUS_NOT_ENOUGH_SPACE) {
    gst_byte_writer_put_uint64_le (&w, (guint64) detail);
  } else if (detail >= 0 && result == VD_AGENT_FILE_XFER_STATUS_ERROR) {
    gst_byte_writer_put_uint8 (&w, VD_AGENT_FILE_XFER_STATUS_ERROR_GLIB_IO);
    gst_byte_writer_put_uint32_le (&w, (guint32) detail);
  }
  gst_spice_agent_write_message (a, VD_AGENT_FILE_XFER_STATUS, b,
      gst_byte_writer_get_pos (&w));
}
