#!/usr/bin/env bash
# bench/gpu.sh's own logic, here without a GPU, root or a bundle: the executables the GPU run builds
# and carries come from ctest's gpu labels (every test `ctest -L gpu` lists, test_gpu_generate among
# them); each phase's summary reaches $OUT as the phase ends, so a call killed inside a phase keeps
# the phases before it; a phase past its limit is stopped and reported, and the next one runs.
# (test_gpu_rehearsal runs both calls end to end, where it has root.)
#   test_gpu_sh.sh SOURCE_DIR BUILD_DIR
set -u
src=$1 build=$2
. "$src/tests/shell_checks.sh"

targets=$("$src/scripts/gpu_bundle.sh" targets "$build") || fail "gpu_bundle.sh targets failed"
for exe in $(ctest --test-dir "$build" -N -V -L gpu | sed -n 's/^[0-9]*: Test command: //p' | tr ' ' '\n' | tr -d '"' |
  grep "^$(realpath "$build")/" | xargs -r -n1 basename | sort -u); do
  grep -qx "$exe" <<<"$targets" || fail "$exe runs in ctest -L gpu but is not among the targets"
done
for exe in test_gpu_generate zerotrain bench_kernels gpu_versions test_backend_choice; do
  grep -qx "$exe" <<<"$targets" || fail "$exe is not among the targets: $targets"
done

# Killed inside its second phase, as a command is killed at its time limit.
export GPU_OUT_DIR=$tmp/out BUILD_DIR=$build
ZT_GPU_SH_STALL=kernels CAP_kernels=3 OUT=$tmp/cut setsid bash "$src/bench/gpu.sh" versions kernels >"$tmp/cut.log" 2>&1 &
for _ in $(seq 300); do [ -e "$tmp/out/phases/stalled-kernels" ] && break; sleep 0.1; done
kill -KILL -- -$! 2>/dev/null
wait $! 2>/dev/null
grep -q "^## versions" "$tmp/cut/gpu-phases.md" 2>/dev/null || fail "the phase before the cut is not in \$OUT: $(cat "$tmp/cut.log")"
grep -q "^## status" "$tmp/cut/gpu-phases.md" 2>/dev/null && fail "the call cut off wrote its status"
sleep 4  # the killed call's phase, in a process group of its own, ends at its limit

# A phase past its limit.
ZT_GPU_SH_STALL=kernels CAP_kernels=2 OUT=$tmp/limit bash "$src/bench/gpu.sh" kernels versions >"$tmp/limit.log" 2>&1 &&
  fail "a phase past its limit left the status 0"
grep -qF "**TIMED OUT**: kernels was stopped after its 2 s" "$tmp/limit/gpu-phases.md" ||
  fail "the phase past its limit is not reported: $(cat "$tmp/limit.log")"
grep -q "^## versions" "$tmp/limit/gpu-phases.md" || fail "the phase after the one past its limit did not run"
grep -q "some phase failed" "$tmp/limit/gpu-phases.md" || fail "the status does not say a phase failed"
finish
