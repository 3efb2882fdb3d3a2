/* spicesink: one debug category per owner, created on first use
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *   static SINK_DEBUG_CATEGORY (sink_display_debug, "spicesinkdisplay", "...");
 *   #define GST_CAT_DEFAULT sink_display_debug ()
 */
#pragma once

#include <gst/gst.h>

#define SINK_DEBUG_CATEGORY(func, name, description)                    \
  GstDebugCategory *                                                    \
  func (void)                                                           \
  {                                                                     \
    static gsize cat = 0;                                               \
                                                                        \
    if (g_once_init_enter (&cat))                                       \
      g_once_init_leave (&cat,                                          \
          (gsize) _gst_debug_category_new (name, 0, description));      \
    return (GstDebugCategory *) cat;                                    \
  }
