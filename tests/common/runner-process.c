/* gst-spice tests: child processes with a polled log file
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runner-process.h"
#include "ppm.h"

gchar *
runner_process_binary (void)
{
  const gchar *dir = g_getenv ("GST_SPICE_BUILD_DIR");

  return g_build_filename (dir ? dir : ".", "tools", "runner",
      "gst-spice-run", NULL);
}

RunnerProcess *
runner_process_start (const gchar * log_dir, const gchar * const *argv,
    const gchar * const *env)
{
  GSubprocessLauncher *l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_NONE);
  RunnerProcess *run = g_new0 (RunnerProcess, 1);
  GError *err = NULL;
  static gint n = 0;

  run->log_path = g_strdup_printf ("%s/run-%d.log", log_dir,
      g_atomic_int_add (&n, 1));
  g_subprocess_launcher_set_stdout_file_path (l, run->log_path);
  g_subprocess_launcher_set_flags (l, G_SUBPROCESS_FLAGS_STDERR_MERGE);
  for (; env && *env; env++) {
    gchar **kv = g_strsplit (*env, "=", 2);

    g_subprocess_launcher_setenv (l, kv[0], kv[1] ? kv[1] : "", TRUE);
    g_strfreev (kv);
  }
  run->proc = g_subprocess_launcher_spawnv (l, argv, &err);
  if (!run->proc)
    g_error ("cannot start %s: %s", argv[0], err->message);
  g_object_unref (l);
  return run;
}

RunnerProcess *
runner_process_start_runner_valist (const gchar * log_dir,
    const gchar * first_arg, va_list args)
{
  GPtrArray *argv = g_ptr_array_new_with_free_func (g_free);
  RunnerProcess *run;
  const gchar *a;

  g_ptr_array_add (argv, runner_process_binary ());
  for (a = first_arg; a; a = va_arg (args, const gchar *))
    g_ptr_array_add (argv, g_strdup (a));
  g_ptr_array_add (argv, NULL);
  run = runner_process_start (log_dir, (const gchar * const *) argv->pdata,
      NULL);
  g_ptr_array_unref (argv);
  return run;
}

RunnerProcess *
runner_process_start_runner (const gchar * log_dir, const gchar * first_arg,
    ...)
{
  RunnerProcess *run;
  va_list args;

  va_start (args, first_arg);
  run = runner_process_start_runner_valist (log_dir, first_arg, args);
  va_end (args);
  return run;
}

gint
runner_process_run_sync (const gchar * log_dir, guint timeout_ms,
    gchar ** log, const gchar * first_arg, ...)
{
  RunnerProcess *run;
  va_list args;
  gint code;

  va_start (args, first_arg);
  run = runner_process_start_runner_valist (log_dir, first_arg, args);
  va_end (args);
  code = runner_process_wait_exit (run, timeout_ms);
  *log = runner_process_log (run);
  runner_process_free (run);
  return code;
}

gchar *
runner_process_shipped_pipeline (const gchar * name)
{
  gchar *file = g_strconcat (name, ".pipeline", NULL);
  gchar *path = g_build_filename (g_getenv ("GST_SPICE_SOURCE_DIR"),
      "pipelines", file, NULL);

  g_free (file);
  return path;
}

gchar *
runner_process_log (RunnerProcess * run)
{
  gchar *text = NULL;

  if (!g_file_get_contents (run->log_path, &text, NULL, NULL))
    text = g_strdup ("");
  return text;
}

gboolean
runner_process_wait_log (RunnerProcess * run, const gchar * needle,
    guint count, guint timeout_ms)
{
  return test_file_wait_text (run->log_path, needle, count, timeout_ms);
}

GPid
test_remote_viewer_start (const gchar * uri, const gchar * log_path,
    gboolean spice_debug)
{
  gchar *cmd = g_strdup_printf ("exec xvfb-run -a -s '-screen 0 1280x1024x24' "
      "sh -c 'echo \"XENV $DISPLAY $XAUTHORITY\"; exec remote-viewer --debug "
      "%s %s' > %s 2>&1", spice_debug ? "--spice-debug" : "", uri, log_path);
  const gchar *argv[] = { "sh", "-c", cmd, NULL };
  GError *err = NULL;
  GPid pid = 0;

  if (!g_spawn_async (NULL, (gchar **) argv, NULL, G_SPAWN_SEARCH_PATH |
          G_SPAWN_DO_NOT_REAP_CHILD, test_child_new_group, NULL, &pid, &err)) {
    g_printerr ("remote-viewer: %s\n", err->message);
    g_clear_error (&err);
    pid = 0;
  }
  g_free (cmd);
  return pid;
}

void
test_remote_viewer_stop (GPid pid)
{
  if (pid <= 0)
    return;
  kill (-pid, SIGTERM);
  waitpid (pid, NULL, 0);
}

/* the "DUMPED N" lines in the client's log */
static guint
count_dumps (RunnerProcess * client)
{
  gchar *log = runner_process_log (client);
  const gchar *p = log;
  guint n = 0;

  while ((p = strstr (p, "DUMPED "))) {
    n++;
    p++;
  }
  g_free (log);
  return n;
}

guint64
runner_process_dump_until_exact (RunnerProcess * client, const gchar * shot,
    const guint8 * expected, gint w, gint h, guint timeout_ms)
{
  gint64 end = g_get_monotonic_time () + (gint64) timeout_ms * 1000;
  guint64 diff = G_MAXUINT64;

  while (diff != 0 && g_get_monotonic_time () < end) {
    guint n = count_dumps (client);
    gint64 wait_end = g_get_monotonic_time () + 5 * G_USEC_PER_SEC;
    guint8 *bgrx = NULL;
    gint sw = 0, sh = 0;

    g_usleep (300 * 1000);
    runner_process_signal (client, SIGUSR1);
    while (count_dumps (client) <= n && g_get_monotonic_time () < wait_end)
      g_usleep (20 * 1000);
    if (count_dumps (client) <= n)
      continue;
    if (!test_ppm_read (shot, &bgrx, &sw, &sh, NULL))
      continue;
    if (sw == w && sh == h)
      diff = test_bgrx_count_diff (bgrx, sw * 4, expected, w * 4, w, h, NULL,
          NULL);
    g_free (bgrx);
  }
  return diff;
}

gboolean
test_file_wait_text (const gchar * path, const gchar * needle, guint count,
    guint timeout_ms)
{
  gint64 end = g_get_monotonic_time () + (gint64) timeout_ms * 1000;

  do {
    gchar *text = NULL;
    const gchar *p, *text_end;
    guint found = 0;

    if (!g_file_get_contents (path, &text, NULL, NULL))
      text = g_strdup ("");
    p = text;
    text_end = text + strlen (text);
    /* bounded searches, stopping at @count: logs at GST_DEBUG=*:9 are
     * megabytes, and ASan checks every strstr() against the whole rest */
    while (found < count && (p = g_strstr_len (p, text_end - p, needle))) {
      found++;
      p++;
    }
    g_free (text);
    if (found >= count)
      return TRUE;
    g_usleep (20 * 1000);
  } while (g_get_monotonic_time () < end);
  return FALSE;
}

gboolean
runner_process_is_running (RunnerProcess * run)
{
  return g_subprocess_get_identifier (run->proc) != NULL;
}

gint
runner_process_wait_exit (RunnerProcess * run, guint timeout_ms)
{
  gint64 end = g_get_monotonic_time () + (gint64) timeout_ms * 1000;

  /* GSubprocess reaps the child on GLib's worker thread: no loop needed */
  while (g_get_monotonic_time () < end) {
    if (!runner_process_is_running (run)) {
      g_subprocess_wait (run->proc, NULL, NULL);
      if (g_subprocess_get_if_exited (run->proc))
        return g_subprocess_get_exit_status (run->proc);
      return -2;
    }
    g_usleep (20 * 1000);
  }
  g_subprocess_force_exit (run->proc);
  g_subprocess_wait (run->proc, NULL, NULL);
  return -1;
}

guint64
runner_process_status_kib (RunnerProcess * run, const gchar * field)
{
  const gchar *id = g_subprocess_get_identifier (run->proc);
  gchar *path, *text = NULL, *key;
  const gchar *p;
  guint64 v = 0;

  if (!id)
    return 0;
  path = g_strdup_printf ("/proc/%s/status", id);
  key = g_strdup_printf ("\n%s:", field);
  if (g_file_get_contents (path, &text, NULL, NULL) &&
      (p = strstr (text, key)))
    v = g_ascii_strtoull (p + strlen (key), NULL, 10);
  g_free (key);
  g_free (text);
  g_free (path);
  return v;
}

void
runner_process_signal (RunnerProcess * run, gint sig)
{
  g_subprocess_send_signal (run->proc, sig);
}

void
runner_process_free (RunnerProcess * run)
{
  if (!run)
    return;
  if (runner_process_is_running (run)) {
    g_subprocess_force_exit (run->proc);
    g_subprocess_wait (run->proc, NULL, NULL);
  }
  g_object_unref (run->proc);
  g_free (run->log_path);
  g_free (run);
}

guint
test_dir_entries (const gchar * path)
{
  GDir *d = g_dir_open (path, 0, NULL);
  guint n = 0;

  if (!d)
    return G_MAXUINT;
  while (g_dir_read_name (d))
    n++;
  g_dir_close (d);
  return n;
}

gchar *
test_http_get (guint port, const gchar * path)
{
  GSocketClient *c = g_socket_client_new ();
  GSocketConnection *conn;
  GString *resp;
  gchar *req, buf[4096];
  gssize n;

  g_socket_client_set_timeout (c, 10);
  /* loopback: no proxy lookup (libproxy's C++ unwinding upsets valgrind) */
  g_socket_client_set_enable_proxy (c, FALSE);
  conn = g_socket_client_connect_to_host (c, "127.0.0.1", port, NULL, NULL);
  if (!conn) {
    g_object_unref (c);
    return NULL;
  }
  resp = g_string_new (NULL);
  req = g_strdup_printf ("GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
  g_output_stream_write_all (g_io_stream_get_output_stream (G_IO_STREAM
          (conn)), req, strlen (req), NULL, NULL, NULL);
  while ((n = g_input_stream_read (g_io_stream_get_input_stream (G_IO_STREAM
                  (conn)), buf, sizeof (buf), NULL, NULL)) > 0)
    g_string_append_len (resp, buf, n);
  g_free (req);
  g_object_unref (conn);
  g_object_unref (c);
  return g_string_free (resp, FALSE);
}

gchar *
test_tmpdir_new (const gchar * prefix)
{
  gchar *tmpl = g_strdup_printf ("%s-XXXXXX", prefix);
  gchar *dir = g_dir_make_tmp (tmpl, NULL);

  g_free (tmpl);
  if (!dir)
    g_error ("cannot make a temporary directory");
  return dir;
}

static void
remove_tree (GFile * file)
{
  GFileEnumerator *en = g_file_enumerate_children (file,
      G_FILE_ATTRIBUTE_STANDARD_NAME "," G_FILE_ATTRIBUTE_STANDARD_TYPE,
      G_FILE_QUERY_INFO_NOFOLLOW_SYMLINKS, NULL, NULL);
  GFileInfo *info;

  while (en && (info = g_file_enumerator_next_file (en, NULL, NULL))) {
    GFile *child = g_file_get_child (file, g_file_info_get_name (info));

    if (g_file_info_get_file_type (info) == G_FILE_TYPE_DIRECTORY)
      remove_tree (child);
    else
      g_file_delete (child, NULL, NULL);
    g_object_unref (child);
    g_object_unref (info);
  }
  if (en)
    g_object_unref (en);
  g_file_delete (file, NULL, NULL);
}

void
test_tmpdir_remove (gchar * dir)
{
  GFile *file;

  if (!dir)
    return;
  file = g_file_new_for_path (dir);
  remove_tree (file);
  g_object_unref (file);
  g_free (dir);
}

void
test_child_new_group (gpointer data)
{
  setpgid (0, 0);
  prctl (PR_SET_PDEATHSIG, SIGKILL);
}
