/* gst-spice: copying rectangles of 32-bit pixels (BGRx, BGRA) between
 * buffers with their own strides
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "gstspice-prelude.h"

#include <glib.h>

G_BEGIN_DECLS

/**
 * gst_spice_blit_bgrx:
 * @dst: destination pixels, @dst_stride bytes a row
 * @dst_x: @dst_y: where the rectangle lands in @dst
 * @src: source pixels, @src_stride bytes a row
 * @src_x: @src_y: the rectangle's corner in @src
 * @width: @height: the rectangle, in pixels (4 bytes each)
 *
 * Copies a rectangle of 4-byte pixels row by row. Source and destination
 * must not overlap (COPY_BITS on one surface is gst_spice_copy_bits_apply()).
 * A rectangle that is one whole run of rows in both buffers is one memcpy.
 */
GST_SPICE_API
void gst_spice_blit_bgrx (guint8 * dst, gsize dst_stride, gint dst_x,
    gint dst_y, const guint8 * src, gsize src_stride, gint src_x, gint src_y,
    gint width, gint height);

G_END_DECLS
