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
 *   - everything else is logged and ignored.
 * The tablet stays the client-mode pointer (agent mouse off), so a guest
 * with an agent reports positions like one without.
 *
 * stdout lines (through the log function):
 *   agent attached                   the char device is registered
 *   agent caps request=R             a client announced its capabilities
 *   agent monitors N WxH+X+Y flags=F a monitors config (monitor 0 shown)
 *   agent ignored TYPE SIZE          another message
 *   agent error TEXT                 a message refused (and skipped)
 *
 * All callbacks run on the main thread (spice-server calls char devices from
 * the thread that runs its core interface's main context).
 */
#include "guest-agent.h"

#include <spice/vd_agent.h>
#include <string.h>

/* the largest message the agent keeps: a monitors config of 16 heads with
 * physical sizes is far below it; a clipboard may be larger and is skipped */
#define GUEST_AGENT_MAX_MESSAGE (64 * 1024)

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
  guint32 n, flags, per, reply[2];
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
  h = (gint) MIN (read_u32 (m + G_STRUCT_OFFSET (VDAgentMonConfig, height)),
      G_MAXINT);
  w = (gint) MIN (read_u32 (m + G_STRUCT_OFFSET (VDAgentMonConfig, width)),
      G_MAXINT);
  a->log ("agent monitors %u %dx%d+%d+%d flags=0x%x", n, w, h,
      (gint32) read_u32 (m + G_STRUCT_OFFSET (VDAgentMonConfig, x)),
      (gint32) read_u32 (m + G_STRUCT_OFFSET (VDAgentMonConfig, y)), flags);

  reply[0] = GUINT32_TO_LE (VD_AGENT_MONITORS_CONFIG);
  reply[1] = GUINT32_TO_LE (VD_AGENT_SUCCESS);
  agent_send (a, port, VD_AGENT_REPLY, (const guint8 *) reply, sizeof (reply));
  /* a disabled head (0x0, sparse configs) leaves the surface alone */
  if (w > 0 && h > 0)
    a->resize (CLAMP (w, a->min_size, a->max_size), CLAMP (h, a->min_size,
            a->max_size), a->user_data);
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
  a->out = g_byte_array_new ();
  for (i = 0; i < VDP_END_PORT; i++)
    a->ports[i].buf = g_byte_array_new ();
  /* the tablet keeps the pointer in client mode (see the top) */
  spice_server_set_agent_mouse (server, 0);
  a->sin.base.sif = &agent_iface.base;
  a->sin.subtype = "vdagent";
  spice_server_add_interface (server, &a->sin.base);
  a->log ("agent attached");
  return a;
}

void
guest_agent_free (GuestAgent * a)
{
  guint i;

  if (!a)
    return;
  spice_server_remove_interface (&a->sin.base);
  for (i = 0; i < VDP_END_PORT; i++)
    g_byte_array_unref (a->ports[i].buf);
  g_byte_array_unref (a->out);
  g_free (a);
}
