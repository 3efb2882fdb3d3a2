/* gst-spice-run: run a gst-spice pipeline file as a service
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *   gst-spice-run [OPTION…] [FILE.pipeline | NAME]
 *
 * NAME (no '/') runs a shipped pipeline, NAME.pipeline in
 * $GST_SPICE_PIPELINES_DIR or the installed pipelines directory; without
 * an argument the PIPELINE variable (from --env-file, -D or the
 * environment) names it, re-read on every reload.
 * Reads a gst-launch description with '#' comments and ${NAME} /
 * ${NAME:-default} variables (from -D NAME=VALUE, --env-file and the
 * environment; START_TIME is the UTC time of each start), runs it on the
 * default main context, and:
 *  - SIGTERM/SIGINT: EOS, wait for it (--eos-timeout), stop, exit 0; a
 *    second signal, or a pipeline that does not stop within
 *    --eos-timeout + 3 s, ends the process at once;
 *  - SIGHUP: re-reads the env files and the pipeline file; an unchanged
 *    description is a no-op; a changed one is checked (parse, elements,
 *    properties, password files, URIs, listen addresses) before the old
 *    pipeline is drained, and if the new one then fails to reach PLAYING
 *    or fails within --reload-check seconds, the old one is started again;
 *  - listening sockets: the runner owns the spicesink elements' sockets
 *    (or takes systemd's, socket activation) and hands them to each
 *    pipeline (listen-fd), so that they outlive it; on a changed reload
 *    the old sink asks its clients to reconnect (SWITCH_HOST) to the same
 *    socket, where the new pipeline accepts them (runner-listen.c);
 *  - errors: permanent ones (the configuration cannot work) exit at once
 *    with a code systemd does not restart; transient ones restart with
 *    exponential backoff and give up after --max-restarts in a row;
 *  - an upstream spicesrc that cannot connect: reported each time, its
 *    retries backed off, STATUS=waiting for upstream;
 *  - systemd: READY=1 once PLAYING, WATCHDOG=1 while the main loop runs,
 *    STATUS= lines;
 *  - a periodic one-line stats log and an optional Prometheus endpoint
 *    with every element's `stats` property;
 *  - the elements' security and health events, one stable line each
 *    (runner-events.c), counted in the metrics.
 *
 * Exit codes (sysexits.h), see the table in docs/operator-guide.md.
 */
#include "config.h"

#include <gst/gst.h>
#include <gio/gio.h>
#include <glib-unix.h>
#include <glib/gstdio.h>
#include <errno.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>
#ifdef HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include <gst/spice/gstspicesecret.h>

#include "pipeline-file.h"
#include "runner-events.h"
#include "runner-listen.h"
#include "runner-metrics.h"
#include "runner-registry.h"
#include "runner-stats.h"

/* an element property that does not exist or does not take the value */
#define EXIT_PROPERTY EX_CONFIG
/* a configuration that parses but cannot work: refused by an element or
 * by the upstream server */
#define EXIT_REFUSED EX_NOPERM
/* a stuck pipeline after SIGTERM: exit anyway, this long after the EOS
 * timeout */
#define HARD_STOP_GRACE_S 3
/* a reloaded pipeline that is not PLAYING this long is given up */
#define RELOAD_PLAYING_TIMEOUT_S 15

typedef enum
{
  STATE_RUNNING,
  STATE_STOPPING,               /* EOS sent, exiting when it arrives */
  STATE_RELOADING,              /* EOS sent, swapping when it arrives */
  STATE_WAITING,                /* no pipeline, restart scheduled */
} RunnerState;

/* What a pipeline is made of: the file, its text and the variables. */
typedef struct
{
  gchar *path;
  gchar *text;
  GHashTable *vars;
  GHashTable *origins;          /* NAME -> "FILE:LINE" of an env file, "-D" */
} Config;

typedef struct
{
  /* options */
  gchar *arg;                   /* FILE or NAME from the command line */
  gchar **defines;
  gchar **env_files;
  gint max_restarts;
  gdouble healthy_after;
  gdouble eos_timeout;
  gdouble backoff_max;
  gdouble reload_check;
  gint stats_interval;
  gchar *metrics_addr;

  GMainLoop *loop;
  GstElement *pipeline;
  Config *config;               /* what @pipeline runs */
  gchar *desc;                  /* its expanded description */
  gchar *start_time;            /* its START_TIME */
  GstElement *pending;          /* the new pipeline during a reload */
  Config *pending_config;
  gchar *pending_desc;
  gchar *pending_start_time;
  Config *previous;             /* during a reload's check: to go back to */
  gint64 check_until;           /* end of the reload check (monotonic us) */
  gint64 swapped_at;            /* when the reloaded pipeline started */
  RunnerState state;
  guint bus_watch;
  guint timeout_id;             /* EOS timeout or restart timer */
  gint failures;
  gint64 playing_since;
  gboolean notified_ready;
  gint exit_code;
  RunnerMetrics *metrics;
  RunnerEvents *events;
  RunnerListeners *listeners;   /* the sinks' sockets, across pipelines */
  /* upstream watch: the spicesrc elements' reconnects seen so far */
  GHashTable *upstream_seen;
  gboolean upstream_waiting;
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

/* ---- configuration: files and variables ---- */

static void
config_free (Config * c)
{
  if (!c)
    return;
  g_free (c->path);
  g_free (c->text);
  if (c->vars)
    g_hash_table_unref (c->vars);
  if (c->origins)
    g_hash_table_unref (c->origins);
  g_free (c);
}

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

static gint
file_error_code (const GError * err)
{
  return err->code == PIPELINE_FILE_ERROR_READ ? EX_NOINPUT : EX_DATAERR;
}

/* Names set with -D or in an env file that the pipeline does not use:
 * a warning each, with the closest name it does use. */
static void
warn_unused_vars (const gchar * path, const gchar * text, GHashTable * origins)
{
  GPtrArray *used = pipeline_text_variables (text);
  GHashTableIter it;
  gpointer k, v;
  gchar *base = g_path_get_basename (path);

  /* PIPELINE names the file; it is never a pipeline variable */
  g_ptr_array_add (used, g_strdup ("PIPELINE"));
  g_ptr_array_add (used, NULL);
  g_hash_table_iter_init (&it, origins);
  while (g_hash_table_iter_next (&it, &k, &v)) {
    const gchar *nearest;

    if (g_strv_contains ((const gchar * const *) used->pdata, k))
      continue;
    nearest = pipeline_nearest_name (k, (const gchar * const *) used->pdata);
    if (nearest)
      LOG ("warning: %s (%s) is not a variable of %s; did you mean %s?\n",
          (gchar *) k, (gchar *) v, base, nearest);
    else
      LOG ("warning: %s (%s) is not a variable of %s; it is ignored\n",
          (gchar *) k, (gchar *) v, base);
  }
  g_free (base);
  g_ptr_array_unref (used);
}

/* Reads the env files, -D options and the pipeline file. NULL with
 * *exit_code set and the reason logged. Runs on the main thread. */
static Config *
config_load (Runner * r, gboolean warn, gint * exit_code)
{
  Config *c = g_new0 (Config, 1);
  GHashTable *origins = g_hash_table_new_full (g_str_hash, g_str_equal,
      g_free, g_free);
  GError *err = NULL;
  gchar **p;
  const gchar *name;

  c->vars = pipeline_vars_new ();
  pipeline_vars_add_environment (c->vars);
  for (p = r->env_files; p && *p; p++) {
    if (!pipeline_vars_add_env_file (c->vars, *p, origins, &err)) {
      LOG ("%s\n", err->message);
      *exit_code = file_error_code (err);
      g_error_free (err);
      goto fail;
    }
  }
  for (p = r->defines; p && *p; p++) {
    /* checked at startup: cannot fail */
    pipeline_vars_add_assignment (c->vars, *p, NULL);
    g_hash_table_replace (origins, g_strndup (*p, strchr (*p, '=') - *p),
        g_strdup ("-D"));
  }

  name = r->arg ? r->arg : g_hash_table_lookup (c->vars, "PIPELINE");
  if (!name || !*name) {
    LOG ("no pipeline: give FILE.pipeline or NAME, or set PIPELINE= in "
        "the env file\n");
    *exit_code = EX_USAGE;
    goto fail;
  }
  c->path = resolve_pipeline (name);
  if (!g_file_get_contents (c->path, &c->text, NULL, &err)) {
    LOG ("%s: cannot read pipeline file: %s\n", c->path, err->message);
    *exit_code = EX_NOINPUT;
    g_error_free (err);
    goto fail;
  }
  if (warn)
    warn_unused_vars (c->path, c->text, origins);
  c->origins = origins;
  return c;

fail:
  g_hash_table_unref (origins);
  config_free (c);
  return NULL;
}

/* The description of @c with START_TIME=@start_time (unless set by the
 * user). With @unset (checking only), unset variables expand to nothing
 * and are listed there. */
static gchar *
config_expand (Config * c, const gchar * start_time, GPtrArray * unset,
    gint * exit_code)
{
  GError *err = NULL;
  gchar *desc;
  gboolean own = !g_hash_table_contains (c->vars, "START_TIME");

  if (own)
    g_hash_table_insert (c->vars, g_strdup ("START_TIME"),
        g_strdup (start_time));
  desc = pipeline_text_expand_full (c->text, c->path, c->vars, unset, &err);
  if (own)
    g_hash_table_remove (c->vars, "START_TIME");
  if (!desc) {
    LOG ("%s\n", err->message);
    *exit_code = file_error_code (err);
    g_error_free (err);
    return NULL;
  }
  if (*desc == '\0') {
    LOG ("%s: the file holds no pipeline\n", c->path);
    *exit_code = EX_DATAERR;
    g_free (desc);
    return NULL;
  }
  return desc;
}

/* A new START_TIME, never the same twice in one process. */
static gchar *
next_start_time (void)
{
  static gchar *last = NULL;
  static guint same = 0;
  GDateTime *now = g_date_time_new_now_utc ();
  gchar *t = g_date_time_format (now, "%Y%m%dT%H%M%SZ");

  g_date_time_unref (now);
  if (g_strcmp0 (t, last) == 0) {
    gchar *u = g_strdup_printf ("%s-%u", t, ++same + 1);

    g_free (t);
    return u;
  }
  same = 0;
  g_free (last);
  last = g_strdup (t);
  return t;
}

/* ---- parsing and checking a description ---- */

/* The n-th "quoted" word of a GStreamer parse error message. */
static gchar *
quoted_word (const gchar * msg, guint n)
{
  const gchar *p = msg;

  while ((p = strchr (p, '"'))) {
    const gchar *end = strchr (p + 1, '"');

    if (!end)
      return NULL;
    if (n-- == 0)
      return g_strndup (p + 1, end - p - 1);
    p = end + 1;
  }
  return NULL;
}

/* The element (factory or element name, as GStreamer names it in its
 * message) has no property @prop: the property names of its factory,
 * for the closest one. */
static const gchar *
nearest_property (const gchar * element, const gchar * prop, gchar *** names)
{
  GstElementFactory *f = gst_element_factory_find (element);
  GObjectClass *klass;
  GParamSpec **specs;
  guint n, i;

  *names = NULL;
  if (!f)
    return NULL;
  klass = g_type_class_ref (gst_element_factory_get_element_type (f) ?
      gst_element_factory_get_element_type (f) : GST_TYPE_ELEMENT);
  specs = g_object_class_list_properties (klass, &n);
  *names = g_new0 (gchar *, n + 1);
  for (i = 0; i < n; i++)
    (*names)[i] = g_strdup (specs[i]->name);
  g_free (specs);
  g_type_class_unref (klass);
  gst_object_unref (f);
  return pipeline_nearest_name (prop, (const gchar * const *) *names);
}

/* Logs "FILE:LINE: MESSAGE (from NAME, set at ENV-FILE:LINE)": the line of
 * @c's pipeline file that sets @prop to @value (FILE alone when none does),
 * and for each variable that the value uses, where it was set (by -D, an
 * env file's line, the environment, or not: the file's default). */
static void
log_value_error (Config * c, const gchar * prop, const gchar * value,
    const gchar * fmt, ...)
G_GNUC_PRINTF (4, 5);

     static void log_value_error (Config * c, const gchar * prop,
    const gchar * value, const gchar * fmt, ...)
{
  GPtrArray *names = NULL;
  guint line = pipeline_text_find_property (c->text, c->vars, prop, value,
      &names);
  GString *from = g_string_new (NULL);
  va_list args;
  gchar *msg;
  guint i;

  for (i = 0; i < names->len; i++) {
    const gchar *n = g_ptr_array_index (names, i);
    const gchar *o = g_hash_table_lookup (c->origins, n);
    const gchar *v = g_hash_table_lookup (c->vars, n);

    g_string_append_printf (from, "%s%s, ", i ? "; " : " (from ", n);
    if (g_strcmp0 (o, "-D") == 0)
      g_string_append (from, "set by -D");
    else if (o)
      g_string_append_printf (from, "set at %s", o);
    else if (v && *v)
      g_string_append (from, "set in the environment");
    else
      g_string_append (from, "not set: the file's default");
  }
  if (names->len)
    g_string_append_c (from, ')');
  va_start (args, fmt);
  msg = g_strdup_vprintf (fmt, args);
  va_end (args);
  if (line)
    LOG ("%s:%u: %s%s\n", c->path, line, msg, from->str);
  else
    LOG ("%s: %s%s\n", c->path, msg, from->str);
  g_free (msg);
  g_string_free (from, TRUE);
  g_ptr_array_unref (names);
}

/* Logs a parse error by its cause and returns the exit code. */
static gint
report_parse_error (Config * c, GstParseContext * ctx, const GError * err)
{
  const gchar *path = c->path;
  gchar **missing = gst_parse_context_get_missing_elements (ctx);
  const gchar *msg = err ? err->message : "cannot parse";
  gint code = EX_DATAERR;

  if (err && err->domain == GST_PARSE_ERROR &&
      err->code == GST_PARSE_ERROR_NO_SUCH_PROPERTY) {
    gchar *prop = quoted_word (msg, 0), *el = quoted_word (msg, 1);
    gchar **names = NULL;
    const gchar *near = prop && el ? nearest_property (el, prop, &names) : NULL;

    if (near)
      LOG ("%s: element %s has no property %s (did you mean %s?)\n", path,
          el, prop, near);
    else
      LOG ("%s: element %s has no property %s\n", path, el ? el : "?",
          prop ? prop : msg);
    g_strfreev (names);
    g_free (prop);
    g_free (el);
    code = EXIT_PROPERTY;
  } else if (err && err->domain == GST_PARSE_ERROR &&
      err->code == GST_PARSE_ERROR_COULD_NOT_SET_PROPERTY) {
    gchar *prop = quoted_word (msg, 0), *el = quoted_word (msg, 1);
    gchar *value = quoted_word (msg, 2);

    if (prop)
      log_value_error (c, prop, value, "bad value for %s of element %s: "
          "\"%s\"", prop, el ? el : "?", value ? value : msg);
    else
      LOG ("%s: %s\n", path, msg);
    g_free (prop);
    g_free (el);
    g_free (value);
    code = EXIT_PROPERTY;
  } else if (missing && missing[0]) {
    gchar *list = g_strjoinv (", ", missing);

    LOG ("%s: missing element(s): %s (install the plugin that provides "
        "them, or check GST_PLUGIN_PATH)\n", path, list);
    g_free (list);
    code = EX_UNAVAILABLE;
  } else if (err && err->domain == GST_PARSE_ERROR &&
      err->code == GST_PARSE_ERROR_NO_SUCH_ELEMENT) {
    LOG ("%s: %s (install the plugin that provides it, or check "
        "GST_PLUGIN_PATH)\n", path, msg);
    code = EX_UNAVAILABLE;
  } else {
    LOG ("%s: %s\n", path, msg);
  }
  g_strfreev (missing);
  return code;
}

static gchar *
get_string (GstElement * e, const gchar * prop)
{
  GParamSpec *pspec = g_object_class_find_property (G_OBJECT_GET_CLASS (e),
      prop);
  gchar *s = NULL;

  if (!pspec || pspec->value_type != G_TYPE_STRING ||
      !(pspec->flags & G_PARAM_READABLE))
    return NULL;
  g_object_get (e, prop, &s, NULL);
  if (s && !*s)
    g_clear_pointer (&s, g_free);
  return s;
}

/* A URI without its query (which may hold a password). */
static gchar *
uri_for_log (const gchar * uri)
{
  const gchar *q = strchr (uri, '?');

  return q ? g_strndup (uri, q - uri) : g_strdup (uri);
}

/* A password file that the elements would refuse at start (empty, or a
 * first line longer than a SPICE password): logged by its cause. */
static gboolean
check_password_file (Config * c, GstElement * e, const gchar * file)
{
  GError *err = NULL;
  gchar *secret = gst_spice_read_password_file (file, &err);

  if (secret) {
    memset (secret, 0, strlen (secret));
    g_free (secret);
    return TRUE;
  }
  log_value_error (c, "password-file", file, "element %s: %s",
      GST_OBJECT_NAME (e), err->message);
  g_error_free (err);
  return FALSE;
}

/* What the elements would refuse at start, found before anything stops:
 * unreadable password, CA, certificate, key and connection files, bad URIs, a
 * listening address that is not loopback without a password. Logs one line
 * and returns FALSE. */
static gboolean
check_element (Config * c, GstElement * e)
{
  const gchar *name = GST_OBJECT_NAME (e);
  gchar *s;
  gboolean ok = TRUE;

  static const gchar *const files[][2] = {
    {"password-file", "password file"}, {"ca-file", "CA file"},
    {"tls-cert-file", "TLS certificate"}, {"tls-key-file", "TLS key"},
    /* readable is all: reading it would delete a delete-this-file one */
    {"vv-file", "connection file"}
  };
  guint i;

  for (i = 0; ok && i < G_N_ELEMENTS (files); i++) {
    if ((s = get_string (e, files[i][0])) && g_access (s, R_OK) != 0) {
      const gchar *why = g_strerror (errno);

      log_value_error (c, files[i][0], s, "element %s: cannot read %s %s: "
          "%s", name, files[i][1], s, why);
      ok = FALSE;
    } else if (s && i == 0 && !check_password_file (c, e, s)) {
      ok = FALSE;
    }
    g_free (s);
  }
  if (ok && GST_IS_URI_HANDLER (e) && (s = get_string (e, "uri"))) {
    GError *err = NULL;

    if (!gst_uri_handler_set_uri (GST_URI_HANDLER (e), s, &err)) {
      gchar *shown = uri_for_log (s);
      gchar **parts = g_strsplit (err ? err->message : "refused", s, -1);
      /* the element's message may quote the URI, password and all */
      gchar *why = g_strjoinv (shown, parts);

      log_value_error (c, "uri", s, "element %s: bad URI %s: %s", name, shown,
          why);
      g_strfreev (parts);
      g_free (why);
      g_free (shown);
      g_clear_error (&err);
      ok = FALSE;
    }
    g_free (s);
  }
  if (ok && g_object_class_find_property (G_OBJECT_GET_CLASS (e),
          "disable-ticketing") && (s = get_string (e, "address"))) {
    GInetAddress *a = g_inet_address_new_from_string (s);
    gchar *pw = get_string (e, "password"), *pwf = get_string (e,
        "password-file");
    gboolean open = FALSE;

    g_object_get (e, "disable-ticketing", &open, NULL);
    if (a && !g_inet_address_get_is_loopback (a) && !pw && !pwf && !open) {
      log_value_error (c, "address", s, "element %s listens on %s without a "
          "password: set PASSWORD_FILE (or disable-ticketing=true to allow "
          "anyone)", name, s);
      ok = FALSE;
    }
    g_clear_object (&a);
    g_free (pw);
    g_free (pwf);
    g_free (s);
  }
  return ok;
}

static gboolean
check_elements (Config * c, GstElement * pipeline)
{
  GList *elements = runner_pipeline_elements (pipeline), *l;
  gboolean ok = TRUE;

  for (l = elements; l; l = l->next)
    if (!check_element (c, l->data))
      ok = FALSE;
  g_list_free_full (elements, gst_object_unref);
  return ok;
}

/* Parses and checks @desc. NULL with *exit_code set and the reason
 * logged. */
static GstElement *
parse_pipeline (Config * c, const gchar * desc, gint * exit_code)
{
  GError *err = NULL;
  GstParseContext *ctx = gst_parse_context_new ();
  GstElement *e;

  e = gst_parse_launch_full (desc, ctx, GST_PARSE_FLAG_FATAL_ERRORS |
      GST_PARSE_FLAG_PLACE_IN_BIN, &err);
  if (!e) {
    *exit_code = report_parse_error (c, ctx, err);
  } else if (!GST_IS_PIPELINE (e)) {
    GstElement *pipe = gst_pipeline_new (NULL);

    gst_bin_add (GST_BIN (pipe), e);
    e = pipe;
  }
  g_clear_error (&err);
  gst_parse_context_free (ctx);
  if (e && !check_elements (c, e)) {
    *exit_code = EXIT_REFUSED;
    gst_clear_object (&e);
  }
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
  g_hash_table_remove_all (r->upstream_seen);
  r->upstream_waiting = FALSE;
}

/* Takes @pipeline, @config and @desc. */
static void
start_pipeline (Runner * r, GstElement * pipeline, Config * config,
    gchar * desc, gchar * start_time)
{
  GstBus *bus = gst_element_get_bus (pipeline);

  /* the sockets it does not use (the previous pipeline stopped) close */
  runner_listeners_attach (r->listeners, pipeline);
  runner_listeners_prune (r->listeners, pipeline);
  r->pipeline = pipeline;
  if (config != r->config) {
    config_free (r->config);
    r->config = config;
  }
  if (desc != r->desc) {
    g_free (r->desc);
    r->desc = desc;
  }
  g_free (r->start_time);
  r->start_time = start_time;
  r->state = STATE_RUNNING;
  r->bus_watch = gst_bus_add_watch (bus, on_bus, r);
  gst_object_unref (bus);
  if (gst_element_set_state (pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE) {
    LOG ("the pipeline failed to start\n");
    /* the bus usually holds the reason; on_bus handles it next */
  }
}

/* Builds @c's pipeline with a new START_TIME and starts it; FALSE with
 * *exit_code set when it does not parse. */
static gboolean
start_config (Runner * r, Config * c, gint * exit_code)
{
  gchar *start_time = next_start_time ();
  gchar *desc = config_expand (c, start_time, NULL, exit_code);
  GstElement *pipeline = desc ? parse_pipeline (c, desc, exit_code) : NULL;

  if (!pipeline) {
    g_free (desc);
    g_free (start_time);
    return FALSE;
  }
  start_pipeline (r, pipeline, c, desc, start_time);
  return TRUE;
}

/* Ends the process now; for a pipeline that does not stop. Any thread. */
static guint hard_stop_ms;

static gpointer
hard_stop_thread (gpointer data)
{
  Runner *r = data;

  g_usleep ((gulong) hard_stop_ms * 1000);
  LOG ("the pipeline did not stop within %.1f s; exiting anyway\n",
      hard_stop_ms / 1000.0);
  _exit (g_atomic_int_get (&r->exit_code));
  return NULL;
}

static void
arm_hard_stop (Runner * r, gdouble seconds)
{
  if (hard_stop_ms)
    return;
  hard_stop_ms = (guint) (seconds * 1000);
  g_thread_unref (g_thread_new ("hard-stop", hard_stop_thread, r));
}

static void
quit (Runner * r, gint code)
{
  clear_timeout (r);
  g_atomic_int_set (&r->exit_code, code);
  /* stopping can block in a stuck element: the process ends anyway */
  arm_hard_stop (r, HARD_STOP_GRACE_S);
  stop_pipeline (r);
  gst_clear_object (&r->pending);
  notify (r, "STOPPING=1");
  g_main_loop_quit (r->loop);
}

/* The pipeline under a reload check failed: the previous one again. */
static void
reload_rollback (Runner * r, const gchar * why)
{
  Config *prev = g_steal_pointer (&r->previous);
  gint code = 0;

  LOG ("reload failed: %s; starting the previous pipeline again\n", why);
  notify_status (r, "reload failed, previous pipeline restored: %s", why);
  stop_pipeline (r);
  if (!start_config (r, prev, &code)) {
    config_free (prev);
    quit (r, code);
  }
}

/* A permanent error: restarting cannot help. */
static gboolean
error_is_permanent (const GError * err)
{
  if (err->domain == GST_RESOURCE_ERROR)
    return err->code == GST_RESOURCE_ERROR_NOT_FOUND ||
        err->code == GST_RESOURCE_ERROR_NOT_AUTHORIZED ||
        err->code == GST_RESOURCE_ERROR_SETTINGS;
  if (err->domain == GST_CORE_ERROR)
    return err->code == GST_CORE_ERROR_MISSING_PLUGIN;
  return FALSE;
}

static void
handle_failure (Runner * r, const gchar * why, gboolean permanent)
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
    start_pipeline (r, g_steal_pointer (&r->pending),
        g_steal_pointer (&r->pending_config),
        g_steal_pointer (&r->pending_desc),
        g_steal_pointer (&r->pending_start_time));
    return;
  }
  if (r->previous) {
    reload_rollback (r, why);
    return;
  }
  if (permanent) {
    LOG ("%s: the configuration cannot work, not restarting (exit %d)\n",
        why, EXIT_REFUSED);
    notify_status (r, "failed: %s", why);
    quit (r, EXIT_REFUSED);
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

/* Restarts run what was last loaded; only SIGHUP re-reads the files. */
static gboolean
restart_cb (gpointer user_data)
{
  Runner *r = user_data;
  gint code = 0;

  r->timeout_id = 0;
  if (!start_config (r, r->config, &code))
    quit (r, code);
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

static void
finish_reload_drain (Runner * r)
{
  Config *old = g_steal_pointer (&r->config);

  clear_timeout (r);
  stop_pipeline (r);
  /* keep the old configuration until the new one proved itself */
  config_free (r->previous);
  r->previous = old;
  r->check_until = 0;
  r->swapped_at = g_get_monotonic_time ();
  LOG ("reloaded %s\n", r->pending_config->path);
  start_pipeline (r, g_steal_pointer (&r->pending),
      g_steal_pointer (&r->pending_config),
      g_steal_pointer (&r->pending_desc),
      g_steal_pointer (&r->pending_start_time));
}

static gboolean
eos_timeout_cb (gpointer user_data)
{
  Runner *r = user_data;

  r->timeout_id = 0;
  LOG ("no EOS within %.1f s, stopping anyway\n", r->eos_timeout);
  if (r->state == STATE_RELOADING)
    finish_reload_drain (r);
  else
    quit (r, 0);
  return G_SOURCE_REMOVE;
}

/* Sending EOS can block in an element that holds its stream lock: from a
 * thread of its own, so that the main loop keeps serving signals and
 * timers. */
static gpointer
send_eos_thread (gpointer data)
{
  GstElement *pipeline = data;

  gst_element_send_event (pipeline, gst_event_new_eos ());
  gst_object_unref (pipeline);
  return NULL;
}

static void
send_eos (Runner * r, RunnerState next)
{
  r->state = next;
  clear_timeout (r);
  r->timeout_id = g_timeout_add ((guint) (r->eos_timeout * 1000),
      eos_timeout_cb, r);
  g_thread_unref (g_thread_new ("send-eos", send_eos_thread,
          gst_object_ref (r->pipeline)));
}

/* ": s listens on 127.0.0.1:5910, tls 127.0.0.1:5911" for the elements
 * that listen (those with bound-port and bound-tls-port: spicesink), or "".
 * Main thread, once the pipeline plays. */
static gchar *
listen_summary (GstElement * pipeline)
{
  GList *elements = runner_pipeline_elements (pipeline), *l;
  GString *out = g_string_new (NULL);

  for (l = elements; l; l = l->next) {
    GstElement *e = l->data;
    GObjectClass *klass = G_OBJECT_GET_CLASS (e);
    gint port = -1, tls = -1;
    gchar *addr, *host;

    if (!g_object_class_find_property (klass, "bound-port") ||
        !g_object_class_find_property (klass, "bound-tls-port"))
      continue;
    g_object_get (e, "bound-port", &port, "bound-tls-port", &tls, NULL);
    addr = get_string (e, "address");
    host = addr && strchr (addr, ':') ? g_strdup_printf ("[%s]", addr) :
        g_strdup (addr ? addr : "*");
    g_string_append_printf (out, "%s %s listens on", out->len ? ";" : ":",
        GST_OBJECT_NAME (e));
    if (port >= 0)
      g_string_append_printf (out, " %s:%d", host, port);
    if (tls >= 0)
      g_string_append_printf (out, "%s tls %s:%d", port >= 0 ? "," : "",
          host, tls);
    if (port < 0 && tls < 0)
      g_string_append (out, " no port");
    g_free (host);
    g_free (addr);
  }
  g_list_free_full (elements, gst_object_unref);
  return g_string_free (out, FALSE);
}

static void
on_playing (Runner * r)
{
  gchar *where = listen_summary (r->pipeline);

  r->playing_since = g_get_monotonic_time ();
  LOG ("playing %s%s\n", r->config->path, where);
  g_free (where);
  if (!r->notified_ready) {
    notify (r, "READY=1");
    r->notified_ready = TRUE;
  }
  notify_status (r, "playing %s", r->config->path);
  if (r->previous)
    r->check_until = r->playing_since +
        (gint64) (r->reload_check * G_USEC_PER_SEC);
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
      gboolean permanent;

      gst_message_parse_error (msg, &err, &dbg);
      permanent = error_is_permanent (err);
      why = g_strdup_printf ("error from %s: %s", GST_MESSAGE_SRC_NAME (msg),
          err->message);
      /* a permanent error is one line; a transient one has its details */
      if (!permanent) {
        LOG ("error from %s: %s\n", path, err->message);
        if (dbg)
          LOG ("  debug: %s\n", dbg);
      }
      handle_failure (r, why, permanent);
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
        finish_reload_drain (r);
      } else {
        handle_failure (r, "unexpected end of stream", FALSE);
      }
      break;
    case GST_MESSAGE_STATE_CHANGED:
      if (GST_MESSAGE_SRC (msg) == GST_OBJECT (r->pipeline)) {
        GstState new_state;

        gst_message_parse_state_changed (msg, NULL, &new_state, NULL);
        if (new_state == GST_STATE_PLAYING && r->state == STATE_RUNNING)
          on_playing (r);
      }
      break;
    case GST_MESSAGE_LATENCY:
      gst_bin_recalculate_latency (GST_BIN (r->pipeline));
      break;
    case GST_MESSAGE_CLOCK_LOST:
      gst_element_set_state (r->pipeline, GST_STATE_PAUSED);
      gst_element_set_state (r->pipeline, GST_STATE_PLAYING);
      break;
    case GST_MESSAGE_ELEMENT:
      runner_events_handle (r->events, msg);
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
    LOG ("stopping now\n");
    quit (r, 0);
  } else {
    LOG ("stopping: sending EOS\n");
    notify_status (r, "stopping");
    arm_hard_stop (r, r->eos_timeout + HARD_STOP_GRACE_S);
    if (r->state == STATE_RELOADING) {
      gst_clear_object (&r->pending);
      g_clear_pointer (&r->pending_config, config_free);
      g_clear_pointer (&r->pending_desc, g_free);
      g_clear_pointer (&r->pending_start_time, g_free);
    }
    send_eos (r, STATE_STOPPING);
  }
  return G_SOURCE_CONTINUE;
}

static gboolean
on_reload_signal (gpointer user_data)
{
  Runner *r = user_data;
  GstElement *pipeline;
  Config *c;
  gchar *desc, *start_time;
  gint code = 0;

  if (r->state == STATE_STOPPING || r->state == STATE_RELOADING) {
    LOG ("reload ignored: already %s\n", r->state == STATE_STOPPING ?
        "stopping" : "reloading");
    return G_SOURCE_CONTINUE;
  }
  notify (r, "RELOADING=1");
  c = config_load (r, TRUE, &code);
  /* with the running START_TIME: an unchanged file expands the same */
  desc = c ? config_expand (c, r->start_time, NULL, &code) : NULL;
  if (desc && r->config && g_strcmp0 (c->path, r->config->path) == 0 &&
      g_strcmp0 (desc, r->desc) == 0) {
    LOG ("reload: %s is unchanged; nothing to do\n", c->path);
    config_free (c);
    g_free (desc);
    notify (r, "READY=1");
    return G_SOURCE_CONTINUE;
  }
  g_free (desc);
  start_time = next_start_time ();
  desc = c ? config_expand (c, start_time, NULL, &code) : NULL;
  pipeline = desc ? parse_pipeline (c, desc, &code) : NULL;
  if (!pipeline) {
    LOG ("reload failed (exit code would be %d); keeping the running "
        "pipeline\n", code);
    config_free (c);
    g_free (desc);
    g_free (start_time);
    notify (r, "READY=1");
    return G_SOURCE_CONTINUE;
  }
  LOG ("reloading %s\n", c->path);
  if (!r->pipeline) {
    clear_timeout (r);
    g_clear_pointer (&r->previous, config_free);
    start_pipeline (r, pipeline, c, desc, start_time);
  } else {
    guint asked;

    /* the clients wait in the shared sockets' backlog for the new
     * pipeline while the old one drains */
    runner_listeners_attach (r->listeners, pipeline);
    asked = runner_listeners_redirect (r->pipeline, pipeline);
    if (asked)
      LOG ("reload: %u client(s) asked to reconnect to the new pipeline\n",
          asked);
    r->pending = pipeline;
    r->pending_config = c;
    r->pending_desc = desc;
    r->pending_start_time = start_time;
    send_eos (r, STATE_RELOADING);
  }
  notify (r, "READY=1");
  return G_SOURCE_CONTINUE;
}

/* ---- the upstream watch ---- */

typedef struct
{
  Runner *r;
  gboolean waiting;
  gchar *why;
} UpstreamScan;

/* One spicesrc that has not connected yet */
typedef struct
{
  guint attempts;               /* its "reconnects" + 1 at the last report */
  guint interval;               /* its own reconnect-interval */
} UpstreamState;

static void
upstream_cb (GstElement * e, const gchar * label, const GstStructure * s,
    gpointer user_data)
{
  UpstreamScan *scan = user_data;
  Runner *r = scan->r;
  GstElementFactory *f = gst_element_get_factory (e);
  UpstreamState *st;
  guint reconnects = 0, interval = 0;
  gint width = 0;
  const gchar *err;

  if (!f || g_strcmp0 (GST_OBJECT_NAME (f), "spicesrc") != 0)
    return;
  gst_structure_get_uint (s, "reconnects", &reconnects);
  gst_structure_get_int (s, "width", &width);
  err = gst_structure_get_string (s, "last-error");
  st = g_hash_table_lookup (r->upstream_seen, e);
  if (width > 0 || !err || !*err) {
    if (width > 0 && st) {
      LOG ("upstream of %s connected\n", GST_OBJECT_NAME (e));
      g_object_set (e, "reconnect-interval", st->interval, NULL);
      g_hash_table_remove (r->upstream_seen, e);
    }
    return;
  }
  scan->waiting = TRUE;
  if (!scan->why)
    scan->why = g_strdup (err);
  if (st && st->attempts == reconnects + 1)
    return;
  /* a new failed attempt: report it and double the element's retry
   * interval, up to --backoff-max */
  g_object_get (e, "reconnect-interval", &interval, NULL);
  if (!st) {
    st = g_new0 (UpstreamState, 1);
    st->interval = interval;
    g_hash_table_insert (r->upstream_seen, e, st);
  } else {
    interval = MIN ((guint) (r->backoff_max * 1000), interval * 2);
    g_object_set (e, "reconnect-interval", interval, NULL);
  }
  st->attempts = reconnects + 1;
  LOG ("waiting for upstream (%s, attempt %u): %s; next attempt in %.1f s\n",
      GST_OBJECT_NAME (e), st->attempts, err, interval / 1000.0);
}

/* Once a second: the reload check, and whether the upstream is there. */
static gboolean
on_watch_timer (gpointer user_data)
{
  Runner *r = user_data;
  UpstreamScan scan = { r, FALSE, NULL };

  gint64 now = g_get_monotonic_time ();

  if (r->previous && r->check_until && now >= r->check_until) {
    LOG ("reload checked: the new pipeline runs\n");
    g_clear_pointer (&r->previous, config_free);
  } else if (r->previous && !r->check_until && r->state == STATE_RUNNING &&
      now - r->swapped_at > RELOAD_PLAYING_TIMEOUT_S * G_USEC_PER_SEC) {
    reload_rollback (r, "the new pipeline did not reach PLAYING");
    return G_SOURCE_CONTINUE;
  }
  /* also before PLAYING: a sink may wait for the upstream's first frame */
  if (!r->pipeline || r->state != STATE_RUNNING)
    return G_SOURCE_CONTINUE;
  runner_stats_foreach (r->pipeline, upstream_cb, &scan);
  if (scan.waiting)
    notify_status (r, "waiting for upstream: %s", scan.why);
  else if (r->upstream_waiting)
    notify_status (r, "playing %s", r->config->path);
  r->upstream_waiting = scan.waiting;
  g_free (scan.why);
  return G_SOURCE_CONTINUE;
}

static gboolean
on_stats_timer (gpointer user_data)
{
  Runner *r = user_data;
  gchar *line = r->pipeline ? runner_stats_line (r->pipeline) : NULL;

  if (line)
    LOG ("stats: %s\n", line);
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

/* main thread (the metrics endpoint): the event counters */
static void
append_event_metrics (GString * out, gpointer user_data)
{
  Runner *r = user_data;

  runner_events_prometheus (r->events, out);
}

static GstElement *
get_pipeline (gpointer user_data)
{
  Runner *r = user_data;

  return r->pipeline ? gst_object_ref (r->pipeline) : NULL;
}

/* --check: parse and check; unset variables are listed, not errors. */
static gint
run_check (Runner * r)
{
  GPtrArray *unset = g_ptr_array_new_with_free_func (g_free);
  gint code = 0;
  Config *c = config_load (r, TRUE, &code);
  gchar *desc = c ? config_expand (c, "CHECK", unset, &code) : NULL;
  GstElement *pipeline = desc ? parse_pipeline (c, desc, &code) : NULL;

  if (pipeline) {
    if (unset->len) {
      gchar *list;

      g_ptr_array_add (unset, NULL);
      list = g_strjoinv (", ", (gchar **) unset->pdata);
      g_print ("%s: OK (to run it, set %s)\n", c->path, list);
      g_free (list);
    } else {
      g_print ("%s: OK\n", c->path);
    }
    gst_object_unref (pipeline);
  } else if (unset->len) {
    gchar *list;

    g_ptr_array_add (unset, NULL);
    list = g_strjoinv (", ", (gchar **) unset->pdata);
    LOG ("(checked with these variables unset: %s)\n", list);
    g_free (list);
  }
  g_free (desc);
  config_free (c);
  g_ptr_array_unref (unset);
  return code;
}

int
main (int argc, char **argv)
{
  Runner r = { 0, };
  gboolean check = FALSE, version = FALSE;
  gchar **files = NULL, **p;
  GOptionEntry entries[] = {
    {"define", 'D', 0, G_OPTION_ARG_STRING_ARRAY, &r.defines,
          "Set variable NAME to VALUE (overrides env files and the environment)",
        "NAME=VALUE"},
    {"env-file", 'e', 0, G_OPTION_ARG_FILENAME_ARRAY, &r.env_files,
          "Read NAME=VALUE lines from FILE (systemd EnvironmentFile syntax)",
        "FILE"},
    {"check", 'c', 0, G_OPTION_ARG_NONE, &check,
        "Only check that the file parses and its elements exist and take "
          "their properties (unset variables are listed)", NULL},
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
    {"reload-check", 0, 0, G_OPTION_ARG_DOUBLE, &r.reload_check,
        "Seconds a reloaded pipeline must play without error before the "
          "previous one is forgotten (default 3)", "S"},
    {"stats-interval", 's', 0, G_OPTION_ARG_INT, &r.stats_interval,
        "Log the elements' stats every N seconds, 0 = never (default 60)", "N"},
    {"metrics", 'm', 0, G_OPTION_ARG_STRING, &r.metrics_addr,
        "Serve Prometheus metrics on http://HOST:PORT/metrics, and "
          "/healthz and /ready for probes", "HOST:PORT"},
    {"version", 0, 0, G_OPTION_ARG_NONE, &version,
        "Print the version of gst-spice-run and of GStreamer, and exit", NULL},
    {G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &files, NULL,
        "FILE"},
    {NULL}
  };
  GOptionContext *octx;
  GError *err = NULL;
  gint code = 0;

  r.max_restarts = 5;
  r.healthy_after = 60;
  r.backoff_max = 30;
  r.eos_timeout = 5;
  r.reload_check = 3;
  r.stats_interval = 60;

  octx = g_option_context_new ("[FILE.pipeline | NAME] - run a gst-spice "
      "pipeline");
  g_option_context_add_main_entries (octx, entries, NULL);
  g_option_context_add_group (octx, gst_init_get_option_group ());
  g_option_context_set_description (octx,
      "Without FILE or NAME, the PIPELINE variable names the pipeline.\n"
      "Exit codes: 0 stopped, 64 usage, 65 bad pipeline file, 66 unreadable "
      "file,\n69 missing element, 75 transient failure persists, "
      "77 configuration refused,\n78 bad element property "
      "(docs/operator-guide.md).\n");
  if (!g_option_context_parse (octx, &argc, &argv, &err)) {
    LOG ("%s\n", err->message);
    return EX_USAGE;
  }
  g_option_context_free (octx);
  if (version) {
    gchar *gst = gst_version_string ();

    g_print ("gst-spice-run %s (%s)\n", VERSION, gst);
    g_free (gst);
    g_strfreev (files);
    return 0;
  }
  if (files && files[0] && files[1]) {
    LOG ("usage: gst-spice-run [OPTION…] [FILE.pipeline | NAME] (see "
        "--help)\n");
    return EX_USAGE;
  }
  r.arg = files ? g_strdup (files[0]) : NULL;
  g_strfreev (files);
  for (p = r.defines; p && *p; p++) {
    GHashTable *one = pipeline_vars_new ();

    if (!pipeline_vars_add_assignment (one, *p, &err)) {
      LOG ("-D %s\n", err->message);
      return EX_USAGE;
    }
    g_hash_table_unref (one);
  }
  if (r.max_restarts < 0 || r.eos_timeout <= 0 || r.backoff_max < 1 ||
      r.reload_check < 0) {
    LOG ("--max-restarts must be >= 0, --eos-timeout > 0, --backoff-max "
        ">= 1, --reload-check >= 0\n");
    return EX_USAGE;
  }
  {
    gchar *retried = runner_registry_retry_blacklisted ();

    if (retried)
      LOG ("blacklisted in the registry cache, scanned again: %s\n", retried);
    g_free (retried);
  }
  if (check)
    return run_check (&r);

  r.upstream_seen = g_hash_table_new_full (NULL, NULL, NULL, g_free);
  r.events = runner_events_new ();
  r.listeners = runner_listeners_new ();
  r.config = config_load (&r, TRUE, &code);
  if (!r.config)
    return code;
  {
    gchar *start_time = next_start_time ();
    gchar *desc = config_expand (r.config, start_time, NULL, &code);
    GstElement *pipeline = desc ? parse_pipeline (r.config, desc,
        &code) : NULL;

    if (!pipeline) {
      g_free (desc);
      g_free (start_time);
      return code;
    }
    r.loop = g_main_loop_new (NULL, FALSE);
    if (r.metrics_addr) {
      r.metrics = runner_metrics_start (r.metrics_addr, get_pipeline,
          append_event_metrics, &r, &err);
      if (!r.metrics) {
        /* a busy port is transient; a malformed address is usage */
        gboolean busy = g_error_matches (err, G_IO_ERROR,
            G_IO_ERROR_ADDRESS_IN_USE);

        LOG ("metrics endpoint %s: %s\n", r.metrics_addr, err->message);
        gst_object_unref (pipeline);
        return busy ? EX_TEMPFAIL : EX_USAGE;
      }
      LOG ("metrics on http://%s/metrics\n", r.metrics_addr);
    }
    g_unix_signal_add (SIGINT, on_stop_signal, &r);
    g_unix_signal_add (SIGTERM, on_stop_signal, &r);
    g_unix_signal_add (SIGHUP, on_reload_signal, &r);
    if (r.stats_interval > 0)
      g_timeout_add_seconds (r.stats_interval, on_stats_timer, &r);
    g_timeout_add_seconds (1, on_watch_timer, &r);
#ifdef HAVE_LIBSYSTEMD
    {
      uint64_t usec = 0;

      if (sd_watchdog_enabled (0, &usec) > 0 && usec > 0)
        g_timeout_add (MAX (usec / 2000, 100), on_watchdog_timer, &r);
    }
#endif
    start_pipeline (&r, pipeline, r.config, desc, start_time);
  }
  g_main_loop_run (r.loop);

  runner_metrics_stop (r.metrics);
  g_main_loop_unref (r.loop);
  config_free (r.config);
  config_free (r.previous);
  g_free (r.desc);
  g_free (r.start_time);
  g_hash_table_unref (r.upstream_seen);
  runner_events_free (r.events);
  runner_listeners_free (r.listeners);
  g_strfreev (r.defines);
  g_strfreev (r.env_files);
  g_free (r.metrics_addr);
  g_free (r.arg);
  gst_deinit ();
  return r.exit_code;
}
