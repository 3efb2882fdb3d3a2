#!/usr/bin/env python3
"""Soak of the shipped transcode pipeline (issue 14 item 4, docs/reliability.md).

    bench/soak.py [--minutes 30] [--restarts 2] [--out DIR] [--build DIR]

One `gst-spice-run` process runs pipelines/transcode-vp8.pipeline in front
of the libspice-server test guest (tools/guest, activity busy). Around it:

  - cycle clients, one loopback and (as root) one behind a 2 Mbit shaped
    link (tools/linkemu, profile --link, in the rig's client namespace):
    each joins, watches the busy guest until the next freeze, must show the
    guest's frozen framebuffer pixel for pixel (spice-keypress' exact-picture
    phase against the guest's `dump`), leaves, and the next one joins
    --rejoin s later. Every --busy s of activity the guest is frozen and
    dumped; clients ready in the first --min-freeze s get the dump; the
    activity resumes when they all left. Every cycle client, the ones
    connected across an upstream restart included, must end exact.
  - a stalled client: spice-keypress, SIGSTOPped once it shows the picture
    (it connects and then stops reading its sockets), SIGKILLed after a
    hold of 8 s (every fourth one 25 s, past spicesink's 20 s stall limit),
    and started again.
  - the upstream killed (SIGKILL) and started again --restarts times, in
    the middle of a busy phase with cycle clients connected (another --seed
    each time, so the new picture differs).
  - /proc of the runner sampled every --sample-interval s: VmRSS, open fds,
    threads (CSV and JSON).

Assertions (exit 1 when one fails, each named in the output):
  - the runner never exits;
  - every cycle client exits 0 with the exact picture;
  - after the warm-up: the RSS peak minus the quiet baseline <= --rss-peak-mib
    (not judged in a build with -Db_sanitize: ASan's quarantine holds freed
    memory) and the final quiet RSS minus the baseline <= --rss-growth-mib; from
    60 s after the last upstream restart to the end (if >= 120 s) the RSS
    grows <= --rss-tail-mib;
  - at the end, all clients gone: open fds and threads equal the quiet
    baseline (taken after the warm-up with no client connected);
  - the runner exits 0 on SIGTERM.

Topology: as root, the guest, the runner and the loopback and stalled
clients run in the server namespace of tools/linkemu/linkemu-setup.sh
(--prefix), the shaped client in its client namespace. Not root (or
--no-shaped): everything on loopback in this namespace, the shaped client
skipped with a message.

Output (--out, default a new /tmp/gst-spice-soak.XXXX): soak.json (figures,
per-client results, assertions), samples.csv (t, rss_kib, fds, threads,
clients), and the logs of every process.
"""
import argparse
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SOURCE, "bench", "rig"))
import rig  # noqa: E402  (Procs, Terminated)
PASSWORD = "soak"
CSV_FIELDS = ["t", "rss_kib", "fds", "threads", "clients", "tag"]


def log(msg):
    sys.stdout.write("[soak %s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stdout.flush()


class Procs(rig.Procs):
    """The rig's process list (stopped by PID, process group), shared by the
    soak's threads."""

    def __init__(self):
        super().__init__()
        self.lock = threading.Lock()
        self.closed = False

    def start(self, argv, **kw):
        with self.lock:
            if self.closed:
                raise RuntimeError("stopping: no new process")
            return super().start(argv, **kw)

    def stop_all(self):
        with self.lock:
            self.closed = True
        super().stop_all()

    def forget(self, p):
        with self.lock:
            if p in self.procs:
                self.procs.remove(p)

    def kill(self, p):
        if p.poll() is None:
            rig.killpg(p, signal.SIGKILL)
        p.wait()
        self.forget(p)


def proc_sample(pid):
    """(VmRSS KiB, open fds, threads) of pid, None if it is gone."""
    try:
        rss = threads = None
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("Threads:"):
                    threads = int(line.split()[1])
        fds = len(os.listdir("/proc/%d/fd" % pid))
        return rss, fds, threads
    except (OSError, ValueError):
        return None


def file_has(path, needle):
    try:
        with open(path, errors="replace") as f:
            return needle in f.read()
    except OSError:
        return False


class Soak:
    def __init__(self, args):
        self.args = args
        self.out = args.out
        self.procs = Procs()
        self.ns_srv = self.ns_cli = None
        self.srv_ip = "127.0.0.1"
        self.link_up = False
        self.shaped = False
        self.guest = None
        self.guest_n = 0
        self.guest_starts = []
        self.runner = None
        self.t0 = time.monotonic()
        self.samples = []
        self.sample_lock = threading.Lock()
        self.stop_ev = threading.Event()
        self.clients = []          # results of the cycle clients
        self.stalled = []          # results of stalled clients
        self.live_clients = 0
        self.events = []
        self.failures = []
        self.client_n = 0
        self.lock = threading.Lock()
        self.waiting = []          # cycle clients connected now
        self.freezes = []
        self.restarts_done = 0

    # ---- helpers ------------------------------------------------------------

    def now(self):
        return round(time.monotonic() - self.t0, 2)

    def event(self, what):
        self.events.append({"t": self.now(), "event": what})
        log(what)

    def in_srv(self, argv):
        return rig.ns_exec(self.ns_srv, argv)

    def in_cli(self, argv):
        return rig.ns_exec(self.ns_cli, argv)

    def setup_link(self):
        a = self.args
        if a.no_shaped:
            log("shaped client off (--no-shaped)")
            return
        if os.geteuid() != 0:
            log("SKIP (part): not root, so no shaped %s link (tools/linkemu needs network "
                "namespaces); the soak runs on loopback without the shaped client" % a.link)
            return
        setup = os.path.join(SOURCE, "tools", "linkemu", "linkemu-setup.sh")
        r = subprocess.run(["bash", setup, "up", a.link, "--prefix", a.prefix, "--linkemu",
                            os.path.join(a.build, "tools", "linkemu", "linkemu")],
                           capture_output=True, text=True)
        self.link_up = True
        if r.returncode != 0:
            raise RuntimeError("linkemu-setup up %s failed (%d): %s" %
                               (a.link, r.returncode, r.stderr.strip()))
        st = {}
        with open("/run/gst-spice-rig/%s.state" % a.prefix) as f:
            for line in f:
                k, _, v = line.strip().partition("=")
                st[k] = v
        self.ns_srv, self.ns_cli, self.srv_ip = st["NS_SRV"], st["NS_CLI"], st["SRV_IP"]
        self.shaped = True
        log("shaped link %s up: server namespace %s (%s), client namespace %s" %
            (a.link, self.ns_srv, self.srv_ip, self.ns_cli))

    def teardown_link(self):
        if self.link_up:
            setup = os.path.join(SOURCE, "tools", "linkemu", "linkemu-setup.sh")
            subprocess.run(["bash", setup, "down", "--prefix", self.args.prefix],
                           capture_output=True)
            self.link_up = False

    # ---- guest and runner ---------------------------------------------------

    def start_guest(self):
        a = self.args
        self.guest_n += 1
        seed = self.guest_n
        glog = open(os.path.join(self.out, "guest-%d.log" % self.guest_n), "w")
        argv = [rig.tools(a.build)["guest"], "--port",
                str(self.guest_port), "--addr", "127.0.0.1", "--activity", "busy",
                "--fps", str(a.fps), "--width", str(a.width), "--height", str(a.height),
                "--seed", str(seed), "--streaming-video", "off"]
        self.guest = self.procs.start(self.in_srv(argv), stdin=self.ctl, stdout=glog,
                                      stderr=subprocess.STDOUT)
        glog.close()
        self.guest_log = os.path.join(self.out, "guest-%d.log" % self.guest_n)
        if not rig.wait_listen(self.ns_srv, self.guest_port, 10, self.guest):
            raise RuntimeError("guest %d did not listen" % self.guest_n)
        self.guest_starts.append(self.now())

    def guest_cmd(self, text):
        os.write(self.ctl, text.encode())

    def wait_guest_log(self, needle, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if file_has(self.guest_log, needle):
                return True
            time.sleep(0.05)
        return False

    def start_runner(self):
        a = self.args
        env = dict(os.environ)
        env["GST_PLUGIN_PATH"] = os.path.join(a.build, "plugins")
        env["GST_SPICE_PIPELINES_DIR"] = os.path.join(SOURCE, "pipelines")
        env.setdefault("GST_DEBUG", "*:2")
        env["GST_DEBUG_NO_COLOR"] = "1"
        listen = "0.0.0.0" if self.ns_srv else "127.0.0.1"
        argv = [rig.tools(a.build)["runner"], "--stats-interval",
                "10", os.path.join(SOURCE, "pipelines", a.pipeline + ".pipeline"),
                "-D", "UPSTREAM=spice://127.0.0.1:%d" % self.guest_port,
                "-D", "LISTEN_ADDRESS=%s" % listen, "-D", "LISTEN_PORT=%d" % self.port,
                "-D", "PASSWORD=%s" % PASSWORD]
        self.runner_log = os.path.join(self.out, "runner.log")
        rlog = open(self.runner_log, "w")
        self.runner = self.procs.start(self.in_srv(argv), stdin=subprocess.DEVNULL,
                                       stdout=rlog, stderr=subprocess.STDOUT, env=env)
        rlog.close()
        if not rig.wait_listen(self.ns_srv, self.port, 30, self.runner):
            raise RuntimeError("runner did not listen on %d (exit %s)" %
                               (self.port, self.runner.poll()))

    # ---- sampling -------------------------------------------------------------

    def sample(self, tag=""):
        s = proc_sample(self.runner.pid)
        if s is None:
            return None
        row = {"t": self.now(), "rss_kib": s[0], "fds": s[1], "threads": s[2],
               "clients": self.live_clients, "tag": tag}
        with self.sample_lock:
            self.samples.append(row)
            # as it goes, so that an interrupted run leaves its figures
            with open(os.path.join(self.out, "samples.csv"), "a") as f:
                if len(self.samples) == 1:
                    f.write(",".join(CSV_FIELDS) + "\n")
                f.write(",".join(str(row[k]) for k in CSV_FIELDS) + "\n")
        return row

    def sampler(self):
        while not self.stop_ev.wait(self.args.sample_interval):
            if self.sample() is None:
                return

    # ---- clients ------------------------------------------------------------

    def keypress_argv(self, host, ref, cjson, ctl, exact_phase):
        a = self.args
        argv = [rig.tools(a.build)["keypress"],
                "--uri", "spice://%s:%d" % (host, self.port), "--password", PASSWORD,
                "--warmup-presses", "0", "--connect-timeout", str(a.connect_timeout),
                "-o", cjson, "-v"]
        if exact_phase:
            # no press: the exact-picture phase at once. The guest control is
            # the soak's business: the client's own "activity idle / dump"
            # request goes to a file of its own that nobody reads (not
            # /dev/null: where that is a regular file, other processes read
            # it as their stdin), and the soak hands it the guest's dump as
            # its reference at the next freeze
            argv += ["-n", "0", "--warmup", "0", "--guest-control", ctl,
                     "--reference", ref, "--exact-timeout", str(a.exact_timeout)]
        else:
            argv += ["-n", "1", "--warmup", "100000"]
        return argv

    def start_client(self, kind):
        with self.lock:
            self.client_n += 1
            name = "%s-%d" % (kind, self.client_n)
            self.live_clients += 1
        cdir = os.path.join(self.out, "clients")
        os.makedirs(cdir, exist_ok=True)
        ref = os.path.join(cdir, name + ".ref.ppm")
        cjson = os.path.join(cdir, name + ".json")
        clog = os.path.join(cdir, name + ".log")
        ctl = os.path.join(cdir, name + ".ctl")
        open(ctl, "w").close()
        if kind == "shaped":
            argv = self.in_cli(self.keypress_argv(self.srv_ip, ref, cjson, ctl, True))
        else:
            argv = self.in_srv(self.keypress_argv("127.0.0.1", ref, cjson, ctl,
                                                  kind != "stalled"))
        f = open(clog, "w")
        p = self.procs.start(argv, stdout=f, stderr=subprocess.STDOUT)
        f.close()
        return {"name": name, "kind": kind, "proc": p, "ref": ref, "json": cjson, "log": clog,
                "t_start": self.now(), "ref_given": None, "guest_at_start": self.guest_n,
                "restarts_at_start": self.restarts_done}

    def finish_client(self, c, rc):
        with self.lock:
            self.live_clients -= 1
        c["exit"] = rc
        c["t_end"] = self.now()
        try:
            with open(c["json"]) as f:
                j = json.load(f)
        except (OSError, ValueError):
            j = {}
        c["client_ok"] = bool(j.get("ok"))
        c["error"] = j.get("error")
        c["connect_ms"] = j.get("connect_ms")
        c["exact_diff_pixels"] = j.get("exact_diff_pixels")
        c["exact"] = (rc == 0 and c["client_ok"] and j.get("time_to_exact_ms") is not None
                      and c["ref_given"] is not None)
        c["exact_after_s"] = (round(c["t_end"] - c["ref_given"], 2)
                              if c["ref_given"] is not None else None)
        c["across_restart"] = self.restarts_done > c.pop("restarts_at_start")
        c.pop("proc", None)
        if c["exact"] and os.path.exists(c["ref"]):
            os.unlink(c["ref"])         # kept otherwise: the dump it did not show

    def client_loop(self, kind, stop):
        """Cycle clients of one kind, one after the other, until stop: each
        joins, waits for the next freeze, must reach the exact picture, leaves."""
        a = self.args
        while not stop.is_set():
            c = self.start_client(kind)
            with self.lock:
                self.waiting.append(c)
            budget = a.connect_timeout + a.exact_timeout + 15
            try:
                rc = c["proc"].wait(budget)
            except subprocess.TimeoutExpired:
                self.procs.kill(c["proc"])
                rc = "killed after %g s" % budget
            with self.lock:
                self.waiting.remove(c)
            self.procs.forget(c["proc"])
            self.finish_client(c, rc)
            self.clients.append(c)
            if not c["exact"]:
                self.failures.append("%s did not end on the exact picture (exit %s, %s, "
                                     "%s pixels differ)" % (c["name"], rc, c["error"],
                                                            c["exact_diff_pixels"]))
            stop.wait(a.rejoin)

    def stalled_loop(self, stop):
        """One stalled client after the other until stop."""
        n = 0
        while not stop.is_set():
            n += 1
            hold = self.args.stall_long if n % 4 == 0 else self.args.stall_short
            c = self.start_client("stalled")
            p = c["proc"]
            end = time.monotonic() + self.args.connect_timeout + 5
            shown = False
            while time.monotonic() < end and p.poll() is None:
                if file_has(c["log"], "key box visible"):
                    shown = True
                    break
                time.sleep(0.1)
            if shown:
                os.killpg(p.pid, signal.SIGSTOP)
                c["stopped_at"] = self.now()
                stop.wait(hold)
            self.procs.kill(p)
            with self.lock:
                self.live_clients -= 1
            c.pop("proc")
            c.pop("restarts_at_start")
            c["shown"] = shown
            c["held_s"] = round(self.now() - c.get("stopped_at", self.now()), 1)
            self.stalled.append(c)
            if not shown:
                self.failures.append("stalled client %s never showed the picture" % c["name"])
            stop.wait(self.args.rejoin)

    def start_clients(self):
        stop = threading.Event()
        kinds = (["shaped"] if self.shaped else []) + ["loop"]
        ths = [threading.Thread(target=self.client_loop, args=(k, stop), daemon=True)
               for k in kinds]
        ths.append(threading.Thread(target=self.stalled_loop, args=(stop,), daemon=True))
        for t in ths:
            t.start()
        return stop, ths

    def stop_clients(self, stop, ths):
        """Let the cycle clients finish (freezes go on meanwhile), then join."""
        stop.set()
        while any(t.is_alive() for t in ths):
            self.freeze(len(self.freezes) + 1, final=True)
            for t in ths:
                t.join(0.2)

    # ---- freezes ----------------------------------------------------------------

    def restart_upstream(self):
        self.event("upstream killed (SIGKILL, guest %d) with %d clients waiting" %
                   (self.guest_n, len(self.waiting)))
        self.procs.kill(self.guest)
        time.sleep(2.0)
        self.start_guest()
        if not self.wait_guest_log("client connected", 30):
            self.failures.append("spicesrc did not reconnect to guest %d" % self.guest_n)
        self.restarts_done += 1
        self.event("upstream restarted (guest %d, seed %d), spicesrc reconnected" %
                   (self.guest_n, self.guest_n))
        time.sleep(2.0)

    def freeze(self, n, final=False):
        """Freeze the guest's activity, dump it, hand the dump to every client
        waiting for a reference (also those arriving meanwhile), resume once
        they all left (or after --exact-timeout)."""
        a = self.args
        dump = os.path.join(self.out, "dump-%d.ppm" % n)
        self.guest_cmd("freeze\ndump %s\n" % dump)
        if not self.wait_guest_log("dumped %s\n" % dump, 10):
            self.failures.append("freeze %d: the guest did not dump its framebuffer" % n)
            self.guest_cmd("activity busy\n")
            return
        t_dump = self.now()
        given = 0
        end = time.monotonic() + a.exact_timeout
        while time.monotonic() < end:
            with self.lock:
                waiting = list(self.waiting)
            # references for the clients ready in the first --min-freeze s
            # (at the end: for all, until none is left)
            handing = final or self.now() - t_dump < a.min_freeze
            for c in waiting:
                if (handing and c["ref_given"] is None
                        and file_has(c["log"], "asked the guest")):
                    tmp = c["ref"] + ".tmp"
                    shutil.copyfile(dump, tmp)
                    os.rename(tmp, c["ref"])
                    c["ref_given"] = self.now()
                    c["freeze"] = n
                    given += 1
            # resume once every client that has its reference left
            if final:
                if not waiting:
                    break
            elif not handing and not any(c["ref_given"] is not None for c in waiting):
                break
            time.sleep(0.05)
        os.unlink(dump)
        self.freezes.append({"n": n, "t": t_dump, "clients": given,
                             "s": round(self.now() - t_dump, 2)})
        self.guest_cmd("activity busy\n")

    def quiet_sample(self, tag):
        """All clients gone: wait until the runner's fds settle, then sample."""
        time.sleep(2.0)
        last = None
        for _ in range(20):
            s = proc_sample(self.runner.pid)
            if s is None:
                return None
            if last and s[1] == last[1] and s[2] == last[2]:
                break
            last = s
            time.sleep(0.5)
        return self.sample(tag)

    # ---- the run ----------------------------------------------------------------

    def run(self):
        a = self.args
        self.setup_link()
        # one call: two could hand out the same port twice
        self.guest_port, self.port = rig.free_ports(2) if not self.ns_srv else (5930, 5931)
        fifo = os.path.join(self.out, "guest.ctl")
        if os.path.exists(fifo):
            os.unlink(fifo)
        os.mkfifo(fifo)
        self.ctl = os.open(fifo, os.O_RDWR)
        self.start_guest()
        self.start_runner()
        if not self.wait_guest_log("client connected", 20):
            raise RuntimeError("the runner's spicesrc did not connect to the guest")
        self.event("runner pid %d up, upstream connected" % self.runner.pid)
        self.sample("start")
        th = threading.Thread(target=self.sampler, daemon=True)
        th.start()
        total = a.minutes * 60.0
        restart_at = [a.warmup + (total - a.warmup - 2 * a.busy) * (i + 1) / (a.restarts + 1)
                      for i in range(a.restarts)]
        # warm-up: all three clients, then a quiet baseline
        stop, ths = self.start_clients()
        while self.now() < a.warmup:
            time.sleep(a.busy)
            self.freeze(len(self.freezes) + 1)
        self.stop_clients(stop, ths)
        base = self.quiet_sample("baseline")
        self.event("baseline (quiet, after the warm-up): RSS %d KiB, %d fds, %d threads" %
                   (base["rss_kib"], base["fds"], base["threads"]))
        stop, ths = self.start_clients()
        while self.now() + a.busy < total and self.runner.poll() is None:
            time.sleep(a.busy)
            if self.restarts_done < len(restart_at) and self.now() >= restart_at[self.restarts_done]:
                self.restart_upstream()
            self.freeze(len(self.freezes) + 1)
        if self.runner.poll() is not None:
            self.failures.append("the runner exited (%s) at %.0f s" %
                                 (self.runner.returncode, self.now()))
        self.stop_clients(stop, ths)
        final = self.quiet_sample("final") if self.runner.poll() is None else None
        self.stop_ev.set()
        th.join()
        return base, final

    def stop_runner(self):
        if self.runner is None or self.runner.poll() is not None:
            return self.runner.returncode if self.runner else None
        os.killpg(self.runner.pid, signal.SIGTERM)
        try:
            rc = self.runner.wait(15)
        except subprocess.TimeoutExpired:
            self.procs.kill(self.runner)
            rc = "killed after 15 s"
        self.procs.forget(self.runner)
        return rc

    def cleanup(self):
        self.stop_ev.set()
        self.procs.stop_all()
        if getattr(self, "ctl", None) is not None:
            try:
                os.close(self.ctl)
            except OSError:
                pass
        self.teardown_link()


def summarize(soak, base, final, runner_rc):
    a = soak.args
    s = soak.samples
    after = [r for r in s if base and r["t"] >= base["t"]]
    res = {"pipeline": a.pipeline, "minutes": a.minutes, "busy_s": a.busy,
           "guest": "%dx%d busy %d fps" % (a.width, a.height, a.fps),
           "shaped_link": a.link if soak.shaped else None,
           "sample_interval_s": a.sample_interval, "warmup_s": a.warmup,
           "bounds": {"rss_peak_mib": a.rss_peak_mib, "rss_growth_mib": a.rss_growth_mib,
                   "rss_tail_mib": a.rss_tail_mib,
                   "fds": "final quiet == baseline", "threads": "final quiet == baseline"},
           "baseline": base, "final": final, "runner_exit_on_sigterm": runner_rc,
           "upstream_restarts": soak.restarts_done, "freezes": soak.freezes,
           "guest_starts_t": soak.guest_starts, "events": soak.events}
    if s:
        res["rss_kib_min_max"] = [min(r["rss_kib"] for r in s), max(r["rss_kib"] for r in s)]
        res["fds_min_max"] = [min(r["fds"] for r in s), max(r["fds"] for r in s)]
        res["threads_min_max"] = [min(r["threads"] for r in s), max(r["threads"] for r in s)]
    if after:
        res["after_warmup_rss_kib_max"] = max(r["rss_kib"] for r in after)
    cl = soak.clients
    res["cycle_clients"] = {
        "total": len(cl), "exact": sum(1 for c in cl if c["exact"]),
        "loop": sum(1 for c in cl if c["kind"] == "loop"),
        "shaped": sum(1 for c in cl if c["kind"] == "shaped"),
        "across_restart": sum(1 for c in cl if c.get("across_restart")),
        "exact_after_s_max_loop": max([c.get("exact_after_s", 0) for c in cl
                                       if c["kind"] == "loop" and c["exact"]] or [None]),
        "exact_after_s_max_shaped": max([c.get("exact_after_s", 0) for c in cl
                                         if c["kind"] == "shaped" and c["exact"]] or [None])}
    res["stalled_clients"] = {"total": len(soak.stalled),
                              "held_25s": sum(1 for c in soak.stalled if c.get("held_s", 0) > 20)}
    try:
        with open(soak.runner_log, errors="replace") as f:
            rl = f.read()
        res["runner_log"] = {
            "stall_limit_closes": len(re.findall(r"stall limit", rl)),
            "criticals": len(re.findall(r"CRITICAL", rl)),
            "pipeline_restarts": len(re.findall(r"restarting", rl))}
    except (OSError, AttributeError):
        pass
    res["clients"] = cl
    res["stalled"] = soak.stalled

    fails = list(soak.failures)
    if soak.runner.poll() is not None and runner_rc is None:
        fails.append("the runner died (exit %s)" % soak.runner.returncode)
    if base is None or final is None:
        fails.append("no quiet baseline/final sample (runner gone?)")
    else:
        peak = (res["after_warmup_rss_kib_max"] - base["rss_kib"]) / 1024.0
        growth = (final["rss_kib"] - base["rss_kib"]) / 1024.0
        res["rss_peak_over_baseline_mib"] = round(peak, 2)
        res["rss_final_over_baseline_mib"] = round(growth, 2)
        if sanitized(a.build):
            # ASan keeps freed blocks in its quarantine (256 MiB by default)
            # before reusing them, so the peak measures the quarantine, not
            # us; the regular build's run judges it
            res["rss_peak"] = "built with a sanitizer: peak not judged"
        elif peak > a.rss_peak_mib:
            fails.append("RSS peak %.1f MiB over the baseline (bound %g)" % (peak, a.rss_peak_mib))
        if growth > a.rss_growth_mib:
            fails.append("RSS grew %.1f MiB from the baseline to the end (bound %g)" %
                         (growth, a.rss_growth_mib))
        # the steady part: from 60 s after the last upstream restart on
        last = max([e["t"] for e in soak.events if e["event"].startswith("upstream restarted")]
                   or [base["t"]])
        tail = [r for r in s if r["t"] >= last + 60]
        if len(tail) >= 3 and tail[-1]["t"] - tail[0]["t"] >= 120:
            tg = (max(r["rss_kib"] for r in tail) - tail[0]["rss_kib"]) / 1024.0
            res["rss_tail"] = {"from_t": tail[0]["t"], "to_t": tail[-1]["t"],
                               "growth_mib": round(tg, 2)}
            if tg > a.rss_tail_mib:
                fails.append("RSS grew %.1f MiB in the steady part (%.0f..%.0f s; bound %g)" %
                             (tg, tail[0]["t"], tail[-1]["t"], a.rss_tail_mib))
        else:
            res["rss_tail"] = "steady part shorter than 120 s: not judged"
        if final["fds"] != base["fds"]:
            fails.append("open fds %d at the end, %d at the baseline" % (final["fds"], base["fds"]))
        if final["threads"] != base["threads"]:
            fails.append("threads %d at the end, %d at the baseline" %
                         (final["threads"], base["threads"]))
    if runner_rc != 0:
        fails.append("runner exit on SIGTERM: %s" % runner_rc)
    if res["upstream_restarts"] != a.restarts:
        fails.append("%d upstream restarts done, %d asked" % (res["upstream_restarts"], a.restarts))
    if not cl:
        fails.append("no cycle client ran")
    if not soak.stalled:
        fails.append("no stalled client ran")
    res["failures"] = fails
    res["ok"] = not fails
    return res


def report(out, every):
    """Markdown of a finished run (docs/reliability.md): the samples every
    `every` s plus the tagged ones, min/max, clients, failures."""
    with open(os.path.join(out, "soak.json")) as f:
        r = json.load(f)
    with open(os.path.join(out, "samples.csv")) as f:
        rows = list(csv.DictReader(f))
    restarts = [e["t"] for e in r["events"] if e["event"].startswith("upstream restarted")]
    print("| t (s) | VmRSS (MiB) | open fds | threads | clients connected | note |")
    print("| ---: | ---: | ---: | ---: | ---: | --- |")
    next_t = 0.0
    for i, row in enumerate(rows):
        t = float(row["t"])
        after_restart = any(0 <= t - x < float(r["sample_interval_s"]) for x in restarts)
        if row["tag"] or t >= next_t or after_restart or i == len(rows) - 1:
            note = row["tag"] or ("after upstream restart" if after_restart else "")
            print("| %.0f | %.1f | %s | %s | %s | %s |" % (t, int(row["rss_kib"]) / 1024.0,
                                                         row["fds"], row["threads"],
                                                         row["clients"], note))
            if t >= next_t:
                next_t = t - t % every + every
    print()
    for k in ("rss_kib_min_max", "fds_min_max", "threads_min_max", "cycle_clients",
              "stalled_clients", "upstream_restarts", "rss_peak_over_baseline_mib",
              "rss_final_over_baseline_mib", "rss_tail", "runner_log", "runner_exit_on_sigterm",
              "failures"):
        print("- %s: %s" % (k, r.get(k)))
    return 0


def sanitized(build):
    """True when BUILD was configured with -Db_sanitize (its meson-info)."""
    try:
        with open(os.path.join(build, "meson-info", "intro-buildoptions.json")) as f:
            opts = json.load(f)
    except (OSError, ValueError):
        return False
    for o in opts:
        if o.get("name") == "b_sanitize":
            v = o.get("value")
            return bool(v) and v != "none"
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.environ.get("GST_SPICE_BUILD_DIR",
                                                      os.path.join(SOURCE, "build")))
    ap.add_argument("--out", help="output directory (default: a new /tmp/gst-spice-soak.*)")
    ap.add_argument("--minutes", type=float, default=30.0, help="duration (30)")
    ap.add_argument("--restarts", type=int, default=2, help="upstream kills + restarts (2)")
    ap.add_argument("--warmup", type=float, default=60.0,
                    help="seconds before the quiet baseline (60)")
    ap.add_argument("--busy", type=float, default=4.0,
                    help="seconds of activity between two freezes (4)")
    ap.add_argument("--min-freeze", type=float, default=1.0,
                    help="seconds a freeze lasts at least (1)")
    ap.add_argument("--rejoin", type=float, default=1.0,
                    help="seconds between a client leaving and the next joining (1)")
    ap.add_argument("--sample-interval", type=float, default=10.0, help="/proc sampling (10 s)")
    ap.add_argument("--pipeline", default="transcode-vp8", help="shipped pipeline (transcode-vp8)")
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--height", type=int, default=768)
    ap.add_argument("--fps", type=int, default=30)
    ap.add_argument("--link", default="20/2", help="shaped link profile RTT/MBIT (20/2)")
    ap.add_argument("--prefix", default="gssoak", help="linkemu namespace prefix (gssoak)")
    ap.add_argument("--no-shaped", action="store_true", help="no shaped client")
    ap.add_argument("--stall-short", type=float, default=8.0)
    ap.add_argument("--stall-long", type=float, default=25.0)
    ap.add_argument("--connect-timeout", type=float, default=20.0)
    ap.add_argument("--exact-timeout", type=float, default=40.0)
    # an upstream restart raises the RSS once or twice by ~8-12 MiB (a new
    # SPICE session's surfaces while the old ones are freed), then it stays:
    # 5 restarts in 2.5 min gave +11.7, +7.6, 0, 0, 0 MiB
    ap.add_argument("--rss-peak-mib", type=float, default=32.0,
                    help="bound: RSS peak after the warm-up minus the baseline (32)")
    ap.add_argument("--rss-growth-mib", type=float, default=32.0,
                    help="bound: final quiet RSS minus the baseline (32)")
    ap.add_argument("--rss-tail-mib", type=float, default=4.0,
                    help="bound: RSS growth from 60 s after the last upstream restart to the "
                    "end, judged when that part is >= 120 s (4)")
    ap.add_argument("--report", metavar="DIR",
                    help="print a finished run's figures as Markdown and exit")
    ap.add_argument("--report-every", type=float, default=180.0,
                    help="--report: one sample row per this many seconds (180)")
    args = ap.parse_args()
    if args.report:
        return report(args.report, args.report_every)
    if len(args.prefix) > 9:
        ap.error("--prefix: at most 9 characters")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        for old in ("samples.csv", "soak.json"):
            if os.path.exists(os.path.join(args.out, old)):
                os.unlink(os.path.join(args.out, old))
    else:
        args.out = tempfile.mkdtemp(prefix="gst-spice-soak.")
    for b in rig.tools(args.build).values():
        if not os.access(b, os.X_OK):
            print("FAIL: %s not built" % b)
            return 1
    signal.signal(signal.SIGTERM, rig._on_signal)
    signal.signal(signal.SIGINT, rig._on_signal)
    soak = Soak(args)
    base = final = None
    runner_rc = None
    try:
        base, final = soak.run()
        runner_rc = soak.stop_runner()
    except rig.Terminated as e:
        soak.failures.append("interrupted (%s)" % e)
    except Exception as e:           # noqa: B902 -- reported, and cleaned up below
        soak.failures.append("%s: %s" % (type(e).__name__, e))
    finally:
        soak.cleanup()
    res = summarize(soak, base, final, runner_rc)
    with open(os.path.join(args.out, "soak.json"), "w") as f:
        json.dump(res, f, indent=1)
    cc = res["cycle_clients"]
    print("soak: %.1f min, %d cycle clients (%d loopback, %d shaped, %d across an upstream "
          "restart), %d exact; %d stalled clients; %d upstream restarts" %
          (args.minutes, cc["total"], cc["loop"], cc["shaped"], cc["across_restart"],
           cc["exact"], res["stalled_clients"]["total"], res["upstream_restarts"]))
    if base and final:
        print("runner: baseline RSS %d KiB / %d fds / %d threads; final %d KiB / %d / %d; "
              "peak after warm-up %d KiB (+%.1f MiB)" %
              (base["rss_kib"], base["fds"], base["threads"], final["rss_kib"], final["fds"],
               final["threads"], res["after_warmup_rss_kib_max"],
               res["rss_peak_over_baseline_mib"]))
    print("output: %s" % args.out)
    for e in res["failures"]:
        print("FAIL:", e)
    return 0 if res["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
