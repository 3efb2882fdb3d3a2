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

/* Lines NAME=VALUE, blank lines and '#' comments (systemd EnvironmentFile
 * style, so one file serves both the unit and the runner). */
gboolean
pipeline_vars_add_env_file (GHashTable * vars, const gchar * path,
    GError ** error)
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
    if (!pipeline_vars_add_assignment (vars, line, &err)) {
      g_set_error (error, PIPELINE_FILE_ERROR, PIPELINE_FILE_ERROR_ENV_FILE,
          "%s:%u: %s", path, lineno, err->message);
      g_error_free (err);
      ok = FALSE;
    }
  }
  g_strfreev (lines);
  g_free (text);
  return ok;
}

static gboolean
expand_line (GString * out, const gchar * line, const gchar * origin,
    guint lineno, GHashTable * vars, GError ** error)
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
    else {
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
  GString *out = g_string_new (NULL);
  gchar **lines = g_strsplit (text, "\n", -1), **l;
  guint lineno = 0;

  for (l = lines; *l; l++) {
    const gchar *line = *l;
    const gchar *first = line;

    lineno++;
    while (g_ascii_isspace (*first))
      first++;
    if (*first == '#' || *first == '\0')
      continue;
    if (!expand_line (out, line, origin, lineno, vars, error)) {
      g_strfreev (lines);
      g_string_free (out, TRUE);
      return NULL;
    }
    g_string_append_c (out, '\n');
  }
  g_strfreev (lines);
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
