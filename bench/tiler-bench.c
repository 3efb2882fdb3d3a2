/* gst-spice bench: spicetiler costs, as ratios measured in the same run
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * 1. diff: the tiler's damage diff (tiles, cells, changed boxes) against a
 *    plain memcmp of the damaged rows, per update, for several cases;
 * 2. classify + encode: the whole element (spicetiler in a GstHarness,
 *    streaming off, no update budget) on a 1280x800 desktop with a busy or
 *    heavy 640x480 activity area, CPU time per frame, against turbojpeg
 *    (q85 4:2:0 fastdct) and LZ4_compress_default of that area alone;
 *    and the same with streaming on (the stream region is then I420).
 *
 * Usage: tiler-bench [PLUGIN.so] (meson passes the built plugin).
 * Times are CPU time of the process (CLOCK_PROCESS_CPUTIME_ID), best of 3
 * interleaved runs.
 */
#include <string.h>
#include <time.h>

#include <gst/gst.h>
#include <gst/check/gstharness.h>
#include <lz4.h>
#include <turbojpeg.h>
#include <gst/spice/gstspice.h>

#include "tilerdiff.h"
#include "bench-common.h"

static guint32
rnd (guint32 * s)
{
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

static void
fill_text (guint8 * px)
{
  gint x, y;

  for (y = 0; y < H; y++)
    for (x = 0; x < W; x++) {
      guint32 s = (x / 7) * 2654435761u ^ (y / 12) * 40503u;
      gboolean ink = (y % 12) >= 2 && (y % 12) < 10 && (x % 7) < 5 &&
          ((rnd (&s) >> (x % 7 + y % 5)) & 1);

      ((guint32 *) px)[y * W + x] = ink ? 0xff202020 : 0xfff8f8f8;
    }
}

/* busy: smooth plasma + 3 noise bits; heavy: 8 noise bits */
static void
fill_activity (guint8 * px, gint t, guint bits)
{
  guint32 s = 777 + t * 7919;
  guint mask = bits >= 8 ? 0xff : (1u << bits) - 1;
  gint x, y;

  for (y = ACT.y; y < ACT.y + ACT.h; y++)
    for (x = ACT.x; x < ACT.x + ACT.w; x++) {
      gint u = x - ACT.x, v = y - ACT.y;
      guint b = (u * 2 + t * 5) & 255, g = (v * 3 + t * 3 + (u >> 2)) & 255;
      guint r = ((u + v) + t * 7) & 255;

      rnd (&s);
      if (bits >= 8) {
        b = s & 255;
        g = (s >> 8) & 255;
        r = (s >> 16) & 255;
      } else {
        b ^= s & mask;
        g ^= (s >> 8) & mask;
        r ^= (s >> 16) & mask;
      }
      ((guint32 *) px)[y * W + x] = 0xff000000u | (r << 16) | (g << 8) | b;
    }
}

/* ---- 1. diff vs memcmp ---- */

static volatile int sink_int;

static double
time_memcmp (const guint8 * a, const guint8 * b, const GstVideoRectangle * r,
    gint iters)
{
  double t0 = cpu_now ();
  gint i, y;

  for (i = 0; i < iters; i++) {
    int acc = 0;

    for (y = r->y; y < r->y + r->h; y++)
      acc += memcmp (a + (gsize) y * W * 4 + r->x * 4,
          b + (gsize) y * W * 4 + r->x * 4, (gsize) r->w * 4) != 0;
    sink_int += acc;
  }
  return (cpu_now () - t0) / iters;
}

static double
time_diff (TilerDiff * d, const guint8 * a, const guint8 * b,
    const GstVideoRectangle * r, gint iters)
{
  double t0 = cpu_now ();
  gint i;

  for (i = 0; i < iters; i++) {
    tiler_diff_begin (d);
    tiler_diff_mark (d, r);
    sink_int += tiler_diff_run (d, a, W * 4, b, W * 4);
  }
  return (cpu_now () - t0) / iters;
}

static void
bench_diff (void)
{
  guint8 *frame = g_malloc (W * H * 4), *shadow = g_malloc (W * H * 4);
  GstVideoRectangle key = { 16, 16, 96, 96 }, full = { 0, 0, W, H };
  TilerDiff d;
  struct
  {
    const gchar *name;
    const GstVideoRectangle *r;
    gint change;                /* 0 none, 1 keybox, 2 busy area, 3 heavy */
  } cases[] = {
    {"keypress 96x96, damage = box", &key, 1},
    {"busy 640x480 changed, damage = area", &ACT, 2},
    {"heavy 640x480 changed, damage = area", &ACT, 3},
    {"full frame, nothing changed (no meta)", &full, 0},
    {"full frame, busy area changed (no meta)", &full, 2},
  };
  guint c, k;

  tiler_diff_init (&d, W, H, 64);
  g_print ("\n## diff per update vs memcmp of the damaged rows (1280x800)\n\n"
      "| case | tiler diff (us) | memcmp, same data (us) | ratio | "
      "memcmp of the area when unchanged (us) | ratio |\n"
      "|---|---|---|---|---|---|\n");
  for (c = 0; c < G_N_ELEMENTS (cases); c++) {
    double td, tm, tfull;
    gint iters = 300;

    fill_text (frame);
    memcpy (shadow, frame, W * H * 4);
    if (cases[c].change == 1) {
      gint y;
      for (y = key.y; y < key.y + key.h; y++)
        memset (frame + (gsize) y * W * 4 + key.x * 4, 0x33, key.w * 4);
    } else if (cases[c].change >= 2) {
      fill_activity (shadow, 0, cases[c].change == 2 ? 3 : 8);
      fill_activity (frame, 1, cases[c].change == 2 ? 3 : 8);
    }
    tm = td = 1e9;
    for (k = 0; k < 3; k++) {
      tm = MIN (tm, time_memcmp (frame, shadow, cases[c].r, iters));
      td = MIN (td, time_diff (&d, frame, shadow, cases[c].r, iters));
    }
    {
      guint8 *copy = g_memdup2 (frame, W * H * 4);
      tfull = 1e9;
      for (k = 0; k < 3; k++)
        tfull = MIN (tfull, time_memcmp (frame, copy, cases[c].r, iters));
      g_free (copy);
    }
    g_print ("| %s | %.1f | %.1f | %.2fx | %.1f | %.2fx |\n", cases[c].name,
        td * 1e6, tm * 1e6, td / tm, tfull * 1e6, td / tfull);
  }
  tiler_diff_clear (&d);
  g_free (frame);
  g_free (shadow);
}

/* ---- 2. classify + encode per frame ---- */

static double
bench_element (guint bits, const gchar * props, gint frames,
    guint64 * bytes_out)
{
  GstHarness *h = gst_harness_new_with_padnames ("spicetiler", "sink",
      "draw");
  GstHarness *hs = gst_harness_new_with_element (h->element, NULL, "stream");
  GstBuffer *frame = gst_buffer_new_allocate (NULL, W * H * 4, NULL);
  GstMapInfo map;
  double t0, t1;
  guint64 bytes = 0;
  gint i;

  gst_util_set_object_arg (G_OBJECT (h->element), "update-budget", "0");
  if (props) {
    gchar **pairs = g_strsplit (props, " ", -1), **kv;
    guint p;

    for (p = 0; pairs[p]; p++) {
      kv = g_strsplit (pairs[p], "=", 2);
      gst_util_set_object_arg (G_OBJECT (h->element), kv[0], kv[1]);
      g_strfreev (kv);
    }
    g_strfreev (pairs);
  }
  gst_harness_set_src_caps_str (h, "video/x-raw,format=BGRx,width=1280,"
      "height=800,framerate=30/1");
  gst_buffer_map (frame, &map, GST_MAP_WRITE);
  fill_text (map.data);
  gst_buffer_unmap (frame, &map);
  t0 = 0;
  for (i = -5; i < frames; i++) {
    GstBuffer *b;
    GstQuery *q;

    if (i == 0)
      t0 = cpu_now ();
    gst_buffer_map (frame, &map, GST_MAP_WRITE);
    fill_activity (map.data, i + 5, bits);
    gst_buffer_unmap (frame, &map);
    b = gst_buffer_copy (frame);
    GST_BUFFER_PTS (b) = (i + 5) * GST_SECOND / 30;
    /* damage = activity area, except for the first frame */
    if (i > -5)
      gst_buffer_add_spice_damage_meta (b, i + 5, &ACT, 1);
    if (i == -5)
      gst_buffer_add_spice_damage_meta (b, 0, &(GstVideoRectangle) {
          0, 0, W, H}
        , 1);
    gst_harness_push (h, b);
    q = gst_query_new_drain ();
    gst_pad_peer_query (h->srcpad, q);
    gst_query_unref (q);
    while ((b = gst_harness_try_pull (h))) {
      if (i >= 0)
        bytes += gst_buffer_get_size (b);
      gst_buffer_unref (b);
    }
    while ((b = gst_harness_try_pull (hs)))
      gst_buffer_unref (b);
  }
  t1 = cpu_now ();
  gst_buffer_unref (frame);
  gst_harness_teardown (hs);
  gst_harness_teardown (h);
  *bytes_out = bytes / frames;
  return (t1 - t0) / frames;
}

static double
bench_jpeg (guint bits, gint frames, gulong * size)
{
  guint8 *px = g_malloc (W * H * 4);
  tjhandle tj = tjInitCompress ();
  unsigned char *out = tjAlloc (tjBufSize (ACT.w, ACT.h, TJSAMP_420));
  double t0, t;
  gint i;

  fill_text (px);
  t0 = cpu_now ();
  for (i = 0; i < frames; i++) {
    unsigned long len = tjBufSize (ACT.w, ACT.h, TJSAMP_420);

    fill_activity (px, i, bits);
    if (i == 0)
      t0 = cpu_now ();
    tjCompress2 (tj, px + (gsize) ACT.y * W * 4 + ACT.x * 4, ACT.w, W * 4,
        ACT.h, TJPF_BGRX, &out, &len, TJSAMP_420, 85,
        TJFLAG_FASTDCT | TJFLAG_NOREALLOC);
    *size = len;
  }
  t = cpu_now () - t0;
  tjFree (out);
  tjDestroy (tj);
  g_free (px);
  return t / frames;
}

static double
bench_lz4 (guint bits, gint frames, gint * size)
{
  guint8 *px = g_malloc (W * H * 4);
  gsize raw = (gsize) ACT.w * ACT.h * 4;
  guint8 *packed = g_malloc (raw);
  gint bound = LZ4_compressBound (raw);
  char *out = g_malloc (bound);
  double t0, t;
  gint i;

  fill_text (px);
  t0 = cpu_now ();
  for (i = 0; i < frames; i++) {
    fill_activity (px, i, bits);
    gst_spice_blit_bgrx (packed, (gsize) ACT.w * 4, 0, 0, px, W * 4, ACT.x,
        ACT.y, ACT.w, ACT.h);
    if (i == 0)
      t0 = cpu_now ();
    *size = LZ4_compress_default ((const char *) packed, out, raw, bound);
  }
  t = cpu_now () - t0;
  g_free (out);
  g_free (packed);
  g_free (px);
  return t / frames;
}

/* the generator's own cost, to subtract from the element's timing */
static double
bench_fill (guint bits, gint frames)
{
  guint8 *px = g_malloc (W * H * 4);
  double t0 = cpu_now ();
  gint i;

  for (i = 0; i < frames; i++)
    fill_activity (px, i, bits);
  t0 = (cpu_now () - t0) / frames;
  g_free (px);
  return t0;
}

int
main (int argc, char **argv)
{
  const gint frames = 60;
  guint k;

  gst_init (&argc, &argv);
  if (argc > 1 && !gst_plugin_load_file (argv[1], NULL)) {
    g_printerr ("cannot load %s\n", argv[1]);
    return 1;
  }
  bench_diff ();

  g_print ("\n## classify + encode per frame: 640x480 activity on 1280x800"
      "\n\n| activity | spicetiler, streaming=off (ms, KiB) | spicetiler, "
      "streaming=all (ms) | streaming=off scroll-detection=false (ms) | "
      "turbojpeg q85 of the area (ms, KiB) | "
      "LZ4_compress_default of the area (ms, KiB) | tiler / jpeg |\n"
      "|---|---|---|---|---|---|---|\n");
  for (k = 0; k < 2; k++) {
    guint bits = k == 0 ? 3 : 8;
    guint64 bytes, bytes_s;
    gulong jsize;
    gint lsize;
    double fill = 1e9, te = 1e9, ts = 1e9, tn = 1e9, tj = 1e9, tl = 1e9;
    gint rep;

    /* best of 3, interleaved, against the load of a shared machine */
    for (rep = 0; rep < 3; rep++) {
      fill = MIN (fill, bench_fill (bits, frames));
      te = MIN (te, bench_element (bits, "streaming=off", frames, &bytes));
      ts = MIN (ts, bench_element (bits, "streaming=all", frames, &bytes_s));
      tn = MIN (tn, bench_element (bits, "streaming=off scroll-detection=false",
              frames, &bytes_s));
      tj = MIN (tj, bench_jpeg (bits, frames, &jsize));
      tl = MIN (tl, bench_lz4 (bits, frames, &lsize));
    }
    te -= fill;
    ts -= fill;
    tn -= fill;

    g_print ("| %s | %.2f, %.0f | %.2f | %.2f | %.2f, %.0f | %.2f, %.0f | "
        "%.2fx |\n",
        k == 0 ? "busy (plasma + 3 noise bits)" : "heavy (8 noise bits)",
        te * 1e3, bytes / 1024.0, ts * 1e3, tn * 1e3, tj * 1e3,
        jsize / 1024.0, tl * 1e3, lsize / 1024.0, te / tj);
  }
  return 0;
}
