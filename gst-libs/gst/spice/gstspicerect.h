/* gst-spice: rectangles and small rectangle sets (damage regions)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <gst/video/video.h>

G_BEGIN_DECLS

gboolean gst_spice_rect_is_empty (const GstVideoRectangle * r);
gboolean gst_spice_rect_intersect (const GstVideoRectangle * a,
    const GstVideoRectangle * b, GstVideoRectangle * out);
void     gst_spice_rect_union (const GstVideoRectangle * a,
    const GstVideoRectangle * b, GstVideoRectangle * out);
gboolean gst_spice_rect_contains (const GstVideoRectangle * outer,
    const GstVideoRectangle * inner);
gboolean gst_spice_rect_clip (GstVideoRectangle * r, gint width, gint height);
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

void     gst_spice_region_init (GstSpiceRegion * region);
void     gst_spice_region_clear (GstSpiceRegion * region);
void     gst_spice_region_reset (GstSpiceRegion * region);
void     gst_spice_region_copy (GstSpiceRegion * dest, const GstSpiceRegion * src);
void     gst_spice_region_add (GstSpiceRegion * region, const GstVideoRectangle * rect);
void     gst_spice_region_add_region (GstSpiceRegion * region, const GstSpiceRegion * other);
void     gst_spice_region_limit (GstSpiceRegion * region, guint max_rects);
void     gst_spice_region_clip (GstSpiceRegion * region, gint width, gint height);
gboolean gst_spice_region_is_empty (const GstSpiceRegion * region);
guint    gst_spice_region_n_rects (const GstSpiceRegion * region);
const GstVideoRectangle *gst_spice_region_rects (const GstSpiceRegion * region);
gboolean gst_spice_region_intersects (const GstSpiceRegion * region,
    const GstVideoRectangle * rect);
gboolean gst_spice_region_contains_point (const GstSpiceRegion * region,
    gint x, gint y);
void     gst_spice_region_bounds (const GstSpiceRegion * region,
    GstVideoRectangle * bounds);
guint64  gst_spice_region_area (const GstSpiceRegion * region);

G_END_DECLS
