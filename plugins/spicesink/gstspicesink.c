/* spicesink: serves a GStreamer picture to SPICE clients (element and pads)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
/**
 * SECTION:element-spicesink
 * @title: spicesink
 *
 * spicesink is a small SPICE server. It serves the draws that spicetiler
 * produces on its `draw` pad (application/x-spice-draws: DRAW_COPY regions
 * with BITMAP, LZ4 or JPEG images) and, on request pads `stream_%u`,
 * encoded video (image/jpeg, video/x-vp8, video/x-vp9, video/x-h264) as
 * SPICE video streams, to any number of ordinary SPICE clients
 * (remote-viewer, spicy, spice-html5...).
 *
 * spicesink is also the guest agent its clients see (clipboard both ways
 * by demand, monitors config, file transfer refused): the guest's agent
 * arrives from upstream as `spice-agent` / `spice-clipboard` events on the
 * `draw` pad, and the clients' clipboard and monitors config go upstream
 * as `spice-clipboard` / `spice-monitors-config` events (docs/spicesink.md).
 *
 * Keyboard and mouse input of the clients travel upstream from the `draw`
 * pad as GstNavigation events (`key` is the X11 keysym name, plus an exact
 * `scancode` field in spice-gtk's convention: XT set 1, 0x100|code for
 * E0-prefixed keys; pointer positions in surface pixels). The lock LEDs go
 * both ways: the sticky `spice-key-locks` event on `draw` (the upstream's)
 * is what clients are told (INPUTS_INIT, KEY_MODIFIERS when it changes),
 * and a client's KEY_MODIFIERS goes upstream as `spice-key-locks`.
 *
 * A client that connects is sent the surface and then the whole picture as
 * one draw: the last known picture if it is one region covering the
 * surface, otherwise the answer to a `spice-refresh` event sent upstream
 * (the tiler redraws everything as one region), or after 2 s without an
 * answer the last known picture as it is. Streams start for it at the next
 * key unit (a force-key-unit event is sent upstream). Several stream pads
 * are the same region in several codecs (a tee after the tiler): each
 * client gets one of them, its preferred codec
 * (PREFERRED_VIDEO_CODEC_TYPE) or else the first it decodes, and moves
 * when its preference changes. A client that decodes none makes spicesink
 * send `spice-stream-control` (enabled=FALSE) upstream on the stream pads
 * so that the tiler sends the area as draws.
 *
 * Writes are paced by the sockets (TCP_NOTSENT_LOWAT): the render path
 * blocks while a client has no room, up to `client-timeout`; a client that
 * stays full for longer is resynchronised later instead of being fed a
 * backlog. What each client's link takes goes upstream as `spice-rate`
 * (stream pads) and `spice-draw-budget` (draw pad) events: the element that
 * owns an encoder applies them; spicesink sets no other element's
 * properties.
 *
 * Sound comes on the `audio` pad (raw S16LE, or Opus in packets of at most
 * 10 ms, what spice-gtk decodes: `opusenc frame-size=10`) and is served on
 * the playback channel of every client while the pad is linked; the
 * clients' record channels go upstream from that pad as
 * `spice-record-*` events (gstspiceaudio.h, docs/design.md "Record").
 *
 * The element keeps the pads, the properties, the state changes and the
 * two threads that push events upstream (input apart from everything
 * else, each queue bounded: sinkupstream.h); it turns buffers into validated updates and frames for the
 * server (sinkserver.h), which owns everything below (docs/spicesink.md
 * "Structure").
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 videotestsrc is-live=true ! spicetiler name=t \
 *     t.draw ! spicesink name=s port=5910 \
 *     t.stream ! queue max-size-buffers=1 leaky=downstream ! \
 *     vp8enc deadline=1 ! s.stream_0
 * ]| Serves a test picture on spice://127.0.0.1:5910
 *
 * Since: 0.1
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdio.h>
#include <string.h>
#include <gst/video/video.h>
#include <gst/spice/gstspice.h>

#include "gstspicesink.h"
#include "sinkserver.h"
#include "sinkupstream.h"

GST_DEBUG_CATEGORY_STATIC (gst_spice_sink_debug);
#define GST_CAT_DEFAULT gst_spice_sink_debug

#define DEFAULT_ADDRESS "127.0.0.1"
/* not 5900, the port a SPICE server (QEMU's first display) usually has:
 * `spicesrc uri=spice://127.0.0.1:5900 ! … ! spicesink` must not collide
 * with its own upstream; 5910 is what the shipped pipelines and docs use */
#define DEFAULT_PORT 5910
#define DEFAULT_TLS_PORT -1
#define DEFAULT_MAX_CLIENTS 4
#define DEFAULT_STREAM_LATENCY 20
#define DEFAULT_CLIENT_TIMEOUT 500
#define DEFAULT_QUEUE_SIZE (256 * 1024)
#define DEFAULT_NOTSENT_LOWAT (64 * 1024)
#define DEFAULT_TCP_PACING TRUE
#define DEFAULT_HANDSHAKE_TIMEOUT 10000
#define DEFAULT_IDLE_TIMEOUT 300000
#define DEFAULT_MAX_CONN_RATE -1
#define DEFAULT_CONN_BURST 20
#define DEFAULT_MAX_PENDING 64
#define DEFAULT_MAX_LINKS_PER_SOURCE 8
#define DEFAULT_MAX_SESSIONS_PER_SOURCE -1
#define DEFAULT_IPV6_SOURCE_PREFIX 64
#define DEFAULT_MAX_CLIPBOARD (16 * 1024 * 1024)
#define DEFAULT_MAX_FILE_TRANSFER (G_GUINT64_CONSTANT (1) << 30)
#define DEFAULT_MAX_CPU_PRESSURE 0
#define DEFAULT_STREAM_CPU_PRESSURE 0
#define DEFAULT_CPU_PRESSURE_FILE "/proc/pressure/cpu"

enum
{
  PROP_0,
  PROP_ADDRESS,
  PROP_PORT,
  PROP_TLS_PORT,
  PROP_LISTEN_FD,
  PROP_TLS_LISTEN_FD,
  PROP_REDIRECT_HOST,
  PROP_TLS_CERT_FILE,
  PROP_TLS_KEY_FILE,
  PROP_PASSWORD,
  PROP_PASSWORD_FILE,
  PROP_DISABLE_TICKETING,
  PROP_MAX_CLIENTS,
  PROP_STREAM_LATENCY,
  PROP_CLIENT_TIMEOUT,
  PROP_QUEUE_SIZE,
  PROP_NOTSENT_LOWAT,
  PROP_TCP_PACING,
  PROP_HANDSHAKE_TIMEOUT,
  PROP_IDLE_TIMEOUT,
  PROP_MAX_CONN_RATE,
  PROP_CONN_BURST,
  PROP_MAX_PENDING,
  PROP_MAX_LINKS_PER_SOURCE,
  PROP_MAX_SESSIONS_PER_SOURCE,
  PROP_IPV6_SOURCE_PREFIX,
  PROP_MAX_CLIPBOARD,
  PROP_MAX_FILE_TRANSFER,
  PROP_MAX_CPU_PRESSURE,
  PROP_STREAM_CPU_PRESSURE,
  PROP_CPU_PRESSURE_FILE,
  PROP_ALLOWED_ORIGINS,
  PROP_BOUND_PORT,
  PROP_BOUND_TLS_PORT,
  PROP_STATS,
};

/* one request pad stream_%u */
typedef struct
{
  GstPad *pad;
  guint index;
  gint width, height;           /* of the caps, 0 unknown */
  gboolean eos;
} SinkPadStream;

struct _GstSpiceSink
{
  GstElement parent;

  GstPad *draw_pad;
  GstPad *audio_pad;
  SinkServer *server;

  /* properties (object lock) */
  SinkServerSettings props;     /* what the server uses */
  gchar *password_file;
  gchar *ticket;                /* read from password_file at NULL->READY */
  gint bound_port, bound_tls_port;
  GPtrArray *streams;           /* SinkPadStream* */
  guint next_pad_index;

  /* draw pad's streaming thread */
  gint width, height;
  gboolean draw_eos;            /* object lock */
  guint64 cursor_serial;
  gboolean have_cursor;
  GBytes *cursor_shape;

  /* audio pad's streaming thread */
  gboolean audio_opus;
  gint audio_rate, audio_bpf, audio_channels;
  gboolean audio_warned;
  gboolean audio_stopped;       /* STOP sent: the next buffer starts again */

  /* what goes upstream and on the bus from threads of its own */
  SinkUpstream *upstream;

  /* counters (atomic) */
  gsize regions_invalid;
};

static GstStaticPadTemplate draw_template = GST_STATIC_PAD_TEMPLATE ("draw",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS (GST_SPICE_DRAWS_CAPS));

static GstStaticPadTemplate stream_template =
    GST_STATIC_PAD_TEMPLATE ("stream_%u", GST_PAD_SINK, GST_PAD_REQUEST,
    GST_STATIC_CAPS ("image/jpeg; video/x-vp8; video/x-vp9; "
        "video/x-h264, stream-format = (string) byte-stream, "
        "alignment = (string) au"));

static GstStaticPadTemplate audio_template = GST_STATIC_PAD_TEMPLATE ("audio",
    GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("audio/x-raw, format = (string) S16LE, "
        "layout = (string) interleaved, rate = (int) [ 1, MAX ], "
        "channels = (int) [ 1, 2 ]; "
        "audio/x-opus, rate = (int) 48000, channels = (int) [ 1, 2 ], "
        "channel-mapping-family = (int) 0"));

#define gst_spice_sink_parent_class parent_class
G_DEFINE_TYPE (GstSpiceSink, gst_spice_sink, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE_WITH_CODE (spicesink, "spicesink", GST_RANK_NONE,
    GST_TYPE_SPICE_SINK,
    GST_DEBUG_CATEGORY_INIT (gst_spice_sink_debug, "spicesink", 0,
        "SPICE server sink (element)"));

/* ------------------------------------------------------- upstream events */

/* any thread: the pad of @index (-1: draw), with a reference */
static GstPad *
pad_of (GstSpiceSink * sink, gint index)
{
  gchar name[32];

  if (index == SINK_SERVER_AUDIO_PAD)
    return gst_object_ref (sink->audio_pad);
  if (index < 0)
    return gst_object_ref (sink->draw_pad);
  g_snprintf (name, sizeof (name), "stream_%d", index);
  return gst_element_get_static_pad (GST_ELEMENT (sink), name);
}

/* any thread (the server's callbacks run with the server lock held):
 * never blocks, sinkupstream.h */
static void
post_on (GstSpiceSink * sink, gint index, GstEvent * event)
{
  GstPad *pad = pad_of (sink, index);

  if (!pad) {
    gst_event_unref (event);
    return;
  }
  sink_upstream_push (sink->upstream, pad, 0, event);
}

/* ---- the server's callbacks (server lock held) ---- */

static void
server_request_refresh (gpointer user_data)
{
  GstSpiceSink *sink = user_data;

  GST_DEBUG_OBJECT (sink, "requesting a refresh upstream");
  post_on (sink, -1, gst_spice_event_new_refresh ());
}

static void
server_request_key_unit (guint index, gpointer user_data)
{
  post_on (user_data, index,
      gst_video_event_new_upstream_force_key_unit (GST_CLOCK_TIME_NONE, TRUE,
          0));
}

static void
server_stream_control (guint index, gboolean enabled, gpointer user_data)
{
  post_on (user_data, index, gst_spice_event_new_stream_control (enabled));
}

static void
server_post_upstream (gint index, GstEvent * event, gpointer user_data)
{
  post_on (user_data, index, event);
}

/* the server thread: a client's key or pointer event, from the draw pad */
static void
server_post_input (guint32 client, GstEvent * event, gpointer user_data)
{
  GstSpiceSink *sink = user_data;

  sink_upstream_push (sink->upstream, gst_object_ref (sink->draw_pad), client,
      event);
}

/* a security or health event: an element message, posted from the
 * control thread (never under the server lock, where a bus sync handler
 * that reads `stats` would deadlock) */
static void
server_post_report (GstStructure * report, gpointer user_data)
{
  GstSpiceSink *sink = user_data;

  GST_INFO_OBJECT (sink, "%" GST_PTR_FORMAT, report);
  sink_upstream_post (sink->upstream,
      gst_message_new_element (GST_OBJECT (sink), report));
}

static const SinkServerCallbacks server_callbacks = {
  .request_refresh = server_request_refresh,
  .request_key_unit = server_request_key_unit,
  .stream_control = server_stream_control,
  .post_upstream = server_post_upstream,
  .post_input = server_post_input,
  .post_report = server_post_report,
};

/* any thread: the properties the server uses, copied to it */
static void
configure_server (GstSpiceSink * sink)
{
  SinkServerSettings set;

  GST_OBJECT_LOCK (sink);
  sink_server_settings_copy (&set, &sink->props);
  if (sink->ticket) {
    g_free (set.password);
    set.password = g_strdup (sink->ticket);
  }
  GST_OBJECT_UNLOCK (sink);
  /* the server's lock is never taken under the object lock */
  sink_server_configure (sink->server, &set);
  sink_server_settings_clear (&set);
}

/* any thread (get_property); takes the server lock, not the object lock */
static GstStructure *
element_stats (GstSpiceSink * sink)
{
  GstStructure *st = sink_server_stats (sink->server);

  gst_structure_set (st, "regions-invalid", G_TYPE_UINT64,
      (guint64) g_atomic_pointer_get (&sink->regions_invalid), NULL);
  sink_upstream_stats (sink->upstream, st);
  return st;
}

/* ----------------------------------------------------------- draw path */

static void
unmap_free (gpointer data)
{
  GstMapInfo *map = data;
  GstBuffer *buf = map->user_data[0];

  gst_buffer_unmap (buf, map);
  gst_buffer_unref (buf);
  g_free (map);
}

static GBytes *
buffer_to_bytes (GstBuffer * buf)
{
  GstMapInfo *map = g_new0 (GstMapInfo, 1);

  if (!gst_buffer_map (buf, map, GST_MAP_READ)) {
    g_free (map);
    return NULL;
  }
  map->user_data[0] = gst_buffer_ref (buf);
  return g_bytes_new_with_free_func (map->data, map->size, unmap_free, map);
}

/* draw thread: a COPY_BITS region's source lies on the surface */
static gboolean
copy_source_on_surface (GstSpiceSink * sink, const GstSpiceDraw * d)
{
  gint sx, sy;

  return d->type != GST_SPICE_IMAGE_COPY_BITS ||
      gst_spice_copy_bits_payload_parse (d->payload, &d->dest, sink->width,
      sink->height, &sx, &sy);
}

static void
update_region_clear (gpointer p)
{
  g_bytes_unref (((SinkUpdateRegion *) p)->payload);
}

/* draw thread: the buffer becomes an update of validated regions */
static GstFlowReturn
gst_spice_sink_draw_chain (GstPad * pad, GstObject * parent, GstBuffer * buf)
{
  GstSpiceSink *sink = GST_SPICE_SINK (parent);
  GstSpiceDrawsReader rd;
  GstSpiceDraw d;
  GArray *regions;
  GBytes *bytes;
  gboolean refresh;
  GstFlowReturn ret;

  if (!gst_spice_draws_reader_init (&rd, buf)) {
    GST_ELEMENT_WARNING (sink, STREAM, FORMAT, (NULL),
        ("malformed draws buffer dropped"));
    gst_buffer_unref (buf);
    return GST_FLOW_OK;
  }
  bytes = buffer_to_bytes (buf);
  if (!bytes) {
    gst_spice_draws_reader_clear (&rd);
    gst_buffer_unref (buf);
    return GST_FLOW_ERROR;
  }
  refresh = (rd.flags & GST_SPICE_DRAWS_FLAG_REFRESH) != 0;
  regions = g_array_new (FALSE, FALSE, sizeof (SinkUpdateRegion));
  g_array_set_clear_func (regions, update_region_clear);
  while (gst_spice_draws_reader_next (&rd, &d)) {
    SinkUpdateRegion r;

    if (d.dest.x + d.dest.w > sink->width ||
        d.dest.y + d.dest.h > sink->height ||
        !gst_spice_payload_validate (d.type, d.dest.w, d.dest.h, d.payload,
            d.payload_size) || !copy_source_on_surface (sink, &d)) {
      g_atomic_pointer_add (&sink->regions_invalid, 1);
      GST_WARNING_OBJECT (sink, "dropping invalid region %dx%d+%d+%d "
          "type %u", d.dest.w, d.dest.h, d.dest.x, d.dest.y, d.type);
      continue;
    }
    r.dest = d.dest;
    r.type = d.type;
    r.lossy = (d.flags & GST_SPICE_DRAW_FLAG_LOSSY) != 0;
    /* rd.map and our own mapping point at the same memory */
    r.payload = g_bytes_new_from_bytes (bytes, d.payload - rd.map.data,
        d.payload_size);
    g_array_append_val (regions, r);
  }
  if (rd.error) {
    g_atomic_pointer_add (&sink->regions_invalid, 1);
    GST_WARNING_OBJECT (sink, "malformed region in draws buffer");
  }
  gst_spice_draws_reader_clear (&rd);
  ret = sink_server_draw_update (sink->server, regions, refresh,
      GST_BUFFER_PTS (buf));
  g_array_unref (regions);
  g_bytes_unref (bytes);
  gst_buffer_unref (buf);
  return ret;
}

/* ----------------------------------------------------------- cursor */

static GBytes *
default_cursor (gint * w, gint * h)
{
  /* a plain arrow: black outline, white inside */
  const gint W = 12, H = 19;
  guint8 *p = g_malloc0 (W * H * 4);
  gint x, y;

  for (y = 0; y < H; y++) {
    gint len = y < 12 ? y + 1 : (y < 16 ? 12 - (y - 12) * 3 : 0);

    if (y >= 12 && y < 19) {
      /* the tail */
      len = 0;
      if (y < 17) {
        for (x = 0; x < 2; x++) {
          guint8 *q = p + (y * W + x) * 4;
          q[0] = q[1] = q[2] = x == 0 ? 0 : 255;
          q[3] = 255;
        }
      }
      if (y == 12) {
        for (x = 0; x < 8; x++) {
          guint8 *q = p + (y * W + x) * 4;
          q[0] = q[1] = q[2] = 0;
          q[3] = 255;
        }
      }
    }
    for (x = 0; x < len && x < W; x++) {
      guint8 *q = p + (y * W + x) * 4;
      gboolean edge = x == 0 || x == len - 1 || y == 11;

      q[0] = q[1] = q[2] = edge ? 0 : 255;
      q[3] = 255;
    }
  }
  *w = W;
  *h = H;
  return g_bytes_new_take (p, W * H * 4);
}

static void
set_default_cursor (GstSpiceSink * sink)
{
  GstSpiceCursor c;
  gint w, h;

  g_clear_pointer (&sink->cursor_shape, g_bytes_unref);
  memset (&c, 0, sizeof (c));
  sink->cursor_shape = default_cursor (&w, &h);
  c.width = w;
  c.height = h;
  c.visible = TRUE;
  c.serial = G_MAXUINT64 - 1;
  sink->cursor_serial = c.serial;
  sink->have_cursor = FALSE;
  sink_server_set_cursor (sink->server, &c, sink->cursor_shape);
}

/* draw thread */
static void
handle_cursor_event (GstSpiceSink * sink, GstEvent * event)
{
  GstSpiceCursor c;

  if (!gst_spice_event_parse_cursor (event, &c))
    return;
  if (sink->cursor_shape && (c.serial != sink->cursor_serial ||
          !sink->have_cursor))
    g_clear_pointer (&sink->cursor_shape, g_bytes_unref);
  if (c.shape && !sink->cursor_shape) {
    GstMapInfo map;

    if (gst_buffer_map (c.shape, &map, GST_MAP_READ)) {
      sink->cursor_shape = g_bytes_new (map.data,
          (gsize) c.width * c.height * 4);
      gst_buffer_unmap (c.shape, &map);
    }
  }
  if (!sink->cursor_shape)
    c.width = c.height = 0;
  if (c.shape)
    gst_buffer_unref (c.shape);
  c.shape = NULL;
  sink->cursor_serial = c.serial;
  sink->have_cursor = TRUE;
  sink_server_set_cursor (sink->server, &c, sink->cursor_shape);
}

/* ------------------------------------------------------------- events */

/* a streaming thread (EOS) */
static void
check_all_eos (GstSpiceSink * sink)
{
  gboolean all;
  guint i;

  GST_OBJECT_LOCK (sink);
  all = sink->draw_eos;
  for (i = 0; i < sink->streams->len; i++)
    all &= ((SinkPadStream *) g_ptr_array_index (sink->streams, i))->eos;
  GST_OBJECT_UNLOCK (sink);
  if (all)
    gst_element_post_message (GST_ELEMENT (sink),
        gst_message_new_eos (GST_OBJECT (sink)));
}

/* draw pad's streaming thread */
static gboolean
gst_spice_sink_draw_event (GstPad * pad, GstObject * parent, GstEvent * event)
{
  GstSpiceSink *sink = GST_SPICE_SINK (parent);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:{
      GstCaps *caps;
      const GstStructure *s;
      gint w = 0, h = 0;

      gst_event_parse_caps (event, &caps);
      s = gst_caps_get_structure (caps, 0);
      if (!gst_structure_get_int (s, "width", &w) ||
          !gst_structure_get_int (s, "height", &h) || w <= 0 || h <= 0) {
        gst_event_unref (event);
        return FALSE;
      }
      if (w != sink->width || h != sink->height) {
        sink->width = w;
        sink->height = h;
        sink_server_set_surface (sink->server, w, h);
      }
      gst_event_unref (event);
      return TRUE;
    }
    case GST_EVENT_CUSTOM_DOWNSTREAM_STICKY:{
      guint locks;
      GstSpiceHeads m;

      if (gst_event_has_name (event, GST_SPICE_EVENT_CURSOR))
        handle_cursor_event (sink, event);
      else if (gst_spice_event_parse_key_locks (event, &locks))
        sink_server_set_key_locks (sink->server, locks);
      else if (gst_event_has_name (event, GST_SPICE_EVENT_MONITORS)) {
        if (gst_spice_event_parse_monitors (event, &m))
          sink_server_set_monitors (sink->server, &m);
      } else
        sink_server_agent_event (sink->server, event);
      gst_event_unref (event);
      return TRUE;
    }
    case GST_EVENT_CUSTOM_DOWNSTREAM:
      /* the guest's clipboard (the tiler forwards it on draw only as
       * serialized events; the stream pads' copies are ignored) */
      sink_server_agent_event (sink->server, event);
      gst_event_unref (event);
      return TRUE;
    case GST_EVENT_FLUSH_START:
      sink_server_set_flushing (sink->server, -1, TRUE);
      gst_event_unref (event);
      return TRUE;
    case GST_EVENT_FLUSH_STOP:
      sink_server_set_flushing (sink->server, -1, FALSE);
      GST_OBJECT_LOCK (sink);
      sink->draw_eos = FALSE;
      GST_OBJECT_UNLOCK (sink);
      gst_event_unref (event);
      return TRUE;
    case GST_EVENT_EOS:
      GST_OBJECT_LOCK (sink);
      sink->draw_eos = TRUE;
      GST_OBJECT_UNLOCK (sink);
      gst_event_unref (event);
      check_all_eos (sink);
      return TRUE;
    default:
      gst_event_unref (event);
      return TRUE;
  }
}

/* ---------------------------------------------------------- stream path */

static guint8
codec_from_caps (GstCaps * caps, gint * w, gint * h)
{
  const GstStructure *s = gst_caps_get_structure (caps, 0);
  const gchar *name = gst_structure_get_name (s);

  *w = *h = 0;
  gst_structure_get_int (s, "width", w);
  gst_structure_get_int (s, "height", h);
  if (g_str_equal (name, "image/jpeg"))
    return SPICE_VIDEO_CODEC_TYPE_MJPEG;
  if (g_str_equal (name, "video/x-vp8"))
    return SPICE_VIDEO_CODEC_TYPE_VP8;
  if (g_str_equal (name, "video/x-vp9"))
    return SPICE_VIDEO_CODEC_TYPE_VP9;
  if (g_str_equal (name, "video/x-h264"))
    return SPICE_VIDEO_CODEC_TYPE_H264;
  return 0;
}

/* the stream pad's streaming thread */
static GstFlowReturn
gst_spice_sink_stream_chain (GstPad * pad, GstObject * parent, GstBuffer * buf)
{
  GstSpiceSink *sink = GST_SPICE_SINK (parent);
  SinkPadStream *st = gst_pad_get_element_private (pad);
  GstSpiceStreamMeta *meta = gst_buffer_get_spice_stream_meta (buf);
  gboolean key = !GST_BUFFER_FLAG_IS_SET (buf, GST_BUFFER_FLAG_DELTA_UNIT);
  GstFlowReturn ret = GST_FLOW_OK;
  GBytes *frame = buffer_to_bytes (buf);

  if (frame) {
    ret = sink_server_stream_frame (sink->server, st->index,
        meta ? &meta->dest : NULL, meta ? meta->stream_id : 0, key,
        GST_BUFFER_PTS (buf), frame);
    g_bytes_unref (frame);
  }
  gst_buffer_unref (buf);
  return ret;
}

/* the stream pad's streaming thread */
static gboolean
gst_spice_sink_stream_event (GstPad * pad, GstObject * parent, GstEvent * event)
{
  GstSpiceSink *sink = GST_SPICE_SINK (parent);
  SinkPadStream *st = gst_pad_get_element_private (pad);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:{
      GstCaps *caps;
      gint w, h;
      guint8 codec;

      gst_event_parse_caps (event, &caps);
      codec = codec_from_caps (caps, &w, &h);
      gst_event_unref (event);
      if (!codec)
        return FALSE;
      sink_server_stream_set_caps (sink->server, st->index, codec, w, h);
      return TRUE;
    }
    case GST_EVENT_FLUSH_START:
      /* this stream only: the draw path and other streams go on */
      sink_server_set_flushing (sink->server, st->index, TRUE);
      gst_event_unref (event);
      return TRUE;
    case GST_EVENT_FLUSH_STOP:
      sink_server_set_flushing (sink->server, st->index, FALSE);
      GST_OBJECT_LOCK (sink);
      st->eos = FALSE;
      GST_OBJECT_UNLOCK (sink);
      sink_server_stream_eos (sink->server, st->index, FALSE);
      gst_event_unref (event);
      return TRUE;
    case GST_EVENT_EOS:
      GST_OBJECT_LOCK (sink);
      st->eos = TRUE;
      GST_OBJECT_UNLOCK (sink);
      sink_server_stream_eos (sink->server, st->index, TRUE);
      gst_event_unref (event);
      check_all_eos (sink);
      return TRUE;
    default:
      gst_event_unref (event);
      return TRUE;
  }
}

/* ----------------------------------------------------------- audio path */

/* the audio pad's streaming thread */
static GstFlowReturn
gst_spice_sink_audio_chain (GstPad * pad, GstObject * parent, GstBuffer * buf)
{
  GstSpiceSink *sink = GST_SPICE_SINK (parent);
  GstMapInfo map;
  gsize off, chunk;

  if (!sink->audio_rate) {
    gst_buffer_unref (buf);
    return GST_FLOW_NOT_NEGOTIATED;
  }
  if (sink->audio_stopped) {
    sink->audio_stopped = FALSE;
    sink_server_audio_start (sink->server, sink->audio_opus ?
        SPICE_AUDIO_DATA_MODE_OPUS : SPICE_AUDIO_DATA_MODE_RAW,
        sink->audio_rate, sink->audio_channels);
  }
  if (GST_BUFFER_FLAG_IS_SET (buf, GST_BUFFER_FLAG_HEADER) ||
      !gst_buffer_map (buf, &map, GST_MAP_READ)) {
    gst_buffer_unref (buf);
    return GST_FLOW_OK;
  }
  if (sink->audio_opus) {
    gint n = gst_spice_audio_opus_packet_samples (map.data, map.size);

    /* spice-gtk decodes at most 10 ms (480 samples) a packet */
    if (n > 0 && n <= 480) {
      GBytes *b = g_bytes_new (map.data, map.size);

      sink_server_audio_data (sink->server, b);
      g_bytes_unref (b);
    } else if (!sink->audio_warned) {
      sink->audio_warned = TRUE;
      GST_ELEMENT_WARNING (sink, STREAM, FORMAT,
          ("Opus packets longer than 10 ms cannot be served: set opusenc "
              "frame-size=10 (or less)"), ("packet of %d samples dropped "
              "(and every such packet after it)", n));
    }
  } else {
    /* raw: packets of at most 10 ms */
    chunk = MAX (sink->audio_rate / 100, 1) * sink->audio_bpf;
    for (off = 0; off + sink->audio_bpf <= map.size; off += chunk) {
      gsize len = MIN (chunk, map.size - off);
      GBytes *b;

      len -= len % sink->audio_bpf;
      b = g_bytes_new (map.data + off, len);
      sink_server_audio_data (sink->server, b);
      g_bytes_unref (b);
    }
  }
  gst_buffer_unmap (buf, &map);
  gst_buffer_unref (buf);
  return GST_FLOW_OK;
}

/* the audio pad's streaming thread */
static gboolean
gst_spice_sink_audio_event (GstPad * pad, GstObject * parent, GstEvent * event)
{
  GstSpiceSink *sink = GST_SPICE_SINK (parent);
  guint16 volume[GST_SPICE_AUDIO_MAX_CHANNELS];
  guint n;
  gboolean mute;

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:{
      GstCaps *caps;
      const GstStructure *s;
      gint rate = 0, channels = 0;

      gst_event_parse_caps (event, &caps);
      s = gst_caps_get_structure (caps, 0);
      if (!gst_structure_get_int (s, "rate", &rate) ||
          !gst_structure_get_int (s, "channels", &channels) || rate <= 0 ||
          channels < 1 || channels > GST_SPICE_AUDIO_MAX_CHANNELS) {
        GST_ELEMENT_WARNING (sink, STREAM, FORMAT,
            ("Unexpected audio format on the audio pad"),
            ("%" GST_PTR_FORMAT, caps));
        gst_event_unref (event);
        return FALSE;
      }
      sink->audio_opus = gst_structure_has_name (s, "audio/x-opus");
      sink->audio_rate = rate;
      sink->audio_bpf = 2 * channels;
      sink->audio_channels = channels;
      sink->audio_warned = FALSE;
      sink->audio_stopped = FALSE;
      sink_server_audio_start (sink->server, sink->audio_opus ?
          SPICE_AUDIO_DATA_MODE_OPUS : SPICE_AUDIO_DATA_MODE_RAW, rate,
          channels);
      gst_event_unref (event);
      return TRUE;
    }
    case GST_EVENT_CUSTOM_DOWNSTREAM_STICKY:
      if (gst_spice_event_parse_audio_volume (event, &n, volume, &mute))
        sink_server_audio_volume (sink->server, n, volume, mute);
      gst_event_unref (event);
      return TRUE;
    case GST_EVENT_CUSTOM_DOWNSTREAM:
      /* the upstream stopped playing: STOP; the next buffer starts again */
      if (gst_spice_event_is_audio_stop (event)) {
        sink->audio_stopped = TRUE;
        sink_server_audio_stop (sink->server);
      }
      gst_event_unref (event);
      return TRUE;
    case GST_EVENT_EOS:
      /* the sound ends. It does not count for the element's EOS (the
       * picture goes on) */
      sink->audio_stopped = TRUE;
      sink_server_audio_stop (sink->server);
      gst_event_unref (event);
      return TRUE;
    default:
      gst_event_unref (event);
      return TRUE;
  }
}

/* application thread */
static GstPadLinkReturn
gst_spice_sink_audio_link (GstPad * pad, GstObject * parent, GstPad * peer)
{
  sink_server_audio_enable (GST_SPICE_SINK (parent)->server, TRUE);
  return GST_PAD_LINK_OK;
}

/* application thread */
static void
gst_spice_sink_audio_unlink (GstPad * pad, GstObject * parent)
{
  sink_server_audio_enable (GST_SPICE_SINK (parent)->server, FALSE);
}

/* application thread */
static GstPad *
gst_spice_sink_request_new_pad (GstElement * element, GstPadTemplate * templ,
    const gchar * name, const GstCaps * caps)
{
  GstSpiceSink *sink = GST_SPICE_SINK (element);
  SinkPadStream *st;
  GstPad *pad;
  guint index, i;
  gchar *pad_name;

  GST_OBJECT_LOCK (sink);
  if (name && sscanf (name, "stream_%u", &index) == 1) {
    for (i = 0; i < sink->streams->len; i++)
      if (((SinkPadStream *) g_ptr_array_index (sink->streams,
                  i))->index == index) {
        GST_OBJECT_UNLOCK (sink);
        GST_WARNING_OBJECT (sink, "pad %s already exists", name);
        return NULL;
      }
  } else {
    index = sink->next_pad_index;
  }
  sink->next_pad_index = MAX (sink->next_pad_index, index + 1);
  pad_name = g_strdup_printf ("stream_%u", index);
  pad = gst_pad_new_from_template (templ, pad_name);
  g_free (pad_name);
  st = g_new0 (SinkPadStream, 1);
  st->pad = pad;
  st->index = index;
  gst_pad_set_element_private (pad, st);
  g_ptr_array_add (sink->streams, st);
  GST_OBJECT_UNLOCK (sink);
  sink_server_stream_add (sink->server, index);

  gst_pad_set_chain_function (pad,
      GST_DEBUG_FUNCPTR (gst_spice_sink_stream_chain));
  gst_pad_set_event_function (pad,
      GST_DEBUG_FUNCPTR (gst_spice_sink_stream_event));
  GST_PAD_SET_PROXY_ALLOCATION (pad);
  gst_pad_set_active (pad, TRUE);
  gst_element_add_pad (element, pad);
  return pad;
}

/* Application thread. The pad's streaming thread may be waiting for a
 * client's room (sink_server_stream_frame()): its path flushes first
 * (that wakes it), the pad is deactivated (which waits for its chain to
 * return), and only then its stream is forgotten. */
static void
gst_spice_sink_release_pad (GstElement * element, GstPad * pad)
{
  GstSpiceSink *sink = GST_SPICE_SINK (element);
  SinkPadStream *st = gst_pad_get_element_private (pad);

  if (st)
    sink_server_set_flushing (sink->server, st->index, TRUE);
  gst_pad_set_active (pad, FALSE);
  if (st) {
    sink_server_stream_remove (sink->server, st->index);
    GST_OBJECT_LOCK (sink);
    g_ptr_array_remove (sink->streams, st);
    gst_pad_set_element_private (pad, NULL);
    GST_OBJECT_UNLOCK (sink);
  }
  gst_element_remove_pad (element, pad);
  g_free (st);
  /* the other pads may all be at EOS already */
  check_all_eos (sink);
}

/* ------------------------------------------------------ state changes */

/* NULL -> READY: the ticket from password-file (the property keeps its
 * value: it is read again at the next start) */
static gboolean
read_ticket (GstSpiceSink * sink)
{
  GError *err = NULL;
  gchar *path, *secret = NULL;

  GST_OBJECT_LOCK (sink);
  path = g_strdup (sink->password_file);
  GST_OBJECT_UNLOCK (sink);
  if (path && *path) {
    secret = gst_spice_read_password_file (path, &err);
    if (!secret) {
      gst_spice_post_password_file_error (GST_ELEMENT (sink), err);
      g_clear_error (&err);
      g_free (path);
      return FALSE;
    }
  }
  g_free (path);
  GST_OBJECT_LOCK (sink);
  g_free (sink->ticket);
  sink->ticket = secret;
  GST_OBJECT_UNLOCK (sink);
  return TRUE;
}

/* application thread */
static GstStateChangeReturn
gst_spice_sink_change_state (GstElement * element, GstStateChange transition)
{
  GstSpiceSink *sink = GST_SPICE_SINK (element);
  GstStateChangeReturn ret;
  GError *err = NULL;

  switch (transition) {
    case GST_STATE_CHANGE_NULL_TO_READY:
      if (!read_ticket (sink))
        return GST_STATE_CHANGE_FAILURE;
      configure_server (sink);
      sink_upstream_start (sink->upstream);
      if (!sink_server_start (sink->server, &err)) {
        GST_ELEMENT_ERROR (sink, RESOURCE, OPEN_READ_WRITE,
            ("Could not start the SPICE server: %s", err->message),
            ("address %s port %d tls-port %d", sink->props.address,
                sink->props.port, sink->props.tls_port));
        g_clear_error (&err);
        sink_upstream_stop (sink->upstream);
        return GST_STATE_CHANGE_FAILURE;
      }
      GST_OBJECT_LOCK (sink);
      sink->bound_port = sink_server_bound_port (sink->server, FALSE);
      sink->bound_tls_port = sink_server_bound_port (sink->server, TRUE);
      GST_OBJECT_UNLOCK (sink);
      g_object_notify (G_OBJECT (sink), "bound-port");
      break;
    case GST_STATE_CHANGE_READY_TO_PAUSED:
      sink_server_set_all_flushing (sink->server, FALSE);
      GST_OBJECT_LOCK (sink);
      sink->draw_eos = FALSE;
      GST_OBJECT_UNLOCK (sink);
      break;
    case GST_STATE_CHANGE_PAUSED_TO_READY:
      sink_server_set_all_flushing (sink->server, TRUE);
      break;
    default:
      break;
  }

  ret = GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);

  switch (transition) {
    case GST_STATE_CHANGE_READY_TO_NULL:
      sink_server_stop (sink->server);
      sink_upstream_stop (sink->upstream);
      sink->width = sink->height = 0;
      sink_server_reset (sink->server);
      break;
    default:
      break;
  }
  if (ret == GST_STATE_CHANGE_SUCCESS &&
      (transition == GST_STATE_CHANGE_READY_TO_PAUSED ||
          transition == GST_STATE_CHANGE_PLAYING_TO_PAUSED))
    ret = GST_STATE_CHANGE_NO_PREROLL;
  return ret;
}

/* --------------------------------------------------------- properties */

static void
gst_spice_sink_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstSpiceSink *sink = GST_SPICE_SINK (object);

  GST_OBJECT_LOCK (sink);
  switch (prop_id) {
    case PROP_ADDRESS:
      g_free (sink->props.address);
      sink->props.address = g_value_dup_string (value);
      break;
    case PROP_PORT:
      sink->props.port = g_value_get_int (value);
      break;
    case PROP_TLS_PORT:
      sink->props.tls_port = g_value_get_int (value);
      break;
    case PROP_LISTEN_FD:
      sink->props.listen_fd = g_value_get_int (value);
      break;
    case PROP_TLS_LISTEN_FD:
      sink->props.tls_listen_fd = g_value_get_int (value);
      break;
    case PROP_REDIRECT_HOST:
      g_free (sink->props.redirect_host);
      sink->props.redirect_host = g_value_dup_string (value);
      break;
    case PROP_TLS_CERT_FILE:
      g_free (sink->props.cert_file);
      sink->props.cert_file = g_value_dup_string (value);
      break;
    case PROP_TLS_KEY_FILE:
      g_free (sink->props.key_file);
      sink->props.key_file = g_value_dup_string (value);
      break;
    case PROP_PASSWORD:
      g_free (sink->props.password);
      sink->props.password = g_value_dup_string (value);
      break;
    case PROP_PASSWORD_FILE:
      g_free (sink->password_file);
      sink->password_file = g_value_dup_string (value);
      break;
    case PROP_DISABLE_TICKETING:
      sink->props.disable_ticketing = g_value_get_boolean (value);
      break;
    case PROP_MAX_CLIENTS:
      sink->props.max_clients = g_value_get_uint (value);
      break;
    case PROP_STREAM_LATENCY:
      sink->props.stream_latency = g_value_get_uint (value);
      break;
    case PROP_CLIENT_TIMEOUT:
      sink->props.client_timeout = g_value_get_uint (value);
      break;
    case PROP_QUEUE_SIZE:
      sink->props.queue_size = g_value_get_uint (value);
      break;
    case PROP_NOTSENT_LOWAT:
      sink->props.notsent_lowat = g_value_get_uint (value);
      break;
    case PROP_TCP_PACING:
      sink->props.tcp_pacing = g_value_get_boolean (value);
      break;
    case PROP_HANDSHAKE_TIMEOUT:
      sink->props.handshake_timeout = g_value_get_uint (value);
      break;
    case PROP_IDLE_TIMEOUT:
      sink->props.idle_timeout = g_value_get_uint (value);
      break;
    case PROP_MAX_CONN_RATE:
      sink->props.max_conn_rate = g_value_get_int (value);
      break;
    case PROP_CONN_BURST:
      sink->props.conn_burst = g_value_get_uint (value);
      break;
    case PROP_MAX_PENDING:
      sink->props.max_pending = g_value_get_uint (value);
      break;
    case PROP_MAX_LINKS_PER_SOURCE:
      sink->props.max_links_per_source = g_value_get_uint (value);
      break;
    case PROP_MAX_SESSIONS_PER_SOURCE:
      sink->props.max_sessions_per_source = g_value_get_int (value);
      break;
    case PROP_IPV6_SOURCE_PREFIX:
      sink->props.ipv6_source_prefix = g_value_get_uint (value);
      break;
    case PROP_MAX_CLIPBOARD:
      sink->props.max_clipboard = g_value_get_uint (value);
      break;
    case PROP_MAX_FILE_TRANSFER:
      sink->props.max_file_transfer = g_value_get_uint64 (value);
      break;
    case PROP_MAX_CPU_PRESSURE:
      sink->props.max_cpu_pressure = g_value_get_uint (value);
      break;
    case PROP_STREAM_CPU_PRESSURE:
      sink->props.stream_cpu_pressure = g_value_get_uint (value);
      break;
    case PROP_CPU_PRESSURE_FILE:
      g_free (sink->props.cpu_pressure_file);
      sink->props.cpu_pressure_file = g_value_dup_string (value);
      break;
    case PROP_ALLOWED_ORIGINS:
      g_free (sink->props.allowed_origins);
      sink->props.allowed_origins = g_value_dup_string (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (sink);
  configure_server (sink);
}

static void
gst_spice_sink_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstSpiceSink *sink = GST_SPICE_SINK (object);

  if (prop_id == PROP_STATS) {
    /* the server's lock, never under the object lock */
    g_value_take_boxed (value, element_stats (sink));
    return;
  }
  GST_OBJECT_LOCK (sink);
  switch (prop_id) {
    case PROP_ADDRESS:
      g_value_set_string (value, sink->props.address);
      break;
    case PROP_PORT:
      g_value_set_int (value, sink->props.port);
      break;
    case PROP_TLS_PORT:
      g_value_set_int (value, sink->props.tls_port);
      break;
    case PROP_LISTEN_FD:
      g_value_set_int (value, sink->props.listen_fd);
      break;
    case PROP_TLS_LISTEN_FD:
      g_value_set_int (value, sink->props.tls_listen_fd);
      break;
    case PROP_REDIRECT_HOST:
      g_value_set_string (value, sink->props.redirect_host);
      break;
    case PROP_TLS_CERT_FILE:
      g_value_set_string (value, sink->props.cert_file);
      break;
    case PROP_TLS_KEY_FILE:
      g_value_set_string (value, sink->props.key_file);
      break;
    case PROP_PASSWORD:
      g_value_set_string (value, sink->props.password);
      break;
    case PROP_PASSWORD_FILE:
      g_value_set_string (value, sink->password_file);
      break;
    case PROP_DISABLE_TICKETING:
      g_value_set_boolean (value, sink->props.disable_ticketing);
      break;
    case PROP_MAX_CLIENTS:
      g_value_set_uint (value, sink->props.max_clients);
      break;
    case PROP_STREAM_LATENCY:
      g_value_set_uint (value, sink->props.stream_latency);
      break;
    case PROP_CLIENT_TIMEOUT:
      g_value_set_uint (value, sink->props.client_timeout);
      break;
    case PROP_QUEUE_SIZE:
      g_value_set_uint (value, sink->props.queue_size);
      break;
    case PROP_NOTSENT_LOWAT:
      g_value_set_uint (value, sink->props.notsent_lowat);
      break;
    case PROP_TCP_PACING:
      g_value_set_boolean (value, sink->props.tcp_pacing);
      break;
    case PROP_HANDSHAKE_TIMEOUT:
      g_value_set_uint (value, sink->props.handshake_timeout);
      break;
    case PROP_IDLE_TIMEOUT:
      g_value_set_uint (value, sink->props.idle_timeout);
      break;
    case PROP_MAX_CONN_RATE:
      g_value_set_int (value, sink->props.max_conn_rate);
      break;
    case PROP_CONN_BURST:
      g_value_set_uint (value, sink->props.conn_burst);
      break;
    case PROP_MAX_PENDING:
      g_value_set_uint (value, sink->props.max_pending);
      break;
    case PROP_MAX_LINKS_PER_SOURCE:
      g_value_set_uint (value, sink->props.max_links_per_source);
      break;
    case PROP_MAX_SESSIONS_PER_SOURCE:
      g_value_set_int (value, sink->props.max_sessions_per_source);
      break;
    case PROP_IPV6_SOURCE_PREFIX:
      g_value_set_uint (value, sink->props.ipv6_source_prefix);
      break;
    case PROP_MAX_CLIPBOARD:
      g_value_set_uint (value, sink->props.max_clipboard);
      break;
    case PROP_MAX_FILE_TRANSFER:
      g_value_set_uint64 (value, sink->props.max_file_transfer);
      break;
    case PROP_MAX_CPU_PRESSURE:
      g_value_set_uint (value, sink->props.max_cpu_pressure);
      break;
    case PROP_STREAM_CPU_PRESSURE:
      g_value_set_uint (value, sink->props.stream_cpu_pressure);
      break;
    case PROP_CPU_PRESSURE_FILE:
      g_value_set_string (value, sink->props.cpu_pressure_file);
      break;
    case PROP_ALLOWED_ORIGINS:
      g_value_set_string (value, sink->props.allowed_origins);
      break;
    case PROP_BOUND_PORT:
      g_value_set_int (value, sink->bound_port);
      break;
    case PROP_BOUND_TLS_PORT:
      g_value_set_int (value, sink->bound_tls_port);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (sink);
}

static void
gst_spice_sink_finalize (GObject * object)
{
  GstSpiceSink *sink = GST_SPICE_SINK (object);

  sink_server_free (sink->server);
  sink_upstream_free (sink->upstream);
  sink_server_settings_clear (&sink->props);
  g_free (sink->password_file);
  g_free (sink->ticket);
  g_ptr_array_unref (sink->streams);
  if (sink->cursor_shape)
    g_bytes_unref (sink->cursor_shape);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_spice_sink_init (GstSpiceSink * sink)
{
  sink->props.address = g_strdup (DEFAULT_ADDRESS);
  sink->props.port = DEFAULT_PORT;
  sink->props.tls_port = DEFAULT_TLS_PORT;
  sink->props.listen_fd = sink->props.tls_listen_fd = -1;
  sink->props.max_clients = DEFAULT_MAX_CLIENTS;
  sink->props.stream_latency = DEFAULT_STREAM_LATENCY;
  sink->props.client_timeout = DEFAULT_CLIENT_TIMEOUT;
  sink->props.queue_size = DEFAULT_QUEUE_SIZE;
  sink->props.notsent_lowat = DEFAULT_NOTSENT_LOWAT;
  sink->props.tcp_pacing = DEFAULT_TCP_PACING;
  sink->props.handshake_timeout = DEFAULT_HANDSHAKE_TIMEOUT;
  sink->props.idle_timeout = DEFAULT_IDLE_TIMEOUT;
  sink->props.max_conn_rate = DEFAULT_MAX_CONN_RATE;
  sink->props.conn_burst = DEFAULT_CONN_BURST;
  sink->props.max_pending = DEFAULT_MAX_PENDING;
  sink->props.max_links_per_source = DEFAULT_MAX_LINKS_PER_SOURCE;
  sink->props.max_sessions_per_source = DEFAULT_MAX_SESSIONS_PER_SOURCE;
  sink->props.ipv6_source_prefix = DEFAULT_IPV6_SOURCE_PREFIX;
  sink->props.max_clipboard = DEFAULT_MAX_CLIPBOARD;
  sink->props.max_file_transfer = DEFAULT_MAX_FILE_TRANSFER;
  sink->props.max_cpu_pressure = DEFAULT_MAX_CPU_PRESSURE;
  sink->props.stream_cpu_pressure = DEFAULT_STREAM_CPU_PRESSURE;
  sink->props.cpu_pressure_file = g_strdup (DEFAULT_CPU_PRESSURE_FILE);
  sink->bound_port = sink->bound_tls_port = -1;
  sink->streams = g_ptr_array_new ();
  sink->upstream = sink_upstream_new (GST_ELEMENT (sink));
  sink->server = sink_server_new (GST_OBJECT (sink), &server_callbacks, sink);
  configure_server (sink);
  set_default_cursor (sink);

  sink->draw_pad = gst_pad_new_from_static_template (&draw_template, "draw");
  gst_pad_set_chain_function (sink->draw_pad,
      GST_DEBUG_FUNCPTR (gst_spice_sink_draw_chain));
  gst_pad_set_event_function (sink->draw_pad,
      GST_DEBUG_FUNCPTR (gst_spice_sink_draw_event));
  gst_element_add_pad (GST_ELEMENT (sink), sink->draw_pad);
  sink->audio_pad = gst_pad_new_from_static_template (&audio_template, "audio");
  gst_pad_set_chain_function (sink->audio_pad,
      GST_DEBUG_FUNCPTR (gst_spice_sink_audio_chain));
  gst_pad_set_event_function (sink->audio_pad,
      GST_DEBUG_FUNCPTR (gst_spice_sink_audio_event));
  gst_pad_set_link_function (sink->audio_pad,
      GST_DEBUG_FUNCPTR (gst_spice_sink_audio_link));
  gst_pad_set_unlink_function (sink->audio_pad,
      GST_DEBUG_FUNCPTR (gst_spice_sink_audio_unlink));
  gst_element_add_pad (GST_ELEMENT (sink), sink->audio_pad);
  GST_OBJECT_FLAG_SET (sink, GST_ELEMENT_FLAG_SINK);
}

/* any thread (the application's): the redirect-clients action */
static guint
gst_spice_sink_redirect_clients (GstSpiceSink * sink)
{
  return sink_server_redirect (sink->server);
}

static void
gst_spice_sink_class_init (GstSpiceSinkClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY;

  gobject_class->set_property = gst_spice_sink_set_property;
  gobject_class->get_property = gst_spice_sink_get_property;
  gobject_class->finalize = gst_spice_sink_finalize;

  g_object_class_install_property (gobject_class, PROP_ADDRESS,
      g_param_spec_string ("address", "Address",
          "IP address to listen on; a non-loopback address needs a password "
          "or disable-ticketing=true", DEFAULT_ADDRESS, rw));
  g_object_class_install_property (gobject_class, PROP_PORT,
      g_param_spec_int ("port", "Port",
          "TCP port for plain connections (0 = any free port, see "
          "bound-port; -1 = none)", -1, 65535, DEFAULT_PORT, rw));
  g_object_class_install_property (gobject_class, PROP_TLS_PORT,
      g_param_spec_int ("tls-port", "TLS port",
          "TCP port for TLS connections (0 = any free port, see "
          "bound-tls-port; -1 = none)", -1, 65535, DEFAULT_TLS_PORT, rw));
  g_object_class_install_property (gobject_class, PROP_LISTEN_FD,
      g_param_spec_int ("listen-fd", "Listening socket",
          "A listening TCP socket of the application's for plain "
          "connections, instead of binding 'port' (the sink uses a "
          "duplicate and never closes this one; -1 = none)", -1, G_MAXINT,
          -1, rw));
  g_object_class_install_property (gobject_class, PROP_TLS_LISTEN_FD,
      g_param_spec_int ("tls-listen-fd", "TLS listening socket",
          "A listening TCP socket of the application's for TLS "
          "connections, instead of binding 'tls-port' (the sink uses a "
          "duplicate and never closes this one; -1 = none)", -1, G_MAXINT,
          -1, rw));
  g_object_class_install_property (gobject_class, PROP_REDIRECT_HOST,
      g_param_spec_string ("redirect-host", "Redirect host",
          "Host name or address that redirect-clients sends clients to, for "
          "a sink they reach through NAT or a port forward that keeps the "
          "port numbers (NULL or empty: the address each client connected "
          "to, as this host sees it)", NULL, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_TLS_CERT_FILE,
      g_param_spec_string ("tls-cert-file", "TLS certificate file",
          "PEM certificate (chain) served on tls-port", NULL, rw));
  g_object_class_install_property (gobject_class, PROP_TLS_KEY_FILE,
      g_param_spec_string ("tls-key-file", "TLS key file",
          "PEM private key of tls-cert-file", NULL, rw));
  g_object_class_install_property (gobject_class, PROP_PASSWORD,
      g_param_spec_string ("password", "Password",
          "SPICE ticket clients must present (NULL or empty: none)", NULL, rw));
  /**
   * GstSpiceSink:password-file:
   *
   * A file whose first line is the ticket; read when the element starts and
   * used instead of #GstSpiceSink:password. Keeps the secret out of the
   * pipeline description, which GStreamer's parser logs at GST_PIPELINE:4.
   */
  g_object_class_install_property (gobject_class, PROP_PASSWORD_FILE,
      g_param_spec_string ("password-file", "Password file",
          "File whose first line is the SPICE ticket (read at start; "
          "overrides password)", NULL, rw));
  g_object_class_install_property (gobject_class, PROP_DISABLE_TICKETING,
      g_param_spec_boolean ("disable-ticketing", "Disable ticketing",
          "Accept clients without checking a password, also on a "
          "non-loopback address", FALSE, rw));
  g_object_class_install_property (gobject_class, PROP_MAX_CLIENTS,
      g_param_spec_uint ("max-clients", "Max clients",
          "Maximum number of simultaneous client sessions", 1, 256,
          DEFAULT_MAX_CLIENTS, rw));
  g_object_class_install_property (gobject_class, PROP_STREAM_LATENCY,
      g_param_spec_uint ("stream-latency", "Stream latency",
          "Presentation margin of stream frames (ms of SPICE multimedia "
          "time): a frame is stamped with the multimedia time at which its "
          "first byte is written plus this margin", 0, 1000,
          DEFAULT_STREAM_LATENCY, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_CLIENT_TIMEOUT,
      g_param_spec_uint ("client-timeout", "Client timeout",
          "How long the render path waits for a client whose queue is full "
          "before leaving it behind (ms; it is resynchronised later)", 0, 60000,
          DEFAULT_CLIENT_TIMEOUT, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_QUEUE_SIZE,
      g_param_spec_uint ("queue-size", "Queue size",
          "Bytes queued per client beyond the socket before the render path "
          "waits", 1024, G_MAXINT, DEFAULT_QUEUE_SIZE,
          rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_NOTSENT_LOWAT,
      g_param_spec_uint ("notsent-lowat", "Not-sent low water mark",
          "TCP_NOTSENT_LOWAT of client sockets in bytes (0 = system "
          "default)", 0, G_MAXINT, DEFAULT_NOTSENT_LOWAT, rw));
  /**
   * GstSpiceSink:tcp-pacing:
   *
   * Whether the kernel paces the segments of each display socket at TCP's
   * own rate (SO_MAX_PACING_RATE without a cap turns Linux's internal TCP
   * pacing on), instead of sending a congestion window at once. A burst
   * larger than the path's bottleneck queue (a video frame of a whole new
   * scene, a big draw) then leaves at about 1.2x the rate the window
   * carries per round trip and fits the queue; unpaced, its tail is dropped
   * and the draws behind it wait for the retransmissions. A client's
   * socket is paced from its first stream on (paced from the connect, the
   * link estimate starts too low and lossless draws look dear); applies to
   * streams that start after it is set.
   */
  g_object_class_install_property (gobject_class, PROP_TCP_PACING,
      g_param_spec_boolean ("tcp-pacing", "TCP pacing",
          "Let the kernel pace a display socket at TCP's own rate "
          "(SO_MAX_PACING_RATE) from the client's first stream on: a burst "
          "does not overflow the bottleneck queue", DEFAULT_TCP_PACING,
          rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_HANDSHAKE_TIMEOUT,
      g_param_spec_uint ("handshake-timeout", "Handshake timeout",
          "Connections that have not linked a channel after this long are "
          "closed (ms)", 100, 600000, DEFAULT_HANDSHAKE_TIMEOUT, rw));
  g_object_class_install_property (gobject_class, PROP_IDLE_TIMEOUT,
      g_param_spec_uint ("idle-timeout", "Idle timeout",
          "A client session from which no byte arrived on any channel for "
          "this long is closed (ms; 0 = never; spice-gtk answers the sink's "
          "PING every second)", 0, G_MAXINT, DEFAULT_IDLE_TIMEOUT,
          rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_MAX_CONN_RATE,
      g_param_spec_int ("max-connections-per-second",
          "Max connections per second",
          "New connections accepted per second from one source (token "
          "bucket with connection-burst); over it they are closed at once. "
          "A SPICE session opens 4 connections. 0 = no limit; -1 = "
          "automatic: no limit on a loopback address, 10 on any other", -1,
          100000, DEFAULT_MAX_CONN_RATE, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_CONN_BURST,
      g_param_spec_uint ("connection-burst", "Connection burst",
          "Connections one address may open at once before "
          "max-connections-per-second applies", 1, 100000, DEFAULT_CONN_BURST,
          rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_MAX_PENDING,
      g_param_spec_uint ("max-pending-links", "Max pending links",
          "Connections allowed in the link stage at the same time (all "
          "addresses); further ones are closed at once", 1, 100000,
          DEFAULT_MAX_PENDING, rw | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstSpiceSink:max-links-per-source:
   *
   * Fair admission: one source (an IPv4 address, an IPv6 prefix of
   * #GstSpiceSink:ipv6-source-prefix bits) holds at most this many of the
   * #GstSpiceSink:max-pending-links, so that a source that floods, sends
   * one byte a second or holds idle connections does not keep the others
   * out.
   */
  g_object_class_install_property (gobject_class, PROP_MAX_LINKS_PER_SOURCE,
      g_param_spec_uint ("max-links-per-source", "Max links per source",
          "Connections one source (IPv4 address, IPv6 prefix) may have in "
          "the link stage at the same time; further ones are closed at "
          "once. 0 = no per-source limit", 0, 100000,
          DEFAULT_MAX_LINKS_PER_SOURCE, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class,
      PROP_MAX_SESSIONS_PER_SOURCE, g_param_spec_int ("max-sessions-per-source",
          "Max sessions per source", "Client sessions one source may hold; "
          "0 = only max-clients; -1 = automatic: max-clients on a loopback "
          "address (tunnels and proxies come from one address), half of "
          "max-clients (at least 1) on any other", -1, 256,
          DEFAULT_MAX_SESSIONS_PER_SOURCE, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_IPV6_SOURCE_PREFIX,
      g_param_spec_uint ("ipv6-source-prefix", "IPv6 source prefix",
          "Leading bits of a client's IPv6 address that make its source for "
          "the per-source limits, the rate limit and the events (64: a /64 "
          "is one source)", 1, 128, DEFAULT_IPV6_SOURCE_PREFIX,
          rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_MAX_CLIPBOARD,
      g_param_spec_uint ("max-clipboard", "Max clipboard",
          "Largest clipboard (bytes) relayed between the clients and the "
          "guest agent; a larger one is refused (the paste gets nothing)",
          0, G_MAXINT32, DEFAULT_MAX_CLIPBOARD,
          rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_MAX_FILE_TRANSFER,
      g_param_spec_uint64 ("max-file-transfer", "Max file transfer",
          "Largest file (bytes) a client may send to the guest; a larger "
          "one is refused before any data moves. Each client sends one "
          "file at a time, spooled in $TMPDIR until the guest has it "
          "(0 = file transfer off)", 0, G_MAXINT64, DEFAULT_MAX_FILE_TRANSFER,
          rw | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstSpiceSink:max-cpu-pressure:
   *
   * A saturated host refuses new sessions instead of letting every
   * session it serves lose its latency: while the CPU pressure read from
   * #GstSpiceSink:cpu-pressure-file (Linux PSI, the "some avg10" share of
   * time in which a task waited for a CPU) is at or above this percentage,
   * a new client's main channel is refused (link result ERROR, the
   * `spice-health` message `refused` with reason `cpu-pressure`). Sessions
   * already served and their other channels are not affected.
   * docs/operator-guide.md "Capacity" says how to choose it.
   */
  g_object_class_install_property (gobject_class, PROP_MAX_CPU_PRESSURE,
      g_param_spec_uint ("max-cpu-pressure", "Max CPU pressure",
          "Refuse new sessions while the CPU pressure (PSI some avg10, "
          "percent, of cpu-pressure-file) is at or above this (0 = off)",
          0, 100, DEFAULT_MAX_CPU_PRESSURE, rw | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstSpiceSink:stream-cpu-pressure:
   *
   * A saturated host serves its streams at a lower frame rate instead of
   * letting every session lose its latency: while the share of a second
   * in which a task waited for a CPU (#GstSpiceSink:cpu-pressure-file's
   * "some" total, measured each second) is at or above this percentage
   * for two seconds in a row, every stream loses one step of 30 → 20 →
   * 15 → 10 → 5 fps
   * (the `spice-rate` events upstream carry it, spicetiler drops the
   * frames, the encoder and the clients' decoders do less); below half of
   * it for 3 s, one step comes back. Draws, the exact picture and input
   * are not slowed. Each change is a `spice-health` message `stream-fps`
   * with reason `cpu-pressure` and the cap in its detail; the stats'
   * `stream-fps-cap` is the cap in force (0 = none).
   * docs/operator-guide.md "When the host is saturated" says how to choose
   * it.
   */
  g_object_class_install_property (gobject_class, PROP_STREAM_CPU_PRESSURE,
      g_param_spec_uint ("stream-cpu-pressure", "Stream CPU pressure",
          "Lower every stream's frame rate (to 20, 15, 10, 5 fps, a step "
          "every 2 s) while the CPU pressure (PSI some, percent of each second, "
          "of cpu-pressure-file) is at or above this; raise it again below "
          "half of it (0 = off)", 0, 100, DEFAULT_STREAM_CPU_PRESSURE,
          rw | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstSpiceSink:cpu-pressure-file:
   *
   * The PSI file #GstSpiceSink:max-cpu-pressure and
   * #GstSpiceSink:stream-cpu-pressure read: the host's
   * (/proc/pressure/cpu), or a cgroup v2 group's cpu.pressure for the
   * share of the host a service or a pod is given. A file that cannot be
   * read admits every session and caps no stream, with one warning.
   */
  g_object_class_install_property (gobject_class, PROP_CPU_PRESSURE_FILE,
      g_param_spec_string ("cpu-pressure-file", "CPU pressure file",
          "The PSI file max-cpu-pressure and stream-cpu-pressure read (a "
          "cgroup v2 cpu.pressure for a service's share)",
          DEFAULT_CPU_PRESSURE_FILE, rw | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstSpiceSink:allowed-origins:
   *
   * The web pages whose scripts may connect over WebSocket (spice-html5,
   * a web console): a comma-separated list of origins as browsers send
   * them ("https://console.example.org"). An upgrade request from any
   * other origin, or without one, is refused (HTTP 403, the
   * `spice-security` message `refused` with reason `ws-origin`). NULL
   * or empty (the default): no origin is checked, as for SPICE clients,
   * which send none; the ticket still guards the session.
   */
  g_object_class_install_property (gobject_class, PROP_ALLOWED_ORIGINS,
      g_param_spec_string ("allowed-origins", "Allowed origins",
          "Comma-separated origins (scheme://host[:port]) whose pages may "
          "connect over WebSocket (NULL = no origin checked)", NULL,
          rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_BOUND_PORT,
      g_param_spec_int ("bound-port", "Bound port",
          "Port actually listened on (-1 if none)", -1, 65535, -1,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  g_object_class_install_property (gobject_class, PROP_BOUND_TLS_PORT,
      g_param_spec_int ("bound-tls-port", "Bound TLS port",
          "TLS port actually listened on (-1 if none)", -1, 65535, -1,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "application/x-spice-sink-stats: totals and, in client-stats, one "
          "structure per client (address, bytes and messages per channel, "
          "draws/s, stream frames/s, frames dropped, queue, ping RTT, "
          "TCP_INFO link estimate)", GST_TYPE_STRUCTURE,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  /**
   * GstSpiceSink::redirect-clients:
   * @sink: the sink
   *
   * Stops accepting connections and asks every connected client to
   * reconnect to the address and port it connected to
   * (SPICE_MSG_MAIN_MIGRATE_SWITCH_HOST): with listen-fd, the application
   * gives the same socket to the sink of the next pipeline, which accepts
   * them. A client whose main channel links later is asked as it links.
   *
   * Returns: the number of clients asked
   */
  g_signal_new_class_handler ("redirect-clients", G_TYPE_FROM_CLASS (klass),
      G_SIGNAL_RUN_LAST | G_SIGNAL_ACTION,
      G_CALLBACK (gst_spice_sink_redirect_clients), NULL, NULL, NULL,
      G_TYPE_UINT, 0);

  gst_element_class_add_static_pad_template (element_class, &draw_template);
  gst_element_class_add_static_pad_template (element_class, &stream_template);
  gst_element_class_add_static_pad_template (element_class, &audio_template);
  gst_element_class_set_static_metadata (element_class, "SPICE server sink",
      "Sink/Network", "Serves draws and encoded video streams to SPICE "
      "clients. "
      "Example: gst-launch-1.0 spicesrc uri=spice://127.0.0.1:5900 ! "
      "spicetiler name=t t.draw ! s.draw t.stream ! spicestreamenc "
      "encoder=\"vp8enc deadline=1\" ! s.stream_0 spicesink name=s port=5910",
      "gst-spice developers");

  element_class->change_state = GST_DEBUG_FUNCPTR (gst_spice_sink_change_state);
  element_class->request_new_pad =
      GST_DEBUG_FUNCPTR (gst_spice_sink_request_new_pad);
  element_class->release_pad = GST_DEBUG_FUNCPTR (gst_spice_sink_release_pad);
}
