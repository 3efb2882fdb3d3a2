/* gst-spice-run: the elements' `stats` as a log line and as Prometheus text
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Every element that has a readable GstStructure property named "stats"
 * contributes. Numbers become samples named gst_spice_<field> with an
 * element="<name>" label; nested structures add their name to the metric
 * and arrays of structures (e.g. one per client) add an index label, or the
 * value of their "address" field as client="<address>".
 */
#include <string.h>

#include "runner-stats.h"

typedef void (*StatsFunc) (GstElement * element, const GstStructure * stats,
    gpointer user_data);

static void
foreach_stats (GstElement * pipeline, StatsFunc func, gpointer user_data)
{
  GstIterator *it;
  GValue item = G_VALUE_INIT;
  gboolean done = FALSE;
  GList *elements = NULL, *l;

  if (!GST_IS_BIN (pipeline))
    return;
  it = gst_bin_iterate_recurse (GST_BIN (pipeline));
  while (!done) {
    switch (gst_iterator_next (it, &item)) {
      case GST_ITERATOR_OK:
        elements = g_list_prepend (elements,
            gst_object_ref (g_value_get_object (&item)));
        g_value_reset (&item);
        break;
      case GST_ITERATOR_RESYNC:
        g_list_free_full (elements, gst_object_unref);
        elements = NULL;
        gst_iterator_resync (it);
        break;
      default:
        done = TRUE;
        break;
    }
  }
  g_value_unset (&item);
  gst_iterator_free (it);

  /* in pipeline order (the iterator goes sink to source) */
  for (l = elements; l; l = l->next) {
    GstElement *e = l->data;
    GParamSpec *pspec = g_object_class_find_property (G_OBJECT_GET_CLASS (e),
        "stats");
    GstStructure *s = NULL;

    if (!pspec || !(pspec->flags & G_PARAM_READABLE) ||
        pspec->value_type != GST_TYPE_STRUCTURE)
      continue;
    g_object_get (e, "stats", &s, NULL);
    if (s) {
      func (e, s, user_data);
      gst_structure_free (s);
    }
  }
  g_list_free_full (elements, gst_object_unref);
}

static gboolean
value_as_double (const GValue * v, gdouble * out)
{
  switch (G_VALUE_TYPE (v)) {
    case G_TYPE_INT:
      *out = g_value_get_int (v);
      return TRUE;
    case G_TYPE_UINT:
      *out = g_value_get_uint (v);
      return TRUE;
    case G_TYPE_INT64:
      *out = (gdouble) g_value_get_int64 (v);
      return TRUE;
    case G_TYPE_UINT64:
      *out = (gdouble) g_value_get_uint64 (v);
      return TRUE;
    case G_TYPE_LONG:
      *out = g_value_get_long (v);
      return TRUE;
    case G_TYPE_ULONG:
      *out = g_value_get_ulong (v);
      return TRUE;
    case G_TYPE_DOUBLE:
      *out = g_value_get_double (v);
      return TRUE;
    case G_TYPE_FLOAT:
      *out = g_value_get_float (v);
      return TRUE;
    case G_TYPE_BOOLEAN:
      *out = g_value_get_boolean (v) ? 1 : 0;
      return TRUE;
    default:
      return FALSE;
  }
}

/* ---- one log line ---- */

static gboolean
append_field (GQuark field, const GValue * v, gpointer user_data)
{
  GString *line = user_data;
  gdouble d;

  if (!value_as_double (v, &d))
    return TRUE;
  g_string_append_printf (line, " %s=%.15g", g_quark_to_string (field), d);
  return TRUE;
}

static void
line_cb (GstElement * e, const GstStructure * s, gpointer user_data)
{
  GString *line = user_data;

  g_string_append_printf (line, "%s%s:", line->len ? "; " : "",
      GST_OBJECT_NAME (e));
  gst_structure_foreach (s, append_field, line);
}

/* "name: a=1 b=2; name2: ..." with the numeric top-level fields, or NULL
 * when no element has stats. */
gchar *
runner_stats_line (GstElement * pipeline)
{
  GString *line = g_string_new (NULL);

  foreach_stats (pipeline, line_cb, line);
  if (line->len == 0) {
    g_string_free (line, TRUE);
    return NULL;
  }
  return g_string_free (line, FALSE);
}

/* ---- Prometheus text format ---- */

typedef struct
{
  GHashTable *samples;          /* metric name -> GString of its samples */
  GPtrArray *order;             /* metric names in first-seen order */
} PromContext;

static gchar *
metric_name (const gchar * prefix, const gchar * field)
{
  gchar *name = g_strdup_printf ("%s_%s", prefix, field);
  gchar *p;

  for (p = name; *p; p++)
    if (!g_ascii_isalnum (*p) && *p != '_')
      *p = '_';
  return name;
}

static void
label_escape (GString * out, const gchar * value)
{
  for (; *value; value++) {
    if (*value == '\\' || *value == '"')
      g_string_append_c (out, '\\');
    if (*value == '\n')
      g_string_append (out, "\\n");
    else
      g_string_append_c (out, *value);
  }
}

static void prom_structure (PromContext * ctx, const gchar * prefix,
    const gchar * labels, const GstStructure * s);

static void
prom_value (PromContext * ctx, const gchar * name, const gchar * labels,
    const GValue * v)
{
  gdouble d;

  if (value_as_double (v, &d)) {
    GString *samples = g_hash_table_lookup (ctx->samples, name);

    if (!samples) {
      /* all samples of one metric must follow its TYPE line */
      samples = g_string_new (NULL);
      g_string_append_printf (samples, "# TYPE %s %s\n", name,
          g_str_has_suffix (name, "_total") ? "counter" : "gauge");
      g_hash_table_insert (ctx->samples, g_strdup (name), samples);
      g_ptr_array_add (ctx->order, g_strdup (name));
    }
    g_string_append_printf (samples, "%s{%s} %.17g\n", name, labels, d);
  } else if (G_VALUE_TYPE (v) == GST_TYPE_STRUCTURE) {
    prom_structure (ctx, name, labels, gst_value_get_structure (v));
  } else if (GST_VALUE_HOLDS_ARRAY (v) || GST_VALUE_HOLDS_LIST (v)) {
    guint i, n = GST_VALUE_HOLDS_ARRAY (v) ? gst_value_array_get_size (v) :
        gst_value_list_get_size (v);

    for (i = 0; i < n; i++) {
      const GValue *item = GST_VALUE_HOLDS_ARRAY (v) ?
          gst_value_array_get_value (v, i) : gst_value_list_get_value (v, i);
      GString *l = g_string_new (labels);

      if (G_VALUE_TYPE (item) == GST_TYPE_STRUCTURE) {
        const GstStructure *is = gst_value_get_structure (item);
        const gchar *addr = gst_structure_get_string (is, "address");

        if (addr) {
          g_string_append (l, ",client=\"");
          label_escape (l, addr);
          g_string_append (l, "\"");
        } else {
          g_string_append_printf (l, ",index=\"%u\"", i);
        }
      } else {
        g_string_append_printf (l, ",index=\"%u\"", i);
      }
      prom_value (ctx, name, l->str, item);
      g_string_free (l, TRUE);
    }
  }
}

typedef struct
{
  PromContext *ctx;
  const gchar *prefix;
  const gchar *labels;
} PromField;

static gboolean
prom_field (GQuark field, const GValue * v, gpointer user_data)
{
  PromField *f = user_data;
  gchar *name = metric_name (f->prefix, g_quark_to_string (field));

  prom_value (f->ctx, name, f->labels, v);
  g_free (name);
  return TRUE;
}

static void
prom_structure (PromContext * ctx, const gchar * prefix, const gchar * labels,
    const GstStructure * s)
{
  PromField f = { ctx, prefix, labels };

  gst_structure_foreach (s, prom_field, &f);
}

static void
prom_cb (GstElement * e, const GstStructure * s, gpointer user_data)
{
  PromContext *ctx = user_data;
  GString *labels = g_string_new ("element=\"");
  GstElementFactory *f = gst_element_get_factory (e);
  gchar *prefix = g_strdup_printf ("gst_spice_%s",
      f ? GST_OBJECT_NAME (f) : "element");

  label_escape (labels, GST_OBJECT_NAME (e));
  g_string_append (labels, "\"");
  prom_structure (ctx, prefix, labels->str, s);
  g_free (prefix);
  g_string_free (labels, TRUE);
}

static void
string_free (gpointer s)
{
  g_string_free (s, TRUE);
}

gchar *
runner_stats_prometheus (GstElement * pipeline)
{
  PromContext ctx;
  GString *out = g_string_new (NULL);
  guint i;

  ctx.samples = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
      string_free);
  ctx.order = g_ptr_array_new_with_free_func (g_free);
  if (pipeline)
    foreach_stats (pipeline, prom_cb, &ctx);
  for (i = 0; i < ctx.order->len; i++) {
    GString *samples = g_hash_table_lookup (ctx.samples,
        g_ptr_array_index (ctx.order, i));

    g_string_append_len (out, samples->str, samples->len);
  }
  g_ptr_array_unref (ctx.order);
  g_hash_table_unref (ctx.samples);
  return g_string_free (out, FALSE);
}
