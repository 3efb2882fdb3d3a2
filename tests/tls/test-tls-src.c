/* gst-spice tests: spicesrc to TLS-only upstreams (qemu with tls-port and
 * an x509-dir made here; the test guest with --tls-port)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The right CA and subject give pictures (the guest's exactly); a CA that
 * did not sign the certificate, a wrong cert-subject and a host name the
 * certificate does not hold are each refused with RESOURCE/NOT_AUTHORIZED
 * and a message that names that reason.
 */
#include <string.h>

#include <gst/app/gstappsink.h>

#include "tls-util.h"

/* how one spicesrc run ended: a frame (its pixels) or an error */
typedef struct
{
  guint8 *px;
  gint w, h;
  GError *err;
} SrcResult;

static void
src_result_clear (SrcResult * r)
{
  g_free (r->px);
  g_clear_error (&r->err);
  memset (r, 0, sizeof (*r));
}

/* spicesrc @uri with ca-file @ca and cert-subject @subject (may be NULL)
 * until its first frame or its first error */
static void
run_src (const gchar * uri, const gchar * ca, const gchar * subject,
    SrcResult * r)
{
  GstElement *pipe = gst_pipeline_new (NULL);
  GstElement *src = gst_element_factory_make ("spicesrc", NULL);
  GstElement *sink = gst_element_factory_make ("appsink", NULL);
  GstBus *bus = gst_element_get_bus (pipe);
  gint64 end = g_get_monotonic_time () + 30 * G_USEC_PER_SEC *
      test_time_factor ();

  memset (r, 0, sizeof (*r));
  fail_unless (src && sink);
  g_object_set (src, "uri", uri, "ca-file", ca, "cert-subject", subject, NULL);
  g_object_set (sink, "sync", FALSE, "max-buffers", 1, "drop", TRUE, NULL);
  gst_bin_add_many (GST_BIN (pipe), src, sink, NULL);
  fail_unless (gst_element_link (src, sink));
  fail_unless (gst_element_set_state (pipe, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  while (!r->px && !r->err && g_get_monotonic_time () < end) {
    GstSample *s = gst_app_sink_try_pull_sample (GST_APP_SINK (sink),
        50 * GST_MSECOND);
    GstMessage *m = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);

    if (s) {
      GstStructure *st = gst_caps_get_structure (gst_sample_get_caps (s), 0);
      GstBuffer *b = gst_sample_get_buffer (s);
      gsize size;

      fail_unless (gst_structure_get_int (st, "width", &r->w));
      fail_unless (gst_structure_get_int (st, "height", &r->h));
      size = (gsize) r->w * r->h * 4;
      r->px = g_malloc (size);
      fail_unless_equals_int (gst_buffer_extract (b, 0, r->px, size), size);
      gst_sample_unref (s);
    }
    if (m) {
      gchar *dbg = NULL;

      gst_message_parse_error (m, &r->err, &dbg);
      GST_INFO ("error: %s (%s)", r->err->message, dbg);
      g_free (dbg);
      gst_message_unref (m);
    }
  }
  fail_unless (r->px || r->err, "neither a frame nor an error from %s", uri);
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipe);
}

/* the error is a refused certificate and its message says @why */
static void
assert_refused (const SrcResult * r, const gchar * why)
{
  fail_unless (r->err != NULL, "connected although %s", why);
  fail_unless (g_error_matches (r->err, GST_RESOURCE_ERROR,
          GST_RESOURCE_ERROR_NOT_AUTHORIZED), "%s: %d %s", why,
      r->err->code, r->err->message);
  fail_unless (strstr (r->err->message, "TLS connection to SPICE server"),
      "%s", r->err->message);
  fail_unless (strstr (r->err->message, why), "'%s' does not say '%s'",
      r->err->message, why);
  g_printerr ("refused: %s\n", r->err->message);
}

GST_START_TEST (test_qemu_tls_only)
{
  TlsDir *t;
  guint port;
  gchar *uri, *uri_tls, *uri_name, *why;
  SrcResult r;

  t = tls_dir_new ();
  port = tls_qemu_start (t);
  if (!port) {
    g_printerr ("SKIP: qemu-system-x86_64 not installed\n");
    tls_dir_free (t);
    return;
  }
  uri = g_strdup_printf ("spice://127.0.0.1?tls-port=%u", port);
  uri_tls = g_strdup_printf ("spice+tls://127.0.0.1:%u", port);
  uri_name = g_strdup_printf ("spice://localhost?tls-port=%u", port);

  /* CA and subject right: qemu's display (640x480 before the BIOS draws,
   * then SeaBIOS's 720x400 text mode) */
  run_src (uri, t->ca, TLS_SUBJECT, &r);
  fail_unless (r.px != NULL, "%s", r.err ? r.err->message : "");
  fail_unless (r.w >= 640 && r.h >= 400, "%dx%d", r.w, r.h);
  src_result_clear (&r);
  /* spice+tls:// and the host name check (IP:127.0.0.1 in the
   * certificate) without a subject */
  run_src (uri_tls, t->ca, NULL, &r);
  fail_unless (r.px != NULL, "%s", r.err ? r.err->message : "");
  src_result_clear (&r);

  /* a CA that did not sign it */
  run_src (uri, t->other_ca, TLS_SUBJECT, &r);
  why = g_strdup_printf ("the server's certificate (subject '%s', issuer "
      "'%s') is not signed by a CA in ca-file %s", TLS_SUBJECT, TLS_CA_NAME,
      t->other_ca);
  assert_refused (&r, why);
  g_free (why);
  src_result_clear (&r);
  /* the right CA, another subject */
  run_src (uri, t->ca, TLS_WRONG_SUBJECT, &r);
  why = g_strdup_printf ("the server's certificate subject is '%s', not "
      "cert-subject '%s'", TLS_SUBJECT, TLS_WRONG_SUBJECT);
  assert_refused (&r, why);
  g_free (why);
  src_result_clear (&r);
  /* the right CA, no subject, a host name that the certificate lacks */
  run_src (uri_name, t->ca, NULL, &r);
  assert_refused (&r, "does not name host localhost");
  src_result_clear (&r);

  tls_qemu_stop ();
  g_free (uri);
  g_free (uri_tls);
  g_free (uri_name);
  tls_dir_free (t);
}

GST_END_TEST;

/* Over TLS only, the first frame is the guest's picture, pixel for pixel */
GST_START_TEST (test_guest_tls_exact)
{
  TlsDir *t = tls_dir_new ();
  guint tls_port;
  GuestProcess *gp = tls_guest_start (t, &tls_port);
  gchar *uri = g_strdup_printf ("spice://127.0.0.1?tls-port=%u", tls_port);
  guint8 *dump = NULL;
  gint w, h;
  SrcResult r;

  run_src (uri, t->ca, TLS_SUBJECT, &r);
  fail_unless (r.px != NULL, "%s", r.err ? r.err->message : "");
  fail_unless (guest_process_dump (gp, &dump, &w, &h));
  fail_unless_equals_int (r.w, w);
  fail_unless_equals_int (r.h, h);
  fail_unless_equals_uint64 (test_bgrx_count_diff (r.px, w * 4, dump, w * 4,
          w, h, NULL, NULL), 0);
  g_free (dump);
  src_result_clear (&r);
  /* the guest's plain port is no way around a wrong CA: the URI names
   * only the TLS port */
  run_src (uri, t->other_ca, TLS_SUBJECT, &r);
  assert_refused (&r, "is not signed by a CA in ca-file");
  src_result_clear (&r);

  guest_process_stop (gp);
  g_free (uri);
  tls_dir_free (t);
}

GST_END_TEST;

/* A plain SPICE port given as the TLS port: no certificate was seen, so
 * not a refused one; the message says what it saw */
GST_START_TEST (test_plain_port_as_tls_port)
{
  TlsDir *t = tls_dir_new ();
  GuestProcess *gp = guest_process_start (NULL, NULL);
  gchar *uri;
  SrcResult r;

  fail_unless (gp != NULL);
  uri = g_strdup_printf ("spice://127.0.0.1?tls-port=%u",
      guest_process_get_port (gp));
  run_src (uri, t->ca, NULL, &r);
  fail_unless (r.err != NULL);
  fail_unless (g_error_matches (r.err, GST_RESOURCE_ERROR,
          GST_RESOURCE_ERROR_OPEN_READ), "%s", r.err->message);
  fail_unless (strstr (r.err->message, "is it the server's TLS port?"), "%s",
      r.err->message);
  g_printerr ("failed: %s\n", r.err->message);
  src_result_clear (&r);
  guest_process_stop (gp);
  g_free (uri);
  tls_dir_free (t);
}

GST_END_TEST;

static Suite *
tls_src_suite (void)
{
  Suite *s = suite_create ("tls-src");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 120);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_qemu_tls_only);
  tcase_add_test (tc, test_guest_tls_exact);
  tcase_add_test (tc, test_plain_port_as_tls_port);
  return s;
}

GST_CHECK_MAIN (tls_src);
