/* spicetiler: region encoders (BITMAP, LZ4, JPEG) into a draws writer
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <spice/gstspice.h>

G_BEGIN_DECLS

/* below this many raw bytes a region goes out as BITMAP */
#define TILER_BITMAP_MAX_BYTES 512
/* below this many pixels a lossy region is sent lossless instead */
#define TILER_JPEG_MIN_PIXELS 256

typedef struct {
  gpointer tj;                  /* tjhandle */
  guint8 *scratch;
  gsize scratch_size;
} TilerEncoder;

void     tiler_encoder_init (TilerEncoder * enc);
void     tiler_encoder_clear (TilerEncoder * enc);
/* appends @dest from @px (its top-left pixel) as BITMAP or LZ4, whichever
 * is smaller; returns the payload size and sets @type */
gsize    tiler_encode_lossless (TilerEncoder * enc, GstSpiceDrawsWriter * w,
    const GstVideoRectangle * dest, const guint8 * px, gint stride,
    GstSpiceImageType * type);
/* appends @dest as a lossy JPEG (4:2:0); returns 0 on failure, then
 * nothing was appended */
gsize    tiler_encode_jpeg (TilerEncoder * enc, GstSpiceDrawsWriter * w,
    const GstVideoRectangle * dest, const guint8 * px, gint stride,
    gint quality);

G_END_DECLS
