/* gst-spice: spicesrc's cursor channel and the mouse mode
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "gstspicesrcpriv.h"

G_BEGIN_DECLS

/* context thread: follow the session's cursor channel for the captured
 * display into self->cursor (the streaming thread pushes `spice-cursor`) */
void     gst_spice_src_cursor_connect (GstSpiceSrc * self,
    SpiceChannel * channel);
/* context thread: follow the main channel's mouse mode into
 * self->mouse_mode (and the stats' mouse-mode) */
void     gst_spice_src_cursor_connect_mouse_mode (GstSpiceSrc * self,
    SpiceChannel * channel);

G_END_DECLS
