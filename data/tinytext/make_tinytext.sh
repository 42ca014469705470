#!/bin/sh
# Rebuilds train.txt and val.txt from Debian's King James Bible (packages bible-kjv, the reader,
# and bible-kjv-text, the compressed text). Usage: data/tinytext/make_tinytext.sh [OUT_DIR]
# Needs apt-get download access; installs nothing.
set -eu
mkdir -p "${1:-$(dirname "$0")}"
out=$(cd "${1:-$(dirname "$0")}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
apt-get download bible-kjv bible-kjv-text >/dev/null 2>&1
for deb in ./*.deb; do dpkg -x "$deb" root; done
cd root/usr/lib

# One book as plain text: a title line, then per chapter a heading and one verse per line.
book() {
  ../bin/bible -p . -f "$1""1:1-$1""999:999" | awk -v name="$1" '
    NR == 1 { print name; print "" }
    {
      ref = $1; sub(/^[^ ]* /, "")
      split(ref, cv, ":"); sub(/^[A-Za-z]*/, "", cv[1])
      if (cv[1] != chapter) { if (chapter != "") print ""; chapter = cv[1]; print name " " chapter; print "" }
      print
    }'
  echo
}

{ book Genesis; book Exodus; } > "$out/train.txt"
{ book Ruth; book Esther; } > "$out/val.txt"
LC_ALL=C grep -q '[^ -~]' "$out/train.txt" "$out/val.txt" && { echo "non-ASCII text found" >&2; exit 1; }
wc -c "$out/train.txt" "$out/val.txt"
