/* spicertpav1pay: AV1 temporal units into RTP packets
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
/**
 * SECTION:element-spicertpav1pay
 * @title: spicertpav1pay
 *
 * Packs AV1 (an `obu-stream` aligned on temporal units, as `av1parse`
 * gives it) into RTP packets as the AOMedia "RTP Payload Format for AV1"
 * describes them, for browsers over WebRTC: GStreamer 1.22 has no AV1
 * payloader (rtpav1pay is in gst-plugins-rs). Each packet starts with
 * the aggregation header (Z: its first element continues an OBU of the
 * packet before, Y: its last element goes on in the next, W = 0: every
 * element has a LEB128 length, N: the first packet of a coded video
 * sequence, a key frame's temporal unit with its sequence header); each
 * OBU loses its `obu_size` field (the element's length says it), temporal
 * delimiters, tile lists and padding are left out, and the last packet of
 * a temporal unit has the marker bit. spicewebrtcsink uses it for
 * `av1enc`.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 videotestsrc ! av1enc usage-profile=realtime cpu-used=10 \
 *     ! av1parse ! video/x-av1,stream-format=obu-stream,alignment=tu \
 *     ! spicertpav1pay ! udpsink host=127.0.0.1 port=5004
 * ]|
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <gst/codecparsers/gstav1parser.h>
#include <gst/rtp/gstrtpbuffer.h>

#include "gstspicertpav1pay.h"

GST_DEBUG_CATEGORY_STATIC (gst_spice_rtp_av1_pay_debug);
#define GST_CAT_DEFAULT gst_spice_rtp_av1_pay_debug

/* the aggregation header's bits */
#define AGG_Z 0x80
#define AGG_Y 0x40
#define AGG_N 0x08

struct _GstSpiceRtpAv1Pay
{
  GstRTPBasePayload parent;
  /* streaming thread: kept from one temporal unit to the next */
  GstAV1Parser *parser;
  GArray *obus;                 /* Obu: the unit's, its size field left out */
  guint8 *pkt;                  /* the packet being filled */
  gsize pkt_size;
};

G_DEFINE_TYPE (GstSpiceRtpAv1Pay, gst_spice_rtp_av1_pay,
    GST_TYPE_RTP_BASE_PAYLOAD);
GST_ELEMENT_REGISTER_DEFINE (spicertpav1pay, "spicertpav1pay",
    GST_RANK_NONE, GST_TYPE_SPICE_RTP_AV1_PAY);

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("video/x-av1, stream-format = (string) obu-stream, "
        "alignment = (string) tu"));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("application/x-rtp, media = (string) video, "
        "payload = (int) [ 96, 127 ], clock-rate = (int) 90000, "
        "encoding-name = (string) AV1"));

/* one OBU of a temporal unit, its size field left out */
typedef struct
{
  guint8 header[2];             /* obu_has_size_field cleared */
  guint header_len;             /* 1, or 2 with the extension */
  const guint8 *payload;
  gsize payload_len;
  guint type;
} Obu;

/* any thread */
static guint
leb128_size (gsize v)
{
  guint n = 1;

  while (v >= 0x80) {
    v >>= 7;
    n++;
  }
  return n;
}

/* any thread */
static guint
leb128_write (guint8 * p, gsize v)
{
  guint n = 0;

  do {
    p[n] = (v & 0x7f) | (v >= 0x80 ? 0x80 : 0);
    v >>= 7;
    n++;
  } while (v);
  return n;
}

/* streaming thread: the OBUs of @data into @obus (GstAV1Parser finds
 * each one's header, size and payload); FALSE on a malformed one */
static gboolean
parse_obus (GstAV1Parser * parser, const guint8 * data, gsize len,
    GArray * obus)
{
  gsize at = 0;

  gst_av1_parser_reset (parser, FALSE);
  while (at < len) {
    GstAV1OBU obu;
    guint32 consumed = 0;
    Obu o = { {0}, 0 };
    GstAV1ParserResult res = gst_av1_parser_identify_one_obu (parser,
        data + at, (guint32) MIN (len - at, G_MAXUINT32), &obu, &consumed);

    /* (not on the operating point: left out; never a loop in place) */
    if (res == GST_AV1_PARSER_DROP && consumed > 0) {
      at += consumed;
      continue;
    }
    if (res != GST_AV1_PARSER_OK || consumed == 0)
      return FALSE;
    o.type = obu.obu_type;
    o.header[0] = data[at] & ~0x02;     /* no obu_size field */
    o.header[1] = obu.header.obu_extention_flag ? data[at + 1] : 0;
    o.header_len = obu.header.obu_extention_flag ? 2 : 1;
    o.payload = obu.data;
    o.payload_len = obu.obu_size;
    at += consumed;
    if (o.type != GST_AV1_OBU_TEMPORAL_DELIMITER &&
        o.type != GST_AV1_OBU_TILE_LIST && o.type != GST_AV1_OBU_PADDING)
      g_array_append_val (obus, o);
  }
  return TRUE;
}

/* the packet being filled */
typedef struct
{
  GstRTPBasePayload *pay;
  GstBufferList *list;
  GstClockTime pts;
  guint8 *buf;                  /* max bytes */
  gsize max, used;
  guint8 agg;
} Packer;

/* streaming thread: the packet so far joins the list (@last: the unit's
 * last, with the marker) */
static void
packer_flush (Packer * p, gboolean last)
{
  GstRTPBuffer rtp = GST_RTP_BUFFER_INIT;
  GstBuffer *out;

  if (p->used <= 1)
    return;
  p->buf[0] = p->agg;
  out = gst_rtp_base_payload_allocate_output_buffer (p->pay, p->used, 0, 0);
  gst_rtp_buffer_map (out, GST_MAP_WRITE, &rtp);
  memcpy (gst_rtp_buffer_get_payload (&rtp), p->buf, p->used);
  gst_rtp_buffer_set_marker (&rtp, last);
  gst_rtp_buffer_unmap (&rtp);
  GST_BUFFER_PTS (out) = p->pts;
  gst_buffer_list_add (p->list, out);
  p->used = 1;
  p->agg &= ~(AGG_Z | AGG_Y | AGG_N);
}

/* streaming thread: the bytes of one OBU element (its header then its
 * payload: two pieces), fragmented over as many packets as they need */
static void
packer_add (Packer * p, const Obu * o)
{
  gsize total = o->header_len + o->payload_len, done = 0;

  while (done < total) {
    gsize room = p->max - p->used, left = total - done, chunk;
    guint lsize;

    /* an element needs its length and at least one byte */
    if (room < 3) {
      packer_flush (p, FALSE);
      continue;
    }
    chunk = MIN (left, room - leb128_size (room));
    lsize = leb128_size (chunk);
    while (chunk + lsize > room) {
      chunk--;
      lsize = leb128_size (chunk);
    }
    p->used += leb128_write (p->buf + p->used, chunk);
    /* the element's bytes are the header's, then the payload's */
    for (gsize k = done; k < done + chunk;) {
      const guint8 *from = k < o->header_len ? o->header + k :
          o->payload + (k - o->header_len);
      gsize n = MIN (done + chunk, k < o->header_len ? o->header_len :
          o->header_len + o->payload_len) - k;

      memcpy (p->buf + p->used, from, n);
      p->used += n;
      k += n;
    }
    done += chunk;
    if (done < total) {
      /* it goes on in the next packet */
      p->agg |= AGG_Y;
      packer_flush (p, FALSE);
      p->agg |= AGG_Z;
    }
  }
}

static GstFlowReturn
gst_spice_rtp_av1_pay_handle_buffer (GstRTPBasePayload * base,
    GstBuffer * buffer)
{
  GstSpiceRtpAv1Pay *self = GST_SPICE_RTP_AV1_PAY (base);
  GstMapInfo map;
  GArray *obus = self->obus;
  Packer p = { base, NULL };
  gboolean key = !GST_BUFFER_FLAG_IS_SET (buffer, GST_BUFFER_FLAG_DELTA_UNIT);
  gboolean seq = FALSE;
  GstFlowReturn ret = GST_FLOW_OK;
  guint i;

  if (!gst_buffer_map (buffer, &map, GST_MAP_READ)) {
    gst_buffer_unref (buffer);
    return GST_FLOW_ERROR;
  }
  g_array_set_size (obus, 0);
  if (!parse_obus (self->parser, map.data, map.size, obus)) {
    GST_ELEMENT_WARNING (base, STREAM, FORMAT, (NULL),
        ("a malformed OBU in a temporal unit of %" G_GSIZE_FORMAT " bytes: "
            "the unit is dropped", map.size));
    goto done;
  }
  for (i = 0; i < obus->len; i++)
    seq |= g_array_index (obus, Obu, i).type == GST_AV1_OBU_SEQUENCE_HEADER;
  p.max = gst_rtp_buffer_calc_payload_len (GST_RTP_BASE_PAYLOAD_MTU (base),
      0, 0);
  if (p.max < 8 || obus->len == 0)
    goto done;
  if (self->pkt_size < p.max) {
    g_free (self->pkt);
    self->pkt = g_malloc (p.max);
    self->pkt_size = p.max;
  }
  p.buf = self->pkt;
  p.used = 1;
  p.agg = key && seq ? AGG_N : 0;
  p.pts = GST_BUFFER_PTS (buffer);
  p.list = gst_buffer_list_new ();
  for (i = 0; i < obus->len; i++)
    packer_add (&p, &g_array_index (obus, Obu, i));
  packer_flush (&p, TRUE);
  ret = gst_rtp_base_payload_push_list (base, p.list);

done:
  gst_buffer_unmap (buffer, &map);
  /* (its OBUs point into the unit's memory) */
  g_array_set_size (obus, 0);
  gst_buffer_unref (buffer);
  return ret;
}

static gboolean
gst_spice_rtp_av1_pay_set_caps (GstRTPBasePayload * base, GstCaps * caps)
{
  gst_rtp_base_payload_set_options (base, "video", TRUE, "AV1", 90000);
  return gst_rtp_base_payload_set_outcaps (base, NULL);
}

static void
gst_spice_rtp_av1_pay_finalize (GObject * object)
{
  GstSpiceRtpAv1Pay *self = GST_SPICE_RTP_AV1_PAY (object);

  gst_av1_parser_free (self->parser);
  g_array_unref (self->obus);
  g_free (self->pkt);
  G_OBJECT_CLASS (gst_spice_rtp_av1_pay_parent_class)->finalize (object);
}

static void
gst_spice_rtp_av1_pay_class_init (GstSpiceRtpAv1PayClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstRTPBasePayloadClass *pay_class = GST_RTP_BASE_PAYLOAD_CLASS (klass);

  gobject_class->finalize = gst_spice_rtp_av1_pay_finalize;
  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "SPICE RTP AV1 payloader", "Codec/Payloader/Network/RTP",
      "Packs AV1 temporal units (an OBU stream) into RTP packets as "
      "AOMedia's RTP payload format for AV1 describes them, for browsers "
      "over WebRTC; spicewebrtcsink uses it for av1enc. Example: "
      "gst-launch-1.0 videotestsrc ! av1enc usage-profile=realtime "
      "cpu-used=10 ! av1parse ! "
      "video/x-av1,stream-format=obu-stream,alignment=tu ! spicertpav1pay "
      "! udpsink host=127.0.0.1 port=5004", "gst-spice developers");
  pay_class->set_caps = gst_spice_rtp_av1_pay_set_caps;
  pay_class->handle_buffer = gst_spice_rtp_av1_pay_handle_buffer;
  GST_DEBUG_CATEGORY_INIT (gst_spice_rtp_av1_pay_debug, "spicertpav1pay", 0,
      "AV1 RTP payloader");
}

static void
gst_spice_rtp_av1_pay_init (GstSpiceRtpAv1Pay * self)
{
  self->parser = gst_av1_parser_new ();
  self->obus = g_array_new (FALSE, FALSE, sizeof (Obu));
}
