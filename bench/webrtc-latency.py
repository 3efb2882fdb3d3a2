#!/usr/bin/python3
"""Keypress-to-frame latency of a browser on spicewebrtcsink (headless
Chromium) beside spice-gtk (tools/keypress) through spicesink, both from
one gst-spice-run of pipelines/transcode-vp8-browser.pipeline in front of
the test guest, on each link profile of tools/linkemu (lan, 80/10 = 80 ms
RTT, 10 Mbit/s) in the same run; and the CPU a browser viewer costs beside
a SPICE client's, the guest busy, on loopback.

    bench/webrtc-latency.py [--build build] [--samples 20]
        [--profiles lan,80/10] [--cpu-secs 15] [--out DIR]
        [--browser-encoder "vp8enc ..."]

Root (network namespaces). The guest and the gateway run in the server
namespace; spice-keypress and Chromium in the client namespace, behind the
shaped link (the WebRTC media too: ICE only on the server's address).

The browser's sample: the page records performance.now() when the key
event reaches the document (capture phase, before the page sends it) and
stops at the first video frame (requestVideoFrameCallback, its `now`)
whose key box centre (the guest redraws the 96x96 box at (16,16) in a new
colour on each press) is at least 64 away in a channel from the colour
before. spice-gtk's: spice-keypress (press to the display-invalidate that
shows the new colour). Presses are 0.4-1.2 s apart, one at a time, after 3
unmeasured ones.

CPU: the gateway's utime + stime (/proc) over --cpu-secs with the guest
busy (a 640x480 area at 30 fps), first with one spice-gtk client
(spice-test-client), then with that client and one browser viewer; the
difference is the browser viewer's cost.
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
import browser  # noqa: E402

PASSWORD = "bench"


def browser_client(url, samples, out):
    """runs in the client namespace: Chromium on the page, one JSON"""
    tmp = tempfile.mkdtemp(prefix="webrtc-latency-")
    page = browser.Browser(tmp, browser.WEBRTC_ARGS)
    res = {"samples_ms": [], "timeouts": 0}
    try:
        page.open(url)
        if not page.wait_true(browser.LATENCY_WATCH_JS, 60):
            res["error"] = "no video: %s" % page.evaluate(
                "document.getElementById('status').textContent")
            return res
        time.sleep(3)
        res["samples_ms"], res["timeouts"] = page.measure_presses(samples)
        res["frames"] = page.evaluate("window.__lat.frames")
        stats = page.evaluate(browser.VIDEO_STATS_JS, await_promise=True)
        res["stats"] = json.loads(stats) if stats else None
    finally:
        page.close()
        with open(out, "w") as f:
            json.dump(res, f)
    return res


def start_gateway(args, procs, ns, address, guest_port, out, name):
    """gst-spice-run with transcode-vp8-browser; (proc, SPICE port, HTTP
    port, token)"""
    cport, hport = rig.free_ports(2)
    token_file = os.path.join(out, "token")
    with open(token_file, "w") as f:
        f.write(PASSWORD + "\n")
    argv = [rig.tools(args.build)["runner"],
            "-D", "UPSTREAM=spice://127.0.0.1:%d" % guest_port,
            "-D", "LISTEN_ADDRESS=" + address,
            "-D", "LISTEN_PORT=%d" % cport, "-D", "HTTP_PORT=%d" % hport,
            "-D", "PASSWORD=" + PASSWORD,
            "-D", "BROWSER_PASSWORD_FILE=" + token_file,
            "-D", "BROWSER_ENCODER=" + (args.browser_encoder or ""),
            os.path.join(SOURCE, "pipelines",
                         "transcode-vp8-browser.pipeline")]
    gw = procs.start(rig.ns_exec(ns, argv) if ns else argv,
                     stdout=open(os.path.join(out, name), "w"),
                     stderr=subprocess.STDOUT)
    return gw, cport, hport


def run_profile(args, link, profile, out):
    link.up(profile)
    st = link.state
    ns_srv, ns_cli, srv_ip = st["NS_SRV"], st["NS_CLI"], st["SRV_IP"]
    procs = rig.Procs()
    row = {"profile": profile}
    tag = profile.replace("/", "-")
    try:
        gport = rig.free_port()
        guest = procs.start(rig.ns_exec(ns_srv, [
            rig.tools(args.build)["guest"], "--port", str(gport),
            "--addr", "127.0.0.1"]),
            stdout=open(os.path.join(out, "guest-%s.log" % tag), "w"),
            stderr=subprocess.STDOUT)
        if not rig.wait_listen(ns_srv, gport, 20, guest):
            raise RuntimeError("guest did not listen")
        gw, cport, hport = start_gateway(args, procs, ns_srv, srv_ip, gport,
                                         out, "gateway-%s.log" % tag)
        if not rig.wait_listen(ns_srv, cport, 30, gw) or \
                not rig.wait_listen(ns_srv, hport, 30, gw):
            raise RuntimeError("gateway did not listen")
        kp_json = os.path.join(out, "gtk-%s.json" % tag)
        subprocess.run(rig.ns_exec(ns_cli, [
            rig.tools(args.build)["keypress"], "--host", srv_ip,
            "-p", str(cport), "-w", PASSWORD, "-n", str(args.samples),
            "--json", kp_json]), stdout=subprocess.DEVNULL, timeout=600)
        with open(kp_json) as f:
            kp = json.load(f)
        row["gtk"] = {"p50": kp.get("p50_ms"), "p95": kp.get("p95_ms"),
                      "max": kp.get("max_ms"),
                      "n": len(kp.get("samples_ms") or [])}
        b_json = os.path.join(out, "browser-%s.json" % tag)
        url = "http://%s:%d/#token=%s" % (srv_ip, hport, PASSWORD)
        subprocess.run(rig.ns_exec(ns_cli, [
            sys.executable, os.path.abspath(__file__), "--browser-client",
            url, str(args.samples), b_json]), timeout=900)
        with open(b_json) as f:
            b = json.load(f)
        s = b.get("samples_ms") or []
        row["browser"] = {"p50": rig.pct(s, 0.5), "p95": rig.pct(s, 0.95),
                          "max": max(s) if s else None, "n": len(s),
                          "timeouts": b.get("timeouts"),
                          "error": b.get("error"), "stats": b.get("stats"),
                          "frames": b.get("frames")}
    finally:
        procs.stop_all()
        link.down()
    return row


def cpu_of(pid, secs):
    """cores the process @pid used over @secs"""
    hz = os.sysconf("SC_CLK_TCK")
    t0, w0 = rig.cpu_ticks(pid), time.monotonic()
    time.sleep(secs)
    t1, w1 = rig.cpu_ticks(pid), time.monotonic()
    return (t1 - t0) / hz / (w1 - w0)


def run_cpu(args, out):
    """loopback, the guest busy: the gateway's cores with one spice-gtk
    client, then with it and one browser viewer"""
    procs = rig.Procs()
    res = {}
    tmp = tempfile.mkdtemp(prefix="webrtc-cpu-", dir=out)
    page = None
    try:
        gport = rig.free_port()
        guest = procs.start([rig.tools(args.build)["guest"], "--port",
                             str(gport), "--addr", "127.0.0.1", "--activity",
                             "busy"],
                            stdout=open(os.path.join(out, "guest-cpu.log"),
                                        "w"), stderr=subprocess.STDOUT)
        if not rig.wait_listen(None, gport, 20, guest):
            raise RuntimeError("guest did not listen")
        gw, cport, hport = start_gateway(args, procs, None, "127.0.0.1",
                                         gport, out, "gateway-cpu.log")
        if not rig.wait_listen(None, hport, 30, gw):
            raise RuntimeError("gateway did not listen")
        client = procs.start([
            os.path.join(args.build, "tests", "common", "spice-test-client"),
            "-p", str(cport), "-w", PASSWORD, "-o",
            os.path.join(tmp, "gtk.ppm"), "--duration-ms",
            str(int((3 * args.cpu_secs + 30) * 1000))],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(5)
        res["spice_client"] = cpu_of(gw.pid, args.cpu_secs)
        page = browser.Browser(tmp, browser.WEBRTC_ARGS)
        page.open("http://127.0.0.1:%d/#token=%s" % (hport, PASSWORD))
        if not page.wait_true("document.getElementById('status')"
                              ".textContent == 'connected'", 60):
            raise RuntimeError("the browser did not connect")
        time.sleep(5)
        res["spice_client_and_browser"] = cpu_of(gw.pid, args.cpu_secs)
        res["browser_viewer"] = (res["spice_client_and_browser"] -
                                 res["spice_client"])
        client.poll()
    finally:
        if page:
            page.close()
        procs.stop_all()
    return res


def fmt(v):
    return "—" if v is None else "%.1f" % v


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--browser-client":
        url, n, out = sys.argv[2:5]
        browser_client(url, int(n), out)
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(SOURCE, "build"))
    p.add_argument("--samples", type=int, default=20)
    p.add_argument("--profiles", default="lan,80/10")
    p.add_argument("--cpu-secs", type=float, default=15)
    p.add_argument("--browser-encoder", default="",
                   help="the browsers' encoder (empty: spicewebrtcsink's)")
    p.add_argument("--prefix", default="gswebrtc")
    p.add_argument("--cc", default="cubic")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    args.max_late_us, args.rate_tolerance = 1000, 10
    if os.geteuid() != 0:
        print("root needed (network namespaces)")
        return 2
    os.environ.setdefault("GST_PLUGIN_PATH_1_0",
                          os.path.join(args.build, "plugins"))
    out = args.out or tempfile.mkdtemp(prefix="webrtc-latency-")
    os.makedirs(out, exist_ok=True)
    link = rig.Link(args)
    rows = [run_profile(args, link, prof, out)
            for prof in args.profiles.split(",") if prof]
    cpu = run_cpu(args, out) if args.cpu_secs > 0 else {}
    print("| link | client | p50 ms | p95 ms | max ms | presses |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        for name, key in (("spice-gtk (spice-keypress), spicesink", "gtk"),
                          ("Chromium, spicewebrtcsink", "browser")):
            c = r.get(key) or {}
            print("| %s | %s | %s | %s | %s | %s |" % (
                r["profile"], name, fmt(c.get("p50")), fmt(c.get("p95")),
                fmt(c.get("max")), c.get("n")))
    if cpu:
        print("\ngateway cores, guest busy: one spice-gtk client %.3f; "
              "with one browser viewer too %.3f; the browser viewer %.3f"
              % (cpu["spice_client"], cpu["spice_client_and_browser"],
                 cpu["browser_viewer"]))
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({"rows": rows, "cpu": cpu}, f, indent=1)
    print("results: %s" % os.path.join(out, "results.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
