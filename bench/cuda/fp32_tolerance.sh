#!/usr/bin/env bash
# How far fp32 training on the GPU drifts from the CPU through summation order alone: the emulated
# GPU (tests/kernels_cuda) trains the toy model at the GPU test's lengths (20 steps of 4 x 64
# tokens, test_gpu_training_emulated_full) against the CPU, with cuBLASLt's products summed in
# several orders (ZT_EMU_SPLIT_K: fused multiply-adds in k order, or slices of 32, 8 and 1 summed
# at the end), the kernels compiled without and with contraction into fused multiply-adds (nvcc
# contracts device code by default; _fma, where this CPU has FMA instructions). The largest
# relative loss difference is what test_gpu_training's fp32 tolerance (kFp32LossTolerance) must
# allow for, with a margin.
#   bench/cuda/fp32_tolerance.sh [BUILD_DIR]      (default build)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
targets=(test_gpu_training_emulated_full)
grep -q "^ZT_HOST_HAS_FMA:INTERNAL=1" "$BUILD/CMakeCache.txt" && targets+=(test_gpu_training_emulated_full_fma)
cmake --build "$BUILD" --target "${targets[@]}" >/dev/null
echo "| executable | GEMM order (ZT_EMU_SPLIT_K) | stage 0 | stage 3 |"
echo "|---|---|---|---|"
for exe in "${targets[@]}"; do
  for split in 4096 32 8 1; do
    out=$(ZT_EMU_SPLIT_K=$split "$BUILD/tests/gpu/$exe" "fp32*" 2>&1) || { echo "$out" | tail -20; exit 1; }
    read -r s0 s3 < <(grep -o "over 20 steps: [0-9.e+-]*" <<<"$out" | awk '{print $4}' | paste -sd' ')
    echo "| $exe | $split | $s0 | $s3 |"
  done
done
