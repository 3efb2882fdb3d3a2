/* gst-spice-run: the elements' security and health events as log lines
 * and as counters
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * spicesink and spicesrc post one element message per event (structure
 * spice-security or spice-health, gstspiceevents.h), already rate limited
 * per source, event and reason. Each becomes one line on stderr (the
 * journal under systemd), in a format promised to operators and their
 * fail2ban filters (docs/operator-guide.md "Security and health events"):
 *
 *   gst-spice-run: security: event=refused peer=127.0.0.9 element=s
 *       reason=max-links-per-source limit=8 suppressed=0 detail="..."
 *
 * (one line): the class, then event, peer and element, then the other
 * fields in a fixed order; a value that is not a plain token is quoted
 * with \" and \\ escaped. Each also counts, with the suppressed ones, in
 * gst_spice_run_events_total{class,element,event,reason}.
 */
#include <stdio.h>
#include <string.h>

#include "runner-events.h"
#include "runner-stats.h"

struct _RunnerEvents
{
  GHashTable *counts;           /* "class\nelement\nevent\nreason" -> guint64* */
  GPtrArray *order;             /* keys in first-seen order */
};

/* the fields after event, peer and element, in this order */
static const gchar *const tail_fields[] = { "source", "reason", "limit",
  "type", "size", "suppressed", "detail", NULL
};

RunnerEvents *
runner_events_new (void)
{
  RunnerEvents *ev = g_new0 (RunnerEvents, 1);

  ev->counts = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  ev->order = g_ptr_array_new ();
  return ev;
}

void
runner_events_free (RunnerEvents * ev)
{
  if (!ev)
    return;
  g_ptr_array_unref (ev->order);
  g_hash_table_unref (ev->counts);
  g_free (ev);
}

static gboolean
is_token (const gchar * v)
{
  if (!*v)
    return FALSE;
  for (; *v; v++)
    if (!g_ascii_isalnum (*v) && !strchr ("._:/-+", *v))
      return FALSE;
  return TRUE;
}

/* " key=value", the value quoted unless a plain token; control
 * characters become spaces (one line, whatever a field holds) */
static void
append_kv (GString * line, const gchar * key, const gchar * value)
{
  g_string_append_printf (line, " %s=", key);
  if (is_token (value)) {
    g_string_append (line, value);
    return;
  }
  g_string_append_c (line, '"');
  for (; *value; value++) {
    if (*value == '"' || *value == '\\')
      g_string_append_c (line, '\\');
    g_string_append_c (line, g_ascii_iscntrl (*value) ? ' ' : *value);
  }
  g_string_append_c (line, '"');
}

static void
append_field (GString * line, const GstStructure * s, const gchar * field)
{
  const GValue *v = gst_structure_get_value (s, field);
  gchar *str;

  if (!v)
    return;
  if (G_VALUE_HOLDS_STRING (v)) {
    append_kv (line, field, g_value_get_string (v) ?
        g_value_get_string (v) : "");
    return;
  }
  str = gst_value_serialize (v);
  if (str)
    append_kv (line, field, str);
  g_free (str);
}

static const gchar *
field_or (const GstStructure * s, const gchar * field, const gchar * dflt)
{
  const gchar *v = gst_structure_get_string (s, field);

  return v ? v : dflt;
}

gboolean
runner_events_handle (RunnerEvents * ev, GstMessage * msg)
{
  const GstStructure *s;
  const gchar *klass, *element = GST_MESSAGE_SRC_NAME (msg);
  guint64 suppressed = 0, *count;
  GString *line;
  gchar *key;
  guint i;

  if (GST_MESSAGE_TYPE (msg) != GST_MESSAGE_ELEMENT)
    return FALSE;
  s = gst_message_get_structure (msg);
  if (gst_structure_has_name (s, "spice-security"))
    klass = "security";
  else if (gst_structure_has_name (s, "spice-health"))
    klass = "health";
  else
    return FALSE;
  if (!element)
    element = "?";

  line = g_string_new ("gst-spice-run: ");
  g_string_append_printf (line, "%s:", klass);
  append_kv (line, "event", field_or (s, "event", "unknown"));
  append_kv (line, "peer", field_or (s, "peer", "?"));
  append_kv (line, "element", element);
  for (i = 0; tail_fields[i]; i++) {
    /* the source only where it differs from the peer (IPv6 prefixes) */
    if (g_str_equal (tail_fields[i], "source") &&
        g_strcmp0 (gst_structure_get_string (s, "source"),
            gst_structure_get_string (s, "peer")) == 0)
      continue;
    append_field (line, s, tail_fields[i]);
  }
  g_string_append_c (line, '\n');
  fputs (line->str, stderr);
  fflush (stderr);
  g_string_free (line, TRUE);

  gst_structure_get_uint64 (s, "suppressed", &suppressed);
  key = g_strjoin ("\n", klass, element, field_or (s, "event", "unknown"),
      field_or (s, "reason", ""), NULL);
  count = g_hash_table_lookup (ev->counts, key);
  if (!count) {
    count = g_new0 (guint64, 1);
    g_hash_table_insert (ev->counts, key, count);
    g_ptr_array_add (ev->order, key);
  } else {
    g_free (key);
  }
  *count += 1 + suppressed;
  return TRUE;
}

static void
label (GString * out, const gchar * name, const gchar * value, gboolean first)
{
  g_string_append_printf (out, "%s%s=\"", first ? "" : ",", name);
  runner_stats_label_escape (out, value);
  g_string_append_c (out, '"');
}

void
runner_events_prometheus (RunnerEvents * ev, GString * out)
{
  static const gchar *names[] = { "class", "element", "event", "reason" };
  guint i, j;

  if (!ev || ev->order->len == 0)
    return;
  g_string_append (out, "# HELP gst_spice_run_events_total Security and "
      "health events of the elements (suppressed lines included)\n"
      "# TYPE gst_spice_run_events_total counter\n");
  for (i = 0; i < ev->order->len; i++) {
    const gchar *key = g_ptr_array_index (ev->order, i);
    gchar **parts = g_strsplit (key, "\n", 4);

    g_string_append (out, "gst_spice_run_events_total{");
    for (j = 0; j < 4 && parts[j]; j++)
      label (out, names[j], parts[j], j == 0);
    g_string_append_printf (out, "} %" G_GUINT64_FORMAT "\n",
        *(guint64 *) g_hash_table_lookup (ev->counts, key));
    g_strfreev (parts);
  }
}
