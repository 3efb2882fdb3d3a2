/* spicesink: the main channel of a session
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "sinkshared.h"

G_BEGIN_DECLS

typedef struct
{
  gboolean attached;            /* ATTACH_CHANNELS seen */
  guint16 mouse_mode;
  guint32 ping_id;
  gint64 rtt_us;                /* last PING round trip, -1 unknown */
} SinkMainState;

/* all: server thread, lock held */
void     sink_main_init (SinkSession * s);
void     sink_main_linked (SinkSession * s);
gboolean sink_main_handle (SinkSession * s, guint16 type, const guint8 * body,
    gsize size);
/* every second */
void     sink_main_ping (SinkSession * s);
/* lock held, any thread: MIGRATE_SWITCH_HOST to the address the client
 * connected to; FALSE when the main channel is not linked */
gboolean sink_main_redirect (SinkSession * s);
void     sink_main_pong (SinkSession * s, guint64 timestamp_us);

G_END_DECLS
