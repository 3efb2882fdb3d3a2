/* gst-spice tests: a picture of videotestsrc, made once (for fixtures that
 * need real pixels without a check framework).
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

/* videotestsrc @pattern as @w x @h BGRx (stride w * 4), g_malloc'd; NULL
 * if the pipeline could not be made */
guint8  *test_picture_bgrx (const gchar * pattern, gint w, gint h);

G_END_DECLS
