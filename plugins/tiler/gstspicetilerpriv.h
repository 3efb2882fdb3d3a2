/* spicetiler: state shared by the element's source files
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include <gst/base/gstflowcombiner.h>
#include <gst/video/video.h>

#include "gstspicetiler.h"
#include "tilerdiff.h"
#include "tilerclassify.h"
#include "tilerencode.h"
#include "tilerheat.h"
#include "tilerscroll.h"

G_BEGIN_DECLS

GST_DEBUG_CATEGORY_EXTERN (gst_spice_tiler_debug);
#define GST_CAT_DEFAULT gst_spice_tiler_debug

/* the largest divisor of a stream's picture size spice-rate may ask for */
#define GST_SPICE_TILER_MAX_STREAM_SCALE 4

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

/* one entry of the worker's mailbox: a frame (coalescing) or an event */
typedef struct
{
  GstBuffer *buf;
  GstEvent *event;
  GstSpiceRegion damage;
  gboolean full;
  gboolean has_seq;
  guint64 first_seq, last_seq;
} TilerItem;

typedef struct
{
  guint64 frames_in, frames_processed, frames_coalesced;
  guint64 updates, regions, regions_bitmap, regions_lz4, regions_jpeg;
  guint64 regions_copy, copied_rows;
  guint64 bytes_bitmap, bytes_lz4, bytes_jpeg;
  guint64 refined_cells, refreshes, deferred;
  guint64 stream_starts, stream_frames, stream_dropped;
  guint64 lossy_cells;
  gdouble diff_us_avg, encode_us_avg, stream_fps;
  gboolean stream_active;
  GstVideoRectangle stream_rect;
  guint stream_id;
} TilerStats;

struct _GstSpiceTiler
{
  GstElement parent;

  GstPad *sinkpad, *drawpad, *streampad;
  GstFlowCombiner *combiner;

  /* lock protects everything up to the worker-only part */
  GMutex lock;
  GCond cond;
  TilerParams params;
  GQueue items;
  GQueue free_items;
  gboolean flushing;
  gboolean busy;
  gboolean worker_pending;      /* worker has deferred work */
  gboolean refresh_pending;
  gboolean keyframe_pending;
  gint rate_fps_n, rate_fps_d;
  guint rate_scale;             /* stream picture divisor (spice-rate) */
  guint draw_budget;            /* from spice-draw-budget, 0 = none */
  guint64 draw_link_bps;        /* ditto: the slowest client's link */
  gint64 draw_ready_us;         /* monotonic: no new update before this
                                 * (tiler_draw_pace_us()) */
  gboolean stream_enabled;
  GstClockTime draw_qos_earliest, stream_qos_earliest;
  GstClockID clock_id;
  GQueue draw_out;              /* to the draw thread: events, <= 1 update */
  gboolean draw_busy;           /* an update is queued or being pushed */
  GstFlowReturn last_flow;
  TilerStats stats;

  /* ---- worker only ---- */
  GstVideoInfo info;
  gboolean have_info;
  GstSegment segment;
  guint8 *shadow;
  gint shadow_stride;
  TilerDiff diff;
  TilerHeat heat;
  TilerScroll scroll;
  GstVideoRectangle scroll_zone;  /* where copies were made lately */
  GstClockTime scroll_zone_rt;    /* running time of the last copy */
  TilerEncoder enc;
  GstSpiceRegion carry;
  GstSpiceRegion idle_damage;   /* scratch for updates without a frame */
  GstSpiceRegion regions;
  GArray *runs;
  GstBuffer *cur;
  GstVideoFrame cur_frame;
  GstClockTime cur_now, cur_pts, cur_duration;
  gboolean have_seq;
  guint64 seq;
  GstClockTime next_refine;
  GstClockTime last_deadline;   /* last refinement deadline waited for */
  gint tile_applied;
  /* stream */
  TilerStreamState stream;
  guint stream_id;
  guint stream_scale;           /* divisor of the current stream's size */
  gint stream_caps_w, stream_caps_h;
  GstVideoFormat stream_caps_format;
  GstVideoInfo sinfo;
  GstVideoConverter *conv;
  GstVideoRectangle conv_rect;
  GstBufferPool *pool;
  GstClockTime last_stream_rt;
  gboolean stream_dirty;        /* the area changed since its last frame */
  GstClockTime fps_window_start;
  guint fps_window_frames;
  /* the update being built */
  GstSpiceDrawsWriter *writer;
  gsize last_update_size;
  gboolean pressure;            /* the last update ran out of a budget the
                                 * sink announced */
};

/* a run of cells of one class, while building an update */
typedef struct
{
  GstVideoRectangle r;
  gint cx0, cx1, cy0, cy1;
  gboolean lossy;
  gboolean dead;
} TilerRun;

/* gstspicetiler.c */
void     gst_spice_tiler_update_flow (GstSpiceTiler * self, GstPad * pad,
    GstFlowReturn ret);
void     gst_spice_tiler_draw_enqueue (GstSpiceTiler * self,
    GstMiniObject * obj);

/* tilerupdate.c: one update from the current frame */
void     gst_spice_tiler_update (GstSpiceTiler * self, const TilerParams * p,
    GstClockTime now, GstSpiceRegion * damage, gboolean full,
    gboolean new_frame, gboolean final);
void     gst_spice_tiler_mark_lossy (GstSpiceTiler * self,
    const GstVideoRectangle * r, GstClockTime t);
void     gst_spice_tiler_copy_to_shadow (GstSpiceTiler * self,
    const GstVideoRectangle * r);

/* tilerstream.c: the stream pad */
void     gst_spice_tiler_stream_free_resources (GstSpiceTiler * self);
void     gst_spice_tiler_push_stream_caps (GstSpiceTiler * self, gint w,
    gint h, GstVideoFormat format);
void     gst_spice_tiler_push_gap (GstSpiceTiler * self);
void     gst_spice_tiler_stream_end (GstSpiceTiler * self);
/* starts a stream over @r whose frames are 1/@scale of its size */
void     gst_spice_tiler_stream_begin (GstSpiceTiler * self,
    const GstVideoRectangle * r, guint scale, GstClockTime now);
gboolean gst_spice_tiler_push_stream_frame (GstSpiceTiler * self,
    const TilerParams * p, GstClockTime now);
gboolean gst_spice_tiler_stream_frame_allowed (GstSpiceTiler * self,
    GstClockTime now);

G_END_DECLS
