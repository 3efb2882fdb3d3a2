/* spicesink: the cursor channel of a session
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "sinkshared.h"

G_BEGIN_DECLS

typedef struct
{
  guint64 serial_sent;
  gboolean visible_sent;
} SinkCursorState;

/* lock held: CURSOR_INIT (@init) or what changed since the last one */
void     sink_cursor_send (SinkSession * s, gboolean init);

G_END_DECLS
