/* spicesink: the inputs channel of a session (keyboard, mouse)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Runs on the server thread WITHOUT the server lock: a key press becomes a
 * navigation event (SinkSessionHooks.on_navigation) while the render path
 * may hold the lock; only the motion ACK and a close take it.
 */
#pragma once

#include "sinkshared.h"

G_BEGIN_DECLS

typedef struct
{
  guint motion_count;
  gint mouse_x, mouse_y;
  guint16 buttons;
  guint16 locks;                /* the client's (KEY_MODIFIERS) */
  guint32 mods;                 /* GstNavigationModifierType of held keys */
  guint32 held[0x200 / 32];     /* bit per scancode (0x100 | code for E0
                                 * keys) its client holds down */
  gsize key_events, pointer_events;     /* atomic */
  /* lock held: the upstream's locks as the client was told them, and
   * whether a change waits for its queue to drain */
  guint16 locks_sent;
  gboolean locks_pending;
} SinkInputsState;

/* server thread, lock held */
/* what the inputs channel queues for its client (INPUTS_INIT, one
 * MOUSE_MOTION_ACK per SPICE_INPUT_MOTION_ACK_BUNCH motions, at most one
 * KEY_MODIFIERS) */
#define SINK_INPUTS_MAX_QUEUED (256 * 1024)

void     sink_inputs_linked (SinkSession * s);
/* any thread, lock held: the upstream's locks (SinkShared.key_locks)
 * changed: KEY_MODIFIERS, or once the queue drained (the latest only) */
void     sink_inputs_send_locks (SinkSession * s);
/* server thread, lock held: everything queued was written */
void     sink_inputs_drained (SinkSession * s);
/* server thread, lock held: the channel is gone: what its client held
 * down (keys, buttons) is released upstream, so that no key stays down
 * for the next client */
void     sink_inputs_closed (SinkSession * s);
/* server thread, lock NOT held; FALSE when it closed the channel */
gboolean sink_inputs_handle (SinkSession * s, guint16 type,
    const guint8 * body, gsize size);

G_END_DECLS
