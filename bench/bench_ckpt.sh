#!/usr/bin/env bash
# The cost of checkpoints: step time with a save every K steps against no saves, for a model
# whose save takes longer than a step (bench/models/ckpt_bench.json: 101M parameters, 1.2 GB of
# fp32 master weights and Adam moments per checkpoint, and small steps of 64 tokens per rank).
# Prints the command lines, the machine's load, median step times after the warm-up (all steps,
# the steps that start a save, the others) and what each save wrote (bytes, seconds of background
# writing including fsync, GB/s, and how long the step waited for the copy to host memory).
#
# The two runs alternate --repeat times, so that a busy machine shows as spread between repeats.
#
#   bench/bench_ckpt.sh [-n RANKS] [--steps 40] [--every 10] [--warmup 3] [--repeat 2]
#                       [--out bench/out/ckpt] [-- ZEROTRAIN_ARGS...]
set -euo pipefail
source "$(dirname "$0")/bench_args.sh"
ranks=1 steps=40 every=10 warmup=3 repeat=2 out="$root/bench/out/ckpt"
parse_options 12 -n=ranks --steps=steps --every=every --warmup=warmup --repeat=repeat --out=out -- "$@"
set -- "${passed_on[@]}"
require_zerotrain
rm -rf "$out"
mkdir -p "$out"

run() {  # NAME ARGS...
  local name=$1
  shift
  local cmd=("$root/scripts/launch.sh" -n "$ranks" -- "$zerotrain" --config zero2 --model "$root/bench/models/ckpt_bench.json"
    --steps "$steps" --set training.micro_batch_size=1 --set training.logging_steps=1000 --set training.eval_interval=0
    --set training.metrics="$out/$name.jsonl" "$@")
  echo "== $name: ${cmd[*]}"
  "${cmd[@]}" >"$out/$name.log" 2>&1 || { tail -20 "$out/$name.log"; exit 1; }
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$repeat"); do
  run "no_save_$r" "$@"
  run "save_every_${every}_$r" --set training.checkpoint_dir="$out/checkpoints_$r" --set training.save_interval="$every" \
    --set training.keep_last=2 "$@"
  echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
done
du -sh "$out/checkpoints_1"/step_* | sed 's/^/checkpoint on disk: /'

python3 - "$out" "$every" "$warmup" "$repeat" <<'PY'
import json, re, statistics, sys
out, every, warmup, repeat = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def step_ms(name):
    return {j["step"]: j["step_ms"] for j in map(json.loads, open(f"{out}/{name}.jsonl")) if j["event"] == "step"}
def med(ms, keep=lambda s: True):
    return statistics.median([t for s, t in ms.items() if s > warmup and keep(s)])
pat = re.compile(r"checkpoint (\S+): (\d+) shard files?, ([\d.]+) MB written in the background in ([\d.]+) s "
                 r"\(([\d.]+) GB/s\); the step waited ([\d.]+) s")
print(f"median step time after {warmup} warm-up steps (ms); the save steps copy the shard to host memory")
print("| repeat | no saves | save every %d: all steps | save steps | other steps | total s, no saves | total s, saves |" % every)
print("|---:|---:|---:|---:|---:|---:|---:|")
for r in range(1, repeat + 1):
    base, save = step_ms(f"no_save_{r}"), step_ms(f"save_every_{every}_{r}")
    print(f"| {r} | {med(base):.0f} | {med(save):.0f} | {med(save, lambda s: s % every == 0):.0f} | "
          f"{med(save, lambda s: s % every != 0):.0f} | {sum(base.values()) / 1e3:.1f} | {sum(save.values()) / 1e3:.1f} |")
print("| repeat | checkpoint | shard files | GB | seconds writing (fsync included) | GB/s | step waited for the copy (s) |")
print("|---:|---|---:|---:|---:|---:|---:|")
for r in range(1, repeat + 1):
    for line in open(f"{out}/save_every_{every}_{r}.log"):
        m = pat.search(line)
        if m:
            path, shards, mb, secs, gbs, wait = m.groups()
            print(f"| {r} | {path.rsplit('/', 1)[-1]} | {shards} | {float(mb) / 1e3:.2f} | {secs} | {gbs} | {wait} |")
PY
