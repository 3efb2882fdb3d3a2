/* gst-spice: spicesrc's session: connect, fail, reconnect, tear down
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One start() of the element is one session (docs/spicesrc.md, "One
 * start, one session"): start() hands its parameters to the context,
 * where a spice-gtk session connects with them, again after each failure
 * with reconnect=always, until stop()'s teardown ends it. The main
 * channel and the captured display channel carry the session: their
 * failures are the element's (errors, spice-health messages, a TLS
 * failure's diagnosis), and the channels' own files follow them
 * (gstspicesrcdisplay.c, gstspicesrccursor.c, the inputs channel that
 * gstspicesrcinputs.c writes to, gstspicesrcaudio.c, gstspicesrcagent.c).
 * Everything here runs on the context thread unless it says otherwise.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <string.h>
#include <glib/gstdio.h>

#include "gstspicesrcsession.h"
#include "gstspicesrccontext.h"
#include "gstspicesrccursor.h"
#include "gstspicesrcdisplay.h"
#include "gstspicesrcinputs.h"
#include "gstspicesrctls.h"

static void ctx_drop_session (GstSpiceSrc * self);
static void ctx_connect (GstSpiceSrc * self);


/* any thread */
static SessionParams *
session_params_ref (SessionParams * p)
{
  g_atomic_ref_count_inc (&p->ref);
  return p;
}

/* any thread: the last reference frees them (usually a teardown on the
 * context, or a TLS diagnosis that outlived its session) */
void
gst_spice_src_session_params_unref (SessionParams * p)
{
  if (!g_atomic_ref_count_dec (&p->ref))
    return;
  g_free (p->uri);
  g_free (p->host);
  g_free (p->port);
  g_free (p->tls_port);
  if (p->password)
    memset (p->password, 0, strlen (p->password));
  g_free (p->password);
  if (p->ca_file_is_temp && g_unlink (p->ca_file) != 0)
    GST_WARNING ("cannot delete %s: %s", p->ca_file, g_strerror (errno));
  g_free (p->ca_file);
  g_free (p->cert_subject);
  g_free (p->proxy);
  g_free (p->proxy_shown);
  g_free (p);
}

/* any thread: the port that messages name beside the host (never the
 * URI in health messages: it may hold the password) */
static const gchar *
session_params_port (const SessionParams * p)
{
  return p->port ? p->port : p->tls_port;
}

/* context: reconnect-interval after a failure with reconnect=always */
static gboolean
ctx_reconnect_timeout (gpointer data)
{
  GstSpiceSrc *self = data;

  self->reconnect_id = 0;
  if (gst_spice_src_session_stopped (self))
    return G_SOURCE_REMOVE;
  g_mutex_lock (&self->lock);
  self->st_reconnects++;
  g_mutex_unlock (&self->lock);
  GST_INFO_OBJECT (self, "reconnecting to %s", self->params->uri);
  ctx_connect (self);
  return G_SOURCE_REMOVE;
}

/* context thread, for the session here (its start not stopped): a
 * spice-health element message (gstspiceevents.h);
 * upstream-lost at most once a second, the next one counts the others.
 * @what goes in the detail after host and port (never the URI: it may
 * hold the password). */
static void
ctx_post_health (GstSpiceSrc * self, const gchar * event,
    const gchar * reason, const gchar * what)
{
  gint64 now = g_get_monotonic_time ();
  gboolean lost = g_str_equal (event, "upstream-lost");
  GstStructure *st;
  gchar *detail;

  if (lost) {
    if (self->lost_posted_us && now - self->lost_posted_us < G_TIME_SPAN_SECOND) {
      self->lost_suppressed++;
      return;
    }
    self->lost_posted_us = now;
  }
  detail = g_strdup_printf ("%s port %s: %s", self->params->host,
      session_params_port (self->params), what);
  st = gst_spice_report_new (TRUE, event, self->params->host,
      self->params->host, reason);
  gst_structure_set (st, "detail", G_TYPE_STRING, detail, "suppressed",
      G_TYPE_UINT64, lost ? self->lost_suppressed : (guint64) 0, NULL);
  g_free (detail);
  if (lost)
    self->lost_suppressed = 0;
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self), st));
}

/* context: the session here (its start not stopped) failed with @event,
 * @msg says how (spice-gtk's @detail beside it); @cert_refused: a TLS
 * failure's certificate is one we refuse. Posts our error (when fatal)
 * before create() can return FLOW_ERROR, drops the session, and
 * reconnects unless fatal. */
static void
ctx_fail (GstSpiceSrc * self, SpiceChannelEvent event, const gchar * msg,
    const gchar * detail, gboolean cert_refused)
{
  gboolean fatal;
  GstSpiceSrcReconnect policy;
  guint interval;

  GST_OBJECT_LOCK (self);
  policy = self->reconnect;
  interval = self->reconnect_interval;
  GST_OBJECT_UNLOCK (self);

  fatal = policy == GST_SPICE_SRC_RECONNECT_NEVER ||
      event == SPICE_CHANNEL_ERROR_AUTH || event == SPICE_CHANNEL_ERROR_TLS;

  GST_WARNING_OBJECT (self, "%s (%s)%s", msg, detail,
      fatal ? "" : ", reconnecting");
  ctx_post_health (self, "upstream-lost",
      event == SPICE_CHANNEL_ERROR_AUTH ? "auth" :
      event == SPICE_CHANNEL_ERROR_TLS ? "tls" :
      event == SPICE_CHANNEL_ERROR_CONNECT ? "connect" :
      event == SPICE_CHANNEL_ERROR_LINK ? "link" : "lost",
      *detail ? detail : "no session");
  self->upstream_lost = TRUE;

  /* post our error before create() can return FLOW_ERROR (basesrc would
   * post its generic "Internal data stream error" first) */
  if (fatal) {
    switch (event) {
      case SPICE_CHANNEL_ERROR_AUTH:
        GST_ELEMENT_ERROR (self, RESOURCE, NOT_AUTHORIZED, ("%s", msg),
            ("%s", detail));
        break;
      case SPICE_CHANNEL_ERROR_TLS:
        /* a certificate we refuse is a configuration that cannot work */
        if (cert_refused)
          GST_ELEMENT_ERROR (self, RESOURCE, NOT_AUTHORIZED, ("%s", msg),
              ("%s", detail));
        else
          GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ, ("%s", msg),
              ("%s", detail));
        break;
      case SPICE_CHANNEL_ERROR_CONNECT:
      case SPICE_CHANNEL_ERROR_LINK:
        GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ, ("%s", msg),
            ("%s", detail));
        break;
      default:
        GST_ELEMENT_ERROR (self, RESOURCE, READ, ("%s", msg), ("%s", detail));
        break;
    }
  }
  g_mutex_lock (&self->lock);
  gst_spice_src_set_last_error_locked (self, msg);
  if (fatal)
    self->fatal = TRUE;
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);

  ctx_drop_session (self);
  if (!fatal && !self->reconnect_id)
    self->reconnect_id = g_timeout_add (MAX (interval, 1),
        ctx_reconnect_timeout, self);
}

/* A TLS failure's diagnosis (gstspicesrctls.c): DNS, a TCP connect and a
 * TLS handshake of up to 5 s each, so never on the context's thread (by
 * default the application's, which runs its main loop on the default
 * context: its UI would freeze). A thread of our own runs it and hands
 * the result back to the context, where ctx_tls_diagnosed() finishes the
 * failure. The thread reads only this struct and the session's
 * parameters, and the element stays alive through its reference; stop's
 * teardown cancels @cancel, which ends the diagnosis at once and makes its
 * result stale. */
typedef struct
{
  GstSpiceSrc *self;            /* a reference */
  SessionParams *params;        /* the failed session's, a reference */
  GCancellable *cancel;         /* also in self->tls_cancel while current */
  gchar *detail;                /* spice-gtk's error */
  /* the worker's result */
  gchar *reason;
  gboolean cert_refused;
} TlsDiagnosis;

/* any thread */
static void
tls_diagnosis_free (gpointer data)
{
  TlsDiagnosis *d = data;

  gst_object_unref (d->self);
  gst_spice_src_session_params_unref (d->params);
  g_object_unref (d->cancel);
  g_free (d->detail);
  g_free (d->reason);
  g_free (d);
}

/* context: the diagnosis is done; unless its start was stopped (or its
 * session ended) meanwhile, the failure ends as any other: today's
 * message with its reason */
static gboolean
ctx_tls_diagnosed (gpointer data)
{
  TlsDiagnosis *d = data;
  GstSpiceSrc *self = d->self;
  gchar *msg;

  /* self->tls_cancel is the current session's diagnosis: then d->params
   * are self->params */
  if (d->cancel != self->tls_cancel || gst_spice_src_session_stopped (self)) {
    GST_DEBUG_OBJECT (self, "TLS diagnosis no longer wanted: %s", d->reason);
    return G_SOURCE_REMOVE;
  }
  g_clear_object (&self->tls_cancel);
  msg = g_strdup_printf ("TLS connection to SPICE server %s failed: %s",
      d->params->uri, d->reason);
  ctx_fail (self, SPICE_CHANNEL_ERROR_TLS, msg, d->detail, d->cert_refused);
  g_free (msg);
  return G_SOURCE_REMOVE;
}

/* the diagnosis thread */
static gpointer
tls_diagnosis_thread (gpointer data)
{
  TlsDiagnosis *d = data;
  const SessionParams *p = d->params;

  /* at most connect-timeout or 5 s per step */
  d->reason = gst_spice_src_tls_diagnose (p->host, p->tls_port, p->ca_file,
      p->cert_subject, p->proxy ? p->proxy : g_getenv ("SPICE_PROXY"),
      p->connect_timeout_ms ? MIN ((p->connect_timeout_ms + 999) / 1000, 5) : 5,
      d->cancel, &d->cert_refused);
  if (g_cancellable_is_cancelled (d->cancel))
    tls_diagnosis_free (d);
  else
    gst_spice_src_context_invoke (ctx_tls_diagnosed, d, tls_diagnosis_free);
  return NULL;
}

/* context: spice-gtk refused the TLS connection without saying why. The
 * session goes now (no more events from it); the error, with the reason
 * that the diagnosis finds, comes when it is done. create() waits
 * meanwhile, as it does for any session that has no picture yet. */
static void
ctx_tls_failed (GstSpiceSrc * self, const gchar * detail)
{
  TlsDiagnosis *d;
  GThread *thread;
  GError *err = NULL;

  ctx_drop_session (self);
  if (self->tls_cancel)
    return;                     /* already looking */
  d = g_new0 (TlsDiagnosis, 1);
  d->self = gst_object_ref (self);
  d->params = session_params_ref (self->params);
  d->cancel = g_cancellable_new ();
  d->detail = g_strdup (detail);
  self->tls_cancel = g_object_ref (d->cancel);
  GST_INFO_OBJECT (self, "TLS failed (%s): looking for the reason", detail);
  thread = g_thread_try_new ("spicesrc-tls", tls_diagnosis_thread, d, &err);
  if (thread) {
    g_thread_unref (thread);
  } else {
    d->reason = g_strdup_printf ("(no thread to look for the reason: %s)",
        err->message);
    g_clear_error (&err);
    ctx_tls_diagnosed (d);
    tls_diagnosis_free (d);
  }
}

/* context: the main or our display channel of the session here failed
 * (its start not stopped) */
static void
ctx_handle_failure (GstSpiceSrc * self, SpiceChannel * channel,
    SpiceChannelEvent event)
{
  const SessionParams *p = self->params;
  const GError *gerr = channel ? spice_channel_get_error (channel) : NULL;
  gchar *detail = g_strdup (gerr ? gerr->message : "");
  gchar *msg;

  switch (event) {
    case SPICE_CHANNEL_ERROR_AUTH:
      msg = g_strdup_printf ("SPICE authentication failed for %s", p->uri);
      break;
    case SPICE_CHANNEL_ERROR_TLS:
      ctx_tls_failed (self, detail);
      g_free (detail);
      return;
    case SPICE_CHANNEL_ERROR_CONNECT:
      /* without a channel: the connect timeout */
      msg = channel ? g_strdup_printf ("Could not connect to SPICE server %s",
          p->uri) : g_strdup_printf ("Could not connect to SPICE server "
          "at host %s port %s: no answer within %u ms", p->host,
          session_params_port (p), p->connect_timeout_ms);
      break;
    case SPICE_CHANNEL_ERROR_LINK:
      msg = g_strdup_printf ("SPICE link with %s failed", p->uri);
      break;
    default:
      msg = g_strdup_printf ("Connection to SPICE server %s lost", p->uri);
      break;
  }
  ctx_fail (self, event, msg, detail, FALSE);
  g_free (msg);
  g_free (detail);
}

/* context (a channel's channel-event, for the channels the session
 * follows) */
static void
on_channel_event (SpiceChannel * channel, SpiceChannelEvent event,
    GstSpiceSrc * self)
{
  GST_DEBUG_OBJECT (self, "%s: event %d", G_OBJECT_TYPE_NAME (channel), event);
  if (gst_spice_src_session_stopped (self))
    return;
  switch (event) {
    case SPICE_CHANNEL_OPENED:
      if (SPICE_IS_MAIN_CHANNEL (channel)) {
        self->session_opened = TRUE;
        if (self->upstream_lost)
          ctx_post_health (self, "upstream-reconnected", "connected",
              "session open");
        self->upstream_lost = FALSE;
        if (self->connect_timeout_id) {
          g_source_remove (self->connect_timeout_id);
          self->connect_timeout_id = 0;
        }
        spice_main_channel_request_mouse_mode (SPICE_MAIN_CHANNEL (channel),
            SPICE_MOUSE_MODE_CLIENT);
      } else if (SPICE_IS_DISPLAY_CHANNEL (channel)) {
        spice_display_channel_change_preferred_compression (channel,
            self->params->compression);
      } else if (SPICE_IS_INPUTS_CHANNEL (channel)) {
        gst_spice_src_inputs_opened (self);
      }
      break;
    case SPICE_CHANNEL_NONE:
    case SPICE_CHANNEL_SWITCHING:
      break;
    default:
      /* the main and our display channel carry the session */
      if (SPICE_IS_MAIN_CHANNEL (channel) ||
          channel == (SpiceChannel *) self->display_ch)
        ctx_handle_failure (self, channel, event);
      else
        GST_WARNING_OBJECT (self, "%s failed (event %d)",
            G_OBJECT_TYPE_NAME (channel), event);
      break;
  }
}

/* context (the session's channel-new): follow the main channel, the
 * captured display's display and cursor channels, the inputs channel and
 * the audio channels */
static void
on_channel_new (SpiceSession * session, SpiceChannel * channel,
    GstSpiceSrc * self)
{
  gint id = 0;

  g_object_get (channel, "channel-id", &id, NULL);
  GST_DEBUG_OBJECT (self, "new channel %s id %d",
      G_OBJECT_TYPE_NAME (channel), id);
  if (gst_spice_src_session_stopped (self))
    return;

  if (SPICE_IS_MAIN_CHANNEL (channel)) {
    self->main_ch = SPICE_MAIN_CHANNEL (channel);
    g_signal_connect (channel, "channel-event",
        G_CALLBACK (on_channel_event), self);
    gst_spice_src_cursor_connect_mouse_mode (self, channel);
    gst_spice_src_agent_set_channel (self->agent, self->main_ch);
  } else if (SPICE_IS_DISPLAY_CHANNEL (channel)) {
    /* the captured id and the heads to its right (gstspicesrcdisplay.c) */
    if (!gst_spice_src_display_follow (self, channel, id))
      return;
    if (id == self->params->channel_id)
      self->display_ch = SPICE_DISPLAY_CHANNEL (channel);
    g_signal_connect (channel, "channel-event",
        G_CALLBACK (on_channel_event), self);
    spice_channel_connect (channel);
  } else if (SPICE_IS_INPUTS_CHANNEL (channel)) {
    if (self->inputs_ch)
      return;
    self->inputs_ch = SPICE_INPUTS_CHANNEL (channel);
    self->inputs_open = FALSE;
    g_signal_connect (channel, "channel-event",
        G_CALLBACK (on_channel_event), self);
    gst_spice_src_inputs_connect (self, channel);
    spice_channel_connect (channel);
  } else if (SPICE_IS_CURSOR_CHANNEL (channel)) {
    if (id != self->params->channel_id || self->cursor_ch)
      return;
    self->cursor_ch = SPICE_CURSOR_CHANNEL (channel);
    g_signal_connect (channel, "channel-event",
        G_CALLBACK (on_channel_event), self);
    gst_spice_src_cursor_connect (self, channel);
    spice_channel_connect (channel);
  } else {
    gst_spice_src_audio_channel_new (self->audio, channel);
  }
  /* usb, smartcard, webdav, port: not connected */
}

/* context: stop following the channel in @slot (one of self's) */
static void
forget_channel (GstSpiceSrc * self, gpointer * slot)
{
  if (*slot) {
    if (slot == (gpointer *) & self->main_ch)
      gst_spice_src_agent_set_channel (self->agent, NULL);
    g_signal_handlers_disconnect_by_data (*slot, self);
    *slot = NULL;
  }
}

/* context (the session's channel-destroy) */
static void
on_channel_destroy (SpiceSession * session, SpiceChannel * channel,
    GstSpiceSrc * self)
{
  if (channel == (SpiceChannel *) self->main_ch)
    forget_channel (self, (gpointer *) & self->main_ch);
  else if (SPICE_IS_DISPLAY_CHANNEL (channel)) {
    if (channel == (SpiceChannel *) self->display_ch)
      forget_channel (self, (gpointer *) & self->display_ch);
    gst_spice_src_display_forget (self, channel);
  } else if (channel == (SpiceChannel *) self->inputs_ch)
    forget_channel (self, (gpointer *) & self->inputs_ch);
  else if (channel == (SpiceChannel *) self->cursor_ch)
    forget_channel (self, (gpointer *) & self->cursor_ch);
  gst_spice_src_audio_forget (self->audio, channel);
}

/* context: disconnect and forget spice-gtk's session (a failure, the
 * teardown); its parameters stay, for a reconnection */
static void
ctx_drop_session (GstSpiceSrc * self)
{
  SpiceSession *session = self->session;

  if (self->connect_timeout_id) {
    g_source_remove (self->connect_timeout_id);
    self->connect_timeout_id = 0;
  }
  if (!session)
    return;
  forget_channel (self, (gpointer *) & self->main_ch);
  forget_channel (self, (gpointer *) & self->display_ch);
  gst_spice_src_display_forget (self, NULL);
  forget_channel (self, (gpointer *) & self->inputs_ch);
  forget_channel (self, (gpointer *) & self->cursor_ch);
  gst_spice_src_audio_forget (self->audio, NULL);
  g_signal_handlers_disconnect_by_data (session, self);
  self->session = NULL;
  self->session_opened = FALSE;
  self->buttons = 0;
  self->have_pos = FALSE;
  self->inputs_open = FALSE;
  self->pos_pending = FALSE;
  /* asynchronous in spice-gtk: channels close on later iterations */
  spice_session_disconnect (session);
  g_object_unref (session);

  g_mutex_lock (&self->lock);
  self->have_surface = FALSE;
  self->marked = FALSE;
  g_mutex_unlock (&self->lock);
}

/* context: the server accepted no connection, or completed no link,
 * within connect-timeout; a failure like a refused connection */
static gboolean
ctx_connect_timed_out (gpointer data)
{
  GstSpiceSrc *self = data;

  self->connect_timeout_id = 0;
  if (!self->session_opened && !gst_spice_src_session_stopped (self))
    ctx_handle_failure (self, NULL, SPICE_CHANNEL_ERROR_CONNECT);
  return G_SOURCE_REMOVE;
}

/* context: a spice-gtk session with self->params (at the start, and at
 * each reconnection) */
static void
ctx_connect (GstSpiceSrc * self)
{
  const SessionParams *p = self->params;
  SpiceSession *session;

  if (gst_spice_src_session_stopped (self) || self->session)
    return;

  GST_INFO_OBJECT (self, "connecting to %s%s%s (start %" G_GUINT64_FORMAT
      ")", p->uri, p->proxy ? " through proxy " : "",
      p->proxy ? p->proxy_shown : "", p->serial);
  session = spice_session_new ();
  g_object_set (session, "host", p->host, NULL);
  if (p->port)
    g_object_set (session, "port", p->port, NULL);
  if (p->tls_port)
    g_object_set (session, "tls-port", p->tls_port, NULL);
  if (p->password)
    g_object_set (session, "password", p->password, NULL);
  if (p->ca_file)
    g_object_set (session, "ca-file", p->ca_file, NULL);
  if (p->cert_subject)
    g_object_set (session, "cert-subject", p->cert_subject, NULL);
  /* set, it replaces SPICE_PROXY, which spice-gtk read when the session
   * was made */
  if (p->proxy)
    g_object_set (session, "proxy", p->proxy, NULL);
  g_object_set (session, "enable-audio", TRUE, "enable-usbredir", FALSE,
      "enable-smartcard", FALSE,
      "preferred-compression", (gint) p->compression, NULL);
  self->session = session;
  g_signal_connect (session, "channel-new", G_CALLBACK (on_channel_new), self);
  g_signal_connect (session, "channel-destroy",
      G_CALLBACK (on_channel_destroy), self);

  if (!spice_session_connect (session)) {
    gchar *msg = g_strdup_printf ("Could not connect to SPICE server %s",
        p->uri);

    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ, ("%s", msg),
        ("spice_session_connect() failed"));
    g_mutex_lock (&self->lock);
    gst_spice_src_set_last_error_locked (self, msg);
    self->fatal = TRUE;
    g_cond_broadcast (&self->cond);
    g_mutex_unlock (&self->lock);
    g_free (msg);
    ctx_drop_session (self);
  } else if (p->connect_timeout_ms) {
    self->connect_timeout_id = g_timeout_add (p->connect_timeout_ms,
        ctx_connect_timed_out, self);
  }
}

/* context: the end of the session here: its TLS diagnosis, its timers,
 * spice-gtk's session, its parameters */
static void
ctx_session_end (GstSpiceSrc * self)
{
  GST_DEBUG_OBJECT (self, "session of start %" G_GUINT64_FORMAT " ends",
      self->params->serial);
  if (self->tls_cancel) {
    g_cancellable_cancel (self->tls_cancel);
    g_clear_object (&self->tls_cancel);
  }
  if (self->reconnect_id) {
    g_source_remove (self->reconnect_id);
    self->reconnect_id = 0;
  }
  ctx_drop_session (self);
  g_clear_pointer (&self->params, gst_spice_src_session_params_unref);
}

/* what start() hands to its connect, and stop() to its teardown, on the
 * context */
typedef struct
{
  GstSpiceSrc *self;
  SessionParams *params;        /* that start's */
  gboolean helper_ref;          /* teardown: release the start()'s helper
                                 * reference */
} SessionOp;

/* context, right after ctx_session_start() or ctx_teardown() (or
 * wherever the context drops it unrun) */
static void
session_op_free (gpointer data)
{
  SessionOp *op = data;

  /* the helper may stop once spice-gtk had time to close the sockets */
  if (op->helper_ref)
    gst_spice_src_context_unref ();
  gst_spice_src_session_params_unref (op->params);
  gst_object_unref (op->self);
  g_free (op);
}

/* context: start()'s connect. The session of the previous start may still
 * be here: its stop gave up waiting and its teardown is queued, and this
 * ran first on the thread of the next start(), which could take the
 * context at once; it ends now (that teardown then finds nothing of its
 * own). A start that was stopped before its connect ran connects
 * nowhere. */
static gboolean
ctx_session_start (gpointer data)
{
  SessionOp *op = data;
  GstSpiceSrc *self = op->self;

  if (g_atomic_int_get (&op->params->stopped)) {
    GST_DEBUG_OBJECT (self, "start %" G_GUINT64_FORMAT " was stopped before "
        "it connected", op->params->serial);
    return G_SOURCE_REMOVE;
  }
  if (self->params)
    ctx_session_end (self);
  self->params = session_params_ref (op->params);
  self->upstream_lost = FALSE;
  self->lost_posted_us = 0;
  self->lost_suppressed = 0;
  self->mouse_mode = 0;
  self->cursor_serial = 0;
  ctx_connect (self);
  return G_SOURCE_REMOVE;
}

/* context: stop()'s teardown ends its own start's session (if a later
 * start has not ended it already) */
static gboolean
ctx_teardown (gpointer data)
{
  SessionOp *op = data;
  GstSpiceSrc *self = op->self;

  if (self->params == op->params)
    ctx_session_end (self);

  g_mutex_lock (&self->lock);
  self->torn_down = MAX (self->torn_down, op->params->serial);
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
  return G_SOURCE_REMOVE;
}

/* the state-change thread (start()) */
void
gst_spice_src_session_start (GstSpiceSrc * self, SessionParams * p)
{
  SessionOp *op;

  op = g_new0 (SessionOp, 1);
  op->self = gst_object_ref (self);
  op->params = session_params_ref (p);
  gst_spice_src_context_invoke (ctx_session_start, op, session_op_free);
}

/* the state-change thread (stop()) */
void
gst_spice_src_session_teardown (GstSpiceSrc * self, SessionParams * p,
    gboolean helper_ref)
{
  SessionOp *op;

  op = g_new0 (SessionOp, 1);
  op->self = gst_object_ref (self);
  op->params = p;
  op->helper_ref = helper_ref;
  gst_spice_src_context_invoke (ctx_teardown, op, session_op_free);
}
