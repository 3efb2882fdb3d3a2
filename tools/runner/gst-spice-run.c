/* gst-spice-run: run a gst-spice pipeline file as a service
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *   gst-spice-run [OPTION…] FILE.pipeline | NAME
 *
 * NAME (no '/') runs a shipped pipeline, NAME.pipeline in
 * $GST_SPICE_PIPELINES_DIR or the installed pipelines directory.
 * Reads a gst-launch description with '#' comments and ${NAME} /
 * ${NAME:-default} variables (from -D NAME=VALUE, --env-file and the
 * environment), runs it on the default main context, and:
 *  - SIGTERM/SIGINT: EOS, wait for it (bounded), stop, exit 0; a second
 *    signal stops at once;
 *  - SIGHUP: re-reads the file and env files, parses the new description
 *    and swaps pipelines only when it parses; otherwise keeps the old one;
 *  - errors and unexpected EOS: restarts with exponential backoff, gives up
 *    after --max-restarts failures in a row (a pipeline that ran for
 *    --healthy-after seconds resets the count);
 *  - systemd: READY=1 once PLAYING, WATCHDOG=1 while the main loop runs,
 *    STATUS= lines;
 *  - a periodic one-line stats log and an optional Prometheus endpoint
 *    with every element's `stats` property.
 *
 * Exit codes (sysexits.h): 0 clean stop, 64 usage, 65 bad pipeline file
 * (syntax, unset variable, link failure), 66 unreadable file, 69 missing
 * element/plugin, 75 too many restarts, 70 internal error.
 */
#include "config.h"

#include <gst/gst.h>
#include <glib-unix.h>
#include <string.h>
#include <sysexits.h>
#ifdef HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "pipeline-file.h"
#include "runner-metrics.h"
#include "runner-stats.h"

typedef enum
{
  STATE_RUNNING,
  STATE_STOPPING,               /* EOS sent, exiting when it arrives */
  STATE_RELOADING,              /* EOS sent, swapping when it arrives */
  STATE_WAITING,                /* no pipeline, restart scheduled */
} RunnerState;

typedef struct
{
  /* options */
  gchar *path;
  gchar **defines;
  gchar **env_files;
  gint max_restarts;
  gdouble healthy_after;
  gdouble eos_timeout;
  gdouble backoff_max;
  gint stats_interval;
  gchar *metrics_addr;

  GMainLoop *loop;
  GstElement *pipeline;
  GstElement *pending;          /* the new pipeline during a reload */
  RunnerState state;
  guint bus_watch;
  guint timeout_id;             /* EOS timeout or restart timer */
  gint failures;
  gint64 playing_since;
  gboolean notified_ready;
  gint exit_code;
  RunnerMetrics *metrics;
} Runner;

#define LOG(...) g_printerr ("gst-spice-run: " __VA_ARGS__)

static void
notify (Runner * r, const gchar * what)
{
#ifdef HAVE_LIBSYSTEMD
  sd_notify (0, what);
#endif
}

static void
notify_status (Runner * r, const gchar * fmt, ...)
G_GNUC_PRINTF (2, 3);

     static void notify_status (Runner * r, const gchar * fmt, ...)
{
  va_list args;
  gchar *msg, *status;

  va_start (args, fmt);
  msg = g_strdup_vprintf (fmt, args);
  va_end (args);
  status = g_strdup_printf ("STATUS=%s", msg);
  notify (r, status);
  g_free (status);
  g_free (msg);
}

/* ---- building a pipeline ---- */

static GHashTable *
load_vars (Runner * r, GError ** error)
{
  GHashTable *vars = pipeline_vars_new ();
  gchar **p;

  pipeline_vars_add_environment (vars);
  for (p = r->env_files; p && *p; p++)
    if (!pipeline_vars_add_env_file (vars, *p, error))
      goto fail;
  for (p = r->defines; p && *p; p++)
    if (!pipeline_vars_add_assignment (vars, *p, error))
      goto fail;
  return vars;

fail:
  g_hash_table_unref (vars);
  return NULL;
}

/* Returns a pipeline or NULL with *exit_code set and the reason logged. */
static GstElement *
build_pipeline (Runner * r, gint * exit_code)
{
  GError *err = NULL;
  GHashTable *vars;
  gchar *desc;
  GstParseContext *ctx;
  GstElement *e;

  vars = load_vars (r, &err);
  if (!vars) {
    LOG ("%s\n", err->message);
    *exit_code = err->code == PIPELINE_FILE_ERROR_READ ? EX_NOINPUT :
        EX_DATAERR;
    g_error_free (err);
    return NULL;
  }
  desc = pipeline_file_load (r->path, vars, &err);
  g_hash_table_unref (vars);
  if (!desc) {
    LOG ("%s\n", err->message);
    *exit_code = err->code == PIPELINE_FILE_ERROR_READ ? EX_NOINPUT :
        EX_DATAERR;
    g_error_free (err);
    return NULL;
  }
  if (*desc == '\0') {
    LOG ("%s: the file holds no pipeline\n", r->path);
    *exit_code = EX_DATAERR;
    g_free (desc);
    return NULL;
  }

  ctx = gst_parse_context_new ();
  e = gst_parse_launch_full (desc, ctx, GST_PARSE_FLAG_FATAL_ERRORS |
      GST_PARSE_FLAG_PLACE_IN_BIN, &err);
  if (!e) {
    gchar **missing = gst_parse_context_get_missing_elements (ctx);

    if (missing && missing[0]) {
      gchar *list = g_strjoinv (", ", missing);

      LOG ("%s: missing element(s): %s (install the plugin that provides "
          "them, or check GST_PLUGIN_PATH)\n", r->path, list);
      g_free (list);
      *exit_code = EX_UNAVAILABLE;
    } else {
      LOG ("%s: %s\n", r->path, err ? err->message : "cannot parse");
      *exit_code = EX_DATAERR;
    }
    g_strfreev (missing);
    g_clear_error (&err);
  } else if (!GST_IS_PIPELINE (e)) {
    GstElement *pipe = gst_pipeline_new (NULL);

    gst_bin_add (GST_BIN (pipe), e);
    e = pipe;
  }
  gst_parse_context_free (ctx);
  g_free (desc);
  return e;
}

/* ---- running ---- */

static gboolean on_bus (GstBus * bus, GstMessage * msg, gpointer user_data);
static void schedule_restart (Runner * r);

static void
clear_timeout (Runner * r)
{
  if (r->timeout_id) {
    g_source_remove (r->timeout_id);
    r->timeout_id = 0;
  }
}

static void
stop_pipeline (Runner * r)
{
  if (!r->pipeline)
    return;
  if (r->bus_watch) {
    g_source_remove (r->bus_watch);
    r->bus_watch = 0;
  }
  gst_element_set_state (r->pipeline, GST_STATE_NULL);
  gst_clear_object (&r->pipeline);
  r->playing_since = 0;
}

static void
start_pipeline (Runner * r, GstElement * pipeline)
{
  GstBus *bus = gst_element_get_bus (pipeline);

  r->pipeline = pipeline;
  r->state = STATE_RUNNING;
  r->bus_watch = gst_bus_add_watch (bus, on_bus, r);
  gst_object_unref (bus);
  if (gst_element_set_state (pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE) {
    LOG ("the pipeline failed to start\n");
    /* the bus usually holds the reason; on_bus handles it next */
  }
}

static void
quit (Runner * r, gint code)
{
  clear_timeout (r);
  stop_pipeline (r);
  gst_clear_object (&r->pending);
  r->exit_code = code;
  notify (r, "STOPPING=1");
  g_main_loop_quit (r->loop);
}

static void
handle_failure (Runner * r, const gchar * why)
{
  gint64 now = g_get_monotonic_time ();

  if (r->state == STATE_STOPPING) {
    quit (r, 0);
    return;
  }
  if (r->state == STATE_RELOADING) {
    /* the old pipeline died while draining: just swap */
    clear_timeout (r);
    stop_pipeline (r);
    start_pipeline (r, g_steal_pointer (&r->pending));
    return;
  }
  if (r->playing_since &&
      now - r->playing_since >= (gint64) (r->healthy_after * G_USEC_PER_SEC))
    r->failures = 0;
  stop_pipeline (r);
  r->failures++;
  if (r->failures > r->max_restarts) {
    LOG ("%s; giving up after %d restart(s)\n", why, r->max_restarts);
    notify_status (r, "failed: %s", why);
    quit (r, EX_TEMPFAIL);
    return;
  }
  schedule_restart (r);
  LOG ("%s; restart %d of %d\n", why, r->failures, r->max_restarts);
  notify_status (r, "restarting (%d): %s", r->failures, why);
}

static gboolean
restart_cb (gpointer user_data)
{
  Runner *r = user_data;
  GstElement *pipeline;
  gint code = 0;

  r->timeout_id = 0;
  pipeline = build_pipeline (r, &code);
  if (!pipeline) {
    quit (r, code);
    return G_SOURCE_REMOVE;
  }
  start_pipeline (r, pipeline);
  return G_SOURCE_REMOVE;
}

static void
schedule_restart (Runner * r)
{
  gdouble delay = MIN (r->backoff_max, (gdouble) (1 << MIN (r->failures - 1,
              16)));

  r->state = STATE_WAITING;
  clear_timeout (r);
  r->timeout_id = g_timeout_add ((guint) (delay * 1000), restart_cb, r);
}

static gboolean
eos_timeout_cb (gpointer user_data)
{
  Runner *r = user_data;

  r->timeout_id = 0;
  LOG ("no EOS within %.1f s, stopping anyway\n", r->eos_timeout);
  if (r->state == STATE_RELOADING) {
    stop_pipeline (r);
    start_pipeline (r, g_steal_pointer (&r->pending));
  } else {
    quit (r, 0);
  }
  return G_SOURCE_REMOVE;
}

static void
send_eos (Runner * r, RunnerState next)
{
  r->state = next;
  clear_timeout (r);
  r->timeout_id = g_timeout_add ((guint) (r->eos_timeout * 1000),
      eos_timeout_cb, r);
  gst_element_send_event (r->pipeline, gst_event_new_eos ());
}

static gboolean
on_bus (GstBus * bus, GstMessage * msg, gpointer user_data)
{
  Runner *r = user_data;

  switch (GST_MESSAGE_TYPE (msg)) {
    case GST_MESSAGE_ERROR:{
      GError *err = NULL;
      gchar *dbg = NULL, *path = gst_object_get_path_string (msg->src);
      gchar *why;

      gst_message_parse_error (msg, &err, &dbg);
      LOG ("error from %s: %s\n", path, err->message);
      if (dbg)
        LOG ("  debug: %s\n", dbg);
      why = g_strdup_printf ("error from %s: %s", GST_MESSAGE_SRC_NAME (msg),
          err->message);
      handle_failure (r, why);
      g_free (why);
      g_free (path);
      g_free (dbg);
      g_error_free (err);
      break;
    }
    case GST_MESSAGE_WARNING:{
      GError *err = NULL;
      gchar *path = gst_object_get_path_string (msg->src);

      gst_message_parse_warning (msg, &err, NULL);
      LOG ("warning from %s: %s\n", path, err->message);
      g_free (path);
      g_error_free (err);
      break;
    }
    case GST_MESSAGE_EOS:
      if (r->state == STATE_STOPPING) {
        LOG ("stopped\n");
        quit (r, 0);
      } else if (r->state == STATE_RELOADING) {
        clear_timeout (r);
        stop_pipeline (r);
        LOG ("reloaded %s\n", r->path);
        start_pipeline (r, g_steal_pointer (&r->pending));
      } else {
        handle_failure (r, "unexpected end of stream");
      }
      break;
    case GST_MESSAGE_STATE_CHANGED:
      if (GST_MESSAGE_SRC (msg) == GST_OBJECT (r->pipeline)) {
        GstState new_state;

        gst_message_parse_state_changed (msg, NULL, &new_state, NULL);
        if (new_state == GST_STATE_PLAYING && r->state == STATE_RUNNING) {
          r->playing_since = g_get_monotonic_time ();
          LOG ("playing %s\n", r->path);
          if (!r->notified_ready) {
            notify (r, "READY=1");
            r->notified_ready = TRUE;
          }
          notify_status (r, "playing %s", r->path);
        }
      }
      break;
    case GST_MESSAGE_LATENCY:
      gst_bin_recalculate_latency (GST_BIN (r->pipeline));
      break;
    case GST_MESSAGE_CLOCK_LOST:
      gst_element_set_state (r->pipeline, GST_STATE_PAUSED);
      gst_element_set_state (r->pipeline, GST_STATE_PLAYING);
      break;
    default:
      break;
  }
  return G_SOURCE_CONTINUE;
}

static gboolean
on_stop_signal (gpointer user_data)
{
  Runner *r = user_data;

  if (r->state == STATE_STOPPING || !r->pipeline) {
    quit (r, 0);
  } else {
    LOG ("stopping: sending EOS\n");
    notify_status (r, "stopping");
    if (r->state == STATE_RELOADING)
      gst_clear_object (&r->pending);
    send_eos (r, STATE_STOPPING);
  }
  return G_SOURCE_CONTINUE;
}

static gboolean
on_reload_signal (gpointer user_data)
{
  Runner *r = user_data;
  GstElement *pipeline;
  gint code = 0;

  if (r->state == STATE_STOPPING || r->state == STATE_RELOADING)
    return G_SOURCE_CONTINUE;
  LOG ("reloading %s\n", r->path);
  notify (r, "RELOADING=1");
  pipeline = build_pipeline (r, &code);
  if (!pipeline) {
    LOG ("reload failed (exit code would be %d); keeping the running "
        "pipeline\n", code);
    notify (r, "READY=1");
    return G_SOURCE_CONTINUE;
  }
  if (!r->pipeline) {
    clear_timeout (r);
    start_pipeline (r, pipeline);
  } else {
    r->pending = pipeline;
    send_eos (r, STATE_RELOADING);
  }
  notify (r, "READY=1");
  return G_SOURCE_CONTINUE;
}

static gboolean
on_stats_timer (gpointer user_data)
{
  Runner *r = user_data;
  gchar *line = r->pipeline ? runner_stats_line (r->pipeline) : NULL;

  if (line)
    g_print ("stats: %s\n", line);
  g_free (line);
  return G_SOURCE_CONTINUE;
}

#ifdef HAVE_LIBSYSTEMD
static gboolean
on_watchdog_timer (gpointer user_data)
{
  notify (user_data, "WATCHDOG=1");
  return G_SOURCE_CONTINUE;
}
#endif

/* A bare NAME (no '/') that is not a file names a shipped pipeline:
 * $GST_SPICE_PIPELINES_DIR or the installed pipelines directory,
 * NAME.pipeline. */
static gchar *
resolve_pipeline (const gchar * arg)
{
  const gchar *dir = g_getenv ("GST_SPICE_PIPELINES_DIR");
  gchar *file, *path;

  if (strchr (arg, '/') || g_file_test (arg, G_FILE_TEST_EXISTS))
    return g_strdup (arg);
  file = g_str_has_suffix (arg, ".pipeline") ? g_strdup (arg) :
      g_strconcat (arg, ".pipeline", NULL);
  path = g_build_filename (dir ? dir : GST_SPICE_PIPELINES_DIR, file, NULL);
  g_free (file);
  return path;
}

static GstElement *
get_pipeline (gpointer user_data)
{
  Runner *r = user_data;

  return r->pipeline ? gst_object_ref (r->pipeline) : NULL;
}

int
main (int argc, char **argv)
{
  Runner r = { 0, };
  gboolean check = FALSE;
  gchar **files = NULL;
  GOptionEntry entries[] = {
    {"define", 'D', 0, G_OPTION_ARG_STRING_ARRAY, &r.defines,
          "Set variable NAME to VALUE (overrides env files and the environment)",
        "NAME=VALUE"},
    {"env-file", 'e', 0, G_OPTION_ARG_FILENAME_ARRAY, &r.env_files,
          "Read NAME=VALUE lines from FILE (systemd EnvironmentFile syntax)",
        "FILE"},
    {"check", 'c', 0, G_OPTION_ARG_NONE, &check,
        "Only check that the file parses and every element exists", NULL},
    {"max-restarts", 'r', 0, G_OPTION_ARG_INT, &r.max_restarts,
          "Restarts after errors before giving up with exit code 75 (default 5)",
        "N"},
    {"healthy-after", 0, 0, G_OPTION_ARG_DOUBLE, &r.healthy_after,
          "Seconds of PLAYING after which the failure count resets (default 60)",
        "S"},
    {"backoff-max", 0, 0, G_OPTION_ARG_DOUBLE, &r.backoff_max,
          "Longest restart delay in seconds; delays double from 1 s (default 30)",
        "S"},
    {"eos-timeout", 0, 0, G_OPTION_ARG_DOUBLE, &r.eos_timeout,
        "Seconds to wait for EOS when stopping or reloading (default 5)", "S"},
    {"stats-interval", 's', 0, G_OPTION_ARG_INT, &r.stats_interval,
        "Log the elements' stats every N seconds, 0 = never (default 60)", "N"},
    {"metrics", 'm', 0, G_OPTION_ARG_STRING, &r.metrics_addr,
        "Serve Prometheus metrics on http://HOST:PORT/metrics", "HOST:PORT"},
    {G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &files, NULL,
        "FILE"},
    {NULL}
  };
  GOptionContext *octx;
  GError *err = NULL;
  GstElement *pipeline;
  gint code = 0;

  r.max_restarts = 5;
  r.healthy_after = 60;
  r.backoff_max = 30;
  r.eos_timeout = 5;
  r.stats_interval = 60;

  octx = g_option_context_new ("FILE.pipeline - run a gst-spice pipeline");
  g_option_context_add_main_entries (octx, entries, NULL);
  g_option_context_add_group (octx, gst_init_get_option_group ());
  g_option_context_set_description (octx,
      "Exit codes: 0 stopped, 64 usage, 65 bad pipeline file, 66 unreadable "
      "file,\n69 missing element, 75 too many restarts.\n");
  if (!g_option_context_parse (octx, &argc, &argv, &err)) {
    LOG ("%s\n", err->message);
    return EX_USAGE;
  }
  g_option_context_free (octx);
  if (!files || !files[0] || files[1]) {
    LOG ("usage: gst-spice-run [OPTION…] FILE.pipeline (see --help)\n");
    return EX_USAGE;
  }
  r.path = resolve_pipeline (files[0]);
  g_strfreev (files);
  if (r.max_restarts < 0 || r.eos_timeout <= 0 || r.backoff_max < 1) {
    LOG ("--max-restarts must be >= 0, --eos-timeout > 0, --backoff-max >= 1\n");
    return EX_USAGE;
  }

  pipeline = build_pipeline (&r, &code);
  if (!pipeline)
    return code;
  if (check) {
    g_print ("%s: OK\n", r.path);
    gst_object_unref (pipeline);
    return 0;
  }

  r.loop = g_main_loop_new (NULL, FALSE);
  g_unix_signal_add (SIGINT, on_stop_signal, &r);
  g_unix_signal_add (SIGTERM, on_stop_signal, &r);
  g_unix_signal_add (SIGHUP, on_reload_signal, &r);
  if (r.stats_interval > 0)
    g_timeout_add_seconds (r.stats_interval, on_stats_timer, &r);
#ifdef HAVE_LIBSYSTEMD
  {
    uint64_t usec = 0;

    if (sd_watchdog_enabled (0, &usec) > 0 && usec > 0)
      g_timeout_add (MAX (usec / 2000, 100), on_watchdog_timer, &r);
  }
#endif
  if (r.metrics_addr) {
    r.metrics = runner_metrics_start (r.metrics_addr, get_pipeline, &r, &err);
    if (!r.metrics) {
      LOG ("metrics endpoint: %s\n", err->message);
      gst_object_unref (pipeline);
      return EX_USAGE;
    }
    LOG ("metrics on http://%s/metrics\n", r.metrics_addr);
  }

  start_pipeline (&r, pipeline);
  g_main_loop_run (r.loop);

  runner_metrics_stop (r.metrics);
  g_main_loop_unref (r.loop);
  g_strfreev (r.defines);
  g_strfreev (r.env_files);
  g_free (r.metrics_addr);
  g_free (r.path);
  gst_deinit ();
  return r.exit_code;
}
