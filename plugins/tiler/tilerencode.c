/* spicetiler: region encoders (BITMAP, LZ4, JPEG) into a draws writer
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Payloads are written straight into the writer's reserved space: JPEG
 * reads the frame in place (BGRX with the frame's stride), LZ4 packs the
 * rows into a reused scratch buffer first (SPICE's LZ4 image must
 * decompress to unpadded rows) and compresses them into one block.
 */
#include <string.h>

#include <lz4.h>
#include <turbojpeg.h>

#include "tilerencode.h"

void
tiler_encoder_init (TilerEncoder * enc)
{
  memset (enc, 0, sizeof (*enc));
  enc->tj = tjInitCompress ();
}

void
tiler_encoder_clear (TilerEncoder * enc)
{
  if (enc->tj)
    tjDestroy (enc->tj);
  g_free (enc->scratch);
  memset (enc, 0, sizeof (*enc));
}

gsize
tiler_encode_lossless (TilerEncoder * enc, GstSpiceDrawsWriter * w,
    const GstVideoRectangle * dest, const guint8 * px, gint stride,
    GstSpiceImageType * type)
{
  gsize row = (gsize) dest->w * 4, raw = row * dest->h, bound, size;
  const guint8 *src = px;
  guint8 *p;
  gint n;

  if (raw > TILER_BITMAP_MAX_BYTES && raw < G_MAXINT / 2) {
    /* LZ4 takes contiguous rows: rows of the whole width (a refresh of
     * the shadow) are that already, others are packed into the scratch,
     * which is kept; a whole-surface one would be a fifth frame held */
    if ((gsize) stride != row) {
      if (enc->scratch_size < raw) {
        g_free (enc->scratch);
        enc->scratch = g_malloc (raw);
        enc->scratch_size = raw;
      }
      gst_spice_blit_bgrx (enc->scratch, row, 0, 0, px, stride, 0, 0, dest->w,
          dest->h);
      src = enc->scratch;
    }
    bound = LZ4_compressBound ((int) raw);
    p = gst_spice_draws_writer_begin (w, dest, GST_SPICE_IMAGE_LZ4, 0,
        GST_SPICE_LZ4_HEADER_SIZE + GST_SPICE_LZ4_BLOCK_HEADER_SIZE + bound);
    if (!p)
      return 0;
    n = LZ4_compress_default ((const char *) src,
        (char *) p + GST_SPICE_LZ4_HEADER_SIZE +
        GST_SPICE_LZ4_BLOCK_HEADER_SIZE, (int) raw, (int) bound);
    size = GST_SPICE_LZ4_HEADER_SIZE + GST_SPICE_LZ4_BLOCK_HEADER_SIZE + n;
    if (n > 0 && size < gst_spice_bitmap_payload_size (dest->w, dest->h)) {
      gst_spice_lz4_payload_write_header (p, size);
      gst_spice_lz4_block_write_header (p + GST_SPICE_LZ4_HEADER_SIZE, n);
      gst_spice_draws_writer_end (w, size);
      *type = GST_SPICE_IMAGE_LZ4;
      return size;
    }
    gst_spice_draws_writer_cancel (w);
  }
  gst_spice_draws_writer_add_bitmap (w, dest, px, stride);
  *type = GST_SPICE_IMAGE_BITMAP;
  return gst_spice_bitmap_payload_size (dest->w, dest->h);
}

gsize
tiler_encode_jpeg (TilerEncoder * enc, GstSpiceDrawsWriter * w,
    const GstVideoRectangle * dest, const guint8 * px, gint stride,
    gint quality)
{
  unsigned long bound = tjBufSize (dest->w, dest->h, TJSAMP_420);
  unsigned long jsize = bound;
  guint8 *p, *jpeg;

  if (!enc->tj || bound == (unsigned long) -1)
    return 0;
  p = gst_spice_draws_writer_begin (w, dest, GST_SPICE_IMAGE_JPEG,
      GST_SPICE_DRAW_FLAG_LOSSY, GST_SPICE_BINARY_HEADER_SIZE + bound);
  if (!p)
    return 0;
  jpeg = p + GST_SPICE_BINARY_HEADER_SIZE;
  if (tjCompress2 (enc->tj, px, dest->w, stride, dest->h, TJPF_BGRX, &jpeg,
          &jsize, TJSAMP_420, quality, TJFLAG_FASTDCT | TJFLAG_NOREALLOC) != 0
      || jpeg != p + GST_SPICE_BINARY_HEADER_SIZE) {
    gst_spice_draws_writer_cancel (w);
    return 0;
  }
  gst_spice_binary_payload_set_size (p, GST_SPICE_BINARY_HEADER_SIZE + jsize);
  gst_spice_draws_writer_end (w, GST_SPICE_BINARY_HEADER_SIZE + jsize);
  return GST_SPICE_BINARY_HEADER_SIZE + jsize;
}

void
tiler_draw_budget_apply (guint sink_budget, guint * update_budget,
    guint * band_size)
{
  if (sink_budget == 0)
    return;
  if (*update_budget == 0 || sink_budget < *update_budget)
    *update_budget = sink_budget;
  *band_size = MIN (*band_size, MAX (*update_budget, TILER_BAND_MIN_BYTES));
}

guint
tiler_jpeg_quality_for (guint quality, gboolean pressure)
{
  if (!pressure || quality <= TILER_PRESSURE_QUALITY_MIN)
    return quality;
  return MAX (quality * 6 / 10, TILER_PRESSURE_QUALITY_MIN);
}

gint64
tiler_draw_pace_us (gsize bytes, guint64 link_bps)
{
  if (link_bps == 0)
    return 0;
  return (gint64) MIN ((gdouble) bytes * 8 * G_USEC_PER_SEC / link_bps *
      TILER_PACE_PERCENT / 100, TILER_PACE_MAX_US);
}
