/* gst-spice bench: the stream rectangle's BGRx -> I420 conversion
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The spicetiler cuts the stream rectangle (here 640x480 of a 1280x800
 * BGRx surface, the test guest's activity area) out of each input frame and
 * converts it to the stream format. This measures, in one process and
 * interleaved, CPU time per frame of:
 *  - GstVideoConverter with the tiler's options
 *    (tiler_stream_converter_config), to BT.601 limited range (the default of a
 *    640x480 I420 picture) and to full range (1:4:0:0, JPEG encoders);
 *  - the same with chroma-mode=none;
 *  - libyuv ARGBToI420 (BT.601 limited) and ARGBToJ420 (full range);
 *  - the 1/2 scaled picture (spice-rate scale 2): the converter; libyuv
 *    ARGBScale into a scratch then ARGBToI420; ARGBToI420 then I420Scale.
 * and prints the ratios to the current converter, and the largest
 * difference per plane between libyuv and the converter.
 *
 * Usage: convert-bench [FRAMES]   (default 200 frames a run, best of 3)
 */
#include <math.h>
#include <string.h>

#include <gst/gst.h>
#include <gst/video/video.h>
#include <libyuv.h>

#include "tilerstream.h"
#include "bench-common.h"

/* a smooth moving plasma with 3 bits of noise, like the guest's busy */
static void
fill_plasma (guint8 * px, gint t)
{
  guint32 s = 12345u + t;
  gint x, y;

  for (y = 0; y < H; y++)
    for (x = 0; x < W; x++) {
      guint8 *p = px + ((gsize) y * W + x) * 4;
      gdouble v = sin (x * 0.031 + t * 0.2) + cos (y * 0.027 - t * 0.1);

      s = s * 1103515245u + 12345u;
      p[0] = (guint8) (127 + 60 * v) ^ ((s >> 16) & 7);
      p[1] = (guint8) (127 + 50 * sin (v * 2.0 + t * 0.05)) ^ ((s >> 19) & 7);
      p[2] = (guint8) (127 + 55 * cos (v * 1.5)) ^ ((s >> 22) & 7);
      p[3] = 255;
    }
}

typedef enum
{
  K_CONV,
  K_YUV_I420,
  K_YUV_J420,
  K_YUV_SCALE_ARGB,
  K_YUV_SCALE_I420,
} Kind;

typedef struct
{
  const gchar *name;
  Kind kind;
  const gchar *colorimetry;     /* NULL: the default of the output size */
  gboolean chroma_none;
  gint scale;
  GstVideoConverter *conv;
  GstVideoInfo oinfo;
  GstBuffer *out;
  double best;
} Case;

static GstVideoInfo in_info;
static guint8 *scratch, *scratch_i420;

static void
case_setup (Case * c)
{
  gint ow = ACT.w / c->scale, oh = ACT.h / c->scale;
  GstStructure *config;

  gst_video_info_set_format (&c->oinfo, GST_VIDEO_FORMAT_I420, ow, oh);
  if (c->colorimetry)
    g_assert (gst_video_colorimetry_from_string (&c->oinfo.colorimetry,
            c->colorimetry));
  c->out = gst_buffer_new_allocate (NULL, GST_VIDEO_INFO_SIZE (&c->oinfo),
      NULL);
  c->best = G_MAXDOUBLE;
  if (c->kind != K_CONV)
    return;
  config = tiler_stream_converter_config (&ACT);
  if (c->chroma_none)
    gst_structure_set (config, GST_VIDEO_CONVERTER_OPT_CHROMA_MODE,
        GST_TYPE_VIDEO_CHROMA_MODE, GST_VIDEO_CHROMA_MODE_NONE, NULL);
  c->conv = gst_video_converter_new (&in_info, &c->oinfo, config);
  g_assert (c->conv);
}

static void
case_run_one (Case * c, GstBuffer * inbuf)
{
  GstVideoFrame in, out;
  const guint8 *src;
  gint sstride, ow, oh;

  g_assert (gst_video_frame_map (&in, &in_info, inbuf, GST_MAP_READ));
  g_assert (gst_video_frame_map (&out, &c->oinfo, c->out, GST_MAP_WRITE));
  sstride = GST_VIDEO_FRAME_PLANE_STRIDE (&in, 0);
  src = (const guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&in, 0) +
      (gsize) ACT.y * sstride + ACT.x * 4;
  ow = GST_VIDEO_FRAME_WIDTH (&out);
  oh = GST_VIDEO_FRAME_HEIGHT (&out);
#define OUT_PLANES(f) \
  GST_VIDEO_FRAME_PLANE_DATA (f, 0), GST_VIDEO_FRAME_PLANE_STRIDE (f, 0), \
  GST_VIDEO_FRAME_PLANE_DATA (f, 1), GST_VIDEO_FRAME_PLANE_STRIDE (f, 1), \
  GST_VIDEO_FRAME_PLANE_DATA (f, 2), GST_VIDEO_FRAME_PLANE_STRIDE (f, 2)
  switch (c->kind) {
    case K_CONV:
      gst_video_converter_frame (c->conv, &in, &out);
      break;
    case K_YUV_I420:
      ARGBToI420 (src, sstride, OUT_PLANES (&out), ow, oh);
      break;
    case K_YUV_J420:
      ARGBToJ420 (src, sstride, OUT_PLANES (&out), ow, oh);
      break;
    case K_YUV_SCALE_ARGB:
      ARGBScale (src, sstride, ACT.w, ACT.h, scratch, ow * 4, ow, oh,
          kFilterBox);
      ARGBToI420 (scratch, ow * 4, OUT_PLANES (&out), ow, oh);
      break;
    case K_YUV_SCALE_I420:{
      guint8 *y = scratch_i420, *u = y + ACT.w * ACT.h,
          *v = u + ACT.w / 2 * ACT.h / 2;

      ARGBToI420 (src, sstride, y, ACT.w, u, ACT.w / 2, v, ACT.w / 2,
          ACT.w, ACT.h);
      I420Scale (y, ACT.w, u, ACT.w / 2, v, ACT.w / 2, ACT.w, ACT.h,
          OUT_PLANES (&out), ow, oh, kFilterBox);
      break;
    }
  }
#undef OUT_PLANES
  gst_video_frame_unmap (&out);
  gst_video_frame_unmap (&in);
}

/* largest |a - b| per plane of two I420 pictures of one size */
static void
max_diff (Case * a, Case * b, gint d[3])
{
  GstVideoFrame fa, fb;
  gint p, x, y;

  g_assert (gst_video_frame_map (&fa, &a->oinfo, a->out, GST_MAP_READ));
  g_assert (gst_video_frame_map (&fb, &b->oinfo, b->out, GST_MAP_READ));
  for (p = 0; p < 3; p++) {
    d[p] = 0;
    for (y = 0; y < GST_VIDEO_FRAME_COMP_HEIGHT (&fa, p); y++)
      for (x = 0; x < GST_VIDEO_FRAME_COMP_WIDTH (&fa, p); x++) {
        gint va = ((guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&fa, p))[y *
            GST_VIDEO_FRAME_PLANE_STRIDE (&fa, p) + x];
        gint vb = ((guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&fb, p))[y *
            GST_VIDEO_FRAME_PLANE_STRIDE (&fb, p) + x];

        d[p] = MAX (d[p], ABS (va - vb));
      }
  }
  gst_video_frame_unmap (&fb);
  gst_video_frame_unmap (&fa);
}

int
main (int argc, char **argv)
{
  Case cases[] = {
    {"converter bt601 (tiler now)", K_CONV, NULL, FALSE, 1},
    {"converter bt601 chroma-mode=none", K_CONV, NULL, TRUE, 1},
    {"converter 1:4:0:0 (jpeg)", K_CONV, "1:4:0:0", FALSE, 1},
    {"libyuv ARGBToI420", K_YUV_I420, NULL, FALSE, 1},
    {"libyuv ARGBToJ420", K_YUV_J420, "1:4:0:0", FALSE, 1},
    {"converter bt601, 1/2 scaled", K_CONV, NULL, FALSE, 2},
    {"libyuv ARGBScale box + ARGBToI420, 1/2", K_YUV_SCALE_ARGB, NULL,
        FALSE, 2},
    {"libyuv ARGBToI420 + I420Scale box, 1/2", K_YUV_SCALE_I420, NULL,
        FALSE, 2},
  };
  const gint n = G_N_ELEMENTS (cases);
  gint frames = argc > 1 ? atoi (argv[1]) : 200;
  GstBuffer *inbuf[4];
  GstVideoInfo probe;
  gchar *c1, *c2;
  gint i, k, f, run, d[3];

  gst_init (&argc, &argv);
  gst_video_info_set_format (&in_info, GST_VIDEO_FORMAT_BGRx, W, H);
  gst_video_info_set_format (&probe, GST_VIDEO_FORMAT_I420, 640, 480);
  c1 = gst_video_colorimetry_to_string (&probe.colorimetry);
  gst_video_info_set_format (&probe, GST_VIDEO_FORMAT_I420, 1280, 800);
  c2 = gst_video_colorimetry_to_string (&probe.colorimetry);
  g_print ("default I420 colorimetry: 640x480 %s, 1280x800 %s\n", c1, c2);
  g_free (c1);
  g_free (c2);
  for (i = 0; i < 4; i++) {
    GstMapInfo m;

    inbuf[i] = gst_buffer_new_allocate (NULL, W * H * 4, NULL);
    gst_buffer_map (inbuf[i], &m, GST_MAP_WRITE);
    fill_plasma (m.data, i * 3);
    gst_buffer_unmap (inbuf[i], &m);
  }
  scratch = g_malloc (ACT.w * ACT.h * 4);
  scratch_i420 = g_malloc (ACT.w * ACT.h * 3 / 2);
  for (k = 0; k < n; k++)
    case_setup (&cases[k]);
  for (run = 0; run < 3; run++)
    for (k = 0; k < n; k++) {
      double t0 = cpu_now ();

      for (f = 0; f < frames; f++)
        case_run_one (&cases[k], inbuf[f & 3]);
      cases[k].best = MIN (cases[k].best, (cpu_now () - t0) / frames);
    }
  g_print ("BGRx 1280x800 -> I420, crop %dx%d at %d,%d, %d frames x 3, "
      "CPU ms/frame (best run), ratio to the tiler's converter\n",
      ACT.w, ACT.h, ACT.x, ACT.y, frames);
  for (k = 0; k < n; k++)
    g_print ("  %-42s %6.3f ms  %5.2fx\n", cases[k].name,
        cases[k].best * 1e3, cases[k].best / cases[0].best);
  /* the pictures of the last frame pushed (the same input for all) */
  max_diff (&cases[3], &cases[0], d);
  g_print ("max |libyuv I420 - converter| Y %d U %d V %d\n", d[0], d[1], d[2]);
  max_diff (&cases[4], &cases[2], d);
  g_print ("max |libyuv J420 - converter| Y %d U %d V %d\n", d[0], d[1], d[2]);
  max_diff (&cases[6], &cases[5], d);
  g_print ("max |libyuv scaled (ARGBScale) - converter| Y %d U %d V %d\n",
      d[0], d[1], d[2]);
  max_diff (&cases[7], &cases[5], d);
  g_print ("max |libyuv scaled (I420Scale) - converter| Y %d U %d V %d\n",
      d[0], d[1], d[2]);
  for (k = 0; k < n; k++) {
    if (cases[k].conv)
      gst_video_converter_free (cases[k].conv);
    gst_buffer_unref (cases[k].out);
  }
  for (i = 0; i < 4; i++)
    gst_buffer_unref (inbuf[i]);
  g_free (scratch);
  g_free (scratch_i420);
  return 0;
}
