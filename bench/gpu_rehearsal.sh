#!/usr/bin/env bash
# bench/gpu.sh's one call rehearsed on a machine without a GPU, as the GPU machine will see it: a
# fresh copy of the repository with the bundle scripts/gpu_bundle.sh pack wrote (.gpu/), run in a
# mount namespace where the tree the bundle was packed in is hidden (an empty directory over its
# parent) and every file of the carried Debian packages is hidden on the system (an empty file bound
# over it), so that only .gpu/deps can provide them. Needs root (unshare -m). Without a GPU the GPU
# phases must fail, each naming the missing device; what the rehearsal checks is that everything
# before them works: unpack, the libraries, mpirun, the results file.
#   bench/gpu_rehearsal.sh [COPY_DIR]     (default /tmp/zerotrain-rehearsal)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
COPY=${1:-/tmp/zerotrain-rehearsal}
[ -f "$ROOT/.gpu/root.txt" ] || { echo "bench/gpu_rehearsal.sh: no bundle: run scripts/gpu_bundle.sh pack first" >&2; exit 1; }
packed=$(cat "$ROOT/.gpu/root.txt")
case $COPY in "$(dirname "$packed")"/*) echo "bench/gpu_rehearsal.sh: $COPY would be hidden with the packing tree" >&2; exit 1 ;; esac
rm -rf "$COPY"
mkdir -p "$COPY"
(cd "$ROOT" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -xf - -C "$COPY"
cp -r "$ROOT/.gpu" "$COPY/"
empty=$(mktemp)
exec unshare -m bash -c '
  set -e
  mount --make-rprivate /
  mount -t tmpfs none "$(dirname "$1")"
  hidden=0
  while read -r f; do
    if [ -f "/$f" ] && [ ! -L "/$f" ]; then mount --bind "$2" "/$f"; hidden=$((hidden + 1)); fi
  done <"$3/.gpu/rootfs.list"
  echo "rehearsal: $1 hidden, $hidden files of the carried packages hidden on the system"
  cd "$3" && exec bench/gpu.sh
' rehearsal "$packed" "$empty" "$COPY"
