/* spicesink: the display channel
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Sent: SURFACE_CREATE, MONITORS_CONFIG (with the capability, when the
 * heads are known), the whole picture as one DRAW_COPY (a REFRESH
 * update or a one-region picture; after 2 s whatever the last-known
 * picture has), MARK; then updates as DRAW_COPY / COPY_BITS; streams as
 * STREAM_CREATE (+ STREAM_ACTIVATE_REPORT) / STREAM_DATA / STREAM_DESTROY,
 * of one stream pad (the client's branch: its preferred codec among the
 * pads', sink_display_choose_branch()).
 * Received: DISPLAY_INIT (nothing to set up), STREAM_REPORT,
 * PREFERRED_VIDEO_CODEC_TYPE (picks the branch again),
 * PREFERRED_COMPRESSION (recorded only).
 */
#include <string.h>

#include "sinksession.h"

#include "sinkdebug.h"

static SINK_DEBUG_CATEGORY (sink_display_debug, "spicesinkdisplay",
    "spicesink display channel");
#define GST_CAT_DEFAULT sink_display_debug ()

static void
send_fixed (SinkConn * conn, guint16 type, GByteArray * a)
{
  sink_conn_send (conn, type, a, NULL);
  g_byte_array_set_size (a, 0);
}

static void
wants (SinkSession * s, guint w)
{
  s->hooks->on_wants (s, w, s->hooks_data);
}

/* ---------------------------------------------------------- marshalling */

void
sink_draw_marshal (SinkDraw * d, const GstVideoRectangle * dest,
    guint8 image_type, GBytes * payload)
{
  GByteArray *a = g_byte_array_sized_new (GST_SPICE_WIRE_DRAW_COPY_HEAD_SIZE);

  d->dest = *dest;
  d->pts = GST_CLOCK_TIME_NONE;
  d->image_type = image_type;
  if (image_type == GST_SPICE_IMAGE_COPY_BITS) {
    gint sx, sy;

    /* the caller checked that the source lies on the surface */
    gst_spice_copy_bits_payload_parse (g_bytes_get_data (payload, NULL), dest,
        G_MAXINT, G_MAXINT, &sx, &sy);
    gst_spice_wire_write_copy_bits (a, 0, dest, sx, sy);
    d->type = SPICE_MSG_DISPLAY_COPY_BITS;
    d->payload = NULL;
  } else {
    gst_spice_wire_write_draw_copy_head (a, 0, dest, image_type, 0);
    d->type = SPICE_MSG_DISPLAY_DRAW_COPY;
    d->payload = g_bytes_ref (payload);
  }
  d->fixed = g_byte_array_free_to_bytes (a);
}

void
sink_draw_clear (SinkDraw * d)
{
  g_clear_pointer (&d->fixed, g_bytes_unref);
  g_clear_pointer (&d->payload, g_bytes_unref);
}

GBytes *
sink_display_marshal_stream_data (guint spice_id, gsize frame_size)
{
  GByteArray *a = g_byte_array_sized_new (16);

  gst_spice_wire_write_stream_data_head (a, spice_id, 0, (guint32) frame_size);
  return g_byte_array_free_to_bytes (a);
}

/* ------------------------------------------------------------- picture */

/* lock held: the display connection's limit. The render path waits while
 * its queue is above queue-size and then adds one update (at most a
 * surface of raw pixels); a client that joins or resynchronises gets the
 * last-known picture on top of what it has queued. More than that is not
 * what the sink queues for a client that reads. */
static void
set_limit (SinkSession * s)
{
  gsize surface = (gsize) MAX (s->shared->width, 1) *
      MAX (s->shared->height, 1) * 4;

  sink_conn_set_limit (s->display, s->shared->env->queue_size +
      MAX (2 * surface, sink_picture_bytes (s->shared->picture) + surface) +
      1024 * 1024);
}

gboolean
sink_display_ready (SinkSession * s)
{
  return sink_conn_is_linked (s->display) && s->disp.surface_sent;
}

/* lock held: STREAM_CLIP to nothing (@hide) or to the whole area */
static void
send_stream_clip (SinkSession * s, guint spice_id, gboolean hide)
{
  GByteArray *a = g_byte_array_new ();

  gst_spice_wire_write_stream_clip (a, spice_id, hide);
  send_fixed (s->display, SPICE_MSG_DISPLAY_STREAM_CLIP, a);
  g_byte_array_unref (a);
  s->disp.streams[spice_id].hidden = hide;
}

/* lock held: the streams whose area @d paints over are hidden before it
 * (see SinkClientStream) */
static void
hide_streams_under (SinkSession * s, const SinkDraw * d)
{
  guint i;

  for (i = 0; i < SINK_MAX_STREAMS; i++) {
    SinkClientStream *cs = &s->disp.streams[i];

    if (!cs->created || !gst_spice_rect_intersect (&d->dest, &cs->dest, NULL))
      continue;
    if (!cs->hidden) {
      send_stream_clip (s, i, TRUE);
      cs->hidden_pts = d->pts;
      s->disp.stream_hides++;
      GST_LOG ("%s stream %u hidden under a draw", s->peer_host, i);
    } else if (GST_CLOCK_TIME_IS_VALID (d->pts) &&
        (!GST_CLOCK_TIME_IS_VALID (cs->hidden_pts) ||
            d->pts > cs->hidden_pts)) {
      cs->hidden_pts = d->pts;
    }
  }
}

/* Lock held: an LZ4 draw as a BITMAP for a client that did not announce
 * SPICE_DISPLAY_CAP_LZ4_COMPRESSION (spice-html5 decodes BITMAP, JPEG and
 * its own QUIC/LZ only); on a WebSocket with permessage-deflate the
 * bitmap is compressed on the wire. FALSE (nothing to send) if the
 * payload does not decode: the tiler made it, so that is a bug, logged. */
static gboolean
draw_as_bitmap (SinkSession * s, const SinkDraw * d, SinkDraw * out)
{
  gint w = d->dest.w, h = d->dest.h;
  gsize need = (gsize) w * h * 4, psize = gst_spice_bitmap_payload_size (w, h);
  gsize size;
  const guint8 *p = g_bytes_get_data (d->payload, &size);
  GError *err = NULL;
  guint8 *bitmap;
  GBytes *payload;

  if (!s->disp.images)
    s->disp.images = gst_spice_image_decoder_new ();
  if (s->disp.scratch_size < need) {
    g_free (s->disp.scratch);
    s->disp.scratch = g_malloc (need);
    s->disp.scratch_size = need;
  }
  if (!gst_spice_image_decoder_decode (s->disp.images, d->image_type, w, h, p,
          size, s->disp.scratch, (gsize) w * 4, &err)) {
    GST_ERROR ("%s: an LZ4 draw does not decode: %s", s->peer_host,
        err->message);
    g_error_free (err);
    return FALSE;
  }
  bitmap = g_malloc (psize);
  gst_spice_bitmap_payload_write (bitmap, s->disp.scratch, w * 4, w, h);
  payload = g_bytes_new_take (bitmap, psize);
  sink_draw_marshal (out, &d->dest, GST_SPICE_IMAGE_BITMAP, payload);
  g_bytes_unref (payload);
  out->pts = d->pts;
  s->disp.bitmaps++;
  return TRUE;
}

void
sink_display_send_draw (SinkSession * s, const SinkDraw * d)
{
  SinkDraw bitmap = { 0 };

  if (d->type == SPICE_MSG_DISPLAY_DRAW_COPY &&
      d->image_type == GST_SPICE_IMAGE_LZ4 &&
      !sink_conn_has_channel_cap (s->display,
          SPICE_DISPLAY_CAP_LZ4_COMPRESSION)) {
    if (!draw_as_bitmap (s, d, &bitmap))
      return;
    d = &bitmap;
  }
  hide_streams_under (s, d);
  sink_conn_send_bytes (s->display, d->type, d->fixed, -1, d->payload);
  GST_LOG ("%s draw %u, %" G_GSIZE_FORMAT " bytes", s->peer_host, d->type,
      d->payload ? g_bytes_get_size (d->payload) : 0);
  if (d->type == SPICE_MSG_DISPLAY_COPY_BITS) {
    s->disp.copies++;
  } else {
    s->disp.draws++;
    s->disp.draw_bytes += g_bytes_get_size (d->payload);
  }
  sink_draw_clear (&bitmap);
}

void
sink_display_send_picture (SinkSession * s)
{
  SinkPicture *pic = s->shared->picture;
  guint i, n = sink_picture_n_regions (pic);

  set_limit (s);
  for (i = 0; i < n; i++) {
    const SinkPictureRegion *r = sink_picture_region (pic, i);
    SinkDraw d;

    sink_draw_marshal (&d, &r->dest, r->type, r->payload);
    sink_display_send_draw (s, &d);
    sink_draw_clear (&d);
  }
}

void
sink_display_picture_done (SinkSession * s)
{
  GByteArray *a = g_byte_array_new ();

  send_fixed (s->display, SPICE_MSG_DISPLAY_MARK, a);
  g_byte_array_unref (a);
  s->disp.awaiting_refresh = FALSE;
}

/* A client with a surface but without the picture (joined, or resyncs
 * after falling behind). Its first draw must be the whole picture (simple
 * clients such as spicy-screenshot save the surface at the first
 * invalidate): the last-known picture is sent at once only when it is one
 * region covering the surface; otherwise the client gets nothing until the
 * REFRESH update asked for here, or the picture as it is after
 * SINK_REFRESH_WAIT_US (sink_display_check_wait()). */
static void
start_picture (SinkSession * s)
{
  guint w = SINK_WANT_KEY_UNITS;

  s->disp.partial_picture = FALSE;
  if (sink_picture_is_one_full_region (s->shared->picture)) {
    sink_display_send_picture (s);
    sink_display_picture_done (s);
    s->disp.updates++;
  } else {
    s->disp.awaiting_refresh = TRUE;
    s->disp.await_since_us = g_get_monotonic_time ();
    w |= SINK_WANT_REFRESH;
  }
  wants (s, w);
}

void
sink_display_start (SinkSession * s)
{
  SinkConn *d = s->display;
  gint width = s->shared->width, height = s->shared->height;
  GByteArray *a;
  guint i;

  if (!sink_conn_is_linked (d) || width <= 0)
    return;
  set_limit (s);
  if (!sink_conn_is_linked (d))
    return;
  a = g_byte_array_new ();
  if (s->disp.surface_sent) {
    /* new size: streams first, then the surface */
    for (i = 0; i < SINK_MAX_STREAMS; i++) {
      if (s->disp.streams[i].created) {
        gst_spice_wire_write_stream_destroy (a, i);
        send_fixed (d, SPICE_MSG_DISPLAY_STREAM_DESTROY, a);
      }
      memset (&s->disp.streams[i], 0, sizeof (s->disp.streams[i]));
    }
    gst_spice_wire_write_surface_destroy (a, 0);
    send_fixed (d, SPICE_MSG_DISPLAY_SURFACE_DESTROY, a);
  }
  s->disp.awaiting_refresh = FALSE;
  gst_spice_wire_write_surface_create (a, 0, width, height,
      SPICE_SURFACE_FMT_32_xRGB, SPICE_SURFACE_FLAGS_PRIMARY);
  send_fixed (d, SPICE_MSG_DISPLAY_SURFACE_CREATE, a);
  g_byte_array_unref (a);
  s->disp.surface_sent = TRUE;
  sink_display_send_monitors (s);
  start_picture (s);
}

void
sink_display_send_monitors (SinkSession * s)
{
  SinkConn *d = s->display;
  const GstSpiceHeads *m = &s->shared->monitors;
  GstSpiceHeads whole = { 1, 1, {{0, 0, 0, s->shared->width,
          s->shared->height}}
  };
  GByteArray *a;

  if (!sink_conn_is_linked (d) || !s->disp.surface_sent ||
      !sink_conn_has_channel_cap (d, SPICE_DISPLAY_CAP_MONITORS_CONFIG))
    return;
  /* a client told of the capability waits for the heads (spice-gtk makes
   * up none then): without any, one head of the whole surface, as
   * spice-server does. Heads that do not fit the surface belong to a
   * surface still on its way: they are sent with it
   * (sink_display_start()). */
  if (!gst_spice_heads_fit (m, s->shared->width, s->shared->height))
    m = &whole;
  a = g_byte_array_new ();
  gst_spice_wire_write_monitors_config (a, 0, m);
  send_fixed (d, SPICE_MSG_DISPLAY_MONITORS_CONFIG, a);
  g_byte_array_unref (a);
  GST_DEBUG ("%u monitors sent", m->count);
}

void
sink_display_linked (SinkSession * s)
{
  sink_conn_set_paced (s->display, TRUE);
  s->disp.surface_sent = FALSE;
  memset (s->disp.streams, 0, sizeof (s->disp.streams));
  s->disp.branch = -1;
  s->disp.branch_codec = 0;
  sink_display_start (s);
}

void
sink_display_closed (SinkSession * s)
{
  memset (s->disp.streams, 0, sizeof (s->disp.streams));
  s->disp.branch = -1;
  s->disp.branch_codec = 0;
  s->disp.surface_sent = FALSE;
  s->disp.behind = FALSE;
  s->disp.awaiting_refresh = FALSE;
  s->disp.partial_picture = FALSE;
  g_clear_pointer (&s->disp.images, gst_spice_image_decoder_free);
  g_clear_pointer (&s->disp.scratch, g_free);
  s->disp.scratch_size = 0;
}

void
sink_display_check_wait (SinkSession * s, gint64 now)
{
  SinkPicture *pic = s->shared->picture;

  if (!s->disp.awaiting_refresh || s->disp.behind || !sink_display_ready (s) ||
      now - s->disp.await_since_us < SINK_REFRESH_WAIT_US)
    return;
  if (sink_picture_n_regions (pic) == 0)
    return;                     /* nothing to give yet */
  GST_WARNING ("client %s (session %08x): no one-region picture after %"
      G_GINT64_FORMAT " ms, sending the cached picture as %u draws%s",
      s->peer_host, s->id, (now - s->disp.await_since_us) /
      G_TIME_SPAN_MILLISECOND, sink_picture_n_regions (pic),
      sink_picture_is_complete (pic) ? "" :
      " (incomplete: the next refresh follows)");
  sink_display_send_picture (s);
  sink_display_picture_done (s);
  s->disp.partial_picture = !sink_picture_is_complete (pic);
  s->disp.wait_fallbacks++;
  s->disp.updates++;
}

void
sink_display_drained (SinkSession * s)
{
  if (!s->disp.behind)
    return;
  /* it drained its queue: the picture again instead of what it missed */
  s->disp.behind = FALSE;
  s->disp.refreshes++;
  GST_INFO ("resynchronising %s", s->peer_host);
  start_picture (s);
}

void
sink_display_leave_behind (SinkSession * s)
{
  guint i;

  GST_WARNING ("client %s (session %08x) fell behind (%" G_GSIZE_FORMAT
      " bytes queued): it will be resynchronised", s->peer_host, s->id,
      sink_conn_queued_bytes (s->display));
  s->disp.behind = TRUE;
  s->disp.behind_count++;
  for (i = 0; i < SINK_MAX_STREAMS; i++)
    if (s->disp.streams[i].created)
      s->disp.streams[i].need_key = TRUE;
}

void
sink_display_count_second (SinkSession * s, gdouble dt)
{
  s->disp.draws_per_s = (s->disp.draws - s->disp.last_draws) / dt;
  s->disp.stream_fps = (s->disp.stream_frames - s->disp.last_stream_frames) /
      dt;
  s->disp.last_draws = s->disp.draws;
  s->disp.last_stream_frames = s->disp.stream_frames;
}

void
sink_display_count_rate (SinkSession * s, gdouble dt)
{
  if (dt > 0) {
    guint64 x = (guint64) ((s->disp.draw_bytes - s->disp.last_draw_bytes) *
        8 / dt);

    s->disp.draw_bps = (s->disp.draw_bps + x) / 2;
  }
  s->disp.last_draw_bytes = s->disp.draw_bytes;
}

/* ------------------------------------------------------------- streams */

gboolean
sink_display_supports_codec (SinkSession * s, guint8 codec)
{
  SinkConn *d = s->display;
  guint bit;

  /* a client's preference may name anything */
  if (codec == 0 || codec >= SPICE_VIDEO_CODEC_TYPE_ENUM_END)
    return FALSE;
  if (!d)
    return TRUE;
  if (s->disp.codec_failed & (1u << codec))
    return FALSE;
  if (!sink_conn_has_channel_cap (d, SPICE_DISPLAY_CAP_MULTI_CODEC))
    return codec == SPICE_VIDEO_CODEC_TYPE_MJPEG;
  switch (codec) {
    case SPICE_VIDEO_CODEC_TYPE_MJPEG:
      bit = SPICE_DISPLAY_CAP_CODEC_MJPEG;
      break;
    case SPICE_VIDEO_CODEC_TYPE_VP8:
      bit = SPICE_DISPLAY_CAP_CODEC_VP8;
      break;
    case SPICE_VIDEO_CODEC_TYPE_H264:
      bit = SPICE_DISPLAY_CAP_CODEC_H264;
      break;
    case SPICE_VIDEO_CODEC_TYPE_VP9:
      bit = SPICE_DISPLAY_CAP_CODEC_VP9;
      break;
    case SPICE_VIDEO_CODEC_TYPE_H265:
      bit = SPICE_DISPLAY_CAP_CODEC_H265;
      break;
    default:
      return FALSE;
  }
  return sink_conn_has_channel_cap (d, bit);
}

gint
sink_display_choose_branch (SinkSession * s, const SinkBranch * b, guint n)
{
  gint best = -1;
  guint i, p;

  for (p = 0; p < s->disp.n_pref_codecs && best < 0; p++) {
    if (!sink_display_supports_codec (s, s->disp.pref_codecs[p]))
      continue;
    for (i = 0; i < n; i++)
      if (b[i].codec == s->disp.pref_codecs[p] &&
          (best < 0 || b[i].index < (guint) best))
        best = b[i].index;
  }
  if (best >= 0)
    return best;
  for (i = 0; i < n; i++)
    if (b[i].codec && sink_display_supports_codec (s, b[i].codec) &&
        (best < 0 || b[i].index < (guint) best))
      best = b[i].index;
  return best;
}

gboolean
sink_display_set_branch (SinkSession * s, gint index, guint8 codec)
{
  guint i;

  if (index == s->disp.branch) {
    s->disp.branch_codec = codec;
    return FALSE;
  }
  GST_INFO ("%s (session %08x): stream %d (codec %u) instead of %d (codec "
      "%u)", s->peer_host, s->id, index, codec, s->disp.branch,
      s->disp.branch_codec);
  /* it has streams of its old branch only */
  for (i = 0; i < SINK_MAX_STREAMS; i++)
    sink_display_stream_destroy (s, i);
  s->disp.branch = index;
  s->disp.branch_codec = codec;
  s->disp.branch_changes++;
  return TRUE;
}

static void
send_stream_create (SinkSession * s, const SinkStreamInfo * st)
{
  SinkConn *d = s->display;
  SinkClientStream *cs = &s->disp.streams[st->spice_id];
  GByteArray *a = g_byte_array_new ();

  gst_spice_wire_write_stream_create (a, 0, st->spice_id, st->codec,
      SPICE_STREAM_FLAGS_TOP_DOWN,
      st->width > 0 ? st->width : st->dest.w,
      st->height > 0 ? st->height : st->dest.h, &st->dest);
  send_fixed (d, SPICE_MSG_DISPLAY_STREAM_CREATE, a);
  /* stream frames are the bursts that overflow a bottleneck queue (a new
   * scene's key frame); pacing from the connect on would slow the link
   * estimate's start and make lossless draws look dear (tcp-pacing) */
  sink_conn_enable_tcp_pacing (d);
  /* per-client state exists exactly from the moment STREAM_CREATE is queued */
  memset (cs, 0, sizeof (*cs));
  cs->created = TRUE;
  cs->codec = st->codec;
  cs->dest = st->dest;
  cs->unique_id = g_random_int ();
  if (sink_conn_has_channel_cap (d, SPICE_DISPLAY_CAP_STREAM_REPORT)) {
    gst_spice_wire_write_stream_activate_report (a, st->spice_id,
        cs->unique_id, 5, 1000);
    send_fixed (d, SPICE_MSG_DISPLAY_STREAM_ACTIVATE_REPORT, a);
  }
  g_byte_array_unref (a);
}

SinkFrameResult
sink_display_send_frame (SinkSession * s, const SinkStreamInfo * st,
    GBytes * head, GBytes * frame, gboolean key)
{
  SinkClientStream *cs = &s->disp.streams[st->spice_id];

  if (!sink_display_ready (s) || (gint) st->index != s->disp.branch ||
      !sink_display_supports_codec (s, st->codec))
    return SINK_FRAME_SKIPPED;
  if (s->disp.behind || s->disp.awaiting_refresh) {
    if (cs->created)
      cs->need_key = TRUE;
    s->disp.frames_dropped++;
    return SINK_FRAME_DROPPED;
  }
  if (!cs->created || cs->need_key) {
    if (!key) {
      s->disp.frames_dropped++;
      return SINK_FRAME_WANT_KEY;
    }
    if (!cs->created)
      send_stream_create (s, st);
    cs->need_key = FALSE;
  }
  /* a frame newer than the draws that hid the stream shows it again */
  if (cs->hidden && !(GST_CLOCK_TIME_IS_VALID (st->pts) &&
          GST_CLOCK_TIME_IS_VALID (cs->hidden_pts) &&
          st->pts <= cs->hidden_pts))
    send_stream_clip (s, st->spice_id, FALSE);
  /* stamped when its first byte goes out: mm now + stream-latency */
  sink_conn_send_bytes (s->display, SPICE_MSG_DISPLAY_STREAM_DATA, head,
      GST_SPICE_WIRE_STREAM_DATA_MM_OFFSET, frame);
  GST_LOG ("%s stream %u frame%s, %" G_GSIZE_FORMAT " bytes", s->peer_host,
      st->spice_id, key ? " (key)" : "", g_bytes_get_size (frame));
  cs->frames++;
  s->disp.stream_frames++;
  return SINK_FRAME_SENT;
}

void
sink_display_stream_destroy (SinkSession * s, guint spice_id)
{
  SinkClientStream *cs = &s->disp.streams[spice_id];

  if (cs->created && sink_conn_is_linked (s->display)) {
    GByteArray *a = g_byte_array_new ();

    gst_spice_wire_write_stream_destroy (a, spice_id);
    send_fixed (s->display, SPICE_MSG_DISPLAY_STREAM_DESTROY, a);
    g_byte_array_unref (a);
  }
  memset (cs, 0, sizeof (*cs));
}

static gboolean
sink_display_handle_stream_report (SinkSession * s, guint16 type,
    const guint8 * body, gsize size)
{
  GstSpiceStreamReport r;
  SinkClientStream *cs;

  if (!gst_spice_wire_parse_stream_report (body, size, &r)) {
    sink_conn_close (s->display, "malformed STREAM_REPORT");
    return FALSE;
  }
  cs = &s->disp.streams[r.stream_id];
  if (r.num_frames == 0 && r.num_drops == 0xffffffff) {
    /* the client cannot decode (or does not know) the stream */
    if (cs->created) {
      GST_WARNING ("%s cannot decode stream %u (codec %u)", s->peer_host,
          r.stream_id, cs->codec);
      s->disp.codec_failed |= 1u << cs->codec;
      memset (cs, 0, sizeof (*cs));
      s->hooks->on_display_changed (s, s->hooks_data);
    }
    return TRUE;
  }
  if (!cs->created || r.unique_id != cs->unique_id)
    return TRUE;                /* stale */
  s->disp.report_codec = cs->codec;
  s->disp.last_margin_ms = r.last_frame_delay;
  s->disp.report_drops += r.num_drops;
  s->disp.have_margin = TRUE;
  GST_LOG ("%s stream %u: %u frames, %u drops, margin %d ms", s->peer_host,
      r.stream_id, r.num_frames, r.num_drops, r.last_frame_delay);
  return TRUE;
}

/* Recorded only: the draws are encoded once, upstream, for every client
 * (the tiler's LZ4 or JPEG, refined to lossless); spicesink passes their
 * payloads through, so a client's image compression cannot be honoured
 * without encoding the picture again for it (docs/spicesink.md). */
static gboolean
sink_display_handle_preferred_compression (SinkSession * s, guint16 type,
    const guint8 * body, gsize size)
{
  /* the size was checked (one u8); any value is the client's business */
  s->disp.pref_compression = body[0];
  GST_DEBUG ("%s prefers image compression %u (recorded)", s->peer_host,
      body[0]);
  return TRUE;
}

static gboolean
sink_display_handle_preferred_video_codecs (SinkSession * s, guint16 type,
    const guint8 * body, gsize size)
{
  if (!gst_spice_wire_parse_preferred_video_codecs (body, size,
          s->disp.pref_codecs, G_N_ELEMENTS (s->disp.pref_codecs),
          &s->disp.n_pref_codecs)) {
    sink_conn_close (s->display, "malformed PREFERRED_VIDEO_CODEC_TYPE");
    return FALSE;
  }
  GST_INFO ("%s prefers %u video codecs, first %u", s->peer_host,
      s->disp.n_pref_codecs, s->disp.n_pref_codecs ? s->disp.pref_codecs[0] :
      0);
  /* its branch again */
  s->hooks->on_display_changed (s, s->hooks_data);
  return TRUE;
}

static const SinkHandler handlers[] = {
  [SPICE_MSGC_DISPLAY_STREAM_REPORT] = sink_display_handle_stream_report,
  [SPICE_MSGC_DISPLAY_PREFERRED_COMPRESSION] =
      sink_display_handle_preferred_compression,
  [SPICE_MSGC_DISPLAY_PREFERRED_VIDEO_CODEC_TYPE] =
      sink_display_handle_preferred_video_codecs,
  /* DISPLAY_INIT: no caches to set up; GL_DRAW_DONE: no GL scanout */
};

gboolean
sink_display_handle (SinkSession * s, guint16 type, const guint8 * body,
    gsize size)
{
  return sink_handlers_dispatch (GST_CAT_DEFAULT, handlers,
      G_N_ELEMENTS (handlers), s, type, body, size);
}
