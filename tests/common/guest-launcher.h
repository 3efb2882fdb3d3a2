/* gst-spice tests: start and drive the SPICE test guest (spice-test-guest).
 *
 * Works without a running GMainLoop: a thread reads the guest's stdout and
 * keeps every line; the calling thread waits on a condition variable.
 *
 *   GuestProcess *gp = guest_process_start (NULL, &err);     // idle guest
 *   gchar *uri = guest_process_get_uri (gp);   // "spice://127.0.0.1:PORT"
 *   guest_process_command (gp, "key");
 *   gchar *l = guest_process_wait_line (gp, "box 1", 20000);  // or NULL
 *   guest_process_stop (gp);
 *
 * The binary is found as, in order: $GST_SPICE_TEST_GUEST,
 * $GST_SPICE_BUILD_DIR/tools/spice-test-guest, the path it was built at.
 * The launcher adds --port (a free loopback port) and --exit-on-eof to the
 * arguments, and the guest gets SIGTERM when the thread that started it
 * dies, so a crashed test leaves no guest behind.
 *
 * Every line the guest prints is echoed to stderr as "[guest PID] LINE".
 */
#ifndef TEST_GUEST_LAUNCHER_H
#define TEST_GUEST_LAUNCHER_H

#include <glib.h>

G_BEGIN_DECLS

#define GUEST_BINARY_ENV      "GST_SPICE_TEST_GUEST"
#define GUEST_BINARY_RELPATH  "tools/spice-test-guest"

/* generous bounds for a loaded 2-core machine */
#define GUEST_START_TIMEOUT_MS   30000
#define GUEST_LINE_TIMEOUT_MS    30000
#define GUEST_STOP_TIMEOUT_MS    15000

typedef struct _GuestProcess GuestProcess;

/* Path of the guest binary (see above); newly allocated. */
gchar *guest_process_find_binary (void);

/* Starts the guest with extra_args (NULL-terminated, may be NULL; do not
 * pass --port) and waits until it printed "listening". Retries a few times
 * with another port if the chosen one was taken meanwhile. */
GuestProcess *guest_process_start (const gchar * const *extra_args,
    GError ** error);

guint guest_process_get_port (GuestProcess * gp);
GPid guest_process_get_pid (GuestProcess * gp);
/* "spice://127.0.0.1:PORT"; free with g_free */
gchar *guest_process_get_uri (GuestProcess * gp);

/* Sends one control command line (no newline needed). */
void guest_process_command (GuestProcess * gp, const gchar * fmt, ...)
    G_GNUC_PRINTF (2, 3);

/* Waits for the next line starting with prefix, searching from the read
 * cursor; on success moves the cursor past that line and returns a copy.
 * NULL after timeout_ms or when the guest exited without printing it. */
gchar *guest_process_wait_line (GuestProcess * gp, const gchar * prefix,
    guint timeout_ms);

/* Number of lines received so far: a mark for guest_process_wait_line_from. */
guint guest_process_mark (GuestProcess * gp);

/* Like wait_line, but searches from line index from and leaves the cursor
 * alone; *index (may be NULL) receives the index of the matching line. */
gchar *guest_process_wait_line_from (GuestProcess * gp, guint from,
    const gchar * prefix, guint timeout_ms, guint * index);

/* Searches the whole history (from line index from), without waiting. */
gchar *guest_process_find_line (GuestProcess * gp, guint from,
    const gchar * prefix, guint * index);

/* Counts history lines (from index from) that start with prefix. */
guint guest_process_count_lines (GuestProcess * gp, guint from,
    const gchar * prefix);

/* A copy of every line so far; free with g_strfreev. */
gchar **guest_process_get_lines (GuestProcess * gp);

/* `dump` to a temporary PPM, wait for "dumped", read it back (BGRx,
 * stride w * 4, g_free the buffer). */
gboolean guest_process_dump (GuestProcess * gp, guint8 ** bgrx, gint * w,
    gint * h);

gboolean guest_process_is_running (GuestProcess * gp);

/* SIGTERM, wait up to GUEST_STOP_TIMEOUT_MS, then SIGKILL; frees gp.
 * Returns the exit code, or -1 if it was killed by a signal. NULL-safe. */
gint guest_process_stop (GuestProcess * gp);

/* ---- helpers for tests against any SPICE server ---- */

/* A TCP port on 127.0.0.1 that was free a moment ago. */
guint test_pick_free_port (void);

/* Runs `openssl ARGS…` in @dir (output discarded); TRUE if it exited 0. */
gboolean test_run_openssl (const gchar * dir, const gchar * const *args);

/* How much slower than native this run is: CK_TIMEOUT_MULTIPLIER, which the
 * asan (4) and valgrind (20) test setups set; 1 otherwise. Deadlines that
 * wait for something to happen scale by it (bounds on the result do not). */
guint test_time_factor (void);

/* Runs `spicy-screenshot -h host -p|-s port [-w password] -o TMP` (-s: the
 * TLS port, where @tls) under `timeout -k 5 timeout_s`, with @env_add
 * (NULL-terminated NAME, VALUE pairs) added to its environment, and reads
 * the PPM where it wrote one and @bgrx is given (BGRx, stride w * 4;
 * *@got_picture says whether it did). spicy-screenshot writes the picture at
 * its first display invalidate. Returns its exit status (-1: not started,
 * 128: killed by a signal); *@output (where given): its stdout and
 * stderr. */
gint test_spicy_screenshot_status (const gchar * host, guint port,
    gboolean tls, const gchar * password, const gchar * const *env_add,
    guint timeout_s, guint8 ** bgrx, gint * w, gint * h,
    gboolean * got_picture, gchar ** output);

/* The same on the plain port: FALSE with an error (including the tool's
 * output) if no picture was written, e.g. on a refused password. */
gboolean test_spicy_screenshot (const gchar * host, guint port,
    const gchar * password, guint timeout_s, guint8 ** bgrx, gint * w,
    gint * h, GError ** error);

G_END_DECLS

#endif /* TEST_GUEST_LAUNCHER_H */
