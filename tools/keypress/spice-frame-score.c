/* spice-frame-score: the quality of pictures a client showed of the test
 * guest's activity, frame by frame, against the guest's own render
 * (docs/benchmarks.md, "Encoder comparison"): for clients whose frames
 * are captured elsewhere, such as a browser's <video> (bench/codec-rd.py).
 * spice-keypress scores the frames of a SPICE client the same way
 * (frame-quality.h).
 *
 *   spice-frame-score --activity busy [--picture-seed 1] [--size 1280x800]
 *       --region
 *     prints the surface rectangle a capture must hold, as JSON
 *     {"x":..,"y":..,"width":..,"height":..}: the picture compared, the
 *     text strip beside it and the frame stamp above it
 *
 *   spice-frame-score --activity busy [...] FRAME.ppm ...
 *     each FRAME a binary PPM of that rectangle; prints one JSON array,
 *     per file {"file", "n" (the stamp's frame number, -1 unreadable),
 *     "mse", "ssim", "text_mse", "text_ssim"} (null where not scored)
 *
 * The guest runs with --frame-stamp and the same --activity; its
 * picture's seed is --picture-seed (the guest's --seed, 1 by default).
 *
 * Exit status: 0 done, 1 a file that is no PPM of the region's size,
 * 2 usage.
 */
#include <glib.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame-quality.h"
#include "guest-render.h"

/* a binary PPM (P6, maxval 255) of @w x @h as BGRx, or NULL */
static guint8 *
read_ppm_bgrx (const gchar * path, gint w, gint h)
{
  gchar *data = NULL, *p, *end;
  gsize len = 0;
  glong fields[3];
  guint8 *out = NULL;
  gint i;

  if (!g_file_get_contents (path, &data, &len, NULL))
    return NULL;
  if (len < 2 || data[0] != 'P' || data[1] != '6')
    goto done;
  p = data + 2;
  end = data + len;
  for (i = 0; i < 3; i++) {
    while (p < end && (g_ascii_isspace (*p) || *p == '#')) {
      if (*p == '#')
        while (p < end && *p != '\n')
          p++;
      else
        p++;
    }
    if (p >= end || !g_ascii_isdigit (*p))
      goto done;
    fields[i] = strtol (p, &p, 10);
  }
  p++;                          /* the one whitespace byte after maxval */
  if (fields[0] != w || fields[1] != h || fields[2] != 255 ||
      end - p < (gssize) w * h * 3)
    goto done;
  out = g_malloc ((gsize) w * h * 4);
  for (i = 0; i < w * h; i++) {
    const guint8 *s = (const guint8 *) p + (gsize) i * 3;
    out[i * 4] = s[2];
    out[i * 4 + 1] = s[1];
    out[i * 4 + 2] = s[0];
    out[i * 4 + 3] = 0xff;
  }
done:
  g_free (data);
  return out;
}

static void
print_num (const gchar * key, gdouble v, gboolean comma)
{
  if (isnan (v) || isinf (v))
    printf ("\"%s\":null%s", key, comma ? "," : "");
  else
    printf ("\"%s\":%.6f%s", key, v, comma ? "," : "");
}

int
main (int argc, char **argv)
{
  gchar *activity = NULL, *size = NULL;
  gint seed = 1, w = GUEST_DEFAULT_WIDTH, h = GUEST_DEFAULT_HEIGHT, i;
  gboolean region = FALSE;
  GOptionEntry entries[] = {
    {"activity", 0, 0, G_OPTION_ARG_STRING, &activity,
        "the guest's activity (busy, heavy, text, video, film, "
          "desktop-video)", "NAME"},
    {"picture-seed", 0, 0, G_OPTION_ARG_INT, &seed,
        "the guest's --seed (default 1)", "N"},
    {"size", 0, 0, G_OPTION_ARG_STRING, &size,
        "the guest's surface (default 1280x800)", "WxH"},
    {"region", 0, 0, G_OPTION_ARG_NONE, &region,
        "print the rectangle a capture must hold", NULL},
    {NULL}
  };
  GOptionContext *oc = g_option_context_new ("[FRAME.ppm ...]");
  GError *err = NULL;
  GuestActivity kind;
  FrameQualityRef ref;
  gint rc = 0;

  g_option_context_add_main_entries (oc, entries, NULL);
  if (!g_option_context_parse (oc, &argc, &argv, &err)) {
    fprintf (stderr, "spice-frame-score: %s\n", err->message);
    return 2;
  }
  g_option_context_free (oc);
  if (!activity || !guest_activity_from_string (activity, &kind) ||
      kind == GUEST_ACTIVITY_IDLE) {
    fprintf (stderr, "spice-frame-score: --activity wants a moving "
        "activity\n");
    return 2;
  }
  if (size && (sscanf (size, "%dx%d", &w, &h) != 2 || w < GUEST_MIN_SIZE ||
          h < GUEST_MIN_SIZE || w > GUEST_MAX_SIZE || h > GUEST_MAX_SIZE)) {
    fprintf (stderr, "spice-frame-score: --size wants WxH\n");
    return 2;
  }
  if (!frame_quality_ref_init (&ref, kind, (guint32) seed, w, h)) {
    fprintf (stderr, "spice-frame-score: %s has no stamp or picture on "
        "%dx%d\n", activity, w, h);
    return 2;
  }
  if (region) {
    printf ("{\"x\":%d,\"y\":%d,\"width\":%d,\"height\":%d}\n", ref.region.x,
        ref.region.y, ref.region.width, ref.region.height);
    frame_quality_ref_clear (&ref);
    return 0;
  }
  printf ("[");
  for (i = 1; i < argc; i++) {
    guint8 *px = read_ppm_bgrx (argv[i], ref.region.width,
        ref.region.height);
    gint stride = ref.region.width * 4;
    FrameQualityScore sc = { NAN, NAN, NAN, NAN };
    gint64 n = -1;
    gchar *file = g_strescape (argv[i], NULL);

    if (!px) {
      fprintf (stderr, "spice-frame-score: %s is no %dx%d PPM\n", argv[i],
          ref.region.width, ref.region.height);
      rc = 1;
    } else {
      n = guest_read_stamp (px + (gsize) (ref.stamp.y - ref.region.y) *
          stride + (gsize) (ref.stamp.x - ref.region.x) * 4, stride);
      if (n >= 0)
        frame_quality_ref_score (&ref, (guint) n, px, stride, &ref.region, &sc);
    }
    printf ("%s{\"file\":\"%s\",\"n\":%" G_GINT64_FORMAT ",", i > 1 ? "," :
        "", file, n);
    print_num ("mse", sc.mse, TRUE);
    print_num ("ssim", sc.ssim, TRUE);
    print_num ("text_mse", sc.text_mse, TRUE);
    print_num ("text_ssim", sc.text_ssim, FALSE);
    printf ("}");
    g_free (file);
    g_free (px);
  }
  printf ("]\n");
  frame_quality_ref_clear (&ref);
  g_free (activity);
  g_free (size);
  return rc;
}
