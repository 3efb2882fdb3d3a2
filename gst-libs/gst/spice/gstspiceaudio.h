/* gst-spice: sound between spicesrc and spicesink — caps and events
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Playback travels downstream as buffers (`audio/x-raw` S16LE interleaved,
 * or `audio/x-opus`) with the guest's volume and mute as a sticky event.
 * Record (a client's microphone) has no downstream path to spicesrc: it
 * travels upstream as custom events, from spicesink's audio sink pad
 * through the audio branch to spicesrc's audio pad (docs/design.md
 * "Record").
 */
#pragma once

#include "gstspice-prelude.h"

#include <gst/gst.h>

G_BEGIN_DECLS

/* SPICE audio carries at most this many channels (spice-gtk: 2) */
#define GST_SPICE_AUDIO_MAX_CHANNELS 2

/* The raw caps of a playback or record stream (S16LE interleaved); @rate
 * or @channels 0: any */
GST_SPICE_API
GstCaps  *gst_spice_audio_raw_caps (gint rate, gint channels);

/* Downstream, sticky, from spicesrc's audio pad: the guest's playback
 * volume (per channel, 0..65535, SPICE's scale) and mute. */
#define GST_SPICE_EVENT_AUDIO_VOLUME "spice-audio-volume"
GST_SPICE_API
GstEvent *gst_spice_event_new_audio_volume (guint n_channels,
    const guint16 * volume, gboolean mute);
/* @volume: GST_SPICE_AUDIO_MAX_CHANNELS entries; *@n_channels 0: the
 * event had no volume (mute only) */
GST_SPICE_API
gboolean  gst_spice_event_parse_audio_volume (GstEvent * event,
    guint * n_channels, guint16 * volume, gboolean * mute);

/* Downstream, serialized, from spicesrc's audio pad: the upstream stopped
 * playback (PLAYBACK_STOP). Not EOS: a sink takes nothing after EOS until a
 * flush, and the next START continues on the same pad with a new
 * stream-start. spicesink sends PLAYBACK_STOP and starts again at the next
 * buffer. */
#define GST_SPICE_EVENT_AUDIO_STOP "spice-audio-stop"
GST_SPICE_API
GstEvent *gst_spice_event_new_audio_stop (void);
GST_SPICE_API
gboolean  gst_spice_event_is_audio_stop (GstEvent * event);

/* Upstream, from spicesink's audio pad: a client's record channel started
 * (S16LE interleaved at @rate with @channels) or stopped. */
#define GST_SPICE_EVENT_RECORD_START "spice-record-start"
#define GST_SPICE_EVENT_RECORD_STOP "spice-record-stop"
GST_SPICE_API
GstEvent *gst_spice_event_new_record_start (gint rate, gint channels);
GST_SPICE_API
gboolean  gst_spice_event_parse_record_start (GstEvent * event, gint * rate,
    gint * channels);
GST_SPICE_API
GstEvent *gst_spice_event_new_record_stop (void);
GST_SPICE_API
gboolean  gst_spice_event_is_record_stop (GstEvent * event);

/* Upstream, from spicesink's audio pad: recorded samples (S16LE
 * interleaved, whole frames) in @buffer, as the last record-start said. */
#define GST_SPICE_EVENT_RECORD_DATA "spice-record-data"
GST_SPICE_API
GstEvent *gst_spice_event_new_record_data (GstBuffer * buffer);
/* the buffer is borrowed from the event */
GST_SPICE_API
gboolean  gst_spice_event_parse_record_data (GstEvent * event,
    GstBuffer ** buffer);


/* ---- wire: the playback and record channels (spice.proto's layouts) ---- */

/* PLAYBACK_MODE: u32 time, u16 mode (SPICE_AUDIO_DATA_MODE_*), no data */
GST_SPICE_API
void      gst_spice_audio_write_playback_mode (GByteArray * a, guint32 time,
    guint16 mode);
/* PLAYBACK_START: u32 channels, u16 format (SPICE_AUDIO_FMT_S16), u32
 * frequency, u32 time */
GST_SPICE_API
void      gst_spice_audio_write_playback_start (GByteArray * a,
    guint32 channels, guint32 frequency, guint32 time);
/* PLAYBACK_VOLUME / RECORD_VOLUME: u8 n, u16 volume[n]; *_MUTE: u8 */
GST_SPICE_API
void      gst_spice_audio_write_volume (GByteArray * a, guint n,
    const guint16 * volume);
GST_SPICE_API
void      gst_spice_audio_write_mute (GByteArray * a, gboolean mute);
/* RECORD_START: u32 channels, u16 format, u32 frequency */
GST_SPICE_API
void      gst_spice_audio_write_record_start (GByteArray * a,
    guint32 channels, guint32 frequency);

/* client RECORD_DATA: u32 time, the samples (the rest) */
GST_SPICE_API
gboolean  gst_spice_audio_parse_record_data (const guint8 * body, gsize size,
    guint32 * time, const guint8 ** data, gsize * data_size);
/* client RECORD_MODE: u32 time, u16 mode, codec data (ignored) */
GST_SPICE_API
gboolean  gst_spice_audio_parse_record_mode (const guint8 * body, gsize size,
    guint32 * time, guint16 * mode);

/* The number of samples (per channel, at 48 kHz) in one Opus packet from
 * its TOC (RFC 6716 3.1), or -1 if it is not a valid packet. */
GST_SPICE_API
gint      gst_spice_audio_opus_packet_samples (const guint8 * data,
    gsize size);

G_END_DECLS
