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
 *
 * Files: an upstream `spice-file-xfer` start (a client's whole file,
 * spooled by spicesink) becomes spice_main_channel_file_copy_async() of
 * that path, a cancel cancels its GCancellable, and how the copy ended
 * goes back downstream as `spice-file-xfer-status`. spice-gtk reports a
 * file's end as a GError only (its SpiceFileTransferTask "finished"
 * signal): the VD_AGENT_FILE_XFER_STATUS_* the guest sent is read back
 * from spice-gtk's own message for it (status_of_error()).
 */
#include "gstspicesrcagent.h"

#include <string.h>
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
  GHashTable *copies;           /* key -> FileCopy in flight */
};

/* one copy of a client's file to the guest (context thread) */
typedef struct
{
  gint refs;                    /* spice-gtk's callback, its task's end */
  GstSpiceSrcAgent *agent;
  GstElement *owner;            /* a reference: the agent outlives us */
  guint64 key;
  guint64 size;
  GCancellable *cancellable;
  gboolean have_task;           /* its SpiceFileTransferTask is followed */
  gboolean answered;
  gint64 started_us;
} FileCopy;

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
  agent->copies = g_hash_table_new (g_int64_hash, g_int64_equal);
  return agent;
}

/* the element's finalize (the channel is forgotten by then) */
void
gst_spice_src_agent_free (GstSpiceSrcAgent * agent)
{
  g_queue_clear_full (&agent->events, (GDestroyNotify) gst_event_unref);
  /* every copy holds the element: none is left by its finalize */
  g_hash_table_unref (agent->copies);
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
  GHashTableIter it;
  FileCopy *fc;

  if (agent->channel == channel)
    return;
  /* spice-gtk ends them (cancelled, or "agent connection closed") */
  g_hash_table_iter_init (&it, agent->copies);
  while (g_hash_table_iter_next (&it, NULL, (gpointer *) & fc))
    g_cancellable_cancel (fc->cancellable);
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

/* ----------------------------------------------- client files -> guest */

static void
copy_unref (FileCopy * fc)
{
  if (--fc->refs > 0)
    return;
  g_object_unref (fc->cancellable);
  gst_object_unref (fc->owner);
  g_free (fc);
}

/* spice-gtk's text for a status, as it reports it (its translations) */
static gboolean
is_spice_gtk_text (const gchar * message, const gchar * msgid)
{
  return g_str_equal (message, msgid) ||
      g_str_equal (message, g_dgettext ("spice-gtk", msgid));
}

/* does @message start like spice-gtk's text @format, up to its first
 * conversion? */
static gboolean
has_spice_gtk_prefix (const gchar * message, const gchar * format)
{
  const gchar *tr[2] = { format, g_dgettext ("spice-gtk", format) };
  guint i;

  for (i = 0; i < 2; i++) {
    const gchar *pct = strchr (tr[i], '%');
    gsize n = pct ? (gsize) (pct - tr[i]) : strlen (tr[i]);

    if (n > 0 && strncmp (message, tr[i], n) == 0)
      return TRUE;
  }
  return FALSE;
}

/* The VD_AGENT_FILE_XFER_STATUS_* behind spice-gtk's (0.42) error for one
 * file: the guest agent's answer becomes a fixed message per status in
 * main_agent_handle_xfer_status(); ERROR (with @io_error) for the
 * others. */
static guint32
status_of_error (const GError * error, gint * io_error)
{
  static const struct
  {
    const gchar *text;
    guint32 status;
  } texts[] = {
    {"The spice agent cancelled the file transfer",
        VD_AGENT_FILE_XFER_STATUS_CANCELLED},
    {"User's session is locked and cannot transfer files, unlock it and "
          "try again.", VD_AGENT_FILE_XFER_STATUS_SESSION_LOCKED},
    {"Session agent not connected.",
        VD_AGENT_FILE_XFER_STATUS_VDAGENT_NOT_CONNECTED},
    {"The agent is not connected",
        VD_AGENT_FILE_XFER_STATUS_VDAGENT_NOT_CONNECTED},
    {"Agent connection closed",
        VD_AGENT_FILE_XFER_STATUS_VDAGENT_NOT_CONNECTED},
    {"File transfer is disabled.", VD_AGENT_FILE_XFER_STATUS_DISABLED},
    {"The file transfer is disabled", VD_AGENT_FILE_XFER_STATUS_DISABLED},
  };
  guint i;

  *io_error = -1;
  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    return VD_AGENT_FILE_XFER_STATUS_CANCELLED;
  if (error->domain == G_IO_ERROR) {
    *io_error = error->code;
    return VD_AGENT_FILE_XFER_STATUS_ERROR;
  }
  for (i = 0; i < G_N_ELEMENTS (texts); i++)
    if (is_spice_gtk_text (error->message, texts[i].text))
      return texts[i].status;
  if (has_spice_gtk_prefix (error->message, "File transfer failed due to "
          "lack of free space on remote machine (%s free, %s to transfer)") ||
      is_spice_gtk_text (error->message, "File transfer failed due to lack "
          "of free space on remote machine"))
    return VD_AGENT_FILE_XFER_STATUS_NOT_ENOUGH_SPACE;
  return VD_AGENT_FILE_XFER_STATUS_ERROR;
}

/* context thread: how transfer @key ended, downstream */
static void
answer_copy (GstSpiceSrcAgent * agent, guint64 key, guint32 status,
    gint io_error, const gchar * message)
{
  GstSpiceFileXferStatus st = { key, status, io_error, message };

  queue_event (agent, gst_spice_event_new_file_xfer_status (&st));
}

/* context thread: @fc ended (@error NULL: the guest has the file); the
 * first answer counts */
static void
copy_ended (FileCopy * fc, const GError * error)
{
  gdouble s = (g_get_monotonic_time () - fc->started_us) / 1e6;
  guint32 status = VD_AGENT_FILE_XFER_STATUS_SUCCESS;
  gint io_error = -1;

  if (fc->answered)
    return;
  fc->answered = TRUE;
  g_hash_table_remove (fc->agent->copies, &fc->key);
  if (error)
    status = status_of_error (error, &io_error);
  if (status == VD_AGENT_FILE_XFER_STATUS_SUCCESS)
    GST_INFO_OBJECT (fc->owner, "file %" G_GUINT64_FORMAT " (%"
        G_GUINT64_FORMAT " bytes) copied to the guest in %.2f s", fc->key,
        fc->size, s);
  else
    GST_WARNING_OBJECT (fc->owner, "file %" G_GUINT64_FORMAT " (%"
        G_GUINT64_FORMAT " bytes) not copied to the guest (status %u, after "
        "%.2f s): %s", fc->key, fc->size, status, s, error->message);
  answer_copy (fc->agent, fc->key, status, io_error,
      error ? error->message : NULL);
}

/* context thread: spice-gtk's SpiceFileTransferTask of one copy ended;
 * its error says how */
static void
on_task_finished (SpiceFileTransferTask * task, GError * error, FileCopy * fc)
{
  copy_ended (fc, error);
  copy_unref (fc);
}

/* context thread, within spice_main_channel_file_copy_async() */
static void
on_new_file_transfer (SpiceMainChannel * channel,
    SpiceFileTransferTask * task, FileCopy * fc)
{
  fc->have_task = TRUE;
  fc->refs++;
  g_signal_connect (task, "finished", G_CALLBACK (on_task_finished), fc);
}

/* context thread: the whole copy ended. Its error sums the files up
 * ("1 failed"): a file's own end (on_task_finished) is what the client
 * hears, and it came before, in or right after this callback. */
static void
on_copy_done (GObject * source, GAsyncResult * res, gpointer data)
{
  FileCopy *fc = data;
  GError *error = NULL;

  spice_main_channel_file_copy_finish (SPICE_MAIN_CHANNEL (source), res,
      &error);
  if (!fc->have_task)
    copy_ended (fc, error);
  g_clear_error (&error);
  copy_unref (fc);
}

/* context thread */
static void
copy_start (GstSpiceSrcAgent * agent, const GstSpiceFileXfer * xfer)
{
  GFile *files[2] = { NULL, NULL };
  FileCopy *fc;
  gulong id;

  if (!agent->channel) {
    GST_WARNING_OBJECT (agent->owner, "file %" G_GUINT64_FORMAT ": no "
        "upstream session", xfer->key);
    answer_copy (agent, xfer->key,
        VD_AGENT_FILE_XFER_STATUS_VDAGENT_NOT_CONNECTED, -1,
        "no upstream session");
    return;
  }
  fc = g_new0 (FileCopy, 1);
  fc->refs = 1;
  fc->agent = agent;
  fc->owner = gst_object_ref (agent->owner);
  fc->key = xfer->key;
  fc->size = xfer->size;
  fc->cancellable = g_cancellable_new ();
  fc->started_us = g_get_monotonic_time ();
  g_hash_table_insert (agent->copies, &fc->key, fc);
  GST_INFO_OBJECT (agent->owner, "file %" G_GUINT64_FORMAT ": copying %s (%"
      G_GUINT64_FORMAT " bytes) to the guest", xfer->key, xfer->path,
      xfer->size);
  files[0] = g_file_new_for_path (xfer->path);
  id = g_signal_connect (agent->channel, "new-file-transfer",
      G_CALLBACK (on_new_file_transfer), fc);
  spice_main_channel_file_copy_async (agent->channel, files, G_FILE_COPY_NONE,
      fc->cancellable, NULL, NULL, on_copy_done, fc);
  g_signal_handler_disconnect (agent->channel, id);
  g_object_unref (files[0]);
}

/* context thread: the client gave up */
static void
copy_cancel (GstSpiceSrcAgent * agent, guint64 key)
{
  FileCopy *fc = g_hash_table_lookup (agent->copies, &key);

  if (!fc)
    return;
  GST_INFO_OBJECT (agent->owner, "file %" G_GUINT64_FORMAT ": cancelled", key);
  g_cancellable_cancel (fc->cancellable);
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
  gboolean connected = FALSE;
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
  /* without an agent spice-gtk keeps the config for when one comes (and
   * complains of a send now) */
  g_object_get (agent->channel, "agent-connected", &connected, NULL);
  if (!connected)
    GST_DEBUG_OBJECT (agent->owner, "no guest agent yet: the config waits");
  else if (!spice_main_channel_send_monitor_config (agent->channel))
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
  GstSpiceFileXfer xfer;
  guint n;

  if (gst_spice_event_parse_file_xfer (op->event, &xfer)) {
    if (xfer.action == GST_SPICE_FILE_XFER_START)
      copy_start (agent, &xfer);
    else
      copy_cancel (agent, xfer.key);
    return G_SOURCE_REMOVE;
  }
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
          !gst_event_has_name (event, GST_SPICE_EVENT_MONITORS_CONFIG) &&
          !gst_event_has_name (event, GST_SPICE_EVENT_FILE_XFER)))
    return FALSE;
  op = g_new0 (AgentOp, 1);
  op->agent = agent;
  op->owner = gst_object_ref (agent->owner);
  op->event = gst_event_ref (event);
  gst_spice_src_context_invoke (ctx_agent_op, op, agent_op_free);
  return TRUE;
}
