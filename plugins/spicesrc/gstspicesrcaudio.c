/* gst-spice: spicesrc's sound
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Playback: spice-gtk's SpicePlaybackChannel (no SpiceAudio backend: the
 * playback-start/-data/-stop signals and the volume/mute properties)
 * becomes the `audio` sometimes pad: S16LE interleaved at the channel's
 * rate and channels. The pad is added when the server first starts
 * playback (or record) and stays until the element stops; every START
 * begins a new stream (stream-start, caps, segment), every STOP ends it
 * with the serialized `spice-audio-stop` event (not EOS, after which a
 * sink would take nothing more); EOS comes when the element gets EOS. Timestamps are running time on the element's base (the video
 * buffers' base): the first buffer of a stream at its arrival minus its
 * duration, the next ones continuous, resynchronized (DISCONT) when the
 * arrival stays more than RESYNC_NS away from them for RESYNC_HOLD_NS: a
 * guest or link that stalls and then catches up in a burst keeps its
 * timestamps (no sample is missing), a guest whose sound clock paused (the
 * samples never existed) gets a hole. Volume and mute travel as
 * the sticky `spice-audio-volume` event (gstspiceaudio.h).
 *
 * Buffers go from the context thread to the pad's own task through a
 * queue bounded at MAX_QUEUED_NS: a blocked downstream costs the oldest
 * samples, never the SPICE context.
 *
 * Record: upstream `spice-record-start/-data/-stop` events on the audio
 * pad (from spicesink) feed the upstream's record channel, when its
 * format (rate, channels) is what the server asked for. They reach the
 * SPICE context through gst_spice_src_context_invoke(); at most
 * MAX_RECORD_PENDING data events (MAX_RECORD_PENDING_BYTES) wait there,
 * more data is dropped (record-dropped): upstream events have no flow
 * control, and a client that floods its microphone channel must not make
 * us hold its flood while the context is busy. Start and stop always
 * pass.
 */
#include <gst/spice/gstspice.h>
#include <spice/enums.h>

#include "gstspicesrcaudio.h"
#include "gstspicesrccontext.h"

GST_DEBUG_CATEGORY_STATIC (gst_spice_src_audio_debug);
#define GST_CAT_DEFAULT gst_spice_src_audio_debug

/* how far the queue towards the audio task may grow */
#define MAX_QUEUED_NS (500 * GST_MSECOND)
/* arrival drift beyond which timestamps restart from the arrival... */
#define RESYNC_NS (200 * GST_MSECOND)
/* ...when it lasts this long (a late packet and the burst after it do not) */
#define RESYNC_HOLD_NS (500 * GST_MSECOND)
/* the latency the pad reports: a SPICE audio packet and its jitter */
#define AUDIO_LATENCY_NS (40 * GST_MSECOND)
/* record data waiting for the context: 0.5 s of 10 ms packets (what
 * spicesink forwards from a client) at 48 kHz stereo S16, 1920 bytes
 * each; the bytes bound holds larger packets to the same 0.5 s */
#define MAX_RECORD_PENDING 50
#define MAX_RECORD_PENDING_BYTES (MAX_RECORD_PENDING * 1920)

GstStaticPadTemplate gst_spice_src_audio_template =
GST_STATIC_PAD_TEMPLATE ("audio", GST_PAD_SRC, GST_PAD_SOMETIMES,
    GST_STATIC_CAPS ("audio/x-raw, format = (string) S16LE, "
        "layout = (string) interleaved, rate = (int) [ 1, MAX ], "
        "channels = (int) [ 1, 2 ]"));

struct _GstSpiceSrcAudio
{
  GstElement *element;          /* not a reference: the element owns us */

  /* shared between the context thread and the audio task */
  GMutex lock;
  GCond cond;
  GQueue queue;                 /* GstMiniObject: buffers and events */
  GstClockTime queued_ns;
  gboolean flushing;
  GstPad *pad;                  /* NULL until first needed */
  GstCaps *caps;                /* of the current stream */
  guint64 st_buffers, st_dropped, st_discont, st_streams;
  guint64 st_record_bytes, st_record_dropped;
  /* record data handed to the context and not yet done there */
  guint rec_pending;
  gsize rec_pending_bytes;
  guint st_rec_pending_max;
  gint64 rec_drop_warned_us;    /* monotonic, the last warning */
  guint64 rec_dropped_warned;   /* st_record_dropped at that warning */

  /* context thread */
  SpicePlaybackChannel *playback;
  SpiceRecordChannel *record;
  gboolean playing;             /* START seen, samples accepted */
  gint rate, channels;
  GstClockTime next_pts;
  GstClockTime drift_since;     /* arrival when it left next_pts +-RESYNC_NS */
  gint drift_side;              /* which side: 1 late, -1 early */
  guint64 offset;
  gboolean record_active;       /* the server started the record channel */
  gint rec_rate, rec_channels;  /* what it asked for */
  gint up_rate, up_channels;    /* what the last record-start event said */
  gboolean warned_record_format;
  GstEvent *pending_volume;     /* before the first stream started */

  /* the audio task */
  gboolean warned_negotiation;
};

/* ----------------------------------------------------------- running time */

GstClockTime
gst_spice_src_running_time_at (GstElement * element, gint64 arrival_us)
{
  GstClock *clock = gst_element_get_clock (element);
  GstClockTime base, now, age;

  if (!clock)
    return GST_CLOCK_TIME_NONE;
  base = gst_element_get_base_time (element);
  now = gst_clock_get_time (clock);
  gst_object_unref (clock);
  if (!GST_CLOCK_TIME_IS_VALID (base) || now < base)
    return GST_CLOCK_TIME_NONE;
  age = (GstClockTime) MAX (g_get_monotonic_time () - arrival_us, 0) *
      GST_USECOND;
  now -= base;
  return now > age ? now - age : 0;
}

/* ------------------------------------------------------------ the task */

/* lock held */
static void
enqueue_locked (GstSpiceSrcAudio * a, gpointer obj)
{
  if (a->flushing) {
    gst_mini_object_unref (obj);
    return;
  }
  if (GST_IS_BUFFER (obj)) {
    GstClockTime d = GST_BUFFER_DURATION (obj);
    gboolean dropped = FALSE;
    GList *l;

    /* drop the oldest samples rather than wait */
    while (a->queued_ns + d > MAX_QUEUED_NS) {
      for (l = a->queue.head; l && !GST_IS_BUFFER (l->data); l = l->next);
      if (!l)
        break;
      a->queued_ns -= GST_BUFFER_DURATION (l->data);
      gst_buffer_unref (l->data);
      g_queue_delete_link (&a->queue, l);
      a->st_dropped++;
      dropped = TRUE;
    }
    /* the hole is before the oldest buffer left, which may be older than
     * this one: that one says so (the queue holds the only reference) */
    if (dropped) {
      for (l = a->queue.head; l && !GST_IS_BUFFER (l->data); l = l->next);
      GST_BUFFER_FLAG_SET (l ? l->data : obj, GST_BUFFER_FLAG_DISCONT);
    }
    a->queued_ns += d;
  }
  g_queue_push_tail (&a->queue, obj);
  g_cond_signal (&a->cond);
}

static void
enqueue (GstSpiceSrcAudio * a, gpointer obj)
{
  g_mutex_lock (&a->lock);
  enqueue_locked (a, obj);
  g_mutex_unlock (&a->lock);
}

/* the audio pad's task */
static void
audio_loop (gpointer data)
{
  GstSpiceSrcAudio *a = data;
  GstPad *pad;
  gpointer obj;

  g_mutex_lock (&a->lock);
  while (!a->flushing && g_queue_is_empty (&a->queue))
    g_cond_wait (&a->cond, &a->lock);
  if (a->flushing) {
    pad = a->pad ? gst_object_ref (a->pad) : NULL;
    g_mutex_unlock (&a->lock);
    if (pad) {
      gst_pad_pause_task (pad);
      gst_object_unref (pad);
    }
    return;
  }
  obj = g_queue_pop_head (&a->queue);
  if (GST_IS_BUFFER (obj))
    a->queued_ns -= GST_BUFFER_DURATION (obj);
  pad = gst_object_ref (a->pad);
  g_mutex_unlock (&a->lock);

  if (GST_IS_BUFFER (obj)) {
    GstFlowReturn ret = gst_pad_push (pad, obj);

    GST_LOG_OBJECT (pad, "pushed a buffer: %s", gst_flow_get_name (ret));

    /* unlinked or not negotiated yet: the sometimes pad may be unused */
    if (ret != GST_FLOW_OK && ret != GST_FLOW_NOT_LINKED &&
        ret != GST_FLOW_EOS && ret != GST_FLOW_FLUSHING)
      GST_DEBUG_OBJECT (pad, "push: %s", gst_flow_get_name (ret));
    if (ret == GST_FLOW_NOT_NEGOTIATED && !a->warned_negotiation) {
      a->warned_negotiation = TRUE;
      GST_ELEMENT_WARNING (a->element, STREAM, FORMAT,
          ("Downstream does not accept the audio format"),
          ("not negotiated on the audio pad"));
    }
  } else {
    GstEventType type = GST_EVENT_TYPE (obj);
    gboolean ok = gst_pad_push_event (pad, obj);

    GST_DEBUG_OBJECT (pad, "pushed %s: %d", gst_event_type_get_name (type), ok);
  }
  gst_object_unref (pad);
}

/* ----------------------------------------------------------- the pad */

static void record_event_in_context (GstSpiceSrcAudio * a, GstEvent * event);

typedef struct
{
  GstSpiceSrcAudio *a;
  GstEvent *event;
  GstElement *element;
  gsize data_bytes;             /* record data: counted in rec_pending */
  gboolean data;
} RecordOp;

static gboolean
record_op_run (gpointer data)
{
  RecordOp *op = data;

  record_event_in_context (op->a, op->event);
  return G_SOURCE_REMOVE;
}

/* context, once the op ran (or was dropped unrun) */
static void
record_op_free (gpointer data)
{
  RecordOp *op = data;

  if (op->data) {
    g_mutex_lock (&op->a->lock);
    op->a->rec_pending--;
    op->a->rec_pending_bytes -= op->data_bytes;
    g_mutex_unlock (&op->a->lock);
  }
  gst_event_unref (op->event);
  gst_object_unref (op->element);
  g_free (op);
}

/* any thread: whether record data of @bytes may wait for the context;
 * counts it pending if so, dropped (with a warning a second at most) if
 * not */
static gboolean
record_data_admit (GstSpiceSrcAudio * a, gsize bytes)
{
  gint64 now;

  g_mutex_lock (&a->lock);
  if (a->rec_pending < MAX_RECORD_PENDING &&
      a->rec_pending_bytes + bytes <= MAX_RECORD_PENDING_BYTES) {
    a->rec_pending++;
    a->rec_pending_bytes += bytes;
    a->st_rec_pending_max = MAX (a->st_rec_pending_max, a->rec_pending);
    g_mutex_unlock (&a->lock);
    return TRUE;
  }
  a->st_record_dropped++;
  now = g_get_monotonic_time ();
  if (!a->rec_drop_warned_us || now - a->rec_drop_warned_us >=
      G_TIME_SPAN_SECOND) {
    GST_WARNING_OBJECT (a->element, "record data: %u packets (%"
        G_GSIZE_FORMAT " bytes) wait for the SPICE context already (limit "
        "%u, %u bytes): dropping; %" G_GUINT64_FORMAT " dropped since the "
        "last warning", a->rec_pending, a->rec_pending_bytes,
        MAX_RECORD_PENDING, MAX_RECORD_PENDING_BYTES,
        a->st_record_dropped - a->rec_dropped_warned);
    a->rec_drop_warned_us = now;
    a->rec_dropped_warned = a->st_record_dropped;
  }
  g_mutex_unlock (&a->lock);
  return FALSE;
}

/* any thread: an upstream event on the audio pad */
static gboolean
audio_src_event (GstPad * pad, GstObject * parent, GstEvent * event)
{
  GstSpiceSrcAudio *a = gst_pad_get_element_private (pad);
  GstBuffer *buf = NULL;
  gboolean data = GST_EVENT_TYPE (event) == GST_EVENT_CUSTOM_UPSTREAM &&
      gst_spice_event_parse_record_data (event, &buf);

  if (data || (GST_EVENT_TYPE (event) == GST_EVENT_CUSTOM_UPSTREAM &&
          (gst_spice_event_parse_record_start (event, NULL, NULL) ||
              gst_spice_event_is_record_stop (event)))) {
    RecordOp *op;
    gsize bytes = buf ? gst_buffer_get_size (buf) : 0;

    if (data && !record_data_admit (a, bytes)) {
      gst_event_unref (event);
      return TRUE;
    }
    op = g_new0 (RecordOp, 1);
    op->a = a;
    op->event = event;
    op->element = gst_object_ref (a->element);
    op->data = data;
    op->data_bytes = bytes;
    gst_spice_src_context_invoke (record_op_run, op, record_op_free);
    return TRUE;
  }
  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_RECONFIGURE:
    case GST_EVENT_LATENCY:
    case GST_EVENT_QOS:
      gst_event_unref (event);
      return TRUE;
    default:
      gst_event_unref (event);
      return FALSE;
  }
}

/* any thread */
static gboolean
audio_src_query (GstPad * pad, GstObject * parent, GstQuery * query)
{
  GstSpiceSrcAudio *a = gst_pad_get_element_private (pad);

  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_LATENCY:
      gst_query_set_latency (query, TRUE, AUDIO_LATENCY_NS,
          GST_CLOCK_TIME_NONE);
      return TRUE;
    case GST_QUERY_CAPS:{
      GstCaps *filter, *caps;

      gst_query_parse_caps (query, &filter);
      g_mutex_lock (&a->lock);
      caps = a->caps ? gst_caps_ref (a->caps) :
          gst_pad_get_pad_template_caps (pad);
      g_mutex_unlock (&a->lock);
      if (filter) {
        GstCaps *c = gst_caps_intersect_full (filter, caps,
            GST_CAPS_INTERSECT_FIRST);
        gst_caps_unref (caps);
        caps = c;
      }
      gst_query_set_caps_result (query, caps);
      gst_caps_unref (caps);
      return TRUE;
    }
    default:
      return gst_pad_query_default (pad, parent, query);
  }
}

/* context thread: the pad exists and its task runs */
static void
ensure_pad (GstSpiceSrcAudio * a)
{
  GstPad *pad;

  g_mutex_lock (&a->lock);
  if (a->pad || a->flushing) {
    g_mutex_unlock (&a->lock);
    return;
  }
  pad = gst_pad_new_from_static_template (&gst_spice_src_audio_template,
      "audio");
  gst_pad_set_element_private (pad, a);
  gst_pad_set_event_function (pad, audio_src_event);
  gst_pad_set_query_function (pad, audio_src_query);
  gst_pad_use_fixed_caps (pad);
  a->pad = gst_object_ref (pad);
  g_mutex_unlock (&a->lock);

  gst_pad_set_active (pad, TRUE);
  GST_INFO_OBJECT (a->element, "adding the audio pad");
  gst_element_add_pad (a->element, pad);
  gst_pad_start_task (pad, audio_loop, a, NULL);
}

/* ------------------------------------------------------------ playback */

static void
on_playback_start (SpicePlaybackChannel * ch, gint format, gint channels,
    gint rate, GstSpiceSrcAudio * a)
{
  gchar *id;
  GstCaps *caps;
  GstSegment seg;

  GST_INFO_OBJECT (a->element, "playback start: format %d, %d channels, "
      "%d Hz", format, channels, rate);
  if (format != SPICE_AUDIO_FMT_S16 || channels < 1 ||
      channels > GST_SPICE_AUDIO_MAX_CHANNELS || rate <= 0) {
    GST_ELEMENT_WARNING (a->element, STREAM, FORMAT,
        ("The SPICE server plays audio in a format spicesrc does not "
            "support"), ("format %d, %d channels, %d Hz (expected S16, 1 or 2 "
            "channels)", format, channels, rate));
    a->playing = FALSE;
    return;
  }
  ensure_pad (a);
  if (a->playing)
    enqueue (a, gst_spice_event_new_audio_stop ());
  a->playing = TRUE;
  a->rate = rate;
  a->channels = channels;
  a->next_pts = GST_CLOCK_TIME_NONE;
  a->drift_since = GST_CLOCK_TIME_NONE;
  a->offset = 0;

  caps = gst_spice_audio_raw_caps (rate, channels);
  g_mutex_lock (&a->lock);
  gst_caps_replace (&a->caps, caps);
  a->st_streams++;
  id = g_strdup_printf ("spicesrc-audio-%" G_GUINT64_FORMAT, a->st_streams);
  g_mutex_unlock (&a->lock);
  enqueue (a, gst_event_new_stream_start (id));
  g_free (id);
  enqueue (a, gst_event_new_caps (caps));
  gst_caps_unref (caps);
  gst_segment_init (&seg, GST_FORMAT_TIME);
  enqueue (a, gst_event_new_segment (&seg));
  if (a->pending_volume) {
    enqueue (a, a->pending_volume);
    a->pending_volume = NULL;
  }
}

/* Whether a packet arriving at ARRIVAL (running time of its first sample)
 * ends a drift that lasted: it is beyond RESYNC_NS of next_pts, on the same
 * side as every packet since drift_since, RESYNC_HOLD_NS after it.
 * SPICE context thread. */
static gboolean
drift_lasts (GstSpiceSrcAudio * a, GstClockTime arrival)
{
  gint side = 0;

  if (arrival > a->next_pts + RESYNC_NS)
    side = 1;
  else if (arrival + RESYNC_NS < a->next_pts)
    side = -1;
  if (side == 0 || side != a->drift_side ||
      !GST_CLOCK_TIME_IS_VALID (a->drift_since)) {
    a->drift_side = side;
    a->drift_since = side ? arrival : GST_CLOCK_TIME_NONE;
    return FALSE;
  }
  return arrival >= a->drift_since + RESYNC_HOLD_NS;
}

/* SPICE context thread */
static void
on_playback_data (SpicePlaybackChannel * ch, gpointer data, gint size,
    GstSpiceSrcAudio * a)
{
  gint bpf = a->channels * 2;
  guint64 frames;
  GstClockTime dur, arrival;
  GstBuffer *buf;

  if (!a->playing || size <= 0)
    return;
  frames = (guint64) size / bpf;
  if (frames == 0)
    return;
  dur = gst_util_uint64_scale (frames, GST_SECOND, a->rate);
  arrival = gst_spice_src_running_time_at (a->element, g_get_monotonic_time ());
  if (!GST_CLOCK_TIME_IS_VALID (arrival))
    return;                     /* not playing yet */
  arrival = arrival > dur ? arrival - dur : 0;
  buf = gst_buffer_new_memdup (data, frames * bpf);
  if (!GST_CLOCK_TIME_IS_VALID (a->next_pts) || drift_lasts (a, arrival)) {
    if (GST_CLOCK_TIME_IS_VALID (a->next_pts)) {
      GST_DEBUG_OBJECT (a->element, "audio resync: arrival %" GST_TIME_FORMAT
          ", expected %" GST_TIME_FORMAT, GST_TIME_ARGS (arrival),
          GST_TIME_ARGS (a->next_pts));
      g_mutex_lock (&a->lock);
      a->st_discont++;
      g_mutex_unlock (&a->lock);
    }
    a->next_pts = arrival;
    a->drift_since = GST_CLOCK_TIME_NONE;
    GST_BUFFER_FLAG_SET (buf, GST_BUFFER_FLAG_DISCONT);
  }
  GST_BUFFER_PTS (buf) = a->next_pts;
  GST_BUFFER_DURATION (buf) = dur;
  GST_BUFFER_OFFSET (buf) = a->offset;
  GST_BUFFER_OFFSET_END (buf) = a->offset + frames;
  a->offset += frames;
  a->next_pts += dur;
  g_mutex_lock (&a->lock);
  a->st_buffers++;
  enqueue_locked (a, buf);
  g_mutex_unlock (&a->lock);
}

static void
on_playback_stop (SpicePlaybackChannel * ch, GstSpiceSrcAudio * a)
{
  GST_INFO_OBJECT (a->element, "playback stop");
  if (!a->playing)
    return;
  a->playing = FALSE;
  enqueue (a, gst_spice_event_new_audio_stop ());
}

static void
on_volume (GObject * obj, GParamSpec * pspec, GstSpiceSrcAudio * a)
{
  guint16 *vol = NULL;
  guint n = 0;
  gboolean mute = FALSE;

  g_object_get (obj, "volume", &vol, "nchannels", &n, "mute", &mute, NULL);
  if (!vol)
    n = 0;
  GST_DEBUG_OBJECT (a->element, "volume: %u channels, mute %d", n, mute);
  /* sticky events follow stream-start, caps and segment */
  if (a->playing) {
    enqueue (a, gst_spice_event_new_audio_volume (n, vol, mute));
  } else {
    gst_clear_event (&a->pending_volume);
    a->pending_volume = gst_spice_event_new_audio_volume (n, vol, mute);
  }
}

/* -------------------------------------------------------------- record */

static void
on_record_start (SpiceRecordChannel * ch, gint format, gint channels,
    gint rate, GstSpiceSrcAudio * a)
{
  GST_INFO_OBJECT (a->element, "record start: format %d, %d channels, %d Hz",
      format, channels, rate);
  a->record_active = format == SPICE_AUDIO_FMT_S16;
  a->rec_rate = rate;
  a->rec_channels = channels;
  a->warned_record_format = FALSE;
  ensure_pad (a);
}

static void
on_record_stop (SpiceRecordChannel * ch, GstSpiceSrcAudio * a)
{
  GST_INFO_OBJECT (a->element, "record stop");
  a->record_active = FALSE;
}

/* context thread */
static void
record_event_in_context (GstSpiceSrcAudio * a, GstEvent * event)
{
  GstBuffer *buf;
  GstMapInfo map;
  gint rate, channels;

  if (gst_spice_event_parse_record_start (event, &rate, &channels)) {
    a->up_rate = rate;
    a->up_channels = channels;
    a->warned_record_format = FALSE;
    return;
  }
  if (gst_spice_event_is_record_stop (event)) {
    a->up_rate = a->up_channels = 0;
    return;
  }
  if (!gst_spice_event_parse_record_data (event, &buf))
    return;
  if (!a->record || !a->record_active || a->up_rate <= 0) {
    g_mutex_lock (&a->lock);
    a->st_record_dropped++;
    g_mutex_unlock (&a->lock);
    return;
  }
  if (a->up_rate != a->rec_rate || a->up_channels != a->rec_channels) {
    if (!a->warned_record_format)
      GST_ELEMENT_WARNING (a->element, STREAM, FORMAT,
          ("Recorded audio does not match what the SPICE server records"),
          ("client records %d Hz, %d channels; server wants %d Hz, %d "
              "channels: dropped", a->up_rate, a->up_channels, a->rec_rate,
              a->rec_channels));
    a->warned_record_format = TRUE;
    g_mutex_lock (&a->lock);
    a->st_record_dropped++;
    g_mutex_unlock (&a->lock);
    return;
  }
  if (!gst_buffer_map (buf, &map, GST_MAP_READ))
    return;
  if (map.size % (2 * a->rec_channels) == 0 && map.size > 0) {
    spice_record_channel_send_data (a->record, map.data, map.size, 0);
    g_mutex_lock (&a->lock);
    a->st_record_bytes += map.size;
    g_mutex_unlock (&a->lock);
  }
  gst_buffer_unmap (buf, &map);
}

/* ---------------------------------------------------------- the session */

gboolean
gst_spice_src_audio_channel_new (GstSpiceSrcAudio * a, SpiceChannel * ch)
{
  if (SPICE_IS_PLAYBACK_CHANNEL (ch) && !a->playback) {
    a->playback = SPICE_PLAYBACK_CHANNEL (ch);
    g_signal_connect (ch, "playback-start", G_CALLBACK (on_playback_start), a);
    g_signal_connect (ch, "playback-data", G_CALLBACK (on_playback_data), a);
    g_signal_connect (ch, "playback-stop", G_CALLBACK (on_playback_stop), a);
    g_signal_connect (ch, "notify::volume", G_CALLBACK (on_volume), a);
    g_signal_connect (ch, "notify::mute", G_CALLBACK (on_volume), a);
  } else if (SPICE_IS_RECORD_CHANNEL (ch) && !a->record) {
    a->record = SPICE_RECORD_CHANNEL (ch);
    g_signal_connect (ch, "record-start", G_CALLBACK (on_record_start), a);
    g_signal_connect (ch, "record-stop", G_CALLBACK (on_record_stop), a);
  } else {
    return FALSE;
  }
  spice_channel_connect (ch);
  return TRUE;
}

void
gst_spice_src_audio_forget (GstSpiceSrcAudio * a, SpiceChannel * ch)
{
  if (a->playback && (!ch || ch == (SpiceChannel *) a->playback)) {
    g_signal_handlers_disconnect_by_data (a->playback, a);
    a->playback = NULL;
    on_playback_stop (NULL, a);
  }
  if (a->record && (!ch || ch == (SpiceChannel *) a->record)) {
    g_signal_handlers_disconnect_by_data (a->record, a);
    a->record = NULL;
    a->record_active = FALSE;
  }
}

void
gst_spice_src_audio_eos (GstSpiceSrcAudio * a)
{
  g_mutex_lock (&a->lock);
  if (a->pad)
    enqueue_locked (a, gst_event_new_eos ());
  g_mutex_unlock (&a->lock);
}

void
gst_spice_src_audio_stop (GstSpiceSrcAudio * a)
{
  GstPad *pad;

  g_mutex_lock (&a->lock);
  a->flushing = TRUE;
  g_cond_broadcast (&a->cond);
  pad = a->pad;
  a->pad = NULL;
  g_mutex_unlock (&a->lock);
  if (pad) {
    gst_pad_stop_task (pad);
    gst_pad_set_active (pad, FALSE);
    gst_element_remove_pad (a->element, pad);
    gst_object_unref (pad);
  }
  g_mutex_lock (&a->lock);
  g_queue_clear_full (&a->queue, (GDestroyNotify) gst_mini_object_unref);
  a->queued_ns = 0;
  gst_caps_replace (&a->caps, NULL);
  /* ready for the next start */
  a->flushing = FALSE;
  g_mutex_unlock (&a->lock);
}

void
gst_spice_src_audio_stats (GstSpiceSrcAudio * a, GstStructure * s)
{
  g_mutex_lock (&a->lock);
  gst_structure_set (s,
      "audio-streams", G_TYPE_UINT64, a->st_streams,
      "audio-buffers", G_TYPE_UINT64, a->st_buffers,
      "audio-dropped", G_TYPE_UINT64, a->st_dropped,
      "audio-resyncs", G_TYPE_UINT64, a->st_discont,
      "record-bytes", G_TYPE_UINT64, a->st_record_bytes,
      "record-dropped", G_TYPE_UINT64, a->st_record_dropped,
      "record-pending", G_TYPE_UINT, a->rec_pending,
      "record-pending-max", G_TYPE_UINT, a->st_rec_pending_max, NULL);
  g_mutex_unlock (&a->lock);
}

GstSpiceSrcAudio *
gst_spice_src_audio_new (GstElement * element)
{
  GstSpiceSrcAudio *a = g_new0 (GstSpiceSrcAudio, 1);

  if (!gst_spice_src_audio_debug)
    GST_DEBUG_CATEGORY_INIT (gst_spice_src_audio_debug, "spicesrcaudio", 0,
        "spicesrc audio pad and record channel");
  a->element = element;
  g_mutex_init (&a->lock);
  g_cond_init (&a->cond);
  g_queue_init (&a->queue);
  a->next_pts = GST_CLOCK_TIME_NONE;
  a->drift_since = GST_CLOCK_TIME_NONE;
  return a;
}

void
gst_spice_src_audio_free (GstSpiceSrcAudio * a)
{
  g_queue_clear_full (&a->queue, (GDestroyNotify) gst_mini_object_unref);
  gst_caps_replace (&a->caps, NULL);
  gst_clear_event (&a->pending_volume);
  g_mutex_clear (&a->lock);
  g_cond_clear (&a->cond);
  g_free (a);
}
