#!/bin/sh
# Installs the build into a temporary DESTDIR and builds a program against
# what was installed alone: the headers under include/gstreamer-1.0/gst/spice
# and gstreamer-spice-1.0.pc (relocated to the DESTDIR), then runs it. Also
# checks that every public header is installed and that the library exports
# only its API (gst_spice_*, gst_buffer_*_spice_*).
#   test-install.sh BUILD_DIR SOURCE_HEADER_DIR MESON CC [CFLAG...]
set -eu
build=$1
headers=$2
meson=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "test-install: $*" >&2
  exit 1
}

"$meson" install -C "$build" --no-rebuild --destdir "$tmp/root" \
  --tags devel,runtime >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log"; fail "meson install failed"; }
pc=$(find "$tmp/root" -name gstreamer-spice-1.0.pc)
[ -n "$pc" ] || fail "no gstreamer-spice-1.0.pc installed"
prefix=$(sed -n 's/^prefix=//p' "$pc")
[ -n "$prefix" ] || fail "no prefix in $pc"

incdir=$tmp/root$prefix/include/gstreamer-1.0/gst/spice
for h in "$headers"/*.h; do
  [ -f "$incdir/$(basename "$h")" ] || fail "$(basename "$h") not installed"
done

mkdir "$tmp/pc"
sed "s|^prefix=.*|prefix=$tmp/root$prefix|" "$pc" >"$tmp/pc/gstreamer-spice-1.0.pc"
PKG_CONFIG_PATH=$tmp/pc
export PKG_CONFIG_PATH
flags=$(pkg-config --cflags --libs gstreamer-spice-1.0) ||
  fail "pkg-config cannot use the installed gstreamer-spice-1.0.pc"
echo "pkg-config: $flags"
case "$flags" in
  *"$build"*|*gst-libs*) fail "the installed .pc points into the build" ;;
esac

libdir=$(pkg-config --variable=libdir gstreamer-spice-1.0)
lib=$libdir/libgstspice-1.0.so
[ -f "$lib" ] || fail "$lib not installed"
extra=$(nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }' |
  grep -v -e '^gst_spice_' -e '^gst_buffer_add_spice_' || true)
[ -z "$extra" ] || fail "exported beyond GST_SPICE_API: $extra"
nm -D --defined-only "$lib" | grep -q ' T gst_spice_wire_write_ping$' ||
  fail "gst_spice_wire_write_ping is not exported"

cat >"$tmp/prog.c" <<'PROG'
#include <gst/spice/gstspice.h>
#include <stdio.h>

int
main (void)
{
  GByteArray *a = g_byte_array_new ();
  GstVideoRectangle r = { 1, 2, 3, 4 };
  guint32 id = 0;
  guint64 ts = 0;
  int ok;

  gst_spice_wire_write_ping (a, 7, 99);
  ok = gst_spice_wire_parse_pong (a->data, a->len, &id, &ts) && id == 7 &&
      ts == 99 && gst_spice_rect_area (&r) == 12;
  g_byte_array_unref (a);
  printf ("%s\n", ok ? "ok" : "wrong");
  return ok ? 0 : 1;
}
PROG
# shellcheck disable=SC2086
"$@" -o "$tmp/prog" "$tmp/prog.c" $flags ||
  fail "a program does not build against the installed headers and .pc"
LD_LIBRARY_PATH=$libdir "$tmp/prog" || fail "the program does not run"
