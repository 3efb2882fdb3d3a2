#!/usr/bin/python3
# Debian's spice-html5 in Debian's headless Chromium, against the gateway
# over WebSocket (spicesink's own port, no websockify), as a user opens a
# web console: the page is spice_auto.html served from /usr/share/spice-html5
# by a local HTTP server; Chromium is driven through the DevTools protocol
# (python3-websocket). First `direct` (when named): spice-html5 on the test
# guest's own SPICE port (libspice-server takes WebSocket there too), the
# baseline that tells a browser problem from a gateway one: the exact
# canvas and a key. Then for each shipped pipeline named on the command line
# (transcode-lossless, transcode-vp8) in front of the test guest:
#   - with a stream branch (transcode-vp8), the guest's moving area reaches
#     spice-html5 as a VP8 stream (played in a <video> element);
#   - the canvas equals the guest's own framebuffer (its `dump`) exactly,
#     once at rest;
#   - a key typed in the page reaches the guest ("key down" on its stdout);
#   - a spice-gtk client (spice-test-client) connected at the same time
#     still gets the exact picture.
# Then malformed, oversize, slow and foreign-origin upgrades: refused
# within their bound (8 KiB, handshake-timeout), each logged with its
# reason. Last, the page over HTTPS and spice-html5 over wss:// to the
# sink's TLS port.
#
#   test-html5.py BUILD_DIR SOURCE_DIR [direct] PIPELINE...
# Exit 77 (skipped) only when chromium or spice-html5 is not installed.
# SPDX-License-Identifier: LGPL-2.1-or-later

import os
import shutil
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "common"))
import browser as html5  # noqa: E402  (puts tests/install on the path)
from optest import check, finish  # noqa: E402

BUILD, SOURCE = sys.argv[1], sys.argv[2]
PIPELINES = sys.argv[3:] or ["direct", "transcode-lossless",
                             "transcode-vp8"]


def direct(tmp, web):
    """spice-html5 on the test guest's own port (no gateway): the exact
    canvas and a key. No spice-gtk client beside it: libspice-server takes
    one client at a time, a second one would end the page's session."""
    guest = html5.Guest(BUILD, tmp)
    browser = html5.Browser(tmp)
    try:
        browser.open(web.url("spice_auto.html?host=127.0.0.1&port=%d"
                             % guest.port))
        ref = guest.dump(os.path.join(tmp, "guest-direct.ppm"))
        diff, size = browser.wait_canvas_equal(ref, 90)
        check(diff == 0, "direct: spice-html5 on the guest's own port: the "
              "canvas %s equals the guest's %dx%d desktop (%s pixels differ)"
              % (size, ref[0], ref[1], diff))
        guest.clear_lines()
        browser.type_key("a", "KeyA", 65)
        line = guest.wait_line("key down", 30)
        check(line is not None and line.strip().endswith("0x1e"),
              "direct: the key typed in the page reaches the guest: %s"
              % line)
    finally:
        browser.close()
        guest.stop()


def one_pipeline(name, tmp, web):
    # with a stream branch: moving content first, the picture at rest after
    streaming = name != "transcode-lossless"
    guest = html5.Guest(BUILD, tmp,
                        ["--activity", "busy"] if streaming else [])
    gateway = html5.Gateway(BUILD, SOURCE, name, guest.uri, tmp)
    browser = html5.Browser(tmp)
    client = None
    try:
        check(gateway.wait_listening(60), "%s: the gateway listens" % name)
        browser.open(web.url("spice_auto.html?host=127.0.0.1&port=%d"
                             % gateway.port))
        if streaming:
            # spice-html5 plays VP8 in a <video> element (Media Source
            # Extensions) over the canvas, one per stream
            videos = browser.wait_true(
                "document.querySelectorAll('video').length", 60)
            check(videos, "%s: the moving area reaches spice-html5 as a VP8 "
                  "stream (a <video> element)" % name)
            # meanwhile a spice-gtk client gets the VP8 stream too (its
            # decoder in spice-gtk's debug log)
            gtk = html5.spice_gtk_log(BUILD, gateway.port, 4000,
                                      os.path.join(tmp, "gtk-busy.ppm"))
            check("(vp8dec)" in gtk, "%s: a spice-gtk client beside the "
                  "page decodes the stream with vp8dec" % name)
            guest.command("activity idle")
            check(guest.wait_line("activity idle", 30) is not None,
                  "%s: the guest's activity stops" % name)
        ref = guest.dump(os.path.join(tmp, "guest.ppm"))
        diff, size = browser.wait_canvas_equal(ref, 90)
        check(diff == 0, "%s: spice-html5's canvas %s equals the guest's "
              "%dx%d desktop (%s pixels differ)"
              % (name, size, ref[0], ref[1], diff))
        # a spice-gtk client beside it, same picture
        client = html5.spice_gtk_screenshot(BUILD, gateway.port,
                                            os.path.join(tmp, "gtk.ppm"))
        check(client is not None and
              html5.ppm_diff(client, ref) == 0,
              "%s: a spice-gtk client at the same time gets the exact "
              "picture (%s pixels differ)"
              % (name, None if client is None else html5.ppm_diff(client,
                                                                  ref)))
        # a key typed in the page
        guest.clear_lines()
        browser.type_key("a", "KeyA", 65)
        line = guest.wait_line("key down", 30)
        check(line is not None and line.strip().endswith("0x1e"),
              "%s: the key typed in the page reaches the guest: %s"
              % (name, line))
        # the canvas still exact after the key's echo settled
        ref = guest.dump(os.path.join(tmp, "guest2.ppm"))
        diff, size = browser.wait_canvas_equal(ref, 60)
        check(diff == 0, "%s: after the key, the canvas equals the guest's "
              "desktop again (%s pixels differ)" % (name, diff))
    finally:
        browser.close()
        gateway.stop()
        guest.stop()


def over_tls(tmp):
    """the page over HTTPS and the WebSocket on the sink's TLS port
    (wss://): the same exact picture"""
    cert, key = html5.self_signed(tmp)
    guest = html5.Guest(BUILD, tmp)
    tls_port = html5.free_port()
    gateway = html5.Gateway(BUILD, SOURCE, "transcode-lossless", guest.uri,
                            tmp, ["-D", "TLS_PORT=%d" % tls_port,
                                  "-D", "TLS_CERT_FILE=" + cert,
                                  "-D", "TLS_KEY_FILE=" + key])
    web = html5.WebServer(html5.HTML5_DIR, cert, key)
    browser = html5.Browser(tmp)
    try:
        check(gateway.wait_listening(60), "TLS: the gateway listens")
        browser.open(web.url("spice_auto.html?host=127.0.0.1&port=%d"
                             % tls_port))
        ref = guest.dump(os.path.join(tmp, "guest-tls.ppm"))
        diff, size = browser.wait_canvas_equal(ref, 90)
        check(diff == 0, "TLS: spice-html5 over wss:// to the TLS port: the "
              "canvas %s equals the guest's desktop (%s pixels differ)"
              % (size, diff))
    finally:
        browser.close()
        web.stop()
        gateway.stop()
        guest.stop()


def http_exchange(port, data, timeout):
    """sends @data, returns (what came back, seconds until the close)"""
    s = socket.create_connection(("127.0.0.1", port), 10)
    start = time.monotonic()
    s.sendall(data)
    s.settimeout(timeout)
    got = b""
    try:
        while True:
            b = s.recv(4096)
            if not b:
                break
            got += b
    except (socket.timeout, ConnectionResetError):
        pass
    s.close()
    return got, time.monotonic() - start


def bad_upgrades(tmp):
    """malformed, oversize, slow and foreign upgrades: refused within their
    bound, each an event in the service log with its reason"""
    guest = html5.Guest(BUILD, tmp)
    gateway = html5.Gateway(BUILD, SOURCE, "transcode-lossless", guest.uri,
                            tmp, ["-D", "ALLOWED_ORIGINS=https://console."
                                  "example.org"])
    key = (b"Upgrade: websocket\r\nConnection: Upgrade\r\n"
           b"Sec-WebSocket-Version: 13\r\n"
           b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n")
    try:
        check(gateway.wait_listening(60), "the gateway listens")
        got, _ = http_exchange(gateway.port, b"GET / HTTP/1.1\r\nHost: x"
                               b"\r\n\r\n", 30)
        check(got.startswith(b"HTTP/1.1 400 "), "a GET that is no upgrade: "
              "400 (%r)" % got[:40])
        got, _ = http_exchange(gateway.port, b"GET /" + b"a" * 9000, 30)
        check(got.startswith(b"HTTP/1.1 400 "), "a request over 8 KiB: 400 "
              "(%r)" % got[:40])
        got, _ = http_exchange(gateway.port, b"GET / HTTP/1.1\r\n" + key +
                               b"Origin: https://evil.example\r\n\r\n", 30)
        check(got.startswith(b"HTTP/1.1 403 "), "a page of another origin: "
              "403 (%r)" % got[:40])
        got, _ = http_exchange(gateway.port, b"GET / HTTP/1.1\r\n" + key +
                               b"Origin: https://console.example.org\r\n"
                               b"\r\n", 3)
        check(got.startswith(b"HTTP/1.1 101 "), "a page of the allowed "
              "origin: 101 (%r)" % got[:40])
        # a request that never ends: closed by handshake-timeout (10 s)
        got, took = http_exchange(gateway.port, b"GET / HTTP/1.1\r\n", 60)
        check(got == b"" and 9 < took < 40, "a request that stalls is "
              "closed after handshake-timeout (%.1f s)" % took)
        for reason in ("ws-upgrade", "ws-upgrade-size", "ws-origin",
                       "handshake-timeout"):
            ok = False
            end = time.monotonic() + 10
            while not ok and time.monotonic() < end:
                ok = ("reason=%s " % reason) in gateway.log()
                time.sleep(0.2)
            check(ok, "the service log says reason=%s" % reason)
    finally:
        gateway.stop()
        guest.stop()


def main():
    if not html5.available():
        print("chromium or /usr/share/spice-html5 missing: skipped")
        return 77
    tmp = html5.tempdir()
    print("work directory (kept on a failure): " + tmp)
    web = html5.WebServer("/usr/share/spice-html5")
    try:
        for name in PIPELINES:
            if name == "direct":
                direct(tmp, web)
            else:
                one_pipeline(name, tmp, web)
        bad_upgrades(tmp)
        over_tls(tmp)
    finally:
        web.stop()
    finish()  # exits 1 on a failure, leaving @tmp to look at
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
