/* gst-spice: spicesrc's sound — the `audio` sometimes pad (playback) and
 * the record channel fed from upstream events
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <gst/gst.h>
#include <spice-client.h>

G_BEGIN_DECLS

typedef struct _GstSpiceSrcAudio GstSpiceSrcAudio;

/* the element's `audio` pad template */
extern GstStaticPadTemplate gst_spice_src_audio_template;

/* element init / finalize */
GstSpiceSrcAudio *gst_spice_src_audio_new (GstElement * element);
void     gst_spice_src_audio_free (GstSpiceSrcAudio * a);

/* Context thread: a new channel of the session. TRUE if it was a playback
 * or record channel, which the helper then connects. */
gboolean gst_spice_src_audio_channel_new (GstSpiceSrcAudio * a,
    SpiceChannel * channel);
/* Context thread: a channel is going away, or (@channel NULL) the whole
 * session: the audio stream stops (spice-audio-stop) */
void     gst_spice_src_audio_forget (GstSpiceSrcAudio * a,
    SpiceChannel * channel);
/* any thread: the element got EOS: so does the audio pad */
void     gst_spice_src_audio_eos (GstSpiceSrcAudio * a);
/* Streaming or application thread (element stop()): ends the audio pad's
 * task and removes the pad. */
void     gst_spice_src_audio_stop (GstSpiceSrcAudio * a);
/* any thread: the audio counters for the element's stats */
void     gst_spice_src_audio_stats (GstSpiceSrcAudio * a, GstStructure * s);

/* any thread: the running time of @element at the monotonic time
 * @arrival_us (GST_CLOCK_TIME_NONE without clock or base time) */
GstClockTime gst_spice_src_running_time_at (GstElement * element,
    gint64 arrival_us);

G_END_DECLS
