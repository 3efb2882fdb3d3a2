#!/usr/bin/python3
"""Rate-distortion of the stream encoders at a SPICE client and at a
browser, in one run (docs/benchmarks.md, "Encoder comparison: rate and
distortion"; issue 32's browser column).

    bench/codec-rd.py [--build build] [--encoders vp8,vp9,h264,av1]
        [--rates 250,500,1000,2000,4000] [--activities video,busy] [--secs 4]
        [--samples 8] [--out DIR] [--docs docs/benchmarks/history
        --stem codec-rd --title T]
    bench/codec-rd.py report DIR [--docs ...]   the tables and plots again

Each encoder is run at each target rate (kbit/s) in front of the test
guest (a 640x480 area of the activity moving at 30 fps on a 1280x800
desktop, each frame stamped with its number), on loopback, through one
gst-spice-run of pipelines/transcode-vp8-browser.pipeline whose SPICE
stream branch and browser encoder are both that encoder at that rate:

- at the SPICE client: spice-keypress (spice-client-glib) presses a key
  --samples times (keypress-to-draw latency), then scores every frame it
  shows during --secs of motion against the guest's own render of that
  frame (PSNR of the mean MSE, mean SSIM, over the moving picture; the
  text strip beside it), with the Mbit/s it received meanwhile, then the
  time until its picture is exact once the guest rests;
- at the browser: headless Chromium on spicewebrtcsink's page, the same
  presses (keydown to the first presented frame that shows the key box's
  new colour, requestVideoFrameCallback), then every other frame
  presented during --secs of motion drawn from the <video> into a canvas,
  cut to the compared rectangle and scored by spice-frame-score the same
  way; getStats() gives the bytes, frames decoded and dropped and decode
  time; at rest the <video> frame's PSNR against the guest's dump.

The SPICE client and the browser are never connected at the same time.
For every encoder, the Bjontegaard delta rate (BD-rate: the mean rate
difference at equal quality over the quality range both curves cover,
log rate a monotone piecewise cubic of quality) against VP8 at the same
client, on PSNR and on SSIM (as dB: -10 log10 (1 - SSIM)); the rate is
the one measured at the client, not the target.

An encoder that cannot be run for a client is reported with the reason
(AV1 at the SPICE client: SPICE has no AV1 codec type; at the browser it
goes through the plugin's own payloader, spicertpav1pay).
Not root; one Chromium for the run; about a minute per point.
"""
import argparse
import base64
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "rig"))
sys.path.insert(0, os.path.join(SOURCE, "tests", "common"))
import rig  # noqa: E402
import browser  # noqa: E402

TEMPLATE = os.path.join(SOURCE, "pipelines", "transcode-vp8-browser.pipeline")

# name -> (label, the encoder at {bps} / {kbps}, what the SPICE stream
# branch adds after it, why a client cannot have it: {"spice": .., "browser": ..})
ENCODERS = {
    "vp8": ("VP8 (vp8enc)",
            "vp8enc deadline=1 cpu-used=16 end-usage=cbr target-bitrate={bps} "
            "keyframe-max-dist=600 lag-in-frames=0 error-resilient=default threads=1",
            "", {}),
    "vp9": ("VP9 (vp9enc)",
            "vp9enc deadline=1 cpu-used=8 end-usage=cbr target-bitrate={bps} "
            "keyframe-max-dist=600 lag-in-frames=0 error-resilient=default threads=1",
            "", {}),
    "h264": ("H.264 (x264enc)",
             "x264enc tune=zerolatency speed-preset=ultrafast bitrate={kbps} "
             "key-int-max=300 threads=1",
             " ! video/x-h264,stream-format=byte-stream,alignment=au ! h264parse", {}),
    # (libaom's CBR needs the quantizer range set: without it, it asserts)
    "av1": ("AV1 (av1enc)",
            "av1enc usage-profile=realtime cpu-used=10 target-bitrate={kbps} "
            "end-usage=cbr lag-in-frames=0 min-quantizer=4 max-quantizer=56 "
            "keyframe-max-dist=600 threads=1",
            "", {"spice": "SPICE has no AV1 codec type (spice-protocol's "
                          "SpiceVideoCodecType: MJPEG, VP8, H264, VP9, H265)"}),
}
DEFAULT_ENCODERS = "vp8,vp9,h264,av1"
DEFAULT_RATES = "250,500,1000,2000,4000"

# every other frame the <video> presents during SECS: the compared
# rectangle's RGBA kept in window.__cap.frames
CAPTURE_JS = """(function (r, secs) {
  var v = document.getElementById('screen');
  var c = document.createElement('canvas');
  c.width = r.width; c.height = r.height;
  var g = c.getContext('2d', {willReadFrequently: true});
  var C = window.__cap = {frames: [], presented: 0, done: false,
                          size: [v.videoWidth, v.videoHeight]};
  var t0 = performance.now();
  function frame(now) {
    if (now - t0 > secs * 1000) { C.done = true; return; }
    if (C.presented++ %% 2 == 0) {
      g.drawImage(v, r.x, r.y, r.width, r.height, 0, 0, r.width, r.height);
      C.frames.push(g.getImageData(0, 0, r.width, r.height).data);
    }
    v.requestVideoFrameCallback(frame);
  }
  v.requestVideoFrameCallback(frame);
  return true;
})(%s, %s)"""
# frame I of the capture as base64 RGBA
FRAME_JS = """(function (i) {
  var d = window.__cap.frames[i], s = '';
  for (var k = 0; k < d.length; k += 0x8000)
    s += String.fromCharCode.apply(null, d.subarray(k, k + 0x8000));
  window.__cap.frames[i] = null;
  return btoa(s);
})(%d)"""


def log(msg):
    sys.stderr.write("[codec-rd %s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


def have_element(name):
    return subprocess.run(["gst-inspect-1.0", "--exists", name]).returncode == 0


def descriptions(name, kbps):
    """(SPICE stream branch, browser encoder) of encoder @name at @kbps"""
    _, base, spice_tail, _ = ENCODERS[name]
    enc = base.format(bps=kbps * 1000, kbps=kbps)
    return enc + spice_tail, enc


def make_pipeline(spice_desc, path):
    with open(TEMPLATE) as f:
        text = f.read()
    new, n = re.subn(r'encoder="vp8enc[^"]*"', lambda m: 'encoder="%s"' % spice_desc,
                     text, count=1, flags=re.S)
    if n != 1:
        raise RuntimeError("%s: no spicestreamenc encoder=\"vp8enc ...\"" % TEMPLATE)
    with open(path, "w") as f:
        f.write("# generated by bench/codec-rd.py from %s\n" % os.path.basename(TEMPLATE) + new)


def write_ppm_rgba(path, w, h, rgba):
    rgb = bytearray(rgba)
    del rgb[3::4]
    with open(path, "wb") as f:
        f.write(b"P6\n%d %d\n255\n" % (w, h) + bytes(rgb))


def summary(scores):
    """PSNR of the mean MSE, mean SSIM and text SSIM of the readable frames"""
    ok = [s for s in scores if s["n"] >= 0 and s["mse"] is not None]
    out = {"frames": len(scores), "unreadable": len(scores) - len(ok)}
    if ok:
        mse = sum(s["mse"] for s in ok) / len(ok)
        out["psnr_db"] = None if mse == 0 else 10 * math.log10(255 * 255 / mse)
        out["ssim"] = sum(s["ssim"] for s in ok) / len(ok)
        text = [s["text_ssim"] for s in ok if s["text_ssim"] is not None]
        out["text_ssim"] = sum(text) / len(text) if text else None
    return out


class Point:
    """one encoder at one rate: the guest, the gateway, both clients"""

    def __init__(self, args, chromium, activity, name, kbps, outdir):
        self.args, self.chromium, self.name, self.kbps = args, chromium, name, kbps
        self.activity = activity
        self.dir = os.path.join(outdir, "%s-%s-%d" % (activity, name, kbps))
        os.makedirs(self.dir, exist_ok=True)
        self.procs = rig.Procs()
        self.ctl = None
        self.row = {"activity": activity, "encoder": name, "kbps": kbps}

    def path(self, name):
        return os.path.join(self.dir, name)

    def start(self):
        a = self.args
        tools = rig.tools(a.build)
        self.fifo = self.path("guest.ctl")
        if not os.path.exists(self.fifo):
            os.mkfifo(self.fifo)
        self.ctl = os.open(self.fifo, os.O_RDWR)     # held: the guest never sees EOF
        self.ftimes = self.path("frame-times.log")
        gport = rig.free_port()
        self.guest = self.procs.start(
            [tools["guest"], "--port", str(gport), "--addr", "127.0.0.1",
             "--activity", self.activity, "--fps", "30", "--frame-stamp",
             "--frame-times", self.ftimes, "--activity-after-connect"],
            stdin=self.ctl, stdout=open(self.path("guest.log"), "w"),
            stderr=subprocess.STDOUT)
        if not rig.wait_listen(None, gport, 20, self.guest):
            raise RuntimeError("the guest did not listen")
        spice_desc, browser_desc = descriptions(self.name, self.kbps)
        if "spice" in ENCODERS[self.name][3]:
            # the SPICE branch cannot carry it (and is not measured): VP8
            # there, so that the pipeline negotiates
            spice_desc = descriptions("vp8", self.kbps)[0]
        self.row["spice_encoder"], self.row["browser_encoder"] = spice_desc, browser_desc
        pipeline = self.path("gateway.pipeline")
        make_pipeline(spice_desc, pipeline)
        self.cport, self.hport = rig.free_ports(2)
        env = dict(os.environ, GST_PLUGIN_PATH=os.path.join(a.build, "plugins"),
                   GST_SPICE_PIPELINES_DIR=os.path.join(SOURCE, "pipelines"))
        self.gateway = self.procs.start(
            [tools["runner"], "--stats-interval", "1",
             "-D", "UPSTREAM=spice://127.0.0.1:%d" % gport,
             "-D", "LISTEN_PORT=%d" % self.cport, "-D", "HTTP_PORT=%d" % self.hport,
             "-D", "BROWSER_ENCODER=" + browser_desc, pipeline],
            stdout=open(self.path("gateway.log"), "w"), stderr=subprocess.STDOUT, env=env)
        if not rig.wait_listen(None, self.cport, 30, self.gateway) or \
                not rig.wait_listen(None, self.hport, 30, self.gateway):
            raise RuntimeError("the gateway did not listen (%s)" % self.path("gateway.log"))

    def guest_command(self, text):
        os.write(self.ctl, (text + "\n").encode())

    def guest_log(self):
        with open(self.path("guest.log"), errors="replace") as f:
            return f.read()

    def spice(self):
        """spice-keypress: latency, quality while it moves, exact at rest"""
        a = self.args
        out = self.path("spice.json")
        argv = [rig.tools(a.build)["keypress"], "--uri", "spice://127.0.0.1:%d" % self.cport,
                "-n", str(a.samples), "--warmup-presses", "3", "--warmup", "2",
                "--quality", str(a.secs), "--activity", self.activity, "--picture-seed", "1",
                "--frame-times", self.ftimes, "--guest-control", self.fifo,
                "--reference", self.path("reference.ppm"), "--exact-timeout", "20",
                "-o", out, "-v"]
        with open(self.path("spice.log"), "w") as lg:
            subprocess.run(argv, stdout=lg, stderr=subprocess.STDOUT, timeout=300)
        with open(out) as f:
            k = json.load(f)
        q = k.get("quality") or {}
        return {"mbit_s": q.get("mbit_s"), "psnr_db": q.get("psnr_db_mean"),
                "ssim": q.get("ssim_mean"), "text_ssim": q.get("text_ssim_mean"),
                "fps": q.get("shown_fps"), "frames": q.get("frames"),
                "key_p50": k.get("p50_ms"), "key_p95": k.get("p95_ms"),
                "exact_ms": k.get("time_to_exact_ms"), "error": q.get("error") or k.get("error")}

    def stats(self, page):
        s = page.evaluate(browser.VIDEO_STATS_JS, await_promise=True)
        return json.loads(s) if s else {}

    def browser(self):
        """the same for the browser, through spicewebrtcsink's page"""
        a = self.args
        res = {}
        page = self.chromium.new_page("http://127.0.0.1:%d/" % self.hport)
        try:
            if not page.wait_true(browser.LATENCY_WATCH_JS, 60):
                res["error"] = "no video: %s" % page.evaluate(
                    "document.getElementById('status').textContent")
                return res
            time.sleep(3)
            samples, res["timeouts"] = page.measure_presses(a.samples)
            res["key_p50"], res["key_p95"] = rig.pct(samples, 0.5), rig.pct(samples, 0.95)
            region = json.loads(subprocess.run(
                [self.score_tool(), "--activity", self.activity, "--region"],
                capture_output=True, text=True, check=True).stdout)
            s0, t0 = self.stats(page), time.monotonic()
            page.evaluate(CAPTURE_JS % (json.dumps(region), a.secs))
            page.wait_true("window.__cap.done", a.secs + 30)
            s1, t1 = self.stats(page), time.monotonic()
            cap = json.loads(page.evaluate(
                "JSON.stringify({n: window.__cap.frames.length, presented: "
                "window.__cap.presented, size: window.__cap.size})"))
            res["fps"] = cap["presented"] / a.secs
            res["size"] = cap["size"]
            dt = t1 - t0
            if s0 and s1:
                res["mbit_s"] = (s1["bytes"] - s0["bytes"]) * 8 / dt / 1e6
                dec = s1["decoded"] - s0["decoded"]
                res["decoded_fps"] = dec / dt
                res["dropped"] = s1["dropped"] - s0["dropped"]
                res["decode_ms"] = (s1["decode_s"] - s0["decode_s"]) * 1e3 / dec if dec else None
                res["codec"] = s1.get("codec")
            files = []
            for i in range(cap["n"]):
                rgba = base64.b64decode(page.evaluate(FRAME_JS % i))
                fpath = self.path("browser-%03d.ppm" % i)
                write_ppm_rgba(fpath, region["width"], region["height"], rgba)
                files.append(fpath)
            scores = json.loads(subprocess.run(
                [self.score_tool(), "--activity", self.activity] + files,
                capture_output=True, text=True).stdout or "[]")
            with open(self.path("browser-scores.json"), "w") as f:
                json.dump(scores, f)
            if not a.keep_frames:
                for fpath in files:
                    os.unlink(fpath)
            res.update(summary(scores))
            # at rest: the guest stops, the element refines
            self.guest_command("activity idle")
            time.sleep(4)
            shown = page.video()
            ref = self.dump()
            if shown and ref:
                res["rest_psnr_db"] = browser.psnr(shown, ref, self.dir)
        finally:
            self.chromium.close_tab(page)
        return res

    def dump(self):
        path = self.path("rest.ppm")
        self.guest_command("dump " + path)
        end = time.monotonic() + 20
        while time.monotonic() < end:
            if "dumped " + path in self.guest_log():
                return browser.read_ppm(path)
            time.sleep(0.2)
        return None

    def score_tool(self):
        return os.path.join(self.args.build, "tools", "keypress", "spice-frame-score")

    def run(self):
        why = ENCODERS[self.name][3]
        factory = ENCODERS[self.name][1].split()[0]
        if not have_element(factory):
            why = {"spice": "not installed", "browser": "not installed"}
        if "spice" in why and "browser" in why:
            self.row["spice"] = {"error": why["spice"]}
            self.row["browser"] = {"error": why["browser"]}
            return self.row
        try:
            self.start()
            log("%s at %d kbit/s: SPICE client" % (self.name, self.kbps))
            self.row["spice"] = {"error": why["spice"]} if "spice" in why else self.spice()
            self.guest_command("activity " + self.activity)
            time.sleep(1)
            log("%s at %d kbit/s: browser" % (self.name, self.kbps))
            self.row["browser"] = ({"error": why["browser"]} if "browser" in why
                                   else self.browser())
        except (RuntimeError, OSError, subprocess.SubprocessError, ValueError) as e:
            self.row.setdefault("spice", {"error": str(e)})
            self.row.setdefault("browser", {"error": str(e)})
        finally:
            self.procs.stop_all()
            if self.ctl is not None:
                os.close(self.ctl)
        return self.row


# ---- BD-rate ------------------------------------------------------------------

def ssim_db(s):
    return None if s is None else (99.0 if s >= 1 else -10 * math.log10(1 - s))


def pchip_slopes(x, y):
    """Fritsch-Carlson slopes of the monotone piecewise cubic through the
    points (x strictly increasing)"""
    n = len(x)
    h = [x[i + 1] - x[i] for i in range(n - 1)]
    d = [(y[i + 1] - y[i]) / h[i] for i in range(n - 1)]
    if n == 2:
        return [d[0], d[0]]
    m = [0.0] * n
    for i in range(1, n - 1):
        if d[i - 1] * d[i] > 0:
            w1, w2 = 2 * h[i] + h[i - 1], h[i] + 2 * h[i - 1]
            m[i] = (w1 + w2) / (w1 / d[i - 1] + w2 / d[i])
    for i, (a, b, ha, hb) in ((0, (d[0], d[1], h[0], h[1])),
                              (n - 1, (d[-1], d[-2], h[-1], h[-2]))):
        e = ((2 * ha + hb) * a - ha * b) / (ha + hb)
        if e * a <= 0:
            e = 0.0
        elif a * b <= 0 and abs(e) > 3 * abs(a):
            e = 3 * a
        m[i] = e
    return m


def pchip_integral(x, y, lo, hi, steps=4000):
    """the integral over [lo, hi] (inside [x0, xn]) of the monotone piecewise
    cubic through the points"""
    m = pchip_slopes(x, y)
    total, k = 0.0, 0
    step = (hi - lo) / steps
    for j in range(steps + 1):
        q = lo + j * step
        while k < len(x) - 2 and q > x[k + 1]:
            k += 1
        hk = x[k + 1] - x[k]
        t = (q - x[k]) / hk
        v = ((2 * t ** 3 - 3 * t ** 2 + 1) * y[k] + (t ** 3 - 2 * t ** 2 + t) * hk * m[k] +
             (-2 * t ** 3 + 3 * t ** 2) * y[k + 1] + (t ** 3 - t ** 2) * hk * m[k + 1])
        total += v * (0.5 if j in (0, steps) else 1.0)
    return total * step


def envelope(points):
    """the points in order of rate that raise the quality: [(quality, log
    rate)] with quality strictly increasing"""
    out = []
    for r, q in sorted(p for p in points if p[0] and p[1] is not None):
        if not out or q > out[-1][0]:
            out.append((q, math.log(r)))
    return out


def bd_rate(ref, test):
    """BD-rate in % of @test against @ref, each [(rate, quality)]: the mean
    of log rate's difference at equal quality over the range both cover,
    log rate a monotone piecewise cubic of quality (as JVET's BD-rate tools;
    one cubic through all points, the classic fit, overshoots where a curve
    flattens); None when they share no range"""
    a, b = envelope(ref), envelope(test)
    if len(a) < 2 or len(b) < 2:
        return None
    lo, hi = max(a[0][0], b[0][0]), min(a[-1][0], b[-1][0])
    if hi - lo < 1e-6:
        return None
    ia = pchip_integral([q for q, _ in a], [r for _, r in a], lo, hi)
    ib = pchip_integral([q for q, _ in b], [r for _, r in b], lo, hi)
    return (math.exp((ib - ia) / (hi - lo)) - 1) * 100


# ---- report -------------------------------------------------------------------

def fmt(v, f="%.1f"):
    return "–" if v is None else f % v


def curve(rows, name, client, metric):
    """[(Mbit/s, quality)] of encoder @name at @client (rows of one activity)"""
    pts = []
    for r in rows:
        c = r.get(client) or {}
        if r["encoder"] == name and not c.get("error") and c.get("mbit_s"):
            q = c.get(metric)
            pts.append((c["mbit_s"], ssim_db(q) if metric == "ssim" else q))
    return pts


def overlap(ref, test):
    """the quality range two curves share, or None"""
    a, b = envelope(ref), envelope(test)
    if len(a) < 2 or len(b) < 2:
        return None
    lo, hi = max(a[0][0], b[0][0]), min(a[-1][0], b[-1][0])
    return (lo, hi) if hi > lo else None


def bd_table(rows, names):
    lines = ["| encoder | BD-rate vs VP8, SPICE client: PSNR / SSIM | "
             "BD-rate vs VP8, browser: PSNR / SSIM |", "|---|---|---|"]
    for n in names:
        cells = []
        for client in ("spice", "browser"):
            errs = [(r.get(client) or {}).get("error") for r in rows if r["encoder"] == n]
            if errs and all(errs):
                cells.append("not run: %s" % errs[0])
                continue
            parts = []
            for m, unit in (("psnr_db", "dB"), ("ssim", "dB SSIM")):
                ref, test = curve(rows, "vp8", client, m), curve(rows, n, client, m)
                v, rng = bd_rate(ref, test), overlap(ref, test)
                parts.append("–" if v is None else "%+.1f %% (%.1f–%.1f %s)" % (
                    v, rng[0], rng[1], unit))
            cells.append(" / ".join(parts))
        lines.append("| %s | %s | %s |" % (ENCODERS[n][0], cells[0], cells[1]))
    return "\n".join(lines)


def points_table(rows):
    lines = ["| encoder | target kbit/s | SPICE: Mbit/s | PSNR dB | SSIM | text SSIM | "
             "fps | key p50 ms | exact s | browser: Mbit/s | PSNR dB | SSIM | text SSIM | "
             "fps | key p50 ms | decode ms | dropped | at rest PSNR dB |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        s, b = r.get("spice") or {}, r.get("browser") or {}
        cells = [ENCODERS[r["encoder"]][0], str(r["kbps"])]
        if s.get("error") and not s.get("mbit_s"):
            cells += ["not run: %s" % s["error"]] + [""] * 6
        else:
            cells += [fmt(s.get("mbit_s"), "%.2f"), fmt(s.get("psnr_db")),
                      fmt(s.get("ssim"), "%.4f"), fmt(s.get("text_ssim"), "%.4f"),
                      fmt(s.get("fps")), fmt(s.get("key_p50")),
                      fmt(None if s.get("exact_ms") is None or s["exact_ms"] < 0
                          else s["exact_ms"] / 1e3, "%.2f")]
        if b.get("error") and not b.get("mbit_s"):
            cells += ["not run: %s" % b["error"]] + [""] * 8
        else:
            cells += [fmt(b.get("mbit_s"), "%.2f"), fmt(b.get("psnr_db")),
                      fmt(b.get("ssim"), "%.4f"), fmt(b.get("text_ssim"), "%.4f"),
                      fmt(b.get("fps")), fmt(b.get("key_p50")), fmt(b.get("decode_ms"), "%.2f"),
                      fmt(b.get("dropped"), "%d"), fmt(b.get("rest_psnr_db"))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(rows, names, png):
    """PSNR and SSIM (dB) against the Mbit/s received, SPICE and browser"""
    dat = png[:-4] + ".dat"
    blocks, idx = [], 0
    with open(dat, "w") as f:
        for client in ("spice", "browser"):
            for metric in ("psnr_db", "ssim"):
                for n in names:
                    pts = sorted(curve(rows, n, client, metric))
                    if not pts:
                        continue        # gnuplot's index counts blocks with data
                    f.write("# %s %s %s\n" % (client, metric, n))
                    for x, y in pts:
                        f.write("%g %g\n" % (x, y))
                    f.write("\n\n")
                    blocks.append((client, metric, n, idx, True))
                    idx += 1
    gp = ["set terminal pngcairo size 1100,800 font 'Sans,10'", "set output '%s'" % png,
          "set multiplot layout 2,2", "set logscale x", "set grid", "set key bottom right"]
    for client in ("spice", "browser"):
        for metric in ("psnr_db", "ssim"):
            who = "SPICE client (spice-gtk)" if client == "spice" else "browser (Chromium, WebRTC)"
            gp.append("set title '%s: %s' noenhanced" % (
                who, "PSNR" if metric == "psnr_db" else "SSIM as -10 log10(1-SSIM)"))
            gp.append("set xlabel 'Mbit/s received while moving'")
            gp.append("set ylabel '%s'" % ("PSNR dB" if metric == "psnr_db" else "SSIM dB"))
            plots = ["'%s' index %d using 1:2 with linespoints lw 2 pt 7 title '%s'"
                     % (dat, i, ENCODERS[n][0]) for c, m, n, i, ok in blocks
                     if c == client and m == metric and ok]
            gp.append("plot " + (", ".join(plots) if plots else "NaN notitle"))
    gp.append("unset multiplot")
    r = subprocess.run(["gnuplot"], input="\n".join(gp) + "\n", text=True, capture_output=True)
    os.unlink(dat)
    if r.returncode != 0:
        log("gnuplot: %s" % r.stderr.strip())
        return None
    return png


def report(out, args):
    with open(os.path.join(out, "results.json")) as f:
        res = json.load(f)
    rows, names, m = res["rows"], res["encoders"], res["machine"]
    stem = args.stem or "codec-rd"
    if args.docs:
        mdpath, stem, pngdir = rig.report_target(args.docs, stem, m.get("date"))
    else:
        mdpath, pngdir = None, out
    os.makedirs(pngdir, exist_ok=True)
    acts = list(dict.fromkeys(r.get("activity", res.get("activity")) for r in rows))
    pngs = {a: plot([r for r in rows if r.get("activity", res.get("activity")) == a],
                    names, os.path.join(pngdir, "%s-%s.png" % (stem, a))) for a in acts}
    title = args.title or "Encoder comparison: rate and distortion, %s" % m.get("date")
    md = ["### " + title, "",
          "- Command: `%s`" % res["command"],
          "- Machine: %s cores, %s, kernel %s, load average at start %s; %s." % (
              m.get("nproc"), m.get("cpu"), m.get("kernel"),
              "/".join(str(x) for x in m.get("loadavg_at_start", [])), m.get("date")),
          "- Activities %s (a 640x480 area at 30 fps on the 1280x800 test guest: video a "
          "panning landscape, busy a plasma with noise in its low bits), loopback; %s s of "
          "motion scored per client and point; %d presses per client and point; quality at "
          "rest: the browser's frame against the guest's dump 4 s after the activity stopped "
          "(the SPICE client's picture is exact by then: *exact s*)." % (
              ", ".join("`%s`" % a for a in acts), res["secs"], res["samples"]),
          "- BD-rate: the rate measured at the client (Mbit/s while moving); log rate a "
          "monotone piecewise cubic (PCHIP) of quality through the points that raise the "
          "quality, per curve; the mean difference over the quality range both curves "
          "cover (in brackets). Negative: fewer bits than VP8 for the same quality. A "
          "range of a few tenths of a dB is a plateau, where the figure means little.",
          "- Encoders at `{kbps}`/`{bps}` (the SPICE stream branch adds "
          "`! video/x-h264,stream-format=byte-stream,alignment=au ! h264parse` to x264enc; "
          "spicewebrtcsink adds its payloader, and gives VP9 4:4:4 where the browser takes "
          "profile 1):"]
    for n in names:
        md.append("  - %s: `%s`" % (ENCODERS[n][0], ENCODERS[n][1]))
    for a in acts:
        ar = [r for r in rows if r.get("activity", res.get("activity")) == a]
        md += ["", "#### %s" % a, "", bd_table(ar, names), "", points_table(ar), ""]
        png = pngs.get(a)
        if png:
            md += ["![%s](%s)" % (os.path.basename(png), os.path.relpath(
                png, os.path.dirname(mdpath)) if mdpath else png), ""]
    text = "\n".join(md)
    if mdpath:
        rig.write_report(mdpath, "codec-rd:" + stem, text, title, m.get("date", ""))
        with open(os.path.join(pngdir, stem + ".json"), "w") as f:
            json.dump(res, f, indent=1)
        log("updated %s" % mdpath)
    print(text)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "report":
        p = argparse.ArgumentParser()
        p.add_argument("cmd")
        p.add_argument("dir")
        p.add_argument("--docs")
        p.add_argument("--stem")
        p.add_argument("--title")
        args = p.parse_args()
        report(os.path.abspath(args.dir), args)
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(SOURCE, "build"))
    p.add_argument("--encoders", default=DEFAULT_ENCODERS)
    p.add_argument("--rates", default=DEFAULT_RATES, help="target kbit/s, comma-separated")
    p.add_argument("--activities", default="video,busy")
    p.add_argument("--secs", type=float, default=4.0, help="s of motion scored per client")
    p.add_argument("--samples", type=int, default=8, help="key presses per client")
    p.add_argument("--out", default=None)
    p.add_argument("--keep-frames", action="store_true")
    p.add_argument("--docs", default=None)
    p.add_argument("--stem", default=None)
    p.add_argument("--title", default=None)
    args = p.parse_args()
    args.build = os.path.abspath(args.build)
    names = [n for n in args.encoders.split(",") if n]
    for n in names:
        if n not in ENCODERS:
            raise SystemExit("unknown encoder %s (%s)" % (n, ", ".join(ENCODERS)))
    if "vp8" not in names:
        names.insert(0, "vp8")                  # the BD-rate reference
    if args.docs:
        rig.check_docs(args.docs)
    rates = [int(x) for x in args.rates.split(",") if x]
    out = os.path.abspath(args.out or tempfile.mkdtemp(prefix="codec-rd-"))
    os.makedirs(out, exist_ok=True)
    activities = [a for a in args.activities.split(",") if a]
    res = {"machine": rig.machine_info("-"), "encoders": names, "rates": rates,
           "activities": activities, "secs": args.secs, "samples": args.samples,
           "command": " ".join(shlex.quote(a) for a in sys.argv), "rows": []}
    os.environ["GST_PLUGIN_PATH"] = os.path.join(args.build, "plugins")
    tmp = tempfile.mkdtemp(prefix="chromium-", dir=out)
    chromium = browser.Browser(tmp, browser.WEBRTC_ARGS)
    try:
        for act in activities:
            for n in names:
                for kbps in rates:
                    row = Point(args, chromium, act, n, kbps, out).run()
                    log("%s %s %d: %s" % (act, n, kbps, json.dumps(row)[:300]))
                    res["rows"].append(row)
                    with open(os.path.join(out, "results.json"), "w") as f:
                        json.dump(res, f, indent=1)
                    if "spice" in ENCODERS[n][3] and "browser" in ENCODERS[n][3]:
                        break               # one row says why for every rate
    finally:
        chromium.close()
        shutil.rmtree(tmp, ignore_errors=True)
    report(out, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
