/* gst-spice-run: the elements' `stats` as a log line and as Prometheus text
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

gchar *runner_stats_line (GstElement * pipeline);
gchar *runner_stats_prometheus (GstElement * pipeline);

G_END_DECLS
