#!/usr/bin/env bash
# A GPU test executable that cannot start CUDA (every device hidden) reports itself skipped (exit
# code 77, so CI without a GPU stays green), but fails when ZT_GPU_REQUIRED is set, as bench/gpu.sh
# sets it on the GPU machine: there a skip must never pass as success.
#   gpu_required.sh MPIRUN... -- EXECUTABLE...
set -u
mpirun=()
while [ "$1" != "--" ]; do mpirun+=("$1"); shift; done
shift
status=0
for exe in "$@"; do
  name=$(basename "$exe")
  run=("$exe")
  [ "$name" = test_nccl ] && run=("${mpirun[@]}" -np 1 -x CUDA_VISIBLE_DEVICES -x ZT_GPU_REQUIRED "$exe")
  out=$(CUDA_VISIBLE_DEVICES= ZT_GPU_REQUIRED= "${run[@]}" 2>&1)
  code=$?
  if [ "$name" = test_nccl ]; then
    # CTest skips test_nccl by the line it prints (SKIP_REGULAR_EXPRESSION).
    grep -q "test_nccl: skipped" <<<"$out" || { echo "$name without ZT_GPU_REQUIRED: no skip line: $out"; status=1; }
  elif [ $code -ne 77 ]; then
    echo "$name without ZT_GPU_REQUIRED: exit $code, expected 77 (skipped): $out"; status=1
  fi
  out=$(CUDA_VISIBLE_DEVICES= ZT_GPU_REQUIRED=1 "${run[@]}" 2>&1)
  code=$?
  if [ $code -eq 0 ] || [ $code -eq 77 ] || grep -q "skipped" <<<"$out"; then
    echo "$name with ZT_GPU_REQUIRED=1: exit $code, expected a failure that is no skip: $out"; status=1
  else
    echo "$name: skipped without a GPU, failed where one is required (exit $code)"
  fi
done
exit $status
