#!/usr/bin/env python3
# Benchmark docs a reader can follow: docs/benchmarks.md is a first screen
# of headline figures (chosen by hand, no report blocks) and the method;
# every dated run is a file of its own in docs/benchmarks/history/, listed
# in its README.md newest first. Checked here:
#  - every relative link and image of README.md, docs/*.md and the history
#    points at a file that exists (and a .md link's #anchor at a heading);
#  - the history's files and its index agree (each listed once, newest day
#    first) and docs/benchmarks.md holds no report block;
#  - the reports write there: bench/rig/rig.py report and
#    bench/codec-compare.py report, run on committed JSON into a copy of
#    docs/benchmarks/, make the run's DAY-STEM.md with its block, plots
#    that its links reach and an index line at the top of its day; a
#    second report changes nothing; --docs docs/benchmarks.md is refused;
#    bench/codec-rd.py report on its committed run makes the committed
#    tables again, and its BD-rate is exact where two curves are a
#    constant rate ratio apart (-20 % for 0.8x, +50 % for 1.5x).
#    (bench/sessions.py: tests/scale/test-sessions.py.)
#
#   test-bench-docs.py SOURCE_DIR
# SPDX-License-Identifier: LGPL-2.1-or-later

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SRC = os.path.abspath(sys.argv[1])
sys.path.insert(0, os.path.join(SRC, "tests", "install"))
from optest import check, finish  # noqa: E402

BENCH = os.path.join(SRC, "docs", "benchmarks")
HISTORY = os.path.join(BENCH, "history")
HEADLINE = os.path.join(SRC, "docs", "benchmarks.md")
INDEX_MARK = "<!-- history:index -->"


def slug(heading):
    """GitHub's anchor of a heading."""
    h = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return h.replace(" ", "-")


def anchors(path):
    out, seen, fenced = set(), {}, False
    for line in open(path):
        if line.startswith("```"):
            fenced = not fenced
        m = None if fenced else re.match(r"#+ (.*)", line)
        if m:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else "%s-%d" % (s, n))
    return out


def links(path):
    """The relative link targets of @path, outside code blocks."""
    text = re.sub(r"```.*?```", "", open(path).read(), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    return [u for u in re.findall(r"\]\(([^)\s]+)\)", text)
            if not re.match(r"[a-z]+:", u)]


def check_links():
    files = ([os.path.join(SRC, "README.md")] +
             sorted(glob.glob(os.path.join(SRC, "docs", "*.md"))) +
             sorted(glob.glob(os.path.join(HISTORY, "*.md"))))
    bad = []
    for f in files:
        for url in links(f):
            path, _, frag = url.partition("#")
            target = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
            if not os.path.exists(target):
                bad.append("%s: %s (no such file)" % (os.path.relpath(f, SRC), url))
            elif frag and target.endswith(".md") and frag not in anchors(target):
                bad.append("%s: %s (no such heading)" % (os.path.relpath(f, SRC), url))
    check(not bad, "every relative link of %d docs reaches its file and heading%s"
          % (len(files), "".join("\n     " + b for b in bad)))


def index_entries(readme):
    text = open(readme).read()
    if INDEX_MARK not in text:
        return None
    return re.findall(r"^- \[([^\]]+)\]\(([^)]+)\)", text.split(INDEX_MARK, 1)[1], re.M)


def check_history():
    runs = sorted(os.path.basename(f) for f in glob.glob(os.path.join(HISTORY, "*.md"))
                  if os.path.basename(f) != "README.md")
    check(len(runs) > 10, "docs/benchmarks/history/ holds the dated runs (%d)" % len(runs))
    named = [r for r in runs if not re.match(r"^\d{4}-\d\d-\d\d-[a-z0-9-]+\.md$", r)]
    check(not named, "every run is named DATE-TOPIC.md %s" % named)
    entries = index_entries(os.path.join(HISTORY, "README.md")) or []
    listed = [target for _, target in entries]
    check(sorted(listed) == runs and len(set(listed)) == len(listed),
          "history/README.md lists each run once (missing %s, extra %s)"
          % (sorted(set(runs) - set(listed)), sorted(set(listed) - set(runs))))
    days = [t[:10] for t in listed]
    check(days == sorted(days, reverse=True), "the index is newest day first")
    head = open(HEADLINE).read()
    blocks = re.findall(r"<!-- ([a-z]+:[^ ]+):begin -->", head)
    check(not blocks, "docs/benchmarks.md holds no report block (%s)" % blocks)
    check(head.index("## At a glance") < head.index("## Method"),
          "docs/benchmarks.md: the headline figures come before the method")


def copy_tree(tmp):
    """docs/benchmarks.md, a history directory with the index only, and an
    empty docs/benchmarks/ in @tmp; the path of the history directory."""
    hist = os.path.join(tmp, "docs", "benchmarks", "history")
    os.makedirs(hist)
    shutil.copy(HEADLINE, os.path.join(tmp, "docs"))
    shutil.copy(os.path.join(HISTORY, "README.md"), hist)
    return hist


def run(argv):
    r = subprocess.run([sys.executable] + argv, capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def drop_entry(readme, name):
    """@readme's index without the entry of @name (its line and the
    indented lines that go on with it), as before that run was reported"""
    out, skipping = [], False
    for line in open(readme).read().splitlines(True):
        if line.startswith("- [%s](%s)" % (name, name)):
            skipping = True
            continue
        if skipping and line.startswith("  "):
            continue
        skipping = False
        out.append(line)
    with open(readme, "w") as f:
        f.write("".join(out))


def check_report(hist, name, argv, marker, date):
    """A report with --docs @hist made history/@name with the block
    @marker, plots its links reach, and an index line at the top of @date's
    runs (the index copied without it: a later run of the same day may be
    listed above it); the same report again changes nothing."""
    drop_entry(os.path.join(hist, "README.md"), name)
    rc, out = run(argv + ["--docs", hist])
    check(rc == 0, "%s report exits 0%s" % (os.path.basename(argv[0]),
                                            "" if rc == 0 else ": " + out[-1500:]))
    md = os.path.join(hist, name)
    if not check(os.path.exists(md), "the run's own file history/%s" % name):
        return
    text = open(md).read()
    check("<!-- %s:begin -->" % marker in text and "<!-- %s:end -->" % marker in text,
          "%s holds the block %s" % (name, marker))
    imgs = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    check(imgs and all(i.startswith("../") and
                       os.path.exists(os.path.normpath(os.path.join(hist, i))) for i in imgs),
          "%s: %d plots in docs/benchmarks/, linked ../NAME.png" % (name, len(imgs)))
    readme = os.path.join(hist, "README.md")
    listed = [t for _, t in index_entries(readme)]
    first_of_day = next((t for t in listed if t[:10] == date), None)
    check(first_of_day == name, "history/README.md lists %s first of %s (%s)"
          % (name, date, listed[:3]))
    before = open(md).read(), open(readme).read()
    rc, out = run(argv + ["--docs", hist])
    check(rc == 0 and (open(md).read(), open(readme).read()) == before,
          "a second report replaces its block and adds no index line")


def check_bd_rate():
    """bench/codec-rd.py's BD-rate on curves a constant rate ratio apart"""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "codec_rd", os.path.join(SRC, "bench", "codec-rd.py"))
    rd = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rd)
    # a curve that flattens (where one cubic through all points overshoots)
    ref = [(0.25, 27.6), (0.5, 29.9), (1.0, 33.3), (2.0, 33.8), (4.0, 33.9)]
    for ratio, want in ((0.8, -20.0), (1.5, 50.0)):
        got = rd.bd_rate(ref, [(r * ratio, q) for r, q in ref])
        check(got is not None and abs(got - want) < 1e-6,
              "BD-rate of the same curve at %.1fx the rate: %s %% (%+.0f %%)"
              % (ratio, got, want))
    check(rd.bd_rate(ref, [(r, q + 10) for r, q in ref]) is None,
          "BD-rate of curves that share no quality range: none")


def check_tools():
    tmp = tempfile.mkdtemp(prefix="gst-spice-benchdocs-")
    try:
        hist = copy_tree(tmp)
        # the latency rig's report from a committed run
        rigdir = os.path.join(tmp, "rig")
        os.makedirs(rigdir)
        shutil.copy(os.path.join(BENCH, "bounds-subset-2026-12-03.json"),
                    os.path.join(rigdir, "results.json"))
        check_report(hist, "2026-12-03-subset.md",
                     [os.path.join(SRC, "bench", "rig", "rig.py"), "report", rigdir,
                      "--stem", "subset", "--title", "A subset"],
                     "rig:2026-12-03-subset", "2026-12-03")
        # the encoder comparison's report from a committed run: its table
        # is the committed one, row for row
        codec = os.path.join(tmp, "codecs")
        os.makedirs(os.path.join(codec, "run"))
        both = json.load(open(os.path.join(BENCH, "codec-cubic.json")))
        json.dump(both["compare"], open(os.path.join(codec, "compare.json"), "w"))
        json.dump(both["results"], open(os.path.join(codec, "run", "results.json"), "w"))
        check_report(hist, "2026-12-01-codecs.md",
                     [os.path.join(SRC, "bench", "codec-compare.py"), "report", codec,
                      "--stem", "codecs"], "codec:2026-12-01-codecs", "2026-12-01")
        rows = [line for line in open(os.path.join(hist, "2026-12-01-codecs.md"))
                if line.startswith("| ")]
        committed = [line for line in open(os.path.join(
            HISTORY, "2026-12-01-encoder-comparison.md")) if line.startswith("| ")]
        check(rows and rows == committed,
              "the comparison's table from its JSON is the committed one")
        # the rate-distortion sweep's report from its committed run
        runs = sorted(glob.glob(os.path.join(BENCH, "*-codec-rd.json")))
        if check(runs, "a committed bench/codec-rd.py run (docs/benchmarks/*-codec-rd.json)"):
            stem = os.path.basename(runs[-1])[:-len(".json")]
            rd = os.path.join(tmp, "rd")
            os.makedirs(rd)
            shutil.copy(runs[-1], os.path.join(rd, "results.json"))
            day = stem[:10]
            check_report(hist, stem + ".md",
                         [os.path.join(SRC, "bench", "codec-rd.py"), "report", rd,
                          "--stem", stem[11:], "--title",
                          "Encoder comparison: rate and distortion at the SPICE client "
                          "and the browser"], "codec-rd:" + stem, day)
            rows = [line for line in open(os.path.join(hist, stem + ".md"))
                    if line.startswith("| ")]
            committed = [line for line in open(os.path.join(HISTORY, stem + ".md"))
                         if line.startswith("| ")]
            check(rows and rows == committed,
                  "the rate-distortion tables from their JSON are the committed ones")
        check_bd_rate()
        # the headline page is not a report's target (its copy here)
        headline = os.path.join(tmp, "docs", "benchmarks.md")
        for argv in ([os.path.join(SRC, "bench", "rig", "rig.py"), "report", rigdir],
                     [os.path.join(SRC, "bench", "codec-compare.py"), "report", codec]):
            rc, out = run(argv + ["--docs", headline])
            check(rc != 0 and "history" in out and
                  open(headline).read() == open(HEADLINE).read(),
                  "%s --docs docs/benchmarks.md is refused, pointing at the history "
                  "(%d: %s)" % (os.path.basename(argv[0]), rc, out.strip()[-300:]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    check_links()
    check_history()
    if shutil.which("gnuplot"):
        check_tools()
    else:
        print("skip: the report tools need gnuplot (tools/debian-packages.txt)")
    finish()


main()
