/* gst-spice test guest: a small guest agent on libspice-server's char device
 * interface (subtype "vdagent", the way qemu attaches virtio-serial's
 * com.redhat.spice.0 port). See guest-agent.c and docs/test-guest.md
 * "Agent".
 */
#ifndef GUEST_AGENT_H
#define GUEST_AGENT_H

#include <glib.h>
#include <spice.h>

G_BEGIN_DECLS

typedef struct _GuestAgent GuestAgent;
typedef void (*GuestAgentLogFunc) (const gchar * fmt, ...);
/* a client's monitors config asked for a @width x @height primary surface
 * (monitor 0's size, already within the guest's size limits), with
 * @enabled monitors of a size (not 0x0) in it */
typedef void (*GuestAgentResizeFunc) (gint width, gint height,
    guint enabled, gpointer user_data);

/* Main thread, after spice_server_init(): attaches the agent, so clients see
 * AGENT_CONNECTED. Sizes asked for are clamped to @min_size..@max_size.
 * Files a client sends are saved in @xfer_dir (an existing directory;
 * NULL: file transfer is disabled). With @agent_mouse, client-mode
 * positions reach the agent (VD_AGENT_MOUSE_STATE, logged with their
 * display id) instead of the tablet. */
GuestAgent *guest_agent_new (SpiceServer * server, gint min_size,
    gint max_size, const gchar * xfer_dir, gboolean agent_mouse,
    GuestAgentResizeFunc resize, gpointer user_data, GuestAgentLogFunc log);
/* Main thread: the next file a client starts is answered @status (a
 * VD_AGENT_FILE_XFER_STATUS_*) instead of CAN_SEND_DATA, as a guest that
 * refuses it would (no space, a locked session...) */
void guest_agent_set_xfer_answer (GuestAgent * a, guint32 status);
/* Main thread: the guest owns the clipboard with @text (a GRAB to the
 * client; its REQUEST is answered with @text) */
void guest_agent_set_clipboard (GuestAgent * a, const gchar * text);
/* Main thread */
void guest_agent_free (GuestAgent * a);

G_END_DECLS

#endif /* GUEST_AGENT_H */
