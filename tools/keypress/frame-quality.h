/* gst-spice: picture quality of a shown frame against its source (the
 * latency rig's client, docs/benchmarks.md "Quality").
 *
 * Both pictures are 32-bit BGRx with explicit strides.
 *
 *  - MSE over the R, G and B samples; PSNR = 10 log10 (255^2 / MSE) dB,
 *    infinite when the pictures are equal (MSE 0).
 *  - SSIM on luma (Y = (77 R + 150 G + 29 B) / 256) over 8x8 windows placed
 *    every 4 pixels, C1 = (0.01 * 255)^2, C2 = (0.03 * 255)^2, the mean over
 *    the windows: exactly 1.0 for equal pictures.
 */
#ifndef FRAME_QUALITY_H
#define FRAME_QUALITY_H

#include <glib.h>

G_BEGIN_DECLS

#define FRAME_QUALITY_WINDOW 8
#define FRAME_QUALITY_STEP   4

/* mean squared error over w x h pixels (3 samples each) */
gdouble frame_quality_mse (const guint8 * a, gint a_stride, const guint8 * b,
    gint b_stride, gint w, gint h);

/* PSNR in dB of an MSE (INFINITY for 0) */
gdouble frame_quality_psnr (gdouble mse);

/* mean SSIM over w x h pixels; NAN when smaller than one window */
gdouble frame_quality_ssim (const guint8 * a, gint a_stride, const guint8 * b,
    gint b_stride, gint w, gint h);

G_END_DECLS

#endif /* FRAME_QUALITY_H */
