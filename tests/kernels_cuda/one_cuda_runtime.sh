#!/usr/bin/env bash
# Every executable and shared library of the build links one CUDA runtime: the shared libcudart
# that CUDA::cudart names, never also the static one that CMake adds for targets with CUDA sources
# (two runtimes in a process keep two sets of device state).
#   one_cuda_runtime.sh BUILD_DIR
set -u
build=$1
status=0
while IFS= read -r -d '' file; do
  case $file in
    */link.txt) lines=$(cat "$file") ;;
    *) lines=$(grep -E '^\s*LINK_LIBRARIES' "$file") ;;  # build.ninja: one line per link
  esac
  while IFS= read -r line; do
    if grep -q 'cudart_static' <<<"$line" && grep -Eq 'libcudart\.so|-lcudart( |$)' <<<"$line"; then
      echo "both CUDA runtimes linked ($file): $(grep -oE '[^ ]*cudart[^ ]*' <<<"$line" | sort -u | tr '\n' ' ')"
      status=1
    fi
  done <<<"$lines"
done < <(find "$build" \( -name link.txt -o -name build.ninja \) -print0)
[ $status -eq 0 ] && echo "one CUDA runtime per link"
exit $status
