/* libFuzzer: what spicewebrtcsink reads from a browser: its data-channel
 * messages (plugins/webrtc/webrtcinput.h) and its SDP offer
 * (webrtcsdp.h). The first byte picks the mode: even, the rest as
 * messages of one viewer split at newlines (each kind of message, in
 * order, then the releases of what it held); odd, the rest as an offer
 * (the codecs' payload types, header-extension ids, the candidates kept
 * on loopback). Checks the bounds the element relies on: positions inside
 * the picture, scancodes and buttons in range, a release for each press
 * held, sizes clamped, clipboard texts valid UTF-8 within their bound.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <stdlib.h>

#include <gst/video/navigation.h>
#include "webrtcinput.h"
#include "webrtcsdp.h"

int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

#define WIDTH 1280
#define HEIGHT 800

static void
check_event (GstEvent * ev)
{
  gdouble x = 0, y = 0, dx, dy;
  gint button;
  guint scancode = 0;

  switch (gst_navigation_event_get_type (ev)) {
    case GST_NAVIGATION_EVENT_KEY_PRESS:
    case GST_NAVIGATION_EVENT_KEY_RELEASE:
      if (!gst_structure_get_uint (gst_event_get_structure (ev), "scancode",
              &scancode) || scancode == 0 ||
          scancode >= WEBRTC_INPUT_MAX_SCANCODE)
        abort ();
      return;
    case GST_NAVIGATION_EVENT_MOUSE_MOVE:
      gst_navigation_event_parse_mouse_move_event (ev, &x, &y);
      break;
    case GST_NAVIGATION_EVENT_MOUSE_BUTTON_PRESS:
    case GST_NAVIGATION_EVENT_MOUSE_BUTTON_RELEASE:
      gst_navigation_event_parse_mouse_button_event (ev, &button, &x, &y);
      if (button < 1 || button > 3)
        abort ();
      break;
    case GST_NAVIGATION_EVENT_MOUSE_SCROLL:
      gst_navigation_event_parse_mouse_scroll_event (ev, &x, &y, &dx, &dy);
      if (dy != 1 && dy != -1)
        abort ();
      break;
    default:
      abort ();
  }
  if (x < 0 || y < 0 || x >= WIDTH || y >= HEIGHT)
    abort ();
}

static void
messages (const uint8_t * data, size_t size)
{
  WebRtcInput in = { 0 };
  GList *releases, *l;
  size_t start = 0, i;
  guint presses = 0;

  for (i = 0; i <= size; i++) {
    const gchar *msg = (const gchar *) data + start, *reason = NULL;
    gsize len = i - start;
    guint w, h;
    GBytes *text;
    GstEvent *ev;

    if (i < size && data[i] != '\n')
      continue;
    start = i + 1;
    switch (webrtc_input_kind (msg, len)) {
      case WEBRTC_INPUT_SIZE:
        if (webrtc_input_parse_size (msg, len, &w, &h, &reason) &&
            (w < WEBRTC_INPUT_MIN_SIZE || w > WEBRTC_INPUT_MAX_SIZE ||
                h < WEBRTC_INPUT_MIN_SIZE || h > WEBRTC_INPUT_MAX_SIZE))
          abort ();
        break;
      case WEBRTC_INPUT_CLIPBOARD:
        text = webrtc_input_parse_clipboard (msg, len, &reason);
        if (text) {
          gsize n = g_bytes_get_size (text);

          if (n > WEBRTC_INPUT_MAX_CLIPBOARD ||
              !g_utf8_validate_len (g_bytes_get_data (text, NULL), n, NULL))
            abort ();
          g_bytes_unref (text);
        } else if (!reason) {
          abort ();
        }
        break;
      default:
        ev = webrtc_input_parse (&in, msg, len, WIDTH, HEIGHT, &reason);
        if (ev) {
          check_event (ev);
          gst_event_unref (ev);
          presses++;
        } else if (!reason) {
          abort ();
        }
        break;
    }
  }
  releases = webrtc_input_release_all (&in);
  for (l = releases; l; l = l->next) {
    GstNavigationEventType t = gst_navigation_event_get_type (l->data);

    if (t != GST_NAVIGATION_EVENT_KEY_RELEASE &&
        t != GST_NAVIGATION_EVENT_MOUSE_BUTTON_RELEASE)
      abort ();
    check_event (l->data);
  }
  /* nothing held is released twice, and nothing is held any more */
  if (g_list_length (releases) > presses)
    abort ();
  g_list_free_full (releases, (GDestroyNotify) gst_event_unref);
  if (webrtc_input_release_all (&in) != NULL)
    abort ();
}

static void
offer (const uint8_t * data, size_t size)
{
  static const gchar *loopback[] = { "127.0.0.1", NULL };
  static const gchar *codecs[] = { "VP8", "VP9", "H264", "AV1" };
  GstSDPMessage *sdp;
  guint i;

  /* webrtchttp.c refuses an empty body before GstSDP sees it */
  if (size == 0 || size > WEBRTC_SDP_MAX_OFFER)
    return;
  gst_sdp_message_new (&sdp);
  if (gst_sdp_message_parse_buffer (data, size, sdp) == GST_SDP_OK) {
    for (i = 0; i < G_N_ELEMENTS (codecs); i++) {
      gboolean full = i & 1;
      gint pt = webrtc_sdp_video_payload (sdp, codecs[i], &full);

      if (pt < -1 || pt > 127 || (pt < 0 && full))
        abort ();
    }
    if (webrtc_sdp_video_extmap (sdp, "http://www.webrtc.org/experiments/"
            "rtp-hdrext/playout-delay") > 14)
      abort ();
    webrtc_sdp_wants_video (sdp);
    webrtc_sdp_keep_candidates (sdp, loopback);
    g_free (gst_sdp_message_as_text (sdp));
  }
  gst_sdp_message_free (sdp);
}

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  if (size < 1)
    return 0;
  if (data[0] & 1)
    offer (data + 1, size - 1);
  else
    messages (data + 1, size - 1);
  return 0;
}
