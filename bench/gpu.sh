#!/usr/bin/env bash
# zerotrain on one NVIDIA GPU, in one command: build with CUDA, run the GPU tests, then train
# GPT-2 124M at T=1024 in bf16 with the largest micro-batch that fits (64, 32, 16, 8) and report
# tokens/s and MFU; when python3 has torch, the same model, batch and sequence length in PyTorch
# (bf16 autocast, scaled_dot_product_attention, torch.compile) for comparison.
#
#   bench/gpu.sh                 # everything: build, test, bench (meant to fit 10 minutes on an H100)
#   bench/gpu.sh build test      # any of the phases, in order: build, test, bench
#
# Writes under bench/out/gpu/: gpu.log (this script's whole output), ctest.log, zerotrain-b<B>.plan
# (--dry-run), .log and .jsonl per micro-batch tried, torch.json and torch.log, and results.md (the
# table). With $OUT set, results.md, gpu.log and ctest.log are copied there at the end, and all of
# bench/out/gpu/ as gpu-bench.tar.gz. Needs no network. Environment: BUILD_DIR (default build-gpu),
# STEPS (timed zerotrain steps after 5 warm-up steps, default 20), CUDA_ARCH (default 90),
# ZT_PEAK_TFLOPS (the GPU's peak when zerotrain's table does not know it).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUTDIR=$ROOT/bench/out/gpu
if [ -n "${OUT:-}" ]; then
  copy_out() {
    mkdir -p "$OUT"
    for f in results.md gpu.log ctest.log; do [ -f "$OUTDIR/$f" ] && cp "$OUTDIR/$f" "$OUT/"; done
    tar -czf "$OUT/gpu-bench.tar.gz" -C "$OUTDIR" .
  }
  trap copy_out EXIT
fi
BUILD=${BUILD_DIR:-$ROOT/build-gpu}
STEPS=${STEPS:-20}
WARMUP=5
ARCH=${CUDA_ARCH:-90}
T=1024
mkdir -p "$OUTDIR"
exec > >(tee -a "$OUTDIR/gpu.log") 2>&1

phases=("$@")
[ ${#phases[@]} -eq 0 ] && phases=(build test bench)
wants() { local p; for p in "${phases[@]}"; do [ "$p" = "$1" ] && return 0; done; return 1; }
for p in "${phases[@]}"; do
  case $p in build | test | bench) ;; *) echo "bench/gpu.sh: unknown phase \"$p\" (expected build, test or bench)"; exit 2 ;; esac
done

echo "== bench/gpu.sh ${phases[*]}: $(date -u +%FT%TZ) on $(hostname)"
echo "git: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo ' (modified)')"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader 2>/dev/null || echo "nvidia-smi: not found"
echo "cpu: $(nproc) threads; load: $(cut -d' ' -f1-3 /proc/loadavg)"

status=0

if wants build; then
  echo "== build ($BUILD, sm_$ARCH)"
  start=$SECONDS
  cmake -S "$ROOT" -B "$BUILD" -DZT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DZT_BUILD_BENCH=ON >"$OUTDIR/cmake.log" 2>&1 ||
    { tail -30 "$OUTDIR/cmake.log"; echo "configure failed"; exit 1; }
  # What `ctest -L gpu` runs, and the binaries the benchmarks run.
  targets=(zerotrain test_kernels_cuda test_nccl test_backend_choice test_gpu_backend test_gpu_training test_gpu_zerotrain
    bench_kernels)
  cmake --build "$BUILD" -j"$(nproc)" --target "${targets[@]}" >"$OUTDIR/build.log" 2>&1 ||
    { grep -E "error|Error" "$OUTDIR/build.log" | head -40; echo "build failed"; exit 1; }
  echo "built in $((SECONDS - start)) s"
fi

if wants test; then
  echo "== ctest -L gpu; test_backend_choice"
  start=$SECONDS
  # The gpu label, and the choice of training.device (default suite) where a GPU is present. A GPU
  # is expected here: a test that cannot start CUDA fails (ZT_GPU_REQUIRED), and any skip counts
  # as a failure.
  ZT_GPU_REQUIRED=1 ctest --test-dir "$BUILD" -L gpu --output-on-failure --timeout 600 >"$OUTDIR/ctest.log" 2>&1 || status=1
  ZT_GPU_REQUIRED=1 ctest --test-dir "$BUILD" -R '^test_backend_choice$' --output-on-failure >>"$OUTDIR/ctest.log" 2>&1 ||
    status=1
  skipped=$(grep -cE "\*\*\*Skipped|Not Run" "$OUTDIR/ctest.log")
  [ "$skipped" -gt 0 ] && { echo "$skipped GPU test(s) skipped: counted as failures"; status=1; }
  grep -E "tests passed|tests failed|Test +#|\*\*\*" "$OUTDIR/ctest.log"
  echo "tests took $((SECONDS - start)) s"
fi

# The numbers of one zerotrain run, from its metrics file and log: tokens/s over the steps after
# the warm-up, MFU with zerotrain's FLOPs per token (6N + 12·L·C·T) and with llm.c's (6N + 6·L·C·T).
summarize_zerotrain() {  # metrics.jsonl log B
  local metrics=$1 log=$2 B=$3
  awk -v warm="$WARMUP" -v B="$B" -v T="$T" -v L=12 -v C=768 -v logfile="$log" '
    BEGIN {
      while ((getline line < logfile) > 0)
        if (match(line, /peak per rank [0-9.]+ GFLOP\/s/)) { s = substr(line, RSTART, RLENGTH); gsub(/[^0-9.]/, "", s); peak = s * 1e9 }
    }
    /"event":"setup"/ { match($0, /"num_params":[0-9]+/); N = substr($0, RSTART + 13, RLENGTH - 13) + 0 }
    /"event":"step"/ {
      n++
      if (n > warm) { match($0, /"step_ms":[0-9.eE+-]+/); ms += substr($0, RSTART + 10, RLENGTH - 10); k++ }
    }
    END {
      if (k == 0) { print "no timed steps"; exit 1 }
      tps = B * T * k / (ms / 1000)
      zt = 6 * N + 12 * L * C * T; llmc = 6 * N + 6 * L * C * T
      printf "%d %.0f %.2f %.4f %.4f %d %g\n", B, tps, ms / k, (peak > 0 ? tps * zt / peak : -1), (peak > 0 ? tps * llmc / peak : -1), N, peak / 1e12
    }' "$metrics"
}

if wants bench; then
  echo "== zerotrain: GPT-2 124M, T=$T, bf16, ZeRO stage 0, one GPU"
  zt_result="" zt_b=""
  for B in 64 32 16 8; do
    run="$OUTDIR/zerotrain-b$B"
    rm -f "$run.jsonl"
    start=$SECONDS
    args=(--config zero0 --model gpt2-124m --steps $((WARMUP + STEPS))
      --data "synthetic:vocab=50257,tokens=16777216"
      --set training.device=cuda --set bf16.enabled=true --set data.seq_len=$T
      --set training.micro_batch_size=$B --set training.gradient_accumulation_steps=1
      --set training.eval_interval=0 --set steps_per_print=5 --set training.metrics="$run.jsonl")
    # The memory plan first: a micro-batch it says cannot fit is not tried (the run would say so later).
    "$BUILD/zerotrain" "${args[@]}" --dry-run >"$run.plan" 2>&1
    if grep -q "of GPU memory per rank, more than" "$run.plan"; then
      echo "B=$B: the plan does not fit: $(grep -o 'needs [0-9.]* [MG]iB of GPU memory' "$run.plan")"
      continue
    fi
    "$BUILD/zerotrain" "${args[@]}" >"$run.log" 2>&1
    code=$?
    echo "B=$B: exit $code after $((SECONDS - start)) s ($run.log)"
    if [ $code -eq 0 ]; then
      zt_result=$(summarize_zerotrain "$run.jsonl" "$run.log" "$B") && zt_b=$B && break
    fi
    grep -qi "out of memory" "$run.log" || { tail -5 "$run.log"; status=1; break; }
  done
  [ -n "$zt_result" ] && echo "zerotrain: B tokens/s step_ms MFU(zerotrain) MFU(llm.c) N peakTFLOPs = $zt_result"

  torch_line=""
  # PyTorch with the machine's own library path (scripts/gpu_bundle.sh's env.sh adds zerotrain's).
  torch_env=(env "LD_LIBRARY_PATH=${ZT_BASE_LD_LIBRARY_PATH-${LD_LIBRARY_PATH-}}")
  if [ -n "$zt_b" ] && command -v python3 >/dev/null &&
    "${torch_env[@]}" python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    echo "== PyTorch: the same model, B=$zt_b, T=$T (bf16 autocast, SDPA, torch.compile)"
    peak=$(echo "$zt_result" | awk '{print $7}')
    start=$SECONDS
    "${torch_env[@]}" timeout 420 python3 "$ROOT/bench/gpu_torch.py" --batch "$zt_b" --seq $T --warmup 10 --steps "$STEPS" \
      --peak-tflops "${peak:-0}" --json "$OUTDIR/torch.json" >"$OUTDIR/torch.log" 2>&1 || { tail -5 "$OUTDIR/torch.log"; status=1; }
    echo "torch took $((SECONDS - start)) s"
    [ -s "$OUTDIR/torch.json" ] && torch_line=$(cat "$OUTDIR/torch.json") && echo "torch: $torch_line"
  else
    echo "== PyTorch: skipped (no python3 with CUDA torch, or no zerotrain result)"
  fi

  {
    echo "| run | B | T | tokens/s | step ms | MFU (6N+12LCT) | MFU (llm.c: 6N+6LCT) |"
    echo "|---|---|---|---|---|---|---|"
    if [ -n "$zt_result" ]; then
      echo "$zt_result" | awk -v T=$T \
        '{printf "| zerotrain | %d | %d | %.0f | %.1f | %.1f%% | %.1f%% |\n", $1, T, $2, $3, 100 * $4, 100 * $5}'
    fi
    if [ -n "$torch_line" ]; then
      python3 - "$torch_line" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
print("| PyTorch %s | %d | %d | %.0f | %.1f | %.1f%% | %.1f%% |"
      % (r["torch"], r["batch"], r["seq"], r["tokens_per_s"], r["step_ms"], 100 * r["mfu"], 100 * r["mfu_llmc"]))
PY
    fi
    echo
    gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
    echo "GPU: $gpu_name; peak $(echo "$zt_result" | awk '{print $7}') TFLOP/s (bf16 dense);" \
      "N = $(echo "$zt_result" | awk '{print $6}') parameters; timed steps: $STEPS after $WARMUP warm-up."
  } >"$OUTDIR/results.md"
  echo "== results ($OUTDIR/results.md)"
  cat "$OUTDIR/results.md"
fi

exit $status
