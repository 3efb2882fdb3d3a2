# tests/common: the parts of a browser test against the gateway (tests/html5,
# tests/webrtc, bench/html5-latency.py): the test guest, gst-spice-run with
# a shipped pipeline, a local web server, headless Chromium driven through
# the DevTools protocol (python3-websocket), spice-test-client, PPM
# pictures.
# SPDX-License-Identifier: LGPL-2.1-or-later

import base64
import functools
import http.server
import json
import os
import queue
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "install"))
from optest import free_port  # noqa: E402

HTML5_DIR = "/usr/share/spice-html5"


def available_chromium():
    """headless Chromium and the DevTools client are installed"""
    try:
        import websocket  # noqa: F401
    except ImportError:
        return False
    return shutil.which("chromium") is not None


def available():
    """... and Debian's spice-html5"""
    return available_chromium() and os.path.exists(
        os.path.join(HTML5_DIR, "spice_auto.html"))


def tempdir():
    return tempfile.mkdtemp(prefix="gst-spice-html5-")


def read_ppm(path):
    """(width, height, RGB bytes) of a binary PPM"""
    data = open(path, "rb").read()
    fields, pos = [], 0
    while len(fields) < 4:
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.index(b"\n", pos) + 1
            continue
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    assert fields[0] == b"P6" and fields[3] == b"255", path
    w, h = int(fields[1]), int(fields[2])
    return w, h, data[pos + 1:pos + 1 + w * h * 3]


def rgb_diff(a, b):
    """pixels whose R, G or B differ between two RGB byte strings"""
    if a == b:
        return 0
    n = min(len(a), len(b)) // 3
    d = sum(1 for i in range(n) if a[3 * i:3 * i + 3] != b[3 * i:3 * i + 3])
    return d + abs(len(a) - len(b)) // 3


def ppm_diff(a, b):
    """pixels differing between two (w, h, rgb) pictures (all: other size)"""
    if a[:2] != b[:2]:
        return max(a[0] * a[1], b[0] * b[1])
    return rgb_diff(a[2], b[2])


def _kill_group(proc, timeout=10):
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


class Guest:
    """spice-test-guest on a free loopback port; its stdout lines kept"""

    def __init__(self, build, tmp, args=()):
        binary = os.path.join(build, "tools", "spice-test-guest")
        for attempt in range(5):
            self.port = free_port()
            self.proc = subprocess.Popen(
                [binary, "--port", str(self.port), "--exit-on-eof"] +
                list(args), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, text=True, start_new_session=True)
            self.lines = queue.Queue()
            threading.Thread(target=self._read, daemon=True).start()
            if self.wait_line("listening", 30) is not None:
                break
            _kill_group(self.proc)
        else:
            raise RuntimeError("the test guest does not start")
        self.uri = "spice://127.0.0.1:%d" % self.port

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def clear_lines(self):
        while not self.lines.empty():
            self.lines.get_nowait()

    def wait_line(self, prefix, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                line = self.lines.get(timeout=max(0.1, end - time.monotonic()))
            except queue.Empty:
                return None
            if line is None:
                return None
            if line.startswith(prefix):
                return line
        return None

    def command(self, text):
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def dump(self, path):
        """the guest's framebuffer now, (w, h, rgb)"""
        self.clear_lines()
        self.command("dump " + path)
        if self.wait_line("dumped", 30) is None:
            raise RuntimeError("the guest did not dump its picture")
        return read_ppm(path)

    def stop(self):
        _kill_group(self.proc)


class Gateway:
    """gst-spice-run with pipelines/NAME.pipeline in front of @upstream,
    listening on a free port given as @port_variable"""

    def __init__(self, build, source, name, upstream, tmp, args=(),
                 port_variable="LISTEN_PORT"):
        self.port = free_port()
        self.log_path = os.path.join(tmp, "gateway-%s.log" % name)
        env = dict(os.environ)
        env.setdefault("GST_PLUGIN_PATH_1_0", os.path.join(build, "plugins"))
        self.proc = subprocess.Popen(
            [os.path.join(build, "tools", "runner", "gst-spice-run"),
             "-D", "UPSTREAM=" + upstream,
             "-D", "%s=%d" % (port_variable, self.port)] + list(args) +
            [os.path.join(source, "pipelines", name + ".pipeline")],
            stdout=open(self.log_path, "w"), stderr=subprocess.STDOUT,
            env=env, start_new_session=True)

    def wait_listening(self, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end and self.proc.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", self.port), 1).close()
                return True
            except OSError:
                time.sleep(0.2)
        return False

    def log(self):
        return open(self.log_path, errors="replace").read()

    def stop(self):
        _kill_group(self.proc)


class WebServer:
    """a threaded HTTP server for @directory on a free loopback port"""

    def __init__(self, directory, cert=None, key=None):
        handler = functools.partial(_QuietHandler, directory=directory)
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                     handler)
        self.scheme = "http"
        if cert:
            import ssl
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(cert, key)
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket,
                                                server_side=True)
            self.scheme = "https"
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, path):
        return "%s://127.0.0.1:%d/%s" % (self.scheme, self.port, path)

    def stop(self):
        self.httpd.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


# the primary surface's canvas as base64 RGBA
CANVAS_JS = """(function () {
  var c = document.querySelector('#spice-screen canvas') ||
      document.querySelector('canvas');
  if (!c || !c.width) return null;
  var d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  var s = '';
  for (var i = 0; i < d.length; i += 0x8000)
    s += String.fromCharCode.apply(null, d.subarray(i, i + 0x8000));
  return JSON.stringify({w: c.width, h: c.height, b: btoa(s)});
})()"""


class Page:
    """one page (tab) of a headless Chromium, through the DevTools
    protocol"""

    def __init__(self, ws_url):
        import websocket
        self.ws = websocket.create_connection(ws_url, timeout=60)
        self.next_id = 0
        self.console = []
        self.call("Runtime.enable")
        self.call("Page.enable")

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method,
                                 "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError("%s: %s" % (method, msg["error"]))
                return msg.get("result", {})
            if msg.get("method") == "Runtime.consoleAPICalled":
                self.console.append(" ".join(
                    str(a.get("value", a.get("description", "")))
                    for a in msg["params"]["args"]))

    def open(self, url):
        self.call("Page.navigate", url=url)

    def evaluate(self, expression, await_promise=False):
        """the value of @expression in the page (None if it has none)"""
        r = self.call("Runtime.evaluate", expression=expression,
                      returnByValue=True, awaitPromise=await_promise)
        return r.get("result", {}).get("value")

    def _picture(self, expression):
        """(w, h, RGB bytes) of the {w, h, b: base64 RGBA} JSON that
        @expression gives, or None"""
        value = self.evaluate(expression)
        if not value:
            return None
        v = json.loads(value)
        rgba = bytearray(base64.b64decode(v["b"]))
        del rgba[3::4]
        return v["w"], v["h"], bytes(rgba)

    def canvas(self):
        """(w, h, RGB bytes) of spice-html5's canvas, or None"""
        return self._picture(CANVAS_JS)

    def video(self):
        """(w, h, RGB bytes) of the frame spicewebrtcsink's page shows
        now, or None"""
        return self._picture(VIDEO_JS)

    def measure_presses(self, samples, warmup=3, seed=1):
        """presses Space @samples + @warmup times, 0.4-1.2 s apart, one at
        a time, each waiting (15 s at most) for the page's window.__lat (a
        latency watcher: t0 set on keydown, a sample pushed when the
        picture shows it, t0 cleared) to take a sample; (the samples in ms
        after the warm-up, the timeouts)"""
        rnd = random.Random(seed)
        timeouts = 0
        for i in range(samples + warmup):
            n = self.evaluate("window.__lat.samples.length")
            self.call("Input.dispatchKeyEvent", type="keyDown", key=" ",
                      code="Space", windowsVirtualKeyCode=32, text=" ")
            time.sleep(0.05)
            self.call("Input.dispatchKeyEvent", type="keyUp", key=" ",
                      code="Space", windowsVirtualKeyCode=32)
            if not self.wait_true("window.__lat.samples.length > %d" % n, 15):
                timeouts += 1
                self.evaluate("window.__lat.t0 = 0")
            time.sleep(rnd.uniform(0.4, 1.2))
        got = json.loads(self.evaluate("JSON.stringify(window.__lat.samples)"))
        return got[warmup:], timeouts

    def wait_true(self, expression, timeout):
        """polls @expression in the page until it is truthy"""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.evaluate(expression):
                return True
            time.sleep(0.3)
        return False

    def wait_canvas_equal(self, ref, timeout):
        """(pixels differing at the end, canvas size): polls until equal"""
        end = time.monotonic() + timeout
        pic = None
        while time.monotonic() < end:
            pic = self.canvas()
            if pic and pic[:2] == ref[:2] and pic[2] == ref[2]:
                return 0, "%dx%d" % pic[:2]
            time.sleep(0.5)
        if pic is None:
            print("spice-html5's console:\n  " +
                  "\n  ".join(self.console[-20:]))
            return ref[0] * ref[1], "(none)"
        return ppm_diff(pic, ref), "%dx%d" % pic[:2]

    def type_key(self, key, code, keycode):
        for kind in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", type=kind, key=key,
                      code=code, windowsVirtualKeyCode=keycode,
                      nativeVirtualKeyCode=keycode,
                      **({"text": key} if kind == "keyDown" else {}))

    def click(self, x, y):
        """a left click at (@x, @y) of the page's viewport"""
        self.call("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y,
                      button="left", clickCount=1)

    def close_page(self):
        try:
            self.ws.close()
        except Exception:
            pass


class Browser(Page):
    """headless Chromium and its first page; more with new_page()"""

    def __init__(self, tmp, args=()):
        self.profile = tempfile.mkdtemp(prefix="chromium-", dir=tmp)
        self.proc = subprocess.Popen(
            ["chromium", "--headless=new", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--window-size=1600,1200",
             # the tests' self-signed certificate (TLS case)
             "--ignore-certificate-errors",
             "--remote-debugging-port=0", "--user-data-dir=" + self.profile]
            + list(args) + ["about:blank"], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True)
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        end = time.monotonic() + 60
        while not os.path.exists(port_file) or \
                not open(port_file).read().strip():
            if time.monotonic() > end or self.proc.poll() is not None:
                raise RuntimeError("chromium does not start")
            time.sleep(0.1)
        self.port = int(open(port_file).read().split()[0])
        pages = []
        while not pages and time.monotonic() < end:
            tabs = json.load(urllib.request.urlopen(
                "http://127.0.0.1:%d/json" % self.port))
            pages = [t for t in tabs if t["type"] == "page"]
        Page.__init__(self, pages[0]["webSocketDebuggerUrl"])
        self.pages = []

    def new_page(self, url="about:blank"):
        """another tab, at @url"""
        req = urllib.request.Request(
            "http://127.0.0.1:%d/json/new?%s" % (
                self.port, urllib.parse.quote(url, safe="")), method="PUT")
        tab = json.load(urllib.request.urlopen(req))
        page = Page(tab["webSocketDebuggerUrl"])
        page.target_id = tab["id"]
        self.pages.append(page)
        return page

    def close_tab(self, page):
        """closes a tab of new_page() (its pagehide runs)"""
        page.close_page()
        urllib.request.urlopen("http://127.0.0.1:%d/json/close/%s" % (
            self.port, page.target_id)).read()
        self.pages.remove(page)

    def close(self):
        for page in self.pages:
            page.close_page()
        self.close_page()
        _kill_group(self.proc)
        shutil.rmtree(self.profile, ignore_errors=True)


# the picture of the page's <video id=screen> (spicewebrtcsink's page) as
# base64 RGBA, drawn into a canvas
VIDEO_JS = """(function () {
  var v = document.getElementById('screen');
  if (!v || !v.videoWidth) return null;
  var c = document.createElement('canvas');
  c.width = v.videoWidth; c.height = v.videoHeight;
  var g = c.getContext('2d');
  g.drawImage(v, 0, 0);
  var d = g.getImageData(0, 0, c.width, c.height).data;
  var s = '';
  for (var i = 0; i < d.length; i += 0x8000)
    s += String.fromCharCode.apply(null, d.subarray(i, i + 0x8000));
  return JSON.stringify({w: c.width, h: c.height, b: btoa(s)});
})()"""


def write_ppm(path, pic):
    with open(path, "wb") as f:
        f.write(b"P6\n%d %d\n255\n" % (pic[0], pic[1]))
        f.write(pic[2])


def psnr(a, b, tmp):
    """PSNR in dB of picture @a against @b (ImageMagick's compare; inf when
    equal, 0 when the sizes differ)"""
    if a[:2] != b[:2]:
        return 0.0
    pa, pb = os.path.join(tmp, "psnr-a.ppm"), os.path.join(tmp, "psnr-b.ppm")
    write_ppm(pa, a)
    write_ppm(pb, b)
    r = subprocess.run(["compare", "-metric", "PSNR", pa, pb, "null:"],
                       capture_output=True, text=True)
    value = r.stderr.strip().split()[0] if r.stderr.strip() else "0"
    return float("inf") if value == "inf" else float(value)


def self_signed(tmp):
    """(cert, key) PEM files for 127.0.0.1, made with openssl"""
    cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048",
                    "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", key, "-out", cert], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return cert, key


def spice_gtk_screenshot(build, port, path, timeout=60):
    """spice-test-client's picture of the gateway, (w, h, rgb) or None"""
    binary = os.path.join(build, "tests", "common", "spice-test-client")
    try:
        subprocess.run([binary, "-p", str(port), "-o", path, "--settle-ms",
                        "1000"], timeout=timeout, check=True,
                       stdout=subprocess.DEVNULL)
    except (subprocess.SubprocessError, OSError):
        return None
    return read_ppm(path)


def spice_gtk_log(build, port, duration_ms, path, timeout=60):
    """spice-test-client connected for @duration_ms with SPICE_DEBUG=1:
    spice-gtk's debug output (which elements its stream decoding made)"""
    binary = os.path.join(build, "tests", "common", "spice-test-client")
    env = dict(os.environ, SPICE_DEBUG="1")
    try:
        r = subprocess.run([binary, "-p", str(port), "-o", path,
                            "--duration-ms", str(duration_ms)],
                           timeout=timeout, env=env, capture_output=True,
                           text=True, errors="replace")
    except (subprocess.SubprocessError, OSError) as e:
        return str(e)
    return r.stdout + r.stderr


# Chromium leaves loopback out of ICE and hides local addresses behind mDNS
# names unless told otherwise; the gateway listens on loopback in tests
WEBRTC_ARGS = ["--allow-loopback-in-peer-connection",
               "--disable-features=WebRtcHideLocalIpsWithMdns",
               "--autoplay-policy=no-user-gesture-required"]

# a latency watcher on spicewebrtcsink's page (Page.measure_presses): t0 at
# the keydown (capture phase), a sample at the first presented frame
# (requestVideoFrameCallback's now) whose key box centre is 64 or more away
# in a channel from its colour at the keydown; false until the video plays
LATENCY_WATCH_JS = """(function () {
  var v = document.getElementById('screen');
  if (!v || !v.videoWidth || !v.requestVideoFrameCallback) return false;
  if (window.__lat) return true;
  var c = document.createElement('canvas');
  c.width = 1; c.height = 1;
  var g = c.getContext('2d', {willReadFrequently: true});
  var L = window.__lat = {t0: 0, base: null, samples: [], frames: 0};
  function px() {
    g.drawImage(v, 64, 64, 1, 1, 0, 0, 1, 1);
    return g.getImageData(0, 0, 1, 1).data;
  }
  function far(a, b) {
    return Math.abs(a[0] - b[0]) >= 64 || Math.abs(a[1] - b[1]) >= 64 ||
        Math.abs(a[2] - b[2]) >= 64;
  }
  document.addEventListener('keydown', function () {
    if (!L.t0) { L.t0 = performance.now(); L.base = px(); }
  }, true);
  function frame(now) {
    L.frames++;
    if (L.t0 && far(px(), L.base)) {
      L.samples.push(now - L.t0);
      L.t0 = 0;
    }
    v.requestVideoFrameCallback(frame);
  }
  v.requestVideoFrameCallback(frame);
  return true;
})()"""

# the page's inbound video RTP statistics (getStats()) as JSON
VIDEO_STATS_JS = """(async function () {
  var out = {}, codecs = {}, stats = await pc.getStats();
  stats.forEach(function (r) {
    if (r.type === 'codec')
      codecs[r.id] = r.mimeType + (r.sdpFmtpLine ? ';' + r.sdpFmtpLine : '');
  });
  stats.forEach(function (r) {
    if (r.type === 'inbound-rtp' && r.kind === 'video')
      out = {bytes: r.bytesReceived, decoded: r.framesDecoded,
             dropped: r.framesDropped, decode_s: r.totalDecodeTime,
             codec: codecs[r.codecId] || r.codecId,
             jitter_buffer_s: r.jitterBufferDelay,
             jitter_buffer_n: r.jitterBufferEmittedCount, nacks: r.nackCount,
             plis: r.pliCount};
  });
  return JSON.stringify(out);
})()"""
