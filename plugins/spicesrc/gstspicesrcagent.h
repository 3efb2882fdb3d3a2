/* spicesrc: the guest agent's side of the pipeline (clipboard, monitors
 * config, the clients' files) on spice-gtk's main channel API
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <gst/gst.h>
#include <spice-client.h>

G_BEGIN_DECLS

typedef struct _GstSpiceSrcAgent GstSpiceSrcAgent;

/* @lock / @cond: the element's; downstream events are queued under @lock
 * and @cond is broadcast so that the streaming thread pushes them */
GstSpiceSrcAgent *gst_spice_src_agent_new (GstElement * owner, GMutex * lock,
    GCond * cond);
void     gst_spice_src_agent_free (GstSpiceSrcAgent * agent);

/* context thread: follows @channel (NULL: forgets it; the agent is gone) */
void     gst_spice_src_agent_set_channel (GstSpiceSrcAgent * agent,
    SpiceMainChannel * channel);

/* streaming thread, lock held: the next downstream event, or NULL */
GstEvent *gst_spice_src_agent_pop_locked (GstSpiceSrcAgent * agent);
/* lock held (start / stop): forgets queued events and what was announced */
void     gst_spice_src_agent_reset_locked (GstSpiceSrcAgent * agent);

/* any thread (upstream events): TRUE if @event was the agent's
 * (spice-clipboard, spice-monitors-config, spice-file-xfer); it is
 * handled on the context thread */
gboolean gst_spice_src_agent_upstream_event (GstSpiceSrcAgent * agent,
    GstEvent * event);

G_END_DECLS
