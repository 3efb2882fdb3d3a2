#!/bin/sh
# The whole test suite, from a fresh checkout: installs the Debian packages
# that are missing (tools/debian-packages.txt), configures and builds into
# build/, then runs every test verbosely (gst-check prints its
# "N%: Checks: …, Failures: 0, Errors: 0" line per test program).
# Extra arguments go to `meson test` (e.g. a test name or --suite lib).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
tools/install-deps.sh
if [ ! -f build/build.ninja ]; then
  meson setup build
fi
ninja -C build
status=0
meson test -C build -v --print-errorlogs --num-processes 2 "$@" || status=$?
# One plain closing line for readers of the log: passed/failed test programs.
python3 - "$top/build/meson-logs/testlog.json" <<'PY' || true
import json, sys
passed = failed = skipped = 0
for line in open(sys.argv[1]):
    r = json.loads(line).get("result")
    if r in ("OK", "EXPECTEDFAIL"):
        passed += 1
    elif r == "SKIP":
        skipped += 1
    else:
        failed += 1
print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
PY
exit $status
