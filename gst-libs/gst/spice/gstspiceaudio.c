/* gst-spice: sound between spicesrc and spicesink — caps and events
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "gstspiceaudio.h"

#include <spice/enums.h>
#include <gst/base/gstbytereader.h>

#include "gstspicewire.h"

GstCaps *
gst_spice_audio_raw_caps (gint rate, gint channels)
{
  GstCaps *caps = gst_caps_new_simple ("audio/x-raw",
      "format", G_TYPE_STRING, "S16LE",
      "layout", G_TYPE_STRING, "interleaved", NULL);

  if (rate > 0)
    gst_caps_set_simple (caps, "rate", G_TYPE_INT, rate, NULL);
  else
    gst_caps_set_simple (caps, "rate", GST_TYPE_INT_RANGE, 1, G_MAXINT, NULL);
  if (channels > 0)
    gst_caps_set_simple (caps, "channels", G_TYPE_INT, channels, NULL);
  else
    gst_caps_set_simple (caps, "channels", GST_TYPE_INT_RANGE, 1,
        GST_SPICE_AUDIO_MAX_CHANNELS, NULL);
  if (channels == 2)
    gst_caps_set_simple (caps, "channel-mask", GST_TYPE_BITMASK,
        (guint64) 0x3, NULL);
  return caps;
}

static const GstStructure *
custom_structure (GstEvent * event, const gchar * name)
{
  const GstStructure *s;

  if (!event)
    return NULL;
  s = gst_event_get_structure (event);
  return s && gst_structure_has_name (s, name) ? s : NULL;
}

GstEvent *
gst_spice_event_new_audio_volume (guint n_channels, const guint16 * volume,
    gboolean mute)
{
  GstStructure *s = gst_structure_new (GST_SPICE_EVENT_AUDIO_VOLUME,
      "mute", G_TYPE_BOOLEAN, mute, NULL);
  GValue arr = G_VALUE_INIT, v = G_VALUE_INIT;
  guint i;

  g_value_init (&arr, GST_TYPE_ARRAY);
  g_value_init (&v, G_TYPE_UINT);
  for (i = 0; i < MIN (n_channels, GST_SPICE_AUDIO_MAX_CHANNELS); i++) {
    g_value_set_uint (&v, volume[i]);
    gst_value_array_append_value (&arr, &v);
  }
  gst_structure_take_value (s, "volume", &arr);
  g_value_unset (&v);
  return gst_event_new_custom (GST_EVENT_CUSTOM_DOWNSTREAM_STICKY, s);
}

gboolean
gst_spice_event_parse_audio_volume (GstEvent * event, guint * n_channels,
    guint16 * volume, gboolean * mute)
{
  const GstStructure *s = custom_structure (event,
      GST_SPICE_EVENT_AUDIO_VOLUME);
  const GValue *arr;
  guint i, n = 0;
  gboolean m = FALSE;

  if (!s || !gst_structure_get_boolean (s, "mute", &m))
    return FALSE;
  arr = gst_structure_get_value (s, "volume");
  if (arr && GST_VALUE_HOLDS_ARRAY (arr))
    n = MIN (gst_value_array_get_size (arr), GST_SPICE_AUDIO_MAX_CHANNELS);
  for (i = 0; i < n; i++) {
    const GValue *v = gst_value_array_get_value (arr, i);

    if (!G_VALUE_HOLDS_UINT (v))
      return FALSE;
    if (volume)
      volume[i] = (guint16) MIN (g_value_get_uint (v), G_MAXUINT16);
  }
  if (n_channels)
    *n_channels = n;
  if (mute)
    *mute = m;
  return TRUE;
}

GstEvent *
gst_spice_event_new_audio_stop (void)
{
  return gst_event_new_custom (GST_EVENT_CUSTOM_DOWNSTREAM,
      gst_structure_new_empty (GST_SPICE_EVENT_AUDIO_STOP));
}

gboolean
gst_spice_event_is_audio_stop (GstEvent * event)
{
  return custom_structure (event, GST_SPICE_EVENT_AUDIO_STOP) != NULL;
}

GstEvent *
gst_spice_event_new_record_start (gint rate, gint channels)
{
  return gst_event_new_custom (GST_EVENT_CUSTOM_UPSTREAM,
      gst_structure_new (GST_SPICE_EVENT_RECORD_START,
          "rate", G_TYPE_INT, rate, "channels", G_TYPE_INT, channels, NULL));
}

gboolean
gst_spice_event_parse_record_start (GstEvent * event, gint * rate,
    gint * channels)
{
  const GstStructure *s = custom_structure (event,
      GST_SPICE_EVENT_RECORD_START);
  gint r, c;

  if (!s || !gst_structure_get_int (s, "rate", &r) ||
      !gst_structure_get_int (s, "channels", &c) || r <= 0 || c <= 0 ||
      c > GST_SPICE_AUDIO_MAX_CHANNELS)
    return FALSE;
  if (rate)
    *rate = r;
  if (channels)
    *channels = c;
  return TRUE;
}

GstEvent *
gst_spice_event_new_record_stop (void)
{
  return gst_event_new_custom (GST_EVENT_CUSTOM_UPSTREAM,
      gst_structure_new_empty (GST_SPICE_EVENT_RECORD_STOP));
}

gboolean
gst_spice_event_is_record_stop (GstEvent * event)
{
  return custom_structure (event, GST_SPICE_EVENT_RECORD_STOP) != NULL;
}

GstEvent *
gst_spice_event_new_record_data (GstBuffer * buffer)
{
  return gst_event_new_custom (GST_EVENT_CUSTOM_UPSTREAM,
      gst_structure_new (GST_SPICE_EVENT_RECORD_DATA,
          "buffer", GST_TYPE_BUFFER, buffer, NULL));
}

gboolean
gst_spice_event_parse_record_data (GstEvent * event, GstBuffer ** buffer)
{
  const GstStructure *s = custom_structure (event,
      GST_SPICE_EVENT_RECORD_DATA);
  const GValue *v;

  if (!s || !(v = gst_structure_get_value (s, "buffer")) ||
      !GST_VALUE_HOLDS_BUFFER (v))
    return FALSE;
  if (buffer)
    *buffer = gst_value_get_buffer (v);
  return TRUE;
}

/* ------------------------------------------------------------- wire */

/* The playback and record bodies (spice-common's messages: spice-protocol
 * has their constants, not their layouts), little-endian, packed. */

void
gst_spice_audio_write_playback_mode (GByteArray * a, guint32 time, guint16 mode)
{
  gst_spice_put_u32 (a, time);
  gst_spice_put_u16 (a, mode);
}

void
gst_spice_audio_write_playback_start (GByteArray * a, guint32 channels,
    guint32 frequency, guint32 time)
{
  gst_spice_put_u32 (a, channels);
  gst_spice_put_u16 (a, SPICE_AUDIO_FMT_S16);
  gst_spice_put_u32 (a, frequency);
  gst_spice_put_u32 (a, time);
}

void
gst_spice_audio_write_volume (GByteArray * a, guint n, const guint16 * volume)
{
  guint i;

  n = MIN (n, GST_SPICE_AUDIO_MAX_CHANNELS);
  gst_spice_put_u8 (a, (guint8) n);
  for (i = 0; i < n; i++)
    gst_spice_put_u16 (a, volume[i]);
}

void
gst_spice_audio_write_mute (GByteArray * a, gboolean mute)
{
  gst_spice_put_u8 (a, mute ? 1 : 0);
}

void
gst_spice_audio_write_record_start (GByteArray * a, guint32 channels,
    guint32 frequency)
{
  gst_spice_put_u32 (a, channels);
  gst_spice_put_u16 (a, SPICE_AUDIO_FMT_S16);
  gst_spice_put_u32 (a, frequency);
}

gboolean
gst_spice_audio_parse_record_data (const guint8 * body, gsize size,
    guint32 * time, const guint8 ** data, gsize * data_size)
{
  GstByteReader r;

  if (!body || size > G_MAXUINT)
    return FALSE;
  gst_byte_reader_init (&r, body, (guint) size);
  if (!gst_byte_reader_get_uint32_le (&r, time))
    return FALSE;
  *data_size = gst_byte_reader_get_remaining (&r);
  *data = body + gst_byte_reader_get_pos (&r);
  return TRUE;
}

gboolean
gst_spice_audio_parse_record_mode (const guint8 * body, gsize size,
    guint32 * time, guint16 * mode)
{
  GstByteReader r;

  if (!body || size > G_MAXUINT)
    return FALSE;
  gst_byte_reader_init (&r, body, (guint) size);
  return gst_byte_reader_get_uint32_le (&r, time) &&
      gst_byte_reader_get_uint16_le (&r, mode);
}

gint
gst_spice_audio_opus_packet_samples (const guint8 * data, gsize size)
{
  /* frame sizes in 1/400 s (2.5 ms) units, by configuration (TOC >> 3) */
  static const guint8 units[32] = {
    4, 8, 16, 24, 4, 8, 16, 24, 4, 8, 16, 24,   /* SILK: 10 20 40 60 ms */
    4, 8, 4, 8,                 /* hybrid: 10 20 ms */
    1, 2, 4, 8, 1, 2, 4, 8, 1, 2, 4, 8, 1, 2, 4, 8,     /* CELT */
  };
  guint frames;

  if (!data || size < 1)
    return -1;
  switch (data[0] & 0x3) {
    case 0:
      frames = 1;
      break;
    case 1:
    case 2:
      frames = 2;
      break;
    default:
      if (size < 2)
        return -1;
      frames = data[1] & 0x3f;
      if (frames == 0)
        return -1;
      break;
  }
  /* 48000 / 400 = 120 samples per unit; at most 120 ms per packet */
  if (frames * units[data[0] >> 3] > 48)
    return -1;
  return (gint) (frames * units[data[0] >> 3] * 120);
}
