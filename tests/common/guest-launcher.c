/* gst-spice tests: start and drive the SPICE test guest. See
 * guest-launcher.h. */
#include "guest-launcher.h"
#include "ppm.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib/gstdio.h>

#define LAUNCHER_ERROR (g_quark_from_static_string ("guest-launcher-error"))

struct _GuestProcess
{
  GPid pid;
  guint port;
  gint in_fd;                   /* our end of the guest's stdin socket */
  gint out_fd;                  /* guest's stdout pipe */
  GThread *reader;

  GMutex lock;
  GCond cond;
  GPtrArray *lines;             /* gchar *, every line ever printed */
  guint cursor;
  gboolean eof;

  gboolean reaped;
  gint status;
  guint dump_counter;
};

gchar *
guest_process_find_binary (void)
{
  const gchar *env = g_getenv (GUEST_BINARY_ENV);
  const gchar *build = g_getenv ("GST_SPICE_BUILD_DIR");

  if (env && *env)
    return g_strdup (env);
  if (build && *build) {
    gchar *p = g_build_filename (build, GUEST_BINARY_RELPATH, NULL);
    if (g_file_test (p, G_FILE_TEST_IS_EXECUTABLE))
      return p;
    g_free (p);
  }
#ifdef GUEST_BINARY_BUILD_PATH
  return g_strdup (GUEST_BINARY_BUILD_PATH);
#else
  return g_strdup ("spice-test-guest");
#endif
}

gboolean
test_run_openssl (const gchar * dir, const gchar * const *args)
{
  GPtrArray *a = g_ptr_array_new ();
  gint st = -1;
  guint i;

  g_ptr_array_add (a, (gpointer) "openssl");
  for (i = 0; args[i]; i++)
    g_ptr_array_add (a, (gpointer) args[i]);
  g_ptr_array_add (a, NULL);
  g_spawn_sync (dir, (gchar **) a->pdata, NULL, G_SPAWN_SEARCH_PATH |
      G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL,
      NULL, NULL, &st, NULL);
  g_ptr_array_unref (a);
  return g_spawn_check_wait_status (st, NULL);
}

guint
test_time_factor (void)
{
  const gchar *m = g_getenv ("CK_TIMEOUT_MULTIPLIER");
  guint64 f = m ? g_ascii_strtoull (m, NULL, 10) : 1;

  return (guint) CLAMP (f, 1, 100);
}

guint
test_pick_free_port (void)
{
  struct sockaddr_in sa;
  socklen_t len = sizeof (sa);
  int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  guint port = 0;

  g_assert (fd >= 0);
  memset (&sa, 0, sizeof (sa));
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
  sa.sin_port = 0;
  if (bind (fd, (struct sockaddr *) &sa, sizeof (sa)) == 0 &&
      getsockname (fd, (struct sockaddr *) &sa, &len) == 0)
    port = ntohs (sa.sin_port);
  close (fd);
  g_assert (port != 0);
  return port;
}

static gpointer
reader_thread (gpointer data)
{
  GuestProcess *gp = data;
  GString *partial = g_string_new (NULL);
  gchar buf[4096];

  for (;;) {
    gssize n = read (gp->out_fd, buf, sizeof (buf));
    gssize i;

    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    for (i = 0; i < n; i++) {
      if (buf[i] != '\n') {
        g_string_append_c (partial, buf[i]);
        continue;
      }
      g_printerr ("[guest %d] %s\n", (int) gp->pid, partial->str);
      g_mutex_lock (&gp->lock);
      g_ptr_array_add (gp->lines, g_strdup (partial->str));
      g_cond_broadcast (&gp->cond);
      g_mutex_unlock (&gp->lock);
      g_string_truncate (partial, 0);
    }
  }
  g_mutex_lock (&gp->lock);
  if (partial->len > 0)
    g_ptr_array_add (gp->lines, g_strdup (partial->str));
  gp->eof = TRUE;
  g_cond_broadcast (&gp->cond);
  g_mutex_unlock (&gp->lock);
  g_string_free (partial, TRUE);
  return NULL;
}

static void
child_setup (gpointer unused)
{
  /* the guest dies with the thread that started it */
  prctl (PR_SET_PDEATHSIG, SIGTERM);
}

static gboolean
reap (GuestProcess * gp, gboolean block)
{
  if (!gp->reaped) {
    int status = 0;
    pid_t r;
    do {
      r = waitpid (gp->pid, &status, block ? 0 : WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r == gp->pid) {
      gp->reaped = TRUE;
      gp->status = status;
    } else if (r < 0) {
      gp->reaped = TRUE;        /* not our child any more */
      gp->status = 0;
    }
  }
  return gp->reaped;
}

static void
guest_process_free (GuestProcess * gp)
{
  if (gp->in_fd >= 0)
    close (gp->in_fd);
  if (gp->reader)
    g_thread_join (gp->reader);
  if (gp->out_fd >= 0)
    close (gp->out_fd);
  g_ptr_array_unref (gp->lines);
  g_mutex_clear (&gp->lock);
  g_cond_clear (&gp->cond);
  g_free (gp);
}

static GuestProcess *
start_once (const gchar * const *extra_args, GError ** error)
{
  GuestProcess *gp = g_new0 (GuestProcess, 1);
  GPtrArray *argv = g_ptr_array_new_with_free_func (g_free);
  gchar *port_str;
  int sv[2];
  gchar *line;
  gboolean ok;

  gp->port = test_pick_free_port ();
  gp->in_fd = gp->out_fd = -1;
  g_mutex_init (&gp->lock);
  g_cond_init (&gp->cond);
  gp->lines = g_ptr_array_new_with_free_func (g_free);

  g_ptr_array_add (argv, guest_process_find_binary ());
  port_str = g_strdup_printf ("--port=%u", gp->port);
  g_ptr_array_add (argv, port_str);
  g_ptr_array_add (argv, g_strdup ("--exit-on-eof"));
  for (; extra_args && *extra_args; extra_args++)
    g_ptr_array_add (argv, g_strdup (*extra_args));
  g_ptr_array_add (argv, NULL);

  /* stdin is a socket so that writing to a dead guest gives EPIPE, not
   * SIGPIPE (send with MSG_NOSIGNAL) */
  if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    g_set_error (error, LAUNCHER_ERROR, 1, "socketpair: %s",
        g_strerror (errno));
    g_ptr_array_unref (argv);
    guest_process_free (gp);
    return NULL;
  }
  ok = g_spawn_async_with_pipes_and_fds (NULL,
      (const gchar * const *) argv->pdata, NULL, G_SPAWN_DO_NOT_REAP_CHILD,
      child_setup, NULL, sv[1], -1, -1, NULL, NULL, 0, &gp->pid, NULL,
      &gp->out_fd, NULL, error);
  close (sv[1]);
  g_ptr_array_unref (argv);
  if (!ok) {
    close (sv[0]);
    gp->reaped = TRUE;
    guest_process_free (gp);
    return NULL;
  }
  gp->in_fd = sv[0];
  gp->reader = g_thread_new ("guest-reader", reader_thread, gp);

  line = guest_process_wait_line (gp, "listening", GUEST_START_TIMEOUT_MS);
  if (line == NULL) {
    g_set_error (error, LAUNCHER_ERROR, 2,
        "the guest did not print \"listening\" (port %u)", gp->port);
    guest_process_stop (gp);
    return NULL;
  }
  g_free (line);
  return gp;
}

GuestProcess *
guest_process_start (const gchar * const *extra_args, GError ** error)
{
  GError *err = NULL;
  gint attempt;

  for (attempt = 0; attempt < 5; attempt++) {
    GuestProcess *gp;
    g_clear_error (&err);
    gp = start_once (extra_args, &err);
    if (gp)
      return gp;
    /* spawn failures are final; a lost port race is not */
    if (err && err->domain != LAUNCHER_ERROR)
      break;
  }
  g_propagate_error (error, err);
  return NULL;
}

guint
guest_process_get_port (GuestProcess * gp)
{
  return gp->port;
}

GPid
guest_process_get_pid (GuestProcess * gp)
{
  return gp->pid;
}

gchar *
guest_process_get_uri (GuestProcess * gp)
{
  return g_strdup_printf ("spice://127.0.0.1:%u", gp->port);
}

void
guest_process_command (GuestProcess * gp, const gchar * fmt, ...)
{
  va_list ap;
  gchar *cmd, *line;
  gsize off = 0, len;

  va_start (ap, fmt);
  cmd = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  line = g_strconcat (cmd, "\n", NULL);
  len = strlen (line);
  while (off < len) {
    ssize_t n = send (gp->in_fd, line + off, len - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      g_printerr ("[guest %d] cannot send \"%s\": %s\n", (int) gp->pid, cmd,
          g_strerror (errno));
      break;
    }
    off += (gsize) n;
  }
  g_free (line);
  g_free (cmd);
}

static gint
find_locked (GuestProcess * gp, guint from, const gchar * prefix)
{
  guint i;
  for (i = from; i < gp->lines->len; i++) {
    if (g_str_has_prefix (g_ptr_array_index (gp->lines, i), prefix))
      return (gint) i;
  }
  return -1;
}

gchar *
guest_process_wait_line_from (GuestProcess * gp, guint from,
    const gchar * prefix, guint timeout_ms, guint * index)
{
  gint64 end = g_get_monotonic_time () + (gint64) timeout_ms * 1000;
  gchar *ret = NULL;
  gint found;

  g_mutex_lock (&gp->lock);
  for (;;) {
    found = find_locked (gp, from, prefix);
    if (found >= 0) {
      ret = g_strdup (g_ptr_array_index (gp->lines, found));
      if (index)
        *index = (guint) found;
      break;
    }
    /* lines are only appended: skip what was already searched */
    from = MAX (from, gp->lines->len);
    if (gp->eof)
      break;
    if (!g_cond_wait_until (&gp->cond, &gp->lock, end)) {
      found = find_locked (gp, from, prefix);
      if (found >= 0) {
        ret = g_strdup (g_ptr_array_index (gp->lines, found));
        if (index)
          *index = (guint) found;
      }
      break;
    }
  }
  g_mutex_unlock (&gp->lock);
  return ret;
}

gchar *
guest_process_wait_line (GuestProcess * gp, const gchar * prefix,
    guint timeout_ms)
{
  guint idx = 0;
  gchar *line;

  g_mutex_lock (&gp->lock);
  idx = gp->cursor;
  g_mutex_unlock (&gp->lock);
  line = guest_process_wait_line_from (gp, idx, prefix, timeout_ms, &idx);
  if (line) {
    g_mutex_lock (&gp->lock);
    gp->cursor = MAX (gp->cursor, idx + 1);
    g_mutex_unlock (&gp->lock);
  } else {
    g_printerr ("[guest %d] no line starting with \"%s\" within %u ms\n",
        (int) gp->pid, prefix, timeout_ms);
  }
  return line;
}

guint
guest_process_mark (GuestProcess * gp)
{
  guint n;
  g_mutex_lock (&gp->lock);
  n = gp->lines->len;
  g_mutex_unlock (&gp->lock);
  return n;
}

gchar *
guest_process_find_line (GuestProcess * gp, guint from, const gchar * prefix,
    guint * index)
{
  gchar *ret = NULL;
  gint found;

  g_mutex_lock (&gp->lock);
  found = find_locked (gp, from, prefix);
  if (found >= 0) {
    ret = g_strdup (g_ptr_array_index (gp->lines, found));
    if (index)
      *index = (guint) found;
  }
  g_mutex_unlock (&gp->lock);
  return ret;
}

guint
guest_process_count_lines (GuestProcess * gp, guint from, const gchar * prefix)
{
  guint i, n = 0;

  g_mutex_lock (&gp->lock);
  for (i = from; i < gp->lines->len; i++)
    if (g_str_has_prefix (g_ptr_array_index (gp->lines, i), prefix))
      n++;
  g_mutex_unlock (&gp->lock);
  return n;
}

gchar **
guest_process_get_lines (GuestProcess * gp)
{
  gchar **ret;
  guint i;

  g_mutex_lock (&gp->lock);
  ret = g_new0 (gchar *, gp->lines->len + 1);
  for (i = 0; i < gp->lines->len; i++)
    ret[i] = g_strdup (g_ptr_array_index (gp->lines, i));
  g_mutex_unlock (&gp->lock);
  return ret;
}

gboolean
guest_process_dump (GuestProcess * gp, guint8 ** bgrx, gint * w, gint * h)
{
  gchar *name = g_strdup_printf ("gst-spice-guest-dump-%d-%d-%u.ppm",
      (int) getpid (), (int) gp->pid, ++gp->dump_counter);
  gchar *path = g_build_filename (g_get_tmp_dir (), name, NULL);
  gchar *expect = g_strdup_printf ("dumped %s", path);
  guint mark = guest_process_mark (gp);
  gchar *line;
  GError *err = NULL;
  gboolean ok = FALSE;

  guest_process_command (gp, "dump %s", path);
  line = guest_process_wait_line_from (gp, mark, expect,
      GUEST_LINE_TIMEOUT_MS, NULL);
  if (line) {
    ok = test_ppm_read (path, bgrx, w, h, &err);
    if (!ok)
      g_printerr ("[guest %d] %s\n", (int) gp->pid, err->message);
    g_clear_error (&err);
  }
  g_unlink (path);
  g_free (line);
  g_free (expect);
  g_free (path);
  g_free (name);
  return ok;
}

gboolean
guest_process_is_running (GuestProcess * gp)
{
  return !reap (gp, FALSE);
}

gint
guest_process_stop (GuestProcess * gp)
{
  gint64 end;
  gint ret;

  if (gp == NULL)
    return -1;
  if (!reap (gp, FALSE)) {
    kill (gp->pid, SIGTERM);
    end = g_get_monotonic_time () + GUEST_STOP_TIMEOUT_MS * 1000;
    while (!reap (gp, FALSE) && g_get_monotonic_time () < end)
      g_usleep (10 * 1000);
    if (!reap (gp, FALSE)) {
      g_printerr ("[guest %d] did not exit after SIGTERM: SIGKILL\n",
          (int) gp->pid);
      kill (gp->pid, SIGKILL);
      reap (gp, TRUE);
    }
  }
  if (WIFEXITED (gp->status))
    ret = WEXITSTATUS (gp->status);
  else
    ret = -1;
  g_spawn_close_pid (gp->pid);
  guest_process_free (gp);
  return ret;
}

gint
test_spicy_screenshot_status (const gchar * host, guint port, gboolean tls,
    const gchar * password, const gchar * const *env_add, guint timeout_s,
    guint8 ** bgrx, gint * w, gint * h, gboolean * got_picture,
    gchar ** output)
{
  GError *tmp_err = NULL;
  gchar *dir = g_dir_make_tmp ("gst-spice-shot-XXXXXX", &tmp_err);
  gchar *path, *port_str, *timeout_str, *out = NULL, *err_out = NULL;
  gchar **envp = g_get_environ ();
  const gchar *argv[16];
  gint i = 0, status = 0, ret;
  gboolean got = FALSE;

  if (output)
    *output = NULL;
  if (got_picture)
    *got_picture = FALSE;
  if (dir == NULL) {
    g_printerr ("spicy-screenshot: no temporary directory: %s\n",
        tmp_err->message);
    g_clear_error (&tmp_err);
    g_strfreev (envp);
    return -1;
  }
  path = g_build_filename (dir, "shot.ppm", NULL);
  port_str = g_strdup_printf ("%u", port);
  timeout_str = g_strdup_printf ("%u", timeout_s);
  argv[i++] = "timeout";
  argv[i++] = "-k";
  argv[i++] = "5";
  argv[i++] = timeout_str;
  argv[i++] = "spicy-screenshot";
  argv[i++] = "-h";
  argv[i++] = host;
  argv[i++] = tls ? "-s" : "-p";
  argv[i++] = port_str;
  if (password) {
    argv[i++] = "-w";
    argv[i++] = password;
  }
  argv[i++] = "-o";
  argv[i++] = path;
  argv[i++] = NULL;
  for (i = 0; env_add && env_add[i]; i += 2)
    envp = g_environ_setenv (envp, env_add[i], env_add[i + 1], TRUE);

  if (!g_spawn_sync (NULL, (gchar **) argv, envp, G_SPAWN_SEARCH_PATH, NULL,
          NULL, &out, &err_out, &status, NULL))
    ret = -1;
  else if (WIFEXITED (status))
    ret = WEXITSTATUS (status);
  else
    ret = 128;
  if (bgrx && g_file_test (path, G_FILE_TEST_EXISTS))
    got = test_ppm_read (path, bgrx, w, h, NULL);
  if (got_picture)
    *got_picture = got;
  if (output)
    *output = g_strconcat (out ? out : "", err_out ? err_out : "", NULL);
  g_unlink (path);
  g_rmdir (dir);
  g_strfreev (envp);
  g_free (out);
  g_free (err_out);
  g_free (timeout_str);
  g_free (port_str);
  g_free (path);
  g_free (dir);
  return ret;
}

gboolean
test_spicy_screenshot (const gchar * host, guint port, const gchar * password,
    guint timeout_s, guint8 ** bgrx, gint * w, gint * h, GError ** error)
{
  gchar *output = NULL;
  gboolean got = FALSE;
  gint status = test_spicy_screenshot_status (host, port, FALSE, password,
      NULL, timeout_s, bgrx, w, h, &got, &output);

  if (!got)
    g_set_error (error, LAUNCHER_ERROR, 3,
        "spicy-screenshot wrote no picture (exit status %d): %s", status,
        output ? output : "");
  g_free (output);
  return got;
}
