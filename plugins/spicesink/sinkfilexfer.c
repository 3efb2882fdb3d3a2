/* spicesink: the files clients send to the guest (see sinkfilexfer.h)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <glib/gstdio.h>
#include <gst/gst.h>

#include "sinkfilexfer.h"
#include "sinkdebug.h"

static SINK_DEBUG_CATEGORY (sink_file_xfer_debug, "spicesinkfilexfer",
    "spicesink file transfer spool");
#define GST_CAT_DEFAULT sink_file_xfer_debug ()

/* NAME_MAX of the file systems a spool is on */
#define MAX_NAME_BYTES 255

struct _SinkFileSpool
{
  gchar *dir;                   /* NULL while no transfer runs */
  guint n_files;
  guint64 next_key;
};

SinkFileSpool *
sink_file_spool_new (void)
{
  SinkFileSpool *spool = g_new0 (SinkFileSpool, 1);

  spool->next_key = 1;
  return spool;
}

void
sink_file_spool_free (SinkFileSpool * spool)
{
  g_warn_if_fail (spool->n_files == 0);
  g_free (spool->dir);
  g_free (spool);
}

const gchar *
sink_file_spool_dir (SinkFileSpool * spool)
{
  return spool->dir;
}

/* the free bytes of the file system @path is on, G_MAXUINT64 unknown */
static guint64
free_bytes_at (const gchar * path)
{
  struct statvfs vfs;

  if (statvfs (path, &vfs) != 0)
    return G_MAXUINT64;
  return (guint64) vfs.f_bavail * vfs.f_frsize;
}

/* The name as the guest saves it: the client's last path component,
 * control characters (newlines in a log line, escapes) as '_', at most
 * MAX_NAME_BYTES bytes of whole UTF-8 characters; "file" for nothing,
 * "." or "..". @name is valid UTF-8 (GKeyFile checked it). */
static gchar *
safe_name (const gchar * name)
{
  const gchar *base = strrchr (name, '/');
  gchar *out, *p;

  out = g_strdup (base ? base + 1 : name);
  for (p = out; *p; p++)
    if ((guchar) * p < 0x20 || *p == 0x7f)
      *p = '_';
  if (strlen (out) > MAX_NAME_BYTES) {
    p = g_utf8_find_prev_char (out, out + MAX_NAME_BYTES + 1);
    *p = '\0';
  }
  if (!*out || g_str_equal (out, ".") || g_str_equal (out, "..")) {
    g_free (out);
    out = g_strdup ("file");
  }
  return out;
}

static void
set_errno_error (GError ** error, gint err, const gchar * what,
    const gchar * path)
{
  g_set_error (error, G_IO_ERROR, g_io_error_from_errno (err), "%s %s: %s",
      what, path, g_strerror (err));
}

/* a transfer holds the spool: its directory exists (the first makes it) */
static gboolean
spool_hold (SinkFileSpool * spool, GError ** error)
{
  if (!spool->dir) {
    /* 0700, in $TMPDIR or /tmp */
    spool->dir = g_dir_make_tmp ("gst-spice-xfer-XXXXXX", error);
    if (!spool->dir)
      return FALSE;
    GST_INFO ("spool %s", spool->dir);
  }
  spool->n_files++;
  return TRUE;
}

/* a transfer's end: the spool's directory goes with its last one */
static void
spool_release (SinkFileSpool * spool)
{
  if (--spool->n_files > 0)
    return;
  if (g_rmdir (spool->dir) != 0)
    GST_WARNING ("cannot remove the spool %s: %s", spool->dir,
        g_strerror (errno));
  g_clear_pointer (&spool->dir, g_free);
}

SinkFileXfer *
sink_file_xfer_new (SinkFileSpool * spool, guint32 id, const gchar * name,
    guint64 size, guint64 * free_bytes, GError ** error)
{
  SinkFileXfer *x;
  gchar *key_str;
  gint err;

  *free_bytes = G_MAXUINT64;
  if (!spool_hold (spool, error))
    return NULL;
  *free_bytes = free_bytes_at (spool->dir);
  if (*free_bytes < size) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_NO_SPACE,
        "%" G_GUINT64_FORMAT " bytes free in %s", *free_bytes, spool->dir);
    spool_release (spool);
    return NULL;
  }
  x = g_new0 (SinkFileXfer, 1);
  x->spool = spool;
  x->id = id;
  x->key = spool->next_key++;
  x->name = safe_name (name);
  x->size = size;
  x->fd = -1;
  x->started_us = g_get_monotonic_time ();
  key_str = g_strdup_printf ("%" G_GUINT64_FORMAT, x->key);
  x->dir = g_build_filename (spool->dir, key_str, NULL);
  x->path = g_build_filename (x->dir, x->name, NULL);
  g_free (key_str);
  if (g_mkdir (x->dir, 0700) != 0) {
    err = errno;
    set_errno_error (error, err, "cannot make", x->dir);
    g_clear_pointer (&x->dir, g_free);
    sink_file_xfer_free (x);
    return NULL;
  }
  x->fd = open (x->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
      0600);
  if (x->fd < 0) {
    err = errno;
    set_errno_error (error, err, "cannot create", x->path);
    g_clear_pointer (&x->path, g_free);
    sink_file_xfer_free (x);
    return NULL;
  }
  GST_DEBUG ("transfer %" G_GUINT64_FORMAT ": %s, %" G_GUINT64_FORMAT
      " bytes", x->key, x->path, size);
  return x;
}

gboolean
sink_file_xfer_write (SinkFileXfer * x, const guint8 * data, gsize n,
    guint64 * free_bytes, GError ** error)
{
  gint64 t0 = g_get_monotonic_time (), took;

  g_return_val_if_fail (x->fd >= 0 && n <= x->size - x->received, FALSE);
  x->writes++;
  while (n > 0) {
    gssize w = write (x->fd, data, n);

    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      gint err = w < 0 ? errno : ENOSPC;

      *free_bytes = free_bytes_at (x->dir);
      set_errno_error (error, err, "cannot write", x->path);
      return FALSE;
    }
    data += w;
    n -= w;
    x->received += w;
  }
  took = g_get_monotonic_time () - t0;
  x->write_max_us = MAX (x->write_max_us, took);
  if (took > SINK_FILE_XFER_SLOW_WRITE_US)
    GST_INFO ("transfer %" G_GUINT64_FORMAT ": a write took %.1f ms",
        x->key, took / 1000.0);
  return TRUE;
}

const gchar *
sink_file_xfer_close (SinkFileXfer * x)
{
  if (x->fd >= 0) {
    close (x->fd);
    x->fd = -1;
  }
  return x->path;
}

void
sink_file_xfer_free (SinkFileXfer * x)
{
  if (!x)
    return;
  sink_file_xfer_close (x);
  if (x->path && g_unlink (x->path) != 0)
    GST_WARNING ("cannot remove %s: %s", x->path, g_strerror (errno));
  if (x->dir && g_rmdir (x->dir) != 0)
    GST_WARNING ("cannot remove %s: %s", x->dir, g_strerror (errno));
  spool_release (x->spool);
  g_free (x->path);
  g_free (x->dir);
  g_free (x->name);
  g_free (x);
}
