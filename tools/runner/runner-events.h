/* gst-spice-run: the elements' security and health events as log lines
 * and as counters
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

typedef struct _RunnerEvents RunnerEvents;

RunnerEvents *runner_events_new (void);
void          runner_events_free (RunnerEvents * events);
/* Main thread (the bus watch): when @msg is a spice-security or
 * spice-health element message, prints its line on stderr, counts it and
 * returns TRUE. */
gboolean      runner_events_handle (RunnerEvents * events, GstMessage * msg);
/* Main thread: appends the counters in the Prometheus text format. */
void          runner_events_prometheus (RunnerEvents * events, GString * out);

G_END_DECLS
