/* gst-spice: rectangles and small rectangle sets (damage regions)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "gstspice-prelude.h"

#include <gst/video/video.h>

G_BEGIN_DECLS

GST_SPICE_API
gboolean gst_spice_rect_is_empty (const GstVideoRectangle * r);
GST_SPICE_API
gboolean gst_spice_rect_intersect (const GstVideoRectangle * a,
    const GstVideoRectangle * b, GstVideoRectangle * out);
GST_SPICE_API
void     gst_spice_rect_union (const GstVideoRectangle * a,
    const GstVideoRectangle * b, GstVideoRectangle * out);
GST_SPICE_API
gboolean gst_spice_rect_contains (const GstVideoRectangle * outer,
    const GstVideoRectangle * inner);
GST_SPICE_API
gboolean gst_spice_rect_clip (GstVideoRectangle * r, gint width, gint height);
GST_SPICE_API
guint64  gst_spice_rect_area (const GstVideoRectangle * r);

/**
 * GstSpiceRegion:
 * @rects: (element-type GstVideoRectangle): the rectangles; they may overlap
 *
 * A small set of rectangles that covers a damaged area. Adding a rectangle
 * drops rectangles it contains; gst_spice_region_limit() merges the pair
 * whose union grows the covered area least until at most N remain, so the
 * region always covers everything that was added.
 */
typedef struct {
  GArray *rects;
} GstSpiceRegion;

GST_SPICE_API
void     gst_spice_region_init (GstSpiceRegion * region);
GST_SPICE_API
void     gst_spice_region_clear (GstSpiceRegion * region);
GST_SPICE_API
void     gst_spice_region_reset (GstSpiceRegion * region);
GST_SPICE_API
void     gst_spice_region_copy (GstSpiceRegion * dest, const GstSpiceRegion * src);
GST_SPICE_API
void     gst_spice_region_add (GstSpiceRegion * region, const GstVideoRectangle * rect);
GST_SPICE_API
void     gst_spice_region_add_region (GstSpiceRegion * region, const GstSpiceRegion * other);
GST_SPICE_API
void     gst_spice_region_limit (GstSpiceRegion * region, guint max_rects);
GST_SPICE_API
void     gst_spice_region_clip (GstSpiceRegion * region, gint width, gint height);
GST_SPICE_API
gboolean gst_spice_region_is_empty (const GstSpiceRegion * region);
GST_SPICE_API
guint    gst_spice_region_n_rects (const GstSpiceRegion * region);
GST_SPICE_API
const GstVideoRectangle *gst_spice_region_rects (const GstSpiceRegion * region);
GST_SPICE_API
gboolean gst_spice_region_intersects (const GstSpiceRegion * region,
    const GstVideoRectangle * rect);
GST_SPICE_API
gboolean gst_spice_region_contains_point (const GstSpiceRegion * region,
    gint x, gint y);
GST_SPICE_API
void     gst_spice_region_bounds (const GstSpiceRegion * region,
    GstVideoRectangle * bounds);
GST_SPICE_API
guint64  gst_spice_region_area (const GstSpiceRegion * region);

G_END_DECLS
