#!/bin/bash
# tests/heads: a real two-head X desktop (Xorg's spiceqxl, Xspice, with
# NumHeads 2 and the second head enabled by xrandr, issue 29) through the
# shipped transcode-vp8 pipeline. A spice-client-glib client
# (tests/common/heads-describe) sees the same heads through the pipeline as
# straight from Xspice, and the same whole surface (every byte of the
# PPM); a pointer the client puts on the second head lands there
# (xdotool getmouselocation inside Xspice).
# Exit 77 (skipped) when a peer is not installed.
# SPDX-License-Identifier: LGPL-2.1-or-later
set -u
BUILD=${1:?build dir}; SRC=${2:?source dir}
for p in Xorg xrandr xdotool xdpyinfo; do
  command -v $p >/dev/null || { echo "skip: $p missing"; exit 77; }
done
[ -f /etc/X11/spiceqxl.xorg.conf ] || { echo "skip: no spiceqxl"; exit 77; }

DIR=$(mktemp -d /tmp/heads-xspice-XXXXXX)
# shellcheck source=../common/desktop-test.sh
. "$SRC/tests/common/desktop-test.sh"
GD=$(free_display 60)
GPORT=$(free_port); LPORT=$(free_port)
XLOCKS+=("$GD")
DESCRIBE=$BUILD/tests/common/heads-describe

# ---- the desktop: two heads of 1024x768 side by side
sed -e '/Section "Device"/,/EndSection/{/Driver/a\
    Option "SpiceAddr" "127.0.0.1"\
    Option "SpicePort" "'$GPORT'"\
    Option "SpiceDisableTicketing" "True"\
    Option "NumHeads" "2"\
    Option "SurfaceBufferSize" "128"\
    Option "CommandBufferSize" "128"\
    Option "FrameBufferSize" "16"
}' /etc/X11/spiceqxl.xorg.conf > "$DIR/xorg.conf"
Xorg -config "$DIR/xorg.conf" -noreset -nolisten tcp -logfile "$DIR/xorg.log" :$GD >"$DIR/xorg.out.log" 2>&1 &
PIDS+=($!)
wait_for "DISPLAY=:$GD xdpyinfo >/dev/null 2>&1" 100
DISPLAY=:$GD xdpyinfo >/dev/null 2>&1 || fail "Xorg did not start"
DISPLAY=:$GD xrandr --addmode qxl-1 1024x768 &&
  DISPLAY=:$GD xrandr --output qxl-1 --mode 1024x768 --right-of qxl-0 ||
  fail "xrandr could not enable the second head"
WANT="display 0 2048x768 monitors 2 max 2: 0@0,0 1024x768 1@1024,0 1024x768"

# ---- straight from Xspice (one client at a time: it leaves first)
DIRECT=$("$DESCRIBE" -p $GPORT -o "$DIR/direct.ppm" --settle-ms 1500 2>"$DIR/direct.log") ||
  fail "no picture straight from Xspice"
echo "straight from Xspice: $DIRECT"
[ "$DIRECT" = "$WANT" ] || fail "Xspice shows \"$DIRECT\", not \"$WANT\""

# ---- through transcode-vp8
"$BUILD/tools/runner/gst-spice-run" --stats-interval 0 \
  -D UPSTREAM=spice://127.0.0.1:$GPORT -D LISTEN_PORT=$LPORT \
  "$SRC/pipelines/transcode-vp8.pipeline" >"$DIR/pipeline.log" 2>&1 &
PIDS+=($!)
wait_for 'grep -q playing "$DIR/pipeline.log"' 600
grep -q playing "$DIR/pipeline.log" || fail "transcode-vp8 did not start"
GW=$("$DESCRIBE" -p $LPORT -o "$DIR/gateway.ppm" --settle-ms 1500 2>"$DIR/gateway.log") ||
  fail "no picture through the pipeline"
echo "through transcode-vp8: $GW"
[ "$GW" = "$DIRECT" ] || fail "through the pipeline \"$GW\", straight \"$DIRECT\""
cmp -s "$DIR/direct.ppm" "$DIR/gateway.ppm" ||
  fail "the picture through the pipeline differs from Xspice's"
echo "the whole 2048x768 surface is the same"

# ---- a pointer on the second head lands on it
for pos in 1500,300 200,100 2047,767; do
  "$DESCRIBE" -p $LPORT --position $pos >/dev/null 2>>"$DIR/gateway.log" ||
    fail "no client mouse mode through the pipeline"
  GOT=$(DISPLAY=:$GD xdotool getmouselocation | sed -E 's/^x:([0-9]+) y:([0-9]+).*/\1,\2/')
  [ "$GOT" = "$pos" ] || fail "the pointer put at $pos is at $GOT in Xspice"
  echo "pointer at $pos lands at $GOT"
done
echo "PASS"
