/* gst-spice-run: the elements' `stats` as a log line and as Prometheus text
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

/* @label: the element's name, or for a name GStreamer made up, one that
 * stays the same across reloads (see runner-stats.c) */
typedef void (*RunnerStatsFunc) (GstElement * element, const gchar * label,
    const GstStructure * stats, gpointer user_data);

/* Every element of @pipeline (recursively, referenced), sources first;
 * free with g_list_free_full (list, gst_object_unref). */
GList *runner_pipeline_elements (GstElement * pipeline);
/* Calls @func for each element of @pipeline with a `stats` property, in
 * pipeline order. */
void runner_stats_foreach (GstElement * pipeline, RunnerStatsFunc func,
    gpointer user_data);
/* One short log line: each element's main figures (the metrics have
 * them all), or NULL when no element has stats. */
gchar *runner_stats_line (GstElement * pipeline);
gchar *runner_stats_prometheus (GstElement * pipeline);
/* Appends @value escaped for a Prometheus label value (\\, \", \n). */
void runner_stats_label_escape (GString * out, const gchar * value);

G_END_DECLS
