/* spicestreamenc: the stream branch (one-frame queue + encoder) that
 * applies spice-rate to the encoder it creates
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
/**
 * SECTION:element-spicestreamenc
 * @title: spicestreamenc
 *
 * spicestreamenc is the stream branch between spicetiler's `stream` pad
 * and a `stream_%u` pad of spicesink: a one-frame leaky queue
 * (`max-size-buffers=1 leaky=downstream`, so that a slow encoder or link
 * drops stream frames instead of queueing them) followed by the encoder
 * given in #GstSpiceStreamEnc:encoder, a gst-launch description such as
 * `vp8enc deadline=1` or `x264enc tune=zerolatency ! video/x-h264,
 * stream-format=byte-stream,alignment=au`. The description is built when
 * the element goes from NULL to READY; a description that does not parse,
 * holds no element of class Encoder, or makes what the element the bin is
 * linked to never takes (`av1enc` before spicesink, which takes no AV1),
 * is an element error that names the cause.
 *
 * The bin owns its encoder, so it is the one that sets its rate: the
 * `spice-rate` event that spicesink sends upstream when a client's link
 * estimate changes is applied to the encoder on its way through, then
 * continues upstream (spicetiler drops stream frames and scales the
 * picture from it). Known encoders:
 *
 * | encoder | property | spice-rate bitrate (bit/s) becomes |
 * |---|---|---|
 * | vp8enc, vp9enc | `target-bitrate` | bit/s, rounded down to kbit/s |
 * | x264enc | `bitrate` | kbit/s |
 * | openh264enc | `bitrate` | bit/s |
 * | av1enc | `target-bitrate` | kbit/s |
 * | jpegenc | `quality` | q = (q0 + 25) × target / R − 25 in [10, q0]; R = the bin's own output rate measured at q0 |
 *
 * The value the description set is the ceiling: the bin never sets more.
 * A bitrate of 0 (unknown) and the PAUSED→READY change bring the
 * description's value back. With any other encoder the event passes on
 * unapplied (logged once). #GstSpiceStreamEnc:applied-value,
 * #GstSpiceStreamEnc:applied-bitrate and #GstSpiceStreamEnc:stats show
 * what is in force.
 *
 * An encoder that makes JPEG (jpegenc, or any whose output is image/jpeg)
 * gets its input in full-range BT.601 (colorimetry `1:4:0:0`): SPICE
 * clients decode MJPEG as JFIF, so limited-range input would show white as
 * 235 and black as 16. The bin asks for that range in caps queries on its
 * sink pad; spicetiler converts to it directly. Other encoders keep the
 * default of their input (limited range, as their decoders assume).
 *
 * Caps reach the encoder with the first frame that follows them, not
 * before: spicetiler announces its surface's size when its input starts
 * and the stream's size with the stream's first frame, and an encoder set
 * up for caps that no frame ever comes in costs memory for nothing
 * (vp8enc: about 11 MiB for 1280x800, kept as the process's peak). The
 * segment after held caps waits with them; GAP events that come meanwhile
 * (or before the encoder's first caps) stop in the bin.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 videotestsrc is-live=true pattern=ball ! spicetiler name=t \
 *     t.draw ! s.draw \
 *     t.stream ! spicestreamenc encoder="vp8enc deadline=1 target-bitrate=2000000" ! s.stream_0 \
 *     spicesink name=s port=5910
 * ]|
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include <gst/spice/gstspice.h>

#include "gstspicestreamenc.h"
#include "streamencrate.h"

/* full-range BT.601 YCbCr, as JFIF decoders expect */
#define JFIF_COLORIMETRY "1:4:0:0"

GST_DEBUG_CATEGORY_STATIC (gst_spice_stream_enc_debug);
#define GST_CAT_DEFAULT gst_spice_stream_enc_debug

#define DEFAULT_ENCODER "vp8enc deadline=1 cpu-used=16 end-usage=cbr " \
    "target-bitrate=2000000 keyframe-max-dist=600 lag-in-frames=0 " \
    "error-resilient=default threads=1"

/* The output is measured over windows of at least this long and this many
 * frames. JPEG's reference is the mean frame size at the description's
 * quality: unlike bytes per second it does not depend on how long a slow
 * link makes each frame wait downstream. */
#define RATE_WINDOW_US     G_TIME_SPAN_SECOND
#define RATE_WINDOW_FRAMES 3

enum
{
  PROP_0,
  PROP_ENCODER,
  PROP_APPLIED_VALUE,
  PROP_APPLIED_BITRATE,
  PROP_STATS,
};

struct _GstSpiceStreamEnc
{
  GstBin parent;

  GstPad *sinkpad, *srcpad;     /* ghost pads: queue sink, encoder src */
  GstElement *queue;            /* the one-frame leaky queue */

  /* object lock */
  gchar *description;

  /* state-change thread only */
  GstElement *encbin;           /* what the description made, or NULL */
  gchar *built_description;

  /* lock: the rate state, shared by the event, streaming and application
   * threads; never held while an encoder property is set */
  GMutex lock;
  GstElement *encoder;          /* in encbin; NULL until built */
  gchar *encoder_factory;
  StreamEncKind kind;
  guint initial_value;          /* what the description set: the ceiling */
  guint applied_value;          /* in force */
  guint64 target_bps;           /* last spice-rate bitrate, 0 = none */
  guint rate_events, changes;
  gboolean warned_unknown;
  gboolean jpeg_dirty;          /* a quality change waits for the next frame */
  gboolean full_range;          /* the encoder makes JPEG: ask for JFIF input */
  gint rate_fps_n, rate_fps_d;  /* last spice-rate frame rate, 0 = none */
  gint64 window_start_us;
  guint64 window_bytes;
  guint window_frames;
  guint64 output_bps;           /* last window */
  gdouble output_fps;           /* last window */
  guint64 reference_frame_bytes;        /* JPEG: mean frame at initial_value */
  guint64 reference_bps;        /* JPEG: that frame size at the asked rate */

  /* the queue's streaming thread (reset at PAUSED->READY, stopped) */
  GList *held;                  /* caps no frame has followed yet, and the
                                 * sticky events after them */
  gboolean encoder_has_caps;
  gboolean releasing;           /* held is being pushed on */
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS ("video/x-raw(ANY)"));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

#define gst_spice_stream_enc_parent_class parent_class
G_DEFINE_TYPE (GstSpiceStreamEnc, gst_spice_stream_enc, GST_TYPE_BIN);
GST_ELEMENT_REGISTER_DEFINE_WITH_CODE (spicestreamenc, "spicestreamenc",
    GST_RANK_NONE, GST_TYPE_SPICE_STREAM_ENC,
    GST_DEBUG_CATEGORY_INIT (gst_spice_stream_enc_debug, "spicestreamenc", 0,
        "SPICE stream branch: queue + encoder, applies spice-rate"));

/* ------------------------------------------------- encoder properties */

/* any thread: @enc's integer property @name as a guint */
static gboolean
encoder_get_value (GstElement * enc, const gchar * name, guint * value)
{
  GParamSpec *ps = g_object_class_find_property (G_OBJECT_GET_CLASS (enc),
      name);

  if (ps && ps->value_type == G_TYPE_INT) {
    gint v;

    g_object_get (enc, name, &v, NULL);
    *value = (guint) MAX (v, 0);
    return TRUE;
  }
  if (ps && ps->value_type == G_TYPE_UINT) {
    g_object_get (enc, name, value, NULL);
    return TRUE;
  }
  return FALSE;
}

/* any thread, no lock held (the encoder may take its own): sets @enc's
 * integer property @name to @value, clamped to its range */
static void
encoder_set_value (GstElement * enc, const gchar * name, guint value)
{
  GParamSpec *ps = g_object_class_find_property (G_OBJECT_GET_CLASS (enc),
      name);

  if (ps && G_IS_PARAM_SPEC_INT (ps)) {
    GParamSpecInt *pi = G_PARAM_SPEC_INT (ps);
    gint64 v = CLAMP ((gint64) value, pi->minimum, pi->maximum);

    g_object_set (enc, name, (gint) v, NULL);
  } else if (ps && G_IS_PARAM_SPEC_UINT (ps)) {
    GParamSpecUInt *pu = G_PARAM_SPEC_UINT (ps);

    g_object_set (enc, name, CLAMP (value, pu->minimum, pu->maximum), NULL);
  }
}

/* -------------------------------------------------------- the encoder */

/* Application thread (NULL→READY): whether the encoder's output is JPEG,
 * which SPICE clients decode as JFIF (full-range BT.601 YCbCr). */
static gboolean
encoder_makes_jpeg (GstElement * enc)
{
  GstPad *pad = gst_element_get_static_pad (enc, "src");
  GstCaps *caps, *jpeg;
  gboolean ret;

  if (!pad)
    return FALSE;
  caps = gst_pad_get_pad_template_caps (pad);
  jpeg = gst_caps_new_empty_simple ("image/jpeg");
  ret = gst_caps_can_intersect (caps, jpeg) && !gst_caps_is_any (caps);
  gst_caps_unref (jpeg);
  gst_caps_unref (caps);
  gst_object_unref (pad);
  return ret;
}

static StreamEncKind
element_kind (GstElement * el)
{
  GstElementFactory *f = gst_element_get_factory (el);

  return streamenc_kind_from_factory (f ? GST_OBJECT_NAME (f) : NULL);
}

static gint
is_encoder (gconstpointer item, gconstpointer known_only)
{
  GstElement *el = g_value_get_object (item);
  const gchar *klass = gst_element_get_metadata (el,
      GST_ELEMENT_METADATA_KLASS);

  if (!klass || !strstr (klass, "Encoder"))
    return 1;
  return (known_only && element_kind (el) == STREAMENC_KIND_UNKNOWN);
}

/* state-change thread: the encoder in @bin, a known one if there is one,
 * else the first element of class Encoder; NULL if none (transfer full) */
static GstElement *
find_encoder (GstBin * bin)
{
  GValue item = G_VALUE_INIT;
  GstElement *enc = NULL;
  gint pass;

  for (pass = 0; pass < 2 && !enc; pass++) {
    GstIterator *it = gst_bin_iterate_recurse (bin);

    if (gst_iterator_find_custom (it, (GCompareFunc) is_encoder, &item,
            pass == 0 ? GINT_TO_POINTER (1) : NULL)) {
      enc = g_value_dup_object (&item);
      g_value_unset (&item);
    }
    gst_iterator_free (it);
  }
  return enc;
}

/* any thread: the media types of @caps, "a, b, c" (transfer full) */
static gchar *
caps_media_types (const GstCaps * caps)
{
  GString *out = g_string_new (NULL);
  guint i;

  for (i = 0; i < gst_caps_get_size (caps); i++) {
    const gchar *name = gst_structure_get_name (gst_caps_get_structure (caps,
            i));

    if (!strstr (out->str, name))
      g_string_append_printf (out, "%s%s", out->len ? ", " : "", name);
  }
  return g_string_free (out, FALSE);
}

/* state-change thread, NULL->READY: NULL when what @binsrc makes can go
 * to the element the bin's src pad is linked to (or it is not linked
 * yet), else why not (transfer full): an encoder whose output the peer
 * never takes would fail in its own negotiation, with CRITICALs and no
 * word of the cause (av1enc before spicesink, which takes no AV1). */
static gchar *
gst_spice_stream_enc_peer_refuses (GstSpiceStreamEnc * self, GstPad * binsrc)
{
  GstPad *peer = gst_pad_get_peer (self->srcpad);
  GstCaps *theirs, *ours;
  gchar *why = NULL, *made, *taken;

  if (!peer)
    return NULL;
  theirs = gst_pad_query_caps (peer, NULL);
  ours = gst_pad_query_caps (binsrc, NULL);
  if (!gst_caps_is_any (theirs) && !gst_caps_is_any (ours) &&
      !gst_caps_can_intersect (ours, theirs)) {
    made = caps_media_types (ours);
    taken = caps_media_types (theirs);
    why = g_strdup_printf ("makes %s, which %s:%s does not take (it takes %s)",
        made, GST_DEBUG_PAD_NAME (peer), taken);
    g_free (made);
    g_free (taken);
  }
  gst_caps_unref (theirs);
  gst_caps_unref (ours);
  gst_object_unref (peer);
  return why;
}

/* state-change thread: takes the encoder out (NULL state) */
static void
gst_spice_stream_enc_unbuild (GstSpiceStreamEnc * self)
{
  GstElement *enc;

  if (!self->encbin)
    return;
  gst_ghost_pad_set_target (GST_GHOST_PAD (self->srcpad), NULL);
  gst_element_set_state (self->encbin, GST_STATE_NULL);
  gst_bin_remove (GST_BIN (self), self->encbin);
  self->encbin = NULL;
  g_clear_pointer (&self->built_description, g_free);
  g_mutex_lock (&self->lock);
  enc = self->encoder;
  self->encoder = NULL;
  g_clear_pointer (&self->encoder_factory, g_free);
  self->kind = STREAMENC_KIND_UNKNOWN;
  self->full_range = FALSE;
  self->initial_value = self->applied_value = 0;
  g_mutex_unlock (&self->lock);
  if (enc)
    gst_object_unref (enc);
}

/* state-change thread, NULL->READY: builds the description (unless it is
 * built already) between the queue and the src pad; FALSE after posting
 * an element error that names the cause */
static gboolean
gst_spice_stream_enc_build (GstSpiceStreamEnc * self)
{
  GError *err = NULL;
  GstElement *bin, *enc;
  GstPad *binsink = NULL, *binsrc = NULL;
  const gchar *cause = NULL;
  gchar *refused;
  StreamEncKind kind;
  guint value = 0;
  gchar *desc;

  GST_OBJECT_LOCK (self);
  desc = g_strdup (self->description);
  GST_OBJECT_UNLOCK (self);
  if (self->encbin && g_strcmp0 (desc, self->built_description) == 0) {
    g_free (desc);
    return TRUE;
  }
  gst_spice_stream_enc_unbuild (self);
  if (!desc || !*desc) {
    GST_ELEMENT_ERROR (self, CORE, FAILED,
        ("spicestreamenc: no encoder description (property \"encoder\")"),
        (NULL));
    g_free (desc);
    return FALSE;
  }

  bin = gst_parse_bin_from_description_full (desc, TRUE, NULL,
      GST_PARSE_FLAG_FATAL_ERRORS, &err);
  if (err || !bin) {
    GST_ELEMENT_ERROR (self, CORE, FAILED,
        ("spicestreamenc: encoder \"%s\" does not parse: %s", desc,
            err ? err->message : "unknown error"), (NULL));
    g_clear_error (&err);
    if (bin)
      gst_object_unref (gst_object_ref_sink (bin));
    g_free (desc);
    return FALSE;
  }
  gst_object_ref_sink (bin);
  enc = find_encoder (GST_BIN (bin));
  binsink = gst_element_get_static_pad (bin, "sink");
  binsrc = gst_element_get_static_pad (bin, "src");
  if (!enc)
    cause = "holds no encoder (no element of class Encoder)";
  else if (!binsink)
    cause = "has no unlinked sink pad";
  else if (!binsrc)
    cause = "has no unlinked src pad";
  if (cause) {
    GST_ELEMENT_ERROR (self, CORE, FAILED, ("spicestreamenc: encoder \"%s\" "
            "%s", desc, cause), (NULL));
    goto fail;
  }
  if ((refused = gst_spice_stream_enc_peer_refuses (self, binsrc))) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("spicestreamenc: encoder "
            "\"%s\" %s", desc, refused), (NULL));
    g_free (refused);
    goto fail;
  }

  gst_bin_add (GST_BIN (self), bin);
  if (!gst_element_link_pads (self->queue, "src", bin, "sink") ||
      !gst_ghost_pad_set_target (GST_GHOST_PAD (self->srcpad), binsrc)) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("spicestreamenc: encoder "
            "\"%s\" cannot be linked", desc), (NULL));
    gst_ghost_pad_set_target (GST_GHOST_PAD (self->srcpad), NULL);
    gst_bin_remove (GST_BIN (self), bin);
    goto fail;
  }

  kind = element_kind (enc);
  if (kind != STREAMENC_KIND_UNKNOWN &&
      !encoder_get_value (enc, streamenc_kind_property (kind), &value))
    kind = STREAMENC_KIND_UNKNOWN;
  GST_INFO_OBJECT (self, "encoder %s (%s) from \"%s\"%s%s = %u",
      GST_OBJECT_NAME (enc), GST_OBJECT_NAME (gst_element_get_factory (enc)),
      desc, kind ? ": rate via " : ": rate not applied", kind ?
      streamenc_kind_property (kind) : "", value);
  self->encbin = bin;           /* the bin holds it now */
  gst_object_unref (bin);
  self->built_description = desc;
  g_mutex_lock (&self->lock);
  self->encoder = enc;
  self->encoder_factory = g_strdup (GST_OBJECT_NAME (gst_element_get_factory
          (enc)));
  self->kind = kind;
  self->full_range = encoder_makes_jpeg (enc);
  self->initial_value = self->applied_value = value;
  self->warned_unknown = FALSE;
  g_mutex_unlock (&self->lock);
  gst_object_unref (binsink);
  gst_object_unref (binsrc);
  return TRUE;

fail:
  if (enc)
    gst_object_unref (enc);
  if (binsink)
    gst_object_unref (binsink);
  if (binsrc)
    gst_object_unref (binsrc);
  gst_object_unref (bin);
  g_free (desc);
  return FALSE;
}

/* ------------------------------------------------------ rate control */

/* lock held: the output measurement starts over (the value changed) */
static void
rate_window_restart (GstSpiceStreamEnc * self)
{
  self->window_start_us = 0;
  self->window_bytes = 0;
  self->window_frames = 0;
}

/* lock held: JPEG's reference rate, the mean frame size at the initial
 * quality at the frame rate spice-rate asks for (else the one measured) */
static void
rate_update_reference (GstSpiceStreamEnc * self)
{
  gdouble fps = self->output_fps;

  if (self->rate_fps_n > 0 && self->rate_fps_d > 0)
    fps = (gdouble) self->rate_fps_n / self->rate_fps_d;
  self->reference_bps = (guint64) (self->reference_frame_bytes * 8 * fps);
}

/* lock held: what is in force in bit/s (JPEG: the model's estimate from
 * the reference; 0 while unknown) */
static guint64
applied_bps (GstSpiceStreamEnc * self)
{
  if (self->kind == STREAMENC_KIND_JPEG)
    return self->reference_bps ? streamenc_jpeg_expected_bps
        (self->initial_value, self->applied_value, self->reference_bps) : 0;
  return streamenc_value_to_bps (self->kind, self->applied_value);
}

/* any thread, lock held: records @value as applied; returns the encoder
 * to set it on (transfer full), or NULL if nothing changes */
static GstElement *
rate_take_value (GstSpiceStreamEnc * self, guint value)
{
  if (!self->encoder || value == self->applied_value)
    return NULL;
  GST_INFO_OBJECT (self, "spice-rate %" G_GUINT64_FORMAT " bit/s: %s %s "
      "%u -> %u (description: %u)", self->target_bps, self->encoder_factory,
      streamenc_kind_property (self->kind), self->applied_value, value,
      self->initial_value);
  self->applied_value = value;
  self->changes++;
  rate_window_restart (self);
  return gst_object_ref (self->encoder);
}

/* the thread that sends the event upstream (spicesink's control thread):
 * applies a spice-rate event to a bitrate encoder at once, or marks a
 * JPEG quality change for the next frame; the event passes on */
static GstPadProbeReturn
gst_spice_stream_enc_src_event_probe (GstPad * pad, GstPadProbeInfo * info,
    gpointer data)
{
  GstSpiceStreamEnc *self = data;
  GstEvent *event = GST_PAD_PROBE_INFO_EVENT (info);
  GstElement *enc = NULL;
  guint bitrate, value = 0;
  gint fps_n = 0, fps_d = 0;
  const gchar *prop = NULL;

  if (!gst_spice_event_parse_rate (event, &bitrate, &fps_n, &fps_d, NULL))
    return GST_PAD_PROBE_OK;
  g_mutex_lock (&self->lock);
  self->rate_events++;
  self->target_bps = bitrate;
  self->rate_fps_n = fps_n;
  self->rate_fps_d = fps_d;
  if (!self->encoder) {
    /* not built: nothing to apply to */
  } else if (self->kind == STREAMENC_KIND_UNKNOWN) {
    if (!self->warned_unknown)
      GST_WARNING_OBJECT (self, "spice-rate (%u bit/s): spicestreamenc does "
          "not know how to set the rate of %s; the event passes on "
          "unapplied", bitrate, self->encoder_factory);
    self->warned_unknown = TRUE;
  } else if (self->kind == STREAMENC_KIND_JPEG) {
    self->jpeg_dirty = TRUE;
  } else {
    prop = streamenc_kind_property (self->kind);
    value = streamenc_bitrate_value (self->kind, bitrate, self->initial_value);
    enc = rate_take_value (self, value);
  }
  g_mutex_unlock (&self->lock);
  /* spice-rate events come from one thread (spicesink's control thread), so
   * values are set in the order they were decided */
  if (enc) {
    encoder_set_value (enc, prop, value);
    gst_object_unref (enc);
  }
  return GST_PAD_PROBE_OK;
}

/* streaming thread, before a frame enters the encoder: applies a pending
 * JPEG quality (between frames: jpegenc is not in the middle of one), once
 * the output rate at the description's quality is known */
static GstPadProbeReturn
gst_spice_stream_enc_frame_probe (GstPad * pad, GstPadProbeInfo * info,
    gpointer data)
{
  GstSpiceStreamEnc *self = data;
  GstElement *enc = NULL;
  guint q = 0;

  g_mutex_lock (&self->lock);
  if (self->jpeg_dirty && self->kind == STREAMENC_KIND_JPEG &&
      (self->reference_frame_bytes || self->target_bps == 0)) {
    self->jpeg_dirty = FALSE;
    if (self->reference_frame_bytes)
      rate_update_reference (self);
    q = streamenc_jpeg_quality (self->initial_value, self->target_bps,
        self->reference_bps);
    enc = rate_take_value (self, q);
  }
  g_mutex_unlock (&self->lock);
  if (enc) {
    encoder_set_value (enc, "quality", q);
    gst_object_unref (enc);
  }
  return GST_PAD_PROBE_OK;
}

/* sticky events go downstream in the order of their types' values */
static gint
compare_sticky_order (gconstpointer a, gconstpointer b)
{
  GstEventType ta = GST_EVENT_TYPE (a), tb = GST_EVENT_TYPE (b);

  return ta < tb ? -1 : ta > tb ? 1 : 0;
}

/* the queue's streaming thread, between the queue and the encoder: caps,
 * and the sticky events after them (the segment), wait for a frame. The
 * pad took the dropped events as sent, so copies of them go on, in sticky
 * order, just before the frame. GAPs wait for nothing: they are dropped
 * while events are held or the encoder has no caps. */
static GstPadProbeReturn
gst_spice_stream_enc_caps_probe (GstPad * pad, GstPadProbeInfo * info,
    gpointer data)
{
  GstSpiceStreamEnc *self = data;
  GstEvent *event;
  GList *l;

  if (info->type & GST_PAD_PROBE_TYPE_BUFFER) {
    GList *held = g_steal_pointer (&self->held);

    self->releasing = TRUE;
    for (l = held; l; l = l->next)
      gst_pad_push_event (pad, gst_event_copy (l->data));
    self->releasing = FALSE;
    g_list_free_full (held, (GDestroyNotify) gst_event_unref);
    self->encoder_has_caps = TRUE;
    return GST_PAD_PROBE_OK;
  }
  event = GST_PAD_PROBE_INFO_EVENT (info);
  if (self->releasing)
    return GST_PAD_PROBE_OK;
  if (GST_EVENT_TYPE (event) == GST_EVENT_GAP)
    return self->held || !self->encoder_has_caps ? GST_PAD_PROBE_DROP :
        GST_PAD_PROBE_OK;
  if (GST_EVENT_TYPE (event) == GST_EVENT_EOS) {
    /* nothing is coming for the held caps any more */
    g_list_free_full (g_steal_pointer (&self->held),
        (GDestroyNotify) gst_event_unref);
    return GST_PAD_PROBE_OK;
  }
  if (!GST_EVENT_IS_STICKY (event) || !GST_EVENT_IS_SERIALIZED (event) ||
      (GST_EVENT_TYPE (event) != GST_EVENT_CAPS && !self->held))
    return GST_PAD_PROBE_OK;
  GST_LOG_OBJECT (self, "holding %" GST_PTR_FORMAT " until a frame", event);
  for (l = self->held; l; l = l->next)
    if (GST_EVENT_TYPE (l->data) == GST_EVENT_TYPE (event)) {
      gst_event_replace ((GstEvent **) & l->data, event);
      return GST_PAD_PROBE_DROP;
    }
  /* in sticky order (a stream-start goes before the held caps) */
  self->held = g_list_insert_sorted (self->held, gst_event_ref (event),
      compare_sticky_order);
  return GST_PAD_PROBE_DROP;
}

static gboolean
add_size (GstBuffer ** buf, guint idx, gpointer data)
{
  *(gsize *) data += gst_buffer_get_size (*buf);
  return TRUE;
}

/* streaming thread, encoder output: measures the bin's output rate (the
 * JPEG reference while the description's quality is in force) */
static GstPadProbeReturn
gst_spice_stream_enc_output_probe (GstPad * pad, GstPadProbeInfo * info,
    gpointer data)
{
  GstSpiceStreamEnc *self = data;
  gint64 now = g_get_monotonic_time ();
  gsize size = 0;

  if (info->type & GST_PAD_PROBE_TYPE_BUFFER_LIST)
    gst_buffer_list_foreach (GST_PAD_PROBE_INFO_BUFFER_LIST (info), add_size,
        &size);
  else
    size = gst_buffer_get_size (GST_PAD_PROBE_INFO_BUFFER (info));
  g_mutex_lock (&self->lock);
  if (self->window_frames == 0)
    self->window_start_us = now;
  self->window_bytes += size;
  self->window_frames++;
  if (self->window_frames >= RATE_WINDOW_FRAMES &&
      now - self->window_start_us >= RATE_WINDOW_US) {
    gint64 span = now - self->window_start_us;

    /* the first frame's time is not in the span: its bytes are counted
     * once per frame, its time is not */
    self->output_fps = (self->window_frames - 1) * (gdouble) G_USEC_PER_SEC /
        span;
    self->output_bps = (guint64) (self->window_bytes * 8 * self->output_fps /
        self->window_frames);
    if (self->kind == STREAMENC_KIND_JPEG &&
        self->applied_value == self->initial_value) {
      self->reference_frame_bytes = self->window_bytes / self->window_frames;
      rate_update_reference (self);
      GST_DEBUG_OBJECT (self, "mean frame at quality %u: %" G_GUINT64_FORMAT
          " bytes", self->initial_value, self->reference_frame_bytes);
      /* a quality waiting for the reference can now be set */
      if (self->target_bps)
        self->jpeg_dirty = TRUE;
    }
    rate_window_restart (self);
  }
  g_mutex_unlock (&self->lock);
  return GST_PAD_PROBE_OK;
}

/* state-change thread, PAUSED->READY (nothing streams): back to what the
 * description set, measurements forgotten */
static void
gst_spice_stream_enc_rate_reset (GstSpiceStreamEnc * self)
{
  GstElement *enc;
  const gchar *prop;
  guint value;

  g_mutex_lock (&self->lock);
  prop = streamenc_kind_property (self->kind);
  self->target_bps = 0;
  self->jpeg_dirty = FALSE;
  self->output_bps = self->reference_bps = self->reference_frame_bytes = 0;
  self->output_fps = 0;
  self->rate_fps_n = self->rate_fps_d = 0;
  rate_window_restart (self);
  value = self->initial_value;
  enc = rate_take_value (self, value);
  g_mutex_unlock (&self->lock);
  if (enc) {
    encoder_set_value (enc, prop, value);
    gst_object_unref (enc);
  }
}

/* any thread */
static GstStructure *
gst_spice_stream_enc_stats (GstSpiceStreamEnc * self)
{
  GstStructure *s;

  g_mutex_lock (&self->lock);
  s = gst_structure_new ("spicestreamenc-stats",
      "encoder", G_TYPE_STRING, self->encoder_factory ?
      self->encoder_factory : "",
      "property", G_TYPE_STRING, self->kind ?
      streamenc_kind_property (self->kind) : "",
      "initial-value", G_TYPE_UINT, self->initial_value,
      "applied-value", G_TYPE_UINT, self->applied_value,
      "applied-bps", G_TYPE_UINT64, applied_bps (self),
      "target-bps", G_TYPE_UINT64, self->target_bps,
      "rate-events", G_TYPE_UINT, self->rate_events,
      "changes", G_TYPE_UINT, self->changes,
      "output-bps", G_TYPE_UINT64, self->output_bps,
      "reference-bps", G_TYPE_UINT64, self->reference_bps,
      "reference-frame-bytes", G_TYPE_UINT64, self->reference_frame_bytes,
      NULL);
  g_mutex_unlock (&self->lock);
  return s;
}

/* ------------------------------------------------------------ element */

static GstStateChangeReturn
gst_spice_stream_enc_change_state (GstElement * element,
    GstStateChange transition)
{
  GstSpiceStreamEnc *self = GST_SPICE_STREAM_ENC (element);
  GstStateChangeReturn ret;

  if (transition == GST_STATE_CHANGE_NULL_TO_READY &&
      !gst_spice_stream_enc_build (self))
    return GST_STATE_CHANGE_FAILURE;
  ret = GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) {
    gst_spice_stream_enc_rate_reset (self);
    g_list_free_full (g_steal_pointer (&self->held),
        (GDestroyNotify) gst_event_unref);
    self->encoder_has_caps = FALSE;
  }
  return ret;
}

static void
gst_spice_stream_enc_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstSpiceStreamEnc *self = GST_SPICE_STREAM_ENC (object);

  switch (prop_id) {
    case PROP_ENCODER:
      GST_OBJECT_LOCK (self);
      g_free (self->description);
      self->description = g_value_dup_string (value);
      if (GST_STATE (self) > GST_STATE_NULL)
        GST_INFO_OBJECT (self, "the new encoder is built at the next "
            "NULL->READY");
      GST_OBJECT_UNLOCK (self);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

static void
gst_spice_stream_enc_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstSpiceStreamEnc *self = GST_SPICE_STREAM_ENC (object);

  switch (prop_id) {
    case PROP_ENCODER:
      GST_OBJECT_LOCK (self);
      g_value_set_string (value, self->description);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_APPLIED_VALUE:
      g_mutex_lock (&self->lock);
      g_value_set_uint (value, self->applied_value);
      g_mutex_unlock (&self->lock);
      break;
    case PROP_APPLIED_BITRATE:
      g_mutex_lock (&self->lock);
      g_value_set_uint64 (value, applied_bps (self));
      g_mutex_unlock (&self->lock);
      break;
    case PROP_STATS:
      g_value_take_boxed (value, gst_spice_stream_enc_stats (self));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

static void
gst_spice_stream_enc_finalize (GObject * object)
{
  GstSpiceStreamEnc *self = GST_SPICE_STREAM_ENC (object);

  if (self->encoder)
    gst_object_unref (self->encoder);
  g_free (self->encoder_factory);
  g_free (self->description);
  g_free (self->built_description);
  g_list_free_full (self->held, (GDestroyNotify) gst_event_unref);
  g_mutex_clear (&self->lock);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

/* Upstream's streaming or application thread (caps queries on the sink
 * pad): a JPEG encoder gets full-range BT.601 (JFIF, what clients decode),
 * so spicetiler converts to that directly; other encoders get what their
 * own caps say (limited range, as decoders assume). */
static gboolean
gst_spice_stream_enc_sink_query (GstPad * pad, GstObject * parent,
    GstQuery * query)
{
  GstSpiceStreamEnc *self = GST_SPICE_STREAM_ENC (parent);
  gboolean full_range, ret;
  GstCaps *caps, *jfif, *res;

  ret = gst_pad_query_default (pad, parent, query);
  if (!ret || GST_QUERY_TYPE (query) != GST_QUERY_CAPS)
    return ret;
  g_mutex_lock (&self->lock);
  full_range = self->full_range;
  g_mutex_unlock (&self->lock);
  if (!full_range)
    return ret;
  gst_query_parse_caps_result (query, &caps);
  jfif = gst_caps_new_simple ("video/x-raw", "colorimetry", G_TYPE_STRING,
      JFIF_COLORIMETRY, NULL);
  res = gst_caps_intersect (caps, jfif);
  gst_query_set_caps_result (query, res);
  gst_caps_unref (res);
  gst_caps_unref (jfif);
  return ret;
}

static void
gst_spice_stream_enc_class_init (GstSpiceStreamEncClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);

  gobject_class->set_property = gst_spice_stream_enc_set_property;
  gobject_class->get_property = gst_spice_stream_enc_get_property;
  gobject_class->finalize = gst_spice_stream_enc_finalize;

  /**
   * GstSpiceStreamEnc:encoder:
   *
   * The encoder as a gst-launch description (an element with its
   * properties, optionally followed by a capsfilter or parser), built at
   * the next NULL→READY.
   */
  g_object_class_install_property (gobject_class, PROP_ENCODER,
      g_param_spec_string ("encoder", "Encoder",
          "The encoder and its properties as a gst-launch description "
          "(built at NULL->READY; its rate property is the ceiling)",
          DEFAULT_ENCODER, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_APPLIED_VALUE,
      g_param_spec_uint ("applied-value", "Applied value",
          "Value of the encoder's rate property in force (target-bitrate, "
          "bitrate or quality; the description's until a spice-rate event "
          "changes it; 0 before READY or for an unknown encoder)",
          0, G_MAXUINT, 0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  g_object_class_install_property (gobject_class, PROP_APPLIED_BITRATE,
      g_param_spec_uint64 ("applied-bitrate", "Applied bitrate",
          "Bit/s the encoder is set to (jpegenc: expected at the applied "
          "quality from the rate measured at the description's; 0 = unknown)",
          0, G_MAXUINT64, 0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "encoder (factory), property, initial-value, applied-value, "
          "applied-bps, target-bps (last spice-rate), rate-events, changes, "
          "output-bps (last second), reference-bps (jpegenc: output at the "
          "description's quality)", GST_TYPE_STRUCTURE,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  element_class->change_state = gst_spice_stream_enc_change_state;
  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "SPICE stream encoder", "Codec/Encoder/Video",
      "A one-frame leaky queue and an encoder from a launch description; "
      "applies spice-rate to the encoders it knows. "
      "Example: gst-launch-1.0 videotestsrc is-live=true pattern=ball ! "
      "spicetiler name=t t.draw ! s.draw t.stream ! spicestreamenc "
      "encoder=\"vp8enc deadline=1\" ! s.stream_0 spicesink name=s port=5910",
      "gst-spice developers");
}

static void
gst_spice_stream_enc_init (GstSpiceStreamEnc * self)
{
  GstPad *pad;

  g_mutex_init (&self->lock);
  self->description = g_strdup (DEFAULT_ENCODER);

  self->queue = gst_element_factory_make ("queue", "queue");
  g_object_set (self->queue, "max-size-buffers", 1, "max-size-bytes", 0,
      "max-size-time", (guint64) 0, "leaky", 2 /* downstream */ , NULL);
  gst_bin_add (GST_BIN (self), self->queue);

  pad = gst_element_get_static_pad (self->queue, "sink");
  self->sinkpad = gst_ghost_pad_new_from_template ("sink", pad,
      gst_element_class_get_pad_template (GST_ELEMENT_GET_CLASS (self),
          "sink"));
  gst_object_unref (pad);
  gst_pad_set_query_function (self->sinkpad, gst_spice_stream_enc_sink_query);
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);

  self->srcpad = gst_ghost_pad_new_no_target_from_template ("src",
      gst_element_class_get_pad_template (GST_ELEMENT_GET_CLASS (self), "src"));
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);

  gst_pad_add_probe (self->srcpad, GST_PAD_PROBE_TYPE_EVENT_UPSTREAM,
      gst_spice_stream_enc_src_event_probe, self, NULL);
  gst_pad_add_probe (self->srcpad, GST_PAD_PROBE_TYPE_BUFFER |
      GST_PAD_PROBE_TYPE_BUFFER_LIST, gst_spice_stream_enc_output_probe, self,
      NULL);
  pad = gst_element_get_static_pad (self->queue, "src");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER |
      GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, gst_spice_stream_enc_caps_probe,
      self, NULL);
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER,
      gst_spice_stream_enc_frame_probe, self, NULL);
  gst_object_unref (pad);
}
