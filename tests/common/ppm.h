/* gst-spice tests: binary PPM (P6, maxval 255) reader and writer.
 *
 * In memory the pixels are 32-bit BGRx (byte 0 blue, 1 green, 2 red,
 * 3 = 0xff), the layout of SPICE_SURFACE_FMT_32_xRGB and of the guest_render
 * library, so a PPM from spicy-screenshot or the test guest's `dump` compares
 * with memcmp() against a rendered frame.
 */
#ifndef TEST_PPM_H
#define TEST_PPM_H

#include <glib.h>

G_BEGIN_DECLS

/* Reads a P6 file; *bgrx is g_malloc'd, stride = w * 4, x byte = 0xff.
 * Comments (#...) in the header are accepted. */
gboolean test_ppm_read (const gchar * path, guint8 ** bgrx, gint * w,
    gint * h, GError ** error);

/* Writes bgrx (stride in bytes) as P6; the x byte is ignored. */
gboolean test_ppm_write (const gchar * path, const guint8 * bgrx, gint w,
    gint h, gint stride, GError ** error);

/* Number of pixels whose R, G or B differ (x ignored); both w x h with the
 * given strides. If first_x/first_y are not NULL they receive the first
 * differing pixel (or -1). */
guint64 test_bgrx_count_diff (const guint8 * a, gint a_stride,
    const guint8 * b, gint b_stride, gint w, gint h, gint * first_x,
    gint * first_y);

G_END_DECLS

#endif /* TEST_PPM_H */
