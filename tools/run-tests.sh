#!/bin/sh
# The whole test suite, from a fresh checkout: installs the Debian packages
# that are missing (tools/debian-packages.txt), then
#   1. build/       (gcc)                    every test
#   2. build-asan/  (gcc, ASan + UBSan)      every test again, `--setup asan`
#   3. build-fuzz/  (clang, libFuzzer)       each fuzz target for 10 s
# Each gst-check program prints its "N%: Checks: …, Failures: 0, Errors: 0"
# line; the last line sums up all three runs.
#   tools/run-tests.sh [--quick] [MESON TEST ARGS…]
# --quick runs only step 1; other arguments go to `meson test` (a test
# name, --suite lib, …) in every step.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
quick=0
if [ "${1:-}" = "--quick" ]; then
  quick=1
  shift
fi
tools/install-deps.sh

status=0
logs=""
run_step() {  # NAME BUILDDIR SETUP_ARGS MESON_TEST_ARGS…
  name=$1 dir=$2 setup=$3
  shift 3
  echo "==== $name: meson setup $dir $setup"
  if [ ! -f "$dir/build.ninja" ]; then
    # shellcheck disable=SC2086
    meson setup "$dir" $setup >/dev/null
  fi
  ninja -C "$dir"
  meson test -C "$dir" -v --print-errorlogs --num-processes 2 "$@" || status=1
  logs="$logs $dir/meson-logs/testlog*.json"
}

run_step "tests" build "" "$@"
if [ "$quick" -eq 0 ]; then
  run_step "tests under ASan+UBSan" build-asan \
    "-Db_sanitize=address,undefined -Db_lundef=false" --setup asan "$@"
  CC=clang run_step "fuzzing smoke" build-fuzz \
    "-Dfuzzing=true -Db_sanitize=address,undefined -Db_lundef=false" \
    --suite fuzz
fi

# Closing lines for readers of the log (CI shows only its tail): each
# failed test with the last lines of its output, then one summary line.
# shellcheck disable=SC2086
python3 - $logs <<'PY' || true
import json, sys
passed = failed = skipped = 0
failures = []
for path in sys.argv[1:]:
    try:
        lines = open(path).readlines()
    except OSError:
        continue
    for line in lines:
        t = json.loads(line)
        r = t.get("result")
        if r in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif r == "SKIP":
            skipped += 1
        else:
            failed += 1
            failures.append((path.split("/")[0], t.get("name"), r, t.get("duration"),
                             (t.get("stdout") or "").splitlines()))
for build, name, result, duration, out in failures:
    print(f"==== FAILED {build}: {name} ({result}, {(duration or 0):.0f} s); last lines:")
    for l in [l for l in out if "Failures" in l or ":F:" in l or ":E:" in l][-8:]:
        print("  " + l[:400])
    for l in out[-12:]:
        print("  | " + l[:300])
print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
PY
exit $status
