/* gst-spice: the application/x-spice-draws format (spicetiler -> spicesink)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "gstspice-prelude.h"

#include <gst/gst.h>
#include <gst/video/video.h>
#include <spice/enums.h>

G_BEGIN_DECLS

/**
 * GST_SPICE_DRAWS_CAPS:
 *
 * Media type of spicetiler's `draw` pad. Caps carry the surface size as
 * `width` and `height` (int): a new size means a new SPICE surface.
 */
#define GST_SPICE_DRAWS_MEDIA_TYPE "application/x-spice-draws"
#define GST_SPICE_DRAWS_CAPS GST_SPICE_DRAWS_MEDIA_TYPE \
    ", width = (int) [ 1, 16384 ], height = (int) [ 1, 16384 ]"

/* SPICE image types (values of SpiceImageType on the wire), and one kind
 * of region that is no image: GST_SPICE_IMAGE_COPY_BITS, a copy of pixels
 * the client already has (spicesink sends it as COPY_BITS). Its payload is
 * the top-left corner of the source on the surface, i32 LE x then y. */
typedef enum {
  GST_SPICE_IMAGE_BITMAP = SPICE_IMAGE_TYPE_BITMAP,
  GST_SPICE_IMAGE_JPEG = SPICE_IMAGE_TYPE_JPEG,
  GST_SPICE_IMAGE_LZ4 = SPICE_IMAGE_TYPE_LZ4,
  GST_SPICE_IMAGE_COPY_BITS = 255,
} GstSpiceImageType;

#define GST_SPICE_COPY_BITS_PAYLOAD_SIZE 8

/* per-region flags */
typedef enum {
  GST_SPICE_DRAW_FLAG_NONE = 0,
  GST_SPICE_DRAW_FLAG_LOSSY = 1 << 0,   /* payload is not the exact source */
} GstSpiceDrawFlags;

/* per-update flags */
typedef enum {
  GST_SPICE_DRAWS_FLAG_NONE = 0,
  GST_SPICE_DRAWS_FLAG_REFRESH = 1 << 0,  /* full redraw (answer to a refresh) */
} GstSpiceDrawsFlags;

/**
 * GstSpiceDraw:
 * @dest: destination rectangle on the surface; the image has this size
 * @type: SPICE image type of @payload
 * @flags: #GstSpiceDrawFlags
 * @payload: the image exactly as it follows the 18-byte SpiceImageDescriptor
 *   in a DRAW_COPY message: for BITMAP the bitmap header and rows; for LZ4
 *   and JPEG the BinaryData (u32 LE size, then the bytes)
 * @payload_size: bytes in @payload
 *
 * One region of an update, as read from a buffer.
 */
typedef struct {
  GstVideoRectangle dest;
  GstSpiceImageType type;
  guint flags;
  const guint8 *payload;
  gsize payload_size;
} GstSpiceDraw;

/* ---- writer ---- */
typedef struct _GstSpiceDrawsWriter GstSpiceDrawsWriter;

GST_SPICE_API
GstSpiceDrawsWriter *gst_spice_draws_writer_new (guint32 update_flags,
    gsize size_hint);
GST_SPICE_API
guint8  *gst_spice_draws_writer_begin (GstSpiceDrawsWriter * writer,
    const GstVideoRectangle * dest, GstSpiceImageType type, guint flags,
    gsize max_payload_size);
GST_SPICE_API
void     gst_spice_draws_writer_end (GstSpiceDrawsWriter * writer,
    gsize payload_size);
GST_SPICE_API
void     gst_spice_draws_writer_cancel (GstSpiceDrawsWriter * writer);
GST_SPICE_API
void     gst_spice_draws_writer_add (GstSpiceDrawsWriter * writer,
    const GstVideoRectangle * dest, GstSpiceImageType type, guint flags,
    const guint8 * payload, gsize payload_size);
GST_SPICE_API
void     gst_spice_draws_writer_add_bitmap (GstSpiceDrawsWriter * writer,
    const GstVideoRectangle * dest, const guint8 * bgrx, gint stride);
GST_SPICE_API
void     gst_spice_draws_writer_add_copy_bits (GstSpiceDrawsWriter * writer,
    const GstVideoRectangle * dest, gint src_x, gint src_y);
GST_SPICE_API
guint    gst_spice_draws_writer_n_regions (GstSpiceDrawsWriter * writer);
GST_SPICE_API
gsize    gst_spice_draws_writer_size (GstSpiceDrawsWriter * writer);
GST_SPICE_API
GstBuffer *gst_spice_draws_writer_finish (GstSpiceDrawsWriter * writer);
GST_SPICE_API
void     gst_spice_draws_writer_free (GstSpiceDrawsWriter * writer);

/* ---- reader ---- */
typedef struct {
  /*< private >*/
  GstBuffer *buffer;
  GstMapInfo map;
  gsize offset;
  guint index;
  /*< public >*/
  guint32 flags;                /* GstSpiceDrawsFlags of the update */
  guint n_regions;
  gboolean error;               /* set when a malformed region stopped _next */
} GstSpiceDrawsReader;

GST_SPICE_API
gboolean gst_spice_draws_reader_init (GstSpiceDrawsReader * reader,
    GstBuffer * buffer);
GST_SPICE_API
gboolean gst_spice_draws_reader_next (GstSpiceDrawsReader * reader,
    GstSpiceDraw * draw);
GST_SPICE_API
void     gst_spice_draws_reader_clear (GstSpiceDrawsReader * reader);

/* ---- payload layouts (SPICE wire format) ---- */
#define GST_SPICE_BITMAP_HEADER_SIZE 18
GST_SPICE_API
gsize    gst_spice_bitmap_payload_size (gint width, gint height);
GST_SPICE_API
void     gst_spice_bitmap_payload_write (guint8 * out, const guint8 * bgrx,
    gint stride, gint width, gint height);
GST_SPICE_API
gboolean gst_spice_payload_validate (GstSpiceImageType type, gint width,
    gint height, const guint8 * payload, gsize payload_size);
/* The source corner of a COPY_BITS region whose payload is validated;
 * FALSE when the @dest-sized source does not lie on a @surface_width x
 * @surface_height surface. */
GST_SPICE_API
gboolean gst_spice_copy_bits_payload_parse (const guint8 * payload,
    const GstVideoRectangle * dest, gint surface_width, gint surface_height,
    gint * src_x, gint * src_y);
/* Applies a COPY_BITS to BGRx pixels as a client does: each source row is
 * read before a destination row overwrites it. */
GST_SPICE_API
void     gst_spice_copy_bits_apply (guint8 * bgrx, gint stride,
    const GstVideoRectangle * dest, gint src_x, gint src_y);

/* ---- LZ4 and JPEG payload framing (SPICE wire format) ----
 *
 * Both are a SPICE BinaryData: u32 LE data_size, then data_size bytes.
 * JPEG: the data is a complete baseline JFIF stream whose size equals the
 * region's. LZ4: the data is u8 top_down (1), u8 SpiceBitmapFmt
 * (SPICE_BITMAP_FMT_32BIT: B,G,R,x), then one or more (u32 **big-endian** length, raw LZ4
 * block) pairs; the blocks decompress, as one stream
 * (LZ4_decompress_safe_continue), to the rows packed without padding.
 * These helpers only frame; the codecs live with their users (spicetiler
 * encodes, the reference decoder in tests/common decodes).
 */
#define GST_SPICE_BINARY_HEADER_SIZE 4
#define GST_SPICE_LZ4_HEADER_SIZE 6     /* data_size, top_down, format */
#define GST_SPICE_LZ4_BLOCK_HEADER_SIZE 4

/* writes the u32 LE data_size of a BinaryData payload of @payload_size
 * bytes (header included) */
GST_SPICE_API
void     gst_spice_binary_payload_set_size (guint8 * payload,
    gsize payload_size);
/* writes data_size, top_down = 1 and format = 32BIT */
GST_SPICE_API
void     gst_spice_lz4_payload_write_header (guint8 * payload,
    gsize payload_size);
/* writes the big-endian length before a block */
GST_SPICE_API
void     gst_spice_lz4_block_write_header (guint8 * out, guint32 block_size);

/**
 * GstSpiceLz4Blocks:
 *
 * Iterates over the blocks of an LZ4 payload, see
 * gst_spice_lz4_payload_parse() and gst_spice_lz4_blocks_next().
 */
typedef struct {
  gboolean top_down;
  guint format;                 /* SpiceBitmapFmt */
  /*< private >*/
  const guint8 *pos;
  gsize remaining;
} GstSpiceLz4Blocks;

GST_SPICE_API
gboolean gst_spice_lz4_payload_parse (const guint8 * payload, gsize size,
    GstSpiceLz4Blocks * blocks);
GST_SPICE_API
gboolean gst_spice_lz4_blocks_next (GstSpiceLz4Blocks * blocks,
    const guint8 ** block, gsize * block_size);
GST_SPICE_API
gboolean gst_spice_jpeg_payload_parse (const guint8 * payload, gsize size,
    const guint8 ** jpeg, gsize * jpeg_size);

G_END_DECLS
