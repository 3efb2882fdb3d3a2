/* gst-spice test guest: SpiceCoreInterface on a GLib main context.
 *
 * spice-server calls the timer and watch functions from the thread that runs
 * the main context (it forwards channel events from its worker thread to
 * that thread itself), so no locking is needed here.
 */
#ifndef GUEST_CORE_H
#define GUEST_CORE_H

#include <glib.h>
#include <spice.h>

G_BEGIN_DECLS

typedef void (*GuestChannelEventFunc) (int event, SpiceChannelEventInfo * info,
    gpointer user_data);

/* Returns a core interface whose sources attach to context (NULL = default).
 * channel events are forwarded to func. The returned struct lives forever. */
SpiceCoreInterface *guest_core_new (GMainContext * context,
    GuestChannelEventFunc func, gpointer user_data);

G_END_DECLS

#endif /* GUEST_CORE_H */
