/* gst-spice: rectangles and small rectangle sets (damage regions)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "gstspicerect.h"

gboolean
gst_spice_rect_is_empty (const GstVideoRectangle * r)
{
  return r->w <= 0 || r->h <= 0;
}

gboolean
gst_spice_rect_intersect (const GstVideoRectangle * a,
    const GstVideoRectangle * b, GstVideoRectangle * out)
{
  gint x0 = MAX (a->x, b->x), y0 = MAX (a->y, b->y);
  gint x1 = MIN (a->x + a->w, b->x + b->w), y1 = MIN (a->y + a->h, b->y + b->h);

  if (x1 <= x0 || y1 <= y0) {
    if (out)
      *out = (GstVideoRectangle) {
      0, 0, 0, 0};
    return FALSE;
  }
  if (out)
    *out = (GstVideoRectangle) {
    x0, y0, x1 - x0, y1 - y0};
  return TRUE;
}

void
gst_spice_rect_union (const GstVideoRectangle * a, const GstVideoRectangle * b,
    GstVideoRectangle * out)
{
  gint x0, y0, x1, y1;

  if (gst_spice_rect_is_empty (a)) {
    *out = *b;
    return;
  }
  if (gst_spice_rect_is_empty (b)) {
    *out = *a;
    return;
  }
  x0 = MIN (a->x, b->x);
  y0 = MIN (a->y, b->y);
  x1 = MAX (a->x + a->w, b->x + b->w);
  y1 = MAX (a->y + a->h, b->y + b->h);
  *out = (GstVideoRectangle) {
  x0, y0, x1 - x0, y1 - y0};
}

gboolean
gst_spice_rect_contains (const GstVideoRectangle * outer,
    const GstVideoRectangle * inner)
{
  return inner->x >= outer->x && inner->y >= outer->y &&
      inner->x + inner->w <= outer->x + outer->w &&
      inner->y + inner->h <= outer->y + outer->h;
}

/* Clips @r to (0,0)-(width,height); returns FALSE if nothing is left. */
gboolean
gst_spice_rect_clip (GstVideoRectangle * r, gint width, gint height)
{
  GstVideoRectangle bounds = { 0, 0, width, height };

  return gst_spice_rect_intersect (r, &bounds, r);
}

guint64
gst_spice_rect_area (const GstVideoRectangle * r)
{
  if (gst_spice_rect_is_empty (r))
    return 0;
  return (guint64) r->w * (guint64) r->h;
}

void
gst_spice_region_init (GstSpiceRegion * region)
{
  region->rects = g_array_sized_new (FALSE, FALSE, sizeof (GstVideoRectangle),
      16);
}

void
gst_spice_region_clear (GstSpiceRegion * region)
{
  if (region->rects)
    g_array_free (region->rects, TRUE);
  region->rects = NULL;
}

void
gst_spice_region_reset (GstSpiceRegion * region)
{
  g_array_set_size (region->rects, 0);
}

void
gst_spice_region_copy (GstSpiceRegion * dest, const GstSpiceRegion * src)
{
  g_array_set_size (dest->rects, 0);
  g_array_append_vals (dest->rects, src->rects->data, src->rects->len);
}

void
gst_spice_region_add (GstSpiceRegion * region, const GstVideoRectangle * rect)
{
  GArray *a = region->rects;
  guint i;

  if (gst_spice_rect_is_empty (rect))
    return;
  for (i = 0; i < a->len; i++) {
    if (gst_spice_rect_contains (&g_array_index (a, GstVideoRectangle, i),
            rect))
      return;
  }
  /* drop what the new rectangle covers */
  for (i = 0; i < a->len;) {
    if (gst_spice_rect_contains (rect, &g_array_index (a, GstVideoRectangle,
                i)))
      g_array_remove_index_fast (a, i);
    else
      i++;
  }
  g_array_append_val (a, *rect);
}

void
gst_spice_region_add_region (GstSpiceRegion * region,
    const GstSpiceRegion * other)
{
  guint i;

  for (i = 0; i < other->rects->len; i++)
    gst_spice_region_add (region, &g_array_index (other->rects,
            GstVideoRectangle, i));
}

/* Merges the pair of rectangles whose union adds the least uncovered area
 * until at most @max_rects remain (max_rects >= 1). */
void
gst_spice_region_limit (GstSpiceRegion * region, guint max_rects)
{
  GArray *a = region->rects;

  max_rects = MAX (max_rects, 1);
  while (a->len > max_rects) {
    GstVideoRectangle *r = (GstVideoRectangle *) a->data;
    gint64 best = G_MAXINT64;
    guint bi = 0, bj = 1, i, j;
    GstVideoRectangle u;

    for (i = 0; i < a->len; i++) {
      for (j = i + 1; j < a->len; j++) {
        gint64 growth;

        gst_spice_rect_union (&r[i], &r[j], &u);
        growth = (gint64) gst_spice_rect_area (&u) -
            (gint64) gst_spice_rect_area (&r[i]) -
            (gint64) gst_spice_rect_area (&r[j]);
        if (growth < best) {
          best = growth;
          bi = i;
          bj = j;
        }
      }
    }
    gst_spice_rect_union (&r[bi], &r[bj], &u);
    g_array_remove_index_fast (a, bj);
    g_array_remove_index_fast (a, bi);
    gst_spice_region_add (region, &u);
  }
}

void
gst_spice_region_clip (GstSpiceRegion * region, gint width, gint height)
{
  GArray *a = region->rects;
  guint i;

  for (i = 0; i < a->len;) {
    if (gst_spice_rect_clip (&g_array_index (a, GstVideoRectangle, i), width,
            height))
      i++;
    else
      g_array_remove_index_fast (a, i);
  }
}

gboolean
gst_spice_region_is_empty (const GstSpiceRegion * region)
{
  return region->rects->len == 0;
}

guint
gst_spice_region_n_rects (const GstSpiceRegion * region)
{
  return region->rects->len;
}

const GstVideoRectangle *
gst_spice_region_rects (const GstSpiceRegion * region)
{
  return (const GstVideoRectangle *) region->rects->data;
}

gboolean
gst_spice_region_intersects (const GstSpiceRegion * region,
    const GstVideoRectangle * rect)
{
  guint i;

  for (i = 0; i < region->rects->len; i++) {
    if (gst_spice_rect_intersect (&g_array_index (region->rects,
                GstVideoRectangle, i), rect, NULL))
      return TRUE;
  }
  return FALSE;
}

gboolean
gst_spice_region_contains_point (const GstSpiceRegion * region, gint x, gint y)
{
  GstVideoRectangle p = { x, y, 1, 1 };
  guint i;

  for (i = 0; i < region->rects->len; i++) {
    if (gst_spice_rect_contains (&g_array_index (region->rects,
                GstVideoRectangle, i), &p))
      return TRUE;
  }
  return FALSE;
}

void
gst_spice_region_bounds (const GstSpiceRegion * region,
    GstVideoRectangle * bounds)
{
  guint i;

  *bounds = (GstVideoRectangle) {
  0, 0, 0, 0};
  for (i = 0; i < region->rects->len; i++)
    gst_spice_rect_union (bounds, &g_array_index (region->rects,
            GstVideoRectangle, i), bounds);
}

/* Sum of the rectangles' areas (overlaps counted twice). */
guint64
gst_spice_region_area (const GstSpiceRegion * region)
{
  guint64 area = 0;
  guint i;

  for (i = 0; i < region->rects->len; i++)
    area += gst_spice_rect_area (&g_array_index (region->rects,
            GstVideoRectangle, i));
  return area;
}
