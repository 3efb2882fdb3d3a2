/* spicesink: one client session — its connections (one per channel) and
 * the dispatch of their messages to the channel handlers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "sinkshared.h"
#include "sinkmain.h"
#include "sinkdisplay.h"
#include "sinkinputs.h"
#include "sinkcursor.h"
#include "sinkplayback.h"
#include "sinkrecord.h"
#include "sinkagent.h"

G_BEGIN_DECLS

/* How a session reaches its owner (the server) */
typedef struct
{
  /* lock held: SinkWants */
  void (*on_wants) (SinkSession * s, guint wants, gpointer user_data);
  /* lock held: which codecs the session's display takes or prefers
   * changed (linked, closed, a codec failed, PREFERRED_VIDEO_CODEC_TYPE):
   * its branch and the stream control again */
  void (*on_display_changed) (SinkSession * s, gpointer user_data);
  /* server thread, lock held: the main channel is gone; the owner drops
   * the reference it holds (the session is freed when its connections
   * are finished too) */
  void (*on_ended) (SinkSession * s, gpointer user_data);
  /* server thread, lock not held (held when a closed inputs channel
   * releases its keys): an input event for upstream (navigation, or
   * spice-key-locks: a client's KEY_MODIFIERS); never blocks */
  void (*on_navigation) (SinkSession * s, GstEvent * event,
      gpointer user_data);
  /* server thread, lock held: a record event for upstream (takes it) */
  void (*on_record) (SinkSession * s, GstEvent * event, gpointer user_data);
} SinkSessionHooks;

struct _SinkSession
{
  guint refs;                   /* the owner's, and one per connection
                                 * attached (dropped at its finish); lock
                                 * held */
  guint32 id;
  gchar *peer_host;
  gchar *peer;                  /* address:port of the main channel */
  const SinkShared *shared;
  const SinkSessionHooks *hooks;
  gpointer hooks_data;
  SinkConn *main, *display, *inputs, *cursor, *playback, *record;
  SinkMainState main_st;
  SinkDisplayState disp;
  SinkInputsState in;
  SinkCursorState cur;
  SinkPlaybackState play;
  SinkRecordState rec;
  SinkAgentState agent;
};

/* all: lock held. A new session holds two references: the owner's and
 * its main connection's. */
SinkSession *sink_session_new (guint32 id, SinkConn * main,
    const SinkShared * shared, const SinkSessionHooks * hooks,
    gpointer user_data);
void     sink_session_unref (SinkSession * s);
/* takes @conn as its channel of @type; FALSE if that one is linked */
gboolean sink_session_attach (SinkSession * s, SinkConn * conn, guint8 type);
/* every channel marked dead (sink_conn_close()) */
void     sink_session_close (SinkSession * s, const gchar * reason);
/* the newest byte received on any channel */
gint64   sink_session_last_rx_us (SinkSession * s);
GstStructure *sink_session_stats (SinkSession * s);

G_END_DECLS
