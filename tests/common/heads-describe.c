/* gst-spice tests: heads-describe, the heads a spice-client-glib client sees
 * (heads-client.h), for shell tests: connects to 127.0.0.1:PORT, waits for
 * --displays display channels with a surface and --settle-ms without a
 * change, prints heads_client_describe() on stdout and writes display 0's
 * surface as a PPM to --out; with --position X,Y it then puts the pointer
 * there (client mouse mode, display 0, surface pixels) and stays a second.
 * With --monitors "X,Y,W,H;X,Y,W,H..." it waits for the guest agent and
 * sends that layout as the client's windows (heads_client_send_monitors: a
 * width of 0 disables that head), with --wait-monitors N it waits until the
 * client has N monitors and nothing changed for --settle-ms, before it
 * prints; --hold-until FILE keeps the client connected after that until
 * FILE exists (at most --timeout).
 * Exit codes: 0 done, 1 no picture (or no client mouse mode, no agent, not
 * N monitors) in --timeout.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heads-client.h"
#include "ppm.h"

#define MAX_MONITORS 16

/* "X,Y,W,H;..." into rects; the number of monitors, 0 when malformed */
static guint
parse_monitors (const gchar * spec, gint (*rects)[4])
{
  gchar **parts = g_strsplit (spec, ";", -1);
  guint n = 0;

  for (; parts[n] && n < MAX_MONITORS; n++)
    if (sscanf (parts[n], "%d,%d,%d,%d", &rects[n][0], &rects[n][1],
            &rects[n][2], &rects[n][3]) != 4)
      break;
  if (parts[n])
    n = 0;
  g_strfreev (parts);
  return n;
}

/* until the client has @n monitors (" monitors N max") and nothing
 * changed for @settle_ms */
/* pumps the client until @ready says so or @end (monotonic us) passes */
static gboolean
pump_until (HeadsClient * c, gboolean (*ready) (HeadsClient *), gint64 end)
{
  while (!ready (c) && g_get_monotonic_time () < end)
    heads_client_pump (50);
  return ready (c);
}

static gboolean
wait_monitors (HeadsClient * c, guint n, guint settle_ms, gint64 end)
{
  gchar *want = g_strdup_printf (" monitors %u max ", n);
  gchar *last = NULL;
  gint64 since = g_get_monotonic_time ();
  gboolean ok = FALSE;

  while (g_get_monotonic_time () < end) {
    gchar *got;

    heads_client_pump (100);
    got = heads_client_describe (c);
    if (g_strcmp0 (got, last) != 0) {
      since = g_get_monotonic_time ();
      g_free (last);
      last = got;
    } else {
      g_free (got);
    }
    if (strstr (last, want) && g_get_monotonic_time () - since >
        (gint64) settle_ms * 1000) {
      ok = TRUE;
      break;
    }
  }
  g_free (last);
  g_free (want);
  return ok;
}

int
main (int argc, char **argv)
{
  gint port = 0, displays = 1, settle_ms = 1000, timeout_s = 60;
  gint wait_n = 0;
  gchar *out = NULL, *position = NULL, *monitors = NULL, *hold = NULL;
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
    {"monitors", 0, 0, G_OPTION_ARG_STRING, &monitors,
        "then send this layout (width 0: disabled)", "X,Y,W,H;..."},
    {"wait-monitors", 0, 0, G_OPTION_ARG_INT, &wait_n,
        "then wait for N monitors, settled, before printing", "N"},
    {"hold-until", 0, 0, G_OPTION_ARG_FILENAME, &hold,
        "stay connected after printing until FILE exists", "FILE"},
    {NULL}
  };
  GOptionContext *ctx = g_option_context_new ("- the heads a client sees");
  GError *err = NULL;
  HeadsClient *c;
  gchar *desc;
  gint ret = 0;
  gint64 end;

  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &err) || port <= 0) {
    g_printerr ("heads-describe: %s\n", err ? err->message : "--port needed");
    return 2;
  }
  g_option_context_free (ctx);
  end = g_get_monotonic_time () + (gint64) timeout_s * G_USEC_PER_SEC;
  c = heads_client_connect ("127.0.0.1", port);
  if (!heads_client_wait_displays (c, displays, settle_ms, timeout_s * 1000)) {
    g_printerr ("heads-describe: no picture\n");
    ret = 1;
  }
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

    if (sscanf (position, "%d,%d", &x, &y) != 2)
      return 2;
    if (!pump_until (c, heads_client_inputs_ready, end)) {
      g_printerr ("heads-describe: no client mouse mode\n");
      ret = 1;
    } else {
      heads_client_position (c, 0, x, y, 0);
      heads_client_pump (1000);
    }
  }
  if (monitors && ret == 0) {
    gint rects[MAX_MONITORS][4];
    guint n = parse_monitors (monitors, rects);

    if (n == 0)
      return 2;
    if (!pump_until (c, heads_client_agent_ready, end)) {
      g_printerr ("heads-describe: no guest agent with monitors config\n");
      ret = 1;
    } else if (!heads_client_send_monitors (c, n, (const gint (*)[4]) rects)) {
      g_printerr ("heads-describe: the monitors config was not sent\n");
      ret = 1;
    }
  }
  if (wait_n > 0 && ret == 0 && !wait_monitors (c, wait_n, settle_ms, end)) {
    g_printerr ("heads-describe: not %d monitors\n", wait_n);
    ret = 1;
  }
  desc = heads_client_describe (c);
  printf ("%s\n", desc);
  fflush (stdout);
  while (hold && ret == 0 && !g_file_test (hold, G_FILE_TEST_EXISTS) &&
      g_get_monotonic_time () < end)
    heads_client_pump (100);
  g_free (desc);
  heads_client_free (c);
  return ret;
}
