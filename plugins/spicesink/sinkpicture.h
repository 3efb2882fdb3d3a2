/* spicesink: the last-known picture (what a joining client is sent) and
 * the refresh policy
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The picture is the list of the regions that make it, oldest first. Only
 * the render path changes it, in an edit made without the server lock
 * (sink_picture_edit_*()) and published with the lock held
 * (sink_picture_commit()); everything else reads it with the lock held.
 * It calls nobody.
 */
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

G_BEGIN_DECLS

/* how long a joining (or resynchronising) client waits for a one-region
 * picture (REFRESH update) before it gets the cached picture as it is */
#define SINK_REFRESH_WAIT_US (2 * G_TIME_SPAN_SECOND)

typedef struct _SinkPicture SinkPicture;
typedef struct _SinkPictureEdit SinkPictureEdit;

typedef struct
{
  GstVideoRectangle dest;
  guint8 type;
  gboolean lossy;               /* JPEG or flagged GST_SPICE_DRAW_FLAG_LOSSY */
  GBytes *payload;
} SinkPictureRegion;

SinkPicture *sink_picture_new (void);
void     sink_picture_free (SinkPicture * pic);

/* ---- render path (the only writer), lock not held ---- */
SinkPictureEdit *sink_picture_edit (SinkPicture * pic, gint width,
    gint height);
/* whether clients that are up to date may hold lossy pixels somewhere (a
 * lossy region, or a picture dropped since the last REFRESH) */
gboolean sink_picture_edit_has_lossy (SinkPictureEdit * e);
/* a REFRESH update starts: the picture starts afresh, exact */
void     sink_picture_edit_refresh (SinkPictureEdit * e);
void     sink_picture_edit_clear (SinkPictureEdit * e);
void     sink_picture_edit_add (SinkPictureEdit * e,
    const GstVideoRectangle * dest, guint8 type, gboolean lossy,
    GBytes * payload);
/* a copy (COPY_BITS) moved pixels: the regions no longer make the picture */
void     sink_picture_edit_copy (SinkPictureEdit * e);
/* lock held: publishes @e (and frees it) */
void     sink_picture_commit (SinkPicture * pic, SinkPictureEdit * e);
/* drops @e unpublished */
void     sink_picture_edit_discard (SinkPictureEdit * e);

/* ---- readers, lock held ---- */
guint    sink_picture_n_regions (SinkPicture * pic);
/* the payload bytes of its regions */
gsize    sink_picture_bytes (SinkPicture * pic);
const SinkPictureRegion *sink_picture_region (SinkPicture * pic, guint i);
/* one region covering the whole surface: a client's first draw would be
 * the whole picture */
gboolean sink_picture_is_one_full_region (SinkPicture * pic);
/* the regions cover the surface */
gboolean sink_picture_is_complete (SinkPicture * pic);

/* ---- refresh policy, lock held ---- */
/* whether to ask upstream for a refresh now (@force: a client waits; else
 * only to retry one outstanding) */
gboolean sink_picture_refresh_due (SinkPicture * pic, gboolean force,
    gint64 now);
/* a REFRESH update arrived, or the element stopped */
void     sink_picture_refresh_done (SinkPicture * pic);
guint64  sink_picture_refresh_requests (SinkPicture * pic);

G_END_DECLS
