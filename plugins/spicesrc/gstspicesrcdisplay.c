/* gst-spice: spicesrc's display channel and the frames it fills
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The captured display channels' primary surfaces (spice-gtk's canvases)
 * are copied into the frame being made (self->cur) on the context thread,
 * at safe points (cur_fill_locked()); their invalidates are the frames'
 * damage and a MARK says when the first picture is complete. With
 * damage-only caps (memory:SpiceDamage) there is no frame: at a safe
 * point after create() asked, the damage's pixels are packed into a
 * buffer of their size (pack_locked()). The display
 * channel with the captured id and every one with a higher id (qemu with
 * several QXL devices: one channel per head) are heads side by side in the
 * frame, in id order, each at its own offset; a channel without a surface
 * takes no room. The heads go downstream as the spice-monitors event: the
 * channels' own monitors (MONITORS_CONFIG) with one head, one monitor per
 * channel with several. The streaming
 * thread's create() (gstspicesrc.c) installs the frame being made (a held
 * frame that downstream let go of, or one from the pool, prefaulted on
 * the first input event) and takes it with the pending damage.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/base/gstbasesrc.h>
#include <string.h>

#include "gstspicesrcdisplay.h"
#include "gstspicesrccontext.h"


/* bound on the damage rectangles kept per frame */
#define MAX_DAMAGE_RECTS 64

/* streaming thread, self->lock held: whether a frame is due (damage, or
 * packed damage, on a surface that has its MARK, or had MARK_TIMEOUT_US
 * to get it) */
gboolean
gst_spice_src_display_frame_ready_locked (GstSpiceSrc * self)
{
  if (!self->have_surface || (gst_spice_region_is_empty (&self->damage) &&
          !self->packed))
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

/* context thread, at a safe point (a GstSpiceDamageFillFunc): the
 * pixels of @r, a rectangle of the frame, from the heads' canvases (black
 * below a head shorter than the frame) into @dst, @r's corner */
static void
heads_fill (gpointer data, const GstVideoRectangle * r, guint8 * dst,
    gsize dstride)
{
  GstSpiceSrc *self = data;
  guint j;

  for (j = 0; j < self->n_heads; j++) {
    const GstSpiceSrcHead *hd = &self->heads[j];
    GstVideoRectangle col = { hd->x, 0, hd->w, self->canvas_h }, c;
    guint8 *d;
    gint y, rows;

    if (!hd->canvas || !gst_spice_rect_intersect (r, &col, &c))
      continue;
    d = dst + (gsize) (c.y - r->y) * dstride + (gsize) (c.x - r->x) * 4;
    rows = CLAMP (hd->h - c.y, 0, c.h);
    if (rows > 0)
      gst_spice_blit_bgrx (d, dstride, 0, 0, hd->canvas, hd->stride,
          c.x - hd->x, c.y, c.w, rows);
    for (y = rows; y < c.h; y++)
      memset (d + (gsize) y * dstride, 0, c.w * 4);
  }
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

  if (!self->cur || self->canvas_w <= 0 ||
      GST_VIDEO_FRAME_WIDTH (&self->cur_frame) != self->canvas_w ||
      GST_VIDEO_FRAME_HEIGHT (&self->cur_frame) != self->canvas_h)
    return;
  dst = GST_VIDEO_FRAME_PLANE_DATA (&self->cur_frame, 0);
  dstride = GST_VIDEO_FRAME_PLANE_STRIDE (&self->cur_frame, 0);
  r = gst_spice_region_rects (&self->stale);
  n = gst_spice_region_n_rects (&self->stale);
  for (i = 0; i < n; i++) {
    heads_fill (self, &r[i], dst + (gsize) r[i].y * dstride +
        (gsize) r[i].x * 4, dstride);
    self->st_copied_area += gst_spice_rect_area (&r[i]);
  }
  gst_spice_region_reset (&self->stale);
}

/* context thread, self->lock held, at a safe point (cur_fill_locked()):
 * the damage-only buffer create() asked for, the pending damage's pixels
 * packed (gst_spice_damage_pack_with()); the damage goes with it */
static void
pack_locked (GstSpiceSrc * self)
{
  const GstVideoRectangle *r;
  guint n;

  if (!self->pack_wanted || self->packed || self->canvas_w <= 0 ||
      self->width != self->canvas_w || self->height != self->canvas_h)
    return;
  gst_spice_region_clip (&self->damage, self->width, self->height);
  if (gst_spice_region_is_empty (&self->damage))
    return;
  r = gst_spice_region_rects (&self->damage);
  n = gst_spice_region_n_rects (&self->damage);
  self->packed = gst_spice_damage_pack_with (r, n, 0, heads_fill, self);
  self->packed_w = self->width;
  self->packed_h = self->height;
  self->packed_us = self->damage_us;
  self->st_copied_area += gst_spice_region_area (&self->damage);
  gst_spice_region_reset (&self->damage);
  self->pack_wanted = FALSE;
  g_cond_broadcast (&self->cond);
}

/* streaming thread, self->lock held: the packed damage-only buffer, NULL
 * if none is ready (then the context packs at its next safe point) */
GstBuffer *
gst_spice_src_display_packed_take_locked (GstSpiceSrc * self,
    gint64 * arrival_us)
{
  if (self->packed && (self->packed_w != self->width ||
          self->packed_h != self->height))
    gst_clear_buffer (&self->packed);
  if (!self->packed) {
    self->pack_wanted = TRUE;
    gst_spice_src_display_catchup_schedule_locked (self);
    return NULL;
  }
  *arrival_us = self->packed_us;
  return g_steal_pointer (&self->packed);
}

/* context: the head of @channel, NULL if it is none */
static GstSpiceSrcHead *
head_of (GstSpiceSrc * self, SpiceChannel * channel)
{
  guint i;

  for (i = 0; i < self->n_heads; i++)
    if (self->heads[i].channel == channel)
      return &self->heads[i];
  return NULL;
}

/* context: lays the heads that have a surface side by side (canvas_w x
 * canvas_h, the frame's size); TRUE if anything moved */
static gboolean
heads_layout (GstSpiceSrc * self)
{
  gint x = 0, h = 0;
  gboolean moved = FALSE;
  guint i;

  for (i = 0; i < self->n_heads; i++) {
    GstSpiceSrcHead *hd = &self->heads[i];

    if (!hd->canvas)
      continue;
    moved |= hd->x != x;
    hd->x = x;
    x += hd->w;
    h = MAX (h, hd->h);
  }
  moved |= x != self->canvas_w || h != self->canvas_h;
  self->canvas_w = x;
  self->canvas_h = h;
  return moved;
}

/* context: the heads as spice-monitors: with one surface, its channel's
 * monitors (a server's MONITORS_CONFIG, or spice-gtk's one monitor of the
 * whole surface), with several, one per channel; the most there may be
 * (max) counts every display channel, with a surface or not */
static void
heads_announce (GstSpiceSrc * self)
{
  GstSpiceHeads m = { 0, };
  GstSpiceSrcHead *one = NULL;
  guint i, n = 0;

  for (i = 0; i < self->n_heads; i++) {
    if (self->heads[i].canvas) {
      one = &self->heads[i];
      n++;
    }
  }
  if (n == 0)
    return;
  if (n == 1) {
    GArray *monitors = NULL;
    guint max = 0;

    g_object_get (one->channel, "monitors", &monitors, "monitors-max", &max,
        NULL);
    for (i = 0; monitors && i < monitors->len &&
        m.count < GST_SPICE_MAX_HEADS; i++) {
      SpiceDisplayMonitorConfig *c =
          &g_array_index (monitors, SpiceDisplayMonitorConfig, i);

      if (c->width == 0 || c->height == 0)
        continue;
      m.monitors[m.count].id = c->id;
      m.monitors[m.count].x = one->x + c->x;
      m.monitors[m.count].y = c->y;
      m.monitors[m.count].width = c->width;
      m.monitors[m.count].height = c->height;
      m.count++;
    }
    if (monitors)
      g_array_unref (monitors);
    /* with several display channels, one of them without a surface (a
     * head turned off, or not yet on) is still a head that may come: a
     * client can ask for it again */
    m.max = MAX (MAX (max, m.count), self->n_heads);
  } else {
    for (i = 0; i < self->n_heads && m.count < GST_SPICE_MAX_HEADS; i++) {
      GstSpiceSrcHead *hd = &self->heads[i];

      if (!hd->canvas)
        continue;
      m.monitors[m.count].id = m.count;
      m.monitors[m.count].x = hd->x;
      m.monitors[m.count].y = 0;
      m.monitors[m.count].width = hd->w;
      m.monitors[m.count].height = hd->h;
      m.count++;
    }
    m.max = MAX (self->n_heads, m.count);
  }
  if (m.count == 0)
    return;
  g_mutex_lock (&self->lock);
  if (memcmp (&m, &self->monitors, sizeof (m)) != 0) {
    GST_INFO_OBJECT (self, "%u monitors, max %u", m.count, m.max);
    self->monitors = m;
    self->monitors_pending = TRUE;
    g_cond_broadcast (&self->cond);
  }
  g_mutex_unlock (&self->lock);
}

/* context: the frame changed shape (a head came, went or changed size):
 * all of it is stale and damaged */
static void
frame_reshaped (GstSpiceSrc * self)
{
  GstVideoRectangle full = { 0, 0, self->canvas_w, self->canvas_h };

  g_mutex_lock (&self->lock);
  self->width = self->canvas_w;
  self->height = self->canvas_h;
  gst_spice_region_reset (&self->stale);
  gst_spice_region_reset (&self->damage);
  gst_clear_buffer (&self->packed);
  if (self->canvas_w > 0) {
    /* a frame of another size is dropped by create() */
    gst_spice_region_add (&self->stale, &full);
    cur_fill_locked (self);
    gst_spice_region_add (&self->damage, &full);
    self->damage_us = g_get_monotonic_time ();
  }
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
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
  if ((self->cur && !gst_spice_region_is_empty (&self->stale)) ||
      (self->pack_wanted && !self->packed &&
          !gst_spice_region_is_empty (&self->damage)))
    self->st_catchups++;
  cur_fill_locked (self);
  pack_locked (self);
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
  return G_SOURCE_REMOVE;
}

/* streaming thread, self->lock held: have the context thread fill the
 * stale part of the frame being made (or pack the damage) at its next
 * safe point */
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
  GstSpiceSrcHead *hd = head_of (self, channel);

  if (gst_spice_src_session_stopped (self) || !hd)
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
  hd->canvas = imgdata;
  hd->stride = stride;
  hd->w = width;
  hd->h = height;
  heads_layout (self);
  frame_reshaped (self);

  g_mutex_lock (&self->lock);
  self->have_surface = TRUE;
  self->surface_us = self->damage_us;
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
  heads_announce (self);

  gst_pad_mark_reconfigure (GST_BASE_SRC_PAD (self));
}

/* context thread: a head lost its surface or went; the others close up
 * (with none left, there is no surface) */
static void
heads_reshape (GstSpiceSrc * self)
{
  heads_layout (self);
  if (self->canvas_w > 0) {
    frame_reshaped (self);
    heads_announce (self);
    gst_pad_mark_reconfigure (GST_BASE_SRC_PAD (self));
    return;
  }
  g_mutex_lock (&self->lock);
  self->have_surface = FALSE;
  self->marked = FALSE;
  g_mutex_unlock (&self->lock);
}

/* context thread (display-primary-destroy) */
static void
on_primary_destroy (SpiceChannel * channel, GstSpiceSrc * self)
{
  GstSpiceSrcHead *hd = head_of (self, channel);

  GST_INFO_OBJECT (self, "primary surface destroyed");
  if (hd && hd->canvas) {
    hd->canvas = NULL;
    heads_reshape (self);
  }
}

/* context thread (display-invalidate): a draw, a safe point */
static void
on_invalidate (SpiceChannel * channel, gint x, gint y, gint w, gint h,
    GstSpiceSrc * self)
{
  GstVideoRectangle r = { x, y, w, h };
  GstSpiceSrcHead *hd = head_of (self, channel);

  if (!hd || !hd->canvas || gst_spice_src_session_stopped (self))
    return;
  if (!gst_spice_rect_clip (&r, hd->w, hd->h))
    return;
  r.x += hd->x;

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
  pack_locked (self);
  self->st_invalidates++;
  if (gst_spice_src_context_is_driver_thread ())
    self->st_invalidates_helper++;
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
}

/* context thread (notify::monitors, notify::monitors-max): the heads
 * spice-gtk sees on a display channel */
static void
on_monitors (GObject * channel, GParamSpec * pspec, GstSpiceSrc * self)
{
  if (gst_spice_src_session_stopped (self))
    return;
  heads_announce (self);
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

/* streaming thread: drop the frame being made and the packed damage (new
 * pool, new caps, new size, stop). The packed damage left self->damage
 * when it was packed (the context may pack while create() negotiates):
 * what it covered is damage again, as the whole surface, or the change
 * it carried would never be pushed. */
void
gst_spice_src_display_cur_drop (GstSpiceSrc * self)
{
  GstVideoFrame frame;
  GstBuffer *buf;
  GSource *src;

  g_mutex_lock (&self->lock);
  buf = gst_spice_src_display_cur_take_locked (self, &frame);
  src = g_steal_pointer (&self->catchup);
  if (self->packed && self->width > 0) {
    GstVideoRectangle full = { 0, 0, self->width, self->height };

    if (gst_spice_region_is_empty (&self->damage))
      self->damage_us = self->packed_us;
    gst_spice_region_add (&self->damage, &full);
  }
  gst_clear_buffer (&self->packed);
  self->pack_wanted = FALSE;
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

/* context thread: follow display channel @channel (id @id) if it is the
 * captured one or has a higher id (a head to the right of those before
 * it); FALSE if it is not followed */
gboolean
gst_spice_src_display_follow (GstSpiceSrc * self, SpiceChannel * channel,
    gint id)
{
  guint i, at;

  if (id < self->params->channel_id || head_of (self, channel) ||
      self->n_heads >= MAX_SRC_HEADS)
    return FALSE;
  for (i = 0; i < self->n_heads; i++)
    if (self->heads[i].channel_id == id)
      return FALSE;
  for (at = 0; at < self->n_heads && self->heads[at].channel_id < id; at++);
  memmove (&self->heads[at + 1], &self->heads[at],
      (self->n_heads - at) * sizeof (GstSpiceSrcHead));
  memset (&self->heads[at], 0, sizeof (GstSpiceSrcHead));
  self->heads[at].channel = channel;
  self->heads[at].channel_id = id;
  self->n_heads++;
  gst_spice_src_display_connect (self, channel);
  return TRUE;
}

/* context thread: stop following display channel @channel (NULL: all of
 * them); the heads left close up */
void
gst_spice_src_display_forget (GstSpiceSrc * self, SpiceChannel * channel)
{
  guint i = 0;

  while (i < self->n_heads) {
    GstSpiceSrcHead *hd = &self->heads[i];
    gboolean had;

    if (channel && hd->channel != channel) {
      i++;
      continue;
    }
    g_signal_handlers_disconnect_by_data (hd->channel, self);
    had = hd->canvas != NULL;
    memmove (hd, hd + 1, (self->n_heads - i - 1) * sizeof (GstSpiceSrcHead));
    self->n_heads--;
    if (had && channel)
      heads_reshape (self);
  }
  if (!channel)
    self->canvas_w = self->canvas_h = 0;
}

/* context thread: @channel's head at (@x, @y) of the frame, with the
 * position inside it, for input: the head whose column holds @x (the
 * nearest), @y kept inside it; FALSE without a head */
gboolean
gst_spice_src_display_head_at (GstSpiceSrc * self, gint x, gint y,
    gint * channel_id, gint * hx, gint * hy)
{
  const GstSpiceSrcHead *best = NULL;
  guint i;

  for (i = 0; i < self->n_heads; i++) {
    const GstSpiceSrcHead *hd = &self->heads[i];

    if (!hd->canvas)
      continue;
    if (!best || x >= hd->x)
      best = hd;
  }
  if (!best)
    return FALSE;
  *channel_id = best->channel_id;
  *hx = CLAMP (x - best->x, 0, best->w - 1);
  *hy = CLAMP (y, 0, best->h - 1);
  return TRUE;
}

/* context thread: follow @channel's surface, invalidates and MARK
 * (forgotten with g_signal_handlers_disconnect_by_data()) */
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
