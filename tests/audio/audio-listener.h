/* gst-spice tests/audio: a spice-client-glib client that keeps what its
 * playback channel plays (no sound card: the playback-start/-data/-stop
 * signals, like an audio backend would see them) and can feed its record
 * channel. Runs on the default main context, which the test thread owns
 * (g_main_context_acquire) from start to stop: spice-gtk is not thread-safe,
 * and a spicesrc in the same process would otherwise iterate it from its
 * helper thread meanwhile (it runs on the test's pumps instead).
 */
#pragma once

#include <spice-client.h>
#include <math.h>
#include <string.h>

typedef struct
{
  SpiceSession *session;
  SpicePlaybackChannel *playback;
  SpiceRecordChannel *record;
  gboolean main_open;
  gboolean playback_open;
  gboolean record_open;
  gboolean error;
  guint starts, stops;
  gint format, channels, rate;
  GByteArray *data;             /* S16 interleaved, all starts together */
  gint64 first_data_us, last_data_us;
  gint64 max_data_gap_us;       /* longest pause between two data signals */
  guint volume_notifies, mute_notifies;
  /* record: the server asked for the microphone */
  gboolean record_started;
  gint rec_channels, rec_rate;
} AudioListener;

static inline void
audio_listener_pump (void)
{
  while (g_main_context_iteration (NULL, FALSE));
}

static gboolean
audio_listener_wake (gpointer unused)
{
  return G_SOURCE_CONTINUE;
}

/* Runs the default main context until *flag or timeout */
static inline gboolean
audio_listener_pump_until (const gboolean * flag, guint timeout_ms)
{
  gint64 end = g_get_monotonic_time () + (gint64) timeout_ms * 1000;
  guint id = g_timeout_add (10, audio_listener_wake, NULL);

  while ((!flag || !*flag) && g_get_monotonic_time () < end)
    g_main_context_iteration (NULL, TRUE);
  g_source_remove (id);
  return flag ? *flag : TRUE;
}

static void
audio_listener_on_event (SpiceChannel * ch, SpiceChannelEvent ev,
    AudioListener * l)
{
  if (ev == SPICE_CHANNEL_OPENED) {
    if (SPICE_IS_MAIN_CHANNEL (ch))
      l->main_open = TRUE;
    else if (SPICE_IS_PLAYBACK_CHANNEL (ch))
      l->playback_open = TRUE;
    else if (SPICE_IS_RECORD_CHANNEL (ch))
      l->record_open = TRUE;
  } else if (ev != SPICE_CHANNEL_CLOSED && ev != SPICE_CHANNEL_SWITCHING) {
    g_printerr ("listener: %s event %d\n", G_OBJECT_TYPE_NAME (ch), ev);
    l->error = TRUE;
  }
}

static void
audio_listener_on_start (SpicePlaybackChannel * ch, gint format,
    gint channels, gint rate, AudioListener * l)
{
  l->starts++;
  l->format = format;
  l->channels = channels;
  l->rate = rate;
}

static void
audio_listener_on_data (SpicePlaybackChannel * ch, gpointer data, gint size,
    AudioListener * l)
{
  gint64 now = g_get_monotonic_time ();

  if (!l->first_data_us)
    l->first_data_us = now;
  else
    l->max_data_gap_us = MAX (l->max_data_gap_us, now - l->last_data_us);
  l->last_data_us = now;
  g_byte_array_append (l->data, data, size);
}

static void
audio_listener_on_stop (SpicePlaybackChannel * ch, AudioListener * l)
{
  l->stops++;
}

static void
audio_listener_on_volume (GObject * o, GParamSpec * p, AudioListener * l)
{
  l->volume_notifies++;
}

static void
audio_listener_on_mute (GObject * o, GParamSpec * p, AudioListener * l)
{
  l->mute_notifies++;
}

static void
audio_listener_on_record_start (SpiceRecordChannel * ch, gint format,
    gint channels, gint rate, AudioListener * l)
{
  l->record_started = TRUE;
  l->rec_channels = channels;
  l->rec_rate = rate;
}

static void
audio_listener_on_record_stop (SpiceRecordChannel * ch, AudioListener * l)
{
  l->record_started = FALSE;
}

static void
audio_listener_on_channel_new (SpiceSession * s, SpiceChannel * ch,
    AudioListener * l)
{
  g_signal_connect (ch, "channel-event",
      G_CALLBACK (audio_listener_on_event), l);
  if (SPICE_IS_PLAYBACK_CHANNEL (ch)) {
    l->playback = SPICE_PLAYBACK_CHANNEL (ch);
    g_signal_connect (ch, "playback-start",
        G_CALLBACK (audio_listener_on_start), l);
    g_signal_connect (ch, "playback-data",
        G_CALLBACK (audio_listener_on_data), l);
    g_signal_connect (ch, "playback-stop",
        G_CALLBACK (audio_listener_on_stop), l);
    g_signal_connect (ch, "notify::volume",
        G_CALLBACK (audio_listener_on_volume), l);
    g_signal_connect (ch, "notify::mute",
        G_CALLBACK (audio_listener_on_mute), l);
  } else if (SPICE_IS_RECORD_CHANNEL (ch)) {
    l->record = SPICE_RECORD_CHANNEL (ch);
    g_signal_connect (ch, "record-start",
        G_CALLBACK (audio_listener_on_record_start), l);
    g_signal_connect (ch, "record-stop",
        G_CALLBACK (audio_listener_on_record_stop), l);
  } else if (!SPICE_IS_MAIN_CHANNEL (ch) && !SPICE_IS_DISPLAY_CHANNEL (ch)) {
    return;                     /* inputs, cursor: not needed */
  }
  spice_channel_connect (ch);
}

/* Connects to 127.0.0.1:@port; @opus FALSE: the client does not announce
 * Opus (SPICE_DISABLE_OPUS), so the server sends raw samples. */
static inline void
audio_listener_start (AudioListener * l, guint port, gboolean opus)
{
  gchar *p = g_strdup_printf ("%u", port);

  memset (l, 0, sizeof (*l));
  while (!g_main_context_acquire (NULL))
    g_usleep (1000);
  if (opus)
    g_unsetenv ("SPICE_DISABLE_OPUS");
  else
    g_setenv ("SPICE_DISABLE_OPUS", "1", TRUE);
  l->data = g_byte_array_new ();
  l->session = spice_session_new ();
  g_object_set (l->session, "host", "127.0.0.1", "port", p,
      "enable-audio", TRUE, NULL);
  g_signal_connect (l->session, "channel-new",
      G_CALLBACK (audio_listener_on_channel_new), l);
  g_assert_true (spice_session_connect (l->session));
  g_free (p);
}

/* sends a sine of @hz on the record channel for @seconds, in 10 ms packets
 * of S16 stereo at @rate, pumping meanwhile */
static inline void
audio_listener_send_tone (AudioListener * l, guint hz, guint rate,
    gdouble seconds)
{
  gint64 end = g_get_monotonic_time () + (gint64) (seconds * G_USEC_PER_SEC);
  gdouble phase = 0;
  guint frames = rate / 100, i;
  gint16 *buf = g_new (gint16, frames * 2);

  while (g_get_monotonic_time () < end) {
    for (i = 0; i < frames; i++) {
      buf[2 * i] = buf[2 * i + 1] = (gint16) (8000 * sin (phase));
      phase += 2 * G_PI * hz / rate;
    }
    spice_record_channel_send_data (l->record, buf, frames * 4, 0);
    audio_listener_pump ();
    g_usleep (10000);
  }
  g_free (buf);
}

static inline void
audio_listener_stop (AudioListener * l)
{
  gboolean never = FALSE;

  if (l->session) {
    g_signal_handlers_disconnect_by_data (l->session, l);
    if (l->playback)
      g_signal_handlers_disconnect_by_data (l->playback, l);
    if (l->record)
      g_signal_handlers_disconnect_by_data (l->record, l);
    spice_session_disconnect (l->session);
    audio_listener_pump_until (&never, 100);
    g_object_unref (l->session);
    l->session = NULL;
  }
  g_unsetenv ("SPICE_DISABLE_OPUS");
  g_main_context_release (NULL);
  if (l->data)
    g_byte_array_unref (l->data);
  l->data = NULL;
}
