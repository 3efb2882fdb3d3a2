/* spicewebrtcsink: a viewer's input messages as GstNavigation events
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include <gst/video/navigation.h>
#include <gst/spice/gstspice.h>

#include "webrtcinput.h"

#define MAX_FIELDS 6

/* any thread: the decimal integer @s (an optional '-', then digits, at
 * most 7 of them) into *@v */
static gboolean
parse_int (const gchar * s, gint * v)
{
  gboolean neg = FALSE;
  gint n = 0, digits = 0;

  if (*s == '-') {
    neg = TRUE;
    s++;
  }
  for (; *s; s++, digits++) {
    if (*s < '0' || *s > '9' || digits >= 7)
      return FALSE;
    n = n * 10 + (*s - '0');
  }
  if (!digits)
    return FALSE;
  *v = neg ? -n : n;
  return TRUE;
}

/* any thread: splits @msg at single spaces into @fields (NUL-terminated
 * copies in @buf); the count, or -1 for too many or empty fields */
static gint
split (const gchar * msg, gsize len, gchar * buf, gchar ** fields)
{
  gint n = 0;
  gsize i;

  memcpy (buf, msg, len);
  buf[len] = '\0';
  fields[n++] = buf;
  for (i = 0; i < len; i++) {
    if (buf[i] == '\0')
      return -1;
    if (buf[i] != ' ')
      continue;
    buf[i] = '\0';
    if (n == MAX_FIELDS)
      return -1;
    fields[n++] = buf + i + 1;
  }
  for (i = 0; i < (gsize) n; i++)
    if (!fields[i][0])
      return -1;
  return n;
}

/* any thread */
static GstEvent *
key_event (guint scancode, gboolean down)
{
  const gchar *name = gst_spice_keymap_name_from_scancode (scancode);
  GstEvent *ev;

  ev = down ? gst_navigation_event_new_key_press (name ? name : "",
      GST_NAVIGATION_MODIFIER_NONE) :
      gst_navigation_event_new_key_release (name ? name : "",
      GST_NAVIGATION_MODIFIER_NONE);
  gst_structure_set (gst_event_writable_structure (ev), "scancode",
      G_TYPE_UINT, scancode, NULL);
  return ev;
}

/* any thread */
static GstEvent *
button_event (gint button, gboolean down, gint x, gint y)
{
  return down ? gst_navigation_event_new_mouse_button_press (button, x, y,
      GST_NAVIGATION_MODIFIER_NONE) :
      gst_navigation_event_new_mouse_button_release (button, x, y,
      GST_NAVIGATION_MODIFIER_NONE);
}

/* the thread that owns @in */
GstEvent *
webrtc_input_parse (WebRtcInput * in, const gchar * msg, gsize len,
    gint width, gint height, const gchar ** reason)
{
  gchar buf[WEBRTC_INPUT_MAX_MESSAGE + 1];
  gchar *f[MAX_FIELDS];
  gint n, v[MAX_FIELDS] = { 0 }, i;

  *reason = "syntax";
  if (len > WEBRTC_INPUT_MAX_MESSAGE) {
    *reason = "too-long";
    return NULL;
  }
  n = split (msg, len, buf, f);
  if (n < 2 || strlen (f[0]) != 1)
    return NULL;
  for (i = 1; i < n; i++)
    if (!parse_int (f[i], &v[i]))
      return NULL;

  switch (f[0][0]) {
    case 'k':{
      guint bit;

      if (n != 3 || (v[1] != 0 && v[1] != 1))
        return NULL;
      if (v[2] <= 0 || v[2] >= WEBRTC_INPUT_MAX_SCANCODE) {
        *reason = "scancode";
        return NULL;
      }
      bit = 1u << (v[2] % 32);
      if (v[1])
        in->held[v[2] / 32] |= bit;
      else
        in->held[v[2] / 32] &= ~bit;
      return key_event (v[2], v[1]);
    }
    case 'm':
    case 'b':
    case 'w':{
      gint xi = f[0][0] == 'b' ? 3 : 1;

      if (n != (f[0][0] == 'm' ? 3 : f[0][0] == 'b' ? 5 : 4))
        return NULL;
      in->x = CLAMP (v[xi], 0, MAX (width - 1, 0));
      in->y = CLAMP (v[xi + 1], 0, MAX (height - 1, 0));
      if (f[0][0] == 'm')
        return gst_navigation_event_new_mouse_move (in->x, in->y,
            GST_NAVIGATION_MODIFIER_NONE);
      if (f[0][0] == 'w') {
        if (v[3] != -1 && v[3] != 1)
          return NULL;
        /* GstNavigation: positive delta_y is up (spicesrc sends it as
         * SPICE_MOUSE_BUTTON_UP) */
        return gst_navigation_event_new_mouse_scroll (in->x, in->y, 0,
            -v[3], GST_NAVIGATION_MODIFIER_NONE);
      }
      if (v[1] != 0 && v[1] != 1)
        return NULL;
      if (v[2] < 1 || v[2] > 3) {
        *reason = "button";
        return NULL;
      }
      if (v[1])
        in->buttons |= 1u << v[2];
      else
        in->buttons &= ~(1u << v[2]);
      return button_event (v[2], v[1], in->x, in->y);
    }
    default:
      return NULL;
  }
}

/* the thread that owns @in */
GList *
webrtc_input_release_all (WebRtcInput * in)
{
  GList *events = NULL;
  guint i, b;

  for (b = 1; b <= 3; b++)
    if (in->buttons & (1u << b))
      events = g_list_prepend (events, button_event (b, FALSE, in->x, in->y));
  for (i = 1; i < WEBRTC_INPUT_MAX_SCANCODE; i++)
    if (in->held[i / 32] & (1u << (i % 32)))
      events = g_list_prepend (events, key_event (i, FALSE));
  memset (in->held, 0, sizeof (in->held));
  in->buttons = 0;
  return g_list_reverse (events);
}

WebRtcInputKind
webrtc_input_kind (const gchar * msg, gsize len)
{
  if (len >= 2 && msg[1] == ' ' && msg[0] == 'c')
    return WEBRTC_INPUT_CLIPBOARD;
  if (len >= 2 && msg[1] == ' ' && msg[0] == 's')
    return WEBRTC_INPUT_SIZE;
  return WEBRTC_INPUT_NAVIGATION;
}

gboolean
webrtc_input_parse_size (const gchar * msg, gsize len, guint * width,
    guint * height, const gchar ** reason)
{
  gchar buf[WEBRTC_INPUT_MAX_MESSAGE + 1];
  gchar *f[MAX_FIELDS];
  gint w, h;

  *reason = "syntax";
  if (len > WEBRTC_INPUT_MAX_MESSAGE) {
    *reason = "too-long";
    return FALSE;
  }
  if (split (msg, len, buf, f) != 3 || strcmp (f[0], "s") ||
      !parse_int (f[1], &w) || !parse_int (f[2], &h) || w <= 0 || h <= 0)
    return FALSE;
  *width = CLAMP (w, WEBRTC_INPUT_MIN_SIZE, WEBRTC_INPUT_MAX_SIZE);
  *height = CLAMP (h, WEBRTC_INPUT_MIN_SIZE, WEBRTC_INPUT_MAX_SIZE);
  return TRUE;
}

GBytes *
webrtc_input_parse_clipboard (const gchar * msg, gsize len,
    const gchar ** reason)
{
  *reason = "syntax";
  if (len < 2 || msg[0] != 'c' || msg[1] != ' ')
    return NULL;
  if (len - 2 > WEBRTC_INPUT_MAX_CLIPBOARD) {
    *reason = "too-long";
    return NULL;
  }
  if (!g_utf8_validate_len (msg + 2, len - 2, NULL)) {
    *reason = "utf8";
    return NULL;
  }
  return g_bytes_new (msg + 2, len - 2);
}
