/* gst-spice: decoding the images of DRAW_COPY (see gstspiceimage.h)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <lz4.h>
#include <turbojpeg.h>
#include <gst/base/gstbytereader.h>

#include "gstspiceimage.h"
#include "gstspiceblit.h"

struct _GstSpiceImageDecoder
{
  tjhandle tj;
  guint8 *scratch;              /* LZ4 output that cannot go to dst */
  gsize scratch_size;
};

GstSpiceImageDecoder *
gst_spice_image_decoder_new (void)
{
  GstSpiceImageDecoder *dec = g_new0 (GstSpiceImageDecoder, 1);

  dec->tj = tjInitDecompress ();
  return dec;
}

void
gst_spice_image_decoder_free (GstSpiceImageDecoder * dec)
{
  if (!dec)
    return;
  if (dec->tj)
    tjDestroy (dec->tj);
  g_free (dec->scratch);
  g_free (dec);
}

static gboolean
fail (GError ** error, const gchar * fmt, ...)
G_GNUC_PRINTF (2, 3);

     static gboolean fail (GError ** error, const gchar * fmt, ...)
{
  va_list ap;

  va_start (ap, fmt);
  if (error && !*error)
    *error = g_error_new_valist (GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE,
        fmt, ap);
  va_end (ap);
  return FALSE;
}

/* Copies @height rows of @width pixels, @src_stride apart, to @dst; rows
 * stored bottom-up are turned around one by one. */
static void
put_rows (guint8 * dst, gsize dst_stride, const guint8 * src,
    gsize src_stride, gint width, gint height, gboolean top_down)
{
  gint y;

  if (top_down) {
    gst_spice_blit_bgrx (dst, dst_stride, 0, 0, src, src_stride, 0, 0, width,
        height);
    return;
  }
  for (y = 0; y < height; y++)
    gst_spice_blit_bgrx (dst, dst_stride, 0, y, src, src_stride, 0,
        height - 1 - y, width, 1);
}

/* any thread */
static gboolean
decode_bitmap (gint width, gint height, const guint8 * payload, gsize size,
    guint8 * dst, gsize dst_stride, GError ** error)
{
  GstByteReader r;
  guint8 flags = 0;
  guint32 stride = 0;

  if (!gst_spice_payload_validate (GST_SPICE_IMAGE_BITMAP, width, height,
          payload, size))
    return fail (error, "bad BITMAP payload");
  /* u8 format, u8 flags, u32 width, height, stride (validated above) */
  gst_byte_reader_init (&r, payload, GST_SPICE_BITMAP_HEADER_SIZE);
  gst_byte_reader_skip_unchecked (&r, 1);
  flags = gst_byte_reader_get_uint8_unchecked (&r);
  gst_byte_reader_skip_unchecked (&r, 8);
  stride = gst_byte_reader_get_uint32_le_unchecked (&r);
  put_rows (dst, dst_stride, payload + GST_SPICE_BITMAP_HEADER_SIZE, stride,
      width, height, (flags & SPICE_BITMAP_FLAGS_TOP_DOWN) != 0);
  return TRUE;
}

static gboolean
decode_lz4 (GstSpiceImageDecoder * dec, gint width, gint height,
    const guint8 * payload, gsize size, guint8 * dst, gsize dst_stride,
    GError ** error)
{
  GstSpiceLz4Blocks blocks;
  LZ4_streamDecode_t sd;
  const guint8 *block;
  gsize block_size, row = (gsize) width * 4;
  gsize need = row * height, out = 0;
  guint8 *to;
  gboolean direct;

  if (!gst_spice_lz4_payload_parse (payload, size, &blocks))
    return fail (error, "bad LZ4 framing");
  if (blocks.format != SPICE_BITMAP_FMT_32BIT)
    return fail (error, "LZ4 format %u not 32BIT", blocks.format);
  if (need > G_MAXINT)
    return fail (error, "LZ4 image of %dx%d too large", width, height);
  /* rows packed top-down are the destination itself when it is packed */
  direct = blocks.top_down && dst_stride == row;
  if (!direct && dec->scratch_size < need) {
    g_free (dec->scratch);
    dec->scratch = g_malloc (need);
    dec->scratch_size = need;
  }
  to = direct ? dst : dec->scratch;
  LZ4_setStreamDecode (&sd, NULL, 0);
  while (gst_spice_lz4_blocks_next (&blocks, &block, &block_size)) {
    int n = LZ4_decompress_safe_continue (&sd, (const char *) block,
        (char *) to + out, (int) block_size, (int) (need - out));

    if (n < 0)
      return fail (error, "LZ4 block does not decode");
    out += n;
  }
  if (out != need)
    return fail (error, "LZ4 decoded %" G_GSIZE_FORMAT " bytes, expected %"
        G_GSIZE_FORMAT, out, need);
  if (!direct)
    put_rows (dst, dst_stride, dec->scratch, row, width, height,
        blocks.top_down);
  return TRUE;
}

static gboolean
decode_jpeg (GstSpiceImageDecoder * dec, gint width, gint height,
    const guint8 * payload, gsize size, guint8 * dst, gsize dst_stride,
    GError ** error)
{
  const guint8 *jpeg;
  gsize jpeg_size;
  int w, h, subsamp, colorspace;

  if (!dec->tj)
    return fail (error, "no JPEG decompressor");
  if (!gst_spice_jpeg_payload_parse (payload, size, &jpeg, &jpeg_size))
    return fail (error, "bad JPEG framing");
  if (dst_stride > G_MAXINT)
    return fail (error, "rows of %" G_GSIZE_FORMAT " bytes are too long",
        dst_stride);
  if (tjDecompressHeader3 (dec->tj, jpeg, jpeg_size, &w, &h, &subsamp,
          &colorspace) != 0)
    return fail (error, "bad JPEG header: %s", tjGetErrorStr2 (dec->tj));
  if (w != width || h != height)
    return fail (error, "JPEG is %dx%d, region %dx%d", w, h, width, height);
  if (colorspace != TJCS_YCbCr && colorspace != TJCS_GRAY)
    return fail (error, "JPEG colour space %d would kill spice-gtk",
        colorspace);
  if (tjDecompress2 (dec->tj, jpeg, jpeg_size, dst, w, (int) dst_stride, h,
          TJPF_BGRX, 0) != 0)
    return fail (error, "JPEG does not decode: %s", tjGetErrorStr2 (dec->tj));
  return TRUE;
}

/* any thread, one decoder per thread */
gboolean
gst_spice_image_decoder_decode (GstSpiceImageDecoder * dec,
    GstSpiceImageType type, gint width, gint height, const guint8 * payload,
    gsize payload_size, guint8 * dst, gsize dst_stride, GError ** error)
{
  g_return_val_if_fail (dec != NULL, FALSE);
  if (width <= 0 || height <= 0 || dst_stride < (gsize) width * 4)
    return fail (error, "image of %dx%d into rows of %" G_GSIZE_FORMAT
        " bytes", width, height, dst_stride);
  switch (type) {
    case GST_SPICE_IMAGE_BITMAP:
      return decode_bitmap (width, height, payload, payload_size, dst,
          dst_stride, error);
    case GST_SPICE_IMAGE_LZ4:
      return decode_lz4 (dec, width, height, payload, payload_size, dst,
          dst_stride, error);
    case GST_SPICE_IMAGE_JPEG:
      return decode_jpeg (dec, width, height, payload, payload_size, dst,
          dst_stride, error);
    default:
      return fail (error, "image type %d is not decoded", type);
  }
}
