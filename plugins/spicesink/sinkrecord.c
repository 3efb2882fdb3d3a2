/* spicesink: the record channel
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Sent: RECORD_START (S16, SINK_RECORD_CHANNELS, SINK_RECORD_RATE) when the
 * channel links. Received: RECORD_MODE (only raw is accepted: we do not
 * announce SPICE_RECORD_CAP_OPUS), RECORD_START_MARK, RECORD_DATA (whole
 * S16 frames). What the client records goes upstream from the audio pad as
 * `spice-record-start`, `spice-record-data` and `spice-record-stop` events
 * (SinkSessionHooks.on_record); malformed record data, or record data
 * faster than real time (SINK_RECORD_BURST_MS, a token bucket at the
 * negotiated byte rate), closes the record channel alone.
 */
#include "sinksession.h"
#include "sinkdebug.h"

static SINK_DEBUG_CATEGORY (sink_record_debug, "spicesinkrecord",
    "spicesink record channel");
#define GST_CAT_DEFAULT sink_record_debug ()

/* bytes a second of what RECORD_START asked for (S16) */
#define RECORD_BYTES_PER_S (SINK_RECORD_RATE * SINK_RECORD_CHANNELS * 2)

void
sink_record_linked (SinkSession * s)
{
  GByteArray *a = g_byte_array_new ();

  sink_conn_set_limit (s->record, SINK_RECORD_MAX_QUEUED);
  s->rec.budget = RECORD_BYTES_PER_S * (SINK_RECORD_BURST_MS / 1000.0);
  s->rec.budget_us = g_get_monotonic_time ();

  gst_spice_audio_write_record_start (a, SINK_RECORD_CHANNELS,
      SINK_RECORD_RATE);
  sink_conn_send (s->record, SPICE_MSG_RECORD_START, a, NULL);
  g_byte_array_unref (a);
  s->rec.started = TRUE;
  s->hooks->on_record (s, gst_spice_event_new_record_start (SINK_RECORD_RATE,
          SINK_RECORD_CHANNELS), s->hooks_data);
}

void
sink_record_closed (SinkSession * s)
{
  if (!s->rec.started)
    return;
  s->rec.started = FALSE;
  s->hooks->on_record (s, gst_spice_event_new_record_stop (), s->hooks_data);
}

static gboolean
sink_record_handle_mode (SinkSession * s, guint16 type, const guint8 * body,
    gsize size)
{
  guint32 time;
  guint16 mode;

  if (!gst_spice_audio_parse_record_mode (body, size, &time, &mode) ||
      mode != SPICE_AUDIO_DATA_MODE_RAW) {
    GST_WARNING ("session %08x: record mode %u refused (raw only)", s->id,
        size >= 6 ? GST_READ_UINT16_LE (body + 4) : 0);
    sink_conn_close (s->record, "unsupported record mode");
    return FALSE;
  }
  return TRUE;
}

/* lock held: @n more bytes of samples keep within the real-time budget;
 * otherwise the record channel is closed (FALSE) */
static gboolean
within_real_time (SinkSession * s, gsize n)
{
  gdouble burst = RECORD_BYTES_PER_S * (SINK_RECORD_BURST_MS / 1000.0);
  gint64 now = g_get_monotonic_time ();
  SinkEvent ev = SINK_EVENT_INIT (FALSE, "protocol-violation", "record-rate");
  gchar *detail;

  s->rec.budget = MIN (burst, s->rec.budget + (now - s->rec.budget_us) *
      (gdouble) RECORD_BYTES_PER_S / G_TIME_SPAN_SECOND);
  s->rec.budget_us = now;
  if (n <= s->rec.budget) {
    s->rec.budget -= n;
    return TRUE;
  }
  detail = g_strdup_printf ("record data beyond real time: %" G_GUINT64_FORMAT
      " bytes in this channel's life, more than %d bytes/s with a %d ms "
      "burst allows", s->rec.bytes + n, RECORD_BYTES_PER_S,
      SINK_RECORD_BURST_MS);
  GST_WARNING ("session %08x (%s): %s", s->id, s->peer, detail);
  ev.limit = RECORD_BYTES_PER_S;
  ev.detail = detail;
  sink_conn_report (s->record, &ev);
  sink_conn_close (s->record, "record data beyond real time");
  g_free (detail);
  return FALSE;
}

static gboolean
sink_record_handle_data (SinkSession * s, guint16 type, const guint8 * body,
    gsize size)
{
  const guint8 *data;
  gsize n;
  guint32 time;
  GstBuffer *buf;

  if (!gst_spice_audio_parse_record_data (body, size, &time, &data, &n) ||
      n % (2 * SINK_RECORD_CHANNELS) != 0) {
    GST_WARNING ("session %08x: malformed RECORD_DATA (%" G_GSIZE_FORMAT
        " bytes)", s->id, size);
    sink_conn_close (s->record, "malformed RECORD_DATA");
    return FALSE;
  }
  if (n == 0)
    return TRUE;
  if (!within_real_time (s, n))
    return FALSE;
  s->rec.packets++;
  s->rec.bytes += n;
  buf = gst_buffer_new_memdup (data, n);
  s->hooks->on_record (s, gst_spice_event_new_record_data (buf), s->hooks_data);
  gst_buffer_unref (buf);
  return TRUE;
}

static const SinkHandler handlers[] = {
  [SPICE_MSGC_RECORD_DATA] = sink_record_handle_data,
  [SPICE_MSGC_RECORD_MODE] = sink_record_handle_mode,
};

gboolean
sink_record_handle (SinkSession * s, guint16 type, const guint8 * body,
    gsize size)
{
  return sink_handlers_dispatch (GST_CAT_DEFAULT, handlers,
      G_N_ELEMENTS (handlers), s, type, body, size);
}
