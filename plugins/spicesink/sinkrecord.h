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

/* A client records in real time: more RECORD_DATA than the negotiated
 * rate allows, beyond a burst of SINK_RECORD_BURST_MS, is a protocol
 * violation that closes its record channel (spice-security
 * "protocol-violation", reason "record-rate"). The burst is a client
 * catching up after a stall: spice-gtk queues what its audio source gives
 * while it cannot write and sends it all when the link is back, so its
 * burst is as long as the stall (docs/reliability.md); 10 s of 48 kHz
 * stereo is 1.9 MB, a flood of 1.6 GiB/s passes it in about a
 * millisecond. */
#define SINK_RECORD_BURST_MS 10000
/* what the record channel queues for its client (RECORD_START, volume) */
#define SINK_RECORD_MAX_QUEUED (64 * 1024)

typedef struct
{
  gboolean started;             /* RECORD_START sent */
  guint64 packets, bytes;
  gdouble budget;               /* bytes it may still send now */
  gint64 budget_us;             /* when the budget was last topped up */
} SinkRecordState;

/* all: server thread, lock held */
/* the channel linked: RECORD_START */
void     sink_record_linked (SinkSession * s);
/* the channel closed */
void     sink_record_closed (SinkSession * s);
gboolean sink_record_handle (SinkSession * s, guint16 type,
    const guint8 * body, gsize size);

G_END_DECLS
