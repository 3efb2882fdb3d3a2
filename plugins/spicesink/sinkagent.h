/* spicesink: the agent endpoint on the main channel of every session, and
 * the hub between the sessions and the guest's agent upstream
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "sinkshared.h"
#include "sinkfilexfer.h"

G_BEGIN_DECLS

/* tokens a client gets for its AGENT_DATA (given back as we read them) */
#define SINK_AGENT_CLIENT_TOKENS 10
/* the default size limit of one clipboard (the max-clipboard property) */
#define SINK_AGENT_DEFAULT_MAX_CLIPBOARD (16 * 1024 * 1024)
/* the default size limit of one file a client sends to the guest (the
 * max-file-transfer property) */
#define SINK_AGENT_DEFAULT_MAX_FILE_TRANSFER (G_GUINT64_CONSTANT (1) << 30)
/* more grabs than this from one client within a second close it */
#define SINK_AGENT_MAX_GRABS_PER_S 20

/* How the hub reaches the server (which implements it) */
typedef struct
{
  /* lock held: push @event upstream towards the guest's agent */
  void (*post_upstream) (GstEvent * event, gpointer user_data);
} SinkAgentHubCallbacks;

/* one session's agent endpoint (in SinkSession) */
typedef struct
{
  gboolean joined;              /* its main channel is linked */
  gboolean started;             /* AGENT_START since the last CONNECTED */
  guint64 send_tokens;          /* AGENT_DATA we may still send it */
  gint recv_tokens;             /* AGENT_DATA it may still send us */
  guint recv_consumed;          /* not yet given back */
  GQueue out;                   /* GBytes chunks waiting for tokens */
  gsize out_bytes;
  GstSpiceAgentReader *reader;
  guint32 caps[VD_AGENT_CAPS_SIZE];
  gint64 grab_window_us;
  guint grabs;
  GstSpiceMonitor mons[GST_SPICE_MAX_MONITORS];
  guint n_mons;                 /* its last monitors config, 0 none */
  guint64 messages_in, messages_out;
  const gchar *close_reason;    /* why a message handler refused */
  SinkFileXfer *xfer;           /* the file it sends, one at a time */
  guint64 files_done, files_failed;
} SinkAgentState;

/* ---- the hub (the server's; lock held unless said otherwise) ---- */
SinkAgentHub *sink_agent_hub_new (const SinkAgentHubCallbacks * callbacks,
    gpointer user_data);
void     sink_agent_hub_free (SinkAgentHub * hub);
void     sink_agent_hub_set_max_clipboard (SinkAgentHub * hub, gsize max);
/* 0 turns file transfer off (announced to the clients) */
void     sink_agent_hub_set_max_file_transfer (SinkAgentHub * hub,
    guint64 max);
/* an agent event from the guest (the draw pad's serialized events:
 * spice-agent, spice-clipboard, spice-file-xfer-status); FALSE if @event
 * is none */
gboolean sink_agent_hub_guest_event (SinkAgentHub * hub, GstEvent * event);
gboolean sink_agent_hub_connected (SinkAgentHub * hub);
/* forgets the guest (READY): clients see the agent leave */
void     sink_agent_hub_reset (SinkAgentHub * hub);

/* ---- a session's endpoint (server thread, lock held) ---- */
/* its main channel is linked: after MAIN_INIT */
void     sink_agent_join (SinkSession * s);
/* its main channel closed: releases its grabs, answers its requests,
 * drops its file transfer */
void     sink_agent_leave (SinkSession * s);
/* AGENT_START / AGENT_DATA / AGENT_TOKEN; FALSE when it closed the
 * connection */
gboolean sink_agent_handle (SinkSession * s, guint16 type,
    const guint8 * body, gsize size);
GstStructure *sink_agent_stats (SinkSession * s);

G_END_DECLS
