/* A strict Prometheus text-format parser for tests (see prom-strict.h)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <stdlib.h>
#include <string.h>

#include "prom-strict.h"

typedef struct
{
  GHashTable *series;           /* key -> gdouble* */
  GHashTable *types;            /* family -> type */
  GHashTable *closed;           /* families whose samples ended */
  gchar *current;               /* family of the previous sample */
  guint lineno;
  gchar *error;
} Parser;

static gboolean fail (Parser * p, const gchar * fmt, ...) G_GNUC_PRINTF (2, 3);

static gboolean
fail (Parser * p, const gchar * fmt, ...)
{
  va_list args;
  gchar *why;

  va_start (args, fmt);
  why = g_strdup_vprintf (fmt, args);
  va_end (args);

  p->error = g_strdup_printf ("line %u: %s", p->lineno, why);
  g_free (why);
  return FALSE;
}

static gboolean
is_name_start (gchar c, gboolean colon)
{
  return g_ascii_isalpha (c) || c == '_' || (colon && c == ':');
}

/* a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) or label name (no ':') */
static const gchar *
read_name (const gchar * s, gboolean colon, gchar ** out)
{
  const gchar *start = s;

  if (!is_name_start (*s, colon))
    return NULL;
  while (is_name_start (*s, colon) || g_ascii_isdigit (*s))
    s++;
  *out = g_strndup (start, s - start);
  return s;
}

static gboolean
parse_value (const gchar * s, gdouble * v)
{
  gchar *end = NULL;

  if (!strcmp (s, "+Inf") || !strcmp (s, "-Inf") || !strcmp (s, "NaN")) {
    *v = 0;
    return TRUE;
  }
  if (!*s)
    return FALSE;
  *v = g_ascii_strtod (s, &end);
  return end && *end == '\0';
}

static gboolean
parse_comment (Parser * p, const gchar * line)
{
  gchar **w;
  gboolean ok = TRUE;
  static const gchar *types[] = { "counter", "gauge", "histogram", "summary",
    "untyped", NULL
  };

  if (!g_str_has_prefix (line, "# TYPE ") && !g_str_has_prefix (line,
          "# HELP "))
    return TRUE;                /* a plain comment */
  w = g_strsplit (line + 2, " ", 3);
  if (!w[1] || !w[2] || !*w[1])
    ok = fail (p, "malformed %s line", w[0]);
  else if (g_str_equal (w[0], "TYPE")) {
    gchar *name = NULL;
    const gchar *end = read_name (w[1], TRUE, &name);

    if (!end || *end)
      ok = fail (p, "bad metric name '%s'", w[1]);
    else if (!g_strv_contains (types, w[2]))
      ok = fail (p, "bad type '%s'", w[2]);
    else if (g_hash_table_contains (p->types, name))
      ok = fail (p, "second TYPE line for %s", name);
    else if (g_hash_table_contains (p->closed, name) ||
        g_strcmp0 (p->current, name) == 0)
      ok = fail (p, "TYPE line of %s after its samples", name);
    else if (g_str_equal (w[2], "counter") && !g_str_has_suffix (name,
            "_total"))
      ok = fail (p, "counter %s is not named *_total", name);
    else
      g_hash_table_insert (p->types, g_strdup (name), g_strdup (w[2]));
    g_free (name);
  }
  g_strfreev (w);
  return ok;
}

static gint
cmp_str (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const gchar **) a, *(const gchar **) b);
}

static gboolean
parse_sample (Parser * p, const gchar * line)
{
  gchar *name = NULL, *key;
  const gchar *s = read_name (line, TRUE, &name);
  GPtrArray *labels = g_ptr_array_new_with_free_func (g_free);
  GHashTable *label_names = g_hash_table_new_full (g_str_hash, g_str_equal,
      g_free, NULL);
  gchar **rest = NULL;
  gdouble v, *vp;
  gboolean ok = FALSE;
  const gchar *family;
  GString *k;
  guint i;

  if (!s) {
    fail (p, "bad metric name in '%s'", line);
    goto out;
  }
  if (*s == '{') {
    s++;
    while (*s != '}') {
      gchar *lname = NULL;
      GString *value = g_string_new (NULL);

      s = read_name (s, FALSE, &lname);
      if (!s || s[0] != '=' || s[1] != '"') {
        g_string_free (value, TRUE);
        g_free (lname);
        fail (p, "bad label in '%s'", line);
        goto out;
      }
      for (s += 2; *s && *s != '"'; s++) {
        if (*s == '\\') {
          s++;
          if (*s == 'n')
            g_string_append_c (value, '\n');
          else if (*s == '\\' || *s == '"')
            g_string_append_c (value, *s);
          else {
            g_string_free (value, TRUE);
            g_free (lname);
            fail (p, "bad escape in '%s'", line);
            goto out;
          }
        } else {
          g_string_append_c (value, *s);
        }
      }
      if (*s != '"') {
        g_string_free (value, TRUE);
        g_free (lname);
        fail (p, "unterminated label value in '%s'", line);
        goto out;
      }
      s++;
      if (g_hash_table_contains (label_names, lname)) {
        g_string_free (value, TRUE);
        fail (p, "label %s twice", lname);
        g_free (lname);
        goto out;
      }
      g_ptr_array_add (labels, g_strdup_printf ("%s=\"%s\"", lname,
              value->str));
      g_hash_table_add (label_names, lname);
      g_string_free (value, TRUE);
      if (*s == ',')
        s++;
      else if (*s != '}') {
        fail (p, "expected ',' or '}' in '%s'", line);
        goto out;
      }
    }
    s++;
  }
  if (*s != ' ') {
    fail (p, "no value in '%s'", line);
    goto out;
  }
  rest = g_strsplit (s + 1, " ", -1);
  if (!rest[0] || (rest[1] && rest[2]) || !parse_value (rest[0], &v)) {
    fail (p, "bad value in '%s'", line);
    goto out;
  }
  if (rest[1]) {
    gchar *end = NULL;

    g_ascii_strtoll (rest[1], &end, 10);
    if (!end || *end || !*rest[1]) {
      fail (p, "bad timestamp in '%s'", line);
      goto out;
    }
  }
  family = name;
  if (g_strcmp0 (p->current, family) != 0) {
    if (g_hash_table_contains (p->closed, family)) {
      fail (p, "samples of %s are not together", family);
      goto out;
    }
    if (p->current)
      g_hash_table_add (p->closed, g_strdup (p->current));
    g_free (p->current);
    p->current = g_strdup (family);
  }
  if (g_strcmp0 (g_hash_table_lookup (p->types, family), "counter") == 0 &&
      v < 0) {
    fail (p, "negative counter in '%s'", line);
    goto out;
  }
  g_ptr_array_sort (labels, cmp_str);
  k = g_string_new (name);
  g_string_append_c (k, '{');
  for (i = 0; i < labels->len; i++)
    g_string_append_printf (k, "%s%s", i ? "," : "",
        (gchar *) g_ptr_array_index (labels, i));
  g_string_append_c (k, '}');
  key = g_string_free (k, FALSE);
  if (g_hash_table_contains (p->series, key)) {
    fail (p, "duplicate series %s", key);
    g_free (key);
    goto out;
  }
  vp = g_new (gdouble, 1);
  *vp = v;
  g_hash_table_insert (p->series, key, vp);
  ok = TRUE;

out:
  g_strfreev (rest);
  g_hash_table_unref (label_names);
  g_ptr_array_unref (labels);
  g_free (name);
  return ok;
}

GHashTable *
prom_strict_parse (const gchar * text, gchar ** error_out)
{
  Parser p = { 0, };
  gchar **lines;
  gboolean ok = TRUE;
  guint i;

  p.series = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  p.types = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  p.closed = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  if (*text && !g_str_has_suffix (text, "\n")) {
    p.error = g_strdup ("the last line does not end with a newline");
    ok = FALSE;
  }
  lines = g_strsplit (text, "\n", -1);
  for (i = 0; ok && lines[i] && lines[i + 1]; i++) {
    p.lineno = i + 1;
    if (lines[i][0] == '\0')
      continue;
    if (lines[i][0] == '#')
      ok = parse_comment (&p, lines[i]);
    else
      ok = parse_sample (&p, lines[i]);
  }
  g_strfreev (lines);
  g_hash_table_unref (p.types);
  g_hash_table_unref (p.closed);
  g_free (p.current);
  if (!ok) {
    *error_out = p.error;
    g_hash_table_unref (p.series);
    return NULL;
  }
  return p.series;
}

guint
prom_strict_count (GHashTable * series, const gchar * prefix)
{
  GHashTableIter it;
  gpointer k;
  guint n = 0;

  g_hash_table_iter_init (&it, series);
  while (g_hash_table_iter_next (&it, &k, NULL))
    if (g_str_has_prefix (k, prefix))
      n++;
  return n;
}
