/* libFuzzer: the SPICE link stage as spicesink reads it (16-byte link
 * header, then the link message with its capability words).
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <stdint.h>
#include <stddef.h>

#include "gstspicewire.h"

int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  GstSpiceLinkHeader h;
  GstSpiceLinkMess m;
  guint32 err;

  if (!gst_spice_wire_parse_link_header (data, size,
          GST_SPICE_WIRE_LINK_MESS_SIZE, &h, &err))
    return 0;
  data += GST_SPICE_WIRE_LINK_HEADER_SIZE;
  size -= GST_SPICE_WIRE_LINK_HEADER_SIZE;
  if (h.size > size)
    return 0;
  if (gst_spice_wire_parse_link_mess (data, h.size, &m)) {
    guint i;

    /* what the sink does next with the result */
    g_assert (m.n_common <= GST_SPICE_WIRE_MAX_CAPS_WORDS);
    g_assert (m.n_channel <= GST_SPICE_WIRE_MAX_CAPS_WORDS);
    for (i = 0; i < 32 * m.n_channel; i++)
      (void) gst_spice_caps_test (m.channel_caps, m.n_channel, i);
  }
  return 0;
}
