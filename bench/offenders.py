#!/usr/bin/env python3
"""Do hostile clients cost an ordinary client anything? (docs/reliability.md)

    bench/offenders.py [--build DIR] [--phase 60] [--busy N] [--out DIR]
                       [--json FILE] [--offenders record,cursor-drip,agent] ...

One run, one `gst-spice-run` process with the shipped transcode-vp8
pipeline (spicesink's max-clients raised to --max-clients 6: the measuring
client, three offenders and the clipboard owner are five sessions) in front
of the test guest (1280x800, activity busy at 30 fps, its guest agent
(--agent) and its record interface (--audio on)); the guest's cursor moves
--cursor-hz times a second and changes shape (hide, show: CURSOR_SET with
its 4 KiB shape) every tenth time, in both phases.

The measuring client is one spice-keypress session for both phases
(tools/keypress: it presses a key every 0.4-1.2 s and times the key box's
echo), split by time:

  phase 1 (--phase s): the client before the offenders;
  phase 2 (--phase s, or until the client gives up on a press): the same
      session while the offenders run, each a bench/spice-offender process
      from its own loopback address (so the sink's per-source event lines
      name each):
        record       127.0.0.2  main + record, RECORD_DATA of 64 KiB of
                                samples back to back, as fast as loopback
                                takes them
        cursor-drip  127.0.0.3  main + cursor (SO_RCVBUF 4096 before
                                connect), reads --drip-bytes (1) of its
                                cursor channel every --drip (19) s
        agent        127.0.0.4  AGENT_START with 0 tokens, then a clipboard
                                request every second, the clipboard owned by
        (clipboard-owner 127.0.0.5, a well-behaved accomplice answering each
                                request with --clipboard-bytes (16 MiB) of
                                text)
      Each connects again 1 s after the server closed it. The sink forwards
      one client's record upstream, the first that linked a record channel;
      spice-gtk links one, so the record offender links its channels before
      the measuring client and stays idle through phase 1
      (--no-record-holds-slot: it joins in phase 2, and its record is read
      and dropped).

A run ends at the time of phase 2 (the client is stopped right after an
echo, never with a press in flight), or earlier when the client gives up on
a press (--press-timeout 15 s, then 15 s more for a late echo).

Reported per phase: presses sent, arrived at the guest (its `key down`
lines, on the client's clock through the warm-up presses) and echoed,
timeouts, p50/p95/max, the runner's CPU (user+sys over wall); the
pipeline's VmRSS (/proc/PID/status) just before phase 2, its peak during
it (sampled every 0.25 s; and VmHWM) and --after s after the offenders
stopped; the runner's `security:` / `health:` lines naming each offender
and the spicesink warnings mentioning its address; sink counters at the end.

Targets (exit 1 when one is missed, each named): in phase 2 every press
arrives and is echoed within the timeout, the p95 is within --p95-margin
(30) ms of phase 1's, the RSS peak is less than --rss-mib (64) MiB over the
baseline, each offender is named in the service log with the (class, event,
reason) of EXPECTED below, and the runner lives. Exit 2: the harness could
not run (a process did not start).

Safety: when the runner's VmRSS passes --rss-limit (512) MiB in phase 2,
every offender is stopped at once (reported as `offenders stopped by the
RSS limit after S s`), so a queue without bound cannot take the machine.

--busy N runs N busy loops (python `while True: pass`) during both phases:
other work on the 2 cores. --offenders picks some (`none`: a control, the
client alone in both phases).
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SOURCE, "bench", "rig"))
import rig  # noqa: E402  (Procs, cpu_ticks, wait_listen, free_ports, tools, pct)

# What the service log must show for each offender: (class, event, reason)
# of a `gst-spice-run: CLASS: event=EVENT peer=ADDR ... reason=REASON` line.
EXPECTED = {
    "record": ("security", "protocol-violation", "record-rate"),
    "cursor-drip": ("health", "stalled-close", "stall-timeout"),
    "agent": ("health", "queue-limit", "agent-tokens"),
}
# The offenders and the accomplice, each from its own loopback address.
OFFENDERS = [("record", "127.0.0.2"), ("cursor-drip", "127.0.0.3"),
             ("agent", "127.0.0.4")]
OWNER = ("clipboard-owner", "127.0.0.5")
SCANCODE = "0x39"          # spice-keypress' default key
EVENT_LINE = re.compile(r"^gst-spice-run: (security|health):(.*)$")
KV = re.compile(r'(\w[\w-]*)=("(?:[^"\\]|\\.)*"|\S+)')
WARN_MSG = re.compile(r" WARN\s+\S+\s+\S+?:\d+:[^:]*:(?:<[^>]*>)?\s*(.*)$")
SINK_STATS = ["clients-refused", "closed-stalled", "closed-bad-message",
              "closed-idle", "input-events-dropped"]
SRC_STATS = ["record-bytes", "record-dropped"]


def log(msg):
    sys.stderr.write("[offenders %s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


def status_kib(pid, key):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


class Guest:
    """The test guest: its stdin for commands, its stdout counted (key
    downs of the measuring client's key) and kept in guest.log."""

    def __init__(self, procs, argv, out):
        self.lock = threading.Lock()
        self.key_downs = []        # monotonic time of each
        self.log = open(os.path.join(out, "guest.log"), "w")
        self.p = procs.start(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=open(os.path.join(out, "guest.err"), "w"),
                             text=True, bufsize=1)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            self.log.write(line)
            if line.strip() == "key down " + SCANCODE:
                with self.lock:
                    self.key_downs.append(time.monotonic())
        self.log.close()

    def down_times(self):
        with self.lock:
            return list(self.key_downs)

    def cmd(self, text):
        try:
            self.p.stdin.write(text + "\n")
            self.p.stdin.flush()
            return True
        except (BrokenPipeError, ValueError):
            return False


def cursor_loop(guest, hz, stop):
    """The guest's cursor moves @hz times a second along a Lissajous path
    (1280x800) and is hidden and shown again (CURSOR_SET with its shape)
    every tenth time."""
    i = 0
    while not stop.wait(1.0 / hz):
        i += 1
        if i % 10 == 0:
            ok = guest.cmd("cursor hide") and guest.cmd("cursor show")
        else:
            ok = guest.cmd("cursor move %d %d" % (640 + (i * 7) % 600 - 300,
                                                  400 + (i * 5) % 360 - 180))
        if not ok:
            return


class Offender:
    def __init__(self, procs, argv, role, addr, out):
        self.role, self.addr = role, addr
        self.lines, self.result = [], None
        self.offending = threading.Event()
        self.holding = threading.Event()
        self.log = open(os.path.join(out, "offender-%s.log" % role), "w")
        self.p = procs.start(argv, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, bufsize=1)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.p.stdout:
            self.log.write(line)
            line = line.strip()
            if line.startswith("{"):
                try:
                    self.result = json.loads(line)
                except ValueError:
                    pass
            else:
                self.lines.append(line)
                if "event=offending" in line:
                    self.offending.set()
                elif "event=holding" in line:
                    self.holding.set()
        self.log.close()


    def release(self):
        """A --hold offender starts misbehaving."""
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGUSR1)


class Sampler(threading.Thread):
    """VmRSS of the runner every 0.25 s; stops the offenders (once) when it
    passes the limit while @armed."""

    def __init__(self, pid, limit_kib, on_limit):
        super().__init__(daemon=True)
        self.pid, self.limit_kib, self.on_limit = pid, limit_kib, on_limit
        self.samples = []          # (monotonic, kib)
        self.armed = False
        self.tripped = None
        self.stop = threading.Event()

    def run(self):
        while not self.stop.wait(0.25):
            kib = status_kib(self.pid, "VmRSS")
            if kib is None:
                return
            self.samples.append((time.monotonic(), kib))
            if self.armed and self.tripped is None and kib > self.limit_kib:
                self.tripped = (time.monotonic(), kib)
                self.on_limit()

    def between(self, t0, t1):
        return [k for t, k in self.samples if t0 <= t <= t1]


PRESS_LINE = re.compile(r"^\[\s*([\d.]+)\] (?:press (\d+)(?:: (warm-up|sample) ([\d.]+) ms| (timed out))"
                        r"|(late draw arrived)|(connected, key box visible))")


class MeasuringClient:
    """spice-keypress, one session for both phases, pressing until it is
    stopped (right after an echo, never with a press in flight). -v gives a
    line per press with its time since the client's start; the offset of
    that clock is taken from the guest's key downs of the warm-up presses."""

    def __init__(self, procs, a, tools, cport, out):
        self.json_path = os.path.join(out, "keypress.json")
        self.log_path = os.path.join(out, "keypress.log")
        self.timeout_s = a.press_timeout
        argv = [tools["keypress"], "--uri", "spice://127.0.0.1:%d" % cport,
                "-n", "1000000", "--warmup", "2", "--warmup-presses", "3",
                "--timeout", str(a.press_timeout), "--seed", "1", "-v",
                "-o", self.json_path]
        self.t0 = time.monotonic()
        with open(self.log_path, "w") as err:
            self.p = procs.start(argv, stdout=subprocess.DEVNULL, stderr=err)

    def stop_after_echo(self, procs, timeout):
        """Stops the client at its next echo (or after @timeout); FALSE if it
        had exited by itself."""
        n0 = len(self.presses(raw=True))
        end = time.monotonic() + timeout
        while time.monotonic() < end and self.p.poll() is None and \
                len(self.presses(raw=True)) == n0:
            time.sleep(0.02)
        exited = self.p.poll() is not None
        procs.stop(self.p)
        return not exited

    def wait_connected(self, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end and self.p.poll() is None:
            if any(m and m.group(7) for m in map(PRESS_LINE.match, self.lines())):
                return True
            time.sleep(0.1)
        return False

    def lines(self):
        with open(self.log_path, errors="replace") as f:
            return f.read().splitlines()

    def presses(self, raw=False, downs=None):
        """[(press time (monotonic), kind, ms)]: kind sample, warm-up, late
        (echoed after the timeout) or lost (the client gave up on it). With
        @downs (the guest's key down times) the times are moved by the
        median offset of the warm-up presses' key downs."""
        out, late = {}, False
        for line in self.lines():
            m = PRESS_LINE.match(line)
            if not m:
                continue
            t = self.t0 + float(m.group(1))
            if m.group(6):
                late = True
            elif m.group(5):
                out[int(m.group(2))] = (t - self.timeout_s, "lost", None)
            elif m.group(3):
                n, ms = int(m.group(2)), float(m.group(4))
                if late:
                    out[n] = (out.get(n, (t, None, None))[0], "late", None)
                else:
                    out[n] = (t - ms / 1000.0, m.group(3), ms)
                late = False
        ps = [out[k] for k in sorted(out)]
        if raw or not downs:
            return ps
        warm = [d - p[0] for p, d in zip(ps, downs) if p[1] == "warm-up"]
        off = rig.pct(warm, 0.5) if warm else 0.0
        return [(t + off, kind, ms) for t, kind, ms in ps]


def phase_figures(presses, t0, t1, downs, runner_cores):
    """The presses made in [t0, t1) (monotonic) and the key downs the guest
    saw then."""
    ps = [p for p in presses if t0 <= p[0] < t1]
    warm = len([p for p in ps if p[1] == "warm-up"])
    ps = [p for p in ps if p[1] != "warm-up"]
    samples = [ms for _, kind, ms in ps if kind == "sample"]
    return {"sent": len(ps),
            "arrived": len([t for t in downs if t0 <= t < t1]) - warm,
            "echoed": len([p for p in ps if p[1] != "lost"]),
            "measured": len(samples),
            "timeouts": len([p for p in ps if p[1] in ("late", "lost")]),
            "lost": len([p for p in ps if p[1] == "lost"]),
            "p50_ms": rig.pct(samples, 0.5), "p95_ms": rig.pct(samples, 0.95),
            "max_ms": max(samples) if samples else None,
            "seconds": t1 - t0, "runner_cores": runner_cores}


def offender_list(a):
    return [(role, addr) for role, addr in OFFENDERS if role in a.offenders]


def pipeline_copy(out, max_clients):
    """pipelines/transcode-vp8.pipeline with max-clients set on spicesink."""
    with open(os.path.join(SOURCE, "pipelines", "transcode-vp8.pipeline")) as f:
        text = f.read()
    text, n = re.subn(r"^(spicesink name=s)\b", r"\1 max-clients=%d" % max_clients,
                      text, flags=re.M)
    if n != 1:
        raise RuntimeError("transcode-vp8.pipeline: no `spicesink name=s` line")
    path = os.path.join(out, "transcode-vp8.pipeline")
    with open(path, "w") as f:
        f.write(text)
    return path


def parse_log(path, addrs):
    """Per address: the runner's event lines naming it as the peer (dicts)
    and the warning lines mentioning it; and the last stats line's sink and
    source counters."""
    events = {a: [] for a in addrs}
    warnings = {a: [] for a in addrs}
    stats = {"criticals": 0}
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = EVENT_LINE.match(line)
            if m:
                kv = {k: v.strip('"') for k, v in KV.findall(m.group(2))}
                kv["class"] = m.group(1)
                if kv.get("peer") in events:
                    events[kv["peer"]].append(kv)
                continue
            if line.startswith("stats:"):
                for part in line[len("stats:"):].split(";"):
                    name, _, fields = part.strip().partition(": ")
                    if name in ("s", "src"):
                        for k, v in KV.findall(fields):
                            if k in SINK_STATS + SRC_STATS:
                                stats["%s.%s" % (name, k)] = int(v)
                continue
            if "-CRITICAL **" in line:
                stats["criticals"] += 1
            if " WARN " in line:
                for a in addrs:
                    if re.search(re.escape(a) + r"\b", line):
                        warnings[a].append(line)
    return events, warnings, stats


def warning_kinds(lines, n=3):
    """The first @n distinct warning messages (numbers as N)."""
    kinds = []
    for line in lines:
        m = WARN_MSG.search(line)
        k = re.sub(r"\d+", "N", m.group(1) if m else line)
        if k not in kinds:
            kinds.append(k)
    return kinds[:n]


def mib(kib):
    return None if kib is None else kib / 1024.0


def run(a, out):
    tools = rig.tools(a.build)
    offender_bin = os.path.join(a.build, "bench", "spice-offender")
    for p in list(tools.values()) + [offender_bin]:
        if not os.access(p, os.X_OK):
            raise RuntimeError("%s missing: build first (ninja -C %s)" % (p, a.build))
    procs = rig.Procs()
    stop_cursor = threading.Event()
    res = {"phase_s": a.phase, "busy_loops": a.busy, "max_clients": a.max_clients,
           "offenders_run": a.offenders, "drip_s": a.drip, "drip_bytes": a.drip_bytes,
           "clipboard_bytes": a.clipboard_bytes, "cursor_hz": a.cursor_hz,
           "agent_tokens": a.agent_tokens,
           "press_timeout_s": a.press_timeout, "record_holds_slot": a.record_holds_slot,
           "load_before": open("/proc/loadavg").read().split()[:3]}
    sampler = None
    try:
        for _ in range(a.busy):
            procs.start([sys.executable, "-c", "while True: pass"])
        gport, cport = rig.free_ports(2)
        guest = Guest(procs, [tools["guest"], "--port", str(gport), "--activity",
                              "busy", "--agent", "--audio", "on"], out)
        if not rig.wait_listen(None, gport, 15, guest.p):
            raise RuntimeError("the guest did not listen")
        env = dict(os.environ)
        env["GST_PLUGIN_PATH"] = os.path.join(a.build, "plugins")
        env["GST_REGISTRY"] = os.path.join(out, "registry.bin")
        env["LD_LIBRARY_PATH"] = os.path.join(a.build, "gst-libs", "gst", "spice")
        env.setdefault("GST_DEBUG", "*:2")          # as the systemd unit
        env["GST_DEBUG_NO_COLOR"] = "1"
        runner_log = os.path.join(out, "runner.log")
        with open(runner_log, "w") as rl:
            runner = procs.start(
                [tools["runner"], "--stats-interval", "5",
                 pipeline_copy(out, a.max_clients),
                 "-D", "UPSTREAM=spice://127.0.0.1:%d" % gport,
                 "-D", "LISTEN_PORT=%d" % cport],
                stdin=subprocess.DEVNULL, stdout=rl, stderr=subprocess.STDOUT, env=env)
        if not rig.wait_listen(None, cport, 60, runner):
            raise RuntimeError("the runner did not listen (exit %s)" % runner.poll())
        offenders = []

        def stop_offenders():
            for o in offenders:
                if o.p.poll() is None:
                    o.p.send_signal(signal.SIGTERM)

        sampler = Sampler(runner.pid, a.rss_limit * 1024, stop_offenders)
        sampler.start()
        if a.cursor_hz > 0:
            threading.Thread(target=cursor_loop, args=(guest, a.cursor_hz, stop_cursor),
                             daemon=True).start()
        time.sleep(a.warmup)

        def start(role, addr, held=False):
            argv = [offender_bin, "--port", str(cport), "--from", addr, "--role", role,
                    "--drip", str(a.drip), "--drip-bytes", str(a.drip_bytes),
                    "--clipboard-bytes", str(a.clipboard_bytes),
                    "--tokens", str(a.agent_tokens)]
            o = Offender(procs, argv + (["--hold"] if held else []), role, addr, out)
            offenders.append(o)
            if not (o.holding if held else o.offending).wait(15):
                raise RuntimeError("%s did not start: %s" % (role, o.lines[-3:]))
            return o

        # the sink forwards one client's record upstream, the first that
        # linked one: the record offender takes that place before the
        # measuring client (spice-gtk links record too), idle until phase 2
        held = None
        if "record" in a.offenders and a.record_holds_slot:
            held = start("record", dict(OFFENDERS)["record"], held=True)

        log("phase 1: the measuring client, no offender active (%.0f s)" % a.phase)
        client = MeasuringClient(procs, a, tools, cport, out)
        if not client.wait_connected(60):
            raise RuntimeError("the measuring client did not connect: %s" %
                               client.lines()[-3:])
        time.sleep(2.0)         # its --warmup; the warm-up presses follow
        t_conn, c_conn = time.monotonic(), rig.cpu_ticks(runner.pid)
        time.sleep(a.phase)
        t_off, c_off = time.monotonic(), rig.cpu_ticks(runner.pid)
        base = sampler.between(t_off - 3, t_off)
        res["rss_baseline_mib"] = mib(min(base) if base else status_kib(runner.pid, "VmRSS"))

        log("phase 2: the same client, the offenders %s join" % ",".join(a.offenders))
        sampler.armed = True

        if "agent" in a.offenders:
            start(*OWNER)
        for role, addr in offender_list(a):
            if held and role == held.role:
                held.release()
                if not held.offending.wait(15):
                    raise RuntimeError("the record offender did not start: %s" %
                                       held.lines[-3:])
            else:
                start(role, addr)
        end = t_off + a.phase
        while time.monotonic() < end and client.p.poll() is None:
            time.sleep(0.1)
        if not client.stop_after_echo(procs, 2 * a.press_timeout + 5):
            try:
                with open(client.json_path) as f:
                    res["client_error"] = json.load(f).get("error")
            except (OSError, ValueError):
                res["client_error"] = "exited (%s) without JSON" % client.p.returncode
        t_end, c_end = time.monotonic(), rig.cpu_ticks(runner.pid)
        stop_offenders()
        for o in offenders:
            try:
                o.p.wait(10)
            except subprocess.TimeoutExpired:
                procs.stop(o.p)
            o.reader.join(5)
        sampler.armed = False
        time.sleep(2)
        peak = sampler.between(t_off, time.monotonic())
        res["rss_peak_mib"] = mib(max(peak) if peak else None)
        res["vm_hwm_mib"] = mib(status_kib(runner.pid, "VmHWM"))
        if sampler.tripped:
            res["rss_limit_stop_s"] = sampler.tripped[0] - t_off
        time.sleep(max(0, a.after - 2))
        res["rss_after_mib"] = mib(status_kib(runner.pid, "VmRSS"))
        res["runner_alive"] = runner.poll() is None
        downs = guest.down_times()
        presses = client.presses(downs=downs)
        res["baseline"] = phase_figures(presses, t_conn, t_off, downs,
                                        (c_off - c_conn) / rig.CLK_TCK / (t_off - t_conn))
        ph = res["offenders_phase"] = phase_figures(
            presses, t_off, t_end, downs, (c_end - c_off) / rig.CLK_TCK / (t_end - t_off))
        # keys of phase 2 that reached the guest late, by the end of the run
        ph["arrived_by_end"] = len([t for t in downs if t >= t_off])
        ph["offender_cores"] = sum((o.result or {}).get("cpu_s", 0) for o in offenders) / \
            max([0.001] + [(o.result or {}).get("seconds", 0) for o in offenders])
        res["offenders"] = {o.role: {"addr": o.addr, "result": o.result,
                                     "events": [ln.split(" event=", 1)[1]
                                                for ln in o.lines if " event=" in ln][:20]}
                            for o in offenders}
        stop_cursor.set()
        procs.stop(runner)
        res["runner_exit"] = runner.returncode
    finally:
        stop_cursor.set()
        if sampler:
            sampler.stop.set()
        procs.stop_all()
    roles = offender_list(a) + ([OWNER] if "agent" in a.offenders else [])
    events, warnings, stats = parse_log(runner_log, [addr for _, addr in roles])
    res["service_log"] = {}
    for role, addr in roles:
        want = EXPECTED.get(role)
        found = [e for e in events[addr] if want and
                 (e["class"], e.get("event"), e.get("reason")) == want]
        kinds = {}
        for e in events[addr]:
            k = "%s: event=%s reason=%s" % (e["class"], e.get("event"), e.get("reason"))
            kinds[k] = kinds.get(k, 0) + 1 + int(e.get("suppressed", "0") or 0)
        res["service_log"][role] = {
            "addr": addr, "expected": "%s: event=%s reason=%s" % want if want else None,
            "found": len(found), "events": kinds, "warnings": len(warnings[addr]),
            "warning_examples": warning_kinds(warnings[addr])}
    res["stats_end"] = stats
    return res


def judge(a, res):
    """The targets missed, as sentences (empty: all met)."""
    miss = []
    b, o = res.get("baseline", {}), res.get("offenders_phase", {})
    if b.get("timeouts") or b.get("arrived") != b.get("sent") or not b.get("measured"):
        miss.append("phase 1 itself failed: %s of %s presses arrived, %s timeouts" % (
            b.get("arrived"), b.get("sent"), b.get("timeouts")))
    if o.get("timeouts") or o.get("arrived") != o.get("sent") or \
            res.get("client_error"):
        miss.append("keys lost or late with the offenders: %s of %s presses arrived in "
                    "time, %s timeouts%s" % (
                        o.get("arrived"), o.get("sent"), o.get("timeouts"),
                        "; the client: " + res["client_error"]
                        if res.get("client_error") else ""))
    if b.get("p95_ms") is None or o.get("p95_ms") is None or \
            o["p95_ms"] > b["p95_ms"] + a.p95_margin:
        miss.append("keypress p95 %s ms with the offenders against %s ms alone "
                    "(margin %d ms)" % (fmt(o.get("p95_ms"), 1), fmt(b.get("p95_ms"), 1),
                                        a.p95_margin))
    growth = None
    if res.get("rss_peak_mib") is not None and res.get("rss_baseline_mib") is not None:
        growth = res["rss_peak_mib"] - res["rss_baseline_mib"]
    if growth is None or growth >= a.rss_mib:
        miss.append("pipeline RSS peak %s MiB over the baseline (bound %d)%s" % (
            fmt(growth, 1), a.rss_mib,
            "; offenders stopped by the RSS limit after %.1f s" % res["rss_limit_stop_s"]
            if "rss_limit_stop_s" in res else ""))
    for role, _ in offender_list(a):
        sl = res.get("service_log", {}).get(role, {})
        if not sl.get("found"):
            miss.append("offender %s (%s) not in the service log as `%s`" % (
                role, sl.get("addr"), sl.get("expected")))
    if not res.get("runner_alive", False):
        miss.append("the runner exited during the run (exit %s)" % res.get("runner_exit"))
    return miss


def fmt(v, nd=0):
    return "-" if v is None else ("%.*f" % (nd, v))


def markdown(res):
    b, o = res["baseline"], res["offenders_phase"]
    out = ["| | phase 1: before the offenders | phase 2: with the offenders |",
           "| --- | ---: | ---: |"]
    out.append("| presses sent / arrived at the guest / echoed | %s / %s / %s | %s / %s / %s |" % (
        b["sent"], b["arrived"], b["echoed"], o["sent"], o["arrived"], o["echoed"]))
    out.append("| presses arrived by the end of the run | | %s |" % o.get("arrived_by_end", "-"))
    out.append("| timeouts (%s s) / given up | %s / %s | %s / %s |" % (
        fmt(res["press_timeout_s"]), b["timeouts"], b["lost"], o["timeouts"], o["lost"]))
    for k, label in (("p50_ms", "keypress p50 (ms)"), ("p95_ms", "keypress p95 (ms)"),
                     ("max_ms", "keypress max (ms)")):
        out.append("| %s | %s | %s |" % (label, fmt(b.get(k), 1), fmt(o.get(k), 1)))
    out.append("| runner CPU (cores) | %.2f | %.2f |" % (b["runner_cores"], o["runner_cores"]))
    out.append("| offenders' CPU (cores) | - | %.2f |" % o.get("offender_cores", 0))
    out.append("| phase length (s) | %.0f | %.0f |" % (b["seconds"], o["seconds"]))
    out.append("")
    if res.get("client_error"):
        out.append("The measuring client stopped: %s." % res["client_error"])
        out.append("")
    out.append("Pipeline VmRSS: %s MiB before phase 2, peak %s MiB during it (VmHWM %s), "
               "%s MiB %d s after the offenders stopped%s." % (
                   fmt(res["rss_baseline_mib"], 1), fmt(res["rss_peak_mib"], 1),
                   fmt(res["vm_hwm_mib"], 1), fmt(res["rss_after_mib"], 1), res["after_s"],
                   "; offenders stopped by the RSS limit after %.1f s" % res["rss_limit_stop_s"]
                   if "rss_limit_stop_s" in res else ""))
    out.append("")
    out.append("| offender | address | expected in the service log | found | its event lines | its warnings |")
    out.append("| --- | --- | --- | ---: | --- | ---: |")
    for role, sl in res["service_log"].items():
        out.append("| %s | %s | %s | %s | %s | %d |" % (
            role, sl["addr"], "`%s`" % sl["expected"] if sl["expected"] else "(none: accomplice)",
            sl["found"] if sl["expected"] else "-",
            "; ".join("`%s` x%d" % kv for kv in sl["events"].items()) or "none",
            sl["warnings"]))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 2)[2])
    ap.add_argument("--build", default=os.path.join(SOURCE, "build"))
    ap.add_argument("--phase", type=float, default=60, help="seconds per phase (60)")
    ap.add_argument("--busy", type=int, default=0, help="busy loops during both phases (0)")
    ap.add_argument("--warmup", type=float, default=5,
                    help="seconds between the pipeline's start and phase 1 (5)")
    ap.add_argument("--press-timeout", type=float, default=15,
                    help="spice-keypress --timeout: a press not echoed by then is "
                    "a timeout (15)")
    ap.add_argument("--after", type=float, default=10,
                    help="seconds after the offenders stopped for the last RSS (10)")
    ap.add_argument("--cursor-hz", type=float, default=20,
                    help="guest cursor commands a second, 0: none (20)")
    ap.add_argument("--drip", type=float, default=19)
    ap.add_argument("--drip-bytes", type=int, default=1)
    ap.add_argument("--clipboard-bytes", type=int, default=16 * 1024 * 1024)
    ap.add_argument("--agent-tokens", type=int, default=0,
                    help="tokens the agent offender gives in AGENT_START (0; a "
                    "large number makes it a well-behaved requester, a control)")
    ap.add_argument("--max-clients", type=int, default=6)
    ap.add_argument("--record-holds-slot", action=argparse.BooleanOptionalAction,
                    default=True,
                    help="the record offender links (idle) before the measuring "
                    "client, so its record is the one the sink forwards upstream (on)")
    ap.add_argument("--p95-margin", type=int, default=30)
    ap.add_argument("--rss-mib", type=int, default=64)
    ap.add_argument("--rss-limit", type=int, default=512,
                    help="MiB of runner VmRSS at which the offenders are stopped (512)")
    ap.add_argument("--offenders", default=",".join(r for r, _ in OFFENDERS),
                    help="which offenders run (all: %(default)s; none: phase 2 "
                    "is the client alone again, a control)")
    ap.add_argument("--out", help="logs here (default a new /tmp/gst-spice-offenders.*)")
    ap.add_argument("--json", help="also write the summary here")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    a.offenders = [] if a.offenders == "none" else a.offenders.split(",")
    if not set(a.offenders) <= set(r for r, _ in OFFENDERS):
        ap.error("--offenders: some of %s" % ",".join(r for r, _ in OFFENDERS))
    out = a.out or tempfile.mkdtemp(prefix="gst-spice-offenders.")
    os.makedirs(out, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda s, f: sys.exit(3))
    try:
        res = run(a, out)
    except RuntimeError as e:
        log("cannot run: %s (logs in %s)" % (e, out))
        return 2
    res["after_s"] = int(a.after)
    res["load_after"] = open("/proc/loadavg").read().split()[:3]
    res["out"] = out
    res["missed"] = judge(a, res)
    print(markdown(res))
    print()
    print("targets: " + ("all met" if not res["missed"] else
                         "%d missed:\n  - %s" % (len(res["missed"]), "\n  - ".join(res["missed"]))))
    print()
    print(json.dumps(res, indent=1))
    if a.json:
        rig.save_json(a.json, res)
    return 1 if res["missed"] else 0


if __name__ == "__main__":
    sys.exit(main())
