/* spice-test-guest: a small SPICE server that plays a VM, for gst-spice tests
 * and benchmarks.
 *
 * It is built on libspice-server (0.15) the way a hypervisor uses it: a QXL
 * device whose commands are DRAW_COPYs of bitmaps the "guest" drew, a
 * keyboard, a mouse (server mode) and a tablet (client mode), and a cursor.
 * What it shows is deterministic from a seed, so tests compute the expected
 * pixels with the guest_render library (guest-render.h):
 *
 *   - a 1280x800 (--width/--height) 32-bit xRGB primary surface with a
 *     text-like background;
 *   - a 96x96 key box at (16,16) that toggles reddish/greenish on every key
 *     press and is flushed alone and at once (one DRAW_COPY of the box from
 *     the keyboard callback);
 *   - a 640x480 activity area near the right edge, one DRAW_COPY of the whole
 *     area per frame at --fps (desktop-video: of its video window): idle,
 *     busy, heavy, text, video, film or desktop-video; with --frame-stamp
 *     each frame carries its number in a corner of that DRAW_COPY, and
 *     --frame-times FILE logs when each frame was queued.
 *
 * Example:
 *   spice-test-guest --port 5900 --activity busy &
 *   spicy-screenshot -h 127.0.0.1 -p 5900 -o x.ppm
 *
 * --tls-port N --x509-dir DIR adds a TLS port with qemu's file names in
 * DIR: ca-cert.pem, server-cert.pem, server-key.pem.
 *
 * stdout: one machine-readable line per event, flushed at once:
 *   listening port=N                 ready for clients
 *   key down 0xNN | key up 0xNN      keyboard scancode, set 1; E0-prefixed keys
 *                                    as 0x100|sc (Right Ctrl = 0x11d), E1 keys
 *                                    (Pause) as 0x200|sc of the last byte
 *   box N                            key box redrawn after the N-th press
 *   leds M                           the lock LEDs changed (1 scroll, 2 num,
 *                                    4 caps): a Caps/Num/Scroll Lock press
 *                                    (set a moment later, as a guest OS
 *                                    does), or the `leds` command
 *   mouse motion DX DY buttons=M     relative motion (server mouse mode)
 *   mouse position X Y buttons=M     absolute position (client mouse mode)
 *   mouse buttons M                  button state changed (1 left, 2 right,
 *                                    4 middle; spice-server's mapping)
 *   mouse wheel DZ buttons=M         wheel (DZ < 0: up); deltas of 0 are
 *                                    not logged
 *   tablet size W H                  spice-server set the tablet's extent
 *   channel up NAME ID               a channel completed its link
 *   channel down NAME ID             a linked channel closed
 *   client connected                 main channel linked (after auth)
 *   client disconnected              main channel closed
 *   connection dropped               a connection closed before its link
 *                                    completed (e.g. wrong password)
 *   activity NAME                    activity started (frame 0 drawn) / idle
 *   activity-deferred NAME           waiting for a display channel first
 *   frozen NAME N                    `freeze`: the area keeps frame N
 *   frame NAME N                     frame N drawn (`step`, or --log-frames)
 *   resized W H                      new primary surface drawn
 *   displays N of M                  --displays M --agent: a client's layout
 *                                    left N displays with a surface
 *   agent ...                        --agent: see guest-agent.c
 *   dumped PATH                      framebuffer written
 *   cursor NAME ...                  cursor command issued (set/move/hide)
 *   error TEXT                       a command failed
 *   quitting                         shutdown started
 *
 * stdin: one command per line (see docs/test-guest.md):
 *   key [CODE] | leds M | activity NAME | freeze | step | resize W H |
 *   dump PATH | cursor move X Y | cursor hide | cursor show | audio ... |
 *   agent xfer-answer STATUS | quit
 * EOF on stdin keeps the guest running, unless --exit-on-eof.
 */
#include "config.h"

#include "guest-agent.h"
#include "guest-audio.h"
#include "guest-core.h"
#include "guest-render.h"

#include <errno.h>
#include <glib-unix.h>
#include <gst/spice/gstspiceblit.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <spice.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_QUEUED_DRAWS 32     /* like the QXL command ring */
#define CURSOR_SIZE 32
#define MAX_HEADS 8             /* --heads and --displays */

typedef enum
{
  GUEST_CMD_DRAW = 0x44524157,
  GUEST_CMD_CURSOR = 0x43555253,
} GuestCmdKind;

typedef struct
{
  guint32 kind;
  QXLDrawable drawable;
  QXLImage image;
  guint8 *pixels;
} GuestDrawCmd;

typedef struct
{
  guint32 kind;
  QXLCursorCmd cmd;
  QXLCursor *shape;
} GuestCursorCmd;

/* --displays N: QXL device i > 0 (display channel i), with its own primary
 * surface; device 0 is the Guest's own. qxl comes first: the QXL callbacks
 * find the device from their QXLInstance. */
typedef struct
{
  QXLInstance qxl;
  GAsyncQueue *cmd_queue;
  gint w, h, stride;
  guint8 *fb;
  guint8 *primary_mem;
  gboolean primary_created;
} GuestDisplay;

typedef struct
{
  /* options */
  gint port;
  gint tls_port;
  gchar *x509_dir;
  gchar *addr;
  gchar *password;
  gchar *streaming_video;
  gchar *video_codecs;
  gchar *image_compression;
  gchar *jpeg_wan;
  gchar *seed_str;
  gint fps;
  gchar *activity_name;
  gboolean activity_after_connect;
  gboolean allow_mc;
  gboolean exit_on_eof;
  gboolean log_frames;
  gboolean frame_stamp;
  gchar *frame_times_path;
  gint width, height;
  gchar *audio_mode;
  GuestAudio *audio;
  gboolean agent_enabled;
  gchar *agent_xfer_dir;
  gboolean agent_mouse;
  GuestAgent *agent;
  gint heads;                   /* --heads: monitors on the one surface */
  gint max_heads;               /* --heads as given: the most there are */
  gint displays;                /* --displays: QXL devices */
  gint displays_on;             /* of them, those with a surface: all, or
                                 * as many as a client's layout enables */
  gint head_w;                  /* the width of one head */
  GuestDisplay extra[MAX_HEADS - 1];    /* displays 1..displays-1 */
  GPtrArray *monitors_configs;  /* QXLMonitorsConfig * read by the worker */

  guint32 seed;
  GMainLoop *loop;
  SpiceServer *server;
  QXLInstance qxl;
  SpiceKbdInstance kbd;
  SpiceMouseInstance mouse;
  SpiceTabletInstance tablet;
  GAsyncQueue *cmd_queue;       /* QXLCommandExt *, popped by the worker */
  GAsyncQueue *cursor_queue;
  guint32 image_unique;

  /* the guest's framebuffer (what it drew) and the primary surface memory
   * (handed to spice-server, which renders into it: never touched after
   * creation) */
  gint w, h, stride;
  guint8 *fb;
  guint8 *primary_mem;
  gboolean primary_created;

  /* keyboard */
  guint key_presses;
  guint8 keys_down[1024 / 8];
  guint kbd_prefix;
  gint e1_left;
  guint8 leds;                  /* SPICE_KEYBOARD_MODIFIER_FLAGS_* */
  guint8 leds_toggled;          /* lock presses not applied yet */
  guint leds_source;

  /* activity */
  GuestActivity activity;
  GuestActivity pending_activity;
  gboolean activity_pending;
  gboolean display_seen;
  gint64 frame_no;              /* frame shown in the area, -1: none */
  guint frame_source;
  gint64 next_frame_us;
  gboolean frozen;
  guint frames_skipped;
  FILE *frame_times;            /* --frame-times: "NAME N MONOTONIC_US" */

  /* pointer */
  guint32 buttons;              /* 1 left, 2 right, 4 middle */
  gint cursor_x, cursor_y;
  gboolean cursor_visible;

  guint stdin_watch;
  GIOChannel *stdin_channel;
  gboolean quitting;
} Guest;

static Guest guest;
static GMutex log_lock;

static void
guest_log (const gchar * fmt, ...)
G_GNUC_PRINTF (1, 2);

     static void guest_log (const gchar * fmt, ...)
{
  va_list ap;

  g_mutex_lock (&log_lock);
  va_start (ap, fmt);
  vfprintf (stdout, fmt, ap);
  va_end (ap);
  fputc ('\n', stdout);
  if (fflush (stdout) != 0 && errno == EPIPE) {
    /* SIGPIPE is ignored for spice-server's sockets (main()); a closed
     * stdout pipe (launcher gone) still ends us like any CLI tool */
    signal (SIGPIPE, SIG_DFL);
    raise (SIGPIPE);
  }
  g_mutex_unlock (&log_lock);
}

/* ---- QXL command queues ------------------------------------------------ */

static void
free_command (guint32 * kind)
{
  if (*kind == GUEST_CMD_DRAW) {
    GuestDrawCmd *c = (GuestDrawCmd *) kind;
    g_free (c->pixels);
    g_free (c);
  } else if (*kind == GUEST_CMD_CURSOR) {
    GuestCursorCmd *c = (GuestCursorCmd *) kind;
    g_free (c->shape);
    g_free (c);
  } else {
    g_warning ("release of an unknown resource %p", kind);
  }
}

static void
free_queued (gpointer data)
{
  QXLCommandExt *ext = data;
  QXLReleaseInfo *ri = (QXLReleaseInfo *) (uintptr_t) ext->cmd.data;

  /* QXLDrawable and QXLCursorCmd both start with their release info */
  free_command ((guint32 *) (uintptr_t) ri->id);
  g_free (ext);
}

static void
drain_queue (GAsyncQueue * q)
{
  gpointer item;
  while ((item = g_async_queue_try_pop (q)) != NULL)
    free_queued (item);
}

static void
push_command (QXLInstance * qxl, GAsyncQueue * q, QXLPHYSICAL data,
    guint32 type)
{
  QXLCommandExt *ext = g_new0 (QXLCommandExt, 1);

  ext->cmd.data = data;
  ext->cmd.type = type;
  ext->group_id = 0;
  ext->flags = 0;
  g_async_queue_push (q, ext);
  spice_qxl_wakeup (qxl);
}

/* A DRAW_COPY of rect r of framebuffer fb on QXL device qxl; the command
 * owns a copy of the pixels, freed in release_resource. Main thread. */
static void
push_draw_on (Guest * g, QXLInstance * qxl, GAsyncQueue * q, gboolean created,
    const guint8 * fb, gint stride, const GuestRect * r)
{
  GuestDrawCmd *c;
  QXLDrawable *d;
  QXLImage *img;

  if (!created || r->width <= 0 || r->height <= 0)
    return;

  c = g_new0 (GuestDrawCmd, 1);
  c->kind = GUEST_CMD_DRAW;
  c->pixels = g_malloc ((gsize) r->width * r->height * 4);
  gst_spice_blit_bgrx (c->pixels, (gsize) r->width * 4, 0, 0, fb, stride,
      r->x, r->y, r->width, r->height);

  img = &c->image;
  img->descriptor.id = ((guint64)++ g->image_unique << 32) |
      QXL_IMAGE_GROUP_DEVICE;
  img->descriptor.type = SPICE_IMAGE_TYPE_BITMAP;
  img->descriptor.flags = 0;
  img->descriptor.width = r->width;
  img->descriptor.height = r->height;
  img->bitmap.format = SPICE_BITMAP_FMT_32BIT;
  img->bitmap.flags = QXL_BITMAP_DIRECT | QXL_BITMAP_TOP_DOWN;
  img->bitmap.x = r->width;
  img->bitmap.y = r->height;
  img->bitmap.stride = r->width * 4;
  img->bitmap.palette = 0;
  img->bitmap.data = (QXLPHYSICAL) (uintptr_t) c->pixels;

  d = &c->drawable;
  d->release_info.id = (uint64_t) (uintptr_t) c;
  d->surface_id = 0;
  d->effect = QXL_EFFECT_OPAQUE;
  d->type = QXL_DRAW_COPY;
  d->self_bitmap = 0;
  d->bbox.left = r->x;
  d->bbox.top = r->y;
  d->bbox.right = r->x + r->width;
  d->bbox.bottom = r->y + r->height;
  d->clip.type = SPICE_CLIP_TYPE_NONE;
  d->mm_time = 0;               /* spice-server stamps it */
  d->surfaces_dest[0] = d->surfaces_dest[1] = d->surfaces_dest[2] = -1;
  d->u.copy.src_bitmap = (QXLPHYSICAL) (uintptr_t) img;
  d->u.copy.src_area.left = 0;
  d->u.copy.src_area.top = 0;
  d->u.copy.src_area.right = r->width;
  d->u.copy.src_area.bottom = r->height;
  d->u.copy.rop_descriptor = SPICE_ROPD_OP_PUT;
  d->u.copy.scale_mode = 0;
  d->u.copy.mask.bitmap = 0;

  push_command (qxl, q, (QXLPHYSICAL) (uintptr_t) d, QXL_CMD_DRAW);
}

/* A DRAW_COPY of rect r of the guest's framebuffer (device 0). Main thread. */
static void
push_draw (Guest * g, const GuestRect * r)
{
  push_draw_on (g, &g->qxl, g->cmd_queue, g->primary_created, g->fb,
      g->stride, r);
}

/* ---- cursor ------------------------------------------------------------- */

/* 32x32 ARGB arrow, hotspot (0,0): white body, black outline. */
static QXLCursor *
make_cursor_shape (void)
{
  gsize size = CURSOR_SIZE * CURSOR_SIZE * 4;
  QXLCursor *cur = g_malloc0 (sizeof (QXLCursor) + size);
  guint8 *px = (guint8 *) cur + sizeof (QXLCursor);
  gint x, y;

  cur->header.unique = 0;
  cur->header.type = SPICE_CURSOR_TYPE_ALPHA;
  cur->header.width = CURSOR_SIZE;
  cur->header.height = CURSOR_SIZE;
  cur->header.hot_spot_x = 0;
  cur->header.hot_spot_y = 0;
  cur->data_size = size;
  cur->chunk.data_size = size;
  cur->chunk.prev_chunk = 0;
  cur->chunk.next_chunk = 0;

#define INSIDE(X, Y) ((Y) >= 0 && (Y) < 20 && (X) >= 0 && \
      ((Y) < 14 ? (X) <= (Y) * 3 / 4 : \
       ((X) >= 3 && (X) <= 6 && (Y) - 14 <= (X))))
  for (y = 0; y < CURSOR_SIZE; y++) {
    for (x = 0; x < CURSOR_SIZE; x++) {
      guint32 v = 0;
      if (INSIDE (x, y)) {
        gboolean edge = !INSIDE (x - 1, y) || !INSIDE (x + 1, y) ||
            !INSIDE (x, y - 1) || !INSIDE (x, y + 1);
        v = edge ? 0xff000000U : 0xffffffffU;
      }
      v = GUINT32_TO_LE (v);
      memcpy (px + (y * CURSOR_SIZE + x) * 4, &v, 4);
    }
  }
#undef INSIDE
  return cur;
}

static GuestCursorCmd *
cursor_cmd_new (guint8 type)
{
  GuestCursorCmd *c = g_new0 (GuestCursorCmd, 1);
  c->kind = GUEST_CMD_CURSOR;
  c->cmd.release_info.id = (uint64_t) (uintptr_t) c;
  c->cmd.type = type;
  return c;
}

static void
push_cursor_set (Guest * g)
{
  GuestCursorCmd *c = cursor_cmd_new (QXL_CURSOR_SET);

  c->shape = make_cursor_shape ();
  c->cmd.u.set.position.x = g->cursor_x;
  c->cmd.u.set.position.y = g->cursor_y;
  c->cmd.u.set.visible = 1;
  c->cmd.u.set.shape = (QXLPHYSICAL) (uintptr_t) c->shape;
  g->cursor_visible = TRUE;
  push_command (&g->qxl, g->cursor_queue, (QXLPHYSICAL) (uintptr_t) & c->cmd,
      QXL_CMD_CURSOR);
}

static void
push_cursor_move (Guest * g, gint x, gint y)
{
  GuestCursorCmd *c;

  g->cursor_x = CLAMP (x, 0, g->w - 1);
  g->cursor_y = CLAMP (y, 0, g->h - 1);
  if (!g->cursor_visible)
    return;
  c = cursor_cmd_new (QXL_CURSOR_MOVE);
  c->cmd.u.position.x = g->cursor_x;
  c->cmd.u.position.y = g->cursor_y;
  push_command (&g->qxl, g->cursor_queue, (QXLPHYSICAL) (uintptr_t) & c->cmd,
      QXL_CMD_CURSOR);
}

static void
push_cursor_hide (Guest * g)
{
  GuestCursorCmd *c = cursor_cmd_new (QXL_CURSOR_HIDE);
  g->cursor_visible = FALSE;
  push_command (&g->qxl, g->cursor_queue, (QXLPHYSICAL) (uintptr_t) & c->cmd,
      QXL_CMD_CURSOR);
}

/* ---- QXL interface (get_command etc. run on spice-server's worker) ------ */

static void
qxl_attached_worker (QXLInstance * qin)
{
  QXLDevMemSlot slot = {
    .slot_group_id = 0,
    .slot_id = 0,
    .generation = 0,
    .virt_start = 0,
    .virt_end = ~(uintptr_t) 0,
    .addr_delta = 0,
    .qxl_ram_size = ~(uint32_t) 0,
  };
  /* one slot spanning the address space: QXLPHYSICAL is a plain pointer */
  spice_qxl_add_memslot (qin, &slot);
}

static void
qxl_set_compression_level (QXLInstance * qin, int level)
{
}

static void
qxl_get_init_info (QXLInstance * qin, QXLDevInitInfo * info)
{
  memset (info, 0, sizeof (*info));
  info->num_memslots_groups = 1;
  info->num_memslots = 1;
  info->memslot_gen_bits = 1;
  info->memslot_id_bits = 1;
  info->qxl_ram_size = ~(uint32_t) 0;
  info->internal_groupslot_id = 0;
  info->n_surfaces = 1;
}

static int
pop_command (GAsyncQueue * q, struct QXLCommandExt *cmd)
{
  QXLCommandExt *ext = g_async_queue_try_pop (q);
  if (ext == NULL)
    return 0;
  *cmd = *ext;
  g_free (ext);
  return 1;
}

/* the command queue of device qin: the guest's own, or a --displays one */
static GAsyncQueue *
device_queue (QXLInstance * qin)
{
  if (qin == &guest.qxl)
    return guest.cmd_queue;
  return ((GuestDisplay *) qin)->cmd_queue;
}

static int
qxl_get_command (QXLInstance * qin, struct QXLCommandExt *cmd)
{
  return pop_command (device_queue (qin), cmd);
}

static int
qxl_req_cmd_notification (QXLInstance * qin)
{
  /* TRUE: empty, we will call spice_qxl_wakeup() after the next push */
  return g_async_queue_length (device_queue (qin)) <= 0;
}

static void
qxl_release_resource (QXLInstance * qin, struct QXLReleaseInfoExt ext)
{
  free_command ((guint32 *) (uintptr_t) ext.info->id);
}

/* the cursor lives on device 0; the other devices have none */
static int
qxl_get_cursor_command (QXLInstance * qin, struct QXLCommandExt *cmd)
{
  if (qin != &guest.qxl)
    return 0;
  return pop_command (guest.cursor_queue, cmd);
}

static int
qxl_req_cursor_notification (QXLInstance * qin)
{
  if (qin != &guest.qxl)
    return 1;
  return g_async_queue_length (guest.cursor_queue) <= 0;
}

static void
qxl_notify_update (QXLInstance * qin, uint32_t update_id)
{
}

static int
qxl_flush_resources (QXLInstance * qin)
{
  return 0;
}

static void
qxl_async_complete (QXLInstance * qin, uint64_t cookie)
{
}

static void
qxl_update_area_complete (QXLInstance * qin, uint32_t surface_id,
    struct QXLRect *updated_rects, uint32_t num_updated_rects)
{
}

static void
qxl_set_client_capabilities (QXLInstance * qin, uint8_t client_present,
    uint8_t caps[SPICE_CAPABILITIES_SIZE])
{
}

static int
qxl_client_monitors_config (QXLInstance * qin,
    VDAgentMonitorsConfig * monitors_config)
{
  return 0;                     /* not supported: one fixed head */
}

static const QXLInterface qxl_iface = {
  .base = {
        .type = SPICE_INTERFACE_QXL,
        .description = "gst-spice test guest QXL",
        .major_version = SPICE_INTERFACE_QXL_MAJOR,
        .minor_version = SPICE_INTERFACE_QXL_MINOR,
      },
  .attached_worker = qxl_attached_worker,
  .set_compression_level = qxl_set_compression_level,
  .get_init_info = qxl_get_init_info,
  .get_command = qxl_get_command,
  .req_cmd_notification = qxl_req_cmd_notification,
  .release_resource = qxl_release_resource,
  .get_cursor_command = qxl_get_cursor_command,
  .req_cursor_notification = qxl_req_cursor_notification,
  .notify_update = qxl_notify_update,
  .flush_resources = qxl_flush_resources,
  .async_complete = qxl_async_complete,
  .update_area_complete = qxl_update_area_complete,
  .set_client_capabilities = qxl_set_client_capabilities,
  .client_monitors_config = qxl_client_monitors_config,
};

/* ---- surface -------------------------------------------------------------- */

/* Creates the primary surface of device qxl from fb; *mem becomes the
 * surface memory. Main thread. */
static void
create_primary_on (QXLInstance * qxl, guint8 ** mem, const guint8 * fb,
    gint w, gint h, gint stride)
{
  QXLDevSurfaceCreate s;
  gsize size = (gsize) stride * h;

  g_free (*mem);
  *mem = g_malloc (size);
  /* the device starts with what the guest drew: KEEP_DATA keeps it */
  memcpy (*mem, fb, size);

  memset (&s, 0, sizeof (s));
  s.width = w;
  s.height = h;
  s.stride = stride;
  s.format = SPICE_SURFACE_FMT_32_xRGB;
  s.position = 0;
  s.mouse_mode = TRUE;          /* hardware cursor: client mouse allowed */
  s.flags = QXL_SURF_FLAG_KEEP_DATA;
  s.type = QXL_SURF_TYPE_PRIMARY;
  s.mem = (uint64_t) (uintptr_t) * mem;
  s.group_id = 0;
  spice_qxl_create_primary_surface (qxl, 0, &s);
}

/* --heads N: tells spice-server the monitors on the primary surface (heads
 * side by side, head_w x h each), which it sends its clients as
 * SPICE_MSG_DISPLAY_MONITORS_CONFIG; the config stays readable until the
 * end, as a driver's would. Main thread. */
static void
send_monitors_config (Guest * g)
{
  QXLMonitorsConfig *mc;
  GString *desc;
  gint i;

  if (g->max_heads <= 1)
    return;
  mc = g_malloc0 (sizeof (QXLMonitorsConfig) + g->heads * sizeof (QXLHead));
  mc->count = g->heads;
  mc->max_allowed = g->max_heads;
  desc = g_string_new (NULL);
  for (i = 0; i < g->heads; i++) {
    mc->heads[i].id = i;
    mc->heads[i].surface_id = 0;
    mc->heads[i].width = g->head_w;
    mc->heads[i].height = g->h;
    mc->heads[i].x = i * g->head_w;
    mc->heads[i].y = 0;
    g_string_append_printf (desc, " %d@%d,0 %dx%d", i, i * g->head_w,
        g->head_w, g->h);
  }
  g_ptr_array_add (g->monitors_configs, mc);
  spice_qxl_monitors_config_async (&g->qxl, (QXLPHYSICAL) (uintptr_t) mc, 0, 0);
  guest_log ("monitors %d max %d:%s", g->heads, g->max_heads, desc->str);
  g_string_free (desc, TRUE);
}

static void
create_primary (Guest * g)
{
  create_primary_on (&g->qxl, &g->primary_mem, g->fb, g->w, g->h, g->stride);
  g->primary_created = TRUE;
  send_monitors_config (g);
}

/* display i > 0 of --displays: the picture of seed + i without activity,
 * the same key box, its head mark */
static void
redraw_display (Guest * g, gint i)
{
  GuestDisplay *d = &g->extra[i - 1];

  guest_render_display_frame (d->fb, d->w, d->h, d->stride, i, g->displays,
      g->seed, g->key_presses, GUEST_ACTIVITY_IDLE, GUEST_FRAME_NONE, FALSE);
}

static void
redraw_all (Guest * g)
{
  gint i;

  if (g->displays > 1)
    guest_render_display_frame (g->fb, g->w, g->h, g->stride, 0, g->displays,
        g->seed, g->key_presses, g->activity, g->frame_no, g->frame_stamp);
  else
    guest_render_heads_frame (g->fb, g->head_w, g->h, g->stride, g->heads,
        g->seed, g->key_presses, g->activity, g->frame_no, g->frame_stamp);
  for (i = 1; i < g->displays; i++)
    redraw_display (g, i);
}

/* (Re)creates the surfaces of displays 1..displays_on-1 at the guest's
 * head size, drawn completely; displays from displays_on on have none (a
 * head the client's layout disabled, as a guest OS turns that output off).
 * Main thread. */
static void
create_displays (Guest * g)
{
  gint i;

  for (i = 1; i < g->displays; i++) {
    GuestDisplay *d = &g->extra[i - 1];

    if (d->primary_created) {
      drain_queue (d->cmd_queue);
      spice_qxl_destroy_primary_surface (&d->qxl, 0);
      d->primary_created = FALSE;
    }
    if (i >= g->displays_on)
      continue;
    d->w = g->head_w;
    d->h = g->h;
    d->stride = d->w * 4;
    g_free (d->fb);
    d->fb = g_malloc ((gsize) d->stride * d->h);
    redraw_display (g, i);
    create_primary_on (&d->qxl, &d->primary_mem, d->fb, d->w, d->h, d->stride);
    d->primary_created = TRUE;
  }
}

/* ---- activity ----------------------------------------------------------- */

static gboolean frame_tick (gpointer data);

static void
stop_frame_timer (Guest * g)
{
  if (g->frame_source) {
    g_source_remove (g->frame_source);
    g->frame_source = 0;
  }
}

static void
schedule_frame (Guest * g)
{
  gint64 now = g_get_monotonic_time ();
  gint64 period = G_USEC_PER_SEC / g->fps;
  gint64 delay;

  g->next_frame_us += period;
  if (g->next_frame_us < now)   /* late: do not burst to catch up */
    g->next_frame_us = now;
  delay = (g->next_frame_us - now + 999) / 1000;
  g->frame_source = g_timeout_add ((guint) delay, frame_tick, g);
}

/* Draws frame g->frame_no of the activity: the whole area when whole (the
 * first frame), else only what the activity changes every frame (its damage
 * rectangle), with the frame stamp in it (--frame-stamp), as one DRAW_COPY.
 * Main thread. */
static void
draw_activity_frame (Guest * g, gboolean whole)
{
  GuestRect a, d, st;

  if (!guest_render_activity_rect (g->w, g->h, &a))
    return;
  guest_render_activity (g->activity, g->seed, (guint) g->frame_no,
      g->fb + (gsize) a.y * g->stride + (gsize) a.x * 4, a.width, a.height,
      g->stride);
  if (g->frame_stamp && guest_render_stamp_rect (g->activity, g->w, g->h, &st))
    guest_render_stamp (g->fb + (gsize) st.y * g->stride + (gsize) st.x * 4,
        g->stride, g->frame_no);
  /* the time is taken before the draw is queued: a client cannot show the
   * frame earlier than that */
  if (g->frame_times) {
    fprintf (g->frame_times, "%s %" G_GINT64_FORMAT " %" G_GINT64_FORMAT "\n",
        guest_activity_to_string (g->activity), g->frame_no,
        g_get_monotonic_time ());
    fflush (g->frame_times);
  }
  if (!whole && guest_render_damage_rect (g->activity, a.width, a.height, &d)) {
    d.x += a.x;
    d.y += a.y;
    push_draw (g, &d);
  } else {
    push_draw (g, &a);
  }
  if (g->log_frames)
    guest_log ("frame %s %" G_GINT64_FORMAT,
        guest_activity_to_string (g->activity), g->frame_no);
}

static gboolean
frame_tick (gpointer data)
{
  Guest *g = data;

  g->frame_source = 0;
  if (g->activity == GUEST_ACTIVITY_IDLE || g->frozen)
    return G_SOURCE_REMOVE;
  /* a real device has a ring of fixed size: when spice-server does not keep
   * up, this frame is not drawn (the frame number only counts drawn ones) */
  if (g_async_queue_length (g->cmd_queue) >= MAX_QUEUED_DRAWS) {
    g->frames_skipped++;
  } else {
    g->frame_no++;
    draw_activity_frame (g, FALSE);
  }
  schedule_frame (g);
  return G_SOURCE_REMOVE;
}

static void
start_activity (Guest * g, GuestActivity kind)
{
  stop_frame_timer (g);
  g->frozen = FALSE;
  g->activity_pending = FALSE;

  if (kind == GUEST_ACTIVITY_IDLE) {
    GuestRect a;
    if (g->activity != GUEST_ACTIVITY_IDLE && g->frame_no >= 0 &&
        guest_render_activity_rect (g->w, g->h, &a)) {
      /* the "window" closes: the area shows the background again */
      guest_render_background_rect (g->fb, g->stride, g->seed, &a);
      push_draw (g, &a);
    }
    g->activity = GUEST_ACTIVITY_IDLE;
    g->frame_no = GUEST_FRAME_NONE;
    guest_log ("activity idle");
    return;
  }

  if (g->activity_after_connect && !g->display_seen) {
    g->pending_activity = kind;
    g->activity_pending = TRUE;
    guest_log ("activity-deferred %s", guest_activity_to_string (kind));
    return;
  }

  g->activity = kind;
  g->frame_no = 0;
  draw_activity_frame (g, TRUE);
  guest_log ("activity %s", guest_activity_to_string (kind));
  if (g->fps > 0) {
    g->next_frame_us = g_get_monotonic_time ();
    schedule_frame (g);
  }
}

/* ---- keyboard ------------------------------------------------------------- */

static void
toggle_box (Guest * g)
{
  GuestRect r;

  gint i;

  g->key_presses++;
  guest_audio_burst (g->audio, g->key_presses);
  guest_render_key_box (g->fb, g->w, g->h, g->stride, g->key_presses & 1);
  if (guest_render_key_box_rect (g->w, g->h, &r))
    push_draw (g, &r);
  /* --displays: every display shows the key box */
  for (i = 1; i < g->displays; i++) {
    GuestDisplay *d = &g->extra[i - 1];

    guest_render_key_box (d->fb, d->w, d->h, d->stride, g->key_presses & 1);
    if (guest_render_key_box_rect (d->w, d->h, &r))
      push_draw_on (g, &d->qxl, d->cmd_queue, d->primary_created, d->fb,
          d->stride, &r);
  }
  guest_log ("box %u", g->key_presses);
}

/* main thread: the keyboard's LEDs are @leds now; spice-server tells its
 * clients (KEY_MODIFIERS) */
static void
set_leds (Guest * g, guint8 leds)
{
  if (leds == g->leds)
    return;
  g->leds = leds;
  spice_server_kbd_leds (&g->kbd, g->leds);
  guest_log ("leds %u", g->leds);
}

/* main thread, after the lock keys' scancodes: like a guest OS, which
 * sets the keyboard's LEDs after it handled the key (and not inside
 * spice-server's push_scan_freg: spice-server toggles its own copy of
 * the locks after pushing a client's KEY_MODIFIERS scancodes, and a
 * kbd_leds from inside the push would be toggled back) */
static gboolean
apply_lock_keys (gpointer data)
{
  Guest *g = data;

  g->leds_source = 0;
  set_leds (g, g->leds ^ g->leds_toggled);
  g->leds_toggled = 0;
  return G_SOURCE_REMOVE;
}

static void
handle_key (Guest * g, guint code, gboolean down)
{
  guint idx = code & 0x3ff;
  guint8 bit = 1 << (idx & 7);

  guest_log ("key %s 0x%x", down ? "down" : "up", code);
  if (down) {
    /* a typematic repeat (make without break) is not a new press */
    if (!(g->keys_down[idx >> 3] & bit)) {
      guint8 led = code == 0x3a ? SPICE_KEYBOARD_MODIFIER_FLAGS_CAPS_LOCK :
          code == 0x45 ? SPICE_KEYBOARD_MODIFIER_FLAGS_NUM_LOCK :
          code == 0x46 ? SPICE_KEYBOARD_MODIFIER_FLAGS_SCROLL_LOCK : 0;
      g->keys_down[idx >> 3] |= bit;
      toggle_box (g);
      if (led) {
        /* like a guest OS: lock keys switch the keyboard LEDs */
        g->leds_toggled ^= led;
        if (!g->leds_source)
          g->leds_source = g_idle_add (apply_lock_keys, g);
      }
    }
  } else {
    g->keys_down[idx >> 3] &= ~bit;
  }
}

static void
kbd_byte (Guest * g, guint8 b)
{
  if (g->e1_left > 0) {
    /* E1 xx yy: Pause; report the last byte */
    g->e1_left--;
    if (g->e1_left == 0)
      handle_key (g, 0x200 | (b & 0x7f), !(b & 0x80));
    return;
  }
  if (b == 0xe0) {
    g->kbd_prefix = 0x100;
    return;
  }
  if (b == 0xe1) {
    g->e1_left = 2;
    return;
  }
  handle_key (g, g->kbd_prefix | (b & 0x7f), !(b & 0x80));
  g->kbd_prefix = 0;
}

static void
kbd_push_scan_freg (SpiceKbdInstance * sin, uint8_t frag)
{
  kbd_byte (&guest, frag);
}

static uint8_t
kbd_get_leds (SpiceKbdInstance * sin)
{
  return guest.leds;
}

static const SpiceKbdInterface kbd_iface = {
  .base = {
        .type = SPICE_INTERFACE_KEYBOARD,
        .description = "gst-spice test guest keyboard",
        .major_version = SPICE_INTERFACE_KEYBOARD_MAJOR,
        .minor_version = SPICE_INTERFACE_KEYBOARD_MINOR,
      },
  .push_scan_freg = kbd_push_scan_freg,
  .get_leds = kbd_get_leds,
};

/* ---- mouse and tablet ---------------------------------------------------- */

/* spice-server reports a button change as motion/wheel with a zero delta
 * and the new state: log the state whenever it changes, deltas when they
 * are not zero. */
static void
pointer_buttons (Guest * g, uint32_t buttons_state)
{
  if (buttons_state != g->buttons) {
    g->buttons = buttons_state;
    guest_log ("mouse buttons %u", buttons_state);
  }
}

static void
mouse_motion (SpiceMouseInstance * sin, int dx, int dy, int dz,
    uint32_t buttons_state)
{
  if (dx || dy) {
    guest_log ("mouse motion %d %d buttons=%u", dx, dy, buttons_state);
    push_cursor_move (&guest, guest.cursor_x + dx, guest.cursor_y + dy);
  }
  if (dz)
    guest_log ("mouse wheel %d buttons=%u", dz, buttons_state);
  pointer_buttons (&guest, buttons_state);
}

static void
mouse_buttons (SpiceMouseInstance * sin, uint32_t buttons_state)
{
  pointer_buttons (&guest, buttons_state);
}

static const SpiceMouseInterface mouse_iface = {
  .base = {
        .type = SPICE_INTERFACE_MOUSE,
        .description = "gst-spice test guest mouse",
        .major_version = SPICE_INTERFACE_MOUSE_MAJOR,
        .minor_version = SPICE_INTERFACE_MOUSE_MINOR,
      },
  .motion = mouse_motion,
  .buttons = mouse_buttons,
};

static void
tablet_set_logical_size (SpiceTabletInstance * sin, int width, int height)
{
  guest_log ("tablet size %d %d", width, height);
}

static void
tablet_position (SpiceTabletInstance * sin, int x, int y,
    uint32_t buttons_state)
{
  guest_log ("mouse position %d %d buttons=%u", x, y, buttons_state);
  push_cursor_move (&guest, x, y);
  pointer_buttons (&guest, buttons_state);
}

static void
tablet_wheel (SpiceTabletInstance * sin, int wheel, uint32_t buttons_state)
{
  if (wheel)
    guest_log ("mouse wheel %d buttons=%u", wheel, buttons_state);
  pointer_buttons (&guest, buttons_state);
}

static void
tablet_buttons (SpiceTabletInstance * sin, uint32_t buttons_state)
{
  pointer_buttons (&guest, buttons_state);
}

static const SpiceTabletInterface tablet_iface = {
  .base = {
        .type = SPICE_INTERFACE_TABLET,
        .description = "gst-spice test guest tablet",
        .major_version = SPICE_INTERFACE_TABLET_MAJOR,
        .minor_version = SPICE_INTERFACE_TABLET_MINOR,
      },
  .set_logical_size = tablet_set_logical_size,
  .position = tablet_position,
  .wheel = tablet_wheel,
  .buttons = tablet_buttons,
};

/* ---- channel events (main thread) ------------------------------------- */

static const gchar *
channel_name (int type)
{
  switch (type) {
    case SPICE_CHANNEL_MAIN:
      return "main";
    case SPICE_CHANNEL_DISPLAY:
      return "display";
    case SPICE_CHANNEL_INPUTS:
      return "inputs";
    case SPICE_CHANNEL_CURSOR:
      return "cursor";
    case SPICE_CHANNEL_PLAYBACK:
      return "playback";
    case SPICE_CHANNEL_RECORD:
      return "record";
    case SPICE_CHANNEL_SMARTCARD:
      return "smartcard";
    case SPICE_CHANNEL_USBREDIR:
      return "usbredir";
    case SPICE_CHANNEL_PORT:
      return "port";
    case SPICE_CHANNEL_WEBDAV:
      return "webdav";
    default:
      return "unknown";
  }
}

static void
on_channel_event (int event, SpiceChannelEventInfo * info, gpointer data)
{
  Guest *g = data;

  switch (event) {
    case SPICE_CHANNEL_EVENT_INITIALIZED:
      guest_log ("channel up %s %d", channel_name (info->type), info->id);
      if (info->type == SPICE_CHANNEL_MAIN)
        guest_log ("client connected");
      if (info->type == SPICE_CHANNEL_DISPLAY) {
        g->display_seen = TRUE;
        if (g->activity_pending)
          start_activity (g, g->pending_activity);
      }
      break;
    case SPICE_CHANNEL_EVENT_DISCONNECTED:
      if (info->type == 0) {
        guest_log ("connection dropped");
        break;
      }
      guest_log ("channel down %s %d", channel_name (info->type), info->id);
      if (info->type == SPICE_CHANNEL_MAIN)
        guest_log ("client disconnected");
      break;
    default:
      break;
  }
}

/* ---- control commands (stdin) ---------------------------------------- */

static gboolean
write_ppm (Guest * g, const gchar * path, GError ** error)
{
  gchar *tmp = g_strdup_printf ("%s.tmp%d", path, (int) getpid ());
  FILE *f = g_fopen (tmp, "wb");
  guint8 *line = g_malloc ((gsize) g->w * 3);
  gboolean ok = TRUE;
  gint x, y;

  if (f == NULL) {
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno),
        "%s: %s", tmp, g_strerror (errno));
    g_free (tmp);
    g_free (line);
    return FALSE;
  }
  fprintf (f, "P6\n%d %d\n255\n", g->w, g->h);
  for (y = 0; y < g->h && ok; y++) {
    const guint8 *p = g->fb + (gsize) y * g->stride;
    for (x = 0; x < g->w; x++) {
      line[x * 3 + 0] = p[x * 4 + 2];
      line[x * 3 + 1] = p[x * 4 + 1];
      line[x * 3 + 2] = p[x * 4 + 0];
    }
    ok = fwrite (line, 3, g->w, f) == (size_t) g->w;
  }
  if (fclose (f) != 0)
    ok = FALSE;
  if (ok && g_rename (tmp, path) != 0)
    ok = FALSE;
  if (!ok) {
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno),
        "writing %s: %s", path, g_strerror (errno));
    g_unlink (tmp);
  }
  g_free (tmp);
  g_free (line);
  return ok;
}

static gboolean
parse_int (const gchar * s, gint64 min, gint64 max, gint64 * out)
{
  gchar *end = NULL;
  gint64 v;

  if (s == NULL || *s == '\0')
    return FALSE;
  errno = 0;
  v = g_ascii_strtoll (s, &end, 0);
  if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
    return FALSE;
  *out = v;
  return TRUE;
}

static void
do_resize (Guest * g, gint w, gint h)
{
  /* commands not yet fetched draw on the old surface: drop them, the new
   * surface is drawn completely from the framebuffer */
  drain_queue (g->cmd_queue);
  spice_qxl_destroy_primary_surface (&g->qxl, 0);
  g->primary_created = FALSE;

  /* --heads: every head w x h, side by side */
  g->head_w = w;
  g->w = w * MAX (g->heads, 1);
  g->h = h;
  g->stride = g->w * 4;
  g_free (g->fb);
  g->fb = g_malloc ((gsize) g->stride * g->h);
  /* same key state and activity frame, at the new size */
  redraw_all (g);
  create_primary (g);
  create_displays (g);
  g->cursor_x = MIN (g->cursor_x, w - 1);
  g->cursor_y = MIN (g->cursor_y, h - 1);
  guest_log ("resized %d %d", w, h);
}

/* main thread: a client's monitors config, through the agent: monitor 0's
 * size; with --heads, as many heads of it as monitors are enabled (up to
 * --heads N), like a guest whose desktop follows the client's windows; with
 * --displays, as many displays keep a surface (the others lose theirs) */
static void
on_agent_resize (gint w, gint h, guint enabled, gpointer user_data)
{
  Guest *g = user_data;
  gint heads = g->heads, on = g->displays_on;

  if (g->max_heads > 1) {
    heads = CLAMP ((gint) enabled, 1, g->max_heads);
    w = MIN (w, GUEST_MAX_SIZE / heads);
  }
  if (g->displays > 1)
    on = CLAMP ((gint) enabled, 1, g->displays);
  if (w != g->head_w || h != g->h || heads != g->heads || on != g->displays_on) {
    g->heads = heads;
    g->displays_on = on;
    do_resize (g, w, h);
    if (g->displays > 1)
      guest_log ("displays %d of %d", on, g->displays);
  }
}

static void
quit_guest (Guest * g)
{
  if (g->quitting)
    return;
  g->quitting = TRUE;
  guest_log ("quitting");
  g_main_loop_quit (g->loop);
}

static void
handle_command (Guest * g, const gchar * line)
{
  gchar **argv = NULL;
  gint argc = 0;
  gint64 a, b;

  {
    gchar *stripped = g_strstrip (g_strdup (line));
    gboolean empty = stripped[0] == '\0' || stripped[0] == '#';
    g_free (stripped);
    if (empty)
      return;
  }
  if (!g_shell_parse_argv (line, &argc, &argv, NULL) || argc == 0) {
    g_strfreev (argv);
    guest_log ("error cannot parse: %s", line);
    return;
  }

  if (g_str_equal (argv[0], "key")) {
    gint64 code = 0x39;
    if (argc > 1 && !parse_int (argv[1], 1, 0x17f, &code)) {
      guest_log ("error bad scancode: %s", argv[1]);
    } else {
      /* as if from a client: make then break through the decoder */
      if (code & 0x100)
        kbd_byte (g, 0xe0);
      kbd_byte (g, code & 0x7f);
      if (code & 0x100)
        kbd_byte (g, 0xe0);
      kbd_byte (g, (code & 0x7f) | 0x80);
    }
  } else if (g_str_equal (argv[0], "leds") && argc == 2) {
    /* the guest OS sets its keyboard's LEDs (Num Lock on at boot) */
    if (parse_int (argv[1], 0, SPICE_KEYBOARD_MODIFIER_FLAGS_MASK, &a)) {
      g->leds_toggled = 0;
      set_leds (g, (guint8) a);
    } else {
      guest_log ("error bad leds: %s", argv[1]);
    }
  } else if (g_str_equal (argv[0], "activity") && argc == 2) {
    GuestActivity kind;
    if (guest_activity_from_string (argv[1], &kind))
      start_activity (g, kind);
    else
      guest_log ("error unknown activity: %s", argv[1]);
  } else if (g_str_equal (argv[0], "freeze")) {
    stop_frame_timer (g);
    g->frozen = TRUE;
    guest_log ("frozen %s %" G_GINT64_FORMAT,
        guest_activity_to_string (g->activity), g->frame_no);
  } else if (g_str_equal (argv[0], "step")) {
    if (g->activity == GUEST_ACTIVITY_IDLE) {
      guest_log ("error no activity to step");
    } else {
      gboolean saved = g->log_frames;
      g->frame_no++;
      g->log_frames = TRUE;
      draw_activity_frame (g, FALSE);
      g->log_frames = saved;
    }
  } else if (g_str_equal (argv[0], "resize") && argc == 3) {
    if (parse_int (argv[1], GUEST_MIN_SIZE, GUEST_MAX_SIZE, &a) &&
        parse_int (argv[2], GUEST_MIN_SIZE, GUEST_MAX_SIZE, &b))
      do_resize (g, (gint) a, (gint) b);
    else
      guest_log ("error bad size: %s %s (%d..%d)", argv[1], argv[2],
          GUEST_MIN_SIZE, GUEST_MAX_SIZE);
  } else if (g_str_equal (argv[0], "dump") && argc == 2) {
    GError *err = NULL;
    if (write_ppm (g, argv[1], &err))
      guest_log ("dumped %s", argv[1]);
    else
      guest_log ("error dump %s: %s", argv[1], err->message);
    g_clear_error (&err);
  } else if (g_str_equal (argv[0], "cursor") && argc >= 2) {
    if (g_str_equal (argv[1], "move") && argc == 4 &&
        parse_int (argv[2], -65536, 65536, &a) &&
        parse_int (argv[3], -65536, 65536, &b)) {
      push_cursor_move (g, (gint) a, (gint) b);
      guest_log ("cursor move %d %d", g->cursor_x, g->cursor_y);
    } else if (g_str_equal (argv[1], "hide")) {
      push_cursor_hide (g);
      guest_log ("cursor hide");
    } else if (g_str_equal (argv[1], "show")) {
      push_cursor_set (g);
      guest_log ("cursor set %d %d", g->cursor_x, g->cursor_y);
    } else {
      guest_log ("error bad cursor command: %s", line);
    }
  } else if (g_str_equal (argv[0], "audio")) {
    guest_audio_command (g->audio, argc, argv);
  } else if (g_str_equal (argv[0], "agent") && argc == 3 &&
      g_str_equal (argv[1], "xfer-answer")) {
    if (!g->agent)
      guest_log ("error no agent (--agent)");
    else if (!parse_int (argv[2], 1, VD_AGENT_FILE_XFER_STATUS_DISABLED, &a))
      guest_log ("error bad file transfer status: %s", argv[2]);
    else
      guest_agent_set_xfer_answer (g->agent, (guint32) a);
  } else if (g_str_equal (argv[0], "agent") && argc >= 3 &&
      g_str_equal (argv[1], "clipboard")) {
    /* the rest of the line, spaces kept */
    const gchar *text = strstr (line, "clipboard") + strlen ("clipboard ");

    if (!g->agent)
      guest_log ("error no agent (--agent)");
    else
      guest_agent_set_clipboard (g->agent, text);
  } else if (g_str_equal (argv[0], "quit")) {
    quit_guest (g);
  } else {
    guest_log ("error unknown command: %s", line);
  }
  g_strfreev (argv);
}

static gboolean
on_stdin (GIOChannel * ch, GIOCondition cond, gpointer data)
{
  Guest *g = data;

  for (;;) {
    gchar *line = NULL;
    gsize len = 0, term = 0;
    GIOStatus st = g_io_channel_read_line (ch, &line, &len, &term, NULL);

    if (st == G_IO_STATUS_NORMAL) {
      line[term] = '\0';
      handle_command (g, line);
      g_free (line);
      if (g->quitting)
        break;
      continue;
    }
    g_free (line);
    if (st == G_IO_STATUS_AGAIN)
      return G_SOURCE_CONTINUE;
    /* EOF or error */
    g->stdin_watch = 0;
    if (g->exit_on_eof)
      quit_guest (g);
    return G_SOURCE_REMOVE;
  }
  return G_SOURCE_CONTINUE;
}

static gboolean
on_signal (gpointer data)
{
  quit_guest (data);
  return G_SOURCE_CONTINUE;
}

/* ---- set-up ------------------------------------------------------------ */

static gboolean
lookup (const gchar * value, const gchar * const *names, const gint * values,
    gint * out)
{
  gint i;
  for (i = 0; names[i]; i++) {
    if (g_ascii_strcasecmp (value, names[i]) == 0) {
      *out = values[i];
      return TRUE;
    }
  }
  return FALSE;
}

static gboolean
configure_server (Guest * g, GError ** error)
{
  static const gchar *const sv_names[] = { "off", "filter", "all", NULL };
  static const gint sv_values[] = { SPICE_STREAM_VIDEO_OFF,
    SPICE_STREAM_VIDEO_FILTER, SPICE_STREAM_VIDEO_ALL
  };
  static const gchar *const ic_names[] = { "off", "auto_glz", "auto_lz",
    "quic", "glz", "lz", "lz4", NULL
  };
  static const gint ic_values[] = { SPICE_IMAGE_COMPRESSION_OFF,
    SPICE_IMAGE_COMPRESSION_AUTO_GLZ, SPICE_IMAGE_COMPRESSION_AUTO_LZ,
    SPICE_IMAGE_COMPRESSION_QUIC, SPICE_IMAGE_COMPRESSION_GLZ,
    SPICE_IMAGE_COMPRESSION_LZ, SPICE_IMAGE_COMPRESSION_LZ4
  };
  static const gchar *const jw_names[] = { "auto", "never", "always", NULL };
  static const gint jw_values[] = { SPICE_WAN_COMPRESSION_AUTO,
    SPICE_WAN_COMPRESSION_NEVER, SPICE_WAN_COMPRESSION_ALWAYS
  };
  gint v;

  spice_server_set_addr (g->server, g->addr, 0);
  spice_server_set_port (g->server, g->port);
  if (g->tls_port) {
    gchar *ca, *cert, *key;
    gint r;

    if (!g->x509_dir) {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
          "--tls-port needs --x509-dir");
      return FALSE;
    }
    ca = g_build_filename (g->x509_dir, "ca-cert.pem", NULL);
    cert = g_build_filename (g->x509_dir, "server-cert.pem", NULL);
    key = g_build_filename (g->x509_dir, "server-key.pem", NULL);
    r = spice_server_set_tls (g->server, g->tls_port, ca, cert, key, NULL,
        NULL, NULL);
    g_free (ca);
    g_free (cert);
    g_free (key);
    if (r != 0) {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
          "spice-server refused --tls-port %d", g->tls_port);
      return FALSE;
    }
  }
  if (g->password && *g->password)
    spice_server_set_ticket (g->server, g->password, 0, 0, 0);
  else
    spice_server_set_noauth (g->server);

  if (!lookup (g->streaming_video, sv_names, sv_values, &v)) {
    g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
        "--streaming-video must be off, filter or all");
    return FALSE;
  }
  spice_server_set_streaming_video (g->server, v);

  if (g->image_compression) {
    if (!lookup (g->image_compression, ic_names, ic_values, &v)) {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
          "--image-compression must be off, auto_glz, auto_lz, quic, glz, "
          "lz or lz4");
      return FALSE;
    }
    spice_server_set_image_compression (g->server, (SpiceImageCompression) v);
  }
  if (g->jpeg_wan) {
    if (!lookup (g->jpeg_wan, jw_names, jw_values, &v)) {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
          "--jpeg-wan-compression must be auto, never or always");
      return FALSE;
    }
    spice_server_set_jpeg_compression (g->server, (spice_wan_compression_t) v);
  }
  if (g->video_codecs &&
      spice_server_set_video_codecs (g->server, g->video_codecs) != 0) {
    g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
        "--video-codecs: spice-server accepted none of \"%s\"",
        g->video_codecs);
    return FALSE;
  }
  return TRUE;
}

int
main (int argc, char *argv[])
{
  Guest *g = &guest;
  GError *error = NULL;
  GOptionContext *ctx;
  gint64 seed64 = 1;
  GuestActivity initial = GUEST_ACTIVITY_IDLE;
  GOptionEntry entries[] = {
    {"port", 'p', 0, G_OPTION_ARG_INT, &g->port,
        "TCP port (default 5900)", "N"},
    {"tls-port", 0, 0, G_OPTION_ARG_INT, &g->tls_port,
        "TLS port too (default: none)", "N"},
    {"x509-dir", 0, 0, G_OPTION_ARG_FILENAME, &g->x509_dir,
          "ca-cert.pem, server-cert.pem and server-key.pem for --tls-port",
        "DIR"},
    {"addr", 'a', 0, G_OPTION_ARG_STRING, &g->addr,
        "Listen address (default 127.0.0.1)", "ADDR"},
    {"password", 'w', 0, G_OPTION_ARG_STRING, &g->password,
        "Require this ticket (default: no authentication)", "P"},
    {"width", 0, 0, G_OPTION_ARG_INT, &g->width,
        "Surface width (default 1280)", "W"},
    {"height", 0, 0, G_OPTION_ARG_INT, &g->height,
        "Surface height (default 800)", "H"},
    {"seed", 's', 0, G_OPTION_ARG_STRING, &g->seed_str,
        "Seed of the picture (default 1)", "N"},
    {"fps", 'f', 0, G_OPTION_ARG_INT, &g->fps,
        "Activity frame rate; 0 = only on 'step' (default 30)", "N"},
    {"activity", 0, 0, G_OPTION_ARG_STRING, &g->activity_name,
        "idle, busy, heavy, text, video, film or desktop-video "
          "(default idle)", "NAME"},
    {"activity-after-connect", 0, 0, G_OPTION_ARG_NONE,
          &g->activity_after_connect,
        "Start the activity once a display channel linked", NULL},
    {"streaming-video", 0, 0, G_OPTION_ARG_STRING, &g->streaming_video,
        "off, filter or all (default off, like qemu)", "MODE"},
    {"video-codecs", 0, 0, G_OPTION_ARG_STRING, &g->video_codecs,
          "spice-server video codecs, e.g. \"spice:mjpeg;gstreamer:vp8;\"",
        "STR"},
    {"image-compression", 0, 0, G_OPTION_ARG_STRING, &g->image_compression,
        "off, auto_glz, auto_lz, quic, glz, lz or lz4 "
          "(default: spice-server's, auto_glz)", "MODE"},
    {"jpeg-wan-compression", 0, 0, G_OPTION_ARG_STRING, &g->jpeg_wan,
        "auto, never or always (default: spice-server's, auto)", "MODE"},
    {"allow-multiple-clients", 0, 0, G_OPTION_ARG_NONE, &g->allow_mc,
        "Let several clients connect at once (SPICE_DEBUG_ALLOW_MC)", NULL},
    {"agent", 0, 0, G_OPTION_ARG_NONE, &g->agent_enabled,
        "Attach a guest agent (vdagent char device): a client's monitors "
          "config resizes the surface", NULL},
    {"agent-xfer-dir", 0, 0, G_OPTION_ARG_FILENAME, &g->agent_xfer_dir,
        "With --agent: save the files clients send in DIR (default: file "
          "transfer disabled)", "DIR"},
    {"agent-mouse", 0, 0, G_OPTION_ARG_NONE, &g->agent_mouse,
        "With --agent: client-mode positions go to the agent, logged with "
          "their display id", NULL},
    {"heads", 0, 0, G_OPTION_ARG_INT, &g->heads,
        "N monitors side by side on one surface N x width wide "
          "(MONITORS_CONFIG; default 1)", "N"},
    {"displays", 0, 0, G_OPTION_ARG_INT, &g->displays,
          "N QXL devices, one display channel and surface each (default 1)",
        "N"},
    {"exit-on-eof", 0, 0, G_OPTION_ARG_NONE, &g->exit_on_eof,
        "Quit when stdin reaches end of file", NULL},
    {"log-frames", 0, 0, G_OPTION_ARG_NONE, &g->log_frames,
        "Print 'frame NAME N' for every activity frame", NULL},
    {"frame-stamp", 0, 0, G_OPTION_ARG_NONE, &g->frame_stamp,
        "Stamp each activity frame's number into its picture", NULL},
    {"frame-times", 0, 0, G_OPTION_ARG_FILENAME, &g->frame_times_path,
          "Append 'NAME N MONOTONIC_US' to FILE for every activity frame",
        "FILE"},
    {"audio", 0, 0, G_OPTION_ARG_STRING, &g->audio_mode,
          "off, on, tone or burst: sound interfaces (guest-audio.c; default off)",
        "MODE"},
    {NULL}
  };

  g->port = 5900;
  g->fps = 30;
  g->heads = 1;
  g->displays = 1;
  g->displays_on = 0;           /* set from --displays below */
  g->width = GUEST_DEFAULT_WIDTH;
  g->height = GUEST_DEFAULT_HEIGHT;

  ctx = g_option_context_new ("- a deterministic SPICE test guest");
  g_option_context_set_summary (ctx,
      "Serves a deterministic desktop (text background, key box, activity "
      "area) over SPICE.\nLogs inputs on stdout, reads commands on stdin. "
      "See docs/test-guest.md.");
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error))
    goto fail;
  g_option_context_free (ctx);
  ctx = NULL;

  if (!g->addr)
    g->addr = g_strdup ("127.0.0.1");
  if (!g->streaming_video)
    g->streaming_video = g_strdup ("off");
  if (g->seed_str) {
    gchar *end = NULL;
    guint64 s = g_ascii_strtoull (g->seed_str, &end, 0);
    if (end == g->seed_str || *end != '\0' || s > G_MAXUINT32) {
      g_set_error (&error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
          "bad --seed %s", g->seed_str);
      goto fail;
    }
    seed64 = (gint64) s;
  }
  g->seed = (guint32) seed64;
  if (g->port < 1 || g->port > 65535 || g->tls_port < 0 ||
      g->tls_port > 65535 || g->fps < 0 || g->fps > 1000 ||
      g->width < GUEST_MIN_SIZE || g->width > GUEST_MAX_SIZE ||
      g->height < GUEST_MIN_SIZE || g->height > GUEST_MAX_SIZE) {
    g_set_error (&error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
        "out of range: --port/--tls-port 1..65535, --fps 0..1000, "
        "--width/--height " "%d..%d", GUEST_MIN_SIZE, GUEST_MAX_SIZE);
    goto fail;
  }
  if (g->heads < 1 || g->heads > MAX_HEADS || g->displays < 1 ||
      g->displays > MAX_HEADS || (g->heads > 1 && g->displays > 1) ||
      g->width * g->heads > GUEST_MAX_SIZE) {
    g_set_error (&error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
        "--heads or --displays: 1..%d, not both, heads x width <= %d",
        MAX_HEADS, GUEST_MAX_SIZE);
    goto fail;
  }
  g->displays_on = g->displays;
  if (g->activity_name &&
      !guest_activity_from_string (g->activity_name, &initial)) {
    g_set_error (&error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
        "unknown --activity %s", g->activity_name);
    goto fail;
  }
  if (g->agent_mouse)
    g->agent_enabled = TRUE;
  if (g->allow_mc)
    g_setenv ("SPICE_DEBUG_ALLOW_MC", "1", TRUE);
  if (g->frame_times_path) {
    g->frame_times = fopen (g->frame_times_path, "a");
    if (!g->frame_times) {
      g_set_error (&error, G_OPTION_ERROR, G_OPTION_ERROR_FAILED,
          "--frame-times %s: %s", g->frame_times_path, g_strerror (errno));
      goto fail;
    }
  }

  /* spice-server writes to client sockets with write(): a client that
   * reset its connection must cost that client, not the guest (qemu
   * ignores SIGPIPE too). A closed stdout pipe still ends us, in
   * guest_log(). */
  signal (SIGPIPE, SIG_IGN);
  g->loop = g_main_loop_new (NULL, FALSE);
  g->cmd_queue = g_async_queue_new ();
  g->cursor_queue = g_async_queue_new ();
  g->activity = GUEST_ACTIVITY_IDLE;
  g->frame_no = GUEST_FRAME_NONE;
  g->monitors_configs = g_ptr_array_new_with_free_func (g_free);
  g->max_heads = g->heads;
  g->head_w = g->width;
  g->w = g->width * g->heads;
  g->h = g->height;
  g->stride = g->w * 4;
  g->fb = g_malloc ((gsize) g->stride * g->h);
  {
    gint i;
    for (i = 1; i < g->displays; i++) {
      GuestDisplay *d = &g->extra[i - 1];
      d->cmd_queue = g_async_queue_new ();
      d->w = g->width;
      d->h = g->height;
      d->stride = d->w * 4;
      d->fb = g_malloc ((gsize) d->stride * d->h);
    }
  }
  g->cursor_x = g->w / 2;
  g->cursor_y = g->h / 2;
  redraw_all (g);

  g->server = spice_server_new ();
  if (!configure_server (g, &error))
    goto fail;
  if (spice_server_init (g->server, guest_core_new (NULL, on_channel_event,
              g)) != 0) {
    g_set_error (&error, G_OPTION_ERROR, G_OPTION_ERROR_FAILED,
        "spice_server_init failed (port %d in use?)", g->port);
    goto fail;
  }

  g->qxl.base.sif = &qxl_iface.base;
  g->qxl.id = 0;
  spice_server_add_interface (g->server, &g->qxl.base);
  {
    gint i;
    for (i = 1; i < g->displays; i++) {
      g->extra[i - 1].qxl.base.sif = &qxl_iface.base;
      g->extra[i - 1].qxl.id = i;
      spice_server_add_interface (g->server, &g->extra[i - 1].qxl.base);
    }
  }
  g->kbd.base.sif = &kbd_iface.base;
  spice_server_add_interface (g->server, &g->kbd.base);
  g->mouse.base.sif = &mouse_iface.base;
  spice_server_add_interface (g->server, &g->mouse.base);
  g->tablet.base.sif = &tablet_iface.base;
  spice_server_add_interface (g->server, &g->tablet.base);
  g->audio = guest_audio_new (g->server, g->audio_mode, guest_log, &error);
  if (!g->audio)
    goto fail;
  if (g->agent_enabled)
    g->agent = guest_agent_new (g->server, GUEST_MIN_SIZE, GUEST_MAX_SIZE,
        g->agent_xfer_dir, g->agent_mouse, on_agent_resize, g, guest_log);

  spice_server_vm_start (g->server);
  create_primary (g);
  create_displays (g);
  push_cursor_set (g);

  g_unix_signal_add (SIGTERM, on_signal, g);
  g_unix_signal_add (SIGINT, on_signal, g);
  g->stdin_channel = g_io_channel_unix_new (STDIN_FILENO);
  g_io_channel_set_encoding (g->stdin_channel, NULL, NULL);
  g_io_channel_set_flags (g->stdin_channel, G_IO_FLAG_NONBLOCK, NULL);
  g->stdin_watch = g_io_add_watch (g->stdin_channel,
      G_IO_IN | G_IO_HUP | G_IO_ERR, on_stdin, g);

  if (g->tls_port)
    guest_log ("listening port=%d tls-port=%d", g->port, g->tls_port);
  else
    guest_log ("listening port=%d", g->port);
  if (initial != GUEST_ACTIVITY_IDLE)
    start_activity (g, initial);

  g_main_loop_run (g->loop);

  stop_frame_timer (g);
  if (g->stdin_watch)
    g_source_remove (g->stdin_watch);
  g_io_channel_unref (g->stdin_channel);
  guest_agent_free (g->agent);
  guest_audio_free (g->audio);
  spice_server_destroy (g->server);
  drain_queue (g->cmd_queue);
  drain_queue (g->cursor_queue);
  {
    gint i;
    for (i = 1; i < g->displays; i++) {
      drain_queue (g->extra[i - 1].cmd_queue);
      g_async_queue_unref (g->extra[i - 1].cmd_queue);
      g_free (g->extra[i - 1].primary_mem);
      g_free (g->extra[i - 1].fb);
    }
  }
  g_ptr_array_unref (g->monitors_configs);
  g_async_queue_unref (g->cmd_queue);
  g_async_queue_unref (g->cursor_queue);
  g_free (g->primary_mem);
  g_free (g->fb);
  g_main_loop_unref (g->loop);
  if (g->frame_times)
    fclose (g->frame_times);
  return 0;

fail:
  if (ctx)
    g_option_context_free (ctx);
  g_printerr ("spice-test-guest: %s\n", error ? error->message : "failed");
  guest_log ("error %s", error ? error->message : "failed");
  g_clear_error (&error);
  return 1;
}
