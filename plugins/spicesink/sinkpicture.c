/* spicesink: the last-known picture and the refresh policy
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <string.h>
#include <gst/spice/gstspice.h>

#include "sinkpicture.h"

#include "sinkdebug.h"

static SINK_DEBUG_CATEGORY (sink_picture_debug, "spicesinkpicture",
    "spicesink last-known picture and refresh policy");
#define GST_CAT_DEFAULT sink_picture_debug ()

#define MAX_REGIONS 4096
#define MAX_BYTES (96 * 1024 * 1024)
#define REFRESH_RETRY_US (1000 * G_TIME_SPAN_MILLISECOND)

/* one published state: never changed once published */
typedef struct
{
  GPtrArray *regions;           /* SinkPictureRegion*, oldest first */
  gsize bytes;
  gint width, height;
  gboolean complete;
  gboolean lossy_unknown;       /* dropped since the last REFRESH: clients
                                 * may hold lossy areas */
} PictureState;

struct _SinkPictureEdit
{
  PictureState st;
  gboolean checked;             /* st.complete is known */
};

struct _SinkPicture
{
  PictureState st;
  gboolean refresh_outstanding;
  gint64 refresh_requested_us;
  guint64 refresh_requests;
};

/* regions are shared between the published picture and an edit */
static void
region_clear (gpointer p)
{
  g_bytes_unref (((SinkPictureRegion *) p)->payload);
}

static void
region_free (gpointer p)
{
  g_atomic_rc_box_release_full (p, region_clear);
}

SinkPicture *
sink_picture_new (void)
{
  SinkPicture *pic = g_new0 (SinkPicture, 1);

  pic->st.regions = g_ptr_array_new_with_free_func (region_free);
  return pic;
}

void
sink_picture_free (SinkPicture * pic)
{
  g_ptr_array_unref (pic->st.regions);
  g_free (pic);
}

/* ------------------------------------------------------------ editing */

SinkPictureEdit *
sink_picture_edit (SinkPicture * pic, gint width, gint height)
{
  SinkPictureEdit *e = g_new0 (SinkPictureEdit, 1);
  guint i;

  e->st = pic->st;
  e->st.regions = g_ptr_array_new_full (pic->st.regions->len + 16, region_free);
  if (width != pic->st.width || height != pic->st.height) {
    e->st.bytes = 0;
    e->st.complete = FALSE;
  } else {
    for (i = 0; i < pic->st.regions->len; i++)
      g_ptr_array_add (e->st.regions,
          g_atomic_rc_box_acquire (g_ptr_array_index (pic->st.regions, i)));
  }
  e->st.width = width;
  e->st.height = height;
  e->checked = e->st.complete;
  return e;
}

gboolean
sink_picture_edit_has_lossy (SinkPictureEdit * e)
{
  guint i;

  if (e->st.lossy_unknown)
    return TRUE;
  for (i = 0; i < e->st.regions->len; i++)
    if (((SinkPictureRegion *) g_ptr_array_index (e->st.regions, i))->lossy)
      return TRUE;
  return FALSE;
}

void
sink_picture_edit_clear (SinkPictureEdit * e)
{
  g_ptr_array_set_size (e->st.regions, 0);
  e->st.bytes = 0;
  e->st.complete = FALSE;
  e->checked = FALSE;
}

void
sink_picture_edit_refresh (SinkPictureEdit * e)
{
  sink_picture_edit_clear (e);
  e->st.lossy_unknown = FALSE;
}

void
sink_picture_edit_add (SinkPictureEdit * e, const GstVideoRectangle * dest,
    guint8 type, gboolean lossy, GBytes * payload)
{
  SinkPictureRegion *r;
  guint i, n = 0;

  /* drop what this region hides completely (in place, order kept) */
  for (i = 0; i < e->st.regions->len; i++) {
    SinkPictureRegion *o = g_ptr_array_index (e->st.regions, i);

    if (gst_spice_rect_contains (dest, &o->dest)) {
      e->st.bytes -= g_bytes_get_size (o->payload);
      region_free (o);
    } else {
      e->st.regions->pdata[n++] = o;
    }
  }
  g_ptr_array_set_free_func (e->st.regions, NULL);
  g_ptr_array_set_size (e->st.regions, n);
  g_ptr_array_set_free_func (e->st.regions, region_free);
  if (e->st.regions->len >= MAX_REGIONS ||
      e->st.bytes + g_bytes_get_size (payload) > MAX_BYTES) {
    GST_DEBUG ("last-known picture too fragmented, dropped");
    sink_picture_edit_clear (e);
    e->st.lossy_unknown = TRUE;
  }
  r = g_atomic_rc_box_new (SinkPictureRegion);
  r->dest = *dest;
  r->type = type;
  r->lossy = lossy || type == GST_SPICE_IMAGE_JPEG;
  r->payload = g_bytes_ref (payload);
  e->st.bytes += g_bytes_get_size (payload);
  g_ptr_array_add (e->st.regions, r);
}

/* A copy (COPY_BITS) moves pixels of the picture: the regions, replayed
 * without it, would no longer make that picture. The picture is dropped;
 * a joining client then waits for a refresh. */
void
sink_picture_edit_copy (SinkPictureEdit * e)
{
  if (sink_picture_edit_has_lossy (e))
    e->st.lossy_unknown = TRUE;
  sink_picture_edit_clear (e);
}

static gint
cmp_int (gconstpointer a, gconstpointer b)
{
  return *(const gint *) a - *(const gint *) b;
}

/* Exact coverage test of the surface by the rectangles (coordinate
 * compression). */
static gboolean
covers_surface (const PictureState * st)
{
  GArray *xs, *ys;
  guint i, j, k, nx, ny;
  guint8 *grid;
  gboolean complete = TRUE;
  gint zero = 0;

  if (st->regions->len == 0 || st->width <= 0)
    return FALSE;
  xs = g_array_new (FALSE, FALSE, sizeof (gint));
  ys = g_array_new (FALSE, FALSE, sizeof (gint));
  g_array_append_val (xs, zero);
  g_array_append_val (ys, zero);
  g_array_append_val (xs, st->width);
  g_array_append_val (ys, st->height);
  for (i = 0; i < st->regions->len; i++) {
    SinkPictureRegion *r = g_ptr_array_index (st->regions, i);
    gint x1 = CLAMP (r->dest.x, 0, st->width);
    gint x2 = CLAMP (r->dest.x + r->dest.w, 0, st->width);
    gint y1 = CLAMP (r->dest.y, 0, st->height);
    gint y2 = CLAMP (r->dest.y + r->dest.h, 0, st->height);

    g_array_append_val (xs, x1);
    g_array_append_val (xs, x2);
    g_array_append_val (ys, y1);
    g_array_append_val (ys, y2);
  }
  g_array_sort (xs, cmp_int);
  g_array_sort (ys, cmp_int);
  for (i = 1, nx = 1; i < xs->len; i++)
    if (g_array_index (xs, gint, i) != g_array_index (xs, gint, nx - 1))
      g_array_index (xs, gint, nx++) = g_array_index (xs, gint, i);
  for (i = 1, ny = 1; i < ys->len; i++)
    if (g_array_index (ys, gint, i) != g_array_index (ys, gint, ny - 1))
      g_array_index (ys, gint, ny++) = g_array_index (ys, gint, i);
  grid = g_malloc0 ((gsize) nx * ny);
  for (k = 0; k < st->regions->len; k++) {
    SinkPictureRegion *r = g_ptr_array_index (st->regions, k);
    gint x1 = r->dest.x, x2 = r->dest.x + r->dest.w;
    gint y1 = r->dest.y, y2 = r->dest.y + r->dest.h;

    for (j = 0; j + 1 < ny; j++) {
      gint cy = g_array_index (ys, gint, j);
      if (cy < y1 || cy >= y2)
        continue;
      for (i = 0; i + 1 < nx; i++) {
        gint cx = g_array_index (xs, gint, i);
        if (cx >= x1 && cx < x2)
          grid[j * nx + i] = 1;
      }
    }
  }
  for (j = 0; j + 1 < ny && complete; j++)
    for (i = 0; i + 1 < nx; i++)
      if (!grid[j * nx + i]) {
        complete = FALSE;
        break;
      }
  g_free (grid);
  g_array_unref (xs);
  g_array_unref (ys);
  return complete;
}

void
sink_picture_commit (SinkPicture * pic, SinkPictureEdit * e)
{
  /* adding regions never uncovers anything: only checked until it first
   * succeeds */
  if (!e->checked)
    e->st.complete = covers_surface (&e->st);
  g_ptr_array_unref (pic->st.regions);
  pic->st = e->st;
  g_free (e);
}

void
sink_picture_edit_discard (SinkPictureEdit * e)
{
  g_ptr_array_unref (e->st.regions);
  g_free (e);
}

/* ------------------------------------------------------------ readers */

gsize
sink_picture_bytes (SinkPicture * pic)
{
  return pic->st.bytes;
}

guint
sink_picture_n_regions (SinkPicture * pic)
{
  return pic->st.regions->len;
}

const SinkPictureRegion *
sink_picture_region (SinkPicture * pic, guint i)
{
  return g_ptr_array_index (pic->st.regions, i);
}

gboolean
sink_picture_is_one_full_region (SinkPicture * pic)
{
  SinkPictureRegion *r;

  if (pic->st.regions->len != 1)
    return FALSE;
  r = g_ptr_array_index (pic->st.regions, 0);
  return r->dest.x == 0 && r->dest.y == 0 && r->dest.w == pic->st.width &&
      r->dest.h == pic->st.height;
}

gboolean
sink_picture_is_complete (SinkPicture * pic)
{
  return pic->st.complete;
}

/* ------------------------------------------------------------ refresh */

gboolean
sink_picture_refresh_due (SinkPicture * pic, gboolean force, gint64 now)
{
  if (pic->refresh_outstanding && now - pic->refresh_requested_us <
      REFRESH_RETRY_US)
    return FALSE;
  if (!force && !pic->refresh_outstanding)
    return FALSE;
  pic->refresh_outstanding = TRUE;
  pic->refresh_requested_us = now;
  pic->refresh_requests++;
  GST_DEBUG ("requesting a refresh upstream");
  return TRUE;
}

void
sink_picture_refresh_done (SinkPicture * pic)
{
  pic->refresh_outstanding = FALSE;
}

guint64
sink_picture_refresh_requests (SinkPicture * pic)
{
  return pic->refresh_requests;
}
