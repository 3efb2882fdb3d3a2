/* tests/agent: the agent's events and VDAgentMessage wire code
 * (gst-libs/gst/spice/gstspiceagent.h, gstspicefilexfer.h), tests/lib style
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <string.h>
#include <gst/check/gstcheck.h>
#include <gio/gio.h>
#include <gst/spice/gstspice.h>
#include "spice-client-wire.h"

GST_START_TEST (test_agent_info_event)
{
  GstSpiceAgentInfo in = { TRUE, {0,}, TRUE }, out;
  GstEvent *ev;

  VD_AGENT_SET_CAPABILITY (in.caps, VD_AGENT_CAP_CLIPBOARD_BY_DEMAND);
  VD_AGENT_SET_CAPABILITY (in.caps, VD_AGENT_CAP_MONITORS_CONFIG);
  ev = gst_spice_event_new_agent (&in);
  fail_unless (GST_EVENT_TYPE (ev) == GST_EVENT_CUSTOM_DOWNSTREAM_STICKY);
  fail_unless (gst_spice_event_parse_agent (ev, &out));
  fail_unless (out.connected && out.client_mouse);
  fail_unless (gst_spice_agent_info_has_cap (&out,
          VD_AGENT_CAP_CLIPBOARD_BY_DEMAND));
  fail_unless (gst_spice_agent_info_has_cap (&out,
          VD_AGENT_CAP_MONITORS_CONFIG));
  fail_if (gst_spice_agent_info_has_cap (&out, VD_AGENT_CAP_CLIPBOARD));
  fail_if (gst_spice_event_parse_clipboard (ev, &(GstSpiceClipboard) {
          0}
      ));
  gst_event_unref (ev);

  /* absent: no capabilities whatever was set */
  in.connected = FALSE;
  ev = gst_spice_event_new_agent (&in);
  fail_unless (gst_spice_event_parse_agent (ev, &out));
  fail_if (out.connected);
  fail_if (gst_spice_agent_info_has_cap (&out,
          VD_AGENT_CAP_CLIPBOARD_BY_DEMAND));
  gst_event_unref (ev);
}

GST_END_TEST;

GST_START_TEST (test_clipboard_events)
{
  const gchar *text = "grüße, 世界\n";
  GstSpiceClipboard in = { GST_SPICE_CLIPBOARD_GRAB,
    VD_AGENT_CLIPBOARD_SELECTION_PRIMARY, 2,
    {VD_AGENT_CLIPBOARD_UTF8_TEXT, VD_AGENT_CLIPBOARD_IMAGE_PNG},
  }, out;
  GstEvent *ev;

  ev = gst_spice_event_new_clipboard (TRUE, &in);
  fail_unless (GST_EVENT_TYPE (ev) == GST_EVENT_CUSTOM_UPSTREAM);
  fail_unless (gst_spice_event_parse_clipboard (ev, &out));
  fail_unless_equals_int (out.action, GST_SPICE_CLIPBOARD_GRAB);
  fail_unless_equals_int (out.selection, VD_AGENT_CLIPBOARD_SELECTION_PRIMARY);
  fail_unless_equals_int (out.n_types, 2);
  fail_unless_equals_int (out.types[1], VD_AGENT_CLIPBOARD_IMAGE_PNG);
  gst_event_unref (ev);

  in = (GstSpiceClipboard) {
    GST_SPICE_CLIPBOARD_DATA, 0, 0, {
  0}, VD_AGENT_CLIPBOARD_UTF8_TEXT, g_bytes_new (text, strlen (text))};
  ev = gst_spice_event_new_clipboard (FALSE, &in);
  fail_unless (GST_EVENT_TYPE (ev) == GST_EVENT_CUSTOM_DOWNSTREAM);
  fail_unless (GST_EVENT_IS_SERIALIZED (ev));
  fail_unless (gst_spice_event_parse_clipboard (ev, &out));
  fail_unless_equals_int (out.action, GST_SPICE_CLIPBOARD_DATA);
  fail_unless (out.data && g_bytes_equal (out.data, in.data));
  gst_spice_clipboard_clear (&out);
  gst_spice_clipboard_clear (&in);
  gst_event_unref (ev);
}

GST_END_TEST;

GST_START_TEST (test_monitors_event)
{
  GstSpiceMonitor in[2] = { {0, 0, 1024, 768}, {1024, 0, 800, 600} },
      out[GST_SPICE_MAX_MONITORS];
  guint n = 0;
  GstEvent *ev = gst_spice_event_new_monitors_config (in, 2);

  fail_unless (gst_spice_event_parse_monitors_config (ev, out, &n));
  fail_unless_equals_int (n, 2);
  fail_unless (memcmp (in, out, sizeof (in)) == 0);
  gst_event_unref (ev);
}

GST_END_TEST;

typedef struct
{
  GPtrArray *msgs;              /* GBytes: type (4 bytes) + body */
  guint skipped;
} Collected;

static gboolean
collect (guint32 type, guint64 opaque, const guint8 * body, gsize size,
    gpointer data)
{
  Collected *c = data;
  GByteArray *a;
  guint8 t[4];

  if (!body) {
    c->skipped++;
    return TRUE;
  }
  a = g_byte_array_new ();
  GST_WRITE_UINT32_LE (t, type);
  g_byte_array_append (a, t, 4);
  g_byte_array_append (a, body, size);
  g_ptr_array_add (c->msgs, g_byte_array_free_to_bytes (a));
  return TRUE;
}

/* two messages, the first larger than one chunk, split at every chunk
 * size; one too large for the reader, skipped */
GST_START_TEST (test_reader_chunks)
{
  GByteArray *stream = g_byte_array_new ();
  GstSpiceClipboard clip = { GST_SPICE_CLIPBOARD_DATA, 1, 0, {0,},
  VD_AGENT_CLIPBOARD_UTF8_TEXT, NULL
  }, parsed;
  guint8 *big = g_malloc (5000);
  guint32 caps[VD_AGENT_CAPS_SIZE] = { 0, }, caps2[VD_AGENT_CAPS_SIZE];
  gboolean req;
  guint i;
  gsize chunk;

  for (i = 0; i < 5000; i++)
    big[i] = 'a' + i % 26;
  clip.data = g_bytes_new_take (big, 5000);
  test_agent_write_clipboard (stream, &clip, TRUE, FALSE, 0);
  VD_AGENT_SET_CAPABILITY (caps, VD_AGENT_CAP_CLIPBOARD_SELECTION);
  gst_spice_agent_write_caps (stream, TRUE, caps);

  for (chunk = 1; chunk <= VD_AGENT_MAX_DATA_SIZE; chunk = chunk * 3 + 1) {
    GstSpiceAgentReader *r = gst_spice_agent_reader_new (16 * 1024);
    Collected c = { g_ptr_array_new_with_free_func ((GDestroyNotify)
          g_bytes_unref), 0
    };
    const gchar *reason;
    gsize off;
    const guint8 *m;
    gsize msize;

    for (off = 0; off < stream->len; off += chunk)
      fail_unless (gst_spice_agent_reader_push (r, stream->data + off,
              MIN (chunk, stream->len - off), collect, &c, &reason));
    fail_unless_equals_int (c.msgs->len, 2);
    m = g_bytes_get_data (c.msgs->pdata[0], &msize);
    fail_unless_equals_int (GST_READ_UINT32_LE (m), VD_AGENT_CLIPBOARD);
    fail_unless (test_agent_parse_clipboard (VD_AGENT_CLIPBOARD, m + 4,
            msize - 4, TRUE, FALSE, &parsed));
    fail_unless_equals_int (parsed.selection, 1);
    fail_unless (g_bytes_equal (parsed.data, clip.data));
    gst_spice_clipboard_clear (&parsed);
    m = g_bytes_get_data (c.msgs->pdata[1], &msize);
    fail_unless (gst_spice_agent_parse_caps (m + 4, msize - 4, &req, caps2));
    fail_unless (req && caps2[0] == caps[0]);
    g_ptr_array_unref (c.msgs);
    gst_spice_agent_reader_free (r);
  }

  /* a reader limited below the clipboard skips it, keeps the next */
  {
    GstSpiceAgentReader *r = gst_spice_agent_reader_new (1000);
    Collected c = { g_ptr_array_new_with_free_func ((GDestroyNotify)
          g_bytes_unref), 0
    };
    const gchar *reason;

    fail_unless (gst_spice_agent_reader_push (r, stream->data, stream->len,
            collect, &c, &reason));
    fail_unless_equals_int (c.skipped, 1);
    fail_unless_equals_int (c.msgs->len, 1);
    g_ptr_array_unref (c.msgs);
    gst_spice_agent_reader_free (r);
  }
  gst_spice_clipboard_clear (&clip);
  g_byte_array_unref (stream);
}

GST_END_TEST;

typedef struct
{
  GstSpiceAgentReader *r;
  const guint8 *seen;           /* the body the callback got */
  GstSpiceClipboard clip;
} Stolen;

static gboolean
steal_clipboard (guint32 type, guint64 opaque, const guint8 * body,
    gsize size, gpointer data)
{
  Stolen *st = data;
  GBytes *whole = gst_spice_agent_reader_steal (st->r);

  st->seen = body;
  fail_unless (g_bytes_get_data (whole, NULL) == body);
  fail_unless (gst_spice_agent_parse_clipboard_bytes (type, whole, TRUE,
          FALSE, &st->clip));
  g_bytes_unref (whole);
  return TRUE;
}

/* A 1 MiB clipboard read and passed on without a copy: the reader's body
 * becomes the clipboard's data (the sink holds one copy however many
 * clients it goes to); what the head writer and the data make is the
 * message test_agent_write_clipboard() makes; the reader's next
 * message gets a buffer of its own. */
GST_START_TEST (test_clipboard_zero_copy)
{
  GstSpiceClipboard clip = { GST_SPICE_CLIPBOARD_DATA, 1, 0, {0,},
  VD_AGENT_CLIPBOARD_UTF8_TEXT, NULL
  };
  GByteArray *whole = g_byte_array_new (), *head = g_byte_array_new ();
  guint8 *big = g_malloc (1024 * 1024);
  Stolen st = { gst_spice_agent_reader_new (2 * 1024 * 1024), NULL, };
  const guint8 *data;
  const gchar *reason;
  gsize off, n;

  memset (big, 'x', 1024 * 1024);
  clip.data = g_bytes_new_take (big, 1024 * 1024);
  test_agent_write_clipboard (whole, &clip, TRUE, FALSE, 0);
  gst_spice_agent_write_clipboard_head (head, &clip, TRUE, FALSE, 0);
  fail_unless_equals_int (head->len + 1024 * 1024, whole->len);
  fail_unless (memcmp (head->data, whole->data, head->len) == 0);
  for (off = 0; off < whole->len; off += VD_AGENT_MAX_DATA_SIZE)
    fail_unless (gst_spice_agent_reader_push (st.r, whole->data + off,
            MIN (VD_AGENT_MAX_DATA_SIZE, whole->len - off), steal_clipboard,
            &st, &reason));
  fail_unless (st.clip.data != NULL);
  data = g_bytes_get_data (st.clip.data, &n);
  fail_unless_equals_int (n, 1024 * 1024);
  /* the data lies in the body the reader filled: 4 bytes of selection
   * and 4 of type before it */
  fail_unless (data == st.seen + 8);
  fail_unless (g_bytes_equal (st.clip.data, clip.data));
  /* the next message is read into a new buffer */
  st.seen = NULL;
  gst_spice_clipboard_clear (&st.clip);
  for (off = 0; off < whole->len; off += VD_AGENT_MAX_DATA_SIZE)
    fail_unless (gst_spice_agent_reader_push (st.r, whole->data + off,
            MIN (VD_AGENT_MAX_DATA_SIZE, whole->len - off), steal_clipboard,
            &st, &reason));
  fail_unless (g_bytes_equal (st.clip.data, clip.data));
  gst_spice_clipboard_clear (&st.clip);
  gst_spice_agent_reader_free (st.r);
  gst_spice_clipboard_clear (&clip);
  g_byte_array_unref (whole);
  g_byte_array_unref (head);
}

GST_END_TEST;

GST_START_TEST (test_reader_malformed)
{
  guint8 bad[20] = { 2, 0, 0, 0, 4, 0, 0, 0 };  /* protocol 2 */
  GstSpiceAgentReader *r = gst_spice_agent_reader_new (100);
  Collected c = { g_ptr_array_new_with_free_func ((GDestroyNotify)
        g_bytes_unref), 0
  };
  const gchar *reason = NULL;
  GstSpiceClipboard clip;
  guint8 grab[7] = { 0, };

  fail_if (gst_spice_agent_reader_push (r, bad, sizeof (bad), collect, &c,
          &reason));
  fail_unless (reason != NULL);
  gst_spice_agent_reader_free (r);
  r = gst_spice_agent_reader_new (100);
  bad[0] = 1;
  bad[4] = VD_AGENT_END_MESSAGE;
  fail_if (gst_spice_agent_reader_push (r, bad, sizeof (bad), collect, &c,
          &reason));
  gst_spice_agent_reader_free (r);
  g_ptr_array_unref (c.msgs);

  /* grab bodies not made of u32 types; selection out of range */
  fail_if (test_agent_parse_clipboard (VD_AGENT_CLIPBOARD_GRAB, grab, 7,
          TRUE, FALSE, &clip));
  grab[0] = 7;
  fail_if (test_agent_parse_clipboard (VD_AGENT_CLIPBOARD_GRAB, grab, 4,
          TRUE, FALSE, &clip));
  fail_if (test_agent_parse_clipboard (VD_AGENT_CLIPBOARD_REQUEST, grab,
          2, FALSE, FALSE, &clip));
}

GST_END_TEST;

GST_START_TEST (test_monitors_wire)
{
  GstSpiceMonitor in = { 10, 20, 1280, 720 }, out[GST_SPICE_MAX_MONITORS];
  GByteArray *a = g_byte_array_new ();
  guint n = 0;

  test_agent_write_monitors_config (a, &in, 1);
  fail_unless_equals_int (GST_READ_UINT32_LE (a->data + 4),
      VD_AGENT_MONITORS_CONFIG);
  fail_unless (gst_spice_agent_parse_monitors_config (a->data + 20,
          a->len - 20, out, &n));
  fail_unless_equals_int (n, 1);
  fail_unless (memcmp (&in, out, sizeof (in)) == 0);
  /* one monitor announced, none there */
  fail_if (gst_spice_agent_parse_monitors_config (a->data + 20, 12, out, &n));
  g_byte_array_unref (a);
}

GST_END_TEST;

/* spice-file-xfer up, spice-file-xfer-status down */
GST_START_TEST (test_file_xfer_events)
{
  GstSpiceFileXfer in = { GST_SPICE_FILE_XFER_START, 42, "/tmp/s/1/a b.txt",
    5242880
  }, out;
  GstSpiceFileXferStatus st = { 42, VD_AGENT_FILE_XFER_STATUS_ERROR,
    G_IO_ERROR_INVALID_FILENAME, "no"
  }, st_out;
  GstEvent *ev;

  ev = gst_spice_event_new_file_xfer (&in);
  fail_unless (GST_EVENT_TYPE (ev) == GST_EVENT_CUSTOM_UPSTREAM);
  fail_unless (gst_spice_event_parse_file_xfer (ev, &out));
  fail_unless_equals_int (out.action, GST_SPICE_FILE_XFER_START);
  fail_unless_equals_uint64 (out.key, 42);
  fail_unless_equals_string (out.path, in.path);
  fail_unless_equals_uint64 (out.size, 5242880);
  fail_if (gst_spice_event_parse_file_xfer_status (ev, &st_out));
  gst_event_unref (ev);
  in.action = GST_SPICE_FILE_XFER_CANCEL;
  ev = gst_spice_event_new_file_xfer (&in);
  fail_unless (gst_spice_event_parse_file_xfer (ev, &out));
  fail_unless_equals_int (out.action, GST_SPICE_FILE_XFER_CANCEL);
  fail_unless_equals_uint64 (out.key, 42);
  gst_event_unref (ev);

  ev = gst_spice_event_new_file_xfer_status (&st);
  fail_unless (GST_EVENT_TYPE (ev) == GST_EVENT_CUSTOM_DOWNSTREAM);
  fail_unless (GST_EVENT_IS_SERIALIZED (ev));
  fail_unless (gst_spice_event_parse_file_xfer_status (ev, &st_out));
  fail_unless_equals_uint64 (st_out.key, 42);
  fail_unless_equals_int (st_out.status, VD_AGENT_FILE_XFER_STATUS_ERROR);
  fail_unless_equals_int (st_out.io_error, G_IO_ERROR_INVALID_FILENAME);
  fail_unless_equals_string (st_out.message, "no");
  gst_event_unref (ev);
  /* a status that ends no transfer reads as ERROR */
  st.status = VD_AGENT_FILE_XFER_STATUS_CAN_SEND_DATA;
  ev = gst_spice_event_new_file_xfer_status (&st);
  fail_unless (gst_spice_event_parse_file_xfer_status (ev, &st_out));
  fail_unless_equals_int (st_out.status, VD_AGENT_FILE_XFER_STATUS_ERROR);
  gst_event_unref (ev);
}

GST_END_TEST;

/* a whole VDAgentMessage's body (after its header) */
static const guint8 *
message_body (GByteArray * a, guint32 * type, guint32 * size)
{
  fail_unless (a->len >= sizeof (VDAgentMessage));
  *type = GST_READ_UINT32_LE (a->data + G_STRUCT_OFFSET (VDAgentMessage,
          type));
  *size = GST_READ_UINT32_LE (a->data + G_STRUCT_OFFSET (VDAgentMessage,
          size));
  fail_unless_equals_int (a->len, sizeof (VDAgentMessage) + *size);
  return a->data + sizeof (VDAgentMessage);
}

/* START's key file as spice-gtk writes it, DATA, STATUS and its details */
GST_START_TEST (test_file_xfer_wire)
{
  static const gchar text[] =
      "[vdagent-file-xfer]\nname=grüße 1.txt\nsize=5242880\n";
  guint8 body[4 + sizeof (text)], data[12 + 3];
  const guint8 *d, *b;
  GByteArray *a;
  guint32 id, result, type, size;
  guint64 fsize;
  gchar *name;
  gsize n;

  GST_WRITE_UINT32_LE (body, 7);
  memcpy (body + 4, text, sizeof (text));       /* with its NUL */
  fail_unless (gst_spice_agent_parse_file_xfer_start (body, sizeof (body),
          &id, &name, &fsize));
  fail_unless_equals_int (id, 7);
  fail_unless_equals_string (name, "grüße 1.txt");
  fail_unless_equals_uint64 (fsize, 5242880);
  g_free (name);
  /* without its NUL, too; without a size or a name: refused, id read */
  fail_unless (gst_spice_agent_parse_file_xfer_start (body, sizeof (body) - 1,
          &id, &name, &fsize));
  g_free (name);
  fail_if (gst_spice_agent_parse_file_xfer_start (body, 4 + 30, &id, &name,
          &fsize));
  fail_unless_equals_int (id, 7);
  fail_unless (name == NULL);
  fail_if (gst_spice_agent_parse_file_xfer_start (body, 3, &id, &name,
          &fsize));

  GST_WRITE_UINT32_LE (data, 7);
  GST_WRITE_UINT64_LE (data + 4, 3);
  memcpy (data + 12, "abc", 3);
  fail_unless (gst_spice_agent_parse_file_xfer_data (data, sizeof (data), &id,
          &d, &n));
  fail_unless_equals_int (n, 3);
  fail_unless (d == data + 12);
  /* a declared size that is not what follows */
  fail_if (gst_spice_agent_parse_file_xfer_data (data, sizeof (data) - 1,
          &id, &d, &n));
  GST_WRITE_UINT64_LE (data + 4, G_MAXUINT64);
  fail_if (gst_spice_agent_parse_file_xfer_data (data, sizeof (data), &id,
          &d, &n));
  fail_if (gst_spice_agent_parse_file_xfer_data (data, 11, &id, &d, &n));

  /* STATUS: 8 bytes, + 8 (NOT_ENOUGH_SPACE) or + 5 (ERROR) with a detail */
  a = g_byte_array_new ();
  gst_spice_agent_write_file_xfer_status (a, 7,
      VD_AGENT_FILE_XFER_STATUS_CAN_SEND_DATA, 123);
  b = message_body (a, &type, &size);
  fail_unless_equals_int (type, VD_AGENT_FILE_XFER_STATUS);
  fail_unless_equals_int (size, sizeof (VDAgentFileXferStatusMessage));
  fail_unless (gst_spice_agent_parse_file_xfer_status (b, size, &id,
          &result));
  fail_unless_equals_int (id, 7);
  fail_unless_equals_int (result, VD_AGENT_FILE_XFER_STATUS_CAN_SEND_DATA);
  g_byte_array_set_size (a, 0);
  gst_spice_agent_write_file_xfer_status (a, 7,
      VD_AGENT_FILE_XFER_STATUS_NOT_ENOUGH_SPACE, G_GINT64_CONSTANT (1) << 30);
  b = message_body (a, &type, &size);
  fail_unless_equals_int (size, sizeof (VDAgentFileXferStatusMessage) +
      sizeof (VDAgentFileXferStatusNotEnoughSpace));
  fail_unless_equals_uint64 (GST_READ_UINT64_LE (b + 8),
      G_GUINT64_CONSTANT (1) << 30);
  g_byte_array_set_size (a, 0);
  gst_spice_agent_write_file_xfer_status (a, 7,
      VD_AGENT_FILE_XFER_STATUS_ERROR, G_IO_ERROR_INVALID_FILENAME);
  b = message_body (a, &type, &size);
  fail_unless_equals_int (size, sizeof (VDAgentFileXferStatusMessage) +
      sizeof (VDAgentFileXferStatusError));
  fail_unless_equals_int (b[8], VD_AGENT_FILE_XFER_STATUS_ERROR_GLIB_IO);
  fail_unless_equals_int (GST_READ_UINT32_LE (b + 9),
      G_IO_ERROR_INVALID_FILENAME);
  g_byte_array_set_size (a, 0);
  gst_spice_agent_write_file_xfer_status (a, 7,
      VD_AGENT_FILE_XFER_STATUS_ERROR, -1);
  b = message_body (a, &type, &size);
  fail_unless_equals_int (size, sizeof (VDAgentFileXferStatusMessage));
  fail_if (gst_spice_agent_parse_file_xfer_status (b, 7, &id, &result));
  g_byte_array_unref (a);
}

GST_END_TEST;

static Suite *
agent_events_suite (void)
{
  Suite *s = suite_create ("agent-events");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_agent_info_event);
  tcase_add_test (tc, test_clipboard_events);
  tcase_add_test (tc, test_monitors_event);
  tcase_add_test (tc, test_reader_chunks);
  tcase_add_test (tc, test_reader_malformed);
  tcase_add_test (tc, test_clipboard_zero_copy);
  tcase_add_test (tc, test_monitors_wire);
  tcase_add_test (tc, test_file_xfer_events);
  tcase_add_test (tc, test_file_xfer_wire);
  return s;
}

GST_CHECK_MAIN (agent_events);
