#!/usr/bin/env python3
"""Cost of one transcoding session: CPU cores, unique memory (USS) and peak
RSS of the pipeline process (gst-spice-run with a shipped pipeline) in front
of the test guest, with one real client (spice-keypress) on loopback.

    bench/session-cost.py [--build DIR[=LABEL]]... [--env LABEL:VAR=VALUE]...
                          [--pipelines transcode-mjpeg,transcode-vp8]
                          [--activities busy,heavy,idle] [--secs 60] [--repeat 3]
                          [--perf SECS] [--json FILE]

Per (build, pipeline, activity) and repeat: start spice-test-guest
(1280x800, the activity at 30 fps once a display channel linked), the
pipeline (guest, pipeline and client under `nice -n -5` when root), then spice-keypress (pressing a
key every 0.8-1.2 s, so that the key box is drawn too; with `idle` only
once, so nothing changes afterwards), wait WARMUP s,
then read utime+stime of the pipeline process from /proc/PID/stat over
SECS s: cores = ticks / CLK_TCK / wall. USS (unique memory: Private_Clean +
Private_Dirty of /proc/PID/smaps_rollup, what one more session costs) is
sampled every second of the window: its peak and median. At the end of the
window /proc/PID/smaps is read once and the private memory attributed by
mapping (see breakdown()): glibc's main heap, the other malloc arenas,
thread stacks, other anonymous mappings by size class, and the named
files (libvpx apart). The client's keypress-to-draw p50/p95 over the run
is recorded (so that a memory change is seen not to cost latency). RSS is VmHWM (peak) at the end,
VmRSS next to it, and of VmRSS the anonymous part (RssAnon: what each
further session adds) and the file-backed one (RssFile: mostly shared
libraries, the same pages in every session). Several builds are measured alternately in the same
run (before/after on the same machine state). The median of the repeats
is printed. --env LABEL:VAR=VALUE sets an environment variable of that
build's pipeline process only (e.g. to compare malloc tunables on one
build: `--build build=a --build build=b --env b:GLIBC_TUNABLES=...`). Each
build runs the pipeline files of its own source tree (its meson-info), so a
change to pipelines/ is measured against the tree without it.

--perf SECS additionally records `perf record -g` of the pipeline for SECS s
in each (build, pipeline, activity) once and prints the top symbols of
`perf report --no-children` (self time, by library and function).

Not a timed test: results depend on the machine and its load.
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "rig"))
import rig  # noqa: E402  (wait_listen, shared with the latency rig)
import tempfile
import time

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HZ = os.sysconf("SC_CLK_TCK")


def ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def status_kib(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def uss_kib(pid):
    """Private_Clean + Private_Dirty of the whole process, KiB."""
    n = 0
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            if line.startswith(("Private_Clean:", "Private_Dirty:")):
                n += int(line.split()[1])
    return n


def thread_stack_pointers(pid):
    """The stack pointer of each thread blocked in a system call (what a
    pipeline's threads are, between frames): /proc/PID/task/TID/syscall's
    second-to-last field."""
    sps = []
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/syscall" % (pid, tid)) as f:
                fields = f.read().split()
        except OSError:
            continue
        if len(fields) >= 3 and fields[0] != "running":
            sps.append(int(fields[-2], 16))
    return sps


ARENA_SIZE = 64 << 20   # glibc's HEAP_MAX_SIZE on 64-bit: an arena's reservation


def smaps(pid):
    """[(start, end, perms, name, private KiB)] of /proc/PID/smaps."""
    maps, cur = [], None
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            m = re.match(r"([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$", line)
            if m:
                cur = [int(m.group(1), 16), int(m.group(2), 16), m.group(3),
                       m.group(4).strip(), 0]
                maps.append(cur)
            elif line.startswith(("Private_Clean:", "Private_Dirty:")):
                cur[4] += int(line.split()[1])
    return maps


def breakdown(pid):
    """Where the process's private memory is, KiB by owner: `heap` (glibc's
    main arena, [heap]), `arenas` (glibc's other malloc arenas: an
    anonymous mapping at a 64 MiB boundary, followed by the rest of its
    reservation without access), `thread stacks` (the anonymous mapping
    that holds a thread's stack pointer, and [stack]), the other anonymous
    mappings by size (`anon >= 4 MiB`: frames and encoder buffers that
    malloc mapped on their own, `anon 1-4 MiB`, `anon < 1 MiB`), `libvpx`,
    `other files` (the data and relocated pages of every other library)
    and `other` ([vvar] and the like). Also the sizes of the anonymous
    mappings of 1 MiB and more, to attribute them by size."""
    maps = smaps(pid)
    sps = thread_stack_pointers(pid)
    out, big = {}, []

    def add(key, kib):
        out[key] = out.get(key, 0) + kib

    for i, (start, end, perms, name, priv) in enumerate(maps):
        if name == "[heap]":
            add("heap", priv)
        elif name == "[stack]":
            add("thread stacks", priv)
        elif name.startswith("/") or name.startswith("memfd:"):
            add("libvpx" if "libvpx" in name else "other files", priv)
        elif name or perms.startswith("---"):
            add("other", priv)    # [vvar]..., reservations and guard pages
        elif (any(start <= sp < end for sp in sps) or
              (i > 0 and maps[i - 1][1] == start and
               maps[i - 1][2].startswith("---") and
               maps[i - 1][1] - maps[i - 1][0] <= 64 << 10)):
            # a thread's stack: holds its stack pointer, or is above a
            # guard page (a thread that was running as we looked)
            add("thread stacks", priv)
        elif (start % ARENA_SIZE == 0 and i + 1 < len(maps) and
              maps[i + 1][0] == end and maps[i + 1][2].startswith("---") and
              maps[i + 1][1] - start <= ARENA_SIZE):
            add("arenas", priv)
        else:
            size = end - start
            add("anon >= 4 MiB" if size >= 4 << 20 else
                "anon 1-4 MiB" if size >= 1 << 20 else "anon < 1 MiB", priv)
            if size >= 1 << 20:
                big.append([round(size / 1048576.0, 2), round(priv / 1024.0, 2)])
    return out, sorted(big, reverse=True)


def keypress_stats(path):
    try:
        with open(path) as f:
            k = json.load(f)
    except (OSError, ValueError):
        return None
    return k if k.get("ok") else None


def source_of(build):
    """The source tree a meson build directory was set up from."""
    try:
        with open(os.path.join(build, "meson-info", "meson-info.json")) as f:
            return json.load(f)["directories"]["source"]
    except (OSError, ValueError, KeyError):
        return SOURCE


def stop(proc):
    if proc and proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def nice_prefix():
    return ["nice", "-n", "-5"] if os.geteuid() == 0 else []


def perf_report(data, sort):
    return subprocess.run(
        ["perf", "report", "-i", data, "--no-children", "--stdio", "-q",
         "--sort", sort, "-g", "none", "--percent-limit", "0.3"],
        capture_output=True, text=True).stdout


def perf_top(data, n):
    """Top libraries, and top symbols with a stripped library's addresses
    summed as one row (library, "(no symbols)")."""
    libs = []
    for line in perf_report(data, "dso").splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(\S+)", line)
        if m:
            libs.append((float(m.group(1)), m.group(2)))
    syms = {}
    for line in perf_report(data, "dso,sym").splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+\[(.)\]\s+(.*)", line)
        if m:
            sym = m.group(4).strip()
            if sym.startswith("0x"):
                sym = "(no symbols)"
            key = (m.group(2), sym)
            syms[key] = syms.get(key, 0.0) + float(m.group(1))
    top = sorted(((v, k[0], k[1]) for k, v in syms.items()), reverse=True)
    # by thread (its name: queue:src is the stream branch's encoder,
    # spicetiler-work the tiler's worker, the process's own name spice-gtk's
    # main context), each with its top libraries
    threads = {}
    for line in perf_report(data, "comm,dso").splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+(\S+)", line)
        if m:
            t = threads.setdefault(m.group(2), [0.0, []])
            t[0] += float(m.group(1))
            t[1].append((float(m.group(1)), m.group(3)))
    by_thread = sorted(((v[0], k, v[1][:4]) for k, v in threads.items()), reverse=True)
    return {"libs": libs[:n], "syms": top[:n], "threads": by_thread[:n]}


STATS_INTERVAL = 5


def stats_counters(log_path):
    """(spicesrc frames, tiler stream-frames) of each stats line so far."""
    rows = []
    with open(log_path, errors="replace") as f:
        for line in f:
            if not line.startswith("gst-spice-run: stats:"):
                continue
            m = re.search(r"src: frames=(\d+)", line)
            n = re.search(r"stream-frames=(\d+)", line)
            if m:
                rows.append((int(m.group(1)), int(n.group(1)) if n else 0))
    return rows


def run_one(args, build, pipeline, activity, tmp, perf_secs=0, extra_env=None):
    guest_bin = os.path.join(build, "tools", "spice-test-guest")
    runner = os.path.join(build, "tools", "runner", "gst-spice-run")
    keypress = os.path.join(build, "tools", "keypress", "spice-keypress")
    gport, cport = rig.free_ports(2)   # one call: never the same port twice
    env = dict(os.environ)
    env["GST_PLUGIN_PATH"] = os.path.join(build, "plugins")
    env["GST_REGISTRY"] = os.path.join(tmp, "registry-%d.bin" % abs(hash(build)))
    env["LD_LIBRARY_PATH"] = os.path.join(build, "gst-libs", "gst", "spice")
    source = source_of(build)
    env["GST_SPICE_PIPELINES_DIR"] = os.path.join(source, "pipelines")
    env.update(extra_env or {})
    procs = []
    res = {"pipeline": pipeline, "activity": activity}
    try:
        guest = subprocess.Popen(
            nice_prefix() + [guest_bin, "--port", str(gport), "--activity", activity,
             "--activity-after-connect"], stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(guest)
        if not rig.wait_listen(None, gport, 10, guest):
            raise RuntimeError("guest did not listen")
        pfile = os.path.join(source, "pipelines", pipeline + ".pipeline")
        log_path = os.path.join(tmp, "pipeline.log")
        plog = open(log_path, "w")
        pipe = subprocess.Popen(
            nice_prefix() + [runner, "--stats-interval", str(STATS_INTERVAL), pfile,
                             "-D", "UPSTREAM=spice://127.0.0.1:%d" % gport,
                             "-D", "LISTEN_PORT=%d" % cport],
            stdin=subprocess.DEVNULL, stdout=plog, stderr=subprocess.STDOUT,
            env=env)
        plog.close()
        procs.append(pipe)
        if not rig.wait_listen(None, cport, 60, pipe):
            raise RuntimeError("pipeline did not listen")
        budget = args.warmup + args.secs + perf_secs + 10
        # idle: one press at the start (the client waits for the key box),
        # then nothing changes; otherwise a press every 0.8-1.2 s, as many
        # as last about 3 s beyond the window, so that the client is there
        # all along and then ends by itself, writing its latencies
        presses = (["-n", "1", "--warmup-presses", "0", "--gap-min", str(budget),
                    "--gap-max", str(budget)] if activity == "idle" else
                   ["-n", str(int(budget - 7)), "--gap-min", "0.8", "--gap-max", "1.2"])
        kjson = os.path.join(tmp, "keypress.json")
        if os.path.exists(kjson):
            os.unlink(kjson)
        kp = subprocess.Popen(
            nice_prefix() + [keypress, "--uri", "spice://127.0.0.1:%d" % cport] +
            presses + ["--warmup", "1", "--timeout", "30", "-o", kjson],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(kp)
        time.sleep(args.warmup)
        for p, name in ((pipe, "pipeline"), (kp, "client")):
            if p.poll() is not None:
                raise RuntimeError("%s exited early (%s)" % (name, p.returncode))
        t0, c0, g0 = time.monotonic(), ticks(pipe.pid), ticks(guest.pid)
        s0 = len(stats_counters(log_path))
        uss = []
        while time.monotonic() < t0 + args.secs:
            uss.append(uss_kib(pipe.pid))
            time.sleep(min(1.0, max(t0 + args.secs - time.monotonic(), 0)))
        t1, c1, g1 = time.monotonic(), ticks(pipe.pid), ticks(guest.pid)
        uss.append(uss_kib(pipe.pid))
        res["uss_peak_mib"] = max(uss) / 1024.0
        res["uss_median_mib"] = statistics.median(uss) / 1024.0
        owners, big = breakdown(pipe.pid)
        res["private_mib"] = {k: v / 1024.0 for k, v in owners.items()}
        res["anon_maps_mib"] = big
        res["threads"] = status_kib(pipe.pid, "Threads")
        st = stats_counters(log_path)[max(s0 - 1, 0):]
        if len(st) >= 2:
            span = (len(st) - 1) * STATS_INTERVAL
            res["src_fps"] = (st[-1][0] - st[0][0]) / span
            res["stream_fps"] = (st[-1][1] - st[0][1]) / span
        if kp.poll() is not None:
            raise RuntimeError("client exited during the measurement")
        res["cores"] = (c1 - c0) / HZ / (t1 - t0)
        res["guest_cores"] = (g1 - g0) / HZ / (t1 - t0)
        res["hwm_mib"] = status_kib(pipe.pid, "VmHWM") / 1024.0
        res["rss_mib"] = status_kib(pipe.pid, "VmRSS") / 1024.0
        res["anon_mib"] = status_kib(pipe.pid, "RssAnon") / 1024.0
        res["file_mib"] = status_kib(pipe.pid, "RssFile") / 1024.0
        if perf_secs:
            data = os.path.join(tmp, "perf.data")
            subprocess.run(["perf", "record", "-q", "-g", "-o", data, "-p",
                            str(pipe.pid), "--", "sleep", str(perf_secs)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            res["perf"] = perf_top(data, args.perf_top)
        if activity != "idle":
            try:
                kp.wait(budget)
            except subprocess.TimeoutExpired:
                pass
            k = keypress_stats(kjson)
            if k:
                res["key_p50_ms"], res["key_p95_ms"] = k["p50_ms"], k["p95_ms"]
    finally:
        for p in reversed(procs):
            stop(p)
    return res


def print_perf(results):
    for r in results:
        if r.get("perf"):
            print("\nperf, %s %s %s (self time):" % (r["build"], r["pipeline"], r["activity"]))
            print("  by library:")
            for pct, dso in r["perf"]["libs"]:
                print("  %5.1f%%  %s" % (pct, dso))
            print("  by symbol:")
            for pct, dso, sym in r["perf"]["syms"]:
                print("  %5.1f%%  %-28s %s" % (pct, dso, sym))
            print("  by thread (cores: the share of the run's cores, %.3f):" % r["cores"])
            for pct, comm, libs in r["perf"].get("threads", []):
                print("  %5.1f%%  %.3f  %-16s %s" % (pct, pct / 100 * r["cores"], comm, ", ".join(
                    "%s %.1f%%" % (dso, p) for p, dso in libs)))


OWNERS = ["heap", "arenas", "thread stacks", "anon >= 4 MiB", "anon 1-4 MiB",
          "anon < 1 MiB", "libvpx", "other files", "other"]


def groups(results, labels, pipelines, activities):
    """(label, pipeline, activity, the runs that measured) in table order."""
    for act in activities:
        for pl in pipelines:
            for label in labels:
                yield label, pl, act, [
                    r for r in results if r["build"] == label and
                    r["pipeline"] == pl and r["activity"] == act and "cores" in r]


def median_of(rs, f):
    v = [f(r) for r in rs]
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else float("nan")


def print_table(results, labels, pipelines, activities):
    """Medians per (build, pipeline, activity); `cores @30` scales each
    run's cores to 30 frames/s in (busy and heavy), for runs that a loaded
    machine slowed down. Then where the private memory is (the medians of
    breakdown()'s owners, MiB)."""
    print("| build | pipeline | activity | cores | cores @30 fps | USS MiB peak / median | peak RSS MiB | RSS MiB | anon MiB | file MiB | threads | key p50 / p95 ms | guest cores | frames/s in | stream frames/s | runs |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for label, pl, act, rs in groups(results, labels, pipelines, activities):
        if not rs:
            print("| %s | %s | %s | failed | | | | | | | | | | | | 0 |" % (label, pl, act))
            continue

        def med(f):
            return median_of(rs, f)
        c30 = med(lambda r: r["cores"] * 30 / r["src_fps"]
                  if act != "idle" and r.get("src_fps") else None)
        print("| %s | %s | %s | %.3f | %s | %.1f / %.1f | %.1f | %.1f | %.1f | %.1f | %.0f | %.1f / %.1f | %.3f | %.1f | %.1f | %d |" % (
            label, pl, act, med(lambda r: r["cores"]),
            "%.3f" % c30 if c30 == c30 else "-",
            med(lambda r: r.get("uss_peak_mib")), med(lambda r: r.get("uss_median_mib")),
            med(lambda r: r["hwm_mib"]), med(lambda r: r["rss_mib"]),
            med(lambda r: r.get("anon_mib")), med(lambda r: r.get("file_mib")),
            med(lambda r: r.get("threads")),
            med(lambda r: r.get("key_p50_ms")), med(lambda r: r.get("key_p95_ms")),
            med(lambda r: r["guest_cores"]), med(lambda r: r.get("src_fps")),
            med(lambda r: r.get("stream_fps")), len(rs)))
    print("\nprivate memory by owner, MiB (median of the runs; at the end of the window):\n")
    print("| build | pipeline | activity | " + " | ".join(OWNERS) + " | sum | anonymous mappings >= 1 MiB (size/private MiB, first run) |")
    print("|---|---|---|" + "---|" * (len(OWNERS) + 2))
    for label, pl, act, rs in groups(results, labels, pipelines, activities):
        rs = [r for r in rs if "private_mib" in r]
        if not rs:
            continue
        cols = [median_of(rs, lambda r, k=k: r["private_mib"].get(k, 0.0)) for k in OWNERS]
        print("| %s | %s | %s | %s | %.1f | %s |" % (
            label, pl, act, " | ".join("%.1f" % c for c in cols), sum(cols),
            " ".join("%g/%g" % (a, b) for a, b in rs[0]["anon_maps_mib"])))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", action="append",
                    help="build dir, optionally =LABEL (repeatable; default build)")
    ap.add_argument("--env", action="append", default=[], metavar="LABEL:VAR=VALUE",
                    help="an environment variable of one build's pipeline (repeatable)")
    ap.add_argument("--pipelines", default="transcode-mjpeg,transcode-vp8")
    ap.add_argument("--activities", default="busy,heavy,idle")
    ap.add_argument("--secs", type=float, default=60)
    ap.add_argument("--warmup", type=float, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--perf", type=float, default=0, metavar="SECS")
    ap.add_argument("--perf-top", type=int, default=10)
    ap.add_argument("--json", help="write every run here")
    ap.add_argument("--from-json", metavar="FILE",
                    help="only print the tables of an earlier --json")
    args = ap.parse_args()
    if args.from_json:
        with open(args.from_json) as f:
            results = json.load(f)
        print_table(results, list(dict.fromkeys(r["build"] for r in results)),
                    list(dict.fromkeys(r["pipeline"] for r in results)),
                    list(dict.fromkeys(r["activity"] for r in results)))
        print_perf(results)
        return
    builds = []
    for b in args.build or ["build"]:
        path, _, label = b.partition("=")
        path = os.path.abspath(path)
        builds.append((path, label or os.path.basename(path)))
    envs = {}
    for e in args.env:
        label, _, kv = e.partition(":")
        var, eq, val = kv.partition("=")
        if not eq or label not in [lb for _, lb in builds]:
            sys.exit("--env %s: not LABEL:VAR=VALUE of a --build label" % e)
        envs.setdefault(label, {})[var] = val
    if args.perf and not shutil.which("perf"):
        sys.exit("--perf: no perf")
    pipelines = args.pipelines.split(",")
    activities = args.activities.split(",")
    results = []
    tmp = tempfile.mkdtemp(prefix="session-cost-")
    try:
        for rep in range(args.repeat):
            for act in activities:
                for pl in pipelines:
                    for path, label in builds:
                        try:
                            r = run_one(args, path, pl, act, tmp,
                                        args.perf if rep == 0 else 0,
                                        envs.get(label))
                        except RuntimeError as e:
                            r = {"pipeline": pl, "activity": act, "error": str(e)}
                        r["build"] = label
                        r["repeat"] = rep
                        results.append(r)
                        print("# %s %s %s run %d: %s" % (
                            label, pl, act, rep + 1,
                            r.get("error") or
                            "%.3f cores, USS peak %.1f MiB, peak RSS %.1f MiB, %.1f frames/s" %
                            (r["cores"], r["uss_peak_mib"], r["hwm_mib"],
                             r.get("src_fps", float("nan")))),
                            file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print("%d cores, %d repeats of %.0f s, median; load %s" % (
        os.cpu_count(), args.repeat, args.secs,
        " ".join(open("/proc/loadavg").read().split()[:3])))
    print_table(results, [label for _, label in builds], pipelines, activities)
    print_perf(results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
