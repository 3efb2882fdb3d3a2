/* spicetiler: the engine (shadow, diff, heat, scroll, draws writer)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A plain struct, no GObject: tiler_engine_update() turns one input (a
 * frame, or the passing of time) into a result (finished draws updates,
 * whether a stream frame is wanted and where, what waits for the next
 * update) and never calls the element. The element gives it a snapshot of
 * its own state in the input (draw pad busy, refresh asked for, rate,
 * QoS) and does the pushing; the engine's counters are its own
 * (tiler_engine_stats()). All functions run on the element's worker thread
 * (or with the worker stopped); the engine has no lock.
 */
#pragma once

#include <gst/video/video.h>
#include <gst/spice/gstspice.h>

#include "gstspicetiler.h"
#include "tilerdiff.h"
#include "tilerencode.h"
#include "tilerheat.h"
#include "tilerscroll.h"

G_BEGIN_DECLS

/* the element's properties, as one update sees them */
typedef struct
{
  guint max_rects, tile_size, jpeg_quality;
  GstClockTime refine_delay;
  GstSpiceTilerStreaming streaming;
  guint stream_min_frames, stream_min_area;
  GstClockTime stream_max_gap, stream_timeout;
  GstVideoFormat stream_format;
  guint update_budget, band_size;
  gboolean scroll;
} TilerParams;

typedef enum
{
  /* a new frame (input.buffer, its damage) */
  TILER_UPDATE_FRAME,
  /* no new frame: what the last update left (budget cut, draw pad busy,
   * cells unknown to the client) and a refresh, on the current frame */
  TILER_UPDATE_CARRY,
  /* the refinement deadline (result.next_refine) has passed: the time
   * becomes that deadline, lossy cells that are due go lossless */
  TILER_UPDATE_REFINE,
  /* the last update before EOS: what was carried goes out, every lossy
   * cell goes lossless, the stream ends; no update budget, never skipped
   * because the draw pad is busy */
  TILER_UPDATE_FINAL,
} TilerUpdateKind;

typedef struct
{
  const TilerParams *params;
  guint sink_budget;            /* spice-draw-budget bytes, 0 = none */
  guint64 link_bps;             /* spice-draw-budget link rate, 0 = none */
  /* the element's state when the update begins */
  gboolean draw_busy;           /* the last update is not taken (or the
                                 * link has not carried it yet): make no
                                 * new one, carry the damage */
  gboolean refresh;             /* a full lossless picture first */
  gboolean stream_allowed;      /* spice-stream-control on, stream pad
                                 * linked */
  GstClockTime draw_qos_earliest, stream_qos_earliest;
  gint rate_fps_n, rate_fps_d;  /* stream frame rate limit, 0 = none */
  guint rate_scale;             /* stream picture divisor (spice-rate) */
  /* TILER_UPDATE_FRAME only: the input, applied onto the engine's
   * picture. Either a whole frame (@buffer, mapped with the format given
   * to tiler_engine_set_format(): its @damage, or all of it when @full or
   * after a gap in the sequence, is copied), or damage-only buffers
   * (@packed: memory:SpiceDamage, gstspicedamage.h), applied in order */
  GstBuffer *buffer;
  GstBuffer *const *packed;
  guint n_packed;
  GstClockTime running_time;    /* of the frame, NONE if unknown */
  const GstSpiceRegion *damage;
  gboolean full;                /* the whole frame is damaged */
  gboolean has_seq;             /* damage meta seq numbers of the frames */
  guint64 first_seq, last_seq;  /* coalesced into this one */
  /* NULL, or set non-zero (atomically, by any thread) while the update is
   * made when a small frame waits behind it (TILER_YIELD_MAX_PIXELS of
   * damage): the update then ends before the next band of a large
   * rectangle and the rest is carried, so that the small change is not
   * held behind it (a key press's echo behind a large photographic area).
   * Never in two updates in a row, never without a band sent, never in a
   * FINAL update; unlike a budget cut it is no link pressure. */
  const gint *yield;
} TilerEngineInput;

/* the damage of a waiting frame that may cut the update being made short
 * (TilerEngineInput.yield) */
#define TILER_YIELD_MAX_PIXELS (256 * 256)

#define TILER_ENGINE_MAX_UPDATES 3

typedef struct
{
  /* draws updates, in order; the first n_before_stream go downstream
   * before the stream frame (or GAP), the others after it */
  GstBuffer *updates[TILER_ENGINE_MAX_UPDATES];
  guint n_updates, n_before_stream;
  /* a TILER_UPDATE_FRAME update: push a stream frame (else a GAP) */
  gboolean stream_frame;
  const GstVideoFrame *frame;   /* the engine's picture, valid until the
                                 * next call into the engine */
  GstVideoRectangle stream_rect;
  guint stream_id, stream_scale;
  gboolean stream_keyframe;
  GstClockTime running_time;    /* of this update */
  GstClockTime pts, duration;   /* of the current frame */
  /* update again without waiting for a frame or a deadline */
  gboolean pending;
  /* when lossy cells are due for refinement (running time), or NONE */
  GstClockTime next_refine;
} TilerEngineResult;

/* the engine's counters; they only grow (stream_* and lossy_cells are
 * states), across resets */
typedef struct
{
  guint64 frames_processed;
  guint64 regions, regions_bitmap, regions_lz4, regions_jpeg;
  guint64 regions_copy, copied_rows;
  guint64 bytes_bitmap, bytes_lz4, bytes_jpeg;
  guint64 refined_cells, refreshes, deferred;
  guint64 classified_cells;     /* cells the content classifier looked at */
  guint64 stream_starts, stream_frames, stream_dropped;
  guint64 lossy_cells;
  gdouble diff_us_avg, encode_us_avg, stream_fps;
  gboolean stream_active;
  GstVideoRectangle stream_rect;
  guint stream_id;
} TilerEngineStats;

typedef struct _TilerEngine TilerEngine;

TilerEngine *tiler_engine_new (void);
void     tiler_engine_free (TilerEngine * e);
/* forgets the surface, the frame and the stream (not the counters) */
void     tiler_engine_reset (TilerEngine * e);
/* the input format; TRUE when the surface changed (new size or format):
 * the client's content is then unknown, everything is sent again */
gboolean tiler_engine_set_format (TilerEngine * e, const GstVideoInfo * info,
    guint tile_size);
/* after a flush: downstream may have lost anything, so the client's content
 * is unknown; the damage sequence is dropped and there is no frame until
 * the next one (the picture is kept: a whole frame, or the damage-only
 * whole surface the element asks for, makes it exact again) */
void     tiler_engine_flush (TilerEngine * e, guint tile_size);
/* Makes one update. Returns GST_FLOW_NOT_NEGOTIATED for a frame before any
 * format, GST_FLOW_ERROR when the frame cannot be mapped or a damage-only
 * buffer is malformed (nothing done), else GST_FLOW_OK. @result is filled in every case; the caller owns its
 * updates (tiler_engine_result_clear() drops them). Without a current frame
 * only TILER_UPDATE_FRAME does anything. */
GstFlowReturn tiler_engine_update (TilerEngine * e, TilerUpdateKind kind,
    const TilerEngineInput * input, TilerEngineResult * result);
void     tiler_engine_result_clear (TilerEngineResult * result);
/* the stream frame result.stream_frame asked for could not be made: the
 * area stays due for the next frame */
void     tiler_engine_stream_frame_lost (TilerEngine * e);
gboolean tiler_engine_has_frame (TilerEngine * e);
const TilerEngineStats *tiler_engine_stats (TilerEngine * e);

G_END_DECLS
