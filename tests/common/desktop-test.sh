# shellcheck shell=bash
# gst-spice tests: what the shell tests that run X servers and peers share
# (source it after setting DIR and before starting anything):
#   PIDS+=($!)         processes ended (in reverse order) at exit
#   XLOCKS+=(N)        X displays whose lock files go at exit
#   free_display N     the first display from N without a lock file
#   free_port          a free loopback TCP port
#   fail MESSAGE       prints it and the tail of every $DIR/*.log, exits 1
#   wait_for CMD N     evaluates CMD until it succeeds, at most N x 0.1 s
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
