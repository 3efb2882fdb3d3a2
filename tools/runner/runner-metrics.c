/* gst-spice-run: the Prometheus metrics endpoint (libsoup 3)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <string.h>

#include "runner-metrics.h"
#include "runner-stats.h"

#ifdef HAVE_LIBSOUP
#include <libsoup/soup.h>

struct _RunnerMetrics
{
  SoupServer *server;
  RunnerMetricsGetPipeline get_pipeline;
  RunnerMetricsAppend append;
  gpointer user_data;
};

/* GET and HEAD only: anything else is answered 405 here. Main thread. */
static gboolean
method_allowed (SoupServerMessage * msg)
{
  const char *method = soup_server_message_get_method (msg);

  if (method == SOUP_METHOD_GET || method == SOUP_METHOD_HEAD)
    return TRUE;
  soup_server_message_set_status (msg, SOUP_STATUS_METHOD_NOT_ALLOWED, NULL);
  return FALSE;
}

static void
metrics_handler (SoupServer * server, SoupServerMessage * msg,
    const char *path, GHashTable * query, gpointer user_data)
{
  RunnerMetrics *m = user_data;
  GstElement *pipeline;
  GString *text;
  gchar *stats;

  if (!method_allowed (msg))
    return;
  pipeline = m->get_pipeline (m->user_data);
  stats = runner_stats_prometheus (pipeline);
  text = g_string_new (stats);
  g_free (stats);
  if (pipeline)
    gst_object_unref (pipeline);
  if (m->append)
    m->append (text, m->user_data);
  soup_server_message_set_status (msg, SOUP_STATUS_OK, NULL);
  soup_server_message_set_response (msg,
      "text/plain; version=0.0.4; charset=utf-8", SOUP_MEMORY_TAKE,
      text->str, text->len);
  g_string_free (text, FALSE);
}

/* GET /healthz: 200 whenever the runner's main loop answers (a liveness
 * probe; the runner restarts a failing pipeline itself). GET /ready: 200
 * while the pipeline is PLAYING (spicesink listens, clients can connect),
 * 503 while it starts, waits for a restart or is replaced by a reload (a
 * readiness probe). Main thread (the runner's main context). */
static void
health_handler (SoupServer * server, SoupServerMessage * msg,
    const char *path, GHashTable * query, gpointer user_data)
{
  RunnerMetrics *m = user_data;
  GstElement *pipeline;
  GstState state = GST_STATE_VOID_PENDING;
  gboolean ok = TRUE;
  const gchar *text = "ok\n";

  if (!method_allowed (msg))
    return;
  if (g_str_equal (path, "/ready")) {
    pipeline = m->get_pipeline (m->user_data);
    if (pipeline) {
      gst_element_get_state (pipeline, &state, NULL, 0);
      gst_object_unref (pipeline);
    }
    ok = state == GST_STATE_PLAYING;
    text = ok ? "playing\n" : "not playing\n";
  }
  soup_server_message_set_status (msg, ok ? SOUP_STATUS_OK :
      SOUP_STATUS_SERVICE_UNAVAILABLE, NULL);
  soup_server_message_set_response (msg, "text/plain; charset=utf-8",
      SOUP_MEMORY_STATIC, text, strlen (text));
}

RunnerMetrics *
runner_metrics_start (const gchar * address,
    RunnerMetricsGetPipeline get_pipeline, RunnerMetricsAppend append,
    gpointer user_data, GError ** error)
{
  RunnerMetrics *m;
  GSocketConnectable *conn;
  GSocketAddressEnumerator *en;
  GSocketAddress *addr;

  conn = g_network_address_parse (address, 0, error);
  if (!conn)
    return NULL;
  if (g_network_address_get_port (G_NETWORK_ADDRESS (conn)) == 0) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
        "metrics address '%s' has no port (use HOST:PORT)", address);
    g_object_unref (conn);
    return NULL;
  }
  en = g_socket_connectable_enumerate (conn);
  addr = g_socket_address_enumerator_next (en, NULL, error);
  g_object_unref (en);
  g_object_unref (conn);
  if (!addr)
    return NULL;

  m = g_new0 (RunnerMetrics, 1);
  m->get_pipeline = get_pipeline;
  m->append = append;
  m->user_data = user_data;
  m->server = soup_server_new ("server-header", "gst-spice-run", NULL);
  soup_server_add_handler (m->server, "/metrics", metrics_handler, m, NULL);
  soup_server_add_handler (m->server, "/healthz", health_handler, m, NULL);
  soup_server_add_handler (m->server, "/ready", health_handler, m, NULL);
  if (!soup_server_listen (m->server, addr, 0, error)) {
    g_object_unref (addr);
    runner_metrics_stop (m);
    return NULL;
  }
  g_object_unref (addr);
  return m;
}

void
runner_metrics_stop (RunnerMetrics * m)
{
  if (!m)
    return;
  soup_server_disconnect (m->server);
  g_object_unref (m->server);
  g_free (m);
}

#else /* !HAVE_LIBSOUP */

RunnerMetrics *
runner_metrics_start (const gchar * address,
    RunnerMetricsGetPipeline get_pipeline, RunnerMetricsAppend append,
    gpointer user_data, GError ** error)
{
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
      "this build has no metrics endpoint (libsoup 3 was not found)");
  return NULL;
}

void
runner_metrics_stop (RunnerMetrics * m)
{
}

#endif
