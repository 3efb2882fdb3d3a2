#!/bin/bash
# tests/heads: remote-viewer under Xvfb through the shipped transcode-vp8
# pipeline in front of the test guest (issue 29), once with --heads 2 (one
# surface, two monitors) and once with --displays 2 (one display channel per
# head, which spicesrc composes into one surface): it opens one window per
# head, and a click in the second window lands on the second head (--heads:
# the guest logs the surface position, 640 to the right of the same click in
# the first window; --displays: its agent logs the position inside display
# 1, the same as the click in the first window inside display 0).
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
start_xvfb "$CD" 1600x900
export DISPLAY=:$CD

# the guest's log lines of a left press: the tablet's (--heads: "mouse
# position X Y buttons=1" on its surface) or its agent's (--displays: "agent
# mouse X Y buttons=2 display=D", VD_AGENT_LBUTTON_MASK inside display D)
presses() {
  if [ "$KIND" = heads ]; then
    grep "mouse position .* buttons=1" "$DIR/guest.log"
  else
    grep "agent mouse .* buttons=2 " "$DIR/guest.log"
  fi
}

# the last press: "X Y" (--heads) or "X Y D" (--displays)
pressed_at() {
  presses | tail -1 | sed -E -e 's/.*mouse position ([0-9]+) ([0-9]+) .*/\1 \2/' \
    -e 's/.*agent mouse ([0-9]+) ([0-9]+) buttons=2 display=([0-9]+).*/\1 \2 \3/'
}

click() {   # window: the guest's logged position of the press
  local before  # read by wait_for's eval
  # shellcheck disable=SC2034
  before=$(presses | wc -l)
  xdotool mousemove --window "$1" 100 200 click 1
  wait_for '[ "$(presses | wc -l)" -gt "$before" ]' 200 ||
    fail "$KIND: the click in window $1 never reached the guest"
  pressed_at
}

# one round (KIND=heads|displays, the guest's arguments): the guest with
# two heads of 640x480, transcode-vp8, remote-viewer, a click in each
# window; P1 and P2 are where they landed
round() {
  local first=${#PIDS[@]} i
  local gport lport
  gport=$(free_port); lport=$(free_port)
  rm -f "$DIR/guest.in"
  mkfifo "$DIR/guest.in"
  "$BUILD/tools/spice-test-guest" --port "$gport" "$@" --width 640 \
    --height 480 --fps 0 <"$DIR/guest.in" >"$DIR/guest.log" 2>&1 &
  PIDS+=($!)
  exec 3>"$DIR/guest.in"
  wait_for 'grep -q listening "$DIR/guest.log"' 100 || fail "$KIND: the guest did not start"

  "$BUILD/tools/runner/gst-spice-run" --stats-interval 0 \
    -D UPSTREAM=spice://127.0.0.1:$gport -D LISTEN_PORT=$lport \
    "$SRC/pipelines/transcode-vp8.pipeline" >"$DIR/pipeline.log" 2>&1 &
  PIDS+=($!)
  wait_for 'grep -q playing "$DIR/pipeline.log"' 600 || fail "$KIND: transcode-vp8 did not start"

  remote-viewer "spice://127.0.0.1:$lport" >"$DIR/viewer.log" 2>&1 &
  local rv=$!
  PIDS+=("$rv")

  # one window per head
  viewer_windows $rv 2
  local w1=${VIEWER_WINDOWS[1]} w2=${VIEWER_WINDOWS[2]}
  echo "$KIND: remote-viewer: $(xdotool getwindowname "$w1"), $(xdotool getwindowname "$w2")"

  # a click in each window (side by side, so neither hides the other)
  xdotool windowmove "$w1" 0 0 windowmove "$w2" 800 0
  sleep 1
  P1=$(click "$w1"); P2=$(click "$w2")
  echo "$KIND: click in window 1 at guest $P1, in window 2 at guest $P2"

  # this round's processes end before the next round starts
  for ((i=${#PIDS[@]}-1; i>=first; i--)); do kill "${PIDS[i]}" 2>/dev/null; done
  for ((i=${#PIDS[@]}-1; i>=first; i--)); do wait "${PIDS[i]}" 2>/dev/null; done
  exec 3>&-
  PIDS=("${PIDS[@]:0:first}")
}

KIND=heads round --heads 2
read -r X1 Y1 <<<"$P1"; read -r X2 Y2 <<<"$P2"
[ "$X1" -lt 640 ] || fail "heads: the click in window 1 landed at $P1, not on head 0"
[ "$X2" -eq $((X1 + 640)) ] && [ "$Y2" -eq "$Y1" ] ||
  fail "heads: the click in window 2 landed at $P2, not at head 1's ($((X1 + 640)) $Y1)"

KIND=displays round --displays 2 --agent-mouse
read -r X1 Y1 D1 <<<"$P1"; read -r X2 Y2 D2 <<<"$P2"
[ "$D1" = 0 ] || fail "displays: the click in window 1 landed on display $D1 ($P1)"
[ "$D2" = 1 ] && [ "$X2" -eq "$X1" ] && [ "$Y2" -eq "$Y1" ] ||
  fail "displays: the click in window 2 landed at $P2, not at display 1's ($X1 $Y1 1)"
echo "PASS"
