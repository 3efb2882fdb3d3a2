/* spicetiler: the stream pad helper (caps, converter, pool, frames, GAPs)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The stream rectangle is cut out of the input frame, without an
 * intermediate copy, into a buffer of an own video buffer pool, in
 * stream-format, with a GstSpiceStreamMeta: by libyuv (SIMD, about 13x
 * cheaper, bench/convert-bench) when the stream caps are I420 in BT.601
 * limited or full range, which is what libyuv writes, else by a
 * GstVideoConverter (crop options). The engine has
 * already decided on the frame (and moved the area into its shadow);
 * this only makes and pushes it. Worker thread only.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include <libyuv.h>

#include "tilerstream.h"

GST_DEBUG_CATEGORY_STATIC (tiler_stream_debug);
#define GST_CAT_DEFAULT tiler_stream_debug

void
tiler_stream_init (TilerStream * s)
{
  if (g_once_init_enter (&tiler_stream_debug)) {
    GstDebugCategory *cat = NULL;

    GST_DEBUG_CATEGORY_INIT (cat, "spicetilerstream", 0,
        "spicetiler stream pad: caps, converter, frames");
    g_once_init_leave (&tiler_stream_debug, cat);
  }
  memset (s, 0, sizeof (*s));
  gst_video_info_init (&s->info);
  gst_video_info_init (&s->sinfo);
}

void
tiler_stream_free_resources (TilerStream * s)
{
  if (s->conv) {
    gst_video_converter_free (s->conv);
    s->conv = NULL;
  }
  g_clear_pointer (&s->scratch, g_free);
  s->scratch_size = 0;
  if (s->pool) {
    gst_buffer_pool_set_active (s->pool, FALSE);
    gst_object_unref (s->pool);
    s->pool = NULL;
  }
}

void
tiler_stream_reset (TilerStream * s)
{
  tiler_stream_free_resources (s);
  s->caps_w = s->caps_h = 0;
}

/* Worker thread: the colorimetry downstream fixes, if any (spicestreamenc
 * asks JPEG encoders' input in full range, as clients decode JFIF);
 * otherwise the default of the format and size. The converter then
 * writes that range directly. */
static void
negotiate_colorimetry (GstPad * pad, GstVideoInfo * info)
{
  GstCaps *filter, *peer;
  GstVideoColorimetry cinfo;
  const gchar *c;

  filter = gst_video_info_to_caps (info);
  gst_structure_remove_field (gst_caps_get_structure (filter, 0),
      "colorimetry");
  peer = gst_pad_peer_query_caps (pad, filter);
  gst_caps_unref (filter);
  if (peer && !gst_caps_is_any (peer) && !gst_caps_is_empty (peer)) {
    c = gst_structure_get_string (gst_caps_get_structure (peer, 0),
        "colorimetry");
    if (c && gst_video_colorimetry_from_string (&cinfo, c))
      info->colorimetry = cinfo;
  }
  gst_clear_caps (&peer);
}

/* Worker thread: libyuv when it writes exactly what the caps say. Its
 * "ARGB" is the 32-bit word 0xAARRGGBB in little-endian memory: bytes
 * B, G, R, A, i.e. GStreamer's BGRx and BGRA. ARGBToI420 is BT.601 in
 * limited range, ARGBToJ420 BT.601 in full range (JFIF); the chroma is
 * the average of each 2x2 block. Transfer function and primaries are
 * not looked at: the converter does not convert them either (gamma and
 * primaries modes none). Anything else (another format, BT.709 as the
 * default of pictures taller than 576 lines) keeps the converter. */
static TilerStreamConvert
choose_convert (const GstVideoInfo * in, const GstVideoInfo * out)
{
  GstVideoFormat f = GST_VIDEO_INFO_FORMAT (in);
  const GstVideoColorimetry *c = &out->colorimetry;

  if ((f != GST_VIDEO_FORMAT_BGRx && f != GST_VIDEO_FORMAT_BGRA) ||
      GST_VIDEO_INFO_FORMAT (out) != GST_VIDEO_FORMAT_I420 ||
      c->matrix != GST_VIDEO_COLOR_MATRIX_BT601)
    return TILER_STREAM_CONVERT_VIDEO;
  if (c->range == GST_VIDEO_COLOR_RANGE_16_235)
    return TILER_STREAM_CONVERT_I420;
  if (c->range == GST_VIDEO_COLOR_RANGE_0_255)
    return TILER_STREAM_CONVERT_J420;
  return TILER_STREAM_CONVERT_VIDEO;
}

static void
push_caps (TilerStream * s, GstPad * pad, gint w, gint h, GstVideoFormat format)
{
  GstCaps *caps;

  if (w == s->caps_w && h == s->caps_h && format == s->caps_format)
    return;
  gst_video_info_set_format (&s->sinfo, format, w, h);
  negotiate_colorimetry (pad, &s->sinfo);
  GST_VIDEO_INFO_FPS_N (&s->sinfo) = GST_VIDEO_INFO_FPS_N (&s->info);
  GST_VIDEO_INFO_FPS_D (&s->sinfo) = GST_VIDEO_INFO_FPS_D (&s->info);
  GST_VIDEO_INFO_PAR_N (&s->sinfo) = 1;
  GST_VIDEO_INFO_PAR_D (&s->sinfo) = 1;
  caps = gst_video_info_to_caps (&s->sinfo);
  GST_DEBUG_OBJECT (pad, "stream caps %" GST_PTR_FORMAT, caps);
  gst_pad_push_event (pad, gst_event_new_caps (caps));
  gst_caps_unref (caps);
  s->caps_w = w;
  s->caps_h = h;
  s->caps_format = format;
  tiler_stream_free_resources (s);
  s->convert = choose_convert (&s->info, &s->sinfo);
  GST_DEBUG_OBJECT (pad, "stream conversion: %s",
      s->convert == TILER_STREAM_CONVERT_I420 ? "libyuv ARGBToI420" :
      s->convert == TILER_STREAM_CONVERT_J420 ? "libyuv ARGBToJ420" :
      "GstVideoConverter");
}

void
tiler_stream_set_input (TilerStream * s, GstPad * pad,
    const GstVideoInfo * info, gboolean resized, GstVideoFormat format)
{
  s->info = *info;
  if (!resized)
    return;
  s->caps_w = s->caps_h = 0;
  push_caps (s, pad, MAX (2, info->width & ~1), MAX (2, info->height & ~1),
      format);
}

/* Any thread */
GstStructure *
tiler_stream_converter_config (const GstVideoRectangle * r)
{
  return gst_structure_new ("GstVideoConverter",
      GST_VIDEO_CONVERTER_OPT_SRC_X, G_TYPE_INT, r->x,
      GST_VIDEO_CONVERTER_OPT_SRC_Y, G_TYPE_INT, r->y,
      GST_VIDEO_CONVERTER_OPT_SRC_WIDTH, G_TYPE_INT, r->w,
      GST_VIDEO_CONVERTER_OPT_SRC_HEIGHT, G_TYPE_INT, r->h,
      GST_VIDEO_CONVERTER_OPT_DITHER_METHOD,
      GST_TYPE_VIDEO_DITHER_METHOD, GST_VIDEO_DITHER_NONE,
      GST_VIDEO_CONVERTER_OPT_RESAMPLER_METHOD,
      GST_TYPE_VIDEO_RESAMPLER_METHOD, GST_VIDEO_RESAMPLER_METHOD_LINEAR,
      GST_VIDEO_CONVERTER_OPT_THREADS, G_TYPE_UINT, 1, NULL);
}

/* Worker thread: the converter for @r (made again when @r changes) */
static gboolean
ensure_converter (TilerStream * s, const GstVideoRectangle * r)
{
  if (s->conv && memcmp (&s->conv_rect, r, sizeof (*r)) != 0) {
    gst_video_converter_free (s->conv);
    s->conv = NULL;
  }
  if (!s->conv) {
    s->conv = gst_video_converter_new (&s->info, &s->sinfo,
        tiler_stream_converter_config (r));
    s->conv_rect = *r;
  }
  return s->conv != NULL;
}

static gboolean
ensure_resources (TilerStream * s, GstPad * pad, const GstVideoRectangle * r,
    guint stream_scale, GstVideoFormat format)
{
  gint scale = (gint) MAX (stream_scale, 1);
  GstStructure *config;
  GstCaps *caps;

  /* a scaled picture keeps even sizes (4:2:0 stream formats) */
  push_caps (s, pad,
      scale > 1 ? MAX (GST_ROUND_UP_2 (r->w / scale), 16) : r->w,
      scale > 1 ? MAX (GST_ROUND_UP_2 (r->h / scale), 16) : r->h, format);
  if (s->convert == TILER_STREAM_CONVERT_VIDEO && !ensure_converter (s, r))
    return FALSE;
  if (!s->pool) {
    s->pool = gst_video_buffer_pool_new ();
    config = gst_buffer_pool_get_config (s->pool);
    caps = gst_video_info_to_caps (&s->sinfo);
    gst_buffer_pool_config_set_params (config, caps,
        GST_VIDEO_INFO_SIZE (&s->sinfo), 2, 0);
    gst_caps_unref (caps);
    if (!gst_buffer_pool_set_config (s->pool, config) ||
        !gst_buffer_pool_set_active (s->pool, TRUE)) {
      gst_clear_object (&s->pool);
      return FALSE;
    }
  }
  return TRUE;
}

/* Worker thread: @r of @in into @out with libyuv; a scaled picture is
 * scaled first (box filter) into the scratch, then converted: cheaper
 * than converting the whole rectangle and scaling its planes
 * (bench/convert-bench). */
static gboolean
convert_libyuv (TilerStream * s, const GstVideoFrame * in,
    const GstVideoRectangle * r, GstVideoFrame * out)
{
  gint sstride = GST_VIDEO_FRAME_PLANE_STRIDE (in, 0);
  gint ow = GST_VIDEO_FRAME_WIDTH (out), oh = GST_VIDEO_FRAME_HEIGHT (out);
  gsize scaled = (gsize) ow * oh * 4;
  const guint8 *src;
  int (*to_yuv) (const uint8_t *, int, uint8_t *, int, uint8_t *, int,
      uint8_t *, int, int, int);

  if (r->x < 0 || r->y < 0 || r->w <= 0 || r->h <= 0 ||
      r->x + r->w > GST_VIDEO_FRAME_WIDTH (in) ||
      r->y + r->h > GST_VIDEO_FRAME_HEIGHT (in)) {
    GST_WARNING ("stream rectangle %dx%d at %d,%d outside the frame",
        r->w, r->h, r->x, r->y);
    return FALSE;
  }
  src = (const guint8 *) GST_VIDEO_FRAME_PLANE_DATA (in, 0) +
      (gsize) r->y * sstride + (gsize) r->x * 4;
  if (ow != r->w || oh != r->h) {
    if (s->scratch_size < scaled) {
      g_free (s->scratch);
      s->scratch = g_malloc (scaled);
      s->scratch_size = scaled;
    }
    ARGBScale (src, sstride, r->w, r->h, s->scratch, ow * 4, ow, oh,
        kFilterBox);
    src = s->scratch;
    sstride = ow * 4;
  }
  to_yuv = s->convert == TILER_STREAM_CONVERT_J420 ? ARGBToJ420 : ARGBToI420;
  return to_yuv (src, sstride,
      GST_VIDEO_FRAME_PLANE_DATA (out, 0),
      GST_VIDEO_FRAME_PLANE_STRIDE (out, 0),
      GST_VIDEO_FRAME_PLANE_DATA (out, 1),
      GST_VIDEO_FRAME_PLANE_STRIDE (out, 1),
      GST_VIDEO_FRAME_PLANE_DATA (out, 2),
      GST_VIDEO_FRAME_PLANE_STRIDE (out, 2), ow, oh) == 0;
}

gboolean
tiler_stream_push_frame (TilerStream * s, GstPad * pad,
    const TilerEngineResult * res, GstVideoFormat format, gboolean keyframe,
    GstFlowReturn * flow)
{
  GstBuffer *out = NULL;
  GstVideoFrame oframe;
  gboolean ok = TRUE;

  if (!ensure_resources (s, pad, &res->stream_rect, res->stream_scale,
          format) ||
      gst_buffer_pool_acquire_buffer (s->pool, &out, NULL) != GST_FLOW_OK)
    return FALSE;
  if (!gst_video_frame_map (&oframe, &s->sinfo, out, GST_MAP_WRITE)) {
    gst_buffer_unref (out);
    return FALSE;
  }
  if (s->convert == TILER_STREAM_CONVERT_VIDEO)
    gst_video_converter_frame (s->conv, res->frame, &oframe);
  else
    ok = convert_libyuv (s, res->frame, &res->stream_rect, &oframe);
  gst_video_frame_unmap (&oframe);
  if (!ok) {
    gst_buffer_unref (out);
    return FALSE;
  }
  gst_buffer_add_spice_stream_meta (out, &res->stream_rect, res->stream_id,
      keyframe);
  GST_BUFFER_PTS (out) = res->pts;
  GST_BUFFER_DURATION (out) = res->duration;
  if (keyframe) {
    GST_BUFFER_FLAG_SET (out, GST_BUFFER_FLAG_DISCONT);
    gst_pad_push_event (pad,
        gst_video_event_new_downstream_force_key_unit (res->pts,
            GST_CLOCK_TIME_NONE, res->running_time, TRUE, res->stream_id));
  }
  *flow = gst_pad_push (pad, out);
  return TRUE;
}

void
tiler_stream_push_gap (GstPad * pad, const TilerEngineResult * res)
{
  if (GST_CLOCK_TIME_IS_VALID (res->pts))
    gst_pad_push_event (pad, gst_event_new_gap (res->pts, res->duration));
}
