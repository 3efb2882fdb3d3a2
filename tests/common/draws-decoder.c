/* gst-spice tests: reference decoder for application/x-spice-draws
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <string.h>
#include <math.h>

#include <lz4.h>
#include <turbojpeg.h>
#include <gst/spice/gstspice.h>

#include "draws-decoder.h"

typedef struct {
  GstVideoRectangle dest;
  guint type;
  gboolean lossy;
} LastRegion;

struct _DrawsDecoder {
  gint width, height, stride;
  guint8 *canvas;
  guint8 *scratch;
  gsize scratch_size;
  tjhandle tj;
  DrawsDecoderStats stats;
  GArray *last;                 /* LastRegion */
};

DrawsDecoder *
draws_decoder_new (gint width, gint height)
{
  DrawsDecoder *dec = g_new0 (DrawsDecoder, 1);

  dec->tj = tjInitDecompress ();
  dec->last = g_array_new (FALSE, FALSE, sizeof (LastRegion));
  draws_decoder_resize (dec, width, height);
  return dec;
}

void
draws_decoder_free (DrawsDecoder * dec)
{
  if (!dec)
    return;
  g_free (dec->canvas);
  g_free (dec->scratch);
  tjDestroy (dec->tj);
  g_array_free (dec->last, TRUE);
  g_free (dec);
}

void
draws_decoder_resize (DrawsDecoder * dec, gint width, gint height)
{
  g_free (dec->canvas);
  dec->width = width;
  dec->height = height;
  dec->stride = width * 4;
  dec->canvas = g_malloc0 ((gsize) dec->stride * height);
}

static gboolean
fail (GError ** error, const gchar * fmt, ...) G_GNUC_PRINTF (2, 3);

static gboolean
fail (GError ** error, const gchar * fmt, ...)
{
  va_list ap;

  va_start (ap, fmt);
  if (error && !*error)
    *error = g_error_new_valist (GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE,
        fmt, ap);
  va_end (ap);
  return FALSE;
}

static guint8 *
canvas_at (DrawsDecoder * dec, gint x, gint y)
{
  return dec->canvas + (gsize) y * dec->stride + (gsize) x * 4;
}

static gboolean
apply_bitmap (DrawsDecoder * dec, const GstSpiceDraw * d, GError ** error)
{
  const guint8 *p = d->payload;
  guint32 stride;
  gboolean top_down;
  gint y;

  if (!gst_spice_payload_validate (d->type, d->dest.w, d->dest.h, p,
          d->payload_size))
    return fail (error, "bad BITMAP payload");
  top_down = (p[1] & 4) != 0;
  stride = GST_READ_UINT32_LE (p + 10);
  p += GST_SPICE_BITMAP_HEADER_SIZE;
  for (y = 0; y < d->dest.h; y++) {
    gint sy = top_down ? y : d->dest.h - 1 - y;
    memcpy (canvas_at (dec, d->dest.x, d->dest.y + y), p + (gsize) sy * stride,
        (gsize) d->dest.w * 4);
  }
  return TRUE;
}

static gboolean
apply_lz4 (DrawsDecoder * dec, const GstSpiceDraw * d, GError ** error)
{
  GstSpiceLz4Blocks blocks;
  LZ4_streamDecode_t sd;
  const guint8 *block;
  gsize block_size, row = (gsize) d->dest.w * 4;
  gsize need = row * d->dest.h, out = 0;
  gint y;

  if (!gst_spice_lz4_payload_parse (d->payload, d->payload_size, &blocks))
    return fail (error, "bad LZ4 framing");
  if (blocks.format != SPICE_BITMAP_FMT_32BIT)
    return fail (error, "LZ4 format %u not 32BIT", blocks.format);
  if (dec->scratch_size < need) {
    g_free (dec->scratch);
    dec->scratch = g_malloc (need);
    dec->scratch_size = need;
  }
  LZ4_setStreamDecode (&sd, NULL, 0);
  while (gst_spice_lz4_blocks_next (&blocks, &block, &block_size)) {
    int n = LZ4_decompress_safe_continue (&sd, (const char *) block,
        (char *) dec->scratch + out, (int) block_size, (int) (need - out));

    if (n < 0)
      return fail (error, "LZ4 block does not decode");
    out += n;
  }
  if (out != need)
    return fail (error, "LZ4 decoded %" G_GSIZE_FORMAT " bytes, expected %"
        G_GSIZE_FORMAT, out, need);
  for (y = 0; y < d->dest.h; y++) {
    gint sy = blocks.top_down ? y : d->dest.h - 1 - y;
    memcpy (canvas_at (dec, d->dest.x, d->dest.y + y),
        dec->scratch + row * sy, row);
  }
  return TRUE;
}

static gboolean
apply_jpeg (DrawsDecoder * dec, const GstSpiceDraw * d, GError ** error)
{
  const guint8 *jpeg;
  gsize jpeg_size;
  int w, h, subsamp, colorspace;

  if (!gst_spice_jpeg_payload_parse (d->payload, d->payload_size, &jpeg,
          &jpeg_size))
    return fail (error, "bad JPEG framing");
  if (tjDecompressHeader3 (dec->tj, jpeg, jpeg_size, &w, &h, &subsamp,
          &colorspace) != 0)
    return fail (error, "bad JPEG header: %s", tjGetErrorStr2 (dec->tj));
  if (w != d->dest.w || h != d->dest.h)
    return fail (error, "JPEG is %dx%d, region %dx%d", w, h, d->dest.w,
        d->dest.h);
  if (colorspace != TJCS_YCbCr && colorspace != TJCS_GRAY)
    return fail (error, "JPEG colour space %d would kill spice-gtk",
        colorspace);
  if (tjDecompress2 (dec->tj, jpeg, jpeg_size, canvas_at (dec, d->dest.x,
              d->dest.y), w, dec->stride, h, TJPF_BGRX, 0) != 0)
    return fail (error, "JPEG does not decode: %s", tjGetErrorStr2 (dec->tj));
  return TRUE;
}

static gboolean
apply_copy_bits (DrawsDecoder * dec, const GstSpiceDraw * d, GError ** error)
{
  gint sx, sy;

  if (!gst_spice_payload_validate (d->type, d->dest.w, d->dest.h, d->payload,
          d->payload_size))
    return fail (error, "bad COPY_BITS payload");
  if (!gst_spice_copy_bits_payload_parse (d->payload, &d->dest, dec->width,
          dec->height, &sx, &sy))
    return fail (error, "COPY_BITS source %d,%d %dx%d outside %dx%d", sx, sy,
        d->dest.w, d->dest.h, dec->width, dec->height);
  gst_spice_copy_bits_apply (dec->canvas, dec->stride, &d->dest, sx,
      sy);
  return TRUE;
}

gboolean
draws_decoder_apply (DrawsDecoder * dec, GstBuffer * update, GError ** error)
{
  GstSpiceDrawsReader r;
  GstSpiceDraw d;
  gboolean ok = TRUE;

  g_array_set_size (dec->last, 0);
  if (!gst_spice_draws_reader_init (&r, update))
    return fail (error, "not a draws buffer");
  dec->stats.updates++;
  if (r.flags & GST_SPICE_DRAWS_FLAG_REFRESH)
    dec->stats.refreshes++;
  while (ok && gst_spice_draws_reader_next (&r, &d)) {
    LastRegion lr = { d.dest, d.type, (d.flags & GST_SPICE_DRAW_FLAG_LOSSY) };

    if (d.dest.x + d.dest.w > dec->width || d.dest.y + d.dest.h > dec->height) {
      ok = fail (error, "region %d,%d %dx%d outside %dx%d", d.dest.x, d.dest.y,
          d.dest.w, d.dest.h, dec->width, dec->height);
      break;
    }
    dec->stats.regions++;
    if (lr.lossy)
      dec->stats.lossy_regions++;
    switch (d.type) {
      case GST_SPICE_IMAGE_BITMAP:
        dec->stats.regions_bitmap++;
        dec->stats.bytes_bitmap += d.payload_size;
        ok = apply_bitmap (dec, &d, error);
        break;
      case GST_SPICE_IMAGE_LZ4:
        dec->stats.regions_lz4++;
        dec->stats.bytes_lz4 += d.payload_size;
        ok = apply_lz4 (dec, &d, error);
        break;
      case GST_SPICE_IMAGE_JPEG:
        dec->stats.regions_jpeg++;
        dec->stats.bytes_jpeg += d.payload_size;
        if (!lr.lossy)
          ok = fail (error, "JPEG region not flagged lossy");
        else
          ok = apply_jpeg (dec, &d, error);
        break;
      case GST_SPICE_IMAGE_COPY_BITS:
        dec->stats.regions_copy++;
        if (lr.lossy)
          ok = fail (error, "COPY_BITS region flagged lossy");
        else
          ok = apply_copy_bits (dec, &d, error);
        break;
      default:
        ok = fail (error, "unknown image type %d", d.type);
        break;
    }
    g_array_append_val (dec->last, lr);
  }
  if (ok && r.error)
    ok = fail (error, "malformed update");
  if (ok && r.index != r.n_regions)
    ok = fail (error, "update ended after %u of %u regions", r.index,
        r.n_regions);
  gst_spice_draws_reader_clear (&r);
  return ok;
}

void
draws_decoder_apply_pixels (DrawsDecoder * dec, const GstVideoRectangle * dest,
    const guint8 * bgrx, gint stride)
{
  GstVideoRectangle r = *dest;
  gint y;

  if (!gst_spice_rect_clip (&r, dec->width, dec->height))
    return;
  for (y = 0; y < r.h; y++)
    memcpy (canvas_at (dec, r.x, r.y + y), bgrx + (gsize) (r.y - dest->y + y) *
        stride + (gsize) (r.x - dest->x) * 4, (gsize) r.w * 4);
}

const guint8 *
draws_decoder_pixels (DrawsDecoder * dec, gint * stride)
{
  if (stride)
    *stride = dec->stride;
  return dec->canvas;
}

gint
draws_decoder_width (DrawsDecoder * dec)
{
  return dec->width;
}

gint
draws_decoder_height (DrawsDecoder * dec)
{
  return dec->height;
}

const DrawsDecoderStats *
draws_decoder_stats (DrawsDecoder * dec)
{
  return &dec->stats;
}

guint
draws_decoder_last_n_regions (DrawsDecoder * dec)
{
  return dec->last->len;
}

const GstVideoRectangle *
draws_decoder_last_region (DrawsDecoder * dec, guint i, guint * type,
    gboolean * lossy)
{
  LastRegion *lr;

  if (i >= dec->last->len)
    return NULL;
  lr = &g_array_index (dec->last, LastRegion, i);
  if (type)
    *type = lr->type;
  if (lossy)
    *lossy = lr->lossy;
  return &lr->dest;
}

static void
area_or_all (DrawsDecoder * dec, const GstVideoRectangle * area,
    GstVideoRectangle * out)
{
  *out = area ? *area : (GstVideoRectangle) { 0, 0, dec->width, dec->height };
  gst_spice_rect_clip (out, dec->width, dec->height);
}

guint64
draws_decoder_compare (DrawsDecoder * dec, const guint8 * bgrx, gint stride,
    const GstVideoRectangle * area)
{
  GstVideoRectangle a;
  guint64 n = 0;
  gint x, y;

  area_or_all (dec, area, &a);
  for (y = a.y; y < a.y + a.h; y++) {
    const guint8 *c = canvas_at (dec, a.x, y);
    const guint8 *s = bgrx + (gsize) y * stride + (gsize) a.x * 4;

    for (x = 0; x < a.w; x++, c += 4, s += 4)
      n += (c[0] != s[0] || c[1] != s[1] || c[2] != s[2]);
  }
  return n;
}

gdouble
draws_decoder_psnr (DrawsDecoder * dec, const guint8 * bgrx, gint stride,
    const GstVideoRectangle * area)
{
  GstVideoRectangle a;
  gdouble sse = 0;
  gint x, y, k;

  area_or_all (dec, area, &a);
  for (y = a.y; y < a.y + a.h; y++) {
    const guint8 *c = canvas_at (dec, a.x, y);
    const guint8 *s = bgrx + (gsize) y * stride + (gsize) a.x * 4;

    for (x = 0; x < a.w; x++, c += 4, s += 4)
      for (k = 0; k < 3; k++)
        sse += (gdouble) (c[k] - s[k]) * (c[k] - s[k]);
  }
  if (sse == 0 || a.w <= 0 || a.h <= 0)
    return G_MAXDOUBLE;
  return 10.0 * log10 (255.0 * 255.0 * 3.0 * a.w * a.h / sse);
}
