#!/usr/bin/env python3
# -Dtests=disabled (meson_options.txt) must build: configures a fresh build
# directory with it and fails when a target it would build compiles a
# source that includes a gst-check header (libgstcheck is not a dependency
# then, so such a target does not link). Configuring only: a few seconds.
#   check-tests-disabled.py SOURCE_DIR
# SPDX-License-Identifier: LGPL-2.1-or-later

import json
import os
import re
import subprocess
import sys
import tempfile

src = os.path.abspath(sys.argv[1])
include = re.compile(r'^\s*#\s*include\s*[<"]gst/check/', re.M)
with tempfile.TemporaryDirectory(prefix="gst-spice-notests-") as tmp:
    build = os.path.join(tmp, "b")
    setup = subprocess.run(["meson", "setup", build, src, "-Dtests=disabled"],
                           capture_output=True, text=True)
    if setup.returncode != 0:
        print(setup.stdout + setup.stderr)
        sys.exit("check-tests-disabled: meson setup -Dtests=disabled failed")
    targets = json.loads(subprocess.run(
        ["meson", "introspect", "--targets", build], check=True,
        capture_output=True, text=True).stdout)
    bad = []
    for t in targets:
        for ts in t.get("target_sources", []):
            for s in ts.get("sources", []):
                if s.endswith((".c", ".h")) and os.path.exists(s):
                    if include.search(open(s, errors="replace").read()):
                        bad.append("%s: %s" % (t["name"],
                                               os.path.relpath(s, src)))
    for b in bad:
        print("needs gst-check but is built with -Dtests=disabled:", b)
    if bad:
        sys.exit(1)
    print("check-tests-disabled: %d targets, none needs gst-check"
          % len(targets))
