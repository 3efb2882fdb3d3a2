/* spicewebrtcsink: a viewer's input messages (its data channel) as
 * GstNavigation events
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Pure: no sockets, no clocks. One text message per data-channel message,
 * fields separated by one space:
 *
 *   k D SCANCODE   a key, D 1 down / 0 up, SCANCODE in spice-gtk's
 *                  convention (XT set 1, 0x100 | code for E0 keys), decimal
 *   m X Y          the pointer at (X, Y) of the picture
 *   b D BUTTON X Y a button (1 left, 2 middle, 3 right) down / up at (X, Y)
 *   w X Y DY       the wheel at (X, Y): DY -1 up, 1 down
 *   s W H          the viewer's window is W x H: the desktop's size asked
 *                  for (the agent's monitors config)
 *   c TEXT         the viewer's clipboard holds TEXT (UTF-8)
 *
 * Positions are clamped into the picture. What a viewer holds down (keys,
 * buttons) is remembered, so that a viewer that goes away releases it.
 */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

/* a message longer than this is refused (the longest valid one is ~30) */
#define WEBRTC_INPUT_MAX_MESSAGE 64
/* scancodes below this are tracked as held (spice-gtk's range) */
#define WEBRTC_INPUT_MAX_SCANCODE 0x200

typedef struct
{
  guint32 held[WEBRTC_INPUT_MAX_SCANCODE / 32];
  guint buttons;                /* bit (1 << button) while down */
  gint x, y;                    /* the last position */
} WebRtcInput;

/* a clipboard text longer than this (bytes) is refused: a data channel
 * message stays below SCTP's usual 64 KiB */
#define WEBRTC_INPUT_MAX_CLIPBOARD (60 * 1024)
/* the desktop sizes a viewer may ask for */
#define WEBRTC_INPUT_MIN_SIZE 200
#define WEBRTC_INPUT_MAX_SIZE 8192

typedef enum
{
  WEBRTC_INPUT_NAVIGATION,      /* k, m, b, w and anything unknown */
  WEBRTC_INPUT_SIZE,            /* s */
  WEBRTC_INPUT_CLIPBOARD,       /* c */
} WebRtcInputKind;

/* what @msg is, by its first field */
WebRtcInputKind webrtc_input_kind (const gchar * msg, gsize len);

/* "s W H": TRUE with the size clamped into WEBRTC_INPUT_MIN_SIZE ..
 * WEBRTC_INPUT_MAX_SIZE, or FALSE with *@reason */
gboolean  webrtc_input_parse_size (const gchar * msg, gsize len, guint * width,
    guint * height, const gchar ** reason);

/* "c TEXT": the text (valid UTF-8, at most WEBRTC_INPUT_MAX_CLIPBOARD
 * bytes, may be empty), or NULL with *@reason ("too-long", "utf8",
 * "syntax") */
GBytes   *webrtc_input_parse_clipboard (const gchar * msg, gsize len,
    const gchar ** reason);

/* @msg of @len bytes (not NUL-terminated) from a viewer of a @width x
 * @height picture: a new navigation event, or NULL with *@reason (a
 * static token: "syntax", "too-long", "scancode", "button") for a message
 * that is refused. A release of what is not held is accepted. */
GstEvent *webrtc_input_parse (WebRtcInput * in, const gchar * msg, gsize len,
    gint width, gint height, const gchar ** reason);

/* the releases of everything @in holds, in order, and @in cleared */
GList    *webrtc_input_release_all (WebRtcInput * in);

G_END_DECLS
