/* gst-spice: reading a secret (SPICE ticket) from a file
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "gstspice-prelude.h"

#include <glib.h>

G_BEGIN_DECLS

/* SPICE tickets are at most 60 bytes (spice-gtk refuses longer ones) */
#define GST_SPICE_MAX_PASSWORD 60

/* Reads the first line of @path (without its line ending) as a password,
 * so that a secret never has to appear in a pipeline description (which
 * GStreamer's parser logs at GST_PIPELINE:4). Fails, naming the file, if it
 * cannot be read, is empty or is longer than GST_SPICE_MAX_PASSWORD. */
GST_SPICE_API
gchar *gst_spice_read_password_file (const gchar * path, GError ** error);

/* Posts @err of gst_spice_read_password_file() as @element's error:
 * GST_RESOURCE_ERROR_SETTINGS (a permanent error: gst-spice-run does not
 * restart) when the file holds no usable password, OPEN_READ when it cannot
 * be read. */
GST_SPICE_API
void gst_spice_post_password_file_error (GstElement * element,
    const GError * err);

G_END_DECLS
