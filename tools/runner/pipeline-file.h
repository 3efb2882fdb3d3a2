/* gst-spice-run: reading *.pipeline files
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define PIPELINE_FILE_ERROR (pipeline_file_error_quark ())
GQuark pipeline_file_error_quark (void);

typedef enum {
  PIPELINE_FILE_ERROR_READ,       /* the file cannot be read */
  PIPELINE_FILE_ERROR_SYNTAX,     /* bad ${...} syntax */
  PIPELINE_FILE_ERROR_UNSET,      /* a variable without value or default */
  PIPELINE_FILE_ERROR_ENV_FILE,   /* a malformed line in an env file */
} PipelineFileError;

/* Variables: NAME -> value. Later sources override earlier ones; the runner
 * adds the environment, then env files, then -D options. */
GHashTable *pipeline_vars_new (void);
void        pipeline_vars_add_environment (GHashTable * vars);
gboolean    pipeline_vars_add_assignment (GHashTable * vars,
    const gchar * assignment, GError ** error);
/* @names (may be NULL): NAME -> "FILE:LINE" of each name the file sets */
gboolean    pipeline_vars_add_env_file (GHashTable * vars,
    const gchar * path, GHashTable * names, GError ** error);

/* Drops '#' comment lines (first non-blank character '#') and expands
 * ${NAME} and ${NAME:-default}; "$$" is a literal "$". Returns the
 * description for gst_parse_launch(), or NULL with @error set (the message
 * names the file, line and variable). */
gchar      *pipeline_text_expand (const gchar * text, const gchar * origin,
    GHashTable * vars, GError ** error);
/* Like pipeline_text_expand(), but when @unset is not NULL a variable
 * without value or default expands to "" (gst-launch's empty string) and
 * its name is added to @unset (for --check). */
gchar      *pipeline_text_expand_full (const gchar * text,
    const gchar * origin, GHashTable * vars, GPtrArray * unset,
    GError ** error);
/* Where a property's value comes from: the first non-comment line of @text
 * with a word PROPERTY=VALUE whose VALUE expands (with @vars) to @value, or
 * when none does, the first with PROPERTY= at all. Returns its line (from
 * 1; 0 when no line sets @property) and, in @names (may be NULL; free with
 * g_ptr_array_unref), the variables that VALUE uses. */
guint       pipeline_text_find_property (const gchar * text,
    GHashTable * vars, const gchar * property, const gchar * value,
    GPtrArray ** names);
/* The variable names a pipeline text uses (each once, in order). */
GPtrArray  *pipeline_text_variables (const gchar * text);
/* The candidate closest to @name (a likely typo of it), or NULL. */
const gchar *pipeline_nearest_name (const gchar * name,
    const gchar * const *candidates);
gchar      *pipeline_file_load (const gchar * path, GHashTable * vars,
    GError ** error);

G_END_DECLS
