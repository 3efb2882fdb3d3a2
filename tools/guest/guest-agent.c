/* gst-spice test guest: a small guest agent (see guest-agent.h).
 *
 * spice-server talks to a "vdagent" char device the way it talks to the
 * guest end of virtio-serial's agent port: a byte stream of VDIChunkHeader
 * (port, size) + data, where the data of one port concatenates into
 * VDAgentMessages (<spice/vd_agent.h>). Messages from the clients arrive on
 * VDP_CLIENT_PORT; spice-server's own (mouse state, client disconnected) on
 * VDP_SERVER_PORT. The agent answers on the port a message came from.
 *
 * What it does:
 *   - ANNOUNCE_CAPABILITIES: answers with its own (MONITORS_CONFIG) when the
 *     client asks for them;
 *   - MONITORS_CONFIG: checks the size against num_of_monitors and the
 *     flags (the VDAgentMonitorMM array after the monitors when
 *     VD_AGENT_CONFIG_MONITORS_FLAG_PHYSICAL_SIZE is set), replies
 *     VD_AGENT_REPLY, and asks for a primary surface the size of monitor 0;
 *   - FILE_XFER_START / _DATA / _STATUS (with an xfer directory, as
 *     spice-vdagent's -f): the file is written to DIR/NAME (NAME the last
 *     component of the client's name; "NAME (N)" when taken), answered
 *     CAN_SEND_DATA, then SUCCESS once its size arrived; a client's
 *     STATUS (cancel, error) or its disconnection removes a partial file.
 *     Without the directory: DISABLED, and the FILE_XFER_DISABLED cap;
 *     the `agent xfer-answer STATUS` command answers the next START with
 *     STATUS instead (a guest out of space, locked...);
 *   - the clipboard, by demand (CLIPBOARD_BY_DEMAND, no selections): a
 *     client's GRAB of UTF-8 text is answered with a REQUEST and the text
 *     it sends is logged; `agent clipboard TEXT` makes the guest own the
 *     clipboard (a GRAB) and answers the client's REQUEST with TEXT;
 *   - everything else is logged and ignored.
 * The tablet stays the client-mode pointer (agent mouse off), so a guest
 * with an agent reports positions like one without.
 *
 * stdout lines (through the log function):
 *   agent attached                   the char device is registered
 *   agent caps request=R             a client announced its capabilities
 *   agent monitors N WxH+X+Y flags=F a monitors config (monitor 0 shown)
 *   agent xfer start ID NAME SIZE    a file comes (NAME as saved)
 *   agent xfer done ID NAME SIZE     it is whole in the directory
 *   agent xfer cancelled ID NAME GOT the client ended it: file removed
 *   agent xfer refused ID REASON     a START answered with an error
 *                                    (status-N: the xfer-answer asked for)
 *   agent xfer-answer N              the command was taken
 *   agent mouse X Y buttons=B display=D   --agent-mouse: a client-mode position
 *   agent clipboard grab types=T,...  a client owns the clipboard
 *   agent clipboard text N TEXT      its text (N bytes; newlines as \n)
 *   agent clipboard request T        a client asks for the guest's
 *   agent clipboard release          a client owns it no more
 *   agent clipboard grabbed N        the command: the guest owns N bytes
 *   agent ignored TYPE SIZE          another message
 *   agent error TEXT                 a message refused (and skipped)
 *
 * All callbacks run on the main thread (spice-server calls char devices from
 * the thread that runs its core interface's main context).
 */
#include "guest-agent.h"

#include <errno.h>
#include <fcntl.h>
#include <spice/vd_agent.h>
#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>

/* the largest message the agent keeps: a monitors config of 16 heads with
 * physical sizes and a file's data (spice-gtk: 64 KiB a message) are
 * below it; a clipboard may be larger and is skipped */
#define GUEST_AGENT_MAX_MESSAGE (256 * 1024)

/* a file a client sends */
typedef struct
{
  guint32 id, port;
  gint fd;
  gchar *name, *path;
  guint64 size, got;
} GuestXfer;

typedef struct
{
  GByteArray *buf;              /* a VDAgentMessage being reassembled */
  guint32 skip;                 /* bytes still to drop of a refused message */
} GuestAgentPort;

struct _GuestAgent
{
  SpiceCharDeviceInstance sin;  /* first: the callbacks get &sin */
  SpiceServer *server;
  gint min_size, max_size;
  GuestAgentResizeFunc resize;
  gpointer user_data;
  GuestAgentLogFunc log;

  /* spice-server -> agent: the chunk being read */
  guint8 chunk_head[sizeof (VDIChunkHeader)];
  guint chunk_head_len;
  guint32 chunk_port, chunk_left;
  GuestAgentPort ports[VDP_END_PORT];

  /* agent -> spice-server: bytes not yet read */
  GByteArray *out;
  guint out_pos;

  gchar *xfer_dir;              /* NULL: file transfer disabled */
  GHashTable *xfers;            /* id -> GuestXfer */
  guint32 xfer_answer;          /* the next START's, 0 (CAN_SEND_DATA) none */

  gchar *clipboard;             /* the guest's own text, NULL: none */
};

static guint32
read_u32 (const guint8 * p)
{
  guint32 v;

  memcpy (&v, p, 4);
  return GUINT32_FROM_LE (v);
}

static void
put_u32 (GByteArray * b, guint32 v)
{
  v = GUINT32_TO_LE (v);
  g_byte_array_append (b, (const guint8 *) &v, 4);
}

/* queues one VDAgentMessage (one chunk: all the agent sends is small) */
static void
agent_send (GuestAgent * a, guint32 port, guint32 type, const guint8 * data,
    guint32 size)
{
  g_return_if_fail (size <= VD_AGENT_MAX_DATA_SIZE - sizeof (VDAgentMessage));

  if (a->out_pos == a->out->len) {
    g_byte_array_set_size (a->out, 0);
    a->out_pos = 0;
  }
  put_u32 (a->out, port);
  put_u32 (a->out, sizeof (VDAgentMessage) + size);
  put_u32 (a->out, VD_AGENT_PROTOCOL);
  put_u32 (a->out, type);
  put_u32 (a->out, 0);          /* opaque, 64 bits */
  put_u32 (a->out, 0);
  put_u32 (a->out, size);
  g_byte_array_append (a->out, data, size);
  spice_server_char_device_wakeup (&a->sin);
}

static void
agent_send_caps (GuestAgent * a, guint32 port)
{
  guint32 caps[VD_AGENT_CAPS_SIZE] = { 0, };
  GByteArray *b = g_byte_array_new ();
  guint i;

  VD_AGENT_SET_CAPABILITY (caps, VD_AGENT_CAP_MONITORS_CONFIG);
  VD_AGENT_SET_CAPABILITY (caps, VD_AGENT_CAP_REPLY);
  VD_AGENT_SET_CAPABILITY (caps, VD_AGENT_CAP_CLIPBOARD_BY_DEMAND);
  if (!a->xfer_dir)
    VD_AGENT_SET_CAPABILITY (caps, VD_AGENT_CAP_FILE_XFER_DISABLED);
  put_u32 (b, 0);               /* request: no answer wanted */
  for (i = 0; i < VD_AGENT_CAPS_SIZE; i++)
    put_u32 (b, caps[i]);
  agent_send (a, port, VD_AGENT_ANNOUNCE_CAPABILITIES, b->data, b->len);
  g_byte_array_unref (b);
}

static void
agent_monitors_config (GuestAgent * a, guint32 port, const guint8 * d,
    guint32 size)
{
  guint32 n, flags, per, reply[2], i, enabled = 0;
  const guint8 *m;
  gint w, h;

  if (size < sizeof (VDAgentMonitorsConfig)) {
    a->log ("agent error monitors config of %u bytes", size);
    return;
  }
  n = read_u32 (d);
  flags = read_u32 (d + 4);
  per = sizeof (VDAgentMonConfig);
  if (flags & VD_AGENT_CONFIG_MONITORS_FLAG_PHYSICAL_SIZE)
    per += sizeof (VDAgentMonitorMM);
  if (n == 0 || n > (size - sizeof (VDAgentMonitorsConfig)) / per) {
    a->log ("agent error monitors config: %u monitors in %u bytes "
        "(flags 0x%x)", n, size, flags);
    return;
  }
  m = d + sizeof (VDAgentMonitorsConfig);
  for (i = 0; i < n; i++) {
    const guint8 *mi = m + i * per;

    if (read_u32 (mi + G_STRUCT_OFFSET (VDAgentMonConfig, width)) &&
        read_u32 (mi + G_STRUCT_OFFSET (VDAgentMonConfig, height)))
      enabled++;
  }
  h = (gint) MIN (read_u32 (m + G_STRUCT_OFFSET (VDAgentMonConfig, height)),
      G_MAXINT);
  w = (gint) MIN (read_u32 (m + G_STRUCT_OFFSET (VDAgentMonConfig, width)),
      G_MAXINT);
  a->log ("agent monitors %u %dx%d+%d+%d flags=0x%x enabled=%u", n, w, h,
      (gint32) read_u32 (m + G_STRUCT_OFFSET (VDAgentMonConfig, x)),
      (gint32) read_u32 (m + G_STRUCT_OFFSET (VDAgentMonConfig, y)), flags,
      enabled);

  reply[0] = GUINT32_TO_LE (VD_AGENT_MONITORS_CONFIG);
  reply[1] = GUINT32_TO_LE (VD_AGENT_SUCCESS);
  agent_send (a, port, VD_AGENT_REPLY, (const guint8 *) reply, sizeof (reply));
  /* a disabled head (0x0, sparse configs) leaves the surface alone */
  if (w > 0 && h > 0)
    a->resize (CLAMP (w, a->min_size, a->max_size), CLAMP (h, a->min_size,
            a->max_size), enabled, a->user_data);
}

/* ---- files from the client ---------------------------------------------- */

static void
xfer_free (gpointer data)
{
  GuestXfer *x = data;

  if (x->fd >= 0)
    close (x->fd);
  g_free (x->name);
  g_free (x->path);
  g_free (x);
}

static void
xfer_status (GuestAgent * a, guint32 port, guint32 id, guint32 result)
{
  guint32 b[2] = { GUINT32_TO_LE (id), GUINT32_TO_LE (result) };

  agent_send (a, port, VD_AGENT_FILE_XFER_STATUS, (const guint8 *) b,
      sizeof (b));
}

/* a partial file goes (the client ended it or left) */
static void
xfer_drop (GuestAgent * a, GuestXfer * x, const gchar * why)
{
  a->log ("agent xfer %s %u %s %" G_GUINT64_FORMAT, why, x->id, x->name,
      x->got);
  g_unlink (x->path);
  g_hash_table_remove (a->xfers, GUINT_TO_POINTER (x->id));
}

/* DIR/NAME, or DIR/NAME (N) when taken: created, open for writing */
static gint
xfer_create (GuestAgent * a, GuestXfer * x, const gchar * client_name)
{
  const gchar *base = strrchr (client_name, '/');
  gchar *name = g_strdup (base ? base + 1 : client_name);
  guint n;

  if (!*name || g_str_equal (name, ".") || g_str_equal (name, "..")) {
    g_free (name);
    name = g_strdup ("file");
  }
  for (n = 0; n < 100; n++) {
    x->name = n ? g_strdup_printf ("%s (%u)", name, n) : g_strdup (name);
    x->path = g_build_filename (a->xfer_dir, x->name, NULL);
    x->fd = open (x->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (x->fd >= 0 || errno != EEXIST)
      break;
    g_clear_pointer (&x->name, g_free);
    g_clear_pointer (&x->path, g_free);
  }
  g_free (name);
  return x->fd;
}

static void
agent_xfer_start (GuestAgent * a, guint32 port, const guint8 * d, guint32 size)
{
  GKeyFile *kf = g_key_file_new ();
  GuestXfer *x;
  gchar *name = NULL;
  guint64 fsize = 0;
  guint32 id;

  if (size < sizeof (VDAgentFileXferStartMessage)) {
    a->log ("agent error file transfer start of %u bytes", size);
    g_key_file_free (kf);
    return;
  }
  id = read_u32 (d);
  if (g_key_file_load_from_data (kf, (const gchar *) d + 4,
          strnlen ((const gchar *) d + 4, size - 4), G_KEY_FILE_NONE, NULL)) {
    name = g_key_file_get_string (kf, "vdagent-file-xfer", "name", NULL);
    fsize = g_key_file_get_uint64 (kf, "vdagent-file-xfer", "size", NULL);
  }
  g_key_file_free (kf);
  if (!a->xfer_dir) {
    a->log ("agent xfer refused %u disabled", id);
    xfer_status (a, port, id, VD_AGENT_FILE_XFER_STATUS_DISABLED);
  } else if (a->xfer_answer) {
    a->log ("agent xfer refused %u status-%u", id, a->xfer_answer);
    xfer_status (a, port, id, a->xfer_answer);
    a->xfer_answer = 0;
  } else if (!name) {
    a->log ("agent xfer refused %u no-name", id);
    xfer_status (a, port, id, VD_AGENT_FILE_XFER_STATUS_ERROR);
  } else if (g_hash_table_contains (a->xfers, GUINT_TO_POINTER (id))) {
    a->log ("agent xfer refused %u id-in-use", id);
    xfer_status (a, port, id, VD_AGENT_FILE_XFER_STATUS_ERROR);
  } else {
    x = g_new0 (GuestXfer, 1);
    x->id = id;
    x->port = port;
    x->size = fsize;
    if (xfer_create (a, x, name) < 0) {
      a->log ("agent xfer refused %u %s", id, g_strerror (errno));
      xfer_status (a, port, id, VD_AGENT_FILE_XFER_STATUS_ERROR);
      xfer_free (x);
    } else {
      g_hash_table_insert (a->xfers, GUINT_TO_POINTER (id), x);
      a->log ("agent xfer start %u %s %" G_GUINT64_FORMAT, id, x->name, fsize);
      xfer_status (a, port, id, VD_AGENT_FILE_XFER_STATUS_CAN_SEND_DATA);
    }
  }
  g_free (name);
}

static void
agent_xfer_data (GuestAgent * a, guint32 port, const guint8 * d, guint32 size)
{
  GuestXfer *x;
  guint64 n;
  guint32 id;

  if (size < sizeof (VDAgentFileXferDataMessage)) {
    a->log ("agent error file data of %u bytes", size);
    return;
  }
  id = read_u32 (d);
  memcpy (&n, d + 4, 8);
  n = GUINT64_FROM_LE (n);
  x = g_hash_table_lookup (a->xfers, GUINT_TO_POINTER (id));
  if (!x)
    return;                     /* ended: the rest was on its way */
  if (n != size - sizeof (VDAgentFileXferDataMessage) || n > x->size - x->got
      || write (x->fd, d + sizeof (VDAgentFileXferDataMessage), n) !=
      (gssize) n) {
    xfer_status (a, port, id, VD_AGENT_FILE_XFER_STATUS_ERROR);
    xfer_drop (a, x, "failed");
    return;
  }
  x->got += n;
  if (x->got < x->size)
    return;
  close (x->fd);
  x->fd = -1;
  a->log ("agent xfer done %u %s %" G_GUINT64_FORMAT, id, x->name, x->got);
  xfer_status (a, port, id, VD_AGENT_FILE_XFER_STATUS_SUCCESS);
  g_hash_table_remove (a->xfers, GUINT_TO_POINTER (id));
}

/* the client ends a transfer (cancelled, or it could not read the file) */
static void
agent_xfer_status (GuestAgent * a, const guint8 * d, guint32 size)
{
  GuestXfer *x;

  if (size < 8)
    return;
  x = g_hash_table_lookup (a->xfers, GUINT_TO_POINTER (read_u32 (d)));
  if (x)
    xfer_drop (a, x, "cancelled");
}

/* the client left: its partial files go */
static void
agent_xfer_drop_all (GuestAgent * a)
{
  GList *l, *all = g_hash_table_get_values (a->xfers);

  for (l = all; l; l = l->next)
    xfer_drop (a, l->data, "cancelled");
  g_list_free (all);
}

/* the client's clipboard messages (no selection header: the agent does
 * not announce VD_AGENT_CAP_CLIPBOARD_SELECTION) */
static void
agent_clipboard (GuestAgent * a, guint32 port, guint32 type,
    const guint8 * data, guint32 size)
{
  GString *line;
  guint32 i, t;
  gboolean text = FALSE;
  GByteArray *b;

  switch (type) {
    case VD_AGENT_CLIPBOARD_GRAB:
      line = g_string_new ("");
      for (i = 0; i + 4 <= size; i += 4) {
        t = read_u32 (data + i);
        g_string_append_printf (line, "%s%u", i ? "," : "", t);
        text |= t == VD_AGENT_CLIPBOARD_UTF8_TEXT;
      }
      a->log ("agent clipboard grab types=%s", line->str);
      g_string_free (line, TRUE);
      g_clear_pointer (&a->clipboard, g_free);
      if (text) {
        b = g_byte_array_new ();
        put_u32 (b, VD_AGENT_CLIPBOARD_UTF8_TEXT);
        agent_send (a, port, VD_AGENT_CLIPBOARD_REQUEST, b->data, b->len);
        g_byte_array_unref (b);
      }
      break;
    case VD_AGENT_CLIPBOARD:
      if (size < 4) {
        a->log ("agent error clipboard of %u bytes", size);
        break;
      }
      line = g_string_new_len ((const gchar *) data + 4, size - 4);
      for (i = 0; i < line->len; i++)
        if (line->str[i] == '\n' || line->str[i] == '\r')
          line->str[i] = ' ';
      a->log ("agent clipboard text %u %s", size - 4, line->str);
      g_string_free (line, TRUE);
      break;
    case VD_AGENT_CLIPBOARD_REQUEST:
      t = size >= 4 ? read_u32 (data) : 0;
      a->log ("agent clipboard request %u", t);
      b = g_byte_array_new ();
      put_u32 (b, t);
      if (a->clipboard && t == VD_AGENT_CLIPBOARD_UTF8_TEXT)
        g_byte_array_append (b, (const guint8 *) a->clipboard,
            strlen (a->clipboard));
      agent_send (a, port, VD_AGENT_CLIPBOARD, b->data, b->len);
      g_byte_array_unref (b);
      break;
    case VD_AGENT_CLIPBOARD_RELEASE:
      a->log ("agent clipboard release");
      break;
    default:
      break;
  }
}

static void
agent_message (GuestAgent * a, guint32 port, const guint8 * msg)
{
  guint32 protocol = read_u32 (msg);
  guint32 type = read_u32 (msg + G_STRUCT_OFFSET (VDAgentMessage, type));
  guint32 size = read_u32 (msg + G_STRUCT_OFFSET (VDAgentMessage, size));
  const guint8 *data = msg + sizeof (VDAgentMessage);

  if (protocol != VD_AGENT_PROTOCOL) {
    a->log ("agent error protocol %u", protocol);
    return;
  }
  switch (type) {
    case VD_AGENT_ANNOUNCE_CAPABILITIES:
      if (size < sizeof (VDAgentAnnounceCapabilities)) {
        a->log ("agent error capabilities of %u bytes", size);
        break;
      }
      a->log ("agent caps request=%u", read_u32 (data));
      if (read_u32 (data))
        agent_send_caps (a, port);
      break;
    case VD_AGENT_MONITORS_CONFIG:
      agent_monitors_config (a, port, data, size);
      break;
    case VD_AGENT_FILE_XFER_START:
      agent_xfer_start (a, port, data, size);
      break;
    case VD_AGENT_FILE_XFER_DATA:
      agent_xfer_data (a, port, data, size);
      break;
    case VD_AGENT_FILE_XFER_STATUS:
      agent_xfer_status (a, data, size);
      break;
    case VD_AGENT_CLIENT_DISCONNECTED:
      a->log ("agent client disconnected");
      agent_xfer_drop_all (a);
      break;
    case VD_AGENT_CLIPBOARD_GRAB:
    case VD_AGENT_CLIPBOARD:
    case VD_AGENT_CLIPBOARD_REQUEST:
    case VD_AGENT_CLIPBOARD_RELEASE:
      agent_clipboard (a, port, type, data, size);
      break;
    case VD_AGENT_MOUSE_STATE:
      /* the agent mouse (--agent-mouse): spice-server's client-mode
       * position, with the display channel it was on */
      if (size < sizeof (VDAgentMouseState)) {
        a->log ("agent error mouse state of %u bytes", size);
        break;
      }
      a->log ("agent mouse %u %u buttons=%u display=%u", read_u32 (data),
          read_u32 (data + 4), read_u32 (data + 8), (guint) data[12]);
      break;
    default:
      a->log ("agent ignored %u %u", type, size);
      break;
  }
}

/* appends chunk data of @port; handles every message it completes */
static void
agent_port_data (GuestAgent * a, guint32 port, const guint8 * p, gsize len)
{
  GuestAgentPort *ap = &a->ports[port];

  while (len > 0) {
    gsize take;
    guint32 size;

    if (ap->skip > 0) {
      take = MIN (len, ap->skip);
      ap->skip -= take;
      p += take;
      len -= take;
      continue;
    }
    if (ap->buf->len < sizeof (VDAgentMessage)) {
      take = MIN (len, sizeof (VDAgentMessage) - ap->buf->len);
      g_byte_array_append (ap->buf, p, take);
      p += take;
      len -= take;
      if (ap->buf->len < sizeof (VDAgentMessage))
        break;
    }
    size = read_u32 (ap->buf->data + G_STRUCT_OFFSET (VDAgentMessage, size));
    if (size > GUEST_AGENT_MAX_MESSAGE) {
      a->log ("agent ignored %u %u",
          read_u32 (ap->buf->data + G_STRUCT_OFFSET (VDAgentMessage, type)),
          size);
      ap->skip = size;
      g_byte_array_set_size (ap->buf, 0);
      continue;
    }
    take = MIN (len, sizeof (VDAgentMessage) + size - ap->buf->len);
    g_byte_array_append (ap->buf, p, take);
    p += take;
    len -= take;
    if (ap->buf->len == sizeof (VDAgentMessage) + size) {
      agent_message (a, port, ap->buf->data);
      g_byte_array_set_size (ap->buf, 0);
    }
  }
}

/* ---- the char device interface ------------------------------------------ */

static int
agent_write (SpiceCharDeviceInstance * sin, const uint8_t * buf, int len)
{
  GuestAgent *a = (GuestAgent *) sin;
  const guint8 *p = buf;
  gsize left = len > 0 ? (gsize) len : 0;

  while (left > 0) {
    gsize take;

    if (a->chunk_head_len < sizeof (VDIChunkHeader)) {
      take = MIN (left, sizeof (VDIChunkHeader) - a->chunk_head_len);
      memcpy (a->chunk_head + a->chunk_head_len, p, take);
      a->chunk_head_len += take;
      p += take;
      left -= take;
      if (a->chunk_head_len < sizeof (VDIChunkHeader))
        break;
      a->chunk_port = read_u32 (a->chunk_head);
      a->chunk_left = read_u32 (a->chunk_head + 4);
      if (a->chunk_port >= VDP_END_PORT) {
        /* the stream cannot be trusted any more: start over */
        a->log ("agent error chunk for port %u", a->chunk_port);
        a->chunk_port = VDP_END_PORT;
      }
    }
    take = MIN (left, a->chunk_left);
    if (a->chunk_port < VDP_END_PORT)
      agent_port_data (a, a->chunk_port, p, take);
    p += take;
    left -= take;
    a->chunk_left -= take;
    if (a->chunk_left == 0)
      a->chunk_head_len = 0;
  }
  return len;
}

static int
agent_read (SpiceCharDeviceInstance * sin, uint8_t * buf, int len)
{
  GuestAgent *a = (GuestAgent *) sin;
  guint n = MIN ((guint) MAX (len, 0), a->out->len - a->out_pos);

  if (n == 0)
    return 0;                   /* nothing queued (data may be NULL) */
  memcpy (buf, a->out->data + a->out_pos, n);
  a->out_pos += n;
  return (int) n;
}

static void
agent_state (SpiceCharDeviceInstance * sin, int connected)
{
  GuestAgent *a = (GuestAgent *) sin;

  a->log ("agent state %d", connected);
}

static const SpiceCharDeviceInterface agent_iface = {
  .base = {
        .type = SPICE_INTERFACE_CHAR_DEVICE,
        .description = "gst-spice test guest agent",
        .major_version = SPICE_INTERFACE_CHAR_DEVICE_MAJOR,
        .minor_version = SPICE_INTERFACE_CHAR_DEVICE_MINOR,
      },
  .state = agent_state,
  .write = agent_write,
  .read = agent_read,
};

GuestAgent *
guest_agent_new (SpiceServer * server, gint min_size, gint max_size,
    const gchar * xfer_dir, gboolean agent_mouse,
    GuestAgentResizeFunc resize, gpointer user_data, GuestAgentLogFunc log)
{
  GuestAgent *a = g_new0 (GuestAgent, 1);
  guint i;

  a->server = server;
  a->min_size = min_size;
  a->max_size = max_size;
  a->resize = resize;
  a->user_data = user_data;
  a->log = log;
  a->xfer_dir = g_strdup (xfer_dir);
  a->xfers = g_hash_table_new_full (NULL, NULL, NULL, xfer_free);
  a->out = g_byte_array_new ();
  for (i = 0; i < VDP_END_PORT; i++)
    a->ports[i].buf = g_byte_array_new ();
  /* the tablet keeps the pointer in client mode (see the top), unless
   * the agent mouse is asked for */
  spice_server_set_agent_mouse (server, agent_mouse ? 1 : 0);
  a->sin.base.sif = &agent_iface.base;
  a->sin.subtype = "vdagent";
  spice_server_add_interface (server, &a->sin.base);
  a->log ("agent attached");
  return a;
}

void
guest_agent_set_xfer_answer (GuestAgent * a, guint32 status)
{
  a->xfer_answer = status;
  a->log ("agent xfer-answer %u", status);
}

void
guest_agent_set_clipboard (GuestAgent * a, const gchar * text)
{
  GByteArray *b = g_byte_array_new ();

  g_free (a->clipboard);
  a->clipboard = g_strdup (text);
  put_u32 (b, VD_AGENT_CLIPBOARD_UTF8_TEXT);
  agent_send (a, VDP_CLIENT_PORT, VD_AGENT_CLIPBOARD_GRAB, b->data, b->len);
  g_byte_array_unref (b);
  a->log ("agent clipboard grabbed %u", (guint) strlen (text));
}

void
guest_agent_free (GuestAgent * a)
{
  guint i;

  if (!a)
    return;
  g_free (a->clipboard);
  spice_server_remove_interface (&a->sin.base);
  agent_xfer_drop_all (a);
  g_hash_table_unref (a->xfers);
  g_free (a->xfer_dir);
  for (i = 0; i < VDP_END_PORT; i++)
    g_byte_array_unref (a->ports[i].buf);
  g_byte_array_unref (a->out);
  g_free (a);
}
