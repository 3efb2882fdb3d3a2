/* spicesink: the inputs channel
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Sent: INPUTS_INIT with the upstream's lock LEDs; KEY_MODIFIERS when they
 * change; MOUSE_MOTION_ACK after every 4 motion messages.
 * Keys and pointer messages become GstNavigation events (`key` is the X11
 * keysym name plus the exact `scancode`; positions in surface pixels), a
 * KEY_MODIFIERS the upstream `spice-key-locks` event, in the same queue.
 *
 * Server thread, WITHOUT the server lock (the input state is the server
 * thread's alone; the surface size is read atomically): a key press never
 * waits for the render path. Sending the motion ACK and closing the channel
 * take the lock.
 */
#include <gst/video/navigation.h>

#include "sinksession.h"

#include "sinkdebug.h"

static SINK_DEBUG_CATEGORY (sink_inputs_debug, "spicesinkinputs",
    "spicesink inputs channel");
#define GST_CAT_DEFAULT sink_inputs_debug ()

/* lock NOT held */
static gboolean
close_inputs (SinkSession * s, const gchar * reason)
{
  GMutex *lock = s->shared->env->lock;

  g_mutex_lock (lock);
  if (s->inputs)
    sink_conn_close (s->inputs, reason);
  g_mutex_unlock (lock);
  return FALSE;
}

void
sink_inputs_linked (SinkSession * s)
{
  GByteArray *a = g_byte_array_new ();

  sink_conn_set_limit (s->inputs, SINK_INPUTS_MAX_QUEUED);
  s->in.locks_sent = s->shared->key_locks;
  s->in.locks_pending = FALSE;
  gst_spice_wire_write_inputs_init (a, s->in.locks_sent);
  sink_conn_send (s->inputs, SPICE_MSG_INPUTS_INIT, a, NULL);
  g_byte_array_unref (a);
}

void
sink_inputs_send_locks (SinkSession * s)
{
  GByteArray *a;

  if (!sink_conn_is_linked (s->inputs))
    return;
  if (sink_conn_has_queued (s->inputs)) {
    s->in.locks_pending = TRUE;
    return;
  }
  s->in.locks_pending = FALSE;
  if (s->in.locks_sent == s->shared->key_locks)
    return;
  s->in.locks_sent = s->shared->key_locks;
  a = g_byte_array_new ();
  gst_spice_wire_write_key_modifiers (a, s->in.locks_sent);
  sink_conn_send (s->inputs, SPICE_MSG_INPUTS_KEY_MODIFIERS, a, NULL);
  g_byte_array_unref (a);
  GST_DEBUG ("%s: KEY_MODIFIERS 0x%x", s->peer_host, s->in.locks_sent);
}

void
sink_inputs_drained (SinkSession * s)
{
  if (s->in.locks_pending)
    sink_inputs_send_locks (s);
}

static GstNavigationModifierType
nav_state (SinkSession * s)
{
  const SinkInputsState *in = &s->in;
  guint32 st = in->mods;

  if (in->locks & SPICE_KEYBOARD_MODIFIER_FLAGS_CAPS_LOCK)
    st |= GST_NAVIGATION_MODIFIER_LOCK_MASK;
  if (in->locks & SPICE_KEYBOARD_MODIFIER_FLAGS_NUM_LOCK)
    st |= GST_NAVIGATION_MODIFIER_MOD2_MASK;
  if (in->buttons & SPICE_MOUSE_BUTTON_MASK_LEFT)
    st |= GST_NAVIGATION_MODIFIER_BUTTON1_MASK;
  if (in->buttons & SPICE_MOUSE_BUTTON_MASK_MIDDLE)
    st |= GST_NAVIGATION_MODIFIER_BUTTON2_MASK;
  if (in->buttons & SPICE_MOUSE_BUTTON_MASK_RIGHT)
    st |= GST_NAVIGATION_MODIFIER_BUTTON3_MASK;
  if (in->buttons & SPICE_MOUSE_BUTTON_MASK_UP)
    st |= GST_NAVIGATION_MODIFIER_BUTTON4_MASK;
  if (in->buttons & SPICE_MOUSE_BUTTON_MASK_DOWN)
    st |= GST_NAVIGATION_MODIFIER_BUTTON5_MASK;
  return (GstNavigationModifierType) st;
}

static void
emit_key (SinkSession * s, const GstSpiceKeyEvent * k)
{
  const gchar *name = gst_spice_keymap_name_from_scancode (k->scancode);
  GstEvent *ev;

  if (!name)
    name = "VoidSymbol";
  ev = k->release ?
      gst_navigation_event_new_key_release (name, nav_state (s)) :
      gst_navigation_event_new_key_press (name, nav_state (s));
  gst_structure_set (gst_event_writable_structure (ev), "scancode",
      G_TYPE_UINT, k->scancode, NULL);
  if (k->release)
    s->in.mods &= ~gst_spice_keymap_modifier_mask (k->scancode);
  else
    s->in.mods |= gst_spice_keymap_modifier_mask (k->scancode);
  if (k->scancode < 0x200) {
    guint32 bit = 1u << (k->scancode % 32);

    if (k->release)
      s->in.held[k->scancode / 32] &= ~bit;
    else
      s->in.held[k->scancode / 32] |= bit;
  }
  g_atomic_pointer_add (&s->in.key_events, 1);
  GST_LOG ("key %s 0x%x (%s)", k->release ? "up" : "down", k->scancode, name);
  s->hooks->on_navigation (s, ev, s->hooks_data);
}

static void
emit_pointer (SinkSession * s, GstEvent * ev)
{
  g_atomic_pointer_add (&s->in.pointer_events, 1);
  s->hooks->on_navigation (s, ev, s->hooks_data);
}

static void
motion_done (SinkSession * s)
{
  GMutex *lock = s->shared->env->lock;

  if (++s->in.motion_count % SPICE_INPUT_MOTION_ACK_BUNCH != 0)
    return;
  g_mutex_lock (lock);
  if (s->inputs)
    sink_conn_send (s->inputs, SPICE_MSG_INPUTS_MOUSE_MOTION_ACK, NULL, NULL);
  g_mutex_unlock (lock);
}

static void
move_pointer (SinkSession * s, gint x, gint y)
{
  gint w = MAX (g_atomic_int_get (&s->shared->width), 1);
  gint h = MAX (g_atomic_int_get (&s->shared->height), 1);

  x = CLAMP (x, 0, w - 1);
  y = CLAMP (y, 0, h - 1);
  if (x == s->in.mouse_x && y == s->in.mouse_y)
    return;
  s->in.mouse_x = x;
  s->in.mouse_y = y;
  emit_pointer (s, gst_navigation_event_new_mouse_move (x, y, nav_state (s)));
}

static gboolean
sink_inputs_handle_key (SinkSession * s, guint16 type, const guint8 * body,
    gsize size)
{
  GstSpiceKeyEvent keys[8];
  guint32 code;
  gint n = -1, i;

  if (gst_spice_wire_parse_key (body, size, &code))
    n = gst_spice_wire_decode_key_code (code, keys, G_N_ELEMENTS (keys));
  if (n <= 0)
    return close_inputs (s, "malformed key code");
  for (i = 0; i < n; i++) {
    /* KEY_UP carries release codes; trust the message type */
    keys[i].release = type == SPICE_MSGC_INPUTS_KEY_UP;
    emit_key (s, &keys[i]);
  }
  return TRUE;
}

static gboolean
sink_inputs_handle_key_scancode (SinkSession * s, guint16 type,
    const guint8 * body, gsize size)
{
  GstSpiceKeyEvent keys[8];
  gint n, i;

  n = gst_spice_wire_decode_key_bytes (body, size, keys, G_N_ELEMENTS (keys));
  if (n <= 0)
    return close_inputs (s, "malformed KEY_SCANCODE");
  for (i = 0; i < n; i++)
    emit_key (s, &keys[i]);
  return TRUE;
}

static gboolean
sink_inputs_handle_key_modifiers (SinkSession * s, guint16 type,
    const guint8 * body, gsize size)
{
  guint16 m;

  if (!gst_spice_wire_parse_key_modifiers (body, size, &m))
    return close_inputs (s, "malformed KEY_MODIFIERS");
  s->in.locks = m & SPICE_KEYBOARD_MODIFIER_FLAGS_MASK;
  /* the client sets the guest's locks (spice-gtk does at every connect
   * and, with its keyboard's locks, whenever they differ from ours) */
  GST_LOG ("%s asks for locks 0x%x", s->peer_host, s->in.locks);
  s->hooks->on_navigation (s, gst_spice_event_new_key_locks (TRUE,
          s->in.locks), s->hooks_data);
  return TRUE;
}

/* server thread: where monitor @id of the heads the clients were told
 * (MONITORS_CONFIG) lies on the surface; FALSE for a monitor there is
 * none of. spice-gtk sends a position in a monitor's window as that
 * monitor's id (its display id on display channel 0) and the position
 * inside the monitor. Takes heads_lock, never the server lock (held
 * while draws are queued and files spooled): a pointer does not wait. */
static gboolean
head_offset (SinkSession * s, guint id, gint * x, gint * y)
{
  const GstSpiceHeads *m = &s->shared->monitors;
  gboolean found = FALSE;
  guint i;

  *x = *y = 0;
  /* a mutex is the one thing a session changes in what it shares */
  g_mutex_lock ((GMutex *) & s->shared->heads_lock);
  for (i = 0; i < m->count && !found; i++) {
    if (m->monitors[i].id == id) {
      *x = m->monitors[i].x;
      *y = m->monitors[i].y;
      found = TRUE;
    }
  }
  g_mutex_unlock ((GMutex *) & s->shared->heads_lock);
  /* without heads (or a head 0), display 0 is the whole surface */
  return found || id == 0;
}

static gboolean
sink_inputs_handle_mouse_position (SinkSession * s, guint16 type,
    const guint8 * body, gsize size)
{
  guint32 x, y;
  guint16 b;
  guint8 disp;
  gint ox, oy;

  if (!gst_spice_wire_parse_mouse_position (body, size, &x, &y, &b, &disp))
    return close_inputs (s, "malformed MOUSE_POSITION");
  motion_done (s);
  if (!head_offset (s, disp, &ox, &oy))
    return TRUE;
  s->in.buttons = b;
  move_pointer (s, (gint) MIN (x, G_MAXINT16 * 2) + ox,
      (gint) MIN (y, G_MAXINT16 * 2) + oy);
  return TRUE;
}

static gboolean
sink_inputs_handle_mouse_motion (SinkSession * s, guint16 type,
    const guint8 * body, gsize size)
{
  gint32 dx, dy;
  guint16 b;

  if (!gst_spice_wire_parse_mouse_motion (body, size, &dx, &dy, &b))
    return close_inputs (s, "malformed MOUSE_MOTION");
  motion_done (s);
  s->in.buttons = b;
  dx = CLAMP (dx, -65536, 65536);
  dy = CLAMP (dy, -65536, 65536);
  move_pointer (s, s->in.mouse_x + dx, s->in.mouse_y + dy);
  return TRUE;
}

static gboolean
sink_inputs_handle_mouse_button (SinkSession * s, guint16 type,
    const guint8 * body, gsize size)
{
  guint8 button;
  guint16 b;
  GstEvent *ev;

  if (!gst_spice_wire_parse_mouse_button (body, size, &button, &b))
    return close_inputs (s, "malformed mouse button message");
  ev = type == SPICE_MSGC_INPUTS_MOUSE_PRESS ?
      gst_navigation_event_new_mouse_button_press (button, s->in.mouse_x,
      s->in.mouse_y, nav_state (s)) :
      gst_navigation_event_new_mouse_button_release (button, s->in.mouse_x,
      s->in.mouse_y, nav_state (s));
  s->in.buttons = b;
  emit_pointer (s, ev);
  return TRUE;
}

void
sink_inputs_closed (SinkSession * s)
{
  static const struct
  {
    guint16 mask;
    gint button;
  } buttons[] = {
    {SPICE_MOUSE_BUTTON_MASK_LEFT, 1}, {SPICE_MOUSE_BUTTON_MASK_MIDDLE, 2},
    {SPICE_MOUSE_BUTTON_MASK_RIGHT, 3},
  };
  guint i;

  for (i = 0; i < 0x200; i++) {
    GstSpiceKeyEvent k = { 0, };

    if (!(s->in.held[i / 32] & (1u << (i % 32))))
      continue;
    k.scancode = i;
    k.release = TRUE;
    GST_INFO ("session %08x: key 0x%x released for a client that left",
        s->id, i);
    emit_key (s, &k);
  }
  for (i = 0; i < G_N_ELEMENTS (buttons); i++) {
    if (!(s->in.buttons & buttons[i].mask))
      continue;
    s->in.buttons &= ~buttons[i].mask;
    GST_INFO ("session %08x: button %d released for a client that left",
        s->id, buttons[i].button);
    emit_pointer (s, gst_navigation_event_new_mouse_button_release
        (buttons[i].button, s->in.mouse_x, s->in.mouse_y, nav_state (s)));
  }
}

static const SinkHandler handlers[] = {
  [SPICE_MSGC_INPUTS_KEY_DOWN] = sink_inputs_handle_key,
  [SPICE_MSGC_INPUTS_KEY_UP] = sink_inputs_handle_key,
  [SPICE_MSGC_INPUTS_KEY_MODIFIERS] = sink_inputs_handle_key_modifiers,
  [SPICE_MSGC_INPUTS_KEY_SCANCODE] = sink_inputs_handle_key_scancode,
  [SPICE_MSGC_INPUTS_MOUSE_MOTION] = sink_inputs_handle_mouse_motion,
  [SPICE_MSGC_INPUTS_MOUSE_POSITION] = sink_inputs_handle_mouse_position,
  [SPICE_MSGC_INPUTS_MOUSE_PRESS] = sink_inputs_handle_mouse_button,
  [SPICE_MSGC_INPUTS_MOUSE_RELEASE] = sink_inputs_handle_mouse_button,
};

gboolean
sink_inputs_handle (SinkSession * s, guint16 type, const guint8 * body,
    gsize size)
{
  return sink_handlers_dispatch (GST_CAT_DEFAULT, handlers,
      G_N_ELEMENTS (handlers), s, type, body, size);
}
