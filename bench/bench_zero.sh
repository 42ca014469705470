#!/usr/bin/env bash
# Step time, tokens/s, wall-clock breakdown and bytes sent per step for ZeRO stages 0-3, with
# overlap_comm off and on, on N CPU ranks. Each run writes its metrics file under OUT; the table
# is made from those files by bench/zero_table.py. Arguments after -- go to every zerotrain run.
#
#   bench/bench_zero.sh [-n "2 4"] [--stages "0 1 2 3"] [--steps 40] [--warmup 5]
#                       [--out bench/out/zero] [-- ZEROTRAIN_ARGS...]
set -euo pipefail
source "$(dirname "$0")/bench_args.sh"
ranks="2 4" stages="0 1 2 3" steps=40 warmup=5 out="$root/bench/out/zero"
parse_options 7 -n=ranks --stages=stages --steps=steps --warmup=warmup --out=out -- "$@"
set -- "${passed_on[@]}"
require_zerotrain
mkdir -p "$out"
rm -f "$out"/n*_zero*.jsonl  # the table is made from this run's files only

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for n in $ranks; do
  for stage in $stages; do
    for overlap in false true; do
      name="n${n}_zero${stage}_overlap_${overlap}"
      echo "== $name"
      OMP_NUM_THREADS=1 "$root/scripts/launch.sh" -n "$n" -- "$zerotrain" --config "zero$stage" \
        --model "$root/bench/models/zero_bench.json" --steps "$steps" \
        --set zero_optimization.overlap_comm=$overlap --set wall_clock_breakdown=true \
        --set training.logging_steps=1000 --set training.eval_interval=0 \
        --set training.metrics="$out/$name.jsonl" --log-level warn "$@"
    done
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$root/bench/zero_table.py" --warmup "$warmup" "$out"/n*_zero*.jsonl
