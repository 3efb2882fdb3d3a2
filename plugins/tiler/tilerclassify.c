/* spicetiler: content classification (synthetic vs photographic)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Text, UI and synthetic drawings are made of runs of identical pixels:
 * most pixels equal their left or upper neighbour. Photographs, video,
 * smooth gradients with noise and plain noise almost never repeat a pixel
 * exactly. The classifier samples every other row of a block (a 16x16
 * cell) and counts pixels equal (ignoring the x byte) to the left or the
 * upper neighbour; below TILER_PHOTO_EQUAL_PERCENT the block is
 * photographic. Natural content with repeats (smooth gradients,
 * quantised textures) is seen by its small steps: the samples equal to
 * neither neighbour but within TILER_SMOOTH_STEP of one of them; at least
 * TILER_PHOTO_SMOOTH_PERCENT of them is photographic as well (LZ4 gains
 * little on such cells, JPEG a lot). Unlike spice-server's graduality
 * score this also calls noise photographic, which is what it should be
 * sent as: LZ4 does not compress it, JPEG does.
 */
#include "tilerclassify.h"

/* whether every channel of @a and @b differs by at most TILER_SMOOTH_STEP */
static inline gboolean
small_step (guint32 a, guint32 b)
{
  gint k;

  for (k = 0; k < 24; k += 8) {
    gint d = (gint) ((a >> k) & 0xff) - (gint) ((b >> k) & 0xff);

    if (d > TILER_SMOOTH_STEP || d < -TILER_SMOOTH_STEP)
      return FALSE;
  }
  return TRUE;
}

gboolean
tiler_classify_is_photo (const guint8 * bgrx, gint stride, gint w, gint h)
{
  guint64 equal = 0, smooth = 0, seen = 0, total;
  gint x, y;

  if (w < 4 || h < 4)
    return FALSE;
  total = (guint64) (h / 2) * (w - 1);
  for (y = 1; y < h; y += 2) {
    const guint32 *row = (const guint32 *) (bgrx + (gsize) y * stride);
    const guint32 *up = (const guint32 *) (bgrx + (gsize) (y - 1) * stride);
    guint64 left;

    for (x = 1; x < w; x++) {
      guint32 p = row[x] & 0xffffff, l = row[x - 1] & 0xffffff;
      guint32 u = up[x] & 0xffffff;

      if (p == l || p == u)
        equal++;
      else if (small_step (p, l) || small_step (p, u))
        smooth++;
    }
    seen += w - 1;
    /* the counts only grow: stop once the rest cannot change the answer */
    left = total - seen;
    if (smooth * 100 >= total * TILER_PHOTO_SMOOTH_PERCENT ||
        (equal + left) * 100 < total * TILER_PHOTO_EQUAL_PERCENT)
      return TRUE;
    if (equal * 100 >= total * TILER_PHOTO_EQUAL_PERCENT &&
        (smooth + left) * 100 < total * TILER_PHOTO_SMOOTH_PERCENT)
      return FALSE;
  }
  return equal * 100 < total * TILER_PHOTO_EQUAL_PERCENT ||
      smooth * 100 >= total * TILER_PHOTO_SMOOTH_PERCENT;
}
