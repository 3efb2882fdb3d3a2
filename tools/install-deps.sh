#!/bin/sh
# Install the Debian packages listed in tools/debian-packages.txt that are
# missing. Needs root (or sudo) only when something is missing.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
pkgs=$(grep -v '^[[:space:]]*#' "$here/debian-packages.txt" | tr -s ' \n' ' ')
missing=""
for p in $pkgs; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$status" = "installed" ] || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "install-deps: installing:$missing" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q >&2
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing >&2
