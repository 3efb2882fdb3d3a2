/* libFuzzer: the agent's VDAgentMessage stream as spicesink reads it from
 * AGENT_DATA. Input: a stream of chunks, each a u16 length (LE, at most
 * VD_AGENT_MAX_DATA_SIZE) and its bytes; every whole message goes through
 * the parser spicesink uses for its type.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <stdint.h>
#include <stddef.h>

#include <gst/spice/gstspiceagent.h>
#include <gst/spice/gstspicefilexfer.h>

#include "spice-client-wire.h"

int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

static gboolean
on_message (guint32 type, guint64 opaque, const guint8 * body, gsize size,
    gpointer user_data)
{
  GstSpiceClipboard clip;
  GstSpiceMonitor mons[GST_SPICE_MAX_MONITORS];
  guint32 caps[VD_AGENT_CAPS_SIZE];
  guint n;
  guint32 id, result;
  guint64 file_size;
  gchar *name;
  const guint8 *data;
  gsize data_size;
  gboolean req;

  if (!body)
    return TRUE;
  switch (type) {
    case VD_AGENT_CLIPBOARD_GRAB:
    case VD_AGENT_CLIPBOARD_REQUEST:
    case VD_AGENT_CLIPBOARD:
    case VD_AGENT_CLIPBOARD_RELEASE:
      if (test_agent_parse_clipboard (type, body, size, TRUE, FALSE,
              &clip))
        gst_spice_clipboard_clear (&clip);
      if (test_agent_parse_clipboard (type, body, size, FALSE, TRUE,
              &clip))
        gst_spice_clipboard_clear (&clip);
      break;
    case VD_AGENT_MONITORS_CONFIG:
      gst_spice_agent_parse_monitors_config (body, size, mons, &n);
      break;
    case VD_AGENT_ANNOUNCE_CAPABILITIES:
      gst_spice_agent_parse_caps (body, size, &req, caps);
      break;
    case VD_AGENT_FILE_XFER_START:
      gst_spice_agent_parse_file_xfer_start (body, size, &id, &name,
          &file_size);
      g_free (name);
      break;
    case VD_AGENT_FILE_XFER_DATA:
      gst_spice_agent_parse_file_xfer_data (body, size, &id, &data,
          &data_size);
      break;
    case VD_AGENT_FILE_XFER_STATUS:
      gst_spice_agent_parse_file_xfer_status (body, size, &id, &result);
      break;
    default:
      break;
  }
  return TRUE;
}

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  GstSpiceAgentReader *r = gst_spice_agent_reader_new (64 * 1024);
  const gchar *reason;

  while (size >= 2) {
    gsize n = MIN ((gsize) GST_READ_UINT16_LE (data), size - 2);

    n = MIN (n, VD_AGENT_MAX_DATA_SIZE);
    if (n == 0 || !gst_spice_agent_reader_push (r, data + 2, n, on_message,
            NULL, &reason))
      break;
    data += 2 + n;
    size -= 2 + n;
  }
  gst_spice_agent_reader_free (r);
  return 0;
}
