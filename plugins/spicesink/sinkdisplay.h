/* spicesink: the display channel of a session — surface, the picture for
 * a joining client, draws, streams, stream reports
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * All functions but sink_display_marshal_*() run with the server lock
 * held; those marshal messages without any lock or session (render path).
 */
#pragma once

#include "sinkshared.h"

G_BEGIN_DECLS

typedef struct
{
  gboolean created;             /* the client was sent STREAM_CREATE */
  gboolean need_key;            /* deltas are withheld until a key unit */
  guint8 codec;
  guint32 unique_id;            /* for stream reports */
  guint64 frames;
  GstVideoRectangle dest;       /* where the client paints the frames */
  /* A draw over the area after the frames sent so far: the stream is
   * clipped to nothing (STREAM_CLIP), since the client may paint a frame
   * it still decodes after that draw, until a frame newer than the draw
   * (by PTS) comes: an older one is sent but stays hidden. */
  gboolean hidden;
  GstClockTime hidden_pts;      /* the newest such draw's, or NONE */
} SinkClientStream;

typedef struct
{
  gboolean surface_sent;
  gboolean awaiting_refresh;    /* waits for a full picture: gets no draws
                                 * and no stream frames until a REFRESH
                                 * update (or a one-region full picture) */
  gint64 await_since_us;
  gboolean partial_picture;     /* got an incomplete picture after the wait
                                 * bound: takes the next REFRESH update */
  gboolean behind;              /* fell behind: gets nothing until drained */
  SinkClientStream streams[SINK_MAX_STREAMS];
  guint32 codec_failed;         /* bit per SPICE codec the client reported
                                 * as undecodable */
  /* what the client prefers (PREFERRED_COMPRESSION: recorded only, the
   * draws are encoded once for every client; PREFERRED_VIDEO_CODEC_TYPE:
   * picks its branch) */
  guint8 pref_compression;      /* SpiceImageCompression, 0 none */
  guint8 pref_codecs[SPICE_VIDEO_CODEC_TYPE_ENUM_END];
  guint n_pref_codecs;
  /* the stream pad whose frames the client gets (-1 none) and its codec */
  gint branch;
  guint8 branch_codec;
  guint64 branch_changes;
  guint8 report_codec;          /* of the stream of its latest report */
  /* counters */
  guint64 draws, copies, updates, updates_skipped, stream_frames, stream_hides,
      frames_dropped, behind_count, refreshes, wait_fallbacks;
  guint64 last_draws, last_stream_frames;
  gdouble draws_per_s, stream_fps;
  gint32 last_margin_ms;        /* from stream reports */
  guint64 report_drops;
  gboolean have_margin;
  /* draw traffic for the rate control */
  guint64 draw_bytes, last_draw_bytes, draw_bps;
  /* a client without LZ4 (spice-html5): LZ4 draws become bitmaps */
  GstSpiceImageDecoder *images;
  guint8 *scratch;              /* BGRx of one region */
  gsize scratch_size;
  guint64 bitmaps;
} SinkDisplayState;

/* One draw region marshalled for every client */
typedef struct
{
  guint16 type;                 /* SPICE_MSG_DISPLAY_DRAW_COPY / COPY_BITS */
  guint8 image_type;            /* GstSpiceImageType of a DRAW_COPY */
  GBytes *fixed;
  GBytes *payload;              /* image, or NULL */
  GstVideoRectangle dest;
  GstClockTime pts;             /* of its update, NONE: the last-known
                                 * picture */
} SinkDraw;

/* render path, no lock */
void     sink_draw_marshal (SinkDraw * d, const GstVideoRectangle * dest,
    guint8 image_type, GBytes * payload);
void     sink_draw_clear (SinkDraw * d);
GBytes  *sink_display_marshal_stream_data (guint spice_id, gsize frame_size);

/* lock held */
void     sink_display_linked (SinkSession * s);
void     sink_display_closed (SinkSession * s);
/* the surface (new or resized) and the best picture there is */
void     sink_display_start (SinkSession * s);
/* the heads (SinkShared.monitors) as MONITORS_CONFIG, to a client that has
 * its surface and the capability */
void     sink_display_send_monitors (SinkSession * s);
gboolean sink_display_ready (SinkSession * s);
gboolean sink_display_supports_codec (SinkSession * s, guint8 codec);

/* A stream pad as a client may take it: several pads are the same stream
 * region encoded by different branches (a tee after the tiler's stream
 * pad); each client gets one of them */
typedef struct
{
  guint index;
  guint8 codec;
} SinkBranch;

/* which of @branches the client gets: the first codec of its preference
 * (PREFERRED_VIDEO_CODEC_TYPE) that it decodes and a branch has, else the
 * branch with the lowest index whose codec it decodes; -1: none */
gint     sink_display_choose_branch (SinkSession * s,
    const SinkBranch * branches, guint n);
/* the client gets @index's frames from now on (@codec its codec): the
 * streams it has of another branch are destroyed (STREAM_DESTROY), the
 * new one starts at that branch's next key frame; FALSE if it already
 * had @index */
gboolean sink_display_set_branch (SinkSession * s, gint index, guint8 codec);
void     sink_display_send_draw (SinkSession * s, const SinkDraw * d);
/* the picture is whole now (MARK) */
void     sink_display_picture_done (SinkSession * s);
/* sends the last-known picture as it is */
void     sink_display_send_picture (SinkSession * s);
/* timer: bounds the wait for a REFRESH update */
void     sink_display_check_wait (SinkSession * s, gint64 now);
/* the queue drained: a client that fell behind gets the picture again */
void     sink_display_drained (SinkSession * s);
/* the render gave up waiting for it */
void     sink_display_leave_behind (SinkSession * s);
/* lock held, every second / every rate tick */
void     sink_display_count_second (SinkSession * s, gdouble dt);
void     sink_display_count_rate (SinkSession * s, gdouble dt);

typedef enum
{
  SINK_FRAME_SENT,
  SINK_FRAME_DROPPED,
  SINK_FRAME_WANT_KEY,          /* dropped: the client needs a key unit */
  SINK_FRAME_SKIPPED,           /* not for this client (codec, no display) */
} SinkFrameResult;

SinkFrameResult sink_display_send_frame (SinkSession * s,
    const SinkStreamInfo * info, GBytes * head, GBytes * frame,
    gboolean key);
void     sink_display_stream_destroy (SinkSession * s, guint spice_id);
gboolean sink_display_handle (SinkSession * s, guint16 type,
    const guint8 * body, gsize size);

G_END_DECLS
