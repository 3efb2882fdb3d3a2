/* spicewebrtcsink: WHEP signalling and the viewer page over HTTP
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <stdlib.h>

#include <libsoup/soup.h>
#include <gst/gst.h>

#include "webrtchttp.h"
#include "webrtcsdp.h"

GST_DEBUG_CATEGORY_STATIC (webrtc_http_debug);
#define GST_CAT_DEFAULT webrtc_http_debug

#define PAGE_RESOURCE "/org/gstspice/webrtc/viewer.html"
#define WHEP_PATH "/whep"

/* connections held open at once, in all and from one address: a browser
 * uses 6 at most; a script that opens many costs the others nothing
 * beyond these */
#define MAX_CONNECTIONS 256
#define MAX_PER_PEER 16
/* a connection without a request this long after it opened (or after its
 * last one) is closed */
#define FIRST_REQUEST_US (10 * G_TIME_SPAN_SECOND)
#define IDLE_US (60 * G_TIME_SPAN_SECOND)

/* one accepted connection; soup owns the stream, a weak reference tells
 * when it let it go */
typedef struct
{
  WebRtcHttp *http;
  GSocketConnection *conn;      /* weak */
  gchar *peer;
  gint64 last_us;               /* opened, or its last request's start */
  gboolean requested;
} HttpConn;

struct _WebRtcHttp
{
  SoupServer *server;
  GMainContext *context;
  WebRtcHttpCallbacks cb;
  gpointer data;
  gchar *token;
  gchar **origins;
  GBytes *page;
  guint port;
  GList *pending;               /* WebRtcHttpOffer, context thread */
  GSocketService *service;
  GList *conns;                 /* HttpConn */
  GHashTable *per_peer;         /* peer -> count */
  GSource *timer;
};

struct _WebRtcHttpOffer
{
  WebRtcHttp *http;             /* NULL once the server is gone (context
                                 * thread) */
  GMainContext *context;        /* where it completes */
  SoupServerMessage *msg;
  gboolean finished;            /* the client went away */
  guint status, id;
  gchar *body;
};

/* any thread: @a and @b equal, in a time that does not tell where they
 * differ */
static gboolean
secret_equal (const gchar * a, const gchar * b)
{
  gsize la = strlen (a), lb = strlen (b), i;
  guint diff = la != lb;

  for (i = 0; i < la; i++)
    diff |= (guint) (a[i] ^ b[i % MAX (lb, 1)]);
  return diff == 0;
}

/* context thread */
static void
respond_text (SoupServerMessage * msg, guint status, const gchar * text)
{
  soup_server_message_set_status (msg, status, NULL);
  soup_server_message_set_response (msg, "text/plain; charset=utf-8",
      SOUP_MEMORY_COPY, text, strlen (text));
}

/* context thread: the request's Origin is allowed (none sent, none checked
 * or one of the list) */
static gboolean
origin_allowed (WebRtcHttp * http, SoupServerMessage * msg)
{
  const gchar *origin = soup_message_headers_get_one
      (soup_server_message_get_request_headers (msg), "Origin");

  if (!http->origins || !http->origins[0] || !origin)
    return TRUE;
  return g_strv_contains ((const gchar * const *) http->origins, origin);
}

/* context thread: the request carries the token, if one is asked for */
static gboolean
token_ok (WebRtcHttp * http, SoupServerMessage * msg)
{
  const gchar *auth = soup_message_headers_get_one
      (soup_server_message_get_request_headers (msg), "Authorization");

  if (!http->token)
    return TRUE;
  if (!auth || g_ascii_strncasecmp (auth, "Bearer ", 7) != 0)
    return FALSE;
  return secret_equal (auth + 7, http->token);
}

/* context thread: refuses @msg with @status, reports @reason */
static void
refuse (WebRtcHttp * http, SoupServerMessage * msg, guint status,
    gboolean security, const gchar * reason, const gchar * detail)
{
  const gchar *peer = soup_server_message_get_remote_host (msg);

  GST_INFO ("%s: %u %s (%s)", GST_STR_NULL (peer), status, reason,
      GST_STR_NULL (detail));
  if (status == SOUP_STATUS_UNAUTHORIZED)
    soup_message_headers_replace (soup_server_message_get_response_headers
        (msg), "WWW-Authenticate", "Bearer");
  respond_text (msg, status, detail ? detail : reason);
  http->cb.refused (peer ? peer : "?", security, reason, detail, http->data);
}

/* context thread: headers read, body not yet: refuse what is too big
 * before reading it */
static void
early_handler (SoupServer * server, SoupServerMessage * msg,
    const char *path, GHashTable * query, gpointer data)
{
  WebRtcHttp *http = data;
  SoupMessageHeaders *h = soup_server_message_get_request_headers (msg);
  const gchar *method = soup_server_message_get_method (msg);

  if (g_strcmp0 (method, "POST") && g_strcmp0 (method, "PATCH"))
    return;
  if (soup_message_headers_get_encoding (h) != SOUP_ENCODING_CONTENT_LENGTH) {
    refuse (http, msg, SOUP_STATUS_LENGTH_REQUIRED, FALSE, "whep-length",
        "a body needs a Content-Length");
  } else if (soup_message_headers_get_content_length (h) > WEBRTC_SDP_MAX_OFFER) {
    gchar *detail = g_strdup_printf ("%" G_GINT64_FORMAT " bytes, at most %u",
        soup_message_headers_get_content_length (h), WEBRTC_SDP_MAX_OFFER);

    refuse (http, msg, SOUP_STATUS_REQUEST_ENTITY_TOO_LARGE, FALSE,
        "whep-size", detail);
    g_free (detail);
  }
}

/* context thread: the client of a pending offer went away */
static void
on_finished (SoupServerMessage * msg, WebRtcHttpOffer * req)
{
  req->finished = TRUE;
}

/* context thread */
static void
offer_free (WebRtcHttpOffer * req)
{
  g_signal_handlers_disconnect_by_data (req->msg, req);
  g_object_unref (req->msg);
  g_main_context_unref (req->context);
  g_free (req->body);
  g_free (req);
}

/* context thread: the answer (or refusal) of a pending offer goes out */
static gboolean
offer_complete (gpointer data)
{
  WebRtcHttpOffer *req = data;
  WebRtcHttp *http = req->http;

  if (!http) {
    offer_free (req);
    return G_SOURCE_REMOVE;
  }
  http->pending = g_list_remove (http->pending, req);
  if (!req->finished) {
    if (req->status == SOUP_STATUS_CREATED) {
      SoupMessageHeaders *h = soup_server_message_get_response_headers
          (req->msg);
      gchar *location = g_strdup_printf (WHEP_PATH "/%u", req->id);

      soup_message_headers_replace (h, "Location", location);
      soup_server_message_set_status (req->msg, req->status, NULL);
      soup_server_message_set_response (req->msg, "application/sdp",
          SOUP_MEMORY_COPY, req->body, strlen (req->body));
      g_free (location);
    } else {
      respond_text (req->msg, req->status, req->body);
    }
    soup_server_message_unpause (req->msg);
  }
  offer_free (req);
  return G_SOURCE_REMOVE;
}

/* any thread: @req completes on the context thread */
static void
offer_finish (WebRtcHttpOffer * req, guint status, guint id, const gchar * body)
{
  req->status = status;
  req->id = id;
  req->body = g_strdup (body ? body : "");
  g_main_context_invoke (req->context, offer_complete, req);
}

void
webrtc_http_offer_answer (WebRtcHttpOffer * req, guint id, const gchar * sdp)
{
  offer_finish (req, SOUP_STATUS_CREATED, id, sdp);
}

void
webrtc_http_offer_refuse (WebRtcHttpOffer * req, guint status,
    const gchar * message)
{
  offer_finish (req, status, 0, message);
}

/* context thread: POST /whep */
static void
handle_offer (WebRtcHttp * http, SoupServerMessage * msg)
{
  SoupMessageHeaders *h = soup_server_message_get_request_headers (msg);
  SoupMessageBody *body = soup_server_message_get_request_body (msg);
  const gchar *type = soup_message_headers_get_content_type (h, NULL);
  const gchar *peer = soup_server_message_get_remote_host (msg);
  GstSDPMessage *sdp = NULL;
  WebRtcHttpOffer *req;
  GBytes *bytes;
  gchar *text;

  if (g_strcmp0 (type, "application/sdp")) {
    refuse (http, msg, SOUP_STATUS_UNSUPPORTED_MEDIA_TYPE, FALSE,
        "whep-type", "an offer is application/sdp");
    return;
  }
  bytes = soup_message_body_flatten (body);
  text = g_strndup (g_bytes_get_data (bytes, NULL), g_bytes_get_size (bytes));
  g_bytes_unref (bytes);
  gst_sdp_message_new (&sdp);
  /* GstSDP asserts on an empty buffer: an empty body is refused first */
  if (text[0] == '\0'
      || gst_sdp_message_parse_buffer ((const guint8 *) text, strlen (text),
          sdp) != GST_SDP_OK || gst_sdp_message_medias_len (sdp) == 0) {
    gst_sdp_message_free (sdp);
    g_free (text);
    refuse (http, msg, SOUP_STATUS_BAD_REQUEST, FALSE, "whep-offer",
        "the body is no SDP offer");
    return;
  }
  g_free (text);

  req = g_new0 (WebRtcHttpOffer, 1);
  req->http = http;
  req->context = g_main_context_ref (http->context);
  req->msg = g_object_ref (msg);
  g_signal_connect (msg, "finished", G_CALLBACK (on_finished), req);
  http->pending = g_list_prepend (http->pending, req);
  soup_server_message_pause (msg);
  http->cb.offer (req, sdp, peer ? peer : "?", http->data);
}

/* context thread: every request */
static void
handler (SoupServer * server, SoupServerMessage * msg, const char *path,
    GHashTable * query, gpointer data)
{
  WebRtcHttp *http = data;
  const gchar *method = soup_server_message_get_method (msg);
  const gchar *peer = soup_server_message_get_remote_host (msg);

  soup_message_headers_replace (soup_server_message_get_response_headers
      (msg), "Cache-Control", "no-store");
  if (soup_server_message_get_status (msg) >= 400)
    return;                     /* the early handler refused it */

  if (g_strcmp0 (path, "/") == 0) {
    if (g_strcmp0 (method, "GET") && g_strcmp0 (method, "HEAD")) {
      respond_text (msg, SOUP_STATUS_METHOD_NOT_ALLOWED, "GET only");
      return;
    }
    soup_message_headers_replace (soup_server_message_get_response_headers
        (msg), "Content-Security-Policy",
        "default-src 'self'; script-src 'unsafe-inline'; "
        "style-src 'unsafe-inline'; media-src 'self' blob: mediastream:");
    soup_server_message_set_status (msg, SOUP_STATUS_OK, NULL);
    soup_server_message_set_response (msg, "text/html; charset=utf-8",
        SOUP_MEMORY_COPY, g_bytes_get_data (http->page, NULL),
        g_bytes_get_size (http->page));
    return;
  }

  if (g_strcmp0 (path, WHEP_PATH) && !g_str_has_prefix (path, WHEP_PATH "/")) {
    respond_text (msg, SOUP_STATUS_NOT_FOUND, "not found");
    return;
  }
  if (!origin_allowed (http, msg)) {
    refuse (http, msg, SOUP_STATUS_FORBIDDEN, TRUE, "whep-origin",
        soup_message_headers_get_one (soup_server_message_get_request_headers
            (msg), "Origin"));
    return;
  }
  if (!token_ok (http, msg)) {
    refuse (http, msg, SOUP_STATUS_UNAUTHORIZED, TRUE, "whep-token",
        "a wrong or missing bearer token");
    return;
  }

  if (g_strcmp0 (path, WHEP_PATH) == 0) {
    if (g_strcmp0 (method, "POST") == 0)
      handle_offer (http, msg);
    else
      respond_text (msg, SOUP_STATUS_METHOD_NOT_ALLOWED, "POST an offer");
    return;
  }

  /* /whep/ID */
  {
    const gchar *id_text = path + strlen (WHEP_PATH "/");
    gchar *end = NULL;
    guint64 id = g_ascii_strtoull (id_text, &end, 10);

    if (!*id_text || !end || *end || id == 0 || id > G_MAXUINT) {
      respond_text (msg, SOUP_STATUS_NOT_FOUND, "no such viewer");
    } else if (g_strcmp0 (method, "DELETE") == 0) {
      if (http->cb.end ((guint) id, peer ? peer : "?", http->data))
        soup_server_message_set_status (msg, SOUP_STATUS_OK, NULL);
      else
        respond_text (msg, SOUP_STATUS_NOT_FOUND, "no such viewer");
    } else if (g_strcmp0 (method, "PATCH") == 0) {
      /* draft-ietf-wish-whep: no trickle ICE here */
      respond_text (msg, SOUP_STATUS_METHOD_NOT_ALLOWED,
          "candidates travel in the offer and the answer");
    } else {
      respond_text (msg, SOUP_STATUS_METHOD_NOT_ALLOWED, "DELETE only");
    }
  }
}

/* context thread: soup let a connection go */
static void
conn_gone (gpointer data, GObject * where)
{
  HttpConn *c = data;
  WebRtcHttp *http = c->http;
  guint n = GPOINTER_TO_UINT (g_hash_table_lookup (http->per_peer, c->peer));

  if (n > 1)
    g_hash_table_insert (http->per_peer, g_strdup (c->peer),
        GUINT_TO_POINTER (n - 1));
  else
    g_hash_table_remove (http->per_peer, c->peer);
  http->conns = g_list_remove (http->conns, c);
  g_free (c->peer);
  g_free (c);
}

/* context thread: the connection of @msg */
static HttpConn *
conn_of (WebRtcHttp * http, SoupServerMessage * msg)
{
  GSocket *sock = soup_server_message_get_socket (msg);
  GList *l;

  for (l = http->conns; l && sock; l = l->next) {
    HttpConn *c = l->data;

    if (g_socket_connection_get_socket (c->conn) == sock)
      return c;
  }
  return NULL;
}

/* context thread */
static void
on_request_started (SoupServer * server, SoupServerMessage * msg, gpointer data)
{
  HttpConn *c = conn_of (data, msg);

  if (c) {
    c->requested = TRUE;
    c->last_us = g_get_monotonic_time ();
  }
}

/* context thread: a connection opened; soup serves it within the bounds */
static gboolean
on_incoming (GSocketService * service, GSocketConnection * conn,
    GObject * source, gpointer data)
{
  WebRtcHttp *http = data;
  GSocketAddress *remote = g_socket_connection_get_remote_address (conn,
      NULL), *local = g_socket_connection_get_local_address (conn, NULL);
  gchar *peer = remote && G_IS_INET_SOCKET_ADDRESS (remote) ?
      g_inet_address_to_string (g_inet_socket_address_get_address
      (G_INET_SOCKET_ADDRESS (remote))) : g_strdup ("?");
  guint n = GPOINTER_TO_UINT (g_hash_table_lookup (http->per_peer, peer));
  guint total = g_list_length (http->conns);
  GError *err = NULL;
  HttpConn *c;

  if (n >= MAX_PER_PEER || total >= MAX_CONNECTIONS) {
    gchar *detail = g_strdup_printf ("%u connections open from it, %u in "
        "all", n, total);

    GST_INFO ("%s: refused, %s", peer, detail);
    http->cb.refused (peer, FALSE, "http-connections", detail, http->data);
    g_free (detail);
    g_io_stream_close (G_IO_STREAM (conn), NULL, NULL);
  } else if (!soup_server_accept_iostream (http->server, G_IO_STREAM (conn),
          local, remote, &err)) {
    GST_WARNING ("%s: %s", peer, err->message);
    g_clear_error (&err);
  } else {
    c = g_new0 (HttpConn, 1);
    c->http = http;
    c->conn = conn;
    c->peer = g_strdup (peer);
    c->last_us = g_get_monotonic_time ();
    g_object_weak_ref (G_OBJECT (conn), conn_gone, c);
    http->conns = g_list_prepend (http->conns, c);
    g_hash_table_insert (http->per_peer, g_strdup (peer),
        GUINT_TO_POINTER (n + 1));
  }
  g_clear_object (&remote);
  g_clear_object (&local);
  g_free (peer);
  return TRUE;
}

/* context thread, once a second: connections that sent no request in
 * time are closed */
static gboolean
on_timer (gpointer data)
{
  WebRtcHttp *http = data;
  gint64 now = g_get_monotonic_time ();
  GList *l, *late = NULL;

  for (l = http->conns; l; l = l->next) {
    HttpConn *c = l->data;

    if (now - c->last_us >= (c->requested ? IDLE_US : FIRST_REQUEST_US))
      late = g_list_prepend (late, g_object_ref (c->conn));
  }
  for (l = late; l; l = l->next) {
    GSocketConnection *conn = l->data;
    GSocketAddress *remote = g_socket_connection_get_remote_address (conn,
        NULL);

    GST_INFO ("closing a connection without a request");
    if (remote && G_IS_INET_SOCKET_ADDRESS (remote)) {
      gchar *peer = g_inet_address_to_string (g_inet_socket_address_get_address
          (G_INET_SOCKET_ADDRESS (remote)));

      http->cb.refused (peer, FALSE, "http-timeout", NULL, http->data);
      g_free (peer);
    }
    g_clear_object (&remote);
    /* soup sees it closed and lets it go */
    g_socket_close (g_socket_connection_get_socket (conn), NULL);
    g_object_unref (conn);
  }
  g_list_free (late);
  return G_SOURCE_CONTINUE;
}

WebRtcHttp *
webrtc_http_new (const WebRtcHttpConfig * config,
    const WebRtcHttpCallbacks * callbacks, gpointer data, GError ** error)
{
  static gsize once = 0;
  WebRtcHttp *http;
  GSocketAddress *addr, *effective = NULL;

  if (g_once_init_enter (&once)) {
    GST_DEBUG_CATEGORY_INIT (webrtc_http_debug, "spicewebrtchttp", 0,
        "spicewebrtcsink WHEP signalling");
    g_once_init_leave (&once, 1);
  }
  addr = g_inet_socket_address_new_from_string (config->address, config->port);
  if (!addr) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
        "'%s' is no IP address", config->address);
    return NULL;
  }
  http = g_new0 (WebRtcHttp, 1);
  http->cb = *callbacks;
  http->data = data;
  http->context = g_main_context_ref_thread_default ();
  http->token = g_strdup (config->token);
  http->origins = g_strdupv ((gchar **) config->allowed_origins);
  http->page = g_resources_lookup_data (PAGE_RESOURCE, 0, NULL);
  if (!http->page)
    http->page = g_bytes_new_static ("", 0);
  http->per_peer = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
      NULL);
  http->server = soup_server_new ("server-header", "gst-spice", NULL);
  soup_server_add_early_handler (http->server, NULL, early_handler, http, NULL);
  soup_server_add_handler (http->server, NULL, handler, http, NULL);
  g_signal_connect (http->server, "request-started",
      G_CALLBACK (on_request_started), http);
  /* our own listener: soup serves what it accepts, within the bounds */
  http->service = g_socket_service_new ();
  if (!g_socket_listener_add_address (G_SOCKET_LISTENER (http->service),
          addr, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, NULL, &effective,
          error)) {
    g_object_unref (addr);
    webrtc_http_free (http);
    return NULL;
  }
  g_object_unref (addr);
  http->port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS
      (effective));
  g_object_unref (effective);
  g_signal_connect (http->service, "incoming", G_CALLBACK (on_incoming), http);
  g_socket_service_start (http->service);
  http->timer = g_timeout_source_new_seconds (1);
  g_source_set_callback (http->timer, on_timer, http, NULL);
  g_source_attach (http->timer, http->context);
  return http;
}

guint
webrtc_http_port (WebRtcHttp * http)
{
  return http->port;
}

void
webrtc_http_free (WebRtcHttp * http)
{
  GList *l;

  /* a pending offer answered later completes without a server */
  for (l = http->pending; l; l = l->next)
    ((WebRtcHttpOffer *) l->data)->http = NULL;
  g_list_free (http->pending);
  if (http->timer) {
    g_source_destroy (http->timer);
    g_source_unref (http->timer);
  }
  if (http->service) {
    g_socket_service_stop (http->service);
    g_socket_listener_close (G_SOCKET_LISTENER (http->service));
    g_signal_handlers_disconnect_by_data (http->service, http);
    g_object_unref (http->service);
  }
  /* the connections soup still holds: no count to keep any more */
  for (l = http->conns; l; l = l->next) {
    HttpConn *c = l->data;

    g_object_weak_unref (G_OBJECT (c->conn), conn_gone, c);
    g_free (c->peer);
    g_free (c);
  }
  g_list_free (http->conns);
  if (http->server) {
    g_signal_handlers_disconnect_by_data (http->server, http);
    soup_server_disconnect (http->server);
    g_object_unref (http->server);
  }
  if (http->per_peer)
    g_hash_table_unref (http->per_peer);
  g_main_context_unref (http->context);
  g_bytes_unref (http->page);
  g_free (http->token);
  g_strfreev (http->origins);
  g_free (http);
}
