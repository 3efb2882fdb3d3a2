/* gst-spice tests: spice-client-glib test client.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Connects like any spice-gtk client, logs "MARK <us>" and
 * "INV <us> x y w h" (monotonic microseconds) on stdout, sends the given
 * scancodes once the display is ready, and writes the primary surface as a
 * PPM when the display has been quiet for --settle-ms (after at least
 * --min-invalidates invalidates) or after --duration-ms. With
 * --prefer-compression / --prefer-codecs it tells the server its preferred
 * image compression and video codecs once the display is ready, through
 * spice-gtk's API (what spicy's menu does), and logs "PREFERRED-SENT".
 * Every event of the display channel from CLOSED on is logged as
 * "CHANNEL-EVENT <n>", every event of the main channel as
 * "MAIN-EVENT <n> <us>" (and the session's host when it opens, "HOST
 * <host>"), a channel's end as "CHANNEL-DESTROY <type> <us>"
 * and the session's end as "SESSION-DISCONNECTED <us>": a server's
 * MIGRATE_SWITCH_HOST shows as MAIN-EVENT 11 (SWITCHING), the display's
 * destruction and a new display (another MARK). With --dump-on-signal,
 * SIGUSR1 writes the primary surface to --out at once and logs
 * "DUMPED <n>" (or "DUMP-FAILED"), and the client goes on. With
 * --log-locks every lock LED state the inputs channel is told (its
 * `inputs-modifiers` signal: INPUTS_INIT, KEY_MODIFIERS) is logged as
 * "LOCKS <key-modifiers> <us>". SIGUSR2 does what --later-locks (sets
 * the guest's locks, spice_inputs_channel_set_key_locks) and
 * --later-codecs (a new video codec preference) say, and logs
 * "LATER-SENT <us>".
 *
 * With --send-file (once or more: one spice_main_channel_file_copy_async
 * of them all, as a drop of several files on remote-viewer) the client
 * sends the files to the guest's agent once it announced its
 * capabilities ("XFER-BEGIN <us>"), logs the operation's progress as
 * "XFER-PROGRESS <sent> <total>", each file's end as "XFER-FILE <name> OK"
 * or "XFER-FILE <name> ERROR <domain> <code> <message>" and the whole as
 * "XFER-DONE OK <us>" or "XFER-DONE ERROR <domain> <code> <message>", and
 * exits then (0 when every file arrived, 3 otherwise; no picture is
 * waited for). --cancel-at N cancels the operation's GCancellable once N
 * bytes were sent; --quit-at N ends the process at once (its sockets
 * close under spice-gtk: a client that vanishes mid-transfer, exit 4).
 * Exit codes: 0 done, 1 no picture, 2 timeout/connection error, 3 a file
 * did not arrive, 4 --quit-at.
 */
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <unistd.h>
#include <glib-unix.h>
#include <spice-client.h>
#include "ppm.h"

static gchar *host = NULL, *port = NULL, *tls_port = NULL, *ca_file = NULL,
    *cert_subject = NULL, *password = NULL, *out = NULL, *keys = NULL,
    *prefer_codecs = NULL, *later_codecs = NULL;
static gint settle_ms = 400, min_inv = 1, duration_ms = 0, timeout_s = 30,
    prefer_compression = 0, later_locks = -1;
static gboolean log_locks = FALSE;
static SpiceChannel *display;
static gboolean log_inv = FALSE, dump_on_signal = FALSE;
static guint n_dumps;

static GMainLoop *loop;
static guint8 *primary;
static gint pw, ph, pstride;
static gint64 last_inv_us;
static gint n_inv;
static gboolean marked;
static gint exit_code = 2;
static SpiceInputsChannel *inputs;
static gboolean keys_sent;
static gchar **send_files;
static gint64 cancel_at = -1, quit_at = -1;
static GCancellable *xfer_cancel;
static gboolean xfer_begun, xfer_failed;

static gboolean
finish (gpointer data)
{
  if (primary && out) {
    GError *err = NULL;

    if (!test_ppm_write (out, primary, pw, ph, pstride, &err)) {
      g_printerr ("ppm: %s\n", err->message);
      g_clear_error (&err);
      exit_code = 1;
    } else {
      exit_code = 0;
    }
  } else {
    exit_code = primary ? 0 : 1;
  }
  g_main_loop_quit (loop);
  return G_SOURCE_REMOVE;
}

static gboolean
send_keys (gpointer data)
{
  gchar **codes;
  guint i;

  if (!inputs)
    return G_SOURCE_CONTINUE;
  codes = g_strsplit (keys, ",", -1);
  for (i = 0; codes[i]; i++) {
    guint sc = (guint) g_ascii_strtoull (codes[i], NULL, 0);

    spice_inputs_channel_key_press (inputs, sc);
    spice_inputs_channel_key_release (inputs, sc);
  }
  g_strfreev (codes);
  g_print ("KEYS-SENT %" G_GINT64_FORMAT "\n", g_get_monotonic_time ());
  return G_SOURCE_REMOVE;
}

static gboolean
check_settled (gpointer data)
{
  gint64 now = g_get_monotonic_time ();

  if (keys && marked && !keys_sent) {
    keys_sent = TRUE;
    g_timeout_add (200, send_keys, NULL);
  }
  if (duration_ms > 0 || send_files)
    return G_SOURCE_CONTINUE;
  if (marked && n_inv >= min_inv && now - last_inv_us > settle_ms * 1000 &&
      (!keys || keys_sent)) {
    finish (NULL);
    return G_SOURCE_REMOVE;
  }
  return G_SOURCE_CONTINUE;
}

static void
primary_create (SpiceChannel * ch, gint format, gint w, gint h, gint stride,
    gint shmid, gpointer imgdata, gpointer data)
{
  primary = imgdata;
  pw = w;
  ph = h;
  pstride = stride;
  g_print ("PRIMARY %d %d\n", w, h);
}

static void
primary_destroy (SpiceChannel * ch, gpointer data)
{
  primary = NULL;
}

static void
invalidate (SpiceChannel * ch, gint x, gint y, gint w, gint h, gpointer data)
{
  last_inv_us = g_get_monotonic_time ();
  n_inv++;
  if (log_inv)
    g_print ("INV %" G_GINT64_FORMAT " %d %d %d %d\n", last_inv_us, x, y, w, h);
}

/* @list: SpiceVideoCodecTypes "a,b,c", what spicy's menu sends */
static void
change_codecs (const gchar * list)
{
  gchar **names = g_strsplit (list, ",", -1);
  guint n = g_strv_length (names), i;
  gint *codecs = g_new0 (gint, MAX (n, 1));
  GError *err = NULL;

  for (i = 0; i < n; i++)
    codecs[i] = (gint) g_ascii_strtoll (names[i], NULL, 0);
  if (!spice_display_channel_change_preferred_video_codec_types (display,
          codecs, n, &err)) {
    g_printerr ("preferred codecs: %s\n", err->message);
    g_clear_error (&err);
  }
  g_free (codecs);
  g_strfreev (names);
}

/* the display is ready: the preferences, if asked for */
static void
send_preferences (void)
{
  if (prefer_compression > 0)
    spice_display_channel_change_preferred_compression (display,
        prefer_compression);
  if (prefer_codecs)
    change_codecs (prefer_codecs);
  if (prefer_compression > 0 || prefer_codecs)
    g_print ("PREFERRED-SENT\n");
}

/* SIGUSR2: the later locks and codec preference */
static gboolean
send_later (gpointer data)
{
  if (later_locks >= 0 && inputs)
    spice_inputs_channel_set_key_locks (inputs, later_locks);
  if (later_codecs && display)
    change_codecs (later_codecs);
  g_print ("LATER-SENT %" G_GINT64_FORMAT "\n", g_get_monotonic_time ());
  return G_SOURCE_CONTINUE;
}

static void
inputs_modifiers (SpiceInputsChannel * ch, gpointer data)
{
  gint m = 0;

  g_object_get (ch, "key-modifiers", &m, NULL);
  g_print ("LOCKS %d %" G_GINT64_FORMAT "\n", m, g_get_monotonic_time ());
}

static void
mark (SpiceChannel * ch, gint m, gpointer data)
{
  if (m && !marked) {
    marked = TRUE;
    g_print ("MARK %" G_GINT64_FORMAT "\n", g_get_monotonic_time ());
    send_preferences ();
  }
}

/* SIGUSR1 with --dump-on-signal: the picture now */
static gboolean
dump_now (gpointer data)
{
  GError *err = NULL;

  if (primary && out && test_ppm_write (out, primary, pw, ph, pstride, &err))
    g_print ("DUMPED %u\n", ++n_dumps);
  else
    g_print ("DUMP-FAILED %s\n", err ? err->message : "no picture");
  g_clear_error (&err);
  return G_SOURCE_CONTINUE;
}

static void
channel_destroy (SpiceSession * s, SpiceChannel * ch, gpointer data)
{
  gint type = -1;

  g_object_get (ch, "channel-type", &type, NULL);
  g_print ("CHANNEL-DESTROY %d %" G_GINT64_FORMAT "\n", type,
      g_get_monotonic_time ());
  if (ch == display) {
    display = NULL;
    primary = NULL;
    /* the next display marks again */
    marked = FALSE;
  }
  if (ch == (SpiceChannel *) inputs)
    inputs = NULL;
}

static void
session_disconnected (SpiceSession * s, gpointer data)
{
  g_print ("SESSION-DISCONNECTED %" G_GINT64_FORMAT "\n",
      g_get_monotonic_time ());
}

static void
channel_event (SpiceChannel * ch, SpiceChannelEvent ev, gpointer data)
{
  if (SPICE_IS_MAIN_CHANNEL (ch)) {
    g_print ("MAIN-EVENT %d %" G_GINT64_FORMAT "\n", ev,
        g_get_monotonic_time ());
    if (ev == SPICE_CHANNEL_OPENED) {
      SpiceSession *session = NULL;
      gchar *h = NULL;

      g_object_get (ch, "spice-session", &session, NULL);
      g_object_get (session, "host", &h, NULL);
      g_print ("HOST %s\n", h);
      g_free (h);
      g_object_unref (session);
    }
  }
  if (ch == display && ev >= SPICE_CHANNEL_CLOSED)
    g_print ("CHANNEL-EVENT %d\n", ev);
  if (ev >= SPICE_CHANNEL_ERROR_CONNECT) {
    g_printerr ("channel error %d\n", ev);
    exit_code = 2;
    g_main_loop_quit (loop);
  }
}

/* ---- --send-file */

static void
xfer_progress (goffset current, goffset total, gpointer data)
{
  g_print ("XFER-PROGRESS %" G_GINT64_FORMAT " %" G_GINT64_FORMAT "\n",
      (gint64) current, (gint64) total);
  if (quit_at >= 0 && current >= quit_at) {
    g_print ("XFER-QUIT %" G_GINT64_FORMAT "\n", g_get_monotonic_time ());
    _exit (4);
  }
  if (cancel_at >= 0 && current >= cancel_at &&
      !g_cancellable_is_cancelled (xfer_cancel)) {
    g_print ("XFER-CANCEL %" G_GINT64_FORMAT "\n", g_get_monotonic_time ());
    g_cancellable_cancel (xfer_cancel);
  }
}

static void
xfer_file_finished (SpiceFileTransferTask * task, GError * error,
    gpointer data)
{
  gchar *name = spice_file_transfer_task_get_filename (task);

  if (error)
    g_print ("XFER-FILE %s ERROR %s %d %s\n", name,
        g_quark_to_string (error->domain), error->code, error->message);
  else
    g_print ("XFER-FILE %s OK\n", name);
  g_free (name);
}

static void
xfer_new_task (SpiceMainChannel * ch, SpiceFileTransferTask * task,
    gpointer data)
{
  g_signal_connect (task, "finished", G_CALLBACK (xfer_file_finished), NULL);
}

static gboolean
xfer_quit (gpointer data)
{
  finish (NULL);
  exit_code = xfer_failed ? 3 : 0;
  return G_SOURCE_REMOVE;
}

static void
xfer_done (GObject * source, GAsyncResult * res, gpointer data)
{
  GError *error = NULL;

  if (spice_main_channel_file_copy_finish (SPICE_MAIN_CHANNEL (source), res,
          &error)) {
    g_print ("XFER-DONE OK %" G_GINT64_FORMAT "\n", g_get_monotonic_time ());
  } else {
    g_print ("XFER-DONE ERROR %s %d %s\n", g_quark_to_string (error->domain),
        error->code, error->message);
    g_clear_error (&error);
    xfer_failed = TRUE;
  }
  /* a little longer: spice-gtk queues a failed file's status for the
   * agent without writing it; it leaves with the main channel's next
   * write, after the server's next PING (spicesink's: every second) */
  g_timeout_add (xfer_failed ? 1500 : 100, xfer_quit, NULL);
}

/* the agent announced its capabilities: the files go */
static void
xfer_begin (SpiceMainChannel * ch, gpointer data)
{
  gboolean connected = FALSE;
  GFile **files;
  guint i, n;

  g_object_get (ch, "agent-connected", &connected, NULL);
  if (!send_files || xfer_begun || !connected)
    return;
  xfer_begun = TRUE;
  n = g_strv_length (send_files);
  files = g_new0 (GFile *, n + 1);
  for (i = 0; i < n; i++)
    files[i] = g_file_new_for_path (send_files[i]);
  xfer_cancel = g_cancellable_new ();
  g_signal_connect (ch, "new-file-transfer", G_CALLBACK (xfer_new_task),
      NULL);
  g_print ("XFER-BEGIN %" G_GINT64_FORMAT "\n", g_get_monotonic_time ());
  spice_main_channel_file_copy_async (ch, files, G_FILE_COPY_NONE,
      xfer_cancel, xfer_progress, NULL, xfer_done, NULL);
  for (i = 0; i < n; i++)
    g_object_unref (files[i]);
  g_free (files);
}

static void
channel_new (SpiceSession * s, SpiceChannel * ch, gpointer data)
{
  if (SPICE_IS_MAIN_CHANNEL (ch)) {
    g_signal_connect (ch, "channel-event", G_CALLBACK (channel_event), NULL);
    g_signal_connect (ch, "main-agent-update", G_CALLBACK (xfer_begin), NULL);
  }
  if (SPICE_IS_DISPLAY_CHANNEL (ch)) {
    gint id;

    g_object_get (ch, "channel-id", &id, NULL);
    if (id != 0)
      return;
    display = ch;
    g_signal_connect (ch, "display-primary-create",
        G_CALLBACK (primary_create), NULL);
    g_signal_connect (ch, "display-primary-destroy",
        G_CALLBACK (primary_destroy), NULL);
    g_signal_connect (ch, "display-invalidate", G_CALLBACK (invalidate), NULL);
    g_signal_connect (ch, "display-mark", G_CALLBACK (mark), NULL);
    g_signal_connect (ch, "channel-event", G_CALLBACK (channel_event), NULL);
    spice_channel_connect (ch);
  }
  if (SPICE_IS_INPUTS_CHANNEL (ch)) {
    inputs = SPICE_INPUTS_CHANNEL (ch);
    if (log_locks)
      g_signal_connect (ch, "inputs-modifiers",
          G_CALLBACK (inputs_modifiers), NULL);
    spice_channel_connect (ch);
  }
}

static gboolean
timeout_cb (gpointer data)
{
  g_printerr ("timeout\n");
  exit_code = 2;
  g_main_loop_quit (loop);
  return G_SOURCE_REMOVE;
}

int
main (int argc, char **argv)
{
  GOptionEntry entries[] = {
    {"host", 'h', 0, G_OPTION_ARG_STRING, &host, "host", NULL},
    {"port", 'p', 0, G_OPTION_ARG_STRING, &port, "port", NULL},
    {"tls-port", 's', 0, G_OPTION_ARG_STRING, &tls_port, "TLS port", NULL},
    {"ca-file", 0, 0, G_OPTION_ARG_FILENAME, &ca_file, "CA file", NULL},
    {"cert-subject", 0, 0, G_OPTION_ARG_STRING, &cert_subject,
        "subject the server's certificate must have", NULL},
    {"password", 'w', 0, G_OPTION_ARG_STRING, &password, "password", NULL},
    {"out", 'o', 0, G_OPTION_ARG_FILENAME, &out, "PPM output", NULL},
    {"settle-ms", 0, 0, G_OPTION_ARG_INT, &settle_ms, "quiet time", NULL},
    {"min-invalidates", 0, 0, G_OPTION_ARG_INT, &min_inv, "min", NULL},
    {"duration-ms", 0, 0, G_OPTION_ARG_INT, &duration_ms, "run time", NULL},
    {"timeout", 0, 0, G_OPTION_ARG_INT, &timeout_s, "timeout (s)", NULL},
    {"log", 0, 0, G_OPTION_ARG_NONE, &log_inv, "log invalidates", NULL},
    {"dump-on-signal", 0, 0, G_OPTION_ARG_NONE, &dump_on_signal,
        "SIGUSR1 writes the picture to --out", NULL},
    {"keys", 0, 0, G_OPTION_ARG_STRING, &keys, "scancodes a,b,c", NULL},
    {"prefer-compression", 0, 0, G_OPTION_ARG_INT, &prefer_compression,
        "SpiceImageCompression to prefer", NULL},
    {"prefer-codecs", 0, 0, G_OPTION_ARG_STRING, &prefer_codecs,
        "SpiceVideoCodecTypes to prefer, a,b,c", NULL},
    {"log-locks", 0, 0, G_OPTION_ARG_NONE, &log_locks,
        "log the lock LEDs the inputs channel is told", NULL},
    {"later-locks", 0, 0, G_OPTION_ARG_INT, &later_locks,
        "on SIGUSR2: set these SpiceInputsLock locks", NULL},
    {"later-codecs", 0, 0, G_OPTION_ARG_STRING, &later_codecs,
        "on SIGUSR2: prefer these SpiceVideoCodecTypes, a,b,c", NULL},
    {"send-file", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &send_files,
        "send FILE to the guest's agent (repeat: one operation)", "FILE"},
    {"cancel-at", 0, 0, G_OPTION_ARG_INT64, &cancel_at,
        "cancel the file transfer once N bytes were sent", "N"},
    {"quit-at", 0, 0, G_OPTION_ARG_INT64, &quit_at,
        "end the process once N bytes of the files were sent", "N"},
    {NULL}
  };
  GOptionContext *ctx = g_option_context_new ("- gst-spice test client");
  SpiceSession *session;
  GError *err = NULL;

  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &err)) {
    g_printerr ("%s\n", err->message);
    return 2;
  }
  g_option_context_free (ctx);
  setvbuf (stdout, NULL, _IOLBF, 0);
  loop = g_main_loop_new (NULL, FALSE);
  session = spice_session_new ();
  g_object_set (session, "host", host ? host : "127.0.0.1", NULL);
  if (port)
    g_object_set (session, "port", port, NULL);
  if (tls_port)
    g_object_set (session, "tls-port", tls_port, NULL);
  if (ca_file)
    g_object_set (session, "ca-file", ca_file, NULL);
  if (cert_subject)
    g_object_set (session, "cert-subject", cert_subject, NULL);
  if (password)
    g_object_set (session, "password", password, NULL);
  g_signal_connect (session, "channel-new", G_CALLBACK (channel_new), NULL);
  g_signal_connect (session, "channel-destroy", G_CALLBACK (channel_destroy),
      NULL);
  g_signal_connect (session, "disconnected",
      G_CALLBACK (session_disconnected), NULL);
  if (dump_on_signal)
    g_unix_signal_add (SIGUSR1, dump_now, NULL);
  if (later_locks >= 0 || later_codecs)
    g_unix_signal_add (SIGUSR2, send_later, NULL);
  if (!spice_session_connect (session))
    return 2;
  g_timeout_add (20, check_settled, NULL);
  if (duration_ms > 0)
    g_timeout_add (duration_ms, finish, NULL);
  g_timeout_add_seconds (timeout_s, timeout_cb, NULL);
  g_main_loop_run (loop);
  spice_session_disconnect (session);
  g_object_unref (session);
  return exit_code;
}
