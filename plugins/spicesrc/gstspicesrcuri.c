/* gst-spice: spicesrc's URI, spice://host:port[?tls-port=N&password=P]
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "gstspicesrcuri.h"
#include "gstspicesrcpriv.h"

/* any thread: a port number in @s (none: nothing) replaces *@out */
static gboolean
parse_port (const gchar * s, gchar ** out, GError ** error)
{
  gchar *end = NULL;
  guint64 v;

  if (!s || !*s)
    return TRUE;
  v = g_ascii_strtoull (s, &end, 10);
  if (!end || *end || v == 0 || v > 65535) {
    g_set_error (error, G_URI_ERROR, G_URI_ERROR_BAD_PORT,
        "invalid port '%s'", s);
    return FALSE;
  }
  g_free (*out);
  *out = g_strdup_printf ("%u", (guint) v);
  return TRUE;
}

/* any thread */
gboolean
gst_spice_src_uri_parse (const gchar * uri, gchar ** host, gchar ** port,
    gchar ** tls_port, gchar ** password, GError ** error)
{
  GUri *u;
  const gchar *query;
  gboolean ok = FALSE, tls_scheme;

  *host = *port = *tls_port = *password = NULL;
  if (!uri || !*uri) {
    g_set_error (error, G_URI_ERROR, G_URI_ERROR_FAILED, "no URI set");
    return FALSE;
  }
  u = g_uri_parse (uri, G_URI_FLAGS_ENCODED_QUERY, error);
  if (!u)
    return FALSE;
  tls_scheme = g_ascii_strcasecmp (g_uri_get_scheme (u), "spice+tls") == 0;
  if (!tls_scheme && g_ascii_strcasecmp (g_uri_get_scheme (u), "spice") != 0) {
    g_set_error (error, G_URI_ERROR, G_URI_ERROR_BAD_SCHEME,
        "scheme must be spice:// or spice+tls://");
    goto out;
  }
  if (!g_uri_get_host (u) || !*g_uri_get_host (u)) {
    g_set_error (error, G_URI_ERROR, G_URI_ERROR_BAD_HOST, "no host");
    goto out;
  }
  *host = g_strdup (g_uri_get_host (u));
  if (g_uri_get_port (u) > 0)
    *(tls_scheme ? tls_port : port) = g_strdup_printf ("%d",
        g_uri_get_port (u));
  query = g_uri_get_query (u);
  if (query && *query) {
    GHashTable *params = g_uri_parse_params (query, -1, "&",
        G_URI_PARAMS_NONE, error);
    GHashTableIter it;
    gpointer k, v;

    if (!params)
      goto out;
    g_hash_table_iter_init (&it, params);
    while (g_hash_table_iter_next (&it, &k, &v)) {
      if (g_str_equal (k, "port")) {
        if (!parse_port (v, port, error))
          break;
      } else if (g_str_equal (k, "tls-port")) {
        if (!parse_port (v, tls_port, error))
          break;
      } else if (g_str_equal (k, "password")) {
        g_free (*password);
        *password = g_strdup (v);
      } else {
        GST_WARNING ("ignoring URI parameter '%s'", (gchar *) k);
      }
    }
    g_hash_table_unref (params);
    if (error && *error)
      goto out;
  }
  if (!*port && !*tls_port) {
    g_set_error (error, G_URI_ERROR, G_URI_ERROR_BAD_PORT,
        "no port or tls-port");
    goto out;
  }
  ok = TRUE;
out:
  g_uri_unref (u);
  if (!ok) {
    g_clear_pointer (host, g_free);
    g_clear_pointer (port, g_free);
    g_clear_pointer (tls_port, g_free);
    g_clear_pointer (password, g_free);
  }
  return ok;
}

/* any thread */
gboolean
gst_spice_src_uri_parse_proxy (const gchar * proxy, gchar ** uri,
    gchar ** shown, GError ** error)
{
  GUri *u;
  const gchar *scheme, *host, *userinfo;
  gint port;
  gboolean https;

  *uri = *shown = NULL;
  /* no scheme: http, as spice-gtk reads it */
  u = g_uri_parse (strstr (proxy, "://") ? proxy : (*uri =
          g_strconcat ("http://", proxy, NULL)), G_URI_FLAGS_NONE, NULL);
  g_clear_pointer (uri, g_free);
  if (!u) {
    g_set_error (error, G_URI_ERROR, G_URI_ERROR_FAILED,
        "proxy is not an http://HOST:PORT URI");
    return FALSE;
  }
  scheme = g_uri_get_scheme (u);
  host = g_uri_get_host (u);
  userinfo = g_uri_get_userinfo (u);
  https = g_ascii_strcasecmp (scheme, "https") == 0;
  if (!https && g_ascii_strcasecmp (scheme, "http") != 0) {
    g_set_error (error, G_URI_ERROR, G_URI_ERROR_BAD_SCHEME,
        "proxy scheme '%s' is not http:// or https://", scheme);
  } else if (!host || !*host) {
    g_set_error (error, G_URI_ERROR, G_URI_ERROR_BAD_HOST,
        "proxy URI has no host");
  } else {
    /* spice-gtk's defaults, written out for GIO's proxy (TLS diagnosis) */
    port = g_uri_get_port (u) > 0 ? g_uri_get_port (u) : https ? 3129 : 3128;
    *shown = g_strdup_printf ("%s://%s%s%s:%d", https ? "https" : "http",
        strchr (host, ':') ? "[" : "", host, strchr (host, ':') ? "]" : "",
        port);
    *uri = userinfo ? g_strdup_printf ("%s://%s@%s", https ? "https" :
        "http", userinfo, *shown + (https ? 8 : 7)) : g_strdup (*shown);
  }
  g_uri_unref (u);
  return *uri != NULL;
}
