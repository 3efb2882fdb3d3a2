#!/bin/sh
# spicesrc CPU benchmark: cores that spicesrc (in gst-launch-1.0 spicesrc !
# fakesink) uses to follow the test guest's `busy` activity (640x480 plasma
# at 30 fps) on loopback, next to the cores the guest itself uses.
#
#   bench/spicesrc-cpu.sh [BUILD_DIR] [SECONDS] [ACTIVITY]
#
# CPU = (utime + stime) / wall, read from /proc/PID/stat after a warm-up.
# Not a timed test: results depend on the machine and its load.
set -eu

BUILD=${1:-build}
SECS=${2:-20}
ACTIVITY=${3:-busy}
WARMUP=3
BUILD=$(cd "$BUILD" && pwd)
GUEST="$BUILD/tools/spice-test-guest"
[ -x "$GUEST" ] || { echo "no $GUEST: build first" >&2; exit 2; }
[ -e "$BUILD/plugins/libgstspice.so" ] || {
  echo "no libgstspice.so under $BUILD/plugins" >&2; exit 2; }

TMP=$(mktemp -d)
GPID=""; PPID_GST=""
cleanup() {
  [ -n "$PPID_GST" ] && kill "$PPID_GST" 2>/dev/null || true
  [ -n "$GPID" ] && kill "$GPID" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$GUEST" --port="$PORT" --activity="$ACTIVITY" >"$TMP/guest.log" 2>&1 &
GPID=$!
i=0
until grep -q '^listening' "$TMP/guest.log"; do
  i=$((i + 1)); [ $i -lt 300 ] || { echo "guest did not start" >&2; exit 1; }
  sleep 0.1
done

export GST_PLUGIN_PATH="$BUILD/plugins"
export GST_REGISTRY="$TMP/registry.bin"
export LD_LIBRARY_PATH="$BUILD/gst-libs/gst/spice${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
gst-launch-1.0 -q spicesrc uri="spice://127.0.0.1:$PORT" ! fakesink sync=false \
  >"$TMP/gst.log" 2>&1 &
PPID_GST=$!

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
now() { awk '{ print $1 }' /proc/uptime; }
HZ=$(getconf CLK_TCK)

sleep "$WARMUP"
kill -0 "$PPID_GST" 2>/dev/null || { echo "gst-launch exited:" >&2; cat "$TMP/gst.log" >&2; exit 1; }
t0=$(now); s0=$(ticks "$PPID_GST"); g0=$(ticks "$GPID")
sleep "$SECS"
t1=$(now); s1=$(ticks "$PPID_GST"); g1=$(ticks "$GPID")
kill -0 "$PPID_GST" 2>/dev/null || { echo "gst-launch exited:" >&2; cat "$TMP/gst.log" >&2; exit 1; }

awk -v s0="$s0" -v s1="$s1" -v g0="$g0" -v g1="$g1" -v t0="$t0" -v t1="$t1" \
    -v hz="$HZ" -v act="$ACTIVITY" -v n="$(nproc)" 'BEGIN {
  wall = t1 - t0
  src = (s1 - s0) / hz / wall
  gst = (g1 - g0) / hz / wall
  printf "activity %s, %.1f s on loopback, %d cores, load %s\n", act, wall, n, ENVIRON["LOAD"]
  printf "spicesrc (gst-launch-1.0 spicesrc ! fakesink): %.3f cores\n", src
  printf "test guest (spice-server):                    %.3f cores\n", gst
  if (gst > 0) printf "ratio spicesrc / guest:                       %.2f\n", src / gst
}'
