#!/bin/sh
# Checks that the product code (gst-libs/, plugins/, tools/) is formatted by
# tools/gst-indent.sh; prints the diff and exits 1 when it is not.
#   tools/check-format.sh         check
#   tools/check-format.sh --fix   format in place
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
files=$(git ls-files 'gst-libs/*.c' 'plugins/*.c' 'tools/*.c')
if [ "${1:-}" = "--fix" ]; then
  # shellcheck disable=SC2086
  tools/gst-indent.sh $files
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for f in $files; do
  mkdir -p "$tmp/$(dirname "$f")"
  cp "$f" "$tmp/$f"
  tools/gst-indent.sh "$tmp/$f"
  if ! diff -u "$f" "$tmp/$f"; then
    status=1
  fi
done
if [ "$status" -ne 0 ]; then
  echo "check-format: the files above are not in GStreamer style; run tools/check-format.sh --fix" >&2
else
  echo "check-format: $(echo "$files" | wc -l) files in GStreamer style"
fi
exit $status
