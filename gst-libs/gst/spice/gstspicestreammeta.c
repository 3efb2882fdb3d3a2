/* gst-spice: where a stream frame goes on the SPICE surface
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "gstspicestreammeta.h"

static gboolean
gst_spice_stream_meta_init (GstMeta * meta, gpointer params, GstBuffer * buffer)
{
  GstSpiceStreamMeta *smeta = (GstSpiceStreamMeta *) meta;

  smeta->dest = (GstVideoRectangle) {
  0, 0, 0, 0};
  smeta->stream_id = 0;
  smeta->keyframe = FALSE;
  return TRUE;
}

/* The destination is in surface coordinates: neither a copy nor a scale of
 * the frame changes it. */
static gboolean
gst_spice_stream_meta_transform (GstBuffer * dest, GstMeta * meta,
    GstBuffer * buffer, GQuark type, gpointer data)
{
  GstSpiceStreamMeta *smeta = (GstSpiceStreamMeta *) meta;

  if (GST_META_TRANSFORM_IS_COPY (type) ||
      GST_VIDEO_META_TRANSFORM_IS_SCALE (type)) {
    if (gst_buffer_get_spice_stream_meta (dest))
      return TRUE;
    return gst_buffer_add_spice_stream_meta (dest, &smeta->dest,
        smeta->stream_id, smeta->keyframe) != NULL;
  }
  return FALSE;
}

GType
gst_spice_stream_meta_api_get_type (void)
{
  static GType type = 0;
  static const gchar *tags[] = { GST_META_TAG_VIDEO_STR, NULL };

  if (g_once_init_enter (&type)) {
    GType _type = gst_meta_api_type_register ("GstSpiceStreamMetaAPI", tags);
    g_once_init_leave (&type, _type);
  }
  return type;
}

const GstMetaInfo *
gst_spice_stream_meta_get_info (void)
{
  static const GstMetaInfo *info = NULL;

  if (g_once_init_enter ((GstMetaInfo **) & info)) {
    const GstMetaInfo *mi = gst_meta_register (GST_SPICE_STREAM_META_API_TYPE,
        "GstSpiceStreamMeta", sizeof (GstSpiceStreamMeta),
        gst_spice_stream_meta_init, NULL, gst_spice_stream_meta_transform);
    g_once_init_leave ((GstMetaInfo **) & info, (GstMetaInfo *) mi);
  }
  return info;
}

/**
 * gst_buffer_add_spice_stream_meta:
 * Returns: (transfer none): the new meta
 */
GstSpiceStreamMeta *
gst_buffer_add_spice_stream_meta (GstBuffer * buffer,
    const GstVideoRectangle * dest, guint stream_id, gboolean keyframe)
{
  GstSpiceStreamMeta *meta;

  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);
  meta = (GstSpiceStreamMeta *) gst_buffer_add_meta (buffer,
      GST_SPICE_STREAM_META_INFO, NULL);
  if (!meta)
    return NULL;
  meta->dest = *dest;
  meta->stream_id = stream_id;
  meta->keyframe = keyframe;
  return meta;
}
