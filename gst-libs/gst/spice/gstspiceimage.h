/* gst-spice: decoding the images of DRAW_COPY (BITMAP, LZ4, JPEG) into BGRx
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The one SPICE image decoder of the project: the tests' reference draws
 * decoder and raw client paint through it, as a SPICE client would.
 */
#pragma once

#include "gstspice-prelude.h"
#include "gstspicedraws.h"

G_BEGIN_DECLS

typedef struct _GstSpiceImageDecoder GstSpiceImageDecoder;

/* A decoder keeps a JPEG decompressor and an LZ4 scratch buffer: use one
 * per thread. */
GST_SPICE_API
GstSpiceImageDecoder *gst_spice_image_decoder_new (void);
GST_SPICE_API
void     gst_spice_image_decoder_free (GstSpiceImageDecoder * dec);

/**
 * gst_spice_image_decoder_decode:
 * @type: %GST_SPICE_IMAGE_BITMAP, %GST_SPICE_IMAGE_LZ4 or
 *   %GST_SPICE_IMAGE_JPEG
 * @width: @height: the image's size (the region's)
 * @payload: @payload_size: the image as it follows the image descriptor
 *   (see #GstSpiceDraw)
 * @dst: where the image's top-left pixel goes; @dst_stride bytes a row
 *
 * Decodes the image into BGRx. BITMAP and LZ4 must be 32BIT (either row
 * order); JPEG must be YCbCr or greyscale (what spice-gtk decodes) of
 * exactly @width x @height. Returns FALSE, with @error set
 * (GST_STREAM_ERROR_DECODE), when the payload is malformed or decodes to
 * anything else; @dst may then be partly written.
 */
GST_SPICE_API
gboolean gst_spice_image_decoder_decode (GstSpiceImageDecoder * dec,
    GstSpiceImageType type, gint width, gint height, const guint8 * payload,
    gsize payload_size, guint8 * dst, gsize dst_stride, GError ** error);

G_END_DECLS
