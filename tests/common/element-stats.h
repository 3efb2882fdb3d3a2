/* element-stats.h: read one counter of an element's "stats" structure in
 * a check test (spicesrc, spicetiler, spicesink, spicestreamenc all
 * publish one) */
#pragma once

#include <gst/gst.h>
#include <gst/check/gstcheck.h>

/* any thread: the guint64 (or guint) field @field of @element's "stats";
 * fails the test if the element has no such field */
static inline guint64
test_element_stat_u64 (gpointer element, const gchar * field)
{
  GstStructure *s = NULL;
  guint64 v = 0;
  guint u = 0;
  gboolean found;

  g_object_get (element, "stats", &s, NULL);
  fail_unless (s != NULL, "no stats");
  found = gst_structure_get_uint64 (s, field, &v);
  if (!found && gst_structure_get_uint (s, field, &u)) {
    v = u;
    found = TRUE;
  }
  gst_structure_free (s);
  fail_unless (found, "no stats field %s", field);
  return v;
}
