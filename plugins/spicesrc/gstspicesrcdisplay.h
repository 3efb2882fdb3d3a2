/* gst-spice: spicesrc's display channel and the frames it fills
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "gstspicesrcpriv.h"

G_BEGIN_DECLS

/* context thread: follow a display channel (primary surface, invalidates,
 * MARK, monitors) as a head of the frame: the captured id, and every
 * higher id to the right of it; FALSE if not followed */
gboolean gst_spice_src_display_follow (GstSpiceSrc * self,
    SpiceChannel * channel, gint id);
/* context thread: stop following @channel (NULL: every display channel) */
void     gst_spice_src_display_forget (GstSpiceSrc * self,
    SpiceChannel * channel);
void     gst_spice_src_display_connect (GstSpiceSrc * self,
    SpiceChannel * channel);
/* context thread: the display channel under (@x, @y) of the frame and the
 * position inside its surface; FALSE without a surface */
gboolean gst_spice_src_display_head_at (GstSpiceSrc * self, gint x, gint y,
    gint * channel_id, gint * hx, gint * hy);

/* streaming thread (create()), self->lock held */
gboolean gst_spice_src_display_frame_ready_locked (GstSpiceSrc * self);
void     gst_spice_src_display_catchup_schedule_locked (GstSpiceSrc * self);
GstBuffer *gst_spice_src_display_cur_take_locked (GstSpiceSrc * self,
    GstVideoFrame * frame);
GstBuffer *gst_spice_src_display_packed_take_locked (GstSpiceSrc * self,
    gint64 * arrival_us);

/* streaming thread (create()), self->lock not held */
GstFlowReturn gst_spice_src_display_cur_install (GstSpiceSrc * self,
    gboolean reuse_only);
void     gst_spice_src_display_held_frames_put (GstSpiceSrc * self,
    GstBuffer * buf, guint64 seq);

/* streaming thread, or the state-change thread once it is gone (start(),
 * stop(), decide_allocation()) */
void     gst_spice_src_display_cur_drop (GstSpiceSrc * self);
void     gst_spice_src_display_held_frames_reset (GstSpiceSrc * self);

/* any thread (an input event) */
void     gst_spice_src_display_prefault_start (GstSpiceSrc * self);

G_END_DECLS
