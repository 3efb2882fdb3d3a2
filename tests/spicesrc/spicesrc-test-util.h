/* gst-spice tests: helpers shared by the spicesrc tests
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <string.h>

#include <gst/gst.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/video/video.h>

#include <gst/spice/gstspicedamage.h>
#include "element-stats.h"
#include "guest-launcher.h"
#include "guest-render.h"
#include "ppm.h"

#define TEST_SEED 7
#define PULL_TIMEOUT_MS 30000

static inline GuestProcess *
start_guest (const gchar * arg1, ...)
{
  GPtrArray *args = g_ptr_array_new_with_free_func (g_free);
  GuestProcess *gp;
  GError *err = NULL;
  const gchar *a;
  va_list ap;

  g_ptr_array_add (args, g_strdup_printf ("--seed=%d", TEST_SEED));
  va_start (ap, arg1);
  for (a = arg1; a; a = va_arg (ap, const gchar *))
    g_ptr_array_add (args, g_strdup (a));
  va_end (ap);
  g_ptr_array_add (args, NULL);
  gp = guest_process_start ((const gchar * const *) args->pdata, &err);
  g_ptr_array_unref (args);
  fail_unless (gp != NULL, "could not start the test guest: %s",
      err ? err->message : "?");
  return gp;
}

/* a harness around a playing spicesrc whose sink takes @caps
 * ("video/x-raw": whole frames; "video/x-raw(memory:SpiceDamage)":
 * damage-only buffers); extra: "prop=value prop=value" */
static inline GstHarness *
harness_for_caps (const gchar * uri, const gchar * extra, const gchar * caps)
{
  GstHarness *h = gst_harness_new ("spicesrc");

  fail_unless (h != NULL);
  gst_harness_set_sink_caps_str (h, caps);
  g_object_set (h->element, "uri", uri, NULL);
  if (extra) {
    gchar **kv = g_strsplit (extra, " ", -1), **p;

    for (p = kv; *p; p++) {
      gchar **pair = g_strsplit (*p, "=", 2);

      if (pair[0] && pair[1])
        gst_util_set_object_arg (G_OBJECT (h->element), pair[0], pair[1]);
      g_strfreev (pair);
    }
    g_strfreev (kv);
  }
  gst_harness_play (h);
  return h;
}

/* a harness around a playing spicesrc that makes whole frames */
static inline GstHarness *
harness_for (const gchar * uri, const gchar * extra)
{
  return harness_for_caps (uri, extra, "video/x-raw");
}

static inline GstBuffer *
pull_within (GstHarness * h, guint timeout_ms)
{
  gint64 end = g_get_monotonic_time () + (gint64) timeout_ms * 1000;
  GstBuffer *buf;

  while (!(buf = gst_harness_try_pull (h))) {
    if (g_get_monotonic_time () > end)
      return NULL;
    g_usleep (2000);
  }
  return buf;
}

static inline void
current_size (GstHarness * h, gint * w, gint * ht)
{
  GstCaps *caps = gst_pad_get_current_caps (h->sinkpad);
  GstStructure *s;

  fail_unless (caps != NULL, "no caps");
  s = gst_caps_get_structure (caps, 0);
  fail_unless (gst_structure_get_int (s, "width", w));
  fail_unless (gst_structure_get_int (s, "height", ht));
  fail_unless_equals_string (gst_structure_get_string (s, "format"), "BGRx");
  gst_caps_unref (caps);
}

/* pixels of buf (w x h BGRx, stride w * 4) that differ from expected */
static inline guint64
frame_diff (GstBuffer * buf, gint w, gint h, const guint8 * expected,
    gint * fx, gint * fy)
{
  GstMapInfo map;
  guint64 n;

  fail_unless (gst_buffer_map (buf, &map, GST_MAP_READ));
  fail_unless (map.size >= (gsize) w * h * 4);
  n = test_bgrx_count_diff (map.data, w * 4, expected, w * 4, w, h, fx, fy);
  gst_buffer_unmap (buf, &map);
  return n;
}

static inline guint8 *
buffer_dup_pixels (GstBuffer * buf, gint w, gint h)
{
  guint8 *p = g_malloc ((gsize) w * h * 4);

  fail_unless (gst_buffer_extract (buf, 0, p, (gsize) w * h * 4) ==
      (gsize) w * h * 4);
  return p;
}

static inline GstStructure *
src_stats (GstElement * src)
{
  GstStructure *s = NULL;

  g_object_get (src, "stats", &s, NULL);
  fail_unless (s != NULL);
  return s;
}

#define stat_u64 test_element_stat_u64

/* waits for an ERROR on the bus; returns it (unref) or NULL */
static inline GstMessage *
wait_error (GstBus * bus, guint timeout_ms)
{
  return gst_bus_timed_pop_filtered (bus, timeout_ms * GST_MSECOND,
      GST_MESSAGE_ERROR);
}
