/* spicesink: the agent endpoint of every session, and the hub between the
 * sessions and the guest's agent upstream
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The guest's agent is upstream's (spicesrc relays it with spice-gtk's
 * API); every client sees spicesink as its agent on the main channel:
 * AGENT_CONNECTED / _DISCONNECTED follow the "spice-agent" sticky event,
 * AGENT_START / AGENT_TOKEN count the AGENT_DATA each side may send, and
 * AGENT_DATA carries the VDAgentMessage stream in chunks of at most
 * VD_AGENT_MAX_DATA_SIZE bytes (GstSpiceAgentReader puts them together).
 *
 * Clipboard (by demand): a grab from a client is offered to the other
 * clients and to the guest, a grab from the guest to every client; a
 * request goes to the selection's owner and its answer back to whoever
 * asked. Clipboards above max-clipboard are refused with an empty answer.
 * Monitors config: the oldest session that sent one drives the guest's
 * size; the others' are kept for when it leaves.
 *
 * File transfer (client -> guest), one file at a time per client: a
 * VD_AGENT_FILE_XFER_START within max-file-transfer gets its spool file
 * (sinkfilexfer.c) and CAN_SEND_DATA, else a refusal status at once (no
 * data moves); the client's FILE_XFER_DATA is written to that file as it
 * comes, paced by its agent tokens like any AGENT_DATA; with the last
 * byte the file goes upstream (`spice-file-xfer` start), and the guest's
 * answer (`spice-file-xfer-status` on the draw pad) becomes the client's
 * final status. A client that cancels or leaves, or a guest agent that
 * goes, ends the transfer: its file is removed and a copy upstream is
 * cancelled. Every refusal and failure is a spice-health event
 * (file-transfer-refused / -failed) with its reason.
 *
 * Hostile input closes that client's main channel (and so its session),
 * with the reason in the log: an AGENT_DATA chunk that is empty or larger
 * than VD_AGENT_MAX_DATA_SIZE, more AGENT_DATA than its tokens, a
 * malformed message, clipboard data nobody asked for, a grab flood. What
 * waits for a client's tokens is held for its main connection
 * (sink_conn_hold()): more than max-clipboard + 64 KiB closes a client
 * that gives no tokens back (spice-health "queue-limit", reason
 * "agent-tokens"); with what its socket has not taken, its main
 * connection holds at most max-clipboard + SINK_AGENT_QUEUE_SLACK.
 *
 * Closing a client here only marks its connection dead (sinkconn.h): it
 * leaves the hub when the server thread finishes it, so no list of the
 * hub changes while it is walked.
 */
#include "sinksession.h"

#include "sinkdebug.h"

static SINK_DEBUG_CATEGORY (sink_agent_debug, "spicesinkagent",
    "spicesink agent endpoint and clipboard hub");
#define GST_CAT_DEFAULT sink_agent_debug ()

#define N_SELECTIONS (VD_AGENT_CLIPBOARD_SELECTION_SECONDARY + 1)
#define MAX_PENDING_REQUESTS 64
/* non-clipboard messages are small; the largest kept */
#define MAX_OTHER_MESSAGE (64 * 1024)
/* what the main connection may queue beyond one clipboard: the agent's
 * other messages (a burst of the guest's grabs) and the channel's own */
#define SINK_AGENT_QUEUE_SLACK (4 * 1024 * 1024)
/* the largest VD_AGENT_FILE_XFER_START parsed (spice-gtk's: its id and a
 * key file of a name of at most 255 bytes and a size) */
#define MAX_FILE_XFER_START 4096
/* the largest VD_AGENT_FILE_XFER_DATA kept (spice-gtk sends 64 KiB of
 * data a message) */
#define MAX_FILE_DATA_MESSAGE (sizeof (VDAgentFileXferDataMessage) + \
    1024 * 1024)

typedef struct
{
  gboolean guest;               /* the guest owns it */
  SinkSession *client;          /* or this client; neither: nobody */
} SinkAgentOwner;

typedef struct
{
  SinkSession *from;            /* NULL: the guest asked (or gone) */
  SinkSession *to;              /* NULL: asked to the guest */
  gboolean orphan;              /* the client that asked left: the owner's
                                 * answer still comes, and is dropped */
  guint selection;
  guint32 type;
} SinkAgentRequest;

struct _SinkAgentHub
{
  const SinkAgentHubCallbacks *cb;
  gpointer cb_data;
  GstSpiceAgentInfo guest;
  gsize max_clipboard;
  GList *sessions;              /* joined, oldest first */
  SinkAgentOwner owner[N_SELECTIONS];
  GQueue requests;              /* SinkAgentRequest, oldest first */
  SinkSession *driver;          /* whose monitors config the guest follows */
  guint64 max_file_transfer;    /* 0: off */
  SinkFileSpool *spool;
};

static inline SinkAgentHub *
hub_of (SinkSession * s)
{
  return s->shared->agent;
}

/* ---------------------------------------------------------------- hub */

/* the element's init */
SinkAgentHub *
sink_agent_hub_new (const SinkAgentHubCallbacks * callbacks, gpointer user_data)
{
  SinkAgentHub *hub = g_new0 (SinkAgentHub, 1);

  hub->cb = callbacks;
  hub->cb_data = user_data;
  hub->max_clipboard = SINK_AGENT_DEFAULT_MAX_CLIPBOARD;
  hub->max_file_transfer = SINK_AGENT_DEFAULT_MAX_FILE_TRANSFER;
  hub->spool = sink_file_spool_new ();
  g_queue_init (&hub->requests);
  return hub;
}

/* after the server stopped (no session left) */
void
sink_agent_hub_free (SinkAgentHub * hub)
{
  g_queue_clear_full (&hub->requests, g_free);
  g_list_free (hub->sessions);
  sink_file_spool_free (hub->spool);
  g_free (hub);
}

void
sink_agent_hub_set_max_clipboard (SinkAgentHub * hub, gsize max)
{
  hub->max_clipboard = max;
}

static gboolean
file_xfer_disabled (SinkAgentHub * hub)
{
  return hub->max_file_transfer == 0 ||
      gst_spice_agent_info_has_cap (&hub->guest,
      VD_AGENT_CAP_FILE_XFER_DISABLED);
}

gboolean
sink_agent_hub_connected (SinkAgentHub * hub)
{
  return hub->guest.connected;
}

/* the capabilities spicesink announces to its clients: what it honours */
static void
hub_caps (SinkAgentHub * hub, guint32 caps[VD_AGENT_CAPS_SIZE])
{
  static const guint passed[] = { VD_AGENT_CAP_MONITORS_CONFIG,
    VD_AGENT_CAP_MONITORS_CONFIG_POSITION, VD_AGENT_CAP_GUEST_LINEEND_LF,
    VD_AGENT_CAP_GUEST_LINEEND_CRLF
  };
  guint i;

  memset (caps, 0, sizeof (guint32) * VD_AGENT_CAPS_SIZE);
  VD_AGENT_SET_CAPABILITY (caps, VD_AGENT_CAP_CLIPBOARD_BY_DEMAND);
  VD_AGENT_SET_CAPABILITY (caps, VD_AGENT_CAP_CLIPBOARD_SELECTION);
  VD_AGENT_SET_CAPABILITY (caps, VD_AGENT_CAP_FILE_XFER_DETAILED_ERRORS);
  if (file_xfer_disabled (hub))
    VD_AGENT_SET_CAPABILITY (caps, VD_AGENT_CAP_FILE_XFER_DISABLED);
  for (i = 0; i < G_N_ELEMENTS (passed); i++)
    if (gst_spice_agent_info_has_cap (&hub->guest, passed[i]))
      VD_AGENT_SET_CAPABILITY (caps, passed[i]);
}

/* ----------------------------------------------------- sending to one */

static void
send_u32 (SinkSession * s, guint16 type, guint32 v)
{
  GByteArray *a = g_byte_array_sized_new (4);

  g_byte_array_set_size (a, 4);
  GST_WRITE_UINT32_LE (a->data, v);
  sink_conn_send (s->main, type, a, NULL);
  g_byte_array_unref (a);
}

/* AGENT_DATA while the client has tokens */
static void
agent_flush (SinkSession * s)
{
  SinkAgentState *st = &s->agent;
  GBytes *chunk;

  while (st->send_tokens > 0 && (chunk = g_queue_pop_head (&st->out))) {
    st->out_bytes -= g_bytes_get_size (chunk);
    st->send_tokens--;
    sink_conn_send (s->main, SPICE_MSG_MAIN_AGENT_DATA, NULL, chunk);
    g_bytes_unref (chunk);
  }
  sink_conn_hold (s->main, st->out_bytes, hub_of (s)->max_clipboard +
      MAX_OTHER_MESSAGE, "agent-tokens", "agent tokens not returned");
}

/* One whole VDAgentMessage to a started client, in AGENT_DATA chunks:
 * @head, then @data (may be NULL). The chunks of @data share its bytes
 * (a clipboard sent to several clients, or held for one that has no
 * tokens, is in memory once); only the chunk that straddles @head is a
 * copy. */
static void
agent_send_parts (SinkSession * s, const GByteArray * head, GBytes * data)
{
  SinkAgentState *st = &s->agent;
  gsize dlen = data ? g_bytes_get_size (data) : 0;
  gsize total = head->len + dlen, off;

  if (!st->started || !sink_conn_is_linked (s->main))
    return;
  for (off = 0; off < total; off += VD_AGENT_MAX_DATA_SIZE) {
    gsize n = MIN (VD_AGENT_MAX_DATA_SIZE, total - off);
    GBytes *chunk;

    if (off >= head->len) {
      chunk = g_bytes_new_from_bytes (data, off - head->len, n);
    } else {
      guint8 *b = g_malloc (n);
      gsize h = MIN (n, head->len - off);

      memcpy (b, head->data + off, h);
      if (n > h)
        memcpy (b + h, g_bytes_get_data (data, NULL), n - h);
      chunk = g_bytes_new_take (b, n);
    }
    g_queue_push_tail (&st->out, chunk);
    st->out_bytes += n;
  }
  st->messages_out++;
  agent_flush (s);
}

static void
agent_send (SinkSession * s, const GByteArray * msg)
{
  agent_send_parts (s, msg, NULL);
}

static gboolean
client_has_selection (SinkSession * s)
{
  return VD_AGENT_HAS_CAPABILITY (s->agent.caps, VD_AGENT_CAPS_SIZE,
      VD_AGENT_CAP_CLIPBOARD_SELECTION);
}

/* a clipboard message to a client (one that can take its selection) */
static void
send_clipboard (SinkSession * s, const GstSpiceClipboard * clip)
{
  gboolean sel = client_has_selection (s);
  GByteArray *a;

  if (!sel && clip->selection != VD_AGENT_CLIPBOARD_SELECTION_CLIPBOARD)
    return;
  a = g_byte_array_new ();
  gst_spice_agent_write_clipboard_head (a, clip, sel, FALSE, 0);
  agent_send_parts (s, a, clip->action == GST_SPICE_CLIPBOARD_DATA ?
      clip->data : NULL);
  g_byte_array_unref (a);
}

static void
send_caps (SinkSession * s, gboolean request)
{
  guint32 caps[VD_AGENT_CAPS_SIZE];
  GByteArray *a = g_byte_array_new ();

  hub_caps (hub_of (s), caps);
  gst_spice_agent_write_caps (a, request, caps);
  agent_send (s, a);
  g_byte_array_unref (a);
}

void
sink_agent_hub_set_max_file_transfer (SinkAgentHub * hub, guint64 max)
{
  gboolean was = file_xfer_disabled (hub);
  GList *l;

  hub->max_file_transfer = max;
  if (was == file_xfer_disabled (hub))
    return;
  /* the clients learn whether they may send files */
  for (l = hub->sessions; l; l = l->next)
    send_caps (l->data, FALSE);
}

/* ------------------------------------------------------------- routing */

static void
post_clipboard (SinkAgentHub * hub, const GstSpiceClipboard * clip)
{
  if (hub->guest.connected)
    hub->cb->post_upstream (gst_spice_event_new_clipboard (TRUE, clip),
        hub->cb_data);
}

/* @clip to every started client but @except */
static void
offer_clients (SinkAgentHub * hub, SinkSession * except,
    const GstSpiceClipboard * clip)
{
  GList *l;

  for (l = hub->sessions; l; l = l->next)
    if (l->data != except)
      send_clipboard (l->data, clip);
}

/* the answer (@data NULL: refused) to one request */
static void
answer (SinkAgentHub * hub, SinkAgentRequest * r, GBytes * data)
{
  GstSpiceClipboard clip = { GST_SPICE_CLIPBOARD_DATA, r->selection, 0,
    {0,}, r->type, data
  };
  GBytes *empty = NULL;

  if (r->orphan)
    return;
  if (data && g_bytes_get_size (data) > hub->max_clipboard) {
    GST_INFO ("clipboard of %" G_GSIZE_FORMAT " bytes above max-clipboard "
        "(%" G_GSIZE_FORMAT "): refused", g_bytes_get_size (data),
        hub->max_clipboard);
    data = NULL;
  }
  if (!data)
    clip.data = empty = g_bytes_new (NULL, 0);
  if (r->from)
    send_clipboard (r->from, &clip);
  else
    post_clipboard (hub, &clip);
  if (empty)
    g_bytes_unref (empty);
}

/* Answers (and forgets) the oldest request asked to @to (NULL the guest)
 * for @selection (G_MAXUINT: any), or every one of them (@all); @data
 * NULL refuses. Returns how many. An owner answers each request it was
 * sent, so one answer is for one request: two clients (or one, twice)
 * asking the same owner get one answer each. The requests are taken out
 * of the queue before they are answered. */
static guint
answer_requests (SinkAgentHub * hub, SinkSession * to, guint selection,
    GBytes * data, gboolean all)
{
  GList *l, *next, *mine = NULL;
  guint n = 0;

  for (l = hub->requests.head; l; l = next) {
    SinkAgentRequest *r = l->data;

    next = l->next;
    if (r->to != to || (selection != G_MAXUINT && r->selection != selection))
      continue;
    g_queue_delete_link (&hub->requests, l);
    mine = g_list_prepend (mine, r);
    if (!all)
      break;
  }
  mine = g_list_reverse (mine);
  for (l = mine; l; l = l->next) {
    answer (hub, l->data, data);
    n++;
  }
  g_list_free_full (mine, g_free);
  return n;
}

/* @from (NULL the guest) asks for @selection in @type */
static void
request (SinkAgentHub * hub, SinkSession * from, guint selection, guint32 type)
{
  SinkAgentOwner *o = &hub->owner[selection];
  SinkAgentRequest *r = g_new0 (SinkAgentRequest, 1);
  GstSpiceClipboard clip = { GST_SPICE_CLIPBOARD_REQUEST, selection, 0,
    {0,}, type, NULL
  };

  r->from = from;
  r->selection = selection;
  r->type = type;
  r->to = o->client;
  if ((!o->guest && !o->client) || (o->client && o->client == from) ||
      (o->guest && (!from || !hub->guest.connected)) ||
      hub->requests.length >= MAX_PENDING_REQUESTS) {
    answer (hub, r, NULL);      /* nobody to ask */
    g_free (r);
    return;
  }
  g_queue_push_tail (&hub->requests, r);
  if (o->client)
    send_clipboard (o->client, &clip);
  else
    post_clipboard (hub, &clip);
}

/* the new owner of @clip->selection: @client, or the guest (NULL) */
static void
grab (SinkAgentHub * hub, SinkSession * client, const GstSpiceClipboard * clip)
{
  SinkAgentOwner *o = &hub->owner[clip->selection];

  o->guest = client == NULL;
  o->client = client;
  offer_clients (hub, client, clip);
  if (client)
    post_clipboard (hub, clip);
}

static void
release (SinkAgentHub * hub, SinkSession * client, guint selection)
{
  SinkAgentOwner *o = &hub->owner[selection];
  GstSpiceClipboard clip = { GST_SPICE_CLIPBOARD_RELEASE, selection, };

  if (client ? o->client != client : !o->guest)
    return;                     /* not the owner (any more) */
  o->guest = FALSE;
  o->client = NULL;
  offer_clients (hub, client, &clip);
  if (client)
    post_clipboard (hub, &clip);
}

/* the guest follows @s's monitors config */
static void
drive (SinkAgentHub * hub, SinkSession * s)
{
  hub->driver = s;
  if (!s || !s->agent.n_mons)
    return;
  GST_DEBUG ("session %08x drives the guest's monitors: %ux%u", s->id,
      s->agent.mons[0].width, s->agent.mons[0].height);
  if (hub->guest.connected)
    hub->cb->post_upstream (gst_spice_event_new_monitors_config
        (s->agent.mons, s->agent.n_mons), hub->cb_data);
}

/* ------------------------------------------------------ file transfer */

/* VD_AGENT_FILE_XFER_STATUS to @s; @detail as
 * gst_spice_agent_write_file_xfer_status() takes it, sent to a client that
 * reads details */
static void
send_xfer_status (SinkSession * s, guint32 id, guint32 status, gint64 detail)
{
  GByteArray *a = g_byte_array_new ();

  if (!VD_AGENT_HAS_CAPABILITY (s->agent.caps, VD_AGENT_CAPS_SIZE,
          VD_AGENT_CAP_FILE_XFER_DETAILED_ERRORS))
    detail = -1;
  gst_spice_agent_write_file_xfer_status (a, id, status, detail);
  agent_send (s, a);
  g_byte_array_unref (a);
}

/* a transfer refused (before any data moved) or failed: a warning and a
 * spice-health event (a spice-security one for @security) */
static void
xfer_report (SinkSession * s, gboolean security, const gchar * event,
    const gchar * reason, guint64 limit, const gchar * format, ...)
G_GNUC_PRINTF (6, 7);

     static void
         xfer_report (SinkSession * s, gboolean security, const gchar * event,
    const gchar * reason, guint64 limit, const gchar * format, ...)
{
  SinkEvent ev = SINK_EVENT_INIT (!security, event, reason);
  va_list args;
  gchar *detail;

  va_start (args, format);
  detail = g_strdup_vprintf (format, args);
  va_end (args);
  GST_WARNING ("session %08x (%s): %s: %s", s->id, s->peer, event, detail);
  ev.limit = (guint) MIN (limit, G_MAXUINT);
  ev.detail = detail;
  sink_conn_report (s->main, &ev);
  g_free (detail);
}

/* Ends @s's transfer: its file is removed; a copy upstream is cancelled
 * (@cancel). The client is told nothing here. */
static void
xfer_end (SinkSession * s, gboolean cancel)
{
  SinkAgentHub *hub = hub_of (s);
  SinkFileXfer *x = s->agent.xfer;

  if (!x)
    return;
  s->agent.xfer = NULL;
  if (cancel && x->upstream && hub->guest.connected) {
    GstSpiceFileXfer ev = { GST_SPICE_FILE_XFER_CANCEL, x->key, };

    hub->cb->post_upstream (gst_spice_event_new_file_xfer (&ev), hub->cb_data);
  }
  sink_file_xfer_free (x);
}

/* the spool failed @s's transfer (@err): the client hears why */
static void
xfer_spool_failed (SinkSession * s, guint32 id, const gchar * event,
    guint64 free_bytes, GError * err)
{
  if (g_error_matches (err, G_IO_ERROR, G_IO_ERROR_NO_SPACE))
    send_xfer_status (s, id, VD_AGENT_FILE_XFER_STATUS_NOT_ENOUGH_SPACE,
        free_bytes == G_MAXUINT64 ? -1 : (gint64) free_bytes);
  else
    send_xfer_status (s, id, VD_AGENT_FILE_XFER_STATUS_ERROR, err->code);
  xfer_report (s, FALSE, event, "spool", 0, "file %u: %s", id, err->message);
}

/* VD_AGENT_FILE_XFER_START: a spool file and CAN_SEND_DATA, or a refusal
 * before any data moves */
static gboolean
xfer_start (SinkSession * s, const guint8 * body, gsize size)
{
  SinkAgentHub *hub = hub_of (s);
  SinkAgentState *st = &s->agent;
  guint32 id = 0;
  gchar *name = NULL, *shown;
  guint64 fsize = 0, free_bytes;
  GError *err = NULL;

  if (size < sizeof (VDAgentFileXferStartMessage)) {
    st->close_reason = "malformed file transfer";
    return FALSE;
  }
  /* a key file of a name and a size is a few hundred bytes: a larger one
   * is not parsed */
  if (size > MAX_FILE_XFER_START ||
      !gst_spice_agent_parse_file_xfer_start (body, size, &id, &name, &fsize)) {
    id = GST_READ_UINT32_LE (body);
    send_xfer_status (s, id, VD_AGENT_FILE_XFER_STATUS_ERROR, -1);
    xfer_report (s, FALSE, "file-transfer-refused", "malformed", 0,
        "file %u: its start (%" G_GSIZE_FORMAT " bytes) has no name or size",
        id, size);
    return TRUE;
  }
  shown = g_strescape (name, NULL);
  if (file_xfer_disabled (hub)) {
    send_xfer_status (s, id, VD_AGENT_FILE_XFER_STATUS_DISABLED, -1);
    xfer_report (s, FALSE, "file-transfer-refused", "disabled", 0,
        "file %u \"%s\": file transfer is off (%s)", id, shown,
        hub->max_file_transfer ? "in the guest's agent" :
        "max-file-transfer is 0");
  } else if (st->xfer) {
    send_xfer_status (s, id, VD_AGENT_FILE_XFER_STATUS_ERROR, -1);
    xfer_report (s, FALSE, "file-transfer-refused", "one-at-a-time", 1,
        "file %u \"%s\": the client's file %u is still being sent", id, shown,
        st->xfer->id);
  } else if (fsize > hub->max_file_transfer) {
    /* spice-gtk shows "lack of free space (LIMIT free, SIZE to transfer)" */
    send_xfer_status (s, id, VD_AGENT_FILE_XFER_STATUS_NOT_ENOUGH_SPACE,
        (gint64) MIN (hub->max_file_transfer, (guint64) G_MAXINT64));
    xfer_report (s, FALSE, "file-transfer-refused", "max-file-transfer",
        hub->max_file_transfer, "file %u \"%s\" of %" G_GUINT64_FORMAT
        " bytes is above max-file-transfer (%" G_GUINT64_FORMAT ")", id, shown,
        fsize, hub->max_file_transfer);
  } else if (!(st->xfer = sink_file_xfer_new (hub->spool, id, name, fsize,
              &free_bytes, &err))) {
    xfer_spool_failed (s, id, "file-transfer-refused", free_bytes, err);
    g_clear_error (&err);
  } else {
    GST_INFO ("session %08x: file %u \"%s\" of %" G_GUINT64_FORMAT " bytes "
        "(transfer %" G_GUINT64_FORMAT ")", s->id, id, shown, fsize,
        st->xfer->key);
    send_xfer_status (s, id, VD_AGENT_FILE_XFER_STATUS_CAN_SEND_DATA, -1);
  }
  g_free (shown);
  g_free (name);
  return TRUE;
}

/* the whole file is spooled: upstream copies it to the guest */
static void
xfer_upstream (SinkSession * s)
{
  SinkAgentHub *hub = hub_of (s);
  SinkFileXfer *x = s->agent.xfer;
  GstSpiceFileXfer ev = { GST_SPICE_FILE_XFER_START, x->key, NULL, x->size };

  ev.path = sink_file_xfer_close (x);
  x->upstream = TRUE;
  GST_INFO ("session %08x: file %u received (%" G_GUINT64_FORMAT " bytes in "
      "%.2f s, %u writes, the longest %" G_GINT64_FORMAT " us): to the guest",
      s->id, x->id, x->size, (g_get_monotonic_time () - x->started_us) / 1e6,
      x->writes, x->write_max_us);
  hub->cb->post_upstream (gst_spice_event_new_file_xfer (&ev), hub->cb_data);
}

/* VD_AGENT_FILE_XFER_DATA: into the spool file */
static gboolean
xfer_data (SinkSession * s, const guint8 * body, gsize size)
{
  SinkAgentState *st = &s->agent;
  SinkFileXfer *x = st->xfer;
  const guint8 *data;
  guint64 free_bytes;
  GError *err = NULL;
  guint32 id;
  gsize n;

  if (!gst_spice_agent_parse_file_xfer_data (body, size, &id, &data, &n)) {
    st->close_reason = "malformed file transfer data";
    return FALSE;
  }
  if (!x || x->id != id || x->upstream) {
    /* what was on its way when the transfer ended */
    GST_DEBUG ("session %08x: %" G_GSIZE_FORMAT " bytes of file %u, which "
        "is not being received: dropped", s->id, n, id);
    return TRUE;
  }
  if (n > x->size - x->received) {
    send_xfer_status (s, id, VD_AGENT_FILE_XFER_STATUS_ERROR, -1);
    xfer_report (s, TRUE, "protocol-violation", "file-xfer-size", x->size,
        "file %u: data beyond the %" G_GUINT64_FORMAT " bytes announced", id,
        x->size);
    st->files_failed++;
    xfer_end (s, FALSE);
    return TRUE;
  }
  if (!sink_file_xfer_write (x, data, n, &free_bytes, &err)) {
    xfer_spool_failed (s, id, "file-transfer-failed", free_bytes, err);
    g_clear_error (&err);
    st->files_failed++;
    xfer_end (s, FALSE);
    return TRUE;
  }
  if (x->received == x->size)
    xfer_upstream (s);
  return TRUE;
}

/* VD_AGENT_FILE_XFER_STATUS from the client: it gave up its transfer
 * (spice-gtk: CANCELLED when cancelled, ERROR when it cannot read the
 * file; also after any error status it got, for a transfer that ended) */
static gboolean
xfer_client_status (SinkSession * s, const guint8 * body, gsize size)
{
  SinkFileXfer *x = s->agent.xfer;
  guint32 id, result;

  if (!gst_spice_agent_parse_file_xfer_status (body, size, &id, &result)) {
    s->agent.close_reason = "malformed file transfer status";
    return FALSE;
  }
  if (!x || x->id != id)
    return TRUE;
  GST_INFO ("session %08x: the client ended file %u (status %u) after %"
      G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " bytes", s->id, id, result,
      x->received, x->size);
  xfer_end (s, TRUE);
  return TRUE;
}

/* the reason token of a guest's answer */
static const gchar *
guest_status_reason (guint32 status)
{
  switch (status) {
    case VD_AGENT_FILE_XFER_STATUS_CANCELLED:
      return "guest-cancelled";
    case VD_AGENT_FILE_XFER_STATUS_NOT_ENOUGH_SPACE:
      return "guest-no-space";
    case VD_AGENT_FILE_XFER_STATUS_SESSION_LOCKED:
      return "guest-session-locked";
    case VD_AGENT_FILE_XFER_STATUS_VDAGENT_NOT_CONNECTED:
      return "guest-no-agent";
    case VD_AGENT_FILE_XFER_STATUS_DISABLED:
      return "guest-disabled";
    default:
      return "guest-error";
  }
}

/* upstream's answer: the client gets the guest's status */
static void
guest_xfer_status (SinkAgentHub * hub, const GstSpiceFileXferStatus * fs)
{
  GList *l;

  for (l = hub->sessions; l; l = l->next) {
    SinkSession *s = l->data;
    SinkFileXfer *x = s->agent.xfer;

    if (!x || !x->upstream || x->key != fs->key)
      continue;
    send_xfer_status (s, x->id, fs->status,
        fs->status == VD_AGENT_FILE_XFER_STATUS_ERROR ? fs->io_error : -1);
    if (fs->status == VD_AGENT_FILE_XFER_STATUS_SUCCESS) {
      s->agent.files_done++;
      GST_INFO ("session %08x: file %u (%" G_GUINT64_FORMAT " bytes) is in "
          "the guest, %.2f s after its start", s->id, x->id, x->size,
          (g_get_monotonic_time () - x->started_us) / 1e6);
    } else {
      s->agent.files_failed++;
      xfer_report (s, FALSE, "file-transfer-failed",
          guest_status_reason (fs->status), 0, "file %u (%" G_GUINT64_FORMAT
          " bytes): the guest did not take it: %s", x->id, x->size,
          fs->message ? fs->message : "no reason given");
    }
    xfer_end (s, FALSE);
    return;
  }
  GST_DEBUG ("file transfer %" G_GUINT64_FORMAT " ended (status %u) for "
      "nobody: dropped", fs->key, fs->status);
}

/* ------------------------------------------------- from the guest */

static void
guest_info (SinkAgentHub * hub, const GstSpiceAgentInfo * info)
{
  gboolean was = hub->guest.connected;
  gboolean caps_changed = memcmp (hub->guest.caps, info->caps,
      sizeof (info->caps)) != 0;
  GList *l;
  guint i;

  hub->guest = *info;
  GST_INFO ("guest agent %s (caps %08x)", info->connected ? "connected" :
      "absent", info->caps[0]);
  if (was && !info->connected) {
    answer_requests (hub, NULL, G_MAXUINT, NULL, TRUE);
    for (i = 0; i < N_SELECTIONS; i++)
      release (hub, NULL, i);
  }
  for (l = hub->sessions; l; l = l->next) {
    SinkSession *s = l->data;
    SinkAgentState *st = &s->agent;

    if (!sink_conn_is_linked (s->main))
      continue;
    if (!was && info->connected) {
      st->started = FALSE;
      st->recv_tokens = SINK_AGENT_CLIENT_TOKENS;
      st->recv_consumed = 0;
      if (sink_conn_has_channel_cap (s->main,
              SPICE_MAIN_CAP_AGENT_CONNECTED_TOKENS))
        send_u32 (s, SPICE_MSG_MAIN_AGENT_CONNECTED_TOKENS,
            SINK_AGENT_CLIENT_TOKENS);
      else
        sink_conn_send (s->main, SPICE_MSG_MAIN_AGENT_CONNECTED, NULL, NULL);
    } else if (was && !info->connected) {
      if (st->xfer) {
        st->files_failed++;
        xfer_report (s, FALSE, "file-transfer-failed", "guest-agent-gone", 0,
            "file %u (%" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " bytes "
            "spooled): the guest's agent left (the client drops the file at "
            "AGENT_DISCONNECTED)", st->xfer->id, st->xfer->received,
            st->xfer->size);
      }
      xfer_end (s, FALSE);
      st->started = FALSE;
      g_queue_clear_full (&st->out, (GDestroyNotify) g_bytes_unref);
      st->out_bytes = 0;
      send_u32 (s, SPICE_MSG_MAIN_AGENT_DISCONNECTED, SPICE_LINK_ERR_OK);
    } else if (info->connected && caps_changed) {
      send_caps (s, FALSE);
    }
  }
  if (!was && info->connected)
    drive (hub, hub->driver);
}

/* the draw pad's serialized events, lock held */
gboolean
sink_agent_hub_guest_event (SinkAgentHub * hub, GstEvent * event)
{
  GstSpiceAgentInfo info;
  GstSpiceClipboard clip;
  GstSpiceFileXferStatus fs;

  if (gst_spice_event_parse_agent (event, &info)) {
    guest_info (hub, &info);
    return TRUE;
  }
  if (gst_spice_event_parse_file_xfer_status (event, &fs)) {
    guest_xfer_status (hub, &fs);
    return TRUE;
  }
  if (GST_EVENT_TYPE (event) != GST_EVENT_CUSTOM_DOWNSTREAM ||
      !gst_spice_event_parse_clipboard (event, &clip))
    return FALSE;
  if (clip.selection >= N_SELECTIONS) {
    gst_spice_clipboard_clear (&clip);
    return TRUE;
  }
  switch (clip.action) {
    case GST_SPICE_CLIPBOARD_GRAB:
      grab (hub, NULL, &clip);
      break;
    case GST_SPICE_CLIPBOARD_RELEASE:
      release (hub, NULL, clip.selection);
      break;
    case GST_SPICE_CLIPBOARD_REQUEST:
      request (hub, NULL, clip.selection, clip.type);
      break;
    case GST_SPICE_CLIPBOARD_DATA:
      if (!answer_requests (hub, NULL, clip.selection, clip.data, FALSE))
        GST_DEBUG ("guest clipboard data nobody waits for: dropped");
      break;
  }
  gst_spice_clipboard_clear (&clip);
  return TRUE;
}

/* the element's READY: the guest is gone for everyone */
void
sink_agent_hub_reset (SinkAgentHub * hub)
{
  GstSpiceAgentInfo none = { 0, };

  guest_info (hub, &none);
}

/* ------------------------------------------------- from a client */

/* a whole VDAgentMessage from @user_data's client; FALSE (with
 * close_reason) refuses it */
static gboolean
client_message (guint32 type, guint64 opaque, const guint8 * body,
    gsize size, gpointer user_data)
{
  SinkSession *s = user_data;
  SinkAgentState *st = &s->agent;
  SinkAgentHub *hub = hub_of (s);
  GstSpiceClipboard clip;

  st->messages_in++;
  if (!body && type != VD_AGENT_CLIPBOARD) {
    st->close_reason = "oversize agent message";
    return FALSE;
  }
  switch (type) {
    case VD_AGENT_ANNOUNCE_CAPABILITIES:{
      gboolean req;

      if (!gst_spice_agent_parse_caps (body, size, &req, st->caps)) {
        st->close_reason = "malformed agent capabilities";
        return FALSE;
      }
      if (req)
        send_caps (s, FALSE);
      return TRUE;
    }
    case VD_AGENT_CLIPBOARD:
      if (!body) {
        /* above max-clipboard: the request it answers is refused */
        GST_INFO ("session %08x: clipboard of %" G_GSIZE_FORMAT " bytes "
            "above max-clipboard: refused", s->id, size);
        if (!answer_requests (hub, s, G_MAXUINT, NULL, FALSE)) {
          st->close_reason = "clipboard data without a request";
          return FALSE;
        }
        return TRUE;
      }
      /* fall through */
    case VD_AGENT_CLIPBOARD_GRAB:
    case VD_AGENT_CLIPBOARD_REQUEST:
    case VD_AGENT_CLIPBOARD_RELEASE:{
      /* the body as it is, shared by the clipboard's data (no copy) */
      GBytes *whole = gst_spice_agent_reader_steal (st->reader);
      gboolean ok = gst_spice_agent_parse_clipboard_bytes (type, whole,
          client_has_selection (s), FALSE, &clip);

      g_bytes_unref (whole);
      if (!ok) {
        st->close_reason = "malformed clipboard message";
        return FALSE;
      }
      break;
    }
    case VD_AGENT_MONITORS_CONFIG:
      if (!gst_spice_agent_parse_monitors_config (body, size, st->mons,
              &st->n_mons)) {
        st->close_reason = "malformed monitors config";
        return FALSE;
      }
      if (!hub->driver)
        hub->driver = s;
      if (hub->driver == s)
        drive (hub, s);
      return TRUE;
    case VD_AGENT_FILE_XFER_START:
      return xfer_start (s, body, size);
    case VD_AGENT_FILE_XFER_DATA:
      return xfer_data (s, body, size);
    case VD_AGENT_FILE_XFER_STATUS:
      return xfer_client_status (s, body, size);
    default:
      /* MAX_CLIPBOARD, DISPLAY_CONFIG...: nothing */
      return TRUE;
  }

  switch (clip.action) {
    case GST_SPICE_CLIPBOARD_GRAB:{
      gint64 now = g_get_monotonic_time ();

      if (now - st->grab_window_us > G_TIME_SPAN_SECOND) {
        st->grab_window_us = now;
        st->grabs = 0;
      }
      if (++st->grabs > SINK_AGENT_MAX_GRABS_PER_S) {
        st->close_reason = "clipboard grab flood";
        return FALSE;
      }
      grab (hub, s, &clip);
      break;
    }
    case GST_SPICE_CLIPBOARD_RELEASE:
      release (hub, s, clip.selection);
      break;
    case GST_SPICE_CLIPBOARD_REQUEST:
      request (hub, s, clip.selection, clip.type);
      break;
    case GST_SPICE_CLIPBOARD_DATA:
      if (!answer_requests (hub, s, clip.selection, clip.data, FALSE)) {
        gst_spice_clipboard_clear (&clip);
        st->close_reason = "clipboard data without a request";
        return FALSE;
      }
      break;
  }
  gst_spice_clipboard_clear (&clip);
  return TRUE;
}

static gboolean
refuse (SinkSession * s, const gchar * reason)
{
  GST_WARNING ("session %08x (%s): %s", s->id, s->peer, reason);
  sink_conn_close (s->main, reason);
  return FALSE;
}

static gboolean
sink_agent_handle_start (SinkSession * s, guint16 type, const guint8 * body,
    gsize size)
{
  SinkAgentState *st = &s->agent;

  if (size != 4)
    return refuse (s, "malformed AGENT_START");
  if (!hub_of (s)->guest.connected)
    return TRUE;                /* a late start for an agent gone */
  st->started = TRUE;
  st->send_tokens = GST_READ_UINT32_LE (body);
  send_caps (s, TRUE);
  return TRUE;
}

static gboolean
sink_agent_handle_token (SinkSession * s, guint16 type, const guint8 * body,
    gsize size)
{
  SinkAgentState *st = &s->agent;

  if (size != 4)
    return refuse (s, "malformed AGENT_TOKEN");
  st->send_tokens = MIN (st->send_tokens + GST_READ_UINT32_LE (body),
      (guint64) G_MAXUINT32);
  agent_flush (s);
  return TRUE;
}

static gboolean
sink_agent_handle_data (SinkSession * s, guint16 type, const guint8 * body,
    gsize size)
{
  SinkAgentState *st = &s->agent;
  const gchar *reason = NULL;

  if (--st->recv_tokens < 0)
    return refuse (s, "AGENT_DATA beyond its tokens");
  if (size == 0 || size > VD_AGENT_MAX_DATA_SIZE)
    return refuse (s, "AGENT_DATA chunk of a bad size");
  if (st->started && hub_of (s)->guest.connected) {
    st->close_reason = NULL;
    if (!gst_spice_agent_reader_push (st->reader, body, size,
            client_message, s, &reason))
      return refuse (s, st->close_reason ? st->close_reason : reason);
  }
  /* read: the token goes back (in batches) */
  if (++st->recv_consumed >= SINK_AGENT_CLIENT_TOKENS / 2) {
    send_u32 (s, SPICE_MSG_MAIN_AGENT_TOKEN, st->recv_consumed);
    st->recv_tokens += st->recv_consumed;
    st->recv_consumed = 0;
  }
  return TRUE;
}

static const SinkHandler handlers[] = {
  [SPICE_MSGC_MAIN_AGENT_START] = sink_agent_handle_start,
  [SPICE_MSGC_MAIN_AGENT_DATA] = sink_agent_handle_data,
  [SPICE_MSGC_MAIN_AGENT_TOKEN] = sink_agent_handle_token,
};

gboolean
sink_agent_handle (SinkSession * s, guint16 type, const guint8 * body,
    gsize size)
{
  return sink_handlers_dispatch (GST_CAT_DEFAULT, handlers,
      G_N_ELEMENTS (handlers), s, type, body, size);
}

/* ------------------------------------------------------------ lifetime */

void
sink_agent_join (SinkSession * s)
{
  SinkAgentHub *hub = hub_of (s);
  SinkAgentState *st = &s->agent;

  if (st->joined)
    return;
  st->joined = TRUE;
  st->recv_tokens = SINK_AGENT_CLIENT_TOKENS;
  g_queue_init (&st->out);
  sink_conn_set_limit (s->main, hub->max_clipboard + SINK_AGENT_QUEUE_SLACK);
  /* a clipboard message may carry max-clipboard bytes plus its own head */
  st->reader = gst_spice_agent_reader_new (MAX (MAX (hub->max_clipboard + 8,
              MAX_OTHER_MESSAGE), MAX_FILE_DATA_MESSAGE));
  hub->sessions = g_list_append (hub->sessions, s);
}

void
sink_agent_leave (SinkSession * s)
{
  SinkAgentHub *hub = hub_of (s);
  SinkAgentState *st = &s->agent;
  GList *l;
  guint i;

  if (!st->joined)
    return;
  if (st->xfer)
    GST_INFO ("session %08x: left during file %u (%" G_GUINT64_FORMAT " of %"
        G_GUINT64_FORMAT " bytes): dropped", s->id, st->xfer->id,
        st->xfer->received, st->xfer->size);
  xfer_end (s, TRUE);
  st->joined = FALSE;
  st->started = FALSE;
  hub->sessions = g_list_remove (hub->sessions, s);
  for (i = 0; i < N_SELECTIONS; i++)
    release (hub, s, i);
  answer_requests (hub, s, G_MAXUINT, NULL, TRUE);
  /* its requests were sent: their owners answer them; the answers are
   * dropped */
  for (l = hub->requests.head; l; l = l->next) {
    SinkAgentRequest *r = l->data;

    if (r->from == s) {
      r->from = NULL;
      r->orphan = TRUE;
    }
  }
  if (hub->driver == s) {
    SinkSession *next_driver = NULL;

    for (l = hub->sessions; l && !next_driver; l = l->next)
      if (((SinkSession *) l->data)->agent.n_mons)
        next_driver = l->data;
    drive (hub, next_driver);
  }
  g_queue_clear_full (&st->out, (GDestroyNotify) g_bytes_unref);
  st->out_bytes = 0;
  g_clear_pointer (&st->reader, gst_spice_agent_reader_free);
}

GstStructure *
sink_agent_stats (SinkSession * s)
{
  SinkAgentState *st = &s->agent;

  return gst_structure_new ("agent",
      "started", G_TYPE_BOOLEAN, st->started,
      "messages-received", G_TYPE_UINT64, st->messages_in,
      "messages-sent", G_TYPE_UINT64, st->messages_out,
      "drives-monitors", G_TYPE_BOOLEAN, hub_of (s)->driver == s,
      "files-sent", G_TYPE_UINT64, st->files_done,
      "files-failed", G_TYPE_UINT64, st->files_failed,
      "file-bytes-spooled", G_TYPE_UINT64, st->xfer ? st->xfer->received : 0,
      NULL);
}
