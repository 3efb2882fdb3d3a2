/* spicesink: what the server gives its sessions to read (data only, no
 * functions): the connection environment, the last-known picture, the
 * surface size and the cursor. Owned and written by the server with its
 * lock held; `width`/`height` are also read atomically without it (input).
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <gst/spice/gstspice.h>

#include "sinkconn.h"
#include "sinkpicture.h"

G_BEGIN_DECLS

#define SINK_MAX_STREAMS GST_SPICE_WIRE_MAX_STREAMS

typedef struct _SinkSession SinkSession;
typedef struct _SinkAgentHub SinkAgentHub;

/* The sound the element serves on its audio pad (sinkplayback.c) */
typedef struct
{
  gboolean enabled;             /* the audio pad is linked: channels listed */
  gboolean playing;             /* caps seen, no EOS since */
  guint16 mode;                 /* SPICE_AUDIO_DATA_MODE_RAW or _OPUS */
  gint rate, channels;
  gboolean have_volume;
  guint n_volume;
  guint16 volume[GST_SPICE_AUDIO_MAX_CHANNELS];
  gboolean mute;
} SinkAudio;

typedef struct
{
  SinkConnEnv *env;
  SinkPicture *picture;
  gint width, height;           /* surface; atomic */
  GstSpiceCursor cursor;
  GBytes *cursor_shape;         /* BGRA pixels of cursor (or default) */
  /* the upstream keyboard's lock LEDs (SPICE_KEYBOARD_MODIFIER_FLAGS_*,
   * the spice-key-locks event): INPUTS_INIT's and KEY_MODIFIERS' */
  guint16 key_locks;
  GstSpiceHeads monitors;    /* the heads (spice-monitors); count 0:
                                 * none announced. Written with the lock
                                 * and heads_lock held; the inputs path
                                 * reads it with heads_lock alone */
  GMutex heads_lock;            /* held for a copy only: a pointer never
                                 * waits for the server lock */
  SinkAudio audio;
  SinkAgentHub *agent;          /* the clipboard hub (sinkagent.c) */
  /* the listening ports (plain, TLS; -1 none) and whether the clients
   * were asked to reconnect (sink_server_redirect()); lock held */
  gint ports[2];
  gboolean redirected;
  gchar *redirect_host;         /* where to, NULL: the local address */
  /* the TLS certificate's subject as spice-gtk's cert-subject writes it
   * (sink_server_start()), NULL without one */
  gchar *cert_subject;
} SinkShared;

/* what a session asks its owner for (SinkSessionHooks.on_wants) */
typedef enum
{
  SINK_WANT_REFRESH = 1 << 0,   /* a client waits for the whole picture */
  SINK_WANT_KEY_UNITS = 1 << 1, /* streams start for it at a key unit */
} SinkWants;

/* One stream as the display channel announces it */
typedef struct
{
  guint index;                  /* of its stream pad (branch) */
  guint spice_id;
  guint8 codec;                 /* SPICE_VIDEO_CODEC_TYPE_* */
  gint width, height;           /* of the frames, 0 unknown */
  GstVideoRectangle dest;
  GstClockTime pts;             /* of the frame being sent */
} SinkStreamInfo;

/* One client message of a channel, in a channel's handler table
 * ([SPICE_MSGC_X] = sink_<channel>_handle_<message>); FALSE when it closed
 * the channel. */
typedef gboolean (*SinkHandler) (SinkSession * s, guint16 type,
    const guint8 * body, gsize size);

/* A valid message without a handler (the connection checked its type and
 * size against the protocol's table) is one the sink does not act on: it
 * is ignored, logged in @cat at debug. */
static inline gboolean
sink_handlers_dispatch (GstDebugCategory * cat, const SinkHandler * table,
    guint n, SinkSession * s, guint16 type, const guint8 * body, gsize size)
{
  if (type < n && table[type])
    return table[type] (s, type, body, size);
  GST_CAT_DEBUG (cat, "message type %u (%" G_GSIZE_FORMAT " bytes) ignored",
      type, size);
  return TRUE;
}

G_END_DECLS
