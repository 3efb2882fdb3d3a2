/* spicewebrtcsink: one viewer (a browser's peer connection)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Each viewer is a small pipeline of its own, so that a viewer that fails
 * or goes away never touches the element's pipeline or another viewer:
 *
 *   appsrc ! videoconvert ! spicestreamenc encoder=DESC ! [parse] ! RTP
 *   payloader ! webrtcbin
 *   appsrc (Opus) ! rtpopuspay ! webrtcbin   (when the pipeline has sound
 *                                            and the browser takes Opus)
 *
 * The element hands it the pipeline's frames (webrtc_viewer_push(): the
 * same memory, a new timestamp). webrtcbin answers the viewer's offer
 * (non-trickle: the answer carries every gathered candidate that is on an
 * allowed address); the viewer's data channel carries its input. The
 * encoder's rate follows the viewer's receiver reports (webrtc_viewer_
 * poll_rate()), through spicestreamenc's spice-rate handling.
 */
#pragma once

#include <gst/gst.h>
#include <gst/sdp/sdp.h>

G_BEGIN_DECLS

typedef struct _WebRtcViewer WebRtcViewer;

typedef struct
{
  /* webrtcbin's thread: the answer's SDP text, or NULL and @error */
  void (*answered) (WebRtcViewer * v, const gchar * sdp, const gchar * error,
      gpointer data);
  /* a data channel's thread: one input message of @len bytes */
  void (*input) (WebRtcViewer * v, const gchar * msg, gsize len,
      gpointer data);
  /* any of the viewer's threads: the connection failed or was closed */
  void (*ended) (WebRtcViewer * v, const gchar * reason, gpointer data);
} WebRtcViewerCallbacks;

typedef struct
{
  const gchar *encoder;         /* a launch description */
  const gchar *const *ice_addresses;    /* NULL: every address */
  const gchar *stun_server;     /* NULL or "": none */
  guint max_bitrate;            /* bit/s the rate never exceeds, 0: none */
  GstCaps *audio_caps;          /* the pipeline's Opus, NULL: no sound */
} WebRtcViewerConfig;

/* the RTP encoding of @encoder's first element ("VP8", "VP9", "H264") or
 * NULL with @error naming what is missing */
const gchar  *webrtc_viewer_encoding (const gchar * encoder, GError ** error);

/* Any thread but a viewer's: a viewer answering @offer (taken), of id @id
 * (for logs), with the pipeline's @caps. NULL with @error when the
 * pipeline cannot be made. The answer comes through callbacks->answered. */
WebRtcViewer *webrtc_viewer_new (guint id, const WebRtcViewerConfig * config,
    GstCaps * caps, GstSDPMessage * offer,
    const WebRtcViewerCallbacks * callbacks, gpointer data, GError ** error);

guint         webrtc_viewer_id (WebRtcViewer * v);

/* any thread: the pipeline's frame @buf (not taken) */
void          webrtc_viewer_push (WebRtcViewer * v, GstBuffer * buf);

/* any thread: @text as one message on the viewer's data channel, if it
 * is open (FALSE otherwise) */
gboolean      webrtc_viewer_send (WebRtcViewer * v, const gchar * text);

/* any thread: the pipeline's Opus packet @buf (not taken), if this
 * viewer takes sound */
void          webrtc_viewer_push_audio (WebRtcViewer * v, GstBuffer * buf);

/* any thread: the pipeline's caps changed */
void          webrtc_viewer_set_caps (WebRtcViewer * v, GstCaps * caps);

/* any thread but a viewer's: asks webrtcbin for its statistics and sets
 * the encoder's rate from the viewer's last receiver report */
void          webrtc_viewer_poll_rate (WebRtcViewer * v);

/* the viewer's counters (a new structure: frames pushed, bitrate, loss,
 * rtt-ms, state) */
GstStructure *webrtc_viewer_stats (WebRtcViewer * v);

/* any thread but a viewer's: stops the viewer (no callback after it
 * returns) and frees it */
void          webrtc_viewer_free (WebRtcViewer * v);

G_END_DECLS
