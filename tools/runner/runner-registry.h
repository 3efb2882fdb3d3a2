/* gst-spice-run: plugins a stale registry cache keeps blacklisted
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

gchar *runner_registry_retry_blacklisted (void);

G_END_DECLS
