/* spicesrc: why a TLS connection to the upstream failed
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS
/* spice-gtk reports every TLS failure as one event without a reason (the
 * reason goes to its own log). This finds it: a handshake of our own with
 * @host:@port that takes any certificate, which is then checked against
 * @ca_file (NULL: the system's trust store), @cert_subject and @host the
 * way spice-gtk checks it (a cert-subject replaces the host name check).
 *
 * Blocks for at most about 2 * @timeout_s (DNS, a TCP connect and a TLS
 * handshake), or until @cancel (may be NULL) is cancelled: never on the
 * thread that drives spice-gtk's context, often an application's UI
 * thread (gstspicesrc.c runs it on a thread of its own). Returns the
 * reason (newly allocated), e.g. "the server's certificate (subject 'C=XX,CN=vm',
 * issuer 'CN=CA') is not signed by a CA in ca-file /etc/ca.pem".
 * *cert_refused is TRUE when the server answered with a certificate that
 * we refuse (a configuration that cannot work as it is), FALSE when no
 * certificate was seen (no TLS on that port, network). */
    gchar * gst_spice_src_tls_diagnose (const gchar * host, const gchar * port,
    const gchar * ca_file, const gchar * cert_subject, const gchar * proxy,
    guint timeout_s, GCancellable * cancel, gboolean * cert_refused);

G_END_DECLS
