/* gst-spice tests: binary PPM reader and writer. See ppm.h. */
#include "ppm.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define PPM_ERROR (g_quark_from_static_string ("test-ppm-error"))

/* next header token: skips whitespace and comments */
static gboolean
read_token (const guint8 * data, gsize len, gsize * pos, guint64 * value)
{
  guint64 v = 0;
  gboolean any = FALSE;

  while (*pos < len) {
    guint8 c = data[*pos];
    if (c == '#') {
      while (*pos < len && data[*pos] != '\n')
        (*pos)++;
    } else if (g_ascii_isspace (c)) {
      (*pos)++;
    } else {
      break;
    }
  }
  while (*pos < len && g_ascii_isdigit (data[*pos])) {
    v = v * 10 + (data[*pos] - '0');
    if (v > G_MAXINT32)
      return FALSE;
    (*pos)++;
    any = TRUE;
  }
  *value = v;
  return any;
}

gboolean
test_ppm_read (const gchar * path, guint8 ** bgrx, gint * w, gint * h,
    GError ** error)
{
  gchar *contents = NULL;
  gsize len = 0, pos = 2;
  guint64 width, height, maxval;
  const guint8 *d;
  guint8 *out;
  gsize i, n;

  if (!g_file_get_contents (path, &contents, &len, error))
    return FALSE;
  d = (const guint8 *) contents;
  if (len < 2 || d[0] != 'P' || d[1] != '6' ||
      !read_token (d, len, &pos, &width) ||
      !read_token (d, len, &pos, &height) ||
      !read_token (d, len, &pos, &maxval) || maxval != 255 ||
      width == 0 || height == 0 || pos >= len ||
      !g_ascii_isspace (d[pos])) {
    g_set_error (error, PPM_ERROR, 1, "%s: not a binary 8-bit PPM (P6)", path);
    g_free (contents);
    return FALSE;
  }
  pos++;                        /* the single whitespace after maxval */
  n = (gsize) width * height;
  if (len - pos < n * 3) {
    g_set_error (error, PPM_ERROR, 2, "%s: truncated: %" G_GSIZE_FORMAT
        " of %" G_GSIZE_FORMAT " pixel bytes", path, len - pos, n * 3);
    g_free (contents);
    return FALSE;
  }
  out = g_malloc (n * 4);
  for (i = 0; i < n; i++) {
    out[i * 4 + 0] = d[pos + i * 3 + 2];
    out[i * 4 + 1] = d[pos + i * 3 + 1];
    out[i * 4 + 2] = d[pos + i * 3 + 0];
    out[i * 4 + 3] = 0xff;
  }
  g_free (contents);
  *bgrx = out;
  *w = (gint) width;
  *h = (gint) height;
  return TRUE;
}

gboolean
test_ppm_write (const gchar * path, const guint8 * bgrx, gint w, gint h,
    gint stride, GError ** error)
{
  GString *s = g_string_sized_new ((gsize) w * h * 3 + 32);
  gboolean ok;
  gint x, y;

  g_string_append_printf (s, "P6\n%d %d\n255\n", w, h);
  for (y = 0; y < h; y++) {
    const guint8 *p = bgrx + (gsize) y * stride;
    for (x = 0; x < w; x++) {
      g_string_append_c (s, (gchar) p[x * 4 + 2]);
      g_string_append_c (s, (gchar) p[x * 4 + 1]);
      g_string_append_c (s, (gchar) p[x * 4 + 0]);
    }
  }
  ok = g_file_set_contents (path, s->str, (gssize) s->len, error);
  g_string_free (s, TRUE);
  return ok;
}

guint64
test_bgrx_count_diff (const guint8 * a, gint a_stride, const guint8 * b,
    gint b_stride, gint w, gint h, gint * first_x, gint * first_y)
{
  guint64 n = 0;
  gint x, y;

  if (first_x)
    *first_x = -1;
  if (first_y)
    *first_y = -1;
  for (y = 0; y < h; y++) {
    const guint8 *pa = a + (gsize) y * a_stride;
    const guint8 *pb = b + (gsize) y * b_stride;
    for (x = 0; x < w; x++) {
      if (pa[x * 4] != pb[x * 4] || pa[x * 4 + 1] != pb[x * 4 + 1] ||
          pa[x * 4 + 2] != pb[x * 4 + 2]) {
        if (n == 0 && first_x)
          *first_x = x;
        if (n == 0 && first_y)
          *first_y = y;
        n++;
      }
    }
  }
  return n;
}
