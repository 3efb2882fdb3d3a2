/* gst-spice tests: spicetiler element
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * All timing decisions of the tiler are taken on buffer running time, so
 * these tests drive time with timestamps (and a test clock) only; each
 * push is followed by a DRAIN query so that no frame is coalesced unless a
 * test wants it.
 */
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/check/gsttestclock.h>

#include "element-stats.h"
#include "tiler-common.h"

/* ---- exactness ---- */

static GList *
capture_frames (const gchar * src, gint w, gint h, gint n)
{
  gchar *desc = g_strdup_printf ("videotestsrc num-buffers=%d %s ! "
      "video/x-raw,format=BGRx,width=%d,height=%d ! appsink name=s "
      "sync=false", n, src, w, h);
  GstElement *p = gst_parse_launch (desc, NULL);
  GstElement *s = gst_bin_get_by_name (GST_BIN (p), "s");
  GstSample *sample;
  GList *frames = NULL;

  fail_unless (p != NULL);
  gst_element_set_state (p, GST_STATE_PLAYING);
  while ((sample = gst_app_sink_pull_sample (GST_APP_SINK (s)))) {
    frames = g_list_append (frames,
        gst_buffer_copy_deep (gst_sample_get_buffer (sample)));
    gst_sample_unref (sample);
  }
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (s);
  gst_object_unref (p);
  g_free (desc);
  fail_unless_equals_int (g_list_length (frames), n);
  return frames;
}

/* pushes @still more copies of @last, 1/30 s apart, from index @i */
static gint
push_still (Tiler * t, GstBuffer * last, gint i, gint still, gboolean meta)
{
  GstVideoRectangle none = { 0, 0, 0, 0 };
  gint k;

  for (k = 0; k < still; k++, i++) {
    tiler_push_sync (t, last, i, meta ? &none : NULL, 0);
    tiler_apply (t);
  }
  return i;
}

GST_START_TEST (test_exact_videotestsrc_patterns)
{
  const gchar *patterns[] = {
    "pattern=smpte horizontal-speed=3",
    "pattern=ball",
    "pattern=snow",
    "pattern=circular horizontal-speed=2",
    "pattern=zone-plate kx2=20 ky2=20 kt=1",
  };
  guint p;

  for (p = 0; p < G_N_ELEMENTS (patterns); p++) {
    GList *frames = capture_frames (patterns[p], 320, 240, 40), *l;
    GstBuffer *last = g_list_last (frames)->data;
    Tiler t;
    gint i = 0;

    tiler_setup (&t, 320, 240, NULL);
    for (l = frames; l; l = l->next, i++) {
      tiler_push_sync (&t, l->data, i, NULL, 0);
      tiler_apply (&t);
    }
    /* still: past the stream timeout (1 s) and the refine delay */
    push_still (&t, last, i, 45, FALSE);
    fail_unless_equals_int (tiler_diff_pixels (&t, last, NULL), 0);
    fail_unless (tiler_stat (&t, "lossy-area-pending") == 0);
    GST_INFO ("%s: %u updates, %" G_GUINT64_FORMAT " jpeg, %" G_GUINT64_FORMAT
        " lz4, %" G_GUINT64_FORMAT " bitmap regions, %" G_GUINT64_FORMAT
        " stream frames", patterns[p], t.updates,
        draws_decoder_stats (t.dec)->regions_jpeg,
        draws_decoder_stats (t.dec)->regions_lz4,
        draws_decoder_stats (t.dec)->regions_bitmap,
        tiler_stat (&t, "stream-frames"));
    if (p == 2)                 /* snow must have gone lossy somewhere */
      fail_unless (draws_decoder_stats (t.dec)->regions_jpeg > 0 ||
          tiler_stat (&t, "stream-frames") > 0);
    tiler_teardown (&t);
    g_list_free_full (frames, (GDestroyNotify) gst_buffer_unref);
  }
}

GST_END_TEST;

/* draws random rectangles of random content into @frame, returns them */
static guint
random_changes (GstBuffer * frame, gint w, gint h, guint32 * seed,
    GstVideoRectangle * rects)
{
  GstMapInfo map;
  guint n = 1 + rnd (seed) % 4, i;

  gst_buffer_map (frame, &map, GST_MAP_WRITE);
  for (i = 0; i < n; i++) {
    GstVideoRectangle r;

    r.w = 1 + rnd (seed) % (w / 2);
    r.h = 1 + rnd (seed) % (h / 2);
    r.x = rnd (seed) % (w - r.w + 1);
    r.y = rnd (seed) % (h - r.h + 1);
    switch (rnd (seed) % 4) {
      case 0:
        fill_noise (map.data, w * 4, &r, rnd (seed));
        break;
      case 1:
        fill_photo (map.data, w * 4, &r, rnd (seed) % 100, 3);
        break;
      case 2:
        fill_color (map.data, w * 4, &r, 0xff000000 | rnd (seed));
        break;
      default:
        fill_text (map.data, w * 4, &r, rnd (seed));
        break;
    }
    rects[i] = r;
  }
  gst_buffer_unmap (frame, &map);
  return n;
}

GST_START_TEST (test_exact_random_damage_and_drops)
{
  guint32 seed = 0xC0FFEE;
  GstBuffer *frame = frame_new (320, 240);
  GstVideoRectangle rects[4];
  guint dropped = 0;
  Tiler t;
  gint i;

  gst_buffer_memset (frame, 0, 0x40, 320 * 240 * 4);
  tiler_setup (&t, 320, 240, "max-rects=4");
  for (i = 0; i < 120; i++) {
    guint n = random_changes (frame, 320, 240, &seed, rects);

    if (i > 0 && rnd (&seed) % 5 == 0) {
      /* dropped between the source and the tiler: a gap in seq */
      t.seq++;
      dropped++;
      continue;
    }
    tiler_push_sync (&t, frame, i, rects, n);
    tiler_apply (&t);
  }
  fail_unless (dropped > 5);
  push_still (&t, frame, i, 45, TRUE);
  fail_unless_equals_int (tiler_diff_pixels (&t, frame, NULL), 0);
  tiler_teardown (&t);
  gst_buffer_unref (frame);
}

GST_END_TEST;

/* ---- damage-only input (memory:SpiceDamage) ---- */

/* random changes (no drops) fed as whole frames or as damage-only
 * buffers, each drained, then the picture still until it is refined;
 * every update, in order, into @log; the client's picture is exact at
 * the end */
static void
random_run (gboolean damage_only, GPtrArray * log)
{
  guint32 seed = 0xD4A6E;
  GstBuffer *frame = frame_new (320, 240), *b;
  GstVideoRectangle rects[4], all = { 0, 0, 320, 240 };
  Tiler t;
  gint i;

  gst_buffer_memset (frame, 0, 0x40, 320 * 240 * 4);
  tiler_setup_input (&t, 320, 240, "max-rects=4", damage_only);
  /* the same input both ways: a damage meta of the whole surface first */
  tiler_push_sync (&t, frame, 0, &all, 1);
  for (i = 1; i < 80; i++) {
    guint n = random_changes (frame, 320, 240, &seed, rects);

    tiler_push_sync (&t, frame, i, rects, n);
  }
  for (; i < 80 + 45; i++)
    tiler_push_sync (&t, frame, i, rects, 0);
  while ((b = gst_harness_try_pull (t.h))) {
    fail_unless (draws_decoder_apply (t.dec, b, NULL));
    g_ptr_array_add (log, b);
  }
  fail_unless_equals_int (tiler_diff_pixels (&t, frame, NULL), 0);
  fail_unless_equals_int (tiler_stat (&t, "lossy-area-pending"), 0);
  fail_unless_equals_int (tiler_stat (&t, "frames-in"), 80 + 45);
  tiler_teardown (&t);
  gst_buffer_unref (frame);
}

/* The same frames as whole frames and as damage-only buffers: the same
 * draws, byte for byte, and an exact client picture after each. */
GST_START_TEST (test_damage_only_same_draws)
{
  GPtrArray *whole = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_buffer_unref);
  GPtrArray *damage = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_buffer_unref);
  guint i;

  random_run (FALSE, whole);
  random_run (TRUE, damage);
  fail_unless (whole->len > 40, "only %u updates", whole->len);
  fail_unless_equals_int (damage->len, whole->len);
  for (i = 0; i < whole->len; i++) {
    GstMapInfo a, b;

    gst_buffer_map (g_ptr_array_index (whole, i), &a, GST_MAP_READ);
    gst_buffer_map (g_ptr_array_index (damage, i), &b, GST_MAP_READ);
    fail_unless (a.size == b.size && memcmp (a.data, b.data, a.size) == 0,
        "update %u differs (%" G_GSIZE_FORMAT " and %" G_GSIZE_FORMAT
        " bytes)", i, a.size, b.size);
    gst_buffer_unmap (g_ptr_array_index (whole, i), &a);
    gst_buffer_unmap (g_ptr_array_index (damage, i), &b);
  }
  g_ptr_array_unref (whole);
  g_ptr_array_unref (damage);
}

GST_END_TEST;

/* A malformed damage-only buffer (its size, a rectangle outside the
 * surface, no meta) is an element error and changes nothing; a buffer
 * that does not follow the last one (a gap in seq) asks upstream for the
 * whole surface with a force-key-unit event. */
GST_START_TEST (test_damage_only_malformed)
{
  GstBuffer *frame = frame_new (64, 48), *b;
  GstVideoRectangle in = { 8, 8, 16, 16 }, out = { 60, 8, 8, 8 };
  GstBus *bus = gst_bus_new ();
  GstEvent *ev;
  GstMessage *msg;
  Tiler t;
  guint k;

  gst_buffer_memset (frame, 0, 0x80, 64 * 48 * 4);
  tiler_setup_input (&t, 64, 48, NULL, TRUE);
  gst_element_set_bus (t.h->element, bus);
  tiler_push_sync (&t, frame, 0, NULL, 0);
  tiler_apply (&t);
  fail_unless_equals_int (tiler_diff_pixels (&t, frame, NULL), 0);

  for (k = 0; k < 3; k++) {
    if (k == 0) {
      /* a pixel short */
      b = gst_buffer_new_allocate (NULL, 16 * 16 * 4 - 4, NULL);
      gst_buffer_add_spice_damage_meta (b, ++t.seq, &in, 1);
    } else if (k == 1) {
      /* past the right edge, the size it would have */
      b = gst_buffer_new_allocate (NULL, 8 * 8 * 4, NULL);
      gst_buffer_add_spice_damage_meta (b, ++t.seq, &out, 1);
    } else {
      b = gst_buffer_new_allocate (NULL, 16 * 16 * 4, NULL);
      t.seq++;
    }
    gst_buffer_memset (b, 0, 0xff, gst_buffer_get_size (b));
    GST_BUFFER_PTS (b) = (k + 1) * FRAME_DURATION;
    fail_unless_equals_int (gst_harness_push (t.h, b), GST_FLOW_ERROR);
    msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
    fail_unless (msg != NULL, "no error for case %u", k);
    gst_message_unref (msg);
  }
  tiler_drain (&t);
  tiler_apply (&t);
  fail_unless_equals_int (tiler_diff_pixels (&t, frame, NULL), 0);

  /* the next good buffer follows none that was taken: a gap */
  while ((ev = gst_harness_try_pull_upstream_event (t.h)))
    gst_event_unref (ev);
  tiler_push_sync (&t, frame, 5, &in, 1);
  ev = gst_harness_try_pull_upstream_event (t.h);
  while (ev && !gst_video_event_is_force_key_unit (ev)) {
    gst_event_unref (ev);
    ev = gst_harness_try_pull_upstream_event (t.h);
  }
  fail_unless (ev != NULL, "no force-key-unit upstream after a gap");
  gst_event_unref (ev);
  /* the buffer after it follows: nothing more is asked */
  tiler_push_sync (&t, frame, 6, &in, 1);
  while ((ev = gst_harness_try_pull_upstream_event (t.h))) {
    fail_if (gst_video_event_is_force_key_unit (ev));
    gst_event_unref (ev);
  }
  gst_element_set_bus (t.h->element, NULL);
  gst_object_unref (bus);
  tiler_teardown (&t);
  gst_buffer_unref (frame);
}

GST_END_TEST;

typedef struct
{
  GMutex lock;
  GCond cond;
  gboolean blocked;
  guint count;
} BlockState;

static GstPadProbeReturn
block_cb (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  BlockState *b = data;

  g_mutex_lock (&b->lock);
  b->blocked = TRUE;
  b->count++;
  g_cond_broadcast (&b->cond);
  g_mutex_unlock (&b->lock);
  return GST_PAD_PROBE_OK;
}

/* the pending run: @b's lock and condition guard the counts too */
typedef struct
{
  BlockState b;
  Tiler *t;
  GstBuffer *frame;
  GstVideoRectangle rect;
  gint n, pushed, failed;
} PendingRun;

/* a thread: pushes @n damage-only buffers, band i % 4 of the picture
 * (@rect's size), counting those that chain() returned from */
static gpointer
push_pending (gpointer data)
{
  PendingRun *r = data;
  gint i;

  for (i = 0; i < r->n; i++) {
    GstVideoRectangle band = r->rect;
    GstBuffer *b;
    GstFlowReturn ret;

    band.y = (i % 4) * band.h;
    b = tiler_input_buffer (r->t, r->frame, 10 + i, &band, 1);
    ret = gst_harness_push (r->t->h, b);
    g_mutex_lock (&r->b.lock);
    r->failed += ret != GST_FLOW_OK;
    r->pushed++;
    g_cond_broadcast (&r->b.cond);
    g_mutex_unlock (&r->b.lock);
  }
  return NULL;
}

/* While the worker is held downstream, damage-only buffers wait in order
 * in the pending item, never more bytes than one picture: chain() then
 * waits (upstream merges its damage meanwhile). Let go, every buffer is
 * applied in order: the client's picture is exact. */
GST_START_TEST (test_damage_only_pending_bound)
{
  const gint W = 320, H = 240;
  GstBuffer *frame = frame_new (W, H);
  PendingRun r = { 0, };
  GstMapInfo map;
  GThread *thread;
  gulong probe;
  GstPad *spad;
  gint64 end;
  Tiler t;

  gst_buffer_memset (frame, 0, 0x20, (gsize) W * H * 4);
  tiler_setup_input (&t, W, H, "streaming=off", TRUE);
  tiler_push_sync (&t, frame, 0, NULL, 0);
  tiler_apply (&t);
  g_mutex_init (&r.b.lock);
  g_cond_init (&r.b.cond);
  r.t = &t;
  r.frame = frame;
  /* a quarter of the picture each: four fit in one picture's bytes */
  r.rect.x = 0;
  r.rect.w = W;
  r.rect.h = H / 4;
  r.n = 12;

  spad = gst_element_get_static_pad (t.h->element, "stream");
  probe = gst_pad_add_probe (spad, GST_PAD_PROBE_TYPE_BLOCK |
      GST_PAD_PROBE_TYPE_DATA_DOWNSTREAM, block_cb, &r.b, NULL);
  /* one buffer, which the worker takes and is held with */
  gst_buffer_map (frame, &map, GST_MAP_WRITE);
  fill_color (map.data, W * 4, &r.rect, 0xff0000ff);
  gst_buffer_unmap (frame, &map);
  tiler_push (&t, frame, 1, &r.rect, 1);
  g_mutex_lock (&r.b.lock);
  end = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
  while (!r.b.blocked && g_cond_wait_until (&r.b.cond, &r.b.lock, end));
  fail_unless (r.b.blocked, "the worker was not held");
  g_mutex_unlock (&r.b.lock);

  /* the picture changes band by band, each pushed as its damage (text:
   * lossless draws, exact at once) */
  gst_buffer_map (frame, &map, GST_MAP_WRITE);
  {
    GstVideoRectangle all = { 0, 0, W, H };

    fill_text (map.data, W * 4, &all, 0x7e57);
  }
  gst_buffer_unmap (frame, &map);
  thread = g_thread_new ("pusher", push_pending, &r);
  g_mutex_lock (&r.b.lock);
  end = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
  while (r.pushed < 4 && g_cond_wait_until (&r.b.cond, &r.b.lock, end));
  /* four buffers (one picture's bytes) wait; the fifth is held in chain()
   * (one more picture's quarter at most) */
  end = g_get_monotonic_time () + 500 * 1000;
  while (r.pushed <= 4 && g_cond_wait_until (&r.b.cond, &r.b.lock, end));
  fail_unless_equals_int (r.pushed, 4);
  g_mutex_unlock (&r.b.lock);
  fail_unless_equals_int (tiler_stat (&t, "frames-in"), 2 + 5);
  fail_unless_equals_int (tiler_stat (&t, "frames-coalesced"), 4);

  gst_pad_remove_probe (spad, probe);
  g_thread_join (thread);
  fail_unless_equals_int (r.pushed, r.n);
  fail_unless_equals_int (r.failed, 0);
  tiler_drain (&t);
  tiler_apply (&t);
  fail_unless_equals_int (tiler_diff_pixels (&t, frame, NULL), 0);
  gst_object_unref (spad);
  g_mutex_clear (&r.b.lock);
  g_cond_clear (&r.b.cond);
  tiler_teardown (&t);
  gst_buffer_unref (frame);
}

GST_END_TEST;

/* ---- scrolling ---- */

/* Scrolls a text window (not on the cell grid) over a static page, up,
 * down and by a page, with damage on the window only; returns the bytes
 * of all draws. Every update leaves the client's picture exact. */
static guint64
scroll_text_window (const gchar * props, guint64 * copies)
{
  const gint W = 320, H = 240;
  GstVideoRectangle win = { 37, 29, 250, 190 }, page = { 0, 0, W, H };
  const gint steps[] = { 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 16, 16, 16, 1, 1,
    -5, -5, -5, -5, -5, -5, -40, 7, 7, 7, 7, 7, 7, 7, 7
  };
  guint32 *doc = g_new (guint32, (gsize) win.w * 800);
  GstBuffer *frame = frame_new (W, H);
  GstMapInfo map;
  gint i, off = 300;
  guint64 bytes;
  Tiler t;

  document_rows (doc, win.w, 800, 0xd0c);
  gst_buffer_map (frame, &map, GST_MAP_WRITE);
  fill_text (map.data, W * 4, &page, 0x5a6e);
  show_rows (map.data, W, doc, &win, off);
  gst_buffer_unmap (frame, &map);
  tiler_setup (&t, W, H, props);
  tiler_push_sync (&t, frame, 0, NULL, 0);
  tiler_apply (&t);
  for (i = 0; i < (gint) G_N_ELEMENTS (steps); i++) {
    off += steps[i];
    gst_buffer_map (frame, &map, GST_MAP_WRITE);
    show_rows (map.data, W, doc, &win, off);
    gst_buffer_unmap (frame, &map);
    tiler_push_sync (&t, frame, i + 1, &win, 1);
    tiler_apply (&t);
    fail_unless_equals_int (tiler_diff_pixels (&t, frame, NULL), 0);
  }
  fail_unless_equals_int (tiler_stat (&t, "lossy-area-pending"), 0);
  *copies = tiler_stat (&t, "regions-copy");
  fail_unless_equals_int (draws_decoder_stats (t.dec)->regions_copy, *copies);
  bytes = tiler_stat (&t, "bytes-lz4") + tiler_stat (&t, "bytes-bitmap") +
      tiler_stat (&t, "bytes-jpeg");
  tiler_teardown (&t);
  gst_buffer_unref (frame);
  g_free (doc);
  return bytes;
}

GST_START_TEST (test_scroll_sent_as_copy)
{
  guint64 copies, copies_off, bytes, bytes_off;

  bytes = scroll_text_window (NULL, &copies);
  bytes_off = scroll_text_window ("scroll-detection=false", &copies_off);
  GST_INFO ("scrolling: %" G_GUINT64_FORMAT " bytes in %" G_GUINT64_FORMAT
      " copies, %" G_GUINT64_FORMAT " bytes without", bytes, copies, bytes_off);
  fail_unless_equals_int (copies_off, 0);
  /* every step but the jump by a page (-40 keeps 150 rows: a copy too) */
  fail_unless (copies >= 29, "only %" G_GUINT64_FORMAT " copies", copies);
  /* the rows that came into view, not the window again */
  fail_unless (bytes * 4 < bytes_off, "%" G_GUINT64_FORMAT " bytes with "
      "copies, %" G_GUINT64_FORMAT " without", bytes, bytes_off);
}

GST_END_TEST;

/* a scrolling photographic area goes lossy: no copy spreads JPEG pixels
 * (the first picture is exact: content the client does not know goes
 * lossless; the second, another photo, is JPEG), and the picture
 * converges */
GST_START_TEST (test_scroll_lossy_area_not_copied)
{
  const gint W = 320, H = 240;
  GstVideoRectangle win = { 32, 32, 256, 176 }, doc_r = { 0, 0, 256, 600 };
  guint8 *doc = g_malloc ((gsize) 256 * 600 * 4);
  GstBuffer *frame = frame_new (W, H);
  GstMapInfo map;
  Tiler t;
  gint i;

  gst_buffer_memset (frame, 0, 0x30, (gsize) W * H * 4);
  tiler_setup (&t, W, H, "streaming=off");
  for (i = 0; i < 20; i++) {
    fill_photo (doc, 256 * 4, &doc_r, i == 0 ? 5 : 40, 3);
    gst_buffer_map (frame, &map, GST_MAP_WRITE);
    show_rows (map.data, W, (const guint32 *) doc, &win, i ? 4 * (i - 1) : 0);
    gst_buffer_unmap (frame, &map);
    tiler_push_sync (&t, frame, i, i ? &win : NULL, i ? 1 : 0);
    tiler_apply (&t);
  }
  fail_unless (draws_decoder_stats (t.dec)->regions_jpeg > 0);
  fail_unless_equals_int (tiler_stat (&t, "regions-copy"), 0);
  push_still (&t, frame, i, 20, TRUE);
  fail_unless_equals_int (tiler_diff_pixels (&t, frame, NULL), 0);
  tiler_teardown (&t);
  gst_buffer_unref (frame);
  g_free (doc);
}

GST_END_TEST;

/* waits (without a drain, which would wait for the blocked push) until
 * the worker has taken @n frames */
static void
wait_processed (Tiler * t, guint64 n)
{
  while (tiler_stat (t, "frames-processed") < n)
    g_usleep (200);
}

static void
wait_blocked (BlockState * b)
{
  g_mutex_lock (&b->lock);
  while (!b->blocked)
    g_cond_wait (&b->cond, &b->lock);
  g_mutex_unlock (&b->lock);
}

GST_START_TEST (test_exact_blocked_output)
{
  guint32 seed = 4242;
  GstBuffer *frame = frame_new (320, 240);
  GstVideoRectangle rects[4];
  BlockState b = { 0, };
  GstPad *draw;
  gulong probe;
  Tiler t;
  gint i;

  gst_buffer_memset (frame, 0, 0x80, 320 * 240 * 4);
  tiler_setup (&t, 320, 240, "streaming=off");
  draw = gst_element_get_static_pad (t.h->element, "draw");
  for (i = 0; i < 10; i++) {
    guint n = random_changes (frame, 320, 240, &seed, rects);
    tiler_push_sync (&t, frame, i, rects, n);
  }
  tiler_apply (&t);
  probe = gst_pad_add_probe (draw, GST_PAD_PROBE_TYPE_BLOCK |
      GST_PAD_PROBE_TYPE_BUFFER, block_cb, &b, NULL);
  for (; i < 60; i++) {
    guint n = random_changes (frame, 320, 240, &seed, rects);

    /* no drain (it would wait for the blocked push): the worker goes on,
     * the damage accumulates, no second update is made */
    tiler_push (&t, frame, i, rects, n);
    if (i == 10)
      wait_blocked (&b);
    wait_processed (&t, i + 1);
  }
  fail_unless_equals_int (b.count, 1);
  fail_unless_equals_int (tiler_stat (&t, "frames-coalesced"), 0);
  gst_pad_remove_probe (draw, probe);
  tiler_drain (&t);
  tiler_apply (&t);
  push_still (&t, frame, i, 20, TRUE);
  fail_unless_equals_int (tiler_diff_pixels (&t, frame, NULL), 0);
  gst_object_unref (draw);
  tiler_teardown (&t);
  gst_buffer_unref (frame);
}

GST_END_TEST;

/* ---- fringe ---- */

GST_START_TEST (test_fringe_text_stays_lossless)
{
  GstVideoRectangle all = { 0, 0, 640, 480 };
  GstVideoRectangle photo = { 317, 0, 323, 411 };       /* not cell-aligned */
  GstVideoRectangle text_left = { 0, 0, 317, 480 };
  GstVideoRectangle text_bottom = { 0, 411, 640, 69 };
  /* a static caption inside the moving area, not cell-aligned either */
  GstVideoRectangle caption = { 401, 147, 101, 37 };
  GstBuffer *frame = frame_new (640, 480);
  GstMapInfo map;
  Tiler t;
  gint i;

  tiler_setup (&t, 640, 480, "streaming=off");
  gst_buffer_map (frame, &map, GST_MAP_WRITE);
  fill_text (map.data, 640 * 4, &all, 7);
  gst_buffer_unmap (frame, &map);
  for (i = 0; i < 40; i++) {
    gst_buffer_map (frame, &map, GST_MAP_WRITE);
    fill_photo (map.data, 640 * 4, &photo, i, 3);
    fill_text (map.data, 640 * 4, &caption, 3);
    gst_buffer_unmap (frame, &map);
    tiler_push_sync (&t, frame, i, i ? &photo : &all, 1);
    tiler_apply (&t);
    fail_unless_equals_int (tiler_diff_pixels (&t, frame, &text_left), 0);
    fail_unless_equals_int (tiler_diff_pixels (&t, frame, &text_bottom), 0);
    fail_unless_equals_int (tiler_diff_pixels (&t, frame, &caption), 0);
  }
  /* the moving part did go lossy: the check above could have failed */
  fail_unless (draws_decoder_stats (t.dec)->regions_jpeg > 10);
  fail_unless (tiler_diff_pixels (&t, frame, &photo) > 0);
  push_still (&t, frame, i, 10, TRUE);
  fail_unless_equals_int (tiler_diff_pixels (&t, frame, NULL), 0);
  tiler_teardown (&t);
  gst_buffer_unref (frame);
}

GST_END_TEST;

/* ---- streams ---- */

typedef struct
{
  guint buffers, keyframes, caps, gaps, fku;
  guint stream_id;
  gboolean mixed_ids;
  GstVideoRectangle dest;
  gint caps_w, caps_h;
  gint scale;                   /* picture divisor expected (0 = 1) */
} StreamLog;

static void
collect_stream (Tiler * t, StreamLog * log)
{
  GstBuffer *b;
  GstEvent *e;

  while ((e = gst_harness_try_pull_event (t->hs))) {
    if (GST_EVENT_TYPE (e) == GST_EVENT_CAPS) {
      GstCaps *caps;
      GstStructure *s;

      gst_event_parse_caps (e, &caps);
      s = gst_caps_get_structure (caps, 0);
      gst_structure_get_int (s, "width", &log->caps_w);
      gst_structure_get_int (s, "height", &log->caps_h);
      log->caps++;
    } else if (GST_EVENT_TYPE (e) == GST_EVENT_GAP)
      log->gaps++;
    else if (gst_video_event_is_force_key_unit (e))
      log->fku++;
    gst_event_unref (e);
  }
  while ((b = gst_harness_try_pull (t->hs))) {
    GstSpiceStreamMeta *m = gst_buffer_get_spice_stream_meta (b);

    fail_unless (m != NULL);
    if (log->buffers && m->stream_id != log->stream_id)
      log->mixed_ids = TRUE;
    log->stream_id = m->stream_id;
    log->dest = m->dest;
    log->keyframes += m->keyframe;
    if (log->scale > 1) {
      fail_unless_equals_int (GST_ROUND_UP_2 (m->dest.w / log->scale),
          log->caps_w);
      fail_unless_equals_int (GST_ROUND_UP_2 (m->dest.h / log->scale),
          log->caps_h);
    } else {
      fail_unless_equals_int (m->dest.w, log->caps_w);
      fail_unless_equals_int (m->dest.h, log->caps_h);
    }
    log->buffers++;
    gst_buffer_unref (b);
  }
}

static GstBuffer *
desktop_frame (gint w, gint h)
{
  GstBuffer *frame = frame_new (w, h);
  GstVideoRectangle all = { 0, 0, w, h };
  GstMapInfo map;

  gst_buffer_map (frame, &map, GST_MAP_WRITE);
  fill_text (map.data, w * 4, &all, 99);
  gst_buffer_unmap (frame, &map);
  return frame;
}

static void
animate (GstBuffer * frame, gint w, const GstVideoRectangle * r, gint i,
    guint noise_bits)
{
  GstMapInfo map;

  gst_buffer_map (frame, &map, GST_MAP_WRITE);
  fill_photo (map.data, w * 4, r, i, noise_bits);
  gst_buffer_unmap (frame, &map);
}

GST_START_TEST (test_stream_steady_animation)
{
  GstVideoRectangle anim = { 608, 160, 640, 480 };
  GstBuffer *frame = desktop_frame (1280, 800);
  StreamLog log = { 0, };
  Tiler t;
  gint i;

  tiler_setup (&t, 1280, 800, NULL);
  for (i = 0; i < 90; i++) {
    animate (frame, 1280, &anim, i, 3);
    tiler_push_sync (&t, frame, i, NULL, 0);
    tiler_apply (&t);
    collect_stream (&t, &log);
  }
  /* initial caps (surface size) + exactly one stream geometry */
  fail_unless_equals_int (log.caps, 2);
  fail_unless (log.buffers >= 60, "only %u stream frames", log.buffers);
  fail_unless (!log.mixed_ids);
  fail_unless_equals_int (log.keyframes, 1);
  fail_unless (log.fku >= 1);
  fail_unless (gst_spice_rect_contains (&log.dest, &anim));
  fail_unless (gst_spice_rect_area (&log.dest) < 2 * gst_spice_rect_area
      (&anim));
  fail_unless_equals_int (log.dest.x % 64, 0);
  fail_unless_equals_int (log.dest.y % 64, 0);
  fail_unless_equals_int (tiler_stat (&t, "stream-starts"), 1);
  /* outside the stream the desktop is exact, even during the stream */
  {
    GstVideoRectangle left = { 0, 0, log.dest.x, 800 };
    fail_unless_equals_int (tiler_diff_pixels (&t, frame, &left), 0);
  }
  /* and it was not sent as draws: the decoder's canvas is stale there */
  fail_unless (tiler_diff_pixels (&t, frame, &anim) > 0);

  /* the animation stops: 400 ms later (refine-delay 250 ms, stream-timeout
   * 1 s) the stream still exists but its area has been refined */
  i = push_still (&t, frame, i, 12, FALSE);
  collect_stream (&t, &log);
  fail_unless (tiler_stat_bool (&t, "stream-active"));
  fail_unless_equals_int (tiler_diff_pixels (&t, frame, NULL), 0);
  /* then the stream ends; the picture stays exact */
  push_still (&t, frame, i, 33, FALSE);
  collect_stream (&t, &log);
  fail_unless (!tiler_stat (&t, "stream-frames-dropped"));
  fail_unless (!tiler_stat_bool (&t, "stream-active"));
  fail_unless_equals_int (tiler_diff_pixels (&t, frame, NULL), 0);
  fail_unless (log.gaps >= 45);
  tiler_teardown (&t);
  gst_buffer_unref (frame);
}

GST_END_TEST;

GST_START_TEST (test_no_stream_for_static_content)
{
  GstBuffer *frame = desktop_frame (640, 480);
  StreamLog log = { 0, };
  guint32 seed = 5;
  Tiler t;
  gint i;

  tiler_setup (&t, 640, 480, NULL);
  for (i = 0; i < 90; i++) {
    /* typing: one glyph changes per frame, elsewhere nothing */
    GstVideoRectangle g = { 8 + (i % 60) * 7, 12 * (1 + i / 60), 7, 12 };
    GstMapInfo map;

    gst_buffer_map (frame, &map, GST_MAP_WRITE);
    fill_text (map.data, 640 * 4, &g, rnd (&seed));
    gst_buffer_unmap (frame, &map);
    tiler_push_sync (&t, frame, i, NULL, 0);
    tiler_apply (&t);
    collect_stream (&t, &log);
  }
  fail_unless_equals_int (log.buffers, 0);
  fail_unless_equals_int (tiler_stat (&t, "stream-starts"), 0);
  fail_unless (log.gaps >= 90);
  fail_unless_equals_int (tiler_diff_pixels (&t, frame, NULL), 0);
  /* text is never sent lossy */
  fail_unless_equals_int (draws_decoder_stats (t.dec)->regions_jpeg, 0);
  tiler_teardown (&t);
  gst_buffer_unref (frame);
}

GST_END_TEST;

/* the animation through @branch: every buffer keeps its stream meta; the
 * stream pad's caps had @colorimetry (NULL: not checked, and the branch
 * drops nothing: at least 10 buffers, one keyframe) */
static void
check_meta_through_as (const gchar * branch, const gchar * colorimetry)
{
  gchar *desc = g_strdup_printf ("appsrc name=src format=time "
      "caps=video/x-raw,format=BGRx,width=640,height=480,framerate=30/1 ! "
      "spicetiler name=t t.draw ! fakesink sync=false async=false "
      "t.stream ! queue ! %s ! appsink name=sink sync=false async=false",
      branch);
  GstElement *p = gst_parse_launch (desc, NULL);
  GstElement *src = gst_bin_get_by_name (GST_BIN (p), "src");
  GstElement *sink = gst_bin_get_by_name (GST_BIN (p), "sink");
  GstElement *tiler = gst_bin_get_by_name (GST_BIN (p), "t");
  GstVideoRectangle anim = { 64, 64, 448, 320 };
  GstBuffer *frame = desktop_frame (640, 480);
  GstSample *sample;
  guint n = 0, id = 0, key = 0;
  gint i;

  fail_unless (p != NULL, "cannot build %s", desc);
  gst_element_set_state (p, GST_STATE_PLAYING);
  for (i = 0; i < 45; i++) {
    GstBuffer *b;

    animate (frame, 640, &anim, i, 3);
    b = gst_buffer_copy_deep (frame);
    GST_BUFFER_PTS (b) = i * FRAME_DURATION;
    GST_BUFFER_DURATION (b) = FRAME_DURATION;
    fail_unless_equals_int (gst_app_src_push_buffer (GST_APP_SRC (src), b),
        GST_FLOW_OK);
    /* one frame at a time, or the tiler would (rightly) coalesce them */
    while (test_element_stat_u64 (tiler, "frames-processed") < (guint64) i + 1)
      g_usleep (500);
  }
  gst_app_src_end_of_stream (GST_APP_SRC (src));
  while ((sample = gst_app_sink_try_pull_sample (GST_APP_SINK (sink),
              10 * GST_SECOND))) {
    GstSpiceStreamMeta *m =
        gst_buffer_get_spice_stream_meta (gst_sample_get_buffer (sample));

    fail_unless (m != NULL, "meta lost through %s", branch);
    fail_unless (gst_spice_rect_contains (&m->dest, &anim));
    if (n)
      fail_unless_equals_int (m->stream_id, id);
    id = m->stream_id;
    key += m->keyframe;
    n++;
    gst_sample_unref (sample);
  }
  if (!colorimetry) {
    fail_unless (n >= 10, "only %u buffers through %s", n, branch);
    fail_unless_equals_int (key, 1);
  } else {
    /* spicestreamenc's one-frame leaky queue drops frames (the first, key
     * one too) when its encoder is slower, as under ASan */
    fail_unless (n >= 1, "no buffer through %s", branch);
    fail_unless (key <= 1);
  }
  if (colorimetry) {
    GstPad *pad = gst_element_get_static_pad (tiler, "stream");
    GstCaps *caps = gst_pad_get_current_caps (pad);
    const gchar *c = gst_structure_get_string (gst_caps_get_structure (caps,
            0), "colorimetry");

    fail_unless (g_strcmp0 (c, colorimetry) == 0, "stream colorimetry %s "
        "through %s, wanted %s", c, branch, colorimetry);
    gst_caps_unref (caps);
    gst_object_unref (pad);
  }
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (src);
  gst_object_unref (sink);
  gst_object_unref (tiler);
  gst_object_unref (p);
  gst_buffer_unref (frame);
  g_free (desc);
}

static void
check_meta_through (const gchar * branch)
{
  check_meta_through_as (branch, NULL);
}

GST_START_TEST (test_stream_meta_survives_encoders)
{
  check_meta_through ("vp8enc deadline=1");
  check_meta_through ("jpegenc");
  check_meta_through ("videoconvert ! videoscale ! "
      "video/x-raw,width=224,height=160");
}

GST_END_TEST;

/* the converter writes the range downstream asks for: full range (JFIF)
 * for spicestreamenc's JPEG encoder, the default (BT.601, limited) for
 * VP8 */
GST_START_TEST (test_stream_colorimetry_from_downstream)
{
  check_meta_through_as ("spicestreamenc encoder=jpegenc", "1:4:0:0");
  check_meta_through_as ("spicestreamenc encoder=\"vp8enc deadline=1\"",
      "bt601");
}

GST_END_TEST;

GST_START_TEST (test_stream_rate_and_control)
{
  GstVideoRectangle anim = { 0, 0, 320, 240 };
  GstBuffer *frame = frame_new (320, 240);
  StreamLog log = { 0, };
  guint before;
  Tiler t;
  gint i;

  tiler_setup (&t, 320, 240, "stream-min-frames=5");
  fail_unless (gst_harness_push_upstream_event (t.hs,
          gst_spice_event_new_rate (1000000, 5, 1, 1)));
  for (i = 0; i < 60; i++) {
    animate (frame, 320, &anim, i, 3);
    tiler_push_sync (&t, frame, i, NULL, 0);
    tiler_apply (&t);
    collect_stream (&t, &log);
  }
  /* 2 s at 5 fps, the stream started after 5 frames */
  fail_unless (log.buffers >= 7 && log.buffers <= 11, "%u frames", log.buffers);
  fail_unless (tiler_stat (&t, "stream-frames-dropped") > 30);

  /* a smaller picture asked for: a new stream (new id, a keyframe) of half
   * the width and height, for the same rectangle */
  {
    guint id = log.stream_id, keys = log.keyframes;
    GstVideoRectangle dest = log.dest;

    fail_unless (gst_harness_push_upstream_event (t.hs,
            gst_spice_event_new_rate (1000000, 5, 1, 2)));
    log.scale = 2;
    before = log.buffers;
    for (; i < 75; i++) {
      animate (frame, 320, &anim, i, 3);
      tiler_push_sync (&t, frame, i, NULL, 0);
      tiler_apply (&t);
      collect_stream (&t, &log);
    }
    fail_unless (log.buffers > before);
    fail_unless (log.stream_id != id);
    fail_unless_equals_int (log.keyframes, keys + 1);
    fail_unless (log.dest.x == dest.x && log.dest.y == dest.y &&
        log.dest.w == dest.w && log.dest.h == dest.h);
    fail_unless (log.caps_w < dest.w && log.caps_h < dest.h);
  }

  /* a client that cannot take the stream: the area goes out as draws */
  fail_unless (gst_harness_push_upstream_event (t.hs,
          gst_spice_event_new_stream_control (FALSE)));
  before = log.buffers;
  for (; i < 90; i++) {
    animate (frame, 320, &anim, i, 3);
    tiler_push_sync (&t, frame, i, NULL, 0);
    tiler_apply (&t);
    collect_stream (&t, &log);
  }
  fail_unless_equals_int (log.buffers, before);
  push_still (&t, frame, i, 12, FALSE);
  fail_unless_equals_int (tiler_diff_pixels (&t, frame, NULL), 0);
  tiler_teardown (&t);
  gst_buffer_unref (frame);
}

GST_END_TEST;

/* ---- flow control: a keypress goes before a large update ---- */

GST_START_TEST (test_keypress_before_heavy_update)
{
  /* the key box is below the activity: row order alone would put it last */
  GstVideoRectangle key = { 16, 680, 96, 96 };
  GstVideoRectangle act = { 608, 80, 640, 480 };
  GstVideoRectangle dmg[2];
  GstBuffer *frame = desktop_frame (1280, 800), *b;
  BlockState bs = { 0, };
  GstMapInfo map;
  GstPad *draw;
  gulong probe;
  guint r, key_index = G_MAXUINT, first_act = G_MAXUINT, nregions;
  Tiler t;

  tiler_setup (&t, 1280, 800, "streaming=off");
  tiler_push_sync (&t, frame, 0, NULL, 0);
  tiler_apply (&t);

  /* a heavy full-area update gets stuck downstream */
  draw = gst_element_get_static_pad (t.h->element, "draw");
  probe = gst_pad_add_probe (draw, GST_PAD_PROBE_TYPE_BLOCK |
      GST_PAD_PROBE_TYPE_BUFFER, block_cb, &bs, NULL);
  gst_buffer_map (frame, &map, GST_MAP_WRITE);
  fill_noise (map.data, 1280 * 4, &act, 1);
  gst_buffer_unmap (frame, &map);
  dmg[0] = act;
  tiler_push (&t, frame, 1, dmg, 1);
  wait_blocked (&bs);

  /* meanwhile: the activity goes on and a key is pressed */
  gst_buffer_map (frame, &map, GST_MAP_WRITE);
  fill_noise (map.data, 1280 * 4, &act, 2);
  fill_color (map.data, 1280 * 4, &key, 0xffff0000);
  gst_buffer_unmap (frame, &map);
  dmg[1] = key;
  tiler_push (&t, frame, 2, dmg, 2);
  gst_pad_remove_probe (draw, probe);
  tiler_drain (&t);

  /* the stuck update, then the next one: key box first */
  b = gst_harness_pull (t.h);
  fail_unless (draws_decoder_apply (t.dec, b, NULL));
  gst_buffer_unref (b);
  b = gst_harness_pull (t.h);
  fail_unless (draws_decoder_apply (t.dec, b, NULL));
  gst_buffer_unref (b);
  nregions = draws_decoder_last_n_regions (t.dec);
  for (r = 0; r < nregions; r++) {
    const GstVideoRectangle *d = draws_decoder_last_region (t.dec, r, NULL,
        NULL);

    if (gst_spice_rect_intersect (d, &key, NULL) && key_index == G_MAXUINT)
      key_index = r;
    if (gst_spice_rect_intersect (d, &act, NULL) && first_act == G_MAXUINT)
      first_act = r;
  }
  fail_unless_equals_int (key_index, 0);
  fail_unless (first_act != G_MAXUINT && first_act > key_index,
      "activity %u key %u", first_act, key_index);
  fail_unless_equals_int (tiler_diff_pixels (&t, frame, &key), 0);
  tiler_apply (&t);
  gst_object_unref (draw);
  tiler_teardown (&t);
  gst_buffer_unref (frame);
}

GST_END_TEST;

/* ---- events ---- */

GST_START_TEST (test_refresh_full_lossless_redraw)
{
  GstVideoRectangle anim = { 32, 32, 200, 150 };
  GstBuffer *frame = desktop_frame (320, 240), *b, *refresh = NULL;
  DrawsDecoder *fresh = draws_decoder_new (320, 240);
  GstMapInfo map;
  Tiler t;
  gint i;

  tiler_setup (&t, 320, 240, "streaming=off refine-delay=10000000000");
  for (i = 0; i < 5; i++) {
    animate (frame, 320, &anim, i, 3);
    tiler_push_sync (&t, frame, i, NULL, 0);
  }
  tiler_apply (&t);
  /* lossy parts are pending (long refine delay) */
  fail_unless (tiler_diff_pixels (&t, frame, &anim) > 0);
  fail_unless (gst_harness_push_upstream_event (t.h,
          gst_spice_event_new_refresh ()));
  tiler_drain (&t);
  while ((b = gst_harness_try_pull (t.h))) {
    GstSpiceDrawsReader r;

    fail_unless (gst_spice_draws_reader_init (&r, b));
    if (r.flags & GST_SPICE_DRAWS_FLAG_REFRESH)
      gst_buffer_replace (&refresh, b);
    gst_spice_draws_reader_clear (&r);
    gst_buffer_unref (b);
  }
  fail_unless (refresh != NULL);
  fail_unless (draws_decoder_apply (fresh, refresh, NULL));
  /* one region covering the surface (a joining client's first draw) */
  fail_unless_equals_int (draws_decoder_last_n_regions (fresh), 1);
  {
    GstVideoRectangle all = { 0, 0, 320, 240 };
    fail_unless (memcmp (draws_decoder_last_region (fresh, 0, NULL, NULL),
            &all, sizeof (all)) == 0);
  }
  fail_unless_equals_int (draws_decoder_stats (fresh)->lossy_regions, 0);
  gst_buffer_map (frame, &map, GST_MAP_READ);
  fail_unless_equals_int (draws_decoder_compare (fresh, map.data, 320 * 4,
          NULL), 0);
  gst_buffer_unmap (frame, &map);
  gst_buffer_unref (refresh);
  draws_decoder_free (fresh);
  tiler_teardown (&t);
  gst_buffer_unref (frame);
}

GST_END_TEST;

GST_START_TEST (test_navigation_and_cursor)
{
  GstBuffer *frame = desktop_frame (320, 240);
  GstSpiceCursor c = { TRUE, 10, 20, 1, 1, 0, 0, NULL, 7 };
  GstEvent *e;
  guint nav = 0, cursors = 0, locks = 0;
  Tiler t;

  tiler_setup (&t, 320, 240, NULL);
  tiler_push_sync (&t, frame, 0, NULL, 0);
  fail_unless (gst_harness_push_upstream_event (t.h,
          gst_navigation_event_new_key_press ("a", 0)));
  fail_unless (gst_harness_push_upstream_event (t.hs,
          gst_navigation_event_new_mouse_move (5, 6, 0)));
  while ((e = gst_harness_try_pull_upstream_event (t.h))) {
    nav += GST_EVENT_TYPE (e) == GST_EVENT_NAVIGATION;
    gst_event_unref (e);
  }
  fail_unless_equals_int (nav, 2);
  /* a client's lock keys go upstream like its keys */
  fail_unless (gst_harness_push_upstream_event (t.h,
          gst_spice_event_new_key_locks (TRUE,
              SPICE_KEYBOARD_MODIFIER_FLAGS_NUM_LOCK)));
  while ((e = gst_harness_try_pull_upstream_event (t.h))) {
    guint l;

    if (gst_spice_event_parse_key_locks (e, &l)) {
      fail_unless_equals_int (l, SPICE_KEYBOARD_MODIFIER_FLAGS_NUM_LOCK);
      locks++;
    }
    gst_event_unref (e);
  }
  fail_unless_equals_int (locks, 1);

  gst_harness_push_event (t.h, gst_spice_event_new_cursor (&c));
  /* the upstream's lock LEDs go out on draw, after the frame before them */
  gst_harness_push_event (t.h, gst_spice_event_new_key_locks (FALSE,
          SPICE_KEYBOARD_MODIFIER_FLAGS_CAPS_LOCK));
  tiler_drain (&t);
  locks = 0;
  while ((e = gst_harness_try_pull_event (t.h))) {
    GstSpiceCursor out;
    guint l;

    if (gst_spice_event_parse_cursor (e, &out)) {
      fail_unless_equals_int (out.x, 10);
      cursors++;
    }
    if (gst_spice_event_parse_key_locks (e, &l)) {
      fail_unless_equals_int (l, SPICE_KEYBOARD_MODIFIER_FLAGS_CAPS_LOCK);
      fail_unless_equals_int (cursors, 1);
      locks++;
    }
    gst_event_unref (e);
  }
  fail_unless_equals_int (cursors, 1);
  fail_unless_equals_int (locks, 1);
  while ((e = gst_harness_try_pull_event (t.hs))) {
    GstSpiceCursor out;

    fail_if (gst_spice_event_parse_cursor (e, &out));
    gst_event_unref (e);
  }

  /* the heads (issue 29) go the same way: on draw only */
  {
    GstSpiceHeads m = { 2, 2, {{0, 0, 0, 160, 240}, {1, 160, 0, 160, 240}
        }
    };
    guint heads = 0;

    gst_harness_push_event (t.h, gst_spice_event_new_monitors (&m));
    tiler_drain (&t);
    while ((e = gst_harness_try_pull_event (t.h))) {
      GstSpiceHeads out;

      if (gst_spice_event_parse_monitors (e, &out)) {
        fail_unless_equals_int (out.count, 2);
        fail_unless_equals_int (out.monitors[1].x, 160);
        heads++;
      }
      gst_event_unref (e);
    }
    fail_unless_equals_int (heads, 1);
    while ((e = gst_harness_try_pull_event (t.hs))) {
      GstSpiceHeads out;

      fail_if (gst_spice_event_parse_monitors (e, &out));
      gst_event_unref (e);
    }
  }
  tiler_teardown (&t);
  gst_buffer_unref (frame);
}

GST_END_TEST;

GST_START_TEST (test_refine_when_idle_on_clock)
{
  GstVideoRectangle anim = { 0, 0, 320, 240 };
  GstBuffer *frame = frame_new (320, 240), *b;
  GstTestClock *clock;
  GstClockID id;
  Tiler t;
  gint i;

  tiler_setup (&t, 320, 240, "streaming=off refine-delay=100000000");
  gst_harness_use_testclock (t.h);
  clock = gst_harness_get_testclock (t.h);
  for (i = 0; i < 3; i++) {
    animate (frame, 320, &anim, i, 3);
    tiler_push_sync (&t, frame, i, NULL, 0);
  }
  tiler_apply (&t);
  fail_unless (tiler_diff_pixels (&t, frame, NULL) > 0);
  /* no more frames: the tiler waits for the deadline on the clock */
  gst_test_clock_wait_for_next_pending_id (clock, &id);
  fail_unless_equals_uint64 (gst_clock_id_get_time (id),
      2 * FRAME_DURATION + 100 * GST_MSECOND);
  gst_clock_id_unref (id);
  fail_unless (gst_harness_crank_single_clock_wait (t.h));
  b = gst_harness_pull (t.h);
  fail_unless (draws_decoder_apply (t.dec, b, NULL));
  gst_buffer_unref (b);
  fail_unless_equals_int (tiler_diff_pixels (&t, frame, NULL), 0);
  gst_object_unref (clock);
  tiler_teardown (&t);
  gst_buffer_unref (frame);
}

GST_END_TEST;

/* a stream whose last change went undelivered (1 fps cap), then no more
 * input: the picture still converges on clock deadlines alone (the area
 * is refined once it has been still for refine-delay), without a new
 * frame; the stream ends at its timeout */
GST_START_TEST (test_stream_dropped_last_frame_converges)
{
  GstVideoRectangle anim = { 0, 0, 320, 240 };
  GstBuffer *frame = frame_new (320, 240);
  StreamLog log = { 0, };
  GstTestClock *clock;
  Tiler t;
  gint i, cranks = 0, tries;

  tiler_setup (&t, 320, 240, "stream-min-frames=5");
  gst_harness_use_testclock (t.h);
  clock = gst_harness_get_testclock (t.h);
  fail_unless (gst_harness_push_upstream_event (t.hs,
          gst_spice_event_new_rate (1000000, 1, 1, 1)));
  for (i = 0; i < 20; i++) {
    animate (frame, 320, &anim, i, 3);
    tiler_push_sync (&t, frame, i, NULL, 0);
    tiler_apply (&t);
    collect_stream (&t, &log);
  }
  fail_unless (log.buffers >= 1 && log.buffers <= 2, "%u stream frames",
      log.buffers);
  fail_unless (tiler_diff_pixels (&t, frame, NULL) > 0);
  while (tiler_diff_pixels (&t, frame, NULL) > 0) {
    gint w;

    fail_unless (cranks++ < 5, "not exact after %d clock deadlines",
        cranks - 1);
    fail_unless (gst_test_clock_timed_wait_for_multiple_pending_ids (clock,
            1, 5000, NULL), "no clock deadline pending (after %d)", cranks - 1);
    fail_unless (gst_harness_crank_single_clock_wait (t.h));
    for (w = 0; w < 100 && tiler_apply (&t) == 0; w++)
      g_usleep (10 * 1000);
    collect_stream (&t, &log);
  }
  /* exact before the stream's timeout; the stream still ends then, and
   * the picture stays exact */
  for (tries = 0; tiler_stat_bool (&t, "stream-active"); tries++) {
    fail_unless (tries < 100, "the stream did not end");
    if (gst_test_clock_timed_wait_for_multiple_pending_ids (clock, 1, 50, NULL))
      fail_unless (gst_harness_crank_single_clock_wait (t.h));
    tiler_drain (&t);
    tiler_apply (&t);
    fail_unless_equals_uint64 (tiler_diff_pixels (&t, frame, NULL), 0);
  }
  fail_unless (!tiler_stat_bool (&t, "stream-active"));
  gst_object_unref (clock);
  tiler_teardown (&t);
  gst_buffer_unref (frame);
}

GST_END_TEST;

/* Issue 15 on the element and the test clock: a stream rescaled by
 * spice-rate (5 fps, then half size), its last changes dropped by QoS,
 * the draws paced to a slow link (spice-draw-budget: 50 ms of wall clock
 * after every update); the input stops. The picture is exact at the first
 * refinement deadline, refine-delay after the last change: the deadline
 * that comes while the last update is being paced is not lost (it was:
 * tiles stayed lossy forever), and the change no stream frame carried
 * does not wait for stream-timeout. */
GST_START_TEST (test_stream_still_exact_on_paced_link)
{
  GstVideoRectangle dmg[2] = { {0, 0, 320, 192}, {8, 208, 48, 24}
  };
  GstBuffer *frame = desktop_frame (320, 240);
  StreamLog log = { 0, };
  GstTestClock *clock;
  GstClockTime still, bound;
  GstClockID id;
  GstMapInfo map;
  Tiler t;
  gint i, w;

  tiler_setup (&t, 320, 240, "stream-min-frames=5");
  gst_harness_use_testclock (t.h);
  clock = gst_harness_get_testclock (t.h);
  fail_unless (gst_harness_push_upstream_event (t.hs,
          gst_spice_event_new_rate (1000000, 5, 1, 1)));
  fail_unless (gst_harness_push_upstream_event (t.h,
          gst_spice_event_new_draw_budget (100000, 256 * 1024)));
  for (i = 0; i < 30; i++) {
    if (i == 15) {
      fail_unless (tiler_stat_bool (&t, "stream-active"));
      fail_unless (gst_harness_push_upstream_event (t.hs,
              gst_spice_event_new_rate (1000000, 5, 1, 2)));
      log.scale = 2;
    }
    /* the stream branch is late for the last frames */
    if (i == 26)
      fail_unless (gst_harness_push_upstream_event (t.hs,
              gst_event_new_qos (GST_QOS_TYPE_UNDERFLOW, 2.0, GST_SECOND,
                  26 * FRAME_DURATION)));
    animate (frame, 320, &dmg[0], i, 3);
    /* and a key press beside it with the last change: an update that is
     * being paced when the deadline comes */
    if (i == 29) {
      gst_buffer_map (frame, &map, GST_MAP_WRITE);
      fill_text (map.data, 320 * 4, &dmg[1], 4711);
      gst_buffer_unmap (frame, &map);
    }
    tiler_push_sync (&t, frame, i, dmg, i == 29 ? 2 : 1);
    tiler_apply (&t);
    collect_stream (&t, &log);
  }
  fail_unless (log.keyframes >= 2, "%u keyframes", log.keyframes);
  fail_unless (tiler_stat (&t, "stream-frames-dropped") > 0);
  fail_unless (tiler_diff_pixels (&t, frame, NULL) > 0);
  still = 29 * FRAME_DURATION;
  bound = still + 250 * GST_MSECOND;
  /* the first deadline at once, while the key press's update is paced */
  gst_test_clock_wait_for_next_pending_id (clock, &id);
  fail_unless (gst_clock_id_get_time (id) <= bound,
      "the first deadline %" GST_TIME_FORMAT " after the last change",
      GST_TIME_ARGS (gst_clock_id_get_time (id) - still));
  gst_clock_id_unref (id);
  fail_unless (gst_harness_crank_single_clock_wait (t.h));
  /* the clock never passes the bound: a tiler that needs a later deadline
   * (the stream's end, 1 s after the last change) never gets exact. One
   * can be pending for a moment, while the key press's paced update waits
   * for the draw pad (under load): it is not given, and the wait ends
   * when the draw goes. */
  for (w = 0; tiler_diff_pixels (&t, frame, NULL) > 0; w++) {
    GstClockTime at = GST_CLOCK_TIME_NONE;

    if (gst_test_clock_peek_next_pending_id (clock, &id)) {
      at = gst_clock_id_get_time (id);
      gst_clock_id_unref (id);
    }
    fail_unless (w < 300, "never exact: %" G_GUINT64_FORMAT " px differ, "
        "waiting for a deadline %" GST_TIME_FORMAT " after the last change",
        tiler_diff_pixels (&t, frame, NULL), GST_TIME_ARGS (at - still));
    if (GST_CLOCK_TIME_IS_VALID (at) && at <= bound)
      fail_unless (gst_harness_crank_single_clock_wait (t.h));
    g_usleep (10 * 1000);
    tiler_apply (&t);
    collect_stream (&t, &log);
  }
  gst_object_unref (clock);
  tiler_teardown (&t);
  gst_buffer_unref (frame);
}

GST_END_TEST;

GST_START_TEST (test_caps_change_redraws)
{
  GstBuffer *a = desktop_frame (320, 240), *b = desktop_frame (200, 100);
  Tiler t;

  tiler_setup (&t, 320, 240, NULL);
  tiler_push_sync (&t, a, 0, NULL, 0);
  tiler_apply (&t);
  fail_unless_equals_int (tiler_diff_pixels (&t, a, NULL), 0);
  gst_harness_set_src_caps_str (t.h,
      "video/x-raw,format=BGRx,width=200,height=100,framerate=30/1");
  draws_decoder_resize (t.dec, 200, 100);
  t.w = 200;
  t.h_ = 100;
  tiler_push_sync (&t, b, 1, NULL, 0);
  tiler_apply (&t);
  fail_unless_equals_int (tiler_diff_pixels (&t, b, NULL), 0);
  {
    GstCaps *caps = gst_pad_get_current_caps (t.h->sinkpad);
    GstStructure *s = gst_caps_get_structure (caps, 0);
    gint w = 0;

    gst_structure_get_int (s, "width", &w);
    fail_unless_equals_int (w, 200);
    fail_unless (gst_structure_has_name (s, GST_SPICE_DRAWS_MEDIA_TYPE));
    gst_caps_unref (caps);
  }
  tiler_teardown (&t);
  gst_buffer_unref (a);
  gst_buffer_unref (b);
}

GST_END_TEST;

GST_START_TEST (test_eos_converges)
{
  GstVideoRectangle anim = { 0, 0, 320, 240 };
  GstBuffer *frame = frame_new (320, 240);
  Tiler t;
  gint i;

  tiler_setup (&t, 320, 240, "refine-delay=10000000000 stream-min-frames=5");
  for (i = 0; i < 20; i++) {
    animate (frame, 320, &anim, i, 3);
    tiler_push_sync (&t, frame, i, NULL, 0);
  }
  fail_unless (tiler_stat (&t, "stream-frames") > 0);
  fail_unless (gst_harness_push_event (t.h, gst_event_new_eos ()));
  tiler_drain (&t);
  tiler_apply (&t);
  fail_unless_equals_int (tiler_diff_pixels (&t, frame, NULL), 0);
  tiler_teardown (&t);
  gst_buffer_unref (frame);
}

GST_END_TEST;

/* ---- stream/draw order, refresh keyframe, noise, QoS, flush ---- */

typedef struct
{
  GMutex lock;
  GArray *seq;                  /* (is_stream << 63) | pts */
} OrderLog;

static GstPadProbeReturn
order_cb (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  OrderLog *o = data;
  GstBuffer *b = GST_PAD_PROBE_INFO_BUFFER (info);
  guint64 v = GST_BUFFER_PTS (b) |
      ((guint64) (strcmp (GST_PAD_NAME (pad), "stream") == 0) << 63);

  g_mutex_lock (&o->lock);
  g_array_append_val (o->seq, v);
  g_mutex_unlock (&o->lock);
  return GST_PAD_PROBE_OK;
}

GST_START_TEST (test_stream_frame_before_draws_and_refresh_keyframe)
{
  GstVideoRectangle anim = { 64, 64, 448, 320 };
  GstBuffer *frame = desktop_frame (640, 480);
  OrderLog o;
  StreamLog log = { 0, };
  GstPad *draw, *stream;
  guint32 seed = 3;
  guint i, j, pairs = 0, keys_before;
  Tiler t;

  g_mutex_init (&o.lock);
  o.seq = g_array_new (FALSE, FALSE, sizeof (guint64));
  tiler_setup (&t, 640, 480, "stream-min-frames=5");
  draw = gst_element_get_static_pad (t.h->element, "draw");
  stream = gst_element_get_static_pad (t.h->element, "stream");
  gst_pad_add_probe (draw, GST_PAD_PROBE_TYPE_BUFFER, order_cb, &o, NULL);
  gst_pad_add_probe (stream, GST_PAD_PROBE_TYPE_BUFFER, order_cb, &o, NULL);
  for (i = 0; i < 30; i++) {
    /* the animation, and typing below it (both touch the stream's edge
     * tiles: the stream rectangle is grid-aligned) */
    GstVideoRectangle g = { 8 + (i % 40) * 7, 400, 7, 12 };
    GstMapInfo map;

    animate (frame, 640, &anim, i, 3);
    gst_buffer_map (frame, &map, GST_MAP_WRITE);
    fill_text (map.data, 640 * 4, &g, rnd (&seed));
    gst_buffer_unmap (frame, &map);
    tiler_push_sync (&t, frame, i, NULL, 0);
    tiler_apply (&t);
    collect_stream (&t, &log);
  }
  fail_unless (log.buffers > 15);
  for (i = 0; i < o.seq->len; i++) {
    guint64 a = g_array_index (o.seq, guint64, i);

    if (!(a >> 63))
      continue;
    for (j = 0; j < o.seq->len; j++) {
      guint64 b = g_array_index (o.seq, guint64, j);

      if (!(b >> 63) && b == (a & ~(1ull << 63))) {
        fail_unless (i < j, "draw at %" GST_TIME_FORMAT " before its stream "
            "frame", GST_TIME_ARGS (b));
        pairs++;
      }
    }
  }
  fail_unless (pairs > 10);

  /* refresh: the next stream frame is a keyframe, announced by a
   * force-key-unit event */
  keys_before = log.keyframes;
  log.fku = 0;
  fail_unless (gst_harness_push_upstream_event (t.h,
          gst_spice_event_new_refresh ()));
  animate (frame, 640, &anim, i, 3);
  tiler_push_sync (&t, frame, i++, NULL, 0);
  collect_stream (&t, &log);
  fail_unless_equals_int (log.keyframes, keys_before + 1);
  fail_unless_equals_int (log.fku, 1);
  fail_unless_equals_int (tiler_stat (&t, "refreshes"), 1);
  fail_unless (!log.mixed_ids);

  gst_object_unref (draw);
  gst_object_unref (stream);
  tiler_teardown (&t);
  g_array_free (o.seq, TRUE);
  g_mutex_clear (&o.lock);
  gst_buffer_unref (frame);
}

GST_END_TEST;

GST_START_TEST (test_noise_streams_in_auto_mode)
{
  GstVideoRectangle noise = { 128, 64, 320, 240 };
  GstBuffer *frame = desktop_frame (640, 480);
  StreamLog log = { 0, };
  Tiler t;
  gint i;

  tiler_setup (&t, 640, 480, NULL);
  for (i = 0; i < 40; i++) {
    GstMapInfo map;

    gst_buffer_map (frame, &map, GST_MAP_WRITE);
    fill_noise (map.data, 640 * 4, &noise, 1000 + i);
    gst_buffer_unmap (frame, &map);
    tiler_push_sync (&t, frame, i, &noise, 1);
    tiler_apply (&t);
    collect_stream (&t, &log);
  }
  fail_unless (log.buffers >= 15, "noise did not stream (%u)", log.buffers);
  fail_unless (gst_spice_rect_contains (&log.dest, &noise));
  tiler_teardown (&t);
  gst_buffer_unref (frame);
}

GST_END_TEST;

GST_START_TEST (test_stream_qos_drops_frames)
{
  GstVideoRectangle anim = { 0, 0, 320, 240 };
  GstBuffer *frame = frame_new (320, 240);
  StreamLog log = { 0, };
  guint before;
  Tiler t;
  gint i;

  tiler_setup (&t, 320, 240, "stream-min-frames=5");
  for (i = 0; i < 10; i++) {
    animate (frame, 320, &anim, i, 3);
    tiler_push_sync (&t, frame, i, NULL, 0);
    collect_stream (&t, &log);
  }
  fail_unless (log.buffers > 0);
  before = log.buffers;
  /* downstream: 300 ms late at frame 10 */
  fail_unless (gst_harness_push_upstream_event (t.hs,
          gst_event_new_qos (GST_QOS_TYPE_UNDERFLOW, 2.0, 300 * GST_MSECOND,
              10 * FRAME_DURATION)));
  for (; i < 30; i++) {
    animate (frame, 320, &anim, i, 3);
    tiler_push_sync (&t, frame, i, NULL, 0);
    collect_stream (&t, &log);
  }
  {
    /* the frames that fall before 10 frames + 300 ms are dropped */
    guint late = 0;
    gint k;

    for (k = 10; k < 30; k++)
      late += k * FRAME_DURATION < 10 * FRAME_DURATION + 300 * GST_MSECOND;
    fail_unless_equals_int (tiler_stat (&t, "stream-frames-dropped"), late);
    fail_unless_equals_int (log.buffers - before, 20 - late);
  }
  tiler_teardown (&t);
  gst_buffer_unref (frame);
}

GST_END_TEST;

GST_START_TEST (test_flush_redraws_everything)
{
  GstVideoRectangle anim = { 20, 20, 200, 120 };
  GstBuffer *frame = desktop_frame (320, 240);
  GstSegment seg;
  Tiler t;
  gint i;

  tiler_setup (&t, 320, 240, "streaming=off");
  for (i = 0; i < 5; i++) {
    animate (frame, 320, &anim, i, 3);
    tiler_push_sync (&t, frame, i, NULL, 0);
  }
  tiler_apply (&t);
  fail_unless (gst_harness_push_event (t.h, gst_event_new_flush_start ()));
  fail_unless (gst_harness_push_event (t.h, gst_event_new_flush_stop (TRUE)));
  gst_segment_init (&seg, GST_FORMAT_TIME);
  fail_unless (gst_harness_push_event (t.h, gst_event_new_segment (&seg)));
  /* a client that lost everything: a fresh canvas becomes exact */
  draws_decoder_free (t.dec);
  t.dec = draws_decoder_new (320, 240);
  tiler_push_sync (&t, frame, 0, NULL, 0);
  tiler_apply (&t);
  fail_unless_equals_int (tiler_diff_pixels (&t, frame, NULL), 0);
  tiler_teardown (&t);
  gst_buffer_unref (frame);
}

GST_END_TEST;

GST_START_TEST (test_padded_stride_input)
{
  const gint w = 200, h = 100, stride = 1024;
  GstBuffer *frame = desktop_frame (w, h), *padded;
  gsize offset[4] = { 0, };
  gint strides[4] = { stride, };
  GstMapInfo in, out;
  Tiler t;

  tiler_setup (&t, w, h, NULL);
  padded = gst_buffer_new_allocate (NULL, (gsize) stride * h, NULL);
  gst_buffer_map (frame, &in, GST_MAP_READ);
  gst_buffer_map (padded, &out, GST_MAP_WRITE);
  memset (out.data, 0xab, out.size);
  gst_spice_blit_bgrx (out.data, stride, 0, 0, in.data, (gsize) w * 4, 0, 0,
      w, h);
  gst_buffer_unmap (padded, &out);
  gst_buffer_unmap (frame, &in);
  gst_buffer_add_video_meta_full (padded, GST_VIDEO_FRAME_FLAG_NONE,
      GST_VIDEO_FORMAT_BGRx, w, h, 1, offset, strides);
  tiler_push_sync (&t, padded, 0, NULL, 0);
  tiler_apply (&t);
  fail_unless_equals_int (tiler_diff_pixels (&t, frame, NULL), 0);
  gst_buffer_unref (padded);
  tiler_teardown (&t);
  gst_buffer_unref (frame);
}

GST_END_TEST;

GST_START_TEST (test_draw_qos_postpones_refinement)
{
  GstVideoRectangle anim = { 0, 0, 320, 240 };
  GstBuffer *frame = frame_new (320, 240);
  GstClockTime late_until = 2 * FRAME_DURATION + GST_SECOND;
  Tiler t;
  gint i;

  tiler_setup (&t, 320, 240, "streaming=off refine-delay=100000000");
  for (i = 0; i < 3; i++) {
    animate (frame, 320, &anim, i, 3);
    tiler_push_sync (&t, frame, i, NULL, 0);
  }
  tiler_apply (&t);
  fail_unless (tiler_diff_pixels (&t, frame, NULL) > 0);
  /* downstream of draw is a second late */
  fail_unless (gst_harness_push_upstream_event (t.h,
          gst_event_new_qos (GST_QOS_TYPE_UNDERFLOW, 2.0, GST_SECOND,
              2 * FRAME_DURATION)));
  /* still frames: past the refine delay, but not past the late time */
  for (; (GstClockTime) i * FRAME_DURATION < late_until; i++) {
    tiler_push_sync (&t, frame, i, NULL, 0);
    tiler_apply (&t);
    fail_unless (tiler_diff_pixels (&t, frame, NULL) > 0,
        "refined at frame %d while late", i);
  }
  tiler_push_sync (&t, frame, i, NULL, 0);
  tiler_apply (&t);
  fail_unless_equals_int (tiler_diff_pixels (&t, frame, NULL), 0);
  tiler_teardown (&t);
  gst_buffer_unref (frame);
}

GST_END_TEST;

GST_START_TEST (test_stream_flows_while_draw_blocked)
{
  GstVideoRectangle anim = { 64, 64, 320, 192 };
  GstBuffer *frame = desktop_frame (640, 480);
  StreamLog log = { 0, };
  BlockState b = { 0, };
  guint32 seed = 11;
  guint before = 0;
  GstPad *draw = NULL;
  gulong probe = 0;
  Tiler t;
  gint i;

  tiler_setup (&t, 640, 480, "stream-min-frames=5");
  for (i = 0; i < 50; i++) {
    GstVideoRectangle g = { 8 + (i % 60) * 7, 420, 7, 12 };
    GstMapInfo map;

    animate (frame, 640, &anim, i, 3);
    gst_buffer_map (frame, &map, GST_MAP_WRITE);
    fill_text (map.data, 640 * 4, &g, rnd (&seed));
    gst_buffer_unmap (frame, &map);
    if (i == 20) {
      draw = gst_element_get_static_pad (t.h->element, "draw");
      probe = gst_pad_add_probe (draw, GST_PAD_PROBE_TYPE_BLOCK |
          GST_PAD_PROBE_TYPE_BUFFER, block_cb, &b, NULL);
      collect_stream (&t, &log);
      before = log.buffers;
    }
    if (i < 20) {
      tiler_push_sync (&t, frame, i, NULL, 0);
      tiler_apply (&t);
    } else {
      tiler_push (&t, frame, i, NULL, 0);
      wait_processed (&t, i + 1);
    }
  }
  /* draw stuck on its first update, the stream went on with every frame */
  wait_blocked (&b);
  collect_stream (&t, &log);
  fail_unless_equals_int (b.count, 1);
  fail_unless_equals_int (log.buffers - before, 30);
  fail_unless (!log.mixed_ids);
  gst_pad_remove_probe (draw, probe);
  tiler_drain (&t);
  tiler_apply (&t);
  push_still (&t, frame, i, 45, FALSE);
  fail_unless_equals_int (tiler_diff_pixels (&t, frame, NULL), 0);
  gst_object_unref (draw);
  tiler_teardown (&t);
  gst_buffer_unref (frame);
}

GST_END_TEST;

/* a deadline already past on the clock (a live source running late):
 * refined at once, without waiting for another frame */
GST_START_TEST (test_refine_deadline_already_past)
{
  GstVideoRectangle anim = { 0, 0, 320, 240 };
  GstBuffer *frame = frame_new (320, 240), *b;
  Tiler t;
  gint i;

  tiler_setup (&t, 320, 240, "streaming=off refine-delay=100000000");
  /* the system clock, with a base time at its origin: every deadline of
   * these frames lies far in the past (the wait returns EARLY) */
  gst_harness_use_systemclock (t.h);
  gst_element_set_base_time (t.h->element, 0);
  for (i = 0; i < 3; i++) {
    animate (frame, 320, &anim, i, 3);
    tiler_push (&t, frame, i, NULL, 0);
    if (i < 2)
      tiler_drain (&t);
  }
  /* the refinement comes by itself */
  while (tiler_diff_pixels (&t, frame, NULL) > 0) {
    b = gst_harness_pull (t.h);
    fail_unless (b != NULL);
    fail_unless (draws_decoder_apply (t.dec, b, NULL));
    gst_buffer_unref (b);
  }
  tiler_teardown (&t);
  gst_buffer_unref (frame);
}

GST_END_TEST;

static Suite *
spicetiler_suite (void)
{
  Suite *s = suite_create ("spicetiler");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 300);
  tcase_add_test (tc, test_exact_videotestsrc_patterns);
  tcase_add_test (tc, test_exact_random_damage_and_drops);
  tcase_add_test (tc, test_damage_only_same_draws);
  tcase_add_test (tc, test_damage_only_malformed);
  tcase_add_test (tc, test_damage_only_pending_bound);
  tcase_add_test (tc, test_exact_blocked_output);
  tcase_add_test (tc, test_scroll_sent_as_copy);
  tcase_add_test (tc, test_scroll_lossy_area_not_copied);
  tcase_add_test (tc, test_stream_flows_while_draw_blocked);
  tcase_add_test (tc, test_fringe_text_stays_lossless);
  tcase_add_test (tc, test_stream_steady_animation);
  tcase_add_test (tc, test_no_stream_for_static_content);
  tcase_add_test (tc, test_stream_meta_survives_encoders);
  tcase_add_test (tc, test_stream_colorimetry_from_downstream);
  tcase_add_test (tc, test_stream_rate_and_control);
  tcase_add_test (tc, test_keypress_before_heavy_update);
  tcase_add_test (tc, test_refresh_full_lossless_redraw);
  tcase_add_test (tc, test_navigation_and_cursor);
  tcase_add_test (tc, test_refine_when_idle_on_clock);
  tcase_add_test (tc, test_stream_dropped_last_frame_converges);
  tcase_add_test (tc, test_stream_still_exact_on_paced_link);
  tcase_add_test (tc, test_refine_deadline_already_past);
  tcase_add_test (tc, test_caps_change_redraws);
  tcase_add_test (tc, test_eos_converges);
  tcase_add_test (tc, test_stream_frame_before_draws_and_refresh_keyframe);
  tcase_add_test (tc, test_noise_streams_in_auto_mode);
  tcase_add_test (tc, test_stream_qos_drops_frames);
  tcase_add_test (tc, test_flush_redraws_everything);
  tcase_add_test (tc, test_padded_stride_input);
  tcase_add_test (tc, test_draw_qos_postpones_refinement);
  return s;
}

GST_CHECK_MAIN (spicetiler);
