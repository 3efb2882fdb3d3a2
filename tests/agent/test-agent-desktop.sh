#!/bin/bash
# tests/agent: the clipboard and files through the shipped transcode-vp8
# pipeline, between real peers. Upstream: an X desktop on Xorg's spiceqxl driver
# (libspice-server inside Xorg) with spice-vdagentd + spice-vdagent;
# downstream: remote-viewer on an Xvfb. xclip on each display copies and
# pastes; the test compares bytes. A spice-gtk client (spice-test-client
# --send-file: spice_main_channel_file_copy_async, what remote-viewer does
# with a dropped file) sends 5 MiB of random bytes: spice-vdagent saves them
# in the user's Download directory with the same sha256, and the pipeline's spool
# (its TMPDIR) is empty after it and after a cancelled one. Then the pointer: client positions must
# land 1:1 in the guest (xdotool getmouselocation there), and the
# remote-viewer window is resized twice: the desktop must take the size of
# the display widget, and remote-viewer must show the guest's screen
# exactly (a tiled root background; import on both displays, compare).
# spice-vdagentd 0.22.1 drops every monitors config spice-gtk >= 0.39
# sends, so spice-vdagentd reads the agent socket through
# vdagent-shim.py, which rewrites only those (see there); DIRECT=1 runs
# without the shim and checks that rejection instead.
#   test-agent-desktop.sh BUILD_DIR SOURCE_DIR
# Exit 77 (skipped) when a peer is not installed.
# SPDX-License-Identifier: LGPL-2.1-or-later
set -u
BUILD=${1:?build dir}; SRC=${2:?source dir}
for p in Xorg spice-vdagentd spice-vdagent xclip Xvfb remote-viewer xdotool xdpyinfo xdg-user-dir; do
  command -v $p >/dev/null || { echo "skip: $p missing"; exit 77; }
done
[ -f /etc/X11/spiceqxl.xorg.conf ] || { echo "skip: no spiceqxl"; exit 77; }

DIR=$(mktemp -d /tmp/agent-desktop-XXXXXX)
PIDS=()
cleanup() {
  for ((i=${#PIDS[@]}-1; i>=0; i--)); do kill "${PIDS[i]}" 2>/dev/null; done
  sleep 0.5
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -f /tmp/.X$GD-lock /tmp/.X11-unix/X$GD /tmp/.X$CD-lock /tmp/.X11-unix/X$CD
  [ "${KEEP:-}" ] || rm -rf "$DIR"
}
trap cleanup EXIT

free_display() { local d=$1; while [ -e /tmp/.X$d-lock ]; do d=$((d+1)); done; echo $d; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
GD=$(free_display 40); CD=$(free_display $((GD+1)))
GPORT=$(free_port); CPORT=$(free_port)
fail() { echo "FAIL: $*"; echo "--- logs in $DIR"; for f in "$DIR"/*.log; do echo "== $f"; tail -20 "$f"; done; exit 1; }

# ---- the desktop with its agent (environment.md 4d)
sed -e '/Section "Device"/,/EndSection/{/Driver/a\
    Option "SpiceAddr" "127.0.0.1"\
    Option "SpicePort" "'$GPORT'"\
    Option "SpiceDisableTicketing" "True"\
    Option "NumHeads" "1"\
    Option "SurfaceBufferSize" "128"\
    Option "CommandBufferSize" "128"\
    Option "FrameBufferSize" "16"\
    Option "SpiceVdagentEnabled" "True"\
    Option "SpiceVdagentVirtioPath" "'$DIR'/virtio"\
    Option "SpiceVdagentUinputPath" "'$DIR'/uinput"
}' /etc/X11/spiceqxl.xorg.conf > "$DIR/xorg.conf"
Xorg -config "$DIR/xorg.conf" -noreset -nolisten tcp -logfile "$DIR/xorg.log" :$GD >"$DIR/xorg.out.log" 2>&1 &
PIDS+=($!)
for i in $(seq 100); do [ -S "$DIR/virtio" ] && DISPLAY=:$GD xdpyinfo >/dev/null 2>&1 && break; sleep 0.1; done
[ -S "$DIR/virtio" ] || fail "Xorg did not open the vdagent socket"
# spice-vdagentd 0.22.1 drops every monitors config spice-gtk >= 0.39
# sends (vdagent-shim.py says why); unless DIRECT=1, it reads the agent
# socket through the shim, which rewrites only those
VIRTIO=$DIR/virtio
if [ -z "${DIRECT:-}" ]; then
  python3 "$SRC/tests/agent/vdagent-shim.py" "$DIR/virtio-shim" "$DIR/virtio" >"$DIR/shim.log" 2>&1 &
  PIDS+=($!)
  for i in $(seq 50); do [ -S "$DIR/virtio-shim" ] && break; sleep 0.1; done
  VIRTIO=$DIR/virtio-shim
fi
spice-vdagentd -f -x -X -d -S "$DIR/udcs" -s "$VIRTIO" -u "$DIR/uinput" >"$DIR/vdagentd.log" 2>&1 &
PIDS+=($!)
for i in $(seq 50); do [ -S "$DIR/udcs" ] && break; sleep 0.1; done
# spice-vdagent saves files in the user's Download directory (no -f: GLib's
# XDG_DOWNLOAD_DIR, what `xdg-user-dir DOWNLOAD` prints). Without a
# user-dirs.dirs (root here) GLib has none: spice-vdagent 0.22.1 then logs
# "could not get file xfer save dir, file transfers will be disabled" and
# answers every start DISABLED. The desktop's user gets one.
mkdir -p "$DIR/home/.config" "$DIR/home/Downloads"
echo 'XDG_DOWNLOAD_DIR="$HOME/Downloads"' > "$DIR/home/.config/user-dirs.dirs"
XFER=$(HOME=$DIR/home XDG_CONFIG_HOME=$DIR/home/.config xdg-user-dir DOWNLOAD)
HOME=$DIR/home XDG_CONFIG_HOME=$DIR/home/.config DISPLAY=:$GD \
  spice-vdagent -x -d -s "$VIRTIO" -S "$DIR/udcs" >"$DIR/vdagent.log" 2>&1 &
PIDS+=($!)

# ---- the shipped pipeline in between (spooling files in its own TMPDIR)
mkdir -p "$DIR/spool"
TMPDIR=$DIR/spool GST_DEBUG=${GST_DEBUG:-spicesinkagent:5,spicesrcagent:5,2} \
  "$BUILD/tools/runner/gst-spice-run" -D UPSTREAM=spice://127.0.0.1:$GPORT \
  -D LISTEN_PORT=$CPORT "$SRC/pipelines/transcode-vp8.pipeline" >"$DIR/pipeline.log" 2>&1 &
PIPE=$!
PIDS+=($PIPE)

# ---- the client
# -noreset: no reset when the last client leaves (desktop-test.sh)
Xvfb :$CD -screen 0 1280x1024x24 -noreset -nolisten tcp >"$DIR/xvfb.log" 2>&1 &
PIDS+=($!)
for i in $(seq 50); do DISPLAY=:$CD xdpyinfo >/dev/null 2>&1 && break; sleep 0.1; done
sleep 1
DISPLAY=:$CD remote-viewer spice://127.0.0.1:$CPORT >"$DIR/viewer.log" 2>&1 &
RV=$!
PIDS+=($RV)

# copy on display $1 ($3 target type) file $2, paste on display $4; waits
# up to 30 s for the bytes to arrive exactly
relay() {
  local from=$1 file=$2 type=$3 to=$4 i
  for i in $(seq 30); do
    DISPLAY=:$from timeout 20 xclip -selection clipboard -t "$type" -i "$file" >/dev/null 2>&1 &
    PIDS+=($!)
    sleep 1
    if DISPLAY=:$to timeout 10 xclip -selection clipboard -t "$type" -o > "$DIR/got" 2>/dev/null &&
        cmp -s "$file" "$DIR/got"; then
      return 0
    fi
  done
  return 1
}

printf 'grüße aus dem Client, 世界 — %s\n' "$RANDOM" > "$DIR/t1"
relay $CD "$DIR/t1" UTF8_STRING $GD || fail "client -> guest text"
echo "ok: client -> guest text"
printf 'from the guest: naïve 😀 %s' "$RANDOM" > "$DIR/t2"
relay $GD "$DIR/t2" UTF8_STRING $CD || fail "guest -> client text"
echo "ok: guest -> client text"
python3 -c 'import random,sys; r=random.Random(7); w=["grüße","世界","naïve","spice","😀","\n"]
sys.stdout.write(" ".join(r.choice(w) for _ in range(400000))[:1048576])' > "$DIR/t3"
head -c 1048576 "$DIR/t3" > "$DIR/t3b"; iconv -f utf-8 -t utf-8 -c "$DIR/t3b" > "$DIR/t3"
relay $CD "$DIR/t3" UTF8_STRING $GD || fail "client -> guest 1 MiB"
echo "ok: client -> guest $(stat -c %s "$DIR/t3") bytes"
relay $GD "$DIR/t3" UTF8_STRING $CD || fail "guest -> client 1 MiB"
echo "ok: guest -> client 1 MiB"
DISPLAY=:$CD import -window root -crop 200x150+0+0 "$DIR/p.png" 2>/dev/null ||
  python3 -c 'import zlib,struct,sys
def c(t,d): return struct.pack(">I",len(d))+t+d+struct.pack(">I",zlib.crc32(t+d))
raw=b"".join(b"\0"+bytes((x*y)&255 for x in range(300)) for y in range(200))
sys.stdout.buffer.write(b"\x89PNG\r\n\x1a\n"+c(b"IHDR",struct.pack(">IIBBBBB",100,200,8,2,0,0,0))+c(b"IDAT",zlib.compress(raw))+c(b"IEND",b""))' > "$DIR/p.png"
relay $CD "$DIR/p.png" image/png $GD || fail "client -> guest PNG"
echo "ok: client -> guest PNG"
relay $GD "$DIR/p.png" image/png $CD || fail "guest -> client PNG"
echo "ok: guest -> client PNG"

# ---- files: 5 MiB of random bytes from a spice-gtk client to the desktop
head -c 5242880 /dev/urandom > "$DIR/random-5MiB.bin"
"$BUILD/tests/common/spice-test-client" -p $CPORT --timeout 120 \
  --send-file "$DIR/random-5MiB.bin" > "$DIR/xfer-client.log" 2>&1 ||
  fail "file transfer: $(grep XFER- "$DIR/xfer-client.log" | grep -v PROGRESS)"
grep -q "XFER-FILE random-5MiB.bin OK" "$DIR/xfer-client.log" ||
  fail "file transfer: the client did not report success"
[ "$(sha256sum < "$XFER/random-5MiB.bin")" = "$(sha256sum < "$DIR/random-5MiB.bin")" ] ||
  fail "the file in the desktop differs from the client's"
t=$(awk '/^XFER-BEGIN/ {b=$2} /^XFER-DONE OK/ {d=$3} END {printf "%.2f", (d-b)/1e6}' "$DIR/xfer-client.log")
echo "ok: 5 MiB client -> desktop ($XFER), sha256 $(sha256sum < "$XFER/random-5MiB.bin" | cut -c1-16)…, same; ${t} s"
for i in $(seq 50); do [ -z "$(ls -A "$DIR/spool")" ] && break; sleep 0.1; done
[ -z "$(ls -A "$DIR/spool")" ] || fail "the pipeline's spool is not empty: $(find "$DIR/spool")"
# a cancelled one leaves nothing, neither in the spool nor in the desktop
cp "$DIR/random-5MiB.bin" "$DIR/cancelled.bin"
"$BUILD/tests/common/spice-test-client" -p $CPORT --timeout 120 --cancel-at 1048576 \
  --send-file "$DIR/cancelled.bin" > "$DIR/xfer-cancel.log" 2>&1
grep -q "XFER-DONE ERROR g-io-error-quark 19" "$DIR/xfer-cancel.log" ||
  fail "the cancelled transfer: $(grep XFER- "$DIR/xfer-cancel.log" | grep -v PROGRESS)"
for i in $(seq 50); do [ -z "$(ls -A "$DIR/spool")" ] && break; sleep 0.1; done
[ -z "$(ls -A "$DIR/spool")" ] || fail "a cancelled file stays in the spool: $(find "$DIR/spool")"
[ ! -e "$XFER/cancelled.bin" ] || fail "a cancelled file reached the desktop"
echo "ok: a cancelled file leaves the spool and the desktop empty"

W=$(DISPLAY=:$CD xdotool search --pid $RV --onlyvisible 2>/dev/null | head -1)
[ -n "$W" ] || fail "no remote-viewer window"

# ---- the pointer (client mouse mode): positions in the window land 1:1
# in the guest; the first fixes the display's offset in the client's root
# window, the others must land at exactly that offset
guest_at() { DISPLAY=:$GD xdotool getmouselocation | sed 's/x:\([0-9]*\) y:\([0-9]*\).*/\1 \2/'; }
guest_size() { DISPLAY=:$GD xdpyinfo | awk '/dimensions:/ {print $2}'; }
# the desktop takes the size of remote-viewer's display widget once the
# window is mapped (spice-vdagent changes the resolution; under load that
# came in the middle of the pointer checks and moved the offset): wait
# until the guest's size has not changed for 3 s
settle_size() {
  local last= same=0 i size
  for i in $(seq 60); do
    size=$(guest_size)
    if [ "$size" = "$last" ]; then same=$((same + 1)); else same=0; fi
    last=$size
    [ $same -ge 3 ] && return 0
    sleep 1
  done
  fail "the guest's size never settled (last $last)"
}
# pointer POSITIONS...: sets $off; 1 if a position is off by another offset
# (the first one is taken as the display's offset: taken while the client
# still laid out the last size, it was off, seen under load; twice in a
# row fails)
pointer() {
  local xy cx cy at o i size0
  settle_size
  size0=$(guest_size)
  eval "$(DISPLAY=:$CD xdotool getwindowgeometry --shell $W)"
  off=
  for xy in "$@"; do
    set -- $xy
    cx=$((X + $1)); cy=$((Y + $2))
    at=
    for i in $(seq 20); do
      DISPLAY=:$CD xdotool mousemove $((cx + 1)) $cy mousemove $cx $cy
      sleep 0.3
      at=$(guest_at)
      set -- $at
      o="$((cx - $1)) $((cy - $2))"
      [ -z "$off" ] && [ "$1" != 0 ] && break
      [ "$o" = "$off" ] && break
    done
    [ -n "$off" ] || off=$o
    if [ "$o" != "$off" ]; then
      echo "pointer at $cx,$cy on the client is at $at in the guest (offset $o, not $off; guest $size0, now $(guest_size))"
      return 1
    fi
    echo "ok: pointer $cx,$cy -> guest $at"
  done
}
pointer_twice() { pointer "$@" || pointer "$@" || fail "the pointer does not land 1:1 (twice)"; }
pointer_twice "400 300" "150 500" "700 120" "333 444"

# ---- resize: the desktop follows the window, and the client shows the
# guest's exact picture at the new size (a tiled root background, so every
# pixel of the new area is drawn)
python3 -c 'import zlib,struct,sys
def c(t,d): return struct.pack(">I",len(d))+t+d+struct.pack(">I",zlib.crc32(t+d))
raw=b"".join(b"\0"+b"".join(bytes(((x*7+y*3)&255,(x*y)&255,(x^y)*5&255)) for x in range(97)) for y in range(89))
sys.stdout.buffer.write(b"\x89PNG\r\n\x1a\n"+c(b"IHDR",struct.pack(">IIBBBBB",97,89,8,2,0,0,0))+c(b"IDAT",zlib.compress(raw))+c(b"IEND",b""))' > "$DIR/tile.png"
# (ImageMagick's display exits 1 after setting a file as the background)
DISPLAY=:$GD display -window root "$DIR/tile.png" 2>/dev/null
DISPLAY=:$GD import -window root "$DIR/guest.png" 2>/dev/null
[ "$(identify -format %k "$DIR/guest.png")" -gt 1000 ] ||
  fail "the guest's root background is not the tile"
size0=$(DISPLAY=:$GD xdpyinfo | awk '/dimensions:/ {print $2}')
for want in "1000 700" "860 560"; do
  set -- $want
  DISPLAY=:$CD xdotool windowsize $W $1 $2
  # the guest takes the size of remote-viewer's display widget: the window
  # less its borders, menu and toolbar
  ok=
  for i in $(seq 30); do
    size=$(DISPLAY=:$GD xdpyinfo | awk '/dimensions:/ {print $2}')
    sw=${size%x*}; sh=${size#*x}
    [ "$sw" -le $1 ] && [ "$sw" -gt $(($1 - 40)) ] && [ "$sh" -le $2 ] &&
      [ "$sh" -gt $(($2 - 160)) ] && { ok=1; break; }
    sleep 1
  done
  if [ -z "$ok" ] && [ "${DIRECT:-}" ]; then
    # spice-vdagentd 0.22.1 (do_client_monitors) wants exactly
    # 8 + n * sizeof (VDAgentMonConfig) bytes; spice-gtk 0.42 appends the
    # VD_AGENT_CONFIG_MONITORS_FLAG_PHYSICAL_SIZE array: every config is
    # dropped, from remote-viewer straight or from spicesrc alike
    grep -q "invalid message size for VDAgentMonitorsConfig" "$DIR/vdagentd.log" ||
      fail "desktop stayed $size and spice-vdagentd did not say why"
    grep -q "monitors config: 1 monitor" "$DIR/pipeline.log" ||
      fail "the monitors config never reached spicesrc"
    echo "known (DIRECT=1): spice-vdagentd rejects spice-gtk's monitors config (PHYSICAL_SIZE)"
    kill -0 $PIPE || fail "the pipeline died"
    echo "PASS (clipboard, pointer; resize: see above)"
    exit 0
  fi
  [ "$ok" ] || { grep -i monitor "$DIR/vdagentd.log" "$DIR/vdagent.log"; fail "desktop stayed $size, not about $1x$2"; }
  [ "$size" != "$size0" ] || fail "desktop size unchanged: $size"
  size0=$size
  echo "ok: desktop follows the window: $size"
  gw=${size%x*}; gh=${size#*x}
  # where the guest's display is in the client's root window now
  pointer_twice "200 200" "$((gw / 2)) $((gh / 2))"
  set -- $off
  same=
  for i in $(seq 30); do
    DISPLAY=:$GD import -window root "$DIR/guest.png" 2>/dev/null
    DISPLAY=:$CD import -window root -crop ${gw}x${gh}+$1+$2 +repage "$DIR/client.png" 2>/dev/null
    d=$(compare -metric AE "$DIR/guest.png" "$DIR/client.png" null: 2>&1)
    [ "$d" = 0 ] && { same=1; break; }
    sleep 1
  done
  [ "$same" ] || fail "at $size the client's picture differs from the guest's in $d pixels"
  echo "ok: the client shows the guest's exact ${size} picture"
done
[ -z "${DIRECT:-}" ] && { grep "shim:" "$DIR/shim.log" | head -2; }

kill -0 $PIPE || fail "the pipeline died"
echo "PASS"
