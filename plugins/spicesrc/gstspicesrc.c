/* gst-spice: spicesrc, a SPICE client as a live video source
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
/**
 * SECTION:element-spicesrc
 * @title: spicesrc
 * @see_also: spicetiler, spicesink, ximagesrc
 *
 * spicesrc connects to a SPICE server (a virtual machine's display served
 * by qemu, or any other SPICE server) with spice-client-glib and outputs
 * its primary surface as raw video (`video/x-raw,format=BGRx`) with a
 * variable frame rate (`framerate=0/1`): a frame is produced when the
 * server draws something, and is timestamped with the running time at
 * which the draw arrived.
 *
 * Every buffer carries a #GstSpiceDamageMeta with the rectangles that
 * changed since the previous buffer (the whole surface on the first
 * buffer, after a resize and after a reconnection) and consecutive
 * sequence numbers. spicesrc never queues frames: while downstream
 * blocks, new draws land in the frame being made (copied from
 * spice-gtk's canvas) and their damage merges into the next frame.
 *
 * ## Damage-only buffers
 *
 * The source pad offers `video/x-raw(memory:SpiceDamage)` first and plain
 * `video/x-raw` second, the first only to a peer whose caps name the
 * feature (spicetiler; not a sink that takes anything, such as fakesink or
 * an appsink without caps, which gets whole frames). With the feature a
 * buffer holds only the damaged rectangles'
 * pixels, packed one after the other in the meta's order
 * (#GST_CAPS_FEATURE_MEMORY_SPICE_DAMAGE, gst_spice_damage_apply()), and
 * spicesrc keeps no frames at all; the whole surface comes first, after a
 * resize or a reconnection, and when an upstream force-key-unit event asks
 * for it. Elements that need whole frames (videoconvert, an appsink with
 * `caps=video/x-raw`) get the plain caps and whole frames.
 *
 * GstNavigation events that reach spicesrc become SPICE input: keys
 * (`key` is an X11 keysym name; an optional `scancode` field, an XT set 1
 * code with 0x100 added for E0-prefixed keys, is used as is when present),
 * mouse moves (absolute in client mouse mode, relative in server mouse
 * mode), buttons 1 to 5 and scrolling. The server's cursor channel becomes
 * a sticky downstream custom event `spice-cursor` (see gstspiceevents.h),
 * the server's keyboard lock LEDs the sticky event `spice-key-locks`; an
 * upstream `spice-key-locks` sets the server's locks.
 *
 * ## Audio
 *
 * While the server plays sound, the `audio` sometimes pad gives it as
 * `audio/x-raw, format=S16LE` at the playback channel's rate and channels,
 * timestamped in running time on the video buffers' base. A stop of the
 * upstream's playback is the serialized custom event `spice-audio-stop`
 * and the next start a new stream on the same pad; volume and mute are the
 * sticky event `spice-audio-volume`. Upstream `spice-record-*` events on
 * that pad (from spicesink) feed the server's record channel
 * (gstspiceaudio.h, docs/spicesrc.md "Audio").
 *
 * ## Main context
 *
 * spice-client-glib runs on the global default #GMainContext. When the
 * application iterates it (gst-launch-1.0 does, as does any application
 * running a #GMainLoop on the default context), spice-client-glib runs on
 * the application's thread. When nobody iterates it (GstHarness tests,
 * applications that only poll the bus), a helper thread iterates it in
 * short time slices, and only while no other thread owns it: an
 * application that starts g_main_loop_run() on the default context later
 * takes it over within one slice. Set #GstSpiceSrc:context to
 * `application` to never start the helper. See docs/spicesrc.md.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 spicesrc uri=spice://127.0.0.1:5900 ! videoconvert ! autovideosink
 * ]| Shows the display of the SPICE server on port 5900 in a window; keys
 * and mouse in the window go to the server.
 *
 * Since: 0.1
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include <gst/video/video.h>
#include <gst/video/gstvideopool.h>
#include <spice-client.h>

#include <gst/spice/gstspice.h>

#include "gstspicesrcpriv.h"
#include "gstspicesrccontext.h"
#include "gstspicesrcdisplay.h"
#include "gstspicesrcinputs.h"
#include "gstspicesrcsession.h"
#include "gstspicesrcuri.h"
#include "gstspicesrcvv.h"

GST_DEBUG_CATEGORY (gst_spice_src_debug);

#define DEFAULT_URI NULL
#define DEFAULT_PASSWORD NULL
#define DEFAULT_CA_FILE NULL
#define DEFAULT_CERT_SUBJECT NULL
#define DEFAULT_PROXY NULL
#define DEFAULT_VV_FILE NULL
#define DEFAULT_CHANNEL_ID 0
#define DEFAULT_RECONNECT GST_SPICE_SRC_RECONNECT_NEVER
#define DEFAULT_RECONNECT_INTERVAL 1000
#define DEFAULT_CONNECT_TIMEOUT_MS 10000
#define DEFAULT_COMPRESSION GST_SPICE_SRC_COMPRESSION_LZ4
#define DEFAULT_CONTEXT GST_SPICE_SRC_CONTEXT_AUTO

/* the streaming thread's longest wait when nothing is due (a safety net:
 * every state change wakes it) */
#define IDLE_WAIT_US (1 * G_USEC_PER_SEC)
/* how long stop() waits for the session teardown on the context */
#define TEARDOWN_TIMEOUT_US (2 * G_USEC_PER_SEC)

enum
{
  PROP_0,
  PROP_URI,
  PROP_PASSWORD,
  PROP_PASSWORD_FILE,
  PROP_CA_FILE,
  PROP_CERT_SUBJECT,
  PROP_PROXY,
  PROP_VV_FILE,
  PROP_CHANNEL_ID,
  PROP_RECONNECT,
  PROP_RECONNECT_INTERVAL,
  PROP_CONNECT_TIMEOUT,
  PROP_CONNECT_TIMEOUT_MS,
  PROP_COMPRESSION,
  PROP_MAX_FRAMERATE,
  PROP_CONTEXT,
  PROP_STATS,
};

#define SRC_CAPS_FIELDS "format = (string) BGRx, " \
    "width = (int) [ 1, 32767 ], height = (int) [ 1, 32767 ], " \
    "framerate = (fraction) 0/1"
/* damage-only first (only the damage travels, gstspicedamage.h), whole
 * frames for everyone else */
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("video/x-raw(" GST_CAPS_FEATURE_MEMORY_SPICE_DAMAGE "), "
        SRC_CAPS_FIELDS "; video/x-raw, " SRC_CAPS_FIELDS));

static void gst_spice_src_uri_handler_init (gpointer g_iface,
    gpointer iface_data);

#define gst_spice_src_parent_class parent_class
G_DEFINE_TYPE_WITH_CODE (GstSpiceSrc, gst_spice_src, GST_TYPE_PUSH_SRC,
    G_IMPLEMENT_INTERFACE (GST_TYPE_URI_HANDLER,
        gst_spice_src_uri_handler_init));

/* any thread, once: the debug category and the damage meta */
static void
spicesrc_element_init (GstPlugin * plugin)
{
  static gsize done = 0;

  if (g_once_init_enter (&done)) {
    GST_DEBUG_CATEGORY_INIT (gst_spice_src_debug, "spicesrc", 0,
        "SPICE client source");
    gst_spice_damage_meta_api_get_type ();
    g_once_init_leave (&done, 1);
  }
}

GST_ELEMENT_REGISTER_DEFINE_WITH_CODE (spicesrc, "spicesrc", GST_RANK_NONE,
    GST_TYPE_SPICE_SRC, spicesrc_element_init (plugin));

/* ------------------------------------------------------------------------ */
/* enums */

#define GST_TYPE_SPICE_SRC_RECONNECT (gst_spice_src_reconnect_get_type ())
/* any thread */
static GType
gst_spice_src_reconnect_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_SPICE_SRC_RECONNECT_NEVER, "Never: a lost connection is an error",
        "never"},
    {GST_SPICE_SRC_RECONNECT_ALWAYS,
        "Always: reconnect after reconnect-interval", "always"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type))
    g_once_init_leave (&type,
        g_enum_register_static ("GstSpiceSrcReconnect", values));
  return type;
}

#define GST_TYPE_SPICE_SRC_COMPRESSION (gst_spice_src_compression_get_type ())
/* any thread */
static GType
gst_spice_src_compression_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_SPICE_SRC_COMPRESSION_OFF, "No compression", "off"},
    {GST_SPICE_SRC_COMPRESSION_AUTO_GLZ, "Automatic, GLZ", "auto-glz"},
    {GST_SPICE_SRC_COMPRESSION_AUTO_LZ, "Automatic, LZ", "auto-lz"},
    {GST_SPICE_SRC_COMPRESSION_QUIC, "QUIC", "quic"},
    {GST_SPICE_SRC_COMPRESSION_GLZ, "GLZ", "glz"},
    {GST_SPICE_SRC_COMPRESSION_LZ, "LZ", "lz"},
    {GST_SPICE_SRC_COMPRESSION_LZ4, "LZ4 (lossless, fast)", "lz4"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type))
    g_once_init_leave (&type,
        g_enum_register_static ("GstSpiceSrcCompression", values));
  return type;
}

#define GST_TYPE_SPICE_SRC_CONTEXT_MODE (gst_spice_src_context_mode_get_type ())
/* any thread */
static GType
gst_spice_src_context_mode_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_SPICE_SRC_CONTEXT_AUTO,
        "Iterate the default main context from a helper thread while "
          "nobody else owns it", "auto"},
    {GST_SPICE_SRC_CONTEXT_APPLICATION,
        "The application iterates the default main context", "application"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type))
    g_once_init_leave (&type,
        g_enum_register_static ("GstSpiceSrcContextMode", values));
  return type;
}

/* ------------------------------------------------------------------------ */
/* URI */

/* any thread (the uri property, the URI handler): only while not running */
static gboolean
gst_spice_src_set_uri (GstSpiceSrc * self, const gchar * uri, GError ** error)
{
  gchar *h, *p, *t, *pw;
  GstState state;

  GST_OBJECT_LOCK (self);
  state = GST_STATE (self);
  GST_OBJECT_UNLOCK (self);
  if (state > GST_STATE_READY) {
    g_set_error (error, GST_URI_ERROR, GST_URI_ERROR_BAD_STATE,
        "Changing the URI of spicesrc while it is running is not supported");
    return FALSE;
  }
  /* "" is unset: pipelines pass uri="${UPSTREAM:-}" beside a vv-file */
  if (uri && !*uri)
    uri = NULL;
  if (uri && !gst_spice_src_uri_parse (uri, &h, &p, &t, &pw, NULL)) {
    g_set_error (error, GST_URI_ERROR, GST_URI_ERROR_BAD_URI,
        "Invalid SPICE URI '%s'", uri);
    return FALSE;
  }
  if (uri) {
    g_free (h);
    g_free (p);
    g_free (t);
    g_free (pw);
  }
  GST_OBJECT_LOCK (self);
  g_free (self->uri);
  self->uri = g_strdup (uri);
  GST_OBJECT_UNLOCK (self);
  return TRUE;
}

/* ------------------------------------------------------------------------ */
/* GstBaseSrc */

/* the state-change thread: the string property @field, NULL when unset
 * or "" (pipelines pass ca-file="${UPSTREAM_CA_FILE:-}") */
static gchar *
dup_set (GstSpiceSrc * self, gchar ** field)
{
  gchar *v;

  GST_OBJECT_LOCK (self);
  v = *field && **field ? g_strdup (*field) : NULL;
  GST_OBJECT_UNLOCK (self);
  return v;
}

/* the state-change thread: the parameters of a new start from the
 * properties and the vv-file (read now; properties set by the user win
 * over it), or NULL after posting the error that says why */
static SessionParams *
gst_spice_src_make_params (GstSpiceSrc * self)
{
  GstSpiceSrcVv vv = { NULL, };
  SessionParams *p;
  gchar *vv_file, *file, *password, *proxy;
  GError *err = NULL;

  p = g_new0 (SessionParams, 1);
  g_atomic_ref_count_init (&p->ref);
  p->uri = dup_set (self, &self->uri);
  vv_file = dup_set (self, &self->vv_file);
  if (vv_file && !gst_spice_src_vv_read (vv_file, &vv, &err)) {
    gst_element_message_full (GST_ELEMENT (self), GST_MESSAGE_ERROR,
        GST_RESOURCE_ERROR, g_error_matches (err, G_FILE_ERROR,
            G_FILE_ERROR_INVAL) ? GST_RESOURCE_ERROR_SETTINGS :
        GST_RESOURCE_ERROR_OPEN_READ, g_strdup_printf ("Could not use the "
            "connection file: %s", err->message), NULL, __FILE__, G_STRFUNC,
        __LINE__);
    goto fail;
  }

  /* where: the uri, else the vv-file's host and ports */
  if (p->uri) {
    if (!gst_spice_src_uri_parse (p->uri, &p->host, &p->port, &p->tls_port,
            &p->password, &err)) {
      GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
          ("Invalid SPICE URI '%s'", p->uri), ("%s", err->message));
      goto fail;
    }
  } else if (vv.host) {
    p->host = g_steal_pointer (&vv.host);
    p->port = g_steal_pointer (&vv.port);
    p->tls_port = g_steal_pointer (&vv.tls_port);
    /* for messages: never the password */
    p->uri = g_strdup_printf ("spice://%s%s%s%s%s (vv-file %s)", p->host,
        p->port ? ":" : "", p->port ? p->port : "",
        p->tls_port ? "?tls-port=" : "", p->tls_port ? p->tls_port : "",
        vv_file);
  } else {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("No SPICE URI set (set uri or vv-file)"), (NULL));
    goto fail;
  }

  /* the ticket: password-file, password, the URI's, the vv-file's */
  file = dup_set (self, &self->password_file);
  if (file) {
    password = gst_spice_read_password_file (file, &err);
    g_free (file);
    if (!password) {
      gst_spice_post_password_file_error (GST_ELEMENT (self), err);
      goto fail;
    }
  } else {
    password = dup_set (self, &self->password);
  }
  if (password || !p->password) {
    if (p->password)
      memset (p->password, 0, strlen (p->password));
    g_free (p->password);
    p->password = password ? password : g_steal_pointer (&vv.password);
  }

  p->ca_file = dup_set (self, &self->ca_file);
  if (!p->ca_file && vv.ca) {
    p->ca_file = gst_spice_src_vv_write_ca (vv.ca, &err);
    if (!p->ca_file) {
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_WRITE,
          ("Could not use the connection file's CA"), ("%s", err->message));
      goto fail;
    }
    p->ca_file_is_temp = TRUE;
    GST_DEBUG_OBJECT (self, "the vv-file's CA in %s", p->ca_file);
  }
  p->cert_subject = dup_set (self, &self->cert_subject);
  if (!p->cert_subject)
    p->cert_subject = g_steal_pointer (&vv.host_subject);
  proxy = dup_set (self, &self->proxy);
  if (proxy || vv.proxy) {
    const gchar *origin = proxy ? "the proxy property" : "the vv-file";

    if (!gst_spice_src_uri_parse_proxy (proxy ? proxy : vv.proxy, &p->proxy,
            &p->proxy_shown, &err)) {
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
          ("Invalid proxy in %s", origin), ("%s", err->message));
      g_free (proxy);
      goto fail;
    }
    g_free (proxy);
  }
  gst_spice_src_vv_clear (&vv);
  g_free (vv_file);

  GST_OBJECT_LOCK (self);
  p->serial = ++self->n_starts;
  p->channel_id = self->channel_id;
  p->connect_timeout_ms = self->connect_timeout_ms;
  p->compression = self->compression;
  GST_OBJECT_UNLOCK (self);
  return p;

fail:
  g_clear_error (&err);
  gst_spice_src_vv_clear (&vv);
  g_free (vv_file);
  gst_spice_src_session_params_unref (p);
  return NULL;
}

/* the state-change thread: the parameters of a new start (this one's
 * alone: nothing of the element that the context reads is written here),
 * a reference to the context helper, and the connect on the context */
static gboolean
gst_spice_src_start (GstBaseSrc * bsrc)
{
  GstSpiceSrc *self = GST_SPICE_SRC (bsrc);
  SessionParams *p = gst_spice_src_make_params (self);

  if (!p)
    return FALSE;
  GST_OBJECT_LOCK (self);
  /* released by this start's teardown, once the session is closed */
  self->helper_ref = self->context_mode == GST_SPICE_SRC_CONTEXT_AUTO;
  GST_OBJECT_UNLOCK (self);
  g_assert (self->start_params == NULL);
  self->start_params = p;

  g_mutex_lock (&self->lock);
  self->flushing = FALSE;
  self->stopping = FALSE;
  self->fatal = FALSE;
  self->have_surface = FALSE;
  self->marked = FALSE;
  gst_spice_region_reset (&self->damage);
  self->cursor_pending = FALSE;
  self->key_locks_pending = FALSE;
  memset (&self->monitors, 0, sizeof (self->monitors));
  self->monitors_pending = FALSE;
  gst_spice_src_agent_reset_locked (self->agent);
  self->st_frames = self->st_rects = self->st_area = 0;
  self->st_invalidates = self->st_invalidates_helper = self->st_input = 0;
  self->st_input_dropped = 0;
  self->st_copied_area = self->st_frames_reused = self->st_catchups = 0;
  g_atomic_int_set (&self->st_prefaulted, 0);
  self->st_reconnects = 0;
  g_clear_pointer (&self->st_last_error, g_free);
  self->mouse_mode_shared = 0;
  self->started = TRUE;
  g_mutex_unlock (&self->lock);

  self->out_valid = FALSE;
  self->hold_frames = FALSE;
  g_atomic_int_set (&self->prefault, FALSE);
  gst_spice_src_display_held_frames_reset (self);
  self->seq = 0;
  self->last_pts = GST_CLOCK_TIME_NONE;
  self->last_push_us = 0;
  self->pushed_any = FALSE;

  if (self->helper_ref)
    gst_spice_src_context_ref ();

  gst_spice_src_session_start (self, p);
  return TRUE;
}

/* the state-change thread: this start's session ends on the context; its
 * parameters are marked stopped first, so that nothing that still runs
 * for it there acts after this returns (docs/spicesrc.md, "One start, one
 * session") */
static gboolean
gst_spice_src_stop (GstBaseSrc * bsrc)
{
  GstSpiceSrc *self = GST_SPICE_SRC (bsrc);
  gint64 deadline = g_get_monotonic_time () + TEARDOWN_TIMEOUT_US;
  SessionParams *p = g_steal_pointer (&self->start_params);
  guint64 serial;
  gboolean done, helper_ref;

  /* none: start() failed, and basesrc does not call stop() then */
  if (!p)
    return TRUE;
  serial = p->serial;
  g_atomic_int_set (&p->stopped, TRUE);
  g_mutex_lock (&self->lock);
  self->stopping = TRUE;
  self->started = FALSE;
  self->flushing = TRUE;
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);

  helper_ref = self->helper_ref;
  self->helper_ref = FALSE;
  gst_spice_src_session_teardown (self, p, helper_ref);

  g_mutex_lock (&self->lock);
  while (self->torn_down < serial)
    if (!g_cond_wait_until (&self->cond, &self->lock, deadline))
      break;
  done = self->torn_down >= serial;
  gst_clear_buffer (&self->cursor.shape);
  memset (&self->cursor, 0, sizeof (self->cursor));
  self->cursor_pending = FALSE;
  self->key_locks_pending = FALSE;
  gst_spice_src_agent_reset_locked (self->agent);
  g_mutex_unlock (&self->lock);
  gst_spice_src_audio_stop (self->audio);
  gst_spice_src_display_cur_drop (self);
  gst_spice_src_display_held_frames_reset (self);

  if (!done)
    GST_WARNING_OBJECT (self, "nobody iterates the default main context: "
        "the SPICE session will be closed when somebody does");
  return TRUE;
}

/* any thread (flushing, stopping): create() and negotiate() return */
static gboolean
gst_spice_src_unlock (GstBaseSrc * bsrc)
{
  GstSpiceSrc *self = GST_SPICE_SRC (bsrc);

  g_mutex_lock (&self->lock);
  self->flushing = TRUE;
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
  return TRUE;
}

/* any thread, after unlock(), before the streaming thread runs again */
static gboolean
gst_spice_src_unlock_stop (GstBaseSrc * bsrc)
{
  GstSpiceSrc *self = GST_SPICE_SRC (bsrc);

  g_mutex_lock (&self->lock);
  self->flushing = FALSE;
  g_mutex_unlock (&self->lock);
  return TRUE;
}

/* any thread (caps queries): the server's size once there is a surface */
static GstCaps *
gst_spice_src_get_caps (GstBaseSrc * bsrc, GstCaps * filter)
{
  GstSpiceSrc *self = GST_SPICE_SRC (bsrc);
  GstCaps *caps;
  gboolean damage;
  gint w, h;

  g_mutex_lock (&self->lock);
  w = self->have_surface ? self->width : 0;
  h = self->have_surface ? self->height : 0;
  damage = self->peer_names_damage;
  g_mutex_unlock (&self->lock);

  if (w > 0 && h > 0) {
    gint fn, fd;

    caps = gst_caps_new_simple ("video/x-raw",
        "format", G_TYPE_STRING, "BGRx",
        "width", G_TYPE_INT, w, "height", G_TYPE_INT, h,
        "framerate", GST_TYPE_FRACTION, 0, 1,
        "pixel-aspect-ratio", GST_TYPE_FRACTION, 1, 1, NULL);
    GST_OBJECT_LOCK (self);
    fn = self->max_fps_n;
    fd = self->max_fps_d;
    GST_OBJECT_UNLOCK (self);
    if (fn > 0 && fd > 0)
      gst_caps_set_simple (caps, "max-framerate", GST_TYPE_FRACTION, fn, fd,
          NULL);
    /* damage-only first, as in the template, to a peer that names it */
    if (damage) {
      GstCaps *dcaps = gst_caps_copy (caps);

      gst_caps_set_features (dcaps, 0,
          gst_caps_features_new (GST_CAPS_FEATURE_MEMORY_SPICE_DAMAGE, NULL));
      gst_caps_append (dcaps, caps);
      caps = dcaps;
    }
  } else {
    caps = gst_pad_get_pad_template_caps (GST_BASE_SRC_PAD (bsrc));
  }
  if (filter) {
    GstCaps *tmp = gst_caps_intersect_full (filter, caps,
        GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref (caps);
    caps = tmp;
  }
  return caps;
}

/* streaming thread */
static gboolean
gst_spice_src_negotiate (GstBaseSrc * bsrc)
{
  GstSpiceSrc *self = GST_SPICE_SRC (bsrc);
  GstCaps *peer;
  gboolean names = FALSE;
  guint i;

  /* don't send caps that would change as soon as the server tells us its
   * size: wait for the surface (unlock() and errors end the wait; then
   * the template's fixation, 1280x800, is used and create() bails out or
   * renegotiates) */
  g_mutex_lock (&self->lock);
  while (!self->have_surface && !self->flushing && !self->fatal)
    g_cond_wait (&self->cond, &self->lock);
  g_mutex_unlock (&self->lock);
  /* damage-only buffers only to a peer that names their feature (the
   * tiler): not to one that takes anything (fakesink, an appsink without
   * caps, videoconvert's passthrough in front of either), which expects
   * whole frames */
  peer = gst_pad_peer_query_caps (GST_BASE_SRC_PAD (bsrc), NULL);
  for (i = 0; peer && !gst_caps_is_any (peer) &&
      i < gst_caps_get_size (peer) && !names; i++) {
    GstCapsFeatures *f = gst_caps_get_features (peer, i);

    names = f && !gst_caps_features_is_any (f) &&
        gst_caps_features_contains (f, GST_CAPS_FEATURE_MEMORY_SPICE_DAMAGE);
  }
  gst_clear_caps (&peer);
  g_mutex_lock (&self->lock);
  self->peer_names_damage = names;
  g_mutex_unlock (&self->lock);
  GST_DEBUG_OBJECT (self, "peer %s damage-only caps",
      names ? "names" : "does not name");
  return GST_BASE_SRC_CLASS (parent_class)->negotiate (bsrc);
}

/* streaming thread (negotiate()) */
static GstCaps *
gst_spice_src_fixate (GstBaseSrc * bsrc, GstCaps * caps)
{
  GstStructure *s;

  caps = gst_caps_make_writable (caps);
  s = gst_caps_get_structure (caps, 0);
  gst_structure_fixate_field_nearest_int (s, "width", 1280);
  gst_structure_fixate_field_nearest_int (s, "height", 800);
  return GST_BASE_SRC_CLASS (parent_class)->fixate (bsrc, caps);
}

/* streaming thread (negotiate()) */
static gboolean
gst_spice_src_set_caps (GstBaseSrc * bsrc, GstCaps * caps)
{
  GstSpiceSrc *self = GST_SPICE_SRC (bsrc);

  gboolean damage_only = gst_spice_caps_is_damage_only (caps);

  GST_DEBUG_OBJECT (self, "caps %" GST_PTR_FORMAT, caps);
  if (!gst_video_info_from_caps (&self->out_info, caps))
    return FALSE;
  self->out_valid = TRUE;
  if (damage_only || damage_only != self->damage_only) {
    GstVideoRectangle full = { 0, 0, GST_VIDEO_INFO_WIDTH (&self->out_info),
      GST_VIDEO_INFO_HEIGHT (&self->out_info)
    };

    /* what downstream had is unknown: the next buffer is the whole
     * surface */
    g_mutex_lock (&self->lock);
    gst_spice_region_add (&self->damage, &full);
    g_mutex_unlock (&self->lock);
  }
  self->damage_only = damage_only;
  return TRUE;
}

/* streaming thread (negotiate()) */
static gboolean
gst_spice_src_decide_allocation (GstBaseSrc * bsrc, GstQuery * query)
{
  GstSpiceSrc *self = GST_SPICE_SRC (bsrc);
  GstCaps *caps;
  GstVideoInfo info;
  GstBufferPool *pool = NULL;
  guint size, min, max;
  gboolean update, ours = FALSE;
  GstStructure *config;

  gst_query_parse_allocation (query, &caps, NULL);
  if (!caps || !gst_video_info_from_caps (&info, caps))
    return FALSE;
  if (gst_spice_caps_is_damage_only (caps)) {
    /* no frames: each buffer is allocated to the damage's size */
    gst_spice_src_display_cur_drop (self);
    gst_spice_src_display_held_frames_reset (self);
    self->hold_frames = FALSE;
    g_atomic_int_set (&self->prefault, FALSE);
    while (gst_query_get_n_allocation_pools (query) > 0)
      gst_query_remove_nth_allocation_pool (query, 0);
    return TRUE;
  }

  if (gst_query_get_n_allocation_pools (query) > 0) {
    gst_query_parse_nth_allocation_pool (query, 0, &pool, &size, &min, &max);
    size = MAX (size, info.size);
    update = TRUE;
  } else {
    /* our own pool: as many frames as circulate (N_FRAMES_IN_FLIGHT) */
    size = info.size;
    min = 0;
    max = N_FRAMES_IN_FLIGHT;
    update = FALSE;
    ours = TRUE;
  }
  if (!pool)
    pool = gst_video_buffer_pool_new ();

  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_set_params (config, caps, size, min, max);
  if (gst_query_find_allocation_meta (query, GST_VIDEO_META_API_TYPE, NULL))
    gst_buffer_pool_config_add_option (config,
        GST_BUFFER_POOL_OPTION_VIDEO_META);
  if (!gst_buffer_pool_set_config (pool, config)) {
    config = gst_buffer_pool_get_config (pool);
    if (!gst_buffer_pool_config_validate_params (config, caps, size, min, max)
        || !gst_buffer_pool_set_config (pool, config)) {
      /* downstream's pool does not want us: use our own */
      gst_object_unref (pool);
      pool = gst_video_buffer_pool_new ();
      config = gst_buffer_pool_get_config (pool);
      gst_buffer_pool_config_set_params (config, caps, info.size, 0,
          N_FRAMES_IN_FLIGHT);
      if (!gst_buffer_pool_set_config (pool, config)) {
        gst_object_unref (pool);
        return FALSE;
      }
      size = info.size;
      min = 0;
      max = N_FRAMES_IN_FLIGHT;
      ours = TRUE;
    }
  }
  /* held frames and the frame being made come from the old pool, and
   * downstream's pool with a maximum could run dry while we hold some */
  gst_spice_src_display_cur_drop (self);
  gst_spice_src_display_held_frames_reset (self);
  self->hold_frames = max == 0 || ours;
  g_atomic_int_set (&self->prefault, self->hold_frames);
  if (update)
    gst_query_set_nth_allocation_pool (query, 0, pool, size, min, max);
  else
    gst_query_add_allocation_pool (query, pool, size, min, max);
  gst_object_unref (pool);
  return TRUE;
}

/* any thread */
static gboolean
gst_spice_src_query (GstBaseSrc * bsrc, GstQuery * query)
{
  if (GST_QUERY_TYPE (query) == GST_QUERY_LATENCY) {
    /* live; a frame leaves as soon as its draw arrived, and we never hold
     * more than the newest picture (damage merges instead of queueing) */
    gst_query_set_latency (query, TRUE, 0, GST_CLOCK_TIME_NONE);
    return TRUE;
  }
  return GST_BASE_SRC_CLASS (parent_class)->query (bsrc, query);
}

/* any thread (upstream events) */
static gboolean
gst_spice_src_event (GstBaseSrc * bsrc, GstEvent * event)
{
  GstSpiceSrc *self = GST_SPICE_SRC (bsrc);

  if (GST_EVENT_TYPE (event) == GST_EVENT_NAVIGATION ||
      gst_spice_event_parse_key_locks (event, NULL))
    return gst_spice_src_inputs_handle_navigation (self, event);
  if (gst_video_event_is_force_key_unit (event)) {
    /* a key unit of damage: the next buffer is the whole surface (a
     * consumer of damage-only buffers that missed one asks for it) */
    g_mutex_lock (&self->lock);
    if (self->have_surface) {
      GstVideoRectangle full = { 0, 0, self->width, self->height };

      GST_INFO_OBJECT (self, "whole surface asked for");
      gst_spice_region_add (&self->damage, &full);
      self->damage_us = g_get_monotonic_time ();
      g_cond_broadcast (&self->cond);
    }
    g_mutex_unlock (&self->lock);
    return TRUE;
  }
  if (gst_spice_src_agent_upstream_event (self->agent, event))
    return TRUE;
  return GST_BASE_SRC_CLASS (parent_class)->event (bsrc, event);
}

/* any thread: EOS sent to the element ends the audio pad too; navigation
 * sent to the element (an application's input) goes where navigation
 * from downstream goes (GstBaseSrc would drop it) */
static gboolean
gst_spice_src_send_event (GstElement * element, GstEvent * event)
{
  if (GST_EVENT_TYPE (event) == GST_EVENT_NAVIGATION) {
    gboolean ret =
        gst_spice_src_inputs_handle_navigation (GST_SPICE_SRC (element),
        event);

    gst_event_unref (event);
    return ret;
  }
  if (GST_EVENT_TYPE (event) == GST_EVENT_EOS)
    gst_spice_src_audio_eos (GST_SPICE_SRC (element)->audio);
  return GST_ELEMENT_CLASS (parent_class)->send_event (element, event);
}

/* streaming thread */
static GstClockTime
arrival_running_time (GstSpiceSrc * self, gint64 arrival_us)
{
  return gst_spice_src_running_time_at (GST_ELEMENT (self), arrival_us);
}

/* streaming thread: the next frame, with the damage since the previous one,
 * once it is due; the cursor and agent events pushed before it */
static GstFlowReturn
gst_spice_src_create (GstPushSrc * psrc, GstBuffer ** outbuf)
{
  GstSpiceSrc *self = GST_SPICE_SRC (psrc);
  GstBaseSrc *bsrc = GST_BASE_SRC (psrc);
  GstBuffer *buf = NULL;
  GstVideoFrame frame;
  GstFlowReturn ret;
  GstSpiceRegion damage;
  gint64 arrival_us, min_interval_us;
  gint fn, fd;
  guint slot;
  GstClockTime pts;

  /* the frame being made is in place before we wait, so that the draws
   * go straight into it; but a frame that downstream still holds may come
   * back while we wait: that one is worth waiting for (it lacks only the
   * damage since), a new one from the pool lacks every pixel */
  if (self->out_valid && !self->damage_only && !self->cur) {
    ret = gst_spice_src_display_cur_install (self, TRUE);
    if (ret != GST_FLOW_OK)
      return ret;
  }

  g_mutex_lock (&self->lock);
again:
  for (;;) {
    gint64 now;

    if (self->flushing) {
      g_mutex_unlock (&self->lock);
      return GST_FLOW_FLUSHING;
    }
    if (self->fatal) {
      g_mutex_unlock (&self->lock);
      return GST_FLOW_ERROR;
    }
    if (self->cursor_pending && self->pushed_any) {
      GstEvent *ev = gst_spice_event_new_cursor (&self->cursor);

      self->cursor_pending = FALSE;
      g_mutex_unlock (&self->lock);
      GST_LOG_OBJECT (self, "cursor %" GST_PTR_FORMAT, ev);
      gst_pad_push_event (GST_BASE_SRC_PAD (self), ev);
      g_mutex_lock (&self->lock);
      continue;
    }
    if (self->key_locks_pending && self->pushed_any) {
      GstEvent *ev = gst_spice_event_new_key_locks (FALSE, self->key_locks);

      self->key_locks_pending = FALSE;
      g_mutex_unlock (&self->lock);
      gst_pad_push_event (GST_BASE_SRC_PAD (self), ev);
      g_mutex_lock (&self->lock);
      continue;
    }
    if (self->monitors_pending && self->pushed_any) {
      GstEvent *ev = gst_spice_event_new_monitors (&self->monitors);

      self->monitors_pending = FALSE;
      g_mutex_unlock (&self->lock);
      GST_INFO_OBJECT (self, "monitors %" GST_PTR_FORMAT, ev);
      gst_pad_push_event (GST_BASE_SRC_PAD (self), ev);
      g_mutex_lock (&self->lock);
      continue;
    }
    if (self->pushed_any) {
      GstEvent *ev = gst_spice_src_agent_pop_locked (self->agent);

      if (ev) {
        g_mutex_unlock (&self->lock);
        gst_pad_push_event (GST_BASE_SRC_PAD (self), ev);
        g_mutex_lock (&self->lock);
        continue;
      }
    }
    now = g_get_monotonic_time ();
    if (gst_spice_src_display_frame_ready_locked (self)) {
      GST_OBJECT_LOCK (self);
      fn = self->max_fps_n;
      fd = self->max_fps_d;
      GST_OBJECT_UNLOCK (self);
      min_interval_us = fn > 0 && fd > 0 ?
          gst_util_uint64_scale_int (G_USEC_PER_SEC, fd, fn) : 0;
      if (!self->pushed_any || !min_interval_us ||
          now >= self->last_push_us + min_interval_us)
        break;
      g_cond_wait_until (&self->cond, &self->lock,
          self->last_push_us + min_interval_us);
      continue;
    }
    /* every change of what this loop looks at is broadcast on self->cond;
     * only the MARK fallback (damage on a surface that has no MARK yet)
     * is due at a time of its own. Otherwise the wait is bounded only as
     * a safety net, so that an idle session does not poll. */
    if (self->have_surface && !self->marked &&
        !gst_spice_region_is_empty (&self->damage))
      g_cond_wait_until (&self->cond, &self->lock,
          MAX (now + 1000, self->surface_us + MARK_TIMEOUT_US));
    else
      g_cond_wait_until (&self->cond, &self->lock, now + IDLE_WAIT_US);
  }

  if (!self->out_valid || self->width != GST_VIDEO_INFO_WIDTH (&self->out_info)
      || self->height != GST_VIDEO_INFO_HEIGHT (&self->out_info)) {
    GstVideoRectangle full = { 0, 0, self->width, self->height };

    GST_INFO_OBJECT (self, "surface is %dx%d: renegotiating", self->width,
        self->height);
    /* a new size means every pixel may have changed */
    gst_spice_region_add (&self->damage, &full);
    g_mutex_unlock (&self->lock);
    if (!gst_base_src_negotiate (bsrc)) {
      g_mutex_lock (&self->lock);
      if (self->flushing) {
        g_mutex_unlock (&self->lock);
        return GST_FLOW_FLUSHING;
      }
      g_mutex_unlock (&self->lock);
      GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL),
          ("could not negotiate %dx%d", full.w, full.h));
      return GST_FLOW_NOT_NEGOTIATED;
    }
    g_mutex_lock (&self->lock);
    if (!self->out_valid ||
        self->width != GST_VIDEO_INFO_WIDTH (&self->out_info) ||
        self->height != GST_VIDEO_INFO_HEIGHT (&self->out_info)) {
      /* downstream refused the size (or it changed again) */
      if (self->out_valid && self->width == full.w && self->height == full.h) {
        g_mutex_unlock (&self->lock);
        GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL),
            ("downstream does not accept %dx%d", full.w, full.h));
        return GST_FLOW_NOT_NEGOTIATED;
      }
    }
    goto again;
  }
  if (self->damage_only) {
    GstSpiceDamageMeta *meta;

    /* damage-only: the damage's pixels, packed at the context's next safe
     * point */
    buf = gst_spice_src_display_packed_take_locked (self, &arrival_us);
    if (!buf) {
      g_cond_wait_until (&self->cond, &self->lock,
          g_get_monotonic_time () + IDLE_WAIT_US);
      goto again;
    }
    meta = gst_buffer_get_spice_damage_meta (buf);
    meta->seq = self->seq++;
    self->st_frames++;
    self->st_rects += meta->n_rects;
    self->st_area += gst_buffer_get_size (buf) / 4;
    g_mutex_unlock (&self->lock);
    goto timestamp;
  }
  if (self->cur &&
      (GST_VIDEO_FRAME_WIDTH (&self->cur_frame) != self->width ||
          GST_VIDEO_FRAME_HEIGHT (&self->cur_frame) != self->height)) {
    g_mutex_unlock (&self->lock);
    gst_spice_src_display_cur_drop (self);
    g_mutex_lock (&self->lock);
    goto again;
  }
  if (!self->cur) {
    g_mutex_unlock (&self->lock);
    ret = gst_spice_src_display_cur_install (self, FALSE);
    if (ret != GST_FLOW_OK)
      return ret;
    g_mutex_lock (&self->lock);
    goto again;
  }
  if (!gst_spice_region_is_empty (&self->stale)) {
    /* damage is pending but the frame lacks pixels that only the context
     * thread may read */
    gst_spice_src_display_catchup_schedule_locked (self);
    g_cond_wait_until (&self->cond, &self->lock,
        g_get_monotonic_time () + IDLE_WAIT_US);
    goto again;
  }

  /* the frame is complete: it leaves with the pending damage */
  buf = gst_spice_src_display_cur_take_locked (self, &frame);
  damage = self->damage;
  gst_spice_region_init (&self->damage);
  gst_spice_region_clip (&damage, self->width, self->height);
  slot = self->seq % DAMAGE_HISTORY;
  gst_spice_region_copy (&self->hist[slot], &damage);
  self->hist_seq[slot] = self->seq + 1;
  arrival_us = self->damage_us;
  self->st_frames++;
  self->st_rects += gst_spice_region_n_rects (&damage);
  self->st_area += gst_spice_region_area (&damage);
  g_mutex_unlock (&self->lock);
  gst_video_frame_unmap (&frame);

  gst_buffer_add_spice_damage_meta (buf, self->seq++,
      gst_spice_region_rects (&damage), gst_spice_region_n_rects (&damage));
  gst_spice_region_clear (&damage);

timestamp:
  pts = arrival_running_time (self, arrival_us);
  if (GST_CLOCK_TIME_IS_VALID (pts) && GST_CLOCK_TIME_IS_VALID (self->last_pts)
      && pts <= self->last_pts)
    pts = self->last_pts + 1;
  if (GST_CLOCK_TIME_IS_VALID (pts))
    self->last_pts = pts;
  GST_BUFFER_PTS (buf) = pts;
  GST_BUFFER_DTS (buf) = GST_CLOCK_TIME_NONE;
  GST_BUFFER_DURATION (buf) = GST_CLOCK_TIME_NONE;
  if (!self->pushed_any)
    GST_BUFFER_FLAG_SET (buf, GST_BUFFER_FLAG_DISCONT);
  self->pushed_any = TRUE;
  self->last_push_us = g_get_monotonic_time ();

  GST_LOG_OBJECT (self, "frame %" G_GUINT64_FORMAT " pts %" GST_TIME_FORMAT,
      self->seq - 1, GST_TIME_ARGS (pts));
  if (self->hold_frames)
    gst_spice_src_display_held_frames_put (self, buf, self->seq - 1);
  *outbuf = buf;
  return GST_FLOW_OK;
}

/* ------------------------------------------------------------------------ */
/* GObject */

/* any thread (the stats property) */
static GstStructure *
gst_spice_src_get_stats (GstSpiceSrc * self)
{
  GstStructure *s;

  g_mutex_lock (&self->lock);
  s = gst_structure_new ("application/x-spicesrc-stats",
      "frames", G_TYPE_UINT64, self->st_frames,
      "damage-rects", G_TYPE_UINT64, self->st_rects,
      "damage-area", G_TYPE_UINT64, self->st_area,
      "invalidates", G_TYPE_UINT64, self->st_invalidates,
      "invalidates-on-helper", G_TYPE_UINT64, self->st_invalidates_helper,
      "reconnects", G_TYPE_UINT, self->st_reconnects,
      "input-events", G_TYPE_UINT64, self->st_input,
      "input-events-dropped", G_TYPE_UINT64, self->st_input_dropped,
      "input-pending", G_TYPE_UINT, self->input_pending,
      "copied-area", G_TYPE_UINT64, self->st_copied_area,
      "frames-reused", G_TYPE_UINT64, self->st_frames_reused,
      "frames-prefaulted", G_TYPE_UINT,
      (guint) g_atomic_int_get (&self->st_prefaulted),
      "catch-ups", G_TYPE_UINT64, self->st_catchups,
      "width", G_TYPE_INT, self->have_surface ? self->width : 0,
      "height", G_TYPE_INT, self->have_surface ? self->height : 0,
      "mouse-mode", G_TYPE_STRING,
      self->mouse_mode_shared == SPICE_MOUSE_MODE_CLIENT ? "client" :
      self->mouse_mode_shared == SPICE_MOUSE_MODE_SERVER ? "server" :
      "unknown", "last-error", G_TYPE_STRING,
      self->st_last_error ? self->st_last_error : "", NULL);
  g_mutex_unlock (&self->lock);
  gst_spice_src_audio_stats (self->audio, s);
  return s;
}

/* any thread */
static void
gst_spice_src_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstSpiceSrc *self = GST_SPICE_SRC (object);

  switch (prop_id) {
    case PROP_URI:{
      GError *err = NULL;

      if (!gst_spice_src_set_uri (self, g_value_get_string (value), &err)) {
        /* keep it: start() reports a malformed URI as an element error */
        GST_WARNING_OBJECT (self, "%s", err->message);
        g_clear_error (&err);
        GST_OBJECT_LOCK (self);
        g_free (self->uri);
        self->uri = g_value_dup_string (value);
        GST_OBJECT_UNLOCK (self);
      }
      break;
    }
    case PROP_PASSWORD:
      GST_OBJECT_LOCK (self);
      g_free (self->password);
      self->password = g_value_dup_string (value);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_PASSWORD_FILE:
      GST_OBJECT_LOCK (self);
      g_free (self->password_file);
      self->password_file = g_value_dup_string (value);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_CA_FILE:
      GST_OBJECT_LOCK (self);
      g_free (self->ca_file);
      self->ca_file = g_value_dup_string (value);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_CERT_SUBJECT:
      GST_OBJECT_LOCK (self);
      g_free (self->cert_subject);
      self->cert_subject = g_value_dup_string (value);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_PROXY:
      GST_OBJECT_LOCK (self);
      g_free (self->proxy);
      self->proxy = g_value_dup_string (value);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_VV_FILE:
      GST_OBJECT_LOCK (self);
      g_free (self->vv_file);
      self->vv_file = g_value_dup_string (value);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_CHANNEL_ID:
      GST_OBJECT_LOCK (self);
      self->channel_id = g_value_get_int (value);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_RECONNECT:
      GST_OBJECT_LOCK (self);
      self->reconnect = g_value_get_enum (value);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_RECONNECT_INTERVAL:
      GST_OBJECT_LOCK (self);
      self->reconnect_interval = g_value_get_uint (value);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_CONNECT_TIMEOUT:
    {
      gboolean warn;

      /* deprecated: seconds, kept for old pipelines */
      GST_OBJECT_LOCK (self);
      self->connect_timeout_ms = g_value_get_uint (value) * 1000;
      warn = !self->warned_connect_timeout;
      self->warned_connect_timeout = TRUE;
      GST_OBJECT_UNLOCK (self);
      if (warn)
        GST_WARNING_OBJECT (self, "connect-timeout (seconds) is deprecated: "
            "use connect-timeout-ms");
      break;
    }
    case PROP_CONNECT_TIMEOUT_MS:
      GST_OBJECT_LOCK (self);
      self->connect_timeout_ms = g_value_get_uint (value);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_COMPRESSION:
      GST_OBJECT_LOCK (self);
      self->compression = g_value_get_enum (value);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_MAX_FRAMERATE:
      GST_OBJECT_LOCK (self);
      self->max_fps_n = gst_value_get_fraction_numerator (value);
      self->max_fps_d = gst_value_get_fraction_denominator (value);
      GST_OBJECT_UNLOCK (self);
      g_mutex_lock (&self->lock);
      g_cond_broadcast (&self->cond);
      g_mutex_unlock (&self->lock);
      break;
    case PROP_CONTEXT:
      GST_OBJECT_LOCK (self);
      self->context_mode = g_value_get_enum (value);
      GST_OBJECT_UNLOCK (self);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

/* any thread */
static void
gst_spice_src_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstSpiceSrc *self = GST_SPICE_SRC (object);

  switch (prop_id) {
    case PROP_URI:
      GST_OBJECT_LOCK (self);
      g_value_set_string (value, self->uri);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_PASSWORD:
      GST_OBJECT_LOCK (self);
      g_value_set_string (value, self->password);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_PASSWORD_FILE:
      GST_OBJECT_LOCK (self);
      g_value_set_string (value, self->password_file);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_CA_FILE:
      GST_OBJECT_LOCK (self);
      g_value_set_string (value, self->ca_file);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_CERT_SUBJECT:
      GST_OBJECT_LOCK (self);
      g_value_set_string (value, self->cert_subject);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_PROXY:
      GST_OBJECT_LOCK (self);
      g_value_set_string (value, self->proxy);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_VV_FILE:
      GST_OBJECT_LOCK (self);
      g_value_set_string (value, self->vv_file);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_CHANNEL_ID:
      g_value_set_int (value, self->channel_id);
      break;
    case PROP_RECONNECT:
      g_value_set_enum (value, self->reconnect);
      break;
    case PROP_RECONNECT_INTERVAL:
      g_value_set_uint (value, self->reconnect_interval);
      break;
    case PROP_CONNECT_TIMEOUT:
      /* whole seconds, rounded up: a timeout never reads as 0 (none) */
      g_value_set_uint (value, (self->connect_timeout_ms + 999) / 1000);
      break;
    case PROP_CONNECT_TIMEOUT_MS:
      g_value_set_uint (value, self->connect_timeout_ms);
      break;
    case PROP_COMPRESSION:
      g_value_set_enum (value, self->compression);
      break;
    case PROP_MAX_FRAMERATE:
      GST_OBJECT_LOCK (self);
      gst_value_set_fraction (value, self->max_fps_n, self->max_fps_d);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_CONTEXT:
      g_value_set_enum (value, self->context_mode);
      break;
    case PROP_STATS:
      g_value_take_boxed (value, gst_spice_src_get_stats (self));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

/* the thread of the last unref (no start left running: each holds a
 * reference until its teardown) */
static void
gst_spice_src_finalize (GObject * object)
{
  GstSpiceSrc *self = GST_SPICE_SRC (object);
  guint i;

  g_free (self->uri);
  g_free (self->password);
  g_free (self->password_file);
  g_free (self->ca_file);
  g_free (self->cert_subject);
  g_free (self->proxy);
  g_free (self->vv_file);
  /* none left: a start's parameters go with its teardown, which holds a
   * reference to the element */
  g_clear_pointer (&self->start_params, gst_spice_src_session_params_unref);
  g_clear_pointer (&self->params, gst_spice_src_session_params_unref);
  gst_spice_region_clear (&self->stale);
  g_clear_object (&self->tls_cancel);
  g_free (self->st_last_error);
  gst_clear_buffer (&self->cursor.shape);
  gst_spice_region_clear (&self->damage);
  for (i = 0; i < N_HELD_FRAMES; i++)
    gst_clear_buffer (&self->held[i]);
  for (i = 0; i < DAMAGE_HISTORY; i++)
    gst_spice_region_clear (&self->hist[i]);
  gst_spice_src_audio_free (self->audio);
  gst_spice_src_agent_free (self->agent);
  g_mutex_clear (&self->lock);
  g_cond_clear (&self->cond);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

/* any thread, once */
static void
gst_spice_src_class_init (GstSpiceSrcClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSrcClass *bsrc_class = GST_BASE_SRC_CLASS (klass);
  GstPushSrcClass *psrc_class = GST_PUSH_SRC_CLASS (klass);

  spicesrc_element_init (NULL);

  gobject_class->set_property = gst_spice_src_set_property;
  gobject_class->get_property = gst_spice_src_get_property;
  gobject_class->finalize = gst_spice_src_finalize;

  /**
   * GstSpiceSrc:uri:
   *
   * `spice://host:port`; `?tls-port=N` adds a TLS port (alone or next to
   * the plain one), `?password=P` a password. `spice+tls://host:port` is
   * `spice://host?tls-port=port`.
   */
  g_object_class_install_property (gobject_class, PROP_URI,
      g_param_spec_string ("uri", "URI",
          "SPICE server URI: spice://host:port[?tls-port=N][&password=P] "
          "or spice+tls://host:port",
          DEFAULT_URI, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_PASSWORD,
      g_param_spec_string ("password", "Password",
          "SPICE ticket (password); overrides the one in the URI",
          DEFAULT_PASSWORD, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstSpiceSrc:password-file:
   *
   * A file whose first line is the ticket; read when the element starts and
   * used instead of #GstSpiceSrc:password. Keeps the secret out of the
   * pipeline description, which GStreamer's parser logs at GST_PIPELINE:4.
   */
  g_object_class_install_property (gobject_class, PROP_PASSWORD_FILE,
      g_param_spec_string ("password-file", "Password file",
          "File whose first line is the SPICE ticket (read at start; "
          "overrides password and the URI's password)", NULL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstSpiceSrc:ca-file:
   *
   * PEM file with the CA certificate(s) that the server's TLS certificate
   * must be signed by. NULL or "": the system's trust store (OpenSSL's
   * default paths, `SSL_CERT_FILE`). A certificate that fails a check is a RESOURCE/NOT_AUTHORIZED
   * error whose message names the check (not signed by the CA, subject,
   * host name, expired).
   */
  g_object_class_install_property (gobject_class, PROP_CA_FILE,
      g_param_spec_string ("ca-file", "CA file",
          "PEM file with the certificate authority that signed the server's "
          "TLS certificate (NULL or empty: the system's)", DEFAULT_CA_FILE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstSpiceSrc:cert-subject:
   *
   * The subject that the server's certificate must have, most significant
   * component first as `openssl x509 -subject` prints it without spaces
   * (`C=XX,O=Example,CN=vm1`). Set, it replaces the host name check;
   * NULL or "": the certificate must name the URI's host.
   */
  g_object_class_install_property (gobject_class, PROP_CERT_SUBJECT,
      g_param_spec_string ("cert-subject", "Certificate subject",
          "Expected subject of the server's TLS certificate "
          "(e.g. \"C=XX,O=Example,CN=host\"); NULL or empty checks the "
          "host name",
          DEFAULT_CERT_SUBJECT, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstSpiceSrc:proxy:
   *
   * HTTP CONNECT proxy that every connection to the server goes through,
   * `http://HOST:PORT` (spice-gtk's session `proxy`; `https://` and
   * `http://USER:PASS@HOST:PORT` too; no port: 3128). NULL or "": the
   * vv-file's `proxy`, else the `SPICE_PROXY` environment variable (read
   * by spice-gtk), else none. Set, it wins over both.
   */
  g_object_class_install_property (gobject_class, PROP_PROXY,
      g_param_spec_string ("proxy", "Proxy",
          "HTTP CONNECT proxy to reach the server through, "
          "http://HOST:PORT (NULL or empty: the vv-file's, else "
          "SPICE_PROXY, else none)", DEFAULT_PROXY,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstSpiceSrc:vv-file:
   *
   * A virt-viewer connection file (`.vv`, as Proxmox VE, oVirt and
   * OpenNebula hand out), read when the element starts: from its
   * `[virt-viewer]` group `type` (must be `spice`), `host`, `port`,
   * `tls-port`, `password`, `ca`, `host-subject` and `proxy`. Properties
   * that are set win over the file (#GstSpiceSrc:uri over host and ports,
   * #GstSpiceSrc:password-file, #GstSpiceSrc:password and the URI's
   * password over `password`, #GstSpiceSrc:ca-file over `ca`,
   * #GstSpiceSrc:cert-subject over `host-subject`, #GstSpiceSrc:proxy over
   * `proxy`). With `delete-this-file=1` the file is deleted once read, as
   * virt-viewer does. Its password is never logged.
   */
  g_object_class_install_property (gobject_class, PROP_VV_FILE,
      g_param_spec_string ("vv-file", "Connection file",
          "virt-viewer connection file (.vv) naming the server, its "
          "ticket, CA and proxy; read at start, deleted after if it says "
          "delete-this-file=1; set properties win over it", DEFAULT_VV_FILE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_CHANNEL_ID,
      g_param_spec_int ("channel-id", "Display channel",
          "Id of the display channel (monitor) to capture", 0, 255,
          DEFAULT_CHANNEL_ID, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_RECONNECT,
      g_param_spec_enum ("reconnect", "Reconnect",
          "What to do when the connection fails or is lost",
          GST_TYPE_SPICE_SRC_RECONNECT, DEFAULT_RECONNECT,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_RECONNECT_INTERVAL,
      g_param_spec_uint ("reconnect-interval", "Reconnect interval",
          "Time between a failure and the next connection attempt (ms)",
          1, 3600 * 1000, DEFAULT_RECONNECT_INTERVAL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstSpiceSrc:connect-timeout-ms:
   *
   * Milliseconds the server has to accept the connection and complete the
   * SPICE link; then the attempt fails like a refused connection (an
   * error naming host and port, or a retry with reconnect=always).
   * 0 waits as long as the system's TCP timeout.
   */
  g_object_class_install_property (gobject_class, PROP_CONNECT_TIMEOUT_MS,
      g_param_spec_uint ("connect-timeout-ms", "Connect timeout",
          "Time the server has to accept and link a connection (ms; 0: "
          "the system's TCP timeout)", 0, 3600 * 1000,
          DEFAULT_CONNECT_TIMEOUT_MS, G_PARAM_READWRITE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
  /**
   * GstSpiceSrc:connect-timeout:
   *
   * #GstSpiceSrc:connect-timeout-ms in seconds (read back rounded up).
   *
   * Deprecated: use #GstSpiceSrc:connect-timeout-ms; the elements' time
   * properties are in milliseconds.
   */
  g_object_class_install_property (gobject_class, PROP_CONNECT_TIMEOUT,
      g_param_spec_uint ("connect-timeout", "Connect timeout (s)",
          "Deprecated: connect-timeout-ms in seconds (s; read back rounded "
          "up)", 0, 3600, DEFAULT_CONNECT_TIMEOUT_MS / 1000,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | G_PARAM_DEPRECATED |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_COMPRESSION,
      g_param_spec_enum ("compression", "Image compression",
          "Image compression to ask the server for (lossless; the server "
          "decides about JPEG and video streams)",
          GST_TYPE_SPICE_SRC_COMPRESSION, DEFAULT_COMPRESSION,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_MAX_FRAMERATE,
      gst_param_spec_fraction ("max-framerate", "Maximum frame rate",
          "Produce at most this many frames per second (0/1: unlimited); "
          "damage of skipped draws merges into the next frame",
          0, 1, G_MAXINT, 1, 0, 1,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_CONTEXT,
      g_param_spec_enum ("context", "Main context",
          "Who iterates the default GMainContext that spice-client-glib "
          "runs on", GST_TYPE_SPICE_SRC_CONTEXT_MODE, DEFAULT_CONTEXT,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstSpiceSrc:stats:
   *
   * Counters since the element started: `frames`, `damage-rects`,
   * `damage-area` (pixels), `invalidates` (draws reported by spice-gtk),
   * `invalidates-on-helper` (of those, how many the helper thread
   * dispatched), `reconnects`, `input-events`, `input-events-dropped`
   * (presses and motion dropped because 512 input events already waited
   * for the context; releases wait up to 1024), `input-pending` (input
   * events waiting for the context now), `copied-area` (pixels
   * copied from spice-gtk's canvas into frames: a buffer that downstream
   * has released is reused and gets only the damage since the frame it
   * held; with damage-only caps, the pixels packed into the buffers),
   * `frames-reused` (frames made that way), `frames-prefaulted`
   * (frames whose pages were written ahead, after the first input event
   * of a new pool), `catch-ups` (frames
   * whose missing pixels the catch-up source copied, because damage was
   * already pending when the frame was taken), `width`, `height`,
   * `mouse-mode` and `last-error`.
   */
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "Counters: frames, damage, reconnects, input events, last error",
          GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_add_static_pad_template (element_class,
      &gst_spice_src_audio_template);
  gst_element_class_set_static_metadata (element_class, "SPICE source",
      "Source/Video/Network",
      "Receives the display of a SPICE server (virtual machine) as raw video "
      "with damage rectangles, and sends it navigation input. "
      "Example: gst-launch-1.0 spicesrc uri=spice://127.0.0.1:5900 ! "
      "videoconvert ! autovideosink", "gst-spice developers");

  element_class->send_event = GST_DEBUG_FUNCPTR (gst_spice_src_send_event);
  bsrc_class->start = GST_DEBUG_FUNCPTR (gst_spice_src_start);
  bsrc_class->stop = GST_DEBUG_FUNCPTR (gst_spice_src_stop);
  bsrc_class->unlock = GST_DEBUG_FUNCPTR (gst_spice_src_unlock);
  bsrc_class->unlock_stop = GST_DEBUG_FUNCPTR (gst_spice_src_unlock_stop);
  bsrc_class->get_caps = GST_DEBUG_FUNCPTR (gst_spice_src_get_caps);
  bsrc_class->fixate = GST_DEBUG_FUNCPTR (gst_spice_src_fixate);
  bsrc_class->negotiate = GST_DEBUG_FUNCPTR (gst_spice_src_negotiate);
  bsrc_class->set_caps = GST_DEBUG_FUNCPTR (gst_spice_src_set_caps);
  bsrc_class->decide_allocation =
      GST_DEBUG_FUNCPTR (gst_spice_src_decide_allocation);
  bsrc_class->query = GST_DEBUG_FUNCPTR (gst_spice_src_query);
  bsrc_class->event = GST_DEBUG_FUNCPTR (gst_spice_src_event);
  psrc_class->create = GST_DEBUG_FUNCPTR (gst_spice_src_create);

  gst_type_mark_as_plugin_api (GST_TYPE_SPICE_SRC_RECONNECT, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_SPICE_SRC_COMPRESSION, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_SPICE_SRC_CONTEXT_MODE, 0);
}

/* any thread */
static void
gst_spice_src_init (GstSpiceSrc * self)
{
  guint i;

  g_mutex_init (&self->lock);
  g_cond_init (&self->cond);
  gst_spice_region_init (&self->damage);
  gst_spice_region_init (&self->stale);
  for (i = 0; i < DAMAGE_HISTORY; i++)
    gst_spice_region_init (&self->hist[i]);
  self->agent = gst_spice_src_agent_new (GST_ELEMENT (self), &self->lock,
      &self->cond);
  self->channel_id = DEFAULT_CHANNEL_ID;
  self->reconnect = DEFAULT_RECONNECT;
  self->reconnect_interval = DEFAULT_RECONNECT_INTERVAL;
  self->connect_timeout_ms = DEFAULT_CONNECT_TIMEOUT_MS;
  self->compression = DEFAULT_COMPRESSION;
  self->max_fps_n = 0;
  self->max_fps_d = 1;
  self->context_mode = DEFAULT_CONTEXT;
  self->last_pts = GST_CLOCK_TIME_NONE;
  self->audio = gst_spice_src_audio_new (GST_ELEMENT (self));

  gst_base_src_set_live (GST_BASE_SRC (self), TRUE);
  gst_base_src_set_format (GST_BASE_SRC (self), GST_FORMAT_TIME);
  gst_base_src_set_do_timestamp (GST_BASE_SRC (self), FALSE);
}

/* ------------------------------------------------------------------------ */
/* GstURIHandler */

/* any thread: the URI handler */
static GstURIType
gst_spice_src_uri_get_type (GType type)
{
  return GST_URI_SRC;
}

/* any thread */
static const gchar *const *
gst_spice_src_uri_get_protocols (GType type)
{
  static const gchar *protocols[] = { "spice", "spice+tls", NULL };

  return protocols;
}

/* any thread */
static gchar *
gst_spice_src_uri_get_uri (GstURIHandler * handler)
{
  GstSpiceSrc *self = GST_SPICE_SRC (handler);
  gchar *uri;

  GST_OBJECT_LOCK (self);
  uri = g_strdup (self->uri);
  GST_OBJECT_UNLOCK (self);
  return uri;
}

/* any thread */
static gboolean
gst_spice_src_uri_set_uri (GstURIHandler * handler, const gchar * uri,
    GError ** error)
{
  return gst_spice_src_set_uri (GST_SPICE_SRC (handler), uri, error);
}

/* any thread, once */
static void
gst_spice_src_uri_handler_init (gpointer g_iface, gpointer iface_data)
{
  GstURIHandlerInterface *iface = g_iface;

  iface->get_type = gst_spice_src_uri_get_type;
  iface->get_protocols = gst_spice_src_uri_get_protocols;
  iface->get_uri = gst_spice_src_uri_get_uri;
  iface->set_uri = gst_spice_src_uri_set_uri;
}
