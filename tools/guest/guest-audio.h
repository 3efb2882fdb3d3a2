/* gst-spice test guest: sound (libspice-server's playback and record
 * interfaces). See guest-audio.c and docs/test-guest.md "Audio".
 *
 * With GUEST_AUDIO_TONE_ONLY defined, only the tone's definition (for the
 * clients' tests, without libspice-server's headers).
 */
#ifndef GUEST_AUDIO_H
#define GUEST_AUDIO_H

#include <glib.h>

G_BEGIN_DECLS

/* the rate the guest plays and records at (spice-server's Opus rate) */
#define GUEST_AUDIO_RATE 48000
#define GUEST_AUDIO_CHANNELS 2
/* the tone: segment N lasts GUEST_AUDIO_SEGMENT_MS and has the frequency
 * guest_audio_tone_hz (N) */
#define GUEST_AUDIO_SEGMENT_MS 500
#define GUEST_AUDIO_BASE_HZ 500
#define GUEST_AUDIO_STEP_HZ 100
#define GUEST_AUDIO_STEPS 8
/* --audio burst: a burst of GUEST_AUDIO_BURST_HZ, GUEST_AUDIO_BURST_MS long,
 * at every key box flip, silence otherwise */
#define GUEST_AUDIO_BURST_HZ 1000
#define GUEST_AUDIO_BURST_MS 100

/* the frequency of tone segment @n */
static inline guint
guest_audio_tone_hz (guint64 n)
{
  return GUEST_AUDIO_BASE_HZ + GUEST_AUDIO_STEP_HZ * (guint) (n %
      GUEST_AUDIO_STEPS);
}

#ifndef GUEST_AUDIO_TONE_ONLY
#include <spice.h>

typedef struct _GuestAudio GuestAudio;
typedef void (*GuestAudioLogFunc) (const gchar * fmt, ...);

/* Main thread, before spice_server_vm_start(). @mode: NULL or "off" (no
 * sound interfaces), "on" (playback and record interfaces, silent until
 * `audio start`), "tone" (plays the tone at once) or "burst" (plays at
 * once: silence, and a burst at every guest_audio_burst()). NULL + @error
 * on a bad mode. */
GuestAudio *guest_audio_new (SpiceServer * server, const gchar * mode,
    GuestAudioLogFunc log, GError ** error);
/* Main thread: one `audio ...` stdin command (argv[0] == "audio") */
void guest_audio_command (GuestAudio * a, gint argc, gchar ** argv);
/* Main thread, at the instant the guest flips its key box for the @n-th
 * time: in burst mode, a burst starts at the frame due now (logged) */
void guest_audio_burst (GuestAudio * a, guint n);
void guest_audio_free (GuestAudio * a);
#endif

G_END_DECLS

#endif /* GUEST_AUDIO_H */
