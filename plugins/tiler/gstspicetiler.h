/* spicetiler: turns raw frames into SPICE draws and a stream region
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_SPICE_TILER (gst_spice_tiler_get_type ())
G_DECLARE_FINAL_TYPE (GstSpiceTiler, gst_spice_tiler, GST, SPICE_TILER,
    GstElement);

typedef enum {
  GST_SPICE_TILER_STREAMING_OFF,
  GST_SPICE_TILER_STREAMING_AUTO,
  GST_SPICE_TILER_STREAMING_ALL,
} GstSpiceTilerStreaming;

#define GST_TYPE_SPICE_TILER_STREAMING (gst_spice_tiler_streaming_get_type ())
GType gst_spice_tiler_streaming_get_type (void);

GST_ELEMENT_REGISTER_DECLARE (spicetiler);

G_END_DECLS
