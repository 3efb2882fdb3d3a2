/* gst-spice: pixel model of the SPICE test guest (spice-test-guest).
 *
 * Everything the test guest shows is a pure function of a few numbers, so a
 * test can compute the exact picture it expects from a peer:
 *
 *   surface size (w, h), seed, number of key presses, activity kind and the
 *   number of the activity frame that is currently shown.
 *
 * Pixels are 32-bit BGRx in memory (SPICE_SURFACE_FMT_32_xRGB on a
 * little-endian host): byte 0 = blue, 1 = green, 2 = red, 3 = padding, which
 * this library always writes as 0xff.  Every function takes an explicit
 * stride in bytes.
 *
 * The picture (see docs/test-guest.md for the full description):
 *
 *  - background: 8x16 "glyph" cells, light grey strokes on dark blue,
 *    pseudo-random from the seed, about 1 cell in 5 blank;
 *  - key box: 96x96 at (16,16), reddish before the first key press, then
 *    toggling reddish/greenish on every press;
 *  - activity area: see guest_render_activity_rect(); it shows the
 *    background while no activity frame is shown (idle, before the first
 *    frame, after an activity stopped), otherwise the activity frame.
 *
 * The key box and the activity area never overlap, so the full frame is
 * background, then box, then area.
 */
#ifndef GUEST_RENDER_H
#define GUEST_RENDER_H

#include <glib.h>

G_BEGIN_DECLS

#define GUEST_DEFAULT_WIDTH   1280
#define GUEST_DEFAULT_HEIGHT  800
#define GUEST_MIN_SIZE        64
#define GUEST_MAX_SIZE        8192

#define GUEST_CELL_WIDTH      8
#define GUEST_CELL_HEIGHT     16

/* colours as 0xRRGGBB */
#define GUEST_COLOR_BACKGROUND 0x1c2a66 /* dark blue */
#define GUEST_COLOR_GLYPH      0xc8c8c8 /* light grey */
#define GUEST_COLOR_BOX_OFF    0xc03030 /* reddish: initial, even press count */
#define GUEST_COLOR_BOX_ON     0x30c030 /* greenish: odd press count */

#define GUEST_KEY_BOX_X       16
#define GUEST_KEY_BOX_Y       16
#define GUEST_KEY_BOX_SIZE    96

#define GUEST_ACTIVITY_MAX_WIDTH  640
#define GUEST_ACTIVITY_MAX_HEIGHT 480
#define GUEST_ACTIVITY_MARGIN     16   /* from the right edge */

/* text activity: scrolled by this many pixels per frame */
#define GUEST_TEXT_SCROLL_PX  4

/* film activity: a photo-like picture zoomed in and out over this many
 * frames (1.0x .. 1.5x and back), with film grain of +-GUEST_FILM_GRAIN */
#define GUEST_FILM_ZOOM_PERIOD 600
#define GUEST_FILM_GRAIN       8

/* desktop-video activity: a video window of at most this size inside a
 * static text desktop */
#define GUEST_DESKTOP_VIDEO_WIDTH  480
#define GUEST_DESKTOP_VIDEO_HEIGHT 270

/* Frame stamp (guest --frame-stamp): the frame number in 32 black/white
 * cells of 16x8 px, two rows of 16 (bit i at row i / 16, column i % 16,
 * white = 1): bits 0..23 the frame number modulo 2^24, bits 24..31 a check
 * byte of it. Drawn in the top-left corner of the rectangle an activity
 * redraws every frame (guest_render_damage_rect), in the same DRAW_COPY, so
 * every path that carries the picture (draws, a stream) carries its stamp
 * with it; the cells sit on the 8-px grid of that rectangle, so every 8x8
 * block of a JPEG- or video-coded copy lies inside one cell. */
#define GUEST_STAMP_CELL_W   16
#define GUEST_STAMP_CELL_H   8
#define GUEST_STAMP_COLUMNS  16
#define GUEST_STAMP_WIDTH    (GUEST_STAMP_CELL_W * GUEST_STAMP_COLUMNS)
#define GUEST_STAMP_HEIGHT   (GUEST_STAMP_CELL_H * 2)
#define GUEST_STAMP_MODULO   (1 << 24)

/* "no activity frame shown" for guest_render_frame() */
#define GUEST_FRAME_NONE      (-1)

typedef enum {
  GUEST_ACTIVITY_IDLE = 0,
  GUEST_ACTIVITY_BUSY,
  GUEST_ACTIVITY_HEAVY,
  GUEST_ACTIVITY_TEXT,
  GUEST_ACTIVITY_VIDEO,
  GUEST_ACTIVITY_FILM,
  GUEST_ACTIVITY_DESKTOP_VIDEO,
  GUEST_ACTIVITY_N
} GuestActivity;

typedef struct {
  gint x, y, width, height;
} GuestRect;

const gchar *guest_activity_to_string (GuestActivity kind);
/* returns FALSE for an unknown name */
gboolean guest_activity_from_string (const gchar * name, GuestActivity * kind);

/* out = a ∩ b; FALSE (and out empty) if they do not overlap */
gboolean guest_rect_intersect (const GuestRect * a, const GuestRect * b,
    GuestRect * out);

/* 0xRRGGBB -> BGRx pixel value as a little-endian guint32 (x = 0xff) */
guint32 guest_pixel (guint32 rgb);

/* The key box rectangle clipped to a w x h surface; FALSE if empty. */
gboolean guest_render_key_box_rect (gint w, gint h, GuestRect * rect);

/* The activity area of a w x h surface:
 *   width  = CLAMP (w - 256, 0, 640), height = CLAMP (h - 32, 0, 480),
 *   x = w - width - 16, y = (h - height) / 2.
 * So x >= 240 and the area is always more than 32 px right of the key box.
 * FALSE if the area is empty (surface narrower than 257 or lower than 33 px:
 * activities then draw nothing). */
gboolean guest_render_activity_rect (gint w, gint h, GuestRect * rect);

/* Background of the whole surface. */
void guest_render_background (guint8 * bgrx, gint w, gint h, gint stride,
    guint32 seed);

/* Background restricted to rect (surface coordinates; bgrx is the surface
 * origin). Pixels outside rect are not touched. */
void guest_render_background_rect (guint8 * bgrx, gint stride, guint32 seed,
    const GuestRect * rect);

/* The key box (clipped to w x h). toggled = odd number of presses. */
void guest_render_key_box (guint8 * bgrx, gint w, gint h, gint stride,
    gboolean toggled);

/* One activity frame of size aw x ah into dst (area-local: dst is the
 * area's top-left pixel). Pure function of (kind, seed, frame_no, aw, ah).
 * For GUEST_ACTIVITY_IDLE nothing is written.
 *   busy:  smooth 3-sine plasma; low 3 bits of each channel XOR noise
 *   heavy: same plasma, all 8 bits XOR noise (incompressible)
 *   text:  scrolling dark-on-light text, GUEST_TEXT_SCROLL_PX per frame
 *   video: panning landscape (sky, sun, parallax hills): smooth, natural
 *   film:  slow zoom over a photo-like picture, with film grain
 *   desktop-video: a static text desktop with a video window (the video
 *          landscape at up to 480x270) in it
 */
void guest_render_activity (GuestActivity kind, guint32 seed, guint frame_no,
    guint8 * dst, gint aw, gint ah, gint stride);

/* The complete picture the guest shows for w x h, seed, key_presses presses,
 * and activity kind showing frame frame_no (GUEST_FRAME_NONE or kind ==
 * GUEST_ACTIVITY_IDLE: the area shows the background). */
void guest_render_frame (guint8 * bgrx, gint w, gint h, gint stride,
    guint32 seed, guint key_presses, GuestActivity kind, gint64 frame_no);

/* The same with the frame stamp drawn on the activity frame when stamp is
 * TRUE (what the guest shows with --frame-stamp). */
void guest_render_frame_full (guint8 * bgrx, gint w, gint h, gint stride,
    guint32 seed, guint key_presses, GuestActivity kind, gint64 frame_no,
    gboolean stamp);

/* Several heads (--heads, --displays): head @index's mark, the bottom
 * GUEST_HEAD_MARK_HEIGHT rows of its @head_w x @h rectangle at (@x0, 0) of
 * @bgrx: a bar in the head's colour (guest_render_head_color) with
 * index + 1 white GUEST_HEAD_MARK_CELL x 4 blocks in it, so a picture and a
 * person tell which head is where. Nothing else the guest draws reaches
 * those rows (the key box and the activity area end at least 16 rows above
 * the bottom). */
#define GUEST_HEAD_MARK_HEIGHT 8
#define GUEST_HEAD_MARK_CELL   8
guint32 guest_render_head_color (guint index);
void guest_render_head_mark (guint8 * bgrx, gint stride, gint x0, gint head_w,
    gint h, guint index);

/* What the guest shows with --heads @heads (one surface @heads x @head_w
 * wide, heads side by side, each with its mark when @heads > 1). */
void guest_render_heads_frame (guint8 * bgrx, gint head_w, gint h,
    gint stride, guint heads, guint32 seed, guint key_presses,
    GuestActivity kind, gint64 frame_no, gboolean stamp);

/* What display @display of --displays @displays shows: display 0 the usual
 * picture, display i > 0 that of seed + i without activity (the same key
 * box); each with its mark when @displays > 1. */
void guest_render_display_frame (guint8 * bgrx, gint w, gint h, gint stride,
    guint display, guint displays, guint32 seed, guint key_presses,
    GuestActivity kind, gint64 frame_no, gboolean stamp);

/* The part of the activity area (area-local coordinates) that activity kind
 * redraws on every frame after frame 0: the whole area, or for
 * desktop-video the video window. FALSE if the area is empty. */
gboolean guest_render_damage_rect (GuestActivity kind, gint aw, gint ah,
    GuestRect * rect);

/* Where the frame stamp of kind goes on a w x h surface (surface
 * coordinates: the top-left GUEST_STAMP_WIDTH x GUEST_STAMP_HEIGHT of the
 * damage rectangle). FALSE if there is no room (damage rectangle narrower
 * than the stamp or not higher than twice its height): no stamp then. */
gboolean guest_render_stamp_rect (GuestActivity kind, gint w, gint h,
    GuestRect * rect);

/* Draw the stamp of frame_no at dst (its top-left pixel). */
void guest_render_stamp (guint8 * dst, gint stride, gint64 frame_no);

/* Read a stamp at src (its top-left pixel): each cell's middle 8x4 pixels
 * averaged, white above mid-grey. Returns the frame number modulo
 * GUEST_STAMP_MODULO, or -1 when the check byte does not match (no stamp,
 * a picture half way through an update, a codec that blurred it away). */
gint64 guest_read_stamp (const guint8 * src, gint stride);

/* The rectangles a quality measurement compares (surface coordinates):
 * picture = the damage rectangle without the stamp's rows; text = a static
 * strip of text of the same height just left of it (the background left of
 * the area, or for desktop-video the desktop left of the window), where a
 * stream's fringe would show; text->width is 0 when there is no room.
 * FALSE if the area is empty. */
gboolean guest_render_quality_rects (GuestActivity kind, gint w, gint h,
    GuestRect * picture, GuestRect * text);

#define GUEST_QUALITY_TEXT_WIDTH 64

/* Convenience: a newly allocated w x h frame with stride w * 4. */
guint8 *guest_render_frame_new (gint w, gint h, guint32 seed,
    guint key_presses, GuestActivity kind, gint64 frame_no);

G_END_DECLS

#endif /* GUEST_RENDER_H */
