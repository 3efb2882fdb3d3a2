/* spicetiler: content classification (synthetic vs photographic)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Percentage of sampled pixels equal to their left or upper neighbour
 * below which a block counts as photographic. */
#define TILER_PHOTO_EQUAL_PERCENT 40

gboolean tiler_classify_is_photo (const guint8 * bgrx, gint stride, gint w,
    gint h);

G_END_DECLS
