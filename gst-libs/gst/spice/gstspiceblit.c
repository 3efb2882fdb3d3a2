/* gst-spice: copying rectangles of 32-bit pixels
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "gstspiceblit.h"

#include <string.h>

/* any thread; touches only the two buffers */
void
gst_spice_blit_bgrx (guint8 * dst, gsize dst_stride, gint dst_x, gint dst_y,
    const guint8 * src, gsize src_stride, gint src_x, gint src_y, gint width,
    gint height)
{
  gsize row = (gsize) width * 4;
  guint8 *d;
  const guint8 *s;
  gint y;

  if (width <= 0 || height <= 0)
    return;
  d = dst + dst_stride * dst_y + 4 * (gsize) dst_x;
  s = src + src_stride * src_y + 4 * (gsize) src_x;
  if (row == dst_stride && row == src_stride) {
    memcpy (d, s, row * height);
    return;
  }
  for (y = 0; y < height; y++)
    memcpy (d + (gsize) y * dst_stride, s + (gsize) y * src_stride, row);
}
