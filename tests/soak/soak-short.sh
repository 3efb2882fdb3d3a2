#!/bin/bash
# Short soak for the suite: bench/soak.py --minutes 1.5 with one upstream
# restart (see tests/soak/meson.build). The output directory is removed on
# success and kept (and named) on failure; namespaces are removed on every
# exit path by bench/soak.py itself, and checked here.
set -u
SRC=${GST_SPICE_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${GST_SPICE_BUILD_DIR:-$SRC/build}
PFX=gssoakt
OUT=$(mktemp -d /tmp/gst-spice-soak-short.XXXXXX)
python3 "$SRC/bench/soak.py" --build "$BUILD" --out "$OUT" --prefix "$PFX" \
  --minutes 1.5 --restarts 1 --warmup 20 --busy 3 --sample-interval 5 \
  --stall-short 6 --stall-long 22
rc=$?
if [ "$(id -u)" = 0 ] && ip netns list 2>/dev/null | grep -q "^$PFX-"; then
  echo "FAIL: namespaces $PFX-* left behind"
  rc=1
fi
if [ $rc = 0 ]; then rm -rf "$OUT"; else echo "kept: $OUT"; fi
exit $rc
