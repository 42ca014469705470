#!/usr/bin/env bash
# The GPU tests and benchmark on a machine that has a GPU, the CUDA toolkit and NCCL, but none of
# the Debian packages zerotrain builds with (spdlog, oneDNN, Open MPI, ...) and no network: build
# on a development machine, carry the build and those packages' files, put them in place there.
#
#   scripts/gpu_bundle.sh pack     # here: build build-gpu (bench/gpu.sh build: CUDA on, sm_90), then
#                                  # write .gpu/: build.tar.xz (the executables ctest -L gpu and the
#                                  # benchmark run, CTest's files), rootfs.tar.xz (the files of the
#                                  # Debian packages they load, Open MPI's mpirun included), root.txt
#   scripts/gpu_bundle.sh unpack   # there, in the repository's copy: put them in place, write
#                                  # .gpu/env.sh (library path, Open MPI's relocated prefix, the
#                                  # machine's CUDA libraries)
#
# Then, there: . .gpu/env.sh && bench/gpu.sh test bench
#
# The package files go to .gpu/deps, never over the machine's own: env.sh points the loader, Open
# MPI and PMIx there. The executables name files by the absolute paths of the build (the
# repository's root, the build directory): unpack makes the recorded root a link to the copy when
# the copy lives elsewhere, the one change it makes outside the copy.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUNDLE=$ROOT/.gpu
BUILD=$ROOT/build-gpu
DEPS=$BUNDLE/deps
MULTIARCH=usr/lib/x86_64-linux-gnu
# What `ctest -L gpu`, test_backend_choice and the benchmark run.
EXECUTABLES=(zerotrain test_kernels_cuda test_nccl test_backend_choice test_gpu_backend test_gpu_training
  test_gpu_zerotrain)
# Present on any Linux with a C++ runtime; the machine's own versions are used.
SYSTEM_PACKAGES="libc6 libgcc-s1 libstdc++6 libudev1 libuuid1 zlib1g"

executables() {
  local name path
  for name in "${EXECUTABLES[@]}"; do
    path=$(find "$BUILD" -type f -name "$name" -perm -u+x -not -path '*/CMakeFiles/*' | head -1)
    [ -n "$path" ] || { echo "gpu_bundle: $name was not built in $BUILD" >&2; exit 1; }
    echo "$path"
  done
}

# The Debian packages whose libraries the executables, mpirun and Open MPI's plugins load.
packages() {
  local files
  files=$( (executables | xargs ldd; ldd /usr/bin/orterun /usr/bin/orted
    find /usr/lib/x86_64-linux-gnu/openmpi -name '*.so' -exec ldd {} \;) 2>/dev/null |
    awk '/=> \// {print $3}' | grep -v '^/usr/local/cuda' | sort -u)
  {
    for f in $files; do dpkg -S "$(readlink -f "$f")" 2>/dev/null || dpkg -S "$f" 2>/dev/null || true; done |
      cut -d: -f1
    echo openmpi-bin
    echo openmpi-common
  } | sort -u | grep -vxF -f <(tr ' ' '\n' <<<"$SYSTEM_PACKAGES")
}

pack() {
  BUILD_DIR=$BUILD "$ROOT/bench/gpu.sh" build
  mkdir -p "$BUNDLE"
  grep -qxF '/.gpu/' "$ROOT/.gitignore" || echo "gpu_bundle: .gpu/ is not git-ignored" >&2
  echo "$ROOT" >"$BUNDLE/root.txt"

  local list=$BUNDLE/build.list
  { executables; find "$BUILD" -name CTestTestfile.cmake; } | sed "s|^$ROOT/||" >"$list"
  tar -cJf "$BUNDLE/build.tar.xz" -C "$ROOT" -T "$list"

  # Files and links to files (not /lib itself, a link to a directory on merged-/usr systems).
  local pkgs
  pkgs=$(packages)
  list=$BUNDLE/rootfs.list
  for p in $pkgs; do dpkg -L "$p"; done | grep -Ev '^/usr/share/(doc|man|lintian)/' | sort -u |
    while read -r f; do
      if [ ! -d "$f" ] && { [ -f "$f" ] || [ -L "$f" ]; }; then echo "${f#/}"; fi
    done >"$list"
  tar -cJf "$BUNDLE/rootfs.tar.xz" -C / -T "$list"
  echo "gpu_bundle: $BUNDLE: $(du -sh "$BUNDLE" | cut -f1) ($(wc -l <"$BUNDLE/build.list") build files," \
    "$(wc -l <"$list") files of the packages $(tr '\n' ' ' <<<"$pkgs"))"
}

# The machine's directories holding the CUDA libraries the executables need and the bundle lacks:
# its toolkit's, and NCCL (or cuBLAS) from PyTorch's wheels where the toolkit has none.
cuda_library_dirs() {  # LD_LIBRARY_PATH with the bundle's libraries
  local lib found
  for lib in $(LD_LIBRARY_PATH=$1 ldd "$BUILD/zerotrain" "$BUILD"/tests/*/test_* 2>/dev/null |
    awk '/not found/ {print $1}' | sort -u); do
    found=$(find / -xdev \( -path /proc -o -path /sys -o -path "$DEPS" \) -prune -o -name "$lib" -print 2>/dev/null |
      head -1)
    if [ -n "$found" ]; then dirname "$found"; else echo "gpu_bundle: $lib is on this machine nowhere" >&2; fi
  done | sort -u | paste -sd:
}

unpack() {
  [ -f "$BUNDLE/root.txt" ] || { echo "gpu_bundle: no $BUNDLE/root.txt: run 'scripts/gpu_bundle.sh pack' first" >&2; exit 1; }
  local root path cuda
  root=$(cat "$BUNDLE/root.txt")
  rm -rf "$DEPS"
  mkdir -p "$DEPS"
  tar -xJf "$BUNDLE/rootfs.tar.xz" -C "$DEPS"
  tar -xJf "$BUNDLE/build.tar.xz" -C "$ROOT"
  # CTest starts the multi-rank tests with the build machine's mpiexec: the carried one instead.
  find "$BUILD" -name CTestTestfile.cmake -exec sed -i "s|\"/usr/bin/mpiexec\"|\"$DEPS/usr/bin/orterun\"|g" {} +
  if [ "$root" != "$ROOT" ] && [ ! -e "$root" ]; then
    mkdir -p "$(dirname "$root")"
    ln -s "$ROOT" "$root"
  fi

  path=$DEPS/$MULTIARCH:$DEPS/lib/x86_64-linux-gnu:$DEPS/$MULTIARCH/openmpi/lib:$DEPS/$MULTIARCH/pmix2/lib
  cuda=$(cuda_library_dirs "$path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  {
    echo "# Written by scripts/gpu_bundle.sh unpack: the carried packages, the machine's CUDA libraries."
    echo "export ZT_BASE_LD_LIBRARY_PATH=\"\${LD_LIBRARY_PATH:-}\"  # for programs other than zerotrain's"
    echo "export LD_LIBRARY_PATH=\"$path${cuda:+:$cuda}\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}\""
    echo "export PATH=\"$DEPS/usr/bin:\$PATH\""
    echo "export OPAL_PREFIX=\"$DEPS/usr\""
    echo "export PMIX_INSTALL_PREFIX=\"$DEPS/$MULTIARCH/pmix2\""
    echo "export OMPI_MCA_mca_base_component_show_load_errors=0  # plugins for networks this machine lacks"
  } >"$BUNDLE/env.sh"
  # shellcheck disable=SC1091
  . "$BUNDLE/env.sh"
  if ldd "$BUILD/zerotrain" "$BUILD"/tests/*/test_* | grep "not found" >&2; then exit 1; fi
  echo "gpu_bundle: in place ($root -> $ROOT); . $BUNDLE/env.sh sets LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
}

case ${1:-} in
  pack) pack ;;
  unpack) unpack ;;
  *) echo "usage: scripts/gpu_bundle.sh pack|unpack" >&2; exit 2 ;;
esac
