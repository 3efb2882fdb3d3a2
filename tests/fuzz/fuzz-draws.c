/* libFuzzer: the application/x-spice-draws reader and payload checks, as
 * spicesink runs them on every buffer it receives.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <stdint.h>
#include <stddef.h>

#include <gst/spice/gstspicedraws.h>

int LLVMFuzzerInitialize (int *argc, char ***argv);
int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  gst_init (NULL, NULL);
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  GstBuffer *buf = size ? gst_buffer_new_memdup (data, size) :
      gst_buffer_new ();
  GstSpiceDrawsReader r;
  GstSpiceDraw d;

  if (gst_spice_draws_reader_init (&r, buf)) {
    while (gst_spice_draws_reader_next (&r, &d)) {
      g_assert (d.payload >= r.map.data);
      g_assert (d.payload + d.payload_size <= r.map.data + r.map.size);
      if (gst_spice_payload_validate (d.type, d.dest.w, d.dest.h,
              d.payload, d.payload_size) &&
          d.type == GST_SPICE_IMAGE_COPY_BITS) {
        gint sx, sy;

        (void) gst_spice_copy_bits_payload_parse (d.payload, &d.dest, 4096,
            4096, &sx, &sy);
      }
    }
    gst_spice_draws_reader_clear (&r);
  }
  gst_buffer_unref (buf);
  return 0;
}
