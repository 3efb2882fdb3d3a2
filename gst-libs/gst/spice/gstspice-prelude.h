/* gst-spice: the export macro of libgstspice-1.0
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The library is built with hidden symbol visibility: only functions
 * declared with GST_SPICE_API are exported. BUILDING_GST_SPICE is defined
 * while the library itself is compiled.
 */
#pragma once

#include <gst/gst.h>

#ifndef GST_SPICE_API
# ifdef BUILDING_GST_SPICE
#  define GST_SPICE_API GST_API_EXPORT
# else
#  define GST_SPICE_API GST_API_IMPORT
# endif
#endif
