#!/usr/bin/env bash
# zerotrain on one NVIDIA GPU, in one command: what runs there and what it found, in one results
# file. The phases, in order:
#   unpack    scripts/gpu_bundle.sh unpack and its env.sh (the default where .gpu/ holds a bundle
#             built elsewhere and build-gpu/ is not configured here)
#   build     configure and build build-gpu with CUDA (the default otherwise)
#   check     nvidia-smi, and ldd of every executable: nothing may be missing
#   test      ctest -L gpu and test_backend_choice, a GPU required (ZT_GPU_REQUIRED): a skipped
#             test counts as a failure; test_nccl_np2 only where two GPUs are visible
#   sanitize  compute-sanitizer memcheck and racecheck on test_kernels_cuda (small shapes)
#   kernels   bench_kernels at GPT-2 124M shapes, bf16 and fp32, and at Llama 3.2 1B's, bf16
#   bench     GPT-2 124M at T=1024 in bf16, the largest micro-batch of 64, 32, 16, 8 that fits:
#             tokens/s and MFU; the same model, batch and length in PyTorch (bf16 autocast,
#             scaled_dot_product_attention, torch.compile) when python3 has torch
#   llama     the same for a Llama 3.2 1B-shaped model (preset llama-3.2-1b: GQA 32/8, SwiGLU,
#             RoPE, RMSNorm, tied head), micro-batches 32, 16, 8, 4, against bench/gpu_torch.py's
#             plain-torch llama of the same shape
#
#   bench/gpu.sh                    # every phase (unpack or build first): meant to fit 10 minutes
#   bench/gpu.sh test kernels       # any of them, in order
#
# Writes bench/out/gpu/: results.md (every phase's summary, the file to read), gpu.log (this
# script's whole output) and each phase's log. With $OUT set, results.md is copied there as
# gpu-results.md and the logs as gpu-logs.tar.gz. Needs no network. Environment: BUILD_DIR (default
# build-gpu), STEPS (timed zerotrain steps after 5 warm-up steps, default 20), CUDA_ARCH (default
# 90), ZT_PEAK_TFLOPS (the GPU's peak when zerotrain's table does not know it).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUTDIR=$ROOT/bench/out/gpu
BUILD=${BUILD_DIR:-$ROOT/build-gpu}
STEPS=${STEPS:-20}
WARMUP=5
ARCH=${CUDA_ARCH:-90}
T=1024
RESULTS=$OUTDIR/results.md
mkdir -p "$OUTDIR"
: >"$OUTDIR/gpu.log"
exec > >(tee -a "$OUTDIR/gpu.log") 2>&1
if [ -n "${OUT:-}" ]; then
  copy_out() {
    mkdir -p "$OUT"
    cp "$RESULTS" "$OUT/gpu-results.md" 2>/dev/null
    tar -czf "$OUT/gpu-logs.tar.gz" -C "$OUTDIR" .
  }
  trap copy_out EXIT
fi

phases=("$@")
if [ ${#phases[@]} -eq 0 ]; then
  if [ -f "$ROOT/.gpu/root.txt" ] && [ ! -f "$BUILD/CMakeCache.txt" ]; then
    phases=(unpack check test sanitize kernels bench llama)
  else
    phases=(build check test sanitize kernels bench llama)
  fi
fi
for p in "${phases[@]}"; do
  case $p in unpack | build | check | test | sanitize | kernels | bench | llama) ;;
    *) echo "bench/gpu.sh: unknown phase \"$p\" (expected unpack, build, check, test, sanitize, kernels, bench or llama)"; exit 2 ;;
  esac
done
wants() { local p; for p in "${phases[@]}"; do [ "$p" = "$1" ] && return 0; done; return 1; }

status=0
failed() { echo "FAILED: $*"; echo "- **FAILED**: $*" >>"$RESULTS"; status=1; }
section() { printf '\n## %s\n\n' "$1" >>"$RESULTS"; echo "== $1"; }
# The last lines of a log, as a block in the results file.
excerpt() { { echo '```'; tail -n "${2:-40}" "$1"; echo '```'; } >>"$RESULTS"; }

{
  echo "# bench/gpu.sh ${phases[*]}"
  echo
  echo "- date: $(date -u +%FT%TZ); host: $(hostname); cpu: $(nproc) threads; load: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "- git: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo ' (modified)')"
  echo "- build: $BUILD"
} >"$RESULTS"
cat "$RESULTS"

if wants unpack; then
  section unpack
  if "$ROOT/scripts/gpu_bundle.sh" unpack >"$OUTDIR/unpack.log" 2>&1; then
    # shellcheck disable=SC1091
    . "$ROOT/.gpu/env.sh"
    tail -1 "$OUTDIR/unpack.log" >>"$RESULTS"
  else
    excerpt "$OUTDIR/unpack.log" 20
    failed "scripts/gpu_bundle.sh unpack"
  fi
fi

if wants build; then
  section "build ($BUILD, sm_$ARCH)"
  start=$SECONDS
  targets=(zerotrain test_kernels_cuda test_nccl test_backend_choice test_gpu_backend test_gpu_training test_gpu_zerotrain
    test_gpu_model_step test_gpu_step_sync bench_kernels)
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  if cmake -S "$ROOT" -B "$BUILD" -DZT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DZT_BUILD_BENCH=ON "${launcher[@]}" \
    >"$OUTDIR/cmake.log" 2>&1 &&
    cmake --build "$BUILD" -j"$(nproc)" --target "${targets[@]}" >"$OUTDIR/build.log" 2>&1; then
    echo "built in $((SECONDS - start)) s" | tee -a "$RESULTS"
  else
    grep -hE "error|Error" "$OUTDIR/cmake.log" "$OUTDIR/build.log" | head -40
    failed "the build (bench/out/gpu/build.log)"
    exit 1
  fi
fi

gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -c .)
if wants check; then
  section "machine"
  { echo '```'; nvidia-smi 2>&1 | head -25 || true; echo '```'; } >>"$RESULTS"
  [ "$gpus" -gt 0 ] || failed "nvidia-smi sees no GPU"
  missing=""
  for exe in "$BUILD/zerotrain" "$BUILD"/tests/*/test_* "$BUILD"/bench/cuda/bench_kernels; do
    out=$(ldd "$exe" 2>&1) || missing+="$exe: $out"$'\n'
    missing+=$(grep -E "not found" <<<"$out" | sed "s|^|$exe: |")
  done
  if [ -n "$missing" ]; then
    { echo '```'; echo "$missing"; echo '```'; } >>"$RESULTS"
    failed "libraries the executables need are missing"
  else
    echo "ldd: every library of zerotrain, the tests and bench_kernels is found" | tee -a "$RESULTS"
    ldd "$BUILD/zerotrain" | grep -E "cudart|cublas|nccl|dnnl|mpi" | sed 's/^/    /' >>"$RESULTS"
  fi
fi

if wants test; then
  section "ctest -L gpu (a GPU required: skips count as failures)"
  start=$SECONDS
  exclude=()
  if [ "$gpus" -lt 2 ]; then
    exclude=(-E '^test_nccl_np2$')
    echo "test_nccl_np2 not run: it needs two GPUs, this machine shows $gpus" | tee -a "$RESULTS"
  fi
  export ZT_GPU_REQUIRED=1
  ctest --test-dir "$BUILD" -L gpu "${exclude[@]}" --output-on-failure --timeout 600 >"$OUTDIR/ctest.log" 2>&1 ||
    failed "ctest -L gpu"
  ctest --test-dir "$BUILD" -R '^test_backend_choice$' --output-on-failure >>"$OUTDIR/ctest.log" 2>&1 ||
    failed "test_backend_choice"
  unset ZT_GPU_REQUIRED
  skipped=$(grep -cE "\*\*\*Skipped|Not Run" "$OUTDIR/ctest.log")
  [ "$skipped" -gt 0 ] && failed "$skipped GPU test(s) skipped"
  { echo '```'; grep -E "Test +#|tests passed|tests failed|\*\*\*" "$OUTDIR/ctest.log"; echo '```'; } >>"$RESULTS"
  echo "tests took $((SECONDS - start)) s" | tee -a "$RESULTS"
fi

if wants sanitize; then
  section "compute-sanitizer on test_kernels_cuda (small shapes)"
  sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
  if [ -z "$sanitizer" ]; then
    failed "compute-sanitizer not found"
  else
    for tool in memcheck racecheck; do
      start=$SECONDS
      # Bounded, so that the whole call fits its 10 minutes (124: the tool ran out of time).
      ZT_TEST_SMALL_SHAPES=1 timeout 180 "$sanitizer" --tool "$tool" --error-exitcode 99 \
        "$BUILD/tests/kernels_cuda/test_kernels_cuda" >"$OUTDIR/sanitize-$tool.log" 2>&1
      code=$?
      echo "- $tool: exit $code after $((SECONDS - start)) s; $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUTDIR/sanitize-$tool.log" | tail -1)" |
        tee -a "$RESULTS"
      [ $code -eq 0 ] || { excerpt "$OUTDIR/sanitize-$tool.log" 30; failed "compute-sanitizer $tool"; }
    done
  fi
fi

if wants kernels; then
  section "bench_kernels (GPT-2 124M and Llama 3.2 1B shapes)"
  for run in "gpt2-124m bf16" "gpt2-124m fp32" "llama-3.2-1b bf16"; do
    read -r model dt <<<"$run"
    if "$BUILD/bench/cuda/bench_kernels" --model "$model" --batch 8 --seq $T --dtype "$dt" \
      >"$OUTDIR/kernels-$model-$dt.log" 2>&1; then
      { echo '```'; cat "$OUTDIR/kernels-$model-$dt.log"; echo '```'; } >>"$RESULTS"
    else
      excerpt "$OUTDIR/kernels-$model-$dt.log" 20
      failed "bench_kernels --model $model --dtype $dt"
    fi
  done
fi

# The numbers of one zerotrain run, from its metrics file and log: tokens/s over the steps after
# the warm-up, MFU with zerotrain's FLOPs per token (6N + 12·L·W·T, W the attention's width: the
# query heads' channels) and with llm.c's (6N + 6·L·W·T).
summarize_zerotrain() {  # metrics.jsonl log B L W
  local metrics=$1 log=$2 B=$3 L=$4 W=$5
  awk -v warm="$WARMUP" -v B="$B" -v T="$T" -v L="$L" -v W="$W" -v logfile="$log" '
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
      zt = 6 * N + 12 * L * W * T; llmc = 6 * N + 6 * L * W * T
      printf "%d %.0f %.2f %.4f %.4f %d %g\n", B, tps, ms / k, (peak > 0 ? tps * zt / peak : -1), (peak > 0 ? tps * llmc / peak : -1), N, peak / 1e12
    }' "$metrics"
}

# One model's training benchmark, zerotrain beside PyTorch (bench/gpu_torch.py), into the results:
# bf16, ZeRO stage 0, T=$T, the largest of the micro-batches given that fits.
bench_training() {  # preset layers attention-width batches...
  local preset=$1 L=$2 W=$3
  shift 3
  section "$preset training, T=$T, bf16, ZeRO stage 0, one GPU"
  local zt_result="" zt_b="" B run start code args
  for B in "$@"; do
    run="$OUTDIR/zerotrain-$preset-b$B"
    rm -f "$run.jsonl"
    start=$SECONDS
    args=(--config zero0 --model "$preset" --steps $((WARMUP + STEPS))
      --data "synthetic:vocab=50257,tokens=16777216"
      --set training.device=cuda --set bf16.enabled=true --set "data.seq_len=$T"
      --set "training.micro_batch_size=$B" --set training.gradient_accumulation_steps=1
      --set training.eval_interval=0 --set training.logging_steps=5 --set training.metrics="$run.jsonl")
    # The memory plan first: a micro-batch it says cannot fit is not tried (the run would say so later).
    "$BUILD/zerotrain" "${args[@]}" --dry-run >"$run.plan" 2>&1
    if grep -q "of GPU memory per rank, more than" "$run.plan"; then
      echo "B=$B: the plan does not fit: $(grep -o 'needs [0-9.]* [MG]iB of GPU memory' "$run.plan")" | tee -a "$RESULTS"
      continue
    fi
    "$BUILD/zerotrain" "${args[@]}" >"$run.log" 2>&1
    code=$?
    echo "B=$B: exit $code after $((SECONDS - start)) s" | tee -a "$RESULTS"
    if [ $code -eq 0 ]; then
      zt_result=$(summarize_zerotrain "$run.jsonl" "$run.log" "$B" "$L" "$W") && zt_b=$B && break
    fi
    grep -qi "out of memory" "$run.log" || { excerpt "$run.log" 20; failed "zerotrain $preset B=$B"; break; }
  done

  local torch_line="" peak torch_env gpu_name
  # PyTorch with the machine's own library path (scripts/gpu_bundle.sh's env.sh adds zerotrain's).
  torch_env=(env "LD_LIBRARY_PATH=${ZT_BASE_LD_LIBRARY_PATH-${LD_LIBRARY_PATH-}}")
  if [ -n "$zt_b" ] && command -v python3 >/dev/null &&
    "${torch_env[@]}" python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    peak=$(echo "$zt_result" | awk '{print $7}')
    start=$SECONDS
    "${torch_env[@]}" timeout 420 python3 "$ROOT/bench/gpu_torch.py" --model "$preset" --batch "$zt_b" --seq $T \
      --warmup 10 --steps "$STEPS" --peak-tflops "${peak:-0}" --json "$OUTDIR/torch-$preset.json" \
      >"$OUTDIR/torch-$preset.log" 2>&1 || { excerpt "$OUTDIR/torch-$preset.log" 10; failed "bench/gpu_torch.py --model $preset"; }
    echo "PyTorch took $((SECONDS - start)) s" | tee -a "$RESULTS"
    [ -s "$OUTDIR/torch-$preset.json" ] && torch_line=$(cat "$OUTDIR/torch-$preset.json")
  else
    echo "PyTorch: not run (no python3 with CUDA torch, or no zerotrain result)" | tee -a "$RESULTS"
  fi

  {
    echo
    echo "| run | B | T | tokens/s | step ms | MFU (6N+12LWT) | MFU (llm.c: 6N+6LWT) |"
    echo "|---|---|---|---|---|---|---|"
    if [ -n "$zt_result" ]; then
      echo "$zt_result" | awk -v T=$T -v m="$preset" \
        '{printf "| zerotrain %s | %d | %d | %.0f | %.1f | %.1f%% | %.1f%% |\n", m, $1, T, $2, $3, 100 * $4, 100 * $5}'
    fi
    if [ -n "$torch_line" ]; then
      python3 - "$torch_line" "$preset" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
print("| PyTorch %s %s | %d | %d | %.0f | %.1f | %.1f%% | %.1f%% |"
      % (r["torch"], sys.argv[2], r["batch"], r["seq"], r["tokens_per_s"], r["step_ms"], 100 * r["mfu"], 100 * r["mfu_llmc"]))
PY
    fi
    echo
    gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
    echo "GPU: $gpu_name; peak $(echo "$zt_result" | awk '{print $7}') TFLOP/s (bf16 dense);" \
      "N = $(echo "$zt_result" | awk '{print $6}') parameters; timed steps: $STEPS after $WARMUP warm-up."
  } >>"$RESULTS"
}

if wants bench; then bench_training gpt2-124m 12 768 64 32 16 8; fi
# Llama 3.2 1B: 16 layers, attention width 32 heads x 64 = 2048.
if wants llama; then bench_training llama-3.2-1b 16 2048 32 16 8 4; fi

section "status"
if [ $status -eq 0 ]; then echo "every phase passed" | tee -a "$RESULTS"; else echo "some phase failed (above)" | tee -a "$RESULTS"; fi
exit $status
