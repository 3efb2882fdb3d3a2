/* gst-spice: the guest agent's traffic between spicesrc and spicesink
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "gstspiceagent.h"

#include <gst/base/gstbytereader.h>

#include "gstspicewire.h"

static const GstStructure *
named_structure (GstEvent * event, const gchar * name)
{
  const GstStructure *s = gst_event_get_structure (event);

  if (!s || !gst_structure_has_name (s, name))
    return NULL;
  return s;
}

/* ---------------------------------------------------------- agent info */

GstEvent *
gst_spice_event_new_agent (const GstSpiceAgentInfo * info)
{
  GstStructure *s = gst_structure_new (GST_SPICE_EVENT_AGENT,
      "connected", G_TYPE_BOOLEAN, info->connected,
      "client-mouse", G_TYPE_BOOLEAN, info->client_mouse, NULL);
  GValue arr = G_VALUE_INIT, v = G_VALUE_INIT;
  guint i;

  gst_value_array_init (&arr, VD_AGENT_CAPS_SIZE);
  g_value_init (&v, G_TYPE_UINT);
  for (i = 0; i < VD_AGENT_CAPS_SIZE; i++) {
    g_value_set_uint (&v, info->connected ? info->caps[i] : 0);
    gst_value_array_append_value (&arr, &v);
  }
  g_value_unset (&v);
  gst_structure_take_value (s, "caps", &arr);
  return gst_event_new_custom (GST_EVENT_CUSTOM_DOWNSTREAM_STICKY, s);
}

gboolean
gst_spice_event_parse_agent (GstEvent * event, GstSpiceAgentInfo * info)
{
  const GstStructure *s;
  const GValue *arr;
  guint i, n;

  if (GST_EVENT_TYPE (event) != GST_EVENT_CUSTOM_DOWNSTREAM_STICKY ||
      !(s = named_structure (event, GST_SPICE_EVENT_AGENT)))
    return FALSE;
  memset (info, 0, sizeof (*info));
  gst_structure_get_boolean (s, "connected", &info->connected);
  gst_structure_get_boolean (s, "client-mouse", &info->client_mouse);
  arr = gst_structure_get_value (s, "caps");
  if (info->connected && arr && GST_VALUE_HOLDS_ARRAY (arr)) {
    n = MIN (gst_value_array_get_size (arr), VD_AGENT_CAPS_SIZE);
    for (i = 0; i < n; i++) {
      const GValue *v = gst_value_array_get_value (arr, i);

      if (G_VALUE_HOLDS_UINT (v))
        info->caps[i] = g_value_get_uint (v);
    }
  }
  return TRUE;
}

gboolean
gst_spice_agent_info_has_cap (const GstSpiceAgentInfo * info, guint cap)
{
  return info->connected && cap < VD_AGENT_END_CAP &&
      VD_AGENT_HAS_CAPABILITY (info->caps, VD_AGENT_CAPS_SIZE, cap);
}

/* ----------------------------------------------------------- clipboard */

GstEvent *
gst_spice_event_new_clipboard (gboolean upstream,
    const GstSpiceClipboard * clip)
{
  GstStructure *s = gst_structure_new (GST_SPICE_EVENT_CLIPBOARD,
      "action", G_TYPE_UINT, (guint) clip->action,
      "selection", G_TYPE_UINT, clip->selection, NULL);

  switch (clip->action) {
    case GST_SPICE_CLIPBOARD_GRAB:{
      GValue arr = G_VALUE_INIT, v = G_VALUE_INIT;
      guint i;

      gst_value_array_init (&arr, clip->n_types);
      g_value_init (&v, G_TYPE_UINT);
      for (i = 0; i < MIN (clip->n_types, GST_SPICE_CLIPBOARD_MAX_TYPES); i++) {
        g_value_set_uint (&v, clip->types[i]);
        gst_value_array_append_value (&arr, &v);
      }
      g_value_unset (&v);
      gst_structure_take_value (s, "types", &arr);
      break;
    }
    case GST_SPICE_CLIPBOARD_DATA:
      if (clip->data)
        gst_structure_set (s, "data", G_TYPE_BYTES, clip->data, NULL);
      /* fall through */
    case GST_SPICE_CLIPBOARD_REQUEST:
      gst_structure_set (s, "type", G_TYPE_UINT, clip->type, NULL);
      break;
    default:
      break;
  }
  return gst_event_new_custom (upstream ? GST_EVENT_CUSTOM_UPSTREAM :
      GST_EVENT_CUSTOM_DOWNSTREAM, s);
}

gboolean
gst_spice_event_parse_clipboard (GstEvent * event, GstSpiceClipboard * clip)
{
  const GstStructure *s;
  const GValue *v;
  guint action = 0, i;

  if ((GST_EVENT_TYPE (event) != GST_EVENT_CUSTOM_DOWNSTREAM &&
          GST_EVENT_TYPE (event) != GST_EVENT_CUSTOM_UPSTREAM) ||
      !(s = named_structure (event, GST_SPICE_EVENT_CLIPBOARD)))
    return FALSE;
  memset (clip, 0, sizeof (*clip));
  gst_structure_get_uint (s, "action", &action);
  if (action < GST_SPICE_CLIPBOARD_GRAB || action > GST_SPICE_CLIPBOARD_RELEASE)
    return FALSE;
  clip->action = action;
  gst_structure_get_uint (s, "selection", &clip->selection);
  gst_structure_get_uint (s, "type", &clip->type);
  v = gst_structure_get_value (s, "types");
  if (v && GST_VALUE_HOLDS_ARRAY (v)) {
    guint n = MIN (gst_value_array_get_size (v), GST_SPICE_CLIPBOARD_MAX_TYPES);

    for (i = 0; i < n; i++) {
      const GValue *t = gst_value_array_get_value (v, i);

      if (G_VALUE_HOLDS_UINT (t))
        clip->types[clip->n_types++] = g_value_get_uint (t);
    }
  }
  v = gst_structure_get_value (s, "data");
  if (v && G_VALUE_HOLDS (v, G_TYPE_BYTES) && g_value_get_boxed (v))
    clip->data = g_bytes_ref (g_value_get_boxed (v));
  return TRUE;
}

void
gst_spice_clipboard_clear (GstSpiceClipboard * clip)
{
  g_clear_pointer (&clip->data, g_bytes_unref);
}

/* ------------------------------------------------------ monitors config */

GstEvent *
gst_spice_event_new_monitors_config (const GstSpiceMonitor * mons, guint n)
{
  GstStructure *s = gst_structure_new_empty (GST_SPICE_EVENT_MONITORS_CONFIG);
  GValue arr = G_VALUE_INIT, v = G_VALUE_INIT;
  guint i;

  n = MIN (n, GST_SPICE_MAX_MONITORS);
  gst_value_array_init (&arr, n * 4);
  g_value_init (&v, G_TYPE_INT);
  for (i = 0; i < n; i++) {
    gint f[4] = { mons[i].x, mons[i].y, (gint) MIN (mons[i].width, G_MAXINT),
      (gint) MIN (mons[i].height, G_MAXINT)
    };
    guint k;

    for (k = 0; k < 4; k++) {
      g_value_set_int (&v, f[k]);
      gst_value_array_append_value (&arr, &v);
    }
  }
  g_value_unset (&v);
  gst_structure_take_value (s, "monitors", &arr);
  return gst_event_new_custom (GST_EVENT_CUSTOM_UPSTREAM, s);
}

gboolean
gst_spice_event_parse_monitors_config (GstEvent * event,
    GstSpiceMonitor * mons, guint * n)
{
  const GstStructure *s;
  const GValue *arr;
  guint i, count;

  if (GST_EVENT_TYPE (event) != GST_EVENT_CUSTOM_UPSTREAM ||
      !(s = named_structure (event, GST_SPICE_EVENT_MONITORS_CONFIG)))
    return FALSE;
  *n = 0;
  arr = gst_structure_get_value (s, "monitors");
  if (!arr || !GST_VALUE_HOLDS_ARRAY (arr))
    return TRUE;
  count = MIN (gst_value_array_get_size (arr) / 4, GST_SPICE_MAX_MONITORS);
  for (i = 0; i < count; i++) {
    gint f[4] = { 0, };
    guint k;

    for (k = 0; k < 4; k++) {
      const GValue *v = gst_value_array_get_value (arr, i * 4 + k);

      if (G_VALUE_HOLDS_INT (v))
        f[k] = g_value_get_int (v);
    }
    mons[i].x = f[0];
    mons[i].y = f[1];
    mons[i].width = MAX (f[2], 0);
    mons[i].height = MAX (f[3], 0);
  }
  *n = count;
  return TRUE;
}

/* ------------------------------------------------------------------ wire */

/* VDAgentMessage without its data: protocol, type, opaque, size */
#define MSG_HEAD_SIZE sizeof (VDAgentMessage)
G_STATIC_ASSERT (MSG_HEAD_SIZE == 20);

struct _GstSpiceAgentReader
{
  gsize max_size;
  guint8 head[MSG_HEAD_SIZE];
  guint head_len;
  guint32 type;
  guint64 opaque;
  guint32 size;                 /* of the current body */
  guint32 got;
  gboolean skipping;
  guint8 *body;                 /* the current body, exactly its size (a
                                 * large one is not kept for the next) */
  gsize cap;
};

/* a body buffer kept from one message to the next at most this large */
#define KEEP_BODY_MAX (64 * 1024)

GstSpiceAgentReader *
gst_spice_agent_reader_new (gsize max_size)
{
  GstSpiceAgentReader *r = g_new0 (GstSpiceAgentReader, 1);

  r->max_size = max_size;
  return r;
}

void
gst_spice_agent_reader_free (GstSpiceAgentReader * r)
{
  if (!r)
    return;
  g_free (r->body);
  g_free (r);
}

GBytes *
gst_spice_agent_reader_steal (GstSpiceAgentReader * r)
{
  GBytes *b;

  g_return_val_if_fail (r->head_len == MSG_HEAD_SIZE && r->got == r->size &&
      !r->skipping, NULL);
  b = r->body ? g_bytes_new_take (r->body, r->size) : g_bytes_new (NULL, 0);
  r->body = NULL;
  r->cap = 0;
  return b;
}

/* the buffer for a body of r->size bytes */
static void
reader_body_alloc (GstSpiceAgentReader * r)
{
  if (r->cap >= r->size && r->cap <= MAX (r->size, KEEP_BODY_MAX))
    return;
  g_free (r->body);
  r->cap = r->size;
  r->body = r->cap ? g_malloc (r->cap) : NULL;
}

/* the head just completed: FALSE unless VD_AGENT_PROTOCOL */
static gboolean
read_message_head (GstSpiceAgentReader * r)
{
  GstByteReader b = GST_BYTE_READER_INIT (r->head, MSG_HEAD_SIZE);
  guint32 protocol = gst_byte_reader_get_uint32_le_unchecked (&b);

  r->type = gst_byte_reader_get_uint32_le_unchecked (&b);
  r->opaque = gst_byte_reader_get_uint64_le_unchecked (&b);
  r->size = gst_byte_reader_get_uint32_le_unchecked (&b);
  return protocol == VD_AGENT_PROTOCOL;
}

gboolean
gst_spice_agent_reader_push (GstSpiceAgentReader * r, const guint8 * data,
    gsize size, GstSpiceAgentMessageFunc func, gpointer user_data,
    const gchar ** reason)
{
  *reason = NULL;
  while (size > 0 || (r->head_len == MSG_HEAD_SIZE && r->got == r->size)) {
    if (r->head_len < MSG_HEAD_SIZE) {
      gsize n = MIN (size, MSG_HEAD_SIZE - r->head_len);

      memcpy (r->head + r->head_len, data, n);
      r->head_len += n;
      data += n;
      size -= n;
      if (r->head_len < MSG_HEAD_SIZE)
        return TRUE;
      if (!read_message_head (r)) {
        *reason = "agent message of an unknown protocol";
        return FALSE;
      }
      if (r->type == 0 || r->type >= VD_AGENT_END_MESSAGE) {
        *reason = "agent message of an unknown type";
        return FALSE;
      }
      r->got = 0;
      r->skipping = r->size > r->max_size;
      if (!r->skipping)
        reader_body_alloc (r);
    }
    if (r->got < r->size) {
      gsize n = MIN (size, (gsize) (r->size - r->got));

      if (!r->skipping)
        memcpy (r->body + r->got, data, n);
      r->got += n;
      data += n;
      size -= n;
    }
    if (r->got == r->size) {
      gboolean ok;

      ok = func (r->type, r->opaque, r->skipping ? NULL : (r->body ? r->body :
              (const guint8 *) ""), r->size, user_data);
      r->head_len = 0;
      if (!ok) {
        *reason = "agent message refused";
        return FALSE;
      }
    }
  }
  return TRUE;
}

/* a VDAgentMessage head for a body of @size bytes (opaque 0) */
static void
write_message_head (GByteArray * a, guint32 type, gsize size)
{
  gst_spice_put_u32 (a, VD_AGENT_PROTOCOL);
  gst_spice_put_u32 (a, type);
  gst_spice_put_u64 (a, 0);
  gst_spice_put_u32 (a, (guint32) size);
}

void
gst_spice_agent_write_message (GByteArray * a, guint32 type,
    const guint8 * body, gsize size)
{
  write_message_head (a, type, size);
  gst_spice_put_bytes (a, body, size);
}

static const GstSpiceClipboardAction action_of_type[] = {
  [VD_AGENT_CLIPBOARD_GRAB] = GST_SPICE_CLIPBOARD_GRAB,
  [VD_AGENT_CLIPBOARD_REQUEST] = GST_SPICE_CLIPBOARD_REQUEST,
  [VD_AGENT_CLIPBOARD] = GST_SPICE_CLIPBOARD_DATA,
  [VD_AGENT_CLIPBOARD_RELEASE] = GST_SPICE_CLIPBOARD_RELEASE,
};

static const guint32 type_of_action[] = {
  [GST_SPICE_CLIPBOARD_GRAB] = VD_AGENT_CLIPBOARD_GRAB,
  [GST_SPICE_CLIPBOARD_REQUEST] = VD_AGENT_CLIPBOARD_REQUEST,
  [GST_SPICE_CLIPBOARD_DATA] = VD_AGENT_CLIPBOARD,
  [GST_SPICE_CLIPBOARD_RELEASE] = VD_AGENT_CLIPBOARD_RELEASE,
};

/* the selection word of VD_AGENT_CAP_CLIPBOARD_SELECTION: u8 selection,
 * u8 reserved[3] */
#define SELECTION_SIZE 4

/* a DATA's bytes share @owner, the GBytes that (@body, @size) is */
static gboolean
parse_clipboard (guint32 type, const guint8 * body, gsize size,
    GBytes * owner, gboolean selection, gboolean serial,
    GstSpiceClipboard * clip)
{
  GstByteReader r;
  guint off;

  memset (clip, 0, sizeof (*clip));
  if (type >= G_N_ELEMENTS (action_of_type) || !action_of_type[type])
    return FALSE;
  if ((!body && size) || size > G_MAXUINT)
    return FALSE;
  gst_byte_reader_init (&r, body, (guint) size);
  clip->action = action_of_type[type];
  clip->selection = VD_AGENT_CLIPBOARD_SELECTION_CLIPBOARD;
  if (selection) {
    guint8 sel;

    if (!gst_byte_reader_get_uint8 (&r, &sel) ||
        !gst_byte_reader_skip (&r, SELECTION_SIZE - 1) ||
        sel > VD_AGENT_CLIPBOARD_SELECTION_SECONDARY)
      return FALSE;
    clip->selection = sel;
  }
  switch (clip->action) {
    case GST_SPICE_CLIPBOARD_GRAB:
      if (serial && !gst_byte_reader_skip (&r, 4))
        return FALSE;
      if (gst_byte_reader_get_remaining (&r) % 4 != 0 ||
          gst_byte_reader_get_remaining (&r) / 4 >
          GST_SPICE_CLIPBOARD_MAX_TYPES)
        return FALSE;
      while (gst_byte_reader_get_uint32_le (&r, &clip->types[clip->n_types]))
        clip->n_types++;
      return TRUE;
    case GST_SPICE_CLIPBOARD_REQUEST:
      return gst_byte_reader_get_uint32_le (&r, &clip->type) &&
          gst_byte_reader_get_remaining (&r) == 0;
    case GST_SPICE_CLIPBOARD_DATA:
      if (!gst_byte_reader_get_uint32_le (&r, &clip->type))
        return FALSE;
      off = gst_byte_reader_get_pos (&r);
      clip->data = g_bytes_new_from_bytes (owner, off, size - off);
      return TRUE;
    default:                   /* RELEASE */
      return gst_byte_reader_get_remaining (&r) == 0;
  }
}

gboolean
gst_spice_agent_parse_clipboard_bytes (guint32 type, GBytes * body,
    gboolean selection, gboolean serial, GstSpiceClipboard * clip)
{
  gsize size;
  const guint8 *data = g_bytes_get_data (body, &size);

  return parse_clipboard (type, data, size, body, selection, serial, clip);
}

void
gst_spice_agent_write_clipboard_head (GByteArray * a,
    const GstSpiceClipboard * clip, gboolean selection, gboolean serial,
    guint32 serial_value)
{
  gsize data_size = clip->action == GST_SPICE_CLIPBOARD_DATA && clip->data ?
      g_bytes_get_size (clip->data) : 0;
  guint n_types = MIN (clip->n_types, GST_SPICE_CLIPBOARD_MAX_TYPES);
  gsize size = selection ? SELECTION_SIZE : 0;
  guint i;

  switch (clip->action) {
    case GST_SPICE_CLIPBOARD_GRAB:
      size += (serial ? 4 : 0) + 4 * n_types;
      break;
    case GST_SPICE_CLIPBOARD_REQUEST:
    case GST_SPICE_CLIPBOARD_DATA:
      size += 4 + data_size;
      break;
    default:
      break;
  }
  write_message_head (a, type_of_action[clip->action], size);
  if (selection)
    gst_spice_put_u32 (a, clip->selection);     /* u8 then 3 reserved zeros */
  switch (clip->action) {
    case GST_SPICE_CLIPBOARD_GRAB:
      if (serial)
        gst_spice_put_u32 (a, serial_value);
      for (i = 0; i < n_types; i++)
        gst_spice_put_u32 (a, clip->types[i]);
      break;
    case GST_SPICE_CLIPBOARD_REQUEST:
    case GST_SPICE_CLIPBOARD_DATA:
      gst_spice_put_u32 (a, clip->type);
      break;
    default:
      break;
  }
}

/* VDAgentAnnounceCapabilities: u32 request, u32 caps[] (as many words
 * as the peer has; missing ones are 0) */
gboolean
gst_spice_agent_parse_caps (const guint8 * body, gsize size,
    gboolean * request, guint32 caps[VD_AGENT_CAPS_SIZE])
{
  GstByteReader r;
  guint32 req;
  guint i;

  if (!body || size > G_MAXUINT || size % 4 != 0)
    return FALSE;
  gst_byte_reader_init (&r, body, (guint) size);
  if (!gst_byte_reader_get_uint32_le (&r, &req))
    return FALSE;
  *request = req != 0;
  for (i = 0; i < VD_AGENT_CAPS_SIZE; i++)
    if (!gst_byte_reader_get_uint32_le (&r, &caps[i]))
      caps[i] = 0;
  return TRUE;
}

void
gst_spice_agent_write_caps (GByteArray * a, gboolean request,
    const guint32 caps[VD_AGENT_CAPS_SIZE])
{
  guint i;

  write_message_head (a, VD_AGENT_ANNOUNCE_CAPABILITIES,
      4 + 4 * VD_AGENT_CAPS_SIZE);
  gst_spice_put_u32 (a, request ? 1 : 0);
  for (i = 0; i < VD_AGENT_CAPS_SIZE; i++)
    gst_spice_put_u32 (a, caps[i]);
}

/* VDAgentMonitorsConfig: u32 count, u32 flags, VDAgentMonConfig × count
 * (height, width, depth, x, y), VDAgentMonitorMM × count if the flags say */
#define MONS_HEAD_SIZE 8
#define MON_CONFIG_SIZE sizeof (VDAgentMonConfig)
G_STATIC_ASSERT (MON_CONFIG_SIZE == 20);

gboolean
gst_spice_agent_parse_monitors_config (const guint8 * body, gsize size,
    GstSpiceMonitor * mons, guint * n)
{
  GstByteReader r;
  guint32 count, flags, i, height, width;
  gsize need;

  *n = 0;
  if (!body || size > G_MAXUINT)
    return FALSE;
  gst_byte_reader_init (&r, body, (guint) size);
  if (!gst_byte_reader_get_uint32_le (&r, &count) ||
      !gst_byte_reader_get_uint32_le (&r, &flags))
    return FALSE;
  if (count == 0 || count > 256)
    return FALSE;
  need = MONS_HEAD_SIZE + (gsize) count *MON_CONFIG_SIZE;
  if (flags & VD_AGENT_CONFIG_MONITORS_FLAG_PHYSICAL_SIZE)
    need += (gsize) count *sizeof (VDAgentMonitorMM);
  if (size < need)
    return FALSE;
  for (i = 0; i < MIN (count, GST_SPICE_MAX_MONITORS); i++) {
    height = gst_byte_reader_get_uint32_le_unchecked (&r);
    width = gst_byte_reader_get_uint32_le_unchecked (&r);
    gst_byte_reader_skip_unchecked (&r, 4);     /* depth */
    mons[i].x = gst_byte_reader_get_int32_le_unchecked (&r);
    mons[i].y = gst_byte_reader_get_int32_le_unchecked (&r);
    mons[i].height = height;
    mons[i].width = width;
  }
  *n = i;
  return TRUE;
}
