/* gst-spice tests: spicesrc against the real SPICE test guest
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Every test starts its own guest (tools/spice-test-guest) on a free
 * loopback port. The harness tests run without any main loop: spicesrc's
 * helper thread drives spice-client-glib. test_app_main_loop runs a
 * GMainLoop on the default context, like gst-launch-1.0.
 */
#include "spicesrc-test-util.h"
#include "context-blocker.h"
#include "spice-raw-client.h"

#include <gst/app/gstappsink.h>
#include <gst/video/navigation.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <stdio.h>

#include <gst/spice/gstspiceevents.h>
#include <gst/spice/gstspicekeymap.h>
#include <sys/resource.h>
#include <unistd.h>

static guint8 *
expected_idle (gint w, gint h, guint presses)
{
  return guest_render_frame_new (w, h, TEST_SEED, presses,
      GUEST_ACTIVITY_IDLE, GUEST_FRAME_NONE);
}

/* pulls frames until one equals expected (w x h), within timeout_ms; with
 * @keep (two slots), keeps that frame and the one kept before it */
static gboolean
pull_until_equal (GstHarness * h, gint w, gint ht, const guint8 * expected,
    guint timeout_ms, guint64 * last_diff, GstBuffer ** keep)
{
  gint64 end = g_get_monotonic_time () + (gint64) timeout_ms * 1000;

  *last_diff = G_MAXUINT64;
  while (g_get_monotonic_time () < end) {
    GstBuffer *buf = pull_within (h, 1000);
    gint cw, ch;

    if (!buf)
      continue;
    current_size (h, &cw, &ch);
    if (cw == w && ch == ht) {
      *last_diff = frame_diff (buf, w, ht, expected, NULL, NULL);
      if (*last_diff == 0) {
        if (keep) {
          gst_clear_buffer (&keep[1]);
          keep[1] = keep[0];
          keep[0] = buf;
        } else {
          gst_buffer_unref (buf);
        }
        return TRUE;
      }
    }
    gst_buffer_unref (buf);
  }
  return FALSE;
}

/* ------------------------------------------------------------------------ */

/* the end of a test that kept two frames (kept[2]) from spicesrc on gp */
static void
teardown_kept (GstHarness * h, GstBuffer ** kept, gchar * uri,
    GuestProcess * gp)
{
  gst_clear_buffer (&kept[0]);
  gst_clear_buffer (&kept[1]);
  gst_harness_teardown (h);
  g_free (uri);
  guest_process_stop (gp);
}

/* The first frames after the start need buffers that never held a frame
 * (downstream still holds the ones before): spicesrc writes their pages
 * when its pool is new, not while a key press waits for the frame. A
 * page's first write is a minor fault (~12 us on a virtual machine: 12 ms
 * a 1280x800 frame, the first presses of every session waited for it).
 * Downstream keeps the last two frames here, like spicetiler; three
 * presses then made two new frames, each a frame's pages of faults. */
/* password-file overrides password: setting password keeps the file
 * (it used to free password-file without forgetting it: a read of freed
 * memory afterwards, a double free at finalize; the ASan run sees it) */
/* The deprecated connect-timeout (seconds) and connect-timeout-ms are one
 * setting: each reads back what the other set (seconds rounded up, so a
 * timeout never reads as 0, "none"), in a launch line too. */
GST_START_TEST (test_connect_timeout_names)
{
  GstElement *src = gst_element_factory_make ("spicesrc", NULL), *p;
  GParamSpec *old;
  guint s = 0, ms = 0;

  fail_unless (src != NULL);
  g_object_get (src, "connect-timeout", &s, "connect-timeout-ms", &ms, NULL);
  fail_unless_equals_int (s, 10);
  fail_unless_equals_int (ms, 10000);
  g_object_set (src, "connect-timeout", 3, NULL);
  g_object_get (src, "connect-timeout-ms", &ms, NULL);
  fail_unless_equals_int (ms, 3000);
  g_object_set (src, "connect-timeout-ms", 1500, NULL);
  g_object_get (src, "connect-timeout", &s, NULL);
  fail_unless_equals_int (s, 2);
  g_object_set (src, "connect-timeout-ms", 0, NULL);
  g_object_get (src, "connect-timeout", &s, NULL);
  fail_unless_equals_int (s, 0);
  old = g_object_class_find_property (G_OBJECT_GET_CLASS (src),
      "connect-timeout");
  fail_unless (old->flags & G_PARAM_DEPRECATED);
  gst_object_unref (src);

  p = gst_parse_launch ("spicesrc name=s connect-timeout=7 ! fakesink", NULL);
  fail_unless (p != NULL);
  src = gst_bin_get_by_name (GST_BIN (p), "s");
  g_object_get (src, "connect-timeout-ms", &ms, NULL);
  fail_unless_equals_int (ms, 7000);
  gst_object_unref (src);
  gst_object_unref (p);
}

GST_END_TEST;

GST_START_TEST (test_password_keeps_file)
{
  GstElement *src = gst_element_factory_make ("spicesrc", NULL);
  gchar *file = NULL, *pw = NULL;

  fail_unless (src != NULL);
  g_object_set (src, "password-file", "/run/vm.ticket", NULL);
  g_object_set (src, "password", "secret", NULL);
  g_object_get (src, "password-file", &file, "password", &pw, NULL);
  fail_unless_equals_string (file, "/run/vm.ticket");
  fail_unless_equals_string (pw, "secret");
  g_free (file);
  g_free (pw);
  gst_object_unref (src);
}

GST_END_TEST;

GST_START_TEST (test_first_frames_prefaulted)
{
  GuestProcess *gp = start_guest (NULL);
  gchar *uri = guest_process_get_uri (gp);
  GstHarness *h = harness_for (uri, NULL);
  GstBuffer *kept[2] = { NULL, NULL };
  guint8 *expected[3];
  struct rusage ru0, ru1;
  glong pages, faults;
  gint w, ht;
  guint press;
  guint64 diff;

  kept[0] = pull_within (h, PULL_TIMEOUT_MS);
  fail_unless (kept[0] != NULL, "no frame from spicesrc");
  current_size (h, &w, &ht);
  pages = ((glong) w) * ht * 4 / sysconf (_SC_PAGESIZE);
  /* nobody used the session yet: nothing written ahead */
  g_usleep (200 * 1000);
  fail_unless_equals_uint64 (stat_u64 (h->element, "frames-prefaulted"), 0);
  /* a client's first move: the frames are written on a thread of their
   * own */
  fail_unless (gst_harness_push_upstream_event (h,
          gst_navigation_event_new_mouse_move (10, 10, 0)));
  {
    gint64 end = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;

    while (stat_u64 (h->element, "frames-prefaulted") < 3 &&
        g_get_monotonic_time () < end)
      g_usleep (10 * 1000);
  }
  fail_unless_equals_uint64 (stat_u64 (h->element, "frames-prefaulted"), 3);
  /* the thread's own end (under ASan, its stack's shadow) is not counted */
  g_usleep (300 * 1000);
  /* the pictures to compare with are made (their pages written) before
   * the count starts */
  for (press = 1; press <= 3; press++)
    expected[press - 1] = expected_idle (w, ht, press);
  fail_unless (getrusage (RUSAGE_SELF, &ru0) == 0);
  for (press = 1; press <= 3; press++) {
    guest_process_command (gp, "key 0x39");
    fail_unless (pull_until_equal (h, w, ht, expected[press - 1],
            PULL_TIMEOUT_MS, &diff, kept), "press %u: the key box never "
        "toggled (last diff %" G_GUINT64_FORMAT ")", press, diff);
  }
  fail_unless (getrusage (RUSAGE_SELF, &ru1) == 0);
  for (press = 0; press < 3; press++)
    g_free (expected[press]);
  faults = ru1.ru_minflt - ru0.ru_minflt;
  GST_INFO ("3 presses: %ld minor faults (a frame has %ld pages)", faults,
      pages);
  fail_unless (faults < pages, "3 presses cost %ld minor faults, a new "
      "frame's pages (%ld) were written while they waited", faults, pages);

  teardown_kept (h, kept, uri, gp);
}

GST_END_TEST;

GST_START_TEST (test_first_frame_exact)
{
  GuestProcess *gp = start_guest (NULL);
  gchar *uri = guest_process_get_uri (gp);
  GstHarness *h = harness_for (uri, NULL);
  GstBuffer *buf;
  GstSpiceDamageMeta *meta;
  guint8 *expected, *dump = NULL;
  gint w, ht, dw, dh, fx = -1, fy = -1;
  guint64 diff;

  buf = pull_within (h, PULL_TIMEOUT_MS);
  fail_unless (buf != NULL, "no frame from spicesrc");
  current_size (h, &w, &ht);
  fail_unless_equals_int (w, GUEST_DEFAULT_WIDTH);
  fail_unless_equals_int (ht, GUEST_DEFAULT_HEIGHT);

  /* first frame: seq 0, damage = whole surface */
  meta = gst_buffer_get_spice_damage_meta (buf);
  fail_unless (meta != NULL, "no damage meta");
  fail_unless_equals_uint64 (meta->seq, 0);
  fail_unless_equals_int (meta->n_rects, 1);
  fail_unless (meta->rects[0].x == 0 && meta->rects[0].y == 0 &&
      meta->rects[0].w == w && meta->rects[0].h == ht);
  fail_unless (GST_BUFFER_PTS_IS_VALID (buf));

  expected = expected_idle (w, ht, 0);
  diff = frame_diff (buf, w, ht, expected, &fx, &fy);
  fail_unless (diff == 0, "first frame differs from the render model in %"
      G_GUINT64_FORMAT " pixels (first at %d,%d)", diff, fx, fy);

  /* and from what the guest itself holds */
  fail_unless (guest_process_dump (gp, &dump, &dw, &dh));
  fail_unless_equals_int (dw, w);
  fail_unless_equals_int (dh, ht);
  diff = frame_diff (buf, w, ht, dump, &fx, &fy);
  fail_unless (diff == 0, "first frame differs from the guest's dump in %"
      G_GUINT64_FORMAT " pixels (first at %d,%d)", diff, fx, fy);

  /* no main loop here: the helper thread dispatched spice-gtk */
  fail_unless (stat_u64 (h->element, "invalidates-on-helper") > 0);

  /* latency: live */
  {
    GstQuery *q = gst_query_new_latency ();
    gboolean live;

    fail_unless (gst_element_query (h->element, q));
    gst_query_parse_latency (q, &live, NULL, NULL);
    fail_unless (live);
    gst_query_unref (q);
  }

  gst_buffer_unref (buf);
  g_free (expected);
  g_free (dump);
  gst_harness_teardown (h);
  g_free (uri);
  guest_process_stop (gp);
}

GST_END_TEST;

/* Every pixel that differs between two consecutive frames must lie inside
 * the second frame's damage. */
GST_START_TEST (test_busy_damage)
{
  GuestProcess *gp = start_guest ("--activity=busy", NULL);
  gchar *uri = guest_process_get_uri (gp);
  GstHarness *h = harness_for (uri, NULL);
  GstBuffer *buf;
  guint8 *prev, *mask, *expected;
  gint w, ht;
  guint64 seq, frames = 0, changed_total = 0, damage_total = 0;
  gint64 end;
  gchar *line;
  guint frozen_no = 0;
  guint64 diff;
  gdouble ratio;

  buf = pull_within (h, PULL_TIMEOUT_MS);
  fail_unless (buf != NULL);
  current_size (h, &w, &ht);
  prev = buffer_dup_pixels (buf, w, ht);
  seq = gst_buffer_get_spice_damage_meta (buf)->seq;
  gst_buffer_unref (buf);
  mask = g_malloc ((gsize) w * ht);

  end = g_get_monotonic_time () + 4 * G_USEC_PER_SEC;
  while (g_get_monotonic_time () < end) {
    GstSpiceDamageMeta *meta;
    GstMapInfo map;
    guint i;
    gint x, y;
    guint64 changed = 0, area = 0, outside = 0;
    gint ox = -1, oy = -1;

    buf = pull_within (h, 5000);
    fail_unless (buf != NULL, "frames stopped during busy");
    meta = gst_buffer_get_spice_damage_meta (buf);
    fail_unless (meta != NULL);
    fail_unless_equals_uint64 (meta->seq, seq + 1);
    seq = meta->seq;

    memset (mask, 0, (gsize) w * ht);
    for (i = 0; i < meta->n_rects; i++) {
      const GstVideoRectangle *r = &meta->rects[i];

      fail_unless (r->x >= 0 && r->y >= 0 && r->w > 0 && r->h > 0 &&
          r->x + r->w <= w && r->y + r->h <= ht, "bad damage rect");
      for (y = r->y; y < r->y + r->h; y++)
        memset (mask + (gsize) y * w + r->x, 1, r->w);
    }
    fail_unless (gst_buffer_map (buf, &map, GST_MAP_READ));
    for (y = 0; y < ht; y++) {
      const guint32 *a = (const guint32 *) (prev + (gsize) y * w * 4);
      const guint32 *b = (const guint32 *) (map.data + (gsize) y * w * 4);
      const guint8 *m = mask + (gsize) y * w;

      for (x = 0; x < w; x++) {
        area += m[x];
        if (((a[x] ^ b[x]) & 0x00ffffff) != 0) {
          changed++;
          if (!m[x] && outside++ == 0) {
            ox = x;
            oy = y;
          }
        }
      }
    }
    memcpy (prev, map.data, (gsize) w * ht * 4);
    gst_buffer_unmap (buf, &map);
    /* an element that writes in place: spicesrc makes later frames in the
     * buffers it pushed, copying only their damage, so it must keep them
     * read-only (this write goes into a copy); otherwise pixels outside
     * the next frames' damage would show this */
    buf = gst_buffer_make_writable (buf);
    gst_buffer_memset (buf, 0, 0x5a, (gsize) w * ht * 4);
    gst_buffer_unref (buf);

    fail_unless (outside == 0, "frame %" G_GUINT64_FORMAT ": %" G_GUINT64_FORMAT
        " changed pixels outside the damage (first at %d,%d)", seq, outside,
        ox, oy);
    changed_total += changed;
    damage_total += area;
    frames++;
  }
  fail_unless (frames >= 10, "only %" G_GUINT64_FORMAT " frames in 4 s",
      frames);
  {
    GstStructure *st;
    guint64 reused = 0;

    g_object_get (h->element, "stats", &st, NULL);
    fail_unless (gst_structure_get_uint64 (st, "frames-reused", &reused));
    gst_structure_free (st);
    /* buffers come back at once here: most frames reuse one */
    fail_unless (reused * 2 >= frames, "only %" G_GUINT64_FORMAT " of %"
        G_GUINT64_FORMAT " frames made in a buffer that came back", reused,
        frames);
  }
  fail_unless (changed_total > 0);
  ratio = (gdouble) damage_total / changed_total;
  GST_INFO ("busy: %" G_GUINT64_FORMAT " frames, damage area / changed "
      "pixels = %.3f", frames, ratio);
  g_printerr ("busy: %" G_GUINT64_FORMAT " frames, damage area %"
      G_GUINT64_FORMAT " / changed pixels %" G_GUINT64_FORMAT " = %.3f\n",
      frames, damage_total, changed_total, ratio);
  fail_unless (ratio < 2.0, "damage much larger than the change: %.2f", ratio);

  /* a later frame equals the model: freeze the activity on frame N */
  guest_process_command (gp, "freeze");
  line = guest_process_wait_line (gp, "frozen ", GUEST_LINE_TIMEOUT_MS);
  fail_unless (line != NULL);
  fail_unless (sscanf (line, "frozen busy %u", &frozen_no) == 1, "%s", line);
  g_free (line);
  expected = guest_render_frame_new (w, ht, TEST_SEED, 0,
      GUEST_ACTIVITY_BUSY, frozen_no);
  /* the frozen frame may be the last one we already have: take the
   * newest frame once the frames stop */
  end = g_get_monotonic_time () + PULL_TIMEOUT_MS * 1000LL;
  while (g_get_monotonic_time () < end) {
    buf = pull_within (h, 1500);
    if (!buf)
      break;
    fail_unless (gst_buffer_extract (buf, 0, prev, (gsize) w * ht * 4) ==
        (gsize) w * ht * 4);
    gst_buffer_unref (buf);
  }
  diff = test_bgrx_count_diff (prev, w * 4, expected, w * 4, w, ht, NULL, NULL);
  fail_unless (diff == 0, "newest frame differs from busy frame %u in %"
      G_GUINT64_FORMAT " pixels", frozen_no, diff);

  g_free (expected);
  g_free (prev);
  g_free (mask);
  gst_harness_teardown (h);
  g_free (uri);
  guest_process_stop (gp);
}

GST_END_TEST;

/* Frames made in buffers that come back late: like spicetiler, the test
 * keeps the two newest frames, so spicesrc makes each frame in the buffer
 * of a frame three back, which lacks the damage of the two frames in
 * between. The guest draws one thing at a time, in two places (the key
 * box at the top left, the activity area at the right): a key, then two
 * busy steps, three times. After each draw a frame must equal the guest's
 * own picture (its dump); one that missed an earlier frame's key box (the
 * box toggles, so the buffer three back shows the other colour) never
 * does. */
GST_START_TEST (test_reused_frames_exact)
{
  GuestProcess *gp = start_guest (NULL);
  gchar *uri = guest_process_get_uri (gp);
  GstHarness *h = harness_for (uri, NULL);
  GstBuffer *kept[2] = { NULL, NULL }, *buf;
  guint64 reused0, reused1;
  gint w, ht, step;
  gchar *line;

  buf = pull_within (h, PULL_TIMEOUT_MS);
  fail_unless (buf != NULL, "no frame from spicesrc");
  current_size (h, &w, &ht);
  kept[0] = buf;

  guest_process_command (gp, "activity busy");
  guest_process_command (gp, "freeze");
  line = guest_process_wait_line (gp, "frozen ", GUEST_LINE_TIMEOUT_MS);
  fail_unless (line != NULL);
  g_free (line);
  reused0 = stat_u64 (h->element, "frames-reused");

  for (step = -1; step < 9; step++) {
    guint8 *dump = NULL;
    gint dw, dh;
    guint64 diff = G_MAXUINT64;
    gint64 end;

    if (step >= 0)
      guest_process_command (gp, step % 3 == 0 ? "key 0x39" : "step");
    fail_unless (guest_process_dump (gp, &dump, &dw, &dh));
    fail_unless (dw == w && dh == ht);
    end = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
    while (diff != 0 && g_get_monotonic_time () < end) {
      buf = pull_within (h, 500);
      if (!buf)
        continue;
      diff = frame_diff (buf, w, ht, dump, NULL, NULL);
      /* the newest two stay with us: spicesrc cannot reuse them */
      gst_clear_buffer (&kept[1]);
      kept[1] = kept[0];
      kept[0] = buf;
    }
    fail_unless (diff == 0, "after step %d no frame equals the guest's "
        "picture (the last differs in %" G_GUINT64_FORMAT " pixels)", step,
        diff);
    g_free (dump);
  }
  reused1 = stat_u64 (h->element, "frames-reused");
  fail_unless (reused1 >= reused0 + 6, "only %" G_GUINT64_FORMAT
      " of 9 frames made in a buffer that came back", reused1 - reused0);

  teardown_kept (h, kept, uri, gp);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* damage-only output (memory:SpiceDamage) */

#define DAMAGE_CAPS "video/x-raw(" GST_CAPS_FEATURE_MEMORY_SPICE_DAMAGE ")"

/* the consumer's side: a picture the buffers are applied onto, in order */
typedef struct
{
  GstHarness *h;
  guint8 *pic;
  gint w, ht;
  guint64 seq, buffers, bytes, whole, frame_sized;
} DamageSink;

/* pulls one damage-only buffer (within @timeout_ms) and applies it onto
 * the picture: consecutive seqs, exactly its damage's pixels, the whole
 * surface first; FALSE if none came */
static gboolean
damage_pull_apply (DamageSink * d, guint timeout_ms)
{
  GstBuffer *buf = pull_within (d->h, timeout_ms);
  GstSpiceDamageMeta *meta;
  GError *err = NULL;
  GstCaps *caps;
  gsize size;
  gint w, ht;

  if (!buf)
    return FALSE;
  caps = gst_pad_get_current_caps (d->h->sinkpad);
  fail_unless (gst_spice_caps_is_damage_only (caps), "caps %" GST_PTR_FORMAT,
      caps);
  gst_caps_unref (caps);
  current_size (d->h, &w, &ht);
  meta = gst_buffer_get_spice_damage_meta (buf);
  fail_unless (meta != NULL, "no damage meta");
  /* (the harness keeps buffers, not events, in order: a buffer pulled
   * here may be older than the current caps, and then lies inside them) */
  if (w != d->w || ht != d->ht) {
    g_free (d->pic);
    d->pic = g_malloc0 ((gsize) w * ht * 4);
    d->w = w;
    d->ht = ht;
  }
  if (d->buffers > 0)
    fail_unless_equals_uint64 (meta->seq, d->seq + 1);
  d->seq = meta->seq;
  size = gst_buffer_get_size (buf);
  fail_unless_equals_uint64 (size,
      gst_spice_damage_packed_size (meta->rects, meta->n_rects));
  if (gst_spice_damage_covers (meta, w, ht))
    d->whole++;
  /* the first is a whole surface (maybe of a size the caps left already) */
  fail_unless (d->buffers > 0 || (meta->n_rects == 1 &&
          meta->rects[0].x == 0 && meta->rects[0].y == 0),
      "the first buffer is not a whole surface");
  /* a part of the surface in a frame's bytes (overlapping rectangles) */
  if (size >= (gsize) w * ht * 4 && !gst_spice_damage_covers (meta, w, ht))
    d->frame_sized++;
  fail_unless (gst_spice_damage_apply (buf, d->pic, (gsize) w * 4, w, ht,
          &err), "%s", err ? err->message : "");
  d->buffers++;
  d->bytes += size;
  gst_buffer_unref (buf);
  return TRUE;
}

/* applies buffers until the picture equals @expected (@w x @ht) within
 * 10 s; the last difference */
static guint64
damage_until_equal (DamageSink * d, const guint8 * expected, gint w, gint ht)
{
  gint64 end = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
  guint64 diff = G_MAXUINT64;

  while (g_get_monotonic_time () < end) {
    if (d->pic && d->w == w && d->ht == ht) {
      diff = test_bgrx_count_diff (d->pic, w * 4, expected, w * 4, w, ht,
          NULL, NULL);
      if (diff == 0)
        break;
    }
    damage_pull_apply (d, 500);
  }
  return diff;
}

/* [1]: --displays=2, the model's picture of each display side by side */
static guint8 *
displays_expected (gint hw, gint hh, guint presses)
{
  guint8 *pic = g_malloc0 ((gsize) 2 * hw * hh * 4);
  guint i;

  for (i = 0; i < 2; i++)
    guest_render_display_frame (pic + (gsize) i * hw * 4, hw, hh, 2 * hw * 4,
        i, 2, TEST_SEED, presses, GUEST_ACTIVITY_IDLE, GUEST_FRAME_NONE,
        FALSE);
  return pic;
}

/* With damage-only caps every buffer holds only its damage's pixels (its
 * size is their area * 4; the whole surface only first, after the
 * resize and when asked for) and, applied
 * in order onto a picture, they give the guest's own picture after every
 * draw: [0] one display, a busy area, key presses; [1] two display
 * channels side by side. An upstream force-key-unit event gets the whole
 * surface. No frames are held or prefaulted. */
GST_START_TEST (test_damage_only_exact)
{
  GuestProcess *gp = __i__ == 0 ? start_guest ("--activity=busy", NULL) :
      start_guest ("--displays=2", "--width=640", "--height=480", "--fps=0",
      NULL);
  gchar *uri = guest_process_get_uri (gp);
  DamageSink d = { harness_for_caps (uri, NULL, DAMAGE_CAPS), };
  guint8 *expected = NULL;
  gint64 end;
  gint step, w, ht;
  guint64 diff, whole;
  gchar *line;

  fail_unless (damage_pull_apply (&d, PULL_TIMEOUT_MS), "no buffer");
  w = d.w;
  ht = d.ht;
  if (__i__ == 0) {
    guint64 busy0 = d.buffers;

    end = g_get_monotonic_time () + 3 * G_USEC_PER_SEC;
    while (g_get_monotonic_time () < end)
      damage_pull_apply (&d, 1000);
    fail_unless (d.buffers - busy0 >= 10, "only %" G_GUINT64_FORMAT
        " buffers in 3 s of busy", d.buffers - busy0);
    guest_process_command (gp, "freeze");
    line = guest_process_wait_line (gp, "frozen ", GUEST_LINE_TIMEOUT_MS);
    fail_unless (line != NULL);
    g_free (line);
  } else {
    /* the second display may come after the first buffer */
    w = 2 * 640;
    ht = 480;
  }

  for (step = 0; step < 5; step++) {
    gint dw = w, dh = ht;

    if (step > 0)
      guest_process_command (gp, step % 2 ? "key 0x39" : __i__ == 0 ?
          "step" : "key 0x39");
    if (__i__ == 0)
      fail_unless (guest_process_dump (gp, &expected, &dw, &dh));
    else
      expected = displays_expected (640, 480, step);
    fail_unless (dw == w && dh == ht);
    diff = damage_until_equal (&d, expected, w, ht);
    fail_unless (diff == 0, "after step %d the applied buffers differ from "
        "the guest's picture in %" G_GUINT64_FORMAT " pixels", step, diff);
    g_free (expected);
  }
  g_printerr ("damage-only [%d]: %" G_GUINT64_FORMAT " buffers, %"
      G_GUINT64_FORMAT " bytes (a frame is %d)\n", __i__, d.buffers, d.bytes,
      w * ht * 4);
  fail_unless (d.frame_sized == 0, "%" G_GUINT64_FORMAT " buffers of a "
      "frame's size", d.frame_sized);
  /* the whole surface once ([1]: maybe once more, when the second display
   * came after the first buffer); every other buffer only its damage */
  fail_unless (d.whole >= 1 && d.whole <= (__i__ == 0 ? 1 : 2),
      "%" G_GUINT64_FORMAT " whole surfaces", d.whole);

  /* a key unit of damage: the whole surface, once */
  whole = d.whole;
  fail_unless (gst_harness_push_upstream_event (d.h,
          gst_video_event_new_upstream_force_key_unit (GST_CLOCK_TIME_NONE,
              TRUE, 0)));
  end = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
  while (d.whole == whole && g_get_monotonic_time () < end)
    damage_pull_apply (&d, 500);
  fail_unless_equals_uint64 (d.whole, whole + 1);

  /* a resize: the whole surface at the new size, then its damage */
  if (__i__ == 0) {
    gint dw, dh;

    whole = d.whole;
    guest_process_command (gp, "resize 1024 640");
    line = guest_process_wait_line (gp, "resized", GUEST_LINE_TIMEOUT_MS);
    fail_unless (line != NULL);
    g_free (line);
    guest_process_command (gp, "key 0x39");
    fail_unless (guest_process_dump (gp, &expected, &dw, &dh));
    fail_unless (dw == 1024 && dh == 640);
    diff = damage_until_equal (&d, expected, dw, dh);
    fail_unless (diff == 0, "after the resize the applied buffers differ "
        "from the guest's picture in %" G_GUINT64_FORMAT " pixels", diff);
    fail_unless (d.whole > whole, "no whole surface after the resize");
    g_free (expected);
  }

  /* no frames: nothing held, prefaulted or reused */
  fail_unless_equals_uint64 (stat_u64 (d.h->element, "frames-reused"), 0);
  fail_unless_equals_uint64 (stat_u64 (d.h->element, "frames-prefaulted"),
      0);

  g_free (d.pic);
  gst_harness_teardown (d.h);
  g_free (uri);
  guest_process_stop (gp);
}

GST_END_TEST;

/* Plain caps with two display channels: whole frames, the two heads side
 * by side, equal to the render model before and after a key press. */
GST_START_TEST (test_displays_whole_frames)
{
  GuestProcess *gp = start_guest ("--displays=2", "--width=640",
      "--height=480", "--fps=0", NULL);
  gchar *uri = guest_process_get_uri (gp);
  GstHarness *h = harness_for (uri, NULL);
  guint8 *expected;
  guint64 diff;
  guint presses;

  for (presses = 0; presses < 2; presses++) {
    if (presses > 0)
      guest_process_command (gp, "key 0x39");
    expected = displays_expected (640, 480, presses);
    fail_unless (pull_until_equal (h, 2 * 640, 480, expected, 10000, &diff,
            NULL), "after %u presses no whole frame equals the two displays "
        "(the last differs in %" G_GUINT64_FORMAT " pixels)", presses, diff);
    g_free (expected);
  }
  gst_harness_teardown (h);
  g_free (uri);
  guest_process_stop (gp);
}

GST_END_TEST;

/* A peer that takes anything (an appsink without caps, fakesink, either
 * behind videoconvert) expects whole frames: spicesrc offers damage-only
 * caps only to a peer that names memory:SpiceDamage. [0] appsink, [1]
 * videoconvert ! appsink, [2] identity ! appsink; then a fakesink's pad
 * caps. */
GST_START_TEST (test_any_sink_gets_whole_frames)
{
  static const gchar *const mid[] = { "", "videoconvert !", "identity !" };
  GuestProcess *gp = start_guest ("--width=320", "--height=240", NULL);
  gchar *uri = guest_process_get_uri (gp);
  gchar *desc = g_strdup_printf ("spicesrc name=src uri=\"%s\" ! %s "
      "appsink name=sink sync=false", uri, mid[__i__]);
  GstElement *p = gst_parse_launch (desc, NULL), *sink, *src;
  GstSample *sample;
  GstCaps *caps;
  GstPad *pad;

  fail_unless (p != NULL);
  sink = gst_bin_get_by_name (GST_BIN (p), "sink");
  src = gst_bin_get_by_name (GST_BIN (p), "src");
  fail_unless_equals_int (gst_element_set_state (p, GST_STATE_PLAYING),
      GST_STATE_CHANGE_ASYNC);
  sample = gst_app_sink_try_pull_sample (GST_APP_SINK (sink),
      30 * GST_SECOND);
  fail_unless (sample != NULL, "no frame");
  caps = gst_sample_get_caps (sample);
  fail_if (gst_spice_caps_is_damage_only (caps), "damage-only caps to a "
      "peer that takes anything");
  /* a whole 320x240 frame, though the first damage is all of it anyway */
  fail_unless_equals_uint64 (gst_buffer_get_size (gst_sample_get_buffer
          (sample)), 320 * 240 * 4);
  gst_sample_unref (sample);
  pad = gst_element_get_static_pad (src, "src");
  caps = gst_pad_get_current_caps (pad);
  fail_if (gst_spice_caps_is_damage_only (caps), "damage-only caps to a "
      "peer that takes anything");
  gst_caps_unref (caps);
  gst_object_unref (pad);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (sink);
  gst_object_unref (src);
  gst_object_unref (p);
  g_free (desc);

  /* fakesink */
  desc = g_strdup_printf ("spicesrc name=src uri=\"%s\" ! fakesink "
      "name=sink sync=false", uri);
  p = gst_parse_launch (desc, NULL);
  fail_unless (p != NULL);
  src = gst_bin_get_by_name (GST_BIN (p), "src");
  pad = gst_element_get_static_pad (src, "src");
  fail_unless_equals_int (gst_element_set_state (p, GST_STATE_PLAYING),
      GST_STATE_CHANGE_ASYNC);
  fail_unless_equals_int (gst_element_get_state (p, NULL, NULL,
          30 * GST_SECOND), GST_STATE_CHANGE_SUCCESS);
  caps = gst_pad_get_current_caps (pad);
  fail_unless (caps != NULL);
  fail_if (gst_spice_caps_is_damage_only (caps), "damage-only caps to a "
      "peer that takes anything");
  gst_caps_unref (caps);
  gst_object_unref (pad);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (src);
  gst_object_unref (p);
  g_free (desc);
  g_free (uri);
  guest_process_stop (gp);
}

GST_END_TEST;

static GstEvent *
key_event (gboolean press, const gchar * key, gint scancode)
{
  GstEvent *ev = press ? gst_navigation_event_new_key_press (key, 0) :
      gst_navigation_event_new_key_release (key, 0);

  if (scancode > 0) {
    GstStructure *s;

    ev = gst_event_make_writable (ev);
    s = gst_event_writable_structure (ev);
    gst_structure_set (s, "scancode", G_TYPE_UINT, (guint) scancode, NULL);
  }
  return ev;
}

GST_START_TEST (test_key_press)
{
  GuestProcess *gp = start_guest (NULL);
  gchar *uri = guest_process_get_uri (gp);
  GstHarness *h = harness_for (uri, NULL);
  GstBuffer *buf;
  guint8 *expected;
  gint w, ht;
  guint mark;
  gchar *line, *shift;
  guint64 diff;

  buf = pull_within (h, PULL_TIMEOUT_MS);
  fail_unless (buf != NULL);
  current_size (h, &w, &ht);
  gst_buffer_unref (buf);
  /* the inputs channel links shortly after the display */
  fail_unless ((line = guest_process_wait_line (gp, "channel up inputs",
              GUEST_LINE_TIMEOUT_MS)) != NULL);
  g_free (line);

  /* keysym name */
  mark = guest_process_mark (gp);
  fail_unless (gst_harness_push_upstream_event (h, key_event (TRUE, "space",
              0)));
  fail_unless (gst_harness_push_upstream_event (h, key_event (FALSE, "space",
              0)));
  line = guest_process_wait_line_from (gp, mark, "key down", 20000, NULL);
  fail_unless (line != NULL, "guest saw no key");
  fail_unless_equals_string (line, "key down 0x39");
  g_free (line);
  line = guest_process_wait_line_from (gp, mark, "key up", 20000, NULL);
  fail_unless_equals_string (line, "key up 0x39");
  g_free (line);
  line = guest_process_wait_line_from (gp, mark, "box 1", 20000, NULL);
  fail_unless (line != NULL);
  g_free (line);

  /* the key box toggles in a later frame */
  expected = expected_idle (w, ht, 1);
  fail_unless (pull_until_equal (h, w, ht, expected, PULL_TIMEOUT_MS, &diff,
          NULL), "key box never toggled (last diff %" G_GUINT64_FORMAT ")",
      diff);
  g_free (expected);

  /* exact scancode field wins over the name: Right Ctrl */
  mark = guest_process_mark (gp);
  fail_unless (gst_harness_push_upstream_event (h, key_event (TRUE,
              "Control_L", 0x11d)));
  fail_unless (gst_harness_push_upstream_event (h, key_event (FALSE,
              "Control_L", 0x11d)));
  line = guest_process_wait_line_from (gp, mark, "key down", 20000, NULL);
  fail_unless_equals_string (line, "key down 0x11d");
  g_free (line);

  /* a shifted name without Shift gets a synthesized Shift */
  mark = guest_process_mark (gp);
  fail_unless (gst_harness_push_upstream_event (h, key_event (TRUE, "A", 0)));
  fail_unless (gst_harness_push_upstream_event (h, key_event (FALSE, "A", 0)));
  line = guest_process_wait_line_from (gp, mark, "key down 0x1e", 20000, NULL);
  fail_unless (line != NULL, "no 'a' key for \"A\"");
  g_free (line);
  shift = g_strdup_printf ("key down 0x%x", GST_SPICE_SCANCODE_SHIFT_L);
  line = guest_process_find_line (gp, mark, shift, NULL);
  fail_unless (line != NULL, "no Shift for \"A\"");
  g_free (line);
  g_free (shift);

  fail_unless (stat_u64 (h->element, "input-events") >= 6);

  gst_harness_teardown (h);
  g_free (uri);
  guest_process_stop (gp);
}

GST_END_TEST;

static gboolean
wait_mouse_mode (GstElement * src, const gchar * mode, guint timeout_ms)
{
  gint64 end = g_get_monotonic_time () + (gint64) timeout_ms * 1000;

  while (g_get_monotonic_time () < end) {
    GstStructure *s = src_stats (src);
    gboolean ok = !g_strcmp0 (gst_structure_get_string (s, "mouse-mode"),
        mode);

    gst_structure_free (s);
    if (ok)
      return TRUE;
    g_usleep (20000);
  }
  return FALSE;
}

GST_START_TEST (test_mouse_client_mode)
{
  GuestProcess *gp = start_guest (NULL);
  gchar *uri = guest_process_get_uri (gp);
  GstHarness *h = harness_for (uri, NULL);
  GstBuffer *buf;
  guint mark;
  gchar *line;

  buf = pull_within (h, PULL_TIMEOUT_MS);
  fail_unless (buf != NULL);
  gst_buffer_unref (buf);
  fail_unless ((line = guest_process_wait_line (gp, "channel up inputs",
              GUEST_LINE_TIMEOUT_MS)) != NULL);
  g_free (line);
  fail_unless (wait_mouse_mode (h->element, "client", 20000),
      "server never granted client mouse mode");

  mark = guest_process_mark (gp);
  fail_unless (gst_harness_push_upstream_event (h,
          gst_navigation_event_new_mouse_move (100, 200, 0)));
  line = guest_process_wait_line_from (gp, mark, "mouse position", 20000, NULL);
  fail_unless_equals_string (line, "mouse position 100 200 buttons=0");
  g_free (line);

  /* the first position can come twice (again when the inputs channel is
   * reported open: gstspicesrcinputs.c): the next one is 300 400 */
  mark = guest_process_mark (gp);
  fail_unless (gst_harness_push_upstream_event (h,
          gst_navigation_event_new_mouse_button_press (1, 300, 400, 0)));
  fail_unless (gst_harness_push_upstream_event (h,
          gst_navigation_event_new_mouse_button_release (1, 300, 400, 0)));
  line = guest_process_wait_line_from (gp, mark, "mouse position 3", 20000,
      NULL);
  fail_unless (line && g_str_has_prefix (line, "mouse position 300 400"),
      "%s", GST_STR_NULL (line));
  g_free (line);
  line = guest_process_wait_line_from (gp, mark, "mouse buttons 1", 20000,
      NULL);
  fail_unless (line != NULL, "no left button press");
  g_free (line);
  line = guest_process_wait_line_from (gp, mark, "mouse buttons 0", 20000,
      NULL);
  fail_unless (line != NULL, "no left button release");
  g_free (line);

  /* wheel up */
  mark = guest_process_mark (gp);
  fail_unless (gst_harness_push_upstream_event (h,
          gst_navigation_event_new_mouse_scroll (300, 400, 0, 1, 0)));
  line = guest_process_wait_line_from (gp, mark, "mouse wheel", 20000, NULL);
  fail_unless (line && g_str_has_prefix (line, "mouse wheel -1"), "%s",
      GST_STR_NULL (line));
  g_free (line);

  gst_harness_teardown (h);
  g_free (uri);
  guest_process_stop (gp);
}

GST_END_TEST;

GST_START_TEST (test_resize)
{
  GuestProcess *gp = start_guest (NULL);
  gchar *uri = guest_process_get_uri (gp);
  GstHarness *h = harness_for (uri, NULL);
  GstBuffer *buf;
  guint8 *expected;
  gint w, ht;
  gchar *line;
  guint64 diff = 0;
  gint64 end;
  gboolean seen = FALSE;

  buf = pull_within (h, PULL_TIMEOUT_MS);
  fail_unless (buf != NULL);
  gst_buffer_unref (buf);

  guest_process_command (gp, "resize 1024 640");
  line = guest_process_wait_line (gp, "resized", GUEST_LINE_TIMEOUT_MS);
  fail_unless (line != NULL);
  g_free (line);

  expected = expected_idle (1024, 640, 0);
  end = g_get_monotonic_time () + PULL_TIMEOUT_MS * 1000LL;
  while (!seen && g_get_monotonic_time () < end) {
    GstSpiceDamageMeta *meta;

    buf = pull_within (h, 1000);
    if (!buf)
      continue;
    current_size (h, &w, &ht);
    if (w == 1024 && ht == 640) {
      meta = gst_buffer_get_spice_damage_meta (buf);
      fail_unless (meta != NULL);
      diff = frame_diff (buf, w, ht, expected, NULL, NULL);
      seen = diff == 0;
    }
    gst_buffer_unref (buf);
  }
  fail_unless (seen, "no correct 1024x640 frame after resize (last diff %"
      G_GUINT64_FORMAT ")", diff);

  g_free (expected);
  gst_harness_teardown (h);
  g_free (uri);
  guest_process_stop (gp);
}

GST_END_TEST;

GST_START_TEST (test_reconnect)
{
  GuestProcess *gp = start_guest (NULL);
  gchar *uri = guest_process_get_uri (gp);
  guint port = guest_process_get_port (gp);
  gchar *port_arg = g_strdup_printf ("--port=%u", port);
  GstHarness *h = harness_for (uri,
      "reconnect=always reconnect-interval=200");
  GstBuffer *buf;
  guint8 *expected;
  guint64 diff;
  gint w, ht;

  buf = pull_within (h, PULL_TIMEOUT_MS);
  fail_unless (buf != NULL);
  gst_buffer_unref (buf);

  /* the guest goes away... */
  guest_process_stop (gp);
  g_usleep (500 * 1000);
  /* ...and comes back on the same port, this time with a key pressed:
   * frames resume with its picture */
  gp = start_guest (port_arg, NULL);
  /* (the launcher passes its own --port first; ours, last, wins) */
  guest_process_command (gp, "key");
  expected = expected_idle (GUEST_DEFAULT_WIDTH, GUEST_DEFAULT_HEIGHT, 1);
  w = GUEST_DEFAULT_WIDTH;
  ht = GUEST_DEFAULT_HEIGHT;
  fail_unless (pull_until_equal (h, w, ht, expected, PULL_TIMEOUT_MS, &diff,
          NULL),
      "no frame from the restarted guest (last diff %" G_GUINT64_FORMAT ")",
      diff);
  {
    GstStructure *s = src_stats (h->element);
    guint rc = 0;

    fail_unless (gst_structure_get_uint (s, "reconnects", &rc));
    fail_unless (rc >= 1);
    gst_structure_free (s);
  }
  /* no error was posted meanwhile */
  g_free (expected);
  gst_harness_teardown (h);
  g_free (uri);
  g_free (port_arg);
  guest_process_stop (gp);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* errors, in a pipeline with a bus */

static GstElement *
pipeline_for (const gchar * uri, const gchar * extra, GstElement ** src)
{
  gchar *desc = g_strdup_printf ("spicesrc name=src uri=\"%s\" %s ! "
      "fakesink sync=false", uri, extra ? extra : "");
  GError *err = NULL;
  GstElement *p = gst_parse_launch (desc, &err);

  fail_unless (p != NULL, "%s", err ? err->message : "");
  g_free (desc);
  if (src)
    *src = gst_bin_get_by_name (GST_BIN (p), "src");
  return p;
}

static void
expect_error (GstElement * p, GQuark domain, gint code, const gchar * needle,
    guint timeout_ms)
{
  GstBus *bus = gst_element_get_bus (p);
  GstMessage *msg = wait_error (bus, timeout_ms);
  GError *err = NULL;
  gchar *dbg = NULL;

  fail_unless (msg != NULL, "no error within %u ms", timeout_ms);
  gst_message_parse_error (msg, &err, &dbg);
  GST_INFO ("error: %s (%s)", err->message, dbg);
  g_printerr ("got expected error: %s (%s)\n", err->message,
      GST_STR_NULL (dbg));
  fail_unless (g_error_matches (err, domain, code), "wrong error: %s %d %s",
      g_quark_to_string (err->domain), err->code, err->message);
  fail_unless (strstr (err->message, needle) != NULL, "'%s' not in '%s'",
      needle, err->message);
  fail_unless (GST_MESSAGE_SRC (msg) != NULL &&
      g_str_has_prefix (GST_OBJECT_NAME (GST_MESSAGE_SRC (msg)), "src"));
  g_error_free (err);
  g_free (dbg);
  gst_message_unref (msg);
  gst_object_unref (bus);
}

GST_START_TEST (test_error_refused)
{
  guint port = test_pick_free_port ();
  gchar *uri = g_strdup_printf ("spice://127.0.0.1:%u", port);
  GstElement *p = pipeline_for (uri, NULL, NULL);

  gst_element_set_state (p, GST_STATE_PLAYING);
  expect_error (p, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_OPEN_READ,
      "Could not connect", 20000);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (p);
  g_free (uri);
}

GST_END_TEST;

GST_START_TEST (test_error_password)
{
  GuestProcess *gp = start_guest ("--password=s3cret", NULL);
  gchar *uri = guest_process_get_uri (gp);
  GstElement *p = pipeline_for (uri, "password=wrong", NULL);
  GstHarness *h;
  GstBuffer *buf;
  gchar *good;

  gst_element_set_state (p, GST_STATE_PLAYING);
  expect_error (p, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_AUTHORIZED,
      "authentication failed", 20000);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (p);

  /* the right one, in the URI this time, works */
  good = g_strdup_printf ("%s?password=s3cret", uri);
  h = harness_for (good, NULL);
  buf = pull_within (h, PULL_TIMEOUT_MS);
  fail_unless (buf != NULL, "no frame with the right password");
  gst_buffer_unref (buf);
  gst_harness_teardown (h);

  g_free (good);
  g_free (uri);
  guest_process_stop (gp);
}

GST_END_TEST;

/* a password file without a usable password: a permanent error (RESOURCE
 * SETTINGS, gst-spice-run does not restart) that says why */
GST_START_TEST (test_error_password_file)
{
  gchar *dir = g_dir_make_tmp ("spicesrc-pw-XXXXXX", NULL);
  gchar *file = g_build_filename (dir, "pw", NULL);
  gchar *uri = g_strdup_printf ("spice://127.0.0.1:%u",
      test_pick_free_port ());
  gchar *extra = g_strdup_printf ("password-file=\"%s\"", file);
  GstElement *p;

  fail_unless (g_file_set_contents (file, "", -1, NULL));
  p = pipeline_for (uri, extra, NULL);
  gst_element_set_state (p, GST_STATE_PLAYING);
  expect_error (p, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS,
      "its first line is empty", 20000);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (p);
  g_unlink (file);
  g_rmdir (dir);
  g_free (extra);
  g_free (uri);
  g_free (file);
  g_free (dir);
}

GST_END_TEST;

GST_START_TEST (test_error_bad_uri)
{
  const gchar *bad[] = { "spice://", "http://127.0.0.1:5900",
    "spice://127.0.0.1", "spice://127.0.0.1:99999", NULL
  };
  const gchar **u;

  for (u = bad; *u; u++) {
    GstElement *p = pipeline_for (*u, NULL, NULL);
    GstBus *bus = gst_element_get_bus (p);
    GstMessage *msg;
    GError *err = NULL;

    fail_unless_equals_int (gst_element_set_state (p, GST_STATE_PAUSED),
        GST_STATE_CHANGE_FAILURE);
    msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
    fail_unless (msg != NULL, "no error for %s", *u);
    gst_message_parse_error (msg, &err, NULL);
    fail_unless (strstr (err->message, *u) != NULL, "URI not named in '%s'",
        err->message);
    g_error_free (err);
    gst_message_unref (msg);
    gst_object_unref (bus);
    gst_element_set_state (p, GST_STATE_NULL);
    gst_object_unref (p);
  }
  /* the URI handler refuses them too */
  {
    GstElement *e = gst_element_make_from_uri (GST_URI_SRC,
        "spice://127.0.0.1:5900", NULL, NULL);
    gchar *got;

    fail_unless (e != NULL);
    got = gst_uri_handler_get_uri (GST_URI_HANDLER (e));
    fail_unless_equals_string (got, "spice://127.0.0.1:5900");
    g_free (got);
    fail_if (gst_uri_handler_set_uri (GST_URI_HANDLER (e), "http://x", NULL));
    gst_object_unref (e);
  }
}

GST_END_TEST;

GST_START_TEST (test_error_vanish)
{
  GuestProcess *gp = start_guest (NULL);
  gchar *uri = guest_process_get_uri (gp);
  GstElement *src;
  GstElement *p = pipeline_for (uri, NULL, &src);
  gint64 end = g_get_monotonic_time () + PULL_TIMEOUT_MS * 1000LL;

  gst_element_set_state (p, GST_STATE_PLAYING);
  while (stat_u64 (src, "frames") == 0 && g_get_monotonic_time () < end)
    g_usleep (10000);
  fail_unless (stat_u64 (src, "frames") > 0);
  guest_process_stop (gp);
  expect_error (p, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_READ, "lost", 20000);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (src);
  gst_object_unref (p);
  g_free (uri);
}

GST_END_TEST;

GST_START_TEST (test_error_tls)
{
  /* a plain SPICE port used as tls-port: the TLS handshake fails */
  GuestProcess *gp = start_guest (NULL);
  gchar *uri = g_strdup_printf ("spice://127.0.0.1?tls-port=%u",
      guest_process_get_port (gp));
  GstElement *p = pipeline_for (uri, NULL, NULL);

  gst_element_set_state (p, GST_STATE_PLAYING);
  expect_error (p, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_OPEN_READ, "TLS",
      20000);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (p);
  g_free (uri);
  guest_process_stop (gp);
}

GST_END_TEST;

/* running-time PTS, strictly increasing; max-framerate spaces frames */
GST_START_TEST (test_max_framerate_timestamps)
{
  GuestProcess *gp = start_guest ("--activity=busy", NULL);
  gchar *uri = guest_process_get_uri (gp);
  gchar *desc = g_strdup_printf ("spicesrc uri=\"%s\" max-framerate=5/1 ! "
      "appsink name=sink sync=false", uri);
  GstElement *p = gst_parse_launch (desc, NULL);
  GstElement *sink = gst_bin_get_by_name (GST_BIN (p), "sink");
  GstClockTime last = GST_CLOCK_TIME_NONE, first = GST_CLOCK_TIME_NONE;
  guint n = 0;
  gint64 end;
  GstSample *sample;

  gst_element_set_state (p, GST_STATE_PLAYING);
  sample = gst_app_sink_try_pull_sample (GST_APP_SINK (sink),
      PULL_TIMEOUT_MS * GST_MSECOND);
  fail_unless (sample != NULL);
  gst_sample_unref (sample);
  end = g_get_monotonic_time () + 3 * G_USEC_PER_SEC;
  while (g_get_monotonic_time () < end) {
    GstBuffer *buf;
    GstClockTime pts;

    sample = gst_app_sink_try_pull_sample (GST_APP_SINK (sink), GST_SECOND);
    if (!sample)
      continue;
    buf = gst_sample_get_buffer (sample);
    pts = GST_BUFFER_PTS (buf);
    fail_unless (GST_CLOCK_TIME_IS_VALID (pts));
    if (GST_CLOCK_TIME_IS_VALID (last)) {
      fail_unless (pts > last, "PTS not increasing");
      /* a frame is stamped with the arrival of its newest draw, which may
       * come before the frame's turn: two stamps can be closer than 200 ms,
       * but the rate over the run is what max-framerate bounds (below) */
    } else {
      first = pts;
    }
    last = pts;
    n++;
    gst_sample_unref (sample);
  }
  g_printerr ("max-framerate=5/1: %u frames in 3 s, PTS span %"
      GST_TIME_FORMAT "\n", n, GST_TIME_ARGS (last - first));
  fail_unless (n >= 5 && n <= 20, "%u frames in 3 s at max 5 fps", n);
  /* n frames span at least (n - 1) intervals of ~200 ms, less one interval
   * of stamping slack */
  fail_unless (last - first >= (n - 2) * 200 * GST_MSECOND, "%u frames "
      "within %" GST_TIME_FORMAT, n, GST_TIME_ARGS (last - first));

  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (sink);
  gst_object_unref (p);
  g_free (desc);
  g_free (uri);
  guest_process_stop (gp);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* shutdown */

static gint64
timed_set_null (GstElement * p)
{
  gint64 t0 = g_get_monotonic_time ();

  fail_unless (gst_element_set_state (p, GST_STATE_NULL) ==
      GST_STATE_CHANGE_SUCCESS);
  return g_get_monotonic_time () - t0;
}

/* a server on a free loopback port that accepts TCP and never says a
 * word (a hung VM); its spice:// URI in @uri */
static GSocket *
silent_server_new (gchar ** uri)
{
  guint16 port = 0;
  GSocket *sock = spice_raw_tcp_listen (&port);

  fail_unless (sock != NULL);
  *uri = g_strdup_printf ("spice://127.0.0.1:%u", port);
  return sock;
}

GST_START_TEST (test_null_while_connecting)
{
  gchar *uri;
  GSocket *sock = silent_server_new (&uri);
  GstElement *p;
  gint64 us;

  /* spice-client-glib 0.42 races with itself here: a channel coroutine
   * that is still in its link stage when the session is disconnected may
   * wake up to a channel without session and log a GObject critical from
   * inside spice-gtk (no crash: seen about once in ten runs). That is not
   * what this test is about (prompt return to NULL), so only that exact
   * message is tolerated. */
  gst_check_add_log_filter ("GLib-GObject", G_LOG_LEVEL_CRITICAL,
      g_regex_new ("^g_object_get: assertion 'G_IS_OBJECT \\(object\\)' "
          "failed$", 0, 0, NULL), NULL, NULL, NULL);

  p = pipeline_for (uri, NULL, NULL);
  gst_element_set_state (p, GST_STATE_PLAYING);
  g_usleep (G_USEC_PER_SEC);
  us = timed_set_null (p);
  g_printerr ("NULL while connecting: %.3f s\n", us / 1e6);
  fail_unless (us < 2 * G_USEC_PER_SEC, "took %.3f s", us / 1e6);

  /* and right after PLAYING */
  gst_element_set_state (p, GST_STATE_PLAYING);
  us = timed_set_null (p);
  fail_unless (us < 2 * G_USEC_PER_SEC, "took %.3f s", us / 1e6);

  /* pausing a live source that waits for its server is not an error */
  {
    GstBus *bus = gst_element_get_bus (p);
    GstMessage *msg;

    gst_element_set_state (p, GST_STATE_PLAYING);
    g_usleep (300 * 1000);
    gst_element_set_state (p, GST_STATE_PAUSED);
    g_usleep (300 * 1000);
    gst_element_set_state (p, GST_STATE_PLAYING);
    g_usleep (300 * 1000);
    msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
    fail_if (msg != NULL, "error after PLAYING-PAUSED-PLAYING");
    us = timed_set_null (p);
    fail_unless (us < 2 * G_USEC_PER_SEC, "took %.3f s", us / 1e6);
    gst_object_unref (bus);
  }

  gst_object_unref (p);
  g_free (uri);
  g_object_unref (sock);
}

GST_END_TEST;

/* whether spicesrc's context helper thread (gstspicesrccontext.c,
 * "spicesrc-ctx") runs in this process */
static gboolean
helper_thread_running (void)
{
  GDir *d = g_dir_open ("/proc/self/task", 0, NULL);
  const gchar *tid;
  gboolean found = FALSE;

  fail_unless (d != NULL);
  while (!found && (tid = g_dir_read_name (d))) {
    gchar *path = g_strdup_printf ("/proc/self/task/%s/comm", tid);
    gchar *comm = NULL;

    if (g_file_get_contents (path, &comm, NULL, NULL))
      found = g_str_has_prefix (comm, "spicesrc-ctx");
    g_free (comm);
    g_free (path);
  }
  g_dir_close (d);
  return found;
}

/* Each start's reference to the context helper is released by its own
 * teardown. A stop that gives up waiting for its teardown (nobody could
 * dispatch the context for 2 s) leaves it queued; the next start runs
 * before it. The helper thread must still stop after the last NULL (its
 * 2 s linger): before the fix, the late teardown released the new start's
 * reference and the new start's teardown then released none, so the
 * helper ran forever. Frames flow again after the restart meanwhile. */
GST_START_TEST (test_helper_ref_after_late_teardown)
{
  GuestProcess *gp = start_guest (NULL);
  gchar *uri = guest_process_get_uri (gp);
  GstElement *src;
  GstElement *p = pipeline_for (uri, NULL, &src);
  TestContextBlocker *blocker;
  gint64 end, us;

  gst_element_set_state (p, GST_STATE_PLAYING);
  end = g_get_monotonic_time () + PULL_TIMEOUT_MS * 1000LL;
  while (stat_u64 (src, "frames") == 0 && g_get_monotonic_time () < end)
    g_usleep (10000);
  fail_unless (stat_u64 (src, "frames") > 0, "no frame");
  fail_unless (helper_thread_running ());

  /* stop without the context: the teardown stays queued */
  blocker = test_context_block ();
  us = timed_set_null (p);
  g_printerr ("NULL with the context held: %.3f s\n", us / 1e6);
  fail_unless (us >= G_USEC_PER_SEC, "the teardown ran although the "
      "context was held (%.3f s)", us / 1e6);
  /* a new start before that teardown ran */
  fail_unless (gst_element_set_state (p, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  test_context_unblock (blocker);
  end = g_get_monotonic_time () + PULL_TIMEOUT_MS * 1000LL;
  while (stat_u64 (src, "frames") == 0 && g_get_monotonic_time () < end)
    g_usleep (10000);
  fail_unless (stat_u64 (src, "frames") > 0, "no frame after the restart");

  us = timed_set_null (p);
  fail_unless (us < 2 * G_USEC_PER_SEC, "took %.3f s", us / 1e6);
  /* the helper lingers 2 s after its last reference */
  end = g_get_monotonic_time () + (4 + 4 * test_time_factor ()) *
      G_USEC_PER_SEC;
  while (helper_thread_running () && g_get_monotonic_time () < end)
    g_usleep (50000);
  fail_if (helper_thread_running (), "the context helper still runs: a "
      "start's reference was never released");

  gst_object_unref (src);
  gst_object_unref (p);
  g_free (uri);
  guest_process_stop (gp);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* one start, one session: a late teardown and the next start's parameters */

/* "spicesrc ! appsink caps=video/x-raw" (whole frames) with the newest
 * frame kept */
static GstElement *
appsink_pipeline_for (const gchar * uri, const gchar * extra,
    GstElement ** src, GstElement ** sink)
{
  gchar *desc = g_strdup_printf ("spicesrc name=src uri=\"%s\" %s ! "
      "appsink name=sink caps=video/x-raw sync=false max-buffers=1 "
      "drop=true", uri,
      extra ? extra : "");
  GstElement *p = gst_parse_launch (desc, NULL);

  fail_unless (p != NULL);
  g_free (desc);
  *src = gst_bin_get_by_name (GST_BIN (p), "src");
  *sink = gst_bin_get_by_name (GST_BIN (p), "sink");
  return p;
}

/* NULL while @blocker holds the default context (the teardown stays
 * queued: NULL gives up after its 2 s), the uri of @gp, PLAYING again;
 * the context is let go at @release_us (monotonic), not before */
static void
restart_on_while_context_held (GstElement * p, GstElement * src,
    TestContextBlocker * blocker, GuestProcess * gp, gint64 release_us)
{
  gchar *uri = guest_process_get_uri (gp);
  gint64 us = timed_set_null (p);

  g_printerr ("NULL with the context held: %.3f s\n", us / 1e6);
  fail_unless (us >= G_USEC_PER_SEC, "the teardown ran although the "
      "context was held (%.3f s)", us / 1e6);
  g_object_set (src, "uri", uri, NULL);
  fail_unless (gst_element_set_state (p, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  us = release_us - g_get_monotonic_time ();
  if (us > 0)
    g_usleep (us);
  test_context_unblock (blocker);
  g_free (uri);
}

/* fails on an ERROR or a spice-health upstream-lost message waiting on
 * @p's bus (the bus drops what it had at NULL; other messages go too) */
static void
expect_no_failure_posted (GstElement * p)
{
  GstBus *bus = gst_element_get_bus (p);
  GstMessage *msg;

  while ((msg = gst_bus_pop_filtered (bus,
              GST_MESSAGE_ERROR | GST_MESSAGE_ELEMENT))) {
    const GstStructure *st = gst_message_get_structure (msg);

    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
      GError *err = NULL;

      gst_message_parse_error (msg, &err, NULL);
      fail ("error: %s", err->message);
    }
    if (st && gst_structure_has_name (st, GST_SPICE_MESSAGE_HEALTH))
      fail_if (g_strcmp0 (gst_structure_get_string (st, "event"),
              "upstream-lost") == 0, "upstream-lost: %s",
          gst_structure_get_string (st, "detail"));
    gst_message_unref (msg);
  }
  gst_object_unref (bus);
}

/* waits for a frame from @sink that equals @gp's own picture (its dump)
 * exactly; nothing may fail on @p meanwhile */
static void
expect_guest_picture (GstElement * p, GstElement * sink, GuestProcess * gp)
{
  gint64 end = g_get_monotonic_time () + PULL_TIMEOUT_MS * 1000LL;
  guint64 diff = G_MAXUINT64;
  guint8 *dump = NULL;
  gint dw, dh, fx = -1, fy = -1;

  fail_unless (guest_process_dump (gp, &dump, &dw, &dh));
  while (diff != 0 && g_get_monotonic_time () < end) {
    GstSample *sample = gst_app_sink_try_pull_sample (GST_APP_SINK (sink),
        GST_SECOND);
    GstVideoInfo info;

    expect_no_failure_posted (p);
    if (!sample)
      continue;
    fail_unless (gst_video_info_from_caps (&info,
            gst_sample_get_caps (sample)));
    if (info.width == dw && info.height == dh)
      diff = frame_diff (gst_sample_get_buffer (sample), dw, dh, dump, &fx,
          &fy);
    gst_sample_unref (sample);
  }
  g_free (dump);
  fail_unless (diff == 0, "no frame equal to the guest's picture (%dx%d; "
      "last diff %" G_GUINT64_FORMAT " pixels, first at %d,%d)", dw, dh, diff,
      fx, fy);
}

/* The parameters of one start belong to its session. The first start
 * connects to a server that accepts and never answers (a hung VM), with
 * connect-timeout-ms=3000. With the context held, the element goes to NULL
 * (its teardown stays queued), its uri changes to the test guest and it
 * starts again; the first session's connect timeout is due by the time
 * the context runs, and runs before that late teardown. It must neither
 * read the new start's parameters nor fail it: before the fix it posted
 * "Could not connect to SPICE server at host 127.0.0.1 port <the
 * guest's>: no answer within 3 s" (now "3000 ms") and the new start ended in that error. */
GST_START_TEST (test_params_after_late_teardown)
{
  GuestProcess *gp = start_guest (NULL);
  gchar *silent_uri;
  GSocket *silent = silent_server_new (&silent_uri);
  GSocket *conn;
  GstElement *src, *sink;
  GstElement *p = appsink_pipeline_for (silent_uri, "connect-timeout-ms=3000", &src,
      &sink);
  TestContextBlocker *blocker;
  gint64 connected_us;
  GError *err = NULL;
  GstStructure *st;

  gst_element_set_state (p, GST_STATE_PLAYING);
  /* spice-gtk's connection: the session's connect (which set the 3 s
   * timer) has run */
  g_socket_set_timeout (silent, 30 * test_time_factor ());
  conn = g_socket_accept (silent, NULL, &err);
  fail_unless (conn != NULL, "spicesrc never connected: %s",
      err ? err->message : "");
  connected_us = g_get_monotonic_time ();
  blocker = test_context_block ();
  fail_unless_equals_string (gst_structure_get_string (st = src_stats (src),
          "last-error"), "");
  gst_structure_free (st);

  /* the timer (3 s) is due before the context runs again */
  restart_on_while_context_held (p, src, blocker, gp,
      connected_us + 5 * G_USEC_PER_SEC);
  expect_guest_picture (p, sink, gp);
  expect_no_failure_posted (p);
  st = src_stats (src);
  fail_unless_equals_string (gst_structure_get_string (st, "last-error"), "");
  gst_structure_free (st);

  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (src);
  gst_object_unref (sink);
  gst_object_unref (p);
  g_object_unref (conn);
  g_object_unref (silent);
  g_free (silent_uri);
  guest_process_stop (gp);
}

GST_END_TEST;

/* The same with reconnect=always and two test guests: the first guest
 * goes away, the session arms its reconnect timer (2 s); with the context
 * held, NULL, the uri of the second guest (another seed), PLAYING. The
 * first session's timer is due when the context runs again and runs
 * before the late teardown: before the fix it took the new start for its
 * own (it counted a reconnect in the new start's stats and connected a
 * session with the new parameters). The element shows the second guest's
 * exact picture, the new start counts no reconnect, nothing failed. */
GST_START_TEST (test_reconnect_after_late_teardown)
{
  GuestProcess *gp1 = start_guest (NULL);
  GuestProcess *gp2 = start_guest ("--seed=11", NULL);
  gchar *uri1 = guest_process_get_uri (gp1);
  GstElement *src, *sink;
  GstElement *p = appsink_pipeline_for (uri1,
      "reconnect=always reconnect-interval=2000", &src, &sink);
  TestContextBlocker *blocker;
  GstBus *bus = gst_element_get_bus (p);
  GstMessage *msg;
  gint64 lost_us;

  gst_element_set_state (p, GST_STATE_PLAYING);
  expect_guest_picture (p, sink, gp1);
  guest_process_stop (gp1);
  /* posted by the failure that then arms the reconnect timer, on the
   * context thread: the blocker gets the context after it */
  for (;;) {
    const GstStructure *st;

    msg = gst_bus_timed_pop_filtered (bus, PULL_TIMEOUT_MS * GST_MSECOND,
        GST_MESSAGE_ELEMENT);
    fail_unless (msg != NULL, "the guest went, spicesrc said nothing");
    st = gst_message_get_structure (msg);
    if (st && gst_structure_has_name (st, GST_SPICE_MESSAGE_HEALTH) &&
        !g_strcmp0 (gst_structure_get_string (st, "event"), "upstream-lost"))
      break;
    gst_message_unref (msg);
  }
  gst_message_unref (msg);
  lost_us = g_get_monotonic_time ();
  blocker = test_context_block ();
  fail_unless_equals_uint64 (stat_u64 (src, "reconnects"), 0);

  restart_on_while_context_held (p, src, blocker, gp2,
      lost_us + 3 * G_USEC_PER_SEC);
  expect_guest_picture (p, sink, gp2);
  expect_no_failure_posted (p);
  fail_unless_equals_uint64 (stat_u64 (src, "reconnects"), 0);

  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (src);
  gst_object_unref (sink);
  gst_object_unref (p);
  g_free (uri1);
  guest_process_stop (gp2);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* input */

/* the lines of key @code ("key down 0x1e", "key up 0x1e") that the guest
 * logged from line @mark on */
static GPtrArray *
guest_key_lines (GuestProcess * gp, guint mark, const gchar * code)
{
  gchar **lines = guest_process_get_lines (gp);
  GPtrArray *keys = g_ptr_array_new_with_free_func (g_free);
  gchar *down = g_strdup_printf ("key down %s", code);
  gchar *up = g_strdup_printf ("key up %s", code);
  guint i;

  for (i = mark; lines[i]; i++)
    if (!g_strcmp0 (lines[i], down) || !g_strcmp0 (lines[i], up))
      g_ptr_array_add (keys, g_strdup (lines[i]));
  g_free (down);
  g_free (up);
  g_strfreev (lines);
  return keys;
}

/* waits until no input event of @src waits for the context */
static void
expect_no_input_pending (GstElement * src)
{
  gint64 end = g_get_monotonic_time () +
      10 * test_time_factor () * G_USEC_PER_SEC;

  while (stat_u64 (src, "input-pending") > 0 && g_get_monotonic_time () < end)
    g_usleep (10 * 1000);
  fail_unless_equals_uint64 (stat_u64 (src, "input-pending"), 0);
}

/* spicesrc's input bound: while nobody dispatches the context, at most
 * 512 input events wait for it, 1024 with releases (so that no key stays
 * down); beyond, presses and motion are dropped. With the context held, a
 * pointer move and then 2000 presses and releases of "a" sent to the
 * element: input-pending never exceeds 1024 and some are dropped (before
 * the bound all 4001 waited). The move makes the last press that fits
 * the 512 take the last place, so that its release comes beyond it: a
 * bound that took no release beyond 512 left "a" down. Once the context
 * runs, every admitted key event reaches the guest, in order, and "a"
 * ends released. */
GST_START_TEST (test_input_bound)
{
  GuestProcess *gp = start_guest (NULL);
  gchar *uri = guest_process_get_uri (gp);
  GstElement *src;
  GstElement *p = pipeline_for (uri, NULL, &src);
  TestContextBlocker *blocker;
  GPtrArray *admitted = g_ptr_array_new (), *got;
  guint64 pending, max_pending = 0, dropped, presses = 0;
  gint64 end;
  gchar *line;
  guint i, mark;

  gst_element_set_state (p, GST_STATE_PLAYING);
  fail_unless ((line = guest_process_wait_line (gp, "channel up inputs",
              GUEST_LINE_TIMEOUT_MS)) != NULL);
  g_free (line);
  /* spice-gtk's side of the inputs channel is ready once a key goes
   * through (until then it drops keys; the guest logs its side's link
   * first). Input is sent to the pipeline, which hands it to its sink,
   * which sends it upstream to spicesrc, the way it comes from a video
   * sink (GstBaseSrc's own send_event does not take navigation events) */
  end = g_get_monotonic_time () + GUEST_LINE_TIMEOUT_MS * 1000LL;
  do {
    mark = guest_process_mark (gp);
    fail_unless (gst_element_send_event (p,
            gst_navigation_event_new_key_press ("space", 0)));
    fail_unless (gst_element_send_event (p,
            gst_navigation_event_new_key_release ("space", 0)));
    line = guest_process_wait_line_from (gp, mark, "key up 0x39", 500, NULL);
  } while (!line && g_get_monotonic_time () < end);
  fail_unless (line != NULL, "no key reached the guest");
  g_free (line);
  expect_no_input_pending (src);
  fail_unless_equals_uint64 (stat_u64 (src, "input-events-dropped"), 0);

  mark = guest_process_mark (gp);
  blocker = test_context_block ();
  fail_unless (gst_element_send_event (p,
          gst_navigation_event_new_mouse_move (10, 10, 0)));
  for (i = 0; i < 4000; i++) {
    gboolean press = i % 2 == 0;
    GstEvent *ev = press ? gst_navigation_event_new_key_press ("a", 0) :
        gst_navigation_event_new_key_release ("a", 0);

    if (gst_element_send_event (p, ev)) {
      g_ptr_array_add (admitted, press ? "key down 0x1e" : "key up 0x1e");
      presses += press;
    }
    pending = stat_u64 (src, "input-pending");
    max_pending = MAX (max_pending, pending);
    fail_unless (pending <= 1024, "%" G_GUINT64_FORMAT " input events wait "
        "for the context after the move and %u keys", pending, i + 1);
  }
  dropped = stat_u64 (src, "input-events-dropped");
  g_printerr ("context held, a move, 2000 presses and releases: %u keys "
      "admitted (%" G_GUINT64_FORMAT " presses), %" G_GUINT64_FORMAT
      " dropped, input-pending at most %" G_GUINT64_FORMAT "\n",
      admitted->len, presses, dropped, max_pending);
  fail_unless (dropped > 0, "nothing dropped");
  fail_unless_equals_uint64 (dropped + admitted->len + 1, 4001);
  fail_unless (presses <= 512, "%" G_GUINT64_FORMAT " presses wait", presses);
  /* nothing reached the guest meanwhile */
  got = guest_key_lines (gp, mark, "0x1e");
  fail_unless_equals_int (got->len, 0);
  g_ptr_array_unref (got);
  test_context_unblock (blocker);

  /* every admitted event, in order; the last one a release */
  end = g_get_monotonic_time () + PULL_TIMEOUT_MS * 1000LL;
  while ((got = guest_key_lines (gp, mark, "0x1e"))->len < admitted->len &&
      g_get_monotonic_time () < end) {
    g_ptr_array_unref (got);
    g_usleep (20 * 1000);
  }
  g_ptr_array_unref (got);
  expect_no_input_pending (src);
  got = guest_key_lines (gp, mark, "0x1e");
  fail_unless_equals_int (got->len, admitted->len);
  for (i = 0; i < admitted->len; i++)
    fail_unless_equals_string (g_ptr_array_index (got, i),
        g_ptr_array_index (admitted, i));
  fail_unless_equals_string (g_ptr_array_index (got, got->len - 1),
      "key up 0x1e");
  g_printerr ("the guest got the %u admitted events in order, 'a' ends "
      "released\n", got->len);

  g_ptr_array_unref (got);
  g_ptr_array_unref (admitted);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (src);
  gst_object_unref (p);
  g_free (uri);
  guest_process_stop (gp);
}

GST_END_TEST;

/* Downstream blocks (appsink full, nobody pulls): draws merge instead of
 * queueing, consecutive pulled frames carry consecutive seqs whose damage
 * covers their difference, and NULL returns promptly while blocked. The
 * appsink takes plain video/x-raw: every buffer is a whole frame. */
GST_START_TEST (test_coalesce_and_null_while_blocked)
{
  GuestProcess *gp = start_guest ("--activity=busy", NULL);
  gchar *uri = guest_process_get_uri (gp);
  gchar *desc = g_strdup_printf ("spicesrc name=src uri=\"%s\" ! "
      "appsink name=sink caps=video/x-raw sync=false max-buffers=1 "
      "drop=false", uri);
  GstElement *p = gst_parse_launch (desc, NULL);
  GstElement *sink = gst_bin_get_by_name (GST_BIN (p), "sink");
  GstElement *src = gst_bin_get_by_name (GST_BIN (p), "src");
  GstSample *sample;
  guint64 seq = 0, invalidates0, frames0;
  guint8 *prev = NULL;
  gint i, w = 0, ht = 0;
  gint64 us;

  gst_element_set_state (p, GST_STATE_PLAYING);
  for (i = 0; i < 6; i++) {
    GstBuffer *buf;
    GstSpiceDamageMeta *meta;
    GstVideoInfo info;
    guint8 *cur;

    sample = gst_app_sink_try_pull_sample (GST_APP_SINK (sink),
        PULL_TIMEOUT_MS * GST_MSECOND);
    fail_unless (sample != NULL);
    buf = gst_sample_get_buffer (sample);
    fail_unless (gst_video_info_from_caps (&info,
            gst_sample_get_caps (sample)));
    w = info.width;
    ht = info.height;
    fail_if (gst_spice_caps_is_damage_only (gst_sample_get_caps (sample)));
    fail_unless_equals_int (gst_buffer_get_size (buf), (gsize) w * ht * 4);
    meta = gst_buffer_get_spice_damage_meta (buf);
    fail_unless (meta != NULL);
    if (i > 0) {
      gint x, y, fx = -1, fy = -1;
      guint64 outside = 0;

      fail_unless_equals_uint64 (meta->seq, seq + 1);
      cur = buffer_dup_pixels (buf, w, ht);
      for (y = 0; y < ht; y++)
        for (x = 0; x < w; x++) {
          gsize o = ((gsize) y * w + x) * 4;
          guint r;
          gboolean in = FALSE;

          if (!memcmp (prev + o, cur + o, 3))
            continue;
          for (r = 0; r < meta->n_rects && !in; r++) {
            const GstVideoRectangle *d = &meta->rects[r];

            in = x >= d->x && x < d->x + d->w && y >= d->y && y < d->y + d->h;
          }
          if (!in && outside++ == 0) {
            fx = x;
            fy = y;
          }
        }
      fail_unless (outside == 0, "%" G_GUINT64_FORMAT " changed pixels "
          "outside the merged damage (first at %d,%d)", outside, fx, fy);
      g_free (prev);
      prev = cur;
    } else {
      prev = buffer_dup_pixels (buf, w, ht);
    }
    seq = meta->seq;
    gst_sample_unref (sample);
    /* let the guest draw ~9 frames while we hold the pipeline */
    g_usleep (300 * 1000);
  }

  /* while blocked, invalidates keep coming but frames don't */
  frames0 = stat_u64 (src, "frames");
  invalidates0 = stat_u64 (src, "invalidates");
  g_usleep (G_USEC_PER_SEC);
  fail_unless (stat_u64 (src, "invalidates") > invalidates0 + 5,
      "guest stopped drawing?");
  fail_unless (stat_u64 (src, "frames") <= frames0 + 1,
      "spicesrc queued frames: %" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT,
      frames0, stat_u64 (src, "frames"));

  us = timed_set_null (p);
  g_printerr ("NULL while blocked: %.3f s\n", us / 1e6);
  fail_unless (us < 2 * G_USEC_PER_SEC, "took %.3f s", us / 1e6);

  g_free (prev);
  gst_object_unref (sink);
  gst_object_unref (src);
  gst_object_unref (p);
  g_free (desc);
  g_free (uri);
  guest_process_stop (gp);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* cursor */

GST_START_TEST (test_cursor_event)
{
  GuestProcess *gp = start_guest (NULL);
  gchar *uri = guest_process_get_uri (gp);
  GstHarness *h = harness_for (uri, NULL);
  GstBuffer *buf;
  GstSpiceCursor c;
  gboolean got_shape = FALSE, got_hidden = FALSE;
  gint64 end;
  gchar *line;

  buf = pull_within (h, PULL_TIMEOUT_MS);
  fail_unless (buf != NULL);
  gst_buffer_unref (buf);
  fail_unless ((line = guest_process_wait_line (gp, "channel up cursor",
              GUEST_LINE_TIMEOUT_MS)) != NULL);
  g_free (line);
  guest_process_command (gp, "cursor hide");

  end = g_get_monotonic_time () + PULL_TIMEOUT_MS * 1000LL;
  while (!(got_shape && got_hidden) && g_get_monotonic_time () < end) {
    GstEvent *ev = gst_harness_try_pull_event (h);

    if (!ev) {
      /* frames keep the stream going; drop them */
      while ((buf = gst_harness_try_pull (h)))
        gst_buffer_unref (buf);
      g_usleep (5000);
      continue;
    }
    if (gst_spice_event_parse_cursor (ev, &c)) {
      GST_INFO ("cursor visible %d %dx%d hot %d,%d", c.visible, c.width,
          c.height, c.hot_x, c.hot_y);
      if (c.shape && c.width > 0 && c.height > 0) {
        fail_unless (gst_buffer_get_size (c.shape) >=
            (gsize) c.width * c.height * 4);
        got_shape = TRUE;
      }
      if (got_shape && !c.visible)
        got_hidden = TRUE;
      gst_clear_buffer (&c.shape);
    }
    gst_event_unref (ev);
  }
  fail_unless (got_shape, "no cursor shape event");
  fail_unless (got_hidden, "no hidden cursor event");

  gst_harness_teardown (h);
  g_free (uri);
  guest_process_stop (gp);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* an application with a GMainLoop on the default context (gst-launch) */

typedef struct
{
  GMainLoop *loop;
  GstElement *src;
  GuestProcess *gp;
  guint frames;
  gboolean idle_ran;
  gint64 loop_start;
  gint64 idle_delay;
  guint64 helper_at_steady, helper_at_end;
  gboolean steady;
  gboolean failed;
  gchar *why;
  gboolean key_sent;
  GstElement *pipeline;
} AppState;

static void
on_handoff (GstElement * sink, GstBuffer * buf, GstPad * pad, AppState * st)
{
  g_atomic_int_inc (&st->frames);
}

static gboolean
on_idle (AppState * st)
{
  st->idle_ran = TRUE;
  st->idle_delay = g_get_monotonic_time () - st->loop_start;
  return G_SOURCE_REMOVE;
}

static gboolean
on_tick (AppState * st)
{
  gint64 t = g_get_monotonic_time () - st->loop_start;

  if (!st->steady && t > G_USEC_PER_SEC && g_atomic_int_get (&st->frames)) {
    st->steady = TRUE;
    st->helper_at_steady = stat_u64 (st->src, "invalidates-on-helper");
    /* input through the pipeline, from the app thread */
    gst_element_send_event (st->pipeline,
        gst_navigation_event_new_key_press ("space", 0));
    gst_element_send_event (st->pipeline,
        gst_navigation_event_new_key_release ("space", 0));
    st->key_sent = TRUE;
  }
  if (st->steady && t > 3 * G_USEC_PER_SEC) {
    /* read while this loop still owns the context: once it returns, the
     * helper takes the context back and dispatches what is pending */
    st->helper_at_end = stat_u64 (st->src, "invalidates-on-helper");
    g_main_loop_quit (st->loop);
    return G_SOURCE_REMOVE;
  }
  if (t > 40 * G_USEC_PER_SEC) {
    st->failed = TRUE;
    st->why = g_strdup ("timeout");
    g_main_loop_quit (st->loop);
    return G_SOURCE_REMOVE;
  }
  return G_SOURCE_CONTINUE;
}

static gboolean
on_bus (GstBus * bus, GstMessage * msg, AppState * st)
{
  if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
    GError *err = NULL;

    gst_message_parse_error (msg, &err, NULL);
    st->failed = TRUE;
    st->why = g_strdup (err->message);
    g_error_free (err);
    g_main_loop_quit (st->loop);
  }
  return G_SOURCE_CONTINUE;
}

GST_START_TEST (test_app_main_loop)
{
  GuestProcess *gp = start_guest ("--activity=busy", NULL);
  gchar *uri = guest_process_get_uri (gp);
  gchar *desc = g_strdup_printf ("spicesrc name=src uri=\"%s\" ! "
      "videoconvert ! fakesink name=sink sync=true signal-handoffs=true", uri);
  AppState st = { 0, };
  GstElement *sink;
  GstBus *bus;
  guint bus_id;
  gchar *line;
  guint64 helper_end;

  st.pipeline = gst_parse_launch (desc, NULL);
  fail_unless (st.pipeline != NULL);
  st.src = gst_bin_get_by_name (GST_BIN (st.pipeline), "src");
  sink = gst_bin_get_by_name (GST_BIN (st.pipeline), "sink");
  g_signal_connect (sink, "handoff", G_CALLBACK (on_handoff), &st);
  st.loop = g_main_loop_new (NULL, FALSE);
  bus = gst_element_get_bus (st.pipeline);
  bus_id = gst_bus_add_watch (bus, (GstBusFunc) on_bus, &st);

  /* like gst-launch: state change first, then the loop */
  gst_element_set_state (st.pipeline, GST_STATE_PLAYING);
  g_usleep (300 * 1000);        /* the helper owns the context meanwhile */
  st.loop_start = g_get_monotonic_time ();
  g_idle_add ((GSourceFunc) on_idle, &st);
  g_timeout_add (50, (GSourceFunc) on_tick, &st);
  g_main_loop_run (st.loop);

  fail_if (st.failed, "%s", GST_STR_NULL (st.why));
  fail_unless (st.idle_ran);
  g_printerr ("app loop got the context after %.1f ms\n",
      st.idle_delay / 1000.0);
  fail_unless (st.idle_delay < G_USEC_PER_SEC / 2, "loop starved: %.3f s",
      st.idle_delay / 1e6);
  fail_unless (g_atomic_int_get (&st.frames) > 10);
  /* while the application's loop ran, spice-gtk ran on its thread */
  helper_end = st.helper_at_end;
  fail_unless (helper_end == st.helper_at_steady,
      "helper dispatched %" G_GUINT64_FORMAT " invalidates under the app loop",
      helper_end - st.helper_at_steady);
  fail_unless (st.key_sent);
  line = guest_process_wait_line (gp, "key down 0x39", 20000);
  fail_unless (line != NULL, "key from the app loop never arrived");
  g_free (line);

  fail_unless (timed_set_null (st.pipeline) < 2 * G_USEC_PER_SEC);
  g_source_remove (bus_id);
  gst_object_unref (bus);
  gst_object_unref (sink);
  gst_object_unref (st.src);
  gst_object_unref (st.pipeline);
  g_main_loop_unref (st.loop);
  g_free (st.why);
  g_free (desc);
  g_free (uri);
  guest_process_stop (gp);
}

GST_END_TEST;

/* gst-launch-1.0 itself (its GMainLoop runs on the default context) */
GST_START_TEST (test_gst_launch)
{
  GuestProcess *gp = start_guest ("--activity=busy", NULL);
  gchar *uri = guest_process_get_uri (gp);
  gchar *uri_arg = g_strdup_printf ("uri=%s", uri);
  const gchar *argv[] = { "timeout", "-k", "5", "60", "gst-launch-1.0", "-q",
    "spicesrc", uri_arg, "num-buffers=30", "!", "videoconvert", "!",
    "fakesink", "sync=true", NULL
  };
  gchar *out = NULL, *err = NULL;
  gint status = -1;
  GError *error = NULL;
  gint64 t0 = g_get_monotonic_time ();

  fail_unless (g_spawn_sync (NULL, (gchar **) argv, NULL,
          G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &err, &status, &error),
      "%s", error ? error->message : "");
  g_printerr ("gst-launch-1.0: 30 frames in %.2f s\n",
      (g_get_monotonic_time () - t0) / 1e6);
  fail_unless (g_spawn_check_wait_status (status, NULL),
      "gst-launch-1.0 failed (status %d): %s %s", status, out, err);

  g_free (out);
  g_free (err);
  g_free (uri_arg);
  g_free (uri);
  guest_process_stop (gp);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */

static Suite *
spicesrc_suite (void)
{
  Suite *s = suite_create ("spicesrc");
  TCase *tc = tcase_create ("guest");

  tcase_set_timeout (tc, 180);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_first_frame_exact);
  tcase_add_test (tc, test_busy_damage);
  tcase_add_test (tc, test_reused_frames_exact);
  tcase_add_loop_test (tc, test_damage_only_exact, 0, 2);
  tcase_add_test (tc, test_displays_whole_frames);
  tcase_add_loop_test (tc, test_any_sink_gets_whole_frames, 0, 3);
  tcase_add_test (tc, test_password_keeps_file);
  tcase_add_test (tc, test_connect_timeout_names);
  tcase_add_test (tc, test_first_frames_prefaulted);
  tcase_add_test (tc, test_key_press);
  tcase_add_test (tc, test_mouse_client_mode);
  tcase_add_test (tc, test_resize);
  tcase_add_test (tc, test_reconnect);
  tcase_add_test (tc, test_error_refused);
  tcase_add_test (tc, test_error_password);
  tcase_add_test (tc, test_error_password_file);
  tcase_add_test (tc, test_error_bad_uri);
  tcase_add_test (tc, test_error_vanish);
  tcase_add_test (tc, test_error_tls);
  tcase_add_test (tc, test_max_framerate_timestamps);
  tcase_add_test (tc, test_null_while_connecting);
  tcase_add_test (tc, test_helper_ref_after_late_teardown);
  tcase_add_test (tc, test_params_after_late_teardown);
  tcase_add_test (tc, test_reconnect_after_late_teardown);
  tcase_add_test (tc, test_input_bound);
  tcase_add_test (tc, test_coalesce_and_null_while_blocked);
  tcase_add_test (tc, test_cursor_event);
  tcase_add_test (tc, test_app_main_loop);
  tcase_add_test (tc, test_gst_launch);
  return s;
}

GST_CHECK_MAIN (spicesrc);
