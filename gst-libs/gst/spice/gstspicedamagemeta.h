/* gst-spice: damage rectangles on raw video frames
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "gstspice-prelude.h"

#include <gst/video/video.h>

G_BEGIN_DECLS

#define GST_SPICE_DAMAGE_META_API_TYPE (gst_spice_damage_meta_api_get_type ())
#define GST_SPICE_DAMAGE_META_INFO (gst_spice_damage_meta_get_info ())

/**
 * GstSpiceDamageMeta:
 * @meta: parent
 * @seq: sequence number of the frame; consecutive frames pushed by one
 *   element carry consecutive numbers, so a gap tells a consumer that it
 *   missed a frame (and that the damage is incomplete)
 * @n_rects: number of rectangles
 * @rects: (array length=n_rects): the areas that changed since the previous
 *   frame *that the producer pushed*, in frame pixel coordinates
 *
 * Damage of a raw video frame. No meta, or a gap in @seq, means "anything may
 * have changed". Tags: video, orientation, size: a scaling element scales the
 * rectangles outward; a filter that drops the meta is always safe.
 */
typedef struct {
  GstMeta meta;

  guint64 seq;
  guint n_rects;
  GstVideoRectangle *rects;
} GstSpiceDamageMeta;

GST_SPICE_API
GType gst_spice_damage_meta_api_get_type (void);
GST_SPICE_API
const GstMetaInfo *gst_spice_damage_meta_get_info (void);

GST_SPICE_API
GstSpiceDamageMeta *gst_buffer_add_spice_damage_meta (GstBuffer * buffer,
    guint64 seq, const GstVideoRectangle * rects, guint n_rects);

#define gst_buffer_get_spice_damage_meta(b) \
  ((GstSpiceDamageMeta *) gst_buffer_get_meta ((b), GST_SPICE_DAMAGE_META_API_TYPE))

G_END_DECLS
