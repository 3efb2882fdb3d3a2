/* gst-spice tests: helpers shared by the spicetiler tests
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <string.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/video/video.h>
#include <gst/spice/gstspice.h>

#include "draws-decoder.h"

#define FRAME_DURATION (GST_SECOND / 30)

/* deterministic pseudo-random numbers */
static inline guint32
rnd (guint32 * s)
{
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

static inline GstBuffer *
frame_new (gint w, gint h)
{
  return gst_buffer_new_allocate (NULL, (gsize) w * h * 4, NULL);
}

/* white page with dark glyph-like strokes: synthetic content */
static inline void
fill_text (guint8 * px, gint stride, const GstVideoRectangle * r, guint32 seed)
{
  gint x, y;

  for (y = r->y; y < r->y + r->h; y++) {
    guint32 *row = (guint32 *) (px + (gsize) y * stride);

    for (x = r->x; x < r->x + r->w; x++) {
      gint gx = x / 7, gy = y / 12, lx = x % 7, ly = y % 12;
      guint32 s = seed ^ (gx * 2654435761u) ^ (gy * 40503u);
      gboolean ink = FALSE;

      rnd (&s);
      if (ly >= 2 && ly < 10 && lx < 5 && (s & 3) != 0)
        ink = ((s >> (lx + (ly - 2) * 5 % 16)) & 1) != 0;
      row[x] = ink ? 0xff202020 : 0xfff8f8f8;
    }
  }
}

/* rows of a text-like document: ink strokes on paper, some rows blank */
static inline void
document_rows (guint32 * doc, gint w, gint rows, guint32 seed)
{
  gint x, y;

  for (y = 0; y < rows; y++) {
    guint32 line = seed ^ (guint32) (y / 14) * 2654435761u;
    gboolean blank = y % 14 >= 11 || (y / 14) % 5 == 4;

    for (x = 0; x < w; x++) {
      guint32 s = line ^ (guint32) (x / 6) * 40503u ^ (guint32) (y % 14);

      /* murmur3's finalizer: every bit of the glyph cell counts */
      s = (s ^ (s >> 16)) * 0x85ebca6bu;
      s = (s ^ (s >> 13)) * 0xc2b2ae35u;
      s ^= s >> 16;
      doc[(gsize) y * w + x] = !blank && (s & 3) == 0 ?
          0xff203040 : 0xfff4f4ec;
    }
  }
}

/* shows document rows [off, off + win->h) in @win of a @w wide image */
static inline void
show_rows (guint8 * img, gint w, const guint32 * doc,
    const GstVideoRectangle * win, gint off)
{
  gst_spice_blit_bgrx (img, (gsize) w * 4, win->x, win->y,
      (const guint8 *) doc, (gsize) win->w * 4, 0, off, win->w, win->h);
}

/* smooth moving plasma plus a few noise bits: photographic content */
static inline void
fill_photo (guint8 * px, gint stride, const GstVideoRectangle * r, gint t,
    guint noise_bits)
{
  guint32 s = 12345 + t * 7919;
  guint mask = (1u << noise_bits) - 1;
  gint x, y;

  for (y = r->y; y < r->y + r->h; y++) {
    guint32 *row = (guint32 *) (px + (gsize) y * stride);

    for (x = r->x; x < r->x + r->w; x++) {
      gint u = x - r->x, v = y - r->y;
      gint b = (u * 2 + t * 5) & 255;
      gint g = (v * 3 + t * 3 + (u >> 2)) & 255;
      gint rr = ((u + v) + t * 7) & 255;

      if (noise_bits) {
        b ^= rnd (&s) & mask;
        g ^= (s >> 8) & mask;
        rr ^= (s >> 16) & mask;
      }
      row[x] = 0xff000000u | (rr << 16) | (g << 8) | b;
    }
  }
}

static inline void
fill_noise (guint8 * px, gint stride, const GstVideoRectangle * r,
    guint32 seed)
{
  gint x, y;

  for (y = r->y; y < r->y + r->h; y++) {
    guint32 *row = (guint32 *) (px + (gsize) y * stride);

    for (x = r->x; x < r->x + r->w; x++)
      row[x] = 0xff000000u | (rnd (&seed) & 0xffffff);
  }
}

static inline void
fill_color (guint8 * px, gint stride, const GstVideoRectangle * r,
    guint32 color)
{
  gint x, y;

  for (y = r->y; y < r->y + r->h; y++) {
    guint32 *row = (guint32 *) (px + (gsize) y * stride);

    for (x = r->x; x < r->x + r->w; x++)
      row[x] = color;
  }
}

typedef struct
{
  GstHarness *h;                /* sink -> draw */
  GstHarness *hs;               /* stream */
  DrawsDecoder *dec;
  gint w, h_;
  guint64 seq;
  guint updates;
  gboolean damage_only;         /* pushes memory:SpiceDamage buffers */
} Tiler;

/* a tiler fed whole frames, or with @damage_only the same frames as
 * damage-only buffers (memory:SpiceDamage, gstspicedamage.h) */
static inline void
tiler_setup_input (Tiler * t, gint w, gint h, const gchar * props,
    gboolean damage_only)
{
  gchar *caps;

  memset (t, 0, sizeof (*t));
  t->h = gst_harness_new_with_padnames ("spicetiler", "sink", "draw");
  t->hs = gst_harness_new_with_element (t->h->element, NULL, "stream");
  if (props) {
    gchar **kv = g_strsplit (props, " ", -1);
    guint i;

    for (i = 0; kv[i]; i++) {
      gchar **pair = g_strsplit (kv[i], "=", 2);

      if (pair[0] && pair[1])
        gst_util_set_object_arg (G_OBJECT (t->h->element), pair[0], pair[1]);
      g_strfreev (pair);
    }
    g_strfreev (kv);
  }
  caps = g_strdup_printf ("video/x-raw%s,format=BGRx,width=%d,height=%d,"
      "framerate=30/1", damage_only ? "(" GST_CAPS_FEATURE_MEMORY_SPICE_DAMAGE
      ")" : "", w, h);
  gst_harness_set_src_caps_str (t->h, caps);
  g_free (caps);
  t->dec = draws_decoder_new (w, h);
  t->w = w;
  t->h_ = h;
  t->damage_only = damage_only;
}

static inline void
tiler_setup (Tiler * t, gint w, gint h, const gchar * props)
{
  tiler_setup_input (t, w, h, props, FALSE);
}

static inline void
tiler_teardown (Tiler * t)
{
  gst_harness_teardown (t->hs);
  gst_harness_teardown (t->h);
  draws_decoder_free (t->dec);
}

/* waits until the element has processed everything it was given */
static inline void
tiler_drain (Tiler * t)
{
  GstQuery *q = gst_query_new_drain ();

  fail_unless (gst_pad_peer_query (t->h->srcpad, q));
  gst_query_unref (q);
}

/* the buffer that carries @frame with @damage at index @i (pts = i / 30
 * s): a copy of the frame (NULL damage: without a meta), or damage-only,
 * @damage's pixels packed (NULL: the whole surface) */
static inline GstBuffer *
tiler_input_buffer (Tiler * t, GstBuffer * frame, gint i,
    const GstVideoRectangle * damage, guint n_damage)
{
  GstBuffer *b;

  if (t->damage_only) {
    GstVideoRectangle all = { 0, 0, t->w, t->h_ };
    GstMapInfo map;

    gst_buffer_map (frame, &map, GST_MAP_READ);
    b = gst_spice_damage_pack (map.data, (gsize) t->w * 4,
        damage ? damage : &all, damage ? n_damage : 1, ++t->seq);
    gst_buffer_unmap (frame, &map);
  } else {
    b = gst_buffer_copy (frame);
    if (damage)
      gst_buffer_add_spice_damage_meta (b, ++t->seq, damage, n_damage);
  }
  GST_BUFFER_PTS (b) = i * FRAME_DURATION;
  GST_BUFFER_DURATION (b) = FRAME_DURATION;
  return b;
}

/* pushes a frame at index @i (pts = i / 30 s) with damage (NULL = no meta,
 * or the whole surface) */
static inline void
tiler_push (Tiler * t, GstBuffer * frame, gint i,
    const GstVideoRectangle * damage, guint n_damage)
{
  fail_unless_equals_int (gst_harness_push (t->h, tiler_input_buffer (t,
              frame, i, damage, n_damage)), GST_FLOW_OK);
}

static inline void
tiler_push_sync (Tiler * t, GstBuffer * frame, gint i,
    const GstVideoRectangle * damage, guint n_damage)
{
  tiler_push (t, frame, i, damage, n_damage);
  tiler_drain (t);
}

/* applies every pending draw update to the decoder; returns how many */
static inline guint
tiler_apply (Tiler * t)
{
  GstBuffer *b;
  guint n = 0;

  while ((b = gst_harness_try_pull (t->h))) {
    GError *err = NULL;

    if (!draws_decoder_apply (t->dec, b, &err))
      fail ("bad update: %s", err->message);
    gst_buffer_unref (b);
    n++;
  }
  t->updates += n;
  return n;
}

static inline guint64
tiler_diff_pixels (Tiler * t, GstBuffer * frame, const GstVideoRectangle * a)
{
  GstMapInfo map;
  guint64 n;

  gst_buffer_map (frame, &map, GST_MAP_READ);
  n = draws_decoder_compare (t->dec, map.data, t->w * 4, a);
  gst_buffer_unmap (frame, &map);
  return n;
}

static inline guint64
tiler_stat (Tiler * t, const gchar * field)
{
  GstStructure *s;
  guint64 v = 0;

  g_object_get (t->h->element, "stats", &s, NULL);
  fail_unless (gst_structure_get_uint64 (s, field, &v), "no %s", field);
  gst_structure_free (s);
  return v;
}

static inline gboolean
tiler_stat_bool (Tiler * t, const gchar * field)
{
  GstStructure *s;
  gboolean v = FALSE;

  g_object_get (t->h->element, "stats", &s, NULL);
  fail_unless (gst_structure_get_boolean (s, field, &v), "no %s", field);
  gst_structure_free (s);
  return v;
}

/* drops everything the stream pad produced so far; returns buffers seen */
static inline guint
tiler_flush_stream (Tiler * t)
{
  GstBuffer *b;
  GstEvent *e;
  guint n = 0;

  while ((b = gst_harness_try_pull (t->hs))) {
    gst_buffer_unref (b);
    n++;
  }
  while ((e = gst_harness_try_pull_event (t->hs)))
    gst_event_unref (e);
  return n;
}
