#!/bin/sh
# Records fuzzing seeds from real spice-gtk clients talking to spicesink:
# spicy-screenshot and remote-viewer (under Xvfb, typing and moving the
# mouse with xdotool) connect through spice-capture, which writes what
# they send into tests/fuzz/corpus/{link,client-msg}.
#   tests/fuzz/capture-corpus.sh [BUILD_DIR]
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$top/build}
out="$top/tests/fuzz/corpus"
export GST_PLUGIN_PATH="$build/plugins" GST_REGISTRY="$build/capture-registry.bin"
pick() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
sink_port=$(pick); cap_port=$(pick)
pids=""
cleanup() { for p in $pids; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

gst-launch-1.0 -q videotestsrc is-live=true pattern=ball \
  ! video/x-raw,format=BGRx,width=640,height=480,framerate=30/1 \
  ! spicetiler name=t t.draw ! s.draw \
  t.stream ! queue max-size-buffers=1 leaky=downstream ! vp8enc deadline=1 ! s.stream_0 \
  spicesink name=s port="$sink_port" >/dev/null 2>&1 &
pids="$pids $!"
sleep 2
"$build/tests/fuzz/spice-capture" "$cap_port" "$sink_port" "$out" 25 &
cap=$!
sleep 1
timeout 15 spicy-screenshot -h 127.0.0.1 -p "$cap_port" -o /tmp/capture-shot.ppm >/dev/null 2>&1 || true
disp=:$((90 + $$ % 9))
Xvfb "$disp" -screen 0 1024x768x24 -nolisten tcp >/dev/null 2>&1 &
pids="$pids $!"
sleep 1
DISPLAY=$disp timeout 20 remote-viewer "spice://127.0.0.1:$cap_port" >/dev/null 2>&1 &
rv=$!
pids="$pids $rv"
sleep 8
w=$(DISPLAY=$disp xdotool search --onlyvisible --class remote-viewer 2>/dev/null | head -1 || true)
echo "remote-viewer window: ${w:-none}"
if [ -n "$w" ]; then
  DISPLAY=$disp xdotool windowfocus --sync "$w" mousemove --window "$w" 200 200 \
    click 1 mousemove --window "$w" 300 250 click 3 || true
  DISPLAY=$disp xdotool type --delay 40 "Hello, SPICE 123!" || true
  DISPLAY=$disp xdotool key ctrl+alt+Left Return BackSpace Up F5 || true
fi
sleep 3
kill "$rv" 2>/dev/null || true
wait "$cap" || true
ls "$out/link" "$out/client-msg" | grep -c captured | sed 's/^/captured seeds: /'
