/* spicewebrtcsink: the pipeline's picture to browsers over WebRTC (WHEP),
 * their input back as navigation events
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
/**
 * SECTION:element-spicewebrtcsink
 * @title: spicewebrtcsink
 *
 * Serves the video it receives to web browsers: each browser that opens
 * `http://ADDRESS:PORT/` gets a viewer page (no external resources) that
 * asks for the picture by WHEP (an SDP offer POSTed to `/whep`), plays it
 * in one `<video>` at its natural size and sends its keyboard, mouse and
 * wheel back over a WebRTC data channel. Every viewer has a pipeline of
 * its own: `appsrc ! videoconvert ! spicestreamenc ! payloader !
 * webrtcbin`, so a viewer's encoder rate follows that viewer's receiver
 * reports and a viewer that fails costs the others nothing. The input
 * becomes GstNavigation events sent upstream (keys carry the exact
 * `scancode`), which spicesrc turns into SPICE input.
 *
 * When the picture stops changing the last frame is encoded again a few
 * times, so that the encoder refines it (text at rest becomes sharp), and
 * then once a second, so that a viewer that lost a packet gets a key frame.
 *
 * The sound, when an `audio` pad is requested and fed Opus, goes to every
 * viewer whose browser takes Opus; the page plays it once the user has
 * pressed a key or clicked (browsers' autoplay rules).
 *
 * Access: with `password-file` a viewer must send its first line as a
 * bearer token (the page takes it from its address: `/#token=...`); a
 * wrong one is refused (401) and posted as a `wrong-ticket` security
 * event. `allowed-origins` refuses pages of other sites (403). A
 * non-loopback `address` needs a `password-file` or `disable-token=true`.
 * ICE offers only candidates on `ice-addresses`; no STUN server is asked
 * unless `stun-server` is set.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 spicesrc uri=spice://127.0.0.1:5900 ! \
 *     spicewebrtcsink port=8080
 * ]| then open http://127.0.0.1:8080/ in a browser.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include <gst/video/video.h>
#include <gst/spice/gstspice.h>

#include "gstspicewebrtcsink.h"
#include "webrtchttp.h"
#include "webrtcinput.h"
#include "webrtcviewer.h"

GST_DEBUG_CATEGORY_STATIC (gst_spice_webrtc_sink_debug);
#define GST_CAT_DEFAULT gst_spice_webrtc_sink_debug

#define DEFAULT_ADDRESS "127.0.0.1"
#define DEFAULT_PORT 8080
/* VP9: 4:4:4 (profile 1) where the browser takes it, so that coloured text
 * can be sharp at rest; real-time speed, no look-ahead */
#define DEFAULT_ENCODER "vp9enc deadline=1 cpu-used=8 end-usage=cbr " \
    "target-bitrate=2000000 keyframe-max-dist=600 lag-in-frames=0 " \
    "error-resilient=default threads=1"
#define DEFAULT_MAX_VIEWERS 8

/* the timer's period */
#define TICK_MS 100
/* no new frame for this long: the picture rests */
#define REST_US (150 * G_TIME_SPAN_MILLISECOND)
/* frames encoded again once it rests (at the timer's rate) */
#define REFINE_FRAMES 8
/* then one a second */
#define KEEPALIVE_US G_TIME_SPAN_SECOND
/* the encoder's rate is set from receiver reports this often */
#define RATE_TICKS 10
/* a viewer's input: at most this many messages per RATE_TICKS timer
 * periods (a second); beyond it they are dropped and reported */
#define MAX_INPUT_PER_SECOND 1000
/* one event of each (event, reason) per this long; the next says how
 * many were not posted */
#define EVENT_INTERVAL_US G_TIME_SPAN_SECOND

enum
{
  PROP_0,
  PROP_ADDRESS,
  PROP_PORT,
  PROP_BOUND_PORT,
  PROP_ENCODER,
  PROP_PASSWORD_FILE,
  PROP_DISABLE_TOKEN,
  PROP_ALLOWED_ORIGINS,
  PROP_ICE_ADDRESSES,
  PROP_STUN_SERVER,
  PROP_MAX_VIEWERS,
  PROP_MAX_BITRATE,
  PROP_STATS,
};

/* one viewer as the element knows it */
typedef struct
{
  GstSpiceWebRtcSink *sink;
  guint id;
  gchar *peer;
  WebRtcViewer *viewer;         /* set once made; freed on the context */
  /* element lock */
  WebRtcHttpOffer *req;         /* until the answer went out */
  gboolean ready;               /* answered: frames go to it */
  WebRtcInput input;
  guint inputs_this_second;
} Viewer;

struct _GstSpiceWebRtcSink
{
  GstBaseSink parent;

  /* object lock */
  gchar *address, *encoder, *password_file, *allowed_origins;
  gchar *ice_addresses, *stun_server;
  guint port, max_viewers, max_bitrate, bound_port;
  gboolean disable_token;

  /* the element lock: viewers and frames, any thread */
  GMutex lock;
  GHashTable *viewers;          /* id -> Viewer */
  guint next_id;
  GstBuffer *last;
  GstCaps *caps;
  gint width, height;
  gint64 last_frame_us, last_push_us;
  guint refines, ticks;
  gboolean stopping;            /* no new viewer */
  guint64 st_frames, st_refines, st_joined, st_refused, st_inputs,
      st_inputs_dropped;
  GstSpiceReportLimit *reports; /* by "event reason"; the lock */
  /* the clipboard (VD_AGENT_CLIPBOARD_SELECTION_CLIPBOARD): a viewer's
   * text the guest may ask for while @clip_ours */
  GBytes *clip;
  gboolean clip_ours;
  GstPad *audio_pad;            /* requested, or NULL */
  GstCaps *audio_caps;          /* its caps once known */
  guint last_width, last_height;        /* the size last asked for */

  /* the context thread: HTTP, viewers' creation and end, the timer */
  GMainContext *context;
  GMainLoop *loop;
  GThread *thread;
  WebRtcHttp *http;
  GSource *tick;
  gchar *token;
};

#define gst_spice_webrtc_sink_parent_class parent_class
G_DEFINE_TYPE (GstSpiceWebRtcSink, gst_spice_webrtc_sink, GST_TYPE_BASE_SINK);
GST_ELEMENT_REGISTER_DEFINE (spicewebrtcsink, "spicewebrtcsink",
    GST_RANK_NONE, GST_TYPE_SPICE_WEBRTC_SINK);

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_VIDEO_CAPS_MAKE (GST_VIDEO_FORMATS_ALL)));

/* the sound, Opus (opusenc frame-size=10 or 20), for every viewer whose
 * browser takes it */
static GstStaticPadTemplate audio_template = GST_STATIC_PAD_TEMPLATE ("audio",
    GST_PAD_SINK, GST_PAD_REQUEST,
    GST_STATIC_CAPS ("audio/x-opus, channel-mapping-family = (int) 0"));

/* ------------------------------------------------------------ events */

/* any thread */
static void
post_report (GstStructure * st, gpointer data)
{
  GstSpiceWebRtcSink *sink = data;

  gst_element_post_message (GST_ELEMENT (sink),
      gst_message_new_element (GST_OBJECT (sink), st));
}

/* any thread: a security or health event, at most one of each (event,
 * reason) per EVENT_INTERVAL_US; the latest kept meanwhile goes out from
 * the tick with the count of the others */
static void
post_event (GstSpiceWebRtcSink * sink, gboolean security, const gchar * event,
    const gchar * peer, const gchar * reason, const gchar * detail)
{
  gchar *key = g_strconcat (event, " ", reason, NULL);
  GstStructure *st = gst_spice_report_new (!security, event, peer, peer,
      reason);

  if (detail)
    gst_structure_set (st, "detail", G_TYPE_STRING, detail, NULL);
  g_mutex_lock (&sink->lock);
  st = gst_spice_report_limit_offer (sink->reports, key, st,
      g_get_monotonic_time (), NULL);
  g_mutex_unlock (&sink->lock);
  g_free (key);
  if (st)
    post_report (st, sink);
}

/* lock held: a report the limit hands out from the tick, posted after */
static void
keep_report (GstStructure * st, gpointer data)
{
  GSList **out = data;

  *out = g_slist_prepend (*out, st);
}

/* --------------------------------------------------------- viewers */

/* any thread, element lock held: @v gets the last frame */
static void
push_last (GstSpiceWebRtcSink * sink, Viewer * v)
{
  if (v->ready && v->viewer && sink->last)
    webrtc_viewer_push (v->viewer, sink->last);
}

/* any thread, element lock held: every viewer gets the last frame */
static void
push_all (GstSpiceWebRtcSink * sink)
{
  GHashTableIter it;
  gpointer value;

  g_hash_table_iter_init (&it, sink->viewers);
  while (g_hash_table_iter_next (&it, NULL, &value))
    push_last (sink, value);
  sink->last_push_us = g_get_monotonic_time ();
}

/* context thread: @v's pipeline stopped and freed, what it held released
 * upstream */
static void
viewer_free (GstSpiceWebRtcSink * sink, Viewer * v, const gchar * reason)
{
  GList *releases, *l;
  WebRtcHttpOffer *req;

  if (v->viewer)
    webrtc_viewer_free (v->viewer);
  g_mutex_lock (&sink->lock);
  releases = webrtc_input_release_all (&v->input);
  req = v->req;
  v->req = NULL;
  g_mutex_unlock (&sink->lock);
  if (req)
    webrtc_http_offer_refuse (req, 503, reason);
  for (l = releases; l; l = l->next)
    gst_pad_push_event (GST_BASE_SINK_PAD (sink), l->data);
  g_list_free (releases);
  GST_INFO_OBJECT (sink, "viewer %u (%s) left: %s", v->id, v->peer, reason);
  g_free (v->peer);
  g_free (v);
}

/* context thread: ends viewer @id; FALSE if there is none */
static gboolean
viewer_remove (GstSpiceWebRtcSink * sink, guint id, const gchar * reason)
{
  Viewer *v = NULL;

  g_mutex_lock (&sink->lock);
  if (g_hash_table_steal_extended (sink->viewers, GUINT_TO_POINTER (id), NULL,
          (gpointer *) & v) == FALSE)
    v = NULL;
  g_mutex_unlock (&sink->lock);
  if (!v)
    return FALSE;
  viewer_free (sink, v, reason);
  return TRUE;
}

typedef struct
{
  GstSpiceWebRtcSink *sink;
  guint id;
  gchar *reason;
} RemoveOp;

/* context thread */
static gboolean
remove_op_run (gpointer data)
{
  RemoveOp *op = data;

  viewer_remove (op->sink, op->id, op->reason);
  return G_SOURCE_REMOVE;
}

static void
remove_op_free (gpointer data)
{
  RemoveOp *op = data;

  gst_object_unref (op->sink);
  g_free (op->reason);
  g_free (op);
}

/* any thread: viewer @id ends on the context thread */
static void
viewer_remove_later (GstSpiceWebRtcSink * sink, guint id, const gchar * reason)
{
  RemoveOp *op = g_new0 (RemoveOp, 1);
  GMainContext *context;

  op->sink = gst_object_ref (sink);
  op->id = id;
  op->reason = g_strdup (reason);
  g_mutex_lock (&sink->lock);
  context = sink->context ? g_main_context_ref (sink->context) : NULL;
  g_mutex_unlock (&sink->lock);
  if (!context) {
    remove_op_free (op);
    return;
  }
  g_main_context_invoke_full (context, G_PRIORITY_DEFAULT, remove_op_run, op,
      remove_op_free);
  g_main_context_unref (context);
}

/* webrtcbin's thread */
static void
on_answered (WebRtcViewer * wv, const gchar * sdp, const gchar * error,
    gpointer data)
{
  Viewer *v = data;
  GstSpiceWebRtcSink *sink = v->sink;
  WebRtcHttpOffer *req;

  g_mutex_lock (&sink->lock);
  req = v->req;
  v->req = NULL;
  if (sdp) {
    v->ready = TRUE;
    /* the picture as it is, then refined, for the newcomer too */
    sink->refines = 0;
    sink->st_joined++;
  }
  g_mutex_unlock (&sink->lock);
  if (sdp) {
    GST_INFO_OBJECT (sink, "viewer %u (%s) answered", v->id, v->peer);
    if (req)
      webrtc_http_offer_answer (req, v->id, sdp);
    return;
  }
  GST_WARNING_OBJECT (sink, "viewer %u (%s): %s", v->id, v->peer, error);
  post_event (sink, FALSE, "refused", v->peer, "whep-answer", error);
  if (req)
    webrtc_http_offer_refuse (req, 400, error);
  viewer_remove_later (sink, v->id, error);
}

/* any thread: @ev upstream (to spicesrc) */
static void
send_upstream (GstSpiceWebRtcSink * sink, GstEvent * ev)
{
  gst_pad_push_event (GST_BASE_SINK_PAD (sink), ev);
}

/* any thread: a refused message of viewer @v */
static void
input_refused (Viewer * v, const gchar * reason)
{
  gchar *r = g_strconcat ("input-", reason, NULL);

  post_event (v->sink, TRUE, "bad-message", v->peer, r, NULL);
  g_free (r);
}

/* a data channel's thread: the viewer's window size becomes the size
 * asked of the desktop (the agent's monitors config; the last viewer to
 * say wins) */
static void
viewer_size (Viewer * v, const gchar * msg, gsize len)
{
  GstSpiceWebRtcSink *sink = v->sink;
  GstSpiceMonitor mon = { 0, 0, 0, 0 };
  const gchar *reason = NULL;
  gboolean changed;

  if (!webrtc_input_parse_size (msg, len, &mon.width, &mon.height, &reason)) {
    input_refused (v, reason);
    return;
  }
  g_mutex_lock (&sink->lock);
  changed = mon.width != sink->last_width || mon.height != sink->last_height;
  sink->last_width = mon.width;
  sink->last_height = mon.height;
  g_mutex_unlock (&sink->lock);
  if (!changed)
    return;
  GST_INFO_OBJECT (sink, "viewer %u asks for a %ux%u desktop", v->id,
      mon.width, mon.height);
  send_upstream (sink, gst_spice_event_new_monitors_config (&mon, 1));
}

/* any thread: a clipboard event of @action for the guest */
static void
send_clipboard (GstSpiceWebRtcSink * sink, GstSpiceClipboardAction action,
    GBytes * data)
{
  GstSpiceClipboard clip = { 0 };

  clip.action = action;
  clip.selection = VD_AGENT_CLIPBOARD_SELECTION_CLIPBOARD;
  clip.n_types = 1;
  clip.types[0] = VD_AGENT_CLIPBOARD_UTF8_TEXT;
  clip.type = VD_AGENT_CLIPBOARD_UTF8_TEXT;
  clip.data = data;
  send_upstream (sink, gst_spice_event_new_clipboard (TRUE, &clip));
}

/* a data channel's thread: the viewer's clipboard, which the guest gets
 * when it pastes (a grab now, the text on its request) */
static void
viewer_clipboard (Viewer * v, const gchar * msg, gsize len)
{
  GstSpiceWebRtcSink *sink = v->sink;
  const gchar *reason = NULL;
  GBytes *text = webrtc_input_parse_clipboard (msg, len, &reason);

  if (!text) {
    input_refused (v, reason);
    return;
  }
  g_mutex_lock (&sink->lock);
  g_clear_pointer (&sink->clip, g_bytes_unref);
  sink->clip = text;
  sink->clip_ours = TRUE;
  g_mutex_unlock (&sink->lock);
  GST_INFO_OBJECT (sink, "viewer %u's clipboard: %" G_GSIZE_FORMAT " bytes",
      v->id, g_bytes_get_size (text));
  send_clipboard (sink, GST_SPICE_CLIPBOARD_GRAB, NULL);
}

/* streaming thread: the guest's clipboard events */
static void
guest_clipboard (GstSpiceWebRtcSink * sink, const GstSpiceClipboard * clip)
{
  GBytes *ours = NULL;
  gboolean text = FALSE;
  guint i;

  if (clip->selection != VD_AGENT_CLIPBOARD_SELECTION_CLIPBOARD)
    return;
  switch (clip->action) {
    case GST_SPICE_CLIPBOARD_GRAB:
      for (i = 0; i < clip->n_types; i++)
        text |= clip->types[i] == VD_AGENT_CLIPBOARD_UTF8_TEXT;
      g_mutex_lock (&sink->lock);
      sink->clip_ours = FALSE;
      g_mutex_unlock (&sink->lock);
      /* the browsers get the text at once: they cannot ask later */
      if (text)
        send_clipboard (sink, GST_SPICE_CLIPBOARD_REQUEST, NULL);
      break;
    case GST_SPICE_CLIPBOARD_REQUEST:
      g_mutex_lock (&sink->lock);
      if (sink->clip_ours && sink->clip &&
          clip->type == VD_AGENT_CLIPBOARD_UTF8_TEXT)
        ours = g_bytes_ref (sink->clip);
      g_mutex_unlock (&sink->lock);
      /* an empty answer refuses what we do not have */
      if (!ours)
        ours = g_bytes_new_static ("", 0);
      send_clipboard (sink, GST_SPICE_CLIPBOARD_DATA, ours);
      g_bytes_unref (ours);
      break;
    case GST_SPICE_CLIPBOARD_DATA:{
      gsize size = clip->data ? g_bytes_get_size (clip->data) : 0;
      const gchar *d = clip->data ? g_bytes_get_data (clip->data, NULL) : "";
      GHashTableIter it;
      gpointer value;
      GList *viewers = NULL, *l;
      gchar *msg;

      if (clip->type != VD_AGENT_CLIPBOARD_UTF8_TEXT || size == 0)
        break;
      if (size > WEBRTC_INPUT_MAX_CLIPBOARD || !g_utf8_validate_len (d, size,
              NULL)) {
        GST_WARNING_OBJECT (sink, "the guest's clipboard (%" G_GSIZE_FORMAT
            " bytes) is not sent to browsers: above %u bytes or not UTF-8",
            size, WEBRTC_INPUT_MAX_CLIPBOARD);
        break;
      }
      msg = g_strdup_printf ("c %.*s", (gint) size, d);
      g_mutex_lock (&sink->lock);
      g_hash_table_iter_init (&it, sink->viewers);
      while (g_hash_table_iter_next (&it, NULL, &value)) {
        Viewer *v = value;

        if (v->ready && v->viewer)
          viewers = g_list_prepend (viewers, v->viewer);
      }
      /* sent under the lock: a viewer is freed on the context thread only
       * after it is out of the table */
      for (l = viewers; l; l = l->next)
        webrtc_viewer_send (l->data, msg);
      g_mutex_unlock (&sink->lock);
      GST_INFO_OBJECT (sink, "the guest's clipboard (%" G_GSIZE_FORMAT
          " bytes) to %u viewers", size, g_list_length (viewers));
      g_list_free (viewers);
      g_free (msg);
      break;
    }
    default:
      break;
  }
}

/* streaming thread: downstream events; the guest's clipboard is ours */
static gboolean
gst_spice_webrtc_sink_event (GstBaseSink * bsink, GstEvent * event)
{
  GstSpiceWebRtcSink *sink = GST_SPICE_WEBRTC_SINK (bsink);
  GstSpiceClipboard clip;

  if (gst_spice_event_parse_clipboard (event, &clip)) {
    guest_clipboard (sink, &clip);
    gst_spice_clipboard_clear (&clip);
    gst_event_unref (event);
    return TRUE;
  }
  return GST_BASE_SINK_CLASS (parent_class)->event (bsink, event);
}

/* a data channel's thread: one input message */
static void
on_input (WebRtcViewer * wv, const gchar * msg, gsize len, gpointer data)
{
  Viewer *v = data;
  GstSpiceWebRtcSink *sink = v->sink;
  const gchar *reason = NULL;
  GstEvent *ev = NULL;
  WebRtcInputKind kind = webrtc_input_kind (msg, len);
  gboolean flood;

  g_mutex_lock (&sink->lock);
  flood = ++v->inputs_this_second > MAX_INPUT_PER_SECOND;
  if (flood)
    sink->st_inputs_dropped++;
  else if (kind == WEBRTC_INPUT_NAVIGATION)
    ev = webrtc_input_parse (&v->input, msg, len, sink->width, sink->height,
        &reason);
  if (!flood)
    sink->st_inputs++;
  g_mutex_unlock (&sink->lock);
  if (flood) {
    post_event (sink, TRUE, "flood", v->peer, "input-rate", NULL);
  } else if (kind == WEBRTC_INPUT_SIZE) {
    viewer_size (v, msg, len);
  } else if (kind == WEBRTC_INPUT_CLIPBOARD) {
    viewer_clipboard (v, msg, len);
  } else if (ev) {
    GST_LOG_OBJECT (sink, "viewer %u: %" GST_PTR_FORMAT, v->id, ev);
    send_upstream (sink, ev);
  } else {
    input_refused (v, reason);
  }
}

/* any of a viewer's threads */
static void
on_ended (WebRtcViewer * wv, const gchar * reason, gpointer data)
{
  Viewer *v = data;

  viewer_remove_later (v->sink, v->id, reason);
}

static const WebRtcViewerCallbacks viewer_callbacks = {
  on_answered, on_input, on_ended,
};

/* any thread: a comma-separated list as a vector (NULL if empty) */
static gchar **
split_list (const gchar * list)
{
  gchar **parts, **out;
  GPtrArray *a;
  guint i;

  if (!list || !*list)
    return NULL;
  parts = g_strsplit (list, ",", -1);
  a = g_ptr_array_new ();
  for (i = 0; parts[i]; i++) {
    gchar *p = g_strstrip (parts[i]);

    if (*p)
      g_ptr_array_add (a, g_strdup (p));
  }
  g_strfreev (parts);
  if (a->len == 0) {
    g_ptr_array_free (a, TRUE);
    return NULL;
  }
  g_ptr_array_add (a, NULL);
  out = (gchar **) g_ptr_array_free (a, FALSE);
  return out;
}

/* any thread: where ICE may offer candidates (NULL: everywhere) */
static gchar **
ice_addresses (GstSpiceWebRtcSink * sink)
{
  gchar **list;

  GST_OBJECT_LOCK (sink);
  list = split_list (sink->ice_addresses);
  if (!list && g_strcmp0 (sink->address, "0.0.0.0") &&
      g_strcmp0 (sink->address, "::")) {
    list = g_new0 (gchar *, 2);
    list[0] = g_strdup (sink->address);
  }
  GST_OBJECT_UNLOCK (sink);
  return list;
}

/* context thread: a viewer's offer */
static void
on_offer (WebRtcHttpOffer * req, GstSDPMessage * sdp, const gchar * peer,
    gpointer data)
{
  GstSpiceWebRtcSink *sink = data;
  WebRtcViewerConfig config = { 0 };
  gchar *encoder, *stun, **ice;
  GstCaps *caps = NULL;
  GError *err = NULL;
  WebRtcViewer *viewer;
  Viewer *v;
  guint max;

  GST_OBJECT_LOCK (sink);
  max = sink->max_viewers;
  encoder = g_strdup (sink->encoder);
  stun = g_strdup (sink->stun_server);
  config.max_bitrate = sink->max_bitrate;
  GST_OBJECT_UNLOCK (sink);

  g_mutex_lock (&sink->lock);
  if (g_hash_table_size (sink->viewers) >= max || !sink->caps || sink->stopping) {
    gboolean stopping = sink->stopping, full = sink->caps && !stopping;

    sink->st_refused++;
    g_mutex_unlock (&sink->lock);
    gst_sdp_message_free (sdp);
    g_free (encoder);
    g_free (stun);
    if (full) {
      gchar *detail = g_strdup_printf ("%u viewers", max);

      post_event (sink, FALSE, "refused", peer, "max-viewers", detail);
      g_free (detail);
      webrtc_http_offer_refuse (req, 503, "every viewer slot is taken");
    } else {
      webrtc_http_offer_refuse (req, 503, stopping ?
          "the gateway stops" : "no picture yet");
    }
    return;
  }
  v = g_new0 (Viewer, 1);
  v->sink = sink;
  v->id = ++sink->next_id;
  v->peer = g_strdup (peer);
  v->req = req;
  caps = gst_caps_ref (sink->caps);
  if (sink->audio_caps)
    config.audio_caps = gst_caps_ref (sink->audio_caps);
  g_hash_table_insert (sink->viewers, GUINT_TO_POINTER (v->id), v);
  g_mutex_unlock (&sink->lock);

  ice = ice_addresses (sink);
  config.encoder = encoder;
  config.ice_addresses = (const gchar * const *) ice;
  config.stun_server = stun;
  viewer = webrtc_viewer_new (v->id, &config, caps, sdp, &viewer_callbacks, v,
      &err);
  /* its callbacks may come before this: they read it under the lock */
  g_mutex_lock (&sink->lock);
  v->viewer = viewer;
  g_mutex_unlock (&sink->lock);
  gst_caps_unref (caps);
  if (config.audio_caps)
    gst_caps_unref (config.audio_caps);
  g_strfreev (ice);
  g_free (encoder);
  g_free (stun);
  if (!v->viewer) {
    GST_WARNING_OBJECT (sink, "viewer from %s: %s", peer, err->message);
    post_event (sink, FALSE, "refused", peer, "whep-offer", err->message);
    g_mutex_lock (&sink->lock);
    g_hash_table_steal (sink->viewers, GUINT_TO_POINTER (v->id));
    req = v->req;
    v->req = NULL;
    g_mutex_unlock (&sink->lock);
    if (req)
      webrtc_http_offer_refuse (req, 400, err->message);
    g_clear_error (&err);
    viewer_free (sink, v, "not made");
    return;
  }
  GST_INFO_OBJECT (sink, "viewer %u from %s", v->id, peer);
}

/* context thread: DELETE /whep/ID */
static gboolean
on_end (guint id, const gchar * peer, gpointer data)
{
  return viewer_remove (data, id, "deleted by the viewer");
}

/* context thread */
static void
on_refused (const gchar * peer, gboolean security, const gchar * reason,
    const gchar * detail, gpointer data)
{
  /* the event each of webrtchttp.c's reasons is, and whether it is a
   * security one (the fail2ban filter counts those: a wrong token, a bad
   * request, many connections from one address) */
  static const struct
  {
    const gchar *reason, *event;
    gboolean security;
  } events[] = {
    {"whep-token", "wrong-ticket", TRUE},
    {"whep-origin", "refused", TRUE},
    {"http-connections", "refused", TRUE},
    {"http-timeout", "timeout", FALSE},
  };
  GstSpiceWebRtcSink *sink = data;
  const gchar *event = "bad-message";
  guint i;

  /* anything else is a malformed request */
  for (i = 0; i < G_N_ELEMENTS (events); i++)
    if (g_str_equal (reason, events[i].reason)) {
      event = events[i].event;
      security = events[i].security;
    }
  if (g_str_equal (event, "bad-message"))
    security = TRUE;
  g_mutex_lock (&sink->lock);
  sink->st_refused++;
  g_mutex_unlock (&sink->lock);
  post_event (sink, security, event, peer, reason, detail);
}

static const WebRtcHttpCallbacks http_callbacks = {
  on_offer, on_end, on_refused,
};

/* context thread: the picture rests: refine, then keep alive; the rate
 * of every viewer from its reports */
static gboolean
on_tick (gpointer data)
{
  GstSpiceWebRtcSink *sink = data;
  gint64 now = g_get_monotonic_time ();
  GHashTableIter it;
  gpointer value;
  GList *poll = NULL, *l;
  GSList *reports = NULL, *r;
  gboolean second;

  g_mutex_lock (&sink->lock);
  second = ++sink->ticks % RATE_TICKS == 0;
  if (second)
    gst_spice_report_limit_flush (sink->reports, now, keep_report, &reports);
  if (sink->last && now - sink->last_frame_us >= REST_US) {
    if (sink->refines < REFINE_FRAMES) {
      sink->refines++;
      sink->st_refines++;
      push_all (sink);
    } else if (now - sink->last_push_us >= KEEPALIVE_US) {
      push_all (sink);
    }
  }
  g_hash_table_iter_init (&it, sink->viewers);
  while (g_hash_table_iter_next (&it, NULL, &value)) {
    Viewer *v = value;

    if (second) {
      v->inputs_this_second = 0;
      if (v->ready && v->viewer)
        poll = g_list_prepend (poll, v->viewer);
    }
  }
  g_mutex_unlock (&sink->lock);
  for (r = reports; r; r = r->next)
    post_report (r->data, sink);
  g_slist_free (reports);
  /* viewers are freed on this thread only: they outlive this loop */
  for (l = poll; l; l = l->next)
    webrtc_viewer_poll_rate (l->data);
  g_list_free (poll);
  return G_SOURCE_CONTINUE;
}

/* --------------------------------------------------- context thread */

static gpointer
context_thread (gpointer data)
{
  GstSpiceWebRtcSink *sink = data;

  g_main_context_push_thread_default (sink->context);
  g_main_loop_run (sink->loop);
  g_main_context_pop_thread_default (sink->context);
  return NULL;
}

typedef struct
{
  GstSpiceWebRtcSink *sink;
    gboolean (*func) (GstSpiceWebRtcSink * sink, GError ** error);
  GError *error;
  gboolean ret, done;
  GMutex lock;
  GCond cond;
} SyncCall;

static gboolean
sync_call_run (gpointer data)
{
  SyncCall *c = data;
  gboolean ret = c->func (c->sink, &c->error);

  g_mutex_lock (&c->lock);
  c->ret = ret;
  c->done = TRUE;
  g_cond_signal (&c->cond);
  g_mutex_unlock (&c->lock);
  return G_SOURCE_REMOVE;
}

/* state-change thread: @func runs on the context thread; its result */
static gboolean
sync_call (GstSpiceWebRtcSink * sink,
    gboolean (*func) (GstSpiceWebRtcSink *, GError **), GError ** error)
{
  SyncCall c = { sink, func, NULL, FALSE, FALSE };

  g_mutex_init (&c.lock);
  g_cond_init (&c.cond);
  g_main_context_invoke (sink->context, sync_call_run, &c);
  g_mutex_lock (&c.lock);
  while (!c.done)
    g_cond_wait (&c.cond, &c.lock);
  g_mutex_unlock (&c.lock);
  g_mutex_clear (&c.lock);
  g_cond_clear (&c.cond);
  if (c.error)
    g_propagate_error (error, c.error);
  return c.ret;
}

/* context thread: listen */
static gboolean
ctx_start (GstSpiceWebRtcSink * sink, GError ** error)
{
  WebRtcHttpConfig config = { 0 };
  gchar *address, **origins;

  GST_OBJECT_LOCK (sink);
  address = g_strdup (sink->address);
  config.port = sink->port;
  origins = split_list (sink->allowed_origins);
  GST_OBJECT_UNLOCK (sink);
  config.address = address;
  config.token = sink->token;
  config.allowed_origins = (const gchar * const *) origins;
  sink->http = webrtc_http_new (&config, &http_callbacks, sink, error);
  g_free (address);
  g_strfreev (origins);
  if (!sink->http)
    return FALSE;
  GST_OBJECT_LOCK (sink);
  sink->bound_port = webrtc_http_port (sink->http);
  GST_OBJECT_UNLOCK (sink);
  sink->tick = g_timeout_source_new (TICK_MS);
  g_source_set_callback (sink->tick, on_tick, sink, NULL);
  g_source_attach (sink->tick, sink->context);
  return TRUE;
}

/* context thread: every viewer ends (no callback of theirs after it) */
static gboolean
ctx_stop (GstSpiceWebRtcSink * sink, GError ** error)
{
  GList *viewers, *l;

  if (sink->tick) {
    g_source_destroy (sink->tick);
    g_source_unref (sink->tick);
    sink->tick = NULL;
  }
  g_mutex_lock (&sink->lock);
  sink->stopping = TRUE;
  viewers = g_hash_table_get_values (sink->viewers);
  g_hash_table_steal_all (sink->viewers);
  g_mutex_unlock (&sink->lock);
  for (l = viewers; l; l = l->next)
    viewer_free (sink, l->data, "the element stops");
  g_list_free (viewers);
  return TRUE;
}

/* context thread, after ctx_stop() and the answers it queued: the server
 * stops */
static gboolean
ctx_finish (GstSpiceWebRtcSink * sink, GError ** error)
{
  if (sink->http) {
    webrtc_http_free (sink->http);
    sink->http = NULL;
  }
  return TRUE;
}

/* state-change thread: NULL -> READY */
static gboolean
start_serving (GstSpiceWebRtcSink * sink)
{
  GError *err = NULL;
  gchar *path, *address;
  gboolean disable, loopback;
  GInetAddress *inet;

  GST_OBJECT_LOCK (sink);
  path = g_strdup (sink->password_file);
  address = g_strdup (sink->address);
  disable = sink->disable_token;
  GST_OBJECT_UNLOCK (sink);
  g_clear_pointer (&sink->token, g_free);
  if (path && *path) {
    sink->token = gst_spice_read_password_file (path, &err);
    if (!sink->token) {
      gst_spice_post_password_file_error (GST_ELEMENT (sink), err);
      g_clear_error (&err);
      g_free (path);
      g_free (address);
      return FALSE;
    }
  }
  inet = g_inet_address_new_from_string (address);
  loopback = inet && g_inet_address_get_is_loopback (inet);
  g_clear_object (&inet);
  if (!loopback && !sink->token && !disable) {
    GST_ELEMENT_ERROR (sink, RESOURCE, SETTINGS,
        ("Refusing to serve browsers on %s without a token: set "
            "password-file, or disable-token=true", address), (NULL));
    g_free (path);
    g_free (address);
    return FALSE;
  }
  g_free (path);

  sink->context = g_main_context_new ();
  sink->loop = g_main_loop_new (sink->context, FALSE);
  sink->thread = g_thread_new ("spicewebrtcsink", context_thread, sink);
  if (!sync_call (sink, ctx_start, &err)) {
    GST_ELEMENT_ERROR (sink, RESOURCE, OPEN_READ_WRITE,
        ("Could not serve browsers: %s", err->message),
        ("address %s port %u", address, sink->port));
    g_clear_error (&err);
    g_free (address);
    return FALSE;
  }
  g_free (address);
  g_object_notify (G_OBJECT (sink), "bound-port");
  return TRUE;
}

/* state-change thread: READY -> NULL (or a failed start) */
static void
stop_serving (GstSpiceWebRtcSink * sink)
{
  GMainContext *context;

  if (!sink->context)
    return;
  sync_call (sink, ctx_stop, NULL);
  sync_call (sink, ctx_finish, NULL);
  g_main_loop_quit (sink->loop);
  g_thread_join (sink->thread);
  sink->thread = NULL;
  g_main_loop_unref (sink->loop);
  sink->loop = NULL;
  g_mutex_lock (&sink->lock);
  context = sink->context;
  sink->context = NULL;
  sink->stopping = FALSE;
  gst_buffer_replace (&sink->last, NULL);
  g_mutex_unlock (&sink->lock);
  g_main_context_unref (context);
  g_clear_pointer (&sink->token, g_free);
}

static GstStateChangeReturn
gst_spice_webrtc_sink_change_state (GstElement * element,
    GstStateChange transition)
{
  GstSpiceWebRtcSink *sink = GST_SPICE_WEBRTC_SINK (element);
  GstStateChangeReturn ret;

  if (transition == GST_STATE_CHANGE_NULL_TO_READY && !start_serving (sink)) {
    stop_serving (sink);
    return GST_STATE_CHANGE_FAILURE;
  }
  ret = GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
  if (transition == GST_STATE_CHANGE_READY_TO_NULL)
    stop_serving (sink);
  return ret;
}

/* ------------------------------------------------------- streaming */

/* streaming thread */
static gboolean
gst_spice_webrtc_sink_set_caps (GstBaseSink * bsink, GstCaps * caps)
{
  GstSpiceWebRtcSink *sink = GST_SPICE_WEBRTC_SINK (bsink);
  GstVideoInfo info;
  GHashTableIter it;
  gpointer value;

  if (!gst_video_info_from_caps (&info, caps))
    return FALSE;
  g_mutex_lock (&sink->lock);
  gst_caps_replace (&sink->caps, caps);
  sink->width = GST_VIDEO_INFO_WIDTH (&info);
  sink->height = GST_VIDEO_INFO_HEIGHT (&info);
  g_hash_table_iter_init (&it, sink->viewers);
  while (g_hash_table_iter_next (&it, NULL, &value)) {
    Viewer *v = value;

    if (v->viewer)
      webrtc_viewer_set_caps (v->viewer, caps);
  }
  g_mutex_unlock (&sink->lock);
  GST_INFO_OBJECT (sink, "%" GST_PTR_FORMAT, caps);
  return TRUE;
}

/* streaming thread: a new picture for every viewer */
static GstFlowReturn
gst_spice_webrtc_sink_render (GstBaseSink * bsink, GstBuffer * buf)
{
  GstSpiceWebRtcSink *sink = GST_SPICE_WEBRTC_SINK (bsink);

  g_mutex_lock (&sink->lock);
  gst_buffer_replace (&sink->last, buf);
  sink->last_frame_us = g_get_monotonic_time ();
  sink->refines = 0;
  sink->st_frames++;
  push_all (sink);
  g_mutex_unlock (&sink->lock);
  return GST_FLOW_OK;
}

/* ------------------------------------------------------------ sound */

/* the audio pad's streaming thread: an Opus packet for every viewer */
static GstFlowReturn
audio_chain (GstPad * pad, GstObject * parent, GstBuffer * buf)
{
  GstSpiceWebRtcSink *sink = GST_SPICE_WEBRTC_SINK (parent);
  GHashTableIter it;
  gpointer value;

  g_mutex_lock (&sink->lock);
  g_hash_table_iter_init (&it, sink->viewers);
  while (g_hash_table_iter_next (&it, NULL, &value)) {
    Viewer *v = value;

    if (v->ready && v->viewer)
      webrtc_viewer_push_audio (v->viewer, buf);
  }
  g_mutex_unlock (&sink->lock);
  gst_buffer_unref (buf);
  return GST_FLOW_OK;
}

/* the audio pad's streaming thread: its caps; the rest is the video's to
 * decide (EOS, flushes) */
static gboolean
audio_event (GstPad * pad, GstObject * parent, GstEvent * event)
{
  GstSpiceWebRtcSink *sink = GST_SPICE_WEBRTC_SINK (parent);

  if (GST_EVENT_TYPE (event) == GST_EVENT_CAPS) {
    GstCaps *caps;

    gst_event_parse_caps (event, &caps);
    g_mutex_lock (&sink->lock);
    gst_caps_replace (&sink->audio_caps, caps);
    g_mutex_unlock (&sink->lock);
    GST_INFO_OBJECT (sink, "sound: %" GST_PTR_FORMAT
        " (for viewers that come from now on)", caps);
  }
  gst_event_unref (event);
  return TRUE;
}

/* application thread */
static GstPad *
gst_spice_webrtc_sink_request_new_pad (GstElement * element,
    GstPadTemplate * templ, const gchar * name, const GstCaps * caps)
{
  GstSpiceWebRtcSink *sink = GST_SPICE_WEBRTC_SINK (element);
  GstPad *pad;

  GST_OBJECT_LOCK (sink);
  if (sink->audio_pad) {
    GST_OBJECT_UNLOCK (sink);
    GST_WARNING_OBJECT (sink, "one audio pad only");
    return NULL;
  }
  pad = gst_pad_new_from_template (templ, "audio");
  sink->audio_pad = pad;
  GST_OBJECT_UNLOCK (sink);
  gst_pad_set_chain_function (pad, audio_chain);
  gst_pad_set_event_function (pad, audio_event);
  gst_pad_set_active (pad, TRUE);
  gst_element_add_pad (element, pad);
  return pad;
}

/* application thread */
static void
gst_spice_webrtc_sink_release_pad (GstElement * element, GstPad * pad)
{
  GstSpiceWebRtcSink *sink = GST_SPICE_WEBRTC_SINK (element);

  GST_OBJECT_LOCK (sink);
  if (pad == sink->audio_pad)
    sink->audio_pad = NULL;
  GST_OBJECT_UNLOCK (sink);
  g_mutex_lock (&sink->lock);
  gst_caps_replace (&sink->audio_caps, NULL);
  g_mutex_unlock (&sink->lock);
  gst_element_remove_pad (element, pad);
}

/* ----------------------------------------------------------- GObject */

static GstStructure *
make_stats (GstSpiceWebRtcSink * sink)
{
  GstStructure *s;
  GValue list = G_VALUE_INIT;
  GHashTableIter it;
  gpointer value;

  g_value_init (&list, GST_TYPE_LIST);
  g_mutex_lock (&sink->lock);
  s = gst_structure_new ("spicewebrtcsink-stats",
      "viewers", G_TYPE_UINT, g_hash_table_size (sink->viewers),
      "joined", G_TYPE_UINT64, sink->st_joined,
      "refused", G_TYPE_UINT64, sink->st_refused,
      "frames", G_TYPE_UINT64, sink->st_frames,
      "refines", G_TYPE_UINT64, sink->st_refines,
      "inputs", G_TYPE_UINT64, sink->st_inputs,
      "inputs-dropped", G_TYPE_UINT64, sink->st_inputs_dropped, NULL);
  g_hash_table_iter_init (&it, sink->viewers);
  while (g_hash_table_iter_next (&it, NULL, &value)) {
    Viewer *v = value;
    GValue item = G_VALUE_INIT;

    if (!v->viewer)
      continue;
    g_value_init (&item, GST_TYPE_STRUCTURE);
    g_value_take_boxed (&item, webrtc_viewer_stats (v->viewer));
    gst_value_list_append_and_take_value (&list, &item);
  }
  g_mutex_unlock (&sink->lock);
  gst_structure_take_value (s, "viewer-stats", &list);
  return s;
}

static void
gst_spice_webrtc_sink_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstSpiceWebRtcSink *sink = GST_SPICE_WEBRTC_SINK (object);

  GST_OBJECT_LOCK (sink);
  switch (prop_id) {
    case PROP_ADDRESS:
      g_free (sink->address);
      sink->address = g_value_dup_string (value);
      if (!sink->address)
        sink->address = g_strdup (DEFAULT_ADDRESS);
      break;
    case PROP_PORT:
      sink->port = g_value_get_uint (value);
      break;
    case PROP_ENCODER:
      g_free (sink->encoder);
      sink->encoder = g_value_dup_string (value);
      /* empty: the default (pipelines leave ENCODER empty) */
      if (!sink->encoder || !*sink->encoder) {
        g_free (sink->encoder);
        sink->encoder = g_strdup (DEFAULT_ENCODER);
      }
      break;
    case PROP_PASSWORD_FILE:
      g_free (sink->password_file);
      sink->password_file = g_value_dup_string (value);
      break;
    case PROP_DISABLE_TOKEN:
      sink->disable_token = g_value_get_boolean (value);
      break;
    case PROP_ALLOWED_ORIGINS:
      g_free (sink->allowed_origins);
      sink->allowed_origins = g_value_dup_string (value);
      break;
    case PROP_ICE_ADDRESSES:
      g_free (sink->ice_addresses);
      sink->ice_addresses = g_value_dup_string (value);
      break;
    case PROP_STUN_SERVER:
      g_free (sink->stun_server);
      sink->stun_server = g_value_dup_string (value);
      break;
    case PROP_MAX_VIEWERS:
      sink->max_viewers = g_value_get_uint (value);
      break;
    case PROP_MAX_BITRATE:
      sink->max_bitrate = g_value_get_uint (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (sink);
}

static void
gst_spice_webrtc_sink_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstSpiceWebRtcSink *sink = GST_SPICE_WEBRTC_SINK (object);

  if (prop_id == PROP_STATS) {
    g_value_take_boxed (value, make_stats (sink));
    return;
  }
  GST_OBJECT_LOCK (sink);
  switch (prop_id) {
    case PROP_ADDRESS:
      g_value_set_string (value, sink->address);
      break;
    case PROP_PORT:
      g_value_set_uint (value, sink->port);
      break;
    case PROP_BOUND_PORT:
      g_value_set_uint (value, sink->bound_port);
      break;
    case PROP_ENCODER:
      g_value_set_string (value, sink->encoder);
      break;
    case PROP_PASSWORD_FILE:
      g_value_set_string (value, sink->password_file);
      break;
    case PROP_DISABLE_TOKEN:
      g_value_set_boolean (value, sink->disable_token);
      break;
    case PROP_ALLOWED_ORIGINS:
      g_value_set_string (value, sink->allowed_origins);
      break;
    case PROP_ICE_ADDRESSES:
      g_value_set_string (value, sink->ice_addresses);
      break;
    case PROP_STUN_SERVER:
      g_value_set_string (value, sink->stun_server);
      break;
    case PROP_MAX_VIEWERS:
      g_value_set_uint (value, sink->max_viewers);
      break;
    case PROP_MAX_BITRATE:
      g_value_set_uint (value, sink->max_bitrate);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (sink);
}

static void
gst_spice_webrtc_sink_finalize (GObject * object)
{
  GstSpiceWebRtcSink *sink = GST_SPICE_WEBRTC_SINK (object);

  g_free (sink->address);
  g_free (sink->encoder);
  g_free (sink->password_file);
  g_free (sink->allowed_origins);
  g_free (sink->ice_addresses);
  g_free (sink->stun_server);
  g_hash_table_unref (sink->viewers);
  gst_spice_report_limit_free (sink->reports);
  gst_caps_replace (&sink->caps, NULL);
  gst_buffer_replace (&sink->last, NULL);
  g_clear_pointer (&sink->clip, g_bytes_unref);
  gst_caps_replace (&sink->audio_caps, NULL);
  g_mutex_clear (&sink->lock);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_spice_webrtc_sink_init (GstSpiceWebRtcSink * sink)
{
  sink->address = g_strdup (DEFAULT_ADDRESS);
  sink->port = DEFAULT_PORT;
  sink->encoder = g_strdup (DEFAULT_ENCODER);
  sink->max_viewers = DEFAULT_MAX_VIEWERS;
  g_mutex_init (&sink->lock);
  sink->viewers = g_hash_table_new (NULL, NULL);
  sink->reports = gst_spice_report_limit_new (EVENT_INTERVAL_US, 64);
  /* frames are shown as they come: a live desktop, not a timeline */
  gst_base_sink_set_sync (GST_BASE_SINK (sink), FALSE);
  gst_base_sink_set_qos_enabled (GST_BASE_SINK (sink), FALSE);
}

static void
gst_spice_webrtc_sink_class_init (GstSpiceWebRtcSinkClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSinkClass *basesink_class = GST_BASE_SINK_CLASS (klass);
  GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY;

  GST_DEBUG_CATEGORY_INIT (gst_spice_webrtc_sink_debug, "spicewebrtcsink", 0,
      "SPICE desktops to browsers over WebRTC");

  gobject_class->set_property = gst_spice_webrtc_sink_set_property;
  gobject_class->get_property = gst_spice_webrtc_sink_get_property;
  gobject_class->finalize = gst_spice_webrtc_sink_finalize;

  /**
   * GstSpiceWebRtcSink:address:
   *
   * The IP address the page and WHEP are served on. A non-loopback
   * address needs #GstSpiceWebRtcSink:password-file or
   * #GstSpiceWebRtcSink:disable-token.
   */
  g_object_class_install_property (gobject_class, PROP_ADDRESS,
      g_param_spec_string ("address", "Address",
          "IP address to serve the viewer page and WHEP on; a non-loopback "
          "address needs password-file or disable-token", DEFAULT_ADDRESS, rw));
  g_object_class_install_property (gobject_class, PROP_PORT,
      g_param_spec_uint ("port", "Port",
          "TCP port of the page and WHEP (0: any free port, see bound-port)",
          0, 65535, DEFAULT_PORT, rw));
  g_object_class_install_property (gobject_class, PROP_BOUND_PORT,
      g_param_spec_uint ("bound-port", "Bound port",
          "The port listened on from READY (0 before)", 0, 65535, 0,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  /**
   * GstSpiceWebRtcSink:encoder:
   *
   * A launch description of each viewer's encoder, run inside a
   * spicestreamenc (which sets its rate): vp8enc, vp9enc, x264enc or
   * openh264enc (av1enc needs an AV1 RTP payloader, which GStreamer 1.22
   * does not have).
   */
  g_object_class_install_property (gobject_class, PROP_ENCODER,
      g_param_spec_string ("encoder", "Encoder",
          "Launch description of each viewer's encoder (vp8enc, vp9enc, "
          "x264enc, openh264enc)", DEFAULT_ENCODER, rw));
  g_object_class_install_property (gobject_class, PROP_PASSWORD_FILE,
      g_param_spec_string ("password-file", "Password file",
          "File whose first line viewers must send as a bearer token, read "
          "at start (none: no token asked for)", NULL, rw));
  g_object_class_install_property (gobject_class, PROP_DISABLE_TOKEN,
      g_param_spec_boolean ("disable-token", "Disable token",
          "Serve a non-loopback address without a token", FALSE, rw));
  g_object_class_install_property (gobject_class, PROP_ALLOWED_ORIGINS,
      g_param_spec_string ("allowed-origins", "Allowed origins",
          "Comma-separated origins (scheme://host[:port]) whose pages may "
          "ask for the picture; others are refused (403). None: not checked",
          NULL, rw));
  g_object_class_install_property (gobject_class, PROP_ICE_ADDRESSES,
      g_param_spec_string ("ice-addresses", "ICE addresses",
          "Comma-separated local addresses ICE may offer to viewers (none: "
          "address, or every address when address is 0.0.0.0 or ::)", NULL,
          rw));
  g_object_class_install_property (gobject_class, PROP_STUN_SERVER,
      g_param_spec_string ("stun-server", "STUN server",
          "stun://host:port asked for a server-reflexive candidate (none: "
          "no STUN)", NULL, rw));
  g_object_class_install_property (gobject_class, PROP_MAX_VIEWERS,
      g_param_spec_uint ("max-viewers", "Max viewers",
          "Viewers served at once; more are refused (503)", 1, 1024,
          DEFAULT_MAX_VIEWERS, rw));
  g_object_class_install_property (gobject_class, PROP_MAX_BITRATE,
      g_param_spec_uint ("max-bitrate", "Max bitrate",
          "Bit/s a viewer's encoder never exceeds (0: no ceiling but the "
          "link's)", 0, G_MAXUINT, 0, rw));
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "viewers, joined, refused, frames, refines, inputs, "
          "inputs-dropped and viewer-stats (one structure per viewer: id, "
          "state, frames, bytes-sent, bitrate, fraction-lost, rtt-ms)",
          GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  element_class->change_state = gst_spice_webrtc_sink_change_state;
  element_class->request_new_pad = gst_spice_webrtc_sink_request_new_pad;
  element_class->release_pad = gst_spice_webrtc_sink_release_pad;
  basesink_class->set_caps = gst_spice_webrtc_sink_set_caps;
  basesink_class->render = gst_spice_webrtc_sink_render;
  basesink_class->event = gst_spice_webrtc_sink_event;

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &audio_template);
  gst_element_class_set_static_metadata (element_class,
      "SPICE WebRTC sink", "Sink/Network/Video",
      "Serves its video to web browsers over WebRTC (WHEP signalling, a "
      "viewer page at http://ADDRESS:PORT/) and sends their input "
      "upstream as navigation events. Example: gst-launch-1.0 spicesrc "
      "uri=spice://127.0.0.1:5900 ! spicewebrtcsink port=8080",
      "gst-spice developers");
}
