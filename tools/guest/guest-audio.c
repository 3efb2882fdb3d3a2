/* gst-spice test guest: sound through libspice-server's playback and record
 * interfaces.
 *
 * Playback: S16 stereo at GUEST_AUDIO_RATE. `--audio tone` plays a sine
 * whose frequency encodes a counter: segment N (GUEST_AUDIO_SEGMENT_MS long)
 * has guest_audio_tone_hz (N), so a client can tell from an FFT which
 * segment it hears and whether one went missing. Samples are produced by
 * the clock (a 10 ms timer catching up on the monotonic time), whether or
 * not a client listens, like a VM's sound card.
 *
 * `--audio burst` plays silence, and a GUEST_AUDIO_BURST_MS burst of
 * GUEST_AUDIO_BURST_HZ (starting at full amplitude) whenever the guest
 * flips its key box (guest_audio_burst()): the burst's first sample is the
 * one due at the flip's instant, so a client can compare when it hears the
 * burst with when it sees the box change (audio-to-video skew), and with
 * the flip's time in the log line (audio latency).
 *
 * Record: the interface is started at once (the guest "opens its
 * microphone"); what clients send is read every 20 ms and summarized every
 * GUEST_AUDIO_SEGMENT_MS as a `record level` line with the frequency the
 * zero crossings of the left channel give.
 *
 * stdout lines:
 *   audio start RATE           playback started
 *   audio tone N HZ            tone segment N started (only in tone mode)
 *   audio burst N FRAME T_US   burst N (the Nth box flip) starts at stream
 *                              frame FRAME (since `audio start`); T_US: the
 *                              flip's g_get_monotonic_time ()
 *   audio stop                 playback stopped
 *   audio volume V | audio mute M
 *   record start RATE          record interface started
 *   record level FRAMES HZ PEAK   one window of received samples
 *   audio stall MS | audio pause MS   the command took effect
 * stdin (argv[0] == "audio"): audio start | audio stop | audio tone |
 *   audio silence | audio volume V (0..65535) | audio mute 0|1 |
 *   audio stall MS (the guest's main thread sleeps MS, like a VM that is
 *   not scheduled: its sound clock then catches up in one burst) |
 *   audio pause MS (the sound clock stops for MS and goes on from where it
 *   was, like a paused VM: those MS of samples never exist)
 *
 * Everything runs on the guest's main thread (its GLib main context).
 */
#include "guest-audio.h"

#include <math.h>
#include <string.h>

#define TICK_MS 10
#define RECORD_TICK_MS 20
#define TONE_AMPLITUDE 8000.0
/* a crossing counts only past this level (hysteresis against noise) */
#define CROSS_LEVEL 256
#define BURST_FRAMES (GUEST_AUDIO_RATE / 1000 * GUEST_AUDIO_BURST_MS)

struct _GuestAudio
{
  SpiceServer *server;
  GuestAudioLogFunc log;
  SpicePlaybackInstance play;
  SpiceRecordInstance rec;

  /* playback */
  gboolean playing;
  gboolean tone;                /* FALSE: silence */
  gboolean burst_mode;          /* --audio burst: bursts on box flips */
  guint64 burst_start, burst_end;       /* frames; empty: none pending */
  guint tick_source;
  gint64 start_us;
  guint64 frames_done;          /* since start_us */
  guint64 segment;              /* current tone segment */
  gboolean segment_logged;
  gdouble phase;                /* radians, continuous across segments */
  guint32 *pending;             /* buffer from get_buffer, partly filled */
  guint32 pending_frames, pending_fill;

  /* record */
  guint rec_source;
  guint64 rec_frames;           /* in the current window */
  guint64 rec_crossings;
  gint rec_sign;
  gint rec_peak;
};

static const SpicePlaybackInterface playback_iface = {
  .base = {
        .type = SPICE_INTERFACE_PLAYBACK,
        .description = "gst-spice test guest playback",
        .major_version = SPICE_INTERFACE_PLAYBACK_MAJOR,
        .minor_version = SPICE_INTERFACE_PLAYBACK_MINOR,
      },
};

static const SpiceRecordInterface record_iface = {
  .base = {
        .type = SPICE_INTERFACE_RECORD,
        .description = "gst-spice test guest record",
        .major_version = SPICE_INTERFACE_RECORD_MAJOR,
        .minor_version = SPICE_INTERFACE_RECORD_MINOR,
      },
};

/* ---------------------------------------------------------- playback */

static guint32
next_frame (GuestAudio * a)
{
  guint64 seg = a->frames_done * 1000 / GUEST_AUDIO_RATE /
      GUEST_AUDIO_SEGMENT_MS;
  gint16 v = 0;

  if (seg != a->segment || !a->segment_logged) {
    a->segment = seg;
    a->segment_logged = TRUE;
    if (a->tone && !a->burst_mode)
      a->log ("audio tone %" G_GUINT64_FORMAT " %u", seg,
          guest_audio_tone_hz (seg));
  }
  if (a->burst_mode) {
    if (a->frames_done >= a->burst_start && a->frames_done < a->burst_end) {
      /* cosine: the first sample is at full amplitude, a sharp onset */
      v = (gint16) lrint (TONE_AMPLITUDE * cos (2.0 * G_PI *
              GUEST_AUDIO_BURST_HZ * (a->frames_done - a->burst_start) /
              GUEST_AUDIO_RATE));
    }
  } else if (a->tone) {
    v = (gint16) lrint (TONE_AMPLITUDE * sin (a->phase));
    a->phase += 2.0 * G_PI * guest_audio_tone_hz (seg) / GUEST_AUDIO_RATE;
    if (a->phase > 2.0 * G_PI)
      a->phase -= 2.0 * G_PI;
  }
  a->frames_done++;
  /* S16LE stereo: left in the low half, the same on both channels */
  return (guint32) (guint16) v | ((guint32) (guint16) v << 16);
}

static gboolean
playback_tick (gpointer data)
{
  GuestAudio *a = data;
  guint64 due = (guint64) (g_get_monotonic_time () - a->start_us) *
      GUEST_AUDIO_RATE / G_USEC_PER_SEC;

  while (a->frames_done < due) {
    if (!a->pending) {
      spice_server_playback_get_buffer (&a->play, &a->pending,
          &a->pending_frames);
      a->pending_fill = 0;
    }
    if (!a->pending || a->pending_frames == 0) {
      /* no client listens: the clock runs on */
      a->pending = NULL;
      next_frame (a);
      continue;
    }
    a->pending[a->pending_fill++] = next_frame (a);
    if (a->pending_fill == a->pending_frames) {
      spice_server_playback_put_samples (&a->play, a->pending);
      a->pending = NULL;
    }
  }
  return G_SOURCE_CONTINUE;
}

static void
playback_start (GuestAudio * a)
{
  if (a->playing)
    return;
  a->playing = TRUE;
  a->start_us = g_get_monotonic_time ();
  a->frames_done = 0;
  a->segment = 0;
  a->segment_logged = FALSE;
  a->phase = 0;
  a->burst_start = a->burst_end = 0;
  spice_server_playback_start (&a->play);
  a->log ("audio start %u", GUEST_AUDIO_RATE);
  a->tick_source = g_timeout_add (TICK_MS, playback_tick, a);
}

static void
playback_stop (GuestAudio * a)
{
  if (!a->playing)
    return;
  a->playing = FALSE;
  g_source_remove (a->tick_source);
  a->tick_source = 0;
  if (a->pending) {
    /* complete the last buffer with silence so that it is released */
    while (a->pending_fill < a->pending_frames)
      a->pending[a->pending_fill++] = 0;
    spice_server_playback_put_samples (&a->play, a->pending);
    a->pending = NULL;
  }
  spice_server_playback_stop (&a->play);
  a->log ("audio stop");
}

/* ------------------------------------------------------------ record */

static void
record_window_end (GuestAudio * a)
{
  guint hz = (guint) (a->rec_crossings * 1000 / 2 / GUEST_AUDIO_SEGMENT_MS);

  a->log ("record level %" G_GUINT64_FORMAT " %u %d", a->rec_frames, hz,
      a->rec_peak);
  a->rec_frames = 0;
  a->rec_crossings = 0;
  a->rec_peak = 0;
}

static gboolean
record_tick (gpointer data)
{
  GuestAudio *a = data;
  guint32 buf[GUEST_AUDIO_RATE * RECORD_TICK_MS / 1000 * 4];
  guint32 n, i;
  const guint64 window = (guint64) GUEST_AUDIO_RATE *
      GUEST_AUDIO_SEGMENT_MS / 1000;

  while ((n = spice_server_record_get_samples (&a->rec, buf,
              G_N_ELEMENTS (buf))) > 0) {
    for (i = 0; i < n; i++) {
      gint v = (gint16) (buf[i] & 0xffff);

      a->rec_peak = MAX (a->rec_peak, ABS (v));
      if (v > CROSS_LEVEL && a->rec_sign <= 0) {
        a->rec_crossings += a->rec_sign < 0;
        a->rec_sign = 1;
      } else if (v < -CROSS_LEVEL && a->rec_sign >= 0) {
        a->rec_crossings += a->rec_sign > 0;
        a->rec_sign = -1;
      }
      if (++a->rec_frames == window)
        record_window_end (a);
    }
    if (n < G_N_ELEMENTS (buf))
      break;
  }
  return G_SOURCE_CONTINUE;
}

/* ---------------------------------------------------------- lifetime */

GuestAudio *
guest_audio_new (SpiceServer * server, const gchar * mode,
    GuestAudioLogFunc log, GError ** error)
{
  GuestAudio *a;
  gboolean tone;

  if (!mode || g_str_equal (mode, "off")) {
    a = g_new0 (GuestAudio, 1); /* no interfaces: commands fail */
    a->log = log;
    return a;
  }
  if (!g_str_equal (mode, "on") && !g_str_equal (mode, "tone") &&
      !g_str_equal (mode, "burst")) {
    g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
        "--audio must be off, on, tone or burst");
    return NULL;
  }
  tone = !g_str_equal (mode, "on");
  a = g_new0 (GuestAudio, 1);
  a->server = server;
  a->log = log;
  a->tone = TRUE;
  a->burst_mode = g_str_equal (mode, "burst");
  a->play.base.sif = &playback_iface.base;
  spice_server_add_interface (server, &a->play.base);
  spice_server_set_playback_rate (&a->play, GUEST_AUDIO_RATE);
  a->rec.base.sif = &record_iface.base;
  spice_server_add_interface (server, &a->rec.base);
  spice_server_set_record_rate (&a->rec, GUEST_AUDIO_RATE);
  spice_server_record_start (&a->rec);
  a->log ("record start %u", GUEST_AUDIO_RATE);
  a->rec_source = g_timeout_add (RECORD_TICK_MS, record_tick, a);
  if (tone)
    playback_start (a);
  return a;
}

void
guest_audio_command (GuestAudio * a, gint argc, gchar ** argv)
{
  const gchar *what = argc > 1 ? argv[1] : "";
  gchar *end = NULL;
  guint64 v = 0;

  if (!a->server) {
    a->log ("error no audio (start with --audio on or tone)");
    return;
  }
  if (argc > 2)
    v = g_ascii_strtoull (argv[2], &end, 0);
  if (g_str_equal (what, "start")) {
    playback_start (a);
  } else if (g_str_equal (what, "stop")) {
    playback_stop (a);
  } else if (g_str_equal (what, "tone") || g_str_equal (what, "silence")) {
    a->tone = g_str_equal (what, "tone");
    a->segment_logged = FALSE;
    a->log ("audio %s", what);
  } else if (g_str_equal (what, "volume") && end && !*end && v <= 65535) {
    guint16 vol[GUEST_AUDIO_CHANNELS] = { (guint16) v, (guint16) v };

    spice_server_playback_set_volume (&a->play, GUEST_AUDIO_CHANNELS, vol);
    a->log ("audio volume %u", (guint) v);
  } else if (g_str_equal (what, "stall") && end && !*end && v <= 10000) {
    a->log ("audio stall %u", (guint) v);
    g_usleep (v * 1000);
  } else if (g_str_equal (what, "pause") && end && !*end && v <= 10000 &&
      a->playing) {
    /* the frames due move MS later: none is made until then */
    a->start_us += (gint64) v *1000;
    a->log ("audio pause %u", (guint) v);
  } else if (g_str_equal (what, "mute") && end && !*end && v <= 1) {
    spice_server_playback_set_mute (&a->play, (guint8) v);
    a->log ("audio mute %u", (guint) v);
  } else {
    a->log ("error bad audio command: %s", what);
  }
}

void
guest_audio_burst (GuestAudio * a, guint n)
{
  gint64 now = g_get_monotonic_time ();
  guint64 due;

  if (!a->burst_mode || !a->playing)
    return;
  due = (guint64) (now - a->start_us) * GUEST_AUDIO_RATE / G_USEC_PER_SEC;
  /* the clock's tick may not have produced every frame due yet; it never
   * produced one past now */
  a->burst_start = MAX (due, a->frames_done);
  a->burst_end = a->burst_start + BURST_FRAMES;
  a->log ("audio burst %u %" G_GUINT64_FORMAT " %" G_GINT64_FORMAT, n,
      a->burst_start, now);
}

void
guest_audio_free (GuestAudio * a)
{
  if (!a)
    return;
  if (a->server) {
    playback_stop (a);
    g_source_remove (a->rec_source);
    spice_server_record_stop (&a->rec);
  }
  g_free (a);
}
