#!/usr/bin/python3
"""bench/sessions.py cannot rot: a short run (transcode-mjpeg, busy and
idle desktops, N=1 and 2, a few seconds each) must measure every number the
"Sessions per host" table and the capacity table use, and its report must
write both blocks and the plot (into copies of the docs: the run's own
docs/benchmarks/history/DAY-sessions.md, listed in the history's index).
And the blocks in the committed history file of that run and in
docs/operator-guide.md must be exactly what the report writes from the
committed docs/benchmarks/sessions.json: the capacity table comes from the
benchmark, not from hand edits.

  test-sessions.py   (GST_SPICE_SOURCE_DIR, GST_SPICE_BUILD_DIR from meson)
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SRC = os.environ.get("GST_SPICE_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("GST_SPICE_BUILD_DIR") or os.path.join(SRC, "build")
sys.path.insert(0, os.path.join(SRC, "tests", "install"))
sys.path.insert(0, os.path.join(SRC, "bench"))
from optest import check, finish, skip_if_sanitized  # noqa: E402
import sessions  # noqa: E402

SCRIPT = os.path.join(SRC, "bench", "sessions.py")


def block(path, name):
    text = open(path).read()
    m = re.search(r"<!-- %s:begin -->\n(.*?)<!-- %s:end -->" % (name, name), text, re.S)
    return m.group(1) if m else None


def main():
    # a benchmark of sanitizer builds measures the sanitizer; the first pass
    # of tools/run-tests.sh covers the script
    skip_if_sanitized(BUILD)
    tmp = tempfile.mkdtemp(prefix="gst-spice-sessions-")
    try:
        out = os.path.join(tmp, "run")
        r = subprocess.run([sys.executable, SCRIPT, "run", "--build", BUILD,
                            "--pipelines", "transcode-mjpeg", "--counts", "1,2",
                            "--activities", "busy,idle", "--samples", "3",
                            "--measure-s", "2", "--fps-s", "1.5", "--out", out],
                           capture_output=True, text=True, timeout=400)
        print(r.stderr[-3000:])
        check(r.returncode == 0, "sessions.py run exits 0 (%d)" % r.returncode)
        res = json.load(open(os.path.join(out, "sessions.json")))
        cells = {(c["activity"], c["n"]): c for c in res["cells"]}
        check(sorted(cells) == [("busy", 1), ("busy", 2), ("idle", 1), ("idle", 2)],
              "four cells: %s" % sorted(cells))
        for key, c in sorted(cells.items()):
            what = "%s N=%d" % key
            check(c["status"] == "ok", "%s: ok (%s)" % (what, c.get("reason")))
            check(len(c.get("pipeline_cores") or []) == key[1],
                  "%s: one CPU figure per pipeline" % what)
            check((c.get("cost_window_s") or 0) >= 1.0, "%s: a cost window" % what)
            check((c.get("pipeline_peak_rss_mib") or {}).get("max", 0) > 10,
                  "%s: peak RSS of a real pipeline" % what)
            check((c.get("pipeline_threads") or 0) > 1, "%s: its threads" % what)
            check(c.get("guest_cores_per_session") is not None and
                  c.get("client_cores_per_session") is not None and
                  c.get("others_cores") is not None,
                  "%s: guests, clients and others measured apart" % what)
            k = c.get("keypress") or {}
            check(k.get("n") == 3 * key[1] and 0 < k.get("p50_ms", 0) <= k.get("p95_ms", 0),
                  "%s: %d pooled key presses, p50 <= p95 (%s)" % (what, 3 * key[1], k))
            if key[0] == "busy":
                check((c.get("pipeline_cores_per_session") or 0) > 0.01,
                      "%s: a busy pipeline uses CPU (%s)" % (what,
                                                             c.get("pipeline_cores_per_session")))
                fps = c.get("client_fps") or {}
                check(len(fps.get("per_client") or []) == key[1] and (fps.get("min") or 0) > 1,
                      "%s: frames/s at every client (%s)" % (what, fps))
            else:
                check("client_fps" not in c, "%s: no frame count on an idle desktop" % what)
        check(busy_beats_idle(cells), "a busy session costs more than an idle one")

        check_report(tmp, os.path.join(out, "sessions.json"), res)
        check_committed(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish()


def copy_docs(tmp):
    """docs/operator-guide.md and docs/benchmarks/history/ with its index in
    @tmp (the layout the report links within); (history, guide)."""
    docs = os.path.join(tmp, "docs")
    hist = os.path.join(docs, "benchmarks", "history")
    shutil.rmtree(docs, ignore_errors=True)
    os.makedirs(hist)
    shutil.copy(os.path.join(sessions.DOCS, "README.md"), hist)
    shutil.copy(sessions.GUIDE, docs)
    return hist, os.path.join(docs, "operator-guide.md")


def check_report(tmp, results_json, res):
    """The report of the short run, into a copy of the docs: the run's own
    history/DAY-sessions.md (listed in the index), its plot, the guide's
    capacity table linking it; a second report changes nothing."""
    hist, guide = copy_docs(tmp)
    argv = [sys.executable, SCRIPT, "report", results_json, "--docs", hist, "--guide", guide]
    r = subprocess.run(argv, capture_output=True, text=True)
    check(r.returncode == 0, "report exits 0 %s" % r.stderr[-1500:])
    docs, png = sessions.report_files(res, hist)
    readme = os.path.join(hist, "README.md")
    if not check(os.path.exists(docs), "the run's own %s" % os.path.relpath(docs, tmp)):
        return
    once = open(docs).read(), open(guide).read(), open(readme).read()
    subprocess.run(argv, capture_output=True, text=True)
    check((open(docs).read(), open(guide).read(), open(readme).read()) == once,
          "a second report replaces its blocks, nothing else")
    check("](%s)" % os.path.basename(docs) in open(readme).read(),
          "history/README.md lists the run")
    b = block(docs, "sessions") or ""
    check(b.count("\n| transcode-mjpeg |") == 4, "the N table has the four cells")
    check("![sessions per host](../%s)" % os.path.basename(png) in b,
          "the N section shows the plot (docs/benchmarks/%s)" % os.path.basename(png))
    cap = block(guide, "capacity") or ""
    check(re.search(r"\| transcode-mjpeg \| busy \| [0-9.]+ \| \d+ \|", cap),
          "the capacity table has the busy row")
    check("| transcode-mjpeg | idle |" in cap, "and the idle row")
    check("](benchmarks/history/%s)" % os.path.basename(docs) in cap,
          "the capacity table links the run's N table")
    check(os.path.getsize(png) > 10000 and open(png, "rb").read(4) == b"\x89PNG",
          "the plot is a PNG")


def check_committed(tmp):
    """The committed docs are the report of the committed results: the N
    table of docs/benchmarks/sessions.json's run in its history file, and
    the operator guide's capacity table."""
    committed = sessions.RESULTS
    if not check(os.path.exists(committed), "docs/benchmarks/sessions.json is committed"):
        return
    results = json.load(open(committed))
    hist, guide = copy_docs(tmp)
    mine = os.path.join(os.path.dirname(hist), "sessions.json")
    shutil.copy(committed, mine)
    subprocess.run([sys.executable, SCRIPT, "report", mine, "--docs", hist, "--guide", guide],
                   capture_output=True, text=True)
    theirs = sessions.report_files(results, sessions.DOCS)[0]
    for name, got, want in (("sessions", sessions.report_files(results, hist)[0], theirs),
                            ("capacity", guide, sessions.GUIDE)):
        b = block(want, name) if os.path.exists(want) else None
        check(b is not None and b == block(got, name),
              "%s's %s block is what the report writes from sessions.json"
              % (os.path.relpath(want, SRC), name))


def busy_beats_idle(cells):
    b = cells.get(("busy", 1), {}).get("pipeline_cores_per_session")
    i = cells.get(("idle", 1), {}).get("pipeline_cores_per_session")
    return b is not None and i is not None and b > i


main()
