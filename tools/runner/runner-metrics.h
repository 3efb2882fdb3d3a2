/* gst-spice-run: the Prometheus metrics endpoint (libsoup 3)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

typedef struct _RunnerMetrics RunnerMetrics;
typedef GstElement *(*RunnerMetricsGetPipeline) (gpointer user_data);
/* appends the runner's own samples (its event counters) */
typedef void (*RunnerMetricsAppend) (GString * out, gpointer user_data);

/* @address: "HOST:PORT" (e.g. 127.0.0.1:9110). Serves GET /metrics: the
 * elements' stats, then what @append adds (may be NULL); and /healthz (200
 * while the main loop runs) and /ready (200 while the pipeline is PLAYING,
 * else 503) for orchestrators' probes. */
RunnerMetrics *runner_metrics_start (const gchar * address,
    RunnerMetricsGetPipeline get_pipeline, RunnerMetricsAppend append,
    gpointer user_data, GError ** error);
void           runner_metrics_stop (RunnerMetrics * metrics);

G_END_DECLS
