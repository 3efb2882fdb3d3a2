/* A strict parser of the Prometheus text exposition format (0.0.4), for
 * tests: what Prometheus itself would reject is an error here, and a
 * little more (counters must be named *_total).
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Parses @text (the HTTP body). Returns the series, "name{k="v",…}" with
 * labels sorted by name -> gdouble * value, or NULL with *error_out set to
 * "line N: why". */
GHashTable *prom_strict_parse (const gchar * text, gchar ** error_out);
/* The number of series whose key starts with @prefix */
guint prom_strict_count (GHashTable * series, const gchar * prefix);

G_END_DECLS
