/* gst-spice-run: the elements' `stats` as a log line and as Prometheus text
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Every element that has a readable GstStructure property named "stats"
 * contributes. Numbers become samples named gst_spice_<factory>_<field>
 * with an element="<label>" label; nested structures add their name to the
 * metric, and arrays of structures (one per client, one per stream) add
 * session="<session-id>" (and client="<address>"), pad="<pad>", or an
 * index label.
 *
 * The element label is the element's name, except for names GStreamer made
 * up (factory name + a process-wide counter, which grows on every reload):
 * those become the factory name + the element's rank among its factory's
 * elements in this pipeline, the same after every reload.
 *
 * Types: a 64-bit unsigned field is a counter (named …_total, once), unless its
 * name says it is a rate or a level (*-bps, *-rate, queued-bytes,
 * mean-frame-bytes, *-area-pending); "reconnects" is a counter too; every
 * other number is a gauge.
 */
#include <string.h>

#include "runner-stats.h"

GList *
runner_pipeline_elements (GstElement * pipeline)
{
  GstIterator *it;
  GValue item = G_VALUE_INIT;
  gboolean done = FALSE;
  GList *elements = NULL;

  if (!GST_IS_BIN (pipeline))
    return NULL;
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
  /* prepended: in pipeline order (the iterator goes sink to source) */
  return elements;
}

void
runner_stats_foreach (GstElement * pipeline, RunnerStatsFunc func,
    gpointer user_data)
{
  GList *elements = runner_pipeline_elements (pipeline), *l;
  GHashTable *ranks;

  ranks = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  for (l = elements; l; l = l->next) {
    GstElement *e = l->data;
    GstElementFactory *f = gst_element_get_factory (e);
    const gchar *fname = f ? GST_OBJECT_NAME (f) : NULL;
    const gchar *name = GST_OBJECT_NAME (e);
    gchar *label;
    GParamSpec *pspec = g_object_class_find_property (G_OBJECT_GET_CLASS (e),
        "stats");
    GstStructure *s = NULL;

    if (fname && g_str_has_prefix (name, fname) && name[strlen (fname)] &&
        strspn (name + strlen (fname), "0123456789") ==
        strlen (name + strlen (fname))) {
      guint rank = GPOINTER_TO_UINT (g_hash_table_lookup (ranks, fname));

      label = g_strdup_printf ("%s%u", fname, rank);
      g_hash_table_replace (ranks, g_strdup (fname),
          GUINT_TO_POINTER (rank + 1));
    } else {
      label = g_strdup (name);
    }
    if (pspec && (pspec->flags & G_PARAM_READABLE) &&
        pspec->value_type == GST_TYPE_STRUCTURE)
      g_object_get (e, "stats", &s, NULL);
    if (s) {
      func (e, label, s, user_data);
      gst_structure_free (s);
    }
    g_free (label);
  }
  g_hash_table_unref (ranks);
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

/* The figures of the periodic log line, per factory: what an operator
 * reads first; everything else is in the metrics. Other elements show
 * their first LINE_OTHER_FIELDS numeric fields. */
static const struct
{
  const gchar *factory;
  const gchar *fields[7];
} line_fields[] = {
  {"spicesrc", {"frames", "width", "height", "reconnects", NULL}},
  {"spicetiler", {"frames-in", "regions", "stream-frames",
          "stream-frames-dropped", NULL}},
  {"spicestreamenc", {"applied-bps", "output-bps", NULL}},
  {"spicesink", {"clients", "stream-frames-in", "link-estimate-bps",
          "clients-refused", "auth-failures", "closed-stalled", NULL}},
};

#define LINE_OTHER_FIELDS 4

typedef struct
{
  GString *line;
  guint left;                   /* fields still to show (other elements) */
} LineContext;

static void
append_number (GString * line, const gchar * field, const GValue * v)
{
  gdouble d;

  if (v && value_as_double (v, &d))
    g_string_append_printf (line, " %s=%.15g", field, d);
}

static gboolean
append_field (GQuark field, const GValue * v, gpointer user_data)
{
  LineContext *ctx = user_data;
  gdouble d;

  if (ctx->left == 0 || !value_as_double (v, &d))
    return TRUE;
  append_number (ctx->line, g_quark_to_string (field), v);
  ctx->left--;
  return TRUE;
}

static void
line_cb (GstElement * e, const gchar * label, const GstStructure * s,
    gpointer user_data)
{
  LineContext *ctx = user_data;
  GstElementFactory *f = gst_element_get_factory (e);
  const gchar *fname = f ? GST_OBJECT_NAME (f) : "";
  guint i, j;

  g_string_append_printf (ctx->line, "%s%s:", ctx->line->len ? "; " : "",
      label);
  for (i = 0; i < G_N_ELEMENTS (line_fields); i++) {
    if (strcmp (fname, line_fields[i].factory) != 0)
      continue;
    for (j = 0; line_fields[i].fields[j]; j++)
      append_number (ctx->line, line_fields[i].fields[j],
          gst_structure_get_value (s, line_fields[i].fields[j]));
    return;
  }
  ctx->left = LINE_OTHER_FIELDS;
  gst_structure_foreach (s, append_field, ctx);
}

/* "name: a=1 b=2; name2: ..." with each element's main figures, or NULL
 * when no element has stats. */
gchar *
runner_stats_line (GstElement * pipeline)
{
  LineContext ctx = { g_string_new (NULL), 0 };

  runner_stats_foreach (pipeline, line_cb, &ctx);
  if (ctx.line->len == 0) {
    g_string_free (ctx.line, TRUE);
    return NULL;
  }
  return g_string_free (ctx.line, FALSE);
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
  gchar *name = field ? g_strdup_printf ("%s_%s", prefix, field) :
      g_strdup (prefix);
  gchar *p;

  for (p = name; *p; p++)
    if (!g_ascii_isalnum (*p) && *p != '_')
      *p = '_';
  return name;
}

void
runner_stats_label_escape (GString * out, const gchar * value)
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

static gboolean
field_is_counter (const gchar * field, const GValue * v)
{
  static const gchar *levels[] = { "queued-bytes", "mean-frame-bytes", NULL };

  if (g_strcmp0 (field, "reconnects") == 0)
    return TRUE;
  if (G_VALUE_TYPE (v) != G_TYPE_UINT64)
    return FALSE;
  return !g_str_has_suffix (field, "-bps") &&
      !g_str_has_suffix (field, "-rate") &&
      !g_str_has_suffix (field, "-area-pending") &&
      !g_strv_contains (levels, field);
}

/* Appends one label: ,key="escaped value" (no comma first when @l is
 * empty). */
static void
label_append (GString * l, const gchar * key, const gchar * value)
{
  g_string_append_printf (l, "%s%s=\"", l->len ? "," : "", key);
  runner_stats_label_escape (l, value);
  g_string_append_c (l, '"');
}

static void
prom_value (PromContext * ctx, const gchar * name, const gchar * field,
    const gchar * labels, const GValue * v)
{
  gdouble d;

  if (value_as_double (v, &d)) {
    gboolean counter = field_is_counter (field, v);
    gchar *full = counter && !g_str_has_suffix (name, "_total") ?
        g_strconcat (name, "_total", NULL) : g_strdup (name);
    GString *samples = g_hash_table_lookup (ctx->samples, full);

    if (!samples) {
      /* all samples of one metric must follow its TYPE line */
      samples = g_string_new (NULL);
      g_string_append_printf (samples, "# TYPE %s %s\n", full,
          counter ? "counter" : "gauge");
      g_hash_table_insert (ctx->samples, g_strdup (full), samples);
      g_ptr_array_add (ctx->order, g_strdup (full));
    }
    g_string_append_printf (samples, "%s{%s} %.17g\n", full, labels, d);
    g_free (full);
  } else if (G_VALUE_TYPE (v) == GST_TYPE_STRUCTURE) {
    prom_structure (ctx, name, labels, gst_value_get_structure (v));
  } else if (GST_VALUE_HOLDS_ARRAY (v) || GST_VALUE_HOLDS_LIST (v)) {
    guint i, n = GST_VALUE_HOLDS_ARRAY (v) ? gst_value_array_get_size (v) :
        gst_value_list_get_size (v);

    for (i = 0; i < n; i++) {
      const GValue *item = GST_VALUE_HOLDS_ARRAY (v) ?
          gst_value_array_get_value (v, i) : gst_value_list_get_value (v, i);
      GString *l = g_string_new (labels);
      const GstStructure *is = G_VALUE_TYPE (item) == GST_TYPE_STRUCTURE ?
          gst_value_get_structure (item) : NULL;
      guint id;
      gchar *num;

      /* one series per client session: two clients from one address
       * stay apart */
      if (is && gst_structure_get_uint (is, "session-id", &id)) {
        num = g_strdup_printf ("%u", id);
        label_append (l, "session", num);
        g_free (num);
        if (gst_structure_get_string (is, "address"))
          label_append (l, "client", gst_structure_get_string (is, "address"));
      } else if (is && gst_structure_get_string (is, "pad")) {
        label_append (l, "pad", gst_structure_get_string (is, "pad"));
      } else {
        num = g_strdup_printf ("%u", i);
        label_append (l, "index", num);
        g_free (num);
      }
      prom_value (ctx, name, field, l->str, item);
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

  /* session-id is a label, not a sample */
  if (g_strcmp0 (g_quark_to_string (field), "session-id") != 0)
    prom_value (f->ctx, name, g_quark_to_string (field), f->labels, v);
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
prom_cb (GstElement * e, const gchar * label, const GstStructure * s,
    gpointer user_data)
{
  PromContext *ctx = user_data;
  GString *labels = g_string_new (NULL);
  GstElementFactory *f = gst_element_get_factory (e);
  gchar *prefix = metric_name ("gst_spice", f ? GST_OBJECT_NAME (f) :
      "element");

  label_append (labels, "element", label);
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
    runner_stats_foreach (pipeline, prom_cb, &ctx);
  for (i = 0; i < ctx.order->len; i++) {
    GString *samples = g_hash_table_lookup (ctx.samples,
        g_ptr_array_index (ctx.order, i));

    g_string_append_len (out, samples->str, samples->len);
  }
  g_ptr_array_unref (ctx.order);
  g_hash_table_unref (ctx.samples);
  return g_string_free (out, FALSE);
}
