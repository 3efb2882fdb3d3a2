#!/bin/bash
# linkemu-setup.sh: shaped-link topology for the gst-spice latency rig.
#
#   linkemu-setup.sh up PROFILE [options]   create namespaces, veths, tbf, delay line
#   linkemu-setup.sh verify [options]       ping + iperf3 check; exit 1 if out of bounds
#   linkemu-setup.sh down [options]         stop the delay line, delete everything
#   linkemu-setup.sh profiles               list the profiles
#
# PROFILE: lan | RTT/MBIT (e.g. 20/50, 80/10, 80/50, 80/5, 150/2) | RTT:MBIT
#
# Topology (root namespace holds only the "wire"):
#
#   [ns PFX-srv] PFXs0 ==veth== PFXs1 [root]  linkemu  PFXc1 [root] ==veth== PFXc0 [ns PFX-cli]
#   10.77.0.1/24                  tbf egress (toward server)  tbf egress (toward client)
#                                                                           10.77.0.2/24
# - linkemu delays each direction by RTT/2 (CLOCK_MONOTONIC, AF_PACKET);
# - tbf rate MBIT on the root-namespace egress of PFXs1 and PFXc1, i.e. after
#   the delay, with a drop-tail limit of one bandwidth-delay product
#   (MBIT*RTT/8 bytes): the bottleneck queue is "in the network", so the
#   sending host's TCP sees real losses, not local qdisc back-pressure;
# - TSO/GSO/GRO and checksum offload off on all four veth ends;
# - lan: the two namespaces are joined by one veth pair, no shaping.
# - the TCP congestion control is set in both namespaces (--cc, default cubic).
#
# Options:
#   --prefix PFX     names (default gsrig); PFX at most 9 characters
#   --cc NAME        congestion control in both namespaces (default cubic)
#   --state-dir DIR  where the state and stats files go (default /run/gst-spice-rig)
#   --linkemu PATH   the delay-line binary (default: next to this script, then
#                    $GST_SPICE_BUILD_DIR/tools/linkemu/linkemu, then PATH)
#   --json FILE      (verify) write the verification result as JSON
#   --no-rate        (verify) ping only
#   --max-late-us N  (verify) fail if the delay line's wake-up lateness p99
#                    exceeds N us (default 1000)
#   --rate-tolerance PCT (verify) how far the iperf3 rate may be from the
#                    profile's rate, in percent (default 10)
#
# verify: 20 pings (avg RTT within 2 ms of the target), iperf3 server->client
# (within --rate-tolerance of the rate), delay-line wake-up lateness p99 <=
# --max-late-us.
#
# Exit status: 0 ok, 1 failure (for verify: the link is out of bounds),
# 2 usage, 77 not root / no netns support.
set -u

PFX=gsrig
CC=cubic
STATE_DIR=/run/gst-spice-rig
LINKEMU=""
JSON=""
DO_RATE=1
MAX_LATE_US=1000
RATE_TOL_PCT=10
SRV_IP=10.77.0.1
CLI_IP=10.77.0.2

die() { echo "linkemu-setup: $*" >&2; exit 1; }

parse_profile() {
  # sets RTT_MS, RATE_MBIT (0/0 for lan), PROFILE_NAME
  local p=$1
  case "$p" in
    lan|LAN) RTT_MS=0; RATE_MBIT=0; PROFILE_NAME=lan; return 0 ;;
  esac
  p=${p/:/\/}
  RTT_MS=${p%/*}; RATE_MBIT=${p#*/}
  [[ "$RTT_MS" =~ ^[0-9]+(\.[0-9]+)?$ && "$RATE_MBIT" =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
    { echo "linkemu-setup: bad profile '$1' (lan or RTT/MBIT)" >&2; return 2; }
  PROFILE_NAME="$RTT_MS/$RATE_MBIT"
}

find_linkemu() {
  [ -n "$LINKEMU" ] && return 0
  local here; here=$(cd "$(dirname "$0")" && pwd)
  for c in "$here/linkemu" "${GST_SPICE_BUILD_DIR:-/nonexistent}/tools/linkemu/linkemu" \
           "$(command -v linkemu 2>/dev/null)"; do
    [ -n "$c" ] && [ -x "$c" ] && { LINKEMU=$c; return 0; }
  done
  die "linkemu binary not found (build it, or pass --linkemu)"
}

ns_srv() { echo "$PFX-srv"; }
ns_cli() { echo "$PFX-cli"; }

offloads_off() {  # [netns] dev
  local exe=()
  [ $# -eq 2 ] && { exe=(ip netns exec "$1"); shift; }
  "${exe[@]}" ethtool -K "$1" tx off rx off tso off gso off gro off >/dev/null 2>&1 ||
    "${exe[@]}" ethtool -K "$1" tso off gso off gro off >/dev/null 2>&1 || true
  # belt and braces: even with GSO on, never build super-packets
  "${exe[@]}" ip link set dev "$1" gso_max_size 1500 gso_max_segs 1 2>/dev/null || true
  # and check that it took: a GSO super-packet would bypass the tbf queue size
  local k
  k=$("${exe[@]}" ethtool -k "$1" 2>/dev/null | grep -E '^(tcp-segmentation-offload|generic-segmentation-offload|generic-receive-offload):' | grep -c ': on')
  [ "$k" = 0 ] || die "offloads still on for $1"
}

cmd_down() {
  local st="$STATE_DIR/$PFX.state"
  if [ -f "$st" ]; then
    # shellcheck disable=SC1090
    . "$st"
    if [ -n "${LINKEMU_PID:-}" ] && kill -0 "$LINKEMU_PID" 2>/dev/null; then
      kill -TERM "$LINKEMU_PID" 2>/dev/null
      for _ in $(seq 50); do kill -0 "$LINKEMU_PID" 2>/dev/null || break; sleep 0.05; done
      kill -KILL "$LINKEMU_PID" 2>/dev/null || true
    fi
  fi
  ip netns del "$(ns_srv)" 2>/dev/null || true
  ip netns del "$(ns_cli)" 2>/dev/null || true
  for d in "${PFX}s1" "${PFX}c1" "${PFX}s0" "${PFX}c0"; do
    ip link del "$d" 2>/dev/null || true
  done
  rm -f "$st" "$STATE_DIR/$PFX.linkemu.json" "$STATE_DIR/$PFX.linkemu.log" \
    "$STATE_DIR/$PFX.linkemu.json.tmp"
  restore_allowed_cc
  return 0
}

# A namespace may only make a congestion control its default if the root
# namespace lists it in tcp_allowed_congestion_control (here: "reno bbr").
# Add ours for the duration of the rig; restore the original list when the
# last rig topology (any prefix) goes down.
allow_cc() {
  local cur; cur=$(sysctl -n net.ipv4.tcp_allowed_congestion_control)
  case " $cur " in *" $CC "*) return 0 ;; esac
  [ -f "$STATE_DIR/allowed_cc.orig" ] || echo "$cur" > "$STATE_DIR/allowed_cc.orig"
  sysctl -qw net.ipv4.tcp_allowed_congestion_control="$cur $CC"
}
restore_allowed_cc() {
  [ -f "$STATE_DIR/allowed_cc.orig" ] || return 0
  ls "$STATE_DIR"/*.state >/dev/null 2>&1 && return 0
  sysctl -qw net.ipv4.tcp_allowed_congestion_control="$(cat "$STATE_DIR/allowed_cc.orig")"
  rm -f "$STATE_DIR/allowed_cc.orig"
}

cmd_up() {
  local prof=$1
  parse_profile "$prof" || exit 2
  [ ${#PFX} -le 9 ] || die "prefix too long"
  mkdir -p "$STATE_DIR"
  cmd_down
  # claim the prefix at once, so that a concurrent "down" of another prefix
  # does not restore the allowed list under us
  echo "PROFILE=$PROFILE_NAME" > "$STATE_DIR/$PFX.state"
  allow_cc || { cmd_down; die "cannot allow congestion control $CC"; }
  local S C; S=$(ns_srv); C=$(ns_cli)
  ip netns add "$S" || die "ip netns add failed"
  ip netns add "$C" || { cmd_down; die "ip netns add failed"; }
  for ns in "$S" "$C"; do
    ip -n "$ns" link set lo up
    ip netns exec "$ns" sysctl -qw net.ipv4.tcp_congestion_control="$CC" ||
      { cmd_down; die "cannot set congestion control $CC in $ns"; }
    got=$(ip netns exec "$ns" sysctl -n net.ipv4.tcp_congestion_control)
    [ "$got" = "$CC" ] || { cmd_down; die "congestion control in $ns is $got, not $CC"; }
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
  done
  local LPID=""
  if [ "$PROFILE_NAME" = lan ]; then
    ip link add "${PFX}s0" netns "$S" type veth peer name "${PFX}c0" netns "$C" ||
      { cmd_down; die "veth failed"; }
    offloads_off "$S" "${PFX}s0"; offloads_off "$C" "${PFX}c0"
  else
    find_linkemu
    ip link add "${PFX}s0" type veth peer name "${PFX}s1" || { cmd_down; die "veth failed"; }
    ip link add "${PFX}c0" type veth peer name "${PFX}c1" || { cmd_down; die "veth failed"; }
    ip link set "${PFX}s0" netns "$S"; ip link set "${PFX}c0" netns "$C"
    for d in "${PFX}s1" "${PFX}c1"; do
      sysctl -qw "net.ipv6.conf.$d.disable_ipv6=1" 2>/dev/null || true
      ip link set "$d" up
      offloads_off "$d"
    done
    offloads_off "$S" "${PFX}s0"; offloads_off "$C" "${PFX}c0"
    # bytes per second, one-way delay, BDP, token bucket burst (1 ms, >= 2 frames)
    local bps half bdp burst dl_limit
    bps=$(awk -v r="$RATE_MBIT" 'BEGIN{printf "%d", r*1e6/8}')
    half=$(awk -v t="$RTT_MS" 'BEGIN{printf "%.3f", t/2}')
    bdp=$(awk -v b="$bps" -v t="$RTT_MS" 'BEGIN{v=b*t/1000; if (v<4542) v=4542; printf "%d", v}')
    burst=$(awk -v b="$bps" 'BEGIN{v=b/1000; if (v<3028) v=3028; printf "%d", v}')
    # the delay line only bounds memory: everything in flight plus a BDP
    dl_limit=$(( 2 * bdp + 262144 ))
    for d in "${PFX}s1" "${PFX}c1"; do
      tc qdisc add dev "$d" root tbf rate "${RATE_MBIT}mbit" burst "$burst" limit "$bdp" ||
        { cmd_down; die "tbf on $d failed"; }
    done
    "$LINKEMU" --dev-a "${PFX}s1" --dev-b "${PFX}c1" --delay-ab "$half" --delay-ba "$half" \
      --limit-ab "$dl_limit" --limit-ba "$dl_limit" --stats "$STATE_DIR/$PFX.linkemu.json" \
      > "$STATE_DIR/$PFX.linkemu.log" 2>&1 &
    LPID=$!
    for _ in $(seq 100); do
      grep -q '^linkemu ready' "$STATE_DIR/$PFX.linkemu.log" 2>/dev/null && break
      kill -0 "$LPID" 2>/dev/null || break
      sleep 0.02
    done
    grep -q '^linkemu ready' "$STATE_DIR/$PFX.linkemu.log" ||
      { cat "$STATE_DIR/$PFX.linkemu.log" >&2; LINKEMU_PID=$LPID; echo "LINKEMU_PID=$LPID" > "$STATE_DIR/$PFX.state"; cmd_down; die "linkemu did not start"; }
  fi
  ip -n "$S" addr add "$SRV_IP/24" dev "${PFX}s0"; ip -n "$S" link set "${PFX}s0" up
  ip -n "$C" addr add "$CLI_IP/24" dev "${PFX}c0"; ip -n "$C" link set "${PFX}c0" up
  cat > "$STATE_DIR/$PFX.state" <<EOF
PROFILE=$PROFILE_NAME
RTT_MS=$RTT_MS
RATE_MBIT=$RATE_MBIT
CC=$CC
NS_SRV=$S
NS_CLI=$C
SRV_IP=$SRV_IP
CLI_IP=$CLI_IP
LINKEMU_PID=$LPID
EOF
  echo "linkemu-setup: up $PROFILE_NAME cc=$CC server=$S/$SRV_IP client=$C/$CLI_IP${LPID:+ linkemu pid $LPID}"
}

cmd_verify() {
  local st="$STATE_DIR/$PFX.state"
  [ -f "$st" ] || die "no link is up (prefix $PFX)"
  # shellcheck disable=SC1090
  . "$st"
  # warm the ARP caches, then 20 pings
  ip netns exec "$NS_CLI" ping -q -c 2 -i 0.2 -W 2 "$SRV_IP" >/dev/null 2>&1
  local out line pmin pavg pmax pmdev ok=1 why=""
  out=$(ip netns exec "$NS_CLI" ping -q -c 20 -i 0.05 -W 3 "$SRV_IP" 2>&1)
  line=$(echo "$out" | grep -E '^(rtt|round-trip)')
  if [ -z "$line" ]; then
    pmin=null; pavg=null; pmax=null; pmdev=null; ok=0; why="ping failed"
  else
    read -r pmin pavg pmax pmdev <<<"$(echo "$line" | sed -E 's#.*= *([0-9.]+)/([0-9.]+)/([0-9.]+)/([0-9.]+).*#\1 \2 \3 \4#')"
    if ! awk -v a="$pavg" -v t="$RTT_MS" 'BEGIN{d=a-t; if (d<0) d=-d; exit !(d<=2.0)}'; then
      ok=0; why="ping avg ${pavg} ms not within 2 ms of ${RTT_MS} ms"
    fi
  fi
  local mbit=null dur port=5201 ipid
  if [ "$DO_RATE" = 1 ]; then
    dur=$(awk -v t="$RTT_MS" 'BEGIN{d=3+int(t/50); printf "%d", d}')
    ip netns exec "$NS_CLI" iperf3 -s -1 -B "$CLI_IP" -p $port >/dev/null 2>&1 &
    ipid=$!
    for _ in $(seq 50); do
      ip netns exec "$NS_CLI" ss -ltn 2>/dev/null | grep -q ":$port " && break; sleep 0.05
    done
    local j
    j=$(ip netns exec "$NS_SRV" iperf3 -c "$CLI_IP" -p $port -t "$dur" -O 1 -J 2>/dev/null)
    kill "$ipid" 2>/dev/null; wait "$ipid" 2>/dev/null
    mbit=$(echo "$j" | python3 -c 'import json,sys
try:
  d=json.load(sys.stdin); print("%.2f" % (d["end"]["sum_received"]["bits_per_second"]/1e6))
except Exception: print("null")')
    if [ "$mbit" = null ]; then
      ok=0; why="${why:+$why; }iperf3 failed"
    elif [ "$RATE_MBIT" != 0 ] && ! awk -v m="$mbit" -v r="$RATE_MBIT" -v t="$RATE_TOL_PCT" 'BEGIN{d=(m-r)/r; if (d<0) d=-d; exit !(d<=t/100.0)}'; then
      ok=0; why="${why:+$why; }TCP rate ${mbit} Mbit/s not within ${RATE_TOL_PCT}% of ${RATE_MBIT}"
    fi
  fi
  # the delay line's own timing over the checks: wake-up lateness p99 (timer
  # and scheduling jitter) must stay within MAX_LATE_US; the lateness of
  # frames inside bursts (send cost) is recorded too
  local late=null burst=null
  if [ -n "${LINKEMU_PID:-}" ] && kill -USR1 "$LINKEMU_PID" 2>/dev/null; then
    sleep 0.3
    read -r late burst <<<"$(python3 -c 'import json,sys
try:
  d=json.load(open(sys.argv[1])); print(d["wake_us_p99"], max(d["ab"]["late_us_p99"], d["ba"]["late_us_p99"]))
except Exception: print("null null")' "$STATE_DIR/$PFX.linkemu.json")"
    if [ "$late" != null ] && [ "${late%.*}" -gt "$MAX_LATE_US" ]; then
      ok=0; why="${why:+$why; }delay-line wake-up lateness p99 ${late} us > ${MAX_LATE_US} us (machine overloaded?)"
    fi
  fi
  local okj=false; [ $ok = 1 ] && okj=true
  local res
  res=$(printf '{"profile":"%s","rtt_target_ms":%s,"rate_target_mbit":%s,"cc":"%s","ping_min_ms":%s,"ping_avg_ms":%s,"ping_max_ms":%s,"ping_mdev_ms":%s,"tcp_mbit":%s,"delay_late_us_p99":%s,"delay_burst_late_us_p99":%s,"ok":%s,"reason":"%s"}' \
    "$PROFILE" "$RTT_MS" "$RATE_MBIT" "$CC" "$pmin" "$pavg" "$pmax" "$pmdev" "$mbit" "$late" "$burst" "$okj" "$why")
  [ -n "$JSON" ] && echo "$res" > "$JSON"
  echo "$res"
  [ $ok = 1 ] || { echo "linkemu-setup: link $PROFILE FAILED verification: $why" >&2; return 1; }
  return 0
}

[ $# -ge 1 ] || { sed -n '2,40p' "$0"; exit 2; }
cmd=$1; shift
prof=""
if [ "$cmd" = up ]; then
  [ $# -ge 1 ] || { echo "up needs a profile" >&2; exit 2; }
  prof=$1; shift
fi
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) PFX=$2; shift 2 ;;
    --cc) CC=$2; shift 2 ;;
    --state-dir) STATE_DIR=$2; shift 2 ;;
    --linkemu) LINKEMU=$2; shift 2 ;;
    --json) JSON=$2; shift 2 ;;
    --no-rate) DO_RATE=0; shift ;;
    --max-late-us) MAX_LATE_US=$2; shift 2 ;;
    --rate-tolerance) RATE_TOL_PCT=$2; shift 2 ;;
    *) echo "linkemu-setup: unknown option $1" >&2; exit 2 ;;
  esac
done

case "$cmd" in
  profiles) echo "lan 20/50 80/10 80/50 80/5 150/2" ;;
  up|down|verify)
    [ "$(id -u)" = 0 ] || { echo "linkemu-setup: needs root" >&2; exit 77; }
    case "$cmd" in
      up) cmd_up "$prof" ;;
      down) cmd_down ;;
      verify) cmd_verify ;;
    esac ;;
  *) echo "linkemu-setup: unknown command $cmd" >&2; exit 2 ;;
esac
