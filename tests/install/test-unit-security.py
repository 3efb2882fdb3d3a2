#!/usr/bin/env python3
# The unit as built (meson configures gst-spice@.service.in) rated by
# `systemd-analyze security --offline=yes`: its overall exposure must be at
# most MAX (docs/operator-guide.md "Sandbox"). The same unit without its
# sandbox settings must rate above it, so the check can fail. Exit 77
# (skipped) without systemd-analyze.
#
#   test-unit-security.py BUILT_UNIT
# SPDX-License-Identifier: LGPL-2.1-or-later

import os
import re
import shutil
import subprocess
import sys
import tempfile

from optest import check, finish

MAX = 2.5
# the settings the unit's sandbox adds to DynamicUser=, ProtectSystem= and
# PrivateTmp=
SANDBOX = re.compile(
    r"^(PrivateUsers|CapabilityBoundingSet|AmbientCapabilities|UMask|"
    r"PrivateDevices|DevicePolicy|Protect(Home|Kernel\w+|ControlGroups|Clock|"
    r"Hostname|Proc)|ProcSubset|LockPersonality|Restrict\w+|RemoveIPC|"
    r"PrivateMounts|SystemCall\w+|MemoryDenyWriteExecute)=")


def exposure(text, tmp, name):
    """systemd-analyze's overall exposure of a unit file with @text"""
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    r = subprocess.run(["systemd-analyze", "security", "--offline=yes",
                        "--no-pager", path], capture_output=True, text=True,
                       cwd=tmp)
    m = re.search(r"Overall exposure level for \S+: ([0-9.]+) (\w+)",
                  r.stdout + r.stderr)
    if not m:
        print(r.stdout + r.stderr)
        return None, None
    return float(m.group(1)), m.group(2)


def main():
    if not shutil.which("systemd-analyze"):
        print("skip: systemd-analyze is not installed")
        sys.exit(77)
    unit = sys.argv[1]
    text = open(unit).read()
    tmp = tempfile.mkdtemp(prefix="gst-spice-security-")
    try:
        level, word = exposure(text, tmp, "gst-spice@.service")
        check(level is not None and level <= MAX,
              "systemd-analyze security: %s %s (at most %.1f)" %
              (level, word, MAX))
        bare = "\n".join(line for line in text.splitlines()
                         if not SANDBOX.match(line))
        blevel, bword = exposure(bare, tmp, "gst-spice-bare@.service")
        check(blevel is not None and blevel > MAX,
              "without its sandbox settings: %s %s (above %.1f)" %
              (blevel, bword, MAX))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish()


main()
