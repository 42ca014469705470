#!/usr/bin/env bash
# The GPU run's two calls (bench/gpu.sh call1, call2) rehearsed on a machine without a GPU, as the
# GPU machine will see them: a fresh copy of the repository with a bundle (.gpu/), run in a mount
# namespace where the tree the bundle was packed in is hidden (an empty directory over its parent)
# and every file of the carried Debian packages is hidden on the system (an empty file bound over
# it), so that only .gpu/deps can provide them. Needs root (unshare -m).
#
#   bench/gpu_rehearsal.sh --emulated [BUILD]   # the test (test_gpu_rehearsal): BUILD's emulated
#       executables packed as the bundle (scripts/gpu_bundle.sh pack --emulated), stand-ins for
#       nvidia-smi, compute-sanitizer and PyTorch (tests/gpu/rehearsal), small shapes; then both
#       calls must pass every phase, every gpu-labelled test among them, and bring back their
#       results and logs in $OUT. Exit code 77 where it cannot run (not root, no mount namespace,
#       no git checkout). KEEP_COPY=1 keeps the copy (/tmp/zerotrain-rehearsal.*) to read.
#   bench/gpu_rehearsal.sh [COPY_DIR]           # the real bundle scripts/gpu_bundle.sh pack wrote:
#       both calls as they start there (default copy /tmp/zerotrain-rehearsal); without a GPU the
#       GPU phases fail, each naming the missing device; what it shows is everything before them.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)

skip() { echo "bench/gpu_rehearsal.sh: skipped: $*"; exit 77; }

# The repository's files, as a checkout has them, into $1.
copy_repository() {
  mkdir -p "$1"
  (cd "$ROOT" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -xf - -C "$1"
}

# Runs `script` (bash, with $COPY set) in a mount namespace where the packing tree and the carried
# packages' system files are hidden.
in_namespace() {  # copy script
  local copy=$1 packed empty
  packed=$(cat "$copy/.gpu/root.txt")
  case $copy in "$(dirname "$packed")"/*) echo "bench/gpu_rehearsal.sh: $copy would be hidden with the packing tree" >&2; exit 1 ;; esac
  empty=$(mktemp)
  unshare -m bash -c '
    set -e
    mount --make-rprivate /
    mount -t tmpfs none "$(dirname "$1")"
    hidden=0
    while read -r f; do
      if [ -f "/$f" ] && [ ! -L "/$f" ]; then mount --bind "$2" "/$f"; hidden=$((hidden + 1)); fi
    done <"$3/.gpu/rootfs.list"
    echo "rehearsal: $1 hidden, $hidden files of the carried packages hidden on the system"
    cd "$3"
    COPY=$3 bash -c "$4"
  ' rehearsal "$packed" "$empty" "$copy" "$2"
  rm -f "$empty"
}

if [ "${1:-}" != --emulated ]; then
  COPY=${1:-/tmp/zerotrain-rehearsal}
  [ -f "$ROOT/.gpu/root.txt" ] || { echo "bench/gpu_rehearsal.sh: no bundle: run scripts/gpu_bundle.sh pack first" >&2; exit 1; }
  rm -rf "$COPY"
  copy_repository "$COPY"
  cp -r "$ROOT/.gpu" "$COPY/"
  in_namespace "$COPY" 'OUT=$COPY/out1 bench/gpu.sh call1; OUT=$COPY/out2 bench/gpu.sh call2' || true
  echo "bench/gpu_rehearsal.sh: the results: $COPY/out1/gpu-call1.md, $COPY/out2/gpu-call2.md"
  exit 0
fi

BUILD=$(cd "${2:-$ROOT/build}" && pwd)
[ "$(id -u)" -eq 0 ] || skip "it needs root (a mount namespace)"
unshare -m true 2>/dev/null || skip "unshare -m is not permitted here"
git -C "$ROOT" rev-parse 2>/dev/null || skip "$ROOT is not a git checkout"
case $BUILD in "$ROOT"/*) ;; *) skip "the build $BUILD is not inside $ROOT" ;; esac

COPY=$(mktemp -d /tmp/zerotrain-rehearsal.XXXXXX)
trap '[ -n "${KEEP_COPY:-}" ] || rm -rf "$COPY"' EXIT
start=$SECONDS
copy_repository "$COPY"
BUNDLE_DIR=$COPY/.gpu BUILD_DIR=$BUILD XZ_OPT="-0 -T0" "$ROOT/scripts/gpu_bundle.sh" pack --emulated
echo "rehearsal: packed in $((SECONDS - start)) s"

# The calls as the GPU machine runs them, at small shapes (the limits and the results of a call cut
# off are test_gpu_sh's).
in_namespace "$COPY" '
  export PATH=$COPY/tests/gpu/rehearsal:$PATH TORCH_BENCH=$COPY/tests/gpu/rehearsal/gpu_torch
  export ZT_TEST_SPEC="[smoke]" ZT_EMU_DEVICES=4 SEQ=32 STEPS=2 WARMUP=1 GPT2_MODEL=toy GPT2_BATCHES="4 2"
  export LLAMA_MODEL=llama-tiny LLAMA_BATCHES="4 2" KERNEL_RUNS="toy:bf16 toy:fp32 llama-tiny:bf16" KERNEL_BATCH=1
  export KERNEL_ITERS=1 MOE_KERNELS=qwen3-moe-tiny:bf16:32 ZT_PEAK_TFLOPS=989
  OUT=$COPY/out1 bench/gpu.sh call1 >$COPY/call1.log 2>&1; echo $? >$COPY/call1.code
  OUT=$COPY/out2 bench/gpu.sh call2 >$COPY/call2.log 2>&1; echo $? >$COPY/call2.code
'

failed=0
fail() { echo "FAIL: $*"; failed=1; }
has() { grep -qF -- "$2" "$1" || fail "$(basename "$1") lacks \"$2\""; }
for call in call1 call2; do
  code=$(cat "$COPY/$call.code")
  if [ "$code" -ne 0 ]; then
    fail "bench/gpu.sh $call exited $code"
    tail -40 "$COPY/$call.log"
  fi
  [ -f "$COPY/out${call#call}/gpu-$call.md" ] || { fail "no \$OUT/gpu-$call.md"; continue; }
  [ -f "$COPY/out${call#call}/gpu-$call-logs.tar.gz" ] || fail "no \$OUT/gpu-$call-logs.tar.gz"
  has "$COPY/out${call#call}/gpu-$call.md" "every phase passed"
done
r1=$COPY/out1/gpu-call1.md r2=$COPY/out2/gpu-call2.md
if [ -f "$r1" ]; then
  for s in "## unpack" "## versions" "cuBLASLt:" "NCCL:" "cuDNN:" "## machine" "## ctest -L gpu" \
    "## toy training" "| zerotrain toy |" "| PyTorch stand-in eager toy |"; do has "$r1" "$s"; done
  has "$r1" "ldd: every library of the $("$ROOT/scripts/gpu_bundle.sh" targets "$BUILD" | wc -l) executables is found"
  # Every gpu-labelled test ran and passed (test_nccl_np2 needs two GPUs).
  for t in $(ctest --test-dir "$BUILD" -N -L gpu | sed -n 's/^ *Test *#[0-9]*: //p'); do
    [ "$t" = test_nccl_np2 ] && continue
    grep -qE ": $t \.+ +Passed" "$r1" || fail "gpu-call1.md: $t did not pass"
  done
fi
if [ -f "$r2" ]; then
  for s in "## compute-sanitizer" "- memcheck: exit 0" "- racecheck: exit 0" "## bench_kernels" \
    "## llama-tiny training" "| zerotrain llama-tiny |" "| PyTorch stand-in compile toy |" \
    "grouped / per expert: fwd"; do has "$r2" "$s"; done
fi
echo "rehearsal: $((SECONDS - start)) s"
[ $failed -eq 0 ] && echo PASS
exit $failed
