#!/usr/bin/python3
"""gst-spice latency rig: matrix runner and report.

  rig.py run    [--profiles lan,80/10] [--activities idle,busy] [--modes relay-off]
                [--samples 20] [--out DIR] ...     run cells, write DIR/results.json
  rig.py report DIR [--docs docs/benchmarks/history] [--stem S] [--title T]
                [--note TEXT]                      markdown table + gnuplot PNGs:
                                                   a file of the run's own in the
                                                   history, DAY-STEM.md
  rig.py estimate ...                               print how long a matrix takes
  rig.py sound  DIR...                              markdown for the sound cells
                                                   (modes.ini client_args --audio…):
                                                   skew, audio latency, keypress
                                                   with audio against without

Every profile's link is created with tools/linkemu/linkemu-setup.sh and
verified (ping RTT within 2 ms, TCP rate within 10 %) before use; a profile
whose link fails is recorded as failed and none of its cells is measured.
Per cell: start spice-test-guest in the server namespace (its stdin is a FIFO
the rig holds open), optionally the mode's server command (a transcoding
pipeline), then spice-keypress in the client namespace; record its JSON, the
guest's and pipeline's CPU (user+sys over wall, from /proc) and peak RSS, and
the delay line's counters.  Everything started is stopped (by PID) at the end
of each cell and on failure or signals; the link is torn down at the end.
See docs/benchmarks.md.
"""
import argparse
import configparser
import datetime
import json
import math
import os
import platform
import random
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
HISTORY = os.path.join(SOURCE, "docs", "benchmarks", "history")
INDEX_MARK = "<!-- history:index -->"
ALL_PROFILES = ["lan", "20/50", "80/10", "80/50", "80/5", "150/2"]
# every activity the guest has (--activities all); the default matrix keeps
# the first five (film and desktop-video would make it 40 % longer)
ALL_ACTIVITIES = ["idle", "busy", "heavy", "text", "video", "film", "desktop-video"]
DEFAULT_ACTIVITIES = ALL_ACTIVITIES[:5]
ALL_MODES = ["relay-off", "relay-all", "transcode-lossless", "transcode-mjpeg",
             "transcode-vp8"]
PASSWORD = "rig"
GUEST_PORT_RELAY = 5900
GUEST_PORT_LOOP = 5910
CLIENT_PORT = 5900
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(msg):
    sys.stderr.write("[rig %s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


class Terminated(Exception):
    pass


def _on_signal(signum, frame):
    raise Terminated("signal %d" % signum)


# ---- processes ----------------------------------------------------------------

def killpg(p, sig):
    """@sig to the process group of @p (started with start_new_session)."""
    try:
        os.killpg(p.pid, sig)
    except ProcessLookupError:
        pass


class Procs:
    """Processes this rig started; stopped by PID (process group) only."""

    def __init__(self):
        self.procs = []

    def start(self, argv, **kw):
        p = subprocess.Popen(argv, start_new_session=True, **kw)
        self.procs.append(p)
        return p

    def stop(self, p, grace=5.0):
        if p.poll() is None:
            killpg(p, signal.SIGTERM)
            try:
                p.wait(grace)
            except subprocess.TimeoutExpired:
                killpg(p, signal.SIGKILL)
                p.wait()
        if p in self.procs:
            self.procs.remove(p)

    def stop_all(self):
        for p in list(self.procs):
            self.stop(p, grace=2.0)


def children_map():
    """ppid -> [pid] of every live process (one pass over /proc)."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
        except OSError:
            continue
        ppid = int(st[st.rfind(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(d))
    return children


def proc_tree(pid, children=None):
    """pid and its live descendants (@children: a children_map() to reuse)."""
    if children is None:
        children = children_map()
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def cpu_ticks(pid, children=None):
    total = 0
    for p in proc_tree(pid, children):
        try:
            with open("/proc/%d/stat" % p) as f:
                st = f.read()
            fields = st[st.rfind(")") + 2:].split()
            total += int(fields[11]) + int(fields[12])   # utime, stime
        except (OSError, IndexError, ValueError):
            pass
    return total


def peak_rss_kib(pid, children=None, key="VmHWM"):
    """Sum of a /proc/PID/status field over the tree (VmHWM: peak RSS, kB)."""
    total = 0
    for p in proc_tree(pid, children):
        try:
            with open("/proc/%d/status" % p) as f:
                for line in f:
                    if line.startswith(key + ":"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total or None


# ---- link -------------------------------------------------------------------------

class Link:
    def __init__(self, args):
        self.args = args
        self.setup = os.path.join(SOURCE, "tools", "linkemu", "linkemu-setup.sh")
        self.linkemu = os.path.join(args.build, "tools", "linkemu", "linkemu")
        self.state = None
        self.up_profile = None

    def _run(self, *a, check=True, capture=False):
        cmd = ["bash", self.setup] + list(a) + ["--prefix", self.args.prefix]
        r = subprocess.run(cmd, capture_output=capture, text=True)
        if check and r.returncode != 0:
            raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), r.returncode,
                                                       (r.stderr or "").strip()))
        return r

    def up(self, profile):
        self.up_profile = profile
        self._run("up", profile, "--cc", self.args.cc, "--linkemu", self.linkemu)
        self.state = {}
        with open("/run/gst-spice-rig/%s.state" % self.args.prefix) as f:
            for line in f:
                k, _, v = line.strip().partition("=")
                self.state[k] = v

    def verify(self, json_path):
        r = self._run("verify", "--json", json_path, "--max-late-us", str(self.args.max_late_us),
                      "--rate-tolerance", str(self.args.rate_tolerance),
                      check=False, capture=True)
        try:
            with open(json_path) as f:
                res = json.load(f)
        except (OSError, ValueError):
            res = {"ok": False, "reason": (r.stderr or "verify failed").strip()}
        res["ok"] = bool(res.get("ok")) and r.returncode == 0
        return res

    def linkemu_stats(self):
        pid = self.state.get("LINKEMU_PID") if self.state else None
        if not pid:
            return None
        path = "/run/gst-spice-rig/%s.linkemu.json" % self.args.prefix
        try:
            mtime = os.path.getmtime(path)
        except OSError:
            mtime = 0
        try:
            os.kill(int(pid), signal.SIGUSR1)
        except (ProcessLookupError, ValueError):
            return None
        for _ in range(50):
            try:
                if os.path.getmtime(path) != mtime:
                    break
            except OSError:
                pass
            time.sleep(0.02)
        try:
            with open(path) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def down(self):
        self._run("down", check=False)
        self.state = None


def ns_exec(ns, argv):
    """@argv in network namespace @ns (None: this one)."""
    return ["ip", "netns", "exec", ns] + argv if ns else list(argv)


def wait_listen(ns, port, timeout, proc=None):
    end = time.time() + timeout
    while time.time() < end:
        if proc is not None and proc.poll() is not None:
            return False
        r = subprocess.run(ns_exec(ns, ["ss", "-Hltn", "sport = :%d" % port]),
                           capture_output=True, text=True)
        if r.stdout.strip():
            return True
        time.sleep(0.1)
    return False


def free_ports(n):
    """@n distinct free TCP ports on loopback (bound and released at once)."""
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def free_port():
    return free_ports(1)[0]


def tools(build):
    """The programs the rig runs, in build directory @build:
    {"guest", "keypress", "runner"} -> path."""
    return {"guest": os.path.join(build, "tools", "spice-test-guest"),
            "keypress": os.path.join(build, "tools", "keypress", "spice-keypress"),
            "runner": os.path.join(build, "tools", "runner", "gst-spice-run")}


def replace_doc_block(path, name, text, heading=None, new_file=None):
    """Replaces the <!-- NAME:begin --> ... <!-- NAME:end --> block of the
    markdown file @path (a new file, @new_file or "# Benchmarks", where
    there is none) with @text; a new block goes at the end, after @heading
    where one is given."""
    begin, end = "<!-- %s:begin -->" % name, "<!-- %s:end -->" % name
    doc = open(path).read() if os.path.exists(path) else (new_file or "# Benchmarks\n")
    block = begin + "\n" + text + "\n" + end
    if begin in doc and end in doc:
        doc = doc[:doc.index(begin)] + block + doc[doc.index(end) + len(end):]
    else:
        doc = doc.rstrip("\n") + "\n\n" + (heading + "\n\n" if heading else "") + block + "\n"
    with open(path, "w") as f:
        f.write(doc)


def check_docs(docs):
    """@docs as an absolute path; a headline page (docs/benchmarks.md: a
    NAME.md beside its NAME/history/) is refused (see report_target()),
    before a run rather than after it."""
    docs = os.path.abspath(docs)
    history = os.path.join(os.path.splitext(docs)[0], "history")
    if docs.endswith(".md") and os.path.isdir(history):
        raise SystemExit("%s holds the headline figures, chosen by hand from the history: "
                         "pass --docs %s (a file of the run's own) and quote the run there"
                         % (os.path.relpath(docs), os.path.relpath(history)))
    return docs


def report_target(docs, stem, date):
    """Where a report with --docs @docs goes: (markdown file, stem of its
    block, plots and JSON, directory of the plots and JSON).  A directory
    (docs/benchmarks/history) gets a file of the run's own, DAY-STEM.md
    (DAY from @date, "YYYY-MM-DD ..."; the stem gets the day in front
    unless it has it); a file gets the block (a file of one's own notes).
    Plots go to docs/benchmarks/ for a file in a history/ directory (the
    files link ../NAME.png), else to benchmarks/ beside the file.
    docs/benchmarks.md is refused: its figures are chosen by hand from
    the history (a run's block there made it 4,500 lines of dated runs)."""
    docs = check_docs(docs)
    if os.path.isdir(docs):
        day = (date or "")[:10] or time.strftime("%Y-%m-%d")
        if day not in stem:
            stem = day + "-" + stem
        md = os.path.join(docs, stem + ".md")
    else:
        md = docs
    d = os.path.dirname(md)
    plots = os.path.dirname(d) if os.path.basename(d) == "history" else os.path.join(d, "benchmarks")
    os.makedirs(plots, exist_ok=True)
    return md, stem, plots


def write_report(md, name, text, title, date):
    """The report @text as the block @name of @md (report_target()); a new
    file in a history directory starts with @title and its links, and the
    directory's README.md lists it under INDEX_MARK, newest day first
    (with the title only: the line on what the run shows is the
    author's)."""
    d = os.path.dirname(md)
    readme = os.path.join(d, "README.md")
    new_file = "# %s\n" % title
    if os.path.exists(readme):
        headline = os.path.join(os.path.dirname(os.path.dirname(d)), "benchmarks.md")
        new_file += ("\nWritten by the benchmark's report. The current headline results are in "
                     "[benchmarks.md](%s); the other runs in [the history](README.md).\n"
                     % os.path.relpath(headline, d))
    replace_doc_block(md, name, text, new_file=new_file)
    if not os.path.exists(readme):
        return
    index = open(readme).read()
    base = os.path.basename(md)
    if INDEX_MARK not in index or "](%s)" % base in index:
        return
    entry = "- [%s](%s): %s%s." % (base, base, title, "" if date in title else " (%s)" % date)
    lines = index.split("\n")
    at = lines.index(INDEX_MARK) + 1
    while at < len(lines) and lines[at].strip():
        m = re.match(r"- \[(\d{4}-\d\d-\d\d)", lines[at])
        if m and m.group(1) <= base[:10]:
            break
        at += 1
    lines.insert(at, entry)
    with open(readme, "w") as f:
        f.write("\n".join(lines))


class SsSampler(threading.Thread):
    """Samples the server's client-facing TCP sockets every 0.5 s (ss -tin):
    the largest Send-Q among them, and that socket's smoothed RTT and cwnd."""

    def __init__(self, ns, port, path):
        super().__init__(daemon=True)
        self.ns, self.port, self.path = ns, port, path
        self.stop_ev = threading.Event()
        self.samples = []

    def run(self):
        with open(self.path, "w") as log:
            while not self.stop_ev.wait(0.5):
                r = subprocess.run(ns_exec(self.ns, ["ss", "-tinH", "state", "established",
                                                     "( sport = :%d )" % self.port]),
                                   capture_output=True, text=True)
                t = time.monotonic()
                best = None
                lines = r.stdout.splitlines()
                for i, line in enumerate(lines):
                    f = line.split()
                    if len(f) < 4 or not f[0].isdigit():
                        continue
                    info = lines[i + 1] if i + 1 < len(lines) else ""
                    rtt = re.search(r"\brtt:([0-9.]+)", info)
                    cwnd = re.search(r"\bcwnd:(\d+)", info)
                    cand = (int(f[1]), float(rtt.group(1)) if rtt else None,
                            int(cwnd.group(1)) if cwnd else None)
                    if best is None or cand[0] > best[0]:
                        best = cand
                if best:
                    self.samples.append(best)
                    log.write("%.2f sendq=%d rtt=%s cwnd=%s\n" % (t, best[0], best[1], best[2]))

    def summary(self):
        def pct1(v, q):
            x = pct(v, q)
            return None if x is None else round(x, 1)
        q = [s[0] / 1024 for s in self.samples]
        return {"n": len(self.samples), "sendq_kib_p50": pct1(q, 0.5), "sendq_kib_p95": pct1(q, 0.95),
                "srtt_ms_p50": pct1([s[1] for s in self.samples], 0.5),
                "cwnd_p50": pct1([s[2] for s in self.samples], 0.5)}


def linkemu_delta(a, b):
    """Counters of b minus a (both linkemu stats), lateness of b."""
    if not a or not b:
        return b
    # wake-up lateness is cumulative since the link came up (a histogram)
    out = {k: v for k, v in b.items() if not isinstance(v, dict)}
    for d in ("ab", "ba"):
        x, y = a.get(d, {}), b.get(d, {})
        out[d] = {k: (y[k] - x.get(k, 0) if k.startswith(("rx_", "tx_", "drops_", "oversize"))
                      else y[k]) for k in y}
    return out


# ---- one cell --------------------------------------------------------------------------

def run_cell(args, link, modes, profile, activity, mode, celldir, procs):
    os.makedirs(celldir, exist_ok=True)
    cfg = modes[mode]
    st = link.state
    ns_srv, ns_cli, srv_ip = st["NS_SRV"], st["NS_CLI"], st["SRV_IP"]
    res = {"profile": profile, "activity": activity, "mode": mode, "cc": args.cc,
           "samples_requested": args.samples}
    tree_build = cfg.get("beside_build", args.build)
    tree_source = cfg.get("beside_source", SOURCE)
    subst = {"runner": tools(tree_build)["runner"] if "beside_build" in cfg else args.runner,
             "source": tree_source, "build": tree_build,
             "guest_port": GUEST_PORT_LOOP, "client_port": CLIENT_PORT,
             "server_ip": srv_ip, "password": PASSWORD, "mode": mode}
    pipeline = cfg.get("pipeline")
    if pipeline:
        pipeline = pipeline.format(**subst)
        subst["pipeline"] = pipeline
        if not os.path.exists(pipeline):
            res["status"] = "skipped"
            res["reason"] = "pipeline %s not found" % os.path.relpath(pipeline, SOURCE)
            return res
    server_cmd = cfg.get("server_cmd")
    guest_port = GUEST_PORT_LOOP if server_cmd else GUEST_PORT_RELAY
    guest_addr = "127.0.0.1" if server_cmd else srv_ip

    fifo = os.path.join(celldir, "guest.ctl")
    if os.path.exists(fifo):
        os.unlink(fifo)
    os.mkfifo(fifo)
    ctl = os.open(fifo, os.O_RDWR)       # held open: the guest never sees EOF
    guest = pipe = None
    try:
        gargv = [args.guest, "--port", str(guest_port), "--addr", guest_addr,
                 "--activity", activity, "--fps", str(args.fps),
                 "--activity-after-connect"]
        gpw = cfg.get("guest_password", PASSWORD).strip()
        if gpw and gpw != "none":
            gargv += ["--password", gpw]
        gargv += shlex.split(cfg.get("guest_args", ""))
        quality = args.quality > 0 and activity != "idle"
        ftimes = os.path.join(celldir, "frame-times.log")
        if quality:
            if os.path.exists(ftimes):
                os.unlink(ftimes)
            gargv += ["--frame-stamp", "--frame-times", ftimes]
        res["guest_cmd"] = " ".join(shlex.quote(a) for a in gargv)
        glog = open(os.path.join(celldir, "guest.log"), "w")
        guest = procs.start(ns_exec(ns_srv, gargv), stdin=ctl, stdout=glog,
                            stderr=subprocess.STDOUT)
        glog.close()
        if not wait_listen(ns_srv, guest_port, 10, guest):
            res["status"] = "error"
            res["reason"] = "guest did not listen"
            return res
        connect_port = guest_port
        env = dict(os.environ)
        if server_cmd:
            cmd = server_cmd.format(**subst)
            res["server_cmd"] = cmd
            env["GST_PLUGIN_PATH"] = os.path.join(tree_build, "plugins")
            env["GST_SPICE_PIPELINES_DIR"] = os.path.join(tree_source, "pipelines")
            plog = open(os.path.join(celldir, "pipeline.log"), "w")
            pipe = procs.start(ns_exec(ns_srv, shlex.split(cmd)), stdin=subprocess.DEVNULL,
                               stdout=plog, stderr=subprocess.STDOUT, env=env)
            plog.close()
            if not wait_listen(ns_srv, CLIENT_PORT, 20, pipe):
                res["status"] = "error"
                res["reason"] = "pipeline did not listen on %d" % CLIENT_PORT
                return res
            connect_port = CLIENT_PORT
        kjson = os.path.join(celldir, "keypress.json")
        kargv = [args.keypress, "--uri", "spice://%s:%d" % (srv_ip, connect_port),
                 "--password", PASSWORD, "-n", str(args.samples),
                 "--warmup-presses", str(args.warmup_presses),
                 "--warmup", str(args.warmup), "--timeout", str(args.timeout),
                 "--exact-timeout", str(args.exact_timeout),
                 "--guest-control", fifo, "--reference", os.path.join(celldir, "reference.ppm"),
                 "--seed", str(args.seed), "-o", kjson, "-v"]
        if quality:
            kargv += ["--quality", str(args.quality), "--activity", activity,
                      "--picture-seed", "1", "--frame-times", ftimes]
        kargv += shlex.split(cfg.get("client_args", ""))
        le0 = link.linkemu_stats()
        lpid = int(st["LINKEMU_PID"]) if st.get("LINKEMU_PID") else None
        c_link0 = cpu_ticks(lpid) if lpid else 0
        c_guest0 = cpu_ticks(guest.pid)
        c_pipe0 = cpu_ticks(pipe.pid) if pipe else 0
        t0 = time.monotonic()
        klog = open(os.path.join(celldir, "keypress.log"), "w")
        kp = procs.start(ns_exec(ns_cli, kargv), stdout=klog, stderr=subprocess.STDOUT)
        klog.close()
        ss = SsSampler(ns_srv, connect_port, os.path.join(celldir, "ss.log"))
        ss.start()
        budget = (args.warmup + 60 + (args.samples + args.warmup_presses) *
                  (args.gap_max + 2.0) + args.exact_timeout + 8 * args.timeout +
                  (args.quality + 60 if quality else 0))
        try:
            rc = kp.wait(budget)
        except subprocess.TimeoutExpired:
            procs.stop(kp)
            rc = -1
        if kp in procs.procs:
            procs.procs.remove(kp)
        wall = time.monotonic() - t0
        ss.stop_ev.set()
        ss.join()
        res["server_socket"] = ss.summary()
        c_guest1 = cpu_ticks(guest.pid)
        c_pipe1 = cpu_ticks(pipe.pid) if pipe else 0
        res["guest_cores"] = round((c_guest1 - c_guest0) / CLK_TCK / wall, 3)
        res["guest_peak_rss_mib"] = round((peak_rss_kib(guest.pid) or 0) / 1024, 1)
        if pipe:
            res["pipeline_cores"] = round((c_pipe1 - c_pipe0) / CLK_TCK / wall, 3)
            res["pipeline_peak_rss_mib"] = round((peak_rss_kib(pipe.pid) or 0) / 1024, 1)
        if lpid:
            res["linkemu_cores"] = round((cpu_ticks(lpid) - c_link0) / CLK_TCK / wall, 3)
        res["cell_wall_s"] = round(wall, 1)
        res["linkemu"] = linkemu_delta(le0, link.linkemu_stats())
        try:
            with open(kjson) as f:
                res["keypress"] = json.load(f)
        except (OSError, ValueError):
            res["keypress"] = None
        if rc == 0 and res["keypress"] and res["keypress"].get("ok"):
            res["status"] = "ok"
        else:
            res["status"] = "error"
            res["reason"] = (res["keypress"] or {}).get("error") or "client exit %s" % rc
        if pipe and pipe.poll() is not None:
            res["status"] = "error"
            res["reason"] = "pipeline exited with %s" % pipe.returncode
        if guest.poll() is not None:
            res["status"] = "error"
            res["reason"] = "guest exited with %s" % guest.returncode
        # the guest's own view: key presses it received and box redraws
        try:
            with open(os.path.join(celldir, "guest.log")) as f:
                glines = f.read().splitlines()
            res["guest_key_downs"] = sum(1 for x in glines if x.startswith("key down "))
            res["guest_box_draws"] = sum(1 for x in glines if re.match(r"box \d+$", x))
            sound = sound_of_cell(res.get("keypress"), glines)
            if sound:
                res["sound"] = sound
            presses = args.samples + args.warmup_presses
            if res["status"] == "ok" and res["guest_key_downs"] != presses:
                res["status"] = "error"
                res["reason"] = "guest saw %d key presses, client made %d" % (
                    res["guest_key_downs"], presses)
        except OSError:
            pass
        return res
    finally:
        if pipe:
            procs.stop(pipe)
        if guest:
            try:
                os.write(ctl, b"quit\n")
                guest.wait(5)
            except (OSError, subprocess.TimeoutExpired):
                pass
            procs.stop(guest)
        os.close(ctl)
        try:
            os.unlink(fifo)
        except OSError:
            pass
        ref = os.path.join(celldir, "reference.ppm")
        if os.path.exists(ref) and not args.keep_reference:
            os.unlink(ref)


def save_json(path, obj):
    """Writes @obj to @path as JSON, atomically (a reader sees the old or
    the new file, never half of one)."""
    with open(path + ".tmp", "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(path + ".tmp", path)


def pct(v, q):
    """Linear-interpolated percentile q (0..1) of v, None if empty."""
    v = sorted(x for x in v if x is not None)
    if not v:
        return None
    pos = q * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (pos - lo) * (v[hi] - v[lo])


def sound_of_cell(kp, glines):
    """A burst cell (guest --audio burst, spice-keypress --audio-burst):
    per measured press, the guest's flip time (its `audio burst N FRAME T_US`
    line; CLOCK_MONOTONIC, which the client's namespace shares) against the
    client's draw of the new box colour and its burst onset."""
    a = (kp or {}).get("audio")
    if not a:
        return None
    out = {k: a.get(k) for k in ("format", "rate", "frames", "packets", "wire_bytes",
                                 "min_latency_ms", "max_gap_ms", "skew_ms", "skew_p5_ms",
                                 "skew_p50_ms", "skew_p95_ms", "matched", "onsets")}
    flips, frames = {}, {}
    for x in glines:
        m = re.match(r"audio burst (\d+) (\d+) (-?\d+)$", x)
        if m:
            flips[int(m.group(1))] = int(m.group(3))
            frames[int(m.group(1))] = int(m.group(2))
    if "press" in a and flips:
        lat_a, lat_v, offs = [], [], []
        for p, v, o, f in zip(a["press"], a["video_us"], a["onset_us"],
                              a.get("onset_frame", [])):
            if p in flips:
                lat_v.append((v - flips[p]) / 1e3)
                if o >= 0:
                    lat_a.append((o - flips[p]) / 1e3)
                    offs.append(f - frames[p])
        out["audio_latency_ms"] = lat_a
        out["video_latency_ms"] = lat_v
        # the client's stream position of each onset minus the guest's: the
        # same for every press unless a pair is wrong or frames were lost
        # or repeated between two bursts
        out["stream_offset_spread_frames"] = max(offs) - min(offs) if offs else None
        for name, v in (("audio", lat_a), ("video", lat_v)):
            out["%s_p50_ms" % name] = pct(v, 0.5)
            out["%s_p95_ms" % name] = pct(v, 0.95)
    return out


def machine_info(cc):
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = os.getloadavg()
    return {"nproc": os.cpu_count(), "cpu": model, "kernel": platform.release(),
            "cc": cc, "loadavg_at_start": [round(x, 2) for x in load],
            "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M")}


def load_modes(path):
    cp = configparser.ConfigParser(interpolation=None)
    cp.read(path)
    return {s: dict(cp[s]) for s in cp.sections()}


def add_beside_modes(modes, names, beside):
    """--beside BUILD=LABEL: after each mode of @names that runs a pipeline,
    the same mode as MODE@LABEL on that build (its runner and plugins) with
    its source tree's pipelines (from its meson-info); the guest and the
    client stay this tree's. Adds them to @modes; returns the new order."""
    build, label = beside.split("=", 1)
    build = os.path.abspath(build)
    with open(os.path.join(build, "meson-info", "meson-info.json")) as f:
        source = json.load(f)["directories"]["source"]
    order = []
    for m in names:
        order.append(m)
        if modes[m].get("server_cmd"):
            other = "%s@%s" % (m, label)
            modes[other] = dict(modes[m], beside_build=build, beside_source=source)
            order.append(other)
    return order


def cmd_run(args):
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _on_signal)
    if os.geteuid() != 0:
        log("needs root (network namespaces)")
        return 77
    modes = load_modes(args.modes_file)
    for m in args.modes:
        if m not in modes:
            log("unknown mode %s (modes file %s)" % (m, args.modes_file))
            return 2
    if args.beside:
        args.modes = add_beside_modes(modes, args.modes, args.beside)
    for b in (args.guest, args.keypress):
        if not os.access(b, os.X_OK):
            log("missing %s: build it (ninja -C %s)" % (b, args.build))
            return 2
    os.makedirs(args.out, exist_ok=True)
    out = {"machine": machine_info(args.cc), "command": " ".join(shlex.quote(a) for a in sys.argv),
           "settings": {"samples": args.samples, "warmup_presses": args.warmup_presses,
                        "warmup_s": args.warmup, "timeout_s": args.timeout, "fps": args.fps,
                        "exact_timeout_s": args.exact_timeout, "cc": args.cc,
                        "quality_s": args.quality},
           "links": {}, "cells": []}
    path = os.path.join(args.out, "results.json")

    def save():
        save_json(path, out)

    procs = Procs()
    link = Link(args)
    t_start = time.monotonic()
    status = 0
    try:
        for profile in args.profiles:
            pdir = os.path.join(args.out, profile.replace("/", "-"))
            os.makedirs(pdir, exist_ok=True)
            log("link %s (cc %s)" % (profile, args.cc))
            try:
                link.up(profile)
                # a busy machine can spoil one verification (delay-line
                # lateness); a link that keeps failing is not measured
                for attempt in range(1, args.verify_attempts + 1):
                    ver = link.verify(os.path.join(pdir, "link.json"))
                    ver["attempts"] = attempt
                    if ver.get("ok"):
                        break
                    log("link %s verification %d failed: %s" % (profile, attempt, ver.get("reason")))
                    if attempt < args.verify_attempts:
                        time.sleep(5)
            except RuntimeError as e:
                ver = {"ok": False, "reason": str(e)}
            out["links"][profile] = ver
            if not ver.get("ok"):
                log("link %s FAILED verification: %s -- not measured" % (profile, ver.get("reason")))
                for a in args.activities:
                    for m in args.modes:
                        out["cells"].append({"profile": profile, "activity": a, "mode": m,
                                             "cc": args.cc, "status": "link-failed",
                                             "reason": ver.get("reason")})
                save()
                link.down()
                status = 1
                continue
            log("link %s ok: ping %s ms, TCP %s Mbit/s" % (profile, ver.get("ping_avg_ms"),
                                                          ver.get("tcp_mbit")))
            for activity in args.activities:
                for mode in args.modes:
                    cdir = os.path.join(pdir, activity, mode)
                    log("cell %s %s %s" % (profile, activity, mode))
                    try:
                        res = run_cell(args, link, modes, profile, activity, mode, cdir, procs)
                    except (OSError, RuntimeError, KeyError) as e:
                        res = {"profile": profile, "activity": activity, "mode": mode,
                               "cc": args.cc, "status": "error", "reason": repr(e)}
                    k = res.get("keypress") or {}
                    q = k.get("quality") or {}
                    log("  -> %s p50 %s p95 %s max %s timeouts %s Mbit/s %s exact %s%s%s" % (
                        res["status"], k.get("p50_ms"), k.get("p95_ms"), k.get("max_ms"),
                        k.get("timeouts"), k.get("mbit_s"), k.get("time_to_exact_ms"),
                        (" ssim %s/%s fps %s" % (q.get("ssim_mean"), q.get("ssim_p5"),
                                                 q.get("shown_fps"))) if q else "",
                        (" (%s)" % res.get("reason")) if res.get("reason") else ""))
                    out["cells"].append(res)
                    save()
            link.down()
    except Terminated as e:
        log("stopped: %s" % e)
        status = 130
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)     # let the cleanup finish
        procs.stop_all()
        link.down()
        out["wall_s"] = round(time.monotonic() - t_start, 1)
        save()
    log("results: %s (%.0f s)" % (path, out["wall_s"]))
    return status


# ---- report -----------------------------------------------------------------------------

def fmt(v, nd=0):
    if v is None:
        return "–"
    if isinstance(v, float) and nd == 0:
        return "%d" % round(v)
    return ("%." + str(nd) + "f") % v


def table(results):
    cells = results["cells"]
    floors = {}
    for c in cells:
        k = c.get("keypress") or {}
        if c.get("status") == "ok" and c["activity"] == "idle" and c["mode"] == "relay-off":
            floors[c["profile"]] = k.get("p50_ms")
    lines = ["| link | activity | mode | n | p50 | p95 | max | p50 − floor | timeouts | Mbit/s | "
             "Send-Q p95 KiB | guest cores | pipeline cores | peak RSS MiB (guest/pipeline) | exact picture s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        prof = c["profile"]
        if c.get("status") not in ("ok", "error") or not c.get("keypress"):
            lines.append("| %s | %s | %s | %s |  |  |  |  |  |  |  |  |  |  |  |" % (
                prof, c["activity"], c["mode"], c.get("status") + (": " + c["reason"] if c.get("reason") else "")))
            continue
        k = c["keypress"]
        floor = floors.get(prof)
        above = (k["p50_ms"] - floor) if (floor is not None and k.get("p50_ms") is not None) else None
        exact = k.get("time_to_exact_ms")
        if exact is not None:
            exact_s = "%.2f" % (exact / 1000)
        elif k.get("exact_diff_pixels") not in (None, -1):
            exact_s = "never (%d px differ)" % k["exact_diff_pixels"]
        else:
            exact_s = "–"
        rss = "%s/%s" % (fmt(c.get("guest_peak_rss_mib"), 0), fmt(c.get("pipeline_peak_rss_mib"), 0))
        n = "%d%s" % (k.get("n", 0), "" if c["status"] == "ok" else
                      " (aborted: %s)" % (c.get("reason") or "error"))
        sq = (c.get("server_socket") or {}).get("sendq_kib_p95")
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            prof, c["activity"], c["mode"], n, fmt(k.get("p50_ms"), 1), fmt(k.get("p95_ms"), 1),
            fmt(k.get("max_ms"), 1), ("%+.1f" % above) if above is not None else "–",
            k.get("timeouts", "–"), fmt(k.get("mbit_s"), 2), fmt(sq, 0), fmt(c.get("guest_cores"), 2),
            fmt(c.get("pipeline_cores"), 2), rss, exact_s))
    return "\n".join(lines)


BESIDE_TOLERANCE_MS = (3.0, 5.0)     # p50, p95: as the VP8 target against relay-all


def diff_interval(old, new, q, rounds=2000):
    """90 % bootstrap interval of percentile @q of @new minus that of @old
    (key press samples in ms; both resampled, a fixed seed): the noise of a
    before/after difference measured in one run."""
    rng = random.Random(1)
    d = sorted(pct(rng.choices(new, k=len(new)), q) - pct(rng.choices(old, k=len(old)), q)
               for _ in range(rounds))
    return d[int(0.05 * rounds)], d[int(0.95 * rounds)]


def beside_table(results):
    """Each MODE@LABEL cell (run --beside) against this tree's MODE in the same
    link and activity: p50 and p95 before and after with the 90 % bootstrap
    interval of the difference; "worse" where the whole interval lies above
    0 and the difference is beyond BESIDE_TOLERANCE_MS (the spread of one
    tree's cell between runs: a p95 of 15 presses moved 3.2 ms in three
    repeats of 2026-12-02). Empty when there are none."""
    by, _ = measured_cells(results)
    rows = []
    for (prof, act, mode), old in by.items():
        if "@" not in mode:
            continue
        base, label = mode.split("@", 1)
        new = by.get((prof, act, base))
        if not new:
            continue
        ko, kn = old["keypress"], new["keypress"]
        so, sn = ko.get("samples_ms") or [], kn.get("samples_ms") or []
        verdict, spans = "same", []
        for q, key, tol in ((0.5, "p50_ms", BESIDE_TOLERANCE_MS[0]),
                            (0.95, "p95_ms", BESIDE_TOLERANCE_MS[1])):
            lo, hi = diff_interval(so, sn, q) if so and sn else (None, None)
            spans.append("%+.1f … %+.1f" % (lo, hi) if lo is not None else "–")
            if lo is not None and lo > 0 and kn[key] - ko[key] > tol:
                verdict = "**worse**"
            elif hi is not None and hi < 0 and verdict == "same":
                verdict = "better"
        ex = [k.get("time_to_exact_ms") for k in (ko, kn)]
        rows.append("| %s | %s | %s | %s / %s → %s / %s | %s | %s | %s → %s | %s → %s | %s → %s | %s |" % (
            prof, act, base, fmt(ko.get("p50_ms"), 1), fmt(ko.get("p95_ms"), 1),
            fmt(kn.get("p50_ms"), 1), fmt(kn.get("p95_ms"), 1), spans[0], spans[1],
            fmt(ko.get("mbit_s"), 2), fmt(kn.get("mbit_s"), 2),
            fmt(old.get("pipeline_cores"), 2), fmt(new.get("pipeline_cores"), 2),
            "%.2f" % (ex[0] / 1000) if ex[0] is not None else "–",
            "%.2f" % (ex[1] / 1000) if ex[1] is not None else "–", verdict))
    if not rows:
        return ""
    labels = sorted({m.split("@", 1)[1] for (_, _, m) in by if "@" in m})
    head = ["This tree against %s (`--beside`), cell by cell in the same run: key press "
            "p50 / p95 ms before → after; the 90 %% bootstrap interval of each difference "
            "(after − before, ms) is the cell's noise, and a cell is *worse* only where the "
            "whole interval lies above 0 and the difference is more than %.0f ms (p50) or "
            "%.0f ms (p95), the spread of one tree's cell between runs." % (
                ", ".join(labels), BESIDE_TOLERANCE_MS[0], BESIDE_TOLERANCE_MS[1]), "",
            "| link | activity | mode | p50 / p95 before → after | Δ p50 (90 %) | Δ p95 (90 %) | "
            "Mbit/s | pipeline cores | exact s | verdict |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    worse = sum(1 for r in rows if r.endswith("**worse** |"))
    return "\n".join(head + rows + ["", "Worse beyond the noise: %d of %d cells." % (worse, len(rows))])


# Targets of the latency-rig issue (checked, never tuned to): a transcode
# cell's p50 within the link's idle floor + 25 ms and p95 within floor +
# 60 ms, both at or below relay-all's in the same run; 150/2 heavy p50 <=
# 350 ms; LAN busy VP8 pipeline <= 0.10 cores; the exact picture within
# 300 ms plus the transfer time of the activity area after motion stops
# (transfer: the 640x480 area at 4 bytes a pixel over the link's measured
# TCP rate, an upper bound of its lossless size).
TARGET_P50_MS, TARGET_P95_MS = 25, 60
TARGET_150_2_HEAVY_MS = 350
TARGET_LAN_VP8_CORES = 0.10
TARGET_EXACT_MS = 300
AREA_BITS = 640 * 480 * 4 * 8


def measured_cells(results):
    """The cells with key press samples by (profile, activity, mode), and each
    link's floor: its idle relay-off p50."""
    by = {(c["profile"], c["activity"], c["mode"]): c for c in results["cells"]
          if c.get("status") == "ok" and (c.get("keypress") or {}).get("n")}
    floors = {p: c["keypress"]["p50_ms"] for (p, a, m), c in by.items()
              if a == "idle" and m == "relay-off"}
    return by, floors


def targets_table(results):
    by, floors = measured_cells(results)
    yes, no = "✓", "✗"
    lines = ["| link | activity | mode | p50 / p95 − floor | floor +25 / +60 | relay-all p50 / p95 "
             "− floor | ≤ relay-all p50 / p95 | exact s (bound) |",
             "|---|---|---|---|---|---|---|---|"]
    met = {"floor": [0, 0], "relay": [0, 0], "exact": [0, 0]}
    for (prof, act, mode), c in by.items():
        if not mode.startswith("transcode") or prof not in floors:
            continue
        k, fl = c["keypress"], floors[prof]
        a50, a95 = k["p50_ms"] - fl, k["p95_ms"] - fl
        ok_f = a50 <= TARGET_P50_MS and a95 <= TARGET_P95_MS
        r = by.get((prof, act, "relay-all"))
        if r:
            rk = r["keypress"]
            ok_r = k["p50_ms"] <= rk["p50_ms"] and k["p95_ms"] <= rk["p95_ms"]
            rtxt = "%+.0f / %+.0f" % (rk["p50_ms"] - fl, rk["p95_ms"] - fl)
            rmark = "%s / %s" % (yes if k["p50_ms"] <= rk["p50_ms"] else no,
                                 yes if k["p95_ms"] <= rk["p95_ms"] else no)
            met["relay"][0 if ok_r else 1] += 1
        else:
            rtxt, rmark = "–", "–"
        met["floor"][0 if ok_f else 1] += 1
        ex, etxt = k.get("time_to_exact_ms"), "–"
        mbit = (results["links"].get(prof) or {}).get("tcp_mbit")
        if act != "idle" and mbit:
            bound = TARGET_EXACT_MS + AREA_BITS / (float(mbit) * 1e6) * 1000
            ok_e = ex is not None and ex <= bound
            met["exact"][0 if ok_e else 1] += 1
            etxt = "%s %s (%.2f)" % ("%.2f" % (ex / 1000) if ex is not None else "never",
                                     yes if ok_e else no, bound / 1000)
        lines.append("| %s | %s | %s | %+.0f / %+.0f | %s / %s | %s | %s | %s |" % (
            prof, act, mode, a50, a95, yes if a50 <= TARGET_P50_MS else no,
            yes if a95 <= TARGET_P95_MS else no, rtxt, rmark, etxt))
    out = ["Transcode cells meeting floor + 25 / + 60 ms: %d of %d; at or below relay-all "
           "(p50 and p95): %d of %d; exact picture within the bound: %d of %d."
           % (met["floor"][0], sum(met["floor"]), met["relay"][0], sum(met["relay"]),
              met["exact"][0], sum(met["exact"]))]
    for mode in ("transcode-lossless", "transcode-mjpeg", "transcode-vp8"):
        c = by.get(("150/2", "heavy", mode))
        if c:
            p50 = c["keypress"]["p50_ms"]
            out.append("150/2 heavy %s: p50 %.0f ms %s (target ≤ %d)." % (
                mode, p50, yes if p50 <= TARGET_150_2_HEAVY_MS else no, TARGET_150_2_HEAVY_MS))
    c = by.get(("lan", "busy", "transcode-vp8"))
    if c and c.get("pipeline_cores") is not None:
        out.append("LAN busy VP8 pipeline: %.2f cores %s (target ≤ %.2f)." % (
            c["pipeline_cores"], yes if c["pipeline_cores"] <= TARGET_LAN_VP8_CORES else no,
            TARGET_LAN_VP8_CORES))
    return "\n\n".join([" ".join(out), "\n".join(lines)])



# Issue 15's targets (video on slow links), checked per link and activity:
# transcode-vp8 at or below relay-all's p50 + 3 ms and p95 + 5 ms and within
# the floor + 25 / + 60 ms; every shipped transcode mode exact within the
# bound above; the best transcode mode at or below relay-all (p50 and p95);
# Mbit/s beside relay-all's.
VP8_OVER_RELAY_P50_MS, VP8_OVER_RELAY_P95_MS = 3, 5
SHIPPED_TRANSCODE = ("transcode-lossless", "transcode-mjpeg", "transcode-vp8")


def video_targets_table(results):
    by, floors = measured_cells(results)
    yes, no = "✓", "✗"
    pairs = sorted({(p, a) for (p, a, m) in by if m == "relay-all"},
                   key=lambda pa: (list(results["links"]).index(pa[0])
                                   if pa[0] in results["links"] else 99, pa[1]))
    lines = ["| link | activity | relay-all p50 / p95 (Mbit/s) | VP8 p50 / p95 (Mbit/s) | "
             "VP8 ≤ relay +3 / +5 | VP8 ≤ floor +25 / +60 | best transcode ≤ relay-all | "
             "exact within the bound |",
             "|---|---|---|---|---|---|---|---|"]
    met = {"vp8": [0, 0], "floor": [0, 0], "best": [0, 0], "exact": [0, 0]}

    def mb(k):
        return fmt(k.get("mbit_s"), 2)

    for prof, act in pairs:
        rk = by[(prof, act, "relay-all")]["keypress"]
        fl = floors.get(prof)
        v = by.get((prof, act, "transcode-vp8"))
        vtxt, vrel, vfl = "–", "–", "–"
        if v:
            vk = v["keypress"]
            vtxt = "%.1f / %.1f (%s)" % (vk["p50_ms"], vk["p95_ms"], mb(vk))
            ok = (vk["p50_ms"] <= rk["p50_ms"] + VP8_OVER_RELAY_P50_MS and
                  vk["p95_ms"] <= rk["p95_ms"] + VP8_OVER_RELAY_P95_MS)
            met["vp8"][0 if ok else 1] += 1
            vrel = yes if ok else no
            if fl is not None:
                ok = (vk["p50_ms"] - fl <= TARGET_P50_MS and vk["p95_ms"] - fl <= TARGET_P95_MS)
                met["floor"][0 if ok else 1] += 1
                vfl = yes if ok else no
        modes = [(m, by[(prof, act, m)]["keypress"]) for m in SHIPPED_TRANSCODE
                 if (prof, act, m) in by]
        btxt = "–"
        if modes:
            passing = [(m, k) for m, k in modes
                       if k["p50_ms"] <= rk["p50_ms"] and k["p95_ms"] <= rk["p95_ms"]]
            m, k = min(passing or modes, key=lambda mk: (mk[1]["p95_ms"], mk[1]["p50_ms"]))
            met["best"][0 if passing else 1] += 1
            btxt = "%s %s %.1f / %.1f" % (yes if passing else no, m.replace("transcode-", ""),
                                          k["p50_ms"], k["p95_ms"])
        mbit = (results["links"].get(prof) or {}).get("tcp_mbit")
        etxt = "–"
        if act != "idle" and mbit and modes:
            bound = TARGET_EXACT_MS + AREA_BITS / (float(mbit) * 1e6) * 1000
            late = [m.replace("transcode-", "") for m, k in modes
                    if k.get("time_to_exact_ms") is None or k["time_to_exact_ms"] > bound]
            met["exact"][0 if not late else 1] += 1
            etxt = (yes if not late else no + " " + ", ".join(late)) + " (%.2f s)" % (bound / 1000)
        lines.append("| %s | %s | %.1f / %.1f (%s) | %s | %s | %s | %s | %s |" % (
            prof, act, rk["p50_ms"], rk["p95_ms"], mb(rk), vtxt, vrel, vfl, btxt, etxt))
    out = ("Issue 15: VP8 at or below relay-all + %d / + %d ms: %d of %d; VP8 within the floor "
           "+ %d / + %d ms: %d of %d; best transcode mode at or below relay-all: %d of %d; every "
           "transcode mode exact within the bound: %d of %d." % (
               VP8_OVER_RELAY_P50_MS, VP8_OVER_RELAY_P95_MS, met["vp8"][0], sum(met["vp8"]),
               TARGET_P50_MS, TARGET_P95_MS, met["floor"][0], sum(met["floor"]),
               met["best"][0], sum(met["best"]), met["exact"][0], sum(met["exact"])))
    return "\n\n".join([out, "\n".join(lines)])

def links_table(results):
    lines = ["| link | cc | ping avg (min–max) ms | TCP Mbit/s | delay-line wake-up lateness p99 µs | verified |",
             "|---|---|---|---|---|---|"]
    for prof, v in results["links"].items():
        lines.append("| %s | %s | %s (%s–%s) | %s | %s | %s |" % (
            prof, v.get("cc", results["machine"]["cc"]), v.get("ping_avg_ms"), v.get("ping_min_ms"),
            v.get("ping_max_ms"), v.get("tcp_mbit"), v.get("delay_late_us_p99") or "–",
            "yes" if v.get("ok") else "**no**: " + str(v.get("reason"))))
    return "\n".join(lines)


def plots(results, outdir, stem):
    """One PNG per link profile: p50 bars and p95 marks per activity and mode."""
    os.makedirs(outdir, exist_ok=True)
    made = []
    cells = [c for c in results["cells"] if c.get("keypress") and c["keypress"].get("n")]
    profiles = list(dict.fromkeys(c["profile"] for c in cells))
    for prof in profiles:
        pc = [c for c in cells if c["profile"] == prof]
        acts = list(dict.fromkeys(c["activity"] for c in pc))
        modes = list(dict.fromkeys(c["mode"] for c in pc))
        dat = os.path.join(outdir, "%s-%s.dat" % (stem, prof.replace("/", "-")))
        with open(dat, "w") as f:
            f.write("activity " + " ".join("%s_p50 %s_p95" % (m, m) for m in modes) + "\n")
            for a in acts:
                row = [a]
                for m in modes:
                    c = next((x for x in pc if x["activity"] == a and x["mode"] == m), None)
                    k = (c or {}).get("keypress") or {}
                    row += ["%.3f" % k["p50_ms"] if k.get("p50_ms") is not None else "NaN",
                            "%.3f" % k["p95_ms"] if k.get("p95_ms") is not None else "NaN"]
                f.write(" ".join(row) + "\n")
        png = os.path.join(outdir, "%s-%s.png" % (stem, prof.replace("/", "-")))
        lows = [c["keypress"]["p50_ms"] for c in pc if c["keypress"].get("p50_ms")]
        ymin = 10 ** math.floor(math.log10(max(min(lows) / 2, 0.1))) if lows else 0.1
        nm = len(modes)
        width = 0.8 / nm
        gp = ["set terminal pngcairo size 900,480 font 'Sans,10'",
              "set output '%s'" % png,
              "set title 'Keypress to draw, link %s (cc %s): bars p50, marks p95' noenhanced"
              % (prof, results["machine"]["cc"]),
              "set ylabel 'ms (log)'", "set logscale y", "set yrange [%g:*]" % ymin,
              "set style fill solid 0.7 border -1", "set boxwidth %.3f" % width,
              "set key outside right top noenhanced", "set grid ytics",
              "set xtics (%s)" % ", ".join("'%s' %d" % (a, i) for i, a in enumerate(acts)),
              "set xrange [-0.6:%f]" % (len(acts) - 0.4)]
        rtt = (results.get("links", {}).get(prof) or {}).get("ping_avg_ms")
        if rtt:
            gp.append("set arrow from graph 0, first %f to graph 1, first %f nohead dt 2 lc rgb 'black'"
                      % (max(rtt, 0.11), max(rtt, 0.11)))
            gp.append("set label 'ping RTT' at graph 0.01, first %f offset 0,0.6 font 'Sans,8'"
                      % max(rtt, 0.11))
        parts = []
        for j, m in enumerate(modes):
            off = -0.4 + width * (j + 0.5)
            parts.append("'%s' every ::1 using ($0+%.3f):%d with boxes lc %d title '%s'" % (
                dat, off, 2 + 2 * j, j + 1, m))
            parts.append("'%s' every ::1 using ($0+%.3f):%d with points pt 7 ps 1.2 lc %d notitle" % (
                dat, off, 3 + 2 * j, j + 1))
        gp.append("plot " + ", ".join(parts))
        r = subprocess.run(["gnuplot"], input="\n".join(gp) + "\n", text=True, capture_output=True)
        if r.returncode == 0:
            made.append(png)
        else:
            log("gnuplot failed for %s: %s" % (prof, r.stderr.strip()))
        os.unlink(dat)
    return made


def load_results(dirs):
    """One results dict from one or more run directories (a matrix split by
    profile, say): links and cells concatenated (a later run of the same cell
    replaces the earlier one), commands listed, cells in matrix order."""
    results = None
    for d in dirs:
        with open(os.path.join(d, "results.json")) as f:
            r = json.load(f)
        r.setdefault("commands", [r.get("command")])
        if results is None:
            results = r
            continue
        results["links"].update(r["links"])
        # a later run of the same cell (e.g. a retried link) replaces it
        keys = {(c["profile"], c["activity"], c["mode"]) for c in r["cells"]}
        results["cells"] = [c for c in results["cells"]
                            if (c["profile"], c["activity"], c["mode"]) not in keys]
        results["cells"].extend(r["cells"])
        results["commands"].extend(r["commands"])
        results["wall_s"] = results.get("wall_s", 0) + r.get("wall_s", 0)
    order = {p: i for i, p in enumerate(ALL_PROFILES)}
    acts = {a: i for i, a in enumerate(ALL_ACTIVITIES)}
    modes = {m: i for i, m in enumerate(ALL_MODES)}
    results["cells"].sort(key=lambda c: (order.get(c["profile"], 99), c["profile"],
                                         acts.get(c["activity"], 99), modes.get(c["mode"], 99),
                                         c["mode"]))
    results["links"] = dict(sorted(results["links"].items(),
                                   key=lambda kv: (order.get(kv[0], 99), kv[0])))
    return results


def cmd_report(args):
    results = load_results(args.dir)
    for key, attr in (("profile", "profiles"), ("activity", "activities"), ("mode", "modes")):
        want = getattr(args, attr)
        if want:
            want = [x.strip() for x in want.split(",")]
            results["cells"] = [c for c in results["cells"] if c[key] in want]
            if key == "profile":
                results["links"] = {k: v for k, v in results["links"].items() if k in want}
    m = results["machine"]
    stem = args.stem or "rig-" + m["date"][11:16].replace(":", "")
    if args.docs:
        mdpath, stem, pngdir = report_target(args.docs, stem, m["date"])
    else:
        pngdir = os.path.join(args.dir[0], "plots")
    pngs = plots(results, pngdir, stem)
    s = results.get("settings", {})
    md = []
    md.append("### %s" % (args.title or "Run of %s" % m["date"]))
    md.append("")
    if args.note:
        md.append(args.note)
        md.append("")
    for cmd in results["commands"]:
        md.append("- Command: `%s`" % cmd)
    md.append("- Machine: %s cores, %s, kernel %s, congestion control **%s** in both namespaces, "
              "load average at start %s; %s." % (m["nproc"], m["cpu"], m["kernel"], m["cc"],
                                                  "/".join(str(x) for x in m["loadavg_at_start"]), m["date"]))
    md.append("- Per cell: %s measured presses after %s warm-up presses (%s s warm-up), "
              "%s s per-press timeout, activity at %s fps; wall time %.0f min."
              % (s.get("samples"), s.get("warmup_presses"), s.get("warmup_s"), s.get("timeout_s"),
                 s.get("fps"), results.get("wall_s", 0) / 60))
    md.append("")
    md.append(links_table(results))
    md.append("")
    md.append("Latencies in ms; \"floor\" is the same link's idle relay-off p50. Mbit/s is what the "
              "client received over the measured presses. Send-Q: the server's client-facing socket "
              "with the most unsent/unacked bytes, sampled every 0.5 s while the client runs (connect "
              "included). CPU is user+sys over the "
              "cell's wall time.")
    late = [c for c in results["cells"] if (c.get("linkemu") or {}).get("wake_us_p99", 0) > 1000]
    if late:
        md.append("")
        md.append("Delay-line wake-up lateness p99 above 1 ms (machine load) in: %s." % ", ".join(
            "%s %s %s" % (c["profile"], c["activity"], c["mode"]) for c in late))
    md.append("")
    md.append("**Targets** (transcode cells; floor = the link's idle relay-off p50; the exact "
              "picture's bound is 300 ms plus the 640x480 area, 4 bytes a pixel, over the link's "
              "TCP rate):")
    md.append("")
    md.append(targets_table(results))
    md.append("")
    md.append("**Video on slow links** (per link and activity; the best transcode mode is the "
              "one at or below relay-all with the lowest p95):")
    md.append("")
    md.append(video_targets_table(results))
    md.append("")
    beside = beside_table(results)
    if beside:
        md.append("**Before and after:**")
        md.append("")
        md.append(beside)
        md.append("")
    md.append("**All cells:**")
    md.append("")
    md.append(table(results))
    md.append("")
    for p in pngs:
        rel = os.path.relpath(p, os.path.dirname(mdpath)) if args.docs else p
        md.append("![%s](%s)" % (os.path.basename(p), rel))
        md.append("")
    text = "\n".join(md)
    if args.docs:
        write_report(mdpath, "rig:" + stem, text, args.title or "Run of %s" % m["date"], m["date"])
        with open(os.path.join(pngdir, stem + ".json"), "w") as f:
            json.dump(results, f, indent=1)
        log("updated %s (%d plots, %s)" % (mdpath, len(pngs), pngdir))
    else:
        print(text)
    return 0


def cmd_sound(args):
    """Markdown for the sound cells: skew and audio latency of the burst
    modes, keypress with and without audio on the same link."""
    results = load_results(args.dir)
    cells = [c for c in results["cells"] if c.get("status") == "ok"]
    f = lambda v, fmt="%+.1f": "–" if v is None else fmt % v
    md = []
    m = results["machine"]
    for cmd in results["commands"]:
        md.append("- Command: `%s`" % cmd)
    md.append("- Machine: %s cores, %s, load average at start %s; %s." % (
        m["nproc"], m["cpu"], "/".join(str(x) for x in m["loadavg_at_start"]), m["date"]))
    md.append("")
    md.append("| link | activity | mode | audio | n | skew p5 / p50 / p95 ms | "
              "flip → draw p50 / p95 ms | flip → onset p50 / p95 ms | min-latency ms | "
              "longest pause ms | onset frame spread |")
    md.append("|---|---|---|---|---|---|---|---|---|---|---|")
    burst = [c for c in cells if (c.get("sound") or {}).get("matched") is not None]
    for c in burst:
        s = c["sound"]
        md.append("| %s | %s | %s | %s | %s | %s / %s / %s | %s / %s | %s / %s | %s | %s | %s |" % (
            c["profile"], c["activity"], c["mode"], s.get("format"), s.get("matched"),
            f(s.get("skew_p5_ms")), f(s.get("skew_p50_ms")), f(s.get("skew_p95_ms")),
            f(s.get("video_p50_ms"), "%.1f"), f(s.get("video_p95_ms"), "%.1f"),
            f(s.get("audio_p50_ms"), "%.1f"), f(s.get("audio_p95_ms"), "%.1f"),
            s.get("min_latency_ms"), f(s.get("max_gap_ms"), "%.0f"),
            s.get("stream_offset_spread_frames")))
    md.append("")
    # added audio latency: a transcode burst mode against relay-all-burst
    by = {(c["profile"], c["activity"], c["mode"]): c for c in burst}
    rows = []
    for (prof, act, mode), c in by.items():
        r = by.get((prof, act, "relay-all-burst"))
        if mode == "relay-all-burst" or not r:
            continue
        a, b = c["sound"], r["sound"]
        if a.get("audio_p50_ms") is None or b.get("audio_p50_ms") is None:
            continue
        rows.append("| %s | %s | %s | %.1f / %.1f | %.1f / %.1f | %+.1f / %+.1f |" % (
            prof, act, mode, a["audio_p50_ms"], a["audio_p95_ms"], b["audio_p50_ms"],
            b["audio_p95_ms"], a["audio_p50_ms"] - b["audio_p50_ms"],
            a["audio_p95_ms"] - b["audio_p95_ms"]))
    if rows:
        md.append("| link | activity | mode | flip → onset p50 / p95 ms | relay-all | "
                  "added p50 / p95 ms |")
        md.append("|---|---|---|---|---|---|")
        md.extend(rows)
        md.append("")
    # keypress with audio playing against the same cell without
    rows = []
    for c in cells:
        a = (c.get("keypress") or {}).get("audio")
        base = c["mode"].rsplit("-", 1)[0]
        if not a or c["mode"] == base:
            continue
        r = next((x for x in cells if x["profile"] == c["profile"] and
                  x["activity"] == c["activity"] and x["mode"] == base), None)
        if not r or (r.get("keypress") or {}).get("audio"):
            continue
        k, kb = c["keypress"], r["keypress"]
        rows.append("| %s | %s | %s vs %s | %s | %.1f / %.1f | %.1f / %.1f | %+.1f / %+.1f | "
                    "%.2f / %.2f |" % (
                        c["profile"], c["activity"], c["mode"], base, a.get("format"),
                        k["p50_ms"], k["p95_ms"], kb["p50_ms"], kb["p95_ms"],
                        k["p50_ms"] - kb["p50_ms"], k["p95_ms"] - kb["p95_ms"],
                        k.get("mbit_s") or 0, kb.get("mbit_s") or 0))
    if rows:
        md.append("| link | activity | modes | audio | keypress p50 / p95 ms with audio | "
                  "without | difference p50 / p95 ms | Mbit/s with / without |")
        md.append("|---|---|---|---|---|---|---|---|")
        md.extend(rows)
        md.append("")
    text = "\n".join(md)
    print(text)
    return 0


def cmd_estimate(args):
    modes = args.modes
    if args.beside:
        modes = add_beside_modes(load_modes(args.modes_file), modes, args.beside)
    n = len(args.profiles) * len(args.activities) * len(modes)
    per = 4 + args.warmup + (args.samples + args.warmup_presses) * ((args.gap_min + args.gap_max) / 2 + 0.15) + 1
    if args.quality > 0:
        per += args.quality + 4     # the phase, then scoring its frames
    slow = sum(1 for p in args.profiles if p in ("80/10", "80/5", "150/2")) * 2 * 90
    log("%d cells x ~%.0f s (fast cells) = ~%.0f min, plus ~15 s per link verification and "
        "roughly %.0f min for cells with multi-second latencies" % (n, per, n * per / 60, slow / 60))
    return 0


def csv(s, allowed=None):
    """The items of the comma list @s; "all": @allowed (where given)."""
    v = [x.strip() for x in s.split(",") if x.strip()]
    if allowed is not None and v == ["all"]:
        return list(allowed)
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("run", "estimate"):
        p = sub.add_parser(name)
        p.add_argument("--profiles", default=",".join(ALL_PROFILES),
                       help="comma list of lan and RTT/MBIT (default: all six)")
        p.add_argument("--activities", default=",".join(DEFAULT_ACTIVITIES),
                       help="comma list or 'all' (default: %s; also film, desktop-video)"
                       % ",".join(DEFAULT_ACTIVITIES))
        p.add_argument("--modes", default=",".join(ALL_MODES))
        p.add_argument("--samples", type=int, default=15)
        p.add_argument("--warmup-presses", type=int, default=2)
        p.add_argument("--warmup", type=float, default=1.5, help="s after the first picture")
        p.add_argument("--gap-min", type=float, default=0.4)
        p.add_argument("--gap-max", type=float, default=1.2)
        p.add_argument("--timeout", type=float, default=15.0)
        p.add_argument("--exact-timeout", type=float, default=15.0)
        p.add_argument("--fps", type=int, default=30)
        p.add_argument("--seed", type=int, default=1)
        p.add_argument("--quality", type=float, default=0.0,
                       help="s of shown-frame quality scoring per moving cell (0: off); "
                       "the guest then stamps its frames")
        p.add_argument("--cc", default="cubic")
        p.add_argument("--prefix", default="gsrig")
        p.add_argument("--build", default=os.path.join(SOURCE, "build"))
        p.add_argument("--modes-file", default=os.path.join(HERE, "modes.ini"))
        p.add_argument("--beside", default=None, metavar="BUILD=LABEL",
                       help="each transcode mode also on another tree's build (its runner, "
                       "plugins and pipelines) as MODE@LABEL, right after this tree's cell")
        p.add_argument("--out", default=None)
        p.add_argument("--keep-reference", action="store_true")
        p.add_argument("--verify-attempts", type=int, default=3)
        p.add_argument("--max-late-us", type=int, default=1000,
                       help="link verification: delay-line wake-up lateness p99 bound")
        p.add_argument("--rate-tolerance", type=int, default=10,
                       help="link verification: allowed distance of the TCP rate from "
                            "the profile's, percent")
    r = sub.add_parser("report")
    r.add_argument("dir", nargs="+", help="run directories (merged in order)")
    r.add_argument("--docs", default=None,
                   help="docs/benchmarks/history: a file of the run's own, DAY-STEM.md, plots and "
                   "JSON in docs/benchmarks/, a line in history/README.md; or a markdown file "
                   "to put the block in")
    r.add_argument("--stem", default=None,
                   help="name of the block and plot files (the day goes in front; rig-HHMM)")
    r.add_argument("--title", default=None)
    r.add_argument("--note", default=None)
    r.add_argument("--profiles", default=None, help="only these links (comma list)")
    r.add_argument("--activities", default=None, help="only these activities")
    r.add_argument("--modes", default=None, help="only these modes")
    so = sub.add_parser("sound")
    so.add_argument("dir", nargs="+", help="run directories (merged in order)")
    args = ap.parse_args()
    if args.cmd in ("run", "estimate"):
        args.profiles = csv(args.profiles, ALL_PROFILES)
        args.activities = csv(args.activities, ALL_ACTIVITIES)
        args.modes = csv(args.modes, ALL_MODES)
        args.build = os.path.abspath(args.build)
        vars(args).update(tools(args.build))
        if args.out is None:
            args.out = "/tmp/gst-spice-rig-" + time.strftime("%Y%m%d-%H%M%S")
        if args.cmd == "run":
            return cmd_run(args)
        return cmd_estimate(args)
    if args.cmd == "sound":
        return cmd_sound(args)
    return cmd_report(args)


if __name__ == "__main__":
    sys.exit(main())
