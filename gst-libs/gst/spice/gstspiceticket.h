/* gst-spice: SPICE ticket authentication (RSA-1024, OAEP with SHA-1)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "gstspice-prelude.h"

#include <glib.h>

G_BEGIN_DECLS

typedef struct _GstSpiceTicketKey GstSpiceTicketKey;

/* A fresh 1024-bit RSA key (exponent 65537). */
GST_SPICE_API
GstSpiceTicketKey *gst_spice_ticket_key_new (GError ** error);
GST_SPICE_API
void     gst_spice_ticket_key_free (GstSpiceTicketKey * key);
/* DER SubjectPublicKeyInfo, SPICE_TICKET_PUBKEY_BYTES (162) bytes */
GST_SPICE_API
const guint8 *gst_spice_ticket_key_get_public (GstSpiceTicketKey * key,
    gsize * size);
/* Decrypts a 128-byte ticket. Returns the password (up to the first NUL,
 * newly allocated) or NULL if the ticket does not decrypt. */
GST_SPICE_API
gchar   *gst_spice_ticket_key_decrypt (GstSpiceTicketKey * key,
    const guint8 * ticket, gsize size);
/* TRUE if @ticket decrypts to exactly @password (compared in constant
 * time). */
GST_SPICE_API
gboolean gst_spice_ticket_key_check (GstSpiceTicketKey * key,
    const guint8 * ticket, gsize size, const gchar * password);

G_END_DECLS
