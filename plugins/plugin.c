/* gst-spice: the one plugin, registering spicesrc, spicetiler, spicesink and
 * spicestreamenc
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "spicesrc/gstspicesrc.h"
#include "tiler/gstspicetiler.h"
#include "spicesink/gstspicesink.h"
#include "streamenc/gstspicestreamenc.h"

static gboolean
plugin_init (GstPlugin * plugin)
{
  gboolean ret = FALSE;

  ret |= GST_ELEMENT_REGISTER (spicesrc, plugin);
  ret |= GST_ELEMENT_REGISTER (spicetiler, plugin);
  ret |= GST_ELEMENT_REGISTER (spicesink, plugin);
  ret |= GST_ELEMENT_REGISTER (spicestreamenc, plugin);

  return ret;
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, spice,
    "SPICE: a client source, a tiler, a server sink and a stream encoder bin",
    plugin_init, VERSION, GST_LICENSE, GST_PACKAGE_NAME, GST_PACKAGE_ORIGIN)
