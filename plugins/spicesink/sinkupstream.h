/* spicesink: what the element sends upstream (and posts on the bus) from
 * threads of its own, in two bounded queues
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Nobody that holds the server lock, nor the server thread, may block on
 * upstream: they hand events and messages to this queue, whose threads push
 * them. Two queues, each with its own thread, so that a client's keys never
 * wait behind another client's microphone or clipboard:
 *
 *  - input: navigation events and a client's `spice-key-locks`. At most SINK_UPSTREAM_MAX_INPUT queued, and
 *    at most SINK_UPSTREAM_MAX_INPUT_PER_CLIENT of one client: a client
 *    that floods loses its own events, never another's.
 *  - control: everything else. Record data (at most
 *    SINK_UPSTREAM_MAX_RECORD queued) and clipboard events (at most
 *    SINK_UPSTREAM_MAX_CLIPBOARD) are dropped beyond their bound; refresh,
 *    key-unit, rate, stream-control, agent, record start/stop events and
 *    bus messages never are (the server sends them at a bounded rate).
 *
 * Every drop is counted (sink_upstream_stats()) and warned about at most
 * once a second.
 */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define SINK_UPSTREAM_MAX_INPUT 1024
#define SINK_UPSTREAM_MAX_INPUT_PER_CLIENT 256
/* 10 ms packets: about half a second of a client's microphone */
#define SINK_UPSTREAM_MAX_RECORD 50
#define SINK_UPSTREAM_MAX_CLIPBOARD 64

typedef struct _SinkUpstream SinkUpstream;

/* the element's init; messages are posted on @element */
SinkUpstream *sink_upstream_new (GstElement * element);
/* the element's finalize */
void     sink_upstream_free (SinkUpstream * up);
/* NULL -> READY: starts the threads (nothing is queued before) */
void     sink_upstream_start (SinkUpstream * up);
/* READY -> NULL: pushes what is queued, stops the threads */
void     sink_upstream_stop (SinkUpstream * up);
/* any thread: @event (taken) upstream from @pad (taken); a navigation
 * event of client @client goes to the input queue */
void     sink_upstream_push (SinkUpstream * up, GstPad * pad, guint32 client,
    GstEvent * event);
/* any thread: @msg (taken) posted on the bus from the control thread */
void     sink_upstream_post (SinkUpstream * up, GstMessage * msg);
/* any thread: the drop counters into @s */
void     sink_upstream_stats (SinkUpstream * up, GstStructure * s);

G_END_DECLS
