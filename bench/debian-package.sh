#!/bin/sh
# The Debian package, end to end (docs/operator-guide.md "Installing"):
#  1. dpkg-buildpackage -us -uc -b on a copy of the source tree (the
#     tracked and untracked, not ignored, files), so the tree stays clean
#     and the packages land in OUT;
#  2. lintian: no error (warnings and notes listed in OUT/lintian.txt);
#  3. no RPATH or RUNPATH in any installed ELF file (--prefix=/usr);
#  4. bench/debian-chroot.py: the packages installed into a clean Debian 12
#     minbase (mmdebstrap from the configured mirror, cached for a week
#     under /var/cache/gst-spice-debian), the unit's ExecStart run with
#     the unit's environment under its sandbox, the exact picture.
# Needs root, debhelper, lintian, mmdebstrap, bubblewrap, python3-seccomp
# (apt-get install debhelper help2man lintian mmdebstrap) and
# deb.debian.org; a few minutes (the figures are in operator-guide.md).
# Not in the test suite: it downloads about 50 MB of packages the first
# time; tests/install/test-debian.py checks debian/ against the build in
# the suite.
#
#   bench/debian-package.sh [HOST_BUILD_DIR] (default build: its
#   spice-test-guest is the upstream)
# SPDX-License-Identifier: LGPL-2.1-or-later
set -eu

SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$SRC/build}" && pwd)
OUT=${OUT:-/tmp/gst-spice-debian}
CACHE=/var/cache/gst-spice-debian
ROOTFS=$CACHE/bookworm-minbase.tar

rm -rf "$OUT"
mkdir -p "$OUT/src" "$CACHE"
(cd "$SRC" && git ls-files -z -c -o --exclude-standard |
  tar --null -T - -cf -) | tar -xf - -C "$OUT/src"

t=$(date +%s)
if ! (cd "$OUT/src" && nice dpkg-buildpackage -us -uc -b -j2) \
    > "$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"
  echo "FAIL dpkg-buildpackage (log: $OUT/build.log)"
  exit 1
fi
echo "ok   dpkg-buildpackage -us -uc -b: $(($(date +%s) - t)) s"
ls "$OUT"/*.deb

t=$(date +%s)
if ! nice lintian --fail-on error --pedantic --info --display-info \
    "$OUT"/gst-spice_*.changes > "$OUT/lintian.txt" 2>&1; then
  grep '^E:' "$OUT/lintian.txt" || cat "$OUT/lintian.txt"
  echo "FAIL lintian reports errors"
  exit 1
fi
echo "ok   lintian: no error ($(($(date +%s) - t)) s); tags:"
grep -E '^[EWIPX]:' "$OUT/lintian.txt" | sort | uniq -c || true

mkdir "$OUT/x"
for d in "$OUT"/*.deb; do
  dpkg-deb -x "$d" "$OUT/x"
done
rpaths=$(find "$OUT/x" -type f -exec sh -c \
  'readelf -d "$1" 2>/dev/null | grep -E "\((RPATH|RUNPATH)\)" |
   sed "s|^|$1: |"' sh {} \;)
if [ -n "$rpaths" ]; then
  echo "$rpaths"
  echo "FAIL an RPATH in the packages"
  exit 1
fi
echo "ok   no RPATH or RUNPATH in $(find "$OUT/x" -type f \( -name '*.so*' \
  -o -path '*/bin/*' \) | wc -l) files of /usr/bin and libraries"

if [ -z "$(find "$ROOTFS" -mtime -7 2>/dev/null)" ]; then
  t=$(date +%s)
  rm -f "$ROOTFS"
  nice mmdebstrap --variant=minbase --skip=cleanup/apt/lists bookworm \
    "$ROOTFS" "deb http://deb.debian.org/debian bookworm main" \
    "deb http://deb.debian.org/debian bookworm-updates main" \
    "deb http://deb.debian.org/debian-security bookworm-security main" \
    > "$OUT/mmdebstrap.log" 2>&1
  echo "ok   mmdebstrap bookworm minbase: $(($(date +%s) - t)) s"
fi
"$SRC/bench/debian-chroot.py" "$ROOTFS" "$OUT" "$BUILD"
