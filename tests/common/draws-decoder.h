/* gst-spice tests: reference decoder for application/x-spice-draws
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Applies draw updates to a BGRx canvas the way a SPICE client applies
 * DRAW_COPY messages (BITMAP, LZ4 and JPEG images) and COPY_BITS, using
 * only the shared library (its image decoder paints the images). Any
 * malformed region
 * makes draws_decoder_apply() fail, so tests catch encoder bugs.
 */
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

G_BEGIN_DECLS

typedef struct _DrawsDecoder DrawsDecoder;

typedef struct {
  guint64 updates;
  guint64 regions;
  guint64 regions_bitmap, regions_lz4, regions_jpeg, regions_copy;
  guint64 bytes_bitmap, bytes_lz4, bytes_jpeg;
  guint64 lossy_regions;
  guint64 refreshes;
} DrawsDecoderStats;

DrawsDecoder *draws_decoder_new (gint width, gint height);
void          draws_decoder_free (DrawsDecoder * dec);
/* new surface size: the canvas is cleared to zeros */
void          draws_decoder_resize (DrawsDecoder * dec, gint width, gint height);
/* applies one update; FALSE (and @error set) on any malformed region */
gboolean      draws_decoder_apply (DrawsDecoder * dec, GstBuffer * update,
    GError ** error);
/* applies raw BGRx/BGRA pixels (e.g. a stream frame) at @dest */
void          draws_decoder_apply_pixels (DrawsDecoder * dec,
    const GstVideoRectangle * dest, const guint8 * bgrx, gint stride);
const guint8 *draws_decoder_pixels (DrawsDecoder * dec, gint * stride);
gint          draws_decoder_width (DrawsDecoder * dec);
gint          draws_decoder_height (DrawsDecoder * dec);
const DrawsDecoderStats *draws_decoder_stats (DrawsDecoder * dec);
/* regions of the last applied update, in order */
guint         draws_decoder_last_n_regions (DrawsDecoder * dec);
const GstVideoRectangle *draws_decoder_last_region (DrawsDecoder * dec,
    guint i, guint * type, gboolean * lossy);

/* Compares the canvas with @bgrx (x bytes ignored) inside @area (NULL =
 * all); returns the number of differing pixels. */
guint64       draws_decoder_compare (DrawsDecoder * dec, const guint8 * bgrx,
    gint stride, const GstVideoRectangle * area);
/* PSNR in dB over @area on B,G,R; G_MAXDOUBLE when identical */
gdouble       draws_decoder_psnr (DrawsDecoder * dec, const guint8 * bgrx,
    gint stride, const GstVideoRectangle * area);

G_END_DECLS
