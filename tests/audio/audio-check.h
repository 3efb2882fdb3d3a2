/* gst-spice tests/audio: checks on the test guest's tone (guest-audio.h)
 *
 * The tone's segment N has frequency guest_audio_tone_hz (N). A received
 * signal is cut in windows of WINDOW_MS; in each window the power at every
 * tone frequency is measured (Goertzel), the strongest one must carry most
 * of the window's energy, and the sequence of recognized steps must advance
 * one step at a time (no segment missing, none repeated out of order).
 */
#pragma once

#include <glib.h>
#include <math.h>
#include <string.h>
#include <gst/gst.h>

#define GUEST_AUDIO_TONE_ONLY
#include "guest-audio.h"

#define AUDIO_CHECK_WINDOW_MS 50

typedef struct
{
  guint windows;                /* analysed */
  guint silent;                 /* below the level */
  guint recognized;             /* one tone frequency dominant */
  guint changes;                /* step changes seen */
  guint bad_changes;            /* a change that is not +1 step */
  guint first_step, last_step;
} AudioToneReport;

/* power of @hz in @n mono samples at @rate (Goertzel) */
static inline gdouble
audio_check_power (const gint16 * s, gsize n, guint rate, gdouble hz)
{
  gdouble w = 2.0 * G_PI * hz / rate, coeff = 2.0 * cos (w);
  gdouble s1 = 0, s2 = 0;
  gsize i;

  for (i = 0; i < n; i++) {
    gdouble s0 = s[i] + coeff * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  return s1 * s1 + s2 * s2 - coeff * s1 * s2;
}

/* -1: silence; -2: no tone frequency dominates; else the step */
static inline gint
audio_check_window (const gint16 * s, gsize n, guint rate)
{
  gdouble energy = 0, best = 0;
  gint best_i = -1, i;
  gsize k;

  for (k = 0; k < n; k++)
    energy += (gdouble) s[k] * s[k];
  if (energy / n < 100.0 * 100.0)
    return -1;
  for (i = 0; i < GUEST_AUDIO_STEPS; i++) {
    gdouble p = audio_check_power (s, n, rate, guest_audio_tone_hz (i));
    if (p > best) {
      best = p;
      best_i = i;
    }
  }
  /* a pure tone's Goertzel power is about energy * n / 2 */
  return best > 0.25 * energy * n / 2 ? best_i : -2;
}

/* @s: mono (or the left channel extracted) */
static inline void
audio_check_tone (const gint16 * s, gsize n, guint rate, AudioToneReport * r)
{
  gsize w = rate * AUDIO_CHECK_WINDOW_MS / 1000, off;
  gint prev = -1;

  memset (r, 0, sizeof (*r));
  for (off = 0; off + w <= n; off += w) {
    gint step = audio_check_window (s + off, w, rate);

    r->windows++;
    if (step == -1) {
      r->silent++;
      continue;
    }
    if (step < 0)
      continue;                 /* straddles two segments, or noise */
    r->recognized++;
    if (prev < 0)
      r->first_step = step;
    else if (step != prev) {
      r->changes++;
      if (step != (prev + 1) % GUEST_AUDIO_STEPS)
        r->bad_changes++;
    }
    prev = step;
    r->last_step = step;
  }
}

/* the left channel of interleaved S16 */
static inline gint16 *
audio_check_left (const guint8 * data, gsize bytes, guint channels,
    gsize * n_out)
{
  gsize n = bytes / 2 / channels, i;
  gint16 *out = g_new (gint16, MAX (n, 1));

  for (i = 0; i < n; i++)
    out[i] = (gint16) GST_READ_UINT16_LE (data + i * 2 * channels);
  *n_out = n;
  return out;
}

/* ---- the 30 s continuity check (gaps, duplicates) ----------------------
 *
 * The tone is cut in blocks of AUDIO_GAP_BLOCK_MS (10 ms: the tone's
 * frequencies are exact multiples of 100 Hz, so a block holds whole
 * periods). Every block must carry one tone step, except the one or two
 * that straddle a segment boundary. Each boundary is then located to a
 * fraction of a millisecond: a block-long window is slid across it, and
 * where the new step's share of the two steps' power crosses one half, the
 * window's middle is the boundary. Boundary k must sit k segments
 * (GUEST_AUDIO_SEGMENT_MS) after the first one; its residual is how far it
 * is off. A missing or repeated packet (10 ms, or an Opus frame of 2.5 ms)
 * shifts every later boundary by its length: a slip, the median residual
 * of the next AUDIO_GAP_MEDIAN boundaries minus that of the previous ones,
 * must stay within AUDIO_GAP_BOUND_FRAMES at each boundary but the first
 * and the last. The medians are there because Opus smears a frequency
 * change: one boundary alone can be located about 1 ms off (measured: a
 * 50-frame interval error that the next interval took back), which is
 * not a slip.
 */
#define AUDIO_GAP_BLOCK_MS 10
/* 1 ms at 48 kHz: what the boundary grid may slip by, Opus included
 * (measured: 7-12 frames, see the test's log and docs/benchmarks.md) */
#define AUDIO_GAP_BOUND_FRAMES 48
#define AUDIO_GAP_SLIDE_FRAMES 12
#define AUDIO_GAP_MEDIAN 3

typedef struct
{
  guint blocks;                 /* analysed */
  guint bad_blocks;             /* no step, away from a boundary */
  guint boundaries;             /* located */
  guint bad_steps;              /* a change that is not +1 step */
  gint64 max_dev_frames;        /* |boundary interval - segment| at most
                                 * (two boundaries' location errors: log) */
  gint64 max_slip_frames;       /* |slip| at most */
  gint64 worst_slip_frames;     /* that one, signed: < 0 lost, > 0 repeated */
  gdouble first_boundary_s;     /* where the first one is, in the signal */
} AudioGapReport;

/* new step's share of the two steps' power in [p, p + w) */
static inline gdouble
audio_check_share (const gint16 * s, gsize p, gsize w, guint rate,
    gint old_step, gint new_step)
{
  gdouble po = audio_check_power (s + p, w, rate,
      guest_audio_tone_hz (old_step));
  gdouble pn = audio_check_power (s + p, w, rate,
      guest_audio_tone_hz (new_step));

  return pn + po > 0 ? pn / (pn + po) : 0.5;
}

/* the boundary between @old_step (the block at @a) and @new_step (the
 * block at @b > @a), in frames: -1 if the share never crosses one half */
static inline gdouble
audio_check_locate (const gint16 * s, gsize n, guint rate, gsize a, gsize b,
    gint old_step, gint new_step)
{
  gsize w = rate * AUDIO_GAP_BLOCK_MS / 1000;
  gsize p = a * w > w / 2 ? a * w - w / 2 : 0;
  gsize end = MIN ((b + 1) * w, n - w);
  gdouble prev = audio_check_share (s, p, w, rate, old_step, new_step);

  for (; p + AUDIO_GAP_SLIDE_FRAMES <= end; p += AUDIO_GAP_SLIDE_FRAMES) {
    gdouble next = audio_check_share (s, p + AUDIO_GAP_SLIDE_FRAMES, w, rate,
        old_step, new_step);

    if (prev < 0.5 && next >= 0.5)
      return p + AUDIO_GAP_SLIDE_FRAMES * (0.5 - prev) / (next - prev) +
          w / 2.0;
    prev = next;
  }
  return -1;
}

/* the median of @n (1..AUDIO_GAP_MEDIAN) residuals */
static inline gdouble
audio_check_median (const gdouble * v, guint n)
{
  gdouble t[AUDIO_GAP_MEDIAN] = { 0 };
  guint i, j;

  for (i = 0; i < n; i++) {
    for (j = i; j > 0 && t[j - 1] > v[i]; j--)
      t[j] = t[j - 1];
    t[j] = v[i];
  }
  return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

static inline void
audio_check_note_slip (AudioGapReport * r, gdouble slip)
{
  gint64 s = llround (slip);

  if (ABS (s) > r->max_slip_frames) {
    r->max_slip_frames = ABS (s);
    r->worst_slip_frames = s;
  }
}

/* the slip between boundaries k - 1 and k: the median of up to
 * AUDIO_GAP_MEDIAN residuals from k on minus that of those before k, at
 * least two on either side (so not between the first two boundaries nor
 * the last two: one boundary alone cannot tell a slip from its own
 * location error) */
static inline void
audio_check_slips (const gdouble * res, guint n, AudioGapReport * r)
{
  const guint m = AUDIO_GAP_MEDIAN;
  guint k;

  for (k = 2; k + 2 <= n; k++)
    audio_check_note_slip (r, audio_check_median (res + k, MIN (n - k, m)) -
        audio_check_median (res + k - MIN (k, m), MIN (k, m)));
}

/* @s: mono (the left channel) */
static inline void
audio_check_gaps (const gint16 * s, gsize n, guint rate, AudioGapReport * r)
{
  gsize w = rate * AUDIO_GAP_BLOCK_MS / 1000, nb = n / w, k, last_k = 0;
  gint *step = g_new (gint, MAX (nb, 1));
  gint last = -1;
  gdouble prev_at = -1;
  const gdouble segment = (gdouble) rate * GUEST_AUDIO_SEGMENT_MS / 1000;
  GArray *resid = g_array_new (FALSE, FALSE, sizeof (gdouble));

  memset (r, 0, sizeof (*r));
  r->blocks = nb;
  r->first_boundary_s = -1;
  for (k = 0; k < nb; k++)
    step[k] = audio_check_window (s + k * w, w, rate);
  for (k = 0; k < nb; k++) {
    if (step[k] < 0) {
      /* allowed only at a boundary, at most two blocks (a boundary near a
       * block's edge spoils two), or where the signal is cut at its ends */
      gsize j = k;

      while (j < nb && step[j] < 0)
        j++;
      if (j - k > 2 || (last >= 0 && j < nb && step[j] == last))
        r->bad_blocks += j - k;
      k = j - 1;
      continue;
    }
    if (last >= 0 && step[k] != last) {
      gdouble at = audio_check_locate (s, n, rate, last_k, k, last, step[k]);

      if (step[k] != (last + 1) % GUEST_AUDIO_STEPS)
        r->bad_steps++;
      if (at < 0) {
        r->bad_steps++;
      } else {
        gint64 dev = llround (at - prev_at - segment);
        gdouble res;

        if (prev_at >= 0)
          r->max_dev_frames = MAX (r->max_dev_frames, ABS (dev));
        else
          r->first_boundary_s = at / rate;
        res = at - r->first_boundary_s * rate - r->boundaries * segment;
        g_array_append_val (resid, res);
        prev_at = at;
        r->boundaries++;
      }
    }
    last = step[k];
    last_k = k;
  }
  g_free (step);
  audio_check_slips ((const gdouble *) resid->data, resid->len, r);
  g_array_free (resid, TRUE);
}
