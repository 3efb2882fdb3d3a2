/* gst-spice-docgen: writes the element reference (Markdown) from the
 * elements' own metadata, so that the reference cannot go stale.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *   gst-spice-docgen OUTPUT.md ELEMENT…
 *   gst-spice-docgen --check ELEMENT…    (the checks alone, no output)
 *
 * Checks: each element's description ends with an example launch line, and
 * each time-like property (its name ends in -timeout, -delay, -interval,
 * -latency, -time, -gap, -period, -duration, or -ms / -ns) states its unit
 * in its blurb as a parenthesis that starts with it: "(ms)", "(ms; 0 =
 * never)", "(ns of running time, a GstClockTime)", "(s)". The unit is a
 * column of the reference.
 */
#include <gst/gst.h>
#include <stdio.h>
#include <string.h>
#include <glib/gstdio.h>

static void
print_value (GString * out, const GValue * v)
{
  gchar *s;

  if (G_VALUE_HOLDS_STRING (v)) {
    const gchar *str = g_value_get_string (v);

    if (str)
      g_string_append_printf (out, "`\"%s\"`", str);
    else
      g_string_append (out, "(none)");
    return;
  }
  if (G_VALUE_HOLDS_ENUM (v)) {
    GEnumValue *ev = g_enum_get_value (G_ENUM_CLASS (g_type_class_peek
            (G_VALUE_TYPE (v))), g_value_get_enum (v));

    g_string_append_printf (out, "`%s`", ev ? ev->value_nick : "?");
    return;
  }
  if (G_VALUE_HOLDS_BOXED (v) || G_VALUE_HOLDS_OBJECT (v)) {
    g_string_append (out, "—");
    return;
  }
  s = gst_value_serialize (v);
  g_string_append_printf (out, "`%s`", s ? s : "?");
  g_free (s);
}

/* "ms", "ns", "us" or "s" when the blurb states its unit ("(ms…"), or
 * NULL */
static gchar *
unit_of_blurb (const gchar * blurb)
{
  GMatchInfo *m = NULL;
  gchar *unit = NULL;
  static GRegex *re;

  if (!re)
    re = g_regex_new ("\\((ns|us|ms|s)(?![a-z0-9])", G_REGEX_OPTIMIZE, 0, NULL);
  if (blurb && g_regex_match (re, blurb, 0, &m))
    unit = g_match_info_fetch (m, 1);
  g_match_info_free (m);
  return unit;
}

/* a property whose value is a duration, by its name */
static gboolean
is_time_like (const gchar * name)
{
  static const gchar *const ends[] = { "-timeout", "-delay", "-interval",
    "-latency", "-time", "-gap", "-period", "-duration", "-ms", "-ns", NULL
  };
  guint i;

  for (i = 0; ends[i]; i++)
    if (g_str_has_suffix (name, ends[i]) || g_str_equal (name, ends[i] + 1))
      return TRUE;
  return FALSE;
}

static void
print_range (GString * out, GParamSpec * p)
{
#define RANGE(T, fmt) \
  if (G_IS_PARAM_SPEC_##T (p)) { \
    g_string_append_printf (out, " (" fmt " – " fmt ")", \
        G_PARAM_SPEC_##T (p)->minimum, G_PARAM_SPEC_##T (p)->maximum); \
    return; \
  }
  RANGE (INT, "%d");
  RANGE (UINT, "%u");
  RANGE (INT64, "%" G_GINT64_FORMAT);
  RANGE (UINT64, "%" G_GUINT64_FORMAT);
  RANGE (DOUBLE, "%g");
#undef RANGE
  if (G_IS_PARAM_SPEC_ENUM (p)) {
    GEnumClass *ec = G_PARAM_SPEC_ENUM (p)->enum_class;
    guint i;

    g_string_append (out, " (");
    for (i = 0; i < ec->n_values; i++)
      g_string_append_printf (out, "%s`%s`", i ? ", " : "",
          ec->values[i].value_nick);
    g_string_append (out, ")");
  }
}

static const gchar *
mutable_text (GParamSpec * p)
{
  if (!(p->flags & G_PARAM_WRITABLE))
    return "read-only";
  if (p->flags & GST_PARAM_MUTABLE_PLAYING)
    return "any state";
  if (p->flags & GST_PARAM_MUTABLE_PAUSED)
    return "up to PAUSED";
  if (p->flags & GST_PARAM_MUTABLE_READY)
    return "up to READY";
  return "NULL state";
}

/* The long description ends with " Example: gst-launch-1.0 …" (what
 * gst-inspect-1.0 shows): the text before it in *text, the launch line
 * returned, or NULL when there is none. */
static gchar *
split_example (const gchar * description, gchar ** text)
{
  const gchar *ex = strstr (description, " Example: gst-launch-1.0 ");

  if (!ex) {
    *text = g_strdup (description);
    return NULL;
  }
  *text = g_strndup (description, ex - description);
  return g_strdup (ex + strlen (" Example: "));
}

static gboolean
document_element (GString * out, const gchar * name)
{
  gboolean ok = TRUE;
  GstElementFactory *f = gst_element_factory_find (name);
  GstElement *e;
  const GList *l;
  GParamSpec **props;
  GPtrArray *inherited;
  gchar *text, *example;
  guint n, i;

  if (!f)
    return FALSE;
  e = gst_element_factory_create (f, NULL);
  if (!e) {
    gst_object_unref (f);
    return FALSE;
  }
  example = split_example (gst_element_factory_get_metadata (f,
          GST_ELEMENT_METADATA_DESCRIPTION), &text);
  if (!example) {
    g_printerr ("gst-spice-docgen: %s: no 'Example: gst-launch-1.0 …' at "
        "the end of its description\n", name);
    g_free (text);
    gst_object_unref (e);
    gst_object_unref (f);
    return FALSE;
  }
  g_string_append_printf (out, "## %s\n\n%s — %s\n\n```sh\n%s\n```\n\n",
      name, gst_element_factory_get_metadata (f, GST_ELEMENT_METADATA_LONGNAME),
      text, example);
  g_free (text);
  g_free (example);
  g_string_append_printf (out, "- Class: `%s`\n- Rank: %u\n- Plugin: `%s`\n\n",
      gst_element_factory_get_metadata (f, GST_ELEMENT_METADATA_KLASS),
      gst_plugin_feature_get_rank (GST_PLUGIN_FEATURE (f)),
      gst_plugin_feature_get_plugin_name (GST_PLUGIN_FEATURE (f)));

  g_string_append (out, "### Pads\n\n| name | direction | presence | caps |\n"
      "|---|---|---|---|\n");
  for (l = gst_element_factory_get_static_pad_templates (f); l; l = l->next) {
    GstStaticPadTemplate *t = l->data;
    GstCaps *caps = gst_static_caps_get (&t->static_caps);
    gchar *cs = gst_caps_to_string (caps);
    gchar *p;

    for (p = cs; *p; p++)
      if (*p == '|')
        *p = '/';
    g_string_append_printf (out, "| `%s` | %s | %s | `%s` |\n",
        t->name_template,
        t->direction == GST_PAD_SRC ? "src" : "sink",
        t->presence == GST_PAD_ALWAYS ? "always" :
        t->presence == GST_PAD_REQUEST ? "request" : "sometimes", cs);
    g_free (cs);
    gst_caps_unref (caps);
  }

  g_string_append (out, "\n### Properties\n\n"
      "| property | type | unit | default | changeable | description |\n"
      "|---|---|---|---|---|---|\n");
  props = g_object_class_list_properties (G_OBJECT_GET_CLASS (e), &n);
  inherited = g_ptr_array_new ();
  g_ptr_array_add (inherited, NULL);
  for (i = 0; i < n; i++) {
    GParamSpec *p = props[i];
    GValue v = G_VALUE_INIT;
    gchar *blurb, *unit;

    if (p->owner_type != G_OBJECT_TYPE (e)) {
      if (p->owner_type != GST_TYPE_OBJECT
          && !g_strv_contains ((const gchar * const *) inherited->pdata,
              g_type_name (p->owner_type)))
        g_ptr_array_insert (inherited, inherited->len - 1,
            (gpointer) g_type_name (p->owner_type));
      continue;
    }
    g_string_append_printf (out, "| `%s` | %s", p->name,
        g_type_name (p->value_type));
    print_range (out, p);
    unit = unit_of_blurb (g_param_spec_get_blurb (p));
    if (!unit && is_time_like (p->name)) {
      g_printerr ("gst-spice-docgen: %s: property '%s' does not state its "
          "unit in its blurb (\"... (ms)\")\n", name, p->name);
      ok = FALSE;
    }
    g_string_append_printf (out, " | %s | ", unit ? unit : "");
    g_free (unit);
    g_value_init (&v, p->value_type);
    g_param_value_set_default (p, &v);
    print_value (out, &v);
    g_value_unset (&v);
    blurb = g_strdup (g_param_spec_get_blurb (p));
    g_strdelimit (blurb, "|\n", ' ');
    g_string_append_printf (out, " | %s | %s |\n", mutable_text (p), blurb);
    g_free (blurb);
  }
  g_free (props);
  if (inherited->len > 1) {
    gchar *list = g_strjoinv ("`, `", (gchar **) inherited->pdata);

    g_string_append_printf (out, "\nPlus the properties of `%s`.\n", list);
    g_free (list);
  }
  g_ptr_array_unref (inherited);
  g_string_append (out, "\n");
  gst_object_unref (e);
  gst_object_unref (f);
  return ok;
}

int
main (int argc, char **argv)
{
  GString *out;
  GError *err = NULL;
  gint i, status = 0;
  gboolean check_only;

  /* the build gives docgen a registry of its own: start it afresh, so that
   * a plugin that once failed to load is not remembered as broken */
  if (g_getenv ("GST_REGISTRY_1_0"))
    g_unlink (g_getenv ("GST_REGISTRY_1_0"));
  gst_init (&argc, &argv);
  if (argc < 3) {
    g_printerr ("usage: gst-spice-docgen OUTPUT.md ELEMENT…\n"
        "       gst-spice-docgen --check ELEMENT…\n");
    return 64;
  }
  check_only = g_str_equal (argv[1], "--check");
  out = g_string_new ("# Element reference\n\n"
      "Generated at build time from the elements' own metadata "
      "(`gst-spice-docgen`); `gst-inspect-1.0 NAME` shows the same.\n\n");
  for (i = 2; i < argc; i++) {
    if (!document_element (out, argv[i])) {
      g_printerr ("gst-spice-docgen: element '%s' not documented\n", argv[i]);
      status = 1;
    }
  }
  /* every element of the plugin is in the reference */
  {
    GList *features = gst_registry_get_feature_list_by_plugin
        (gst_registry_get (), "spice"), *l;

    for (l = features; l; l = l->next) {
      const gchar *fname = GST_OBJECT_NAME (l->data);

      if (GST_IS_ELEMENT_FACTORY (l->data) &&
          !g_strv_contains ((const gchar * const *) argv + 2, fname)) {
        g_printerr ("gst-spice-docgen: element '%s' of the plugin is not "
            "listed (docs/meson.build)\n", fname);
        status = 1;
      }
    }
    if (!features) {
      g_printerr ("gst-spice-docgen: no plugin 'spice'\n");
      status = 1;
    }
    gst_plugin_feature_list_free (features);
  }
  if (!check_only && !g_file_set_contents (argv[1], out->str, out->len, &err)) {
    g_printerr ("gst-spice-docgen: %s\n", err->message);
    status = 1;
  }
  g_string_free (out, TRUE);
  return status;
}
