#!/usr/bin/python3
"""Keypress-to-canvas latency of spice-html5 (Debian's, in headless
Chromium) beside spice-gtk (tools/keypress), both through the same
gst-spice-run in front of the test guest, on each link profile of
tools/linkemu (lan, 80/10 = 80 ms RTT, 10 Mbit/s) in the same run.

    bench/html5-latency.py [--build build] [--samples 20]
        [--profiles lan,80/10] [--pipeline transcode-lossless]

Root (network namespaces). The guest and the gateway run in the server
namespace; spice-keypress, the web server for /usr/share/spice-html5 and
Chromium in the client namespace, behind the shaped link.

spice-html5's sample: the page records performance.now() when the key
event reaches the document (capture phase, before spice-html5 sends it)
and again when the key box's centre pixel (the guest redraws the 96x96 box
at (16,16) in a new colour on each press) differs on the canvas, polled
with setTimeout(1) (about 1 ms between polls, 4 ms once nested: the
resolution of a sample). spice-gtk's: spice-keypress (press to the
display-invalidate that shows the new colour). Presses are 0.4-1.2 s apart,
one at a time, after 3 unmeasured ones.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SOURCE, "bench", "rig"))
sys.path.insert(0, os.path.join(SOURCE, "tests", "common"))
import rig  # noqa: E402
import browser as html5  # noqa: E402

PASSWORD = "bench"
WATCH_JS = """(function () {
  var c = document.querySelector('#spice-screen canvas');
  if (!c || !c.width) return false;
  if (window.__lat) return true;
  var ctx = c.getContext('2d');
  var L = window.__lat = {t0: 0, base: null, samples: []};
  function px() {
    var d = ctx.getImageData(64, 64, 1, 1).data;
    return d[0] + ',' + d[1] + ',' + d[2];
  }
  document.addEventListener('keydown', function () {
    if (!L.t0) { L.t0 = performance.now(); L.base = px(); }
  }, true);
  (function poll() {
    if (L.t0 && px() !== L.base) {
      L.samples.push(performance.now() - L.t0);
      L.t0 = 0;
    }
    setTimeout(poll, 1);
  })();
  return true;
})()"""


def html5_client(host, port, samples, out):
    """runs in the client namespace: Chromium + spice-html5, one JSON"""
    tmp = tempfile.mkdtemp(prefix="html5-latency-")
    web = html5.WebServer(html5.HTML5_DIR)
    browser = html5.Browser(tmp)
    res = {"samples_ms": [], "timeouts": 0}
    try:
        browser.open(web.url("spice_auto.html?host=%s&port=%d&password=%s"
                             % (host, port, PASSWORD)))
        if not browser.wait_true(WATCH_JS, 60):
            res["error"] = "no canvas"
            return res
        time.sleep(2)
        res["samples_ms"], res["timeouts"] = browser.measure_presses(samples)
    finally:
        browser.close()
        web.stop()
        with open(out, "w") as f:
            json.dump(res, f)
    return res


def run_profile(args, link, profile, out):
    link.up(profile)
    st = link.state
    ns_srv, ns_cli, srv_ip = st["NS_SRV"], st["NS_CLI"], st["SRV_IP"]
    procs = rig.Procs()
    row = {"profile": profile}
    try:
        gport, cport = rig.free_ports(2)
        fifo = os.path.join(out, "guest.ctl")
        if not os.path.exists(fifo):
            os.mkfifo(fifo)
        ctl = os.open(fifo, os.O_RDWR)
        guest = procs.start(rig.ns_exec(ns_srv, [
            rig.tools(args.build)["guest"], "--port", str(gport),
            "--addr", "127.0.0.1"]), stdin=ctl,
            stdout=open(os.path.join(out, "guest.log"), "w"),
            stderr=subprocess.STDOUT)
        if not rig.wait_listen(ns_srv, gport, 20, guest):
            raise RuntimeError("guest did not listen")
        gw = procs.start(rig.ns_exec(ns_srv, [
            rig.tools(args.build)["runner"],
            "-D", "UPSTREAM=spice://127.0.0.1:%d" % gport,
            "-D", "LISTEN_ADDRESS=" + srv_ip, "-D", "LISTEN_PORT=%d" % cport,
            "-D", "PASSWORD=" + PASSWORD,
            os.path.join(SOURCE, "pipelines", args.pipeline + ".pipeline")]),
            stdout=open(os.path.join(out, "gateway-%s.log"
                                     % profile.replace("/", "-")), "w"),
            stderr=subprocess.STDOUT)
        if not rig.wait_listen(ns_srv, cport, 30, gw):
            raise RuntimeError("gateway did not listen")
        kp_json = os.path.join(out, "gtk-%s.json" % profile.replace("/", "-"))
        subprocess.run(rig.ns_exec(ns_cli, [
            rig.tools(args.build)["keypress"], "--host", srv_ip,
            "-p", str(cport), "-w", PASSWORD, "-n", str(args.samples),
            "--json", kp_json]), stdout=subprocess.DEVNULL, timeout=600)
        with open(kp_json) as f:
            kp = json.load(f)
        row["gtk"] = {"p50": kp.get("p50_ms"), "p95": kp.get("p95_ms"),
                      "max": kp.get("max_ms"),
                      "n": len(kp.get("samples_ms") or [])}
        h_json = os.path.join(out, "html5-%s.json"
                              % profile.replace("/", "-"))
        subprocess.run(rig.ns_exec(ns_cli, [
            sys.executable, os.path.abspath(__file__), "--html5-client",
            srv_ip, str(cport), str(args.samples), h_json]), timeout=900)
        with open(h_json) as f:
            h = json.load(f)
        s = h.get("samples_ms") or []
        row["html5"] = {"p50": rig.pct(s, 0.5), "p95": rig.pct(s, 0.95),
                        "max": max(s) if s else None, "n": len(s),
                        "timeouts": h.get("timeouts"),
                        "error": h.get("error")}
    finally:
        procs.stop_all()
        link.down()
    return row


def fmt(v):
    return "—" if v is None else "%.1f" % v


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--html5-client":
        host, port, n, out = sys.argv[2:6]
        html5_client(host, int(port), int(n), out)
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(SOURCE, "build"))
    p.add_argument("--samples", type=int, default=20)
    p.add_argument("--profiles", default="lan,80/10")
    p.add_argument("--pipeline", default="transcode-lossless")
    p.add_argument("--prefix", default="gshtml")
    p.add_argument("--cc", default="cubic")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    args.max_late_us, args.rate_tolerance = 1000, 10
    if os.geteuid() != 0:
        print("root needed (network namespaces)")
        return 2
    os.environ.setdefault("GST_PLUGIN_PATH_1_0",
                          os.path.join(args.build, "plugins"))
    out = args.out or tempfile.mkdtemp(prefix="html5-latency-")
    os.makedirs(out, exist_ok=True)
    link = rig.Link(args)
    rows = [run_profile(args, link, prof, out)
            for prof in args.profiles.split(",")]
    print("| link | client | p50 ms | p95 ms | max ms | presses |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        for name, key in (("spice-gtk (spice-keypress)", "gtk"),
                          ("spice-html5 in Chromium", "html5")):
            c = r.get(key) or {}
            print("| %s | %s | %s | %s | %s | %s |" % (
                r["profile"], name, fmt(c.get("p50")), fmt(c.get("p95")),
                fmt(c.get("max")), c.get("n")))
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print("results: %s" % os.path.join(out, "results.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
