#!/bin/sh
# The main job on the embedded default: the built-in test guest (a SPICE
# server playing a VM with a busy animation) transcoded by the `demo`
# pipeline (spicesrc ! spicetiler ! vp8enc/draws ! spicesink) and served on
# 127.0.0.1.
#
#   tools/demo.sh             run until Ctrl-C; open the printed URL with
#                             remote-viewer
#   tools/demo.sh --verify    check the served picture with spicy-screenshot
#                             (bit-exact against the guest) and exit 0/1
# Options: --port N (clients, default $LISTEN_PORT or 5910), --guest-port N
#          (default $GUEST_PORT or 5930), --activity idle|busy|heavy|text|video
#          (default busy). LISTEN_PORT and GUEST_PORT are the demo
#          pipeline's own variables (pipelines/demo.pipeline); tests/docs
#          sets them to free ports.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
verify=0 port=${LISTEN_PORT:-5910} guest_port=${GUEST_PORT:-5930} activity=busy
while [ $# -gt 0 ]; do
  case "$1" in
    --verify) verify=1 ;;
    --port) port=$2; shift ;;
    --guest-port) guest_port=$2; shift ;;
    --activity) activity=$2; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "demo.sh: unknown option $1" >&2; exit 64 ;;
  esac
  shift
done

cd "$top"
echo "demo.sh: checking the Debian packages (tools/debian-packages.txt)"
tools/install-deps.sh
if [ ! -f build/build.ninja ]; then
  echo "demo.sh: configuring build/ (meson setup)"
  meson setup build >/dev/null
fi
# the first build takes minutes on 2 cores: its progress every 5 s
steps=$(ninja -C build -n 2>/dev/null | grep -c '^\[' || true)
if [ "$steps" -gt 0 ]; then
  echo "demo.sh: building build/ (on a fresh clone: minutes; progress every 5 s)"
  build_log=$(mktemp /tmp/gst-spice-demo-build.XXXXXX)
  NINJA_STATUS='[%f/%t] ' ninja -C build >"$build_log" 2>&1 &
  ninja_pid=$!
  shown=""
  while kill -0 "$ninja_pid" 2>/dev/null; do
    sleep 1
    last=$(grep -o '^\[[0-9]*/[0-9]*\]' "$build_log" | tail -n 1)
    now=$(date +%s)
    if [ -n "$last" ] && [ "$last" != "$shown" ] &&
      [ $((now - ${shown_at:-0})) -ge 5 ]; then
      echo "demo.sh: building $last"
      shown=$last shown_at=$now
    fi
  done
  if ! wait "$ninja_pid"; then
    tail -n 30 "$build_log" >&2
    echo "demo.sh: the build failed (whole log: $build_log)" >&2
    exit 1
  fi
  rm -f "$build_log"
  echo "demo.sh: built"
else
  echo "demo.sh: build/ is up to date"
fi
echo "demo.sh: starting the test guest and the demo pipeline"

export GST_PLUGIN_PATH="$top/build/plugins"
export GST_REGISTRY="$top/build/registry.bin"
export GST_SPICE_PIPELINES_DIR="$top/pipelines"
work=$(mktemp -d /tmp/gst-spice-demo.XXXXXX)
guest_pid="" runner_pid=""
cleanup() {
  [ -n "$runner_pid" ] && kill "$runner_pid" 2>/dev/null && wait "$runner_pid" 2>/dev/null
  [ -n "$guest_pid" ] && kill "$guest_pid" 2>/dev/null && wait "$guest_pid" 2>/dev/null
  exec 3>&- 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_for() {  # FILE TEXT SECONDS
  i=0
  while ! grep -q "$2" "$1" 2>/dev/null; do
    i=$((i + 1))
    if [ $i -gt $(($3 * 10)) ]; then
      echo "demo.sh: timed out waiting for '$2' in $1:" >&2
      tail -n 20 "$1" >&2
      exit 1
    fi
    sleep 0.1
  done
}

# the guest reads commands from a FIFO that this script keeps open
mkfifo "$work/guest.in"
build/tools/spice-test-guest --port "$guest_port" --activity "$activity" \
  --activity-after-connect <"$work/guest.in" >"$work/guest.log" 2>&1 &
guest_pid=$!
exec 3>"$work/guest.in"
wait_for "$work/guest.log" "listening port=" 20

build/tools/runner/gst-spice-run --stats-interval 10 \
  -D GUEST_PORT="$guest_port" -D LISTEN_PORT="$port" demo \
  >"$work/runner.log" 2>&1 &
runner_pid=$!
wait_for "$work/runner.log" "playing" 30

echo "gst-spice demo: test guest ($activity) -> spicesrc -> spicetiler -> vp8enc/draws -> spicesink"
echo "Connect with:   remote-viewer spice://127.0.0.1:$port"

if [ "$verify" -eq 0 ]; then
  echo "(Ctrl-C to stop)"
  tail -f "$work/runner.log" &
  tail_pid=$!
  wait "$runner_pid" || true
  runner_pid=""
  kill "$tail_pid" 2>/dev/null || true
  exit 0
fi

# --verify: let the animation run, freeze it, and compare what a new SPICE
# client gets with the guest's own framebuffer.
wait_for "$work/guest.log" "client connected" 20
sleep 3
echo freeze >&3
wait_for "$work/guest.log" "frozen" 10
echo "dump $work/guest.ppm" >&3
wait_for "$work/guest.log" "dumped" 10
sleep 1
t0=$(date +%s.%N)
timeout 30 spicy-screenshot -h 127.0.0.1 -p "$port" -o "$work/client.ppm" >/dev/null 2>&1
t1=$(date +%s.%N)
diff=$(compare -metric AE "$work/guest.ppm" "$work/client.ppm" null: 2>&1 || true)
size=$(identify -format '%wx%h' "$work/client.ppm")
echo "spicy-screenshot: ${size}, $(awk "BEGIN{printf \"%.2f\", $t1 - $t0}") s, pixels differing from the guest: $diff"
grep -E "error|restart" "$work/runner.log" && { echo "demo.sh: the runner reported errors" >&2; exit 1; }
if [ "$diff" = "0" ]; then
  echo "demo.sh: PASS (the served picture is exactly the guest's)"
  exit 0
fi
echo "demo.sh: FAIL" >&2
exit 1
