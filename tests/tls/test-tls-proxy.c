/* gst-spice tests: upstreams behind an HTTP CONNECT proxy, named by a
 * virt-viewer connection file (.vv) as Proxmox VE hands them out
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Real peers: tinyproxy (in the foreground, a configuration of our own on
 * a free port, CONNECT allowed only to the guest's port, its log in the
 * test's directory) in front of the test guest (TLS port, a CA and a
 * certificate made by openssl, a ticket); spicesrc's proxy and vv-file
 * properties, and the shipped transcode-vp8 run by gst-spice-run with
 * -D UPSTREAM_VV (docs/operator-guide.md "Behind a proxy").
 */
#include <string.h>

#include "runner-process.h"
#include "tls-util.h"

/* a ticket that nothing may log */
#define VV_PASSWORD "Tk7-vv-one-time-94f1c2"

/* ------------------------------------------------------------------ */
/* tinyproxy */

typedef struct
{
  GPid pid;
  guint port;
  gchar *log;
} Tinyproxy;

/* tinyproxy -d on a free loopback port, CONNECT only to @connect_port,
 * its log (LogLevel Connect: one "Request … CONNECT HOST:PORT" line per
 * tunnel) in @dir/tinyproxy.log */
static void
tinyproxy_start (Tinyproxy * tp, const gchar * dir, guint connect_port)
{
  gchar *bin = g_find_program_in_path ("tinyproxy");
  gchar *conf = g_build_filename (dir, "tinyproxy.conf", NULL);
  gchar *text;
  GError *err = NULL;

  fail_unless (bin != NULL, "tinyproxy is not installed "
      "(tools/debian-packages.txt)");
  tp->port = test_pick_free_port ();
  tp->log = g_build_filename (dir, "tinyproxy.log", NULL);
  text = g_strdup_printf ("Port %u\nListen 127.0.0.1\nTimeout 600\n"
      "LogFile \"%s\"\nLogLevel Connect\nMaxClients 50\nAllow 127.0.0.1\n"
      "ConnectPort %u\n", tp->port, tp->log, connect_port);
  fail_unless (g_file_set_contents (conf, text, -1, NULL));
  {
    const gchar *argv[] = { bin, "-d", "-c", conf, NULL };

    fail_unless (g_spawn_async (NULL, (gchar **) argv, NULL,
            G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL |
            G_SPAWN_STDERR_TO_DEV_NULL, tls_child_setup, NULL, &tp->pid,
            &err), "%s", err ? err->message : "");
  }
  fail_unless (spice_raw_tcp_wait_listen (tp->port,
          10000 * test_time_factor ()), "tinyproxy does not listen");
  g_free (text);
  g_free (conf);
  g_free (bin);
}

static void
tinyproxy_stop (Tinyproxy * tp)
{
  kill (tp->pid, SIGTERM);
  waitpid (tp->pid, NULL, 0);
  g_spawn_close_pid (tp->pid);
  g_free (tp->log);
}

/* the tunnels tinyproxy opened to 127.0.0.1:@port (its log) */
static guint
tinyproxy_connects (Tinyproxy * tp, guint port)
{
  gchar *text = NULL, *needle, *p;
  guint n = 0;

  needle = g_strdup_printf ("CONNECT 127.0.0.1:%u ", port);
  if (g_file_get_contents (tp->log, &text, NULL, NULL))
    for (p = text; (p = strstr (p, needle)); p++)
      n++;
  if (n)
    g_printerr ("tinyproxy: %s", strstr (text, "Request") ? strstr (text,
            "Request") : text);
  g_free (needle);
  g_free (text);
  return n;
}

/* ------------------------------------------------------------------ */
/* .vv files and spicesrc's own debug log */

/* @dir/@name holding @text; the path */
static gchar *
write_file (const gchar * dir, const gchar * name, const gchar * text)
{
  gchar *path = g_build_filename (dir, name, NULL);

  fail_unless (g_file_set_contents (path, text, -1, NULL));
  return path;
}

/* the connection file Proxmox would hand out for the TLS guest behind
 * tinyproxy: the CA as one line with "\n" escapes */
static gchar *
write_vv (const gchar * dir, TlsDir * t, guint tls_port, guint proxy_port)
{
  gchar *pem = NULL, *ca, *text, *path;
  gchar **lines;

  fail_unless (g_file_get_contents (t->ca, &pem, NULL, NULL));
  lines = g_strsplit (g_strchomp (pem), "\n", -1);
  ca = g_strjoinv ("\\n", lines);
  text = g_strdup_printf ("[virt-viewer]\ntype=spice\nhost=127.0.0.1\n"
      "port=-1\ntls-port=%u\npassword=" VV_PASSWORD "\n"
      "delete-this-file=1\ntitle=VM 101 - upstream\n"
      "secure-attention=Ctrl+Alt+Ins\nrelease-cursor=Ctrl+Alt+R\n"
      "toggle-fullscreen=Shift+F11\nhost-subject=" TLS_SUBJECT "\n"
      "secure-channels=main;inputs;cursor;playback;record;display\n"
      "proxy=http://127.0.0.1:%u\nca=%s\n", tls_port, proxy_port, ca);
  path = write_file (dir, "upstream.vv", text);
  g_strfreev (lines);
  g_free (text);
  g_free (ca);
  g_free (pem);
  return path;
}

/* the TLS guest with VV_PASSWORD behind tinyproxy, and the .vv file that
 * names it all (in @tmp) */
typedef struct
{
  gchar *tmp;
  TlsDir *t;
  GuestProcess *gp;
  guint tls_port;
  Tinyproxy tp;
  gchar *vv;
} VvUpstream;

static void
vv_upstream_start (VvUpstream * u)
{
  u->tmp = test_tmpdir_new ("gst-spice-vv");
  u->t = tls_dir_new ();
  u->gp = tls_guest_start_full (u->t, VV_PASSWORD, &u->tls_port);
  tinyproxy_start (&u->tp, u->tmp, u->tls_port);
  u->vv = write_vv (u->tmp, u->t, u->tls_port, u->tp.port);
}

static void
vv_upstream_stop (VvUpstream * u)
{
  g_free (u->vv);
  tinyproxy_stop (&u->tp);
  guest_process_stop (u->gp);
  tls_dir_free (u->t);
  test_tmpdir_remove (u->tmp);
}

static GMutex debug_lock;
static GString *debug_text;

/* any thread: every spicesrc* debug message, formatted */
static void
collect_debug (GstDebugCategory * category, GstDebugLevel level,
    const gchar * file, const gchar * function, gint line, GObject * object,
    GstDebugMessage * message, gpointer user_data)
{
  if (!g_str_has_prefix (gst_debug_category_get_name (category), "spicesrc"))
    return;
  g_mutex_lock (&debug_lock);
  g_string_append_printf (debug_text, "%s %s\n",
      gst_debug_category_get_name (category),
      gst_debug_message_get (message));
  g_mutex_unlock (&debug_lock);
}

static void
debug_collect_start (void)
{
  debug_text = g_string_new (NULL);
  gst_debug_set_active (TRUE);
  gst_debug_set_threshold_from_string ("spicesrc*:9", FALSE);
  /* ours only: the default one would print it all on stderr */
  gst_debug_remove_log_function (gst_debug_log_default);
  gst_debug_add_log_function (collect_debug, NULL, NULL);
}

/* what spicesrc logged at every level (the caller frees it) */
static gchar *
debug_collect_stop (void)
{
  gst_debug_remove_log_function (collect_debug);
  gst_debug_set_threshold_from_string ("spicesrc*:0", FALSE);
  gst_debug_add_log_function (gst_debug_log_default, NULL, NULL);
  return g_string_free (debug_text, FALSE);
}

/* spicesrc with @vv_file and @proxy (may be NULL) to READY -> PAUSED:
 * refused, and the first error (ours, before basesrc's) */
static GError *
start_error (const gchar * vv_file, const gchar * proxy)
{
  GstElement *src = gst_element_factory_make ("spicesrc", NULL);
  GstBus *bus = gst_bus_new ();
  GstMessage *m;
  GError *err = NULL;
  gchar *dbg = NULL;

  gst_element_set_bus (src, bus);
  g_object_set (src, "vv-file", vv_file, "proxy", proxy, NULL);
  fail_unless_equals_int (gst_element_set_state (src, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  m = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (m != NULL);
  gst_message_parse_error (m, &err, &dbg);
  /* the reason of a proxy error is in the debug part */
  if (dbg) {
    gchar *both = g_strdup_printf ("%s: %s", err->message, dbg);

    g_free (err->message);
    err->message = both;
  }
  g_printerr ("refused: %s\n", err->message);
  g_free (dbg);
  gst_message_unref (m);
  gst_element_set_state (src, GST_STATE_NULL);
  gst_object_unref (src);
  gst_object_unref (bus);
  return err;
}

/* ------------------------------------------------------------------ */

/* a file that spicesrc cannot use is an error at start that names the
 * file and the key; delete-this-file is honoured even then */
GST_START_TEST (test_vv_file_errors)
{
  gchar *tmp = test_tmpdir_new ("gst-spice-vv");
  static const struct
  {
    const gchar *text, *says;
    gint code;
  } bad[] = {
    {NULL, "No such file", GST_RESOURCE_ERROR_OPEN_READ},
    {"this is not = an [ini file\n[", "is not a connection file",
        GST_RESOURCE_ERROR_SETTINGS},
    {"[ovirt]\nhost=x\n", "has no [virt-viewer] group",
        GST_RESOURCE_ERROR_SETTINGS},
    {"[virt-viewer]\nhost=h\nport=5900\n", "key 'type' is missing",
        GST_RESOURCE_ERROR_SETTINGS},
    {"[virt-viewer]\ntype=vnc\nhost=h\nport=5900\n", "key 'type' is 'vnc'",
        GST_RESOURCE_ERROR_SETTINGS},
    {"[virt-viewer]\ntype=spice\nport=5900\n", "key 'host' is missing",
        GST_RESOURCE_ERROR_SETTINGS},
    {"[virt-viewer]\ntype=spice\nhost=h\nport=70000\n",
        "key 'port' is '70000', not a port", GST_RESOURCE_ERROR_SETTINGS},
    {"[virt-viewer]\ntype=spice\nhost=h\ntls-port=59o1\n",
        "key 'tls-port' is '59o1', not a port", GST_RESOURCE_ERROR_SETTINGS},
    {"[virt-viewer]\ntype=spice\nhost=h\nport=-1\n",
        "keys 'port' and 'tls-port' are both missing",
        GST_RESOURCE_ERROR_SETTINGS},
    {"[virt-viewer]\ntype=spice\nhost=h\nport=5900\nproxy=socks5://p:1080\n",
        "proxy scheme 'socks5' is not http",
        GST_RESOURCE_ERROR_SETTINGS},
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (bad); i++) {
    gchar *name = g_strdup_printf ("bad%u.vv", i);
    gchar *path = bad[i].text ? write_file (tmp, name, bad[i].text) :
        g_build_filename (tmp, "missing.vv", NULL);
    GError *err = start_error (path, NULL);

    fail_unless (g_error_matches (err, GST_RESOURCE_ERROR, bad[i].code),
        "%u: %s", i, err->message);
    fail_unless (strstr (err->message, bad[i].says), "%u: '%s' does not say "
        "'%s'", i, err->message, bad[i].says);
    /* the file is named, except for the proxy's own message, which names
     * where the proxy came from */
    if (g_str_has_prefix (bad[i].says, "proxy"))
      fail_unless (g_str_has_prefix (err->message, "Invalid proxy in the "
              "vv-file: "), "%s", err->message);
    else
      fail_unless (strstr (err->message, path), "%u: %s", i, err->message);
    g_clear_error (&err);
    g_free (path);
    g_free (name);
  }

  {
    gchar *path = write_file (tmp, "vnc.vv", "[virt-viewer]\ntype=vnc\n"
        "host=h\nport=5900\npassword=" VV_PASSWORD "\ndelete-this-file=1\n");
    GError *err = start_error (path, NULL);

    fail_unless (strstr (err->message, "key 'type' is 'vnc'"));
    fail_if (strstr (err->message, VV_PASSWORD));
    fail_if (g_file_test (path, G_FILE_TEST_EXISTS), "%s is still there",
        path);
    g_clear_error (&err);
    g_free (path);
  }
  {
    /* a proxy property that is no HTTP proxy URI */
    gchar *path = write_file (tmp, "good.vv", "[virt-viewer]\ntype=spice\n"
        "host=h\nport=5900\n");
    GError *err = start_error (path, "ftp://p:21");

    fail_unless (g_str_has_prefix (err->message, "Invalid proxy in the "
            "proxy property: "), "%s", err->message);
    fail_unless (strstr (err->message, "proxy scheme 'ftp' is not http"),
        "%s", err->message);
    g_clear_error (&err);
    g_free (path);
  }
  test_tmpdir_remove (tmp);
}

GST_END_TEST;

/* the proxy property alone: spicesrc reaches a plain guest through
 * tinyproxy (its log shows the CONNECT) and gives its exact picture; the
 * property wins over SPICE_PROXY (set to a port where nothing listens) */
GST_START_TEST (test_proxy_property)
{
  gchar *tmp = test_tmpdir_new ("gst-spice-proxy");
  GuestProcess *gp = guest_process_start (NULL, NULL);
  gchar *uri, *proxy, *dead;
  Tinyproxy tp;
  SrcResult r;

  fail_unless (gp != NULL);
  tinyproxy_start (&tp, tmp, guest_process_get_port (gp));
  uri = guest_process_get_uri (gp);
  proxy = g_strdup_printf ("http://127.0.0.1:%u", tp.port);
  dead = g_strdup_printf ("http://127.0.0.1:%u", test_pick_free_port ());
  g_setenv ("SPICE_PROXY", dead, TRUE);

  tls_src_run (&r, "uri", uri, "proxy", proxy, NULL);
  tls_src_assert_guest_frame (&r, gp);
  fail_unless (tinyproxy_connects (&tp, guest_process_get_port (gp)) >= 2,
      "no CONNECT through tinyproxy");
  src_result_clear (&r);

  /* without the property, SPICE_PROXY (nobody there) is what spice-gtk
   * takes: the connection fails */
  tls_src_run (&r, "uri", uri, NULL);
  fail_unless (r.err != NULL, "connected around SPICE_PROXY");
  fail_unless (strstr (r.err->message, "Could not connect"), "%s",
      r.err->message);
  src_result_clear (&r);
  g_unsetenv ("SPICE_PROXY");

  g_free (dead);
  g_free (proxy);
  g_free (uri);
  tinyproxy_stop (&tp);
  guest_process_stop (gp);
  test_tmpdir_remove (tmp);
}

GST_END_TEST;

/* a .vv file alone (TLS port, CA, host-subject, one-time password,
 * proxy): the guest's exact picture through tinyproxy, the file deleted
 * once read, the password in none of spicesrc's debug output at level 9 */
GST_START_TEST (test_vv_file_through_proxy)
{
  VvUpstream u;
  gchar *log, *ca_tmp;
  gint64 end;
  guint n;
  SrcResult r;

  vv_upstream_start (&u);
  debug_collect_start ();
  tls_src_run (&r, "vv-file", u.vv, NULL);
  log = debug_collect_stop ();
  tls_src_assert_guest_frame (&r, u.gp);
  fail_unless (tinyproxy_connects (&u.tp, u.tls_port) >= 2);
  fail_if (g_file_test (u.vv, G_FILE_TEST_EXISTS), "delete-this-file=1: %s "
      "is still there", u.vv);
  fail_unless (strstr (log, "deleted (delete-this-file)"), "%s", log);
  fail_unless (strlen (log) > 1000, "spicesrc logged almost nothing: %s",
      log);
  fail_if (strstr (log, VV_PASSWORD), "the password is in the debug log");
  /* the CA's private temporary file goes with the session */
  ca_tmp = strstr (log, "the vv-file's CA in ");
  fail_unless (ca_tmp != NULL, "%s", log);
  ca_tmp = g_strndup (ca_tmp + strlen ("the vv-file's CA in "),
      strcspn (ca_tmp + strlen ("the vv-file's CA in "), "\n"));
  end = g_get_monotonic_time () + 5 * G_USEC_PER_SEC * test_time_factor ();
  while (g_file_test (ca_tmp, G_FILE_TEST_EXISTS) &&
      g_get_monotonic_time () < end)
    g_usleep (20 * 1000);
  fail_if (g_file_test (ca_tmp, G_FILE_TEST_EXISTS), "%s is left", ca_tmp);
  g_free (ca_tmp);
  g_printerr ("spicesrc*:9 logged %" G_GSIZE_FORMAT " bytes, no password\n",
      strlen (log));
  g_free (log);
  src_result_clear (&r);

  /* the file's ticket is the one used: without it the guest refuses */
  g_free (u.vv);
  u.vv = write_vv (u.tmp, u.t, u.tls_port, u.tp.port);
  tls_src_run (&r, "vv-file", u.vv, "password", "not-the-ticket", NULL);
  fail_unless (r.err != NULL && g_error_matches (r.err, GST_RESOURCE_ERROR,
          GST_RESOURCE_ERROR_NOT_AUTHORIZED), "%s",
      r.err ? r.err->message : "connected with the wrong password");
  fail_if (strstr (r.err->message, VV_PASSWORD));
  src_result_clear (&r);

  /* a certificate refused for its subject: the diagnosis that names the
   * reason reaches the server through the proxy too (one CONNECT more
   * than spice-gtk's main channel) */
  n = tinyproxy_connects (&u.tp, u.tls_port);
  g_free (u.vv);
  u.vv = write_vv (u.tmp, u.t, u.tls_port, u.tp.port);
  tls_src_run (&r, "vv-file", u.vv, "cert-subject", TLS_WRONG_SUBJECT, NULL);
  fail_unless (r.err != NULL, "connected with the wrong subject");
  fail_unless (strstr (r.err->message, "not cert-subject '"
          TLS_WRONG_SUBJECT "'"), "%s", r.err->message);
  fail_unless (tinyproxy_connects (&u.tp, u.tls_port) >= n + 2,
      "the diagnosis went around the proxy");
  src_result_clear (&r);
  vv_upstream_stop (&u);
}

GST_END_TEST;

/* the shipped transcode-vp8, started by gst-spice-run with only
 * -D UPSTREAM_VV=file.vv (debug GST_DEBUG=spicesrc*:9): a client gets the
 * guest's exact picture, tinyproxy's log has the CONNECT to the guest's
 * TLS port, the service log never holds the password, the file is gone;
 * a second start is refused (exit 77) naming the file */
GST_START_TEST (test_runner_vv_through_proxy)
{
  VvUpstream u;
  guint port;
  gchar *vv_arg, *listen, *bin, *path, *log;
  RunnerProcess *run;
  guint8 *dump = NULL, *shot = NULL;
  gint w, h, sw = 0, sh = 0;
  guint64 diff = G_MAXUINT64;
  gint64 end;

  vv_upstream_start (&u);
  vv_arg = g_strdup_printf ("UPSTREAM_VV=%s", u.vv);
  /* once the guest and tinyproxy listen: none of their ports */
  port = test_pick_free_port ();
  listen = g_strdup_printf ("LISTEN_PORT=%u", port);
  bin = runner_process_binary ();
  path = runner_process_shipped_pipeline ("transcode-vp8");
  {
    const gchar *argv[] = { bin, "--stats-interval", "0", "-D", vv_arg,
      "-D", listen, path, NULL
    };
    const gchar *env[] = { "GST_DEBUG=spicesrc*:9", NULL };

    run = runner_process_start (u.tmp, argv, env);
  }
  fail_unless (runner_process_wait_log (run, "playing", 1,
          30000 * test_time_factor ()), "%s", runner_process_log (run));
  fail_unless (guest_process_dump (u.gp, &dump, &w, &h));
  end = g_get_monotonic_time () + 30 * G_USEC_PER_SEC * test_time_factor ();
  while (diff != 0 && g_get_monotonic_time () < end) {
    GError *err = NULL;

    if (test_spicy_screenshot ("127.0.0.1", port, NULL, 20, &shot, &sw, &sh,
            &err)) {
      diff = sw == w && sh == h ? test_bgrx_count_diff (shot, w * 4, dump,
          w * 4, w, h, NULL, NULL) : G_MAXUINT64;
      g_clear_pointer (&shot, g_free);
    }
    g_clear_error (&err);
    if (diff)
      g_usleep (300 * 1000);
  }
  fail_unless (diff == 0, "no exact picture (%" G_GUINT64_FORMAT " pixels "
      "differ): %s", diff, runner_process_log (run));
  fail_unless (tinyproxy_connects (&u.tp, u.tls_port) >= 2);
  fail_if (g_file_test (u.vv, G_FILE_TEST_EXISTS), "%s is still there",
      u.vv);

  runner_process_signal (run, SIGTERM);
  fail_unless_equals_int (runner_process_wait_exit (run, 20000), 0);
  log = runner_process_log (run);
  fail_unless (strstr (log, "spicesrc") && strlen (log) > 1000,
      "no spicesrc debug output: %s", log);
  fail_if (strstr (log, VV_PASSWORD), "the password is in the service log");
  g_printerr ("service log: %" G_GSIZE_FORMAT " bytes, no password\n",
      strlen (log));
  g_free (log);
  runner_process_free (run);

  /* started again, the file is gone: refused before anything starts,
   * naming it, and not restarted (a new file is needed) */
  fail_unless_equals_int (runner_process_run_sync (u.tmp, 60000, &log, "-D",
          vv_arg, "-D", listen, path, NULL), 77);
  fail_unless (strstr (log, "cannot read connection file") &&
      strstr (log, u.vv), "%s", log);
  g_free (log);

  g_free (dump);
  g_free (path);
  g_free (bin);
  g_free (listen);
  g_free (vv_arg);
  vv_upstream_stop (&u);
}

GST_END_TEST;

static Suite *
tls_proxy_suite (void)
{
  Suite *s = suite_create ("tls-proxy");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 120);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_vv_file_errors);
  tcase_add_test (tc, test_proxy_property);
  tcase_add_test (tc, test_vv_file_through_proxy);
  tcase_add_test (tc, test_runner_vv_through_proxy);
  return s;
}

GST_CHECK_MAIN (tls_proxy);
