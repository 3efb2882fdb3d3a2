/* gst-spice tests: run gst-spice-run (or any program) as a child process
 * whose stdout+stderr go to a log file that tests poll. No main loop needed.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef TEST_RUNNER_PROCESS_H
#define TEST_RUNNER_PROCESS_H

#include <gio/gio.h>

G_BEGIN_DECLS typedef struct
{
  GSubprocess *proc;
  gchar *log_path;
} RunnerProcess;

/* $GST_SPICE_BUILD_DIR/tools/runner/gst-spice-run */
gchar *runner_process_binary (void);
/* Starts @argv (NULL-terminated; argv[0] is the program) with @log_dir
 * holding its log; extra environment as "NAME=VALUE" strings (may be NULL). */
RunnerProcess *runner_process_start (const gchar * log_dir,
    const gchar * const *argv, const gchar * const *env);
/* The runner with arguments (NULL-terminated varargs). */
RunnerProcess *
runner_process_start_runner (const gchar * log_dir,
    const gchar * first_arg, ...)
    G_GNUC_NULL_TERMINATED;
     RunnerProcess *runner_process_start_runner_valist (const gchar * log_dir,
    const gchar * first_arg, va_list args);
/* $GST_SPICE_SOURCE_DIR/pipelines/NAME.pipeline */
/* gst-spice-run with the NULL-terminated arguments, to its exit (at most
 * @timeout_ms): its exit code (runner_process_wait_exit); *@log its log */
     gint runner_process_run_sync (const gchar * log_dir, guint timeout_ms,
    gchar ** log, const gchar * first_arg, ...) G_GNUC_NULL_TERMINATED;
     gchar *runner_process_shipped_pipeline (const gchar * name);
     gchar *runner_process_log (RunnerProcess * run);
/* Waits until the log holds @needle at least @count times. */
     gboolean runner_process_wait_log (RunnerProcess * run,
    const gchar * needle, guint count, guint timeout_ms);
/* Waits until the file @path holds @needle @count times (a file that does
 * not exist yet holds nothing). */
     gboolean test_file_wait_text (const gchar * path, const gchar * needle,
    guint count, guint timeout_ms);
/* A GSpawnChildSetupFunc: the child leads a process group of its own (kill
 * it and its children with kill (-pid, …)) and gets SIGKILL when the
 * thread that spawned it dies. */
     void test_child_new_group (gpointer data);
/* A spice-test-client started with --dump-on-signal -o @shot: SIGUSR1
 * until the picture it writes equals @expected (@w x @h, stride @w * 4)
 * or @timeout_ms passed; the pixels that differed in the last dump
 * (G_MAXUINT64: no dump of that size came). */
     guint64 runner_process_dump_until_exact (RunnerProcess * client,
    const gchar * shot, const guint8 * expected, gint w, gint h,
    guint timeout_ms);
/* remote-viewer --debug (and --spice-debug, where @spice_debug) on
 * @uri under an Xvfb of its own (`xvfb-run -a`, a 1280x1024 screen),
 * everything it prints in @log_path, after a first line "XENV DISPLAY
 * XAUTHORITY" for X tools; its process group's leader, 0 when it cannot
 * start. test_remote_viewer_stop() ends the group. */
     GPid test_remote_viewer_start (const gchar * uri, const gchar * log_path,
    gboolean spice_debug);
     void test_remote_viewer_stop (GPid pid);
/* Exit status, -2 if killed by a signal, -1 on timeout (then killed). */
     gint runner_process_wait_exit (RunnerProcess * run, guint timeout_ms);
     void runner_process_signal (RunnerProcess * run, gint sig);
/* A field of its /proc/PID/status in KiB ("VmRSS", "VmHWM": peak RSS); 0
 * when it is not running or has no such field. */
     guint64 runner_process_status_kib (RunnerProcess * run,
    const gchar * field);
     gboolean runner_process_is_running (RunnerProcess * run);
/* Kills it if still running; frees. NULL-safe. */
     void runner_process_free (RunnerProcess * run);

/* A new temporary directory /tmp/PREFIX-XXXXXX (aborts on failure), and
 * its removal with everything in it (frees @dir). */
     gchar *test_tmpdir_new (const gchar * prefix);
     void test_tmpdir_remove (gchar * dir);
/* A checked fixture's directory: declares `static gchar *VAR` and
 * VAR_setup() / VAR_teardown(), which make it with @prefix before each
 * test and remove it after (tcase_add_checked_fixture (tc, VAR_setup,
 * VAR_teardown)). */
#define TEST_TMPDIR_FIXTURE(var, prefix)                                   \
  static gchar *var;                                                       \
  static void var##_setup (void) { var = test_tmpdir_new (prefix); }      \
  static void var##_teardown (void)                                        \
  { test_tmpdir_remove (var); var = NULL; }                                \
  G_STATIC_ASSERT (TRUE)
/* The number of entries in directory @path; G_MAXUINT when it cannot be
 * read. */
     guint test_dir_entries (const gchar * path);

/* Minimal HTTP/1.0 GET on 127.0.0.1; the whole response or NULL. */
     gchar *test_http_get (guint port, const gchar * path);

G_END_DECLS
#endif
