/* tests/tls: an x509 directory made with openssl, and the real peers
 * around it (qemu with tls-port, the test guest with --tls-port,
 * spice-test-client with ca-file and cert-subject)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gio/gio.h>
#include <glib/gstdio.h>
#include <gst/gst.h>
#include <gst/check/gstcheck.h>

#include "spicesink-test-util.h"

/* the server certificate's subject, in cert-subject's order */
#define TLS_SUBJECT "C=XX,O=gst-spice,CN=upstream.test"
#define TLS_WRONG_SUBJECT "C=XX,O=gst-spice,CN=other.test"
#define TLS_CA_NAME "CN=gst-spice TLS test CA"

/* qemu's x509-dir layout: ca-cert.pem, server-cert.pem, server-key.pem
 * (subject TLS_SUBJECT, subjectAltName IP:127.0.0.1, signed by the CA);
 * other-ca.pem is a CA that signed nothing of ours */
typedef struct
{
  gchar *dir, *ca, *cert, *key, *other_ca;
} TlsDir;

static inline TlsDir *
tls_dir_new (void)
{
  TlsDir *t = g_new0 (TlsDir, 1);
  const gchar *ca[] = { "req", "-x509", "-newkey", "rsa:2048", "-nodes",
    "-keyout", "ca-key.pem", "-out", "ca-cert.pem", "-days", "2", "-subj",
    "/" TLS_CA_NAME, NULL
  };
  const gchar *req[] = { "req", "-newkey", "rsa:2048", "-nodes", "-keyout",
    "server-key.pem", "-out", "server.csr", "-subj",
    "/C=XX/O=gst-spice/CN=upstream.test", NULL
  };
  const gchar *sign[] = { "x509", "-req", "-in", "server.csr", "-CA",
    "ca-cert.pem", "-CAkey", "ca-key.pem", "-CAcreateserial", "-out",
    "server-cert.pem", "-days", "2", "-extfile", "ext.cnf", NULL
  };
  const gchar *other[] = { "req", "-x509", "-newkey", "rsa:2048", "-nodes",
    "-keyout", "other-ca-key.pem", "-out", "other-ca.pem", "-days", "2",
    "-subj", "/CN=another CA", NULL
  };
  gchar *ext;

  t->dir = g_dir_make_tmp ("gst-spice-tls-XXXXXX", NULL);
  fail_unless (t->dir != NULL);
  ext = g_build_filename (t->dir, "ext.cnf", NULL);
  fail_unless (g_file_set_contents (ext, "subjectAltName=IP:127.0.0.1\n", -1,
          NULL));
  g_free (ext);
  fail_unless (test_run_openssl (t->dir, ca), "openssl: CA");
  fail_unless (test_run_openssl (t->dir, req), "openssl: request");
  fail_unless (test_run_openssl (t->dir, sign), "openssl: signing");
  fail_unless (test_run_openssl (t->dir, other), "openssl: other CA");
  t->ca = g_build_filename (t->dir, "ca-cert.pem", NULL);
  t->cert = g_build_filename (t->dir, "server-cert.pem", NULL);
  t->key = g_build_filename (t->dir, "server-key.pem", NULL);
  t->other_ca = g_build_filename (t->dir, "other-ca.pem", NULL);
  return t;
}

static inline void
tls_dir_free (TlsDir * t)
{
  GDir *d = g_dir_open (t->dir, 0, NULL);
  const gchar *n;

  while (d && (n = g_dir_read_name (d))) {
    gchar *p = g_build_filename (t->dir, n, NULL);

    g_unlink (p);
    g_free (p);
  }
  if (d)
    g_dir_close (d);
  g_rmdir (t->dir);
  g_free (t->dir);
  g_free (t->ca);
  g_free (t->cert);
  g_free (t->key);
  g_free (t->other_ca);
  g_free (t);
}

static GPid tls_qemu_pid G_GNUC_UNUSED;

/* qemu dies with the test process, whatever happens to it */
static inline void
tls_child_setup (gpointer data)
{
  prctl (PR_SET_PDEATHSIG, SIGKILL);
}

/* qemu (TCG, no disk) with only a TLS port, no plain one; 0 if qemu is
 * not installed */
static inline guint
tls_qemu_start (TlsDir * t)
{
  gchar *qemu = g_find_program_in_path ("qemu-system-x86_64");
  guint port;
  gchar *spice;
  GError *err = NULL;

  if (!qemu)
    return 0;
  port = test_pick_free_port ();
  spice = g_strdup_printf ("tls-port=%u,addr=127.0.0.1,x509-dir=%s,"
      "disable-ticketing=on", port, t->dir);
  {
    const gchar *argv[] = { qemu, "-display", "none", "-spice", spice,
      "-m", "16", "-nodefaults", "-vga", "std", "-accel", "tcg", NULL
    };
    fail_unless (g_spawn_async (NULL, (gchar **) argv, NULL,
            G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL,
            tls_child_setup, NULL, &tls_qemu_pid, &err), "%s",
        err ? err->message : "");
  }
  fail_unless (spice_raw_tcp_wait_listen (port, 10000), "qemu does not listen");
  g_free (spice);
  g_free (qemu);
  return port;
}

static inline void
tls_qemu_stop (void)
{
  if (tls_qemu_pid > 0) {
    kill (tls_qemu_pid, SIGKILL);
    waitpid (tls_qemu_pid, NULL, 0);
    tls_qemu_pid = 0;
  }
}

/* the test guest with a TLS port besides its plain one; *tls_port gets it */
static inline GuestProcess *
tls_guest_start (TlsDir * t, guint * tls_port)
{
  gchar *port_arg;
  const gchar *args[] = { "--seed=7", "--tls-port", NULL, "--x509-dir",
    t->dir, NULL
  };
  GError *err = NULL;
  GuestProcess *gp;

  *tls_port = test_pick_free_port ();
  port_arg = g_strdup_printf ("%u", *tls_port);
  args[2] = port_arg;
  gp = guest_process_start (args, &err);
  fail_unless (gp != NULL, "test guest: %s", err ? err->message : "?");
  g_free (port_arg);
  fail_unless (spice_raw_tcp_wait_listen (*tls_port, 10000));
  return gp;
}

/* spice-test-client over TLS only (-s @tls_port) with --ca-file @ca and
 * --cert-subject @subject (may be NULL). Returns its exit status (2: the
 * connection failed); on 0 the settled picture in *bgrx. */
static inline gint
tls_client_shot (guint tls_port, const gchar * ca, const gchar * subject,
    guint8 ** bgrx, gint * w, gint * h)
{
  gchar *ps = g_strdup_printf ("%u", tls_port);
  const gchar *extra[] = { "-s", ps, "--timeout", "20", "--ca-file", ca,
    subject ? "--cert-subject" : NULL, subject, NULL
  };
  gint st = client_shot (0, extra, bgrx, w, h, NULL);

  g_free (ps);
  return st;
}
