/* spicesink: the record channel of a session
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "sinkshared.h"

G_BEGIN_DECLS

/* what spicesink asks clients to record: S16 stereo at 48 kHz (what
 * spice-server asks for when its guest records at the Opus rate) */
#define SINK_RECORD_RATE 48000
#define SINK_RECORD_CHANNELS 2

typedef struct
{
  gboolean started;             /* RECORD_START sent */
  guint64 packets, bytes;
} SinkRecordState;

/* all: server thread, lock held */
/* the channel linked: RECORD_START */
void     sink_record_linked (SinkSession * s);
/* the channel closed */
void     sink_record_closed (SinkSession * s);
gboolean sink_record_handle (SinkSession * s, guint16 type,
    const guint8 * body, gsize size);

G_END_DECLS
