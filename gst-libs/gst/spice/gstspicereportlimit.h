/* gst-spice: rate limit of security and health reports
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "gstspice-prelude.h"

#include <gst/gst.h>

G_BEGIN_DECLS

/* At most one report (gst_spice_report_new()) per key, such as "source
 * event reason", per interval: the first goes out at once; the ones that
 * follow within the interval are counted, and the latest of them is kept
 * until its key's interval has passed, when a flush hands it out with
 * the count of the others in its uint64 field `suppressed`. A flood of
 * one kind of event thus costs one message a second and loses neither
 * its last word nor how many there were. At most @max_keys keys are
 * held: past that the table starts afresh (memory bound against many
 * sources). Not thread-safe: the owner's lock. */
typedef struct _GstSpiceReportLimit GstSpiceReportLimit;

/* called for each report a flush hands out; takes it */
typedef void (*GstSpiceReportFunc) (GstStructure * report, gpointer data);

GST_SPICE_API
GstSpiceReportLimit *gst_spice_report_limit_new (gint64 interval_us,
    guint max_keys);
GST_SPICE_API
void gst_spice_report_limit_free (GstSpiceReportLimit * limit);

/* Takes @report. Returns it to post now (with `suppressed` set), or
 * NULL when it is kept or counted. @started_afresh, when not NULL, is set
 * TRUE when this key made the table start afresh. */
GST_SPICE_API
GstStructure *gst_spice_report_limit_offer (GstSpiceReportLimit * limit,
    const gchar * key, GstStructure * report, gint64 now_us,
    gboolean * started_afresh);

/* Hands each kept report whose key's interval has passed to @func (with
 * `suppressed` set), and forgets keys quiet for ten intervals. */
GST_SPICE_API
void gst_spice_report_limit_flush (GstSpiceReportLimit * limit,
    gint64 now_us, GstSpiceReportFunc func, gpointer data);

G_END_DECLS
