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
