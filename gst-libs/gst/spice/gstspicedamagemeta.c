/* gst-spice: damage rectangles on raw video frames
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "gstspicedamagemeta.h"

static void
set_rects (GstSpiceDamageMeta * meta, const GstVideoRectangle * rects,
    guint n_rects)
{
  g_free (meta->rects);
  meta->n_rects = n_rects;
  meta->rects = n_rects ? g_memdup2 (rects, n_rects * sizeof (*rects)) : NULL;
}

static gboolean
gst_spice_damage_meta_init (GstMeta * meta, gpointer params, GstBuffer * buffer)
{
  GstSpiceDamageMeta *dmeta = (GstSpiceDamageMeta *) meta;

  dmeta->seq = 0;
  dmeta->n_rects = 0;
  dmeta->rects = NULL;
  return TRUE;
}

static void
gst_spice_damage_meta_free (GstMeta * meta, GstBuffer * buffer)
{
  GstSpiceDamageMeta *dmeta = (GstSpiceDamageMeta *) meta;

  g_free (dmeta->rects);
  dmeta->rects = NULL;
}

/* Scales one coordinate range outward: floor the start, ceil the end. */
static void
scale_range (gint pos, gint len, gint in_size, gint out_size, gint * out_pos,
    gint * out_len)
{
  gint64 start = ((gint64) pos * out_size) / in_size;
  gint64 end = ((gint64) (pos + len) * out_size + in_size - 1) / in_size;

  start = CLAMP (start, 0, out_size);
  end = CLAMP (end, start, out_size);
  *out_pos = (gint) start;
  *out_len = (gint) (end - start);
}

static gboolean
gst_spice_damage_meta_transform (GstBuffer * dest, GstMeta * meta,
    GstBuffer * buffer, GQuark type, gpointer data)
{
  GstSpiceDamageMeta *smeta = (GstSpiceDamageMeta *) meta;
  GstSpiceDamageMeta *dmeta;

  if (GST_META_TRANSFORM_IS_COPY (type)) {
    GstMetaTransformCopy *copy = data;

    /* a partial copy of the memory is not a frame: drop the damage */
    if (copy->region)
      return TRUE;
    dmeta = gst_buffer_add_spice_damage_meta (dest, smeta->seq, smeta->rects,
        smeta->n_rects);
    return dmeta != NULL;
  } else if (GST_VIDEO_META_TRANSFORM_IS_SCALE (type)) {
    GstVideoMetaTransform *trans = data;
    gint in_w = GST_VIDEO_INFO_WIDTH (trans->in_info);
    gint in_h = GST_VIDEO_INFO_HEIGHT (trans->in_info);
    gint out_w = GST_VIDEO_INFO_WIDTH (trans->out_info);
    gint out_h = GST_VIDEO_INFO_HEIGHT (trans->out_info);
    GstVideoRectangle *rects;
    guint i;

    if (in_w <= 0 || in_h <= 0)
      return FALSE;
    rects = g_newa (GstVideoRectangle, MAX (smeta->n_rects, 1));
    for (i = 0; i < smeta->n_rects; i++) {
      scale_range (smeta->rects[i].x, smeta->rects[i].w, in_w, out_w,
          &rects[i].x, &rects[i].w);
      scale_range (smeta->rects[i].y, smeta->rects[i].h, in_h, out_h,
          &rects[i].y, &rects[i].h);
    }
    dmeta = gst_buffer_add_spice_damage_meta (dest, smeta->seq, rects,
        smeta->n_rects);
    return dmeta != NULL;
  }
  return FALSE;
}

GType
gst_spice_damage_meta_api_get_type (void)
{
  static GType type = 0;
  static const gchar *tags[] = { GST_META_TAG_VIDEO_STR,
    GST_META_TAG_VIDEO_ORIENTATION_STR, GST_META_TAG_VIDEO_SIZE_STR, NULL
  };

  if (g_once_init_enter (&type)) {
    GType _type = gst_meta_api_type_register ("GstSpiceDamageMetaAPI", tags);
    g_once_init_leave (&type, _type);
  }
  return type;
}

const GstMetaInfo *
gst_spice_damage_meta_get_info (void)
{
  static const GstMetaInfo *info = NULL;

  if (g_once_init_enter ((GstMetaInfo **) & info)) {
    const GstMetaInfo *mi = gst_meta_register (GST_SPICE_DAMAGE_META_API_TYPE,
        "GstSpiceDamageMeta", sizeof (GstSpiceDamageMeta),
        gst_spice_damage_meta_init, gst_spice_damage_meta_free,
        gst_spice_damage_meta_transform);
    g_once_init_leave ((GstMetaInfo **) & info, (GstMetaInfo *) mi);
  }
  return info;
}

/**
 * gst_buffer_add_spice_damage_meta:
 * @buffer: a writable buffer
 * @seq: the frame's sequence number
 * @rects: (array length=n_rects) (nullable): changed areas
 * @n_rects: number of rectangles (0: nothing changed)
 *
 * Returns: (transfer none): the new meta
 */
GstSpiceDamageMeta *
gst_buffer_add_spice_damage_meta (GstBuffer * buffer, guint64 seq,
    const GstVideoRectangle * rects, guint n_rects)
{
  GstSpiceDamageMeta *meta;

  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);
  meta = (GstSpiceDamageMeta *) gst_buffer_add_meta (buffer,
      GST_SPICE_DAMAGE_META_INFO, NULL);
  if (!meta)
    return NULL;
  meta->seq = seq;
  set_rects (meta, rects, n_rects);
  return meta;
}
