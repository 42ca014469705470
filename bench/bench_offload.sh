#!/usr/bin/env bash
# Offload, measured: the host AdamW against this machine's memory bandwidth and against
# torch.optim.AdamW on the CPU (when Debian's python3-torch is installed: scripts/install-deps.sh
# --dev), then training steps of a model of about a second a step with the optimizer state in
# device memory, in host memory (cpu) and in a file (nvme), alternating. Prints tables; nothing
# passes or fails.
#
#   bench/bench_offload.sh [--steps 12] [--repeat 2] [--nvme DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
steps=12 repeat=2 nvme=bench/out/offload-nvme
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) steps=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --nvme) nvme=$2; shift 2 ;;
    *) echo "bench_offload.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
zt=build/zerotrain
[ -x "$zt" ] && [ -x build/bench/offload/bench_host_adamw ] || { echo "build first (cmake --build build)" >&2; exit 2; }
out=bench/out/offload
mkdir -p "$out" "$nvme"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
echo "# bench_offload.sh --steps $steps --repeat $repeat; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"

echo "## host AdamW, 25M parameters"
build/bench/offload/bench_host_adamw --elements 25000000
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
  /usr/bin/python3 bench/offload/adamw_torch.py --elements 25000000
else
  echo "(torch.optim.AdamW: python3-torch is not installed; scripts/install-deps.sh --dev installs it)"
fi

echo "## training: gpt2-tiny (16M parameters), ZeRO-2, bf16, one rank, 16 x 256 tokens a step"
printf "%-6s %-4s %12s %14s %14s %14s %12s\n" device run "median ms" "optimizer ms" "offload io ms" "waited ms" "resident MB"
for r in $(seq 1 "$repeat"); do
  for device in none cpu nvme; do
    m="$out/$device-$r.jsonl"
    rm -f "$m"
    "$zt" --config zero2 --model gpt2-tiny --steps "$steps" --set data.seq_len=256 \
      --set training.micro_batch_size=16 --set training.eval_interval=0 --set wall_clock_breakdown=true \
      --set zero_optimization.sub_group_size=1e6 --set zero_optimization.offload_optimizer.device="$device" \
      --set zero_optimization.offload_optimizer.nvme_path="$nvme" --set training.metrics="$m" >"$out/$device-$r.log" 2>&1
    /usr/bin/python3 - "$m" "$device" "$r" <<'PY'
import json, statistics, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
steps = [r for r in recs if r["event"] == "step"][2:]  # after two warm-up steps
med = lambda key: statistics.median(s["time_ms"][key] for s in steps)
summary = recs[-1]
print(f"{sys.argv[2]:<6} {sys.argv[3]:<4} {statistics.median(s['step_ms'] for s in steps):12.1f} {med('step'):14.1f} "
      f"{med('offload_io'):14.1f} {med('offload_wait'):14.1f} {summary['memory_peak'][0]['resident'] / 1e6:12.1f}")
PY
  done
done
