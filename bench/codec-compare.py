#!/usr/bin/python3
"""gst-spice encoder comparison for codec researchers (docs/benchmarks.md,
"Encoder comparison"; docs/user-guide.md, "Codec researchers").

  codec-compare.py run    [--encoders jpegenc-70,vp8enc,...] [--encoder NAME=DESC ...]
                          [--profiles lan,80/10,150/2] [--activities busy,video]
                          [--samples 10] [--quality 5] [--out DIR] [--no-relay]
                          [--docs docs/benchmarks/history --stem codec-... --title T]
  codec-compare.py report DIR [--docs docs/benchmarks/history] [--stem S] [--title T]
  codec-compare.py list                       the built-in encoders and what they need

Each encoder is a stream branch given as a spicestreamenc `encoder=`
description.  For each one the tool writes DIR/pipelines/NAME.pipeline, a
copy of pipelines/transcode-vp8.pipeline with that description in place of
its encoder, and a modes file DIR/modes.ini with one rig mode per encoder
(`enc-NAME`) plus the reference rows `relay-all-mjpeg` and `relay-all-vp8`
(spice-server's own MJPEG and VP8 streams, `--streaming-video all`, one
codec each, through the same client).  It then runs the latency rig
(bench/rig/rig.py run --quality S) over the chosen links and activities:
per cell keypress latency, CPU, RSS, bytes, and the quality of every frame
the client showed during S seconds of motion (PSNR/SSIM against the guest's
own render, frame age, shown fps, bitrate).

An encoder that is not installed, whose output spicesink cannot take (no
SPICE codec for it), whose stream no client here can decode, or whose
pipeline fails, is reported in the table with the reason; its cells are not
a crash of the tool.
"""
import argparse
import json
import math
import os
import re
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)
RIG = os.path.join(HERE, "rig", "rig.py")
sys.path.insert(0, os.path.join(HERE, "rig"))
import rig  # noqa: E402  (the docs block writer, shared with the latency rig)
TEMPLATE = os.path.join(SOURCE, "pipelines", "transcode-vp8.pipeline")

# name, description (spicestreamenc encoder=)
BUILTIN = [
    ("jpegenc-70", "jpegenc quality=70"),
    ("vp8enc", "vp8enc deadline=1 cpu-used=16 end-usage=cbr target-bitrate=2000000 "
               "keyframe-max-dist=600 lag-in-frames=0 error-resilient=default threads=1"),
    ("vp9enc", "vp9enc deadline=1 cpu-used=8 row-mt=true end-usage=cbr "
               "target-bitrate=1500000 lag-in-frames=0"),
    ("x264enc", "x264enc tune=zerolatency speed-preset=ultrafast bitrate=2000 key-int-max=300 "
                "! video/x-h264,stream-format=byte-stream,alignment=au ! h264parse"),
    ("openh264enc", "openh264enc usage-type=screen rate-control=bitrate bitrate=2000000 "
                    "complexity=low ! video/x-h264,stream-format=byte-stream,alignment=au "
                    "! h264parse"),
    ("av1enc", "av1enc usage-profile=realtime cpu-used=10 target-bitrate=1500 end-usage=cbr"),
]
DEFAULT_ENCODERS = [n for n, _ in BUILTIN]

# encoder factory -> (SPICE codec, client decoders spice-gtk can use for it);
# None: SPICE has no codec type for this output (spice/enums.h
# SpiceVideoCodecType: MJPEG, VP8, H264, VP9, H265; spicesink streams the
# first four)
CODECS = {
    "jpegenc": ("MJPEG", []),          # spice-gtk decodes MJPEG itself
    "vp8enc": ("VP8", ["vp8dec"]),
    "vp9enc": ("VP9", ["vp9dec"]),
    "x264enc": ("H264", ["avdec_h264", "openh264dec"]),
    "openh264enc": ("H264", ["avdec_h264", "openh264dec"]),
    "av1enc": (None, []),
    "svtav1enc": (None, []),
    "rav1enc": (None, []),
    "x265enc": (None, []),
}

RELAY_MODES = {
    "relay-all-mjpeg": "--streaming-video all --video-codecs spice:mjpeg;",
    "relay-all-vp8": "--streaming-video all --video-codecs gstreamer:vp8;",
}


def log(msg):
    sys.stderr.write("[codec-compare %s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


def have_element(name, env):
    r = subprocess.run(["gst-inspect-1.0", "--exists", name], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return r.returncode == 0


def precheck(desc, env):
    """(ok, note): can this description run and be streamed to a client here?"""
    factory = desc.split()[0]
    if not have_element(factory, env):
        return False, "not installed (no GStreamer element %s)" % factory
    codec, decoders = CODECS.get(factory, ("?", []))
    if codec is None:
        return False, ("spicesink cannot stream it: SPICE has no codec type for %s's output "
                       "(spice-protocol knows MJPEG, VP8, H264, VP9, H265)" % factory)
    if decoders and not any(have_element(d, env) for d in decoders):
        return True, ("no client here can decode %s (needs %s): the area will go as draws"
                      % (codec, " or ".join(decoders)))
    return True, codec if codec != "?" else "unknown codec: run decides"


def make_pipeline(desc, path):
    with open(TEMPLATE) as f:
        text = f.read()
    if '"' in desc:
        raise ValueError("an encoder description may not contain double quotes: %s" % desc)
    new, n = re.subn(r'encoder="[^"]*"', lambda m: 'encoder="%s"' % desc, text, flags=re.S)
    if n != 1:
        raise RuntimeError("%s: expected one encoder=\"...\"" % TEMPLATE)
    head = "# generated by bench/codec-compare.py from pipelines/transcode-vp8.pipeline\n"
    with open(path, "w") as f:
        f.write(head + new)


def write_modes(out, encoders, relay):
    lines = ["# generated by bench/codec-compare.py (bench/rig/modes.ini format)", ""]
    if relay:
        for name, gargs in RELAY_MODES.items():
            lines += ["[%s]" % name, "guest_args = %s" % gargs, ""]
    server = ("{runner} --stats-interval 1 {pipeline} -D UPSTREAM=spice://127.0.0.1:{guest_port} "
              "-D LISTEN_ADDRESS={server_ip} -D LISTEN_PORT={client_port} -D PASSWORD={password}")
    for name, desc in encoders:
        lines += ["[enc-%s]" % name, "guest_args = --streaming-video off", "guest_password = none",
                  "pipeline = %s" % os.path.join(out, "pipelines", name + ".pipeline"),
                  "server_cmd = %s" % server, ""]
    path = os.path.join(out, "modes.ini")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return path


def parse_encoders(args):
    builtin = dict(BUILTIN)
    chosen = []
    if args.encoders:
        for n in [x.strip() for x in args.encoders.split(",") if x.strip()]:
            if n not in builtin:
                raise SystemExit("unknown built-in encoder %s (see: codec-compare.py list)" % n)
            chosen.append((n, builtin[n]))
    for e in args.encoder or []:
        name, sep, desc = e.partition("=")
        if not sep or not re.match(r"^[A-Za-z0-9_.-]+$", name) or not desc.strip():
            raise SystemExit("--encoder wants NAME=DESCRIPTION, got %r" % e)
        chosen.append((name, desc.strip()))
    if not args.encoders and not args.encoder:
        chosen = list(BUILTIN)
    return chosen


def gst_env(build):
    env = dict(os.environ)
    env["GST_PLUGIN_PATH"] = os.path.join(build, "plugins")
    return env


def cmd_run(args):
    if args.docs:
        rig.check_docs(args.docs)
    encoders = parse_encoders(args)
    args.build = os.path.abspath(args.build)
    if args.out is None:
        args.out = "/tmp/gst-spice-codecs-" + time.strftime("%Y%m%d-%H%M%S")
    out = os.path.abspath(args.out)
    os.makedirs(os.path.join(out, "pipelines"), exist_ok=True)
    env = gst_env(args.build)
    checks, runnable = {}, []
    for name, desc in encoders:
        ok, note = precheck(desc, env)
        checks[name] = {"description": desc, "runnable": ok, "note": note}
        log("%s: %s" % (name, note if ok else "NOT RUN: " + note))
        make_pipeline(desc, os.path.join(out, "pipelines", name + ".pipeline"))
        if ok or args.run_all:
            runnable.append((name, desc))
    modes_file = write_modes(out, runnable, not args.no_relay)
    modes = ([] if args.no_relay else list(RELAY_MODES)) + ["enc-" + n for n, _ in runnable]
    with open(os.path.join(out, "compare.json"), "w") as f:
        json.dump({"encoders": [[n, d] for n, d in encoders], "checks": checks,
                   "command": " ".join(shlex.quote(a) for a in sys.argv)}, f, indent=1)
    rc = 0
    if modes:
        rig_argv = [sys.executable, RIG, "run", "--build", args.build, "--modes-file", modes_file,
                    "--modes", ",".join(modes), "--profiles", args.profiles,
                    "--activities", args.activities, "--samples", str(args.samples),
                    "--quality", str(args.quality), "--out", os.path.join(out, "run")]
        rig_argv += args.rig_args or []
        log("running: %s" % " ".join(shlex.quote(a) for a in rig_argv))
        rc = subprocess.run(rig_argv).returncode
        if rc not in (0, 1):
            log("rig exited with %d" % rc)
    else:
        log("nothing to run")
    if args.docs or args.print:
        args.dir = out
        cmd_report(args)
    return 0 if rc in (0, 1) else rc


# ---- report -----------------------------------------------------------------------

def last_stats(celldir):
    """The pipeline's last `stats:` line as {element: {field: value}}."""
    path = os.path.join(celldir, "pipeline.log")
    try:
        with open(path, errors="replace") as f:
            lines = [x for x in f if "stats: " in x]
    except OSError:
        return None
    if not lines:
        return None
    out = {}
    for part in lines[-1].split("stats: ", 1)[1].split("; "):
        el, _, fields = part.partition(":")
        out[el.strip()] = {k: float(v) for k, v in re.findall(r"(\S+)=([-0-9.e+]+)", fields)}
    return out


def pipeline_error(celldir):
    path = os.path.join(celldir, "pipeline.log")
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    bad = [x for x in lines if re.search(r"not.negotiated|could not link|no element|"
                                          r"erroneous pipeline|error", x, re.I)]
    return bad[-1].strip()[:200] if bad else None


def classify(cell, check, rundir):
    """status text of one encoder cell: streamed, or why not."""
    mode = cell["mode"]
    if mode.startswith("relay"):
        return "relay" if cell.get("status") == "ok" else "error: %s" % cell.get("reason")
    celldir = os.path.join(rundir, cell["profile"].replace("/", "-"), cell["activity"], mode)
    if cell.get("status") != "ok":
        err = pipeline_error(celldir)
        why = cell.get("reason") or cell.get("status")
        if check and not check.get("runnable"):
            why = check["note"]
        return "**failed**: %s%s" % (why, " (%s)" % err if err else "")
    st = last_stats(celldir) or {}
    sink = st.get("s", {})
    frames_in = sink.get("stream-frames-in")
    if frames_in is not None and frames_in == 0:
        note = check.get("note", "") if check else ""
        if "decode" in note:
            return "**not streamed**: %s" % note
        return "**not streamed**: no stream frame reached spicesink (the area went as draws)"
    return "streamed"


def rows(results, compare, rundir):
    checks = compare.get("checks", {})
    out = []
    cells = {(c["profile"], c["activity"], c["mode"]): c for c in results["cells"]}
    order = list(RELAY_MODES) + ["enc-" + n for n, _ in compare.get("encoders", [])]
    profiles = list(dict.fromkeys(c["profile"] for c in results["cells"]))
    acts = list(dict.fromkeys(c["activity"] for c in results["cells"]))
    for prof in profiles:
        for act in acts:
            for mode in order:
                name = mode[4:] if mode.startswith("enc-") else mode
                c = cells.get((prof, act, mode))
                chk = checks.get(name)
                if c is None:
                    if chk and not chk["runnable"]:
                        out.append({"profile": prof, "activity": act, "name": name,
                                    "status": "**not run**: " + chk["note"]})
                    continue
                k = c.get("keypress") or {}
                q = k.get("quality") or {}
                out.append({"profile": prof, "activity": act, "name": name,
                            "status": classify(c, chk, rundir), "k": k, "q": q, "cell": c})
    return out


def f(v, fmtstr="%.1f"):
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else fmtstr % v


def psnr(v):
    return "∞" if v is None else "%.1f" % v


def table(rs):
    lines = ["| link | activity | stream | status | SSIM mean / p5 | PSNR dB mean / p5 | "
             "text SSIM p5 | shown fps | Mbit/s | frame age p50 / p95 ms | keypress p50 / p95 ms | "
             "pipeline cores | RSS MiB |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rs:
        k, q, c = r.get("k") or {}, r.get("q") or {}, r.get("cell") or {}
        if not k:
            lines.append("| %s | %s | %s | %s |  |  |  |  |  |  |  |  |  |" % (
                r["profile"], r["activity"], r["name"], r["status"]))
            continue
        if q.get("frames"):
            ps = "%s / %s" % (psnr(q.get("psnr_db_mean")), psnr(q.get("psnr_db_p5")))
        else:
            ps = "–"
        status = r["status"] + (" (quality: %s)" % q["error"] if q.get("error") else "")
        rss = c.get("pipeline_peak_rss_mib") or c.get("guest_peak_rss_mib")
        cores = c.get("pipeline_cores") if c.get("pipeline_cores") is not None else c.get("guest_cores")
        lines.append("| %s | %s | %s | %s | %s / %s | %s | %s | %s | %s | %s / %s | %s / %s | %s | %s |" % (
            r["profile"], r["activity"], r["name"], status,
            f(q.get("ssim_mean"), "%.3f"), f(q.get("ssim_p5"), "%.3f"), ps,
            f(q.get("text_ssim_p5"), "%.3f"), f(q.get("shown_fps")), f(q.get("mbit_s"), "%.2f"),
            f(q.get("age_ms_p50"), "%.0f"), f(q.get("age_ms_p95"), "%.0f"),
            f(k.get("p50_ms")), f(k.get("p95_ms")), f(cores, "%.2f"), f(rss, "%.0f")))
    return "\n".join(lines)


def plots(rs, outdir, stem):
    """Per activity: SSIM mean against Mbit/s, and against keypress p50."""
    os.makedirs(outdir, exist_ok=True)
    made = []
    acts = list(dict.fromkeys(r["activity"] for r in rs))
    profiles = list(dict.fromkeys(r["profile"] for r in rs))
    for act in acts:
        pts = [r for r in rs if r["activity"] == act and (r.get("q") or {}).get("ssim_mean") is not None]
        if not pts:
            continue
        for kind, xlabel, xkey, logx in (
                ("rate", "Mbit/s received while moving", lambda r: r["q"].get("mbit_s"), False),
                ("latency", "keypress p50 ms (log)", lambda r: r["k"].get("p50_ms"), True)):
            dat = os.path.join(outdir, "%s-%s-%s.dat" % (stem, act, kind))
            png = os.path.join(outdir, "%s-%s-%s.png" % (stem, act, kind))
            plot = []
            with open(dat, "w") as fo:
                for i, prof in enumerate(profiles):
                    fo.write("# %s\n" % prof)
                    for r in pts:
                        x = xkey(r)
                        if r["profile"] == prof and x is not None:
                            fo.write("%g %g %s\n" % (max(x, 0.01), r["q"]["ssim_mean"], r["name"]))
                    fo.write("\n\n")
                    plot.append("'%s' index %d using 1:2 with points pt %d ps 1.5 lc %d title '%s', "
                                "'' index %d using 1:2:3 with labels offset 0.6,0.5 left "
                                "font 'Sans,8' notitle" % (dat, i, 5 + 2 * i, i + 1, prof, i))
            gp = ["set terminal pngcairo size 900,520 font 'Sans,10'",
                  "set output '%s'" % png,
                  "set title '%s: SSIM of the shown frames (mean) against %s' noenhanced"
                  % (act, "bitrate" if kind == "rate" else "keypress latency"),
                  "set xlabel '%s' noenhanced" % xlabel, "set ylabel 'SSIM (mean)'",
                  "set key outside right top noenhanced", "set grid", "set offsets graph 0.05, graph 0.3, graph 0.05, graph 0.05"]
            if logx:
                gp.append("set logscale x")
            gp.append("plot " + ", ".join(plot))
            r = subprocess.run(["gnuplot"], input="\n".join(gp) + "\n", text=True, capture_output=True)
            if r.returncode == 0:
                made.append(png)
            else:
                log("gnuplot failed for %s %s: %s" % (act, kind, r.stderr.strip()))
            os.unlink(dat)
    return made


def cmd_report(args):
    out = os.path.abspath(args.dir)
    rundir = os.path.join(out, "run")
    with open(os.path.join(out, "compare.json")) as fi:
        compare = json.load(fi)
    try:
        with open(os.path.join(rundir, "results.json")) as fi:
            results = json.load(fi)
    except OSError:
        results = {"cells": [], "machine": {}, "settings": {}}
    rs = rows(results, compare, rundir)
    m = results.get("machine", {})
    stem = args.stem or "codec-" + m.get("date", "")[11:16].replace(":", "")
    if args.docs:
        mdpath, stem, pngdir = rig.report_target(args.docs, stem, m.get("date"))
    else:
        pngdir = os.path.join(out, "plots")
    pngs = plots(rs, pngdir, stem)
    s = results.get("settings", {})
    md = ["### %s" % (args.title or "Encoder comparison, %s" % m.get("date", "")), ""]
    md.append("- Command: `%s`" % compare.get("command"))
    if m:
        md.append("- Machine: %s cores, %s, kernel %s, cc %s, load average at start %s; %s." % (
            m.get("nproc"), m.get("cpu"), m.get("kernel"), m.get("cc"),
            "/".join(str(x) for x in m.get("loadavg_at_start", [])), m.get("date")))
    md.append("- Per cell: %s keypress samples, then %s s of motion scored frame by frame "
              "(SSIM/PSNR over the activity picture without its stamp rows, text SSIM over the "
              "64-px text strip left of it; PSNR ∞ = every frame identical)." % (
                  s.get("samples"), s.get("quality_s")))
    md.append("- Encoders (`spicestreamenc encoder=`):")
    for n, d in compare.get("encoders", []):
        chk = compare.get("checks", {}).get(n, {})
        md.append("  - `%s`: `%s`%s" % (n, d, "" if chk.get("runnable", True) and
                                          "decode" not in chk.get("note", "")
                                          else " — " + chk.get("note", "")))
    md += ["", table(rs), ""]
    for p in pngs:
        rel = os.path.relpath(p, os.path.dirname(mdpath)) if args.docs else p
        md += ["![%s](%s)" % (os.path.basename(p), rel), ""]
    text = "\n".join(md)
    if args.docs:
        rig.write_report(mdpath, "codec:" + stem, text,
                         args.title or "Encoder comparison, %s" % m.get("date", ""), m.get("date", ""))
        with open(os.path.join(pngdir, stem + ".json"), "w") as fo:
            json.dump({"compare": compare, "results": results}, fo, indent=1)
        log("updated %s (%d plots in %s)" % (mdpath, len(pngs), pngdir))
    else:
        print(text)
    return 0


def cmd_list(args):
    env = gst_env(os.path.abspath(args.build))
    for name, desc in BUILTIN:
        ok, note = precheck(desc, env)
        print("%-12s %s\n             -> %s%s" % (name, desc, "" if ok else "not run: ", note))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--encoders", default=None,
                   help="comma list of built-in encoders (default: all of %s)" % ",".join(DEFAULT_ENCODERS))
    r.add_argument("--encoder", action="append",
                   help="NAME=DESCRIPTION, a stream branch of your own (repeatable)")
    r.add_argument("--profiles", default="lan,80/10,150/2")
    r.add_argument("--activities", default="busy,video")
    r.add_argument("--samples", type=int, default=10)
    r.add_argument("--quality", type=float, default=5.0, help="s of scored motion per cell")
    r.add_argument("--no-relay", action="store_true", help="without the relay-all reference rows")
    r.add_argument("--run-all", action="store_true",
                   help="also run encoders the pre-check rejects (to see how they fail)")
    r.add_argument("--build", default=os.path.join(SOURCE, "build"))
    r.add_argument("--out", default=None)
    r.add_argument("--docs", default=None,
                   help="docs/benchmarks/history: the report as a file of the run's own "
                   "(DAY-STEM.md, see rig.py report); or a markdown file to put it in")
    r.add_argument("--print", action="store_true", help="print the report")
    r.add_argument("--stem", default=None)
    r.add_argument("--title", default=None)
    r.add_argument("--rig-args", nargs=argparse.REMAINDER,
                   help="further bench/rig/rig.py run options (last on the line)")
    p = sub.add_parser("report")
    p.add_argument("dir")
    p.add_argument("--docs", default=None)
    p.add_argument("--stem", default=None)
    p.add_argument("--title", default=None)
    li = sub.add_parser("list")
    li.add_argument("--build", default=os.path.join(SOURCE, "build"))
    args = ap.parse_args()
    if args.cmd == "run":
        return cmd_run(args)
    if args.cmd == "report":
        return cmd_report(args)
    return cmd_list(args)


if __name__ == "__main__":
    sys.exit(main())
