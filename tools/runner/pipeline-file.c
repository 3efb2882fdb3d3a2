/* gst-spice-run: reading *.pipeline files
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A pipeline file is a gst-launch description spread over lines, with
 * '#' comment lines and ${NAME} / ${NAME:-default} variables.
 */
#include <string.h>

#include "pipeline-file.h"

G_DEFINE_QUARK (pipeline - file - error - quark, pipeline_file_error);

GHashTable *
pipeline_vars_new (void)
{
  return g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
}

static gboolean
valid_name (const gchar * name, gsize len)
{
  gsize i;

  if (len == 0 || !(g_ascii_isalpha (name[0]) || name[0] == '_'))
    return FALSE;
  for (i = 1; i < len; i++)
    if (!(g_ascii_isalnum (name[i]) || name[i] == '_'))
      return FALSE;
  return TRUE;
}

void
pipeline_vars_add_environment (GHashTable * vars)
{
  gchar **env = g_get_environ ();
  gchar **e;

  for (e = env; *e; e++) {
    const gchar *eq = strchr (*e, '=');

    if (eq && valid_name (*e, eq - *e))
      g_hash_table_replace (vars, g_strndup (*e, eq - *e), g_strdup (eq + 1));
  }
  g_strfreev (env);
}

/* NAME=VALUE; VALUE may be quoted with "..." or '...' (env-file style). */
gboolean
pipeline_vars_add_assignment (GHashTable * vars, const gchar * assignment,
    GError ** error)
{
  const gchar *eq = strchr (assignment, '=');
  gchar *name, *value;
  gsize vlen;

  if (!eq || !valid_name (assignment, eq - assignment)) {
    g_set_error (error, PIPELINE_FILE_ERROR, PIPELINE_FILE_ERROR_SYNTAX,
        "'%s' is not NAME=VALUE", assignment);
    return FALSE;
  }
  name = g_strndup (assignment, eq - assignment);
  value = g_strdup (eq + 1);
  vlen = strlen (value);
  if (vlen >= 2 && (value[0] == '"' || value[0] == '\'') &&
      value[vlen - 1] == value[0]) {
    memmove (value, value + 1, vlen - 2);
    value[vlen - 2] = '\0';
  }
  g_hash_table_replace (vars, name, value);
  return TRUE;
}

static gchar *expand_text (const gchar * text, const gchar * origin,
    GHashTable * vars, GPtrArray * unset, gboolean drop_comments,
    GError ** error);

/* A value that holds ${NAME} (e.g. ${CREDENTIALS_DIRECTORY}/password) is
 * expanded with the variables set so far. */
static gboolean
expand_value (GHashTable * vars, const gchar * assignment, GError ** error)
{
  gchar *name = g_strndup (assignment, strchr (assignment, '=') - assignment);
  const gchar *value = g_hash_table_lookup (vars, name);
  gchar *expanded;

  if (!strstr (value, "${")) {
    g_free (name);
    return TRUE;
  }
  expanded = expand_text (value, name, vars, NULL, FALSE, error);
  if (expanded)
    g_hash_table_replace (vars, name, expanded);
  else
    g_free (name);
  return expanded != NULL;
}

/* Lines NAME=VALUE, blank lines and '#' comments (systemd EnvironmentFile
 * style, so one file serves both the unit and the runner). */
gboolean
pipeline_vars_add_env_file (GHashTable * vars, const gchar * path,
    GHashTable * names, GError ** error)
{
  gchar *text = NULL;
  gchar **lines, **l;
  guint lineno = 0;
  gboolean ok = TRUE;

  if (!g_file_get_contents (path, &text, NULL, error)) {
    if (error && *error) {
      (*error)->domain = PIPELINE_FILE_ERROR;
      (*error)->code = PIPELINE_FILE_ERROR_READ;
    }
    return FALSE;
  }
  lines = g_strsplit (text, "\n", -1);
  for (l = lines; *l && ok; l++) {
    gchar *line = g_strstrip (*l);
    GError *err = NULL;

    lineno++;
    if (*line == '\0' || *line == '#')
      continue;
    if (g_str_has_prefix (line, "export "))
      line = g_strchug (line + 7);
    if (!pipeline_vars_add_assignment (vars, line, &err) ||
        !expand_value (vars, line, &err)) {
      g_set_error (error, PIPELINE_FILE_ERROR, PIPELINE_FILE_ERROR_ENV_FILE,
          "%s:%u: %s", path, lineno, err->message);
      g_error_free (err);
      ok = FALSE;
    } else if (names) {
      g_hash_table_replace (names, g_strndup (line, strchr (line, '=') - line),
          g_strdup_printf ("%s:%u", path, lineno));
    }
  }
  g_strfreev (lines);
  g_free (text);
  return ok;
}

static gboolean
expand_line (GString * out, const gchar * line, const gchar * origin,
    guint lineno, GHashTable * vars, GPtrArray * unset, GError ** error)
{
  const gchar *p = line;

  while (*p) {
    const gchar *end, *sep, *value;
    gchar *name;

    if (p[0] != '$') {
      g_string_append_c (out, *p++);
      continue;
    }
    if (p[1] == '$') {
      g_string_append_c (out, '$');
      p += 2;
      continue;
    }
    if (p[1] != '{') {
      g_string_append_c (out, *p++);
      continue;
    }
    end = strchr (p + 2, '}');
    if (!end) {
      g_set_error (error, PIPELINE_FILE_ERROR, PIPELINE_FILE_ERROR_SYNTAX,
          "%s:%u: unterminated '${'", origin, lineno);
      return FALSE;
    }
    sep = g_strstr_len (p + 2, end - (p + 2), ":-");
    name = g_strndup (p + 2, (sep ? sep : end) - (p + 2));
    if (!valid_name (name, strlen (name))) {
      g_set_error (error, PIPELINE_FILE_ERROR, PIPELINE_FILE_ERROR_SYNTAX,
          "%s:%u: bad variable name '%s'", origin, lineno, name);
      g_free (name);
      return FALSE;
    }
    value = g_hash_table_lookup (vars, name);
    if (value && *value)
      g_string_append (out, value);
    else if (sep)
      g_string_append_len (out, sep + 2, end - (sep + 2));
    else if (value);            /* set but empty: expands to nothing */
    else if (unset) {
      /* checking only: an empty quoted string, and the caller lists it */
      g_string_append (out, "\"\"");
      if (!g_ptr_array_find_with_equal_func (unset, name, g_str_equal, NULL))
        g_ptr_array_add (unset, g_strdup (name));
    } else {
      g_set_error (error, PIPELINE_FILE_ERROR, PIPELINE_FILE_ERROR_UNSET,
          "%s:%u: variable '%s' is not set and has no default "
          "(use -D %s=VALUE or ${%s:-default})", origin, lineno, name, name,
          name);
      g_free (name);
      return FALSE;
    }
    g_free (name);
    p = end + 1;
  }
  return TRUE;
}

gchar *
pipeline_text_expand (const gchar * text, const gchar * origin,
    GHashTable * vars, GError ** error)
{
  return pipeline_text_expand_full (text, origin, vars, NULL, error);
}

gchar *
pipeline_text_expand_full (const gchar * text, const gchar * origin,
    GHashTable * vars, GPtrArray * unset, GError ** error)
{
  return expand_text (text, origin, vars, unset, TRUE, error);
}

static gchar *
expand_text (const gchar * text, const gchar * origin, GHashTable * vars,
    GPtrArray * unset, gboolean drop_comments, GError ** error)
{
  GString *out = g_string_new (NULL);
  gchar **lines = g_strsplit (text, "\n", -1), **l;
  guint lineno = 0;

  for (l = lines; *l; l++) {
    const gchar *line = *l;
    const gchar *first = line;

    lineno++;
    while (g_ascii_isspace (*first))
      first++;
    if (drop_comments && (*first == '#' || *first == '\0'))
      continue;
    if (!expand_line (out, line, origin, lineno, vars, unset, error)) {
      g_strfreev (lines);
      g_string_free (out, TRUE);
      return NULL;
    }
    if (l[1])
      g_string_append_c (out, '\n');
  }
  g_strfreev (lines);
  if (!drop_comments)
    return g_string_free (out, FALSE);
  return g_strstrip (g_string_free (out, FALSE));
}

gchar *
pipeline_file_load (const gchar * path, GHashTable * vars, GError ** error)
{
  gchar *text = NULL, *desc;
  GError *err = NULL;

  if (!g_file_get_contents (path, &text, NULL, &err)) {
    g_set_error (error, PIPELINE_FILE_ERROR, PIPELINE_FILE_ERROR_READ,
        "cannot read pipeline file: %s", err->message);
    g_error_free (err);
    return NULL;
  }
  desc = pipeline_text_expand (text, path, vars, error);
  g_free (text);
  return desc;
}

/* The end of the gst-launch value that starts at @p: the first blank or
 * '!' outside quotes and ${...}. */
static const gchar *
value_end (const gchar * p)
{
  gchar quote = 0;

  for (; *p; p++) {
    if (quote) {
      if (*p == quote)
        quote = 0;
    } else if (*p == '"' || *p == '\'') {
      quote = *p;
    } else if (p[0] == '$' && p[1] == '{' && strchr (p, '}')) {
      p = strchr (p, '}');
    } else if (g_ascii_isspace (*p) || *p == '!') {
      break;
    }
  }
  return p;
}

guint
pipeline_text_find_property (const gchar * text, GHashTable * vars,
    const gchar * property, const gchar * value, GPtrArray ** names)
{
  gchar **lines = g_strsplit (text, "\n", -1), **l;
  gchar *key = g_strconcat (property, "=", NULL);
  gchar *found = NULL;
  guint lineno = 0, first_line = 0, match_line = 0;

  for (l = lines; *l && !match_line; l++) {
    const gchar *p = *l, *hit;

    lineno++;
    while (g_ascii_isspace (*p))
      p++;
    if (*p == '#')
      continue;
    for (hit = strstr (p, key); hit && !match_line; hit = strstr (hit + 1, key)) {
      const gchar *start = hit + strlen (key), *end;
      gchar *raw, *expanded;
      GString *out;
      gsize len;

      if (hit > *l && !g_ascii_isspace (hit[-1]))
        continue;
      end = value_end (start);
      raw = g_strndup (start, end - start);
      out = g_string_new (NULL);
      /* an unset variable expands to "" here: this is for messages */
      if (!expand_line (out, raw, "", 0, vars, NULL, NULL))
        g_string_truncate (out, 0);
      expanded = g_string_free (out, FALSE);
      len = strlen (expanded);
      if (len >= 2 && (expanded[0] == '"' || expanded[0] == '\'') &&
          expanded[len - 1] == expanded[0]) {
        memmove (expanded, expanded + 1, len - 2);
        expanded[len - 2] = '\0';
      }
      if (!first_line) {
        first_line = lineno;
        found = g_strdup (raw);
      }
      if (value && g_strcmp0 (expanded, value) == 0) {
        match_line = lineno;
        g_free (found);
        found = g_strdup (raw);
      }
      g_free (expanded);
      g_free (raw);
    }
  }
  if (names)
    *names = found ? pipeline_text_variables (found) :
        g_ptr_array_new_with_free_func (g_free);
  g_free (found);
  g_free (key);
  g_strfreev (lines);
  return match_line ? match_line : first_line;
}

/* The ${NAME} and ${NAME:-default} names that non-comment lines of @text
 * use, each once, in order of first use. */
GPtrArray *
pipeline_text_variables (const gchar * text)
{
  GPtrArray *names = g_ptr_array_new_with_free_func (g_free);
  gchar **lines = g_strsplit (text, "\n", -1), **l;

  for (l = lines; *l; l++) {
    const gchar *p = *l;

    while (g_ascii_isspace (*p))
      p++;
    if (*p == '#')
      continue;
    while ((p = strstr (p, "${"))) {
      const gchar *start = p + 2, *end = start;
      gchar *name;

      while (g_ascii_isalnum (*end) || *end == '_')
        end++;
      name = g_strndup (start, end - start);
      if (valid_name (name, end - start) &&
          !g_ptr_array_find_with_equal_func (names, name, g_str_equal, NULL))
        g_ptr_array_add (names, name);
      else
        g_free (name);
      p = end;
    }
  }
  g_strfreev (lines);
  return names;
}

static guint
edit_distance (const gchar * a, const gchar * b)
{
  guint la = strlen (a), lb = strlen (b), i, j, result;
  guint *row = g_new (guint, lb + 1);

  for (j = 0; j <= lb; j++)
    row[j] = j;
  for (i = 1; i <= la; i++) {
    guint diag = row[0];

    row[0] = i;
    for (j = 1; j <= lb; j++) {
      guint up = row[j];
      guint cost = g_ascii_toupper (a[i - 1]) == g_ascii_toupper (b[j - 1]) ?
          0 : 1;

      row[j] = MIN (MIN (row[j] + 1, row[j - 1] + 1), diag + cost);
      diag = up;
    }
  }
  result = row[lb];
  g_free (row);
  return result;
}

/* The entry of @candidates (NULL-terminated) closest to @name by edit
 * distance, or NULL when none is within a third of @name's length (at
 * least 2 edits). */
const gchar *
pipeline_nearest_name (const gchar * name, const gchar * const *candidates)
{
  const gchar *best = NULL;
  guint best_d = MAX (2, strlen (name) / 3) + 1;

  for (; candidates && *candidates; candidates++) {
    guint d = edit_distance (name, *candidates);

    if (d < best_d) {
      best_d = d;
      best = *candidates;
    }
  }
  return best;
}
