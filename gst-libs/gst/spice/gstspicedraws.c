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
#include <gst/base/gstbytereader.h>
#include <gst/base/gstbytewriter.h>

#include "gstspicedraws.h"
#include "gstspiceblit.h"

#define DRAWS_MAGIC 0x57445053u /* "SPDW" */
#define DRAWS_VERSION 1
#define HEADER_SIZE 16
#define REGION_HEADER_SIZE 24
#define MAX_REGIONS G_MAXUINT16

struct _GstSpiceDrawsWriter
{
  GByteArray *data;
  guint n_regions;
  gsize open_region;            /* offset of the open region header, or 0 */
};

/* The buffer grows in a GByteArray (a region's payload is reserved before
 * it is written in place); a fixed GstByteWriter writes each header into
 * the bytes reserved for it. */
static void
writer_at (GstByteWriter * bw, guint8 * data, gsize size)
{
  gst_byte_writer_init_with_data (bw, data, size, FALSE);
}

GstSpiceDrawsWriter *
gst_spice_draws_writer_new (guint32 update_flags, gsize size_hint)
{
  GstSpiceDrawsWriter *w = g_new0 (GstSpiceDrawsWriter, 1);
  GstByteWriter bw;

  w->data = g_byte_array_sized_new (HEADER_SIZE + MAX (size_hint, 256));
  g_byte_array_set_size (w->data, HEADER_SIZE);
  writer_at (&bw, w->data->data, HEADER_SIZE);
  gst_byte_writer_put_uint32_le (&bw, DRAWS_MAGIC);
  gst_byte_writer_put_uint16_le (&bw, DRAWS_VERSION);
  gst_byte_writer_put_uint16_le (&bw, 0);       /* n_regions */
  gst_byte_writer_put_uint32_le (&bw, update_flags);
  gst_byte_writer_put_uint32_le (&bw, 0);
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
  GstByteWriter bw;

  g_return_val_if_fail (w->open_region == 0, NULL);
  g_return_val_if_fail (w->n_regions < MAX_REGIONS, NULL);
  g_byte_array_set_size (w->data, off + REGION_HEADER_SIZE + max_payload_size);
  writer_at (&bw, w->data->data + off, REGION_HEADER_SIZE);
  gst_byte_writer_put_int32_le (&bw, dest->x);
  gst_byte_writer_put_int32_le (&bw, dest->y);
  gst_byte_writer_put_int32_le (&bw, dest->w);
  gst_byte_writer_put_int32_le (&bw, dest->h);
  gst_byte_writer_put_uint8 (&bw, type);
  gst_byte_writer_put_uint8 (&bw, flags);
  gst_byte_writer_put_uint16_le (&bw, 0);
  gst_byte_writer_put_uint32_le (&bw, 0);       /* payload size, at _end */
  w->open_region = off;
  return w->data->data + off + REGION_HEADER_SIZE;
}

void
gst_spice_draws_writer_end (GstSpiceDrawsWriter * w, gsize payload_size)
{
  gsize off = w->open_region, end;
  GstByteWriter bw;

  g_return_if_fail (off != 0);
  end = off + REGION_HEADER_SIZE + payload_size;
  g_return_if_fail (end <= w->data->len);
  writer_at (&bw, w->data->data + off + 20, 4);
  gst_byte_writer_put_uint32_le (&bw, payload_size);
  g_byte_array_set_size (w->data, GST_ROUND_UP_4 (end));
  memset (w->data->data + end, 0, w->data->len - end);
  w->open_region = 0;
  w->n_regions++;
  writer_at (&bw, w->data->data + 6, 2);
  gst_byte_writer_put_uint16_le (&bw, w->n_regions);
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
  GstByteWriter bw;

  if (!p)
    return;
  writer_at (&bw, p, GST_SPICE_COPY_BITS_PAYLOAD_SIZE);
  gst_byte_writer_put_int32_le (&bw, src_x);
  gst_byte_writer_put_int32_le (&bw, src_y);
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

/* a GstByteReader over the mapped buffer (FALSE when it is too large for
 * one, which no update is) */
static gboolean
reader_over_map (GstSpiceDrawsReader * r, GstByteReader * br)
{
  if (r->map.size > G_MAXUINT)
    return FALSE;
  gst_byte_reader_init (br, r->map.data, r->map.size);
  return TRUE;
}

gboolean
gst_spice_draws_reader_init (GstSpiceDrawsReader * r, GstBuffer * buffer)
{
  GstByteReader br;

  memset (r, 0, sizeof (*r));
  if (!gst_buffer_map (buffer, &r->map, GST_MAP_READ))
    return FALSE;
  r->buffer = gst_buffer_ref (buffer);
  if (!reader_over_map (r, &br) ||
      gst_byte_reader_get_remaining (&br) < HEADER_SIZE ||
      gst_byte_reader_get_uint32_le_unchecked (&br) != DRAWS_MAGIC ||
      gst_byte_reader_get_uint16_le_unchecked (&br) != DRAWS_VERSION) {
    gst_spice_draws_reader_clear (r);
    r->error = TRUE;
    return FALSE;
  }
  r->n_regions = gst_byte_reader_get_uint16_le_unchecked (&br);
  r->flags = gst_byte_reader_get_uint32_le_unchecked (&br);
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
  GstByteReader br;
  guint32 size;

  if (!r->buffer || r->error || r->index >= r->n_regions)
    return FALSE;
  if (!reader_over_map (r, &br) || !gst_byte_reader_set_pos (&br, r->offset)
      || gst_byte_reader_get_remaining (&br) < REGION_HEADER_SIZE)
    goto malformed;
  d->dest.x = gst_byte_reader_get_int32_le_unchecked (&br);
  d->dest.y = gst_byte_reader_get_int32_le_unchecked (&br);
  d->dest.w = gst_byte_reader_get_int32_le_unchecked (&br);
  d->dest.h = gst_byte_reader_get_int32_le_unchecked (&br);
  d->type = gst_byte_reader_get_uint8_unchecked (&br);
  d->flags = gst_byte_reader_get_uint8_unchecked (&br);
  gst_byte_reader_skip_unchecked (&br, 2);
  size = gst_byte_reader_get_uint32_le_unchecked (&br);
  if (d->dest.w <= 0 || d->dest.h <= 0 || d->dest.x < 0 || d->dest.y < 0 ||
      d->dest.w > 16384 || d->dest.h > 16384 ||
      !gst_byte_reader_get_data (&br, size, &d->payload))
    goto malformed;
  d->payload_size = size;
  r->offset += GST_ROUND_UP_4 (REGION_HEADER_SIZE + (gsize) size);
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
  GstByteWriter bw;

  writer_at (&bw, out, GST_SPICE_BITMAP_HEADER_SIZE);
  gst_byte_writer_put_uint8 (&bw, SPICE_BITMAP_FMT_32BIT);
  gst_byte_writer_put_uint8 (&bw, SPICE_BITMAP_FLAGS_TOP_DOWN);
  gst_byte_writer_put_uint32_le (&bw, width);
  gst_byte_writer_put_uint32_le (&bw, height);
  gst_byte_writer_put_uint32_le (&bw, row);
  gst_byte_writer_put_uint32_le (&bw, 0);
  gst_spice_blit_bgrx (out + GST_SPICE_BITMAP_HEADER_SIZE, row, 0, 0, bgrx,
      stride, 0, 0, width, height);
}

/* a reader over a payload (whose size the draws reader bounded) */
static void
payload_reader (GstByteReader * br, const guint8 * payload, gsize size)
{
  gst_byte_reader_init (br, payload, MIN (size, G_MAXUINT));
}

/* a BinaryData: u32 LE data size, then exactly that many bytes */
static gboolean
binary_payload_check (GstByteReader * br, gsize size)
{
  guint32 n;

  return gst_byte_reader_get_uint32_le (br, &n) &&
      n == size - GST_SPICE_BINARY_HEADER_SIZE;
}

/* Checks the framing of a payload (not the compressed bytes themselves). */
gboolean
gst_spice_payload_validate (GstSpiceImageType type, gint width, gint height,
    const guint8 * payload, gsize size)
{
  GstByteReader br;

  payload_reader (&br, payload, size);
  switch (type) {
    case GST_SPICE_IMAGE_BITMAP:{
      guint8 format;
      guint32 w, h, stride, palette;

      if (gst_byte_reader_get_remaining (&br) < GST_SPICE_BITMAP_HEADER_SIZE)
        return FALSE;
      format = gst_byte_reader_get_uint8_unchecked (&br);
      gst_byte_reader_skip_unchecked (&br, 1);  /* flags */
      w = gst_byte_reader_get_uint32_le_unchecked (&br);
      h = gst_byte_reader_get_uint32_le_unchecked (&br);
      stride = gst_byte_reader_get_uint32_le_unchecked (&br);
      palette = gst_byte_reader_get_uint32_le_unchecked (&br);
      return format == SPICE_BITMAP_FMT_32BIT && w == (guint32) width &&
          h == (guint32) height && stride >= (guint32) width *4 &&
          palette == 0 &&
          gst_byte_reader_get_remaining (&br) >= (gsize) stride * height;
    }
    case GST_SPICE_IMAGE_LZ4:
    case GST_SPICE_IMAGE_JPEG:
      return size > GST_SPICE_BINARY_HEADER_SIZE &&
          binary_payload_check (&br, size);
    case GST_SPICE_IMAGE_COPY_BITS:{
      /* the source's corner; the reader of the region checks that the
       * source lies on its surface */
      gint32 x, y;

      if (size != GST_SPICE_COPY_BITS_PAYLOAD_SIZE)
        return FALSE;
      x = gst_byte_reader_get_int32_le_unchecked (&br);
      y = gst_byte_reader_get_int32_le_unchecked (&br);
      return x >= 0 && y >= 0;
    }
    default:
      return FALSE;
  }
}

gboolean
gst_spice_copy_bits_payload_parse (const guint8 * payload,
    const GstVideoRectangle * dest, gint surface_width, gint surface_height,
    gint * src_x, gint * src_y)
{
  GstByteReader br;

  payload_reader (&br, payload, GST_SPICE_COPY_BITS_PAYLOAD_SIZE);
  *src_x = gst_byte_reader_get_int32_le_unchecked (&br);
  *src_y = gst_byte_reader_get_int32_le_unchecked (&br);
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
  GstByteWriter bw;

  g_return_if_fail (payload_size >= GST_SPICE_BINARY_HEADER_SIZE);
  writer_at (&bw, payload, GST_SPICE_BINARY_HEADER_SIZE);
  gst_byte_writer_put_uint32_le (&bw,
      payload_size - GST_SPICE_BINARY_HEADER_SIZE);
}

void
gst_spice_lz4_payload_write_header (guint8 * payload, gsize payload_size)
{
  GstByteWriter bw;

  gst_spice_binary_payload_set_size (payload, payload_size);
  writer_at (&bw, payload + GST_SPICE_BINARY_HEADER_SIZE,
      GST_SPICE_LZ4_HEADER_SIZE - GST_SPICE_BINARY_HEADER_SIZE);
  gst_byte_writer_put_uint8 (&bw, 1);   /* top_down */
  gst_byte_writer_put_uint8 (&bw, SPICE_BITMAP_FMT_32BIT);
}

void
gst_spice_lz4_block_write_header (guint8 * out, guint32 block_size)
{
  GstByteWriter bw;

  writer_at (&bw, out, GST_SPICE_LZ4_BLOCK_HEADER_SIZE);
  gst_byte_writer_put_uint32_be (&bw, block_size);
}

/* the next (u32 BE length, block) pair of @br; FALSE at the end or when the
 * pair is malformed */
static gboolean
lz4_block_read (GstByteReader * br, const guint8 ** block, guint32 * len)
{
  return gst_byte_reader_get_uint32_be (br, len) && *len > 0 &&
      gst_byte_reader_get_data (br, *len, block);
}

/* Checks the BinaryData size, the format byte and that the (length, block)
 * pairs exactly fill the data; sets up @blocks for
 * gst_spice_lz4_blocks_next(). Does not decompress. */
gboolean
gst_spice_lz4_payload_parse (const guint8 * payload, gsize size,
    GstSpiceLz4Blocks * blocks)
{
  GstByteReader br;
  const guint8 *block;
  guint32 len;
  guint8 top_down, fmt;

  memset (blocks, 0, sizeof (*blocks));
  payload_reader (&br, payload, size);
  if (size < GST_SPICE_LZ4_HEADER_SIZE + GST_SPICE_LZ4_BLOCK_HEADER_SIZE + 1 ||
      !binary_payload_check (&br, size))
    return FALSE;
  top_down = gst_byte_reader_get_uint8_unchecked (&br);
  fmt = gst_byte_reader_get_uint8_unchecked (&br);
  if (top_down > 1 || fmt < SPICE_BITMAP_FMT_16BIT ||
      fmt > SPICE_BITMAP_FMT_RGBA)
    return FALSE;
  blocks->top_down = top_down == 1;
  blocks->format = fmt;
  blocks->pos = payload + GST_SPICE_LZ4_HEADER_SIZE;
  blocks->remaining = size - GST_SPICE_LZ4_HEADER_SIZE;
  while (gst_byte_reader_get_remaining (&br) > 0)
    if (!lz4_block_read (&br, &block, &len))
      return FALSE;
  return TRUE;
}

gboolean
gst_spice_lz4_blocks_next (GstSpiceLz4Blocks * blocks, const guint8 ** block,
    gsize * block_size)
{
  GstByteReader br;
  guint32 len;

  payload_reader (&br, blocks->pos, blocks->remaining);
  if (!lz4_block_read (&br, block, &len))
    return FALSE;
  *block_size = len;
  blocks->pos += gst_byte_reader_get_pos (&br);
  blocks->remaining -= gst_byte_reader_get_pos (&br);
  return TRUE;
}

/* Checks the BinaryData size and the JPEG SOI/EOI markers. */
gboolean
gst_spice_jpeg_payload_parse (const guint8 * payload, gsize size,
    const guint8 ** jpeg, gsize * jpeg_size)
{
  GstByteReader br;
  const guint8 *p;
  gsize n;

  payload_reader (&br, payload, size);
  if (size < GST_SPICE_BINARY_HEADER_SIZE + 4 ||
      !binary_payload_check (&br, size))
    return FALSE;
  n = size - GST_SPICE_BINARY_HEADER_SIZE;
  p = gst_byte_reader_get_data_unchecked (&br, n);
  if (p[0] != 0xff || p[1] != 0xd8 || p[n - 2] != 0xff || p[n - 1] != 0xd9)
    return FALSE;
  *jpeg = p;
  *jpeg_size = n;
  return TRUE;
}
