/* gst-spice: pixel model of the SPICE test guest. See guest-render.h.
 *
 * Only integer arithmetic after a one-time table set-up, so that every
 * build on this machine computes bit-identical pictures.
 */
#include "guest-render.h"

#include <math.h>
#include <string.h>

#define SINE_SIZE 1024
#define SINE_MASK (SINE_SIZE - 1)
#define N_GLYPHS  128

static guint8 sine_table[SINE_SIZE];    /* 0..255, one period */
static guint8 glyph_rows[N_GLYPHS][GUEST_CELL_HEIGHT];  /* bit x = column x */

static const gchar *const activity_names[GUEST_ACTIVITY_N] = {
  "idle", "busy", "heavy", "text", "video"
};

/* 32-bit integer finaliser (xor-shift-multiply); good avalanche */
static inline guint32
mix32 (guint32 x)
{
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

static inline guint32
xorshift32 (guint32 * state)
{
  guint32 x = *state;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  *state = x;
  return x;
}

static void
hline (guint8 * rows, gint y, gint x0, gint x1)
{
  gint x;
  for (x = x0; x <= x1; x++)
    rows[y] |= 1 << x;
}

static void
vline (guint8 * rows, gint x, gint y0, gint y1)
{
  gint y;
  for (y = y0; y <= y1; y++)
    rows[y] |= 1 << x;
}

/* A letter-like shape made of a few strokes inside an 8x16 cell: columns
 * 1..6, x-height rows 6..13, ascenders from row 3, descenders to row 15. */
static void
make_glyph (guint g, guint8 * rows)
{
  guint32 h = mix32 (g * 0x9e3779b9U + 0x51);
  gboolean tall = (g & 1) != 0;
  gboolean desc = !tall && (g & 6) == 6;
  gint top = tall ? 3 : 6;
  gint n = 0, i;

  memset (rows, 0, GUEST_CELL_HEIGHT);
  if (h & 0x01) {               /* left stem */
    vline (rows, 1, top, 13);
    n++;
  }
  if (h & 0x02) {               /* right stem, x-height only */
    vline (rows, 6, 6, desc ? 15 : 13);
    if (desc)
      hline (rows, 15, 2, 5);
    n++;
  }
  if (h & 0x04) {               /* top bar */
    hline (rows, top, 2, 5);
    n++;
  }
  if (h & 0x08) {               /* middle bar */
    hline (rows, 9, 1, 6);
    n++;
  }
  if (h & 0x10) {               /* bottom bar */
    hline (rows, 13, 2, 5);
    n++;
  }
  if ((h & 0x20) && n < 3) {    /* centre stem */
    vline (rows, 3, top, 13);
    n++;
  }
  if ((h & 0x40) || n < 2) {    /* diagonal */
    for (i = 0; i <= 13 - top; i++)
      rows[top + i] |= 1 << (1 + (i * 5) / (13 - top));
    n++;
  }
  if (n < 2)
    hline (rows, 9, 1, 6);
}

static gpointer
init_tables (gpointer unused)
{
  guint i;

  for (i = 0; i < SINE_SIZE; i++) {
    double v = 127.5 + 127.5 * sin (2.0 * G_PI * i / SINE_SIZE);
    gint iv = (gint) floor (v + 0.5);
    sine_table[i] = (guint8) CLAMP (iv, 0, 255);
  }
  for (i = 0; i < N_GLYPHS; i++)
    make_glyph (i, glyph_rows[i]);
  return NULL;
}

static void
ensure_tables (void)
{
  static GOnce once = G_ONCE_INIT;
  g_once (&once, init_tables, NULL);
}

#define S(i) (sine_table[(i) & SINE_MASK])

const gchar *
guest_activity_to_string (GuestActivity kind)
{
  if ((guint) kind >= GUEST_ACTIVITY_N)
    return "unknown";
  return activity_names[kind];
}

gboolean
guest_activity_from_string (const gchar * name, GuestActivity * kind)
{
  guint i;

  if (name == NULL)
    return FALSE;
  for (i = 0; i < GUEST_ACTIVITY_N; i++) {
    if (g_ascii_strcasecmp (name, activity_names[i]) == 0) {
      if (kind)
        *kind = (GuestActivity) i;
      return TRUE;
    }
  }
  return FALSE;
}

guint32
guest_pixel (guint32 rgb)
{
  /* little-endian guint32 0xffRRGGBB == bytes B, G, R, 0xff */
  return GUINT32_TO_LE (0xff000000U | (rgb & 0xffffffU));
}

static inline void
put_rgb (guint8 * p, guint r, guint g, guint b)
{
  p[0] = (guint8) b;
  p[1] = (guint8) g;
  p[2] = (guint8) r;
  p[3] = 0xff;
}

static void
fill_rect (guint8 * bgrx, gint stride, const GuestRect * r, guint32 rgb)
{
  guint32 px = guest_pixel (rgb);
  gint x, y;

  for (y = r->y; y < r->y + r->height; y++) {
    guint32 *row = (guint32 *) (bgrx + (gsize) y * stride) + r->x;
    for (x = 0; x < r->width; x++)
      row[x] = px;
  }
}

static gboolean
intersect (const GuestRect * a, const GuestRect * b, GuestRect * out)
{
  gint x0 = MAX (a->x, b->x), y0 = MAX (a->y, b->y);
  gint x1 = MIN (a->x + a->width, b->x + b->width);
  gint y1 = MIN (a->y + a->height, b->y + b->height);

  if (x1 <= x0 || y1 <= y0) {
    out->x = out->y = out->width = out->height = 0;
    return FALSE;
  }
  out->x = x0;
  out->y = y0;
  out->width = x1 - x0;
  out->height = y1 - y0;
  return TRUE;
}

gboolean
guest_render_key_box_rect (gint w, gint h, GuestRect * rect)
{
  GuestRect box = { GUEST_KEY_BOX_X, GUEST_KEY_BOX_Y,
    GUEST_KEY_BOX_SIZE, GUEST_KEY_BOX_SIZE
  };
  GuestRect surf = { 0, 0, w, h };

  return intersect (&box, &surf, rect);
}

gboolean
guest_render_activity_rect (gint w, gint h, GuestRect * rect)
{
  gint aw = CLAMP (w - 256, 0, GUEST_ACTIVITY_MAX_WIDTH);
  gint ah = CLAMP (h - 32, 0, GUEST_ACTIVITY_MAX_HEIGHT);

  rect->width = aw;
  rect->height = ah;
  rect->x = w - aw - GUEST_ACTIVITY_MARGIN;
  rect->y = (h - ah) / 2;
  if (aw <= 0 || ah <= 0) {
    rect->x = rect->y = rect->width = rect->height = 0;
    return FALSE;
  }
  return TRUE;
}

static inline guint32
cell_hash (guint32 seed, guint cx, guint cy)
{
  return mix32 (mix32 (seed ^ 0x9e3779b9U) ^ (cx * 0x85ebca6bU) ^
      (cy * 0xc2b2ae35U + 0x27d4eb2fU));
}

void
guest_render_background_rect (guint8 * bgrx, gint stride, guint32 seed,
    const GuestRect * rect)
{
  guint32 bg = guest_pixel (GUEST_COLOR_BACKGROUND);
  guint32 fg = guest_pixel (GUEST_COLOR_GLYPH);
  gint x, y;
  gint cx0, cx1, ncells;
  gint16 *glyph_of_cell;

  if (rect->width <= 0 || rect->height <= 0)
    return;
  ensure_tables ();

  cx0 = rect->x / GUEST_CELL_WIDTH;
  cx1 = (rect->x + rect->width - 1) / GUEST_CELL_WIDTH;
  ncells = cx1 - cx0 + 1;
  glyph_of_cell = g_new (gint16, ncells);

  for (y = rect->y; y < rect->y + rect->height; y++) {
    guint32 *row = (guint32 *) (bgrx + (gsize) y * stride);
    gint cy = y / GUEST_CELL_HEIGHT, gy = y % GUEST_CELL_HEIGHT;
    gint c;

    if (y == rect->y || gy == 0) {
      for (c = 0; c < ncells; c++) {
        guint32 hh = cell_hash (seed, (guint) (cx0 + c), (guint) cy);
        glyph_of_cell[c] = (hh % 5 == 0) ? -1 : (gint16) ((hh >> 8) % N_GLYPHS);
      }
    }
    for (x = rect->x; x < rect->x + rect->width; x++) {
      gint g = glyph_of_cell[x / GUEST_CELL_WIDTH - cx0];
      gboolean on = g >= 0 && (glyph_rows[g][gy] >> (x % GUEST_CELL_WIDTH)) & 1;
      row[x] = on ? fg : bg;
    }
  }
  g_free (glyph_of_cell);
}

void
guest_render_background (guint8 * bgrx, gint w, gint h, gint stride,
    guint32 seed)
{
  GuestRect r = { 0, 0, w, h };
  guest_render_background_rect (bgrx, stride, seed, &r);
}

void
guest_render_key_box (guint8 * bgrx, gint w, gint h, gint stride,
    gboolean toggled)
{
  GuestRect r;

  if (guest_render_key_box_rect (w, h, &r))
    fill_rect (bgrx, stride, &r, toggled ? GUEST_COLOR_BOX_ON :
        GUEST_COLOR_BOX_OFF);
}

/* ---- activities ------------------------------------------------------ */

static void
render_plasma (guint32 seed, guint t, guint8 * dst, gint aw, gint ah,
    gint stride, guint noise_mask)
{
  guint32 ph = mix32 (seed ^ 0x706c61U);
  guint p1 = ph & SINE_MASK, p2 = (ph >> 10) & SINE_MASK,
      p3 = (ph >> 20) & SINE_MASK;
  guint8 *colx = g_new (guint8, aw);
  guint8 *diag = g_new (guint8, aw + ah);
  guint32 state = mix32 (mix32 (seed * 0x9e3779b9U + 0x6e6f6973U) ^
      mix32 (t + 0x1234567U));
  gint x, y;

  if (state == 0)
    state = 0x2545f491U;
  for (x = 0; x < aw; x++)
    colx[x] = S ((guint) x * 5 + t * 7 + p1);
  for (x = 0; x < aw + ah; x++)
    diag[x] = S ((guint) x * 3 + t * 11 + p3);

  for (y = 0; y < ah; y++) {
    guint8 *p = dst + (gsize) y * stride;
    guint rowv = S ((guint) y * 7 - t * 5 + p2);

    for (x = 0; x < aw; x++, p += 4) {
      guint v = colx[x] + rowv + diag[x + y];   /* 0..765 */
      guint idx = v * 4 / 3;
      guint n = xorshift32 (&state);
      guint r = S (idx + t * 2), g = S (idx + 341 + t), b = S (idx + 682);

      p[0] = (guint8) (b ^ (n & noise_mask));
      p[1] = (guint8) (g ^ ((n >> 8) & noise_mask));
      p[2] = (guint8) (r ^ ((n >> 16) & noise_mask));
      p[3] = 0xff;
    }
  }
  g_free (colx);
  g_free (diag);
}

static const guint32 text_palette[4] = {
  0x202020, 0x1a3f8a, 0x206020, 0x8a1a1a
};

#define TEXT_PAPER 0xf4f4ec

static void
render_text (guint32 seed, guint t, guint8 * dst, gint aw, gint ah, gint stride)
{
  guint32 paper = guest_pixel (TEXT_PAPER);
  guint32 lseed = mix32 (seed ^ 0x7e47U);
  gint cols = (aw + GUEST_CELL_WIDTH - 1) / GUEST_CELL_WIDTH;
  gint16 *glyph_of_cell = g_new (gint16, cols);
  guint64 scroll = (guint64) t * GUEST_TEXT_SCROLL_PX;
  gint y, x, c;
  guint32 ink = 0;
  gint64 cur_line = -1;

  ensure_tables ();
  for (y = 0; y < ah; y++) {
    guint32 *row = (guint32 *) (dst + (gsize) y * stride);
    guint64 doc_y = scroll + (guint64) y;
    guint64 line = doc_y / GUEST_CELL_HEIGHT;
    gint gy = (gint) (doc_y % GUEST_CELL_HEIGHT);

    if ((gint64) line != cur_line) {
      guint32 lh = mix32 (lseed ^ mix32 ((guint32) line * 0x9e3779b9U +
              (guint32) (line >> 32)));
      gint indent = 1 + (gint) ((lh >> 3) % 4) * 2;
      gint room = cols - indent;
      gint len = room > 8 ? 8 + (gint) ((lh >> 6) % (guint) (room - 7)) : room;

      cur_line = (gint64) line;
      ink = guest_pixel (text_palette[(lh >> 12) & 3]);
      for (c = 0; c < cols; c++) {
        guint32 ch;
        glyph_of_cell[c] = -1;
        if (lh % 7 == 0 || c < indent || c >= indent + len)
          continue;
        ch = mix32 (lh ^ ((guint32) c * 0x85ebca6bU));
        if (ch % 6 == 0)
          continue;
        glyph_of_cell[c] = (gint16) ((ch >> 8) % N_GLYPHS);
      }
    }
    for (x = 0; x < aw; x++) {
      gint g = glyph_of_cell[x / GUEST_CELL_WIDTH];
      gboolean on = g >= 0 && (glyph_rows[g][gy] >> (x % GUEST_CELL_WIDTH)) & 1;
      row[x] = on ? ink : paper;
    }
  }
  g_free (glyph_of_cell);
}

static inline guint
lerp8 (guint a, guint b, guint k /* 0..256 */ )
{
  return (a * (256 - k) + b * k) >> 8;
}

static void
render_video (guint32 seed, guint t, guint8 * dst, gint aw, gint ah,
    gint stride)
{
  guint32 ph = mix32 (seed ^ 0x766964U);
  guint pf = ph & SINE_MASK, pn = (ph >> 10) & SINE_MASK;
  gint *far_h = g_new (gint, aw);
  gint *near_h = g_new (gint, aw);
  gint x, y;
  gint sun_r = MAX (ah / 12, 4);
  gint span = aw + 4 * sun_r;
  gint sun_x = span - 1 - (gint) ((t / 2 + (ph >> 20)) % (guint) span) -
      2 * sun_r;
  gint sun_y = ah / 5 + (S (t * 2 + pf) - 128) * ah / 4096;
  gint glow_r = sun_r * 2;

  for (x = 0; x < aw; x++) {
    guint xf = (guint) x + t;   /* far layer pans 1 px per frame */
    guint xn = (guint) x + 2 * t;       /* near layer 2 px per frame */
    far_h[x] = ah * 55 / 100 +
        ((gint) S (xf * 2 + pf) + (gint) S (xf * 5 + 300 + pf) - 256) *
        ah / 2560;
    near_h[x] = ah * 74 / 100 +
        ((gint) S (xn * 3 + pn) + (gint) S (xn * 7 + 700 + pn) / 2 - 192) *
        ah / 2048;
  }

  for (y = 0; y < ah; y++) {
    guint8 *p = dst + (gsize) y * stride;
    guint k = (guint) (y * 256 / MAX (ah, 1));
    /* sky: deep blue at the top to pale near the horizon */
    guint sr = lerp8 (60, 200, k), sg = lerp8 (110, 220, k),
        sb = lerp8 (200, 240, k);
    gint dy = y - sun_y;

    for (x = 0; x < aw; x++, p += 4) {
      guint r, g, b;

      if (y >= near_h[x]) {
        /* near hills: green, darker further down, soft texture */
        guint d = (guint) MIN (y - near_h[x], 255);
        gint tex = ((gint) S ((guint) x * 9 + 2 * t * 9 + (guint) y * 7) -
            128) / 16;
        r = (guint) CLAMP (70 - (gint) d / 6 + tex, 0, 255);
        g = (guint) CLAMP (150 - (gint) d / 4 + tex, 0, 255);
        b = (guint) CLAMP (50 - (gint) d / 10 + tex / 2, 0, 255);
      } else if (y >= far_h[x]) {
        /* far hills: hazy blue-green */
        guint d = (guint) MIN (y - far_h[x], 255);
        r = 90 - d / 8;
        g = 130 - d / 6;
        b = 120 - d / 10;
      } else {
        gint dx = x - sun_x;
        gint d2 = dx * dx + dy * dy;
        r = sr;
        g = sg;
        b = sb;
        if (d2 < sun_r * sun_r) {
          r = 255;
          g = 236;
          b = 140;
        } else if (d2 < glow_r * glow_r) {
          /* glow: blend towards warm white, fading with distance */
          guint f = (guint) ((glow_r * glow_r - d2) * 160 /
              (glow_r * glow_r - sun_r * sun_r));
          r = lerp8 (r, 255, f);
          g = lerp8 (g, 230, f);
          b = lerp8 (b, 170, f);
        }
      }
      put_rgb (p, r, g, b);
    }
  }
  g_free (far_h);
  g_free (near_h);
}

void
guest_render_activity (GuestActivity kind, guint32 seed, guint frame_no,
    guint8 * dst, gint aw, gint ah, gint stride)
{
  if (aw <= 0 || ah <= 0)
    return;
  ensure_tables ();
  switch (kind) {
    case GUEST_ACTIVITY_BUSY:
      render_plasma (seed, frame_no, dst, aw, ah, stride, 0x07);
      break;
    case GUEST_ACTIVITY_HEAVY:
      render_plasma (seed, frame_no, dst, aw, ah, stride, 0xff);
      break;
    case GUEST_ACTIVITY_TEXT:
      render_text (seed, frame_no, dst, aw, ah, stride);
      break;
    case GUEST_ACTIVITY_VIDEO:
      render_video (seed, frame_no, dst, aw, ah, stride);
      break;
    case GUEST_ACTIVITY_IDLE:
    default:
      break;
  }
}

void
guest_render_frame (guint8 * bgrx, gint w, gint h, gint stride,
    guint32 seed, guint key_presses, GuestActivity kind, gint64 frame_no)
{
  GuestRect area;

  guest_render_background (bgrx, w, h, stride, seed);
  guest_render_key_box (bgrx, w, h, stride, (key_presses & 1) != 0);
  if (kind != GUEST_ACTIVITY_IDLE && frame_no >= 0 &&
      guest_render_activity_rect (w, h, &area)) {
    guest_render_activity (kind, seed, (guint) frame_no,
        bgrx + (gsize) area.y * stride + (gsize) area.x * 4,
        area.width, area.height, stride);
  }
}

guint8 *
guest_render_frame_new (gint w, gint h, guint32 seed, guint key_presses,
    GuestActivity kind, gint64 frame_no)
{
  guint8 *buf = g_malloc ((gsize) w * h * 4);
  guest_render_frame (buf, w, h, w * 4, seed, key_presses, kind, frame_no);
  return buf;
}
