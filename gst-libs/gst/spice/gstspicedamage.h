/* gst-spice: damage-only raw video (memory:SpiceDamage), the damaged
 * rectangles' pixels packed one after the other
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "gstspice-prelude.h"

#include <gst/video/video.h>

#include "gstspicedamagemeta.h"

G_BEGIN_DECLS

/**
 * GST_CAPS_FEATURE_MEMORY_SPICE_DAMAGE:
 *
 * The caps feature of damage-only raw video:
 * `video/x-raw(memory:SpiceDamage), format=BGRx` (or BGRA). Width and
 * height are the whole surface's, but a buffer holds only what changed:
 * its #GstSpiceDamageMeta lists the rectangles and its bytes are their
 * pixels packed one after the other, in the meta's order, each rectangle
 * row after row of w * 4 bytes without padding. A buffer whose meta has a
 * rectangle covering the whole surface holds the whole surface (the first
 * buffer, after a resize, a reconnection, or an upstream force-key-unit
 * event). Applied in order onto a picture of the surface's size, the
 * buffers give the producer's picture; a consumer that missed one (a gap
 * in the meta's seq) sends an upstream force-key-unit event and gets a
 * whole surface next.
 */
#define GST_CAPS_FEATURE_MEMORY_SPICE_DAMAGE "memory:SpiceDamage"

/**
 * GST_SPICE_DAMAGE_MAX_RECTS:
 *
 * The most rectangles a damage-only buffer may list; a buffer with more
 * is malformed (gst_spice_damage_validate()).
 */
#define GST_SPICE_DAMAGE_MAX_RECTS 4096

/**
 * GstSpiceDamageFillFunc:
 * @user_data: the caller's
 * @rect: a rectangle of the surface
 * @dst: where its pixels go, @rect's top left corner
 * @dst_stride: bytes from one row of @dst to the next
 *
 * Writes the pixels of @rect (rect->w * 4 bytes a row, rect->h rows).
 */
typedef void (*GstSpiceDamageFillFunc) (gpointer user_data,
    const GstVideoRectangle * rect, guint8 * dst, gsize dst_stride);

GST_SPICE_API
gboolean gst_spice_caps_is_damage_only (const GstCaps * caps);

GST_SPICE_API
guint64  gst_spice_damage_packed_size (const GstVideoRectangle * rects,
    guint n_rects);

GST_SPICE_API
GstBuffer *gst_spice_damage_pack_with (const GstVideoRectangle * rects,
    guint n_rects, guint64 seq, GstSpiceDamageFillFunc fill,
    gpointer user_data);

GST_SPICE_API
GstBuffer *gst_spice_damage_pack (const guint8 * src, gsize src_stride,
    const GstVideoRectangle * rects, guint n_rects, guint64 seq);

GST_SPICE_API
GstSpiceDamageMeta *gst_spice_damage_validate (GstBuffer * buffer,
    gint width, gint height, GError ** error);

GST_SPICE_API
gboolean gst_spice_damage_covers (const GstSpiceDamageMeta * meta,
    gint width, gint height);

GST_SPICE_API
gboolean gst_spice_damage_apply (GstBuffer * buffer, guint8 * dst,
    gsize dst_stride, gint width, gint height, GError ** error);

G_END_DECLS
