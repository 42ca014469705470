#!/usr/bin/env bash
# zerotrain's training step against PyTorch's, same machine, same session: for each model,
# build/bench/bench_step and bench/step_torch.py run one after the other, --repeat times
# (zerotrain, PyTorch, zerotrain, PyTorch, ...), so that load from other jobs shows as spread
# instead of favouring one side. Before each run it waits (up to --max-wait seconds) for the CPUs
# to be idle (--idle percent over 3 s), then prints the load average, the CPUs' idle share and the
# run's median, min and max step; at the end, per model, the median of the runs' medians and the
# ratio PyTorch / zerotrain. Both run fp32 on OMP_NUM_THREADS=2 (--threads).
#
#   bench/bench_step_torch.sh [--models "gpt2-124m llama-125m"] [--repeat 3] [--steps 5]
#                             [--python python3] [--idle 90] [--max-wait 600] [--threads 2]
#                             [--torch-args "--attention eager"]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
models="gpt2-124m llama-125m" repeat=3 steps=5 python=python3 idle=90 max_wait=600 threads=2 torch_args=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --models) models="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --python) python="$2"; shift 2 ;;
    --idle) idle="$2"; shift 2 ;;
    --max-wait) max_wait="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --torch-args) torch_args="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench_step_torch.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
bench_step="$root/build/bench/bench_step"
[[ -x "$bench_step" ]] || { echo "bench_step_torch.sh: build first: $bench_step not found" >&2; exit 1; }
"$python" -c "import torch" 2>/dev/null ||
  { echo "bench_step_torch.sh: $python cannot import torch (see --python)" >&2; exit 1; }

# Percent of CPU time idle over the next 3 seconds, from /proc/stat.
idle_percent() {
  local a b
  a=$(awk '/^cpu /{ print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat)
  sleep 3
  b=$(awk '/^cpu /{ print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat)
  echo "$a $b" | awk '{ printf "%.0f", 100 * ($3 - $1) / ($4 - $2) }'
}

# Waits until the CPUs are idle or max_wait has passed; prints the last idle percent.
wait_for_idle() {
  local waited=0 pct
  pct=$(idle_percent)
  while (( pct < idle && waited < max_wait )); do
    sleep 7
    waited=$((waited + 10))
    pct=$(idle_percent)
  done
  echo "$pct"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $threads threads a run"
echo "zerotrain: OMP_NUM_THREADS=$threads $bench_step --model MODEL --steps $steps"
echo "PyTorch:   OMP_NUM_THREADS=$threads $python $here/step_torch.py --model MODEL --steps $steps $torch_args"
echo "           ($("$python" -c 'import torch; print("torch", torch.__version__)'))"
echo
printf "%-11s %-10s %3s %6s %5s %9s %9s %9s\n" model program run load1 idle% median min max
for model in $models; do
  for r in $(seq "$repeat"); do
    for program in zerotrain torch; do
      pct=$(wait_for_idle)
      load=$(cut -d' ' -f1 /proc/loadavg)
      log="$out/$model.$program.$r.log"
      if [[ $program == zerotrain ]]; then
        OMP_NUM_THREADS=$threads "$bench_step" --model "$model" --steps "$steps" >"$log" 2>&1 ||
          { cat "$log" >&2; echo "bench_step_torch.sh: bench_step failed" >&2; exit 1; }
      else
        # shellcheck disable=SC2086
        OMP_NUM_THREADS=$threads "$python" "$here/step_torch.py" --model "$model" --steps "$steps" $torch_args \
          >"$log" 2>&1 || { cat "$log" >&2; echo "bench_step_torch.sh: step_torch.py failed" >&2; exit 1; }
      fi
      # "median step: 929.1 ms over 5 steps (min 922.0, max 1128.3); ..."
      read -r med min max < <(sed -n 's/^median step: \([0-9.]*\) ms .*(min \([0-9.]*\), max \([0-9.]*\)).*/\1 \2 \3/p' "$log")
      echo "$med" >>"$out/$model.$program.medians"
      printf "%-11s %-10s %3d %6s %5s %9s %9s %9s\n" "$model" "$program" "$r" "$load" "$pct" "$med" "$min" "$max"
    done
  done
done
echo
printf "%-11s %16s %16s %8s\n" model "zerotrain ms" "PyTorch ms" ratio
for model in $models; do
  z=$(median <"$out/$model.zerotrain.medians")
  t=$(median <"$out/$model.torch.medians")
  printf "%-11s %16s %16s %7.2fx\n" "$model" "$z" "$t" "$(echo "$t / $z" | bc -l)"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
