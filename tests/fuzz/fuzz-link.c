/* libFuzzer: the SPICE link stage as spicesink reads it (16-byte link
 * header, then the link message with its capability words), then the
 * auth stage: the 4-byte mechanism and the 128-byte RSA-OAEP ticket.
 * After the link message, one mode byte: bit 0 clear = the next 128 bytes
 * are the ticket as sent (almost always refused by the padding check);
 * set = the rest (up to 60 bytes, any content, no NUL needed) is encrypted
 * with the server key first, so that decryption succeeds and the password
 * comparison runs on arbitrary plaintext.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <stdint.h>
#include <stddef.h>
#include <string.h>

#include <gst/spice/gstspicewire.h>
#include <gst/spice/gstspiceticket.h>

#include "spice-client-wire.h"

int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

static GstSpiceTicketKey *key;

static void
auth_stage (const uint8_t * data, size_t size)
{
  guint8 ticket[GST_SPICE_WIRE_TICKET_SIZE];
  guint32 mech;

  if (size < 5)
    return;
  mech = GST_READ_UINT32_LE (data);
  data += 4;
  size -= 4;
  if (mech != SPICE_COMMON_CAP_AUTH_SPICE)
    return;                     /* the sink refuses other mechanisms */
  if (!key) {
    key = gst_spice_ticket_key_new (NULL);
    g_assert (key);
  }
  if (data[0] & 1) {
    gchar plain[61];
    gsize n = MIN (size - 1, sizeof (plain) - 1);
    gsize pub_size;
    const guint8 *pub = gst_spice_ticket_key_get_public (key, &pub_size);

    memcpy (plain, data + 1, n);
    plain[n] = '\0';
    /* a password with an embedded NUL is cut there, as the client does */
    if (!test_wire_encrypt_ticket (pub, pub_size, plain, ticket,
            sizeof (ticket)))
      return;
    g_assert (gst_spice_ticket_key_check (key, ticket, sizeof (ticket),
            plain));
    (void) gst_spice_ticket_key_check (key, ticket, sizeof (ticket),
        "secret");
  } else {
    if (size - 1 < sizeof (ticket))
      return;
    (void) gst_spice_ticket_key_check (key, data + 1, sizeof (ticket),
        "secret");
  }
}

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
    auth_stage (data + h.size, size - h.size);
  }
  return 0;
}
