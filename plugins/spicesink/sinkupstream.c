/* spicesink: the element's upstream queues (input and control)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <gst/spice/gstspice.h>

#include "sinkupstream.h"
#include "sinkdebug.h"

static SINK_DEBUG_CATEGORY (sink_upstream_debug, "spicesinkupstream",
    "spicesink upstream events (input and control queues)");
#define GST_CAT_DEFAULT sink_upstream_debug ()

/* the bytes of clipboard data the control queue may hold */
#define MAX_CLIPBOARD_BYTES (64 * 1024 * 1024)

typedef enum
{
  KIND_INPUT,
  KIND_RECORD,                  /* record data */
  KIND_CLIPBOARD,
  KIND_CONTROL,                 /* never dropped */
} ItemKind;

typedef struct
{
  ItemKind kind;
  guint32 client;
  gsize bytes;                  /* clipboard data */
  GstPad *pad;
  GstEvent *event;
  GstMessage *msg;
} Item;

typedef struct
{
  SinkUpstream *up;
  GQueue items;                 /* Item* */
  GThread *thread;
} Lane;

struct _SinkUpstream
{
  GstElement *element;          /* not a reference: it owns us */
  GMutex lock;
  GCond cond;
  gboolean running;
  Lane input, control;
  /* queued (lock) */
  GHashTable *input_of;         /* client -> events queued */
  guint n_record, n_clipboard;
  gsize clipboard_bytes;
  /* dropped (lock) */
  guint64 input_dropped, record_dropped, clipboard_dropped;
  gint64 warned_us;
};

static void
item_free (Item * it)
{
  if (it->event)
    gst_event_unref (it->event);
  if (it->msg)
    gst_message_unref (it->msg);
  if (it->pad)
    gst_object_unref (it->pad);
  g_free (it);
}

/* lock held: @it left its queue */
static void
forget (SinkUpstream * up, Item * it)
{
  guint n;

  switch (it->kind) {
    case KIND_INPUT:
      n = GPOINTER_TO_UINT (g_hash_table_lookup (up->input_of,
              GUINT_TO_POINTER (it->client)));
      if (n > 1)
        g_hash_table_insert (up->input_of, GUINT_TO_POINTER (it->client),
            GUINT_TO_POINTER (n - 1));
      else
        g_hash_table_remove (up->input_of, GUINT_TO_POINTER (it->client));
      break;
    case KIND_RECORD:
      up->n_record--;
      break;
    case KIND_CLIPBOARD:
      up->n_clipboard--;
      up->clipboard_bytes -= it->bytes;
      break;
    case KIND_CONTROL:
      break;
  }
}

/* an upstream thread: pushes what its lane holds until stopped and empty */
static gpointer
lane_thread (gpointer data)
{
  Lane *lane = data;
  SinkUpstream *up = lane->up;

  g_mutex_lock (&up->lock);
  for (;;) {
    Item *it = g_queue_pop_head (&lane->items);

    if (!it) {
      if (!up->running)
        break;
      g_cond_wait (&up->cond, &up->lock);
      continue;
    }
    forget (up, it);
    g_mutex_unlock (&up->lock);
    if (it->msg) {
      gst_element_post_message (up->element, it->msg);
      it->msg = NULL;
    } else if (!gst_pad_push_event (it->pad, it->event)) {
      GST_LOG_OBJECT (it->pad, "upstream event not handled");
    }
    it->event = NULL;
    item_free (it);
    g_mutex_lock (&up->lock);
  }
  g_mutex_unlock (&up->lock);
  return NULL;
}

/* the element's init */
SinkUpstream *
sink_upstream_new (GstElement * element)
{
  SinkUpstream *up = g_new0 (SinkUpstream, 1);

  up->element = element;
  g_mutex_init (&up->lock);
  g_cond_init (&up->cond);
  up->input.up = up->control.up = up;
  g_queue_init (&up->input.items);
  g_queue_init (&up->control.items);
  up->input_of = g_hash_table_new (NULL, NULL);
  return up;
}

/* the element's finalize (stopped) */
void
sink_upstream_free (SinkUpstream * up)
{
  sink_upstream_stop (up);
  g_hash_table_unref (up->input_of);
  g_mutex_clear (&up->lock);
  g_cond_clear (&up->cond);
  g_free (up);
}

/* the element's NULL -> READY */
void
sink_upstream_start (SinkUpstream * up)
{
  g_mutex_lock (&up->lock);
  if (up->running) {
    g_mutex_unlock (&up->lock);
    return;
  }
  up->running = TRUE;
  g_mutex_unlock (&up->lock);
  up->input.thread = g_thread_new ("spicesink-input", lane_thread, &up->input);
  up->control.thread = g_thread_new ("spicesink-control", lane_thread,
      &up->control);
}

/* the element's READY -> NULL (and finalize): what is queued is pushed,
 * then the threads end */
void
sink_upstream_stop (SinkUpstream * up)
{
  g_mutex_lock (&up->lock);
  up->running = FALSE;
  g_cond_broadcast (&up->cond);
  g_mutex_unlock (&up->lock);
  if (up->input.thread)
    g_thread_join (up->input.thread);
  if (up->control.thread)
    g_thread_join (up->control.thread);
  up->input.thread = up->control.thread = NULL;
}

static ItemKind
kind_of (GstEvent * event, gsize * bytes)
{
  GstSpiceClipboard clip;

  *bytes = 0;
  /* a client's locks go in order with its keys */
  if (GST_EVENT_TYPE (event) == GST_EVENT_NAVIGATION ||
      gst_spice_event_parse_key_locks (event, NULL))
    return KIND_INPUT;
  if (gst_spice_event_parse_record_data (event, NULL))
    return KIND_RECORD;
  if (gst_event_has_name (event, GST_SPICE_EVENT_CLIPBOARD) &&
      gst_spice_event_parse_clipboard (event, &clip)) {
    *bytes = clip.data ? g_bytes_get_size (clip.data) : 0;
    gst_spice_clipboard_clear (&clip);
    return KIND_CLIPBOARD;
  }
  return KIND_CONTROL;
}

/* lock held: whether @it fits its bound; counts it in when it does */
static gboolean
admit (SinkUpstream * up, Item * it)
{
  guint n;

  switch (it->kind) {
    case KIND_INPUT:
      n = GPOINTER_TO_UINT (g_hash_table_lookup (up->input_of,
              GUINT_TO_POINTER (it->client)));
      if (up->input.items.length >= SINK_UPSTREAM_MAX_INPUT ||
          n >= SINK_UPSTREAM_MAX_INPUT_PER_CLIENT) {
        up->input_dropped++;
        return FALSE;
      }
      g_hash_table_insert (up->input_of, GUINT_TO_POINTER (it->client),
          GUINT_TO_POINTER (n + 1));
      return TRUE;
    case KIND_RECORD:
      if (up->n_record >= SINK_UPSTREAM_MAX_RECORD) {
        up->record_dropped++;
        return FALSE;
      }
      up->n_record++;
      return TRUE;
    case KIND_CLIPBOARD:
      if (up->n_clipboard >= SINK_UPSTREAM_MAX_CLIPBOARD ||
          up->clipboard_bytes + it->bytes > MAX_CLIPBOARD_BYTES) {
        up->clipboard_dropped++;
        return FALSE;
      }
      up->n_clipboard++;
      up->clipboard_bytes += it->bytes;
      return TRUE;
    case KIND_CONTROL:
      return TRUE;
  }
  return TRUE;
}

/* lock held: one warning a second at most */
static void
warn_dropped (SinkUpstream * up, Item * it)
{
  gint64 now = g_get_monotonic_time ();

  if (now - up->warned_us < G_TIME_SPAN_SECOND)
    return;
  up->warned_us = now;
  GST_WARNING_OBJECT (up->element, "upstream is slower than the clients: "
      "dropping %s events (dropped so far: %" G_GUINT64_FORMAT " input, %"
      G_GUINT64_FORMAT " record, %" G_GUINT64_FORMAT " clipboard)",
      it->kind == KIND_INPUT ? "input" : it->kind == KIND_RECORD ? "record" :
      "clipboard", up->input_dropped, up->record_dropped,
      up->clipboard_dropped);
}

/* lock held: queues @it (taken) in its lane, or drops it */
static void
enqueue (SinkUpstream * up, Item * it)
{
  if (!up->running) {
    item_free (it);
    return;
  }
  if (!admit (up, it)) {
    warn_dropped (up, it);
    item_free (it);
    return;
  }
  g_queue_push_tail (it->kind == KIND_INPUT ? &up->input.items :
      &up->control.items, it);
  g_cond_broadcast (&up->cond);
}

/* any thread (the server's callbacks, some with the server lock held) */
void
sink_upstream_push (SinkUpstream * up, GstPad * pad, guint32 client,
    GstEvent * event)
{
  Item *it = g_new0 (Item, 1);

  it->pad = pad;
  it->event = event;
  it->client = client;
  it->kind = kind_of (event, &it->bytes);
  g_mutex_lock (&up->lock);
  enqueue (up, it);
  g_mutex_unlock (&up->lock);
}

/* any thread */
void
sink_upstream_post (SinkUpstream * up, GstMessage * msg)
{
  Item *it = g_new0 (Item, 1);

  it->msg = msg;
  it->kind = KIND_CONTROL;
  g_mutex_lock (&up->lock);
  enqueue (up, it);
  g_mutex_unlock (&up->lock);
}

/* any thread */
void
sink_upstream_stats (SinkUpstream * up, GstStructure * s)
{
  g_mutex_lock (&up->lock);
  gst_structure_set (s,
      "input-events-dropped", G_TYPE_UINT64, up->input_dropped,
      "record-events-dropped", G_TYPE_UINT64, up->record_dropped,
      "clipboard-events-dropped", G_TYPE_UINT64, up->clipboard_dropped,
      "upstream-queued", G_TYPE_UINT,
      up->input.items.length + up->control.items.length, NULL);
  g_mutex_unlock (&up->lock);
}
