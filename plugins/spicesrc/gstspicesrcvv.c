/* gst-spice: spicesrc's vv-file, a virt-viewer connection file
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Proxmox VE, oVirt and OpenNebula hand out a connection file per console
 * session: an INI file whose [virt-viewer] group names the SPICE server
 * (host, port, tls-port), its one-time ticket (password), the CA that
 * signed its certificate (ca, PEM with "\n" escapes), the certificate's
 * subject (host-subject) and the HTTP CONNECT proxy in front of it
 * (proxy). Key names as remote-viewer(1) documents them.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <errno.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "gstspicesrcvv.h"
#include "gstspicesrcpriv.h"

#define VV_GROUP "virt-viewer"

/* the state-change thread: the string at @key, NULL when absent */
static gchar *
vv_string (GKeyFile * kf, const gchar * key)
{
  gchar *v = g_key_file_get_string (kf, VV_GROUP, key, NULL);

  if (v && !*v)
    g_clear_pointer (&v, g_free);
  return v;
}

/* the state-change thread: the port at @key into *@out (absent, 0 or -1:
 * none) */
static gboolean
vv_port (GKeyFile * kf, const gchar * path, const gchar * key, gchar ** out,
    GError ** error)
{
  gchar *v = vv_string (kf, key);
  gint64 n;

  if (!v)
    return TRUE;
  if (!g_ascii_string_to_signed (v, 10, -1, 65535, &n, NULL)) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
        "vv-file %s: key '%s' is '%s', not a port (1 to 65535, or -1 for "
        "none)", path, key, v);
    g_free (v);
    return FALSE;
  }
  g_free (v);
  if (n > 0)
    *out = g_strdup_printf ("%u", (guint) n);
  return TRUE;
}

/* the state-change thread */
gboolean
gst_spice_src_vv_read (const gchar * path, GstSpiceSrcVv * vv, GError ** error)
{
  GKeyFile *kf = g_key_file_new ();
  gchar *text = NULL, *type = NULL, *unix_path = NULL;
  gsize len = 0;
  GError *err = NULL;
  gboolean ok = FALSE;

  if (!g_file_get_contents (path, &text, &len, &err)) {
    g_set_error (error, G_FILE_ERROR, err->code, "vv-file %s: %s", path,
        err->message);
    g_clear_error (&err);
    goto out;
  }
  ok = g_key_file_load_from_data (kf, text, len, G_KEY_FILE_NONE, &err);
  /* the ticket in it: no copy of ours outlives this */
  memset (text, 0, len);
  g_free (text);
  /* virt-viewer deletes it once read; a ticket is for one use anyway */
  if (ok && g_key_file_get_boolean (kf, VV_GROUP, "delete-this-file", NULL)) {
    if (g_unlink (path) != 0)
      GST_WARNING ("vv-file %s says delete-this-file, but it cannot be "
          "deleted: %s", path, g_strerror (errno));
    else
      GST_INFO ("vv-file %s deleted (delete-this-file)", path);
  }
  if (!ok) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
        "vv-file %s is not a connection file: %s", path, err->message);
    g_clear_error (&err);
    goto out;
  }
  ok = FALSE;
  if (!g_key_file_has_group (kf, VV_GROUP)) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
        "vv-file %s has no [" VV_GROUP "] group", path);
    goto out;
  }
  type = vv_string (kf, "type");
  if (!type) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
        "vv-file %s: key 'type' is missing (it must be 'spice')", path);
    goto out;
  }
  if (g_ascii_strcasecmp (type, "spice") != 0) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
        "vv-file %s: key 'type' is '%s': spicesrc connects only to "
        "'spice'", path, type);
    goto out;
  }
  unix_path = vv_string (kf, "unix-path");
  if (unix_path) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
        "vv-file %s: key 'unix-path' is not supported (give host and "
        "port)", path);
    goto out;
  }
  vv->host = vv_string (kf, "host");
  if (!vv->host) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
        "vv-file %s: key 'host' is missing", path);
    goto out;
  }
  if (!vv_port (kf, path, "port", &vv->port, error) ||
      !vv_port (kf, path, "tls-port", &vv->tls_port, error))
    goto out;
  if (!vv->port && !vv->tls_port) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
        "vv-file %s: keys 'port' and 'tls-port' are both missing", path);
    goto out;
  }
  vv->password = vv_string (kf, "password");
  vv->ca = vv_string (kf, "ca");
  vv->host_subject = vv_string (kf, "host-subject");
  vv->proxy = vv_string (kf, "proxy");
  GST_DEBUG ("vv-file %s: host %s port %s tls-port %s, %s, %s, "
      "host-subject %s, proxy %s", path, vv->host,
      GST_STR_NULL (vv->port), GST_STR_NULL (vv->tls_port),
      vv->password ? "a password" : "no password",
      vv->ca ? "a CA" : "no CA", GST_STR_NULL (vv->host_subject),
      vv->proxy ? "set" : "none");
  ok = TRUE;

out:
  g_free (type);
  g_free (unix_path);
  g_key_file_free (kf);
  if (!ok)
    gst_spice_src_vv_clear (vv);
  return ok;
}

/* any thread */
void
gst_spice_src_vv_clear (GstSpiceSrcVv * vv)
{
  if (vv->password)
    memset (vv->password, 0, strlen (vv->password));
  g_clear_pointer (&vv->host, g_free);
  g_clear_pointer (&vv->port, g_free);
  g_clear_pointer (&vv->tls_port, g_free);
  g_clear_pointer (&vv->password, g_free);
  g_clear_pointer (&vv->ca, g_free);
  g_clear_pointer (&vv->host_subject, g_free);
  g_clear_pointer (&vv->proxy, g_free);
}

/* the state-change thread */
gchar *
gst_spice_src_vv_write_ca (const gchar * pem, GError ** error)
{
  gchar *path = NULL;
  gint fd;
  gsize len = strlen (pem), done = 0;
  gboolean ok = TRUE;

  /* g_file_open_tmp() creates it 0600 */
  fd = g_file_open_tmp ("spicesrc-ca-XXXXXX.pem", &path, error);
  if (fd < 0)
    return NULL;
  while (ok && done < len) {
    gssize n = write (fd, pem + done, len - done);

    if (n > 0)
      done += n;
    else if (n < 0 && errno != EINTR)
      ok = FALSE;
  }
  if (!ok)
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno),
        "cannot write the vv-file's CA to %s: %s", path, g_strerror (errno));
  close (fd);
  if (!ok) {
    g_unlink (path);
    g_clear_pointer (&path, g_free);
  }
  return path;
}
