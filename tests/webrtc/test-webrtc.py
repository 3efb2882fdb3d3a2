#!/usr/bin/python3
# tests/webrtc: spicewebrtcsink through pipelines/browser.pipeline (run by
# gst-spice-run) in front of the test guest, with Debian's headless
# Chromium as the viewer, driven through the DevTools protocol:
#   - the page at http://127.0.0.1:HTTP_PORT/#token=... plays the guest's
#     desktop: at rest the <video> frame is within 40 dB PSNR of the
#     guest's own picture (ImageMagick's compare);
#   - a key typed and a click made in the page reach the guest (its log:
#     "key down 0x1e", "mouse position X Y buttons=1");
#   - a second tab at the same time plays it too, both connected;
#   - a page with a wrong token is refused (401, the page says so) and the
#     service log has the security event; a POST without a token is
#     refused, an oversize one too (413), both logged;
#   - hostile: 16 idle connections from one address, the 17th closed at
#     once and the idle ones after the 10 s bound (both logged), a page
#     afterwards still plays; a page flooding its data channel (20000
#     messages) and sending a bad scancode is logged (flood, input-scancode)
#     while a second page's key still reaches the guest;
#   - a browser killed without a word (no DELETE, no close) loses its
#     viewer slot once its ICE keepalives go unanswered (within 90 s);
#   - with the guest's agent (--agent): the page's window size is asked of
#     the guest ("agent monitors 1 WxH", again after the window changes),
#     the page's clipboard reaches it ("agent clipboard text N TEXT") and
#     the guest's reaches the page;
#   - sound: the guest's tone (--audio tone) reaches the page as Opus
#     (its audio receiver's packets and energy, getStats());
#   - pipelines/transcode-vp8-browser.pipeline: a spice-gtk client
#     (spice-test-client) gets the exact picture while a browser plays it
#     within 40 dB, and the browser's key reaches the guest;
#   - encoder=x264enc and encoder=vp8enc play too (getStats: the browser
#     decodes H264 resp. VP8; the frame at the desktop's size, >= 25 dB:
#     4:2:0 caps the guest's text at 28.4 dB).
# Skipped (77) without chromium or python3-websocket, or without the
# WebRTC plugin (no gstreamer-webrtc or libnice at build time).
#
#   test-webrtc.py BUILD_DIR SOURCE_DIR
# SPDX-License-Identifier: LGPL-2.1-or-later

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "common"))
import browser  # noqa: E402  (puts tests/install on the path)
from optest import check, finish  # noqa: E402

BUILD, SOURCE = sys.argv[1], sys.argv[2]
TOKEN = "webrtc-test-token"
MIN_PSNR = 40.0

PLAYING_JS = ("(function () { var v = document.getElementById('screen');"
              " return v && v.videoWidth > 0 && v.readyState >= 2 &&"
              " document.getElementById('status').textContent =="
              " 'connected'; })()")


def wait_psnr(page, guest, tmp, timeout):
    """the best PSNR of the page's video against the guest's picture within
    @timeout (it stops early once MIN_PSNR is reached), and the frame's
    size"""
    ref = guest.dump(os.path.join(tmp, "guest.ppm"))
    best, size = 0.0, "(none)"
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        pic = page.video()
        if pic:
            size = "%dx%d" % pic[:2]
            best = max(best, browser.psnr(pic, ref, tmp))
            if best >= MIN_PSNR:
                break
        time.sleep(0.5)
    return best, size, ref


def post(port, body, headers):
    """(status, text) of a POST to /whep"""
    req = urllib.request.Request("http://127.0.0.1:%d/whep" % port,
                                 data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def wait_log(gateway, pattern, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if re.search(pattern, gateway.log()):
            return True
        time.sleep(0.2)
    return False


def browser_only(tmp):
    token_file = os.path.join(tmp, "token")
    with open(token_file, "w") as f:
        f.write(TOKEN + "\n")
    guest = browser.Guest(BUILD, tmp)
    gateway = browser.Gateway(BUILD, SOURCE, "browser", guest.uri, tmp,
                              ["-D", "PASSWORD_FILE=" + token_file],
                              port_variable="HTTP_PORT")
    chromium = browser.Browser(tmp, browser.WEBRTC_ARGS)
    url = "http://127.0.0.1:%d/#token=%s" % (gateway.port, TOKEN)
    try:
        check(gateway.wait_listening(60), "the gateway serves HTTP")
        chromium.open(url)
        playing = chromium.wait_true(PLAYING_JS, 60)
        check(playing, "the page plays the desktop over WebRTC (%s)"
              % chromium.evaluate("document.getElementById('status')"
                                  ".textContent"))
        best, size, ref = wait_psnr(chromium, guest, tmp, 30)
        check(best >= MIN_PSNR, "at rest the <video> frame %s is within "
              "%.0f dB of the guest's %dx%d desktop: %.1f dB PSNR"
              % (size, MIN_PSNR, ref[0], ref[1], best))

        guest.clear_lines()
        chromium.type_key("a", "KeyA", 65)
        line = guest.wait_line("key down", 30)
        check(line is not None and line.strip().endswith("0x1e"),
              "a key typed in the page reaches the guest: %s" % line)

        guest.clear_lines()
        chromium.click(300, 200)
        line = guest.wait_line("mouse position", 30)
        while line is not None and "buttons=1" not in line:
            line = guest.wait_line("mouse position", 10)
        pos = re.search(r"mouse position (\d+) (\d+)", line or "")
        check(pos is not None and abs(int(pos.group(1)) - 300) <= 2 and
              abs(int(pos.group(2)) - 200) <= 2,
              "a click at (300,200) of the page reaches the guest there, "
              "button down: %s" % line)

        second = chromium.new_page(url)
        check(second.wait_true(PLAYING_JS, 60), "a second tab plays the "
              "desktop at the same time")
        best2, size2, ref = wait_psnr(second, guest, tmp, 30)
        check(best2 >= MIN_PSNR and chromium.evaluate(PLAYING_JS),
              "both tabs connected, the second's frame within %.0f dB: "
              "%.1f dB" % (MIN_PSNR, best2))

        wrong = chromium.new_page("http://127.0.0.1:%d/#token=wrong"
                                  % gateway.port)
        refused = wrong.wait_true(
            "document.getElementById('status').textContent"
            ".indexOf('refused (401)') == 0", 30)
        check(refused, "a page with a wrong token is refused (401): %s"
              % wrong.evaluate("document.getElementById('status')"
                               ".textContent"))
        check(wait_log(gateway, r"security: event=wrong-ticket peer=127\.0\.0"
                       r"\.1 .*reason=whep-token", 10),
              "the service log has the wrong token as a security event")

        status, _ = post(gateway.port, b"v=0\r\n",
                         {"Content-Type": "application/sdp"})
        check(status == 401, "an offer without a token: %d" % status)
        status, _ = post(gateway.port, b"x" * (70 * 1024),
                         {"Content-Type": "application/sdp",
                          "Authorization": "Bearer " + TOKEN})
        check(status == 413 and wait_log(gateway, r"reason=whep-size", 10),
              "an oversize offer is refused before it is read (%d) and "
              "logged" % status)
    finally:
        chromium.close()
        gateway.stop()
        guest.stop()


def hostile(tmp):
    """connections that send nothing, a flooding page, bad messages"""
    import socket
    guest = browser.Guest(BUILD, tmp)
    gateway = browser.Gateway(BUILD, SOURCE, "browser", guest.uri, tmp,
                              port_variable="HTTP_PORT")
    chromium = browser.Browser(tmp, browser.WEBRTC_ARGS)
    url = "http://127.0.0.1:%d/" % gateway.port
    idle = []
    try:
        check(gateway.wait_listening(60), "hostile: the gateway serves HTTP")
        time.sleep(1)   # wait_listening's own connection is gone
        for i in range(16):
            idle.append(socket.create_connection(("127.0.0.1",
                                                  gateway.port), 5))
        extra = socket.create_connection(("127.0.0.1", gateway.port), 5)
        extra.settimeout(5)
        start = time.monotonic()
        try:
            got = extra.recv(1)
        except OSError:
            got = None
        check(got == b"" and time.monotonic() - start < 5,
              "hostile: a 17th connection from one address is closed at "
              "once (%r)" % got)
        extra.close()
        check(wait_log(gateway, r"event=refused peer=127\.0\.0\.1 .*"
                       r"reason=http-connections", 10),
              "hostile: ... and logged (reason=http-connections)")
        closed = []
        for sock in idle:
            sock.settimeout(30)
            try:
                closed.append(sock.recv(1) == b"")
            except OSError:
                closed.append(False)
        took = time.monotonic() - start
        check(all(closed) and 8 < took < 30, "hostile: the 16 that sent "
              "nothing are closed after the 10 s bound (%.1f s, %d of 16)"
              % (took, sum(closed)))
        check(wait_log(gateway, r"reason=http-timeout", 10),
              "hostile: ... and logged (reason=http-timeout)")
        if shutil.which("fail2ban-regex"):
            r = subprocess.run(
                ["fail2ban-regex", gateway.log_path,
                 os.path.join(SOURCE, "tools", "fail2ban", "gst-spice.conf")],
                capture_output=True, text=True)
            m = re.search(r"Lines: \d+ lines, \d+ ignored, (\d+) matched",
                          r.stdout)
            check(m is not None and int(m.group(1)) >= 1,
                  "hostile: the fail2ban filter counts the address that "
                  "held too many connections (%s)" % (m.group(0) if m
                                                      else r.stdout[-200:]))

        chromium.open(url)
        check(chromium.wait_true(PLAYING_JS, 60), "hostile: a page "
              "afterwards plays")
        second = chromium.new_page(url)
        check(second.wait_true(PLAYING_JS, 60), "hostile: a second page "
              "plays")
        chromium.evaluate("(function () { for (var i = 0; i < 20000; i++) "
                          "channel.send('m ' + (i % 1000) + ' 10'); })()")
        check(wait_log(gateway, r"security: event=flood .*reason=input-rate",
                       20), "hostile: the page's flood is logged "
              "(reason=input-rate)")
        time.sleep(1.5)     # a new second: messages are read again
        chromium.evaluate("channel.send('k 1 9999')")
        check(wait_log(gateway, r"reason=input-scancode", 20),
              "hostile: a scancode out of range is refused and logged")
        guest.clear_lines()
        second.type_key("a", "KeyA", 65)
        line = guest.wait_line("key down", 30)
        check(line is not None and line.strip().endswith("0x1e"),
              "hostile: meanwhile the second page's key reaches the guest: "
              "%s" % line)
    finally:
        for sock in idle:
            sock.close()
        chromium.close()
        gateway.stop()
        guest.stop()


def vanished(tmp):
    """a browser that disappears (killed) gives its slot back"""
    import signal
    guest = browser.Guest(BUILD, tmp)
    gateway = browser.Gateway(BUILD, SOURCE, "browser", guest.uri, tmp,
                              ["--stats-interval", "2"],
                              port_variable="HTTP_PORT")
    chromium = browser.Browser(tmp, browser.WEBRTC_ARGS)
    try:
        check(gateway.wait_listening(60), "vanished: the gateway serves HTTP")
        chromium.open("http://127.0.0.1:%d/" % gateway.port)
        check(chromium.wait_true(PLAYING_JS, 60), "vanished: the page plays")
        check(wait_log(gateway, r"w: viewers=1 ", 20),
              "vanished: the gateway counts one viewer")
        os.killpg(chromium.proc.pid, signal.SIGKILL)
        start = time.monotonic()
        gone = False
        while not gone and time.monotonic() - start < 90:
            lines = [ln for ln in gateway.log().splitlines()
                     if "w: viewers=" in ln]
            gone = bool(lines) and "w: viewers=0 " in lines[-1]
            time.sleep(1)
        check(gone, "vanished: the killed browser's viewer ends by itself "
              "(after %.0f s)" % (time.monotonic() - start))
    finally:
        chromium.close()
        gateway.stop()
        guest.stop()


def with_agent(tmp):
    """the window's size and the clipboard, through the guest's agent"""
    guest = browser.Guest(BUILD, tmp, ["--agent"])
    gateway = browser.Gateway(BUILD, SOURCE, "browser", guest.uri, tmp,
                              port_variable="HTTP_PORT")
    chromium = browser.Browser(tmp, browser.WEBRTC_ARGS)
    origin = "http://127.0.0.1:%d" % gateway.port
    try:
        check(gateway.wait_listening(60), "agent: the gateway serves HTTP")
        chromium.call("Browser.grantPermissions", origin=origin,
                      permissions=["clipboardReadWrite",
                                   "clipboardSanitizedWrite"])
        chromium.open(origin + "/")
        check(chromium.wait_true(PLAYING_JS, 60), "agent: the page plays")
        size = chromium.evaluate("window.innerWidth + 'x' + "
                                 "window.innerHeight")
        line = guest.wait_line("agent monitors", 30)
        check(line is not None and (" %s+0+0" % size) in line,
              "agent: the page's %s window is asked of the guest: %s"
              % (size, line))
        guest.clear_lines()
        chromium.call("Emulation.setDeviceMetricsOverride", width=1024,
                      height=768, deviceScaleFactor=1, mobile=False)
        line = guest.wait_line("agent monitors", 30)
        check(line is not None and " 1024x768+0+0" in line,
              "agent: after the window changed to 1024x768: %s" % line)

        guest.clear_lines()
        # headless: the page has the focus only when told (the clipboard
        # is a focused page's)
        chromium.call("Emulation.setFocusEmulationEnabled", enabled=True)
        chromium.evaluate("navigator.clipboard.writeText('from the "
                          "browser').then(function () { window.dispatchEvent"
                          "(new Event('focus')); })", await_promise=True)
        line = guest.wait_line("agent clipboard text", 30)
        check(line is not None and
              line.endswith("text 16 from the browser"),
              "agent: the page's clipboard reaches the guest: %s" % line)

        guest.command("agent clipboard from the guest")
        got = chromium.wait_true("window.guestClipboard === 'from the guest'",
                                 30)
        check(got, "agent: the guest's clipboard reaches the page (%s)"
              % chromium.evaluate("window.guestClipboard"))
    finally:
        chromium.close()
        gateway.stop()
        guest.stop()


AUDIO_STATS_JS = """(async function () {
  var out = null;
  (await pc.getStats()).forEach(function (r) {
    if (r.type === 'inbound-rtp' && r.kind === 'audio')
      out = {packets: r.packetsReceived, energy: r.totalAudioEnergy || 0,
             samples: r.totalSamplesReceived || 0};
  });
  return JSON.stringify(out);
})()"""


def sound(tmp):
    """the guest's tone as Opus in the page"""
    import json
    guest = browser.Guest(BUILD, tmp, ["--audio", "tone"])
    gateway = browser.Gateway(BUILD, SOURCE, "browser", guest.uri, tmp,
                              port_variable="HTTP_PORT")
    chromium = browser.Browser(tmp, browser.WEBRTC_ARGS)
    try:
        check(gateway.wait_listening(60), "sound: the gateway serves HTTP")
        chromium.open("http://127.0.0.1:%d/" % gateway.port)
        check(chromium.wait_true(PLAYING_JS, 60), "sound: the page plays")
        chromium.click(300, 200)
        stats = None
        end = time.monotonic() + 30
        while time.monotonic() < end:
            value = chromium.evaluate(AUDIO_STATS_JS, await_promise=True)
            stats = json.loads(value) if value else None
            if stats and stats["packets"] > 100 and stats["energy"] > 0:
                break
            time.sleep(1)
        check(stats is not None and stats["packets"] > 100 and
              stats["energy"] > 0, "sound: the guest's tone reaches the page "
              "as Opus (%s)" % stats)
    finally:
        chromium.close()
        gateway.stop()
        guest.stop()


def both(tmp):
    """SPICE clients and browsers from one upstream session"""
    guest = browser.Guest(BUILD, tmp)
    http_port = browser.free_port()
    gateway = browser.Gateway(BUILD, SOURCE, "transcode-vp8-browser",
                              guest.uri, tmp,
                              ["-D", "HTTP_PORT=%d" % http_port])
    chromium = browser.Browser(tmp, browser.WEBRTC_ARGS)
    try:
        check(gateway.wait_listening(60), "both: the gateway listens")
        chromium.open("http://127.0.0.1:%d/" % http_port)
        check(chromium.wait_true(PLAYING_JS, 60), "both: the page plays the "
              "desktop")
        best, size, ref = wait_psnr(chromium, guest, tmp, 30)
        client = browser.spice_gtk_screenshot(BUILD, gateway.port,
                                              os.path.join(tmp, "gtk.ppm"))
        diff = None if client is None else browser.ppm_diff(client, ref)
        check(diff == 0, "both: a spice-gtk client gets the exact picture "
              "(%s pixels differ)" % diff)
        check(best >= MIN_PSNR, "both: meanwhile the browser's frame %s is "
              "within %.0f dB: %.1f dB" % (size, MIN_PSNR, best))
        guest.clear_lines()
        chromium.type_key("a", "KeyA", 65)
        line = guest.wait_line("key down", 30)
        check(line is not None and line.strip().endswith("0x1e"),
              "both: the browser's key reaches the guest: %s" % line)
    finally:
        chromium.close()
        gateway.stop()
        guest.stop()


def encoders(tmp):
    """the other encoders spicewebrtcsink names play in the page: H.264
    (x264enc), VP8 and AV1 (av1enc through spicertpav1pay), all 4:2:0 (the
    test guest's text at rest cannot pass 28.4 dB in 4:2:0; a wrong or
    empty picture is below 15)"""
    guest = browser.Guest(BUILD, tmp)
    chromium = browser.Browser(tmp, browser.WEBRTC_ARGS)
    try:
        for encoder, mime in (("x264enc tune=zerolatency speed-preset=ultrafast "
                               "bitrate=2000", "video/H264"),
                              ("vp8enc deadline=1 target-bitrate=2000000", "video/VP8"),
                              ("av1enc usage-profile=realtime cpu-used=10 "
                               "end-usage=cbr target-bitrate=2000 lag-in-frames=0 "
                               "min-quantizer=4 max-quantizer=56 threads=2",
                               "video/AV1")):
            name = encoder.split()[0]
            gateway = browser.Gateway(BUILD, SOURCE, "browser", guest.uri, tmp,
                                      ["-D", "ENCODER=" + encoder],
                                      port_variable="HTTP_PORT")
            try:
                check(gateway.wait_listening(60), "%s: the gateway serves HTTP" % name)
                chromium.open("http://127.0.0.1:%d/" % gateway.port)
                playing = chromium.wait_true(PLAYING_JS, 60)
                check(playing, "%s: the page plays the desktop (%s)" % (
                    name, chromium.evaluate("document.getElementById('status')"
                                            ".textContent")))
                best, size, ref = wait_psnr(chromium, guest, tmp, 10)
                stats = json.loads(chromium.evaluate(browser.VIDEO_STATS_JS,
                                                     await_promise=True) or "{}")
                check(best >= 25.0 and size == "%dx%d" % ref[:2] and
                      str(stats.get("codec", "")).startswith(mime),
                      "%s: the browser decodes %s (%s), the %s frame at %.1f dB" % (
                          name, mime, stats.get("codec"), size, best))
            finally:
                chromium.open("about:blank")
                gateway.stop()
    finally:
        chromium.close()
        guest.stop()


def main():
    if not browser.available_chromium():
        print("chromium or python3-websocket missing: skipped")
        return 77
    if not os.path.exists(os.path.join(BUILD, "plugins",
                                       "libgstspicewebrtc.so")):
        print("built without spicewebrtcsink (gstreamer-webrtc, libnice, "
              "libsoup 3): skipped")
        return 77
    tmp = browser.tempdir()
    print("work directory (kept on a failure): " + tmp)
    browser_only(tmp)
    hostile(tmp)
    vanished(tmp)
    with_agent(tmp)
    sound(tmp)
    both(tmp)
    encoders(tmp)
    finish()  # exits 1 on a failure, leaving @tmp to look at
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
