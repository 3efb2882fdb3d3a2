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

typedef struct
{
  GstVideoInfo info;            /* of the input frames */
  GstVideoInfo sinfo;           /* of the stream pad */
  gint caps_w, caps_h;          /* last caps pushed, 0 = none */
  GstVideoFormat caps_format;
  GstVideoConverter *conv;
  GstVideoRectangle conv_rect;
  GstBufferPool *pool;
} TilerStream;

void     tiler_stream_init (TilerStream * s);
/* frees the converter and the pool (made again when needed) */
void     tiler_stream_free_resources (TilerStream * s);
/* and forgets the caps pushed */
void     tiler_stream_reset (TilerStream * s);
/* the input format; for a new surface (@resized) caps of its size (even)
 * go out on @pad, so that segment and GAP events can flow before any
 * stream */
void     tiler_stream_set_input (TilerStream * s, GstPad * pad,
    const GstVideoInfo * info, gboolean resized, GstVideoFormat format);
/* Cuts @res->stream_rect out of @res->frame (1/stream_scale of its size)
 * and pushes it on @pad with a GstSpiceStreamMeta, after a force-key-unit
 * event when @keyframe. Returns FALSE when no frame could be made (then
 * nothing was pushed); else @flow is what the push returned. */
gboolean tiler_stream_push_frame (TilerStream * s, GstPad * pad,
    const TilerEngineResult * res, GstVideoFormat format, gboolean keyframe,
    GstFlowReturn * flow);
/* a GAP for the frame of @res */
void     tiler_stream_push_gap (GstPad * pad, const TilerEngineResult * res);

G_END_DECLS
