/* tests/webrtc: spicewebrtcsink's pure parts: a viewer's input messages
 * (plugins/webrtc/webrtcinput.h) and what is read in a browser's offer and
 * changed in the answer (webrtcsdp.h), on Chromium 156's own offer
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <string.h>
#include <gst/check/gstcheck.h>
#include <gst/video/navigation.h>
#include "webrtcinput.h"
#include "webrtcsdp.h"

static GstEvent *
parse (WebRtcInput * in, const gchar * msg, const gchar ** reason)
{
  const gchar *r = NULL;
  GstEvent *ev = webrtc_input_parse (in, msg, strlen (msg), 1280, 800, &r);

  if (reason)
    *reason = r;
  return ev;
}

static guint
scancode_of (GstEvent * ev)
{
  guint code = 0;

  fail_unless (gst_structure_get_uint (gst_event_get_structure (ev),
          "scancode", &code));
  return code;
}

GST_START_TEST (test_keys)
{
  WebRtcInput in = { 0 };
  const gchar *key = NULL, *reason;
  GstEvent *ev;
  GList *rel;

  ev = parse (&in, "k 1 30", NULL);
  fail_unless (ev != NULL);
  fail_unless_equals_int (gst_navigation_event_get_type (ev),
      GST_NAVIGATION_EVENT_KEY_PRESS);
  fail_unless_equals_int (scancode_of (ev), 0x1e);
  fail_unless (gst_navigation_event_parse_key_event (ev, &key));
  fail_unless_equals_string (key, "a");
  gst_event_unref (ev);

  /* an E0 key (Right Control, 0x11d) */
  ev = parse (&in, "k 1 285", NULL);
  fail_unless_equals_int (scancode_of (ev), 0x11d);
  gst_event_unref (ev);

  /* refused: out of range, a bad state, junk, extra fields, too long */
  fail_unless (parse (&in, "k 1 0", &reason) == NULL);
  fail_unless_equals_string (reason, "scancode");
  fail_unless (parse (&in, "k 1 512", &reason) == NULL);
  fail_unless_equals_string (reason, "scancode");
  fail_unless (parse (&in, "k 2 30", &reason) == NULL);
  fail_unless_equals_string (reason, "syntax");
  fail_unless (parse (&in, "k 1 3x", &reason) == NULL);
  fail_unless (parse (&in, "k 1 30 1", &reason) == NULL);
  fail_unless (parse (&in, "k  1 30", &reason) == NULL);
  fail_unless (parse (&in, "k 1 30 ", &reason) == NULL);
  fail_unless (parse (&in, "key 1 30", &reason) == NULL);
  fail_unless (parse (&in, "", &reason) == NULL);
  fail_unless (parse (&in, "k 1 99999999", &reason) == NULL);
  {
    gchar big[WEBRTC_INPUT_MAX_MESSAGE + 2];

    memset (big, '1', sizeof (big) - 1);
    big[0] = 'k';
    big[1] = ' ';
    big[sizeof (big) - 1] = '\0';
    fail_unless (parse (&in, big, &reason) == NULL);
    fail_unless_equals_string (reason, "too-long");
  }
  /* a NUL inside a message */
  fail_unless (webrtc_input_parse (&in, "k 1\0 30", 7, 1280, 800,
          &reason) == NULL);

  /* what is held is released when the viewer goes: 0x11d, 0x1e, in
   * scancode order, then nothing */
  rel = webrtc_input_release_all (&in);
  fail_unless_equals_int (g_list_length (rel), 2);
  fail_unless_equals_int (gst_navigation_event_get_type (rel->data),
      GST_NAVIGATION_EVENT_KEY_RELEASE);
  fail_unless_equals_int (scancode_of (rel->data), 0x1e);
  fail_unless_equals_int (scancode_of (rel->next->data), 0x11d);
  g_list_free_full (rel, (GDestroyNotify) gst_event_unref);
  rel = webrtc_input_release_all (&in);
  fail_unless (rel == NULL);

  /* a key released by the viewer is not released again */
  gst_event_unref (parse (&in, "k 1 30", NULL));
  gst_event_unref (parse (&in, "k 0 30", NULL));
  fail_unless (webrtc_input_release_all (&in) == NULL);
}

GST_END_TEST;

GST_START_TEST (test_pointer)
{
  WebRtcInput in = { 0 };
  gdouble x, y, dx, dy;
  gint button;
  GstEvent *ev;
  GList *rel;
  const gchar *reason;

  ev = parse (&in, "m 300 200", NULL);
  fail_unless (gst_navigation_event_parse_mouse_move_event (ev, &x, &y));
  fail_unless (x == 300 && y == 200);
  gst_event_unref (ev);

  /* clamped into the 1280x800 picture */
  ev = parse (&in, "m -5 900", NULL);
  fail_unless (gst_navigation_event_parse_mouse_move_event (ev, &x, &y));
  fail_unless (x == 0 && y == 799);
  gst_event_unref (ev);

  ev = parse (&in, "b 1 3 10 20", NULL);
  fail_unless_equals_int (gst_navigation_event_get_type (ev),
      GST_NAVIGATION_EVENT_MOUSE_BUTTON_PRESS);
  fail_unless (gst_navigation_event_parse_mouse_button_event (ev, &button,
          &x, &y));
  fail_unless (button == 3 && x == 10 && y == 20);
  gst_event_unref (ev);
  fail_unless (parse (&in, "b 1 4 10 20", &reason) == NULL);
  fail_unless_equals_string (reason, "button");
  fail_unless (parse (&in, "b 1 1 10", &reason) == NULL);

  /* the wheel: DY 1 (the browser's deltaY > 0, down) is GstNavigation's
   * negative delta_y (spicesrc sends SPICE_MOUSE_BUTTON_DOWN) */
  ev = parse (&in, "w 50 60 1", NULL);
  fail_unless (gst_navigation_event_parse_mouse_scroll_event (ev, &x, &y,
          &dx, &dy));
  fail_unless (x == 50 && y == 60 && dx == 0 && dy == -1);
  gst_event_unref (ev);
  fail_unless (parse (&in, "w 50 60 2", &reason) == NULL);

  /* the held right button is released where the pointer last was */
  rel = webrtc_input_release_all (&in);
  fail_unless_equals_int (g_list_length (rel), 1);
  fail_unless_equals_int (gst_navigation_event_get_type (rel->data),
      GST_NAVIGATION_EVENT_MOUSE_BUTTON_RELEASE);
  fail_unless (gst_navigation_event_parse_mouse_button_event (rel->data,
          &button, &x, &y));
  fail_unless (button == 3 && x == 50 && y == 60);
  g_list_free_full (rel, (GDestroyNotify) gst_event_unref);
}

GST_END_TEST;

/* Chromium 156's offer for a recvonly video transceiver and a data
 * channel (createOffer()), shortened to the formats that matter here,
 * with its own payload types */
#define OFFER_HEAD \
  "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n" \
  "a=group:BUNDLE 0 1\r\n"
#define OFFER_VIDEO \
  "m=video 9 UDP/TLS/RTP/SAVPF 96 98 100 35 102 108 41\r\n" \
  "c=IN IP4 0.0.0.0\r\na=mid:0\r\na=recvonly\r\n" \
  "a=rtpmap:96 VP8/90000\r\n" \
  "a=rtpmap:98 VP9/90000\r\na=fmtp:98 profile-id=0\r\n" \
  "a=rtpmap:100 VP9/90000\r\na=fmtp:100 profile-id=2\r\n" \
  "a=rtpmap:35 VP9/90000\r\na=fmtp:35 profile-id=1\r\n" \
  "a=rtpmap:102 H264/90000\r\na=fmtp:102 level-asymmetry-allowed=1;" \
  "packetization-mode=1;profile-level-id=42001f\r\n" \
  "a=rtpmap:108 H264/90000\r\na=fmtp:108 level-asymmetry-allowed=1;" \
  "packetization-mode=1;profile-level-id=42e01f\r\n" \
  "a=rtpmap:41 H264/90000\r\na=fmtp:41 level-asymmetry-allowed=1;" \
  "packetization-mode=1;profile-level-id=f4001f\r\n"
#define OFFER_DATA \
  "m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\n" \
  "c=IN IP4 0.0.0.0\r\na=mid:1\r\n"

static GstSDPMessage *
sdp_of (const gchar * text)
{
  GstSDPMessage *sdp;

  gst_sdp_message_new (&sdp);
  fail_unless_equals_int (gst_sdp_message_parse_buffer ((const guint8 *) text,
          strlen (text), sdp), GST_SDP_OK);
  return sdp;
}

GST_START_TEST (test_offer)
{
  GstSDPMessage *sdp = sdp_of (OFFER_HEAD OFFER_VIDEO OFFER_DATA);
  gboolean full;

  fail_unless (webrtc_sdp_wants_video (sdp));
  full = FALSE;
  fail_unless_equals_int (webrtc_sdp_video_payload (sdp, "VP8", &full), 96);
  fail_if (full);
  /* VP9: profile 1 (4:4:4) when asked for, else profile 0; never the
   * 10-bit profile 2 */
  full = TRUE;
  fail_unless_equals_int (webrtc_sdp_video_payload (sdp, "VP9", &full), 35);
  fail_unless (full);
  full = FALSE;
  fail_unless_equals_int (webrtc_sdp_video_payload (sdp, "vp9", &full), 98);
  fail_if (full);
  /* H.264: packetization mode 1, constrained baseline */
  full = FALSE;
  fail_unless_equals_int (webrtc_sdp_video_payload (sdp, "H264", &full),
      108);
  full = FALSE;
  fail_unless_equals_int (webrtc_sdp_video_payload (sdp, "AV1", &full), -1);
  gst_sdp_message_free (sdp);

  /* no video that receives */
  sdp = sdp_of (OFFER_HEAD OFFER_DATA);
  fail_if (webrtc_sdp_wants_video (sdp));
  full = FALSE;
  fail_unless_equals_int (webrtc_sdp_video_payload (sdp, "VP8", &full), -1);
  gst_sdp_message_free (sdp);
  sdp = sdp_of (OFFER_HEAD "m=video 9 UDP/TLS/RTP/SAVPF 96\r\n"
      "a=sendonly\r\na=rtpmap:96 VP8/90000\r\n");
  fail_if (webrtc_sdp_wants_video (sdp));
  gst_sdp_message_free (sdp);
}

GST_END_TEST;

GST_START_TEST (test_candidates)
{
  const gchar *loopback[] = { "127.0.0.1", NULL };
  GstSDPMessage *sdp = sdp_of (OFFER_HEAD
      "m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=rtpmap:96 VP8/90000\r\n"
      "a=candidate:1 1 UDP 2015363327 127.0.0.1 40000 typ host\r\n"
      "a=candidate:2 1 UDP 2015363071 10.0.0.5 40001 typ host\r\n"
      "a=candidate:3 1 TCP 1015021823 127.0.0.1 9 typ host tcptype active\r\n"
      "a=candidate:4 1 UDP\r\n"
      "a=end-of-candidates\r\n" OFFER_DATA
      "a=candidate:5 1 UDP 2015363327 192.168.1.9 40002 typ host\r\n");
  const GstSDPMedia *m;
  gchar *text;

  fail_unless_equals_int (webrtc_sdp_keep_candidates (sdp, loopback), 2);
  m = gst_sdp_message_get_media (sdp, 0);
  fail_unless_equals_int (gst_sdp_media_attributes_len (m), 4);
  text = gst_sdp_message_as_text (sdp);
  fail_unless (strstr (text, "127.0.0.1 40000") != NULL);
  fail_unless (strstr (text, "127.0.0.1 9 typ host tcptype") != NULL);
  fail_unless (strstr (text, "10.0.0.5") == NULL);
  fail_unless (strstr (text, "192.168.1.9") == NULL);
  fail_unless (strstr (text, "candidate:4") == NULL);
  fail_unless (strstr (text, "end-of-candidates") != NULL);
  g_free (text);
  /* no list: every candidate stays */
  fail_unless_equals_int (webrtc_sdp_keep_candidates (sdp, NULL), 2);
  gst_sdp_message_free (sdp);
}

GST_END_TEST;

GST_START_TEST (test_size_and_clipboard)
{
  const gchar *reason = NULL;
  guint w = 0, h = 0;
  GBytes *text;
  gchar *big;

  fail_unless_equals_int (webrtc_input_kind ("s 1600 1200", 11),
      WEBRTC_INPUT_SIZE);
  fail_unless_equals_int (webrtc_input_kind ("c x", 3),
      WEBRTC_INPUT_CLIPBOARD);
  fail_unless_equals_int (webrtc_input_kind ("k 1 30", 6),
      WEBRTC_INPUT_NAVIGATION);
  fail_unless_equals_int (webrtc_input_kind ("sx", 2),
      WEBRTC_INPUT_NAVIGATION);

  fail_unless (webrtc_input_parse_size ("s 1600 1200", 11, &w, &h, &reason));
  fail_unless (w == 1600 && h == 1200);
  /* clamped into 200..8192 */
  fail_unless (webrtc_input_parse_size ("s 10 99999", 10, &w, &h, &reason));
  fail_unless (w == WEBRTC_INPUT_MIN_SIZE && h == WEBRTC_INPUT_MAX_SIZE);
  fail_if (webrtc_input_parse_size ("s 0 100", 7, &w, &h, &reason));
  fail_if (webrtc_input_parse_size ("s 100", 5, &w, &h, &reason));
  fail_unless_equals_string (reason, "syntax");

  /* the text as it came, spaces and newlines kept; empty allowed */
  text = webrtc_input_parse_clipboard ("c two words\n", 12, &reason);
  fail_unless (text != NULL);
  fail_unless_equals_int (g_bytes_get_size (text), 10);
  fail_unless (memcmp (g_bytes_get_data (text, NULL), "two words\n", 10) == 0);
  g_bytes_unref (text);
  text = webrtc_input_parse_clipboard ("c ", 2, &reason);
  fail_unless (text != NULL && g_bytes_get_size (text) == 0);
  g_bytes_unref (text);
  fail_unless (webrtc_input_parse_clipboard ("c \xff\xfe", 4, &reason) ==
      NULL);
  fail_unless_equals_string (reason, "utf8");
  big = g_malloc (WEBRTC_INPUT_MAX_CLIPBOARD + 3);
  memset (big, 'x', WEBRTC_INPUT_MAX_CLIPBOARD + 3);
  big[0] = 'c';
  big[1] = ' ';
  fail_unless (webrtc_input_parse_clipboard (big, WEBRTC_INPUT_MAX_CLIPBOARD
          + 3, &reason) == NULL);
  fail_unless_equals_string (reason, "too-long");
  text = webrtc_input_parse_clipboard (big, WEBRTC_INPUT_MAX_CLIPBOARD + 2,
      &reason);
  fail_unless (text != NULL);
  g_bytes_unref (text);
  g_free (big);
}

GST_END_TEST;

GST_START_TEST (test_extmap)
{
  GstSDPMessage *sdp = sdp_of (OFFER_HEAD OFFER_VIDEO
      "a=extmap:4 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-"
      "cc-extensions-01\r\n"
      "a=extmap:5 http://www.webrtc.org/experiments/rtp-hdrext/"
      "playout-delay\r\n"
      "a=extmap:16 http://www.webrtc.org/experiments/rtp-hdrext/"
      "video-content-type\r\n" OFFER_DATA);

  fail_unless_equals_int (webrtc_sdp_video_extmap (sdp,
          "http://www.webrtc.org/experiments/rtp-hdrext/playout-delay"), 5);
  /* a two-byte id: not one the packets can carry in one-byte headers */
  fail_unless_equals_int (webrtc_sdp_video_extmap (sdp,
          "http://www.webrtc.org/experiments/rtp-hdrext/video-content-type"),
      0);
  /* a prefix of a URI is not the URI */
  fail_unless_equals_int (webrtc_sdp_video_extmap (sdp,
          "http://www.webrtc.org/experiments/rtp-hdrext/playout"), 0);
  gst_sdp_message_free (sdp);
}

GST_END_TEST;

static Suite *
webrtc_units_suite (void)
{
  Suite *s = suite_create ("webrtc-units");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_keys);
  tcase_add_test (tc, test_pointer);
  tcase_add_test (tc, test_offer);
  tcase_add_test (tc, test_candidates);
  tcase_add_test (tc, test_size_and_clipboard);
  tcase_add_test (tc, test_extmap);
  return s;
}

GST_CHECK_MAIN (webrtc_units);
