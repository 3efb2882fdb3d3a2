/* spicesink: the files clients send to the guest, on disk until upstream
 * took them — the spool (a private directory) and one file per transfer
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The agent endpoint (sinkagent.c) speaks the protocol and calls these;
 * they only make, fill and remove files. Everything runs with the server
 * lock held (the server thread; the draw pad's thread for the guest's
 * answer; the element's state change for a reset), so no file is written
 * and removed at once. A write is one agent message (spice-gtk: 64 KiB)
 * into the page cache, tens of microseconds; one that takes longer than
 * SINK_FILE_XFER_SLOW_WRITE_US (a disk that throttles its writers) is
 * logged, and the longest of a transfer is in its end's log line.
 *
 * The spool is a directory `gst-spice-xfer-XXXXXX` (mode 0700) made in
 * g_get_tmp_dir() ($TMPDIR, else /tmp) at the first transfer and removed
 * when its last one ends. A transfer is the directory KEY in it (0700)
 * holding one file (0600, O_EXCL, O_NOFOLLOW) named as the guest is to
 * save it, since spice-gtk sends upstream the name of the file it
 * copies. Ending a transfer closes and removes both: nothing stays on
 * disk after a transfer, whatever way it ends.
 */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

typedef struct _SinkFileSpool SinkFileSpool;

#define SINK_FILE_XFER_SLOW_WRITE_US (10 * G_TIME_SPAN_MILLISECOND)

typedef struct
{
  guint32 id;                   /* the client's */
  guint64 key;                  /* the sink's, for upstream */
  gchar *name;                  /* as the guest saves it (made safe) */
  guint64 size, received;
  gboolean upstream;            /* whole, handed upstream */
  gint64 started_us;
  guint writes;
  gint64 write_max_us;          /* the longest write (the server lock is
                                 * held) */
  /* the spool's */
  SinkFileSpool *spool;
  gint fd;                      /* -1 once closed */
  gchar *dir, *path;
} SinkFileXfer;

/* the hub's (sinkagent.c): made with it, freed after its last transfer */
SinkFileSpool *sink_file_spool_new (void);
void     sink_file_spool_free (SinkFileSpool * spool);
/* the spool's directory now, NULL while no transfer runs */
const gchar *sink_file_spool_dir (SinkFileSpool * spool);

/* A new transfer of @size bytes that the client calls @name. NULL with
 * @error when its file cannot be made: G_IO_ERROR_NO_SPACE when the spool's
 * file system has less than @size bytes free (*@free_bytes), another
 * G_IO_ERROR otherwise. */
SinkFileXfer *sink_file_xfer_new (SinkFileSpool * spool, guint32 id,
    const gchar * name, guint64 size, guint64 * free_bytes, GError ** error);
/* Appends @n bytes (at most size - received). FALSE with @error when the
 * file system refused them (G_IO_ERROR_NO_SPACE: *@free_bytes left). */
gboolean sink_file_xfer_write (SinkFileXfer * x, const guint8 * data,
    gsize n, guint64 * free_bytes, GError ** error);
/* every byte arrived: closes the file; its path, for upstream */
const gchar *sink_file_xfer_close (SinkFileXfer * x);
/* removes its file and directory (and the spool's when it was the last) */
void     sink_file_xfer_free (SinkFileXfer * x);

G_END_DECLS
