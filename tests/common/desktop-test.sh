# shellcheck shell=bash
# gst-spice tests: what the shell tests that run X servers and peers share
# (source it after setting DIR and before starting anything):
#   PIDS+=($!)         processes ended (in reverse order) at exit
#   XLOCKS+=(N)        X displays whose lock files go at exit
#   free_display N     the first display from N without a lock file
#   free_port          a free loopback TCP port
#   fail MESSAGE       prints it and the tail of every $DIR/*.log, exits 1
#   wait_for CMD N     evaluates CMD until it succeeds, at most N x 0.1 s
#   spiceqxl_conf OUT PORT HEADS [AGENT_DIR]
#                      writes an Xorg config for the spiceqxl driver (Xspice,
#                      docs: environment.md 4c) on 127.0.0.1:PORT with HEADS
#                      heads; with AGENT_DIR the guest agent's sockets there
#                      (AGENT_DIR/virtio, AGENT_DIR/uinput; 4d)
#   start_xvfb N WxH   Xvfb on :N (in PIDS and XLOCKS), waits until it answers
#   viewer_windows PID N
#                      waits until remote-viewer PID (on $DISPLAY) shows one
#                      visible window per head, titled "... (1)" to "(N)", and
#                      no other (60 s); sets VIEWER_WINDOWS[1..N]; fails
#                      otherwise
# $DIR is removed at exit unless KEEP is set.
# SPDX-License-Identifier: LGPL-2.1-or-later
PIDS=()
XLOCKS=()
desktop_test_cleanup() {
  local i p d
  for ((i=${#PIDS[@]}-1; i>=0; i--)); do kill "${PIDS[i]}" 2>/dev/null; done
  sleep 0.5
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  for d in "${XLOCKS[@]}"; do rm -f "/tmp/.X$d-lock" "/tmp/.X11-unix/X$d"; done
  [ "${KEEP:-}" ] || rm -rf "$DIR"
}
trap desktop_test_cleanup EXIT
free_display() { local d=$1; while [ -e "/tmp/.X$d-lock" ]; do d=$((d+1)); done; echo "$d"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
fail() { echo "FAIL: $*"; echo "--- logs in $DIR"; for f in "$DIR"/*.log; do echo "== $f"; tail -20 "$f"; done; exit 1; }
wait_for() { local i; for i in $(seq "$2"); do eval "$1" && return 0; sleep 0.1; done; return 1; }
spiceqxl_conf() {
  local out=$1 port=$2 heads=$3 agent=${4:-}
  sed -e '/Section "Device"/,/EndSection/{/Driver/a\
    Option "SpiceAddr" "127.0.0.1"\
    Option "SpicePort" "'"$port"'"\
    Option "SpiceDisableTicketing" "True"\
    Option "NumHeads" "'"$heads"'"\
    Option "SurfaceBufferSize" "128"\
    Option "CommandBufferSize" "128"\
    Option "FrameBufferSize" "16"
}' /etc/X11/spiceqxl.xorg.conf > "$out"
  [ -z "$agent" ] || sed -i -e '/Option "FrameBufferSize"/a\
    Option "SpiceVdagentEnabled" "True"\
    Option "SpiceVdagentVirtioPath" "'"$agent"'/virtio"\
    Option "SpiceVdagentUinputPath" "'"$agent"'/uinput"' "$out"
}
start_xvfb() {
  # -noreset: without it Xvfb resets when its last client (the xdpyinfo
  # below) leaves, and remote-viewer, started during the reset, says
  # "cannot open display" (both heads tests at once in a CI run under ASan)
  Xvfb ":$1" -screen 0 "$2x24" -noreset -nolisten tcp >"$DIR/xvfb.log" 2>&1 &
  PIDS+=($!)
  XLOCKS+=("$1")
  wait_for "DISPLAY=:$1 xdpyinfo >/dev/null 2>&1" 100 || fail "Xvfb did not start"
}
VIEWER_WINDOWS=()
viewer_windows() {
  local pid=$1 n=$2 w got=0 end=$((SECONDS + 60))
  while [ $SECONDS -lt $end ]; do
    got=0
    for ((w=1; w<=n; w++)); do
      VIEWER_WINDOWS[w]=$(xdotool search --all --pid "$pid" --onlyvisible --name "\\($w\\)\$" 2>/dev/null | head -1)
      [ -n "${VIEWER_WINDOWS[w]}" ] && got=$((got + 1))
    done
    [ "$got" -eq "$n" ] && break
    sleep 0.1
  done
  w=$(xdotool search --pid "$pid" --onlyvisible 2>/dev/null | wc -l)
  [ "$got" -eq "$n" ] || fail "remote-viewer did not open a window per head: $w window(s)"
  [ "$w" -eq "$n" ] || fail "remote-viewer opened $w windows for $n heads"
}
