#!/bin/bash
# tests/heads: remote-viewer under Xvfb through the shipped transcode-vp8
# pipeline in front of the test guest's --heads 2 (issue 29): it opens one
# window per head, and a click in the second window lands on the second head
# (the guest logs the surface position: 640 to the right of the same click
# in the first window).
# Exit 77 (skipped) when a peer is not installed.
# SPDX-License-Identifier: LGPL-2.1-or-later
set -u
BUILD=${1:?build dir}; SRC=${2:?source dir}
for p in Xvfb remote-viewer xdotool xdpyinfo; do
  command -v $p >/dev/null || { echo "skip: $p missing"; exit 77; }
done

DIR=$(mktemp -d /tmp/heads-viewer-XXXXXX)
# shellcheck source=../common/desktop-test.sh
. "$SRC/tests/common/desktop-test.sh"
CD=$(free_display 70)
GPORT=$(free_port); LPORT=$(free_port)

# ---- the guest: two heads of 640x480, and its stdin kept open
mkfifo "$DIR/guest.in"
"$BUILD/tools/spice-test-guest" --port $GPORT --heads 2 --width 640 \
  --height 480 --fps 0 <"$DIR/guest.in" >"$DIR/guest.log" 2>&1 &
PIDS+=($!)
exec 3>"$DIR/guest.in"
wait_for 'grep -q listening "$DIR/guest.log"' 100 || fail "the guest did not start"

"$BUILD/tools/runner/gst-spice-run" --stats-interval 0 \
  -D UPSTREAM=spice://127.0.0.1:$GPORT -D LISTEN_PORT=$LPORT \
  "$SRC/pipelines/transcode-vp8.pipeline" >"$DIR/pipeline.log" 2>&1 &
PIDS+=($!)
wait_for 'grep -q playing "$DIR/pipeline.log"' 600 || fail "transcode-vp8 did not start"

start_xvfb "$CD" 1600x900
export DISPLAY=:$CD
remote-viewer "spice://127.0.0.1:$LPORT" >"$DIR/viewer.log" 2>&1 &
RV=$!
PIDS+=("$RV")

# ---- one window per head
viewer_windows $RV 2
W1=${VIEWER_WINDOWS[1]}; W2=${VIEWER_WINDOWS[2]}
echo "remote-viewer: $(xdotool getwindowname "$W1"), $(xdotool getwindowname "$W2")"

# ---- a click in each window (side by side, so neither hides the other)
xdotool windowmove "$W1" 0 0 windowmove "$W2" 800 0
sleep 1
click() {   # window, then the guest's logged position of the press
  local before  # read by wait_for's eval
  # shellcheck disable=SC2034
  before=$(grep -c "mouse buttons 1" "$DIR/guest.log")
  xdotool mousemove --window "$1" 100 200 click 1
  wait_for '[ "$(grep -c "mouse buttons 1" "$DIR/guest.log")" -gt "$before" ]' 200 ||
    fail "the click in window $1 never reached the guest"
  grep "mouse position .* buttons=1" "$DIR/guest.log" | tail -1 | awk '{print $3, $4}'
}
P1=$(click "$W1"); P2=$(click "$W2")
echo "click in window 1 at guest $P1, in window 2 at guest $P2"
read -r X1 Y1 <<<"$P1"; read -r X2 Y2 <<<"$P2"
[ "$X1" -lt 640 ] || fail "the click in window 1 landed at $P1, not on head 0"
[ "$X2" -eq $((X1 + 640)) ] && [ "$Y2" -eq "$Y1" ] ||
  fail "the click in window 2 landed at $P2, not at head 1's ($((X1 + 640)) $Y1)"
echo "PASS"
