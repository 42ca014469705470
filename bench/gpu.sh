#!/usr/bin/env bash
# zerotrain on one NVIDIA GPU, in phases: each runs under a time limit of its own and appends its
# summary to one results file, copied to $OUT the moment the phase ends, so that a call cut off at
# its limit still brings back what it did. The GPU run is two commands on the GPU machine, each
# within 5 minutes (DEVELOPERS.md, "The GPU run"):
#
#   bench/gpu.sh call1          # unpack versions check test bench
#   bench/gpu.sh call2          # unpack check sanitize kernels llama compile
#   bench/gpu.sh                # every phase (unpack or build first), no time limit
#   bench/gpu.sh test kernels   # any phases, in order
#
# The phases:
#   unpack    scripts/gpu_bundle.sh unpack and its env.sh (the default where .gpu/ holds a bundle
#             built elsewhere and build-gpu/ is not configured here)
#   build     configure build-gpu with CUDA and build what the phases run (the default otherwise)
#   versions  the driver, CUDA runtime, cuBLASLt, cuDNN and NCCL (bench/cuda/gpu_versions), the
#             GPU as nvidia-smi shows it, PyTorch
#   check     nvidia-smi, and ldd of every executable the phases run: nothing may be missing
#   test      ctest -L gpu and test_backend_choice, a GPU required (ZT_GPU_REQUIRED): a skipped
#             test counts as a failure; test_nccl_np2 only where two GPUs are visible
#   bench     GPT-2 124M at T=1024 in bf16, the largest micro-batch of 64, 32, 16, 8 the memory plan
#             fits: tokens/s and MFU; PyTorch eager at the same shape (bench/gpu_torch.py)
#   sanitize  compute-sanitizer memcheck, then racecheck, on test_kernels_cuda (small shapes)
#   kernels   bench_kernels at GPT-2 124M shapes, bf16 and fp32, and at Llama 3.2 1B's, bf16; then one
#             Qwen3-30B-A3B-shaped sparse layer's experts over 4096 tokens, bf16 (bench_kernels --moe):
#             a GEMM per expert against the grouped GEMM
#   llama     the bench phase for a Llama 3.2 1B-shaped model (preset llama-3.2-1b: GQA 32/8,
#             SwiGLU, RoPE, RMSNorm, tied head), micro-batches 32, 16, 8, 4, against PyTorch eager
#   compile   PyTorch's GPT-2 124M with torch.compile, at the bench phase's micro-batch
#
# Time: a phase may take CAP_<phase> seconds (defaults in phase_cap), cut to what is left of
# CALL_SECONDS (call1 and call2 from a bundle: 285, for a command limited to 300 s; else unlimited); a
# phase that would get under 15 s is skipped, saying so. A phase past its limit is killed and
# reported.
#
# Writes bench/out/gpu/NAME/ (GPU_OUT_DIR/NAME; NAME: call1, call2, or phases for other lists):
# results.md (every phase's summary, the file to read), gpu.log (this script's output) and each
# phase's log. With
# $OUT set, after every phase: $OUT/gpu-NAME.md (the results) and $OUT/gpu-NAME-logs.tar.gz.
# Needs no network. Environment: BUILD_DIR (default: the bundle's build directory, else
# build-gpu), STEPS and WARMUP (timed zerotrain steps after warm-up steps: 20 and 5), SEQ (1024),
# CUDA_ARCH (90), ZT_PEAK_TFLOPS (the GPU's peak when zerotrain's table does not know it),
# TORCH_BENCH (the PyTorch benchmark's command: python3 bench/gpu_torch.py). For a small run (the
# rehearsal, bench/gpu_rehearsal.sh): GPT2_MODEL, GPT2_BATCHES, LLAMA_MODEL, LLAMA_BATCHES,
# KERNEL_RUNS ("model:dtype ..."), KERNEL_BATCH, KERNEL_ITERS, MOE_KERNELS ("layer:dtype:tokens ...");
# and ZT_GPU_SH_STALL=PHASE (that phase hangs, as on a hung GPU: how tests/gpu/test_gpu_sh.sh checks
# the limits).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SELF=$ROOT/bench/gpu.sh
BUNDLED_BUILD=""
[ -f "$ROOT/.gpu/build.txt" ] && BUNDLED_BUILD=$ROOT/$(cat "$ROOT/.gpu/build.txt")
BUILD=${BUILD_DIR:-${BUNDLED_BUILD:-$ROOT/build-gpu}}
STEPS=${STEPS:-20}
WARMUP=${WARMUP:-5}
ARCH=${CUDA_ARCH:-90}
T=${SEQ:-1024}
GPT2_MODEL=${GPT2_MODEL:-gpt2-124m}
GPT2_BATCHES=${GPT2_BATCHES:-64 32 16 8}
LLAMA_MODEL=${LLAMA_MODEL:-llama-3.2-1b}
LLAMA_BATCHES=${LLAMA_BATCHES:-32 16 8 4}
KERNEL_RUNS=${KERNEL_RUNS:-gpt2-124m:bf16 gpt2-124m:fp32 llama-3.2-1b:bf16}
KERNEL_BATCH=${KERNEL_BATCH:-8}
KERNEL_ITERS=${KERNEL_ITERS:-20}
MOE_KERNELS=${MOE_KERNELS-qwen3-30b-a3b:bf16:4096}  # layer:dtype:tokens for bench_kernels --moe ("": none)
read -r -a TORCH_CMD <<<"${TORCH_BENCH:-python3 $ROOT/bench/gpu_torch.py}"
PHASES="unpack build versions check test bench sanitize kernels llama compile"

# Seconds a phase may take at most.
phase_cap() {
  local var="CAP_$1"
  if [ -n "${!var:-}" ]; then echo "${!var}"; return; fi
  case $1 in
    unpack) echo 90 ;; build) echo 3600 ;; versions) echo 45 ;; check) echo 30 ;; test) echo 150 ;; bench) echo 110 ;;
    sanitize) echo 100 ;; kernels) echo 50 ;; llama) echo 70 ;; compile) echo 150 ;;
  esac
}

# Layers, attention width (the query heads' channels) and the synthetic data's vocabulary of a
# preset the phases train.
model_dims() {
  case $1 in
    gpt2-124m) echo 12 768 50257 ;; llama-3.2-1b) echo 16 2048 50257 ;;
    toy) echo 2 64 256 ;; llama-tiny) echo 2 64 256 ;;
    *) echo "bench/gpu.sh: no dimensions for preset $1" >&2; return 1 ;;
  esac
}

failed() { echo "FAILED: $*"; echo "- **FAILED**: $*" >>"$RESULTS"; status=1; }
section() { printf '\n## %s\n\n' "$1" >>"$RESULTS"; echo "== $1"; }
# The last lines of a log, as a block in the results file.
excerpt() { { echo '```'; tail -n "${2:-40}" "$1"; echo '```'; } >>"$RESULTS"; }
# Seconds left of this phase.
left() { echo $((PHASE_END - $(date +%s))); }
gpu_count() { nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -c .; }
# PyTorch with the machine's own library path (scripts/gpu_bundle.sh's env.sh adds zerotrain's).
torch_env() { env "LD_LIBRARY_PATH=${ZT_BASE_LD_LIBRARY_PATH-${LD_LIBRARY_PATH-}}" "$@"; }

phase_unpack() {
  section unpack
  if "$ROOT/scripts/gpu_bundle.sh" unpack >"$OUTDIR/unpack.log" 2>&1; then
    tail -1 "$OUTDIR/unpack.log" >>"$RESULTS"
  else
    excerpt "$OUTDIR/unpack.log" 20
    failed "scripts/gpu_bundle.sh unpack"
  fi
}

phase_build() {
  section "build ($BUILD, sm_$ARCH)"
  local start=$SECONDS launcher=() targets=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  # What to build: the executables of ctest's gpu-labelled tests and the phases' own.
  if cmake -S "$ROOT" -B "$BUILD" -DZT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DZT_BUILD_BENCH=ON "${launcher[@]}" \
    >"$OUTDIR/cmake.log" 2>&1 &&
    read -r -a targets < <("$ROOT/scripts/gpu_bundle.sh" targets "$BUILD" 2>>"$OUTDIR/cmake.log" | paste -sd' ') &&
    cmake --build "$BUILD" -j"$(nproc)" --target "${targets[@]}" >"$OUTDIR/build.log" 2>&1; then
    echo "built in $((SECONDS - start)) s: ${targets[*]}" | tee -a "$RESULTS"
  else
    grep -hE "error|Error" "$OUTDIR/cmake.log" "$OUTDIR/build.log" | head -40
    failed "the build (build.log)"
  fi
}

phase_versions() {
  section versions
  local log=$OUTDIR/versions.log cudnn
  # zerotrain does not link cuDNN: gpu_versions looks for it where unpack would take it from.
  cudnn=$("$ROOT/scripts/gpu_bundle.sh" find-library libcudnn.so.9 2>/dev/null) || cudnn=""
  LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}${cudnn:+:$cudnn}" "$BUILD/bench/cuda/gpu_versions" >"$log" 2>&1 ||
    failed "gpu_versions"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv >>"$log" 2>&1 ||
    echo "nvidia-smi: not found or failed" >>"$log"
  # Written before PyTorch starts: its import may take the rest of the phase.
  { echo '```'; cat "$log"; echo '```'; } >>"$RESULTS"
  cat "$log"
  torch_env timeout "$(($(left) - 2))" "${TORCH_CMD[@]}" --check >"$log.torch" 2>&1 || echo "(PyTorch with CUDA: not found)" >>"$log.torch"
  sed 's/^/    /' "$log.torch" | tee -a "$RESULTS"
}

phase_check() {
  section machine
  local gpus exe out missing="" executables
  { echo '```'; nvidia-smi 2>&1 | head -25 || true; echo '```'; } >>"$RESULTS"
  gpus=$(gpu_count)
  [ "$gpus" -gt 0 ] || failed "nvidia-smi sees no GPU"
  if ! executables=$("$ROOT/scripts/gpu_bundle.sh" executables "$BUILD" 2>"$OUTDIR/check.log"); then
    excerpt "$OUTDIR/check.log" 10
    failed "the executables of the GPU run are not all there"
    return
  fi
  for exe in $executables; do
    out=$(ldd "$exe" 2>&1) || missing+="$exe: $out"$'\n'
    missing+=$(grep -E "not found" <<<"$out" | sed "s|^|$exe: |")
  done
  if [ -n "$missing" ]; then
    { echo '```'; echo "$missing"; echo '```'; } >>"$RESULTS"
    failed "libraries the executables need are missing"
  else
    echo "ldd: every library of the $(wc -w <<<"$executables") executables is found" | tee -a "$RESULTS"
    ldd "$BUILD/zerotrain" | grep -E "cudart|cublas|nccl|dnnl|mpi" | sed 's/^/    /' >>"$RESULTS"
  fi
}

phase_test() {
  section "ctest -L gpu (a GPU required: skips count as failures)"
  local start=$SECONDS exclude=() gpus skipped limit
  gpus=$(gpu_count)
  if [ "$gpus" -lt 2 ]; then
    exclude=(-E '^test_nccl_np2$')
    echo "test_nccl_np2 not run: it needs two GPUs, this machine shows $gpus" | tee -a "$RESULTS"
  fi
  # Each test ends before the phase does, so that its summary is written.
  limit=$(($(left) - 20))
  [ "$limit" -gt 600 ] && limit=600
  [ "$limit" -lt 10 ] && limit=10
  export ZT_GPU_REQUIRED=1
  ctest --test-dir "$BUILD" -L gpu "${exclude[@]}" -j4 --output-on-failure --timeout "$limit" >"$OUTDIR/ctest.log" 2>&1 ||
    failed "ctest -L gpu"
  ctest --test-dir "$BUILD" -R '^test_backend_choice$' --output-on-failure >>"$OUTDIR/ctest.log" 2>&1 ||
    failed "test_backend_choice"
  unset ZT_GPU_REQUIRED
  skipped=$(grep -cE "\*\*\*Skipped|Not Run" "$OUTDIR/ctest.log")
  [ "$skipped" -gt 0 ] && failed "$skipped GPU test(s) skipped or not run"
  { echo '```'; grep -E "Test +#|tests passed|tests failed|\*\*\*" "$OUTDIR/ctest.log"; echo '```'; } >>"$RESULTS"
  echo "tests took $((SECONDS - start)) s" | tee -a "$RESULTS"
}

phase_sanitize() {
  section "compute-sanitizer on test_kernels_cuda (small shapes)"
  local sanitizer tool start code budget
  sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
  if [ -z "$sanitizer" ]; then
    failed "compute-sanitizer not found"
    return
  fi
  for tool in memcheck racecheck; do
    start=$SECONDS
    # memcheck gets half of what is left, racecheck the rest (124: the tool ran out of time).
    budget=$(($(left) - 5))
    [ $tool = memcheck ] && budget=$((budget / 2))
    ZT_TEST_SMALL_SHAPES=1 timeout "$budget" "$sanitizer" --tool "$tool" --error-exitcode 99 \
      "$BUILD/tests/kernels_cuda/test_kernels_cuda" >"$OUTDIR/sanitize-$tool.log" 2>&1
    code=$?
    echo "- $tool: exit $code after $((SECONDS - start)) s of $budget; $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUTDIR/sanitize-$tool.log" | tail -1)" |
      tee -a "$RESULTS"
    [ $code -eq 0 ] || { excerpt "$OUTDIR/sanitize-$tool.log" 30; failed "compute-sanitizer $tool"; }
  done
}

# One bench_kernels run (its arguments after the log file), its output added to the results.
bench_kernels_run() {  # log args...
  local log=$1
  shift
  if timeout "$(($(left) - 2))" "$BUILD/bench/cuda/bench_kernels" "$@" --iters "$KERNEL_ITERS" >"$log" 2>&1; then
    { echo '```'; cat "$log"; echo '```'; } >>"$RESULTS"
  else
    excerpt "$log" 20
    failed "bench_kernels $*"
  fi
}

phase_kernels() {
  section "bench_kernels ($KERNEL_RUNS${MOE_KERNELS:+; --moe $MOE_KERNELS})"
  local run model dt layer tokens
  for run in $KERNEL_RUNS; do
    model=${run%%:*} dt=${run#*:}
    bench_kernels_run "$OUTDIR/kernels-$model-$dt.log" --model "$model" --batch "$KERNEL_BATCH" --seq "$T" --dtype "$dt"
  done
  for run in $MOE_KERNELS; do
    IFS=: read -r layer dt tokens <<<"$run"
    bench_kernels_run "$OUTDIR/kernels-moe-$layer-$dt.log" --moe "$layer" --batch 1 --seq "$tokens" --dtype "$dt"
  done
}

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

# zerotrain's arguments for a bf16, ZeRO stage 0 run of preset $1 at micro-batch $2, T=$T.
zerotrain_args() {  # preset B metrics
  local vocab
  vocab=$(model_dims "$1" | awk '{print $3}')
  echo --config zero0 --model "$1" --steps $((WARMUP + STEPS)) --data "synthetic:vocab=$vocab,tokens=16777216" \
    --set training.device=cuda --set bf16.enabled=true --set "data.seq_len=$T" --set "training.micro_batch_size=$2" \
    --set training.gradient_accumulation_steps=1 --set training.eval_interval=0 --set training.logging_steps=5 \
    --set "training.metrics=$3"
}

# The first of the micro-batches whose memory plan fits the GPU (what zerotrain's dry run says).
plan_batch() {  # preset batches...
  local preset=$1 B plan
  shift
  for B in "$@"; do
    plan=$OUTDIR/zerotrain-$preset-b$B.plan
    # shellcheck disable=SC2046
    "$BUILD/zerotrain" $(zerotrain_args "$preset" "$B" /dev/null) --dry-run >"$plan" 2>&1
    if grep -q "of GPU memory per rank, more than" "$plan"; then
      echo "B=$B: the plan does not fit: $(grep -o 'needs [0-9.]* [MG]iB of GPU memory' "$plan")" >&2
      continue
    fi
    echo "$B"
    return 0
  done
  return 1
}

# PyTorch (bench/gpu_torch.py) at zerotrain's shape, eager or compiled: its JSON result in
# $OUTDIR/torch-PRESET-MODE.json.
run_torch() {  # preset B mode peak_tflops
  local preset=$1 B=$2 mode=$3 peak=$4 start=$SECONDS out=$OUTDIR/torch-$1-$3
  rm -f "$out.json"
  if ! torch_env "${TORCH_CMD[@]}" --check >"$out.log" 2>&1; then
    failed "PyTorch $mode not run: $(tail -1 "$out.log")"
    return
  fi
  local warmup=10
  [ "$mode" = eager ] && warmup=5
  torch_env timeout "$(($(left) - 2))" "${TORCH_CMD[@]}" --model "$preset" --batch "$B" --seq "$T" --mode "$mode" \
    --warmup "$warmup" --steps "$STEPS" --peak-tflops "${peak:-0}" --json "$out.json" \
    >>"$out.log" 2>&1 || { excerpt "$out.log" 10; failed "bench/gpu_torch.py --model $preset --mode $mode"; }
  echo "PyTorch $mode took $((SECONDS - start)) s" | tee -a "$RESULTS"
}

table_header() {
  { echo
    echo "| run | B | T | tokens/s | step ms | MFU (6N+12LWT) | MFU (llm.c: 6N+6LWT) |"
    echo "|---|---|---|---|---|---|---|"; } >>"$RESULTS"
}

torch_row() {  # preset mode
  local json=$OUTDIR/torch-$1-$2.json
  [ -s "$json" ] || return 0
  python3 - "$json" "$1" >>"$RESULTS" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("| PyTorch %s %s %s | %d | %d | %.0f | %.1f | %.1f%% | %.1f%% |"
      % (r["torch"], r.get("mode", "torch.compile"), sys.argv[2], r["batch"], r["seq"], r["tokens_per_s"], r["step_ms"],
         100 * r["mfu"], 100 * r["mfu_llmc"]))
PY
}

# One model's training benchmark, zerotrain beside PyTorch in `mode`, into the results: bf16, ZeRO
# stage 0, T=$T, the largest of the micro-batches given that the plan fits (halved on running out
# of memory).
bench_training() {  # preset mode batches...
  local preset=$1 mode=$2 L W B run start code zt_result="" zt_b="" peak
  shift 2
  read -r L W _ <<<"$(model_dims "$preset")"
  section "$preset training, T=$T, bf16, ZeRO stage 0, one GPU, against PyTorch $mode"
  if ! B=$(plan_batch "$preset" "$@" 2>>"$RESULTS"); then
    failed "no micro-batch of $* fits the plan"
    return
  fi
  while [ "$B" -ge 1 ]; do
    run=$OUTDIR/zerotrain-$preset-b$B
    rm -f "$run.jsonl"
    start=$SECONDS
    # shellcheck disable=SC2046
    timeout "$(($(left) / 2))" "$BUILD/zerotrain" $(zerotrain_args "$preset" "$B" "$run.jsonl") >"$run.log" 2>&1
    code=$?
    echo "zerotrain B=$B: exit $code after $((SECONDS - start)) s" | tee -a "$RESULTS"
    if [ $code -eq 0 ]; then
      zt_result=$(summarize_zerotrain "$run.jsonl" "$run.log" "$B" "$L" "$W") && zt_b=$B
      break
    fi
    grep -qi "out of memory" "$run.log" || { excerpt "$run.log" 20; failed "zerotrain $preset B=$B"; break; }
    B=$((B / 2))
  done
  [ -n "$zt_b" ] && echo "$zt_b" >"$OUTDIR/$preset.batch"
  peak=$(awk '{print $7}' <<<"$zt_result")
  [ -n "$zt_b" ] && run_torch "$preset" "$zt_b" "$mode" "$peak"
  table_header
  if [ -n "$zt_result" ]; then
    # MFU needs the GPU's peak: n/a where zerotrain's table does not know it (ZT_PEAK_TFLOPS gives it).
    awk -v T="$T" -v m="$preset" '
      function pct(x) { return x < 0 ? "n/a" : sprintf("%.1f%%", 100 * x) }
      { printf "| zerotrain %s | %d | %d | %.0f | %.1f | %s | %s |\n", m, $1, T, $2, $3, pct($4), pct($5) }' \
      <<<"$zt_result" >>"$RESULTS"
  fi
  torch_row "$preset" "$mode"
  { echo
    echo "GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1); peak $peak TFLOP/s (bf16" \
      "dense); N = $(awk '{print $6}' <<<"$zt_result") parameters; timed steps: $STEPS after $WARMUP warm-up."; } >>"$RESULTS"
}

phase_bench() { bench_training "$GPT2_MODEL" eager $GPT2_BATCHES; }
phase_llama() { bench_training "$LLAMA_MODEL" eager $LLAMA_BATCHES; }

# PyTorch compiled at the micro-batch zerotrain trained GPT-2 with (in this call, or as the plan
# chooses it); the MFU against the GPU's peak as zerotrain's log gives it.
phase_compile() {
  section "$GPT2_MODEL in PyTorch with torch.compile, T=$T, bf16"
  local B peak
  # shellcheck disable=SC2086
  B=$(cat "$OUTDIR/$GPT2_MODEL.batch" 2>/dev/null) || B=$(plan_batch "$GPT2_MODEL" $GPT2_BATCHES 2>>"$RESULTS") ||
    { failed "no micro-batch of $GPT2_BATCHES fits the plan"; return; }
  # The GPU's peak as zerotrain's runs and plans of this call give it.
  peak=$(cat "$OUTDIR"/zerotrain-*.log "$OUTDIR"/zerotrain-*.plan 2>/dev/null | grep -o "peak per rank [0-9.]* GFLOP/s" |
    head -1 | awk '{print $4 / 1000}')
  run_torch "$GPT2_MODEL" "$B" compile "$peak"
  table_header
  torch_row "$GPT2_MODEL" compile
}

# One phase, in this process: what `bench/gpu.sh --phase NAME` runs under the phase's time limit.
run_phase() {
  status=0
  if [ "${ZT_GPU_SH_STALL:-}" = "$1" ]; then
    touch "$OUTDIR/stalled-$1"
    sleep 3600
  fi
  "phase_$1"
  exit $status
}

if [ "${1:-}" = "--phase" ]; then run_phase "$2"; fi

# The phases asked for.
name=phases
call_seconds=${CALL_SECONDS:-0}
bundled() { [ -f "$ROOT/.gpu/root.txt" ] && [ ! -f "$BUILD/CMakeCache.txt" ]; }
first=build call_default=0
# A bundle: one command on the GPU machine, whose limit the phases share.
bundled && first=unpack call_default=285
case ${1:-} in
  call1) name=call1 phases=("$first" versions check test bench) call_seconds=${CALL_SECONDS:-$call_default} ;;
  call2) name=call2 phases=("$first" check sanitize kernels llama compile) call_seconds=${CALL_SECONDS:-$call_default} ;;
  "") phases=("$first" versions check test bench sanitize kernels llama compile) ;;
  *) phases=("$@") ;;
esac
for p in "${phases[@]}"; do
  grep -qw -- "$p" <<<"$PHASES" || { echo "bench/gpu.sh: unknown phase \"$p\" (expected call1, call2 or phases of: $PHASES)"; exit 2; }
done

export OUTDIR=${GPU_OUT_DIR:-$ROOT/bench/out/gpu}/$name
export RESULTS=$OUTDIR/results.md
export BUILD_DIR=$BUILD
rm -rf "$OUTDIR"
mkdir -p "$OUTDIR"
exec > >(tee -a "$OUTDIR/gpu.log") 2>&1
# The results and logs so far, to $OUT: after every phase, and at the end.
publish() {
  [ -n "${OUT:-}" ] || return 0
  mkdir -p "$OUT"
  cp "$RESULTS" "$OUT/gpu-$name.md"
  tar -czf "$OUT/gpu-$name-logs.tar.gz.tmp" -C "$OUTDIR" . && mv "$OUT/gpu-$name-logs.tar.gz.tmp" "$OUT/gpu-$name-logs.tar.gz"
}
trap publish EXIT

# The environment unpack wrote, for phases run after an unpack in an earlier call on this machine.
if [ -f "$ROOT/.gpu/env.sh" ] && [ "$BUILD" = "$BUNDLED_BUILD" ] && [ "${phases[0]}" != unpack ]; then
  # shellcheck disable=SC1091
  . "$ROOT/.gpu/env.sh"
fi

{
  echo "# bench/gpu.sh $name: ${phases[*]}"
  echo
  echo "- date: $(date -u +%FT%TZ); host: $(hostname); cpu: $(nproc) threads; load: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "- git: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo ' (modified)')"
  echo "- build: $BUILD; time: $([ "$call_seconds" -gt 0 ] && echo "$call_seconds s for the call" || echo "no limit")"
} >"$RESULTS"
cat "$RESULTS"

status=0
call_end=$(($(date +%s) + call_seconds))
for p in "${phases[@]}"; do
  limit=$(phase_cap "$p")
  if [ "$call_seconds" -gt 0 ]; then
    remaining=$((call_end - $(date +%s)))
    if [ "$remaining" -lt 15 ]; then
      printf '\n## %s\n\n- **SKIPPED**: %d s left of the call\n' "$p" "$remaining" >>"$RESULTS"
      echo "== $p: skipped ($remaining s left)"
      status=1
      publish
      continue
    fi
    [ "$remaining" -lt "$limit" ] && limit=$remaining
  fi
  start=$(date +%s)
  PHASE_END=$((start + limit)) timeout -k 5 "$limit" "$SELF" --phase "$p"
  code=$?
  if [ $code -eq 124 ] || [ $code -eq 137 ]; then
    printf -- '- **TIMED OUT**: %s was stopped after its %d s\n' "$p" "$limit" >>"$RESULTS"
    echo "== $p: timed out after $limit s"
    status=1
  elif [ $code -ne 0 ]; then
    status=1
  fi
  echo "($p: $(($(date +%s) - start)) s)" >>"$RESULTS"
  if [ "$p" = unpack ] && [ $code -eq 0 ]; then
    # shellcheck disable=SC1091
    . "$ROOT/.gpu/env.sh"
  fi
  publish
done

section status
if [ $status -eq 0 ]; then echo "every phase passed" | tee -a "$RESULTS"; else echo "some phase failed (above)" | tee -a "$RESULTS"; fi
publish
echo
cat "$RESULTS"
exit $status
