/* spicetiler: the stream pad (caps, converter, pool, frames, GAPs)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The stream rectangle is cut out of the input frame by a GstVideoConverter
 * (crop options, no intermediate copy) into a buffer of an own video buffer
 * pool, in stream-format, with a GstSpiceStreamMeta. Worker thread only.
 */
#include "gstspicetilerpriv.h"

void
gst_spice_tiler_stream_free_resources (GstSpiceTiler * self)
{
  if (self->conv) {
    gst_video_converter_free (self->conv);
    self->conv = NULL;
  }
  if (self->pool) {
    gst_buffer_pool_set_active (self->pool, FALSE);
    gst_object_unref (self->pool);
    self->pool = NULL;
  }
}

void
gst_spice_tiler_push_stream_caps (GstSpiceTiler * self, gint w, gint h,
    GstVideoFormat format)
{
  GstCaps *caps;

  if (w == self->stream_caps_w && h == self->stream_caps_h &&
      format == self->stream_caps_format)
    return;
  gst_video_info_set_format (&self->sinfo, format, w, h);
  GST_VIDEO_INFO_FPS_N (&self->sinfo) = GST_VIDEO_INFO_FPS_N (&self->info);
  GST_VIDEO_INFO_FPS_D (&self->sinfo) = GST_VIDEO_INFO_FPS_D (&self->info);
  GST_VIDEO_INFO_PAR_N (&self->sinfo) = 1;
  GST_VIDEO_INFO_PAR_D (&self->sinfo) = 1;
  caps = gst_video_info_to_caps (&self->sinfo);
  GST_DEBUG_OBJECT (self, "stream caps %" GST_PTR_FORMAT, caps);
  gst_pad_push_event (self->streampad, gst_event_new_caps (caps));
  gst_caps_unref (caps);
  self->stream_caps_w = w;
  self->stream_caps_h = h;
  self->stream_caps_format = format;
  gst_spice_tiler_stream_free_resources (self);
}

void
gst_spice_tiler_push_gap (GstSpiceTiler * self)
{
  if (GST_CLOCK_TIME_IS_VALID (self->cur_pts))
    gst_pad_push_event (self->streampad, gst_event_new_gap (self->cur_pts,
            self->cur_duration));
}

void
gst_spice_tiler_stream_end (GstSpiceTiler * self)
{
  TilerDiff *d = &self->diff;
  gint cx, cy;

  if (!self->stream.active)
    return;
  GST_DEBUG_OBJECT (self, "stream %u ends", self->stream_id);
  for (cy = 0; cy < d->ncy; cy++)
    for (cx = 0; cx < d->ncx; cx++)
      if (tiler_diff_cell_inside (d, cx, cy, &self->stream.rect))
        d->lossy_rt[TILER_CELL_INDEX (d, cx, cy)] = TILER_RT_UNKNOWN;
  self->stream.active = FALSE;
  self->stream_dirty = FALSE;
  g_mutex_lock (&self->lock);
  self->stats.stream_active = FALSE;
  self->stats.stream_fps = 0;
  g_mutex_unlock (&self->lock);
}

void
gst_spice_tiler_stream_begin (GstSpiceTiler * self, const GstVideoRectangle * r,
    guint scale, GstClockTime now)
{
  self->stream.active = TRUE;
  self->stream_dirty = TRUE;
  self->stream.rect = *r;
  self->stream.last_change = now;
  self->stream.shrink_since = GST_CLOCK_TIME_NONE;
  self->stream_id++;
  self->fps_window_start = now;
  self->stream_scale = MAX (scale, 1);
  self->fps_window_frames = 0;
  GST_DEBUG_OBJECT (self, "stream %u starts at %d,%d %dx%d", self->stream_id,
      r->x, r->y, r->w, r->h);
  g_mutex_lock (&self->lock);
  self->keyframe_pending = TRUE;
  self->stats.stream_starts++;
  self->stats.stream_active = TRUE;
  self->stats.stream_rect = *r;
  self->stats.stream_id = self->stream_id;
  g_mutex_unlock (&self->lock);
}

static gboolean
ensure_stream_resources (GstSpiceTiler * self, const TilerParams * p)
{
  const GstVideoRectangle *r = &self->stream.rect;
  gint scale = (gint) MAX (self->stream_scale, 1);
  GstStructure *config;
  GstCaps *caps;

  /* a scaled picture keeps even sizes (4:2:0 stream formats) */
  gst_spice_tiler_push_stream_caps (self,
      scale > 1 ? MAX (GST_ROUND_UP_2 (r->w / scale), 16) : r->w,
      scale > 1 ? MAX (GST_ROUND_UP_2 (r->h / scale), 16) : r->h,
      p->stream_format);
  if (self->conv && memcmp (&self->conv_rect, r, sizeof (*r)) != 0) {
    gst_video_converter_free (self->conv);
    self->conv = NULL;
  }
  if (!self->conv) {
    self->conv = gst_video_converter_new (&self->info, &self->sinfo,
        gst_structure_new ("GstVideoConverter",
            GST_VIDEO_CONVERTER_OPT_SRC_X, G_TYPE_INT, r->x,
            GST_VIDEO_CONVERTER_OPT_SRC_Y, G_TYPE_INT, r->y,
            GST_VIDEO_CONVERTER_OPT_SRC_WIDTH, G_TYPE_INT, r->w,
            GST_VIDEO_CONVERTER_OPT_SRC_HEIGHT, G_TYPE_INT, r->h,
            GST_VIDEO_CONVERTER_OPT_DITHER_METHOD,
            GST_TYPE_VIDEO_DITHER_METHOD, GST_VIDEO_DITHER_NONE,
            GST_VIDEO_CONVERTER_OPT_RESAMPLER_METHOD,
            GST_TYPE_VIDEO_RESAMPLER_METHOD, GST_VIDEO_RESAMPLER_METHOD_LINEAR,
            GST_VIDEO_CONVERTER_OPT_THREADS, G_TYPE_UINT, 1, NULL));
    self->conv_rect = *r;
    if (!self->conv)
      return FALSE;
  }
  if (!self->pool) {
    self->pool = gst_video_buffer_pool_new ();
    config = gst_buffer_pool_get_config (self->pool);
    caps = gst_video_info_to_caps (&self->sinfo);
    gst_buffer_pool_config_set_params (config, caps,
        GST_VIDEO_INFO_SIZE (&self->sinfo), 2, 0);
    gst_caps_unref (caps);
    if (!gst_buffer_pool_set_config (self->pool, config) ||
        !gst_buffer_pool_set_active (self->pool, TRUE)) {
      gst_clear_object (&self->pool);
      return FALSE;
    }
  }
  return TRUE;
}

/* Returns TRUE when a frame went out (and the shadow took the area). */
gboolean
gst_spice_tiler_push_stream_frame (GstSpiceTiler * self, const TilerParams * p,
    GstClockTime now)
{
  GstBuffer *out = NULL;
  GstVideoFrame oframe;
  GstFlowReturn ret;
  gboolean keyframe;

  if (!ensure_stream_resources (self, p) ||
      gst_buffer_pool_acquire_buffer (self->pool, &out, NULL) != GST_FLOW_OK)
    return FALSE;
  if (!gst_video_frame_map (&oframe, &self->sinfo, out, GST_MAP_WRITE)) {
    gst_buffer_unref (out);
    return FALSE;
  }
  gst_video_converter_frame (self->conv, &self->cur_frame, &oframe);
  gst_video_frame_unmap (&oframe);
  g_mutex_lock (&self->lock);
  keyframe = self->keyframe_pending;
  self->keyframe_pending = FALSE;
  g_mutex_unlock (&self->lock);
  gst_buffer_add_spice_stream_meta (out, &self->stream.rect, self->stream_id,
      keyframe);
  GST_BUFFER_PTS (out) = self->cur_pts;
  GST_BUFFER_DURATION (out) = self->cur_duration;
  if (keyframe) {
    GST_BUFFER_FLAG_SET (out, GST_BUFFER_FLAG_DISCONT);
    gst_pad_push_event (self->streampad,
        gst_video_event_new_downstream_force_key_unit (self->cur_pts,
            GST_CLOCK_TIME_NONE, now, TRUE, self->stream_id));
  }
  ret = gst_pad_push (self->streampad, out);
  gst_spice_tiler_update_flow (self, self->streampad, ret);
  gst_spice_tiler_copy_to_shadow (self, &self->stream.rect);
  gst_spice_tiler_mark_lossy (self, &self->stream.rect, now);
  self->last_stream_rt = now;
  self->fps_window_frames++;
  g_mutex_lock (&self->lock);
  self->stats.stream_frames++;
  if (now > self->fps_window_start + GST_SECOND) {
    self->stats.stream_fps = self->fps_window_frames * (gdouble) GST_SECOND /
        (now - self->fps_window_start);
    self->fps_window_start = now;
    self->fps_window_frames = 0;
  }
  g_mutex_unlock (&self->lock);
  return TRUE;
}

gboolean
gst_spice_tiler_stream_frame_allowed (GstSpiceTiler * self, GstClockTime now)
{
  gboolean ok = TRUE;

  g_mutex_lock (&self->lock);
  if (self->rate_fps_n > 0 && GST_CLOCK_TIME_IS_VALID (self->last_stream_rt)) {
    GstClockTime interval = gst_util_uint64_scale (GST_SECOND,
        self->rate_fps_d, self->rate_fps_n);

    /* a millisecond of slack for rounded timestamps */
    if (now + GST_MSECOND < self->last_stream_rt + interval)
      ok = FALSE;
  }
  if (GST_CLOCK_TIME_IS_VALID (self->stream_qos_earliest) &&
      now < self->stream_qos_earliest)
    ok = FALSE;
  if (!ok)
    self->stats.stream_dropped++;
  g_mutex_unlock (&self->lock);
  return ok;
}
