#!/bin/bash
# tests/heads: a real two-head X desktop (Xorg's spiceqxl, Xspice, with
# NumHeads 2 and the second head enabled by xrandr, issue 29) through the
# shipped transcode-vp8 pipeline (gst-spice-run), no window manager:
# 1. a different picture on each head (a root background of 2048x768 that
#    is a checkerboard on head 0 and gradients on head 1): a spice-client-glib
#    client (tests/common/heads-describe) sees the same heads through the
#    pipeline as straight from Xspice; spicy-screenshot's 2048x768 PPM through
#    the pipeline is the same file as straight from Xspice (which is X's own
#    root window, 0 px differ), and each head of it has many colours and
#    differs from the other;
# 2. remote-viewer under Xvfb through the pipeline opens one visible window
#    per head, no other;
# 3. a click in its first window at (300,400) of the window lands on head 0
#    (xev -root sees the ButtonPress, xdotool getmouselocation inside Xspice
#    agrees); the same point in the second window lands 1024 px to the right,
#    on head 1 (x as the window's width says: the head centred in it), and
#    (700,600) of the second window 400 px right and 200 px below that (1:1),
#    each within 2 px;
# 4. with the guest agent in the desktop (spice-vdagentd + spice-vdagent,
#    environment.md 4d, behind tests/agent/vdagent-shim.py since
#    spice-vdagentd 0.22.1 drops spice-gtk's monitors configs, see
#    docs/spicesink.md "Guest agent") a client disables head 1 (a monitors
#    config of head 0 alone, as remote-viewer sends when its second window
#    goes): it and a second client that joins afterwards both see one head,
#    the one Xspice's xrandr has active, and spicy-screenshot through the
#    pipeline is X's new root window.
# Exit 77 (skipped) when a peer is not installed. KEEP=1 keeps the logs.
# SPDX-License-Identifier: LGPL-2.1-or-later
set -u
BUILD=${1:?build dir}; SRC=${2:?source dir}
for p in Xorg Xvfb xrandr xdotool xdpyinfo xev stdbuf display import compare \
    spicy-screenshot remote-viewer spice-vdagentd spice-vdagent; do
  command -v $p >/dev/null || { echo "skip: $p missing"; exit 77; }
done
[ -f /etc/X11/spiceqxl.xorg.conf ] || { echo "skip: no spiceqxl"; exit 77; }

DIR=$(mktemp -d /tmp/heads-xspice-XXXXXX)
# shellcheck source=../common/desktop-test.sh
. "$SRC/tests/common/desktop-test.sh"
GD=$(free_display 60); CD=$(free_display $((GD + 1)))
GPORT=$(free_port); LPORT=$(free_port)
XLOCKS+=("$GD")
DESCRIBE=$BUILD/tests/common/heads-describe
t0=$SECONDS
step() { echo "[$((SECONDS - t0)) s] $*"; }
# spicy-screenshot of PORT into FILE (it saves the first whole picture)
screenshot() {
  timeout 30 spicy-screenshot -h 127.0.0.1 -p "$1" -o "$2" >>"$DIR/screenshot.log" 2>&1 &&
    [ -s "$2" ]
}
# pixels that differ between two pictures (ImageMagick, RGB)
differ() { compare -metric AE "$1" "$2" null: 2>&1; }

# ---- the desktop: two heads of 1024x768 side by side, the agent's sockets
# in $DIR (the agent itself comes in part 4)
spiceqxl_conf "$DIR/xorg.conf" "$GPORT" 2 "$DIR"
Xorg -config "$DIR/xorg.conf" -noreset -nolisten tcp -logfile "$DIR/xorg.log" :$GD >"$DIR/xorg.out.log" 2>&1 &
PIDS+=($!)
wait_for "DISPLAY=:$GD xdpyinfo >/dev/null 2>&1" 200 || fail "Xorg did not start"
DISPLAY=:$GD xrandr --addmode qxl-1 1024x768 &&
  DISPLAY=:$GD xrandr --output qxl-1 --mode 1024x768 --right-of qxl-0 ||
  fail "xrandr could not enable the second head"
# every button press in the desktop (no window: it lands on the root)
DISPLAY=:$GD stdbuf -oL xev -root -event button >"$DIR/xev.log" 2>&1 &
PIDS+=($!)
# the root background: head 0 a checkerboard of 32 px squares in many
# colours, head 1 gradients with a diagonal band
python3 -c 'import sys
rows = []
for y in range(768):
    a = bytes(c for x in range(1024) for c in
              (((x >> 5) * 37 + (y >> 5) * 11) & 255, ((x >> 5) * 5 + (y >> 5) * 71) & 255,
               255 if ((x >> 5) + (y >> 5)) & 1 else 40))
    b = bytes(c for x in range(1024) for c in
              (x & 255, y & 255, 255 if abs(x - y - 128) < 24 else (x + y) >> 3 & 255))
    rows.append(a + b)
sys.stdout.buffer.write(b"P6\n2048 768\n255\n" + b"".join(rows))' >"$DIR/desktop.ppm"
# (ImageMagick's display exits 1 after setting a file as the background)
DISPLAY=:$GD display -window root "$DIR/desktop.ppm" 2>/dev/null
WANT="display 0 2048x768 monitors 2 max 2: 0@0,0 1024x768 1@1024,0 1024x768"
step "Xspice on :$GD port $GPORT with two heads and a picture on each"

# ---- 1. straight from Xspice (one client at a time: before the pipeline)
DISPLAY=:$GD import -window root "$DIR/x-root.png" 2>/dev/null || fail "import on Xspice"
DIRECT=$("$DESCRIBE" -p $GPORT --settle-ms 1500 2>"$DIR/direct.log") ||
  fail "no picture straight from Xspice"
echo "straight from Xspice: $DIRECT"
[ "$DIRECT" = "$WANT" ] || fail "Xspice shows \"$DIRECT\", not \"$WANT\""
screenshot $GPORT "$DIR/direct.ppm" || fail "spicy-screenshot straight from Xspice"
d=$(differ "$DIR/direct.ppm" "$DIR/x-root.png")
[ "$d" = 0 ] || fail "straight from Xspice the picture differs from X's root window in $d px"
# each head has many colours, and the heads differ
python3 - "$DIR/direct.ppm" <<'EOF' || fail "the desktop is not a different picture on each head"
import sys
data = open(sys.argv[1], "rb").read()
head = b"P6\n2048 768\n255\n"
assert data.startswith(head), "not a 2048x768 PPM"
px = data[len(head):]
heads = [b"".join(px[y * 6144 + h * 3072:y * 6144 + h * 3072 + 3072] for y in range(768))
         for h in (0, 1)]
for h, p in enumerate(heads):
    n = len({p[i:i + 3] for i in range(0, len(p), 3)})
    print("head %d: %d colours" % (h, n))
    assert n > 1, "head %d is one colour" % h
assert heads[0] != heads[1], "both heads show the same"
EOF
step "Xspice's picture is X's root window, a different one on each head"

# ---- through transcode-vp8
"$BUILD/tools/runner/gst-spice-run" --stats-interval 0 \
  -D UPSTREAM=spice://127.0.0.1:$GPORT -D LISTEN_PORT=$LPORT \
  "$SRC/pipelines/transcode-vp8.pipeline" >"$DIR/pipeline.log" 2>&1 &
PIPE=$!
PIDS+=("$PIPE")
wait_for 'grep -q playing "$DIR/pipeline.log"' 600 || fail "transcode-vp8 did not start"
GW=$("$DESCRIBE" -p $LPORT --settle-ms 1500 2>"$DIR/gateway.log") ||
  fail "no picture through the pipeline"
echo "through transcode-vp8: $GW"
[ "$GW" = "$DIRECT" ] || fail "through the pipeline \"$GW\", straight \"$DIRECT\""
screenshot $LPORT "$DIR/gateway.ppm" || fail "spicy-screenshot through the pipeline"
cmp -s "$DIR/direct.ppm" "$DIR/gateway.ppm" ||
  fail "through the pipeline the picture differs from Xspice's in $(differ "$DIR/direct.ppm" "$DIR/gateway.ppm") px"
step "spicy-screenshot: the whole 2048x768 surface through the pipeline is Xspice's, byte for byte"

# ---- 2. remote-viewer: one window per head
start_xvfb "$CD" 2400x1000
DISPLAY=:$CD remote-viewer "spice://127.0.0.1:$LPORT" >"$DIR/viewer.log" 2>&1 &
RV=$!
PIDS+=("$RV")
export DISPLAY=:$CD
viewer_windows $RV 2
W1=${VIEWER_WINDOWS[1]}; W2=${VIEWER_WINDOWS[2]}
xdotool windowmove "$W1" 0 0 windowmove "$W2" 1200 0
sleep 1
geometry() { xdotool getwindowgeometry "$1" | awk '/Position/ {p=$2} /Geometry/ {g=$2} END {print p, g}'; }
G1=$(geometry "$W1"); G2=$(geometry "$W2")
step "remote-viewer: 2 windows, \"$(xdotool getwindowname "$W1")\" at $G1, \"$(xdotool getwindowname "$W2")\" at $G2"
[ "${G1#* }" = "${G2#* }" ] || fail "the two windows differ in size: $G1, $G2"

# ---- 3. clicks: where each lands inside Xspice
# click WINDOW X Y: sets AT to the press's root position in Xspice ("x y")
AT=
click() {
  local before  # read by wait_for's eval
  # shellcheck disable=SC2034
  before=$(grep -c '^ButtonPress' "$DIR/xev.log")
  xdotool mousemove --window "$1" "$2" "$3" sleep 0.3 click 1
  wait_for '[ "$(grep -c "^ButtonPress" "$DIR/xev.log")" -gt "$before" ]' 200 ||
    fail "the click at ($2,$3) of window $1 never reached Xspice"
  sleep 0.2
  AT=$(grep -A1 '^ButtonPress' "$DIR/xev.log" | tail -1 | sed -E 's/.*root:\(([0-9-]+),([0-9-]+)\).*/\1 \2/')
  [ "$(DISPLAY=:$GD xdotool getmouselocation | sed -E 's/^x:([0-9]+) y:([0-9]+).*/\1 \2/')" = "$AT" ] ||
    fail "xev saw the press at ($AT), xdotool getmouselocation in Xspice says otherwise"
}
click "$W1" 300 400; P1=$AT
click "$W2" 300 400; P2=$AT
click "$W2" 700 600; P3=$AT
step "click at (300,400) of window 1 lands at ($P1), of window 2 at ($P2); (700,600) of window 2 at ($P3)"
read -r X1 Y1 <<<"$P1"; read -r X2 Y2 <<<"$P2"; read -r X3 Y3 <<<"$P3"
[ "$X1" -lt 1024 ] || fail "the click in window 1 landed at ($P1), not on head 0"
[ "$X2" -ge 1024 ] || fail "the click in window 2 landed at ($P2), not on head 1"
near() { [ "$1" -ge $(($2 - 2)) ] && [ "$1" -le $(($2 + 2)) ]; }
# remote-viewer centres the 1024 px wide head in its window (menu and
# toolbar above it): from the window's width, (300,400) of window 2 is at
# x 1024 + 300 - (width - 1024) / 2 of the desktop; its y is window 1's
GW2=${G2#* }; GW2=${GW2%x*}
near "$X2" $((1024 + 300 - (GW2 - 1024) / 2)) ||
  fail "the click in window 2 landed at x $X2, not at $((1024 + 300 - (GW2 - 1024) / 2)) (window $GW2 px wide)"
near "$X2" $((X1 + 1024)) && near "$Y2" "$Y1" ||
  fail "the click in window 2 landed at ($P2), not at head 1's ($((X1 + 1024)) $Y1)"
near "$X3" $((X1 + 1024 + 400)) && near "$Y3" $((Y1 + 200)) ||
  fail "(700,600) of window 2 landed at ($P3), not at ($((X1 + 1424)) $((Y1 + 200)))"
# remote-viewer would send its own layout once the agent is there: it goes
kill $RV; wait $RV 2>/dev/null
unset DISPLAY

# ---- 4. the agent; a client disables head 1
# spice-vdagentd 0.22.1 drops every monitors config spice-gtk >= 0.39 sends
# (tests/agent/vdagent-shim.py says why): it reads the agent socket through
# the shim, which rewrites only those
python3 "$SRC/tests/agent/vdagent-shim.py" "$DIR/virtio-shim" "$DIR/virtio" >"$DIR/shim.log" 2>&1 &
PIDS+=($!)
wait_for '[ -S "$DIR/virtio-shim" ]' 100 || fail "the shim did not start"
spice-vdagentd -f -x -X -d -S "$DIR/udcs" -s "$DIR/virtio-shim" -u "$DIR/uinput" >"$DIR/vdagentd.log" 2>&1 &
PIDS+=($!)
wait_for '[ -S "$DIR/udcs" ]' 100 || fail "spice-vdagentd did not start"
mkdir -p "$DIR/home"
HOME=$DIR/home DISPLAY=:$GD spice-vdagent -x -d -s "$DIR/virtio-shim" -S "$DIR/udcs" >"$DIR/vdagent.log" 2>&1 &
PIDS+=($!)
# client a: head 0 alone (head 1 disabled), stays until $DIR/release
"$DESCRIBE" -p $LPORT --timeout 90 --settle-ms 1500 --monitors "0,0,1024,768;0,0,0,0" \
  --wait-monitors 1 --hold-until "$DIR/release" >"$DIR/a.out" 2>"$DIR/client-a.log" &
A=$!
PIDS+=("$A")
wait_for '[ -s "$DIR/a.out" ] || ! kill -0 $A 2>/dev/null' 900
GOT_A=$(cat "$DIR/a.out")
if ! [ -s "$DIR/a.out" ] || ! kill -0 $A 2>/dev/null; then
  grep -h "invalid message size\|monitors config\|shim:" "$DIR"/vdagentd.log "$DIR"/shim.log | head -5
  fail "client a's layout (head 1 disabled) did not make one head: it sees \"$GOT_A\"; $(tail -1 "$DIR/client-a.log")"
fi
step "client a disabled head 1: $GOT_A"
GOT_B=$("$DESCRIBE" -p $LPORT --settle-ms 1500 2>"$DIR/client-b.log") || fail "no picture at client b"
touch "$DIR/release"
wait $A || fail "client a: $(tail -1 "$DIR/client-a.log")"
echo "client b, joined afterwards: $GOT_B"
[ "$GOT_B" = "$GOT_A" ] || fail "client b sees \"$GOT_B\", client a \"$GOT_A\""
# what Xspice itself has: one active output, and the screen's size
ACTIVE=$(DISPLAY=:$GD xrandr --listactivemonitors)
echo "$ACTIVE" | sed 's/^/xrandr: /'
[ "$(echo "$ACTIVE" | head -1)" = "Monitors: 1" ] || fail "Xspice has not one active output"
MON=$(echo "$ACTIVE" | sed -n 2p | sed -E 's|.* ([0-9]+)/[0-9]+x([0-9]+)/[0-9]+\+([0-9]+)\+([0-9]+) .*|\3,\4 \1x\2|')
SIZE=$(DISPLAY=:$GD xdpyinfo | awk '/dimensions:/ {print $2}')
WANT1="display 0 $SIZE monitors 1 max 2: 0@$MON"
[ "$GOT_A" = "$WANT1" ] || fail "the clients see \"$GOT_A\", Xspice has \"$WANT1\""
DISPLAY=:$GD import -window root "$DIR/x-root1.png" 2>/dev/null || fail "import on Xspice"
screenshot $LPORT "$DIR/gateway1.ppm" || fail "spicy-screenshot through the pipeline"
d=$(differ "$DIR/gateway1.ppm" "$DIR/x-root1.png")
[ "$d" = 0 ] || fail "with one head the picture through the pipeline differs from X's root window in $d px"
grep "shim:" "$DIR/shim.log" | head -1
kill -0 $PIPE || fail "the pipeline died"
step "one head at both clients, as in Xspice ($SIZE), the picture exact"
echo "PASS"
