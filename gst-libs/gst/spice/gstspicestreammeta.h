/* gst-spice: where a stream frame goes on the SPICE surface
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "gstspice-prelude.h"

#include <gst/video/video.h>

G_BEGIN_DECLS

#define GST_SPICE_STREAM_META_API_TYPE (gst_spice_stream_meta_api_get_type ())
#define GST_SPICE_STREAM_META_INFO (gst_spice_stream_meta_get_info ())

/**
 * GstSpiceStreamMeta:
 * @meta: parent
 * @dest: destination rectangle on the surface (surface pixels)
 * @stream_id: changes whenever the consumer must create a new SPICE stream
 *   (new geometry or restart); equal ids mean "same stream"
 * @keyframe: the producer wants this frame to be a key unit (first frame of
 *   a stream, or a refresh)
 *
 * Carried by every buffer of spicetiler's `stream` pad. Tagged only "video"
 * so that it survives videoconvert, videoscale and every video encoder
 * unchanged (the encoded size travels in caps).
 */
typedef struct {
  GstMeta meta;

  GstVideoRectangle dest;
  guint stream_id;
  gboolean keyframe;
} GstSpiceStreamMeta;

GST_SPICE_API
GType gst_spice_stream_meta_api_get_type (void);
GST_SPICE_API
const GstMetaInfo *gst_spice_stream_meta_get_info (void);

GST_SPICE_API
GstSpiceStreamMeta *gst_buffer_add_spice_stream_meta (GstBuffer * buffer,
    const GstVideoRectangle * dest, guint stream_id, gboolean keyframe);

#define gst_buffer_get_spice_stream_meta(b) \
  ((GstSpiceStreamMeta *) gst_buffer_get_meta ((b), GST_SPICE_STREAM_META_API_TYPE))

G_END_DECLS
