/* gst-spice: spicesrc's URI
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* any thread: spice://host[:port][?port=N&tls-port=N&password=P];
 * spice+tls://host:port is spice://host?tls-port=port (spice-gtk's two
 * forms). On success the four strings are the caller's (NULL: absent);
 * on failure they are NULL and @error says why. */
gboolean gst_spice_src_uri_parse (const gchar * uri, gchar ** host,
    gchar ** port, gchar ** tls_port, gchar ** password, GError ** error);

/* any thread: an HTTP CONNECT proxy, http://[USER:PASS@]HOST[:PORT] or
 * https://... (no scheme: http; no port: 3128, https 3129, as spice-gtk
 * reads it). On success *@uri is it with the port written out, *@shown
 * the same without USER:PASS (for messages and logs); on failure both
 * are NULL and @error says why. */
gboolean gst_spice_src_uri_parse_proxy (const gchar * proxy, gchar ** uri,
    gchar ** shown, GError ** error);

G_END_DECLS
