/* spicewebrtcsink: offer and answer SDP
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdlib.h>
#include <string.h>

#include "webrtcsdp.h"

/* any thread: the first @kind ("video", "audio") section of @offer, or
 * NULL */
static const GstSDPMedia *
first_media (const GstSDPMessage * offer, const gchar * kind)
{
  guint i;

  for (i = 0; i < gst_sdp_message_medias_len (offer); i++) {
    const GstSDPMedia *m = gst_sdp_message_get_media (offer, i);

    if (g_strcmp0 (gst_sdp_media_get_media (m), kind) == 0 &&
        gst_sdp_media_get_port (m) != 0)
      return m;
  }
  return NULL;
}

#define first_video(offer) first_media (offer, "video")

/* any thread: the value of @m's a=fmtp for @pt, or NULL */
static const gchar *
fmtp_of (const GstSDPMedia * m, gint pt)
{
  guint i;

  for (i = 0; i < gst_sdp_media_attributes_len (m); i++) {
    const GstSDPAttribute *a = gst_sdp_media_get_attribute (m, i);
    gchar *end = NULL;

    if (g_strcmp0 (a->key, "fmtp") || !a->value)
      continue;
    if (strtol (a->value, &end, 10) == pt && end && *end == ' ')
      return end + 1;
  }
  return NULL;
}

/* any thread: how well an H264 format's parameters suit a browser, 0-2 */
static gint
h264_score (const gchar * fmtp)
{
  gint score = 0;

  if (!fmtp)
    return 0;
  if (strstr (fmtp, "packetization-mode=1"))
    score++;
  if (strstr (fmtp, "profile-level-id=42e0")
      || strstr (fmtp, "profile-level-id=42c0"))
    score++;
  return score;
}

/* any thread: how well a VP9 format suits, -1 for one we cannot send */
static gint
vp9_score (const gchar * fmtp, gboolean want_444)
{
  const gchar *p = fmtp ? strstr (fmtp, "profile-id=") : NULL;
  gint profile = p ? atoi (p + strlen ("profile-id=")) : 0;

  if (profile == 0)
    return 1;
  if (profile == 1)
    return want_444 ? 2 : -1;
  return -1;                    /* 10-bit */
}

gint
webrtc_sdp_video_payload (const GstSDPMessage * offer, const gchar * encoding,
    gboolean * full_chroma)
{
  const GstSDPMedia *m = first_video (offer);
  gint best = -1, best_score = -1;
  gboolean want_444 = *full_chroma, vp9 =
      g_ascii_strcasecmp (encoding, "VP9") == 0;
  guint i;

  *full_chroma = FALSE;

  if (!m)
    return -1;
  for (i = 0; i < gst_sdp_media_attributes_len (m); i++) {
    const GstSDPAttribute *a = gst_sdp_media_get_attribute (m, i);
    gchar *end = NULL, **parts;
    glong pt;
    gint score;

    if (g_strcmp0 (a->key, "rtpmap") || !a->value)
      continue;
    pt = strtol (a->value, &end, 10);
    if (pt < 0 || pt > 127 || !end || *end != ' ')
      continue;
    parts = g_strsplit (end + 1, "/", 3);
    if (parts[0] && parts[1] && g_ascii_strcasecmp (parts[0], encoding) == 0
        && g_strcmp0 (parts[1], "90000") == 0) {
      score = g_ascii_strcasecmp (encoding, "H264") == 0 ?
          h264_score (fmtp_of (m, pt)) :
          vp9 ? vp9_score (fmtp_of (m, pt), want_444) : 0;
      if (score > best_score) {
        best = pt;
        best_score = score;
        *full_chroma = vp9 && score == 2;
      }
    }
    g_strfreev (parts);
  }
  return best;
}

guint8
webrtc_sdp_video_extmap (const GstSDPMessage * offer, const gchar * uri)
{
  const GstSDPMedia *m = first_video (offer);
  guint i;

  for (i = 0; m && i < gst_sdp_media_attributes_len (m); i++) {
    const GstSDPAttribute *a = gst_sdp_media_get_attribute (m, i);
    gchar *end = NULL;
    glong id;

    if (g_strcmp0 (a->key, "extmap") || !a->value)
      continue;
    id = strtol (a->value, &end, 10);
    /* "ID[/direction] URI [attributes]" */
    if (!end || end == a->value)
      continue;
    while (*end && *end != ' ')
      end++;
    while (*end == ' ')
      end++;
    if (id >= 1 && id <= 14 && g_str_has_prefix (end, uri) &&
        (end[strlen (uri)] == '\0' || end[strlen (uri)] == ' '))
      return (guint8) id;
  }
  return 0;
}

/* any thread: @m accepts media (not inactive or sendonly) */
static gboolean
receives (const GstSDPMedia * m)
{
  return m && !gst_sdp_media_get_attribute_val (m, "inactive") &&
      !gst_sdp_media_get_attribute_val (m, "sendonly");
}

gboolean
webrtc_sdp_wants_video (const GstSDPMessage * offer)
{
  return receives (first_video (offer));
}

gint
webrtc_sdp_opus_payload (const GstSDPMessage * offer)
{
  const GstSDPMedia *m = first_media (offer, "audio");
  guint i;

  if (!receives (m))
    return -1;
  for (i = 0; i < gst_sdp_media_attributes_len (m); i++) {
    const GstSDPAttribute *a = gst_sdp_media_get_attribute (m, i);
    gchar *end = NULL;
    glong pt;

    if (g_strcmp0 (a->key, "rtpmap") || !a->value)
      continue;
    pt = strtol (a->value, &end, 10);
    if (pt >= 0 && pt <= 127 && end && *end == ' ' &&
        g_ascii_strncasecmp (end + 1, "opus/48000", 10) == 0)
      return (gint) pt;
  }
  return -1;
}

/* any thread: the connection address of an a=candidate value
 * ("foundation component transport priority address port typ ..."), a
 * copy or NULL */
static gchar *
candidate_address (const gchar * value)
{
  gchar **f = g_strsplit (value, " ", 7);
  gchar *address = NULL;

  if (g_strv_length (f) >= 6)
    address = g_strdup (f[4]);
  g_strfreev (f);
  return address;
}

guint
webrtc_sdp_keep_candidates (GstSDPMessage * answer,
    const gchar * const *addresses)
{
  guint i, kept = 0;

  for (i = 0; i < gst_sdp_message_medias_len (answer); i++) {
    GstSDPMedia *m = (GstSDPMedia *) gst_sdp_message_get_media (answer, i);
    guint j = 0;

    while (j < gst_sdp_media_attributes_len (m)) {
      const GstSDPAttribute *a = gst_sdp_media_get_attribute (m, j);
      gchar *address;
      gboolean keep;

      if (g_strcmp0 (a->key, "candidate") || !a->value) {
        j++;
        continue;
      }
      address = candidate_address (a->value);
      keep = address && (!addresses || !addresses[0] ||
          g_strv_contains (addresses, address));
      g_free (address);
      if (keep) {
        kept++;
        j++;
      } else {
        gst_sdp_media_remove_attribute (m, j);
      }
    }
  }
  return kept;
}
