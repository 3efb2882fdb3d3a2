#!/usr/bin/python3
"""gst-spice: many sessions on one host (docs/benchmarks.md "Sessions per host").

  sessions.py run    [--pipelines transcode-mjpeg,transcode-vp8] [--counts 1,2,4,8,16]
                     [--activities busy,idle] [--out DIR] [--update-docs]
                     [--beside OLD_BUILD=LABEL] ...
                                       run every cell, write DIR/sessions.json
                                       (with --beside, each cell of an older
                                       tree too, right before this tree's)
  sessions.py report JSON [--docs docs/benchmarks/history] [--guide docs/operator-guide.md]
                     [--plot docs/benchmarks/sessions-DAY.png]
                                       the N table (history/DAY-sessions.md), the
                                       plot and the operator guide's capacity table

A cell is one pipeline, one guest activity and one N. For it the benchmark
starts N test guests (tools/guest, 1280x800, the activity at 30 fps, each on
its own port) and N gst-spice-run processes running the shipped pipeline
against them (each listening on its own port), all on loopback; then:

1. cost window: one spice-keypress client per session connects (a warm-up
   without presses); from one second after the last client is connected
   until the first key press reaches any guest (at most --measure-s), the
   CPU (utime+stime from /proc, the process and its children) of every
   pipeline, guest and client is sampled, and the whole machine's busy time
   from /proc/stat: what is neither ours nor idle is the load of others;
2. latency: the same clients then make --samples key presses each (the
   rig's keypress-to-draw measurement, bench/rig/rig.py); the samples of all
   N clients are pooled for p50/p95;
3. frame rate (moving activities): a second client per session watches the
   activity for --fps-s seconds (spice-keypress --quality: every shown
   frame's stamp) and reports the frames it showed per second.

Peak RSS is each pipeline's VmHWM at the end of the cell. The guests stand in
for VMs on other hosts: their CPU is reported separately, never added to a
session's cost. "Latency rises" at the first N whose pooled p95 exceeds
--rise (1.5) times that pipeline's and activity's N=1 p95.

Everything started is stopped by PID (process group) at the end of each
cell and on failure or signals. Run it as `nice -n -5 bench/sessions.py run
--update-docs` on a quiet machine; the JSON records the niceness and the
load of others.
"""
import argparse
import datetime
import json
import math
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "rig"))
import rig  # noqa: E402  (processes and /proc, shared with the latency rig)

CLK_TCK = rig.CLK_TCK
DEFAULT_PIPELINES = ["transcode-mjpeg", "transcode-vp8"]
DEFAULT_COUNTS = [1, 2, 4, 8, 16]
DEFAULT_ACTIVITIES = ["busy", "idle"]
DOCS = rig.HISTORY
GUIDE = os.path.join(SOURCE, "docs", "operator-guide.md")
RESULTS = os.path.join(SOURCE, "docs", "benchmarks", "sessions.json")


def log(msg):
    sys.stderr.write("[sessions %s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


class Procs(rig.Procs):
    """Processes this benchmark started; stopped by PID (process group) only."""

    def start(self, argv, logpath, **kw):
        with open(logpath, "w") as out:
            return super().start(argv, stdout=out, stderr=subprocess.STDOUT, **kw)


children_map = rig.children_map
cpu_ticks = rig.cpu_ticks


def status_field(pid, children, key):
    """Sum of a /proc/PID/status field (kB or count) over the tree."""
    return rig.peak_rss_kib(pid, children, key) or 0


def psi_cpu_total_us():
    """The host's CPU pressure stall total (PSI "some", microseconds), None
    without PSI."""
    try:
        with open("/proc/pressure/cpu") as f:
            for line in f:
                if line.startswith("some "):
                    return int(line.split("total=")[1])
    except (OSError, IndexError, ValueError):
        pass
    return None


def machine_busy_ticks():
    with open("/proc/stat") as f:
        cpu = [int(x) for x in f.readline().split()[1:]]
    idle = cpu[3] + (cpu[4] if len(cpu) > 4 else 0)
    return sum(cpu[:8]) - idle


def listening(port):
    s = socket.socket()
    s.settimeout(0.5)
    try:
        s.connect(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def established(port):
    """Whether a client is connected to the server listening on @port."""
    r = subprocess.run(["ss", "-Htn", "state", "established", "( sport = :%d )" % port],
                       capture_output=True, text=True)
    return bool(r.stdout.strip())



def rnd(x, nd=3):
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(x, nd)


class Sampler(threading.Thread):
    """Every 0.25 s: the CPU ticks of each role's processes, the machine's
    busy ticks, and whether any guest has logged a key press yet."""

    def __init__(self, roles, guest_logs):
        super().__init__(daemon=True)
        self.roles = roles            # name -> [Popen]
        self.guest_logs = guest_logs
        self.samples = []             # (t, {role: [ticks]}, machine_busy)
        self.first_key = None
        self.stop_ev = threading.Event()
        self.lock = threading.Lock()

    def sample(self):
        ch = children_map()
        t = time.monotonic()
        ticks = {r: [cpu_ticks(p.pid, ch) for p in ps] for r, ps in self.roles.items()}
        s = (t, ticks, machine_busy_ticks())
        with self.lock:
            self.samples.append(s)
        if self.first_key is None:
            for path in self.guest_logs:
                try:
                    with open(path) as f:
                        if "\nkey down " in "\n" + f.read():
                            self.first_key = t
                            break
                except OSError:
                    pass
        return s

    def run(self):
        while not self.stop_ev.wait(0.25):
            self.sample()

    def at(self, t):
        """The last sample taken at or before @t (the first one if none)."""
        with self.lock:
            best = self.samples[0]
            for s in self.samples:
                if s[0] <= t:
                    best = s
            return best


# ---- one cell ---------------------------------------------------------------------

def wait_all(pred, items, timeout, procs_alive=()):
    end = time.monotonic() + timeout
    todo = list(items)
    while todo and time.monotonic() < end:
        for p in procs_alive:
            if p.poll() is not None:
                return False
        todo = [x for x in todo if not pred(x)]
        if todo:
            time.sleep(0.1)
    return not todo


def pipeline_env(args):
    env = dict(os.environ)
    env["GST_PLUGIN_PATH"] = os.path.join(args.build, "plugins")
    env["GST_SPICE_PIPELINES_DIR"] = args.pipelines_dir
    env["GST_REGISTRY"] = os.path.join(args.out, "registry.bin")
    env.setdefault("GST_DEBUG", "*:1")
    return env


def run_cell(args, pipeline, activity, n, celldir, procs):
    os.makedirs(celldir, exist_ok=True)
    res = {"pipeline": pipeline, "activity": activity, "n": n,
           "loadavg_at_start": [round(x, 2) for x in os.getloadavg()]}
    # one call: two calls can hand out a port twice (each releases its
    # own), and a pipeline then fails to bind where a guest listens
    ports = rig.free_ports(2 * n)
    gports, pports = ports[:n], ports[n:]
    env = pipeline_env(args)
    moving = activity != "idle"
    guests, pipes, glogs = [], [], []
    stdins = []
    try:
        for i in range(n):
            glog = os.path.join(celldir, "guest-%d.log" % i)
            glogs.append(glog)
            argv = [args.guest, "--port", str(gports[i]), "--addr", "127.0.0.1",
                    "--activity", activity, "--fps", str(args.fps),
                    "--activity-after-connect", "--streaming-video", "off"]
            if moving:
                argv.append("--frame-stamp")
            g = procs.start(argv, glog, stdin=subprocess.PIPE)
            guests.append(g)
            stdins.append(g.stdin)
        if not wait_all(listening, gports, 20, guests):
            res.update(status="error", reason="a guest did not listen")
            return res
        for i in range(n):
            argv = [args.runner, "--stats-interval", "0", pipeline,
                    "-D", "UPSTREAM=spice://127.0.0.1:%d" % gports[i],
                    "-D", "LISTEN_ADDRESS=127.0.0.1", "-D", "LISTEN_PORT=%d" % pports[i]]
            pipes.append(procs.start(argv, os.path.join(celldir, "pipeline-%d.log" % i),
                                     stdin=subprocess.DEVNULL, env=env))
        if not wait_all(listening, pports, 30 + 2 * n, pipes):
            res.update(status="error", reason="a pipeline did not listen")
            return res
        res["pipeline_cmd"] = " ".join(shlex.quote(a) for a in argv)

        # 1 + 2: cost window, then latency (the same clients)
        # (connecting N clients to N saturated pipelines takes up to about
        # a second each on 2 cores: the presses must not start before)
        warmup = args.measure_s + 2.0 + 1.0 * n
        clients, kjson = [], []
        for i in range(n):
            kjson.append(os.path.join(celldir, "keypress-%d.json" % i))
            argv = [args.keypress, "--uri", "spice://127.0.0.1:%d" % pports[i],
                    "-n", str(args.samples), "--warmup-presses", "2",
                    "--warmup", "%.1f" % warmup, "--timeout", str(args.timeout),
                    "--seed", str(i + 1), "-o", kjson[i], "-v"]
            clients.append(procs.start(argv, os.path.join(celldir, "keypress-%d.log" % i),
                                       stdin=subprocess.DEVNULL))
        sampler = Sampler({"pipeline": pipes, "guest": guests, "client": clients}, glogs)
        sampler.sample()
        sampler.start()
        t_launch = time.monotonic()
        if not wait_all(established, pports, 30 + 2 * n, clients):
            res.update(status="error", reason="a client did not connect")
            return res
        t0 = time.monotonic() + 1.0
        res["connect_all_s"] = round(t0 - 1.0 - t_launch, 2)
        while time.monotonic() < t0:
            time.sleep(0.05)
        psi0, psi_t0 = psi_cpu_total_us(), time.monotonic()
        while time.monotonic() < t0 + args.measure_s and sampler.first_key is None:
            time.sleep(0.1)
        t1 = min(time.monotonic(), sampler.first_key or time.monotonic())
        time.sleep(0.3)
        s0, s1 = sampler.at(t0), sampler.at(t1)
        wall = s1[0] - s0[0]
        res["cost_window_s"] = round(wall, 2)
        if wall < 1.0:
            res.update(status="error", reason="cost window %.2f s: the clients pressed "
                       "before the last one connected" % wall)
        budget = 60 + args.samples * (1.2 + args.timeout / 4) + warmup
        for c in clients:
            try:
                c.wait(max(1.0, t_launch + budget - time.monotonic()))
            except subprocess.TimeoutExpired:
                procs.stop(c)
        psi1 = psi_cpu_total_us()
        if psi0 is not None and psi1 is not None:
            # the share of the cell's time (cost window and presses) in which
            # a task waited for a CPU: what spicesink's max-cpu-pressure reads
            # as PSI some avg10
            res["cpu_pressure_pct"] = rnd(100.0 * (psi1 - psi0) / 1e6 /
                                          max(0.001, time.monotonic() - psi_t0), 1)
        sampler.stop_ev.set()
        sampler.join()
        if wall < 1.0:
            return res

        def cores(role):
            return [(b - a) / CLK_TCK / wall for a, b in zip(s0[1][role], s1[1][role])]
        pc = cores("pipeline")
        gc = cores("guest")
        cc = cores("client")
        machine = (s1[2] - s0[2]) / CLK_TCK / wall
        res["pipeline_cores"] = [rnd(x) for x in pc]
        res["pipeline_cores_per_session"] = rnd(sum(pc) / n, 4)
        res["guest_cores_per_session"] = rnd(sum(gc) / n, 4)
        res["client_cores_per_session"] = rnd(sum(cc) / n, 4)
        res["machine_busy_cores"] = rnd(machine)
        res["others_cores"] = rnd(max(0.0, machine - sum(pc) - sum(gc) - sum(cc)))

        lat, per_client, errors = [], [], []
        for i, path in enumerate(kjson):
            try:
                with open(path) as f:
                    k = json.load(f)
            except (OSError, ValueError):
                k = {"ok": False, "error": "no JSON (exit %s)" % clients[i].returncode}
            if not k.get("ok"):
                errors.append("client %d: %s" % (i, k.get("error")))
            lat.extend(k.get("samples_ms") or [])
            per_client.append({"p50_ms": k.get("p50_ms"), "p95_ms": k.get("p95_ms"),
                               "timeouts": k.get("timeouts"), "n": k.get("n")})
        res["keypress"] = {"n": len(lat), "p50_ms": rnd(rig.pct(lat, 0.5), 2),
                           "p95_ms": rnd(rig.pct(lat, 0.95), 2),
                           "max_ms": rnd(max(lat) if lat else None, 2),
                           "timeouts": sum(c["timeouts"] or 0 for c in per_client),
                           "per_client": per_client}

        # 3: frame rate at the client
        if moving and args.fps_s > 0:
            qclients, qjson = [], []
            for i in range(n):
                qjson.append(os.path.join(celldir, "fps-%d.json" % i))
                argv = [args.keypress, "--uri", "spice://127.0.0.1:%d" % pports[i],
                        "-n", "0", "--warmup-presses", "0", "--warmup", "1.0",
                        "--quality", str(args.fps_s), "--activity", activity,
                        "--picture-seed", "1", "-o", qjson[i], "-v"]
                qclients.append(procs.start(argv, os.path.join(celldir, "fps-%d.log" % i),
                                            stdin=subprocess.DEVNULL))
            tq = time.monotonic()
            for c in qclients:
                try:
                    c.wait(max(1.0, tq + 90 + 4 * args.fps_s + 2 * n - time.monotonic()))
                except subprocess.TimeoutExpired:
                    procs.stop(c)
            fps = []
            for i, path in enumerate(qjson):
                try:
                    with open(path) as f:
                        q = json.load(f).get("quality") or {}
                except (OSError, ValueError):
                    q = {}
                fps.append(q.get("shown_fps"))
                if q.get("shown_fps") is None:
                    errors.append("fps client %d: %s" % (i, q.get("error") or "no result"))
            ok = [x for x in fps if x is not None]
            res["client_fps"] = {"mean": rnd(sum(ok) / len(ok), 1) if ok else None,
                                 "min": rnd(min(ok), 1) if ok else None,
                                 "per_client": [rnd(x, 1) for x in fps]}

        ch = children_map()
        rss = [status_field(p.pid, ch, "VmHWM") / 1024 for p in pipes]
        res["pipeline_peak_rss_mib"] = {"max": rnd(max(rss), 1), "mean": rnd(sum(rss) / n, 1)}
        res["pipeline_threads"] = max(status_field(p.pid, ch, "Threads") for p in pipes)
        grss = [status_field(p.pid, ch, "VmHWM") / 1024 for p in guests]
        res["guest_peak_rss_mib"] = rnd(max(grss), 1)
        dead = [i for i, p in enumerate(pipes) if p.poll() is not None]
        if dead:
            errors.append("pipelines %s exited" % dead)
        if errors:
            res.setdefault("status", "error")
            res["reason"] = "; ".join(errors)[:500]
        res.setdefault("status", "ok")
        return res
    finally:
        for p in pipes:
            procs.stop(p)
        for g, s in zip(guests, stdins):
            try:
                s.write(b"quit\n")
                s.close()
            except (OSError, ValueError):
                pass
        for g in guests:
            try:
                g.wait(3)
            except subprocess.TimeoutExpired:
                pass
            procs.stop(g)
        procs.stop_all()


def machine_info():
    info = rig.machine_info(None)
    mem = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) // 1024
    del info["cc"]
    info.update(mem_mib=mem, niceness=os.nice(0), date=datetime.datetime.now(
        datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    return info


def git_commit(source=SOURCE):
    r = subprocess.run(["git", "-C", source, "rev-parse", "--short", "HEAD"],
                       capture_output=True, text=True)
    return r.stdout.strip() or None


def beside_args(args):
    """The arguments of the tree measured beside this one (--beside
    DIR=LABEL): its build's runner and plugins, its source's pipelines;
    the same guests and clients (this tree's)."""
    build, label = args.beside.split("=", 1)
    b = argparse.Namespace(**vars(args))
    b.build, b.label = os.path.abspath(build), label
    with open(os.path.join(b.build, "meson-info", "meson-info.json")) as f:
        b.source = json.load(f)["directories"]["source"]
    b.pipelines_dir = os.path.join(b.source, "pipelines")
    b.runner = rig.tools(b.build)["runner"]
    return b


def cmd_run(args):
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, rig._on_signal)
    for b in (args.guest, args.keypress, args.runner):
        if not os.access(b, os.X_OK):
            log("missing %s: build it (ninja -C %s)" % (b, args.build))
            return 2
    os.makedirs(args.out, exist_ok=True)
    trees = [args] + ([beside_args(args)] if args.beside else [])
    out = {"machine": machine_info(), "commit": git_commit(),
           "command": " ".join(shlex.quote(a) for a in sys.argv),
           "settings": {"samples": args.samples, "measure_s": args.measure_s,
                        "fps_s": args.fps_s, "fps": args.fps, "rise": args.rise,
                        "rise_min_ms": args.rise_min_ms,
                        "timeout_s": args.timeout},
           "cells": []}
    path = os.path.join(args.out, "sessions.json")

    def save():
        rig.save_json(path, out)

    procs = Procs()
    t_start = time.monotonic()
    status = 0
    # the plugin registry once, not by N processes at once
    for pipeline in args.pipelines:
        r = subprocess.run([args.runner, "--check", pipeline, "-D", "UPSTREAM=spice://127.0.0.1:1"],
                           env=pipeline_env(args), capture_output=True, text=True)
        if r.returncode != 0:
            log("%s does not pass --check: %s" % (pipeline, r.stdout + r.stderr))
            return 2
    for targs in trees[1:]:
        for pipeline in args.pipelines:
            r = subprocess.run([targs.runner, "--check", pipeline, "-D",
                                "UPSTREAM=spice://127.0.0.1:1"],
                               env=pipeline_env(targs), capture_output=True, text=True)
            if r.returncode != 0:
                log("%s (%s) does not pass --check: %s" % (pipeline, targs.build,
                                                            r.stdout + r.stderr))
                return 2
    try:
        for pipeline in args.pipelines:
            for activity in args.activities:
                for n, targs in ((n, t) for n in args.counts for t in trees[::-1]):
                    name = pipeline if targs is args else "%s@%s" % (pipeline, targs.label)
                    log("%s %s N=%d" % (name, activity, n))
                    t = time.monotonic()
                    res = run_cell(targs, pipeline, activity, n,
                                   os.path.join(args.out, "%s-%s-%d" % (name, activity, n)),
                                   procs)
                    res["pipeline"] = name
                    if targs is not args:
                        res["tree"] = {"label": targs.label, "build": targs.build,
                                       "commit": git_commit(targs.source)}
                    res["wall_s"] = round(time.monotonic() - t, 1)
                    out["cells"].append(res)
                    save()
                    log("  %s: %s cores/session, p50/p95 %s/%s ms, fps %s%s" % (
                        res["status"], res.get("pipeline_cores_per_session"),
                        (res.get("keypress") or {}).get("p50_ms"),
                        (res.get("keypress") or {}).get("p95_ms"),
                        (res.get("client_fps") or {}).get("mean"),
                        "" if res["status"] == "ok" else " (%s)" % res.get("reason")))
                    if res["status"] != "ok":
                        status = 1
    except rig.Terminated as e:
        log("stopped: %s" % e)
        status = 130
    finally:
        procs.stop_all()
        out["wall_s"] = round(time.monotonic() - t_start, 1)
        out["machine"]["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
        save()
    log("wrote %s" % path)
    if args.update_docs and status != 130:
        with open(RESULTS, "w") as f:
            json.dump(out, f, indent=1)
        report(out, DOCS, GUIDE, None, RESULTS)
    return status


# ---- report -----------------------------------------------------------------------

def analyse(results):
    """Per pipeline and activity: the cells by N, the N=1 baseline, where
    latency rises, and the per-session costs the capacity table uses."""
    rise = results["settings"].get("rise", 1.5)
    floor = results["settings"].get("rise_min_ms", 20.0)
    groups = {}
    for c in results["cells"]:
        groups.setdefault((c["pipeline"], c["activity"]), []).append(c)
    out = {}
    for key, cells in groups.items():
        cells = sorted(cells, key=lambda c: c["n"])
        ok = [c for c in cells if c["status"] == "ok" and (c.get("keypress") or {}).get("p95_ms")]
        base = next((c for c in ok if c["n"] == 1), None)
        rises_at = None
        if base:
            for c in ok:
                p95, b95 = c["keypress"]["p95_ms"], base["keypress"]["p95_ms"]
                if p95 > rise * b95 and p95 > b95 + floor:
                    rises_at = c["n"]
                    break
        held = [c["n"] for c in ok if rises_at is None or c["n"] < rises_at]
        out[key] = {"cells": cells, "base": base, "rises_at": rises_at,
                    "max_n_held": max(held) if held else None}
    return out


def fmt(x, f="%.3f"):
    return "–" if x is None else f % x


def sessions_table(results, groups):
    lines = ["| pipeline | desktop | N | cores per session (pipeline) | guest cores per session | "
             "client cores per session | machine busy / others (cores) | CPU pressure % | "
             "peak RSS max / mean MiB | keypress p50 / p95 ms | client frames/s mean / min | status |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (pipeline, activity), g in groups.items():
        for c in g["cells"]:
            k = c.get("keypress") or {}
            fps = c.get("client_fps") or {}
            rss = c.get("pipeline_peak_rss_mib") or {}
            mark = " **(rises)**" if g["rises_at"] == c["n"] else ""
            lines.append("| %s | %s | %d | %s | %s | %s | %s / %s | %s | %s / %s | %s / %s%s | %s | %s |" % (
                pipeline, activity, c["n"], fmt(c.get("pipeline_cores_per_session")),
                fmt(c.get("guest_cores_per_session")), fmt(c.get("client_cores_per_session")),
                fmt(c.get("machine_busy_cores"), "%.2f"), fmt(c.get("others_cores"), "%.2f"),
                fmt(c.get("cpu_pressure_pct"), "%.0f"),
                fmt(rss.get("max"), "%.0f"), fmt(rss.get("mean"), "%.0f"),
                fmt(k.get("p50_ms"), "%.1f"), fmt(k.get("p95_ms"), "%.1f"), mark,
                "%s / %s" % (fmt(fps.get("mean"), "%.1f"), fmt(fps.get("min"), "%.1f"))
                if fps else "–",
                (c["status"] if c["status"] == "ok" else "%s: %s" % (c["status"], c.get("reason")))
                + (" (*rerun*)" if c.get("rerun") else "")
                + (" (*added*)" if c.get("added") else "")))
    return "\n".join(lines)


def rise_rule(results):
    return "pooled p95 above %.1f × the N=1 p95 and at least %.0f ms above it" % (
        results["settings"].get("rise", 1.5), results["settings"].get("rise_min_ms", 20.0))


def rise_lines(results, groups):
    rise = results["settings"].get("rise", 1.5)
    counts = sorted({c["n"] for c in results["cells"]})
    out = []
    for (pipeline, activity), g in groups.items():
        if not g["base"]:
            out.append("- %s, %s desktops: no N=1 measurement." % (pipeline, activity))
        elif g["rises_at"]:
            out.append("- %s, %s desktops: latency rises at **N=%d** (p95 %.1f ms > %.1f × "
                       "%.1f ms at N=1)." % (pipeline, activity, g["rises_at"],
                                             next(c for c in g["cells"] if c["n"] == g["rises_at"])
                                             ["keypress"]["p95_ms"], rise,
                                             g["base"]["keypress"]["p95_ms"]))
        else:
            out.append("- %s, %s desktops: latency does not rise up to N=%d (N=1 p95 %.1f "
                       "ms)." % (pipeline, activity, max(counts),
                                 g["base"]["keypress"]["p95_ms"]))
    return "\n".join(out)


def capacity(results, groups):
    """Sessions per core and per GiB for each pipeline and desktop: the N=1
    cost (the machine uncontended) and the largest N measured before latency
    rose on this machine."""
    rows = []
    for (pipeline, activity), g in groups.items():
        b = g["base"]
        if not b:
            continue
        if "@" in pipeline:
            continue            # a tree measured beside (--beside): not this one's
        held = [c for c in g["cells"] if c["status"] == "ok" and g["max_n_held"]
                and c["n"] <= g["max_n_held"]]
        cores = b["pipeline_cores_per_session"]
        rss = max(c["pipeline_peak_rss_mib"]["max"] for c in held or [b])
        rows.append({"pipeline": pipeline, "activity": activity, "cores": cores,
                     "rss_mib": rss, "per_core": 1 / max(cores, 0.001),
                     "per_gib": 1024 / rss, "max_n_held": g["max_n_held"],
                     "rises_at": g["rises_at"], "threads": max(c.get("pipeline_threads") or 0
                                                               for c in g["cells"]),
                     "psi_held": next((c.get("cpu_pressure_pct") for c in g["cells"]
                                       if c["n"] == g["max_n_held"]), None),
                     "psi_rises": next((c.get("cpu_pressure_pct") for c in g["cells"]
                                        if c["n"] == g["rises_at"]), None)})
    return rows


def limits(rows):
    """The systemd and Kubernetes limits the shipped files use, from the
    busiest measured session: CPU at twice its N=1 cost (a session has room
    for heavier content before it is throttled), memory at twice its peak
    RSS, both rounded up; requests at the busy cost and peak."""
    busy = [r for r in rows if r["activity"] != "idle"] or rows
    if not busy:
        return None
    cpu = max(r["cores"] for r in busy)
    rss = max(r["rss_mib"] for r in busy)
    return {"cpu_request_m": int(math.ceil(cpu * 1000 / 50.0)) * 50,
            "cpu_limit_percent": int(math.ceil(cpu * 2 * 100 / 10.0)) * 10,
            "mem_request_mib": int(math.ceil(rss / 16.0)) * 16,
            "mem_limit_mib": int(math.ceil(rss * 2 / 64.0)) * 64,
            "tasks": max(r["threads"] for r in rows)}


def capacity_table(results, rows):
    m = results["machine"]
    lines = ["| pipeline | desktop | cores per session (N=1) | peak RSS MiB | sessions per core "
             "| sessions per GiB | latency held up to N (this host, %d cores) "
             "| CPU pressure %% there / where it rose |" % m["nproc"],
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append("| %s | %s | %.3f | %.0f | %s | %.1f | %s%s | %s / %s |" % (
            r["pipeline"], r["activity"], r["cores"], r["rss_mib"],
            "%.0f" % r["per_core"] if r["per_core"] >= 10 else "%.1f" % r["per_core"],
            r["per_gib"], r["max_n_held"] if r["max_n_held"] else "–",
            " (rises at %d)" % r["rises_at"] if r["rises_at"] else " (did not rise)",
            fmt(r.get("psi_held"), "%.0f"), fmt(r.get("psi_rises"), "%.0f")))
    return "\n".join(lines)


def nan(x):
    return float("nan") if x is None else x


def plot(results, groups, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
    colors = {}
    for (pipeline, activity), g in groups.items():
        color = colors.setdefault(pipeline, "C%d" % len(colors))
        cells = [c for c in g["cells"] if c["status"] == "ok" or c.get("keypress")]
        ns = [c["n"] for c in cells]
        style = "-" if activity != "idle" else ":"
        label = "%s %s" % (pipeline.replace("transcode-", ""), activity)
        axes[0].plot(ns, [nan(c.get("pipeline_cores_per_session")) for c in cells], style,
                     marker="o", color=color, label=label)
        p95 = [nan((c.get("keypress") or {}).get("p95_ms")) for c in cells]
        p50 = [nan((c.get("keypress") or {}).get("p50_ms")) for c in cells]
        axes[1].plot(ns, p95, style, marker="o", color=color, label=label + " p95")
        axes[1].plot(ns, p50, style, marker="x", color=color, alpha=0.5, label=label + " p50")
        if activity != "idle":
            axes[2].plot(ns, [nan((c.get("client_fps") or {}).get("mean")) for c in cells], style,
                         marker="o", color=color, label=label)
    axes[0].set_title("pipeline CPU per session (cores)")
    axes[1].set_title("keypress to draw (ms)")
    axes[1].set_yscale("log")
    axes[2].set_title("frames/s at the client (busy)")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted({c["n"] for c in results["cells"]}))
        ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.set_xlabel("sessions N on %d cores" % results["machine"]["nproc"])
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("gst-spice sessions per host (%s, commit %s)" % (
        results["machine"]["date"], results.get("commit")), fontsize=10)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def report_files(results, docs, plot_path=None):
    """(markdown file of the N table, plot) of @results for --docs @docs:
    docs/benchmarks/history/DAY-sessions.md and
    docs/benchmarks/sessions-DAY.png (a run's own, as the rig's reports)."""
    md, _, plots = rig.report_target(docs, "sessions", results["machine"]["date"])
    return md, plot_path or os.path.join(plots, "sessions-%s.png" % results["machine"]["date"][:10])


def report(results, docs, guide, plot_path, json_path=None):
    """The N table and the plot of @results into the run's file of @docs
    (report_files()), the capacity table into @guide; the raw results are
    linked where @json_path lies beside the plots (the committed
    docs/benchmarks/sessions.json, which the capacity table and the
    shipped limits are checked against)."""
    groups = analyse(results)
    m = results["machine"]
    docs, plot_path = report_files(results, docs, plot_path)
    s = results["settings"]
    rows = capacity(results, groups)
    lim = limits(rows)
    md = []
    md.append("- Command: `%s`" % results["command"])
    for cmd in results.get("reruns") or []:
        md.append("- Cells measured again (marked *rerun*, the run's own cell failed): `%s`" % cmd)
    for cmd in results.get("additions") or []:
        md.append("- Cells added right after the run, same machine and trees (marked *added*): "
                  "`%s`" % cmd)
    md.append("- Machine: %d cores, %s, %d MiB, kernel %s; niceness %d; load average %s at the "
              "start, %s at the end; %s, commit %s; wall time %.0f min." % (
                  m["nproc"], m["cpu"], m["mem_mib"], m["kernel"], m["niceness"],
                  "/".join(str(x) for x in m["loadavg_at_start"]),
                  "/".join(str(x) for x in m.get("loadavg_at_end", [])), m["date"],
                  results.get("commit"), results.get("wall_s", 0) / 60))
    md.append("- Per cell: the cost window lasts up to %s s (connected clients, no presses); "
              "%d key presses per client, pooled over the N clients; %s s of frame counting "
              "per client; activities at %d fps on 1280x800 guests, loopback." % (
                  s["measure_s"], s["samples"], s["fps_s"], s["fps"]))
    md.append("- *cores per session* is the pipeline processes' CPU (utime+stime, /proc) over "
              "the cost window divided by N; the guests (VM stand-ins) and the clients run on "
              "the same 2 cores and are listed separately, never added. *machine busy* is "
              "/proc/stat over the same window; *others* is what neither our pipelines, "
              "guests nor clients used: other users of the machine. Once machine busy "
              "reaches the core count the sessions share what is left, and their cost per "
              "session falls with their frame rate.")
    md.append("")
    md.append(sessions_table(results, groups))
    md.append("")
    md.append("Latency rises (%s):" % rise_rule(results))
    md.append("")
    md.append(rise_lines(results, groups))
    md.append("")
    rel = os.path.relpath(plot_path, os.path.dirname(os.path.abspath(docs)))
    md.append("![sessions per host](%s)" % rel)
    if json_path and os.path.dirname(os.path.abspath(json_path)) == os.path.dirname(
            os.path.abspath(plot_path)):
        md.append("")
        md.append("Raw results: [%s](%s)." % (os.path.basename(json_path), os.path.relpath(
            json_path, os.path.dirname(docs))))
    plot(results, groups, plot_path)
    rig.write_report(docs, "sessions", "\n".join(md).rstrip("\n"),
                     "Sessions per host, %s" % m["date"], m["date"])

    cap = []
    cap.append("Measured by `bench/sessions.py` on %s (%d cores, %s, load average %s at the "
               "start, niceness %d, commit %s); the table is written by the benchmark "
               "(`bench/sessions.py report`), not by hand. The whole N table and its plot: "
               "[%s](%s)." % (
                   m["date"], m["nproc"], m["cpu"],
                   "/".join(str(x) for x in m["loadavg_at_start"]), m["niceness"],
                   results.get("commit"), os.path.basename(docs),
                   os.path.relpath(docs, os.path.dirname(os.path.abspath(guide)))))
    cap.append("")
    cap.append(capacity_table(results, rows))
    cap.append("")
    cap.append("*Sessions per core* is 1 / the pipeline's CPU at N=1 (one session on the "
               "host, beside whatever else ran: see the load above); *per GiB* is 1024 MiB / the largest peak RSS of a session up to the "
               "last N whose latency held. Plan with the smaller of the two for your mix of "
               "busy and idle desktops, and keep headroom: a busy session's cost is its "
               "encoding, which grows with the moving area. The column before last is where "
               "keypress latency rose (%s) on this host, guests and clients included; the "
               "last, the host's CPU pressure (PSI some: the share of the cell's time in "
               "which a task waited for a CPU) at the last N that held and where latency "
               "rose: a `MAX_CPU_PRESSURE` between the two refuses new sessions before they "
               "cost the others their latency ([When the host is saturated]"
               "(#when-the-host-is-saturated))." % rise_rule(results))
    busy = [r for r in rows if r["activity"] != "idle"]
    if lim and busy:
        cap.append("")
        cap.append("Limits from these numbers (busy sessions: at most %.3f cores, peak RSS "
                   "%.0f MiB, %d threads): `CPUQuota=%d%%`, `MemoryMax=%dM`, `TasksMax=%d`, and "
                   "Kubernetes `requests: {cpu: %dm, memory: %dMi}`, `limits: {cpu: %dm, memory: "
                   "%dMi}`. tests/scale checks that the shipped unit and manifests are at least "
                   "these." % (
                       max(r["cores"] for r in busy), max(r["rss_mib"] for r in busy),
                       lim["tasks"], lim["cpu_limit_percent"], lim["mem_limit_mib"],
                       2 * lim["tasks"], lim["cpu_request_m"], lim["mem_request_mib"],
                       lim["cpu_limit_percent"] * 10, lim["mem_limit_mib"]))
    rig.replace_doc_block(guide, "capacity", "\n".join(cap).rstrip("\n"),
                          "## Capacity")
    log("updated %s, %s and %s" % (docs, guide, plot_path))
    return 0


def cmd_report(args):
    with open(args.json) as f:
        results = json.load(f)
    return report(results, args.docs, args.guide, args.plot, args.json)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run")
    p.add_argument("--pipelines", default=",".join(DEFAULT_PIPELINES))
    p.add_argument("--counts", default=",".join(str(x) for x in DEFAULT_COUNTS))
    p.add_argument("--activities", default=",".join(DEFAULT_ACTIVITIES))
    p.add_argument("--samples", type=int, default=12, help="key presses per client")
    p.add_argument("--measure-s", type=float, default=8.0, help="cost window, s")
    p.add_argument("--fps-s", type=float, default=4.0, help="frame counting per client, s")
    p.add_argument("--fps", type=int, default=30, help="the guests' activity frame rate")
    p.add_argument("--timeout", type=float, default=10.0, help="per key press, s")
    p.add_argument("--rise", type=float, default=1.5,
                   help="latency rises where p95 > RISE x the N=1 p95 ...")
    p.add_argument("--rise-min-ms", type=float, default=20.0,
                   help="... and p95 > the N=1 p95 + this (a few ms are no rise)")
    p.add_argument("--build", default=os.path.join(SOURCE, "build"))
    p.add_argument("--beside", default=None, metavar="DIR=LABEL",
                   help="another tree's build measured beside this one, cell by cell "
                   "(its runner, plugins and pipelines; the same guests and clients); its "
                   "cells are PIPELINE@LABEL, left out of the capacity table")
    p.add_argument("--out", default=None)
    p.add_argument("--update-docs", action="store_true",
                   help="then write docs/benchmarks/sessions.json, the plot, the run's "
                   "docs/benchmarks/history/DAY-sessions.md and the operator guide's "
                   "capacity table")
    r = sub.add_parser("report")
    r.add_argument("json", help="a sessions.json")
    r.add_argument("--docs", default=DOCS,
                   help="docs/benchmarks/history (the run's own DAY-sessions.md), or a file")
    r.add_argument("--guide", default=GUIDE)
    r.add_argument("--plot", default=None, help="default: docs/benchmarks/sessions-DAY.png")
    args = ap.parse_args()
    if args.cmd == "run":
        args.pipelines = rig.csv(args.pipelines)
        args.counts = [int(x) for x in rig.csv(args.counts)]
        args.activities = rig.csv(args.activities)
        args.build = os.path.abspath(args.build)
        args.pipelines_dir = os.path.join(SOURCE, "pipelines")
        args.label = None
        vars(args).update(rig.tools(args.build))
        if args.out is None:
            args.out = "/tmp/gst-spice-sessions-" + time.strftime("%Y%m%d-%H%M%S")
        args.out = os.path.abspath(args.out)
        return cmd_run(args)
    return cmd_report(args)


if __name__ == "__main__":
    sys.exit(main())
