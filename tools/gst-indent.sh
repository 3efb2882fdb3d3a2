#!/bin/sh
# Formats C files in place in GStreamer's style (the options of GStreamer's
# gst-indent, GNU indent 2.2). `tools/gst-indent.sh FILE…`; run by
# tools/check-format.sh on product code.
set -eu
command -v indent >/dev/null || { echo "gst-indent: GNU indent is not installed (apt-get install indent)" >&2; exit 2; }
for f in "$@"; do
  # twice: one pass of indent is not always a fixed point
  for pass in 1 2; do
    indent \
      --braces-on-if-line \
      --case-brace-indentation0 \
      --case-indentation2 \
      --braces-after-struct-decl-line \
      --line-length80 \
      --no-tabs \
      --cuddle-else \
      --dont-line-up-parentheses \
      --continuation-indentation4 \
      --honour-newlines \
      --tab-size8 \
      --indent-level2 \
      --leave-preprocessor-space \
      "$f" -o "$f.indent-tmp"
    mv "$f.indent-tmp" "$f"
  done
done
