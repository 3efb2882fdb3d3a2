/* gst-spice tests: pictures of videotestsrc (test-picture.h)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "test-picture.h"

#include <gst/app/gstappsink.h>

guint8 *
test_picture_bgrx (const gchar * pattern, gint w, gint h)
{
  gchar *desc = g_strdup_printf ("videotestsrc num-buffers=1 pattern=%s ! "
      "video/x-raw,format=BGRx,width=%d,height=%d ! appsink name=out",
      pattern, w, h);
  GstElement *p = gst_parse_launch (desc, NULL);
  GstElement *out;
  GstSample *s;
  GstMapInfo map;
  guint8 *res = NULL;

  g_free (desc);
  if (!p)
    return NULL;
  out = gst_bin_get_by_name (GST_BIN (p), "out");
  gst_element_set_state (p, GST_STATE_PLAYING);
  s = gst_app_sink_pull_sample (GST_APP_SINK (out));
  if (s && gst_buffer_map (gst_sample_get_buffer (s), &map, GST_MAP_READ)) {
    if (map.size >= (gsize) w * h * 4)
      res = g_memdup2 (map.data, (gsize) w * h * 4);
    gst_buffer_unmap (gst_sample_get_buffer (s), &map);
  }
  if (s)
    gst_sample_unref (s);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (out);
  gst_object_unref (p);
  return res;
}
