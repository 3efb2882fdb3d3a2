/* gst-spice: SPICE ticket authentication (see gstspiceticket.h)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <string.h>

#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/crypto.h>
#include <gst/gst.h>

#include "gstspiceticket.h"
#include "gstspicewire.h"

struct _GstSpiceTicketKey
{
  EVP_PKEY *pkey;
  guint8 *pub;
  gsize pub_size;
};

GstSpiceTicketKey *
gst_spice_ticket_key_new (GError ** error)
{
  GstSpiceTicketKey *key;
  EVP_PKEY_CTX *ctx;
  EVP_PKEY *pkey = NULL;
  unsigned char *der = NULL;
  int len;

  ctx = EVP_PKEY_CTX_new_id (EVP_PKEY_RSA, NULL);
  if (!ctx || EVP_PKEY_keygen_init (ctx) <= 0 ||
      EVP_PKEY_CTX_set_rsa_keygen_bits (ctx, 1024) <= 0 ||
      EVP_PKEY_keygen (ctx, &pkey) <= 0) {
    EVP_PKEY_CTX_free (ctx);
    g_set_error (error, GST_LIBRARY_ERROR, GST_LIBRARY_ERROR_FAILED,
        "could not generate the RSA ticket key");
    return NULL;
  }
  EVP_PKEY_CTX_free (ctx);
  len = i2d_PUBKEY (pkey, &der);
  if (len != SPICE_TICKET_PUBKEY_BYTES) {
    OPENSSL_free (der);
    EVP_PKEY_free (pkey);
    g_set_error (error, GST_LIBRARY_ERROR, GST_LIBRARY_ERROR_FAILED,
        "unexpected RSA public key size %d", len);
    return NULL;
  }
  key = g_new0 (GstSpiceTicketKey, 1);
  key->pkey = pkey;
  key->pub = g_memdup2 (der, len);
  key->pub_size = len;
  OPENSSL_free (der);
  return key;
}

void
gst_spice_ticket_key_free (GstSpiceTicketKey * key)
{
  if (!key)
    return;
  EVP_PKEY_free (key->pkey);
  g_free (key->pub);
  g_free (key);
}

const guint8 *
gst_spice_ticket_key_get_public (GstSpiceTicketKey * key, gsize * size)
{
  if (size)
    *size = key->pub_size;
  return key->pub;
}

gchar *
gst_spice_ticket_key_decrypt (GstSpiceTicketKey * key, const guint8 * ticket,
    gsize size)
{
  EVP_PKEY_CTX *ctx;
  guint8 out[GST_SPICE_WIRE_TICKET_SIZE];
  size_t out_len = sizeof (out);
  gchar *res = NULL;

  if (!ticket || size != GST_SPICE_WIRE_TICKET_SIZE)
    return NULL;
  ctx = EVP_PKEY_CTX_new (key->pkey, NULL);
  if (ctx && EVP_PKEY_decrypt_init (ctx) > 0 &&
      EVP_PKEY_CTX_set_rsa_padding (ctx, RSA_PKCS1_OAEP_PADDING) > 0 &&
      EVP_PKEY_decrypt (ctx, out, &out_len, ticket, size) > 0) {
    res = g_strndup ((const gchar *) out, out_len);
  }
  EVP_PKEY_CTX_free (ctx);
  OPENSSL_cleanse (out, sizeof (out));
  return res;
}

gboolean
gst_spice_ticket_key_check (GstSpiceTicketKey * key, const guint8 * ticket,
    gsize size, const gchar * password)
{
  gchar *got = gst_spice_ticket_key_decrypt (key, ticket, size);
  gsize a, b;
  gboolean ok;

  if (!got)
    return FALSE;
  a = strlen (got);
  b = strlen (password);
  ok = a == b && CRYPTO_memcmp (got, password, a) == 0;
  OPENSSL_cleanse (got, a);
  g_free (got);
  return ok;
}
