/* gst-spice tests: heads-describe, the heads a spice-client-glib client sees
 * (heads-client.h), for shell tests: connects to 127.0.0.1:PORT, waits for
 * --displays display channels with a surface and --settle-ms without a
 * change, prints heads_client_describe() on stdout and writes display 0's
 * surface as a PPM to --out; with --position X,Y it then puts the pointer
 * there (client mouse mode, display 0, surface pixels) and stays a second.
 * Exit codes: 0 done, 1 no picture (or no client mouse mode) in --timeout.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <stdio.h>
#include <stdlib.h>

#include "heads-client.h"
#include "ppm.h"

int
main (int argc, char **argv)
{
  gint port = 0, displays = 1, settle_ms = 1000, timeout_s = 60;
  gchar *out = NULL, *position = NULL;
  GOptionEntry entries[] = {
    {"port", 'p', 0, G_OPTION_ARG_INT, &port, "SPICE port", "N"},
    {"displays", 0, 0, G_OPTION_ARG_INT, &displays,
        "display channels with a surface to wait for (1)", "N"},
    {"settle-ms", 0, 0, G_OPTION_ARG_INT, &settle_ms,
        "quiet time before the answer (1000)", "MS"},
    {"timeout", 0, 0, G_OPTION_ARG_INT, &timeout_s, "seconds (60)", "S"},
    {"out", 'o', 0, G_OPTION_ARG_FILENAME, &out, "display 0 as PPM", "FILE"},
    {"position", 0, 0, G_OPTION_ARG_STRING, &position,
        "then put the pointer at X,Y of display 0", "X,Y"},
    {NULL}
  };
  GOptionContext *ctx = g_option_context_new ("- the heads a client sees");
  GError *err = NULL;
  HeadsClient *c;
  gchar *desc;
  gint ret = 0;

  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &err) || port <= 0) {
    g_printerr ("heads-describe: %s\n", err ? err->message : "--port needed");
    return 2;
  }
  g_option_context_free (ctx);
  c = heads_client_connect ("127.0.0.1", port);
  if (!heads_client_wait_displays (c, displays, settle_ms, timeout_s * 1000)) {
    g_printerr ("heads-describe: no picture\n");
    ret = 1;
  }
  desc = heads_client_describe (c);
  printf ("%s\n", desc);
  if (out && ret == 0) {
    gint w, h, stride;
    const guint8 *px = heads_client_surface (c, 0, &w, &h, &stride);

    if (!px || !test_ppm_write (out, px, w, h, stride, &err)) {
      g_printerr ("heads-describe: %s\n", err ? err->message : "no surface");
      ret = 1;
    }
  }
  if (position && ret == 0) {
    gint x = 0, y = 0;
    gint64 end = g_get_monotonic_time () + (gint64) timeout_s * G_USEC_PER_SEC;

    if (sscanf (position, "%d,%d", &x, &y) != 2)
      return 2;
    while (!heads_client_inputs_ready (c) && g_get_monotonic_time () < end)
      heads_client_pump (50);
    if (!heads_client_inputs_ready (c)) {
      g_printerr ("heads-describe: no client mouse mode\n");
      ret = 1;
    } else {
      heads_client_position (c, 0, x, y, 0);
      heads_client_pump (1000);
    }
  }
  g_free (desc);
  heads_client_free (c);
  return ret;
}
