/* gst-spice: spicesrc's inputs channel
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * GstNavigation events (from downstream, or sent to the element) become
 * SPICE input on the session's inputs channel: keys as XT scancodes
 * (gst_spice_keymap_scancode_from_name(), or the event's own `scancode`),
 * the pointer (absolute in client mouse mode, relative in server mouse
 * mode: gstspicesrccursor.c follows the mode), buttons 1 to 5 and
 * scrolling; an upstream `spice-key-locks` sets the server's lock keys
 * (spice_inputs_channel_set_key_locks). Events are queued for the context
 * thread, boundedly, in order. The other way, the server's lock LEDs
 * (INPUTS_INIT, KEY_MODIFIERS) become self->key_locks, which the
 * streaming thread pushes as the sticky `spice-key-locks`.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/video/navigation.h>

#include "gstspicesrcinputs.h"
#include "gstspicesrccontext.h"
#include "gstspicesrcdisplay.h"


/* any thread: the SPICE button mask of a held-down button (0: the wheel,
 * which is pressed and released at once) */
static guint
button_mask (gint button)
{
  switch (button) {
    case 1:
      return SPICE_MOUSE_BUTTON_MASK_LEFT;
    case 2:
      return SPICE_MOUSE_BUTTON_MASK_MIDDLE;
    case 3:
      return SPICE_MOUSE_BUTTON_MASK_RIGHT;
    default:
      return 0;
  }
}

/* context thread: the pointer goes to (@fx, @fy), a position in client
 * mouse mode (on the display channel whose head holds it, in that
 * channel's surface: gstspicesrcdisplay.c composes several side by side),
 * the motion since the last one in server mouse mode */
static void
ctx_pointer_to (GstSpiceSrc * self, gdouble fx, gdouble fy)
{
  gint x = (gint) (fx + 0.5), y = (gint) (fy + 0.5);

  if (self->mouse_mode == SPICE_MOUSE_MODE_CLIENT) {
    gint id = self->params->channel_id, hx = MAX (x, 0), hy = MAX (y, 0);

    gst_spice_src_display_head_at (self, x, y, &id, &hx, &hy);
    GST_LOG_OBJECT (self, "position %d,%d: display %d at %d,%d", x, y, id,
        hx, hy);
    spice_inputs_channel_position (self->inputs_ch, hx, hy, id, self->buttons);
  } else if (self->have_pos && (x != self->last_x || y != self->last_y)) {
    spice_inputs_channel_motion (self->inputs_ch, x - self->last_x,
        y - self->last_y, self->buttons);
  }
  self->last_x = x;
  self->last_y = y;
  self->have_pos = TRUE;
}

/* context thread: the inputs channel opened. spice-gtk drops input on a
 * channel that is not ready yet (and we hear of it being ready later than
 * it is), so a position given before this (a client's first move, kept
 * without a channel or handed to one that may have dropped it) is sent
 * again now, once: the guest can see that absolute position twice. */
void
gst_spice_src_inputs_opened (GstSpiceSrc * self)
{
  self->inputs_open = TRUE;
  if (self->inputs_ch && self->pos_pending &&
      self->mouse_mode == SPICE_MOUSE_MODE_CLIENT)
    ctx_pointer_to (self, self->last_x, self->last_y);
  self->pos_pending = FALSE;
}

/* context thread: a key's press (with Shift around it for a shifted
 * key) or release */
static void
ctx_key (GstSpiceSrc * self, GstEvent * event, gboolean press)
{
  const GstStructure *s = gst_event_get_structure (event);
  const gchar *key = NULL;
  guint scancode = 0;
  gint iscancode;
  gboolean shifted = FALSE;
  GstNavigationModifierType state = 0;

  if (!gst_structure_get_uint (s, "scancode", &scancode) &&
      gst_structure_get_int (s, "scancode", &iscancode) && iscancode > 0)
    scancode = iscancode;
  if (!scancode) {
    gst_navigation_event_parse_key_event (event, &key);
    if (key)
      scancode = gst_spice_keymap_scancode_from_name (key, &shifted);
  }
  if (!scancode) {
    GST_WARNING_OBJECT (self, "unknown key '%s'", GST_STR_NULL (key));
    return;
  }
  gst_navigation_event_parse_modifier_state (event, &state);
  GST_DEBUG_OBJECT (self, "key %s 0x%x (%s)%s", press ? "down" : "up",
      scancode, GST_STR_NULL (key), shifted ? " shifted" : "");

  if (press) {
    /* "A", "exclam", "?": Shift + the key, unless Shift is down */
    gboolean synth = shifted && !(state & GST_NAVIGATION_MODIFIER_SHIFT_MASK);

    if (synth)
      spice_inputs_channel_key_press (self->inputs_ch,
          GST_SPICE_SCANCODE_SHIFT_L);
    spice_inputs_channel_key_press (self->inputs_ch, scancode);
    if (synth)
      spice_inputs_channel_key_release (self->inputs_ch,
          GST_SPICE_SCANCODE_SHIFT_L);
  } else {
    spice_inputs_channel_key_release (self->inputs_ch, scancode);
  }
}

/* a navigation event on its way to the context */
typedef struct
{
  GstSpiceSrc *self;
  GstEvent *event;
} InputOp;

/* input events waiting for the context (an application's busy UI thread,
 * a flood from downstream): at most this many; beyond it presses and
 * motion are dropped, releases wait (up to twice as many) so that no key
 * or button stays down */
#define MAX_INPUT_PENDING 512

/* context, right after ctx_input_op() (or wherever the context drops it
 * unrun) */
static void
input_op_free (gpointer data)
{
  InputOp *op = data;

  g_mutex_lock (&op->self->lock);
  op->self->input_pending--;
  g_mutex_unlock (&op->self->lock);
  gst_event_unref (op->event);
  gst_object_unref (op->self);
  g_free (op);
}

/* context thread (the inputs channel's inputs-modifiers): the server's
 * lock LEDs changed, or INPUTS_INIT told them */
static void
on_inputs_modifiers (SpiceInputsChannel * channel, GstSpiceSrc * self)
{
  gint locks = 0;

  if (gst_spice_src_session_stopped (self))
    return;
  g_object_get (channel, "key-modifiers", &locks, NULL);
  GST_DEBUG_OBJECT (self, "lock LEDs 0x%x", locks);
  g_mutex_lock (&self->lock);
  self->key_locks = (guint) locks;
  self->key_locks_pending = TRUE;
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
}

/* context thread */
void
gst_spice_src_inputs_connect (GstSpiceSrc * self, SpiceChannel * channel)
{
  g_signal_connect (channel, "inputs-modifiers",
      G_CALLBACK (on_inputs_modifiers), self);
}

/* context thread: one navigation event becomes SPICE input on the
 * session's inputs channel */
static gboolean
ctx_input_op (gpointer data)
{
  InputOp *op = data;
  GstSpiceSrc *self = op->self;
  GstEvent *event = op->event;
  gdouble x, y, dx, dy;
  gint button;
  guint locks;

  if (!self->inputs_ch || gst_spice_src_session_stopped (self)) {
    GST_DEBUG_OBJECT (self, "no inputs channel, dropping %" GST_PTR_FORMAT,
        event);
    /* but the pointer's position is kept, for when it opens */
    if (!gst_spice_src_session_stopped (self) &&
        gst_navigation_event_get_type (event) ==
        GST_NAVIGATION_EVENT_MOUSE_MOVE &&
        gst_navigation_event_parse_mouse_move_event (event, &x, &y)) {
      self->last_x = (gint) (x + 0.5);
      self->last_y = (gint) (y + 0.5);
      self->have_pos = TRUE;
      self->pos_pending = TRUE;
    }
    return G_SOURCE_REMOVE;
  }
  if (gst_spice_event_parse_key_locks (event, &locks)) {
    spice_inputs_channel_set_key_locks (self->inputs_ch, locks);
    return G_SOURCE_REMOVE;
  }

  switch (gst_navigation_event_get_type (event)) {
    case GST_NAVIGATION_EVENT_KEY_PRESS:
      ctx_key (self, event, TRUE);
      break;
    case GST_NAVIGATION_EVENT_KEY_RELEASE:
      ctx_key (self, event, FALSE);
      break;
    case GST_NAVIGATION_EVENT_MOUSE_MOVE:
      if (gst_navigation_event_parse_mouse_move_event (event, &x, &y))
        ctx_pointer_to (self, x, y);
      if (!self->inputs_open)
        self->pos_pending = TRUE;
      break;
    case GST_NAVIGATION_EVENT_MOUSE_BUTTON_PRESS:
      if (!gst_navigation_event_parse_mouse_button_event (event, &button, &x,
              &y))
        break;
      ctx_pointer_to (self, x, y);
      if (button == 4 || button == 5) {
        spice_inputs_channel_button_press (self->inputs_ch, button,
            self->buttons);
        spice_inputs_channel_button_release (self->inputs_ch, button,
            self->buttons);
      } else {
        self->buttons |= button_mask (button);
        spice_inputs_channel_button_press (self->inputs_ch, button,
            self->buttons);
      }
      break;
    case GST_NAVIGATION_EVENT_MOUSE_BUTTON_RELEASE:
      if (!gst_navigation_event_parse_mouse_button_event (event, &button, &x,
              &y))
        break;
      if (button == 4 || button == 5)
        break;                  /* sent as press + release already */
      ctx_pointer_to (self, x, y);
      self->buttons &= ~button_mask (button);
      spice_inputs_channel_button_release (self->inputs_ch, button,
          self->buttons);
      break;
    case GST_NAVIGATION_EVENT_MOUSE_SCROLL:
      if (!gst_navigation_event_parse_mouse_scroll_event (event, &x, &y, &dx,
              &dy) || dy == 0)
        break;
      ctx_pointer_to (self, x, y);
      button = dy > 0 ? SPICE_MOUSE_BUTTON_UP : SPICE_MOUSE_BUTTON_DOWN;
      spice_inputs_channel_button_press (self->inputs_ch, button,
          self->buttons);
      spice_inputs_channel_button_release (self->inputs_ch, button,
          self->buttons);
      break;
    default:
      break;
  }
  return G_SOURCE_REMOVE;
}

/* any thread (upstream events, send_event()) */
gboolean
gst_spice_src_inputs_handle_navigation (GstSpiceSrc * self, GstEvent * event)
{
  InputOp *op;
  gboolean running, release;

  /* a client's lock keys, in order with its keys */
  if (gst_spice_event_parse_key_locks (event, NULL))
    goto queue;
  switch (gst_navigation_event_get_type (event)) {
    case GST_NAVIGATION_EVENT_KEY_PRESS:
    case GST_NAVIGATION_EVENT_KEY_RELEASE:
    case GST_NAVIGATION_EVENT_MOUSE_MOVE:
    case GST_NAVIGATION_EVENT_MOUSE_BUTTON_PRESS:
    case GST_NAVIGATION_EVENT_MOUSE_BUTTON_RELEASE:
    case GST_NAVIGATION_EVENT_MOUSE_SCROLL:
      gst_spice_src_display_prefault_start (self);
      break;
    default:
      return FALSE;
  }
queue:
  release = gst_navigation_event_get_type (event) ==
      GST_NAVIGATION_EVENT_KEY_RELEASE ||
      gst_navigation_event_get_type (event) ==
      GST_NAVIGATION_EVENT_MOUSE_BUTTON_RELEASE;
  g_mutex_lock (&self->lock);
  running = self->started && !self->stopping;
  if (running && self->input_pending >= (release ? 2 : 1) * MAX_INPUT_PENDING) {
    gint64 now = g_get_monotonic_time ();

    self->st_input_dropped++;
    if (now - self->input_warned_us >= G_TIME_SPAN_SECOND) {
      self->input_warned_us = now;
      GST_WARNING_OBJECT (self, "%u input events wait for the SPICE context: "
          "dropping input (%" G_GUINT64_FORMAT " so far)",
          self->input_pending, self->st_input_dropped);
    }
    running = FALSE;
  } else if (running) {
    self->st_input++;
    self->input_pending++;
  }
  g_mutex_unlock (&self->lock);
  if (!running)
    return FALSE;

  op = g_new0 (InputOp, 1);
  op->self = gst_object_ref (self);
  op->event = gst_event_ref (event);
  gst_spice_src_context_invoke (ctx_input_op, op, input_op_free);
  return TRUE;
}
