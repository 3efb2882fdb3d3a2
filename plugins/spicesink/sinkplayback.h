/* spicesink: the playback channel of a session
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "sinkshared.h"

G_BEGIN_DECLS

/* a playback channel that does not read keeps at most this much queued;
 * newer packets are dropped for it (about 170 ms of 48 kHz stereo) */
#define SINK_PLAYBACK_MAX_QUEUED (32 * 1024)
/* the channel's limit: packets are dropped above SINK_PLAYBACK_MAX_QUEUED
 * (real time), control messages come on top */
#define SINK_PLAYBACK_LIMIT (2 * SINK_PLAYBACK_MAX_QUEUED + 64 * 1024)

typedef struct
{
  gboolean started;             /* START sent, no STOP since */
  gboolean refused;             /* Opus to a client without Opus */
  guint64 packets, bytes, dropped;
} SinkPlaybackState;

/* all: lock held */
/* the channel linked: START (and volume) if the audio plays */
void     sink_playback_linked (SinkSession * s);
/* the element's audio format (SinkShared.audio) started or changed */
void     sink_playback_start (SinkSession * s);
/* one packet (raw samples or one Opus packet) */
void     sink_playback_data (SinkSession * s, GBytes * packet);
void     sink_playback_stop (SinkSession * s);
void     sink_playback_volume (SinkSession * s);
gboolean sink_playback_handle (SinkSession * s, guint16 type,
    const guint8 * body, gsize size);

G_END_DECLS
