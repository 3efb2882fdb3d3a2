/* gst-spice: rate limit of security and health reports
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstspicereportlimit.h"

/* one key's reports */
typedef struct
{
  gint64 last_us;               /* the last one handed out */
  guint64 suppressed;           /* not handed out since (kept included) */
  GstStructure *kept;           /* the latest not handed out */
} Slot;

struct _GstSpiceReportLimit
{
  gint64 interval_us;
  guint max_keys;
  GHashTable *slots;            /* key -> Slot */
};

static void
slot_free (gpointer data)
{
  Slot *slot = data;

  if (slot->kept)
    gst_structure_free (slot->kept);
  g_free (slot);
}

GstSpiceReportLimit *
gst_spice_report_limit_new (gint64 interval_us, guint max_keys)
{
  GstSpiceReportLimit *limit = g_new0 (GstSpiceReportLimit, 1);

  limit->interval_us = interval_us;
  limit->max_keys = MAX (max_keys, 1);
  limit->slots = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
      slot_free);
  return limit;
}

void
gst_spice_report_limit_free (GstSpiceReportLimit * limit)
{
  if (!limit)
    return;
  g_hash_table_unref (limit->slots);
  g_free (limit);
}

static GstStructure *
hand_out (GstStructure * report, guint64 suppressed)
{
  gst_structure_set (report, "suppressed", G_TYPE_UINT64, suppressed, NULL);
  return report;
}

GstStructure *
gst_spice_report_limit_offer (GstSpiceReportLimit * limit, const gchar * key,
    GstStructure * report, gint64 now_us, gboolean * started_afresh)
{
  Slot *slot = g_hash_table_lookup (limit->slots, key);
  guint64 suppressed;

  if (started_afresh)
    *started_afresh = FALSE;
  if (!slot) {
    if (g_hash_table_size (limit->slots) >= limit->max_keys) {
      g_hash_table_remove_all (limit->slots);
      if (started_afresh)
        *started_afresh = TRUE;
    }
    slot = g_new0 (Slot, 1);
    slot->last_us = now_us - limit->interval_us;
    g_hash_table_insert (limit->slots, g_strdup (key), slot);
  }
  /* a kept one that was not handed out is one of the suppressed */
  g_clear_pointer (&slot->kept, gst_structure_free);
  if (now_us - slot->last_us < limit->interval_us) {
    slot->kept = report;
    slot->suppressed++;
    return NULL;
  }
  suppressed = slot->suppressed;
  slot->suppressed = 0;
  slot->last_us = now_us;
  return hand_out (report, suppressed);
}

void
gst_spice_report_limit_flush (GstSpiceReportLimit * limit, gint64 now_us,
    GstSpiceReportFunc func, gpointer data)
{
  GHashTableIter it;
  gpointer value;

  g_hash_table_iter_init (&it, limit->slots);
  while (g_hash_table_iter_next (&it, NULL, &value)) {
    Slot *slot = value;

    if (now_us - slot->last_us < limit->interval_us)
      continue;
    if (slot->kept) {
      GstStructure *report = slot->kept;

      /* the kept one goes out; the others were counted */
      slot->kept = NULL;
      report = hand_out (report, slot->suppressed - 1);
      slot->suppressed = 0;
      slot->last_us = now_us;
      func (report, data);
    } else if (now_us - slot->last_us > 10 * limit->interval_us) {
      g_hash_table_iter_remove (&it);
    }
  }
}
