/* tests/spicesink: shared fixture — an appsrc playing spicetiler on the
 * sink's draw pad (answers refresh with a full REFRESH-flagged update),
 * recording the upstream events the sink sends.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <string.h>
#include <stdlib.h>
#include <gst/gst.h>
#include <gst/check/gstcheck.h>
#include <gst/app/gstappsrc.h>
#include <gst/app/gstappsink.h>
#include <math.h>
#include <gst/video/video.h>
#include <gst/video/navigation.h>
#include <lz4.h>
#include <gst/spice/gstspice.h>
#include "ppm.h"
#include "spice-raw-client.h"
#include "guest-launcher.h"

typedef struct {
  GstElement *pipeline, *sink, *src;
  guint16 port, tls_port;
  gint w, h;
  GMutex lock;
  GCond cond;
  guint8 *picture;              /* BGRx, what the "tiler" shows */
  gboolean use_lz4;
  gboolean answer_refresh;
  guint refresh_events;
  guint fku_events;
  gint stream_control;          /* -1 none seen, else last enabled */
  GPtrArray *nav;               /* GstStructure copies */
  GstElement *stream_src;       /* optional stream branch head */
  GArray *push_times;           /* gint64 per stream frame at the sink */
  GArray *nav_times;            /* gint64: when each navigation event
                                 * reached upstream (monotonic) */
  GArray *key_locks;            /* guint: each spice-key-locks upstream */
} Fixture;

static inline gchar *
tool_path (const gchar * name)
{
  const gchar *b = g_getenv ("GST_SPICE_BUILD_DIR");

  return g_build_filename (b ? b : ".", "tests", "common", name, NULL);
}

/* deterministic picture with gradients, edges and noise */
static inline void
make_pattern (guint8 * p, gint w, gint h, guint seed)
{
  GRand *r = g_rand_new_with_seed (seed);
  gint x, y;

  for (y = 0; y < h; y++)
    for (x = 0; x < w; x++) {
      guint8 *q = p + ((gsize) y * w + x) * 4;
      q[0] = (guint8) (x * 255 / MAX (w - 1, 1));
      q[1] = (guint8) (y * 255 / MAX (h - 1, 1));
      q[2] = ((x / 16 + y / 16 + seed) & 1) ? 200 : (guint8) g_rand_int (r);
      q[3] = 0xff;
    }
  g_rand_free (r);
}

static inline void
add_lz4_flags (GstSpiceDrawsWriter * wr, const GstVideoRectangle * dest,
    const guint8 * bgrx, gint stride, guint flags)
{
  gsize row = (gsize) dest->w * 4, raw = row * dest->h;
  guint8 *packed = g_malloc (raw);
  gint bound = LZ4_compressBound ((int) raw), n, y;
  guint8 *payload = g_malloc (4 + 2 + 4 + bound);

  for (y = 0; y < dest->h; y++)
    memcpy (packed + y * row, bgrx + (gsize) y * stride, row);
  n = LZ4_compress_default ((const char *) packed, (char *) payload + 10,
      (int) raw, bound);
  g_assert (n > 0);
  GST_WRITE_UINT32_LE (payload, 2 + 4 + n);
  payload[4] = 1;               /* top-down */
  payload[5] = 8;               /* 32BIT */
  GST_WRITE_UINT32_BE (payload + 6, n);
  gst_spice_draws_writer_add (wr, dest, GST_SPICE_IMAGE_LZ4, flags, payload,
      10 + n);
  g_free (payload);
  g_free (packed);
}

static inline void
add_lz4 (GstSpiceDrawsWriter * wr, const GstVideoRectangle * dest,
    const guint8 * bgrx, gint stride)
{
  add_lz4_flags (wr, dest, bgrx, stride, 0);
}

/* @rects of the fixture's picture as one update */
static inline GstBuffer *
rects_buffer (Fixture * f, const GstVideoRectangle * rects, guint n,
    guint32 flags)
{
  GstSpiceDrawsWriter *wr = gst_spice_draws_writer_new (flags, 0);
  guint i;

  g_mutex_lock (&f->lock);
  for (i = 0; i < n; i++) {
    const guint8 *p = f->picture + ((gsize) rects[i].y * f->w + rects[i].x)
        * 4;
    if (f->use_lz4)
      add_lz4 (wr, &rects[i], p, f->w * 4);
    else
      gst_spice_draws_writer_add_bitmap (wr, &rects[i], p, f->w * 4);
  }
  g_mutex_unlock (&f->lock);
  return gst_spice_draws_writer_finish (wr);
}

/* pushes @rects of the fixture's picture as one update */
static inline void
push_rects (Fixture * f, const GstVideoRectangle * rects, guint n,
    guint32 flags)
{
  fail_unless_equals_int (gst_app_src_push_buffer (GST_APP_SRC (f->src),
          rects_buffer (f, rects, n, flags)), GST_FLOW_OK);
}

static inline void
push_full (Fixture * f, guint32 flags)
{
  GstVideoRectangle r = { 0, 0, f->w, f->h };
  push_rects (f, &r, 1, flags);
}

static GstPadProbeReturn
upstream_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  Fixture *f = data;
  GstEvent *ev = GST_PAD_PROBE_INFO_EVENT (info);
  gboolean refresh = FALSE;
  guint locks;

  g_mutex_lock (&f->lock);
  if (gst_spice_event_parse_key_locks (ev, &locks))
    g_array_append_val (f->key_locks, locks);
  else if (GST_EVENT_TYPE (ev) == GST_EVENT_NAVIGATION) {
    gint64 now = g_get_monotonic_time ();

    g_ptr_array_add (f->nav, gst_structure_copy (gst_event_get_structure
            (ev)));
    g_array_append_val (f->nav_times, now);
  }
  else if (gst_spice_event_is_refresh (ev)) {
    f->refresh_events++;
    refresh = f->answer_refresh;
  }
  g_cond_broadcast (&f->cond);
  g_mutex_unlock (&f->lock);
  if (refresh)
    push_full (f, GST_SPICE_DRAWS_FLAG_REFRESH);
  return GST_PAD_PROBE_OK;
}

static inline Fixture *
fixture_new (gint w, gint h, const gchar * props)
{
  Fixture *f = g_new0 (Fixture, 1);
  gchar *desc;
  GstCaps *caps;
  GstPad *pad;
  GError *err = NULL;

  g_mutex_init (&f->lock);
  g_cond_init (&f->cond);
  f->w = w;
  f->h = h;
  f->answer_refresh = TRUE;
  f->stream_control = -1;
  f->nav = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_structure_free);
  f->push_times = g_array_new (FALSE, FALSE, sizeof (gint64));
  f->nav_times = g_array_new (FALSE, FALSE, sizeof (gint64));
  f->key_locks = g_array_new (FALSE, FALSE, sizeof (guint));
  f->picture = g_malloc ((gsize) w * h * 4);
  make_pattern (f->picture, w, h, 1);
  desc = g_strdup_printf ("appsrc name=src format=time ! "
      "spicesink name=sink port=0 %s", props ? props : "");
  f->pipeline = gst_parse_launch (desc, &err);
  g_free (desc);
  fail_unless (f->pipeline != NULL, "%s", err ? err->message : "?");
  f->sink = gst_bin_get_by_name (GST_BIN (f->pipeline), "sink");
  f->src = gst_bin_get_by_name (GST_BIN (f->pipeline), "src");
  caps = gst_caps_new_simple (GST_SPICE_DRAWS_MEDIA_TYPE, "width",
      G_TYPE_INT, w, "height", G_TYPE_INT, h, NULL);
  g_object_set (f->src, "caps", caps, "is-live", TRUE, NULL);
  gst_caps_unref (caps);
  pad = gst_element_get_static_pad (f->src, "src");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_EVENT_UPSTREAM, upstream_probe,
      f, NULL);
  gst_object_unref (pad);
  return f;
}

/* plays and returns the bound port */
static inline void
fixture_start (Fixture * f, gboolean push_first)
{
  gint port = -1, tls = -1;

  fail_unless (gst_element_set_state (f->pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  g_object_get (f->sink, "bound-port", &port, "bound-tls-port", &tls, NULL);
  f->port = port > 0 ? port : 0;
  f->tls_port = tls > 0 ? tls : 0;
  if (push_first)
    push_full (f, 0);
}

static inline void
fixture_free (Fixture * f)
{
  gst_element_set_state (f->pipeline, GST_STATE_NULL);
  gst_object_unref (f->sink);
  gst_object_unref (f->src);
  if (f->stream_src)
    gst_object_unref (f->stream_src);
  gst_object_unref (f->pipeline);
  g_ptr_array_unref (f->nav);
  g_array_unref (f->push_times);
  g_array_unref (f->nav_times);
  g_array_unref (f->key_locks);
  g_free (f->picture);
  g_mutex_clear (&f->lock);
  g_cond_clear (&f->cond);
  g_free (f);
}

/* runs argv (NULL-terminated) under `timeout`; returns the exit status */
static inline gint
run_tool (const gchar * const *argv, const gchar * const *env_add,
    gchar ** out)
{
  GPtrArray *a = g_ptr_array_new ();
  gchar **envp = g_get_environ ();
  gint status = -1;
  GError *err = NULL;
  gchar *errout = NULL;
  guint i;

  g_ptr_array_add (a, (gpointer) "timeout");
  g_ptr_array_add (a, (gpointer) "-k");
  g_ptr_array_add (a, (gpointer) "5");
  g_ptr_array_add (a, (gpointer) "60");
  for (i = 0; argv[i]; i++)
    g_ptr_array_add (a, (gpointer) argv[i]);
  g_ptr_array_add (a, NULL);
  for (i = 0; env_add && env_add[i]; i += 2)
    envp = g_environ_setenv (envp, env_add[i], env_add[i + 1], TRUE);
  if (!g_spawn_sync (NULL, (gchar **) a->pdata, envp, G_SPAWN_SEARCH_PATH,
          NULL, NULL, out, &errout, &status, &err)) {
    GST_WARNING ("spawn: %s", err->message);
    g_clear_error (&err);
    status = -1;
  } else if (WIFEXITED (status)) {
    status = WEXITSTATUS (status);
  } else {
    status = 128;
  }
  if (errout && *errout)
    GST_INFO ("%s stderr: %s", argv[0], errout);
  g_free (errout);
  g_ptr_array_unref (a);
  g_strfreev (envp);
  return status;
}

/* spicy-screenshot of the sink on loopback (the common runner, 60 s);
 * returns its exit status, *bgrx on 0 */
static inline gint
screenshot (guint16 port, gboolean tls, const gchar * password,
    const gchar * const *env_add, guint8 ** bgrx, gint * w, gint * h)
{
  gboolean got = FALSE;
  gchar *output = NULL;
  gint st = test_spicy_screenshot_status ("127.0.0.1", port, tls, password,
      env_add, 60, bgrx, w, h, &got, &output);

  if (output && *output)
    GST_INFO ("spicy-screenshot output: %s", output);
  g_free (output);
  if (st == 0 && bgrx)
    fail_unless (got, "spicy-screenshot exited 0 without a picture");
  else if (got) {
    g_free (*bgrx);
    *bgrx = NULL;
  }
  return st;
}

static inline guint64
diff_full (Fixture * f, const guint8 * shot, gint w, gint h)
{
  gint fx = -1, fy = -1;
  guint64 d;

  fail_unless_equals_int (w, f->w);
  fail_unless_equals_int (h, f->h);
  g_mutex_lock (&f->lock);
  d = test_bgrx_count_diff (shot, w * 4, f->picture, f->w * 4, w, h, &fx,
      &fy);
  g_mutex_unlock (&f->lock);
  if (d)
    GST_WARNING ("%" G_GUINT64_FORMAT " pixels differ, first at %d,%d", d,
        fx, fy);
  return d;
}

static inline gboolean
wait_for (Fixture * f, gboolean (*cond) (Fixture * f, gpointer d),
    gpointer d, guint ms)
{
  gint64 deadline = g_get_monotonic_time () + ms * (gint64) 1000;
  gboolean ok;

  g_mutex_lock (&f->lock);
  while (!(ok = cond (f, d)))
    if (!g_cond_wait_until (&f->cond, &f->lock, deadline)) {
      ok = cond (f, d);
      break;
    }
  g_mutex_unlock (&f->lock);
  return ok;
}

/* copies pattern @seed inside @r into the fixture picture and pushes @r */
static inline void
update_rect (Fixture * f, const GstVideoRectangle * r, guint seed)
{
  guint8 *pat = g_malloc ((gsize) f->w * f->h * 4);
  gint y;

  make_pattern (pat, f->w, f->h, seed);
  g_mutex_lock (&f->lock);
  for (y = r->y; y < r->y + r->h; y++)
    memcpy (f->picture + ((gsize) y * f->w + r->x) * 4,
        pat + ((gsize) y * f->w + r->x) * 4, (gsize) r->w * 4);
  g_mutex_unlock (&f->lock);
  g_free (pat);
  push_rects (f, r, 1, 0);
}

/* spice-test-client: waits for the display to settle, returns exit status;
 * *bgrx on 0; *log = its stdout. @port 0: no plain port (give "-s", PORT
 * in @extra for TLS only) */
static inline gint
client_shot (guint16 port, const gchar * const *extra, guint8 ** bgrx,
    gint * w, gint * h, gchar ** log)
{
  gchar *tc = tool_path ("spice-test-client");
  gchar *dir = g_dir_make_tmp ("spicesink-XXXXXX", NULL);
  gchar *file = g_build_filename (dir, "shot.ppm", NULL);
  gchar *ps = g_strdup_printf ("%u", port);
  const gchar *argv[32];
  gint n = 0, st, i;

  argv[n++] = tc;
  if (port) {
    argv[n++] = "-p";
    argv[n++] = ps;
  }
  argv[n++] = "-o";
  argv[n++] = file;
  for (i = 0; extra && extra[i] && n < 30; i++)
    argv[n++] = extra[i];
  argv[n] = NULL;
  st = run_tool (argv, NULL, log);
  if (st == 0 && bgrx)
    fail_unless (test_ppm_read (file, bgrx, w, h, NULL));
  g_unlink (file);
  g_rmdir (dir);
  g_free (file);
  g_free (dir);
  g_free (ps);
  g_free (tc);
  return st;
}

/* ----------------------------------------------------------- streams */

typedef struct {
  GstVideoRectangle dest;
  guint id;
} MetaInfo;

static GstPadProbeReturn
add_meta_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  MetaInfo *m = data;
  GstBuffer *buf = gst_buffer_make_writable (GST_PAD_PROBE_INFO_BUFFER (info));

  gst_buffer_add_spice_stream_meta (buf, &m->dest, m->id, FALSE);
  GST_PAD_PROBE_INFO_DATA (info) = buf;
  return GST_PAD_PROBE_OK;
}

/* adds a GstSpiceStreamMeta to every buffer leaving @element's src pad */
static inline void
attach_meta (GstElement * element, gint x, gint y, gint w, gint h, guint id)
{
  MetaInfo *m = g_new0 (MetaInfo, 1);
  GstPad *pad = gst_element_get_static_pad (element, "src");

  m->dest.x = x;
  m->dest.y = y;
  m->dest.w = w;
  m->dest.h = h;
  m->id = id;
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, add_meta_probe, m,
      g_free);
  gst_object_unref (pad);
}

/* records upstream events of a stream branch (stream-control, FKU) */
static GstPadProbeReturn
stream_upstream_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  Fixture *f = data;
  GstEvent *ev = GST_PAD_PROBE_INFO_EVENT (info);
  gboolean enabled;

  g_mutex_lock (&f->lock);
  if (gst_spice_event_parse_stream_control (ev, &enabled))
    f->stream_control = enabled;
  else if (gst_video_event_is_force_key_unit (ev))
    f->fku_events++;
  g_cond_broadcast (&f->cond);
  g_mutex_unlock (&f->lock);
  return GST_PAD_PROBE_OK;
}

static inline void
watch_stream_events (Fixture * f, GstElement * element)
{
  GstPad *pad = gst_element_get_static_pad (element, "src");

  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_EVENT_UPSTREAM,
      stream_upstream_probe, f, NULL);
  gst_object_unref (pad);
}

/* encodes @n frames of videotestsrc @pattern with @enc ("jpegenc", ...);
 * returns the buffers (in order) and the caps */
static inline GPtrArray *
encode_frames (const gchar * pattern, gint w, gint h, guint n,
    const gchar * enc, GstCaps ** caps)
{
  gchar *desc = g_strdup_printf ("videotestsrc num-buffers=%u pattern=%s ! "
      "video/x-raw,format=I420,width=%d,height=%d,framerate=10/1 ! %s ! "
      "appsink name=out sync=false", n, pattern, w, h, enc);
  GstElement *p = gst_parse_launch (desc, NULL);
  GstElement *out = gst_bin_get_by_name (GST_BIN (p), "out");
  GPtrArray *frames = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_buffer_unref);
  GstSample *s;

  fail_unless (p != NULL);
  gst_element_set_state (p, GST_STATE_PLAYING);
  while ((s = gst_app_sink_pull_sample (GST_APP_SINK (out)))) {
    if (!*caps)
      *caps = gst_caps_ref (gst_sample_get_caps (s));
    g_ptr_array_add (frames, gst_buffer_ref (gst_sample_get_buffer (s)));
    gst_sample_unref (s);
  }
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (out);
  gst_object_unref (p);
  g_free (desc);
  fail_unless_equals_int (frames->len, n);
  return frames;
}

/* pushes encoded frame @i of @frames (the first a keyframe) on the
 * fixture's stream branch at @dest; @pts NONE keeps the encoder's */
static inline void
push_stream_frame (Fixture * f, GPtrArray * frames, guint i,
    const GstVideoRectangle * dest, GstClockTime pts)
{
  GstBuffer *b = gst_buffer_copy (g_ptr_array_index (frames, i));

  gst_buffer_add_spice_stream_meta (b, dest, 1, i == 0);
  if (GST_CLOCK_TIME_IS_VALID (pts))
    GST_BUFFER_PTS (b) = pts;
  fail_unless_equals_int (gst_app_src_push_buffer (GST_APP_SRC
          (f->stream_src), b), GST_FLOW_OK);
}

/* the raw BGRx picture of videotestsrc @pattern */
static inline guint8 *
reference_frame (const gchar * pattern, gint w, gint h)
{
  GPtrArray *f;
  GstCaps *caps = NULL;
  GstMapInfo map;
  guint8 *p;

  f = encode_frames (pattern, w, h, 1, "videoconvert ! "
      "video/x-raw,format=BGRx", &caps);
  gst_buffer_map (g_ptr_array_index (f, 0), &map, GST_MAP_READ);
  p = g_memdup2 (map.data, (gsize) w * h * 4);
  gst_buffer_unmap (g_ptr_array_index (f, 0), &map);
  g_ptr_array_unref (f);
  gst_caps_unref (caps);
  return p;
}

static inline gdouble
psnr_area (const guint8 * shot, gint stride, const GstVideoRectangle * r,
    const guint8 * ref)
{
  gdouble se = 0;
  gint x, y, c;
  guint64 n = 0;

  for (y = 0; y < r->h; y++)
    for (x = 0; x < r->w; x++)
      for (c = 0; c < 3; c++) {
        gdouble d = (gdouble) shot[(gsize) (r->y + y) * stride + (r->x + x) *
            4 + c] - ref[((gsize) y * r->w + x) * 4 + c];
        se += d * d;
        n++;
      }
  if (se == 0)
    return 99.0;
  return 10.0 * log10 (255.0 * 255.0 / (se / n));
}

/* videotestsrc @pattern generated directly as BGRx */
static inline guint8 *
reference_frame_bgrx (const gchar * pattern, gint w, gint h)
{
  gchar *desc = g_strdup_printf ("videotestsrc num-buffers=1 pattern=%s ! "
      "video/x-raw,format=BGRx,width=%d,height=%d ! appsink name=out", pattern,
      w, h);
  GstElement *p = gst_parse_launch (desc, NULL);
  GstElement *out = gst_bin_get_by_name (GST_BIN (p), "out");
  GstSample *s;
  GstMapInfo map;
  guint8 *res;

  gst_element_set_state (p, GST_STATE_PLAYING);
  s = gst_app_sink_pull_sample (GST_APP_SINK (out));
  fail_unless (s != NULL);
  gst_buffer_map (gst_sample_get_buffer (s), &map, GST_MAP_READ);
  res = g_memdup2 (map.data, (gsize) w * h * 4);
  gst_buffer_unmap (gst_sample_get_buffer (s), &map);
  gst_sample_unref (s);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (out);
  gst_object_unref (p);
  g_free (desc);
  return res;
}
