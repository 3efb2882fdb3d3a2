/* gst-spice: spicesrc's instance, shared by the files of the element
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * gstspicesrc.c is the element (properties, GstBaseSrc and GstPushSrc,
 * the URI handler); the other files each own one part of it and expose
 * gst_spice_src_<part>_*() to the others (docs/spicesrc.md, "Structure").
 * Every function says above it which thread it runs on; "context" is the
 * thread that owns the default main context, where spice-gtk runs.
 */
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>
#include <spice-client.h>

#include <gst/spice/gstspice.h>

#include "gstspicesrc.h"
#include "gstspicesrcaudio.h"
#include "gstspicesrcagent.h"

G_BEGIN_DECLS

/* one debug category for the element's own files (spicesrc) */
GST_DEBUG_CATEGORY_EXTERN (gst_spice_src_debug);
#define GST_CAT_DEFAULT gst_spice_src_debug

/* wait this long for MARK after a primary surface appears */
#define MARK_TIMEOUT_US (1 * G_USEC_PER_SEC)
/* pushed frames spicesrc keeps a reference to: once downstream has let go
 * of one, the next frame goes into it and only the damage since it is
 * copied (three: the one being made, the tiler's current and pending) */
#define N_HELD_FRAMES 3
/* frames in circulation, the most spicesrc's own pool makes: the held
 * ones and one more, which the tiler may still be working on after a
 * newer frame took its slot (a pool without a maximum kept every frame
 * the prefault made beside those already out: six 1280x800 frames, 24 MiB,
 * where four do the same work) */
#define N_FRAMES_IN_FLIGHT (N_HELD_FRAMES + 1)
/* frames of damage remembered for that; older frames are copied whole */
#define DAMAGE_HISTORY 8

/* display channels composed side by side into one frame, at most */
#define MAX_SRC_HEADS 8

/* One display channel of the upstream, a head of the frame (context
 * only): its canvas (spice-gtk's primary surface; NULL: none yet, and
 * then it takes no room in the frame) and where it lies in the frame */
typedef struct
{
  SpiceChannel *channel;
  gint channel_id;
  const guint8 *canvas;
  gint stride, w, h;
  gint x;
} GstSpiceSrcHead;

/* The connection parameters of one start() (docs/spicesrc.md, "One start,
 * one session"): start() makes them from the properties and nothing
 * changes them afterwards but the one-way @stopped. They travel to the
 * context with that start's connect, which keeps them in self->params
 * while it runs the start's session; its teardown and a TLS diagnosis of
 * the session hold references of their own. A start's stop() marks them
 * stopped before it hands its teardown to the context: whatever still
 * runs for that session afterwards (a timer, a failure, the diagnosis's
 * result, a signal), also after the next start(), changes nothing and
 * posts nothing, and its teardown ends only that session. */
typedef struct
{
  gatomicrefcount ref;
  gint stopped;                 /* atomic: this start's stop() ran */
  guint64 serial;               /* which start of the element (1, 2, ...) */
  gchar *uri;
  gchar *host;
  gchar *port;
  gchar *tls_port;
  gchar *password;              /* zeroed when freed */
  gchar *ca_file;
  gboolean ca_file_is_temp;     /* the vv-file's ca, deleted when freed */
  gchar *cert_subject;
  gchar *proxy;                 /* HTTP CONNECT proxy URI (NULL: none set,
                                 * spice-gtk reads SPICE_PROXY) */
  gchar *proxy_shown;           /* the same without its credentials */
  gint channel_id;
  guint connect_timeout_ms;
  GstSpiceSrcCompression compression;
} SessionParams;

struct _GstSpiceSrc
{
  GstPushSrc parent;

  /* properties (object lock) */
  gchar *uri;
  gchar *password;
  gchar *password_file;
  gchar *ca_file;
  gchar *cert_subject;
  gchar *proxy;
  gchar *vv_file;
  gint channel_id;
  GstSpiceSrcReconnect reconnect;
  guint reconnect_interval;
  guint connect_timeout_ms;
  gboolean warned_connect_timeout;      /* the deprecated name was set */
  GstSpiceSrcCompression compression;
  gint max_fps_n, max_fps_d;
  GstSpiceSrcContextMode context_mode;

  /* state-change thread only (start() and stop(), which basesrc
   * serializes): the parameters start() made, and whether it took a
   * reference to the context helper; stop() hands both to its teardown,
   * which releases them on the context. They never cross threads through
   * the element, so the teardown of one start cannot release what the
   * next one took, nor the next start change what the previous session
   * reads (a teardown that stop() gave up waiting for runs after the next
   * start()). */
  SessionParams *start_params;
  guint64 n_starts;
  gboolean helper_ref;

  /* shared between the context and the streaming thread (self->lock) */
  GMutex lock;
  GCond cond;
  gboolean flushing;
  gboolean started;
  gboolean stopping;
  gboolean fatal;
  guint64 torn_down;            /* the newest start whose teardown ran */
  gint width, height;           /* the server's surface */
  /* the frame being made: ours alone, mapped for writing, filled from
   * spice-gtk's canvas on the context thread; it equals the picture
   * reported so far (every invalidate seen) except in @stale, which is
   * copied from the canvas at the next safe point (an invalidate, or the
   * catch-up source: see gstspicesrcdisplay.c) */
  GstBuffer *cur;
  GstVideoFrame cur_frame;
  GstSpiceRegion stale;
  GSource *catchup;             /* attached, not yet dispatched */
  /* damage-only output (memory:SpiceDamage): create() asks for the
   * damage's pixels (@pack_wanted), the context packs them at its next
   * safe point into @packed (the damage moves with them), @packed_w x
   * @packed_h the surface then, @packed_us the damage's arrival */
  gboolean pack_wanted;
  GstBuffer *packed;
  gint packed_w, packed_h;
  gint64 packed_us;
  gboolean have_surface;
  gboolean marked;
  gint64 surface_us;
  GstSpiceRegion damage;
  gint64 damage_us;             /* arrival of the latest damage */
  GstSpiceCursor cursor;
  gboolean cursor_pending;
  guint key_locks;              /* the server's lock LEDs */
  gboolean key_locks_pending;   /* not pushed yet */
  /* the heads of the picture (spice-monitors), sent before the next frame
   * when pending */
  GstSpiceHeads monitors;
  gboolean monitors_pending;
  /* stats */
  guint64 st_frames;
  guint64 st_rects;
  guint64 st_area;
  guint64 st_invalidates;
  guint64 st_invalidates_helper;
  guint64 st_input;
  guint64 st_input_dropped;
  guint input_pending;          /* input ops waiting for the context */
  gint64 input_warned_us;
  guint64 st_copied_area;
  guint64 st_frames_reused;
  gint st_prefaulted;           /* atomic: frames written ahead */
  guint64 st_catchups;
  guint st_reconnects;
  gchar *st_last_error;
  gint mouse_mode_shared;
  GstSpiceSrcAgent *agent;      /* guest agent relay (gstspicesrcagent.c) */

  /* streaming thread */
  GstVideoInfo out_info;
  gboolean out_valid;
  gboolean damage_only;         /* negotiated memory:SpiceDamage */
  gboolean peer_names_damage;   /* the peer's caps name memory:SpiceDamage
                                 * (not ANY): offered only then (negotiate
                                 * sets it, get_caps reads it; self->lock) */
  guint64 seq;
  GstClockTime last_pts;
  gint64 last_push_us;
  gboolean pushed_any;
  /* frames we pushed and still reference (refcount 1: only us, writable
   * again), with the seq each holds; damage of frame seq is hist[seq %
   * DAMAGE_HISTORY] when hist_seq there is seq + 1 */
  gboolean hold_frames;
  gint prefault;                /* atomic: the pool's frames are still
                                 * untouched, none was written yet */
  GstBuffer *held[N_HELD_FRAMES];
  guint64 held_seq[N_HELD_FRAMES];
  GstSpiceRegion hist[DAMAGE_HISTORY];
  guint64 hist_seq[DAMAGE_HISTORY];

  /* context only: the session of one start, with its parameters (NULL:
   * none), which ctx_session_start() and ctx_session_end()
   * (gstspicesrcsession.c) replace together with everything below */
  SessionParams *params;
  SpiceSession *session;
  SpiceMainChannel *main_ch;
  SpiceDisplayChannel *display_ch;
  SpiceCursorChannel *cursor_ch;
  SpiceInputsChannel *inputs_ch;
  /* the display channels with an id from channel-id on, in id order
   * (gstspicesrcdisplay.c), and the frame they make side by side */
  GstSpiceSrcHead heads[MAX_SRC_HEADS];
  guint n_heads;
  gint canvas_w, canvas_h;
  guint reconnect_id;
  guint connect_timeout_id;
  GCancellable *tls_cancel;     /* the TLS diagnosis under way */
  gboolean session_opened;
  /* spice-health events (context thread): lost since the last open, the
   * last upstream-lost posted and those not posted since */
  gboolean upstream_lost;
  gint64 lost_posted_us;
  guint64 lost_suppressed;
  gint mouse_mode;
  guint buttons;
  gboolean have_pos;
  gboolean inputs_open;         /* spice-gtk's inputs channel is ready */
  gboolean pos_pending;         /* a position kept while it was not */
  gint last_x, last_y;
  guint64 cursor_serial;
  GstSpiceSrcAudio *audio;      /* the audio pad and record channel */
};

/* any thread, self->lock held */
static inline void
gst_spice_src_set_last_error_locked (GstSpiceSrc * self, const gchar * msg)
{
  g_free (self->st_last_error);
  self->st_last_error = g_strdup (msg);
}

/* context: whether the session here (if any) belongs to a start that
 * stop() has ended; its teardown, maybe queued behind the next start's
 * calls, ends it. Until then whatever runs for it (a signal, a timer, the
 * TLS diagnosis's result) changes nothing that the next start sees. */
static inline gboolean
gst_spice_src_session_stopped (GstSpiceSrc * self)
{
  return !self->params || g_atomic_int_get (&self->params->stopped);
}

G_END_DECLS
