/* gst-spice test guest: SpiceCoreInterface on a GLib main context. */
#include "guest-core.h"

#include <glib-unix.h>

struct SpiceTimer
{
  SpiceTimerFunc func;
  void *opaque;
  GSource *source;
};

struct SpiceWatch
{
  int fd;
  int mask;
  SpiceWatchFunc func;
  void *opaque;
  GSource *source;
};

static GMainContext *core_context;
static GuestChannelEventFunc event_func;
static gpointer event_data;

/* ---- timers ---- */

static SpiceTimer *
timer_add (SpiceTimerFunc func, void *opaque)
{
  SpiceTimer *t = g_new0 (SpiceTimer, 1);
  t->func = func;
  t->opaque = opaque;
  return t;
}

static void
timer_cancel (SpiceTimer * t)
{
  if (t->source) {
    g_source_destroy (t->source);
    g_source_unref (t->source);
    t->source = NULL;
  }
}

static gboolean
timer_dispatch (gpointer data)
{
  SpiceTimer *t = data;
  GSource *s = t->source;

  /* one-shot: forget the source first, func may restart or remove t */
  t->source = NULL;
  g_source_unref (s);
  t->func (t->opaque);
  return G_SOURCE_REMOVE;
}

static void
timer_start (SpiceTimer * t, uint32_t ms)
{
  timer_cancel (t);
  t->source = g_timeout_source_new (ms);
  g_source_set_callback (t->source, timer_dispatch, t, NULL);
  g_source_attach (t->source, core_context);
}

static void
timer_remove (SpiceTimer * t)
{
  timer_cancel (t);
  g_free (t);
}

/* ---- watches ---- */

static gboolean
watch_dispatch (gint fd, GIOCondition cond, gpointer data)
{
  SpiceWatch *w = data;
  int ev = 0;

  if (cond & (G_IO_IN | G_IO_HUP | G_IO_ERR))
    ev |= (w->mask & SPICE_WATCH_EVENT_READ);
  if (cond & (G_IO_OUT | G_IO_HUP | G_IO_ERR))
    ev |= (w->mask & SPICE_WATCH_EVENT_WRITE);
  if (ev == 0)
    ev = w->mask;
  /* func may update or remove w: do not touch it afterwards */
  w->func (fd, ev, w->opaque);
  return G_SOURCE_CONTINUE;
}

static void
watch_attach (SpiceWatch * w)
{
  GIOCondition cond = 0;

  if (w->source) {
    g_source_destroy (w->source);
    g_source_unref (w->source);
    w->source = NULL;
  }
  if (w->mask & SPICE_WATCH_EVENT_READ)
    cond |= G_IO_IN;
  if (w->mask & SPICE_WATCH_EVENT_WRITE)
    cond |= G_IO_OUT;
  if (cond == 0)
    return;
  w->source = g_unix_fd_source_new (w->fd, cond);
  g_source_set_callback (w->source, (GSourceFunc) (void (*)(void))
      watch_dispatch, w, NULL);
  g_source_attach (w->source, core_context);
}

static SpiceWatch *
watch_add (int fd, int event_mask, SpiceWatchFunc func, void *opaque)
{
  SpiceWatch *w = g_new0 (SpiceWatch, 1);
  w->fd = fd;
  w->mask = event_mask;
  w->func = func;
  w->opaque = opaque;
  watch_attach (w);
  return w;
}

static void
watch_update_mask (SpiceWatch * w, int event_mask)
{
  if (w->mask == event_mask && (w->source != NULL) == (event_mask != 0))
    return;
  w->mask = event_mask;
  watch_attach (w);
}

static void
watch_remove (SpiceWatch * w)
{
  w->mask = 0;
  watch_attach (w);
  g_free (w);
}

static void
channel_event (int event, SpiceChannelEventInfo * info)
{
  if (event_func)
    event_func (event, info, event_data);
}

static SpiceCoreInterface core_iface = {
  .base = {
        .type = SPICE_INTERFACE_CORE,
        .description = "gst-spice test guest GLib core",
        .major_version = SPICE_INTERFACE_CORE_MAJOR,
        .minor_version = SPICE_INTERFACE_CORE_MINOR,
      },
  .timer_add = timer_add,
  .timer_start = timer_start,
  .timer_cancel = timer_cancel,
  .timer_remove = timer_remove,
  .watch_add = watch_add,
  .watch_update_mask = watch_update_mask,
  .watch_remove = watch_remove,
  .channel_event = channel_event,
};

SpiceCoreInterface *
guest_core_new (GMainContext * context, GuestChannelEventFunc func,
    gpointer user_data)
{
  core_context = context;
  event_func = func;
  event_data = user_data;
  return &core_iface;
}
