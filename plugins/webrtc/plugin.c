/* gst-spice: the WebRTC plugin, registering spicewebrtcsink and its AV1
 * payloader, spicertpav1pay (a plugin of its own so that the others do not
 * need libgstwebrtc and libsoup)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstspicertpav1pay.h"
#include "gstspicewebrtcsink.h"

static gboolean
plugin_init (GstPlugin * plugin)
{
  return GST_ELEMENT_REGISTER (spicewebrtcsink, plugin) &&
      GST_ELEMENT_REGISTER (spicertpav1pay, plugin);
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, spicewebrtc,
    "SPICE desktops to browsers: a WebRTC sink with WHEP signalling",
    plugin_init, VERSION, GST_LICENSE, GST_PACKAGE_NAME, GST_PACKAGE_ORIGIN)
