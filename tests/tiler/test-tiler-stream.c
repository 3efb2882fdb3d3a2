/* gst-spice tests: spicetiler's stream pad helper (tilerstream.c)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The stream frame is converted by libyuv when the caps are I420 in
 * BT.601 (limited or full range), else by a GstVideoConverter. The
 * libyuv picture must be the converter's within 1 per sample on smooth
 * content (chroma is sampled a little differently: 2x2 average against
 * the converter's chroma resampler), with the exact values of the
 * colorimetry's equations for flat colours (which also proves the byte
 * order: GStreamer's BGRx is libyuv's "ARGB"); any other caps keep the
 * converter.
 */
#include <gst/check/gstcheck.h>
#include <gst/video/video.h>

#include "tilerstream.h"

#define W 1280
#define H 800
/* how far libyuv may be from the equations: its coefficients are whole
 * 256ths (e.g. 112 for 112.44 in limited Cb: up to 1.0 over 0..255 for
 * all three together), plus 0.5 for rounding the result, plus for chroma
 * the rounding of the 2x2 RGB average (0.45). Measured here: luma 0.8,
 * chroma 1.6; the converter's own error is 1.0-1.2 */
#define EXACT_LUMA 1.5
#define EXACT_CHROMA 2.0

typedef struct
{
  GstPad *src, *sink;
  const gchar *colorimetry;     /* what the peer fixes, or NULL */
  GstBuffer *last;
  GstCaps *caps;
} Peer;

/* streaming thread (the test's): keeps the last buffer */
static GstFlowReturn
peer_chain (GstPad * pad, GstObject * parent, GstBuffer * buf)
{
  Peer *p = g_object_get_data (G_OBJECT (pad), "peer");

  gst_clear_buffer (&p->last);
  p->last = buf;
  return GST_FLOW_OK;
}

static gboolean
peer_event (GstPad * pad, GstObject * parent, GstEvent * event)
{
  Peer *p = g_object_get_data (G_OBJECT (pad), "peer");

  if (GST_EVENT_TYPE (event) == GST_EVENT_CAPS) {
    GstCaps *caps;

    gst_event_parse_caps (event, &caps);
    gst_caps_replace (&p->caps, caps);
  }
  gst_event_unref (event);
  return TRUE;
}

/* answers the caps query like spicestreamenc with a JPEG encoder: the
 * filter with the colorimetry it wants */
static gboolean
peer_query (GstPad * pad, GstObject * parent, GstQuery * query)
{
  Peer *p = g_object_get_data (G_OBJECT (pad), "peer");
  GstCaps *filter, *caps;

  if (GST_QUERY_TYPE (query) != GST_QUERY_CAPS)
    return gst_pad_query_default (pad, parent, query);
  gst_query_parse_caps (query, &filter);
  caps = filter ? gst_caps_copy (filter) : gst_caps_new_any ();
  if (p->colorimetry && !gst_caps_is_any (caps))
    gst_caps_set_simple (caps, "colorimetry", G_TYPE_STRING, p->colorimetry,
        NULL);
  gst_query_set_caps_result (query, caps);
  gst_caps_unref (caps);
  return TRUE;
}

static void
peer_init (Peer * p, const gchar * colorimetry)
{
  memset (p, 0, sizeof (*p));
  p->colorimetry = colorimetry;
  p->src = gst_pad_new ("src", GST_PAD_SRC);
  p->sink = gst_pad_new ("sink", GST_PAD_SINK);
  g_object_set_data (G_OBJECT (p->sink), "peer", p);
  gst_pad_set_chain_function (p->sink, peer_chain);
  gst_pad_set_event_function (p->sink, peer_event);
  gst_pad_set_query_function (p->sink, peer_query);
  fail_unless (gst_pad_link (p->src, p->sink) == GST_PAD_LINK_OK);
  gst_pad_set_active (p->sink, TRUE);
  gst_pad_set_active (p->src, TRUE);
  gst_pad_push_event (p->src, gst_event_new_stream_start ("stream"));
}

static void
peer_clear (Peer * p)
{
  gst_pad_set_active (p->src, FALSE);
  gst_pad_set_active (p->sink, FALSE);
  gst_object_unref (p->src);
  gst_object_unref (p->sink);
  gst_clear_buffer (&p->last);
  gst_clear_caps (&p->caps);
}

/* a smooth picture: gradients in all three channels; with @blocks, flat
 * colour blocks (pure red, green, blue, white, black) too */
static GstBuffer *
input_new (gboolean blocks)
{
  GstBuffer *buf = gst_buffer_new_allocate (NULL, (gsize) W * H * 4, NULL);
  GstMapInfo m;
  gint x, y;

  gst_buffer_map (buf, &m, GST_MAP_WRITE);
  for (y = 0; y < H; y++)
    for (x = 0; x < W; x++) {
      guint8 *p = m.data + ((gsize) y * W + x) * 4;

      p[0] = (guint8) (x * 200 / W + y * 55 / H);       /* B */
      p[1] = (guint8) (255 - y * 150 / H - x * 60 / W); /* G */
      p[2] = (guint8) ((x + y) * 255 / (W + H));        /* R */
      p[3] = 0xff;
    }
  /* flat blocks 32x32 at (200 + 40 i, 200): R, G, B, white, black */
  for (y = 200; blocks && y < 232; y++)
    for (x = 200; x < 400; x++) {
      guint8 *p = m.data + ((gsize) y * W + x) * 4;
      static const guint8 c[5][3] = { {0, 0, 255}, {0, 255, 0}, {255, 0, 0},
      {255, 255, 255}, {0, 0, 0}
      };
      gint i = (x - 200) / 40;

      if ((x - 200) % 40 >= 32)
        continue;
      p[0] = c[i][0];
      p[1] = c[i][1];
      p[2] = c[i][2];
    }
  gst_buffer_unmap (buf, &m);
  return buf;
}

/* pushes one stream frame of @r (1/@scale) from @in through a fresh
 * helper; returns the helper's choice, the frame in *@out and its caps */
static TilerStreamConvert
push_one (Peer * p, GstBuffer * in, const GstVideoRectangle * r, guint scale,
    GstVideoFormat format, GstVideoInfo * oinfo)
{
  GstVideoInfo info;
  GstVideoFrame frame;
  TilerEngineResult res = { 0 };
  TilerStream s;
  TilerStreamConvert convert;
  GstFlowReturn flow = GST_FLOW_ERROR;
  GstSegment seg;

  gst_video_info_set_format (&info, GST_VIDEO_FORMAT_BGRx, W, H);
  GST_VIDEO_INFO_FPS_N (&info) = 30;
  fail_unless (gst_video_frame_map (&frame, &info, in, GST_MAP_READ));
  tiler_stream_init (&s);
  tiler_stream_set_input (&s, p->src, &info, TRUE, format);
  gst_segment_init (&seg, GST_FORMAT_TIME);
  gst_pad_push_event (p->src, gst_event_new_segment (&seg));
  res.frame = &frame;
  res.stream_rect = *r;
  res.stream_id = 1;
  res.stream_scale = scale;
  res.pts = 0;
  res.duration = GST_SECOND / 30;
  fail_unless (tiler_stream_push_frame (&s, p->src, &res, format, FALSE,
          &flow));
  fail_unless_equals_int (flow, GST_FLOW_OK);
  convert = s.convert;
  tiler_stream_reset (&s);
  gst_video_frame_unmap (&frame);
  fail_unless (p->last != NULL && p->caps != NULL);
  fail_unless (gst_video_info_from_caps (oinfo, p->caps));
  return convert;
}

/* what the GstVideoConverter makes of @r for @oinfo, with the helper's
 * options (its fallback, and what it used before libyuv) */
static GstBuffer *
reference_new (GstBuffer * in, const GstVideoRectangle * r,
    const GstVideoInfo * oinfo)
{
  GstVideoInfo info;
  GstVideoConverter *conv;
  GstVideoFrame fin, fout;
  GstBuffer *out = gst_buffer_new_allocate (NULL, oinfo->size, NULL);

  gst_video_info_set_format (&info, GST_VIDEO_FORMAT_BGRx, W, H);
  GST_VIDEO_INFO_FPS_N (&info) = GST_VIDEO_INFO_FPS_N (oinfo);
  GST_VIDEO_INFO_FPS_D (&info) = GST_VIDEO_INFO_FPS_D (oinfo);
  conv = gst_video_converter_new (&info, (GstVideoInfo *) oinfo,
      tiler_stream_converter_config (r));
  fail_unless (conv != NULL);
  fail_unless (gst_video_frame_map (&fin, &info, in, GST_MAP_READ));
  fail_unless (gst_video_frame_map (&fout, oinfo, out, GST_MAP_WRITE));
  gst_video_converter_frame (conv, &fin, &fout);
  gst_video_frame_unmap (&fout);
  gst_video_frame_unmap (&fin);
  gst_video_converter_free (conv);
  return out;
}

/* the sample of component @c at (@x, @y) of its plane */
static gint
sample (const GstVideoFrame * f, gint c, gint x, gint y)
{
  return GST_VIDEO_FRAME_COMP_DATA (f, c)[y * GST_VIDEO_FRAME_COMP_STRIDE (f,
          c) + x * GST_VIDEO_FRAME_COMP_PSTRIDE (f, c)];
}

/* the largest |a - b| of component @c over its samples; *@worst_* says
 * where */
static gint
comp_max_diff (const GstVideoInfo * info, GstBuffer * a, GstBuffer * b,
    gint c, gint * worst_x, gint * worst_y)
{
  GstVideoFrame fa, fb;
  gint x, y, d = 0;

  fail_unless (gst_video_frame_map (&fa, info, a, GST_MAP_READ));
  fail_unless (gst_video_frame_map (&fb, info, b, GST_MAP_READ));
  for (y = 0; y < GST_VIDEO_FRAME_COMP_HEIGHT (&fa, c); y++)
    for (x = 0; x < GST_VIDEO_FRAME_COMP_WIDTH (&fa, c); x++) {
      gint va = sample (&fa, c, x, y), vb = sample (&fb, c, x, y);

      if (ABS (va - vb) > d) {
        d = ABS (va - vb);
        *worst_x = x;
        *worst_y = y;
      }
    }
  gst_video_frame_unmap (&fb);
  gst_video_frame_unmap (&fa);
  return d;
}

typedef struct
{
  gint d, x, y;
} Diff;

/* the largest |@out - the converter's picture| of each component, and
 * where */
static void
converter_diff (GstBuffer * in, const GstVideoRectangle * r,
    const GstVideoInfo * oinfo, GstBuffer * out,
    Diff diff[GST_VIDEO_MAX_COMPONENTS])
{
  GstBuffer *ref = reference_new (in, r, oinfo);
  gint c;

  for (c = 0; c < (gint) GST_VIDEO_INFO_N_COMPONENTS (oinfo); c++)
    diff[c].d = comp_max_diff (oinfo, out, ref, c, &diff[c].x, &diff[c].y);
  gst_buffer_unref (ref);
}

/* the sample of component @c at surface pixel (@sx, @sy) of a 4:2:0
 * frame of @r */
static gint
sample_at (const GstVideoInfo * info, GstBuffer * buf,
    const GstVideoRectangle * r, gint c, gint sx, gint sy)
{
  GstVideoFrame f;
  gint x = sx - r->x, y = sy - r->y, v;

  fail_unless (gst_video_frame_map (&f, info, buf, GST_MAP_READ));
  v = c > 0 ? sample (&f, c, x / 2, y / 2) : sample (&f, c, x, y);
  gst_video_frame_unmap (&f);
  return v;
}

/* BT.601 (Kr 0.299, Kb 0.114) of 8-bit R'G'B', in limited (Y 16-235,
 * Cb/Cr 16-240) or full range */
static void
bt601 (gint r, gint g, gint b, gboolean full, gdouble yuv[3])
{
  gdouble y = 0.299 * r + 0.587 * g + 0.114 * b;
  gdouble cb = (b - y) / 1.772, cr = (r - y) / 1.402;

  if (full) {
    yuv[0] = y;
    yuv[1] = 128 + cb;
    yuv[2] = 128 + cr;
  } else {
    yuv[0] = 16 + y * 219 / 255;
    yuv[1] = 128 + cb * 224 / 255;
    yuv[2] = 128 + cr * 224 / 255;
  }
}

/* the largest |sample - BT.601| of component @c of @out, the frame of @r
 * of @in; chroma is that of the average of each 2x2 block (clipped at
 * an odd edge) */
static gdouble
exact_max_err (GstBuffer * in, const GstVideoRectangle * r,
    const GstVideoInfo * oinfo, GstBuffer * out, gint c, gboolean full,
    gint * worst_x, gint * worst_y)
{
  GstVideoFrame f;
  GstMapInfo m;
  gint x, y, dx, dy, step = c > 0 ? 2 : 1;
  gdouble err = 0;

  fail_unless (gst_buffer_map (in, &m, GST_MAP_READ));
  fail_unless (gst_video_frame_map (&f, oinfo, out, GST_MAP_READ));
  for (y = 0; y < GST_VIDEO_FRAME_COMP_HEIGHT (&f, c); y++)
    for (x = 0; x < GST_VIDEO_FRAME_COMP_WIDTH (&f, c); x++) {
      gdouble yuv[3], want = 0;
      gint n = 0;

      for (dy = 0; dy < step && y * step + dy < r->h; dy++)
        for (dx = 0; dx < step && x * step + dx < r->w; dx++) {
          const guint8 *p = m.data + ((gsize) (r->y + y * step + dy) * W +
              r->x + x * step + dx) * 4;

          bt601 (p[2], p[1], p[0], full, yuv);
          want += yuv[c];
          n++;
        }
      want /= n;
      if (ABS (sample (&f, c, x, y) - want) > err) {
        err = ABS (sample (&f, c, x, y) - want);
        *worst_x = x;
        *worst_y = y;
      }
    }
  gst_video_frame_unmap (&f);
  gst_buffer_unmap (in, &m);
  return err;
}

/* one frame of @r from @in through the helper: the caps say BT.601 in
 * @range, and every sample is the colorimetry's equations within
 * rounding; with @ref_tolerance >= 0, also the converter's within it */
static void
check_frame (GstBuffer * in, const GstVideoRectangle * r,
    const gchar * colorimetry, TilerStreamConvert want,
    GstVideoColorRange range, gint ref_tolerance, Peer * p,
    GstVideoInfo * oinfo)
{
  gboolean full = range == GST_VIDEO_COLOR_RANGE_0_255;
  const gchar *name = colorimetry ? colorimetry : "default";
  Diff diff[GST_VIDEO_MAX_COMPONENTS];
  gint c, wx = 0, wy = 0;

  peer_init (p, colorimetry);
  fail_unless_equals_int (push_one (p, in, r, 1, GST_VIDEO_FORMAT_I420,
          oinfo), want);
  fail_unless_equals_int (oinfo->width, r->w);
  fail_unless_equals_int (oinfo->height, r->h);
  fail_unless_equals_int (oinfo->colorimetry.matrix,
      GST_VIDEO_COLOR_MATRIX_BT601);
  fail_unless_equals_int (oinfo->colorimetry.range, range);
  for (c = 0; c < 3; c++) {
    gdouble e = exact_max_err (in, r, oinfo, p->last, c, full, &wx, &wy);

    fail_unless (e <= (c ? EXACT_CHROMA : EXACT_LUMA),
        "%s %dx%d at %d,%d plane %d: %.2f from BT.601 at %d,%d", name,
        r->w, r->h, r->x, r->y, c, e, wx, wy);
  }
  if (ref_tolerance < 0)
    return;
  converter_diff (in, r, oinfo, p->last, diff);
  for (c = 0; c < 3; c++)
    fail_unless (diff[c].d <= (full && c ? ref_tolerance + 1 : ref_tolerance),
        "%s %dx%d at %d,%d plane %d: libyuv differs from the converter by "
        "%d at %d,%d", name, r->w, r->h, r->x, r->y, c, diff[c].d, diff[c].x,
        diff[c].y);
}

static void
check_libyuv (const gchar * colorimetry, TilerStreamConvert want,
    GstVideoColorRange range)
{
  /* odd offset and size, across the flat blocks; and the same size at the
   * bottom right corner of the surface (libyuv's row remainders) */
  const GstVideoRectangle r = { 151, 101, 333, 241 };
  const GstVideoRectangle corner = { W - 333, H - 241, 333, 241 };
  static const guint8 flat[5][3] = { {255, 0, 0}, {0, 255, 0}, {0, 0, 255},
  {255, 255, 255}, {0, 0, 0}
  };
  GstBuffer *in = input_new (FALSE);
  GstVideoInfo oinfo;
  Peer p;
  gint c, i;

  /* smooth content: the converter's picture within 1 (full-range
   * chroma: 2, where both are 1 off the equations, either side) */
  check_frame (in, &r, colorimetry, want, range, 1, &p, &oinfo);
  peer_clear (&p);
  check_frame (in, &corner, colorimetry, want, range, 1, &p, &oinfo);
  peer_clear (&p);
  gst_buffer_unref (in);
  /* flat blocks, and in them the exact primaries, in the memory order
   * GStreamer calls BGRx */
  in = input_new (TRUE);
  check_frame (in, &r, colorimetry, want, range, -1, &p, &oinfo);
  for (i = 0; i < 5; i++) {
    gdouble yuv[3];
    gint sx = 200 + 40 * i + 16, sy = 216;

    bt601 (flat[i][0], flat[i][1], flat[i][2],
        range == GST_VIDEO_COLOR_RANGE_0_255, yuv);
    for (c = 0; c < 3; c++) {
      gint v = sample_at (&oinfo, p.last, &r, c, sx, sy);

      fail_unless (ABS (v - yuv[c]) <= (c ? EXACT_CHROMA : EXACT_LUMA),
          "RGB %d,%d,%d plane %d: %d, BT.601 says %.1f", flat[i][0],
          flat[i][1], flat[i][2], c, v, yuv[c]);
    }
  }
  gst_buffer_unref (in);
  peer_clear (&p);
}

/* 640x480 I420 caps say bt601 (limited range): ARGBToI420 */
GST_START_TEST (test_libyuv_limited)
{
  check_libyuv (NULL, TILER_STREAM_CONVERT_I420, GST_VIDEO_COLOR_RANGE_16_235);
}

GST_END_TEST;

/* a peer that fixes JFIF colorimetry (spicestreamenc with jpegenc):
 * ARGBToJ420 */
GST_START_TEST (test_libyuv_full)
{
  check_libyuv ("1:4:0:0", TILER_STREAM_CONVERT_J420,
      GST_VIDEO_COLOR_RANGE_0_255);
}

GST_END_TEST;

/* the scaled picture (spice-rate scale 2, and a small rectangle scaled
 * up to the 16-pixel minimum): the converter's size, and close to its
 * picture (box against linear filter: within 3 on smooth content) */
GST_START_TEST (test_libyuv_scaled)
{
  const GstVideoRectangle rects[] = { {609, 161, 640, 480}, {33, 47, 30, 22}
  };
  const gint sizes[][2] = { {320, 240}, {16, 16} };
  GstBuffer *in = input_new (FALSE);
  gint i, c;

  for (i = 0; i < (gint) G_N_ELEMENTS (rects); i++) {
    Diff diff[GST_VIDEO_MAX_COMPONENTS];
    GstVideoInfo oinfo;
    Peer p;

    peer_init (&p, NULL);
    fail_unless_equals_int (push_one (&p, in, &rects[i], 2,
            GST_VIDEO_FORMAT_I420, &oinfo), TILER_STREAM_CONVERT_I420);
    fail_unless_equals_int (oinfo.width, sizes[i][0]);
    fail_unless_equals_int (oinfo.height, sizes[i][1]);
    converter_diff (in, &rects[i], &oinfo, p.last, diff);
    for (c = 0; c < 3; c++)
      fail_unless (diff[c].d <= 3, "rect %d plane %d: scaled libyuv differs "
          "from the converter by %d at %d,%d", i, c, diff[c].d, diff[c].x,
          diff[c].y);
    peer_clear (&p);
  }
  gst_buffer_unref (in);
}

GST_END_TEST;

/* caps libyuv does not write keep the converter, exactly: BT.709 (the
 * default of a picture taller than 576 lines, or fixed by the peer) and
 * another stream format */
GST_START_TEST (test_fallback)
{
  const GstVideoRectangle small = { 151, 101, 333, 241 };
  const GstVideoRectangle tall = { 0, 0, 1280, 720 };
  struct
  {
    const gchar *colorimetry;
    const GstVideoRectangle *r;
    GstVideoFormat format;
  } cases[] = {
    {"bt709", &small, GST_VIDEO_FORMAT_I420},
    {NULL, &tall, GST_VIDEO_FORMAT_I420},
    {NULL, &small, GST_VIDEO_FORMAT_NV12},
  };
  GstBuffer *in = input_new (FALSE);
  gint i, c;

  for (i = 0; i < (gint) G_N_ELEMENTS (cases); i++) {
    Diff diff[GST_VIDEO_MAX_COMPONENTS];
    GstVideoInfo oinfo;
    Peer p;

    peer_init (&p, cases[i].colorimetry);
    fail_unless_equals_int (push_one (&p, in, cases[i].r, 1,
            cases[i].format, &oinfo), TILER_STREAM_CONVERT_VIDEO);
    converter_diff (in, cases[i].r, &oinfo, p.last, diff);
    for (c = 0; c < (gint) GST_VIDEO_INFO_N_COMPONENTS (&oinfo); c++)
      fail_unless_equals_int (diff[c].d, 0);
    peer_clear (&p);
  }
  gst_buffer_unref (in);
}

GST_END_TEST;

static Suite *
tiler_stream_suite (void)
{
  Suite *s = suite_create ("tiler-stream");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_libyuv_limited);
  tcase_add_test (tc, test_libyuv_full);
  tcase_add_test (tc, test_libyuv_scaled);
  tcase_add_test (tc, test_fallback);
  return s;
}

GST_CHECK_MAIN (tiler_stream);
