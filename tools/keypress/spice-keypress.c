/* spice-keypress: headless keypress-to-draw latency client for the gst-spice
 * latency rig (docs/benchmarks.md).
 *
 * Connects to a SPICE server with spice-client-glib, presses a key (scancode
 * 0x39 by default, released 50 ms later) and stops the clock at the first
 * display-invalidate after which the key box (96x96 at (16,16) on the test
 * guest) in the client's primary surface shows its new colour.  Presses are
 * separated by random gaps (0.4-1.2 s) so that they do not phase-lock with
 * the guest's frame timer; one press is outstanding at a time.
 *
 * Optional "time to the exact picture": with --guest-control FILE (the test
 * guest's stdin, usually a FIFO the rig holds open) the client, after the
 * last sample, writes "activity idle" and "dump REF" there, waits for the
 * guest's dump of its framebuffer (PPM) and measures how long it takes until
 * the client's surface equals it pixel for pixel.
 *
 * Optional "quality while it moves": with --quality S (and --activity NAME,
 * --picture-seed N: what the test guest shows, started with --frame-stamp)
 * the client, after the last sample, watches the activity for S seconds. At
 * every display-invalidate that touches the guest's frame stamp it reads
 * the frame number there (guest_read_stamp); each new number is a shown
 * frame, and the picture it is judged by is the surface just before the
 * next frame's stamp arrived (a mirror of the measured rectangles, updated
 * rectangle by rectangle at each invalidate). After the phase every shown
 * frame is compared with the guest's own render of that frame
 * (guest_render_activity): PSNR and SSIM over the picture (the activity's
 * damage rectangle without the stamp rows) and over the text strip left of
 * it (frame-quality.h), and its age: shown time minus the time the guest
 * queued it (--frame-times, the guest's log; both use CLOCK_MONOTONIC).
 *
 * Optional sound (--audio): the client also links the playback channel
 * (spice-gtk's, decoding Opus itself) and reports what it received: format,
 * frames, packets, the longest pause between two PLAYBACK_DATA. With
 * --audio-burst (the test guest started with `--audio burst`, which plays
 * silence and a tone burst at the instant it flips the key box) it finds
 * every burst's onset in the samples: the first frame above
 * AUDIO_ONSET_LEVEL after at least AUDIO_QUIET_MS of quiet. The onset's
 * time is the arrival of the PLAYBACK_DATA holding it plus the onset's
 * offset in that packet at the stream's rate: when a client that plays each
 * packet as it arrives would sound it, before any buffering of its own
 * audio backend (the channel's min-latency, reported beside; spice-gtk
 * delays only video streams by it, not draws such as the key box). Per
 * measured press: skew = its onset (audio_pair_onsets) minus the draw that
 * showed the new box colour; positive: the sound comes late.
 *
 * Output: one JSON object (--json FILE, default stdout) with the samples and
 * p50/p95/max (linear-interpolated percentiles), timeouts, the received
 * Mbit/s over the measurement window (all channels' total-read-bytes) and the
 * time to the exact picture.
 *
 * Exit status: 0 measured (timeouts are reported, not fatal), 1 aborted
 * (no connection, no key box, too many timeouts), 2 usage.
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <spice-client.h>

#include "frame-quality.h"
#include "guest-render.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BOX_X 16
#define BOX_Y 16
#define BOX_SIZE 96
#define COLOR_OFF 0xc03030
#define COLOR_ON  0x30c030
/* a burst onset: a frame this loud after AUDIO_QUIET_MS of frames below it
 * (the guest's burst starts at amplitude 8000) */
#define AUDIO_ONSET_LEVEL 3000
#define AUDIO_QUIET_MS 50
#define AUDIO_LAST_WAIT_MS 3000

typedef enum
{
  ST_CONNECTING,
  ST_WARMUP,
  ST_GAP,
  ST_WAITING,
  ST_LATE,                      /* timed out, waiting for the box to settle */
  ST_QUALITY,
  ST_EXACT,
  ST_DONE
} State;

typedef struct
{
  /* options */
  gchar *uri, *host, *password, *json_path, *guest_control, *reference;
  gint port, samples, warmup_presses, tolerance, inset, scancode, release_ms;
  gdouble warmup_s, timeout_s, gap_min, gap_max, connect_timeout_s,
      exact_timeout_s;
  gint64 seed;
  gboolean verbose;
  gdouble quality_s;
  gchar *activity_name, *frame_times;
  gint64 picture_seed;
  gint quality_max_frames;
  gboolean audio, audio_burst;
  gboolean audio_burst_waited;

  /* state */
  GMainLoop *loop;
  SpiceSession *session;
  SpiceChannel *display;
  SpiceInputsChannel *inputs;
  gboolean inputs_open;
  GPtrArray *channels;
  GRand *rand;
  State state;
  guint timer;
  gint presses;                 /* presses done (warm-up included) */
  guint32 expect;               /* colour expected after the current press */
  gint64 t_press, t_start, t_connect;
  gint64 t_first_box;
  GArray *lat_ms;               /* measured presses */
  gint timeouts, late_settled;
  guint64 bytes0, bytes1, display_bytes0, display_bytes1;
  gint64 t_bytes0, t_bytes1;
  gboolean exit_error;
  gchar *error;

  /* exact picture */
  gint64 t_stop;
  guint8 *ref;                  /* RGB */
  gint ref_w, ref_h;
  gint64 exact_ms;              /* -1 not reached */
  gint64 last_diff;
  gint64 t_last_inval;          /* last display-invalidate of any region */
  guint n_exact_inval;          /* display-invalidates after t_stop */
  gboolean ref_checked;

  /* quality phase */
  GuestActivity activity;
  gint q_w, q_h;                /* surface size at the phase's start */
  GuestRect q_stamp, q_pic, q_text, q_union;    /* surface coordinates */
  guint8 *q_mirror;             /* q_union as BGRx, stride q_union.width*4 */
  gint64 q_cur;                 /* frame shown now, -1 none */
  gint64 q_cur_t;               /* when it appeared, -1: before the phase */
  GArray *q_frames;             /* QFrame */
  gint q_unreadable, q_dropped_snapshots;
  gint64 t_q0, t_q1;
  guint64 q_bytes0, q_bytes1, q_dbytes0, q_dbytes1;
  gchar *q_error;

  /* sound */
  SpiceChannel *playback;
  guint a_starts;
  gint a_channels, a_rate;
  guint64 a_frames, a_packets;
  gint64 a_last_us, a_max_gap_us;
  guint64 a_quiet;              /* frames below the onset level, in a row */
  GArray *a_onsets;             /* gint64 µs of each burst onset heard */
  GArray *a_onset_frames;       /* guint64 its frame in the stream received */
  GArray *a_press_us;           /* gint64 t_press of press i (0-based) */
  GArray *a_samples;            /* AudioSample, the measured presses */
} Ctx;

typedef struct
{
  gint press;                   /* 0-based, warm-up included */
  gint64 t_video;               /* the draw that showed the new colour */
} AudioSample;

typedef struct
{
  gint64 n, t_shown;
  guint8 *pixels;               /* copy of the mirror, freed after scoring */
  gdouble ssim, mse, text_ssim, text_mse, age_ms;
} QFrame;

static Ctx ctx;

static void next_step (void);

static void
logv (const gchar * fmt, ...)
G_GNUC_PRINTF (1, 2);
     static void logv (const gchar * fmt, ...)
{
  va_list ap;
  if (!ctx.verbose)
    return;
  va_start (ap, fmt);
  fprintf (stderr, "[%8.3f] ", (g_get_monotonic_time () - ctx.t_start) / 1e6);
  vfprintf (stderr, fmt, ap);
  fputc ('\n', stderr);
  va_end (ap);
}

static void
fail (const gchar * fmt, ...)
G_GNUC_PRINTF (1, 2);
     static void fail (const gchar * fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_free (ctx.error);
  ctx.error = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  fprintf (stderr, "spice-keypress: %s\n", ctx.error);
  ctx.exit_error = TRUE;
  ctx.state = ST_DONE;
  g_main_loop_quit (ctx.loop);
}

static void
set_timer (gdouble seconds, GSourceFunc fn)
{
  if (ctx.timer)
    g_source_remove (ctx.timer);
  ctx.timer = g_timeout_add ((guint) MAX (0, seconds * 1000.0), fn, NULL);
}

static void
clear_timer (void)
{
  if (ctx.timer)
    g_source_remove (ctx.timer);
  ctx.timer = 0;
}

/* ---- pixels ------------------------------------------------------------ */

static gboolean
get_primary (SpiceDisplayPrimary * p)
{
  if (!ctx.display)
    return FALSE;
  if (!spice_display_channel_get_primary (ctx.display, 0, p))
    return FALSE;
  return p->data != NULL && p->width >= BOX_X + BOX_SIZE
      && p->height >= BOX_Y + BOX_SIZE;
}

static gboolean
near (guint32 px, guint32 rgb, gint tol)
{
  gint b = px & 0xff, g = (px >> 8) & 0xff, r = (px >> 16) & 0xff;
  gint eb = rgb & 0xff, eg = (rgb >> 8) & 0xff, er = (rgb >> 16) & 0xff;
  return ABS (r - er) <= tol && ABS (g - eg) <= tol && ABS (b - eb) <= tol;
}

/* The colour the whole box (minus the inset) shows: COLOR_OFF, COLOR_ON or 0
 * if it is neither (mixed, not drawn yet). */
static guint32
box_colour (void)
{
  SpiceDisplayPrimary p;
  guint32 cand = 0;
  gint x, y;

  if (!get_primary (&p))
    return 0;
  for (y = BOX_Y + ctx.inset; y < BOX_Y + BOX_SIZE - ctx.inset; y++) {
    const guint32 *row = (const guint32 *) (p.data + (gsize) y * p.stride);
    for (x = BOX_X + ctx.inset; x < BOX_X + BOX_SIZE - ctx.inset; x++) {
      guint32 px = row[x];
      if (cand == 0) {
        if (near (px, COLOR_OFF, ctx.tolerance))
          cand = COLOR_OFF;
        else if (near (px, COLOR_ON, ctx.tolerance))
          cand = COLOR_ON;
        else
          return 0;
      } else if (!near (px, cand, ctx.tolerance)) {
        return 0;
      }
    }
  }
  return cand;
}

/* Number of pixels that differ from the reference (-1: no comparison). */
static gint64
diff_reference (void)
{
  SpiceDisplayPrimary p;
  gint64 diff = 0;
  gint x, y;

  if (!ctx.ref || !get_primary (&p))
    return -1;
  if (p.width != ctx.ref_w || p.height != ctx.ref_h)
    return (gint64) ctx.ref_w * ctx.ref_h;
  for (y = 0; y < p.height; y++) {
    const guint8 *row = p.data + (gsize) y * p.stride;
    const guint8 *ref = ctx.ref + (gsize) y * p.width * 3;
    for (x = 0; x < p.width; x++) {
      /* primary: B G R x; reference: R G B */
      if (row[4 * x] != ref[3 * x + 2] || row[4 * x + 1] != ref[3 * x + 1]
          || row[4 * x + 2] != ref[3 * x])
        diff++;
    }
  }
  return diff;
}

/* ---- statistics ---------------------------------------------------------- */

static guint64
total_bytes (guint64 * display_bytes)
{
  guint64 sum = 0;
  guint i;
  if (display_bytes)
    *display_bytes = 0;
  for (i = 0; i < ctx.channels->len; i++) {
    gulong b = 0;
    SpiceChannel *ch = g_ptr_array_index (ctx.channels, i);
    g_object_get (ch, "total-read-bytes", &b, NULL);
    sum += b;
    if (display_bytes && SPICE_IS_DISPLAY_CHANNEL (ch))
      *display_bytes += b;
  }
  return sum;
}

static gint
cmp_double (gconstpointer a, gconstpointer b)
{
  gdouble x = *(const gdouble *) a, y = *(const gdouble *) b;
  return x < y ? -1 : x > y ? 1 : 0;
}

static gdouble
percentile (const gdouble * sorted, guint n, gdouble q)
{
  gdouble pos;
  guint lo;
  if (n == 0)
    return NAN;
  pos = q * (n - 1);
  lo = (guint) floor (pos);
  if (lo + 1 >= n)
    return sorted[n - 1];
  return sorted[lo] + (pos - lo) * (sorted[lo + 1] - sorted[lo]);
}

/* a number with 3 decimals (precise: 9 significant digits), null for NaN
 * (and infinity) */
static void
json_num_full (GString * s, const gchar * key, gdouble v, gboolean precise,
    gboolean comma)
{
  if (!isfinite (v))
    g_string_append_printf (s, "\"%s\":null", key);
  else if (precise)
    g_string_append_printf (s, "\"%s\":%.9g", key, v);
  else
    g_string_append_printf (s, "\"%s\":%.3f", key, v);
  if (comma)
    g_string_append_c (s, ',');
}

static void
json_num (GString * s, const gchar * key, gdouble v, gboolean comma)
{
  json_num_full (s, key, v, FALSE, comma);
}

/* SSIM, MSE: a value just below 1 or above 0 must not print as 1 or 0 */
static void
json_exact (GString * s, const gchar * key, gdouble v, gboolean comma)
{
  json_num_full (s, key, v, TRUE, comma);
}

/* ---- quality: scoring and output ----------------------------------------- */

static gint
cmp_double_nan_last (gconstpointer a, gconstpointer b)
{
  gdouble x = *(const gdouble *) a, y = *(const gdouble *) b;
  if (isnan (x) || isnan (y))
    return isnan (x) - isnan (y);
  return x < y ? -1 : x > y ? 1 : 0;
}

/* sorted copy of one field of the frames without NaNs; *n its length */
static gdouble *
q_sorted (gsize offset, guint * n)
{
  gdouble *v = g_new (gdouble, MAX (ctx.q_frames->len, 1));
  guint i, k = 0;

  for (i = 0; i < ctx.q_frames->len; i++) {
    gdouble x = G_STRUCT_MEMBER (gdouble, &g_array_index (ctx.q_frames,
            QFrame, i), offset);
    if (!isnan (x))
      v[k++] = x;
  }
  qsort (v, k, sizeof (gdouble), cmp_double_nan_last);
  *n = k;
  return v;
}

static gdouble
q_mean (gsize offset)
{
  guint n, i;
  gdouble *v = q_sorted (offset, &n), sum = 0;
  for (i = 0; i < n; i++)
    sum += v[i];
  g_free (v);
  return n ? sum / n : NAN;
}

static gdouble
q_pct (gsize offset, gdouble q)
{
  guint n;
  gdouble *v = q_sorted (offset, &n);
  gdouble r = percentile (v, n, q);
  g_free (v);
  return r;
}

static guint
q_identical (gsize offset)
{
  guint i, k = 0;
  for (i = 0; i < ctx.q_frames->len; i++)
    if (G_STRUCT_MEMBER (gdouble, &g_array_index (ctx.q_frames, QFrame, i),
            offset) == 0.0)
      k++;
  return k;
}

/* a PSNR in JSON: null when infinite (identical) or unknown */
static void
json_psnr (GString * s, const gchar * key, gdouble mse, gboolean comma)
{
  json_num (s, key, mse > 0 ? frame_quality_psnr (mse) : NAN, comma);
}

static void
quality_json (GString * s)
{
  GArray *f = ctx.q_frames;
  gdouble dur = ctx.t_q1 > ctx.t_q0 ? (ctx.t_q1 - ctx.t_q0) / 1e6 : NAN;
  guint i, n = f ? f->len : 0;
  gint64 first = n ? g_array_index (f, QFrame, 0).n : -1;
  gint64 last = n ? g_array_index (f, QFrame, n - 1).n : -1;

  g_string_append (s, "\"quality\":{");
  if (ctx.q_error) {
    gchar *e = g_strescape (ctx.q_error, NULL);
    g_string_append_printf (s, "\"error\":\"%s\",", e);
    g_free (e);
  }
  g_string_append_printf (s, "\"activity\":\"%s\",\"seconds\":%.3f,"
      "\"frames\":%u,\"unreadable_stamps\":%d,\"snapshots_dropped\":%d,",
      guest_activity_to_string (ctx.activity), isnan (dur) ? 0 : dur, n,
      ctx.q_unreadable, ctx.q_dropped_snapshots);
  g_string_append_printf (s, "\"picture_rect\":[%d,%d,%d,%d],"
      "\"text_rect\":[%d,%d,%d,%d],", ctx.q_pic.x, ctx.q_pic.y,
      ctx.q_pic.width, ctx.q_pic.height, ctx.q_text.x, ctx.q_text.y,
      ctx.q_text.width, ctx.q_text.height);
  /* source frames in the shown range that the client never showed */
  g_string_append_printf (s, "\"frames_not_shown\":%" G_GINT64_FORMAT ",",
      n ? MAX (0, last - first + 1 - (gint64) n) : 0);
  json_num (s, "shown_fps", n && !isnan (dur) ? n / dur : NAN, TRUE);
  json_num (s, "mbit_s", isnan (dur) ? NAN :
      (ctx.q_bytes1 - ctx.q_bytes0) * 8.0 / dur / 1e6, TRUE);
  json_num (s, "display_mbit_s", isnan (dur) ? NAN :
      (ctx.q_dbytes1 - ctx.q_dbytes0) * 8.0 / dur / 1e6, TRUE);
  if (n) {
    json_exact (s, "ssim_mean", q_mean (G_STRUCT_OFFSET (QFrame, ssim)), TRUE);
    json_exact (s, "ssim_p5", q_pct (G_STRUCT_OFFSET (QFrame, ssim), 0.05),
        TRUE);
    json_exact (s, "ssim_min", q_pct (G_STRUCT_OFFSET (QFrame, ssim), 0), TRUE);
    /* PSNR of the mean MSE, and of the 95th-percentile MSE (the worse 5 %) */
    json_psnr (s, "psnr_db_mean", q_mean (G_STRUCT_OFFSET (QFrame, mse)), TRUE);
    json_psnr (s, "psnr_db_p5", q_pct (G_STRUCT_OFFSET (QFrame, mse), 0.95),
        TRUE);
    g_string_append_printf (s, "\"identical_frames\":%u,",
        q_identical (G_STRUCT_OFFSET (QFrame, mse)));
    json_exact (s, "text_ssim_mean", q_mean (G_STRUCT_OFFSET (QFrame,
                text_ssim)), TRUE);
    json_exact (s, "text_ssim_p5", q_pct (G_STRUCT_OFFSET (QFrame, text_ssim),
            0.05), TRUE);
    json_psnr (s, "text_psnr_db_mean", q_mean (G_STRUCT_OFFSET (QFrame,
                text_mse)), TRUE);
    g_string_append_printf (s, "\"text_identical_frames\":%u,",
        q_identical (G_STRUCT_OFFSET (QFrame, text_mse)));
    json_num (s, "age_ms_p50", q_pct (G_STRUCT_OFFSET (QFrame, age_ms), 0.5),
        TRUE);
    json_num (s, "age_ms_p95", q_pct (G_STRUCT_OFFSET (QFrame, age_ms), 0.95),
        TRUE);
  }
  g_string_append (s, "\"per_frame\":[");
  for (i = 0; i < n; i++) {
    QFrame *q = &g_array_index (f, QFrame, i);
    g_string_append_printf (s, "%s{\"n\":%" G_GINT64_FORMAT ",", i ? "," : "",
        q->n);
    json_num (s, "shown_ms", (q->t_shown - ctx.t_q0) / 1e3, TRUE);
    json_num (s, "age_ms", q->age_ms, TRUE);
    json_exact (s, "ssim", q->ssim, TRUE);
    json_exact (s, "mse", q->mse, TRUE);
    json_psnr (s, "psnr_db", q->mse, TRUE);
    json_exact (s, "text_ssim", q->text_ssim, TRUE);
    json_psnr (s, "text_psnr_db", q->text_mse, FALSE);
    g_string_append_c (s, '}');
  }
  g_string_append (s, "]},");
}

/* ---- sound --------------------------------------------------------------- */

/* The onset of every press (warm-up included; -1: none), in order: press
 * i takes the first onset not taken yet that comes after it. Bursts and
 * onsets keep their order, so this holds when the sound comes later than
 * the next press too; a burst lost on the way would shift the pairs after
 * it (the rig checks each against the guest's flip time). */
static gint *
audio_pair_onsets (void)
{
  gint *onset = g_new (gint, MAX (ctx.a_press_us->len, 1));
  guint i, j = 0;

  for (i = 0; i < ctx.a_press_us->len; i++) {
    gint64 t_press = g_array_index (ctx.a_press_us, gint64, i);

    while (j < ctx.a_onsets->len &&
        g_array_index (ctx.a_onsets, gint64, j) < t_press)
      j++;
    onset[i] = j < ctx.a_onsets->len ? (gint) j++ : -1;
  }
  return onset;
}

static void
audio_json (GString * s)
{
  GString *press = g_string_new (NULL), *video = g_string_new (NULL);
  GString *onset = g_string_new (NULL), *skew = g_string_new (NULL);
  GArray *sk = g_array_new (FALSE, FALSE, sizeof (gdouble));
  guint i, n;
  guint min_latency = 0;
  gulong wire = 0;
  gint *paired = audio_pair_onsets ();
  GString *oframe = g_string_new (NULL);

  if (ctx.playback && g_object_class_find_property (G_OBJECT_GET_CLASS
          (ctx.playback), "min-latency"))
    g_object_get (ctx.playback, "min-latency", &min_latency, NULL);
  if (ctx.playback)
    g_object_get (ctx.playback, "total-read-bytes", &wire, NULL);
  for (i = 0; i < (ctx.audio_burst ? ctx.a_samples->len : 0); i++) {
    const AudioSample *as = &g_array_index (ctx.a_samples, AudioSample, i);
    gint k = paired[as->press];
    gint64 t = k < 0 ? -1 : g_array_index (ctx.a_onsets, gint64, k);
    const gchar *sep = i ? "," : "";

    g_string_append_printf (press, "%s%d", sep, as->press + 1);
    g_string_append_printf (video, "%s%" G_GINT64_FORMAT, sep, as->t_video);
    g_string_append_printf (onset, "%s%" G_GINT64_FORMAT, sep, t);
    g_string_append_printf (oframe, "%s%" G_GINT64_FORMAT, sep, k < 0 ? -1 :
        (gint64) g_array_index (ctx.a_onset_frames, guint64, k));
    if (t >= 0) {
      gdouble ms = (t - as->t_video) / 1e3;
      g_array_append_val (sk, ms);
      g_string_append_printf (skew, "%s%.3f", skew->len ? "," : "", ms);
    }
  }
  /* spice-gtk signals S16 whatever the channel's mode: tell Opus from raw
   * by the bytes on the wire (raw: 4 a stereo frame, Opus at 64 kbit/s
   * about 0.17) */
  g_string_append_printf (s, "\"audio\":{\"starts\":%u,\"format\":\"%s\","
      "\"channels\":%d,\"rate\":%d,\"frames\":%" G_GUINT64_FORMAT ","
      "\"packets\":%" G_GUINT64_FORMAT ",\"wire_bytes\":%lu,"
      "\"min_latency_ms\":%u,", ctx.a_starts, !ctx.a_frames ? "none" :
      wire < ctx.a_frames * 2 ? "opus" : "raw", ctx.a_channels, ctx.a_rate,
      ctx.a_frames, ctx.a_packets, wire, min_latency);
  json_num (s, "max_gap_ms", ctx.a_max_gap_us / 1e3, ctx.audio_burst);
  if (ctx.audio_burst) {
    n = sk->len;
    if (n > 1)
      qsort (sk->data, n, sizeof (gdouble), cmp_double);
    g_string_append_printf (s, "\"onsets\":%u,\"press\":[%s],"
        "\"video_us\":[%s],\"onset_us\":[%s],\"onset_frame\":[%s],"
        "\"skew_ms\":[%s],\"matched\":%u,", ctx.a_onsets->len, press->str,
        video->str, onset->str, oframe->str, skew->str, n);
    json_num (s, "skew_p5_ms", percentile ((gdouble *) sk->data, n, 0.05),
        TRUE);
    json_num (s, "skew_p50_ms", percentile ((gdouble *) sk->data, n, 0.50),
        TRUE);
    json_num (s, "skew_p95_ms", percentile ((gdouble *) sk->data, n, 0.95),
        FALSE);
  }
  g_string_append (s, "},");
  g_string_free (press, TRUE);
  g_string_free (video, TRUE);
  g_string_free (onset, TRUE);
  g_string_free (skew, TRUE);
  g_string_free (oframe, TRUE);
  g_array_free (sk, TRUE);
  g_free (paired);
}

/* Main thread (spice-gtk's signals) */
static void
on_playback_start (SpicePlaybackChannel * ch, gint format, gint channels,
    gint rate, gpointer d)
{
  ctx.a_starts++;
  ctx.a_channels = channels;
  ctx.a_rate = rate;
  ctx.a_last_us = 0;
  logv ("playback start: %d channels, %d Hz", channels, rate);
}

/* Main thread. S16 interleaved (spice-gtk decoded Opus already). */
static void
on_playback_data (SpicePlaybackChannel * ch, gpointer data, gint size,
    gpointer d)
{
  gint64 now = g_get_monotonic_time ();
  const gint16 *v = data;
  guint64 quiet;
  gint frames, i;

  if (ctx.a_channels <= 0 || ctx.a_rate <= 0)
    return;
  quiet = (guint64) ctx.a_rate * AUDIO_QUIET_MS / 1000;
  frames = size / 2 / ctx.a_channels;
  if (ctx.a_last_us)
    ctx.a_max_gap_us = MAX (ctx.a_max_gap_us, now - ctx.a_last_us);
  ctx.a_last_us = now;
  ctx.a_frames += frames;
  ctx.a_packets++;
  if (!ctx.audio_burst)
    return;
  for (i = 0; i < frames; i++) {
    if (ABS (v[i * ctx.a_channels]) < AUDIO_ONSET_LEVEL) {
      ctx.a_quiet++;
      continue;
    }
    if (ctx.a_quiet >= quiet) {
      gint64 t = now + (gint64) i * G_USEC_PER_SEC / ctx.a_rate;
      guint64 f = ctx.a_frames - frames + i;

      g_array_append_val (ctx.a_onsets, t);
      g_array_append_val (ctx.a_onset_frames, f);
      logv ("burst onset (+%.2f ms in its packet)", i * 1e3 / ctx.a_rate);
    }
    ctx.a_quiet = 0;
  }
}

static void
write_json (void)
{
  GString *s = g_string_new ("{");
  guint n = ctx.lat_ms->len, i;
  gdouble *sorted = g_memdup2 (ctx.lat_ms->data, sizeof (gdouble) * MAX (n, 1));
  gdouble window_s = ctx.t_bytes1 > ctx.t_bytes0 ?
      (ctx.t_bytes1 - ctx.t_bytes0) / 1e6 : NAN;
  gdouble mean = 0;

  /* -n 0 (the quality phase alone): no samples, and lat_ms->data (so
   * sorted) may be NULL, which qsort must not be given */
  if (n > 1)
    qsort (sorted, n, sizeof (gdouble), cmp_double);
  for (i = 0; i < n; i++)
    mean += sorted[i];
  mean = n ? mean / n : NAN;
  g_string_append_printf (s, "\"uri\":\"%s\",\"ok\":%s,", ctx.uri,
      ctx.exit_error ? "false" : "true");
  if (ctx.error) {
    gchar *e = g_strescape (ctx.error, NULL);
    g_string_append_printf (s, "\"error\":\"%s\",", e);
    g_free (e);
  }
  g_string_append_printf (s, "\"samples_requested\":%d,\"warmup_presses\":%d,"
      "\"n\":%u,\"timeouts\":%d,\"late_settled\":%d,", ctx.samples,
      ctx.warmup_presses, n, ctx.timeouts, ctx.late_settled);
  g_string_append (s, "\"samples_ms\":[");
  for (i = 0; i < n; i++)
    g_string_append_printf (s, "%s%.3f", i ? "," : "",
        g_array_index (ctx.lat_ms, gdouble, i));
  g_string_append (s, "],");
  json_num (s, "p50_ms", percentile (sorted, n, 0.50), TRUE);
  json_num (s, "p95_ms", percentile (sorted, n, 0.95), TRUE);
  json_num (s, "max_ms", n ? sorted[n - 1] : NAN, TRUE);
  json_num (s, "min_ms", n ? sorted[0] : NAN, TRUE);
  json_num (s, "mean_ms", mean, TRUE);
  json_num (s, "window_s", window_s, TRUE);
  json_num (s, "mbit_s", isnan (window_s) ? NAN :
      (ctx.bytes1 - ctx.bytes0) * 8.0 / window_s / 1e6, TRUE);
  json_num (s, "display_mbit_s", isnan (window_s) ? NAN :
      (ctx.display_bytes1 - ctx.display_bytes0) * 8.0 / window_s / 1e6, TRUE);
  g_string_append_printf (s, "\"bytes\":%" G_GUINT64_FORMAT ",",
      ctx.bytes1 - ctx.bytes0);
  json_num (s, "connect_ms", ctx.t_first_box ?
      (ctx.t_first_box - ctx.t_connect) / 1e3 : NAN, TRUE);
  if (ctx.guest_control) {
    json_num (s, "time_to_exact_ms", ctx.exact_ms >= 0 ?
        ctx.exact_ms / 1e3 : NAN, TRUE);
    g_string_append_printf (s, "\"exact_diff_pixels\":%" G_GINT64_FORMAT ",",
        ctx.exact_ms >= 0 ? 0 : ctx.last_diff);
  }
  if (ctx.quality_s > 0)
    quality_json (s);
  if (ctx.audio)
    audio_json (s);
  g_string_append_printf (s, "\"scancode\":%d,\"seed\":%" G_GINT64_FORMAT "}\n",
      ctx.scancode, ctx.seed);
  if (ctx.json_path && strcmp (ctx.json_path, "-") != 0 &&
      g_file_test (ctx.json_path, G_FILE_TEST_EXISTS) &&
      !g_file_test (ctx.json_path, G_FILE_TEST_IS_REGULAR)) {
    /* a device or FIFO (e.g. /dev/null): written in place, never replaced
     * by a regular file as g_file_set_contents' rename would do */
    FILE *f = fopen (ctx.json_path, "w");

    if (!f || fputs (s->str, f) < 0)
      fprintf (stderr, "spice-keypress: %s: %s\n", ctx.json_path,
          g_strerror (errno));
    if (f)
      fclose (f);
  } else if (ctx.json_path && strcmp (ctx.json_path, "-") != 0) {
    GError *err = NULL;
    if (!g_file_set_contents (ctx.json_path, s->str, -1, &err)) {
      fprintf (stderr, "spice-keypress: %s\n", err->message);
      g_error_free (err);
    }
  } else {
    fputs (s->str, stdout);
    fflush (stdout);
  }
  g_free (sorted);
  g_string_free (s, TRUE);
}

/* ---- exact picture ------------------------------------------------------- */

static gboolean
load_ppm (const gchar * path)
{
  gchar *data = NULL;
  gsize len = 0;
  gint w, h, maxv, off = 0;
  if (!g_file_get_contents (path, &data, &len, NULL))
    return FALSE;
  if (sscanf (data, "P6 %d %d %d%n", &w, &h, &maxv, &off) != 3 || maxv != 255
      || w <= 0 || h <= 0 || (gsize) off + 1 + (gsize) w * h * 3 > len) {
    g_free (data);
    return FALSE;
  }
  ctx.ref = g_malloc ((gsize) w * h * 3);
  memcpy (ctx.ref, data + off + 1, (gsize) w * h * 3);
  ctx.ref_w = w;
  ctx.ref_h = h;
  g_free (data);
  return TRUE;
}

static void
finish (void)
{
  clear_timer ();
  ctx.state = ST_DONE;
  g_main_loop_quit (ctx.loop);
}

static void
check_exact (void)
{
  gint64 d = diff_reference ();
  if (d < 0)
    return;
  ctx.last_diff = d;
  if (d == 0) {
    /* the surface only changes at invalidates: it became exact at the last
     * one (or was already exact when the activity stopped) */
    ctx.exact_ms = MAX (0, ctx.t_last_inval - ctx.t_stop);
    logv ("exact picture after %.1f ms", ctx.exact_ms / 1e3);
    finish ();
  }
}

static gboolean
exact_poll (gpointer data)
{
  if (!ctx.ref && !load_ppm (ctx.reference)) {
    /* the guest renames its dump into place when complete */
  } else {
    check_exact ();
    if (ctx.state != ST_EXACT)
      return G_SOURCE_REMOVE;
  }
  if (g_get_monotonic_time () - ctx.t_stop > ctx.exact_timeout_s * 1e6) {
    SpiceDisplayPrimary p;
    gboolean have = get_primary (&p);
    logv ("no exact picture after %.1f s (%" G_GINT64_FORMAT " pixels differ; "
        "surface %dx%d, reference %dx%d)", ctx.exact_timeout_s, ctx.last_diff,
        have ? p.width : 0, have ? p.height : 0, ctx.ref_w, ctx.ref_h);
    ctx.timer = 0;
    finish ();
    return G_SOURCE_REMOVE;
  }
  return G_SOURCE_CONTINUE;
}

static void
start_exact (void)
{
  gchar *cmd;
  int fd;

  ctx.state = ST_EXACT;
  g_unlink (ctx.reference);
  fd = open (ctx.guest_control, O_WRONLY | O_NONBLOCK | O_APPEND);
  if (fd < 0) {
    fprintf (stderr, "spice-keypress: %s: %s (no exact-picture phase)\n",
        ctx.guest_control, g_strerror (errno));
    finish ();
    return;
  }
  cmd = g_strdup_printf ("activity idle\ndump %s\n", ctx.reference);
  ctx.t_stop = g_get_monotonic_time ();
  if (write (fd, cmd, strlen (cmd)) != (ssize_t) strlen (cmd))
    fprintf (stderr, "spice-keypress: short write to %s\n", ctx.guest_control);
  close (fd);
  g_free (cmd);
  logv ("asked the guest to stop its activity");
  clear_timer ();
  ctx.timer = g_timeout_add (20, exact_poll, NULL);
}

/* ---- quality phase ------------------------------------------------------- */

/* surface rectangle r (inside q_union) into the mirror. Main thread. */
static void
mirror_copy (const SpiceDisplayPrimary * p, const GuestRect * r)
{
  gint y, ms = ctx.q_union.width * 4;
  for (y = r->y; y < r->y + r->height; y++)
    memcpy (ctx.q_mirror + (gsize) (y - ctx.q_union.y) * ms +
        (gsize) (r->x - ctx.q_union.x) * 4,
        p->data + (gsize) y * p->stride + (gsize) r->x * 4,
        (gsize) r->width * 4);
}

/* the frame shown until now is complete: keep the mirror's picture of it */
static void
quality_keep_current (void)
{
  QFrame q = { 0 };
  gsize size = (gsize) ctx.q_union.width * ctx.q_union.height * 4;

  if (ctx.q_cur < 0 || ctx.q_cur_t < 0)
    return;
  if ((gint) ctx.q_frames->len >= ctx.quality_max_frames) {
    ctx.q_dropped_snapshots++;
    return;
  }
  q.n = ctx.q_cur;
  q.t_shown = ctx.q_cur_t;
  q.pixels = g_memdup2 (ctx.q_mirror, size);
  g_array_append_val (ctx.q_frames, q);
}

/* A display-invalidate during the phase. Main thread. */
static void
quality_invalidate (gint x, gint y, gint w, gint h)
{
  SpiceDisplayPrimary p;
  GuestRect r, inv = { x, y, w, h };

  if (!get_primary (&p) || p.width != ctx.q_w || p.height != ctx.q_h)
    return;
  if (guest_rect_intersect (&ctx.q_stamp, &inv, &r)) {
    gint64 n = guest_read_stamp (p.data + (gsize) ctx.q_stamp.y * p.stride +
        (gsize) ctx.q_stamp.x * 4, p.stride);
    if (n < 0) {
      ctx.q_unreadable++;
    } else if (n != ctx.q_cur) {
      /* the mirror still holds the picture as it was before this update */
      quality_keep_current ();
      ctx.q_cur = n;
      ctx.q_cur_t = g_get_monotonic_time ();
    }
  }
  if (guest_rect_intersect (&ctx.q_union, &inv, &r))
    mirror_copy (&p, &r);
}

/* "NAME N US" lines of the guest's --frame-times log: N -> US of the last
 * line of this activity */
static GHashTable *
load_frame_times (void)
{
  GHashTable *t = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free,
      g_free);
  gchar *data = NULL, **lines, **l;
  const gchar *name = guest_activity_to_string (ctx.activity);

  if (!ctx.frame_times || !g_file_get_contents (ctx.frame_times, &data, NULL,
          NULL))
    return t;
  lines = g_strsplit (data, "\n", -1);
  for (l = lines; *l; l++) {
    gchar **f = g_strsplit (*l, " ", 3);
    if (g_strv_length (f) == 3 && g_str_equal (f[0], name)) {
      gint64 *k = g_new (gint64, 1), *v = g_new (gint64, 1);
      *k = g_ascii_strtoll (f[1], NULL, 10) % GUEST_STAMP_MODULO;
      *v = g_ascii_strtoll (f[2], NULL, 10);
      g_hash_table_replace (t, k, v);
    }
    g_strfreev (f);
  }
  g_strfreev (lines);
  g_free (data);
  return t;
}

/* Every kept frame against the guest's render of it. After the phase, so
 * that scoring takes no CPU while the client watches. */
static void
quality_score (void)
{
  gint us = ctx.q_union.width * 4;
  GHashTable *times = load_frame_times ();
  FrameQualityRef ref;
  guint i;

  frame_quality_ref_init (&ref, ctx.activity, (guint32) ctx.picture_seed,
      ctx.q_w, ctx.q_h);
  for (i = 0; i < ctx.q_frames->len; i++) {
    QFrame *q = &g_array_index (ctx.q_frames, QFrame, i);
    FrameQualityScore sc;
    gint64 *t;

    frame_quality_ref_score (&ref, (guint) q->n, q->pixels, us, &ctx.q_union,
        &sc);
    q->mse = sc.mse;
    q->ssim = sc.ssim;
    q->text_mse = sc.text_mse;
    q->text_ssim = sc.text_ssim;
    t = g_hash_table_lookup (times, &q->n);
    q->age_ms = t ? (q->t_shown - *t) / 1e3 : NAN;
    g_clear_pointer (&q->pixels, g_free);
  }
  g_hash_table_unref (times);
  frame_quality_ref_clear (&ref);
}

static void after_quality (void);

static gboolean
quality_done (gpointer data)
{
  ctx.timer = 0;
  ctx.t_q1 = g_get_monotonic_time ();
  ctx.q_bytes1 = total_bytes (&ctx.q_dbytes1);
  quality_keep_current ();
  logv ("quality phase: %u frames shown, %d unreadable stamps; scoring",
      ctx.q_frames->len, ctx.q_unreadable);
  if (ctx.q_frames->len == 0 && !ctx.q_error)
    ctx.q_error = g_strdup ("no frame stamp was read: is the guest running "
        "--frame-stamp with this activity?");
  quality_score ();
  g_clear_pointer (&ctx.q_mirror, g_free);
  after_quality ();
  return G_SOURCE_REMOVE;
}

static void
start_quality (void)
{
  SpiceDisplayPrimary p;

  ctx.state = ST_QUALITY;
  ctx.q_frames = g_array_new (FALSE, TRUE, sizeof (QFrame));
  ctx.q_cur = -1;
  ctx.q_cur_t = -1;
  ctx.t_q0 = g_get_monotonic_time ();
  ctx.q_bytes0 = total_bytes (&ctx.q_dbytes0);
  clear_timer ();
  if (!get_primary (&p) ||
      !guest_render_stamp_rect (ctx.activity, p.width, p.height, &ctx.q_stamp)
      || !guest_render_quality_rects (ctx.activity, p.width, p.height,
          &ctx.q_pic, &ctx.q_text)) {
    ctx.q_error = g_strdup_printf ("no stamp or picture rectangle for %s on "
        "this surface", guest_activity_to_string (ctx.activity));
    ctx.t_q1 = ctx.t_q0;
    after_quality ();
    return;
  }
  ctx.q_w = p.width;
  ctx.q_h = p.height;
  ctx.q_union = ctx.q_pic;
  if (ctx.q_text.width > 0) {
    ctx.q_union.x = ctx.q_text.x;
    ctx.q_union.width = ctx.q_pic.x + ctx.q_pic.width - ctx.q_text.x;
  }
  ctx.q_mirror = g_malloc ((gsize) ctx.q_union.width * ctx.q_union.height * 4);
  mirror_copy (&p, &ctx.q_union);
  /* the frame on screen now appeared before the phase: not kept */
  ctx.q_cur = guest_read_stamp (p.data + (gsize) ctx.q_stamp.y * p.stride +
      (gsize) ctx.q_stamp.x * 4, p.stride);
  logv ("quality phase: %.1f s of %s", ctx.quality_s,
      guest_activity_to_string (ctx.activity));
  set_timer (ctx.quality_s, quality_done);
}

/* ---- presses ------------------------------------------------------------- */

static gboolean
release_key (gpointer data)
{
  if (ctx.inputs)
    spice_inputs_channel_key_release (ctx.inputs, (guint) ctx.scancode);
  return G_SOURCE_REMOVE;
}

static gboolean on_timeout (gpointer data);

static gboolean
do_press (gpointer data)
{
  guint32 now_colour = box_colour ();
  ctx.timer = 0;
  if (now_colour == 0) {
    /* the box is mid-update (e.g. a lossy frame): look again shortly */
    set_timer (0.05, do_press);
    return G_SOURCE_REMOVE;
  }
  ctx.expect = now_colour == COLOR_OFF ? COLOR_ON : COLOR_OFF;
  ctx.state = ST_WAITING;
  ctx.t_press = g_get_monotonic_time ();
  if (ctx.audio_burst)
    g_array_append_val (ctx.a_press_us, ctx.t_press);
  spice_inputs_channel_key_press (ctx.inputs, (guint) ctx.scancode);
  g_timeout_add (ctx.release_ms, release_key, NULL);
  set_timer (ctx.timeout_s, on_timeout);
  return G_SOURCE_REMOVE;
}

static gboolean
on_late_giveup (gpointer data)
{
  ctx.timer = 0;
  fail ("the key box never showed colour %06x after press %d", ctx.expect,
      ctx.presses + 1);
  return G_SOURCE_REMOVE;
}

static gboolean
on_timeout (gpointer data)
{
  gint max_timeouts = MAX (5, ctx.samples / 4);
  ctx.timer = 0;
  if (ctx.presses >= ctx.warmup_presses)
    ctx.timeouts++;
  logv ("press %d timed out", ctx.presses + 1);
  if (ctx.timeouts >= max_timeouts) {
    fail ("%d timeouts", ctx.timeouts);
    return G_SOURCE_REMOVE;
  }
  /* wait for the late draw so it is not claimed by the next press */
  ctx.state = ST_LATE;
  set_timer (MAX (ctx.timeout_s, 15.0), on_late_giveup);
  return G_SOURCE_REMOVE;
}

static void
sample_done (gboolean measured, gdouble ms)
{
  if (measured && ctx.presses >= ctx.warmup_presses) {
    g_array_append_val (ctx.lat_ms, ms);
    if (ctx.audio_burst) {
      AudioSample as = { ctx.presses, g_get_monotonic_time () };
      g_array_append_val (ctx.a_samples, as);
    }
  }
  logv ("press %d: %s %.2f ms", ctx.presses + 1,
      ctx.presses < ctx.warmup_presses ? "warm-up" : "sample", ms);
  ctx.presses++;
  next_step ();
}

static void
next_step (void)
{
  gdouble gap;
  clear_timer ();
  if (ctx.presses == ctx.warmup_presses && ctx.t_bytes0 == 0) {
    ctx.bytes0 = total_bytes (&ctx.display_bytes0);
    ctx.t_bytes0 = g_get_monotonic_time ();
  }
  if (ctx.presses >= ctx.warmup_presses + ctx.samples) {
    ctx.bytes1 = total_bytes (&ctx.display_bytes1);
    ctx.t_bytes1 = g_get_monotonic_time ();
    if (ctx.quality_s > 0)
      start_quality ();
    else
      after_quality ();
    return;
  }
  ctx.state = ST_GAP;
  gap = ctx.gap_min + g_rand_double (ctx.rand) * (ctx.gap_max - ctx.gap_min);
  set_timer (gap, do_press);
}

/* With --audio-burst, after the last press: its burst may still be on the
 * way (the sound comes late): wait up to AUDIO_LAST_WAIT_MS for it */
static gboolean
audio_last_onset (gpointer data)
{
  if (ctx.a_onsets->len < ctx.a_press_us->len &&
      g_get_monotonic_time () - ctx.t_bytes1 < AUDIO_LAST_WAIT_MS * 1000)
    return G_SOURCE_CONTINUE;
  ctx.timer = 0;
  ctx.audio_burst_waited = TRUE;
  after_quality ();
  return G_SOURCE_REMOVE;
}

/* after the presses and the quality phase: the exact picture, or the end */
static void
after_quality (void)
{
  if (ctx.audio_burst && !ctx.audio_burst_waited) {
    clear_timer ();
    ctx.timer = g_timeout_add (10, audio_last_onset, NULL);
    return;
  }
  if (ctx.guest_control)
    start_exact ();
  else
    finish ();
}

static gboolean
warmup_done (gpointer data)
{
  ctx.timer = 0;
  next_step ();
  return G_SOURCE_REMOVE;
}

/* Called whenever the surface may have changed. */
static void
surface_changed (gboolean touches_box)
{
  switch (ctx.state) {
    case ST_CONNECTING:
      if (ctx.inputs_open && box_colour () != 0) {
        ctx.t_first_box = g_get_monotonic_time ();
        logv ("connected, key box visible; warming up %.1f s", ctx.warmup_s);
        ctx.state = ST_WARMUP;
        clear_timer ();
        set_timer (ctx.warmup_s, warmup_done);
      }
      break;
    case ST_WAITING:
      if (touches_box && box_colour () == ctx.expect) {
        gdouble ms = (g_get_monotonic_time () - ctx.t_press) / 1e3;
        sample_done (TRUE, ms);
      }
      break;
    case ST_LATE:
      if (touches_box && box_colour () == ctx.expect) {
        ctx.late_settled++;
        logv ("late draw arrived after %.0f ms",
            (g_get_monotonic_time () - ctx.t_press) / 1e3);
        sample_done (FALSE, 0);
      }
      break;
    case ST_EXACT:
      if (ctx.ref)
        check_exact ();
      break;
    case ST_QUALITY:           /* on_invalidate calls quality_invalidate */
      break;
    default:
      break;
  }
}

/* ---- spice signals ------------------------------------------------------- */

static void
on_invalidate (SpiceChannel * ch, gint x, gint y, gint w, gint h, gpointer d)
{
  gboolean touches = x < BOX_X + BOX_SIZE && x + w > BOX_X
      && y < BOX_Y + BOX_SIZE && y + h > BOX_Y;
  ctx.t_last_inval = g_get_monotonic_time ();
  /* -v: what paints after the activity stopped, the first 100 updates */
  if (ctx.state == ST_EXACT && ctx.n_exact_inval++ < 100)
    logv ("update %dx%d+%d+%d at %.1f ms", w, h, x, y,
        (ctx.t_last_inval - ctx.t_stop) / 1e3);
  if (ctx.state == ST_QUALITY)
    quality_invalidate (x, y, w, h);
  surface_changed (touches);
}

static void
on_mark (SpiceChannel * ch, gint mark, gpointer d)
{
  surface_changed (TRUE);
}

static void
on_channel_event (SpiceChannel * ch, SpiceChannelEvent ev, gpointer d)
{
  if (ev == SPICE_CHANNEL_OPENED) {
    if (SPICE_IS_INPUTS_CHANNEL (ch)) {
      ctx.inputs_open = TRUE;
      surface_changed (TRUE);
    }
    return;
  }
  if (ev == SPICE_CHANNEL_CLOSED || ev >= SPICE_CHANNEL_ERROR_CONNECT) {
    if (ctx.state != ST_DONE) {
      if (ev == SPICE_CHANNEL_ERROR_AUTH)
        fail ("authentication failed");
      else
        fail ("channel %s closed or failed (event %d)",
            G_OBJECT_TYPE_NAME (ch), ev);
    }
  }
}

/* main loop: watches @ch's events and, with @link, links it */
static void
watch_channel (SpiceChannel * ch, gboolean link)
{
  g_signal_connect (ch, "channel-event", G_CALLBACK (on_channel_event), NULL);
  if (link)
    spice_channel_connect (ch);
}

static void
on_channel_new (SpiceSession * s, SpiceChannel * ch, gpointer d)
{
  g_ptr_array_add (ctx.channels, g_object_ref (ch));
  if (SPICE_IS_MAIN_CHANNEL (ch)) {
    watch_channel (ch, FALSE);
  } else if (SPICE_IS_DISPLAY_CHANNEL (ch)) {
    gint id;
    g_object_get (ch, "channel-id", &id, NULL);
    if (id != 0 || ctx.display)
      return;
    ctx.display = ch;
    g_signal_connect (ch, "display-invalidate", G_CALLBACK (on_invalidate),
        NULL);
    g_signal_connect (ch, "display-mark", G_CALLBACK (on_mark), NULL);
    watch_channel (ch, TRUE);
  } else if (SPICE_IS_PLAYBACK_CHANNEL (ch) && ctx.audio) {
    ctx.playback = ch;
    g_signal_connect (ch, "playback-start", G_CALLBACK (on_playback_start),
        NULL);
    g_signal_connect (ch, "playback-data", G_CALLBACK (on_playback_data), NULL);
    watch_channel (ch, TRUE);
  } else if (SPICE_IS_INPUTS_CHANNEL (ch)) {
    ctx.inputs = SPICE_INPUTS_CHANNEL (ch);
    watch_channel (ch, TRUE);
  }
}

static gboolean
connect_timeout (gpointer data)
{
  ctx.timer = 0;
  fail ("no usable session within %.0f s of connecting (display channel %s, "
      "inputs channel %s, key box %s)", ctx.connect_timeout_s,
      ctx.display ? "up" : "missing", ctx.inputs_open ? "open" : "not open",
      box_colour ()? "visible" : "not visible");
  return G_SOURCE_REMOVE;
}

int
main (int argc, char **argv)
{
  GOptionContext *oc;
  GError *err = NULL;
  gchar *scancode_str = NULL;
  GOptionEntry entries[] = {
    {"uri", 0, 0, G_OPTION_ARG_STRING, &ctx.uri, "spice://HOST:PORT", "URI"},
    {"host", 'h', 0, G_OPTION_ARG_STRING, &ctx.host, "Server host", "HOST"},
    {"port", 'p', 0, G_OPTION_ARG_INT, &ctx.port, "Server port", "PORT"},
    {"password", 'w', 0, G_OPTION_ARG_STRING, &ctx.password, "Ticket", "PW"},
    {"samples", 'n', 0, G_OPTION_ARG_INT, &ctx.samples,
        "Measured presses (25)", "N"},
    {"warmup-presses", 0, 0, G_OPTION_ARG_INT, &ctx.warmup_presses,
        "Unmeasured presses first (3)", "N"},
    {"warmup", 0, 0, G_OPTION_ARG_DOUBLE, &ctx.warmup_s,
        "Seconds between the first picture and the first press (2)", "S"},
    {"timeout", 0, 0, G_OPTION_ARG_DOUBLE, &ctx.timeout_s,
        "Per-press timeout in seconds (15)", "S"},
    {"gap-min", 0, 0, G_OPTION_ARG_DOUBLE, &ctx.gap_min, "Gap min s (0.4)",
        "S"},
    {"gap-max", 0, 0, G_OPTION_ARG_DOUBLE, &ctx.gap_max, "Gap max s (1.2)",
        "S"},
    {"connect-timeout", 0, 0, G_OPTION_ARG_DOUBLE, &ctx.connect_timeout_s,
        "Seconds to wait for the key box after connecting (30)", "S"},
    {"scancode", 0, 0, G_OPTION_ARG_STRING, &scancode_str,
        "Set-1 scancode to press (0x39)", "SC"},
    {"release-ms", 0, 0, G_OPTION_ARG_INT, &ctx.release_ms,
        "Release after this many ms (50)", "MS"},
    {"tolerance", 0, 0, G_OPTION_ARG_INT, &ctx.tolerance,
        "Per-channel colour tolerance for the box (64)", "T"},
    {"inset", 0, 0, G_OPTION_ARG_INT, &ctx.inset,
        "Ignore this many px at the box border (4)", "PX"},
    {"guest-control", 0, 0, G_OPTION_ARG_FILENAME, &ctx.guest_control,
        "Guest command FIFO: enables the exact-picture phase", "FILE"},
    {"reference", 0, 0, G_OPTION_ARG_FILENAME, &ctx.reference,
        "Where the guest dumps its framebuffer (PPM)", "FILE"},
    {"exact-timeout", 0, 0, G_OPTION_ARG_DOUBLE, &ctx.exact_timeout_s,
        "Give up on the exact picture after S seconds (30)", "S"},
    {"seed", 0, 0, G_OPTION_ARG_INT64, &ctx.seed, "Gap RNG seed (1)", "N"},
    {"quality", 0, 0, G_OPTION_ARG_DOUBLE, &ctx.quality_s,
          "After the samples, score the shown frames for S seconds (0: off)",
        "S"},
    {"activity", 0, 0, G_OPTION_ARG_STRING, &ctx.activity_name,
        "The guest's activity, for --quality (busy)", "NAME"},
    {"picture-seed", 0, 0, G_OPTION_ARG_INT64, &ctx.picture_seed,
        "The guest's --seed, for --quality (1)", "N"},
    {"frame-times", 0, 0, G_OPTION_ARG_FILENAME, &ctx.frame_times,
        "The guest's --frame-times log, for frame ages", "FILE"},
    {"quality-max-frames", 0, 0, G_OPTION_ARG_INT, &ctx.quality_max_frames,
        "Keep at most N shown frames (1.3 MB each) (300)", "N"},
    {"audio", 0, 0, G_OPTION_ARG_NONE, &ctx.audio,
        "Link the playback channel and report what it received", NULL},
    {"audio-burst", 0, 0, G_OPTION_ARG_NONE, &ctx.audio_burst,
        "With the guest's --audio burst: audio-to-video skew per press "
          "(implies --audio)", NULL},
    {"json", 'o', 0, G_OPTION_ARG_FILENAME, &ctx.json_path,
        "Write JSON here (default stdout)", "FILE"},
    {"verbose", 'v', 0, G_OPTION_ARG_NONE, &ctx.verbose, "Log to stderr",
        NULL},
    {NULL}
  };

  ctx.samples = 25;
  ctx.warmup_presses = 3;
  ctx.warmup_s = 2.0;
  ctx.timeout_s = 15.0;
  ctx.gap_min = 0.4;
  ctx.gap_max = 1.2;
  ctx.connect_timeout_s = 30.0;
  ctx.exact_timeout_s = 30.0;
  ctx.scancode = 0x39;
  ctx.release_ms = 50;
  ctx.tolerance = 64;
  ctx.inset = 4;
  ctx.seed = 1;
  ctx.exact_ms = -1;
  ctx.last_diff = -1;
  ctx.picture_seed = 1;
  ctx.quality_max_frames = 300;
  ctx.activity = GUEST_ACTIVITY_BUSY;

  oc = g_option_context_new ("- SPICE keypress-to-draw latency client");
  g_option_context_add_main_entries (oc, entries, NULL);
  if (!g_option_context_parse (oc, &argc, &argv, &err)) {
    fprintf (stderr, "spice-keypress: %s\n", err->message);
    return 2;
  }
  g_option_context_free (oc);
  if (scancode_str)
    ctx.scancode = (gint) g_ascii_strtoll (scancode_str, NULL, 0);
  if (!ctx.uri) {
    if (!ctx.port) {
      fprintf (stderr, "spice-keypress: give --uri or --port\n");
      return 2;
    }
    ctx.uri = g_strdup_printf ("spice://%s:%d", ctx.host ? ctx.host :
        "127.0.0.1", ctx.port);
  }
  if (ctx.activity_name &&
      !guest_activity_from_string (ctx.activity_name, &ctx.activity)) {
    fprintf (stderr, "spice-keypress: unknown --activity %s\n",
        ctx.activity_name);
    return 2;
  }
  /* -n 0: no press, only the quality and/or the exact-picture phase */
  if (ctx.samples < (ctx.quality_s > 0 || ctx.guest_control ? 0 : 1)
      || ctx.warmup_presses < 0
      || ctx.gap_max < ctx.gap_min || ctx.inset < 0
      || ctx.inset >= BOX_SIZE / 2) {
    fprintf (stderr, "spice-keypress: bad arguments\n");
    return 2;
  }
  if (ctx.audio_burst)
    ctx.audio = TRUE;
  if (ctx.guest_control && !ctx.reference)
    ctx.reference = g_strdup_printf ("%s.ref.ppm", ctx.guest_control);

  ctx.t_start = g_get_monotonic_time ();
  ctx.loop = g_main_loop_new (NULL, FALSE);
  ctx.rand = g_rand_new_with_seed ((guint32) ctx.seed);
  ctx.lat_ms = g_array_new (FALSE, FALSE, sizeof (gdouble));
  ctx.channels = g_ptr_array_new_with_free_func (g_object_unref);
  ctx.a_onsets = g_array_new (FALSE, FALSE, sizeof (gint64));
  ctx.a_onset_frames = g_array_new (FALSE, FALSE, sizeof (guint64));
  ctx.a_press_us = g_array_new (FALSE, FALSE, sizeof (gint64));
  ctx.a_samples = g_array_new (FALSE, FALSE, sizeof (AudioSample));
  ctx.session = spice_session_new ();
  g_object_set (ctx.session, "uri", ctx.uri, NULL);
  if (ctx.audio)
    g_object_set (ctx.session, "enable-audio", TRUE, NULL);
  if (ctx.password)
    g_object_set (ctx.session, "password", ctx.password, NULL);
  g_signal_connect (ctx.session, "channel-new", G_CALLBACK (on_channel_new),
      NULL);
  ctx.state = ST_CONNECTING;
  ctx.t_connect = g_get_monotonic_time ();
  if (!spice_session_connect (ctx.session)) {
    fprintf (stderr, "spice-keypress: cannot connect to %s\n", ctx.uri);
    return 1;
  }
  set_timer (ctx.connect_timeout_s, connect_timeout);
  g_main_loop_run (ctx.loop);

  write_json ();
  spice_session_disconnect (ctx.session);
  g_object_unref (ctx.session);
  g_ptr_array_free (ctx.channels, TRUE);
  return ctx.exit_error ? 1 : 0;
}
