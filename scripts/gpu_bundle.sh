#!/usr/bin/env bash
# The GPU tests and benchmark on a machine that has a GPU, the CUDA toolkit and NCCL, but none of
# the Debian packages zerotrain builds with (spdlog, oneDNN, Open MPI, ...) and no network: build
# on a development machine, carry the build and those packages' files, put them in place there.
#
#   scripts/gpu_bundle.sh pack     # here: build build-gpu (bench/gpu.sh build: CUDA on, sm_90), then
#                                  # write .gpu/: build.tar.xz (the executables of ctest's
#                                  # gpu-labelled tests and of bench/gpu.sh's phases, CTest's files),
#                                  # rootfs.tar.xz (the files of the Debian packages they load, Open
#                                  # MPI's mpirun included), root.txt and build.txt (where it was built)
#   scripts/gpu_bundle.sh pack --emulated   # the same from an emulated build (BUILD_DIR, default
#                                  # build): each executable replaced by its *_emulated twin, so that
#                                  # bench/gpu_rehearsal.sh runs the GPU run's calls without a GPU
#   scripts/gpu_bundle.sh unpack   # there, in the repository's copy: put them in place, write
#                                  # .gpu/env.sh (library path, Open MPI's relocated prefix, the
#                                  # machine's CUDA libraries: its toolkit's first, then its
#                                  # python3's CUDA wheels; never a driver stub)
#   scripts/gpu_bundle.sh targets BUILD       # the CMake targets the GPU run needs (configured BUILD)
#   scripts/gpu_bundle.sh executables BUILD   # their files in BUILD (an error names any missing)
#   scripts/gpu_bundle.sh find-library SONAME # where unpack takes that CUDA library from
#
# Then, there: bench/gpu.sh call1, bench/gpu.sh call2 (DEVELOPERS.md, "The GPU run").
#
# The package files go to .gpu/deps, never over the machine's own: env.sh points the loader, Open
# MPI and PMIx there. The executables name files by the absolute paths of the build (the
# repository's root, the build directory): unpack makes the recorded root a link to the copy when
# the copy lives elsewhere, the one change it makes outside the copy. BUNDLE_DIR writes the bundle
# elsewhere than .gpu/.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUNDLE=${BUNDLE_DIR:-$ROOT/.gpu}
BUILD=${BUILD_DIR:-$ROOT/build-gpu}
[ -f "$BUNDLE/build.txt" ] && [ "${1:-}" = unpack ] && BUILD=$ROOT/$(cat "$BUNDLE/build.txt")
DEPS=$BUNDLE/deps
MULTIARCH=usr/lib/x86_64-linux-gnu
# What bench/gpu.sh runs besides the gpu-labelled tests: test_backend_choice, the binary (its
# benchmarks, and test_gpu_zerotrain's), bench_kernels and gpu_versions.
EXTRA_TARGETS=(zerotrain test_backend_choice bench_kernels gpu_versions)
# Present on any Linux with a C++ runtime; the machine's own versions are used.
SYSTEM_PACKAGES="libc6 libgcc-s1 libstdc++6 libudev1 libuuid1 zlib1g"

# The executables of ctest's gpu-labelled tests in a configured build: every path of a test's
# command line that lies in the build (mpiexec's arguments skipped), links resolved (an unpacked
# build names the files by the paths of the tree it was packed in).
labelled_executables() {  # build
  local build
  build=$(realpath "$1")
  ctest --test-dir "$build" -N -V -L gpu | sed -n 's/^[0-9]*: Test command: //p' | tr ' ' '\n' | tr -d '"' |
    grep '^/' | xargs -r realpath -m | grep "^$build/" | sort -u
}

targets() {  # build
  { labelled_executables "$1" | xargs -r -n1 basename; printf '%s\n' "${EXTRA_TARGETS[@]}"; } | sort -u
}

# The file of each target in the build; a target not built is an error naming it.
executables() {  # build
  local name path missing=""
  for name in $(targets "$1"); do
    path=$(find "$1" -type f -name "$name" -perm -u+x -not -path '*/CMakeFiles/*' | head -1)
    if [ -n "$path" ]; then echo "$path"; else missing+=" $name"; fi
  done
  [ -z "$missing" ] || { echo "gpu_bundle: not built in $1:$missing" >&2; return 1; }
}

# The Debian packages whose libraries the executables ($@), mpirun and Open MPI's plugins load.
packages() {
  local files
  files=$( (ldd "$@"; ldd /usr/bin/orterun /usr/bin/orted
    find /usr/lib/x86_64-linux-gnu/openmpi -name '*.so' -exec ldd {} \;) 2>/dev/null |
    awk '/=> \// {print $3}' | grep -v '^/usr/local/cuda' | sort -u)
  {
    for f in $files; do dpkg -S "$(readlink -f "$f")" 2>/dev/null || dpkg -S "$f" 2>/dev/null || true; done |
      cut -d: -f1
    echo openmpi-bin
    echo openmpi-common
  } | sort -u | grep -vxF -f <(tr ' ' '\n' <<<"$SYSTEM_PACKAGES")
}

# The bundle: the build's files (under stage/ when they differ from the build's), CTest's files, and
# the packages' files; root.txt and build.txt say where the build was.
write_bundle() {  # stage executables...
  local stage=$1 list pkgs rel carried=()
  shift
  grep -qxF '/.gpu/' "$ROOT/.gitignore" || echo "gpu_bundle: .gpu/ is not git-ignored" >&2
  echo "$ROOT" >"$BUNDLE/root.txt"
  realpath --relative-to="$ROOT" "$BUILD" >"$BUNDLE/build.txt"
  case $(cat "$BUNDLE/build.txt") in ../*) echo "gpu_bundle: the build $BUILD is not inside $ROOT" >&2; exit 1 ;; esac
  list=$BUNDLE/build.list
  find "$BUILD" -name CTestTestfile.cmake | sed "s|^$ROOT/||" >"$list"
  : >"$list.stage"
  for rel in $(printf '%s\n' "$@" | sed "s|^$ROOT/||"); do
    if [ -n "$stage" ] && [ -e "$stage/$rel" ]; then
      echo "$rel" >>"$list.stage"
      carried+=("$stage/$rel")
    else
      echo "$rel" >>"$list"
      carried+=("$ROOT/$rel")
    fi
  done
  tar -cJf "$BUNDLE/build.tar.xz" -C "$ROOT" -T "$list" -C "${stage:-$ROOT}" -T "$list.stage"
  cat "$list.stage" >>"$list"
  rm "$list.stage"

  # Files and links to files (not /lib itself, a link to a directory on merged-/usr systems).
  pkgs=$(packages "${carried[@]}")
  list=$BUNDLE/rootfs.list
  for p in $pkgs; do dpkg -L "$p"; done | grep -Ev '^/usr/share/(doc|man|lintian)/' | sort -u |
    while read -r f; do
      if [ ! -d "$f" ] && { [ -f "$f" ] || [ -L "$f" ]; }; then echo "${f#/}"; fi
    done >"$list"
  tar -cJf "$BUNDLE/rootfs.tar.xz" -C / -T "$list"
  echo "gpu_bundle: $BUNDLE: $(du -sh "$BUNDLE" | cut -f1) ($(wc -l <"$BUNDLE/build.list") build files," \
    "$(wc -l <"$list") files of the packages $(tr '\n' ' ' <<<"$pkgs"))"
}

pack() {
  BUILD_DIR=$BUILD "$ROOT/bench/gpu.sh" build
  mkdir -p "$BUNDLE"
  local files
  files=$(executables "$BUILD")
  # shellcheck disable=SC2086
  write_bundle "" $files
}

# An emulated build's bundle: every executable the GPU run needs as its *_emulated twin where the
# build has one (gpu_versions has none: it runs as built), under the name the real one has, and
# zerotrain_emulated itself (test_gpu_zerotrain_emulated runs it by its path).
pack_emulated() {
  BUILD=${BUILD_DIR:-$ROOT/build}
  local stage name path twin files=()
  mkdir -p "$BUNDLE"
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' RETURN
  for path in $(executables "$BUILD"); do
    name=$(basename "$path")
    twin=$(find "$BUILD" -type f -name "${name}_emulated" -perm -u+x -not -path '*/CMakeFiles/*' | head -1)
    if [ -n "$twin" ]; then
      mkdir -p "$stage/$(dirname "${path#"$ROOT"/}")"
      cp "$twin" "$stage/${path#"$ROOT"/}"
    fi
    files+=("$path")
  done
  path=$(find "$BUILD" -type f -name zerotrain_emulated -perm -u+x -not -path '*/CMakeFiles/*' | head -1)
  [ -n "$path" ] || { echo "gpu_bundle: zerotrain_emulated is not built in $BUILD" >&2; exit 1; }
  files+=("$path")
  write_bundle "$stage" "${files[@]}"
}

# Where this machine keeps CUDA's libraries, most trusted first: its toolkit, then the CUDA wheels
# of its python3 (PyTorch's NCCL and cuBLAS). ZT_SYSROOT (default /) roots every path (tests).
cuda_search_dirs() {
  local root=${ZT_SYSROOT:-} d
  for d in ${CUDA_HOME:+"$CUDA_HOME"} /usr/local/cuda $(ls -d "$root"/usr/local/cuda-* 2>/dev/null | sed "s|^$root||" | sort -rV); do
    echo "$root$d/lib64"
    echo "$root$d/targets/x86_64-linux/lib"
  done
  find "$root/" -xdev \( -path "$root/proc" -o -path "$root/sys" \) -prune -o \
    -type d -path '*/site-packages/nvidia/*/lib' -print 2>/dev/null | sort
}

# The directory that holds CUDA library $1 (a SONAME): the first of cuda_search_dirs that has it;
# else the one place on disk that has it, never a driver stub or compat copy. Several such places
# and none of them trusted: an error naming them (LD_LIBRARY_PATH decides, not the order of find).
find_library() {
  local root=${ZT_SYSROOT:-} d found
  while read -r d; do
    if [ -e "$d/$1" ]; then echo "$d"; return 0; fi
  done < <(cuda_search_dirs)
  found=$(find "$root/" -xdev \( -path "$root/proc" -o -path "$root/sys" -o -path "$DEPS" \) -prune -o \
    -name "$1" -not -path '*/stubs/*' -not -path '*/compat/*' -print 2>/dev/null | xargs -r -n1 dirname | sort -u)
  case $(grep -c . <<<"$found") in
    0) echo "gpu_bundle: $1 is on this machine nowhere" >&2; return 1 ;;
    1) echo "$found" ;;
    *) echo "gpu_bundle: $1 is in several places outside the CUDA toolkit and its wheels:" $found \
         "(put the right one on LD_LIBRARY_PATH)" >&2; return 1 ;;
  esac
}

# The machine's directories holding the CUDA libraries the executables need and the bundle lacks.
# The executables the bundle carries (as unpacked here).
carried_executables() { grep -v 'CTestTestfile.cmake$' "$BUNDLE/build.list" | sed "s|^|$ROOT/|"; }

cuda_library_dirs() {  # LD_LIBRARY_PATH with the bundle's libraries
  local lib dir dirs="" files
  mapfile -t files < <(carried_executables)
  for lib in $(LD_LIBRARY_PATH=$1 ldd "${files[@]}" 2>/dev/null |
    awk '/not found/ {print $1}' | sort -u); do
    dir=$(find_library "$lib") || return 1
    dirs+="$dir"$'\n'
  done
  sort -u <<<"$dirs" | sed '/^$/d' | paste -sd:
}

unpack() {
  [ -f "$BUNDLE/root.txt" ] || { echo "gpu_bundle: no $BUNDLE/root.txt: run 'scripts/gpu_bundle.sh pack' first" >&2; exit 1; }
  local root path cuda files
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
  cuda=$(cuda_library_dirs "$path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}") || exit 1
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
  mapfile -t files < <(carried_executables)
  if ldd "${files[@]}" | grep "not found" >&2; then exit 1; fi
  echo "gpu_bundle: in place ($root -> $ROOT); . $BUNDLE/env.sh sets LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
}

case ${1:-} in
  pack) if [ "${2:-}" = --emulated ]; then pack_emulated; else pack; fi ;;
  unpack) unpack ;;
  targets) targets "$2" ;;
  executables) executables "$2" ;;
  find-library) find_library "$2" ;;
  *) echo "usage: scripts/gpu_bundle.sh pack [--emulated]|unpack|targets BUILD|executables BUILD|find-library SONAME" >&2
     exit 2 ;;
esac
