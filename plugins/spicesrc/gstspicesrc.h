/* gst-spice: spicesrc, a SPICE client as a live video source
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <gst/gst.h>
#include <gst/base/gstpushsrc.h>

G_BEGIN_DECLS

#define GST_TYPE_SPICE_SRC (gst_spice_src_get_type ())
G_DECLARE_FINAL_TYPE (GstSpiceSrc, gst_spice_src, GST, SPICE_SRC, GstPushSrc)

/**
 * GstSpiceSrcReconnect:
 * @GST_SPICE_SRC_RECONNECT_NEVER: a lost connection is an error
 * @GST_SPICE_SRC_RECONNECT_ALWAYS: reconnect after #GstSpiceSrc:reconnect-interval
 *   whenever the connection fails or is lost (authentication and TLS
 *   failures stay errors)
 */
typedef enum {
  GST_SPICE_SRC_RECONNECT_NEVER,
  GST_SPICE_SRC_RECONNECT_ALWAYS,
} GstSpiceSrcReconnect;

/**
 * GstSpiceSrcCompression:
 *
 * Image compression that spicesrc asks the server to prefer (values are
 * SpiceImageCompression). None of them is lossy: JPEG and video streams
 * are the server's choice (its jpeg-wan-compression and streaming-video
 * settings).
 */
typedef enum {
  GST_SPICE_SRC_COMPRESSION_OFF = 1,
  GST_SPICE_SRC_COMPRESSION_AUTO_GLZ = 2,
  GST_SPICE_SRC_COMPRESSION_AUTO_LZ = 3,
  GST_SPICE_SRC_COMPRESSION_QUIC = 4,
  GST_SPICE_SRC_COMPRESSION_GLZ = 5,
  GST_SPICE_SRC_COMPRESSION_LZ = 6,
  GST_SPICE_SRC_COMPRESSION_LZ4 = 7,
} GstSpiceSrcCompression;

/**
 * GstSpiceSrcContextMode:
 * @GST_SPICE_SRC_CONTEXT_AUTO: iterate the default main context from a
 *   helper thread whenever nobody else owns it
 * @GST_SPICE_SRC_CONTEXT_APPLICATION: never; the application iterates the
 *   default main context itself
 */
typedef enum {
  GST_SPICE_SRC_CONTEXT_AUTO,
  GST_SPICE_SRC_CONTEXT_APPLICATION,
} GstSpiceSrcContextMode;

GST_ELEMENT_REGISTER_DECLARE (spicesrc);

G_END_DECLS
