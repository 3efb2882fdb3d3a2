/* gst-spice: spicesrc's vv-file, a virt-viewer connection file
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS
/* What spicesrc takes from the [virt-viewer] group of a connection file
 * (remote-viewer(1), "CONNECTION FILE"); NULL: the file does not say.
 * @password is the upstream's (often one-time) ticket: never logged,
 * zeroed when cleared. */
    typedef struct
{
  gchar *host;
  gchar *port;                  /* none when absent, 0 or -1 (oVirt) */
  gchar *tls_port;
  gchar *password;
  gchar *ca;                    /* PEM text, lines unescaped */
  gchar *host_subject;
  gchar *proxy;
} GstSpiceSrcVv;

/* the state-change thread (start()): reads @path into @vv (zeroed by the
 * caller). `type` must be `spice`, `host` and `port` or `tls-port` must be
 * there, ports are numbers. With delete-this-file=1 the file is deleted
 * once read, whatever its content (the ticket in it is for one use). On
 * failure @vv is cleared and @error, naming the file and the key, is
 * G_FILE_ERROR_INVAL when the content is wrong (a permanent error), another
 * G_FILE_ERROR when the file cannot be read. */
gboolean gst_spice_src_vv_read (const gchar * path, GstSpiceSrcVv * vv,
    GError ** error);
/* any thread: frees the strings of @vv, the password zeroed first */
void gst_spice_src_vv_clear (GstSpiceSrcVv * vv);
/* the state-change thread: @pem in a new private file (mode 0600) in the
 * temporary directory, for spice-gtk's ca-file and the TLS diagnosis; the
 * caller deletes it. NULL with @error when it cannot be written. */
gchar *gst_spice_src_vv_write_ca (const gchar * pem, GError ** error);

G_END_DECLS
