/* spicewebrtcsink: one viewer
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include <nice/agent.h>
#include <gst/app/gstappsrc.h>
#include <gst/rtp/gstrtpbuffer.h>
#include <gst/webrtc/webrtc.h>
#include <gst/spice/gstspice.h>

#include "webrtcviewer.h"
#include "webrtcsdp.h"

GST_DEBUG_CATEGORY_STATIC (webrtc_viewer_debug);
#define GST_CAT_DEFAULT webrtc_viewer_debug

/* the rate never goes below this, bit/s */
#define MIN_BITRATE 150000
/* receiver reports' fraction lost above which the rate falls */
#define LOSS_HIGH 0.10
#define LOSS_SOME 0.02

struct _WebRtcViewer
{
  guint id;
  GstElement *pipeline, *appsrc, *webrtc, *enc;
  GstElement *asrc;             /* sound, or NULL */
  GstWebRTCDataChannel *channel;
  WebRtcViewerCallbacks cb;
  gpointer data;
  gchar **ice_addresses;

  GMutex lock;
  gboolean closing, answered;
  guint bitrate, max_bitrate;
  gdouble loss, rtt;
  guint64 frames, bytes_sent;
  gchar *state;
};

/* what follows each encoder; @full_chroma: it encodes 4:4:4 (Y444) when
 * the browser takes it; @colorimetry: what a browser assumes of the codec
 * without a colour space of its own (BT.601 limited range for VP8, VP9
 * and H.264; BT.709 for AV1, whose sequence header av1enc leaves
 * unspecified: in BT.601 every colour shifted and moving pictures stopped
 * at 33 dB PSNR in Chromium, 37.5 in BT.709, bench/codec-rd.py) */
static const struct
{
  const gchar *prefix, *encoding, *chain;
  gboolean full_chroma;
  const gchar *colorimetry;
} codecs[] = {
  {"vp8", "VP8", "rtpvp8pay", FALSE, "bt601"},
  {"vp9", "VP9", "rtpvp9pay", TRUE, "bt601"},
  /* a bin of its own (gst_parse_bin_from_description): the caps go in a
   * capsfilter, a description cannot start with them */
  {"x264enc", "H264", "capsfilter caps=\"video/x-h264,"
        "profile=constrained-baseline\" ! h264parse config-interval=-1 ! "
        "rtph264pay aggregate-mode=1", FALSE, "bt601"},
  {"openh264enc", "H264", "capsfilter caps=\"video/x-h264,"
        "profile=constrained-baseline\" ! h264parse config-interval=-1 ! "
        "rtph264pay aggregate-mode=1", FALSE, "bt601"},
  /* our payloader (GStreamer 1.22 has none for AV1) takes temporal units
   * of an OBU stream */
  {"av1", "AV1", "av1parse ! capsfilter caps=\"video/x-av1,"
        "stream-format=obu-stream,alignment=tu\" ! spicertpav1pay", FALSE,
      "bt709"},
};

static void
init_debug (void)
{
  static gsize once = 0;

  if (g_once_init_enter (&once)) {
    GST_DEBUG_CATEGORY_INIT (webrtc_viewer_debug, "spicewebrtcviewer", 0,
        "spicewebrtcsink viewers");
    g_once_init_leave (&once, 1);
  }
}

/* any thread: the row of codecs[] for @encoder's first element */
static gint
codec_of (const gchar * encoder)
{
  gchar *first = g_strndup (encoder, strcspn (encoder, " !"));
  gint i, found = -1;

  for (i = 0; i < (gint) G_N_ELEMENTS (codecs); i++)
    if (g_str_has_prefix (first, codecs[i].prefix))
      found = i;
  g_free (first);
  return found;
}

const gchar *
webrtc_viewer_encoding (const gchar * encoder, GError ** error)
{
  gint c = codec_of (encoder ? encoder : "");
  GstElement *probe;

  if (c < 0) {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "no WebRTC payloader known for encoder '%s' (vp8enc, vp9enc, "
        "x264enc, openh264enc or av1enc)", encoder);
    return NULL;
  }
  probe = gst_parse_bin_from_description (codecs[c].chain, TRUE, NULL);
  if (!probe) {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_MISSING_PLUGIN,
        "%s needs '%s', which this GStreamer does not have",
        codecs[c].encoding, codecs[c].chain);
    return NULL;
  }
  gst_object_unref (probe);
  return codecs[c].encoding;
}

/* any thread */
static void
viewer_end (WebRtcViewer * v, const gchar * reason)
{
  gboolean call;

  g_mutex_lock (&v->lock);
  call = !v->closing;
  v->closing = TRUE;
  g_free (v->state);
  v->state = g_strdup (reason);
  g_mutex_unlock (&v->lock);
  if (call)
    v->cb.ended (v, reason, v->data);
}

/* webrtcbin's thread: no answer can be made */
static void
answer_failed (WebRtcViewer * v, const gchar * error)
{
  gboolean call;

  g_mutex_lock (&v->lock);
  call = !v->closing && !v->answered;
  v->answered = TRUE;
  g_mutex_unlock (&v->lock);
  if (call)
    v->cb.answered (v, NULL, error, v->data);
}

/* webrtcbin's thread: gathering done, the answer goes out */
static void
send_answer (WebRtcViewer * v)
{
  GstWebRTCSessionDescription *desc = NULL;
  GstSDPMessage *sdp;
  gchar *text;
  guint kept;

  g_mutex_lock (&v->lock);
  if (v->closing || v->answered) {
    g_mutex_unlock (&v->lock);
    return;
  }
  v->answered = TRUE;
  g_mutex_unlock (&v->lock);

  g_object_get (v->webrtc, "local-description", &desc, NULL);
  if (!desc) {
    v->cb.answered (v, NULL, "webrtcbin has no local description", v->data);
    return;
  }
  gst_sdp_message_copy (desc->sdp, &sdp);
  gst_webrtc_session_description_free (desc);
  kept = webrtc_sdp_keep_candidates (sdp,
      (const gchar * const *) v->ice_addresses);
  text = gst_sdp_message_as_text (sdp);
  gst_sdp_message_free (sdp);
  GST_DEBUG ("viewer %u: answer with %u candidates", v->id, kept);
  if (!kept)
    v->cb.answered (v, NULL, "no ICE candidate on an allowed address", v->data);
  else
    v->cb.answered (v, text, NULL, v->data);
  g_free (text);
}

/* webrtcbin's threads */
static void
on_gathering_state (GstElement * webrtc, GParamSpec * pspec, WebRtcViewer * v)
{
  GstWebRTCICEGatheringState state;

  g_object_get (webrtc, "ice-gathering-state", &state, NULL);
  if (state == GST_WEBRTC_ICE_GATHERING_STATE_COMPLETE)
    send_answer (v);
}

/* webrtcbin's threads */
static void
on_connection_state (GstElement * webrtc, GParamSpec * pspec, WebRtcViewer * v)
{
  GstWebRTCPeerConnectionState state;

  g_object_get (webrtc, "connection-state", &state, NULL);
  GST_DEBUG ("viewer %u: connection state %d", v->id, state);
  g_mutex_lock (&v->lock);
  if (!v->closing) {
    g_free (v->state);
    v->state = g_strdup (state == GST_WEBRTC_PEER_CONNECTION_STATE_CONNECTED ?
        "connected" : state == GST_WEBRTC_PEER_CONNECTION_STATE_CONNECTING ?
        "connecting" : "new");
  }
  g_mutex_unlock (&v->lock);
  /* the transport's elements came after the pipeline's latency was
   * distributed: they get it now (rtpsession warns on every packet
   * otherwise) */
  if (state == GST_WEBRTC_PEER_CONNECTION_STATE_CONNECTED)
    gst_bin_recalculate_latency (GST_BIN (v->pipeline));
  if (state == GST_WEBRTC_PEER_CONNECTION_STATE_FAILED)
    viewer_end (v, "failed");
  else if (state == GST_WEBRTC_PEER_CONNECTION_STATE_CLOSED)
    viewer_end (v, "closed");
}

/* webrtcbin's thread: the answer was made */
static void
on_answer_created (GstPromise * promise, gpointer data)
{
  WebRtcViewer *v = data;
  const GstStructure *reply = gst_promise_get_reply (promise);
  GstWebRTCSessionDescription *answer = NULL;
  GstWebRTCICEGatheringState state;

  if (gst_promise_wait (promise) == GST_PROMISE_RESULT_REPLIED && reply)
    gst_structure_get (reply, "answer",
        GST_TYPE_WEBRTC_SESSION_DESCRIPTION, &answer, NULL);
  gst_promise_unref (promise);
  if (!answer) {
    answer_failed (v, "webrtcbin made no answer to the offer");
    return;
  }
  if (gst_debug_category_get_threshold (webrtc_viewer_debug) >= GST_LEVEL_LOG) {
    gchar *text = gst_sdp_message_as_text (answer->sdp);

    GST_LOG ("viewer %u: answer\n%s", v->id, text);
    g_free (text);
  }
  g_signal_emit_by_name (v->webrtc, "set-local-description", answer, NULL);
  gst_webrtc_session_description_free (answer);
  g_object_get (v->webrtc, "ice-gathering-state", &state, NULL);
  if (state == GST_WEBRTC_ICE_GATHERING_STATE_COMPLETE)
    send_answer (v);
}

/* webrtcbin's thread: the offer was taken */
static void
on_offer_set (GstPromise * promise, gpointer data)
{
  WebRtcViewer *v = data;
  const GstStructure *reply = gst_promise_get_reply (promise);
  GError *err = NULL;

  if (reply && gst_structure_get (reply, "error", G_TYPE_ERROR, &err, NULL)) {
    gchar *msg = g_strdup_printf ("the offer was refused: %s", err->message);

    answer_failed (v, msg);
    g_free (msg);
    g_error_free (err);
    gst_promise_unref (promise);
    return;
  }
  gst_promise_unref (promise);
  g_signal_emit_by_name (v->webrtc, "create-answer", NULL,
      gst_promise_new_with_change_func (on_answer_created, v, NULL));
}

/* a data channel's thread */
static void
on_message_string (GstWebRTCDataChannel * channel, const gchar * str,
    WebRtcViewer * v)
{
  if (str)
    v->cb.input (v, str, strlen (str), v->data);
}

/* a data channel's thread */
static void
on_message_data (GstWebRTCDataChannel * channel, GBytes * bytes,
    WebRtcViewer * v)
{
  gsize len = 0;
  const gchar *d = bytes ? g_bytes_get_data (bytes, &len) : NULL;

  if (d)
    v->cb.input (v, d, len, v->data);
}

/* a data channel's thread */
static void
on_channel_close (GstWebRTCDataChannel * channel, WebRtcViewer * v)
{
  viewer_end (v, "closed");
}

/* webrtcbin's thread: the viewer opened its input channel */
static void
on_data_channel (GstElement * webrtc, GstWebRTCDataChannel * channel,
    WebRtcViewer * v)
{
  g_mutex_lock (&v->lock);
  if (v->channel || v->closing) {
    g_mutex_unlock (&v->lock);
    GST_DEBUG ("viewer %u: a second data channel, ignored", v->id);
    return;
  }
  v->channel = g_object_ref (channel);
  g_mutex_unlock (&v->lock);
  g_signal_connect (channel, "on-message-string",
      G_CALLBACK (on_message_string), v);
  g_signal_connect (channel, "on-message-data", G_CALLBACK (on_message_data),
      v);
  g_signal_connect (channel, "on-close", G_CALLBACK (on_channel_close), v);
}

/* the viewer pipeline's streaming threads: an error ends the viewer */
static GstBusSyncReply
bus_sync (GstBus * bus, GstMessage * msg, gpointer data)
{
  WebRtcViewer *v = data;

  if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
    GError *err = NULL;
    gchar *reason;

    gst_message_parse_error (msg, &err, NULL);
    GST_WARNING ("viewer %u: %s", v->id, err->message);
    reason = g_strdup_printf ("error: %s", err->message);
    viewer_end (v, reason);
    g_free (reason);
    g_error_free (err);
  }
  return GST_BUS_DROP;
}

/* any thread but a viewer's: ICE gathers on @addresses only (NULL: every
 * interface libnice finds), never asks a UPnP router */
static gboolean
restrict_ice (WebRtcViewer * v, const gchar * const *addresses, GError ** error)
{
  GObject *ice = NULL, *agent = NULL;
  guint i;

  g_object_get (v->webrtc, "ice-agent", &ice, NULL);
  if (ice && g_object_class_find_property (G_OBJECT_GET_CLASS (ice), "agent"))
    g_object_get (ice, "agent", &agent, NULL);
  g_clear_object (&ice);
  if (!agent || !NICE_IS_AGENT (agent)) {
    g_clear_object (&agent);
    if (!addresses || !addresses[0])
      return TRUE;
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NOT_IMPLEMENTED,
        "webrtcbin's ICE agent is not libnice's: cannot restrict it to %s",
        addresses[0]);
    return FALSE;
  }
  /* keepalives that need an answer: a browser that went away without a
   * word (killed, its network gone) fails the connection, and the viewer
   * ends, instead of holding its slot */
  g_object_set (agent, "upnp", FALSE, "keepalive-conncheck", TRUE, NULL);
  for (i = 0; addresses && addresses[i]; i++) {
    NiceAddress addr;

    nice_address_init (&addr);
    if (!nice_address_set_from_string (&addr, addresses[i]) ||
        !nice_agent_add_local_address (NICE_AGENT (agent), &addr)) {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
          "'%s' is no local address ICE can use", addresses[i]);
      g_object_unref (agent);
      return FALSE;
    }
  }
  g_object_unref (agent);
  return TRUE;
}

/* Payloaders' templates allow payload types 96-127, but Chromium offers
 * VP9 profile 1 (and H.264 4:4:4) at types below 96. For such a type the
 * payloader works at PAYLOADER_PT and the pad after it speaks the offer's
 * type: caps queries both ways, the caps event and every packet's header
 * are rewritten there. */
#define PAYLOADER_PT 96

/* header extensions Chromium offers that make a desktop feel like one:
 * no playout delay (each frame shown once decoded, no jitter buffer to
 * smooth a film) and the screen-share content type */
#define PLAYOUT_DELAY_URI \
  "http://www.webrtc.org/experiments/rtp-hdrext/playout-delay"
#define CONTENT_TYPE_URI \
  "http://www.webrtc.org/experiments/rtp-hdrext/video-content-type"

/* any thread: @caps (not taken) with payload @pt, a new reference */
static GstCaps *
caps_with_payload (GstCaps * caps, gint pt)
{
  GstCaps *out = gst_caps_copy (caps);
  guint i;

  for (i = 0; i < gst_caps_get_size (out); i++)
    gst_structure_set (gst_caps_get_structure (out, i), "payload", G_TYPE_INT,
        pt, NULL);
  return out;
}

/* what the pad after the payloader changes in what passes */
typedef struct
{
  gint pt;                      /* the offer's type */
  gboolean rewrite;             /* @pt is below PAYLOADER_PT */
  /* the offer's ids of the header extensions sent (0: not offered) */
  guint8 playout_delay_id, content_type_id;
} PacketRewrite;

/* any thread: @buf's payload type and header extensions as @rw says;
 * FALSE if it is no RTP packet */
static gboolean
rewrite_packet (GstBuffer * buf, const PacketRewrite * rw)
{
  GstRTPBuffer rtp = GST_RTP_BUFFER_INIT;
  /* playout delay min 0, max 0 (12 bits each, 10 ms units): show each
   * frame as soon as it is decoded; content type 1: screen share */
  static const guint8 no_delay[3] = { 0, 0, 0 }, screen[1] = { 1 };

  if (!gst_rtp_buffer_map (buf, GST_MAP_READWRITE, &rtp))
    return FALSE;
  if (rw->rewrite)
    gst_rtp_buffer_set_payload_type (&rtp, rw->pt);
  if (rw->playout_delay_id)
    gst_rtp_buffer_add_extension_onebyte_header (&rtp, rw->playout_delay_id,
        no_delay, sizeof (no_delay));
  if (rw->content_type_id)
    gst_rtp_buffer_add_extension_onebyte_header (&rtp, rw->content_type_id,
        screen, sizeof (screen));
  gst_rtp_buffer_unmap (&rtp);
  return TRUE;
}

/* any of the viewer's streaming threads: on the pad after the payloader */
static GstPadProbeReturn
payload_type_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  const PacketRewrite *rw = data;
  gint pt = rw->pt;
  GstPadProbeType type = GST_PAD_PROBE_INFO_TYPE (info);

  if (!rw->rewrite && !(type & (GST_PAD_PROBE_TYPE_BUFFER |
              GST_PAD_PROBE_TYPE_BUFFER_LIST)))
    return GST_PAD_PROBE_OK;
  if (type & GST_PAD_PROBE_TYPE_QUERY_BOTH) {
    GstQuery *query = GST_PAD_PROBE_INFO_QUERY (info);
    gboolean upstream = (type & GST_PAD_PROBE_TYPE_QUERY_UPSTREAM) != 0;
    GstCaps *filter, *caps = NULL, *fixed;
    GstPad *other;

    if (GST_QUERY_TYPE (query) != GST_QUERY_CAPS)
      return GST_PAD_PROBE_OK;
    /* answered here, whole: the side asked, queried without the filter
     * (its types would exclude the other side's), speaks the asker's */
    if (upstream) {
      caps = gst_pad_get_current_caps (pad);
      if (!caps)
        caps = gst_pad_get_pad_template_caps (pad);
    } else if ((other = gst_pad_get_peer (pad))) {
      caps = gst_pad_query_caps (other, NULL);
      gst_object_unref (other);
    }
    if (!caps)
      caps = gst_caps_new_empty ();
    fixed = gst_caps_is_any (caps) ? gst_caps_ref (caps) :
        caps_with_payload (caps, upstream ? pt : PAYLOADER_PT);
    gst_caps_unref (caps);
    gst_query_parse_caps (query, &filter);
    if (filter && !gst_caps_is_any (filter)) {
      /* the payloader's filter is what its own pad answered above */
      GstCaps *f = caps_with_payload (filter, upstream ? pt : PAYLOADER_PT);

      caps = gst_caps_intersect_full (f, fixed, GST_CAPS_INTERSECT_FIRST);
      gst_caps_unref (f);
      gst_caps_unref (fixed);
      fixed = caps;
    }
    GST_LOG_OBJECT (pad, "caps query %s: %" GST_PTR_FORMAT,
        upstream ? "upstream" : "downstream", fixed);
    gst_query_set_caps_result (query, fixed);
    gst_caps_unref (fixed);
    return GST_PAD_PROBE_HANDLED;
  } else if (type & GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM) {
    GstEvent *event = GST_PAD_PROBE_INFO_EVENT (info);
    GstCaps *caps, *fixed;

    if (GST_EVENT_TYPE (event) != GST_EVENT_CAPS)
      return GST_PAD_PROBE_OK;
    gst_event_parse_caps (event, &caps);
    fixed = caps_with_payload (caps, pt);
    GST_PAD_PROBE_INFO_DATA (info) = gst_event_new_caps (fixed);
    gst_caps_unref (fixed);
    gst_event_unref (event);
  } else if (type & GST_PAD_PROBE_TYPE_BUFFER) {
    GstBuffer *buf =
        gst_buffer_make_writable (GST_PAD_PROBE_INFO_BUFFER (info));

    GST_PAD_PROBE_INFO_DATA (info) = buf;
    rewrite_packet (buf, rw);
  } else if (type & GST_PAD_PROBE_TYPE_BUFFER_LIST) {
    GstBufferList *list =
        gst_buffer_list_make_writable (GST_PAD_PROBE_INFO_BUFFER_LIST (info));
    guint i;

    GST_PAD_PROBE_INFO_DATA (info) = list;
    for (i = 0; i < gst_buffer_list_length (list); i++) {
      GstBuffer *buf = gst_buffer_list_get_writable (list, i);

      rewrite_packet (buf, rw);
    }
  }
  return GST_PAD_PROBE_OK;
}

/* state-change thread: @rw on @pad (the payloader's src pad: what passes
 * it is checked by the next pad already); takes @rw */
static void
rewrite_packets (GstPad * pad, PacketRewrite * rw)
{
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_QUERY_BOTH |
      GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM | GST_PAD_PROBE_TYPE_BUFFER |
      GST_PAD_PROBE_TYPE_BUFFER_LIST, payload_type_probe, rw, g_free);
}

/* any thread but a viewer's: Opus from the pipeline at payload type @pt to
 * webrtcbin, sent only */
static gboolean
build_audio (WebRtcViewer * v, GstCaps * caps, gint pt, GError ** error)
{
  GstElement *src = gst_element_factory_make ("appsrc", "asrc");
  GstElement *pay = gst_element_factory_make ("rtpopuspay", NULL);
  GstWebRTCRTPTransceiver *trans = NULL;
  GstPad *out, *sink;
  GstCaps *prefs;

  if (!src || !pay) {
    gst_clear_object (&src);
    gst_clear_object (&pay);
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_MISSING_PLUGIN,
        "appsrc or rtpopuspay is missing");
    return FALSE;
  }
  g_object_set (src, "is-live", TRUE, "format", GST_FORMAT_TIME,
      "max-buffers", (guint64) 20, "leaky-type", 2 /* downstream */ ,
      "caps", caps, NULL);
  g_object_set (pay, "pt", (guint) pt, "ssrc",
      (guint) g_random_int_range (1, G_MAXINT32), NULL);
  gst_bin_add_many (GST_BIN (v->pipeline), src, pay, NULL);
  if (!gst_element_link (src, pay)) {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "cannot link the viewer's sound to its payloader");
    return FALSE;
  }
  out = gst_element_get_static_pad (pay, "src");
  sink = gst_element_request_pad_simple (v->webrtc, "sink_%u");
  if (!sink || gst_pad_link (out, sink) != GST_PAD_LINK_OK) {
    gst_object_unref (out);
    gst_clear_object (&sink);
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "cannot link the sound payloader to webrtcbin");
    return FALSE;
  }
  g_object_get (sink, "transceiver", &trans, NULL);
  prefs = gst_caps_new_simple ("application/x-rtp", "media", G_TYPE_STRING,
      "audio", "encoding-name", G_TYPE_STRING, "OPUS", "payload", G_TYPE_INT,
      pt, "clock-rate", G_TYPE_INT, 48000, NULL);
  if (trans) {
    g_object_set (trans, "direction",
        GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_SENDONLY, "codec-preferences",
        prefs, NULL);
    gst_object_unref (trans);
  }
  gst_caps_unref (prefs);
  gst_object_unref (out);
  gst_object_unref (sink);
  v->asrc = src;
  return TRUE;
}

/* state-change thread: the pipeline up to webrtcbin */
static gboolean
build (WebRtcViewer * v, const WebRtcViewerConfig * config, GstCaps * caps,
    const gchar * encoding, gint pt, gboolean full_chroma,
    const GstSDPMessage * offer, GError ** error)
{
  GstElement *convert, *filter, *chain;
  GstPad *src, *sink;
  GstWebRTCRTPTransceiver *trans = NULL;
  GstCaps *prefs;
  gchar *name;
  gint c = codec_of (config->encoder);
  /* known before the first packet: the answer names it (and its RTX
   * stream's beside it) */
  guint ssrc = g_random_int_range (1, G_MAXINT32);
  guint playout_id = 0, content_id = 0;

  name = g_strdup_printf ("webrtc-viewer-%u", v->id);
  v->pipeline = gst_pipeline_new (name);
  g_free (name);
  v->appsrc = gst_element_factory_make ("appsrc", "src");
  convert = gst_element_factory_make ("videoconvert", NULL);
  filter = gst_element_factory_make ("capsfilter", NULL);
  v->enc = gst_element_factory_make ("spicestreamenc", "enc");
  v->webrtc = gst_element_factory_make ("webrtcbin", "webrtc");
  chain = gst_parse_bin_from_description (codecs[c].chain, TRUE, error);
  if (!v->appsrc || !convert || !filter || !v->enc || !v->webrtc || !chain) {
    if (error && !*error)
      g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_MISSING_PLUGIN,
          "appsrc, videoconvert, spicestreamenc or webrtcbin is missing");
    gst_clear_object (&v->appsrc);
    gst_clear_object (&convert);
    gst_clear_object (&filter);
    gst_clear_object (&v->enc);
    gst_clear_object (&v->webrtc);
    gst_clear_object (&chain);
    return FALSE;
  }
  g_object_set (v->appsrc, "is-live", TRUE, "format", GST_FORMAT_TIME,
      "max-buffers", (guint64) 1, "leaky-type", 2 /* downstream */ ,
      "caps", caps, NULL);
  g_object_set (v->enc, "encoder", config->encoder, NULL);
  {
    /* what the browser assumes of the codec without a colour space of
     * its own (codecs[]: videoconvert would pick BT.709 for an HD picture
     * whatever the codec). 4:4:4 where the browser takes it: 4:2:0 halves
     * the colour of every glyph's edge (the test guest's text on blue:
     * 28 dB PSNR before any encoding) */
    gchar *str = g_strdup_printf ("video/x-raw,format=%s,colorimetry=%s",
        full_chroma ? "Y444" : "I420", codecs[c].colorimetry);
    GstCaps *yuv = gst_caps_from_string (str);

    g_free (str);
    g_object_set (filter, "caps", yuv, NULL);
    gst_caps_unref (yuv);
  }
  g_object_set (v->webrtc, "bundle-policy", GST_WEBRTC_BUNDLE_POLICY_MAX_BUNDLE,
      NULL);
  if (config->stun_server && config->stun_server[0])
    g_object_set (v->webrtc, "stun-server", config->stun_server, NULL);

  gst_bin_add_many (GST_BIN (v->pipeline), v->appsrc, convert, filter,
      v->enc, chain, v->webrtc, NULL);
  if (!restrict_ice (v, config->ice_addresses, error))
    return FALSE;
  if (!gst_element_link_many (v->appsrc, convert, filter, v->enc, chain, NULL)) {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "cannot link the viewer's encoder to its payloader");
    return FALSE;
  }
  /* the payloader's own type: the one the offer gave the codec */
  {
    GstIterator *it = gst_bin_iterate_sorted (GST_BIN (chain));
    GValue item = G_VALUE_INIT;

    if (gst_iterator_next (it, &item) == GST_ITERATOR_OK) {
      GObject *pay = g_value_get_object (&item);

      if (g_object_class_find_property (G_OBJECT_GET_CLASS (pay), "pt"))
        g_object_set (pay, "pt", (guint) (pt < PAYLOADER_PT ? PAYLOADER_PT :
                pt), "ssrc", ssrc, NULL);
      g_value_unset (&item);
    }
    gst_iterator_free (it);
  }
  src = gst_element_get_static_pad (chain, "src");
  {
    GstPad *pay_src = gst_ghost_pad_get_target (GST_GHOST_PAD (src));
    PacketRewrite *rw = g_new0 (PacketRewrite, 1);

    rw->pt = pt;
    rw->rewrite = pt < PAYLOADER_PT;
    rw->playout_delay_id = webrtc_sdp_video_extmap (offer, PLAYOUT_DELAY_URI);
    rw->content_type_id = webrtc_sdp_video_extmap (offer, CONTENT_TYPE_URI);
    playout_id = rw->playout_delay_id;
    content_id = rw->content_type_id;
    if (pay_src) {
      rewrite_packets (pay_src, rw);
      gst_object_unref (pay_src);
    } else {
      g_free (rw);
    }
  }
  sink = gst_element_request_pad_simple (v->webrtc, "sink_%u");
  if (!sink || gst_pad_link (src, sink) != GST_PAD_LINK_OK) {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "cannot link the payloader to webrtcbin");
    gst_object_unref (src);
    gst_clear_object (&sink);
    return FALSE;
  }
  g_object_get (sink, "transceiver", &trans, NULL);
  prefs = gst_caps_new_simple ("application/x-rtp", "media", G_TYPE_STRING,
      "video", "encoding-name", G_TYPE_STRING, encoding, "payload",
      G_TYPE_INT, pt, "clock-rate", G_TYPE_INT, 90000, NULL);
  if (full_chroma)
    gst_caps_set_simple (prefs, "profile-id", G_TYPE_STRING, "1", NULL);
  gst_caps_set_simple (prefs, "ssrc", G_TYPE_UINT, ssrc, NULL);
  /* the answer names the header extensions the packets carry */
  if (playout_id) {
    gchar *field = g_strdup_printf ("extmap-%u", playout_id);

    gst_caps_set_simple (prefs, field, G_TYPE_STRING, PLAYOUT_DELAY_URI, NULL);
    g_free (field);
  }
  if (content_id) {
    gchar *field = g_strdup_printf ("extmap-%u", content_id);

    gst_caps_set_simple (prefs, field, G_TYPE_STRING, CONTENT_TYPE_URI, NULL);
    g_free (field);
  }
  if (trans) {
    /* a lost packet is sent again when the browser asks (NACK, RTX):
     * otherwise it asks for a key frame, whose burst on a slow link loses
     * more */
    g_object_set (trans, "direction",
        GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_SENDONLY, "codec-preferences",
        prefs, "do-nack", TRUE, NULL);
    gst_object_unref (trans);
  }
  gst_caps_unref (prefs);
  gst_object_unref (src);
  gst_object_unref (sink);
  return TRUE;
}

WebRtcViewer *
webrtc_viewer_new (guint id, const WebRtcViewerConfig * config,
    GstCaps * caps, GstSDPMessage * offer,
    const WebRtcViewerCallbacks * callbacks, gpointer data, GError ** error)
{
  WebRtcViewer *v;
  GstWebRTCSessionDescription *desc;
  const gchar *encoding;
  GstBus *bus;
  gint pt;
  guint64 initial = 0;
  gboolean full_chroma;
  gint opus_pt;

  init_debug ();
  encoding = webrtc_viewer_encoding (config->encoder, error);
  if (!encoding) {
    gst_sdp_message_free (offer);
    return NULL;
  }
  if (!webrtc_sdp_wants_video (offer)) {
    g_set_error (error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
        "the offer has no video section that receives");
    gst_sdp_message_free (offer);
    return NULL;
  }
  full_chroma = codecs[codec_of (config->encoder)].full_chroma;
  pt = webrtc_sdp_video_payload (offer, encoding, &full_chroma);
  if (pt < 0) {
    g_set_error (error, GST_STREAM_ERROR, GST_STREAM_ERROR_CODEC_NOT_FOUND,
        "the browser does not offer to receive %s", encoding);
    gst_sdp_message_free (offer);
    return NULL;
  }

  v = g_new0 (WebRtcViewer, 1);
  v->id = id;
  v->cb = *callbacks;
  v->data = data;
  v->ice_addresses = g_strdupv ((gchar **) config->ice_addresses);
  v->max_bitrate = config->max_bitrate;
  v->state = g_strdup ("new");
  g_mutex_init (&v->lock);
  if (!build (v, config, caps, encoding, pt, full_chroma, offer, error)) {
    gst_sdp_message_free (offer);
    webrtc_viewer_free (v);
    return NULL;
  }
  /* sound where there is some and the browser takes Opus; a viewer that
   * does not is answered without it */
  opus_pt = config->audio_caps ? webrtc_sdp_opus_payload (offer) : -1;
  if (opus_pt >= 0 && !build_audio (v, config->audio_caps, opus_pt, error)) {
    gst_sdp_message_free (offer);
    webrtc_viewer_free (v);
    return NULL;
  }
  g_object_get (v->enc, "applied-bitrate", &initial, NULL);
  v->bitrate = initial ? (guint) MIN (initial, G_MAXUINT) : 2000000;
  if (v->max_bitrate && v->bitrate > v->max_bitrate)
    v->bitrate = v->max_bitrate;

  bus = gst_element_get_bus (v->pipeline);
  gst_bus_set_sync_handler (bus, bus_sync, v, NULL);
  gst_object_unref (bus);
  g_signal_connect (v->webrtc, "notify::ice-gathering-state",
      G_CALLBACK (on_gathering_state), v);
  g_signal_connect (v->webrtc, "notify::connection-state",
      G_CALLBACK (on_connection_state), v);
  g_signal_connect (v->webrtc, "on-data-channel",
      G_CALLBACK (on_data_channel), v);

  if (gst_element_set_state (v->pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE) {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_STATE_CHANGE,
        "the viewer's pipeline does not start");
    gst_sdp_message_free (offer);
    webrtc_viewer_free (v);
    return NULL;
  }
  GST_INFO ("viewer %u: %s%s at payload type %d, %s", id, encoding,
      full_chroma ? " 4:4:4" : "", pt, config->encoder);
  desc = gst_webrtc_session_description_new (GST_WEBRTC_SDP_TYPE_OFFER, offer);
  g_signal_emit_by_name (v->webrtc, "set-remote-description", desc,
      gst_promise_new_with_change_func (on_offer_set, v, NULL));
  gst_webrtc_session_description_free (desc);
  return v;
}

guint
webrtc_viewer_id (WebRtcViewer * v)
{
  return v->id;
}

void
webrtc_viewer_push (WebRtcViewer * v, GstBuffer * buf)
{
  GstClock *clock = gst_element_get_clock (v->pipeline);
  GstBuffer *out;

  if (!clock)
    return;
  out = gst_buffer_copy_region (buf, GST_BUFFER_COPY_MEMORY |
      GST_BUFFER_COPY_META, 0, -1);
  /* the frame stays the pipeline's until every viewer is done with it */
  gst_buffer_add_parent_buffer_meta (out, buf);
  GST_BUFFER_PTS (out) = gst_clock_get_time (clock) -
      gst_element_get_base_time (v->pipeline);
  GST_BUFFER_DTS (out) = GST_CLOCK_TIME_NONE;
  GST_BUFFER_DURATION (out) = GST_CLOCK_TIME_NONE;
  gst_object_unref (clock);
  g_mutex_lock (&v->lock);
  v->frames++;
  g_mutex_unlock (&v->lock);
  gst_app_src_push_buffer (GST_APP_SRC (v->appsrc), out);
}

gboolean
webrtc_viewer_send (WebRtcViewer * v, const gchar * text)
{
  GstWebRTCDataChannel *channel = NULL;
  GstWebRTCDataChannelState state = GST_WEBRTC_DATA_CHANNEL_STATE_CLOSED;

  g_mutex_lock (&v->lock);
  if (v->channel && !v->closing)
    channel = g_object_ref (v->channel);
  g_mutex_unlock (&v->lock);
  if (!channel)
    return FALSE;
  g_object_get (channel, "ready-state", &state, NULL);
  if (state == GST_WEBRTC_DATA_CHANNEL_STATE_OPEN)
    gst_webrtc_data_channel_send_string (channel, text);
  g_object_unref (channel);
  return state == GST_WEBRTC_DATA_CHANNEL_STATE_OPEN;
}

void
webrtc_viewer_push_audio (WebRtcViewer * v, GstBuffer * buf)
{
  GstClock *clock;
  GstBuffer *out;

  if (!v->asrc || !(clock = gst_element_get_clock (v->pipeline)))
    return;
  out = gst_buffer_copy_region (buf, GST_BUFFER_COPY_MEMORY |
      GST_BUFFER_COPY_META | GST_BUFFER_COPY_FLAGS, 0, -1);
  /* the viewer's clock, as its video: the two stay together */
  GST_BUFFER_PTS (out) = gst_clock_get_time (clock) -
      gst_element_get_base_time (v->pipeline);
  GST_BUFFER_DTS (out) = GST_CLOCK_TIME_NONE;
  gst_object_unref (clock);
  gst_app_src_push_buffer (GST_APP_SRC (v->asrc), out);
}

void
webrtc_viewer_set_caps (WebRtcViewer * v, GstCaps * caps)
{
  g_object_set (v->appsrc, "caps", caps, NULL);
}

/* webrtcbin's thread: the statistics arrived */
static void
on_stats (GstPromise * promise, gpointer data)
{
  WebRtcViewer *v = data;
  const GstStructure *reply;
  gint n, i;
  gdouble loss = -1, rtt = -1;
  guint64 bytes = 0;

  if (gst_promise_wait (promise) != GST_PROMISE_RESULT_REPLIED) {
    gst_promise_unref (promise);
    return;
  }
  reply = gst_promise_get_reply (promise);
  n = reply ? gst_structure_n_fields (reply) : 0;
  for (i = 0; i < n; i++) {
    const GValue *val = gst_structure_get_value (reply,
        gst_structure_nth_field_name (reply, i));
    const GstStructure *s;
    GstWebRTCStatsType type;

    if (!GST_VALUE_HOLDS_STRUCTURE (val))
      continue;
    s = gst_value_get_structure (val);
    if (!gst_structure_get (s, "type", GST_TYPE_WEBRTC_STATS_TYPE, &type, NULL))
      continue;
    if (type == GST_WEBRTC_STATS_REMOTE_INBOUND_RTP) {
      gst_structure_get_double (s, "fraction-lost", &loss);
      gst_structure_get_double (s, "round-trip-time", &rtt);
    } else if (type == GST_WEBRTC_STATS_OUTBOUND_RTP) {
      gst_structure_get_uint64 (s, "bytes-sent", &bytes);
    }
  }
  gst_promise_unref (promise);

  g_mutex_lock (&v->lock);
  v->bytes_sent = bytes;
  if (loss >= 0 && !v->closing) {
    guint old = v->bitrate, ceiling = v->max_bitrate ? v->max_bitrate :
        G_MAXUINT;
    GstPad *src;

    v->loss = loss;
    v->rtt = rtt;
    if (loss > LOSS_HIGH)
      v->bitrate = v->bitrate / 10 * 7;
    else if (loss > LOSS_SOME)
      v->bitrate = v->bitrate / 10 * 9;
    else
      v->bitrate = (guint) MIN ((guint64) v->bitrate * 108 / 100, ceiling);
    v->bitrate = MAX (v->bitrate, MIN_BITRATE);
    if (v->bitrate != old) {
      guint rate = v->bitrate;

      g_mutex_unlock (&v->lock);
      GST_DEBUG ("viewer %u: loss %.3f rtt %.3f s: %u bit/s", v->id, loss,
          rtt, rate);
      src = gst_element_get_static_pad (v->enc, "src");
      gst_pad_send_event (src, gst_spice_event_new_rate (rate, 0, 1, 1));
      gst_object_unref (src);
      return;
    }
  }
  g_mutex_unlock (&v->lock);
}

void
webrtc_viewer_poll_rate (WebRtcViewer * v)
{
  g_signal_emit_by_name (v->webrtc, "get-stats", NULL,
      gst_promise_new_with_change_func (on_stats, v, NULL));
}

GstStructure *
webrtc_viewer_stats (WebRtcViewer * v)
{
  GstStructure *s;

  g_mutex_lock (&v->lock);
  s = gst_structure_new ("viewer", "id", G_TYPE_UINT, v->id,
      "state", G_TYPE_STRING, v->state, "frames", G_TYPE_UINT64, v->frames,
      "bytes-sent", G_TYPE_UINT64, v->bytes_sent,
      "bitrate", G_TYPE_UINT, v->bitrate, "fraction-lost", G_TYPE_DOUBLE,
      v->loss, "rtt-ms", G_TYPE_DOUBLE, v->rtt * 1000.0, NULL);
  g_mutex_unlock (&v->lock);
  return s;
}

void
webrtc_viewer_free (WebRtcViewer * v)
{
  g_mutex_lock (&v->lock);
  v->closing = TRUE;
  g_mutex_unlock (&v->lock);
  if (v->pipeline) {
    gst_element_set_state (v->pipeline, GST_STATE_NULL);
    if (v->webrtc)
      g_signal_handlers_disconnect_by_data (v->webrtc, v);
    if (v->channel)
      g_signal_handlers_disconnect_by_data (v->channel, v);
    gst_object_unref (v->pipeline);
  }
  g_clear_object (&v->channel);
  g_strfreev (v->ice_addresses);
  g_free (v->state);
  g_mutex_clear (&v->lock);
  g_free (v);
}
