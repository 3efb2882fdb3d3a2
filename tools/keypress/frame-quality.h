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

#include "guest-render.h"

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

/* The test guest's picture as a reference for the frames a client showed
 * of one activity (guest --frame-stamp, --picture-seed): the rectangles
 * compared (guest_render_quality_rects), where the stamp is, and the
 * guest's render of a frame number to compare with. */
typedef struct
{
  GuestActivity kind;
  guint32 seed;
  gint w, h;                    /* the surface */
  GuestRect stamp, picture, text;       /* surface coordinates */
  GuestRect region;             /* picture, text and stamp together */
  GuestRect area;               /* the activity area */
  guint8 *ref;                  /* w x h BGRx, stride w * 4 */
} FrameQualityRef;

typedef struct
{
  gdouble mse, ssim;            /* over the picture */
  gdouble text_mse, text_ssim;  /* over the text strip (NAN: none) */
} FrameQualityScore;

/* FALSE when the activity has no stamp or picture on a w x h surface */
gboolean frame_quality_ref_init (FrameQualityRef * r, GuestActivity kind,
    guint32 seed, gint w, gint h);
void frame_quality_ref_clear (FrameQualityRef * r);

/* @shown holds the surface rectangle @at (which contains the picture and
 * the text strip), BGRx with @stride: scored as the guest's frame @n */
void frame_quality_ref_score (FrameQualityRef * r, guint n,
    const guint8 * shown, gint stride, const GuestRect * at,
    FrameQualityScore * out);

G_END_DECLS

#endif /* FRAME_QUALITY_H */
