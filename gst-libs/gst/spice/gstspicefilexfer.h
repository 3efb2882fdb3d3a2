/* gst-spice: a client's file for the guest, between spicesink and spicesrc
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A SPICE client sends a file to the guest's agent in VDAgentMessages
 * (<spice/vd_agent.h>): VD_AGENT_FILE_XFER_START (an id and a key file
 * naming the file and its size), VD_AGENT_FILE_XFER_DATA once the agent
 * answered VD_AGENT_FILE_XFER_STATUS_CAN_SEND_DATA, and a final
 * VD_AGENT_FILE_XFER_STATUS either way. spicesink is the agent its clients
 * see: it spools the file and, once whole, sends the upstream
 * `spice-file-xfer` event (start: @key, the file's @path and @size);
 * spicesrc copies that file to the guest with spice-gtk and answers with
 * the serialized downstream `spice-file-xfer-status` event (@key, the
 * VD_AGENT_FILE_XFER_STATUS_* the client is to get), which the tiler
 * forwards on `draw` like the clipboard. A client that gives up makes the
 * sink send `spice-file-xfer` cancel. @key is the sink's name for one
 * transfer (unique in it); docs/spicesink.md "File transfer".
 */
#pragma once

#include "gstspice-prelude.h"

#include <gst/gst.h>
#include <spice/vd_agent.h>

G_BEGIN_DECLS

typedef enum
{
  GST_SPICE_FILE_XFER_START = 1,        /* copy @path to the guest */
  GST_SPICE_FILE_XFER_CANCEL,   /* the client gave up: stop that copy */
} GstSpiceFileXferAction;

/**
 * GstSpiceFileXfer:
 * @action: what upstream is asked
 * @key: the transfer
 * @path: (START) the whole file, named as the guest is to save it
 * @size: (START) its size in bytes
 *
 * Upstream custom event from spicesink. A parsed @path belongs to the
 * event.
 */
typedef struct
{
  GstSpiceFileXferAction action;
  guint64 key;
  const gchar *path;
  guint64 size;
} GstSpiceFileXfer;

#define GST_SPICE_EVENT_FILE_XFER "spice-file-xfer"
GST_SPICE_API
GstEvent *gst_spice_event_new_file_xfer (const GstSpiceFileXfer * xfer);
GST_SPICE_API
gboolean  gst_spice_event_parse_file_xfer (GstEvent * event,
    GstSpiceFileXfer * xfer);

/**
 * GstSpiceFileXferStatus:
 * @key: the transfer
 * @status: VD_AGENT_FILE_XFER_STATUS_* (SUCCESS, CANCELLED, ERROR,
 *   NOT_ENOUGH_SPACE, SESSION_LOCKED, VDAGENT_NOT_CONNECTED, DISABLED)
 * @io_error: (ERROR) the GIOErrorEnum behind it, -1 none
 * @message: for the log, may be NULL
 *
 * Serialized downstream custom event from spicesrc: how the copy ended.
 * A parsed @message belongs to the event.
 */
typedef struct
{
  guint64 key;
  guint32 status;
  gint io_error;
  const gchar *message;
} GstSpiceFileXferStatus;

#define GST_SPICE_EVENT_FILE_XFER_STATUS "spice-file-xfer-status"
GST_SPICE_API
GstEvent *gst_spice_event_new_file_xfer_status (const
    GstSpiceFileXferStatus * st);
/* FALSE for another event; a @status the protocol does not end a
 * transfer with (CAN_SEND_DATA, unknown) reads as ERROR */
GST_SPICE_API
gboolean  gst_spice_event_parse_file_xfer_status (GstEvent * event,
    GstSpiceFileXferStatus * st);

/* ------------------------------------------------------------- wire */

/* VD_AGENT_FILE_XFER_START: the client's @id, and the name and size of
 * its key file's [vdagent-file-xfer] group (@name: newly allocated, as
 * sent). FALSE when the body is shorter than its id (*@id unset) or the
 * key file lacks either (*@id set). */
GST_SPICE_API
gboolean  gst_spice_agent_parse_file_xfer_start (const guint8 * body,
    gsize size, guint32 * id, gchar ** name, guint64 * file_size);
/* VD_AGENT_FILE_XFER_DATA: @data points into @body; its declared size
 * must be what follows */
GST_SPICE_API
gboolean  gst_spice_agent_parse_file_xfer_data (const guint8 * body,
    gsize size, guint32 * id, const guint8 ** data, gsize * data_size);
/* VD_AGENT_FILE_XFER_STATUS (a detail after it is not read) */
GST_SPICE_API
gboolean  gst_spice_agent_parse_file_xfer_status (const guint8 * body,
    gsize size, guint32 * id, guint32 * result);
/* Appends the whole VD_AGENT_FILE_XFER_STATUS message. @detail (only to a
 * client that announced VD_AGENT_CAP_FILE_XFER_DETAILED_ERRORS; < 0 none):
 * NOT_ENOUGH_SPACE: the free bytes (VDAgentFileXferStatusNotEnoughSpace);
 * ERROR: a GIOErrorEnum (VDAgentFileXferStatusError, GLIB_IO); nothing for
 * the others. */
GST_SPICE_API
void      gst_spice_agent_write_file_xfer_status (GByteArray * a, guint32 id,
    guint32 result, gint64 detail);

G_END_DECLS
