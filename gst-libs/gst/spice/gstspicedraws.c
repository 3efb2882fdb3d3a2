/* gst-spice: the application/x-spice-draws format (spicetiler -> spicesink)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A buffer holds one update: a 16-byte header
 *   u32 magic "SPDW", u16 version (1), u16 n_regions, u32 flags, u32 0
 * then n_regions times a 24-byte region header
 *   i32 x, y, w, h (destination on the surface), u8 image type, u8 flags,
 *   u16 0, u32 payload size
 * followed by the payload, padded with zeros to a multiple of 4 bytes.
 * All integers little-endian. The payload is the SPICE wire form of the
 * image (see GstSpiceDraw), so spicesink writes it into DRAW_COPY unchanged;
 * a COPY_BITS region's payload is its source corner (i32 x, i32 y).
 * Regions apply in order: a copy reads what the regions before it drew.
 */
#include <string.h>

#include "gstspicedraws.h"

#define DRAWS_MAGIC 0x57445053u /* "SPDW" */
#define DRAWS_VERSION 1
#define HEADER_SIZE 16
#define REGION_HEADER_SIZE 24
#define MAX_REGIONS G_MAXUINT16

/* SpiceBitmapFmt 32BIT, SpiceBitmapFlags TOP_DOWN */
#define SPICE_BITMAP_FMT_32BIT_ 8
#define SPICE_BITMAP_FLAG_TOP_DOWN_ 4

struct _GstSpiceDrawsWriter
{
  GByteArray *data;
  guint n_regions;
  gsize open_region;            /* offset of the open region header, or 0 */
};

static inline void
put_u16 (guint8 * p, guint16 v)
{
  GST_WRITE_UINT16_LE (p, v);
}

static inline void
put_u32 (guint8 * p, guint32 v)
{
  GST_WRITE_UINT32_LE (p, v);
}

GstSpiceDrawsWriter *
gst_spice_draws_writer_new (guint32 update_flags, gsize size_hint)
{
  GstSpiceDrawsWriter *w = g_new0 (GstSpiceDrawsWriter, 1);
  guint8 *h;

  w->data = g_byte_array_sized_new (HEADER_SIZE + MAX (size_hint, 256));
  g_byte_array_set_size (w->data, HEADER_SIZE);
  h = w->data->data;
  put_u32 (h, DRAWS_MAGIC);
  put_u16 (h + 4, DRAWS_VERSION);
  put_u16 (h + 6, 0);
  put_u32 (h + 8, update_flags);
  put_u32 (h + 12, 0);
  return w;
}

/**
 * gst_spice_draws_writer_begin:
 * @max_payload_size: room to reserve for the payload
 *
 * Opens a region and returns where to write its payload (valid until
 * gst_spice_draws_writer_end(), which must follow before any other call).
 */
guint8 *
gst_spice_draws_writer_begin (GstSpiceDrawsWriter * w,
    const GstVideoRectangle * dest, GstSpiceImageType type, guint flags,
    gsize max_payload_size)
{
  gsize off = w->data->len;
  guint8 *r;

  g_return_val_if_fail (w->open_region == 0, NULL);
  g_return_val_if_fail (w->n_regions < MAX_REGIONS, NULL);
  g_byte_array_set_size (w->data, off + REGION_HEADER_SIZE + max_payload_size);
  r = w->data->data + off;
  put_u32 (r, (guint32) dest->x);
  put_u32 (r + 4, (guint32) dest->y);
  put_u32 (r + 8, (guint32) dest->w);
  put_u32 (r + 12, (guint32) dest->h);
  r[16] = (guint8) type;
  r[17] = (guint8) flags;
  put_u16 (r + 18, 0);
  put_u32 (r + 20, 0);
  w->open_region = off;
  return r + REGION_HEADER_SIZE;
}

void
gst_spice_draws_writer_end (GstSpiceDrawsWriter * w, gsize payload_size)
{
  gsize off = w->open_region, end;

  g_return_if_fail (off != 0);
  end = off + REGION_HEADER_SIZE + payload_size;
  g_return_if_fail (end <= w->data->len);
  put_u32 (w->data->data + off + 20, (guint32) payload_size);
  g_byte_array_set_size (w->data, (end + 3) & ~(gsize) 3);
  memset (w->data->data + end, 0, w->data->len - end);
  w->open_region = 0;
  w->n_regions++;
  put_u16 (w->data->data + 6, (guint16) w->n_regions);
}

/* Drops the region opened by gst_spice_draws_writer_begin() (e.g. when an
 * encoder gives up and another codec is tried). */
void
gst_spice_draws_writer_cancel (GstSpiceDrawsWriter * w)
{
  g_return_if_fail (w->open_region != 0);
  g_byte_array_set_size (w->data, w->open_region);
  w->open_region = 0;
}

void
gst_spice_draws_writer_add (GstSpiceDrawsWriter * w,
    const GstVideoRectangle * dest, GstSpiceImageType type, guint flags,
    const guint8 * payload, gsize payload_size)
{
  guint8 *p = gst_spice_draws_writer_begin (w, dest, type, flags,
      payload_size);

  if (!p)
    return;
  memcpy (p, payload, payload_size);
  gst_spice_draws_writer_end (w, payload_size);
}

/* Adds @dest as an uncompressed BITMAP from BGRx pixels (@bgrx points at
 * the region's top-left pixel). */
void
gst_spice_draws_writer_add_bitmap (GstSpiceDrawsWriter * w,
    const GstVideoRectangle * dest, const guint8 * bgrx, gint stride)
{
  gsize size = gst_spice_bitmap_payload_size (dest->w, dest->h);
  guint8 *p = gst_spice_draws_writer_begin (w, dest, GST_SPICE_IMAGE_BITMAP,
      GST_SPICE_DRAW_FLAG_NONE, size);

  if (!p)
    return;
  gst_spice_bitmap_payload_write (p, bgrx, stride, dest->w, dest->h);
  gst_spice_draws_writer_end (w, size);
}

/* Adds a copy of the @dest-sized area at @src_x, @src_y of the surface
 * (as the client has it when this region is reached) to @dest. */
void
gst_spice_draws_writer_add_copy_bits (GstSpiceDrawsWriter * w,
    const GstVideoRectangle * dest, gint src_x, gint src_y)
{
  guint8 *p = gst_spice_draws_writer_begin (w, dest, GST_SPICE_IMAGE_COPY_BITS,
      GST_SPICE_DRAW_FLAG_NONE, GST_SPICE_COPY_BITS_PAYLOAD_SIZE);

  if (!p)
    return;
  put_u32 (p, (guint32) src_x);
  put_u32 (p + 4, (guint32) src_y);
  gst_spice_draws_writer_end (w, GST_SPICE_COPY_BITS_PAYLOAD_SIZE);
}

guint
gst_spice_draws_writer_n_regions (GstSpiceDrawsWriter * w)
{
  return w->n_regions;
}

gsize
gst_spice_draws_writer_size (GstSpiceDrawsWriter * w)
{
  return w->data->len;
}

GstBuffer *
gst_spice_draws_writer_finish (GstSpiceDrawsWriter * w)
{
  gsize len = w->data->len;
  guint8 *data;

  g_return_val_if_fail (w->open_region == 0, NULL);
  data = g_byte_array_free (w->data, FALSE);
  g_free (w);
  return gst_buffer_new_wrapped (data, len);
}

void
gst_spice_draws_writer_free (GstSpiceDrawsWriter * w)
{
  if (!w)
    return;
  g_byte_array_free (w->data, TRUE);
  g_free (w);
}

gboolean
gst_spice_draws_reader_init (GstSpiceDrawsReader * r, GstBuffer * buffer)
{
  memset (r, 0, sizeof (*r));
  if (!gst_buffer_map (buffer, &r->map, GST_MAP_READ))
    return FALSE;
  r->buffer = gst_buffer_ref (buffer);
  if (r->map.size < HEADER_SIZE ||
      GST_READ_UINT32_LE (r->map.data) != DRAWS_MAGIC ||
      GST_READ_UINT16_LE (r->map.data + 4) != DRAWS_VERSION) {
    r->error = TRUE;
    gst_spice_draws_reader_clear (r);
    r->error = TRUE;
    return FALSE;
  }
  r->n_regions = GST_READ_UINT16_LE (r->map.data + 6);
  r->flags = GST_READ_UINT32_LE (r->map.data + 8);
  r->offset = HEADER_SIZE;
  return TRUE;
}

/* Returns the next region, or FALSE at the end or on malformed data (then
 * reader->error is set). Every returned region lies inside the buffer and
 * has a positive size; payload layout is checked by
 * gst_spice_payload_validate(). */
gboolean
gst_spice_draws_reader_next (GstSpiceDrawsReader * r, GstSpiceDraw * d)
{
  const guint8 *p;
  gsize size;

  if (!r->buffer || r->error || r->index >= r->n_regions)
    return FALSE;
  if (r->map.size - r->offset < REGION_HEADER_SIZE)
    goto malformed;
  p = r->map.data + r->offset;
  d->dest.x = (gint32) GST_READ_UINT32_LE (p);
  d->dest.y = (gint32) GST_READ_UINT32_LE (p + 4);
  d->dest.w = (gint32) GST_READ_UINT32_LE (p + 8);
  d->dest.h = (gint32) GST_READ_UINT32_LE (p + 12);
  d->type = p[16];
  d->flags = p[17];
  size = GST_READ_UINT32_LE (p + 20);
  if (d->dest.w <= 0 || d->dest.h <= 0 || d->dest.x < 0 || d->dest.y < 0 ||
      d->dest.w > 16384 || d->dest.h > 16384 ||
      size > r->map.size - r->offset - REGION_HEADER_SIZE)
    goto malformed;
  d->payload = p + REGION_HEADER_SIZE;
  d->payload_size = size;
  r->offset += (REGION_HEADER_SIZE + size + 3) & ~(gsize) 3;
  r->offset = MIN (r->offset, r->map.size);
  r->index++;
  return TRUE;

malformed:
  r->error = TRUE;
  return FALSE;
}

void
gst_spice_draws_reader_clear (GstSpiceDrawsReader * r)
{
  if (r->buffer) {
    gst_buffer_unmap (r->buffer, &r->map);
    gst_buffer_unref (r->buffer);
  }
  r->buffer = NULL;
}

gsize
gst_spice_bitmap_payload_size (gint width, gint height)
{
  return GST_SPICE_BITMAP_HEADER_SIZE + (gsize) width *4 * (gsize) height;
}

/* BITMAP payload: u8 format (32BIT), u8 flags (TOP_DOWN), u32 width,
 * u32 height, u32 stride, u32 palette offset (0), then the rows. */
void
gst_spice_bitmap_payload_write (guint8 * out, const guint8 * bgrx, gint stride,
    gint width, gint height)
{
  gsize row = (gsize) width * 4;
  gint y;

  out[0] = SPICE_BITMAP_FMT_32BIT_;
  out[1] = SPICE_BITMAP_FLAG_TOP_DOWN_;
  put_u32 (out + 2, width);
  put_u32 (out + 6, height);
  put_u32 (out + 10, (guint32) row);
  put_u32 (out + 14, 0);
  out += GST_SPICE_BITMAP_HEADER_SIZE;
  for (y = 0; y < height; y++)
    memcpy (out + y * row, bgrx + (gsize) y * stride, row);
}

/* Checks the framing of a payload (not the compressed bytes themselves). */
gboolean
gst_spice_payload_validate (GstSpiceImageType type, gint width, gint height,
    const guint8 * payload, gsize size)
{
  switch (type) {
    case GST_SPICE_IMAGE_BITMAP:{
      guint32 stride;

      if (size < GST_SPICE_BITMAP_HEADER_SIZE)
        return FALSE;
      stride = GST_READ_UINT32_LE (payload + 10);
      return payload[0] == SPICE_BITMAP_FMT_32BIT_ &&
          GST_READ_UINT32_LE (payload + 2) == (guint32) width &&
          GST_READ_UINT32_LE (payload + 6) == (guint32) height &&
          stride >= (guint32) width *4 &&
          GST_READ_UINT32_LE (payload + 14) == 0 &&
          size - GST_SPICE_BITMAP_HEADER_SIZE >= (gsize) stride *height;
    }
    case GST_SPICE_IMAGE_LZ4:
    case GST_SPICE_IMAGE_JPEG:
      return size >= 4 && GST_READ_UINT32_LE (payload) == size - 4 && size > 4;
    case GST_SPICE_IMAGE_COPY_BITS:
      /* the source's corner; the reader of the region checks that the
       * source lies on its surface */
      return size == GST_SPICE_COPY_BITS_PAYLOAD_SIZE &&
          (gint32) GST_READ_UINT32_LE (payload) >= 0 &&
          (gint32) GST_READ_UINT32_LE (payload + 4) >= 0;
    default:
      return FALSE;
  }
}

gboolean
gst_spice_copy_bits_payload_parse (const guint8 * payload,
    const GstVideoRectangle * dest, gint surface_width, gint surface_height,
    gint * src_x, gint * src_y)
{
  *src_x = (gint32) GST_READ_UINT32_LE (payload);
  *src_y = (gint32) GST_READ_UINT32_LE (payload + 4);
  return *src_x >= 0 && *src_y >= 0 && *src_x <= surface_width - dest->w &&
      *src_y <= surface_height - dest->h;
}

void
gst_spice_copy_bits_apply (guint8 * bgrx, gint stride,
    const GstVideoRectangle * dest, gint src_x, gint src_y)
{
  gsize bytes = (gsize) dest->w * 4;
  gint i;

  for (i = 0; i < dest->h; i++) {
    gint row = src_y < dest->y ? dest->h - 1 - i : i;

    memmove (bgrx + (gsize) (dest->y + row) * stride + (gsize) dest->x * 4,
        bgrx + (gsize) (src_y + row) * stride + (gsize) src_x * 4, bytes);
  }
}

/* ---- LZ4 and JPEG payload framing ---- */

void
gst_spice_binary_payload_set_size (guint8 * payload, gsize payload_size)
{
  g_return_if_fail (payload_size >= GST_SPICE_BINARY_HEADER_SIZE);
  put_u32 (payload, (guint32) (payload_size - GST_SPICE_BINARY_HEADER_SIZE));
}

void
gst_spice_lz4_payload_write_header (guint8 * payload, gsize payload_size)
{
  gst_spice_binary_payload_set_size (payload, payload_size);
  payload[4] = 1;               /* top_down */
  payload[5] = SPICE_BITMAP_FMT_32BIT;
}

void
gst_spice_lz4_block_write_header (guint8 * out, guint32 block_size)
{
  GST_WRITE_UINT32_BE (out, block_size);
}

/* Checks the BinaryData size, the format byte and that the (length, block)
 * pairs exactly fill the data; sets up @blocks for
 * gst_spice_lz4_blocks_next(). Does not decompress. */
gboolean
gst_spice_lz4_payload_parse (const guint8 * payload, gsize size,
    GstSpiceLz4Blocks * blocks)
{
  const guint8 *p;
  gsize left;
  guint fmt;

  memset (blocks, 0, sizeof (*blocks));
  if (size < GST_SPICE_LZ4_HEADER_SIZE + GST_SPICE_LZ4_BLOCK_HEADER_SIZE + 1 ||
      GST_READ_UINT32_LE (payload) != size - GST_SPICE_BINARY_HEADER_SIZE)
    return FALSE;
  fmt = payload[5];
  if (payload[4] > 1 || fmt < 6 || fmt > 9)
    return FALSE;
  p = payload + GST_SPICE_LZ4_HEADER_SIZE;
  left = size - GST_SPICE_LZ4_HEADER_SIZE;
  blocks->top_down = payload[4] == 1;
  blocks->format = fmt;
  blocks->pos = p;
  blocks->remaining = left;
  while (left > 0) {
    guint32 len;

    if (left < GST_SPICE_LZ4_BLOCK_HEADER_SIZE)
      return FALSE;
    len = GST_READ_UINT32_BE (p);
    if (len == 0 || len > left - GST_SPICE_LZ4_BLOCK_HEADER_SIZE)
      return FALSE;
    p += GST_SPICE_LZ4_BLOCK_HEADER_SIZE + len;
    left -= GST_SPICE_LZ4_BLOCK_HEADER_SIZE + len;
  }
  return TRUE;
}

gboolean
gst_spice_lz4_blocks_next (GstSpiceLz4Blocks * blocks, const guint8 ** block,
    gsize * block_size)
{
  guint32 len;

  if (blocks->remaining < GST_SPICE_LZ4_BLOCK_HEADER_SIZE)
    return FALSE;
  len = GST_READ_UINT32_BE (blocks->pos);
  if (len == 0 || len > blocks->remaining - GST_SPICE_LZ4_BLOCK_HEADER_SIZE)
    return FALSE;
  *block = blocks->pos + GST_SPICE_LZ4_BLOCK_HEADER_SIZE;
  *block_size = len;
  blocks->pos += GST_SPICE_LZ4_BLOCK_HEADER_SIZE + len;
  blocks->remaining -= GST_SPICE_LZ4_BLOCK_HEADER_SIZE + len;
  return TRUE;
}

/* Checks the BinaryData size and the JPEG SOI/EOI markers. */
gboolean
gst_spice_jpeg_payload_parse (const guint8 * payload, gsize size,
    const guint8 ** jpeg, gsize * jpeg_size)
{
  gsize n;

  if (size < GST_SPICE_BINARY_HEADER_SIZE + 4 ||
      GST_READ_UINT32_LE (payload) != size - GST_SPICE_BINARY_HEADER_SIZE)
    return FALSE;
  n = size - GST_SPICE_BINARY_HEADER_SIZE;
  payload += GST_SPICE_BINARY_HEADER_SIZE;
  if (payload[0] != 0xff || payload[1] != 0xd8 ||
      payload[n - 2] != 0xff || payload[n - 1] != 0xd9)
    return FALSE;
  *jpeg = payload;
  *jpeg_size = n;
  return TRUE;
}
