/* tests/streamenc: spicestreamenc with real encoders, and end to end
 * between spicetiler and spicesink with a slow raw SPICE client
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <string.h>
#include <sys/socket.h>
#include <gst/gst.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/video/video.h>
#include <gst/spice/gstspice.h>
#include "element-stats.h"
#include "spice-raw-client.h"
#include "guest-launcher.h"
#include "streamencrate.h"

/* a live snow source, the bin, a fakesink; spice-rate events are sent
 * from the fakesink's pad as spicesink sends them */
typedef struct
{
  GstElement *pipeline, *bin, *src, *sink;
  gint fps_n, fps_d;            /* the source's rate, asked in spice-rate */
  GMutex lock;
  guint upstream_rates;         /* spice-rate events that left the bin */
  guint upstream_bitrate;
} Branch;

static GstPadProbeReturn
upstream_rate_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  Branch *b = data;
  guint bitrate;

  if (gst_spice_event_parse_rate (GST_PAD_PROBE_INFO_EVENT (info), &bitrate,
          NULL, NULL, NULL)) {
    g_mutex_lock (&b->lock);
    b->upstream_rates++;
    b->upstream_bitrate = bitrate;
    g_mutex_unlock (&b->lock);
  }
  return GST_PAD_PROBE_OK;
}

/* snow at @fps_n/@fps_d into the bin; spice-rate events from the sink side
 * ask for that frame rate (upstream of the bin the tiler drops frames to
 * the asked rate: the source here runs at it) */
static Branch *
branch_new_at (const gchar * encoder, gint fps_n, gint fps_d)
{
  Branch *b = g_new0 (Branch, 1);
  GError *err = NULL;
  GstPad *pad;
  gchar *desc;

  g_mutex_init (&b->lock);
  b->fps_n = fps_n;
  b->fps_d = fps_d;
  desc = g_strdup_printf ("videotestsrc name=src is-live=true "
      "pattern=snow ! video/x-raw,format=I420,width=320,height=240,"
      "framerate=%d/%d ! spicestreamenc name=enc ! fakesink name=out "
      "async=false", fps_n, fps_d);
  b->pipeline = gst_parse_launch (desc, &err);
  g_free (desc);
  fail_unless (b->pipeline != NULL, "%s", err ? err->message : "?");
  b->bin = gst_bin_get_by_name (GST_BIN (b->pipeline), "enc");
  b->src = gst_bin_get_by_name (GST_BIN (b->pipeline), "src");
  b->sink = gst_bin_get_by_name (GST_BIN (b->pipeline), "out");
  if (encoder)
    g_object_set (b->bin, "encoder", encoder, NULL);
  pad = gst_element_get_static_pad (b->src, "src");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_EVENT_UPSTREAM,
      upstream_rate_probe, b, NULL);
  gst_object_unref (pad);
  return b;
}

static Branch *
branch_new (const gchar * encoder)
{
  return branch_new_at (encoder, 25, 1);
}

static void
branch_play (Branch * b)
{
  fail_unless (gst_element_set_state (b->pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
}

static void
branch_free (Branch * b)
{
  gst_element_set_state (b->pipeline, GST_STATE_NULL);
  gst_object_unref (b->bin);
  gst_object_unref (b->src);
  gst_object_unref (b->sink);
  gst_object_unref (b->pipeline);
  g_mutex_clear (&b->lock);
  g_free (b);
}

/* sends spice-rate @bitrate upstream from the fakesink, as spicesink does
 * from its stream pad; the event must come out of the bin upstream */
static void
branch_send_rate (Branch * b, guint bitrate)
{
  GstPad *pad = gst_element_get_static_pad (b->sink, "sink");
  guint before;

  g_mutex_lock (&b->lock);
  before = b->upstream_rates;
  g_mutex_unlock (&b->lock);
  gst_pad_push_event (pad, gst_spice_event_new_rate (bitrate, b->fps_n,
          b->fps_d, 1));
  gst_object_unref (pad);
  g_mutex_lock (&b->lock);
  fail_unless_equals_int (b->upstream_rates, before + 1);
  fail_unless_equals_int (b->upstream_bitrate, bitrate);
  g_mutex_unlock (&b->lock);
}

static guint
applied_value (Branch * b)
{
  guint v = 0;

  g_object_get (b->bin, "applied-value", &v, NULL);
  return v;
}

#define stat_u64 test_element_stat_u64

static gint
has_factory (gconstpointer item, gconstpointer name)
{
  GstElementFactory *f = gst_element_get_factory (g_value_get_object (item));

  return !(f && strcmp (GST_OBJECT_NAME (f), name) == 0);
}

/* the integer property @prop of the @factory element inside @bin */
static guint
inner_property (GstElement * bin, const gchar * factory, const gchar * prop)
{
  GstIterator *it = gst_bin_iterate_recurse (GST_BIN (bin));
  GValue item = G_VALUE_INIT, v = G_VALUE_INIT, u = G_VALUE_INIT;
  GParamSpec *ps;
  GObject *el;
  guint r;

  fail_unless (gst_iterator_find_custom (it, has_factory, &item,
          (gpointer) factory), "no %s in the bin", factory);
  gst_iterator_free (it);
  el = g_value_get_object (&item);
  ps = g_object_class_find_property (G_OBJECT_GET_CLASS (el), prop);
  fail_unless (ps != NULL);
  g_value_init (&v, ps->value_type);
  g_value_init (&u, G_TYPE_UINT);
  g_object_get_property (el, prop, &v);
  fail_unless (g_value_transform (&v, &u));
  r = g_value_get_uint (&u);
  g_value_unset (&v);
  g_value_unset (&u);
  g_value_unset (&item);
  return r;
}

static gboolean
have (const gchar * factory)
{
  GstElementFactory *f = gst_element_factory_find (factory);

  if (!f) {
    g_print ("SKIP: %s is not installed\n", factory);
    return FALSE;
  }
  gst_object_unref (f);
  return TRUE;
}

/* applies targets to a bitrate encoder: @want[i] is the property value
 * expected for @targets[i] */
static void
check_bitrate_encoder (const gchar * encoder, const gchar * factory,
    const gchar * prop, guint initial, const guint * targets,
    const guint * want, guint n)
{
  Branch *b = branch_new (encoder);
  guint i;

  branch_play (b);
  fail_unless_equals_int (applied_value (b), initial);
  fail_unless_equals_int (inner_property (b->bin, factory, prop), initial);
  for (i = 0; i < n; i++) {
    branch_send_rate (b, targets[i]);
    fail_unless_equals_int (applied_value (b), want[i]);
    fail_unless_equals_int (inner_property (b->bin, factory, prop), want[i]);
    fail_unless (want[i] <= initial);
  }
  g_print ("RESULT %s: %s %u -> ", factory, prop, initial);
  for (i = 0; i < n; i++)
    g_print ("%u (spice-rate %u)%s", want[i], targets[i], i + 1 < n ? ", " :
        "\n");
  /* a restart starts from the description again */
  branch_send_rate (b, targets[0]);
  fail_unless (gst_element_set_state (b->pipeline, GST_STATE_READY) !=
      GST_STATE_CHANGE_FAILURE);
  fail_unless_equals_int (applied_value (b), initial);
  fail_unless_equals_int (inner_property (b->bin, factory, prop), initial);
  branch_free (b);
}

GST_START_TEST (test_vp8enc)
{
  const guint t[] = { 800000, 1234567, 5000000, 300000, 0 };
  const guint w[] = { 800000, 1234000, 2000000, 300000, 2000000 };

  /* the default description: vp8enc at 2 Mbit/s */
  check_bitrate_encoder (NULL, "vp8enc", "target-bitrate", 2000000, t, w,
      G_N_ELEMENTS (t));
}

GST_END_TEST;

GST_START_TEST (test_vp9enc)
{
  const guint t[] = { 700000, 3000000 };
  const guint w[] = { 700000, 1500000 };

  if (!have ("vp9enc"))
    return;
  check_bitrate_encoder ("vp9enc deadline=1 cpu-used=8 end-usage=cbr "
      "target-bitrate=1500000", "vp9enc", "target-bitrate", 1500000, t, w,
      G_N_ELEMENTS (t));
}

GST_END_TEST;

GST_START_TEST (test_x264enc)
{
  const guint t[] = { 800000, 1999999, 5000000, 0 };
  const guint w[] = { 800, 1999, 2000, 2000 };

  if (!have ("x264enc"))
    return;
  /* a caps filter cannot end a gst-launch description: a parser follows */
  check_bitrate_encoder ("x264enc tune=zerolatency speed-preset=ultrafast "
      "bitrate=2000 ! video/x-h264,stream-format=byte-stream,alignment=au "
      "! h264parse",
      "x264enc", "bitrate", 2000, t, w, G_N_ELEMENTS (t));
}

GST_END_TEST;

GST_START_TEST (test_openh264enc)
{
  const guint t[] = { 812345, 2500000, 0 };
  const guint w[] = { 812345, 2000000, 2000000 };

  if (!have ("openh264enc"))
    return;
  check_bitrate_encoder ("openh264enc usage-type=screen "
      "rate-control=bitrate bitrate=2000000 complexity=low",
      "openh264enc", "bitrate", 2000000, t, w, G_N_ELEMENTS (t));
}

GST_END_TEST;

static gboolean
wait_stat_nonzero (GstElement * bin, const gchar * field, guint ms)
{
  gint64 end = g_get_monotonic_time () + ms * test_time_factor () * 1000;

  while (g_get_monotonic_time () < end) {
    if (stat_u64 (bin, field))
      return TRUE;
    g_usleep (20 * 1000);
  }
  return FALSE;
}

static gboolean
wait_applied (Branch * b, gboolean (*ok) (guint v, guint ref), guint ref,
    guint ms)
{
  gint64 end = g_get_monotonic_time () + ms * test_time_factor () * 1000;

  while (g_get_monotonic_time () < end) {
    if (ok (applied_value (b), ref))
      return TRUE;
    g_usleep (10 * 1000);
  }
  return ok (applied_value (b), ref);
}

static gboolean
differs (guint v, guint ref)
{
  return v != ref;
}

static gboolean
equals (guint v, guint ref)
{
  return v == ref;
}

/* jpegenc: the reference is the bin's own output at the description's
 * quality; the quality picked for a target follows the model, the output
 * rate then falls towards the target, and the description's quality is
 * the ceiling */
GST_START_TEST (test_jpegenc)
{
  Branch *b = branch_new ("jpegenc quality=70");
  guint64 ref, target, out;
  guint q, want;

  branch_play (b);
  fail_unless_equals_int (applied_value (b), 70);
  /* no reference yet: a target waits for it */
  fail_unless (wait_stat_nonzero (b->bin, "reference-bps", 5000));
  ref = stat_u64 (b->bin, "reference-bps");
  target = ref / 2;
  branch_send_rate (b, (guint) target);
  fail_unless (wait_applied (b, differs, 70, 2000), "quality still 70");
  q = applied_value (b);
  /* the reference is frozen once the quality left q0 */
  ref = stat_u64 (b->bin, "reference-bps");
  want = streamenc_jpeg_quality (70, target, ref);
  fail_unless_equals_int (q, want);
  fail_unless_equals_int (inner_property (b->bin, "jpegenc", "quality"), q);
  fail_unless (q >= 10 && q < 70);
  /* two windows at the new quality */
  g_usleep (2500 * 1000);
  out = stat_u64 (b->bin, "output-bps");
  g_print ("RESULT jpegenc: output %" G_GUINT64_FORMAT " bit/s at quality 70;"
      " spice-rate %" G_GUINT64_FORMAT " -> quality %u, output %"
      G_GUINT64_FORMAT " bit/s (%.2f of the target; applied-bitrate %"
      G_GUINT64_FORMAT ")\n", ref, target, q, out, (gdouble) out / target,
      stat_u64 (b->bin, "applied-bps"));
  fail_unless (out > 0 && out < ref * 3 / 4, "output %" G_GUINT64_FORMAT
      " bit/s, reference %" G_GUINT64_FORMAT, out, ref);
  /* more than the reference: back to the ceiling, never above */
  branch_send_rate (b, (guint) (ref * 4));
  fail_unless (wait_applied (b, equals, 70, 2000));
  branch_send_rate (b, (guint) (target / 8));
  fail_unless (wait_applied (b, equals, 10, 2000), "quality %u",
      applied_value (b));
  /* unknown bitrate: the description's quality */
  branch_send_rate (b, 0);
  fail_unless (wait_applied (b, equals, 70, 2000));
  fail_unless_equals_int (inner_property (b->bin, "jpegenc", "quality"), 70);
  branch_free (b);
}

GST_END_TEST;

static volatile gint unknown_warnings;

static void
count_warnings (GstDebugCategory * category, GstDebugLevel level,
    const gchar * file, const gchar * function, gint line, GObject * object,
    GstDebugMessage * message, gpointer data)
{
  if (level == GST_LEVEL_WARNING &&
      strcmp (gst_debug_category_get_name (category), "spicestreamenc") == 0)
    g_atomic_int_inc (&unknown_warnings);
}

/* jpegenc behind a slow link: frames leave the bin far apart (here 1.5 per
 * second, 667 ms apart; at 150 ms / 2 Mbit a 640x480 JPEG frame takes over
 * a second). The reference is the mean frame size at the description's
 * quality, so it is measured however long frames wait, and a target below
 * it lowers the quality (with bytes per second over windows that a 500 ms
 * gap restarted it was never measured and the quality stayed at 70). */
GST_START_TEST (test_jpegenc_slow_frames)
{
  Branch *b = branch_new_at ("jpegenc quality=70", 3, 2);
  guint64 ref, frame, target;
  guint q;

  branch_play (b);
  fail_unless (wait_stat_nonzero (b->bin, "reference-frame-bytes", 6000),
      "no reference with frames 667 ms apart");
  frame = stat_u64 (b->bin, "reference-frame-bytes");
  target = frame * 8 * 3 / 2 / 2;
  branch_send_rate (b, (guint) target);
  fail_unless (wait_applied (b, differs, 70, 3000), "quality still 70");
  q = applied_value (b);
  ref = stat_u64 (b->bin, "reference-bps");
  /* the reference is that frame size at the asked 1.5 frames/s */
  fail_unless_equals_uint64 (ref, frame * 8 * 3 / 2);
  fail_unless_equals_int (q, streamenc_jpeg_quality (70, target, ref));
  fail_unless (q >= 10 && q < 70);
  branch_free (b);
}

GST_END_TEST;

/* an encoder the bin does not know: the event passes on, the bin says once
 * that it cannot apply it, nothing is set */
GST_START_TEST (test_unknown_encoder)
{
  Branch *b;
  GstStructure *s = NULL;
  guint events = 0;

  if (!have ("avenc_mjpeg"))
    return;
  b = branch_new ("avenc_mjpeg");
  gst_debug_set_threshold_for_name ("spicestreamenc", GST_LEVEL_WARNING);
  gst_debug_add_log_function (count_warnings, NULL, NULL);
  branch_play (b);
  branch_send_rate (b, 500000);
  branch_send_rate (b, 400000);
  branch_send_rate (b, 300000);
  gst_debug_remove_log_function (count_warnings);
  fail_unless_equals_int (g_atomic_int_get (&unknown_warnings), 1);
  fail_unless_equals_int (applied_value (b), 0);
  g_object_get (b->bin, "stats", &s, NULL);
  fail_unless_equals_string (gst_structure_get_string (s, "encoder"),
      "avenc_mjpeg");
  fail_unless (gst_structure_get_uint (s, "rate-events", &events));
  fail_unless_equals_int (events, 3);
  gst_structure_free (s);
  branch_free (b);
}

GST_END_TEST;

/* a description that does not build is an element error naming it and
 * why */
static void
check_bad_description (const gchar * encoder, const gchar * cause)
{
  Branch *b = branch_new (encoder);
  GstBus *bus = gst_element_get_bus (b->pipeline);
  GstMessage *msg;
  GError *err = NULL;

  fail_unless_equals_int (gst_element_set_state (b->pipeline,
          GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL, "no error for \"%s\"", encoder);
  fail_unless (GST_MESSAGE_SRC (msg) == GST_OBJECT (b->bin));
  gst_message_parse_error (msg, &err, NULL);
  GST_INFO ("%s: %s", encoder, err->message);
  fail_unless (strstr (err->message, encoder) != NULL, "%s", err->message);
  fail_unless (strstr (err->message, cause) != NULL, "%s", err->message);
  g_clear_error (&err);
  gst_message_unref (msg);
  gst_object_unref (bus);
  branch_free (b);
}

GST_START_TEST (test_bad_description)
{
  check_bad_description ("vp8enc no-such-property=1", "no-such-property");
  check_bad_description ("no-such-encoder deadline=1", "no-such-encoder");
  check_bad_description ("vp8enc ! ! jpegenc", "does not parse");
  check_bad_description ("videoconvert ! videoscale", "holds no encoder");
  check_bad_description ("", "no encoder description");
}

GST_END_TEST;

/* An encoder whose output spicesink never takes (pngenc: image/png; and
 * av1enc where it is installed: spicesink takes no AV1) is an element
 * error at NULL->READY naming the encoder, what it makes and what the
 * sink's pad takes, not a negotiation failure inside the encoder; one
 * it takes (vp8enc) goes to PLAYING before the same sink. */
static void
check_peer_refuses (const gchar * encoder, const gchar * made)
{
  gchar *desc = g_strdup_printf ("videotestsrc is-live=true ! "
      "video/x-raw,format=I420,width=64,height=48 ! spicestreamenc "
      "name=enc encoder=\"%s\" ! s.stream_0 spicesink name=s "
      "address=127.0.0.1 port=0", encoder);
  GstElement *pipeline = gst_parse_launch (desc, NULL);
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *msg;
  GError *err = NULL;

  fail_unless (pipeline != NULL);
  fail_unless_equals_int (gst_element_set_state (pipeline, GST_STATE_READY),
      GST_STATE_CHANGE_FAILURE);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL, "no error for \"%s\"", encoder);
  fail_unless_equals_string (GST_MESSAGE_SRC_NAME (msg), "enc");
  gst_message_parse_error (msg, &err, NULL);
  GST_INFO ("%s: %s", encoder, err->message);
  fail_unless (g_error_matches (err, GST_CORE_ERROR,
          GST_CORE_ERROR_NEGOTIATION), "%s", err->message);
  fail_unless (strstr (err->message, encoder) != NULL, "%s", err->message);
  fail_unless (strstr (err->message, made) != NULL, "%s", err->message);
  fail_unless (strstr (err->message, "s:stream_0 does not take") != NULL,
      "%s", err->message);
  fail_unless (strstr (err->message, "video/x-vp8") != NULL, "%s",
      err->message);
  g_clear_error (&err);
  gst_message_unref (msg);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
  g_free (desc);
}

GST_START_TEST (test_encoder_the_sink_cannot_take)
{
  GstElement *pipeline;
  GstElementFactory *av1;

  check_peer_refuses ("pngenc", "makes image/png");
  av1 = gst_element_factory_find ("av1enc");
  if (av1) {
    check_peer_refuses ("av1enc", "makes video/x-av1");
    gst_object_unref (av1);
  }
  pipeline = gst_parse_launch ("videotestsrc is-live=true ! "
      "video/x-raw,format=I420,width=64,height=48 ! spicestreamenc "
      "encoder=\"vp8enc deadline=1\" ! s.stream_0 spicesink name=s "
      "address=127.0.0.1 port=0", NULL);
  fail_unless (pipeline != NULL);
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  fail_unless (gst_element_set_state (pipeline, GST_STATE_NULL) ==
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (pipeline);
}

GST_END_TEST;

/* a new description takes effect at the next NULL->READY */
GST_START_TEST (test_rebuild)
{
  Branch *b = branch_new ("vp8enc target-bitrate=1000000");

  branch_play (b);
  fail_unless_equals_int (applied_value (b), 1000000);
  gst_element_set_state (b->pipeline, GST_STATE_NULL);
  g_object_set (b->bin, "encoder", "jpegenc quality=55", NULL);
  branch_play (b);
  fail_unless_equals_int (applied_value (b), 55);
  fail_unless_equals_int (inner_property (b->bin, "jpegenc", "quality"), 55);
  branch_free (b);
}

GST_END_TEST;

/* ------------------------------------------------------------ end to end */

typedef struct
{
  GstElement *bin;
  GMutex lock;
  guint events, mismatches;
  guint last_bitrate, last_applied;
  guint min_applied;
} RateLog;

static void
rate_log_free (gpointer data)
{
  RateLog *r = data;

  g_mutex_clear (&r->lock);
  g_free (r);
}

/* spicesink's event thread: runs after the bin's own probe on the same pad
 * (probes run in the order they were added), so the bin has taken the
 * event's value already */
static GstPadProbeReturn
bin_src_rate_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  RateLog *r = data;
  guint bitrate, applied = 0;

  if (!gst_spice_event_parse_rate (GST_PAD_PROBE_INFO_EVENT (info), &bitrate,
          NULL, NULL, NULL))
    return GST_PAD_PROBE_OK;
  g_object_get (r->bin, "applied-value", &applied, NULL);
  g_mutex_lock (&r->lock);
  r->events++;
  r->last_bitrate = bitrate;
  r->last_applied = applied;
  r->min_applied = MIN (r->min_applied, applied);
  if (applied != streamenc_bitrate_value (STREAMENC_KIND_VPX, bitrate,
          2000000)) {
    GST_WARNING ("spice-rate %u bit/s, applied %u", bitrate, applied);
    r->mismatches++;
  }
  g_mutex_unlock (&r->lock);
  return GST_PAD_PROBE_OK;
}

static guint
rate_log_last_applied (RateLog * r)
{
  guint v;

  g_mutex_lock (&r->lock);
  v = r->events ? r->last_applied : G_MAXUINT;
  g_mutex_unlock (&r->lock);
  return v;
}

/* the encoder's own property reaches the bin's applied value (an event may
 * be between the two on the event thread) */
static gboolean
encoder_follows_bin (GstElement * bin, guint ms)
{
  gint64 end = g_get_monotonic_time () + ms * test_time_factor () * 1000;
  guint applied = 0;

  do {
    g_object_get (bin, "applied-value", &applied, NULL);
    if (inner_property (bin, "vp8enc", "target-bitrate") == applied)
      return TRUE;
    g_usleep (10 * 1000);
  } while (g_get_monotonic_time () < end);
  return FALSE;
}

/* videotestsrc -> spicetiler -> spicestreamenc (vp8enc at 2 Mbit/s) ->
 * spicesink, and a raw client that reads its display socket at 100 KB/s
 * (800 kbit/s): every spice-rate the sink sends is applied by the bin
 * (checked on the bin's src pad as each one passes), the applied bitrate
 * falls below 1.5 Mbit/s and comes back to the description's when the
 * client leaves */
GST_START_TEST (test_end_to_end_slow_client)
{
  RateLog *r = g_new0 (RateLog, 1);
  GstElement *pipeline, *sink, *bin;
  GstPad *pad;
  GError *err = NULL;
  SpiceRawSession *s;
  GSocket *sock;
  guint8 buf[2000];
  guint64 read = 0;
  gint64 start, end;
  gint port = 0;
  guint applied = 0, i;

  pipeline = gst_parse_launch ("videotestsrc is-live=true pattern=snow ! "
      "video/x-raw,format=BGRx,width=320,height=240,framerate=25/1 ! "
      "spicetiler name=t streaming=all stream-min-frames=5 "
      "t.draw ! s.draw "
      "t.stream ! spicestreamenc name=enc encoder=\"vp8enc deadline=1 "
      "cpu-used=16 end-usage=cbr target-bitrate=2000000 lag-in-frames=0 "
      "threads=1\" ! s.stream_0 "
      "spicesink name=s address=127.0.0.1 port=0", &err);
  fail_unless (pipeline != NULL, "%s", err ? err->message : "?");
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "s");
  bin = gst_bin_get_by_name (GST_BIN (pipeline), "enc");
  g_mutex_init (&r->lock);
  r->bin = bin;
  r->min_applied = G_MAXUINT;
  pad = gst_element_get_static_pad (bin, "src");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_EVENT_UPSTREAM,
      bin_src_rate_probe, r, rate_log_free);
  gst_object_unref (pad);
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  g_object_get (sink, "bound-port", &port, NULL);
  fail_unless (port > 0);

  s = spice_raw_session_new (port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (s != NULL);
  sock = s->display->sock;
  /* a small receive buffer: the window fills at once */
  g_socket_set_option (sock, SOL_SOCKET, SO_RCVBUF, 16384, NULL);
  g_socket_set_blocking (sock, FALSE);
  start = g_get_monotonic_time ();
  end = start + 20 * G_TIME_SPAN_SECOND * test_time_factor ();
  while (g_get_monotonic_time () < end &&
      rate_log_last_applied (r) >= 1500000) {
    gssize n = g_socket_receive (sock, (gchar *) buf, sizeof (buf), NULL,
        NULL);

    if (n > 0)
      read += n;
    g_usleep (20 * 1000);
  }
  g_mutex_lock (&r->lock);
  g_print ("RESULT end to end, client reading 100 KB/s: after %.1f s "
      "(%" G_GUINT64_FORMAT " bytes read) %u spice-rate events, last %u bit/s"
      " -> vp8enc target-bitrate %u (lowest %u, description 2000000), %u "
      "mismatches\n", (g_get_monotonic_time () - start) / 1e6, read,
      r->events, r->last_bitrate, r->last_applied, r->min_applied,
      r->mismatches);
  fail_unless (r->events >= 1, "no spice-rate from the sink");
  fail_unless_equals_int (r->mismatches, 0);
  fail_unless (r->last_applied < 1500000, "applied %u", r->last_applied);
  g_mutex_unlock (&r->lock);
  fail_unless (encoder_follows_bin (bin, 2000));

  /* nobody left: the sink says so, the bin goes back to the description */
  spice_raw_session_free (s);
  for (i = 0; i < 100 * test_time_factor (); i++) {
    g_object_get (bin, "applied-value", &applied, NULL);
    if (applied == 2000000)
      break;
    g_usleep (100 * 1000);
  }
  fail_unless_equals_int (applied, 2000000);
  fail_unless (encoder_follows_bin (bin, 2000));
  g_mutex_lock (&r->lock);
  fail_unless_equals_int (r->mismatches, 0);
  g_mutex_unlock (&r->lock);

  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bin);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
}

GST_END_TEST;

/* the colorimetry the bin asks on its sink pad with @encoder (NULL: none);
 * g_free() it */
static gchar *
sink_colorimetry (const gchar * encoder)
{
  GstElement *bin = gst_element_factory_make ("spicestreamenc", NULL);
  GstCaps *caps;
  GstPad *pad;
  gchar *c;

  g_object_set (bin, "encoder", encoder, NULL);
  fail_unless_equals_int (gst_element_set_state (bin, GST_STATE_READY),
      GST_STATE_CHANGE_SUCCESS);
  pad = gst_element_get_static_pad (bin, "sink");
  caps = gst_pad_query_caps (pad, NULL);
  fail_if (gst_caps_is_empty (caps) || gst_caps_is_any (caps));
  c = g_strdup (gst_structure_get_string (gst_caps_get_structure (caps, 0),
          "colorimetry"));
  gst_caps_unref (caps);
  gst_object_unref (pad);
  gst_element_set_state (bin, GST_STATE_NULL);
  gst_object_unref (bin);
  return c;
}

/* JPEG clients decode JFIF (full-range YCbCr): the bin asks its input in
 * full range (spicetiler's converter then writes white as 255, not 235:
 * tests/tiler test_stream_colorimetry_from_downstream); other encoders'
 * input keeps the default */
GST_START_TEST (test_jpeg_input_full_range)
{
  gchar *c;

  c = sink_colorimetry ("jpegenc quality=100");
  fail_unless_equals_string (c, "1:4:0:0");
  g_free (c);
  c = sink_colorimetry ("vp8enc deadline=1");
  fail_unless (c == NULL, "vp8enc input asked as %s", c);
}

GST_END_TEST;

/* what reached the encoder's sink pad: the test's stream-start, caps
 * events (their widths) and GAPs, in order */
static GstPadProbeReturn
encoder_input_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  GString *seen = data;
  GstEvent *event = GST_PAD_PROBE_INFO_EVENT (info);

  if (GST_EVENT_TYPE (event) == GST_EVENT_STREAM_START) {
    const gchar *id;

    /* the harness's own first one may pass after the probe is added */
    gst_event_parse_stream_start (event, &id);
    if (g_strcmp0 (id, "second") == 0)
      g_string_append (seen, "stream-start second;");
  } else if (GST_EVENT_TYPE (event) == GST_EVENT_CAPS) {
    GstCaps *caps;
    gint w = 0;

    gst_event_parse_caps (event, &caps);
    gst_structure_get_int (gst_caps_get_structure (caps, 0), "width", &w);
    g_string_append_printf (seen, "caps %d;", w);
  } else if (GST_EVENT_TYPE (event) == GST_EVENT_GAP)
    g_string_append (seen, "gap;");
  return GST_PAD_PROBE_OK;
}

static GstCaps *
i420_caps (gint w, gint h)
{
  return gst_caps_new_simple ("video/x-raw", "format", G_TYPE_STRING, "I420",
      "width", G_TYPE_INT, w, "height", G_TYPE_INT, h, "framerate",
      GST_TYPE_FRACTION, 30, 1, NULL);
}

/* As spicetiler does: caps of the surface's size (1280x800) when its input
 * starts, GAPs while nothing streams, then the stream's caps (320x240)
 * with its first frame. vp8enc is set up once, at 320x240: the surface's
 * caps and the GAPs before any caps stop in the bin; later GAPs pass. A
 * stream-start that comes while caps are held goes on before them. */
GST_START_TEST (test_caps_wait_for_a_frame)
{
  GstElement *bin, *enc;
  GstHarness *h;
  GString *seen = g_string_new (NULL);
  GstBuffer *in, *out;
  GstPad *pad;
  gint i;

  bin = gst_element_factory_make ("spicestreamenc", NULL);
  g_object_set (bin, "encoder", "vp8enc deadline=1 cpu-used=16 "
      "target-bitrate=500000 lag-in-frames=0", NULL);
  h = gst_harness_new_with_element (bin, "sink", "src");
  gst_harness_set_src_caps (h, i420_caps (1280, 800));
  {
    GstIterator *it = gst_bin_iterate_recurse (GST_BIN (bin));
    GValue item = G_VALUE_INIT;

    fail_unless (gst_iterator_find_custom (it, has_factory, &item,
            (gpointer) "vp8enc"));
    gst_iterator_free (it);
    enc = g_value_dup_object (&item);
    g_value_unset (&item);
  }
  pad = gst_element_get_static_pad (enc, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM,
      encoder_input_probe, seen, NULL);
  for (i = 0; i < 3; i++)
    fail_unless (gst_harness_push_event (h, gst_event_new_gap (i * GST_SECOND
                / 30, GST_SECOND / 30)));
  /* a new stream while caps are held: it goes on before them */
  fail_unless (gst_harness_push_event (h,
          gst_event_new_stream_start ("second")));
  gst_harness_set_src_caps (h, i420_caps (320, 240));
  in = gst_buffer_new_allocate (NULL, 320 * 240 * 3 / 2, NULL);
  gst_buffer_memset (in, 0, 0x80, 320 * 240 * 3 / 2);
  GST_BUFFER_PTS (in) = 3 * GST_SECOND / 30;
  GST_BUFFER_DURATION (in) = GST_SECOND / 30;
  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless (out != NULL);
  gst_buffer_unref (out);
  fail_unless (gst_harness_push_event (h, gst_event_new_gap (4 * GST_SECOND
              / 30, GST_SECOND / 30)));
  /* the GAP went through the queue's thread: wait for it at the encoder */
  for (i = 0; i < 500 && !g_str_has_suffix (seen->str, "gap;"); i++)
    g_usleep (10000);
  fail_unless_equals_string (seen->str, "stream-start second;caps 320;gap;");
  {
    GstCaps *caps = gst_pad_get_current_caps (pad);
    gint w = 0;

    fail_unless (caps != NULL);
    gst_structure_get_int (gst_caps_get_structure (caps, 0), "width", &w);
    fail_unless_equals_int (w, 320);
    gst_caps_unref (caps);
  }
  gst_object_unref (pad);
  gst_object_unref (enc);
  gst_harness_teardown (h);
  g_string_free (seen, TRUE);
}

GST_END_TEST;

static Suite *
streamenc_suite (void)
{
  Suite *s = suite_create ("streamenc");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_vp8enc);
  tcase_add_test (tc, test_vp9enc);
  tcase_add_test (tc, test_x264enc);
  tcase_add_test (tc, test_openh264enc);
  tcase_add_test (tc, test_jpegenc);
  tcase_add_test (tc, test_jpegenc_slow_frames);
  tcase_add_test (tc, test_jpeg_input_full_range);
  tcase_add_test (tc, test_caps_wait_for_a_frame);
  tcase_add_test (tc, test_unknown_encoder);
  tcase_add_test (tc, test_bad_description);
  tcase_add_test (tc, test_encoder_the_sink_cannot_take);
  tcase_add_test (tc, test_rebuild);
  tcase_add_test (tc, test_end_to_end_slow_client);
  return s;
}

GST_CHECK_MAIN (streamenc);
