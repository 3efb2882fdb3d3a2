#!/bin/sh
# The Debian package, end to end (docs/operator-guide.md "Installing"):
#  1. dpkg-buildpackage -us -uc -b on a copy of the source tree (the
#     tracked and untracked, not ignored, files), so the tree stays clean
#     and the packages land in OUT;
#  2. lintian: no error (every tag it reports is printed);
#  3. no RPATH or RUNPATH in any packaged ELF file (--prefix=/usr);
#  4. debian-chroot.py: the packages installed into a clean Debian 12
#     minbase (mmdebstrap from deb.debian.org, cached for a week under
#     /var/cache/gst-spice-debian), the unit's ExecStart run with the
#     unit's environment under its sandbox: the guest's exact picture.
# The suite's `debian-package` test (tests/install, not in sanitizer
# builds). Needs root, the "Debian package" section of
# tools/debian-packages.txt and deb.debian.org; about 2 minutes here
# (build 45 s, lintian 6 s, chroot 70 s), a minute more the first time
# (mmdebstrap, 50 MB of packages). Exit 77 (skipped) when not root.
#
#   tests/install/debian-package.sh [HOST_BUILD_DIR] (default build: its
#   spice-test-guest is the upstream)
# SPDX-License-Identifier: LGPL-2.1-or-later
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BUILD=$(cd "${1:-$SRC/build}" && pwd)
CACHE=/var/cache/gst-spice-debian
ROOTFS=$CACHE/bookworm-minbase.tar

if [ "$(id -u)" != 0 ]; then
  echo "skip: not root (dpkg-buildpackage is fine, the chroot is not)"
  exit 77
fi
# meson test's (the build tree's libgstspice) must not reach the package
unset LD_LIBRARY_PATH GST_PLUGIN_PATH GST_PLUGIN_PATH_1_0 GST_REGISTRY \
  GST_REGISTRY_1_0
OUT=$(mktemp -d /tmp/gst-spice-debian-XXXXXX)
trap 'rm -rf "$OUT"' EXIT
mkdir -p "$OUT/src" "$CACHE"
(cd "$SRC" && git ls-files -z -c -o --exclude-standard |
  tar --null -T - -cf -) | tar -xf - -C "$OUT/src"

t=$(date +%s)
if ! (cd "$OUT/src" && nice dpkg-buildpackage -us -uc -b -j2) \
    > "$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"
  echo "FAIL dpkg-buildpackage"
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
echo "ok   lintian: no error ($(($(date +%s) - t)) s); its tags:"
grep -E '^[EWIPXO]:' "$OUT/lintian.txt" || echo "  none"

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

# one run at a time uses the cache (apt's lock is in the shared archives)
exec 9>"$CACHE/lock"
flock 9
if [ -z "$(find "$ROOTFS" -mtime -7 2>/dev/null)" ]; then
  t=$(date +%s)
  rm -f "$ROOTFS"
  if ! nice mmdebstrap --variant=minbase --skip=cleanup/apt/lists bookworm \
      "$ROOTFS" "deb http://deb.debian.org/debian bookworm main" \
      "deb http://deb.debian.org/debian bookworm-updates main" \
      "deb http://deb.debian.org/debian-security bookworm-security main" \
      > "$OUT/mmdebstrap.log" 2>&1; then
    tail -20 "$OUT/mmdebstrap.log"
    rm -f "$ROOTFS"
    echo "FAIL mmdebstrap"
    exit 1
  fi
  echo "ok   mmdebstrap bookworm minbase: $(($(date +%s) - t)) s"
fi
"$HERE/debian-chroot.py" "$ROOTFS" "$OUT" "$BUILD"
