/* gst-spice: X11 keysym names <-> PC AT (XT set 1) scancodes, US layout
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "gstspice-prelude.h"

#include <glib.h>
#include <gst/video/navigation.h>

G_BEGIN_DECLS

/* Scancodes use spice-gtk's convention: XT set 1 make codes, with extended
 * (E0-prefixed) keys as 0x100 | code. Release codes are not used here. */
#define GST_SPICE_SCANCODE_EXTENDED 0x100
#define GST_SPICE_SCANCODE_SHIFT_L 0x2a

GST_SPICE_API
guint        gst_spice_keymap_scancode_from_name (const gchar * key,
    gboolean * shifted);
GST_SPICE_API
const gchar *gst_spice_keymap_name_from_scancode (guint scancode);
/* the GstNavigation modifier that a held key sets (Shift, Control, Alt =
 * MOD1, AltGr = MOD5, Super = SUPER|MOD4), 0 for any other key */
GST_SPICE_API
GstNavigationModifierType gst_spice_keymap_modifier_mask (guint scancode);

G_END_DECLS
