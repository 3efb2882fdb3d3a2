/* spicewebrtcsink: WHEP signalling and the viewer page over HTTP
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * On libsoup 3, on the element's context thread (draft-ietf-wish-whep):
 *
 *   GET /                the viewer page (no external resources)
 *   POST /whep           an SDP offer (application/sdp, at most
 *                        WEBRTC_SDP_MAX_OFFER bytes): 201 Created with the
 *                        answer and Location /whep/ID; 401 without the
 *                        bearer token, 403 from a foreign Origin, 503 when
 *                        every viewer slot is taken
 *   DELETE /whep/ID      ends that viewer (the same token)
 *   PATCH /whep/ID       405: candidates travel in the offer and answer
 *
 * Connections are accepted here and handed to soup: at most 16 open from
 * one address and 256 in all (more are closed at once: `http-connections`),
 * each closed when it sends no request for 10 s after it opened or for 60
 * s after its last one (`http-timeout`).
 *
 * Each refusal is reported (the element posts it as a security or health
 * event) with a stable reason.
 */
#pragma once

#include <gio/gio.h>
#include <gst/sdp/sdp.h>

G_BEGIN_DECLS

typedef struct _WebRtcHttp WebRtcHttp;
typedef struct _WebRtcHttpOffer WebRtcHttpOffer;

typedef struct
{
  /* context thread: a viewer's offer (taken); answer it, now or later,
   * with webrtc_http_offer_answer() or webrtc_http_offer_refuse() */
  void (*offer) (WebRtcHttpOffer * req, GstSDPMessage * sdp,
      const gchar * peer, gpointer data);
  /* context thread: DELETE of viewer @id; FALSE if there is none */
  gboolean (*end) (guint id, const gchar * peer, gpointer data);
  /* context thread: a request refused. @security: a security event (a
   * token, an origin) rather than a health one */
  void (*refused) (const gchar * peer, gboolean security,
      const gchar * reason, const gchar * detail, gpointer data);
} WebRtcHttpCallbacks;

typedef struct
{
  const gchar *address;         /* where to listen, "0.0.0.0" for all */
  guint port;                   /* 0: any free port */
  const gchar *token;           /* NULL: none asked for */
  const gchar *const *allowed_origins;  /* NULL: none checked */
} WebRtcHttpConfig;

/* Context thread (the thread-default context is the element's): listens.
 * NULL with @error if it cannot. */
WebRtcHttp *webrtc_http_new (const WebRtcHttpConfig * config,
    const WebRtcHttpCallbacks * callbacks, gpointer data, GError ** error);

/* the port listened on */
guint       webrtc_http_port (WebRtcHttp * http);

/* context thread: stops listening; an offer answered later completes
 * (on this context) without a response */
void        webrtc_http_free (WebRtcHttp * http);

/* any thread: 201 with @sdp for viewer @id; takes @req */
void        webrtc_http_offer_answer (WebRtcHttpOffer * req, guint id,
    const gchar * sdp);

/* any thread: @status with @message as text; takes @req */
void        webrtc_http_offer_refuse (WebRtcHttpOffer * req, guint status,
    const gchar * message);

G_END_DECLS
