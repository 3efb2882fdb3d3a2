/* spicesink: the playback channel
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Sent: PLAYBACK_MODE (raw, or Opus when the audio pad has Opus caps and
 * the client announced SPICE_PLAYBACK_CAP_OPUS) and PLAYBACK_START when the
 * audio starts or the channel links while it plays; PLAYBACK_DATA per
 * packet, its multimedia time stamped when its first byte is written
 * (mm time + stream-latency, like the video stream frames, so that the
 * client plays both in step); PLAYBACK_STOP at EOS; PLAYBACK_VOLUME and
 * PLAYBACK_MUTE (SPICE_PLAYBACK_CAP_VOLUME) from the `spice-audio-volume`
 * event. The channel has its own connection: audio never waits behind
 * draws, and a client that does not read it loses its own packets
 * (SINK_PLAYBACK_MAX_QUEUED), nothing else. The client sends nothing of
 * its own here.
 */
#include "sinksession.h"
#include "sinkdebug.h"

static SINK_DEBUG_CATEGORY (sink_playback_debug, "spicesinkplayback",
    "spicesink playback channel");
#define GST_CAT_DEFAULT sink_playback_debug ()

static guint32
mm_now (SinkSession * s)
{
  return sink_conn_env_mm_time (s->shared->env) +
      s->shared->env->stream_latency;
}

void
sink_playback_volume (SinkSession * s)
{
  const SinkAudio *au = &s->shared->audio;
  GByteArray *a;

  if (!sink_conn_is_linked (s->playback) || !au->have_volume ||
      !sink_conn_has_channel_cap (s->playback, SPICE_PLAYBACK_CAP_VOLUME))
    return;
  a = g_byte_array_new ();
  if (au->n_volume > 0) {
    gst_spice_audio_write_volume (a, au->n_volume, au->volume);
    sink_conn_send (s->playback, SPICE_MSG_PLAYBACK_VOLUME, a, NULL);
    g_byte_array_set_size (a, 0);
  }
  gst_spice_audio_write_mute (a, au->mute);
  sink_conn_send (s->playback, SPICE_MSG_PLAYBACK_MUTE, a, NULL);
  g_byte_array_unref (a);
}

void
sink_playback_stop (SinkSession * s)
{
  if (!s->play.started)
    return;
  s->play.started = FALSE;
  if (sink_conn_is_linked (s->playback))
    sink_conn_send (s->playback, SPICE_MSG_PLAYBACK_STOP, NULL, NULL);
}

void
sink_playback_start (SinkSession * s)
{
  const SinkAudio *au = &s->shared->audio;
  GByteArray *a;

  sink_playback_stop (s);
  s->play.refused = FALSE;
  if (!sink_conn_is_linked (s->playback) || !au->playing)
    return;
  if (au->mode == SPICE_AUDIO_DATA_MODE_OPUS &&
      !sink_conn_has_channel_cap (s->playback, SPICE_PLAYBACK_CAP_OPUS)) {
    GST_WARNING ("session %08x: the client does not decode Opus: no sound "
        "for it (serve raw audio/x-raw to reach it)", s->id);
    s->play.refused = TRUE;
    return;
  }
  a = g_byte_array_new ();
  gst_spice_audio_write_playback_mode (a, mm_now (s), au->mode);
  sink_conn_send (s->playback, SPICE_MSG_PLAYBACK_MODE, a, NULL);
  g_byte_array_set_size (a, 0);
  gst_spice_audio_write_playback_start (a, au->channels, au->rate, mm_now (s));
  sink_conn_send (s->playback, SPICE_MSG_PLAYBACK_START, a, NULL);
  g_byte_array_unref (a);
  s->play.started = TRUE;
  GST_INFO ("session %08x: playback %s, %d Hz, %d channels", s->id,
      au->mode == SPICE_AUDIO_DATA_MODE_OPUS ? "Opus" : "raw", au->rate,
      au->channels);
  sink_playback_volume (s);
}

void
sink_playback_linked (SinkSession * s)
{
  sink_conn_set_limit (s->playback, SINK_PLAYBACK_LIMIT);
  s->play.started = FALSE;
  sink_playback_start (s);
}

void
sink_playback_data (SinkSession * s, GBytes * packet)
{
  static const guint8 zero[4] = { 0 };
  GBytes *fixed;

  if (!s->play.started || !sink_conn_is_linked (s->playback))
    return;
  if (sink_conn_queued_bytes (s->playback) > SINK_PLAYBACK_MAX_QUEUED) {
    s->play.dropped++;
    return;
  }
  /* u32 time, stamped at the write */
  fixed = g_bytes_new_static (zero, sizeof (zero));
  sink_conn_send_bytes (s->playback, SPICE_MSG_PLAYBACK_DATA, fixed, 0, packet);
  g_bytes_unref (fixed);
  s->play.packets++;
  s->play.bytes += g_bytes_get_size (packet);
}

static const SinkHandler handlers[] = {
  NULL,                         /* the client sends only common messages */
};

gboolean
sink_playback_handle (SinkSession * s, guint16 type, const guint8 * body,
    gsize size)
{
  return sink_handlers_dispatch (GST_CAT_DEFAULT, handlers,
      G_N_ELEMENTS (handlers), s, type, body, size);
}
