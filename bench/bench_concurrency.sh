#!/usr/bin/env bash
# Two jobs on one machine: the wall time of a single-process zerotrain run alone, and of two such
# runs started together, with zerotrain's defaults (threads from the cores given, idle OpenMP
# threads sleeping) and with libgomp's default spinning (GOMP_SPINCOUNT=300000, the spin count
# libgomp uses when nothing is set: what every run did before zerotrain chose its wait policy).
# Prints the command lines, the machine's load, each time and the median ratio of together to alone.
#
# Alone and together alternate --repeat times, so that other load on the machine shows as spread.
#
#   bench/bench_concurrency.sh [--steps 100] [--repeat 3] [--modes "default spinning"]
#                              [-- ZEROTRAIN_ARGS...]
set -euo pipefail
source "$(dirname "$0")/bench_args.sh"
steps=100 repeat=3 modes="default spinning"
parse_options 11 --steps=steps --repeat=repeat --modes=modes -- "$@"
set -- "${passed_on[@]}"
require_zerotrain
cmd=("$zerotrain" --config zero2 --steps "$steps" --set training.eval_interval=0 "$@")

# The variables a mode sets (the user's own OMP_*/GOMP_* are left out of every mode).
mode_env() {
  case $1 in
    default) echo "" ;;
    spinning) echo "GOMP_SPINCOUNT=300000" ;;
    *) echo "bench_concurrency.sh: unknown mode '$1' (default, spinning)" >&2; exit 2 ;;
  esac
}

# Seconds one run takes; prints it. A failed run fails the benchmark.
timed_run() {  # MODE LOG
  local start end
  start=$(date +%s.%N)
  # shellcheck disable=SC2046
  env -u OMP_NUM_THREADS -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT $(mode_env "$1") "${cmd[@]}" >"$2" 2>&1 ||
    { echo "bench_concurrency.sh: run failed, see $2" >&2; exit 1; }
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "command: ${cmd[*]}"
echo "machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load before:$(uptime | sed 's/.*load average://')"
echo
for mode in $modes; do
  alone=() together=()
  for r in $(seq "$repeat"); do
    alone+=("$(timed_run "$mode" "$out/alone.log")")
    timed_run "$mode" "$out/a.log" >"$out/a.time" &
    first=$!
    timed_run "$mode" "$out/b.log" >"$out/b.time" &
    second=$!
    wait "$first" "$second"
    together+=("$(cat "$out/a.time")" "$(cat "$out/b.time")")
  done
  threads=$(grep -m1 -o 'threads: .*' "$out/alone.log")
  a=$(printf '%s\n' "${alone[@]}" | median)
  t=$(printf '%s\n' "${together[@]}" | median)
  echo "mode $mode: $(mode_env "$mode" | grep . || echo "nothing set")"
  echo "  start line: $threads"
  echo "  alone (s):    ${alone[*]}"
  echo "  together (s): ${together[*]}"
  printf '  median alone %.2f s, together %.2f s: %.1fx\n' "$a" "$t" "$(echo "$t / $a" | bc -l)"
done
echo
echo "load after:$(uptime | sed 's/.*load average://')"
