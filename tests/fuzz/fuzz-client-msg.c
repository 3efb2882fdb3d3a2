/* libFuzzer: every client -> server message parser of the wire library.
 * Input: one byte selecting the channel type, then a stream of messages
 * with SPICE mini headers, dispatched as spicesink dispatches them.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <stdint.h>
#include <stddef.h>

#include <gst/spice/gstspicewire.h>

int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

static void
dispatch (guint8 channel, guint16 type, const guint8 * body, gsize size)
{
  GstSpiceKeyEvent keys[8];
  GstSpiceStreamReport report;
  guint32 u32a, u32b;
  guint64 u64;
  guint16 u16;
  gint32 i32a, i32b;
  guint8 u8;

  switch (type) {
    case SPICE_MSGC_PONG:
      gst_spice_wire_parse_pong (body, size, &u32a, &u64);
      return;
    default:
      break;
  }
  switch (channel) {
    case SPICE_CHANNEL_MAIN:
      if (type == SPICE_MSGC_MAIN_MOUSE_MODE_REQUEST)
        gst_spice_wire_parse_mouse_mode_request (body, size, &u16);
      break;
    case SPICE_CHANNEL_DISPLAY:
      if (type == SPICE_MSGC_DISPLAY_STREAM_REPORT)
        gst_spice_wire_parse_stream_report (body, size, &report);
      break;
    case SPICE_CHANNEL_INPUTS:
      switch (type) {
        case SPICE_MSGC_INPUTS_KEY_DOWN:
        case SPICE_MSGC_INPUTS_KEY_UP:
          if (gst_spice_wire_parse_key (body, size, &u32a))
            gst_spice_wire_decode_key_code (u32a, keys, G_N_ELEMENTS (keys));
          break;
        case SPICE_MSGC_INPUTS_KEY_MODIFIERS:
          gst_spice_wire_parse_key_modifiers (body, size, &u16);
          break;
        case SPICE_MSGC_INPUTS_KEY_SCANCODE:
          gst_spice_wire_decode_key_bytes (body, size, keys,
              G_N_ELEMENTS (keys));
          break;
        case SPICE_MSGC_INPUTS_MOUSE_MOTION:
          gst_spice_wire_parse_mouse_motion (body, size, &i32a, &i32b, &u16);
          break;
        case SPICE_MSGC_INPUTS_MOUSE_POSITION:
          gst_spice_wire_parse_mouse_position (body, size, &u32a, &u32b, &u16,
              &u8);
          break;
        case SPICE_MSGC_INPUTS_MOUSE_PRESS:
        case SPICE_MSGC_INPUTS_MOUSE_RELEASE:
          gst_spice_wire_parse_mouse_button (body, size, &u8, &u16);
          break;
        default:
          break;
      }
      break;
    default:
      break;
  }
}

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  guint8 channel;

  if (size < 1)
    return 0;
  channel = SPICE_CHANNEL_MAIN + data[0] % 4;     /* main .. cursor */
  data++;
  size--;
  while (size >= GST_SPICE_WIRE_MINI_HEADER_SIZE) {
    GstSpiceMsgHeader h;
    guint32 min_size, max_size;

    if (!gst_spice_wire_parse_header (data, size, TRUE, &h))
      return 0;
    data += GST_SPICE_WIRE_MINI_HEADER_SIZE;
    size -= GST_SPICE_WIRE_MINI_HEADER_SIZE;
    /* the sink refuses a message outside its type's limits */
    if (!gst_spice_wire_client_msg_limits (channel, h.type, &min_size,
            &max_size) || h.size < min_size || h.size > max_size)
      return 0;
    if (h.size > size)
      return 0;
    (void) gst_spice_wire_client_msg_name (channel, h.type);
    dispatch (channel, h.type, data, h.size);
    data += h.size;
    size -= h.size;
  }
  return 0;
}
