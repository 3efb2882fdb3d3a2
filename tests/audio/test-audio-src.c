/* gst-spice tests/audio: spicesrc's audio pad against the test guest's
 * tone (a real libspice-server playing through spice-gtk): caps, the tone
 * at the right frequencies and without a sample missing (its segment
 * boundaries where the guest's own sample clock put them), continuous
 * timestamps on the video's base, a DISCONT where samples were dropped,
 * spice-audio-stop at STOP and a new stream at START that the sink takes, volume/mute as the sticky
 * spice-audio-volume event. */
#include <gst/check/gstcheck.h>
#include <gst/app/gstappsink.h>
#include <gst/spice/gstspice.h>

#include <math.h>
#include <stdio.h>

#include "guest-launcher.h"
#include "audio-check.h"
#include "context-blocker.h"
#include "element-stats.h"

typedef struct
{
  GMutex lock;
  guint stops, stream_starts, volumes;
  guint n_volume;
  guint16 volume[2];
  gboolean mute;
  guint buffers, gaps, disconts;
  GstClockTime next_pts, last_pts;
  GstClockTimeDiff jump;        /* of the last DISCONT: PTS - expected */
  GByteArray *data;
  GArray *cuts;                 /* offsets in data of DISCONT buffers */
  GstClockTime video_pts;
  GstElement *pipe;
  /* arrival (running time when the buffer reached the appsink) - PTS */
  GstClockTimeDiff late_min, late_max;
  gboolean hold;                /* the audio task waits here until FALSE */
  GCond cond;
} Probe;

static GstPadProbeReturn
audio_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  Probe *p = user_data;

  g_mutex_lock (&p->lock);
  if (info->type & GST_PAD_PROBE_TYPE_BUFFER) {
    GstBuffer *b = GST_PAD_PROBE_INFO_BUFFER (info);
    GstMapInfo map;
    GstClock *clock;

    while (p->hold)
      g_cond_wait (&p->cond, &p->lock);
    if ((clock = gst_element_get_clock (p->pipe))) {
      GstClockTimeDiff late = GST_CLOCK_DIFF (GST_BUFFER_PTS (b),
          gst_clock_get_time (clock) - gst_element_get_base_time (p->pipe));

      if (p->buffers == 0 || late < p->late_min)
        p->late_min = late;
      if (p->buffers == 0 || late > p->late_max)
        p->late_max = late;
      gst_object_unref (clock);
    }
    if (GST_BUFFER_FLAG_IS_SET (b, GST_BUFFER_FLAG_DISCONT)) {
      guint off = p->data->len;

      g_array_append_val (p->cuts, off);
      p->disconts++;
      if (GST_CLOCK_TIME_IS_VALID (p->next_pts))
        p->jump = GST_CLOCK_DIFF (p->next_pts, GST_BUFFER_PTS (b));
    } else if (GST_CLOCK_TIME_IS_VALID (p->next_pts) &&
        GST_BUFFER_PTS (b) != p->next_pts)
      p->gaps++;
    p->next_pts = GST_BUFFER_PTS (b) + GST_BUFFER_DURATION (b);
    p->last_pts = GST_BUFFER_PTS (b);
    p->buffers++;
    gst_buffer_map (b, &map, GST_MAP_READ);
    g_byte_array_append (p->data, map.data, map.size);
    gst_buffer_unmap (b, &map);
  } else {
    GstEvent *e = GST_PAD_PROBE_INFO_EVENT (info);

    switch (GST_EVENT_TYPE (e)) {
      case GST_EVENT_CUSTOM_DOWNSTREAM:
        if (gst_spice_event_is_audio_stop (e)) {
          p->stops++;
          p->next_pts = GST_CLOCK_TIME_NONE;
        }
        break;
      case GST_EVENT_STREAM_START:
        p->stream_starts++;
        break;
      case GST_EVENT_CUSTOM_DOWNSTREAM_STICKY:
        if (gst_spice_event_parse_audio_volume (e, &p->n_volume, p->volume,
                &p->mute))
          p->volumes++;
        break;
      default:
        break;
    }
  }
  g_mutex_unlock (&p->lock);
  return GST_PAD_PROBE_OK;
}

static GstPadProbeReturn
video_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  Probe *p = user_data;

  g_mutex_lock (&p->lock);
  p->video_pts = GST_BUFFER_PTS (GST_PAD_PROBE_INFO_BUFFER (info));
  g_mutex_unlock (&p->lock);
  return GST_PAD_PROBE_OK;
}

/* waits until *counter >= want (under p->lock) */
static gboolean
wait_count (Probe * p, const guint * counter, guint want, guint timeout_ms)
{
  gint64 end = g_get_monotonic_time () + timeout_ms * 1000LL *
      test_time_factor ();
  gboolean ok;

  for (;;) {
    g_mutex_lock (&p->lock);
    ok = *counter >= want;
    g_mutex_unlock (&p->lock);
    if (ok || g_get_monotonic_time () > end)
      return ok;
    g_usleep (20000);
  }
}

/* spicesrc on the guest GP, video to a fakesink, audio to an appsink;
 * P counts what reaches both */
static GstElement *
audio_pipeline (GuestProcess * gp, Probe * p, GstElement ** asink,
    GstElement ** vsink)
{
  GError *err = NULL;
  gchar *uri = guest_process_get_uri (gp);
  gchar *desc = g_strdup_printf ("spicesrc name=src uri=%s ! fakesink "
      "name=v sync=false src.audio ! appsink name=a sync=false "
      "max-buffers=4000 wait-on-eos=false", uri);
  GstElement *pipe = gst_parse_launch (desc, &err);
  GstPad *pad;

  fail_unless (pipe != NULL, "%s", err ? err->message : "");
  g_free (desc);
  g_free (uri);
  g_mutex_init (&p->lock);
  g_cond_init (&p->cond);
  p->pipe = pipe;
  p->data = g_byte_array_new ();
  p->cuts = g_array_new (FALSE, FALSE, sizeof (guint));
  p->next_pts = GST_CLOCK_TIME_NONE;
  *asink = gst_bin_get_by_name (GST_BIN (pipe), "a");
  *vsink = gst_bin_get_by_name (GST_BIN (pipe), "v");
  pad = gst_element_get_static_pad (*asink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER |
      GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, audio_probe, p, NULL);
  gst_object_unref (pad);
  pad = gst_element_get_static_pad (*vsink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, video_probe, p, NULL);
  gst_object_unref (pad);
  fail_unless (gst_element_set_state (pipe, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  return pipe;
}

static void
audio_pipeline_free (GstElement * pipe, Probe * p, GstElement * asink,
    GstElement * vsink)
{
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (asink);
  gst_object_unref (vsink);
  gst_object_unref (pipe);
  g_byte_array_unref (p->data);
  g_array_unref (p->cuts);
  g_cond_clear (&p->cond);
  g_mutex_clear (&p->lock);
}

/* The continuity check (audio-check.h, audio_check_gaps) on each run of
 * @left between two DISCONTs (@cuts, byte offsets of @channels S16): the
 * tone's segment boundaries must be where the guest's own sample clock put
 * them, every GUEST_AUDIO_SEGMENT_MS of samples, so a sample missing or
 * repeated without a DISCONT shows as a slip. Returns the longest run's
 * length in frames; *bad: steps out of order plus slips beyond the bound,
 * over all runs long enough to tell (four boundaries). */
static gsize
check_runs (const gint16 * left, gsize n, const GArray * cuts,
    guint channels, guint rate, guint * bad)
{
  gsize start = 0, longest = 0;
  guint i;

  *bad = 0;
  for (i = 0; i <= cuts->len; i++) {
    gsize end = i < cuts->len ? g_array_index (cuts, guint, i) / 2 /
        channels : n;
    AudioGapReport r;

    if (end <= start)
      continue;
    longest = MAX (longest, end - start);
    audio_check_gaps (left + start, end - start, rate, &r);
    GST_INFO ("run of %.2f s: %u boundaries, %u bad steps, slip %"
        G_GINT64_FORMAT " frames at most", (end - start) / (gdouble) rate,
        r.boundaries, r.bad_steps, r.worst_slip_frames);
    if (r.boundaries >= 4) {
      *bad += r.bad_steps;
      if (r.max_slip_frames > AUDIO_GAP_BOUND_FRAMES)
        (*bad)++;
    }
    start = end;
  }
  return longest;
}

GST_START_TEST (test_src_audio_tone)
{
  const gchar *args[] = { "--audio", "tone", "--activity", "busy", NULL };
  GError *err = NULL;
  GuestProcess *gp = guest_process_start (args, &err);
  GstElement *pipe, *asink, *vsink;
  GstPad *pad;
  Probe p = { 0 };
  AudioToneReport r;
  GstCaps *caps;
  GstStructure *s;
  gint rate = 0, channels = 0;
  gint64 t0;
  guint buffers0, bad, disconts;
  gsize n, longest;
  gint16 *left;
  GstClockTime apts, vpts, stop_pts;
  GstElement *src;
  guint64 resyncs, dropped;

  fail_unless (gp != NULL, "%s", err ? err->message : "");
  pipe = audio_pipeline (gp, &p, &asink, &vsink);

  /* 4 s of tone after the first buffer, however long a loaded machine
   * takes to bring them (how fast they come is not the question: whether
   * one is missing, the tone itself says) */
  fail_unless (wait_count (&p, &p.buffers, 1, 20000), "no audio buffer");
  g_mutex_lock (&p.lock);
  g_byte_array_set_size (p.data, 0);
  g_array_set_size (p.cuts, 0);
  disconts = p.disconts;
  g_mutex_unlock (&p.lock);
  t0 = g_get_monotonic_time ();
  fail_unless (wait_count (&p, &p.data->len, 4 * GUEST_AUDIO_RATE * 4,
          30000), "less than 4 s of sound in 30 s");

  pad = gst_element_get_static_pad (asink, "sink");
  caps = gst_pad_get_current_caps (pad);
  gst_object_unref (pad);
  fail_unless (caps != NULL);
  s = gst_caps_get_structure (caps, 0);
  fail_unless_equals_string (gst_structure_get_string (s, "format"), "S16LE");
  gst_structure_get_int (s, "rate", &rate);
  gst_structure_get_int (s, "channels", &channels);
  gst_caps_unref (caps);
  fail_unless_equals_int (rate, GUEST_AUDIO_RATE);
  fail_unless_equals_int (channels, 2);

  g_mutex_lock (&p.lock);
  left = audio_check_left (p.data->data, p.data->len, 2, &n);
  apts = p.last_pts;
  vpts = p.video_pts;
  /* timestamps go on from one buffer to the next unless it says DISCONT */
  fail_unless_equals_int (p.gaps, 0);
  disconts = p.disconts - disconts;
  longest = check_runs (left, n, p.cuts, 2, rate, &bad);
  g_mutex_unlock (&p.lock);
  /* a DISCONT has a cause spicesrc counted: a resync (the stream's first
   * buffer, or samples the server dropped while this process stalled: a
   * loaded machine, a real hole) or buffers its queue dropped while the
   * audio task did not run */
  src = gst_bin_get_by_name (GST_BIN (pipe), "src");
  resyncs = test_element_stat_u64 (src, "audio-resyncs");
  dropped = test_element_stat_u64 (src, "audio-dropped");
  gst_object_unref (src);
  audio_check_tone (left, n, rate, &r);
  g_free (left);
  GST_INFO ("%" G_GSIZE_FORMAT " frames in %.2f s, %u discontinuities "
      "(resyncs %" G_GUINT64_FORMAT ", dropped %" G_GUINT64_FORMAT "), "
      "longest run %.2f s: %u windows, %u recognized, %u changes (%u bad), "
      "audio pts %" GST_TIME_FORMAT " video pts %" GST_TIME_FORMAT, n,
      (g_get_monotonic_time () - t0) / 1e6, disconts, resyncs, dropped,
      longest / (gdouble) rate, r.windows, r.recognized, r.changes,
      r.bad_changes, GST_TIME_ARGS (apts), GST_TIME_ARGS (vpts));
  fail_unless (disconts <= resyncs + dropped, "%u discontinuities, %"
      G_GUINT64_FORMAT " resyncs, %" G_GUINT64_FORMAT " buffers dropped",
      disconts, resyncs, dropped);
  /* no sample missing or repeated between two DISCONTs */
  fail_unless (longest >= 2 * (gsize) rate, "no 2 s without a DISCONT "
      "(longest %.2f s, %u discontinuities)", longest / (gdouble) rate,
      disconts);
  fail_unless_equals_int (bad, 0);
  fail_unless (r.recognized >= r.windows * 9 / 10, "%u of %u windows",
      r.recognized, r.windows);
  fail_unless (r.changes >= 6);
  fail_unless_equals_int (r.bad_changes, 0);
  /* both on the same running-time base: the busy activity draws at 30 fps */
  fail_unless (GST_CLOCK_TIME_IS_VALID (vpts));
  fail_unless (ABS (GST_CLOCK_DIFF (apts, vpts)) < 500 * GST_MSECOND,
      "audio %" GST_TIME_FORMAT " vs video %" GST_TIME_FORMAT,
      GST_TIME_ARGS (apts), GST_TIME_ARGS (vpts));

  /* STOP ends the stream, START begins a new one that still plays */
  guest_process_command (gp, "audio stop");
  fail_unless (wait_count (&p, &p.stops, 1, 10000), "no stop event");
  g_mutex_lock (&p.lock);
  stop_pts = p.last_pts;
  g_mutex_unlock (&p.lock);
  guest_process_command (gp, "audio start");
  fail_unless (wait_count (&p, &p.stream_starts, 2, 10000),
      "no new stream after start");
  g_mutex_lock (&p.lock);
  buffers0 = p.buffers;
  g_mutex_unlock (&p.lock);
  fail_unless (wait_count (&p, &p.buffers, buffers0 + 20, 10000),
      "no data after the restart");
  /* and the sink takes it (a basesink after EOS takes a new stream) */
  {
    GstClockTime newest = 0;
    GstSample *sample;

    while (newest <= stop_pts && (sample =
            gst_app_sink_try_pull_sample (GST_APP_SINK (asink),
                5 * GST_SECOND))) {
      newest = GST_BUFFER_PTS (gst_sample_get_buffer (sample));
      gst_sample_unref (sample);
    }
    fail_unless (newest > stop_pts, "appsink took nothing after the restart");
  }

  /* volume and mute */
  guest_process_command (gp, "audio volume 1000");
  guest_process_command (gp, "audio mute 1");
  {
    gint64 end = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
    gboolean ok = FALSE;

    while (!ok && g_get_monotonic_time () < end) {
      g_usleep (20000);
      g_mutex_lock (&p.lock);
      ok = p.mute && p.n_volume == 2 && p.volume[0] == 1000;
      g_mutex_unlock (&p.lock);
    }
    fail_unless (ok, "no volume 1000 / mute event (%u events, volume %u, "
        "mute %d)", p.volumes, p.volume[0], p.mute);
  }

  audio_pipeline_free (pipe, &p, asink, vsink);
  guest_process_stop (gp);
}

GST_END_TEST;

/* after the arrival of RATE * SECS more frames: P's counters */
static void
wait_frames (Probe * p, guint rate, gdouble secs, guint * disconts,
    guint * gaps)
{
  guint want;

  g_mutex_lock (&p->lock);
  want = p->data->len + (guint) (secs * rate) * 4;
  g_mutex_unlock (&p->lock);
  fail_unless (wait_count (p, &p->data->len, want, 20000), "the audio stopped");
  g_mutex_lock (&p->lock);
  *disconts = p->disconts;
  *gaps = p->gaps;
  g_mutex_unlock (&p->lock);
}

/* audio_pipeline () on GP's tone, its spicesrc in *SRC, after its first
 * second of sound (P's counters then in *D0, *G0) */
static GstElement *
tone_pipeline (GuestProcess * gp, Probe * p, GstElement ** asink,
    GstElement ** vsink, GstElement ** src, guint * d0, guint * g0)
{
  GstElement *pipe = audio_pipeline (gp, p, asink, vsink);

  *src = gst_bin_get_by_name (GST_BIN (pipe), "src");
  fail_unless (wait_count (p, &p->buffers, 1, 20000), "no audio buffer");
  wait_frames (p, GUEST_AUDIO_RATE, 1.0, d0, g0);
  return pipe;
}

/* A guest that stalls 400 ms and then catches up in one burst (no sample
 * missing) keeps continuous timestamps: no DISCONT, the tone's segments in
 * order. A guest whose sound clock pauses 1 s (those samples never exist)
 * gets one DISCONT whose timestamps jump by about the pause. Before the
 * rule that a drift must last, the stall cost two: forward at the late
 * packet, back at the burst. The pause is 1 s, five times what spicesrc
 * tolerates (200 ms), so that the arrival jitter of a loaded machine
 * cannot hide it (with 400 ms a stream whose first packet came 150 ms late
 * drifted 250 ms, and bursts of late packets kept resetting the drift).
 * The jump is the pause plus how late the stream's packets already came
 * for their timestamps (up to the 200 ms spicesrc tolerates either way: a
 * loaded machine's first packet may set them early or late), which is
 * measured in the same run at the appsink. */
GST_START_TEST (test_src_audio_stall_and_pause)
{
  const gchar *args[] = { "--audio", "tone", NULL };
  GError *err = NULL;
  GuestProcess *gp = guest_process_start (args, &err);
  GstElement *pipe, *asink, *vsink;
  Probe p = { 0 };
  AudioToneReport r;
  guint d0, g0, d1, g1, d2, g2;
  gsize n;
  gint16 *left;
  GstClockTimeDiff jump, late_min, late_max;
  GstElement *src;
  guint64 dropped;

  fail_unless (gp != NULL, "%s", err ? err->message : "");
  pipe = tone_pipeline (gp, &p, &asink, &vsink, &src, &d0, &g0);
  fail_unless_equals_int (d0, 1);       /* the stream's first buffer */

  guest_process_command (gp, "audio stall 400");
  wait_frames (&p, GUEST_AUDIO_RATE, 2.0, &d1, &g1);
  fail_unless_equals_int (d1, d0);
  fail_unless_equals_int (g1, 0);
  g_mutex_lock (&p.lock);
  left = audio_check_left (p.data->data, p.data->len, 2, &n);
  g_mutex_unlock (&p.lock);
  audio_check_tone (left, n, GUEST_AUDIO_RATE, &r);
  g_free (left);
  GST_INFO ("stall: %u windows, %u recognized, %u changes (%u bad)",
      r.windows, r.recognized, r.changes, r.bad_changes);
  fail_unless (r.changes >= 3);
  fail_unless_equals_int (r.bad_changes, 0);

  /* how late for their timestamps the buffers come over 1 s before the
   * pause, the stall's burst past (at the appsink: the audio task's own
   * delays included) */
  g_mutex_lock (&p.lock);
  p.late_min = G_MAXINT64;
  p.late_max = G_MININT64;
  g_mutex_unlock (&p.lock);
  wait_frames (&p, GUEST_AUDIO_RATE, 1.0, &d1, &g1);
  fail_unless_equals_int (d1, d0);
  g_mutex_lock (&p.lock);
  late_min = p.late_min;
  late_max = p.late_max;
  g_mutex_unlock (&p.lock);
  guest_process_command (gp, "audio pause 1000");
  wait_frames (&p, GUEST_AUDIO_RATE, 2.0, &d2, &g2);
  g_mutex_lock (&p.lock);
  jump = p.jump;
  g_mutex_unlock (&p.lock);
  dropped = test_element_stat_u64 (src, "audio-dropped");
  GST_INFO ("pause: %u discontinuities, jump %" GST_STIME_FORMAT
      ", buffers %" GST_STIME_FORMAT " to %" GST_STIME_FORMAT " late before "
      "it, %" G_GUINT64_FORMAT " buffers dropped", d2 - d1,
      GST_STIME_ARGS (jump), GST_STIME_ARGS (late_min),
      GST_STIME_ARGS (late_max), dropped);
  fail_unless_equals_int (g2, 0);
  /* one, unless spicesrc's queue also dropped (each drop has its own) */
  fail_unless (d2 == d1 + 1 || (d2 > d1 + 1 && dropped > 0),
      "%u discontinuities after the pause", d2 - d1);
  /* the pause plus how late the buffers already were (the resynchronized
   * one is stamped at its arrival); less up to 100 ms that they spent
   * between spicesrc and the appsink, more up to 200 ms for the
   * resynchronized one's own delay */
  fail_unless (jump > GST_SECOND + late_min - 100 * GST_MSECOND &&
      jump < GST_SECOND + late_max + 200 * GST_MSECOND,
      "the timestamps jumped %" GST_STIME_FORMAT " for a pause of 1 s "
      "(buffers %" GST_STIME_FORMAT " to %" GST_STIME_FORMAT " late before "
      "it)", GST_STIME_ARGS (jump), GST_STIME_ARGS (late_min),
      GST_STIME_ARGS (late_max));

  gst_object_unref (src);
  audio_pipeline_free (pipe, &p, asink, vsink);
  guest_process_stop (gp);
}

GST_END_TEST;

/* Downstream blocks for 800 ms (the appsink's streaming thread held in a
 * probe): spicesrc's queue towards its audio task keeps 500 ms and drops
 * the oldest buffers. The hole is before the oldest buffer kept, and that
 * buffer carries the DISCONT, its timestamp the hole's length later: the
 * buffers after it go on without one, and the tone between two DISCONTs
 * misses no sample. Before the fix the DISCONT went to the newest buffer
 * at each drop, so the oldest one kept jumped without it (what a loaded
 * machine showed as a gap in test_src_audio_tone: 1 gap here) and newer
 * ones carried a DISCONT where nothing was missing. */
GST_START_TEST (test_src_audio_blocked_downstream)
{
  const gchar *args[] = { "--audio", "tone", NULL };
  GError *err = NULL;
  GuestProcess *gp = guest_process_start (args, &err);
  GstElement *pipe, *asink, *vsink, *src;
  Probe p = { 0 };
  guint d0, g0, d1, g1, bad;
  gsize n, longest;
  gint16 *left;
  GstClockTimeDiff jump;
  guint64 dropped;

  fail_unless (gp != NULL, "%s", err ? err->message : "");
  pipe = tone_pipeline (gp, &p, &asink, &vsink, &src, &d0, &g0);

  g_mutex_lock (&p.lock);
  p.hold = TRUE;
  g_mutex_unlock (&p.lock);
  g_usleep (800 * 1000);
  g_mutex_lock (&p.lock);
  p.hold = FALSE;
  g_cond_broadcast (&p.cond);
  g_mutex_unlock (&p.lock);
  wait_frames (&p, GUEST_AUDIO_RATE, 3.0, &d1, &g1);

  dropped = test_element_stat_u64 (src, "audio-dropped");
  g_mutex_lock (&p.lock);
  jump = p.jump;
  left = audio_check_left (p.data->data, p.data->len, 2, &n);
  longest = check_runs (left, n, p.cuts, 2, GUEST_AUDIO_RATE, &bad);
  g_mutex_unlock (&p.lock);
  g_free (left);
  GST_INFO ("blocked 800 ms: %" G_GUINT64_FORMAT " buffers dropped, %u "
      "discontinuities, %u gaps, jump %" GST_STIME_FORMAT ", longest run "
      "%.2f s", dropped, d1 - d0, g1, GST_STIME_ARGS (jump),
      longest / (gdouble) GUEST_AUDIO_RATE);
  fail_unless (dropped > 0, "the queue dropped nothing in 800 ms");
  fail_unless_equals_int (g1, 0);
  /* one hole, one DISCONT, the length of what the queue dropped (all its
   * buffers here are 10 ms) */
  fail_unless_equals_int (d1, d0 + 1);
  fail_unless (ABS (jump - (GstClockTimeDiff) dropped * 10 * GST_MSECOND) <
      GST_MSECOND, "jump %" GST_STIME_FORMAT " for %" G_GUINT64_FORMAT
      " buffers dropped", GST_STIME_ARGS (jump), dropped);
  fail_unless (longest >= 2 * GUEST_AUDIO_RATE);
  fail_unless_equals_int (bad, 0);

  gst_object_unref (src);
  audio_pipeline_free (pipe, &p, asink, vsink);
  guest_process_stop (gp);
}

GST_END_TEST;

/* 10 ms of a 700 Hz tone at the guest's rate, stereo S16, the phase going
 * on from *frame */
static GstEvent *
record_packet (guint64 * frame)
{
  const guint n = GUEST_AUDIO_RATE / 100;
  GstBuffer *b = gst_buffer_new_allocate (NULL, n * 4, NULL);
  GstMapInfo map;
  GstEvent *e;
  guint i;

  gst_buffer_map (b, &map, GST_MAP_WRITE);
  for (i = 0; i < n; i++, (*frame)++) {
    gint16 v = (gint16) (8000 * sin (2 * G_PI * 700 * *frame /
            GUEST_AUDIO_RATE));

    GST_WRITE_UINT16_LE (map.data + i * 4, v);
    GST_WRITE_UINT16_LE (map.data + i * 4 + 2, v);
  }
  gst_buffer_unmap (b, &map);
  e = gst_spice_event_new_record_data (b);
  gst_buffer_unref (b);
  return e;
}

#define stat_u64 test_element_stat_u64
/* spicesrc's bound on record data waiting for its context */
#define RECORD_BOUND 50
#define RECORD_PACKET_BYTES (GUEST_AUDIO_RATE / 100 * 4)

/* waits until the stat @field of @src is @want */
static gboolean
wait_stat (GstElement * src, const gchar * field, guint64 want)
{
  gint64 end = g_get_monotonic_time () + 20 * G_USEC_PER_SEC *
      test_time_factor ();

  while (stat_u64 (src, field) != want && g_get_monotonic_time () < end)
    g_usleep (10 * 1000);
  return stat_u64 (src, field) == want;
}

static gint drop_warnings;

static void
count_drop_warnings (GstDebugCategory * category, GstDebugLevel level,
    const gchar * file, const gchar * function, gint line, GObject * object,
    GstDebugMessage * message, gpointer user_data)
{
  if (level == GST_LEVEL_WARNING &&
      g_str_equal (gst_debug_category_get_name (category), "spicesrcaudio") &&
      g_str_has_prefix (gst_debug_message_get (message), "record data: "))
    g_atomic_int_inc (&drop_warnings);
}

/* A flood of record data while spicesrc's context cannot run (a test
 * thread holds it, as a busy application thread would): at most
 * RECORD_BOUND packets wait there, the rest is dropped and counted in
 * record-dropped with one warning; the record-stop sent after the flood
 * still takes effect (later data is dropped on the context), and so does
 * the next record-start (later data reaches the guest). */
GST_START_TEST (test_src_record_bound)
{
  const gchar *args[] = { "--audio", "on", NULL };
  GError *err = NULL;
  GuestProcess *gp = guest_process_start (args, &err);
  GstElement *pipe, *asink, *vsink, *src;
  GstPad *pad = NULL;
  Probe p = { 0 };
  TestContextBlocker *blocker;
  guint64 frame = 0, dropped0;
  gint64 end;
  guint i, mark, hz = 0, frames = 0;
  gint peak = 0;
  gchar *line;

  fail_unless (gp != NULL, "%s", err ? err->message : "");
  pipe = audio_pipeline (gp, &p, &asink, &vsink);
  src = gst_bin_get_by_name (GST_BIN (pipe), "src");
  /* the pad comes with the upstream's record start */
  end = g_get_monotonic_time () + 20 * G_USEC_PER_SEC * test_time_factor ();
  while (!(pad = gst_element_get_static_pad (src, "audio")) &&
      g_get_monotonic_time () < end)
    g_usleep (20 * 1000);
  fail_unless (pad != NULL, "no audio pad: the record channel never started");

  /* the context runs: five packets go through */
  mark = guest_process_mark (gp);
  fail_unless (gst_pad_send_event (pad,
          gst_spice_event_new_record_start (GUEST_AUDIO_RATE, 2)));
  for (i = 0; i < 5; i++)
    fail_unless (gst_pad_send_event (pad, record_packet (&frame)));
  fail_unless (wait_stat (src, "record-bytes", 5 * RECORD_PACKET_BYTES));
  dropped0 = stat_u64 (src, "record-dropped");

  /* the context is held: 200 packets, then the stop */
  gst_debug_set_threshold_for_name ("spicesrcaudio", GST_LEVEL_WARNING);
  gst_debug_add_log_function (count_drop_warnings, NULL, NULL);
  blocker = test_context_block ();
  for (i = 0; i < 200; i++) {
    fail_unless (gst_pad_send_event (pad, record_packet (&frame)));
    fail_unless (stat_u64 (src, "record-pending") <= RECORD_BOUND,
        "%" G_GUINT64_FORMAT " packets wait for the context",
        stat_u64 (src, "record-pending"));
  }
  fail_unless (gst_pad_send_event (pad, gst_spice_event_new_record_stop ()));
  fail_unless_equals_uint64 (stat_u64 (src, "record-pending"), RECORD_BOUND);
  fail_unless_equals_uint64 (stat_u64 (src, "record-dropped"),
      dropped0 + 200 - RECORD_BOUND);
  fail_unless_equals_uint64 (stat_u64 (src, "record-bytes"),
      5 * RECORD_PACKET_BYTES);
  test_context_unblock (blocker);
  gst_debug_remove_log_function (count_drop_warnings);
  /* 150 drops within a second: one warning */
  fail_unless_equals_int (g_atomic_int_get (&drop_warnings), 1);

  /* what waited is sent, in order, the stop last */
  fail_unless (wait_stat (src, "record-pending", 0));
  fail_unless_equals_uint64 (stat_u64 (src, "record-pending-max"),
      RECORD_BOUND);
  fail_unless_equals_uint64 (stat_u64 (src, "record-bytes"),
      (5 + RECORD_BOUND) * RECORD_PACKET_BYTES);
  for (i = 0; i < 10; i++)
    fail_unless (gst_pad_send_event (pad, record_packet (&frame)));
  fail_unless (wait_stat (src, "record-dropped",
          dropped0 + 200 - RECORD_BOUND + 10), "record data after the "
      "record-stop was not dropped: the stop was lost");
  fail_unless_equals_uint64 (stat_u64 (src, "record-bytes"),
      (5 + RECORD_BOUND) * RECORD_PACKET_BYTES);

  /* a new start: data goes through again */
  fail_unless (gst_pad_send_event (pad,
          gst_spice_event_new_record_start (GUEST_AUDIO_RATE, 2)));
  for (i = 0; i < 10; i++)
    fail_unless (gst_pad_send_event (pad, record_packet (&frame)));
  fail_unless (wait_stat (src, "record-bytes",
          (5 + RECORD_BOUND + 10) * RECORD_PACKET_BYTES));
  /* and reaches the guest: 1.2 s of tone at its pace (spice-server keeps
   * far less than the burst above for the guest to read) fill a 500 ms
   * window of the tone */
  for (i = 0; i < 120; i++) {
    fail_unless (gst_pad_send_event (pad, record_packet (&frame)));
    g_usleep (10 * 1000);
  }
  line = NULL;
  while (!(hz >= 680 && hz <= 720 && peak > 4000)) {
    guint idx = 0;
    gchar *next = guest_process_wait_line_from (gp, mark, "record level ",
        5000, &idx);

    if (!next)
      break;
    g_free (line);
    line = next;
    mark = idx + 1;
    fail_unless (sscanf (line, "record level %u %u %d", &frames, &hz,
            &peak) == 3, "%s", line);
  }
  fail_unless (line != NULL, "the guest recorded nothing");
  g_printerr ("guest: %s\n", line);
  fail_unless (hz >= 680 && hz <= 720 && peak > 4000, "recorded: %s", line);
  g_free (line);

  gst_object_unref (pad);
  gst_object_unref (src);
  audio_pipeline_free (pipe, &p, asink, vsink);
  guest_process_stop (gp);
}

GST_END_TEST;

/* the shared helpers: events and the Opus packet length */
GST_START_TEST (test_audio_helpers)
{
  guint16 vol[2] = { 100, 65535 }, got[2] = { 0, 0 };
  guint n = 0;
  gboolean mute = FALSE;
  GstEvent *e = gst_spice_event_new_audio_volume (2, vol, TRUE);
  GstBuffer *b = gst_buffer_new_allocate (NULL, 8, NULL), *gb = NULL;
  gint rate = 0, channels = 0;
  /* TOC: config 19 (CELT 20 ms... config 16+3: 20 ms), code 0 */
  const guint8 celt20[] = { (19 << 3) | 0, 0 };
  const guint8 celt10[] = { (18 << 3) | 0, 0 };
  const guint8 two10[] = { (18 << 3) | 1, 0 };
  const guint8 silk60x3[] = { (3 << 3) | 3, 3 };

  fail_unless (gst_spice_event_parse_audio_volume (e, &n, got, &mute));
  fail_unless (n == 2 && got[0] == 100 && got[1] == 65535 && mute);
  gst_event_unref (e);
  e = gst_spice_event_new_record_start (48000, 2);
  fail_unless (gst_spice_event_parse_record_start (e, &rate, &channels));
  fail_unless (rate == 48000 && channels == 2);
  fail_if (gst_spice_event_is_record_stop (e));
  gst_event_unref (e);
  e = gst_spice_event_new_record_data (b);
  fail_unless (gst_spice_event_parse_record_data (e, &gb));
  fail_unless (gb == b);
  gst_event_unref (e);
  gst_buffer_unref (b);
  fail_unless_equals_int (gst_spice_audio_opus_packet_samples (celt20, 2), 960);
  fail_unless_equals_int (gst_spice_audio_opus_packet_samples (celt10, 2), 480);
  fail_unless_equals_int (gst_spice_audio_opus_packet_samples (two10, 2), 960);
  /* 3 x 60 ms is more than Opus allows (120 ms) */
  fail_unless_equals_int (gst_spice_audio_opus_packet_samples (silk60x3, 2),
      -1);
  fail_unless_equals_int (gst_spice_audio_opus_packet_samples (NULL, 0), -1);
}

GST_END_TEST;

static Suite *
audio_src_suite (void)
{
  Suite *s = suite_create ("audio-src");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 120);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_audio_helpers);
  tcase_add_test (tc, test_src_audio_tone);
  tcase_add_test (tc, test_src_audio_stall_and_pause);
  tcase_add_test (tc, test_src_audio_blocked_downstream);
  tcase_add_test (tc, test_src_record_bound);
  return s;
}

GST_CHECK_MAIN (audio_src);
