/* gst-spice tests: reference decoder for application/x-spice-draws
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <string.h>
#include <math.h>

#include <gst/spice/gstspice.h>

#include "draws-decoder.h"
#include "ppm.h"

typedef struct {
  GstVideoRectangle dest;
  guint type;
  gboolean lossy;
} LastRegion;

struct _DrawsDecoder {
  gint width, height, stride;
  guint8 *canvas;
  GstSpiceImageDecoder *images;
  DrawsDecoderStats stats;
  GArray *last;                 /* LastRegion */
};

DrawsDecoder *
draws_decoder_new (gint width, gint height)
{
  DrawsDecoder *dec = g_new0 (DrawsDecoder, 1);

  dec->images = gst_spice_image_decoder_new ();
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
  gst_spice_image_decoder_free (dec->images);
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

/* sets *error (a GST_STREAM_ERROR_DECODE) and is FALSE */
#define FAIL(...) (g_set_error (error, GST_STREAM_ERROR, \
        GST_STREAM_ERROR_DECODE, __VA_ARGS__), FALSE)

static guint8 *
canvas_at (DrawsDecoder * dec, gint x, gint y)
{
  return dec->canvas + (gsize) y * dec->stride + (gsize) x * 4;
}

/* BITMAP, LZ4 and JPEG: the library's image decoder paints the region */
static gboolean
apply_image (DrawsDecoder * dec, const GstSpiceDraw * d, GError ** error)
{
  return gst_spice_image_decoder_decode (dec->images, d->type, d->dest.w,
      d->dest.h, d->payload, d->payload_size, canvas_at (dec, d->dest.x,
          d->dest.y), dec->stride, error);
}

static gboolean
apply_copy_bits (DrawsDecoder * dec, const GstSpiceDraw * d, GError ** error)
{
  gint sx, sy;

  if (!gst_spice_payload_validate (d->type, d->dest.w, d->dest.h, d->payload,
          d->payload_size))
    return FAIL ("bad COPY_BITS payload");
  if (!gst_spice_copy_bits_payload_parse (d->payload, &d->dest, dec->width,
          dec->height, &sx, &sy))
    return FAIL ("COPY_BITS source %d,%d %dx%d outside %dx%d", sx, sy,
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
    return FAIL ("not a draws buffer");
  dec->stats.updates++;
  if (r.flags & GST_SPICE_DRAWS_FLAG_REFRESH)
    dec->stats.refreshes++;
  while (ok && gst_spice_draws_reader_next (&r, &d)) {
    LastRegion lr = { d.dest, d.type, (d.flags & GST_SPICE_DRAW_FLAG_LOSSY) };

    if (d.dest.x + d.dest.w > dec->width || d.dest.y + d.dest.h > dec->height) {
      ok = FAIL ("region %d,%d %dx%d outside %dx%d", d.dest.x, d.dest.y,
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
        ok = apply_image (dec, &d, error);
        break;
      case GST_SPICE_IMAGE_LZ4:
        dec->stats.regions_lz4++;
        dec->stats.bytes_lz4 += d.payload_size;
        ok = apply_image (dec, &d, error);
        break;
      case GST_SPICE_IMAGE_JPEG:
        dec->stats.regions_jpeg++;
        dec->stats.bytes_jpeg += d.payload_size;
        if (!lr.lossy)
          ok = FAIL ("JPEG region not flagged lossy");
        else
          ok = apply_image (dec, &d, error);
        break;
      case GST_SPICE_IMAGE_COPY_BITS:
        dec->stats.regions_copy++;
        if (lr.lossy)
          ok = FAIL ("COPY_BITS region flagged lossy");
        else
          ok = apply_copy_bits (dec, &d, error);
        break;
      default:
        ok = FAIL ("unknown image type %d", d.type);
        break;
    }
    g_array_append_val (dec->last, lr);
  }
  if (ok && r.error)
    ok = FAIL ("malformed update");
  if (ok && r.index != r.n_regions)
    ok = FAIL ("update ended after %u of %u regions", r.index,
        r.n_regions);
  gst_spice_draws_reader_clear (&r);
  return ok;
}

void
draws_decoder_apply_pixels (DrawsDecoder * dec, const GstVideoRectangle * dest,
    const guint8 * bgrx, gint stride)
{
  GstVideoRectangle r = *dest;

  if (!gst_spice_rect_clip (&r, dec->width, dec->height))
    return;
  gst_spice_blit_bgrx (dec->canvas, dec->stride, r.x, r.y, bgrx, stride,
      r.x - dest->x, r.y - dest->y, r.w, r.h);
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

  area_or_all (dec, area, &a);
  if (a.w <= 0 || a.h <= 0)
    return 0;
  return test_bgrx_count_diff (canvas_at (dec, a.x, a.y), dec->stride,
      bgrx + (gsize) a.y * stride + (gsize) a.x * 4, stride, a.w, a.h, NULL,
      NULL);
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
