/* gst-spice tests/audio: the test guest's sound interfaces against a real
 * spice-client-glib client: the tone arrives (raw and Opus) at the right
 * frequencies without a missing segment, stop/start and volume/mute reach
 * the client, and a tone the client records reaches the guest's record
 * interface. */
#include <gst/check/gstcheck.h>
#include <math.h>
#include <stdio.h>

#include "guest-launcher.h"
#include "audio-check.h"
#include "audio-listener.h"

static GuestProcess *
start_audio_guest (const gchar * mode)
{
  const gchar *args[] = { "--audio", mode, NULL };
  GError *err = NULL;
  GuestProcess *gp = guest_process_start (args, &err);

  fail_unless (gp != NULL, "guest did not start: %s",
      err ? err->message : "?");
  return gp;
}

/* the tone the listener got over @seconds of playback */
static void
check_listener_tone (AudioListener * l, gdouble seconds)
{
  AudioToneReport r;
  gsize n;
  gint16 *left;

  fail_unless (l->starts >= 1, "no playback-start");
  fail_unless_equals_int (l->rate, GUEST_AUDIO_RATE);
  fail_unless_equals_int (l->channels, GUEST_AUDIO_CHANNELS);
  left = audio_check_left (l->data->data, l->data->len, l->channels, &n);
  audio_check_tone (left, n, l->rate, &r);
  g_free (left);
  GST_INFO ("%" G_GSIZE_FORMAT " frames: %u windows, %u silent, %u "
      "recognized, %u changes (%u bad)", n, r.windows, r.silent,
      r.recognized, r.changes, r.bad_changes);
  /* received at least 80 % of real time (start-up aside) */
  fail_unless (n >= seconds * 0.8 * l->rate, "only %" G_GSIZE_FORMAT
      " frames in %.1f s", n, seconds);
  fail_unless (r.recognized >= r.windows * 8 / 10,
      "tone recognized in %u of %u windows", r.recognized, r.windows);
  fail_unless (r.changes >= seconds * 1000 / GUEST_AUDIO_SEGMENT_MS - 3,
      "only %u segment changes", r.changes);
  fail_unless_equals_int (r.bad_changes, 0);
}

static void
run_tone (gboolean opus)
{
  GuestProcess *gp = start_audio_guest ("tone");
  AudioListener l;
  gboolean never = FALSE;

  audio_listener_start (&l, guest_process_get_port (gp), opus);
  fail_unless (audio_listener_pump_until (&l.playback_open, 20000));
  audio_listener_pump_until (&never, 5000);
  fail_if (l.error);
  check_listener_tone (&l, 4.0);
  audio_listener_stop (&l);
  guest_process_stop (gp);
}

/* @seconds of the guest's tone (mono), segment k lasting the segment plus
 * @extra[k] frames (NULL: none); then @cut_len frames at @cut_at either
 * dropped (@repeat FALSE) or played twice */
static gint16 *
synth_tone (gdouble seconds, const gint * extra, gsize cut_at, gsize cut_len,
    gboolean repeat, gsize * n_out)
{
  const gsize seg = GUEST_AUDIO_RATE * GUEST_AUDIO_SEGMENT_MS / 1000;
  gsize n = seconds * GUEST_AUDIO_RATE, i, k = 0, end = seg, o = 0;
  gint16 *s = g_new (gint16, n + cut_len), *out = g_new (gint16, n + cut_len);
  gdouble phase = 0;

  for (i = 0; i < n; i++) {
    if (i == end) {
      k++;
      end += seg + (extra ? extra[k] : 0);
    }
    s[i] = (gint16) (8000 * sin (phase));
    phase += 2 * G_PI * guest_audio_tone_hz (k) / GUEST_AUDIO_RATE;
  }
  for (i = 0; i < n; i++) {
    if (cut_len && i == cut_at && !repeat) {
      i += cut_len - 1;
      continue;
    }
    out[o++] = s[i];
    if (cut_len && repeat && i == cut_at + cut_len - 1)
      for (gsize j = cut_at; j <= i; j++)
        out[o++] = s[j];
  }
  g_free (s);
  *n_out = o;
  return out;
}

static AudioGapReport
gaps_of (const gint * extra, gsize cut_at, gsize cut_len, gboolean repeat)
{
  AudioGapReport r;
  gsize n;
  gint16 *s = synth_tone (30, extra, cut_at, cut_len, repeat, &n);

  audio_check_gaps (s, n, GUEST_AUDIO_RATE, &r);
  g_free (s);
  GST_INFO ("cut %" G_GSIZE_FORMAT " at %" G_GSIZE_FORMAT " (repeat %d): "
      "%u boundaries, %u bad blocks, %u bad steps, slip %" G_GINT64_FORMAT
      ", interval error %" G_GINT64_FORMAT, cut_len, cut_at, repeat,
      r.boundaries, r.bad_blocks, r.bad_steps, r.worst_slip_frames,
      r.max_dev_frames);
  return r;
}

/* the continuity check of the 30 s tests (audio_check_gaps) on signals
 * made here: it finds a lost or repeated 2.5 ms (one small Opus frame) or
 * 10 ms (one packet) anywhere after the first boundary, and does not
 * take one boundary that is 1.25 ms late (about what Opus does to a
 * frequency change at worst) for a slip */
GST_START_TEST (test_gap_check)
{
  const gsize ms = GUEST_AUDIO_RATE / 1000;
  gint extra[64] = { 0 };
  AudioGapReport r;

  r = gaps_of (NULL, 0, 0, FALSE);
  fail_unless_equals_int (r.boundaries, 59);
  fail_unless_equals_int (r.bad_blocks, 0);
  fail_unless_equals_int (r.bad_steps, 0);
  fail_unless (r.max_slip_frames <= 4, "%" G_GINT64_FORMAT,
      r.worst_slip_frames);

  r = gaps_of (NULL, 10300 * ms, 5 * ms / 2, TRUE);
  fail_unless (ABS (r.worst_slip_frames - 120) <= 4, "%" G_GINT64_FORMAT,
      r.worst_slip_frames);
  r = gaps_of (NULL, 20120 * ms, 10 * ms, FALSE);
  fail_unless (ABS (r.worst_slip_frames + 480) <= 4, "%" G_GINT64_FORMAT,
      r.worst_slip_frames);
  r = gaps_of (NULL, 1200 * ms, 5 * ms / 2, FALSE);
  fail_unless (ABS (r.worst_slip_frames + 120) <= 4, "%" G_GINT64_FORMAT,
      r.worst_slip_frames);
  fail_unless_equals_int (r.bad_steps, 0);

  /* boundary 12 late by 60 frames, boundary 13 back in place */
  extra[12] = 60;
  extra[13] = -60;
  r = gaps_of (extra, 0, 0, FALSE);
  fail_unless (r.max_dev_frames >= 58, "%" G_GINT64_FORMAT,
      r.max_dev_frames);
  fail_unless (r.max_slip_frames <= 8, "%" G_GINT64_FORMAT,
      r.worst_slip_frames);
}

GST_END_TEST;

GST_START_TEST (test_guest_tone_raw)
{
  run_tone (FALSE);
}

GST_END_TEST;

GST_START_TEST (test_guest_tone_opus)
{
  run_tone (TRUE);
}

GST_END_TEST;

GST_START_TEST (test_guest_stop_start_volume)
{
  GuestProcess *gp = start_audio_guest ("on");
  AudioListener l;
  gboolean never = FALSE;
  guint starts;

  audio_listener_start (&l, guest_process_get_port (gp), FALSE);
  fail_unless (audio_listener_pump_until (&l.playback_open, 20000));
  audio_listener_pump_until (&never, 300);
  fail_unless_equals_int (l.data->len, 0);
  guest_process_command (gp, "audio start");
  audio_listener_pump_until (&never, 1000);
  fail_unless (l.starts >= 1 && l.data->len > 0);
  guest_process_command (gp, "audio stop");
  audio_listener_pump_until (&never, 500);
  fail_unless_equals_int (l.stops, 1);
  starts = l.starts;
  guest_process_command (gp, "audio start");
  audio_listener_pump_until (&never, 500);
  fail_unless_equals_int (l.starts, starts + 1);
  guest_process_command (gp, "audio volume 1000");
  guest_process_command (gp, "audio mute 1");
  audio_listener_pump_until (&never, 500);
  fail_unless (l.volume_notifies >= 1, "no volume change at the client");
  fail_unless (l.mute_notifies >= 1, "no mute change at the client");
  audio_listener_stop (&l);
  guest_process_stop (gp);
}

GST_END_TEST;

/* the client sends a 700 Hz tone on its record channel */
GST_START_TEST (test_guest_record)
{
  GuestProcess *gp = start_audio_guest ("on");
  AudioListener l;
  guint mark;
  gchar *line;
  guint frames, hz;
  gint peak;

  audio_listener_start (&l, guest_process_get_port (gp), FALSE);
  fail_unless (audio_listener_pump_until (&l.record_started, 20000),
      "the server never started the record channel");
  fail_unless_equals_int (l.rec_rate, GUEST_AUDIO_RATE);
  mark = guest_process_mark (gp);
  audio_listener_send_tone (&l, 700, GUEST_AUDIO_RATE, 2);
  line = guest_process_wait_line_from (gp, mark, "record level ", 5000, NULL);
  fail_unless (line != NULL, "the guest recorded nothing");
  fail_unless_equals_int (sscanf (line, "record level %u %u %d", &frames,
          &hz, &peak), 3);
  fail_unless (hz >= 680 && hz <= 720, "recorded %u Hz: %s", hz, line);
  fail_unless (peak > 4000, "peak %d", peak);
  g_free (line);
  audio_listener_stop (&l);
  guest_process_stop (gp);
}

GST_END_TEST;

static Suite *
audio_guest_suite (void)
{
  Suite *s = suite_create ("audio-guest");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 120);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_gap_check);
  tcase_add_test (tc, test_guest_tone_raw);
  tcase_add_test (tc, test_guest_tone_opus);
  tcase_add_test (tc, test_guest_stop_start_volume);
  tcase_add_test (tc, test_guest_record);
  return s;
}

GST_CHECK_MAIN (audio_guest);
