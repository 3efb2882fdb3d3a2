/* spicetiler: finding content that moved up or down (scrolling)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A terminal or a browser that scrolls redraws a whole area whose rows the
 * client already has, a few rows higher or lower. Sending it again costs
 * the area's size in every update; one COPY_BITS plus the rows that came
 * into view costs a few hundred bytes.
 *
 * The search is cheap enough to run on every large damaged area, also on
 * video and noise where it finds nothing: each row of the frame and of
 * the shadow gets a hash of three strips of TILER_SCROLL_STRIP pixels (at
 * the left, in the middle and at the right of the area: text is often
 * blank somewhere); every changed frame row whose strips appear at most
 * TILER_SCROLL_MAX_SAME times in the shadow votes for the shifts between
 * them (blank rows, everywhere, do not vote). Only the winning shift is
 * checked on whole rows (memcmp), and the longest run of rows that match
 * under it is the copy. After a copy the shadow's hashes move with its
 * rows, and the next search finds the next band: an area whose parts
 * moved by different amounts (the lower rows of an update cut by the
 * budget lag behind) is several copies.
 */
#include <string.h>

#include "tilerscroll.h"

#define TILER_SCROLL_STRIP 32
/* rows of the shadow with the same strips a frame row may vote for */
#define TILER_SCROLL_MAX_SAME 4
/* shifts need this many votes (unique strips agreeing) to be checked */
#define TILER_SCROLL_MIN_VOTES 3

#define ROW(base, stride, y) ((const guint8 *) (base) + (gsize) (y) * (stride))

void
tiler_scroll_init (TilerScroll * s)
{
  memset (s, 0, sizeof (*s));
}

void
tiler_scroll_clear (TilerScroll * s)
{
  g_free (s->fh);
  g_free (s->sh);
  g_free (s->sorted);
  g_free (s->votes);
  tiler_scroll_init (s);
}

static void
ensure_rows (TilerScroll * s, gint rows)
{
  if (rows <= s->rows)
    return;
  s->rows = rows;
  s->fh = g_renew (guint64, s->fh, rows);
  s->sh = g_renew (guint64, s->sh, rows);
  s->sorted = g_renew (TilerScrollKey, s->sorted, rows);
  s->votes = g_renew (guint32, s->votes, 2 * (gsize) rows);
}

/* FNV-1a-like over pairs of pixels of the three strips of @n (even)
 * pixels at @at, folded */
static inline guint64
strips_hash (const guint8 * row, const gsize at[3], gint n)
{
  guint64 h = G_GUINT64_CONSTANT (0xcbf29ce484222325), v;
  gint i, x;

  for (i = 0; i < 3; i++)
    for (x = 0; x < n; x += 2) {
      memcpy (&v, row + at[i] + (gsize) x * 4, 8);
      h = (h ^ v) * G_GUINT64_CONSTANT (0x100000001b3);
    }
  return h ^ (h >> 29);
}

static gint
compare_key (gconstpointer a, gconstpointer b)
{
  const TilerScrollKey *ka = a, *kb = b;

  if (ka->hash != kb->hash)
    return ka->hash < kb->hash ? -1 : 1;
  return ka->row - kb->row;
}

/* the first of the sorted shadow rows with @hash, and how many there are */
static gint
find_rows (const TilerScroll * s, gint n, guint64 hash, gint * count)
{
  gint lo = 0, hi = n, end;

  while (lo < hi) {
    gint mid = lo + (hi - lo) / 2;

    if (s->sorted[mid].hash < hash)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (end = lo; end < n && s->sorted[end].hash == hash; end++);
  *count = end - lo;
  return lo;
}

gboolean
tiler_scroll_begin (TilerScroll * s, const guint8 * frame, gint fstride,
    const guint8 * shadow, gint sstride, const GstVideoRectangle * area)
{
  gint h = area->h, sw = MIN (area->w / 3, TILER_SCROLL_STRIP) & ~1, y;
  gsize at[3] = { (gsize) area->x * 4,
    (gsize) (area->x + (area->w - sw) / 2) * 4,
    (gsize) (area->x + area->w - sw) * 4
  };

  if (area->w < TILER_SCROLL_MIN_WIDTH || h < TILER_SCROLL_MIN_AREA_ROWS)
    return FALSE;
  ensure_rows (s, h);
  s->frame = frame;
  s->shadow = shadow;
  s->fstride = fstride;
  s->sstride = sstride;
  s->area = *area;
  for (y = 0; y < h; y++) {
    s->fh[y] = strips_hash (ROW (frame, fstride, area->y + y), at, sw);
    s->sh[y] = strips_hash (ROW (shadow, sstride, area->y + y), at, sw);
  }
  return TRUE;
}

/* the shift most changed rows vote for, or FALSE */
static gboolean
vote (TilerScroll * s, gint * shift)
{
  gint h = s->area.h, y;
  guint32 best_votes = 0;
  guint changed = 0;

  for (y = 0; y < h; y++) {
    s->sorted[y].hash = s->sh[y];
    s->sorted[y].row = y;
    changed += s->fh[y] != s->sh[y];
  }
  if (changed < TILER_SCROLL_MIN_ROWS / 2)
    return FALSE;
  qsort (s->sorted, h, sizeof (TilerScrollKey), compare_key);

  /* frame row y shows what the shadow has at y + shift */
  memset (s->votes, 0, 2 * (gsize) h * sizeof (guint32));
  for (y = 0; y < h; y++) {
    gint first, count, k;

    if (s->fh[y] == s->sh[y])
      continue;
    first = find_rows (s, h, s->fh[y], &count);
    if (count > TILER_SCROLL_MAX_SAME)
      continue;
    for (k = first; k < first + count; k++) {
      gint sy = s->sorted[k].row;

      if (sy != y && ++s->votes[sy - y + h] > best_votes) {
        best_votes = s->votes[sy - y + h];
        *shift = sy - y;
      }
    }
  }
  return best_votes >= TILER_SCROLL_MIN_VOTES;
}

gboolean
tiler_scroll_next (TilerScroll * s, GstVideoRectangle * dest, gint * src_y)
{
  const GstVideoRectangle *a = &s->area;
  gsize row_bytes = (gsize) a->w * 4, ax = (gsize) a->x * 4;
  gint h = a->h, y, shift = 0, run0 = 0, run = 0, best0 = 0, best_run = 0;
  guint best_changed = 0, run_changed = 0;

  if (!vote (s, &shift))
    return FALSE;
  /* the longest run of whole rows that match under the winning shift */
  for (y = MAX (0, -shift); y <= MIN (h, h - shift); y++) {
    gboolean match = y < MIN (h, h - shift) &&
        s->fh[y] == s->sh[y + shift] &&
        memcmp (ROW (s->frame, s->fstride, a->y + y) + ax,
        ROW (s->shadow, s->sstride, a->y + y + shift) + ax, row_bytes) == 0;

    if (match) {
      if (run == 0) {
        run0 = y;
        run_changed = 0;
      }
      run++;
      run_changed += s->fh[y] != s->sh[y];
      continue;
    }
    if (run > best_run) {
      best_run = run;
      best0 = run0;
      best_changed = run_changed;
    }
    run = 0;
  }
  if (best_run < TILER_SCROLL_MIN_ROWS ||
      best_changed < TILER_SCROLL_MIN_ROWS / 2)
    return FALSE;
  dest->x = a->x;
  dest->y = a->y + best0;
  dest->w = a->w;
  dest->h = best_run;
  *src_y = dest->y + shift;
  return TRUE;
}

/* the shadow's rows of @dest now hold what its source rows held */
void
tiler_scroll_moved (TilerScroll * s, const GstVideoRectangle * dest, gint src_y)
{
  memmove (s->sh + (dest->y - s->area.y), s->sh + (src_y - s->area.y),
      (gsize) dest->h * sizeof (guint64));
}
