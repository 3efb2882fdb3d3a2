/* gst-spice: spicesrc's inputs channel
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "gstspicesrcpriv.h"

G_BEGIN_DECLS

/* any thread (upstream events, send_event()): a GstNavigation key, mouse
 * move, button or scroll event, or a `spice-key-locks` (a client's lock
 * keys), goes to the context thread and becomes SPICE input, in order;
 * FALSE if @event is none of those, the element is not running, or too
 * many events already wait (the event stays the caller's) */
gboolean gst_spice_src_inputs_handle_navigation (GstSpiceSrc * self,
    GstEvent * event);
/* context thread: the inputs channel opened (sends the pointer's position
 * that came before it, in client mouse mode) */
void     gst_spice_src_inputs_opened (GstSpiceSrc * self);

/* context thread: follow the inputs channel's lock LEDs into
 * self->key_locks (the streaming thread pushes `spice-key-locks`) */
void     gst_spice_src_inputs_connect (GstSpiceSrc * self,
    SpiceChannel * channel);

G_END_DECLS
