/* spicesrc: the guest agent's side of the pipeline
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Guest -> downstream: the upstream main channel's `agent-connected` and
 * agent capabilities become the sticky `spice-agent` event, its
 * main-clipboard-selection-grab / -request / -release and
 * main-clipboard-selection (data) signals `spice-clipboard` events, queued
 * for the streaming thread (serialized, after the first frame).
 * Downstream -> guest: upstream `spice-clipboard` events become
 * spice_main_channel_clipboard_selection_grab / _request / _notify /
 * _release, and `spice-monitors-config` becomes
 * spice_main_channel_update_display(_enabled) for each monitor and one
 * spice_main_channel_send_monitor_config() once the configs stopped
 * changing for MONITORS_DEBOUNCE_MS.
 */
#include "gstspicesrcagent.h"

#include <gst/spice/gstspice.h>
#include "gstspicesrccontext.h"

GST_DEBUG_CATEGORY_STATIC (spicesrc_agent_debug);
#define GST_CAT_DEFAULT spicesrc_agent_debug

#define MONITORS_DEBOUNCE_MS 200
#define MAX_QUEUED_EVENTS 256

struct _GstSpiceSrcAgent
{
  GstElement *owner;
  GMutex *lock;
  GCond *cond;

  /* lock */
  GQueue events;                /* downstream, oldest first */
  GstSpiceAgentInfo announced;
  gboolean announced_valid;

  /* context thread only */
  SpiceMainChannel *channel;
  GstSpiceMonitor mons[GST_SPICE_MAX_MONITORS];
  guint n_mons, n_mons_sent;
  guint debounce_id;
};

GstSpiceSrcAgent *
gst_spice_src_agent_new (GstElement * owner, GMutex * lock, GCond * cond)
{
  GstSpiceSrcAgent *agent = g_new0 (GstSpiceSrcAgent, 1);

  GST_DEBUG_CATEGORY_INIT (spicesrc_agent_debug, "spicesrcagent", 0,
      "spicesrc guest agent relay");
  agent->owner = owner;
  agent->lock = lock;
  agent->cond = cond;
  g_queue_init (&agent->events);
  return agent;
}

/* the element's finalize (the channel is forgotten by then) */
void
gst_spice_src_agent_free (GstSpiceSrcAgent * agent)
{
  g_queue_clear_full (&agent->events, (GDestroyNotify) gst_event_unref);
  g_free (agent);
}

/* any thread: @event downstream, in order */
static void
queue_event (GstSpiceSrcAgent * agent, GstEvent * event)
{
  g_mutex_lock (agent->lock);
  if (agent->events.length >= MAX_QUEUED_EVENTS) {
    GST_WARNING_OBJECT (agent->owner, "downstream takes no agent events: "
        "dropping %" GST_PTR_FORMAT, event);
    gst_event_unref (event);
  } else {
    g_queue_push_tail (&agent->events, event);
    g_cond_broadcast (agent->cond);
  }
  g_mutex_unlock (agent->lock);
}

GstEvent *
gst_spice_src_agent_pop_locked (GstSpiceSrcAgent * agent)
{
  return g_queue_pop_head (&agent->events);
}

void
gst_spice_src_agent_reset_locked (GstSpiceSrcAgent * agent)
{
  g_queue_clear_full (&agent->events, (GDestroyNotify) gst_event_unref);
  agent->announced_valid = FALSE;
}

/* ------------------------------------------------ guest -> downstream */

/* context thread */
static void
announce (GstSpiceSrcAgent * agent)
{
  GstSpiceAgentInfo info = { 0, };
  gint mode = 0;
  guint cap;

  if (agent->channel) {
    g_object_get (agent->channel, "agent-connected", &info.connected,
        "mouse-mode", &mode, NULL);
    info.client_mouse = mode == SPICE_MOUSE_MODE_CLIENT;
    for (cap = 0; info.connected && cap < VD_AGENT_END_CAP; cap++)
      if (spice_main_channel_agent_test_capability (agent->channel, cap))
        VD_AGENT_SET_CAPABILITY (info.caps, cap);
  }
  g_mutex_lock (agent->lock);
  if (agent->announced_valid &&
      memcmp (&agent->announced, &info, sizeof (info)) == 0) {
    g_mutex_unlock (agent->lock);
    return;
  }
  agent->announced = info;
  agent->announced_valid = TRUE;
  g_mutex_unlock (agent->lock);
  GST_INFO_OBJECT (agent->owner, "guest agent %s, caps %08x",
      info.connected ? "connected" : "absent", info.caps[0]);
  queue_event (agent, gst_spice_event_new_agent (&info));
}

static void
on_agent_update (SpiceChannel * channel, GstSpiceSrcAgent * agent)
{
  announce (agent);
}

static void
on_agent_notify (SpiceChannel * channel, GParamSpec * pspec,
    GstSpiceSrcAgent * agent)
{
  announce (agent);
}

static void
queue_clipboard (GstSpiceSrcAgent * agent, const GstSpiceClipboard * clip)
{
  queue_event (agent, gst_spice_event_new_clipboard (FALSE, clip));
}

static gboolean
on_grab (SpiceMainChannel * channel, guint selection, guint32 * types,
    guint ntypes, GstSpiceSrcAgent * agent)
{
  GstSpiceClipboard clip = { GST_SPICE_CLIPBOARD_GRAB, selection, };
  guint i;

  for (i = 0; i < MIN (ntypes, GST_SPICE_CLIPBOARD_MAX_TYPES); i++)
    clip.types[clip.n_types++] = types[i];
  GST_DEBUG_OBJECT (agent->owner, "guest grabs selection %u (%u types)",
      selection, ntypes);
  queue_clipboard (agent, &clip);
  return TRUE;
}

static gboolean
on_request (SpiceMainChannel * channel, guint selection, guint type,
    GstSpiceSrcAgent * agent)
{
  GstSpiceClipboard clip = { GST_SPICE_CLIPBOARD_REQUEST, selection, 0,
    {0,}, type,
  };

  GST_DEBUG_OBJECT (agent->owner, "guest pastes selection %u type %u",
      selection, type);
  queue_clipboard (agent, &clip);
  return TRUE;
}

static void
on_data (SpiceMainChannel * channel, guint selection, guint type,
    const guint8 * data, guint size, GstSpiceSrcAgent * agent)
{
  GstSpiceClipboard clip = { GST_SPICE_CLIPBOARD_DATA, selection, 0,
    {0,}, type,
  };

  clip.data = g_bytes_new (data, size);
  GST_DEBUG_OBJECT (agent->owner, "guest clipboard %u: %u bytes of type %u",
      selection, size, type);
  queue_clipboard (agent, &clip);
  g_bytes_unref (clip.data);
}

static void
on_release (SpiceMainChannel * channel, guint selection,
    GstSpiceSrcAgent * agent)
{
  GstSpiceClipboard clip = { GST_SPICE_CLIPBOARD_RELEASE, selection, };

  queue_clipboard (agent, &clip);
}

void
gst_spice_src_agent_set_channel (GstSpiceSrcAgent * agent,
    SpiceMainChannel * channel)
{
  if (agent->channel == channel)
    return;
  if (agent->channel)
    g_signal_handlers_disconnect_by_data (agent->channel, agent);
  if (agent->debounce_id) {
    g_source_remove (agent->debounce_id);
    agent->debounce_id = 0;
  }
  agent->channel = channel;
  agent->n_mons_sent = 0;
  if (channel) {
    g_signal_connect (channel, "main-agent-update",
        G_CALLBACK (on_agent_update), agent);
    g_signal_connect (channel, "notify::agent-connected",
        G_CALLBACK (on_agent_notify), agent);
    g_signal_connect (channel, "notify::mouse-mode",
        G_CALLBACK (on_agent_notify), agent);
    g_signal_connect (channel, "main-clipboard-selection-grab",
        G_CALLBACK (on_grab), agent);
    g_signal_connect (channel, "main-clipboard-selection-request",
        G_CALLBACK (on_request), agent);
    g_signal_connect (channel, "main-clipboard-selection",
        G_CALLBACK (on_data), agent);
    g_signal_connect (channel, "main-clipboard-selection-release",
        G_CALLBACK (on_release), agent);
  }
  announce (agent);
}

/* ------------------------------------------------ downstream -> guest */

typedef struct
{
  GstSpiceSrcAgent *agent;
  GstElement *owner;
  GstEvent *event;
} AgentOp;

static void
agent_op_free (gpointer data)
{
  AgentOp *op = data;

  gst_event_unref (op->event);
  gst_object_unref (op->owner);
  g_free (op);
}

/* context thread: the configs stopped changing */
static gboolean
ctx_send_monitors (gpointer data)
{
  GstSpiceSrcAgent *agent = data;
  guint i;

  agent->debounce_id = 0;
  if (!agent->channel)
    return G_SOURCE_REMOVE;
  for (i = 0; i < MAX (agent->n_mons, agent->n_mons_sent); i++) {
    const GstSpiceMonitor *m = &agent->mons[i];
    gboolean on = i < agent->n_mons && m->width > 0 && m->height > 0;

    spice_main_channel_update_display_enabled (agent->channel, i, on, FALSE);
    if (on)
      spice_main_channel_update_display (agent->channel, i, m->x, m->y,
          m->width, m->height, FALSE);
  }
  agent->n_mons_sent = agent->n_mons;
  GST_INFO_OBJECT (agent->owner, "monitors config: %u monitor(s), first "
      "%ux%u", agent->n_mons, agent->mons[0].width, agent->mons[0].height);
  if (!spice_main_channel_send_monitor_config (agent->channel))
    GST_WARNING_OBJECT (agent->owner, "the guest agent took no monitors "
        "config");
  return G_SOURCE_REMOVE;
}

/* context thread */
static gboolean
ctx_agent_op (gpointer data)
{
  AgentOp *op = data;
  GstSpiceSrcAgent *agent = op->agent;
  SpiceMainChannel *ch = agent->channel;
  GstSpiceClipboard clip;
  guint n;

  if (!ch)
    return G_SOURCE_REMOVE;
  if (gst_spice_event_parse_monitors_config (op->event, agent->mons, &n)) {
    agent->n_mons = n;
    if (agent->debounce_id)
      g_source_remove (agent->debounce_id);
    agent->debounce_id = g_timeout_add (MONITORS_DEBOUNCE_MS,
        ctx_send_monitors, agent);
    return G_SOURCE_REMOVE;
  }
  if (!gst_spice_event_parse_clipboard (op->event, &clip))
    return G_SOURCE_REMOVE;
  /* spice-gtk relays clipboards only to an agent that has them by demand
   * (and complains otherwise) */
  if (!spice_main_channel_agent_test_capability (ch,
          VD_AGENT_CAP_CLIPBOARD_BY_DEMAND)) {
    GST_DEBUG_OBJECT (agent->owner, "the guest agent has no clipboard "
        "by demand: clipboard event dropped");
    gst_spice_clipboard_clear (&clip);
    return G_SOURCE_REMOVE;
  }
  switch (clip.action) {
    case GST_SPICE_CLIPBOARD_GRAB:
      spice_main_channel_clipboard_selection_grab (ch, clip.selection,
          clip.types, clip.n_types);
      break;
    case GST_SPICE_CLIPBOARD_REQUEST:
      spice_main_channel_clipboard_selection_request (ch, clip.selection,
          clip.type);
      break;
    case GST_SPICE_CLIPBOARD_DATA:{
      gsize size = 0;
      const guint8 *d = clip.data ? g_bytes_get_data (clip.data, &size) : NULL;

      spice_main_channel_clipboard_selection_notify (ch, clip.selection,
          clip.type, d, size);
      break;
    }
    case GST_SPICE_CLIPBOARD_RELEASE:
      spice_main_channel_clipboard_selection_release (ch, clip.selection);
      break;
  }
  gst_spice_clipboard_clear (&clip);
  return G_SOURCE_REMOVE;
}

gboolean
gst_spice_src_agent_upstream_event (GstSpiceSrcAgent * agent, GstEvent * event)
{
  AgentOp *op;

  if (GST_EVENT_TYPE (event) != GST_EVENT_CUSTOM_UPSTREAM ||
      (!gst_event_has_name (event, GST_SPICE_EVENT_CLIPBOARD) &&
          !gst_event_has_name (event, GST_SPICE_EVENT_MONITORS_CONFIG)))
    return FALSE;
  op = g_new0 (AgentOp, 1);
  op->agent = agent;
  op->owner = gst_object_ref (agent->owner);
  op->event = gst_event_ref (event);
  gst_spice_src_context_invoke (ctx_agent_op, op, agent_op_free);
  return TRUE;
}
