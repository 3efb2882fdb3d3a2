/* gst-spice: damage-only raw video (memory:SpiceDamage)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One producer (spicesrc) packs, one consumer (spicetiler) validates and
 * applies; both go through these functions, so the layout is written
 * once (gstspicedamage.h).
 */
#include "gstspicedamage.h"
#include "gstspiceblit.h"
#include "gstspicerect.h"

#include <string.h>

/**
 * gst_spice_caps_is_damage_only:
 * @caps: fixed caps
 *
 * Returns: whether @caps' first structure has the
 * %GST_CAPS_FEATURE_MEMORY_SPICE_DAMAGE feature
 */
gboolean
gst_spice_caps_is_damage_only (const GstCaps * caps)
{
  GstCapsFeatures *f;

  if (!caps || gst_caps_get_size (caps) == 0)
    return FALSE;
  f = gst_caps_get_features (caps, 0);
  return f && !gst_caps_features_is_any (f) &&
      gst_caps_features_contains (f, GST_CAPS_FEATURE_MEMORY_SPICE_DAMAGE);
}

/**
 * gst_spice_damage_packed_size:
 * @rects: (array length=n_rects): rectangles, none with a negative size
 * @n_rects: how many
 *
 * Returns: the bytes of their pixels packed (the sum of w * h * 4)
 */
guint64
gst_spice_damage_packed_size (const GstVideoRectangle * rects, guint n_rects)
{
  guint64 size = 0;
  guint i;

  for (i = 0; i < n_rects; i++)
    if (rects[i].w > 0 && rects[i].h > 0)
      size += (guint64) rects[i].w * rects[i].h * 4;
  return size;
}

/**
 * gst_spice_damage_pack_with:
 * @rects: (array length=n_rects): the damage, inside the surface, each
 *   with a positive size
 * @n_rects: how many (at most %GST_SPICE_DAMAGE_MAX_RECTS)
 * @seq: the buffer's sequence number (the meta's)
 * @fill: (scope call): writes one rectangle's pixels
 * @user_data: for @fill
 *
 * A new damage-only buffer: its size is gst_spice_damage_packed_size(),
 * @fill writes each rectangle in turn, the meta lists @rects.
 *
 * Returns: (transfer full): the buffer
 */
GstBuffer *
gst_spice_damage_pack_with (const GstVideoRectangle * rects, guint n_rects,
    guint64 seq, GstSpiceDamageFillFunc fill, gpointer user_data)
{
  guint64 size = gst_spice_damage_packed_size (rects, n_rects);
  GstBuffer *buf;
  GstMapInfo map;
  gsize off = 0;
  guint i;

  g_return_val_if_fail (n_rects <= GST_SPICE_DAMAGE_MAX_RECTS, NULL);
  g_return_val_if_fail (size <= G_MAXSIZE, NULL);
  buf = gst_buffer_new_allocate (NULL, (gsize) size, NULL);
  if (size > 0) {
    gst_buffer_map (buf, &map, GST_MAP_WRITE);
    for (i = 0; i < n_rects; i++) {
      if (rects[i].w <= 0 || rects[i].h <= 0)
        continue;
      fill (user_data, &rects[i], map.data + off, (gsize) rects[i].w * 4);
      off += (gsize) rects[i].w * rects[i].h * 4;
    }
    gst_buffer_unmap (buf, &map);
  }
  gst_buffer_add_spice_damage_meta (buf, seq, rects, n_rects);
  return buf;
}

typedef struct
{
  const guint8 *src;
  gsize stride;
} PackPicture;

/* any thread: one rectangle of a plain picture */
static void
fill_from_picture (gpointer user_data, const GstVideoRectangle * r,
    guint8 * dst, gsize dst_stride)
{
  const PackPicture *p = user_data;

  gst_spice_blit_bgrx (dst, dst_stride, 0, 0, p->src, p->stride, r->x, r->y,
      r->w, r->h);
}

/**
 * gst_spice_damage_pack:
 * @src: the producer's picture (4-byte pixels), @src_stride bytes a row
 * @src_stride: its stride
 * @rects: (array length=n_rects): the damage, inside the picture
 * @n_rects: how many
 * @seq: the buffer's sequence number
 *
 * gst_spice_damage_pack_with() from one picture.
 *
 * Returns: (transfer full): the buffer
 */
GstBuffer *
gst_spice_damage_pack (const guint8 * src, gsize src_stride,
    const GstVideoRectangle * rects, guint n_rects, guint64 seq)
{
  PackPicture p = { src, src_stride };

  return gst_spice_damage_pack_with (rects, n_rects, seq, fill_from_picture,
      &p);
}

/**
 * gst_spice_damage_validate:
 * @buffer: a damage-only buffer
 * @width: @height: the surface (the caps' size)
 * @error: why not
 *
 * Checks @buffer against the layout: a damage meta with at most
 * %GST_SPICE_DAMAGE_MAX_RECTS rectangles, each of a positive size and
 * inside the surface, and exactly their pixels' bytes.
 *
 * Returns: (transfer none) (nullable): the meta, or NULL with @error set
 */
GstSpiceDamageMeta *
gst_spice_damage_validate (GstBuffer * buffer, gint width, gint height,
    GError ** error)
{
  GstSpiceDamageMeta *meta = gst_buffer_get_spice_damage_meta (buffer);
  guint64 size = 0;
  guint i;

  if (!meta) {
    g_set_error (error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
        "damage-only buffer without a damage meta");
    return NULL;
  }
  if (meta->n_rects > GST_SPICE_DAMAGE_MAX_RECTS) {
    g_set_error (error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
        "damage-only buffer with %u rectangles (at most %u)", meta->n_rects,
        GST_SPICE_DAMAGE_MAX_RECTS);
    return NULL;
  }
  for (i = 0; i < meta->n_rects; i++) {
    const GstVideoRectangle *r = &meta->rects[i];

    if (r->x < 0 || r->y < 0 || r->w <= 0 || r->h <= 0 ||
        (gint64) r->x + r->w > width || (gint64) r->y + r->h > height) {
      g_set_error (error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
          "damage rectangle %u (%d,%d %dx%d) is not inside the %dx%d "
          "surface", i, r->x, r->y, r->w, r->h, width, height);
      return NULL;
    }
    size += (guint64) r->w * r->h * 4;
  }
  if (size != gst_buffer_get_size (buffer)) {
    g_set_error (error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
        "damage-only buffer of %" G_GSIZE_FORMAT " bytes for %u rectangles "
        "of %" G_GUINT64_FORMAT " bytes", gst_buffer_get_size (buffer),
        meta->n_rects, size);
    return NULL;
  }
  return meta;
}

/**
 * gst_spice_damage_covers:
 * @meta: a damage meta
 * @width: @height: the surface
 *
 * Returns: whether one of @meta's rectangles covers the whole surface
 * (the buffer holds all of it)
 */
gboolean
gst_spice_damage_covers (const GstSpiceDamageMeta * meta, gint width,
    gint height)
{
  GstVideoRectangle all = { 0, 0, width, height };
  guint i;

  for (i = 0; meta && i < meta->n_rects; i++)
    if (gst_spice_rect_contains (&meta->rects[i], &all))
      return TRUE;
  return FALSE;
}

/**
 * gst_spice_damage_apply:
 * @buffer: a damage-only buffer
 * @dst: the consumer's picture, @width x @height 4-byte pixels
 * @dst_stride: its stride
 * @width: @height: the surface
 * @error: why not
 *
 * Validates @buffer (gst_spice_damage_validate()) and copies each of its
 * rectangles into @dst, in order. A malformed buffer changes nothing.
 *
 * Returns: FALSE with @error set for a malformed buffer
 */
gboolean
gst_spice_damage_apply (GstBuffer * buffer, guint8 * dst, gsize dst_stride,
    gint width, gint height, GError ** error)
{
  GstSpiceDamageMeta *meta;
  GstMapInfo map;
  gsize off = 0;
  guint i;

  meta = gst_spice_damage_validate (buffer, width, height, error);
  if (!meta)
    return FALSE;
  if (!gst_buffer_map (buffer, &map, GST_MAP_READ)) {
    g_set_error (error, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE,
        "cannot map the damage-only buffer");
    return FALSE;
  }
  for (i = 0; i < meta->n_rects; i++) {
    const GstVideoRectangle *r = &meta->rects[i];

    gst_spice_blit_bgrx (dst, dst_stride, r->x, r->y, map.data + off,
        (gsize) r->w * 4, 0, 0, r->w, r->h);
    off += (gsize) r->w * r->h * 4;
  }
  gst_buffer_unmap (buffer, &map);
  return TRUE;
}
