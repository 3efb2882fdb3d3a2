/* gst-spice: spicesrc's display channel and the frames it fills
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The captured display channel's primary surface (spice-gtk's canvas) is
 * copied into the frame being made (self->cur) on the context thread, at
 * safe points (cur_fill_locked()); its invalidates are the frames' damage
 * and its MARK says when the first picture is complete. The streaming
 * thread's create() (gstspicesrc.c) installs the frame being made (a held
 * frame that downstream let go of, or one from the pool, prefaulted on
 * the first input event) and takes it with the pending damage.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/base/gstbasesrc.h>

#include "gstspicesrcdisplay.h"
#include "gstspicesrccontext.h"


/* bound on the damage rectangles kept per frame */
#define MAX_DAMAGE_RECTS 64

/* streaming thread, self->lock held: whether a frame is due (damage on a
 * surface that has its MARK, or had MARK_TIMEOUT_US to get it) */
gboolean
gst_spice_src_display_frame_ready_locked (GstSpiceSrc * self)
{
  if (!self->have_surface || gst_spice_region_is_empty (&self->damage))
    return FALSE;
  if (self->marked)
    return TRUE;
  return g_get_monotonic_time () - self->surface_us >= MARK_TIMEOUT_US;
}

/* any thread, the region's owner's lock held: keep @r to MAX_DAMAGE_RECTS
 * rectangles (merging down to half of them once it has more) */
static void
region_bound (GstSpiceRegion * r)
{
  if (gst_spice_region_n_rects (r) > MAX_DAMAGE_RECTS)
    gst_spice_region_limit (r, MAX_DAMAGE_RECTS / 2);
}

/* context thread, self->lock held, at a safe point: copy the stale part of
 * the frame being made from spice-gtk's canvas. A safe point is one where
 * the canvas holds exactly what spice-gtk has reported: inside a
 * display-invalidate or primary-create handler, or in a source of lower
 * priority than G_PRIORITY_DEFAULT_IDLE. spice-gtk draws in the display
 * channel's coroutine and then raises the signal from a g_idle_add() idle
 * while the coroutine waits for it, so between a draw and its invalidate
 * an idle source is always ready and a G_PRIORITY_LOW source is not
 * dispatched. */
static void
cur_fill_locked (GstSpiceSrc * self)
{
  const GstVideoRectangle *r;
  guint8 *dst;
  gint dstride;
  guint i, n;

  if (!self->cur || !self->canvas ||
      GST_VIDEO_FRAME_WIDTH (&self->cur_frame) != self->canvas_w ||
      GST_VIDEO_FRAME_HEIGHT (&self->cur_frame) != self->canvas_h)
    return;
  dst = GST_VIDEO_FRAME_PLANE_DATA (&self->cur_frame, 0);
  dstride = GST_VIDEO_FRAME_PLANE_STRIDE (&self->cur_frame, 0);
  r = gst_spice_region_rects (&self->stale);
  n = gst_spice_region_n_rects (&self->stale);
  for (i = 0; i < n; i++) {
    gst_spice_blit_bgrx (dst, dstride, r[i].x, r[i].y, self->canvas,
        self->canvas_stride, r[i].x, r[i].y, r[i].w, r[i].h);
    self->st_copied_area += gst_spice_rect_area (&r[i]);
  }
  gst_spice_region_reset (&self->stale);
}

/* context thread: the catch-up source (G_PRIORITY_LOW, see
 * cur_fill_locked()) for a frame whose stale part no invalidate copied */
static gboolean
ctx_catchup (gpointer data)
{
  GstSpiceSrc *self = data;

  g_mutex_lock (&self->lock);
  if (self->catchup == g_main_current_source ())
    g_clear_pointer (&self->catchup, g_source_unref);
  if (self->cur && !gst_spice_region_is_empty (&self->stale))
    self->st_catchups++;
  cur_fill_locked (self);
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
  return G_SOURCE_REMOVE;
}

/* streaming thread, self->lock held: have the context thread fill the
 * stale part of the frame being made at its next safe point */
void
gst_spice_src_display_catchup_schedule_locked (GstSpiceSrc * self)
{
  GSource *src;

  if (self->catchup)
    return;
  src = g_idle_source_new ();
  g_source_set_priority (src, G_PRIORITY_LOW);
  g_source_set_callback (src, ctx_catchup, gst_object_ref (self),
      gst_object_unref);
  g_source_set_static_name (src, "spicesrc-catchup");
  self->catchup = src;
  gst_spice_src_context_attach (src);
}

/* context thread (display-primary-create): the surface that frames copy,
 * whole at first */
static void
on_primary_create (SpiceChannel * channel, gint format, gint width,
    gint height, gint stride, gint shmid, gpointer imgdata, GstSpiceSrc * self)
{
  GstVideoRectangle full = { 0, 0, width, height };

  if (gst_spice_src_session_stopped (self))
    return;
  GST_INFO_OBJECT (self, "primary surface %dx%d format %d stride %d",
      width, height, format, stride);
  if ((format != SPICE_SURFACE_FMT_32_xRGB &&
          format != SPICE_SURFACE_FMT_32_ARGB) || width <= 0 || height <= 0
      || stride < width * 4) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Unsupported SPICE surface (format %d, %dx%d)", format, width,
            height), (NULL));
    g_mutex_lock (&self->lock);
    self->fatal = TRUE;
    gst_spice_src_set_last_error_locked (self, "unsupported surface format");
    g_cond_broadcast (&self->cond);
    g_mutex_unlock (&self->lock);
    return;
  }
  self->canvas = imgdata;
  self->canvas_stride = stride;
  self->canvas_w = width;
  self->canvas_h = height;

  g_mutex_lock (&self->lock);
  self->width = width;
  self->height = height;
  /* a frame of another size is dropped by create() */
  gst_spice_region_reset (&self->stale);
  gst_spice_region_add (&self->stale, &full);
  cur_fill_locked (self);
  gst_spice_region_reset (&self->damage);
  gst_spice_region_add (&self->damage, &full);
  self->damage_us = g_get_monotonic_time ();
  self->have_surface = TRUE;
  self->surface_us = self->damage_us;
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);

  gst_pad_mark_reconfigure (GST_BASE_SRC_PAD (self));
}

/* context thread (display-primary-destroy) */
static void
on_primary_destroy (SpiceChannel * channel, GstSpiceSrc * self)
{
  GST_INFO_OBJECT (self, "primary surface destroyed");
  self->canvas = NULL;
  g_mutex_lock (&self->lock);
  self->have_surface = FALSE;
  self->marked = FALSE;
  g_mutex_unlock (&self->lock);
}

/* context thread (display-invalidate): a draw, a safe point */
static void
on_invalidate (SpiceChannel * channel, gint x, gint y, gint w, gint h,
    GstSpiceSrc * self)
{
  GstVideoRectangle r = { x, y, w, h };

  if (!self->canvas || gst_spice_src_session_stopped (self))
    return;
  if (!gst_spice_rect_clip (&r, self->canvas_w, self->canvas_h))
    return;

  g_mutex_lock (&self->lock);
  if (self->width != self->canvas_w || self->height != self->canvas_h) {
    g_mutex_unlock (&self->lock);
    return;
  }
  /* a safe point: the canvas holds what spice-gtk has reported so far.
   * The frame being made gets the rectangle (and what it still lacked)
   * together with its damage, atomically for create() */
  if (self->cur) {
    gst_spice_region_add (&self->stale, &r);
    region_bound (&self->stale);
    cur_fill_locked (self);
  }
  gst_spice_region_add (&self->damage, &r);
  region_bound (&self->damage);
  self->damage_us = g_get_monotonic_time ();
  self->st_invalidates++;
  if (gst_spice_src_context_is_driver_thread ())
    self->st_invalidates_helper++;
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
}

/* context thread (notify::monitors, notify::monitors-max, and a new
 * surface): the heads spice-gtk sees on the captured display channel (a
 * server's MONITORS_CONFIG, or one head of the whole surface without
 * one) become the spice-monitors event sent before the next frame */
static void
on_monitors (GObject * channel, GParamSpec * pspec, GstSpiceSrc * self)
{
  GArray *monitors = NULL;
  GstSpiceHeads m = { 0, };
  guint max = 0, i;

  if (gst_spice_src_session_stopped (self))
    return;
  g_object_get (channel, "monitors", &monitors, "monitors-max", &max, NULL);
  for (i = 0; monitors && i < monitors->len &&
      m.count < GST_SPICE_MAX_HEADS; i++) {
    SpiceDisplayMonitorConfig *c =
        &g_array_index (monitors, SpiceDisplayMonitorConfig, i);

    if (c->width == 0 || c->height == 0)
      continue;
    m.monitors[m.count].id = c->id;
    m.monitors[m.count].x = c->x;
    m.monitors[m.count].y = c->y;
    m.monitors[m.count].width = c->width;
    m.monitors[m.count].height = c->height;
    m.count++;
  }
  if (monitors)
    g_array_unref (monitors);
  if (m.count == 0)
    return;
  m.max = MAX (max, m.count);
  GST_INFO_OBJECT (self, "%u monitors, max %u", m.count, m.max);
  g_mutex_lock (&self->lock);
  if (memcmp (&m, &self->monitors, sizeof (m)) != 0) {
    self->monitors = m;
    self->monitors_pending = TRUE;
    g_cond_broadcast (&self->cond);
  }
  g_mutex_unlock (&self->lock);
}

/* context thread (display-mark): the first picture is complete */
static void
on_mark (SpiceChannel * channel, gint mark, GstSpiceSrc * self)
{
  GST_DEBUG_OBJECT (self, "mark %d", mark);
  if (gst_spice_src_session_stopped (self))
    return;
  g_mutex_lock (&self->lock);
  self->marked = mark != 0;
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
}

/* streaming thread (or stop(), once it is gone): forget the held frames
 * and the damage history */
void
gst_spice_src_display_held_frames_reset (GstSpiceSrc * self)
{
  guint i;

  for (i = 0; i < N_HELD_FRAMES; i++)
    gst_clear_buffer (&self->held[i]);
  for (i = 0; i < DAMAGE_HISTORY; i++) {
    gst_spice_region_reset (&self->hist[i]);
    self->hist_seq[i] = 0;
  }
}

/* streaming thread: a held frame that downstream has let go of (we hold
 * the only reference and its memory is ours alone), the newest such;
 * NULL if none. Its seq goes to @seq. */
static GstBuffer *
held_frames_take (GstSpiceSrc * self, guint64 * seq)
{
  GstBuffer *buf;
  gint i, best = -1;

  for (i = 0; i < N_HELD_FRAMES; i++) {
    buf = self->held[i];
    if (buf && gst_buffer_is_writable (buf) &&
        gst_buffer_is_all_memory_writable (buf) &&
        (best < 0 || self->held_seq[i] > self->held_seq[best]))
      best = i;
  }
  if (best < 0)
    return NULL;
  buf = self->held[best];
  self->held[best] = NULL;
  *seq = self->held_seq[best];
  return buf;
}

/* streaming thread: how many pushed frames we hold */
static guint
held_frames_count (GstSpiceSrc * self)
{
  guint i, n = 0;

  for (i = 0; i < N_HELD_FRAMES; i++)
    n += self->held[i] != NULL;
  return n;
}

/* streaming thread: keep a reference to @buf, which holds frame @seq,
 * in place of an empty slot or the oldest frame */
void
gst_spice_src_display_held_frames_put (GstSpiceSrc * self, GstBuffer * buf,
    guint64 seq)
{
  gint i, slot = 0;

  for (i = 0; i < N_HELD_FRAMES; i++) {
    if (!self->held[i]) {
      slot = i;
      break;
    }
    if (self->held_seq[i] < self->held_seq[slot])
      slot = i;
  }
  gst_clear_buffer (&self->held[slot]);
  self->held[slot] = gst_buffer_ref (buf);
  self->held_seq[slot] = seq;
}

/* streaming thread, self->lock held: the frame being made, no longer
 * filled (still mapped: unmap it with @frame); NULL if none */
GstBuffer *
gst_spice_src_display_cur_take_locked (GstSpiceSrc * self,
    GstVideoFrame * frame)
{
  GstBuffer *buf = self->cur;

  if (buf) {
    *frame = self->cur_frame;
    self->cur = NULL;
  }
  gst_spice_region_reset (&self->stale);
  return buf;
}

/* streaming thread: drop the frame being made (new pool, new size, stop) */
void
gst_spice_src_display_cur_drop (GstSpiceSrc * self)
{
  GstVideoFrame frame;
  GstBuffer *buf;
  GSource *src;

  g_mutex_lock (&self->lock);
  buf = gst_spice_src_display_cur_take_locked (self, &frame);
  src = g_steal_pointer (&self->catchup);
  g_mutex_unlock (&self->lock);
  if (src) {
    g_source_destroy (src);
    g_source_unref (src);
  }
  if (buf) {
    gst_video_frame_unmap (&frame);
    gst_buffer_unref (buf);
  }
}

/* streaming thread, self->lock held: what frame @held_seq (G_MAXUINT64:
 * unknown content) lacks of the picture reported so far, into @stale:
 * the damage of the frames pushed since and the pending damage, when
 * remembered; otherwise the whole surface */
static void
cur_stale_since_locked (GstSpiceSrc * self, guint64 held_seq,
    GstSpiceRegion * stale)
{
  GstVideoRectangle full = { 0, 0, self->width, self->height };
  guint64 full_area = (guint64) self->width * self->height, k;
  gboolean whole = held_seq >= self->seq;

  gst_spice_region_reset (stale);
  if (!whole) {
    gst_spice_region_copy (stale, &self->damage);
    for (k = held_seq + 1; k < self->seq && !whole; k++) {
      guint i = k % DAMAGE_HISTORY;

      if (self->hist_seq[i] != k + 1)
        whole = TRUE;
      else
        gst_spice_region_add_region (stale, &self->hist[i]);
    }
    whole = whole || gst_spice_region_area (stale) * 4 >= full_area * 3;
  }
  if (whole) {
    gst_spice_region_reset (stale);
    gst_spice_region_add (stale, &full);
  } else {
    gst_spice_region_clip (stale, self->width, self->height);
    region_bound (stale);
    self->st_frames_reused++;
  }
}

/* Writes every page of the frames that will circulate (N_HELD_FRAMES, see
 * gst_spice_src_display_cur_install()) once, and gives them back to the
 * pool. A page's first write is a page fault, ~12 us on a virtual machine: 12 ms for a 1280x800
 * frame, which each of a session's first three key presses waited for (a
 * new frame is needed while downstream holds the ones before). It is done
 * on a thread of its own when the first input event of a pool comes (a
 * client is there: its first moves come before its first key), so that an
 * idle session that nobody uses keeps the memory it never wrote. */
typedef struct
{
  GstSpiceSrc *self;
  GstBufferPool *pool;
} Prefault;

/* the prefault thread */
static gpointer
prefault_thread (gpointer data)
{
  Prefault *pf = data;
  GstBufferPoolAcquireParams params = { 0, };
  GstBuffer *bufs[N_HELD_FRAMES] = { NULL, };
  guint i, n;

  params.flags = GST_BUFFER_POOL_ACQUIRE_FLAG_DONTWAIT;
  for (n = 0; n < N_HELD_FRAMES; n++) {
    if (gst_buffer_pool_acquire_buffer (pf->pool, &bufs[n], &params) !=
        GST_FLOW_OK)
      break;
    gst_buffer_memset (bufs[n], 0, 0, gst_buffer_get_size (bufs[n]));
  }
  for (i = 0; i < n; i++)
    gst_buffer_unref (bufs[i]);
  GST_DEBUG_OBJECT (pf->self, "prefaulted %u frames", n);
  g_atomic_int_add (&pf->self->st_prefaulted, (gint) n);
  gst_object_unref (pf->pool);
  gst_object_unref (pf->self);
  g_free (pf);
  return NULL;
}

/* any thread (an input event): the first one since the pool is new starts
 * the prefault */
void
gst_spice_src_display_prefault_start (GstSpiceSrc * self)
{
  Prefault *pf;
  GstBufferPool *pool;

  if (!g_atomic_int_compare_and_exchange (&self->prefault, TRUE, FALSE))
    return;
  pool = gst_base_src_get_buffer_pool (GST_BASE_SRC (self));
  if (!pool)
    return;
  pf = g_new (Prefault, 1);
  pf->self = gst_object_ref (self);
  pf->pool = pool;
  g_thread_unref (g_thread_new ("spicesrc-prefault", prefault_thread, pf));
}

/* streaming thread, self->lock not held: install the frame being made:
 * a held frame that downstream has let go of (it lacks only the damage
 * since), else a new one from the pool (with @reuse_only only while we
 * hold fewer than N_HELD_FRAMES: then the frames in circulation grow to
 * that many, enough for one to be back whenever the next frame is
 * started; and not before the first input event, see
 * gst_spice_src_display_prefault_start()). Its stale part is filled on
 * the context thread: at the next invalidate, or by the catch-up source
 * when damage is already pending. */
GstFlowReturn
gst_spice_src_display_cur_install (GstSpiceSrc * self, gboolean reuse_only)
{
  GstBaseSrc *bsrc = GST_BASE_SRC (self);
  GstBufferPool *pool;
  GstBuffer *buf;
  GstVideoFrame frame;
  GstFlowReturn ret;
  guint64 held_seq = G_MAXUINT64;

  buf = self->hold_frames ? held_frames_take (self, &held_seq) : NULL;
  if (buf) {
    GstSpiceDamageMeta *old = gst_buffer_get_spice_damage_meta (buf);

    if (old)
      gst_buffer_remove_meta (buf, (GstMeta *) old);
    GST_BUFFER_FLAG_UNSET (buf, GST_BUFFER_FLAG_DISCONT);
    GST_BUFFER_OFFSET (buf) = GST_BUFFER_OFFSET_NONE;
    GST_BUFFER_OFFSET_END (buf) = GST_BUFFER_OFFSET_NONE;
  } else if (reuse_only && self->hold_frames &&
      (held_frames_count (self) >= N_HELD_FRAMES ||
          g_atomic_int_get (&self->prefault))) {
    /* nor ahead of time a frame whose pages nobody wrote yet (before the
     * first input event: see gst_spice_src_display_prefault_start()) */
    return GST_FLOW_OK;
  } else {
    pool = gst_base_src_get_buffer_pool (bsrc);
    if (!pool) {
      GST_ELEMENT_ERROR (self, RESOURCE, FAILED, (NULL), ("no buffer pool"));
      return GST_FLOW_ERROR;
    }
    ret = gst_buffer_pool_acquire_buffer (pool, &buf, NULL);
    gst_object_unref (pool);
    if (ret != GST_FLOW_OK)
      return ret;
  }
  if (!gst_video_frame_map (&frame, &self->out_info, buf, GST_MAP_WRITE)) {
    gst_buffer_unref (buf);
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE, (NULL), ("can't map buffer"));
    return GST_FLOW_ERROR;
  }

  g_mutex_lock (&self->lock);
  if (self->flushing || self->fatal || self->cur ||
      GST_VIDEO_FRAME_WIDTH (&frame) != self->width ||
      GST_VIDEO_FRAME_HEIGHT (&frame) != self->height) {
    /* things moved while we allocated */
    g_mutex_unlock (&self->lock);
    gst_video_frame_unmap (&frame);
    gst_buffer_unref (buf);
    return GST_FLOW_OK;
  }
  self->cur = buf;
  self->cur_frame = frame;
  cur_stale_since_locked (self, held_seq, &self->stale);
  if (!gst_spice_region_is_empty (&self->damage))
    gst_spice_src_display_catchup_schedule_locked (self);
  g_mutex_unlock (&self->lock);
  return GST_FLOW_OK;
}

/* context thread: follow @channel, the session's display channel with the
 * captured id (forgotten with g_signal_handlers_disconnect_by_data()) */
void
gst_spice_src_display_connect (GstSpiceSrc * self, SpiceChannel * channel)
{
  g_signal_connect (channel, "display-primary-create",
      G_CALLBACK (on_primary_create), self);
  g_signal_connect (channel, "display-primary-destroy",
      G_CALLBACK (on_primary_destroy), self);
  g_signal_connect (channel, "display-invalidate",
      G_CALLBACK (on_invalidate), self);
  g_signal_connect (channel, "display-mark", G_CALLBACK (on_mark), self);
  g_signal_connect (channel, "notify::monitors", G_CALLBACK (on_monitors),
      self);
  g_signal_connect (channel, "notify::monitors-max",
      G_CALLBACK (on_monitors), self);
}
