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
  "idle", "busy", "heavy", "text", "video", "film", "desktop-video"
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

gboolean
guest_rect_intersect (const GuestRect * a, const GuestRect * b, GuestRect * out)
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

  return guest_rect_intersect (&box, &surf, rect);
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

/* ---- heads ------------------------------------------------------------ */

guint32
guest_render_head_color (guint index)
{
  static const guint32 colors[] = { 0xd04040, 0x40b040, 0x4060e0, 0xd0b020,
    0xb040c0, 0x30b0b0, 0xe08030, 0x808080
  };

  return colors[index % G_N_ELEMENTS (colors)];
}

void
guest_render_head_mark (guint8 * bgrx, gint stride, gint x0, gint head_w,
    gint h, guint index)
{
  GuestRect bar = { x0, h - GUEST_HEAD_MARK_HEIGHT, head_w,
    GUEST_HEAD_MARK_HEIGHT
  };
  guint k;

  if (h < GUEST_HEAD_MARK_HEIGHT || head_w <= 0)
    return;
  fill_rect (bgrx, stride, &bar, guest_render_head_color (index));
  for (k = 0; k <= index; k++) {
    GuestRect cell = { x0 + GUEST_HEAD_MARK_CELL + (gint) k * 2 *
          GUEST_HEAD_MARK_CELL, h - 6, GUEST_HEAD_MARK_CELL, 4
    };
    if (cell.x + cell.width > x0 + head_w)
      break;
    fill_rect (bgrx, stride, &cell, 0xffffff);
  }
}

void
guest_render_heads_frame (guint8 * bgrx, gint head_w, gint h, gint stride,
    guint heads, guint32 seed, guint key_presses, GuestActivity kind,
    gint64 frame_no, gboolean stamp)
{
  guint i;

  guest_render_frame_full (bgrx, head_w * (gint) heads, h, stride, seed,
      key_presses, kind, frame_no, stamp);
  for (i = 0; i < heads && heads > 1; i++)
    guest_render_head_mark (bgrx, stride, (gint) i * head_w, head_w, h, i);
}

void
guest_render_display_frame (guint8 * bgrx, gint w, gint h, gint stride,
    guint display, guint displays, guint32 seed, guint key_presses,
    GuestActivity kind, gint64 frame_no, gboolean stamp)
{
  if (display == 0)
    guest_render_frame_full (bgrx, w, h, stride, seed, key_presses, kind,
        frame_no, stamp);
  else
    guest_render_frame_full (bgrx, w, h, stride, seed + display, key_presses,
        GUEST_ACTIVITY_IDLE, GUEST_FRAME_NONE, FALSE);
  if (displays > 1)
    guest_render_head_mark (bgrx, stride, 0, w, h, display);
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

/* ---- film: a slow zoom over a photo-like picture, with grain ---------- */

#define FILM_TEX_W 1024
#define FILM_TEX_H 768

/* one octave of value noise: a lattice of random bytes every `cell` texels,
 * bilinear with a smoothstep weight, added into acc with weight amp */
static void
film_octave (guint32 seed, gint cell, gint amp, gint32 * acc)
{
  gint lw = FILM_TEX_W / cell + 2, lh = FILM_TEX_H / cell + 2;
  guint8 *lat = g_new (guint8, (gsize) lw * lh);
  gint x, y, i;

  for (i = 0; i < lw * lh; i++)
    lat[i] = (guint8) (mix32 (seed ^ mix32 ((guint32) i * 0x9e3779b9U +
                (guint32) cell)) >> 24);
  for (y = 0; y < FILM_TEX_H; y++) {
    gint ly = y / cell, fy = (y % cell) * 256 / cell;
    gint wy = fy * fy * (768 - 2 * fy) / 65536; /* smoothstep, 0..256 */
    const guint8 *r0 = lat + (gsize) ly * lw, *r1 = r0 + lw;
    gint32 *row = acc + (gsize) y * FILM_TEX_W;

    for (x = 0; x < FILM_TEX_W; x++) {
      gint lx = x / cell, fx = (x % cell) * 256 / cell;
      gint wx = fx * fx * (768 - 2 * fx) / 65536;
      gint top = r0[lx] * (256 - wx) + r0[lx + 1] * wx;
      gint bot = r1[lx] * (256 - wx) + r1[lx + 1] * wx;
      gint v = (top * (256 - wy) + bot * wy) >> 16;     /* 0..255 */

      row[x] += (v - 128) * amp;
    }
  }
  g_free (lat);
}

/* a fractal (1/f) field from 256- down to 2-texel detail, about 0..255 */
static guint8 *
film_field (guint32 seed)
{
  gint32 *acc = g_new0 (gint32, (gsize) FILM_TEX_W * FILM_TEX_H);
  guint8 *out = g_new (guint8, (gsize) FILM_TEX_W * FILM_TEX_H);
  gint cell, amp = 64, i;

  for (cell = 256; cell >= 2; cell /= 2) {
    film_octave (seed, cell, amp, acc);
    amp = amp * 6 / 10;
  }
  for (i = 0; i < FILM_TEX_W * FILM_TEX_H; i++)
    out[i] = (guint8) CLAMP (128 + acc[i] / 80, 0, 255);
  g_free (acc);
  return out;
}

/* The "photo": sky with clouds over a wavy horizon, foliage-like ground,
 * both with detail at every scale. RGB, generated once per seed. */
static guint8 *
film_texture_new (guint32 seed)
{
  guint8 *tex = g_new (guint8, (gsize) FILM_TEX_W * FILM_TEX_H * 3);
  guint8 *n1 = film_field (mix32 (seed ^ 0x66696c6dU));
  guint8 *n2 = film_field (mix32 (seed ^ 0x67726e64U));
  gint x, y;

  for (y = 0; y < FILM_TEX_H; y++) {
    for (x = 0; x < FILM_TEX_W; x++) {
      gsize i = (gsize) y * FILM_TEX_W + x;
      gint a = n1[i], b = n2[i];
      gint horizon = FILM_TEX_H * 45 / 100 +
          ((gint) n1[(gsize) (FILM_TEX_H / 2) * FILM_TEX_W + x] - 128) / 2;
      guint8 *p = tex + i * 3;
      gint r, g, bl;

      if (y < horizon) {
        gint k = y * 256 / MAX (horizon, 1);
        gint cloud = CLAMP ((b - 140) * 3, 0, 256);
        r = lerp8 (70, 190, (guint) k);
        g = lerp8 (120, 210, (guint) k);
        bl = lerp8 (200, 235, (guint) k);
        r = lerp8 ((guint) r, 245, (guint) cloud);
        g = lerp8 ((guint) g, 245, (guint) cloud);
        bl = lerp8 ((guint) bl, 250, (guint) cloud);
      } else {
        gint d = (y - horizon) * 256 / MAX (FILM_TEX_H - horizon, 1);
        r = 50 + a / 3 + b / 8 - d / 5;
        g = 80 + a / 2 - d / 4;
        bl = 30 + b / 6 - d / 8;
      }
      p[0] = (guint8) CLAMP (r, 0, 255);
      p[1] = (guint8) CLAMP (g, 0, 255);
      p[2] = (guint8) CLAMP (bl, 0, 255);
    }
  }
  g_free (n1);
  g_free (n2);
  return tex;
}

/* Textures are made once per seed and kept (never freed: still reachable) */
static const guint8 *
film_texture (guint32 seed)
{
  static GMutex lock;
  static GHashTable *cache;
  guint8 *tex;

  g_mutex_lock (&lock);
  if (!cache)
    cache = g_hash_table_new (g_direct_hash, g_direct_equal);
  tex = g_hash_table_lookup (cache, GUINT_TO_POINTER (seed + 1));
  if (!tex) {
    tex = film_texture_new (seed);
    g_hash_table_insert (cache, GUINT_TO_POINTER (seed + 1), tex);
  }
  g_mutex_unlock (&lock);
  return tex;
}

static void
render_film (guint32 seed, guint t, guint8 * dst, gint aw, gint ah, gint stride)
{
  const guint8 *tex = film_texture (seed);
  guint32 ph = mix32 (seed ^ 0x7a6f6fU);
  guint z = t % GUEST_FILM_ZOOM_PERIOD;
  /* zoom 1.0 .. 1.5 and back: texels per pixel in 16.16 */
  guint tri = z < GUEST_FILM_ZOOM_PERIOD / 2 ? z : GUEST_FILM_ZOOM_PERIOD - z;
  gint64 inv = (gint64) 65536 * GUEST_FILM_ZOOM_PERIOD /
      (GUEST_FILM_ZOOM_PERIOD + tri);
  /* the zoom centre drifts a little */
  gint64 cx = (gint64) (FILM_TEX_W / 2) * 65536 +
      ((gint64) S (t + (ph & SINE_MASK)) - 128) * 65536 / 8;
  gint64 cy = (gint64) (FILM_TEX_H / 2) * 65536 +
      ((gint64) S (t + 256 + ((ph >> 10) & SINE_MASK)) - 128) * 65536 / 12;
  guint32 state = mix32 (mix32 (seed * 0x9e3779b9U + 0x6772U) ^
      mix32 (t + 0x7654321U));
  gint x, y;

  if (state == 0)
    state = 0x2545f491U;
  for (y = 0; y < ah; y++) {
    guint8 *p = dst + (gsize) y * stride;
    gint64 v = cy + (gint64) (2 * y - ah) * inv / 2;
    gint vy = (gint) CLAMP (v >> 16, 0, FILM_TEX_H - 2);
    guint fy = (guint) ((v >> 8) & 0xff);
    const guint8 *r0 = tex + (gsize) vy * FILM_TEX_W * 3;
    const guint8 *r1 = r0 + FILM_TEX_W * 3;

    for (x = 0; x < aw; x++, p += 4) {
      gint64 u = cx + (gint64) (2 * x - aw) * inv / 2;
      gint ux = (gint) CLAMP (u >> 16, 0, FILM_TEX_W - 2);
      guint fx = (guint) ((u >> 8) & 0xff);
      const guint8 *a = r0 + ux * 3, *b = r1 + ux * 3;
      gint grain = (gint) (xorshift32 (&state) % (2 * GUEST_FILM_GRAIN + 1)) -
          GUEST_FILM_GRAIN;
      gint c[3], i;

      for (i = 0; i < 3; i++) {
        guint top = lerp8 (a[i], a[i + 3], fx), bot = lerp8 (b[i], b[i + 3],
            fx);
        c[i] = CLAMP ((gint) lerp8 (top, bot, fy) + grain, 0, 255);
      }
      put_rgb (p, (guint) c[0], (guint) c[1], (guint) c[2]);
    }
  }
}

/* ---- desktop-video: a video window in a static text desktop ------------ */

#define DESKTOP_BORDER  0x2a2a33
#define DESKTOP_TITLE   0x3a4a78
#define DESKTOP_TITLE_H 16

/* The video window, area-local; on the 8-px grid and, on the default
 * surface, off the 64-px tile grid (like a window a person placed). FALSE
 * when the area is too small for a window: the video then fills it. */
static gboolean
desktop_window_rect (gint aw, gint ah, GuestRect * r)
{
  gint vw = MIN (GUEST_DESKTOP_VIDEO_WIDTH, aw - 32) & ~7;
  gint vh = MIN (GUEST_DESKTOP_VIDEO_HEIGHT, ah - 40);

  if (vw < 64 || vh < 32) {
    r->x = r->y = 0;
    r->width = aw;
    r->height = ah;
    return FALSE;
  }
  r->width = vw;
  r->height = vh;
  r->x = ((aw - vw) / 2 + 8) & ~7;
  if (r->x + vw > aw - 4)
    r->x = ((aw - vw) / 2) & ~7;
  r->y = MIN (104, ah - vh - 4) & ~7;
  return TRUE;
}

static void
render_desktop_video (guint32 seed, guint t, guint8 * dst, gint aw, gint ah,
    gint stride)
{
  GuestRect win, frame, title;

  if (desktop_window_rect (aw, ah, &win)) {
    render_text (mix32 (seed ^ 0xde5c7U), 0, dst, aw, ah, stride);
    frame.x = win.x - 2;
    frame.y = win.y - DESKTOP_TITLE_H - 2;
    frame.width = win.width + 4;
    frame.height = win.height + DESKTOP_TITLE_H + 4;
    fill_rect (dst, stride, &frame, DESKTOP_BORDER);
    title.x = win.x;
    title.y = win.y - DESKTOP_TITLE_H;
    title.width = win.width;
    title.height = DESKTOP_TITLE_H - 2;
    fill_rect (dst, stride, &title, DESKTOP_TITLE);
  }
  render_video (seed, t, dst + (gsize) win.y * stride + (gsize) win.x * 4,
      win.width, win.height, stride);
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
    case GUEST_ACTIVITY_FILM:
      render_film (seed, frame_no, dst, aw, ah, stride);
      break;
    case GUEST_ACTIVITY_DESKTOP_VIDEO:
      render_desktop_video (seed, frame_no, dst, aw, ah, stride);
      break;
    case GUEST_ACTIVITY_IDLE:
    default:
      break;
  }
}

/* ---- frame stamp ---------------------------------------------------------- */

gboolean
guest_render_damage_rect (GuestActivity kind, gint aw, gint ah,
    GuestRect * rect)
{
  if (aw <= 0 || ah <= 0) {
    rect->x = rect->y = rect->width = rect->height = 0;
    return FALSE;
  }
  if (kind == GUEST_ACTIVITY_DESKTOP_VIDEO) {
    desktop_window_rect (aw, ah, rect);
    return TRUE;
  }
  rect->x = rect->y = 0;
  rect->width = aw;
  rect->height = ah;
  return TRUE;
}

gboolean
guest_render_stamp_rect (GuestActivity kind, gint w, gint h, GuestRect * rect)
{
  GuestRect area, d;

  rect->x = rect->y = rect->width = rect->height = 0;
  if (kind == GUEST_ACTIVITY_IDLE || !guest_render_activity_rect (w, h, &area)
      || !guest_render_damage_rect (kind, area.width, area.height, &d)
      || d.width < GUEST_STAMP_WIDTH || d.height <= 2 * GUEST_STAMP_HEIGHT)
    return FALSE;
  rect->x = area.x + d.x;
  rect->y = area.y + d.y;
  rect->width = GUEST_STAMP_WIDTH;
  rect->height = GUEST_STAMP_HEIGHT;
  return TRUE;
}

static guint32
stamp_bits (gint64 frame_no)
{
  guint32 n = (guint32) (frame_no % GUEST_STAMP_MODULO);
  guint32 check = mix32 (n * 0x9e3779b9U + 0x5741U) >> 24;
  return n | (check << 24);
}

void
guest_render_stamp (guint8 * dst, gint stride, gint64 frame_no)
{
  guint32 bits = stamp_bits (frame_no);
  GuestRect cell;
  gint i;

  for (i = 0; i < 32; i++) {
    cell.x = (i % GUEST_STAMP_COLUMNS) * GUEST_STAMP_CELL_W;
    cell.y = (i / GUEST_STAMP_COLUMNS) * GUEST_STAMP_CELL_H;
    cell.width = GUEST_STAMP_CELL_W;
    cell.height = GUEST_STAMP_CELL_H;
    fill_rect (dst, stride, &cell, (bits >> i) & 1 ? 0xffffff : 0x000000);
  }
}

gint64
guest_read_stamp (const guint8 * src, gint stride)
{
  guint32 bits = 0, n;
  gint i, x, y;

  for (i = 0; i < 32; i++) {
    gint x0 = (i % GUEST_STAMP_COLUMNS) * GUEST_STAMP_CELL_W +
        GUEST_STAMP_CELL_W / 4;
    gint y0 = (i / GUEST_STAMP_COLUMNS) * GUEST_STAMP_CELL_H +
        GUEST_STAMP_CELL_H / 4;
    guint sum = 0, count = 0;

    for (y = y0; y < y0 + GUEST_STAMP_CELL_H / 2; y++) {
      const guint8 *p = src + (gsize) y * stride + (gsize) x0 * 4;
      for (x = 0; x < GUEST_STAMP_CELL_W / 2; x++, p += 4) {
        sum += p[0] + p[1] + p[2];
        count += 3;
      }
    }
    if (sum > count * 128)
      bits |= 1U << i;
  }
  n = bits & (GUEST_STAMP_MODULO - 1);
  return stamp_bits (n) == bits ? (gint64) n : -1;
}

gboolean
guest_render_quality_rects (GuestActivity kind, gint w, gint h,
    GuestRect * picture, GuestRect * text)
{
  GuestRect area, d;

  text->x = text->y = text->width = text->height = 0;
  if (!guest_render_activity_rect (w, h, &area)
      || !guest_render_damage_rect (kind, area.width, area.height, &d)) {
    *picture = *text;
    return FALSE;
  }
  picture->x = area.x + d.x;
  picture->y = area.y + d.y;
  picture->width = d.width;
  picture->height = d.height;
  if (d.width >= GUEST_STAMP_WIDTH && d.height > 2 * GUEST_STAMP_HEIGHT) {
    picture->y += GUEST_STAMP_HEIGHT;
    picture->height -= GUEST_STAMP_HEIGHT;
  }
  /* the desktop left of the window, or the background left of the area */
  if (kind == GUEST_ACTIVITY_DESKTOP_VIDEO)
    text->width = d.x >= 16 ? MIN (GUEST_QUALITY_TEXT_WIDTH, d.x) : 0;
  else
    text->width = MIN (GUEST_QUALITY_TEXT_WIDTH, area.x);
  if (text->width < 8) {
    text->width = 0;
    return TRUE;
  }
  text->x = picture->x - text->width;
  text->y = picture->y;
  text->height = picture->height;
  return TRUE;
}

void
guest_render_frame_full (guint8 * bgrx, gint w, gint h, gint stride,
    guint32 seed, guint key_presses, GuestActivity kind, gint64 frame_no,
    gboolean stamp)
{
  GuestRect area, st;

  guest_render_background (bgrx, w, h, stride, seed);
  guest_render_key_box (bgrx, w, h, stride, (key_presses & 1) != 0);
  if (kind != GUEST_ACTIVITY_IDLE && frame_no >= 0 &&
      guest_render_activity_rect (w, h, &area)) {
    guest_render_activity (kind, seed, (guint) frame_no,
        bgrx + (gsize) area.y * stride + (gsize) area.x * 4,
        area.width, area.height, stride);
    if (stamp && guest_render_stamp_rect (kind, w, h, &st))
      guest_render_stamp (bgrx + (gsize) st.y * stride + (gsize) st.x * 4,
          stride, frame_no);
  }
}

void
guest_render_frame (guint8 * bgrx, gint w, gint h, gint stride,
    guint32 seed, guint key_presses, GuestActivity kind, gint64 frame_no)
{
  guest_render_frame_full (bgrx, w, h, stride, seed, key_presses, kind,
      frame_no, FALSE);
}

guint8 *
guest_render_frame_new (gint w, gint h, guint32 seed, guint key_presses,
    GuestActivity kind, gint64 frame_no)
{
  guint8 *buf = g_malloc ((gsize) w * h * 4);
  guest_render_frame (buf, w, h, w * 4, seed, key_presses, kind, frame_no);
  return buf;
}
