/* spicesink: the cursor channel of a session
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "sinkshared.h"

G_BEGIN_DECLS

/* the largest cursor shape served (pixels a side); a larger one is
 * served as no shape */
#define SINK_CURSOR_MAX_SIZE 512

/* Bound: a cursor connection holds at most one message beyond the socket;
 * changes while it is queued are coalesced (the latest shape and position
 * go out when it drained). Its limit covers one largest shape twice. */
#define SINK_CURSOR_MAX_QUEUED (2 * (SINK_CURSOR_MAX_SIZE * \
      SINK_CURSOR_MAX_SIZE * 4) + 64 * 1024)

typedef struct
{
  guint64 serial_sent;
  gboolean visible_sent;
  gboolean pending;             /* a change waits for the queue to drain */
} SinkCursorState;

/* lock held: the cursor channel linked: CURSOR_INIT with the current
 * cursor */
void     sink_cursor_linked (SinkSession * s);
/* lock held: the shared cursor changed */
void     sink_cursor_send (SinkSession * s);
/* server thread, lock held: the queue drained: a coalesced change goes */
void     sink_cursor_drained (SinkSession * s);

G_END_DECLS
