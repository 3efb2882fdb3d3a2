/* spicesrc: why a TLS connection to the upstream failed
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * spice-gtk checks the server's certificate with OpenSSL and tells us only
 * SPICE_CHANNEL_ERROR_TLS. We look again with GIO's TLS (glib-networking):
 * one handshake that takes any certificate, then the same three checks
 * that spice-gtk makes (signed by the CA file, expected subject, or else
 * the host name), to name the one that failed.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <gio/gio.h>

#include "gstspicesrctls.h"

/* handshake thread: the certificate is judged afterwards, by us */
static gboolean
accept_any (GTlsConnection * conn, GTlsCertificate * cert,
    GTlsCertificateFlags errors, gpointer data)
{
  return TRUE;
}

/* the server's certificate, or NULL with *reason set; @cancel ends every
 * step at once */
static GTlsCertificate *
fetch_certificate (const gchar * host, guint16 port, const gchar * proxy,
    guint timeout_s, GCancellable * cancel, gchar ** reason)
{
  GSocketClient *client = g_socket_client_new ();
  GSocketConnectable *id = g_network_address_new (host, port);
  GSocketConnection *conn;
  GIOStream *tls = NULL;
  GTlsCertificate *cert = NULL;
  GError *err = NULL;

  g_socket_client_set_timeout (client, MAX (timeout_s, 1));
  if (proxy && *proxy) {
    /* through the same CONNECT proxy (GIO's http proxy) */
    GProxyResolver *resolver = g_simple_proxy_resolver_new (proxy, NULL);

    g_socket_client_set_proxy_resolver (client, resolver);
    g_object_unref (resolver);
  }
  conn = g_socket_client_connect (client, id, cancel, &err);
  if (!conn) {
    *reason = g_strdup_printf ("cannot connect to %s port %u: %s", host,
        port, err->message);
    goto out;
  }
  tls = g_tls_client_connection_new (G_IO_STREAM (conn), id, &err);
  if (!tls) {
    *reason = g_strdup_printf ("no TLS available to check the server's "
        "certificate: %s", err->message);
    goto out;
  }
  g_signal_connect (tls, "accept-certificate", G_CALLBACK (accept_any), NULL);
  if (!g_tls_connection_handshake (G_TLS_CONNECTION (tls), cancel, &err)) {
    *reason = g_strdup_printf ("no TLS handshake with %s port %u (%s): is "
        "it the server's TLS port?", host, port, err->message);
    goto out;
  }
  cert = g_tls_connection_get_peer_certificate (G_TLS_CONNECTION (tls));
  if (cert)
    g_object_ref (cert);
  else
    *reason = g_strdup_printf ("%s port %u sent no certificate", host, port);
  g_io_stream_close (tls, NULL, NULL);

out:
  g_clear_error (&err);
  g_clear_object (&tls);
  g_clear_object (&id);
  g_clear_object (&conn);
  g_object_unref (client);
  return cert;
}

/* spice-gtk compares subjects component by component; spaces around the
 * separators and letter case are the differences we forgive here */
static gboolean
subject_equal (const gchar * a, const gchar * b)
{
  while (*a || *b) {
    while (*a == ' ')
      a++;
    while (*b == ' ')
      b++;
    if (g_ascii_tolower (*a) != g_ascii_tolower (*b))
      return FALSE;
    if (*a)
      a++;
    if (*b)
      b++;
  }
  return TRUE;
}

static GTlsCertificateFlags
verify (GTlsDatabase * db, GTlsCertificate * cert, GSocketConnectable * id,
    GError ** err)
{
  return g_tls_database_verify_chain (db, cert,
      G_TLS_DATABASE_PURPOSE_AUTHENTICATE_SERVER, id, NULL,
      G_TLS_DATABASE_VERIFY_NONE, NULL, err);
}

/* any thread but the context's (it blocks) */
gchar *
gst_spice_src_tls_diagnose (const gchar * host, const gchar * port,
    const gchar * ca_file, const gchar * cert_subject, const gchar * proxy,
    guint timeout_s, GCancellable * cancel, gboolean * cert_refused)
{
  guint64 port_num = 0;
  GTlsCertificate *cert;
  GTlsDatabase *db = NULL;
  GTlsCertificateFlags flags;
  gchar *reason = NULL, *subject = NULL, *issuer = NULL, *trust;
  GError *err = NULL;

  *cert_refused = FALSE;
  if (!port || !g_ascii_string_to_unsigned (port, 10, 1, 65535, &port_num,
          NULL))
    return g_strdup ("no TLS port");
  cert = fetch_certificate (host, port_num, proxy, timeout_s, cancel, &reason);
  if (!cert)
    return reason;

  g_object_get (cert, "subject-name", &subject, "issuer-name", &issuer, NULL);
  if (ca_file) {
    /* GTlsFileDatabase wants an absolute path */
    gchar *abs = g_canonicalize_filename (ca_file, NULL);

    db = g_tls_file_database_new (abs, &err);
    g_free (abs);
    trust = g_strdup_printf ("a CA in ca-file %s", ca_file);
  } else {
    db = g_tls_backend_get_default_database (g_tls_backend_get_default ());
    trust = g_strdup ("a CA that the system trusts (ca-file is not set)");
  }
  if (!db) {
    *cert_refused = TRUE;
    reason = g_strdup_printf ("cannot use ca-file %s: %s", ca_file,
        err ? err->message : "no CA certificates");
    goto out;
  }

  flags = verify (db, cert, NULL, &err);
  if (err) {
    reason = g_strdup_printf ("cannot check the server's certificate "
        "against %s: %s", trust, err->message);
    goto out;
  }
  *cert_refused = TRUE;
  if (flags & G_TLS_CERTIFICATE_UNKNOWN_CA) {
    reason = g_strdup_printf ("the server's certificate (subject '%s', "
        "issuer '%s') is not signed by %s", subject ? subject : "?",
        issuer ? issuer : "?", trust);
  } else if (flags & G_TLS_CERTIFICATE_EXPIRED) {
    reason = g_strdup_printf ("the server's certificate (subject '%s') has "
        "expired", subject ? subject : "?");
  } else if (flags & G_TLS_CERTIFICATE_NOT_ACTIVATED) {
    reason = g_strdup_printf ("the server's certificate (subject '%s') is "
        "not valid yet (check the clock)", subject ? subject : "?");
  } else if (flags & ~G_TLS_CERTIFICATE_BAD_IDENTITY) {
    reason = g_strdup_printf ("the server's certificate (subject '%s') is "
        "refused by %s (GTlsCertificateFlags 0x%x)", subject ? subject : "?",
        trust, (guint) flags);
  } else if (cert_subject) {
    if (!subject || !subject_equal (subject, cert_subject))
      reason = g_strdup_printf ("the server's certificate subject is '%s', "
          "not cert-subject '%s'", subject ? subject : "?", cert_subject);
  } else {
    GSocketConnectable *id = g_network_address_new (host, port_num);

    flags = verify (db, cert, id, NULL);
    g_object_unref (id);
    if (flags & G_TLS_CERTIFICATE_BAD_IDENTITY)
      reason = g_strdup_printf ("the server's certificate (subject '%s') "
          "does not name host %s: connect by a name that it holds, or set "
          "cert-subject to its subject", subject ? subject : "?", host);
  }
  if (!reason) {
    *cert_refused = FALSE;
    reason = g_strdup_printf ("the server's certificate (subject '%s', "
        "issuer '%s') passes our checks against %s; spice-gtk's own log "
        "has its reason", subject ? subject : "?", issuer ? issuer : "?",
        trust);
  }

out:
  g_clear_error (&err);
  g_clear_object (&db);
  g_object_unref (cert);
  g_free (subject);
  g_free (issuer);
  g_free (trust);
  return reason;
}
