/* gst-spice tests/audio: the whole chain with sound, real peers at both
 * ends:
 *   test guest (--audio) -> spicesrc -> spicetiler -> spicesink (draws)
 *                 spicesrc.audio -> queue [-> opusenc] -> spicesink.audio
 *   -> a spice-client-glib client (audio-listener.h)
 * The guest's tone reaches the client at the right frequencies without a
 * missing segment, raw and Opus (through the shipped transcode-vp8
 * pipeline: 30 s, no gap or repeated samples beyond 1 ms); a tone the client records reaches the
 * guest's record interface; a client without Opus gets no Opus stream and
 * its display is unaffected.
 */
#include <gst/check/gstcheck.h>
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>

#include "guest-launcher.h"
#include "spice-raw-client.h"
#include "runner-process.h"
#include "audio-check.h"
#include "audio-listener.h"
#include "pause-proxy.h"

typedef struct
{
  GuestProcess *guest;
  GstElement *pipe;
  guint port;
} Chain;

static void
chain_start (Chain * c, const gchar * audio_mode, const gchar * branch)
{
  const gchar *args[] = { "--audio", audio_mode, NULL };
  GError *err = NULL;
  gchar *uri, *desc;
  GstElement *src;
  gint64 end;
  gboolean linked = FALSE;

  c->guest = guest_process_start (args, &err);
  fail_unless (c->guest != NULL, "%s", err ? err->message : "");
  uri = guest_process_get_uri (c->guest);
  c->port = test_pick_free_port ();
  desc = g_strdup_printf ("spicesrc name=src uri=%s ! spicetiler name=t "
      "t.draw ! spicesink name=s port=%u src.audio ! %s ! s.audio", uri,
      c->port, branch);
  c->pipe = gst_parse_launch (desc, &err);
  fail_unless (c->pipe != NULL, "%s: %s", desc, err ? err->message : "");
  g_free (desc);
  g_free (uri);
  fail_unless (gst_element_set_state (c->pipe, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  /* clients see the audio channels once the audio branch is linked */
  src = gst_bin_get_by_name (GST_BIN (c->pipe), "src");
  end = g_get_monotonic_time () + 20 * G_USEC_PER_SEC;
  while (!linked && g_get_monotonic_time () < end) {
    GstPad *pad = gst_element_get_static_pad (src, "audio");

    if (pad) {
      linked = gst_pad_is_linked (pad);
      gst_object_unref (pad);
    }
    if (!linked)
      g_usleep (20000);
  }
  gst_object_unref (src);
  fail_unless (linked, "spicesrc's audio pad never got linked");
}

static void
chain_stop (Chain * c)
{
  gst_element_set_state (c->pipe, GST_STATE_NULL);
  gst_object_unref (c->pipe);
  guest_process_stop (c->guest);
}

/* Once the client's playback channel is open and 1 s has gone by, keeps
 * what it receives over the next @seconds alone: its left channel (@n
 * frames), and in @wall the seconds that took */
static gint16 *
listen_for (AudioListener * l, gdouble seconds, gsize * n, gdouble * wall)
{
  gboolean never = FALSE;
  gint64 t0;

  fail_unless (audio_listener_pump_until (&l->playback_open, 20000),
      "the client's playback channel did not open");
  audio_listener_pump_until (&never, 1000);
  g_byte_array_set_size (l->data, 0);
  l->max_data_gap_us = 0;
  l->first_data_us = 0;
  t0 = g_get_monotonic_time ();
  audio_listener_pump_until (&never, (guint) (seconds * 1000));
  *wall = (g_get_monotonic_time () - t0) / 1e6;
  fail_if (l->error);
  fail_unless (l->starts >= 1, "no PLAYBACK_START");
  fail_unless_equals_int (l->rate, GUEST_AUDIO_RATE);
  fail_unless_equals_int (l->channels, 2);
  return audio_check_left (l->data->data, l->data->len, l->channels, n);
}

/* the listener's next 5 s (after 1 s) hold the tone */
static void
check_tone_5s (AudioListener * l, const gchar * what)
{
  AudioToneReport r;
  gsize n;
  gdouble wall;
  gint16 *left = listen_for (l, 5, &n, &wall);

  audio_check_tone (left, n, l->rate, &r);
  g_free (left);
  GST_INFO ("%s: %" G_GSIZE_FORMAT " frames: %u windows, %u silent, %u "
      "recognized, %u changes (%u bad)", what, n, r.windows, r.silent,
      r.recognized, r.changes, r.bad_changes);
  fail_unless (n >= 4.5 * l->rate, "%s: only %" G_GSIZE_FORMAT
      " frames in 5 s", what, n);
  fail_unless (r.recognized >= r.windows * 9 / 10, "%s: %u of %u windows",
      what, r.recognized, r.windows);
  fail_unless (r.changes >= 8, "%s: %u changes", what, r.changes);
  fail_unless_equals_int (r.bad_changes, 0);
}

/* The listener's next @seconds (after 1 s) hold the tone without a gap
 * (audio-check.h, audio_check_gaps): every 10 ms block carries the tone,
 * the segment boundaries stay on a grid one segment apart, slipping no
 * more than AUDIO_GAP_BOUND_FRAMES anywhere (no sample missing or
 * repeated beyond that), and the frames received are the seconds' worth
 * within 2 %. */
static void
check_tone_continuous (AudioListener * l, gdouble seconds, const gchar * what)
{
  AudioGapReport r;
  gsize n;
  gdouble wall;
  gint16 *left = listen_for (l, seconds, &n, &wall);

  fail_unless_equals_int (l->starts, 1);
  audio_check_gaps (left, n, l->rate, &r);
  g_free (left);
  GST_INFO ("%s: %" G_GSIZE_FORMAT " frames in %.2f s (%.4f of real time), "
      "%u blocks, %u bad; %u boundaries, %u bad steps, largest slip %"
      G_GINT64_FORMAT " frames (interval error %" G_GINT64_FORMAT
      "); longest pause between packets %.1f ms", what, n, wall,
      n / (wall * l->rate), r.blocks, r.bad_blocks, r.boundaries, r.bad_steps,
      r.worst_slip_frames, r.max_dev_frames, l->max_data_gap_us / 1e3);
  fail_unless (fabs (n - wall * l->rate) <= 0.02 * wall * l->rate,
      "%s: %" G_GSIZE_FORMAT " frames in %.2f s", what, n, wall);
  fail_unless_equals_int (r.bad_blocks, 0);
  fail_unless_equals_int (r.bad_steps, 0);
  fail_unless (r.boundaries >= seconds * 1000 / GUEST_AUDIO_SEGMENT_MS - 2,
      "%s: %u boundaries in %.0f s", what, r.boundaries, seconds);
  fail_unless (r.max_slip_frames <= AUDIO_GAP_BOUND_FRAMES,
      "%s: the tone slipped by %" G_GINT64_FORMAT " frames (< 0: lost, > 0: "
      "repeated; longest pause between packets %.1f ms)", what,
      r.worst_slip_frames, l->max_data_gap_us / 1e3);
}

static void
run_tone (const gchar * branch, gboolean opus)
{
  Chain c;
  AudioListener l;

  chain_start (&c, "tone", branch);
  audio_listener_start (&l, c.port, opus);
  check_tone_5s (&l, branch);
  audio_listener_stop (&l);
  chain_stop (&c);
}

GST_START_TEST (test_sink_tone_raw)
{
  run_tone ("queue", FALSE);
}

GST_END_TEST;

GST_START_TEST (test_sink_tone_opus)
{
  run_tone ("queue ! audioconvert ! opusenc frame-size=10", TRUE);
}

GST_END_TEST;

/* the shipped transcode pipeline, through the runner: 30 s without a gap
 * at the spice-gtk client */
static void
run_pipeline_tone (const gchar * encoder, gboolean opus)
{
  const gchar *args[] = { "--audio", "tone", NULL };
  GError *err = NULL;
  GuestProcess *gp = guest_process_start (args, &err);
  gchar *tmpdir = test_tmpdir_new ("gst-spice-audio");
  gchar *path = g_build_filename (g_getenv ("GST_SPICE_SOURCE_DIR"),
      "pipelines", "transcode-vp8.pipeline", NULL);
  guint port = test_pick_free_port ();
  gchar *uri, *upstream, *listen, *enc;
  RunnerProcess *run;
  AudioListener l;

  fail_unless (gp != NULL, "%s", err ? err->message : "");
  uri = guest_process_get_uri (gp);
  upstream = g_strdup_printf ("UPSTREAM=%s", uri);
  listen = g_strdup_printf ("LISTEN_PORT=%u", port);
  enc = g_strdup_printf ("AUDIO_ENCODER=%s", encoder);
  run = runner_process_start_runner (tmpdir, "--stats-interval", "0",
      "-D", upstream, "-D", listen, "-D", enc, path, NULL);
  fail_unless (runner_process_wait_log (run, "playing", 1, 60000),
      "transcode-vp8 did not start");
  audio_listener_start (&l, port, opus);
  check_tone_continuous (&l, 30, encoder);
  audio_listener_stop (&l);
  runner_process_signal (run, SIGTERM);
  fail_unless_equals_int (runner_process_wait_exit (run, 20000), 0);
  runner_process_free (run);
  guest_process_stop (gp);
  test_tmpdir_remove (tmpdir);
  g_free (uri);
  g_free (upstream);
  g_free (listen);
  g_free (enc);
  g_free (path);
}

GST_START_TEST (test_pipeline_tone_opus)
{
  run_pipeline_tone ("opusenc frame-size=10 bitrate=64000", TRUE);
}

GST_END_TEST;

GST_START_TEST (test_pipeline_tone_raw)
{
  run_pipeline_tone ("identity", FALSE);
}

GST_END_TEST;

/* Opus to a client that does not decode it: no START, display unaffected */
GST_START_TEST (test_sink_opus_refused)
{
  Chain c;
  AudioListener l;
  gboolean never = FALSE;

  chain_start (&c, "tone", "queue ! audioconvert ! opusenc frame-size=10");
  audio_listener_start (&l, c.port, FALSE);
  fail_unless (audio_listener_pump_until (&l.playback_open, 20000));
  audio_listener_pump_until (&never, 2000);
  fail_unless_equals_int (l.starts, 0);
  fail_unless_equals_int (l.data->len, 0);
  fail_if (l.error);
  audio_listener_stop (&l);
  chain_stop (&c);
}

GST_END_TEST;

static gboolean
never_done (SpiceRawSession * s, gpointer data)
{
  return FALSE;
}

/* a client that links its playback channel and never reads it slows
 * neither another client's sound nor its own display */
GST_START_TEST (test_sink_stalled_playback)
{
  Chain c;
  AudioListener l;
  SpiceRawSession *raw;
  SpiceRawConn *play;
  gboolean never = FALSE;
  AudioToneReport r;
  gsize n;
  gint16 *left;
  guint64 draws0;
  gint64 end;

  chain_start (&c, "tone", "queue");
  raw = spice_raw_session_new (c.port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (raw != NULL);
  play = spice_raw_connect (c.port, 10);
  fail_unless (play != NULL);
  g_socket_set_option (play->sock, SOL_SOCKET, SO_RCVBUF, 4096, NULL);
  fail_unless (spice_raw_link (play, raw->session_id, SPICE_CHANNEL_PLAYBACK,
          0x0d, 0, NULL, NULL));
  fail_unless_equals_int (play->link_result, 0);

  audio_listener_start (&l, c.port, FALSE);
  fail_unless (audio_listener_pump_until (&l.playback_open, 20000));
  audio_listener_pump_until (&never, 1000);
  g_byte_array_set_size (l.data, 0);
  /* 6 s: the listener plays, the raw client's display goes on */
  draws0 = raw->draws;
  end = g_get_monotonic_time () + 6 * G_USEC_PER_SEC;
  while (g_get_monotonic_time () < end) {
    fail_unless (spice_raw_session_pump (raw, 20, never_done, NULL),
        "raw client: %s", raw->error ? raw->error : "closed");
    audio_listener_pump ();
  }
  left = audio_check_left (l.data->data, l.data->len, 2, &n);
  audio_check_tone (left, n, l.rate ? l.rate : GUEST_AUDIO_RATE, &r);
  g_free (left);
  GST_INFO ("listener: %" G_GSIZE_FORMAT " frames, %u/%u recognized, %u "
      "changes; raw display: %" G_GUINT64_FORMAT " draws", n, r.recognized,
      r.windows, r.changes, raw->draws - draws0);
  fail_unless (n >= 5.4 * GUEST_AUDIO_RATE, "only %" G_GSIZE_FORMAT
      " frames in 6 s", n);
  fail_unless (r.recognized >= r.windows * 9 / 10);
  fail_unless_equals_int (r.bad_changes, 0);
  audio_listener_stop (&l);
  spice_raw_close (play);
  spice_raw_session_free (raw);
  chain_stop (&c);
}

GST_END_TEST;

/* links a record channel of @raw's session and reads its RECORD_START */
static SpiceRawConn *
link_record (SpiceRawSession * raw, guint port)
{
  SpiceRawConn *rec = spice_raw_connect (port, 10);
  guint16 type = 0;
  guint8 *body = NULL;
  gsize size = 0;

  fail_unless (rec != NULL);
  fail_unless (spice_raw_link (rec, raw->session_id, SPICE_CHANNEL_RECORD,
          0x0d, 0, NULL, NULL));
  fail_unless_equals_int (rec->link_result, 0);
  fail_unless (spice_raw_read_msg (rec, 10000, &type, &body, &size));
  fail_unless_equals_int (type, SPICE_MSG_RECORD_START);
  fail_unless_equals_int (size, 10);
  fail_unless_equals_int (GST_READ_UINT32_LE (body), 2);
  fail_unless_equals_int (GST_READ_UINT32_LE (body + 6), 48000);
  g_free (body);
  return rec;
}

/* malformed record data closes that record channel alone */
GST_START_TEST (test_sink_record_malformed)
{
  Chain c;
  SpiceRawSession *raw;
  SpiceRawConn *rec;
  guint8 odd[4 + 3] = { 0 }, opus_mode[6] = { 0 }, good[4 + 8] = { 0 };

  chain_start (&c, "on", "queue");
  raw = spice_raw_session_new (c.port, NULL, SPICE_RAW_DISPLAY_CAPS_ALL);
  fail_unless (raw != NULL);

  /* not whole S16 stereo frames */
  rec = link_record (raw, c.port);
  fail_unless (spice_raw_send_msg (rec, SPICE_MSGC_RECORD_DATA, good,
          sizeof (good)));
  fail_unless (spice_raw_send_msg (rec, SPICE_MSGC_RECORD_DATA, odd,
          sizeof (odd)));
  fail_unless (spice_raw_wait_closed (rec, 5000),
      "record channel kept after malformed data");
  spice_raw_close (rec);

  /* a mode we did not offer */
  rec = link_record (raw, c.port);
  GST_WRITE_UINT16_LE (opus_mode + 4, SPICE_AUDIO_DATA_MODE_OPUS);
  fail_unless (spice_raw_send_msg (rec, SPICE_MSGC_RECORD_MODE, opus_mode,
          sizeof (opus_mode)));
  fail_unless (spice_raw_wait_closed (rec, 5000),
      "record channel kept after an Opus RECORD_MODE");
  spice_raw_close (rec);

  /* too short for its header field */
  rec = link_record (raw, c.port);
  fail_unless (spice_raw_send_msg (rec, SPICE_MSGC_RECORD_DATA, odd, 2));
  fail_unless (spice_raw_wait_closed (rec, 5000));
  spice_raw_close (rec);

  /* the session and the pipeline go on */
  fail_unless (spice_raw_session_pump (raw, 500, never_done, NULL),
      "raw client: %s", raw->error ? raw->error : "closed");
  fail_unless (gst_element_get_state (c.pipe, NULL, NULL, 0) !=
      GST_STATE_CHANGE_FAILURE);
  spice_raw_session_free (raw);
  chain_stop (&c);
}

GST_END_TEST;

/* the client's microphone reaches the guest through the pipeline */
GST_START_TEST (test_sink_record)
{
  Chain c;
  AudioListener l;
  guint mark;
  gchar *line = NULL;
  guint frames, hz = 0;
  gint peak = 0;

  chain_start (&c, "on", "queue");
  audio_listener_start (&l, c.port, FALSE);
  fail_unless (audio_listener_pump_until (&l.record_started, 20000),
      "spicesink never started the client's record channel");
  fail_unless_equals_int (l.rec_rate, GUEST_AUDIO_RATE);
  fail_unless_equals_int (l.rec_channels, 2);
  mark = guest_process_mark (c.guest);
  audio_listener_send_tone (&l, 700, GUEST_AUDIO_RATE, 3);
  /* the first window may start in silence: take the last one */
  for (;;) {
    guint idx = 0;
    gchar *next = guest_process_wait_line_from (c.guest, mark,
        "record level ", line ? 1500 : 5000, &idx);

    if (!next)
      break;
    g_free (line);
    line = next;
    mark = idx + 1;
    if (sscanf (line, "record level %u %u %d", &frames, &hz, &peak) == 3 &&
        hz >= 680 && hz <= 720 && peak > 4000)
      break;
  }
  fail_unless (line != NULL, "the guest recorded nothing");
  fail_unless (hz >= 680 && hz <= 720 && peak > 4000, "recorded: %s", line);
  g_free (line);
  audio_listener_stop (&l);
  chain_stop (&c);
}

GST_END_TEST;

/* the newest "record level" line of the guest from @mark on with a tone
 * near @hz, within a few seconds; NULL if none */
static gchar *
wait_recorded_tone (Chain * c, guint mark, guint hz)
{
  gchar *line = NULL;

  for (;;) {
    guint idx = 0, frames, got = 0;
    gint peak = 0;
    gchar *next = guest_process_wait_line_from (c->guest, mark,
        "record level ", 5000, &idx);

    if (!next)
      break;
    g_free (line);
    line = next;
    mark = idx + 1;
    if (sscanf (line, "record level %u %u %d", &frames, &got, &peak) == 3 &&
        got >= hz - 20 && got <= hz + 20 && peak > 4000)
      return line;
  }
  g_free (line);
  return NULL;
}

/* spice-gtk's catch-up after a stall, what the sink's record-rate limit
 * must leave room for (sinkrecord.h): a client records in real time, its
 * link stops carrying what it sends for 3 s (a proxy stops forwarding),
 * and when the link is back spice-gtk sends everything it queued at once.
 * Measured here: the bytes that arrive within 300 ms of the link's return.
 * The record channel stays open (no protocol-violation event) and the
 * guest records the tone sent after it. */
GST_START_TEST (test_sink_record_stall)
{
  Chain c;
  AudioListener l;
  PauseProxy *px;
  GstBus *bus;
  GstMessage *m;
  guint64 before, after;
  gdouble burst_s;
  gboolean never = FALSE;
  guint mark;
  gchar *line;

  chain_start (&c, "on", "queue");
  px = pause_proxy_new (c.port);
  audio_listener_start (&l, pause_proxy_port (px), FALSE);
  fail_unless (audio_listener_pump_until (&l.record_started, 20000),
      "spicesink never started the client's record channel");
  audio_listener_send_tone (&l, 500, GUEST_AUDIO_RATE, 1);
  pause_proxy_pause (px, TRUE);
  audio_listener_send_tone (&l, 500, GUEST_AUDIO_RATE, 3);
  before = pause_proxy_bytes_up (px);
  pause_proxy_pause (px, FALSE);
  audio_listener_pump_until (&never, 300);
  after = pause_proxy_bytes_up (px);
  burst_s = (after - before) / (GUEST_AUDIO_RATE * 4.0);
  GST_INFO ("after a 3 s stall spice-gtk sent %.2f s of audio (%"
      G_GUINT64_FORMAT " bytes) within 300 ms", burst_s, after - before);
  g_print ("RESULT record burst after a 3 s stall: %.2f s of audio within "
      "300 ms\n", burst_s);
  fail_unless (burst_s >= 2.0, "spice-gtk sent only %.2f s at once: the "
      "stall was not a stall", burst_s);
  mark = guest_process_mark (c.guest);
  audio_listener_send_tone (&l, 900, GUEST_AUDIO_RATE, 3);
  line = wait_recorded_tone (&c, mark, 900);
  fail_unless (line != NULL, "the guest recorded nothing after the stall");
  g_free (line);
  bus = gst_element_get_bus (c.pipe);
  while ((m = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT))) {
    const GstStructure *st = gst_message_get_structure (m);

    fail_if (st && g_strcmp0 (gst_structure_get_string (st, "event"),
            "protocol-violation") == 0, "%" GST_PTR_FORMAT, st);
    gst_message_unref (m);
  }
  gst_object_unref (bus);
  audio_listener_stop (&l);
  pause_proxy_free (px);
  chain_stop (&c);
}

GST_END_TEST;

static Suite *
audio_sink_suite (void)
{
  Suite *s = suite_create ("audio-sink");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 180);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_sink_tone_raw);
  tcase_add_test (tc, test_sink_tone_opus);
  tcase_add_test (tc, test_sink_opus_refused);
  tcase_add_test (tc, test_sink_stalled_playback);
  tcase_add_test (tc, test_sink_record);
  tcase_add_test (tc, test_sink_record_stall);
  tcase_add_test (tc, test_sink_record_malformed);
  tcase_add_test (tc, test_pipeline_tone_opus);
  tcase_add_test (tc, test_pipeline_tone_raw);
  return s;
}

GST_CHECK_MAIN (audio_sink);
