/* gst-spice: picture quality of a shown frame against its source. See
 * frame-quality.h. */
#include "frame-quality.h"

#include <math.h>
#include <string.h>

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

static void
rect_union (GuestRect * acc, const GuestRect * r)
{
  gint x1, y1;

  if (r->width <= 0 || r->height <= 0)
    return;
  if (acc->width <= 0 || acc->height <= 0) {
    *acc = *r;
    return;
  }
  x1 = MAX (acc->x + acc->width, r->x + r->width);
  y1 = MAX (acc->y + acc->height, r->y + r->height);
  acc->x = MIN (acc->x, r->x);
  acc->y = MIN (acc->y, r->y);
  acc->width = x1 - acc->x;
  acc->height = y1 - acc->y;
}

gboolean
frame_quality_ref_init (FrameQualityRef * r, GuestActivity kind,
    guint32 seed, gint w, gint h)
{
  memset (r, 0, sizeof (*r));
  r->kind = kind;
  r->seed = seed;
  r->w = w;
  r->h = h;
  if (!guest_render_stamp_rect (kind, w, h, &r->stamp) ||
      !guest_render_quality_rects (kind, w, h, &r->picture, &r->text) ||
      !guest_render_activity_rect (w, h, &r->area))
    return FALSE;
  r->region = r->stamp;
  rect_union (&r->region, &r->picture);
  rect_union (&r->region, &r->text);
  r->ref = g_malloc ((gsize) w * h * 4);
  guest_render_background (r->ref, w, h, w * 4, seed);
  return TRUE;
}

void
frame_quality_ref_clear (FrameQualityRef * r)
{
  g_clear_pointer (&r->ref, g_free);
}

/* MSE and SSIM of the surface rectangle @rect of @shown (which holds @at)
 * against the reference */
static void
score_rect (const FrameQualityRef * r, const guint8 * shown, gint stride,
    const GuestRect * at, const GuestRect * rect, gdouble * mse, gdouble * ssim)
{
  gint w4 = r->w * 4;
  const guint8 *mp = shown + (gsize) (rect->y - at->y) * stride +
      (gsize) (rect->x - at->x) * 4;
  const guint8 *rp = r->ref + (gsize) rect->y * w4 + (gsize) rect->x * 4;

  *mse = frame_quality_mse (mp, stride, rp, w4, rect->width, rect->height);
  *ssim = frame_quality_ssim (mp, stride, rp, w4, rect->width, rect->height);
}

void
frame_quality_ref_score (FrameQualityRef * r, guint n, const guint8 * shown,
    gint stride, const GuestRect * at, FrameQualityScore * out)
{
  gint w4 = r->w * 4;

  guest_render_activity (r->kind, r->seed, n, r->ref +
      (gsize) r->area.y * w4 + (gsize) r->area.x * 4, r->area.width,
      r->area.height, w4);
  score_rect (r, shown, stride, at, &r->picture, &out->mse, &out->ssim);
  out->text_mse = out->text_ssim = NAN;
  if (r->text.width > 0)
    score_rect (r, shown, stride, at, &r->text, &out->text_mse,
        &out->text_ssim);
}
