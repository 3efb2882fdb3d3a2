/* spicetiler: the stream pad helper (caps, converter, pool, frames, GAPs)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Called by the element with the engine's result; pushes on the pad it is
 * given and returns the flow: it calls nothing in the element or the
 * engine. Worker thread only (or with the worker stopped).
 */
#pragma once

#include <gst/video/video.h>

#include "tilerengine.h"

G_BEGIN_DECLS

/* how the stream rectangle becomes a stream frame, chosen with the caps */
typedef enum
{
  TILER_STREAM_CONVERT_VIDEO,   /* GstVideoConverter: any format/colorimetry */
  TILER_STREAM_CONVERT_I420,    /* libyuv ARGBToI420: I420, BT.601 16-235 */
  TILER_STREAM_CONVERT_J420,    /* libyuv ARGBToJ420: I420, BT.601 0-255 */
} TilerStreamConvert;

typedef struct
{
  GstVideoInfo info;            /* of the input frames */
  GstVideoInfo sinfo;           /* of the stream pad */
  gint caps_w, caps_h;          /* last caps pushed, 0 = none */
  GstVideoFormat caps_format;
  TilerStreamConvert convert;   /* for the caps pushed */
  GstVideoConverter *conv;      /* TILER_STREAM_CONVERT_VIDEO */
  GstVideoRectangle conv_rect;
  guint8 *scratch;              /* libyuv, scaled: the scaled rectangle */
  gsize scratch_size;
  GstBufferPool *pool;
} TilerStream;

void     tiler_stream_init (TilerStream * s);
/* frees the converter, the scratch and the pool (made again when needed) */
void     tiler_stream_free_resources (TilerStream * s);
/* and forgets the caps pushed */
void     tiler_stream_reset (TilerStream * s);
/* the input format; for a new surface (@resized) caps of its size (even)
 * go out on @pad, so that segment and GAP events can flow before any
 * stream */
void     tiler_stream_set_input (TilerStream * s, GstPad * pad,
    const GstVideoInfo * info, gboolean resized, GstVideoFormat format);
/* the options of the GstVideoConverter for @r (crop, no dither, linear
 * resampler, one thread); any thread */
GstStructure *tiler_stream_converter_config (const GstVideoRectangle * r);
/* Cuts @res->stream_rect out of @res->frame (1/stream_scale of its size),
 * with libyuv when the caps are I420 in BT.601 (limited or full range)
 * and the input BGRx/BGRA, else with a GstVideoConverter, and pushes it on @pad with a GstSpiceStreamMeta, after a force-key-unit
 * event when @keyframe. Returns FALSE when no frame could be made (then
 * nothing was pushed); else @flow is what the push returned. */
gboolean tiler_stream_push_frame (TilerStream * s, GstPad * pad,
    const TilerEngineResult * res, GstVideoFormat format, gboolean keyframe,
    GstFlowReturn * flow);
/* a GAP for the frame of @res */
void     tiler_stream_push_gap (GstPad * pad, const TilerEngineResult * res);

G_END_DECLS
