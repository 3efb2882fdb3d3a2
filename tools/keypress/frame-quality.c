/* gst-spice: picture quality of a shown frame against its source. See
 * frame-quality.h. */
#include "frame-quality.h"

#include <math.h>

gdouble
frame_quality_mse (const guint8 * a, gint a_stride, const guint8 * b,
    gint b_stride, gint w, gint h)
{
  guint64 sum = 0;
  gint x, y;

  if (w <= 0 || h <= 0)
    return NAN;
  for (y = 0; y < h; y++) {
    const guint8 *p = a + (gsize) y * a_stride, *q = b + (gsize) y *b_stride;
    for (x = 0; x < w; x++, p += 4, q += 4) {
      gint d0 = p[0] - q[0], d1 = p[1] - q[1], d2 = p[2] - q[2];
      sum += (guint64) (d0 * d0 + d1 * d1 + d2 * d2);
    }
  }
  return (gdouble) sum / ((gdouble) w * h * 3);
}

gdouble
frame_quality_psnr (gdouble mse)
{
  if (isnan (mse))
    return NAN;
  if (mse <= 0)
    return INFINITY;
  return 10.0 * log10 (255.0 * 255.0 / mse);
}

static guint8 *
luma_plane (const guint8 * src, gint stride, gint w, gint h)
{
  guint8 *y8 = g_malloc ((gsize) w * h);
  gint x, y;

  for (y = 0; y < h; y++) {
    const guint8 *p = src + (gsize) y * stride;
    guint8 *o = y8 + (gsize) y * w;
    for (x = 0; x < w; x++, p += 4)
      o[x] = (guint8) ((77 * p[2] + 150 * p[1] + 29 * p[0]) >> 8);
  }
  return y8;
}

gdouble
frame_quality_ssim (const guint8 * a, gint a_stride, const guint8 * b,
    gint b_stride, gint w, gint h)
{
  const gdouble c1 = (0.01 * 255) * (0.01 * 255);
  const gdouble c2 = (0.03 * 255) * (0.03 * 255);
  const gint n = FRAME_QUALITY_WINDOW * FRAME_QUALITY_WINDOW;
  guint8 *ya, *yb;
  gdouble total = 0;
  guint windows = 0;
  gint wx, wy, x, y;

  if (w < FRAME_QUALITY_WINDOW || h < FRAME_QUALITY_WINDOW)
    return NAN;
  ya = luma_plane (a, a_stride, w, h);
  yb = luma_plane (b, b_stride, w, h);
  for (wy = 0; wy + FRAME_QUALITY_WINDOW <= h; wy += FRAME_QUALITY_STEP) {
    for (wx = 0; wx + FRAME_QUALITY_WINDOW <= w; wx += FRAME_QUALITY_STEP) {
      guint64 sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
      gdouble ma, mb, va, vb, cov;

      for (y = wy; y < wy + FRAME_QUALITY_WINDOW; y++) {
        const guint8 *p = ya + (gsize) y * w + wx, *q = yb + (gsize) y *w + wx;
        for (x = 0; x < FRAME_QUALITY_WINDOW; x++) {
          sa += p[x];
          sb += q[x];
          saa += (guint) p[x] * p[x];
          sbb += (guint) q[x] * q[x];
          sab += (guint) p[x] * q[x];
        }
      }
      /* integer sums: equal windows give bit-identical terms (SSIM 1.0) */
      ma = (gdouble) sa / n;
      mb = (gdouble) sb / n;
      va = ((gdouble) saa * n - (gdouble) sa * sa) / ((gdouble) n * n);
      vb = ((gdouble) sbb * n - (gdouble) sb * sb) / ((gdouble) n * n);
      cov = ((gdouble) sab * n - (gdouble) sa * sb) / ((gdouble) n * n);
      total += ((2 * ma * mb + c1) * (2 * cov + c2)) /
          ((ma * ma + mb * mb + c1) * (va + vb + c2));
      windows++;
    }
  }
  g_free (ya);
  g_free (yb);
  return total / windows;
}
