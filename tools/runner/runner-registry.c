/* gst-spice-run: plugins a stale registry cache keeps blacklisted
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * GStreamer blacklists a plugin that fails to load (a library it needs is
 * missing, its scanner was killed) and keeps it blacklisted in the registry
 * cache (the unit's %C/gst-spice/registry.bin) for as long as the plugin
 * file keeps its size and time: installing the missing library does not
 * bring it back, deleting the cache did. The runner scans every
 * blacklisted plugin again at start: one plugin-scanner run each, nothing
 * when none is blacklisted (the usual case).
 */
#include "runner-registry.h"

/* Scans the plugins the registry holds as blacklisted again and updates the
 * registry cache. Returns NULL if none was, else "FILE (loads now), FILE
 * (still fails to load)" to log (g_free it).
 *
 * Thread: the main thread, before any element exists (updating the
 * registry is not thread-safe). */
gchar *
runner_registry_retry_blacklisted (void)
{
  GstRegistry *registry = gst_registry_get ();
  GList *plugins = gst_registry_get_plugin_list (registry), *l;
  GPtrArray *files = g_ptr_array_new_with_free_func (g_free);
  GString *out;
  guint i;

  for (l = plugins; l; l = l->next) {
    GstPlugin *plugin = l->data;
    const gchar *file = gst_plugin_get_filename (plugin);

    if (file && GST_OBJECT_FLAG_IS_SET (plugin, GST_PLUGIN_FLAG_BLACKLISTED)) {
      g_ptr_array_add (files, g_strdup (file));
      gst_registry_remove_plugin (registry, plugin);
    }
  }
  gst_plugin_list_free (plugins);
  if (files->len == 0) {
    g_ptr_array_unref (files);
    return NULL;
  }
  /* a plugin missing from the registry is scanned as a new one */
  gst_update_registry ();
  out = g_string_new (NULL);
  for (i = 0; i < files->len; i++) {
    const gchar *file = g_ptr_array_index (files, i);
    GstPlugin *plugin = gst_registry_lookup (registry, file);
    gboolean loads = plugin &&
        !GST_OBJECT_FLAG_IS_SET (plugin, GST_PLUGIN_FLAG_BLACKLISTED);

    g_string_append_printf (out, "%s%s (%s)", i ? ", " : "", file,
        loads ? "loads now" : "still fails to load");
    gst_clear_object (&plugin);
  }
  g_ptr_array_unref (files);
  return g_string_free (out, FALSE);
}
