#!/usr/bin/env bash
# Starts a zerotrain job: N ranks on this machine (mpirun), on the hosts of a DeepSpeed-style
# hostfile (mpirun), or inside a SLURM allocation (srun). See --help.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/launch.sh [-n N] [--hostfile FILE] [--dry-run] -- PROGRAM [ARGS...]

Starts PROGRAM (usually zerotrain) as an MPI job of N ranks and waits for it.

  -n, --np N         number of ranks. Default: the slots of the hostfile, SLURM_NTASKS inside
                     a SLURM allocation, else 1.
  --hostfile FILE    DeepSpeed-style hostfile: one "HOST slots=K" line per machine; blank lines
                     and '#' comments are ignored. It is checked and converted to an OpenMPI
                     hostfile; N may not exceed the total slots.
  --dry-run          print the launch command (and the converted hostfile) instead of running it.
  -h, --help         this text.

Where the ranks run:
  * Inside a SLURM allocation (SLURM_JOB_ID set) and without --hostfile: srun -n N
    --kill-on-bad-exit=1 --label (N from -n, else SLURM_NTASKS). Extra srun options: ZT_SRUN_ARGS.
  * Otherwise mpirun, with what shared machines need:
      --bind-to none, --mca mpi_yield_when_idle 1 (waiting ranks yield their core),
      --oversubscribe when N exceeds the cores of this machine (local runs),
      --allow-run-as-root only when run as root.
    Extra mpirun options: ZT_MPIRUN_ARGS (split on spaces).

Environment:
  OMP_NUM_THREADS    kept when set; otherwise max(1, cores / ranks per machine)
                     (SLURM_CPUS_PER_TASK under srun). Exported to every rank, with every ZT_*
                     and NCCL_* variable.

Output: every line is tagged with the rank that wrote it: "[3] ...".

Ctrl-C (or SIGTERM to the launcher), with mpirun: the first asks every rank to stop after its
current step (the launcher sends SIGUSR1 to mpirun, which forwards it to the ranks). zerotrain
takes SIGUSR1, SIGINT and SIGTERM alike: the ranks agree on the step to stop after, save a
checkpoint of it when training.checkpoint_dir is set, and exit 75 (interrupted: the same command
with training.resume auto continues the run), which is the job's exit code. A second Ctrl-C
kills the job (SIGTERM to mpirun, which ends the ranks) and the launcher exits non-zero. mpirun
runs in a process group of its own, with stdin from /dev/null, so the terminal's signal reaches
only the launcher.
Under srun, Ctrl-C is srun's own (once: the state of the tasks; twice within a second: SIGINT to
the tasks, then Slurm ends them). Slurm's SIGTERM at the time limit, or
`scancel --signal=USR1 JOB`, gives zerotrain's clean stop.

Exit code: 0 when every rank succeeded, otherwise the failing rank's exit code (mpirun reports
the first rank that failed; a rank killed by signal S gives 128+S). When one rank fails, the
launcher ends the others, so the job never hangs on a dead rank.

Examples:
  scripts/launch.sh -n 4 -- build/zerotrain --config zero2 --steps 100
  scripts/launch.sh --hostfile hosts.txt -- zerotrain --config zero3
EOF
}

die() {
  echo "launch.sh: $*" >&2
  exit 2
}

ranks=""
hostfile=""
# The command as a shell would need it typed back (--dry-run).
shell_quoted() { local s; s=$(printf '%q ' "$@"); echo "${s% }"; }
dry_run=0
while [ $# -gt 0 ]; do
  case $1 in
    -h | --help) usage; exit 0 ;;
    -n | --np)
      [ $# -ge 2 ] || die "$1 needs a number"
      ranks=$2
      shift 2
      ;;
    -n=* | --np=*) ranks=${1#*=}; shift ;;
    --hostfile)
      [ $# -ge 2 ] || die "--hostfile needs a file"
      hostfile=$2
      shift 2
      ;;
    --hostfile=*) hostfile=${1#*=}; shift ;;
    --dry-run) dry_run=1; shift ;;
    --) shift; break ;;
    *) die "unknown option '$1' (the program and its arguments go after --; see --help)" ;;
  esac
done
[ $# -gt 0 ] || die "no program given (usage: launch.sh -n N -- PROGRAM ARGS...; see --help)"
program=("$@")

if [ -n "$ranks" ] && ! [[ $ranks =~ ^[1-9][0-9]*$ ]]; then
  die "-n expects a positive number of ranks, got '$ranks'"
fi

cores=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)

# Every rank gets these variables (mpirun -x; srun exports the whole environment).
forwarded_vars() {
  local name
  for name in $(compgen -e); do
    case $name in ZT_* | NCCL_* | OMP_NUM_THREADS) echo "$name" ;; esac
  done
}

# Output lines are tagged by the launcher ("[1,3]<stdout>:" from mpirun --tag-output, "3: "
# from srun --label); rewrite both as "[3] ". The filter ignores Ctrl-C and SIGTERM: it ends when
# the job's output does, so the lines the ranks write while they stop are not lost.
tag_lines() (
  trap '' INT TERM
  exec sed -u -E -e 's/^\[[0-9]+,([0-9]+)\]<std(out|err)>: ?/[\1] /' -e "${1:-}"
)

# Runs the launch command with its stdout and stderr tagged separately; returns its exit code.
run_tagged() {
  local label_rewrite=$1
  shift
  local err_fd err_pid codes
  exec {err_fd}> >(tag_lines "$label_rewrite" >&2)
  err_pid=$!
  set +e
  "$@" 2>&"$err_fd" | tag_lines "$label_rewrite"
  codes=("${PIPESTATUS[@]}")
  set -e
  exec {err_fd}>&-
  wait "$err_pid" 2>/dev/null || true
  return "${codes[0]}"
}

# Runs mpirun with its output tagged and Ctrl-C turned into a clean stop; returns its exit code.
# The terminal sends Ctrl-C's SIGINT to its foreground process group. mpirun runs in a process
# group of its own (job control, set -m), and without the terminal as its stdin, so the signal
# reaches only this script. The first SIGINT or SIGTERM sends SIGUSR1 to mpirun, which forwards it
# to every rank: zerotrain stops after the current step, saves a checkpoint and exits 75. mpirun
# forwards a signal only to the ranks it has started, and a rank ignores SIGUSR1 until zerotrain
# has set up its handler, so SIGUSR1 is repeated every second until the job ends (zerotrain takes
# a repeated SIGUSR1 as the same request). The second SIGINT or SIGTERM sends SIGTERM: mpirun ends
# the ranks, and the launcher exits non-zero even if they had finished.
run_interruptible() {
  local out_fd err_fd out_pid err_pid
  exec {out_fd}> >(tag_lines "")
  out_pid=$!
  # mpirun says so on every forwarded signal; the launcher has said it once.
  exec {err_fd}> >(tag_lines '/^mpirun: Forwarding signal [0-9]+ to job$/d' >&2)
  err_pid=$!
  interrupts=0
  job=""
  repeater=""
  trap 'on_interrupt' INT TERM
  # mpirun starts with SIGUSR1 ignored: it installs its forwarding handler during start-up and
  # restores the ignore when it shuts down, so a SIGUSR1 before or after never kills it.
  set -m
  (
    trap '' USR1
    exec "$@"
  ) </dev/null >&"$out_fd" 2>&"$err_fd" &
  job=$!
  set +m
  exec {out_fd}>&- {err_fd}>&-
  # Interrupted while mpirun was being started: nothing ran yet to stop cleanly.
  if [ "$interrupts" -gt 0 ]; then interrupts=2; kill -TERM "$job" 2>/dev/null || true; fi
  local code=0
  # wait returns early (>128) when a trapped signal arrives; wait again while mpirun runs. Bash
  # keeps the status of a finished background job, so the last wait returns mpirun's exit code.
  while kill -0 "$job" 2>/dev/null; do wait "$job" || true; done
  wait "$job" || code=$?
  trap - INT TERM
  stop_repeater
  wait "$out_pid" "$err_pid" 2>/dev/null || true
  if [ "$interrupts" -ge 2 ] && [ "$code" -eq 0 ]; then code=130; fi
  return "$code"
}

on_interrupt() {
  interrupts=$((interrupts + 1))
  if [ -z "$job" ]; then
    return
  elif [ "$interrupts" -eq 1 ]; then
    echo "launch.sh: interrupted: the ranks stop after their current step (Ctrl-C again to kill them)" >&2
    (
      trap '' INT
      while kill -USR1 "$job" 2>/dev/null; do sleep 1; done
    ) </dev/null >/dev/null 2>&1 &
    repeater=$!
  else
    echo "launch.sh: interrupted again: killing the job" >&2
    stop_repeater
    kill -TERM "$job" 2>/dev/null || true
  fi
}

stop_repeater() {
  if [ -n "$repeater" ]; then
    kill "$repeater" 2>/dev/null || true
    wait "$repeater" 2>/dev/null || true
    repeater=""
  fi
}

# --- SLURM --------------------------------------------------------------------------------
if [ -n "${SLURM_JOB_ID:-}" ] && [ -z "$hostfile" ]; then
  ranks=${ranks:-${SLURM_NTASKS:-1}}
  if [ -z "${OMP_NUM_THREADS:-}" ]; then
    if [ -n "${SLURM_CPUS_PER_TASK:-}" ]; then
      export OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK
    else
      per_node=$(( (ranks + ${SLURM_NNODES:-1} - 1) / ${SLURM_NNODES:-1} ))
      export OMP_NUM_THREADS=$(( cores / per_node > 0 ? cores / per_node : 1 ))
    fi
  fi
  # shellcheck disable=SC2206
  cmd=(srun -n "$ranks" --kill-on-bad-exit=1 --label ${ZT_SRUN_ARGS:-} "${program[@]}")
  if [ $dry_run -eq 1 ]; then
    echo "OMP_NUM_THREADS=$OMP_NUM_THREADS $(shell_quoted "${cmd[@]}")"
    exit 0
  fi
  status=0
  run_tagged 's/^ *([0-9]+): /[\1] /' "${cmd[@]}" || status=$?
  exit "$status"
fi

# --- mpirun -------------------------------------------------------------------------------
cmd=(mpirun)
converted=""
if [ -n "$hostfile" ]; then
  [ -r "$hostfile" ] || die "hostfile '$hostfile' cannot be read"
  converted=$(mktemp "${TMPDIR:-/tmp}/zt-hostfile.XXXXXX")
  trap 'rm -f "$converted"' EXIT
  total_slots=0
  max_slots=0
  declare -A seen=()
  line_no=0
  while IFS= read -r line || [ -n "$line" ]; do
    line_no=$((line_no + 1))
    line=${line%%#*}
    line=${line#"${line%%[![:space:]]*}"}  # trim
    line=${line%"${line##*[![:space:]]}"}
    [ -n "$line" ] || continue
    if ! [[ $line =~ ^([^[:space:]=]+)[[:space:]]+slots=([1-9][0-9]*)$ ]]; then
      die "hostfile $hostfile line $line_no: expected 'HOST slots=N' (N >= 1), got '$line'"
    fi
    host=${BASH_REMATCH[1]}
    slots=${BASH_REMATCH[2]}
    if [ -n "${seen[$host]:-}" ]; then
      die "hostfile $hostfile line $line_no: host '$host' already listed on line ${seen[$host]}"
    fi
    seen[$host]=$line_no
    echo "$host slots=$slots" >>"$converted"
    total_slots=$((total_slots + slots))
    max_slots=$((slots > max_slots ? slots : max_slots))
  done <"$hostfile"
  [ "$total_slots" -gt 0 ] || die "hostfile $hostfile lists no hosts"
  ranks=${ranks:-$total_slots}
  if [ "$ranks" -gt "$total_slots" ]; then
    die "-n $ranks exceeds the $total_slots slots of hostfile $hostfile"
  fi
  ranks_per_machine=$max_slots
  cmd+=(--hostfile "$converted")
else
  ranks=${ranks:-1}
  ranks_per_machine=$ranks
  if [ "$ranks" -gt "$cores" ]; then cmd+=(--oversubscribe); fi
fi
if [ -z "${OMP_NUM_THREADS:-}" ]; then
  threads=$((cores / ranks_per_machine))
  export OMP_NUM_THREADS=$((threads > 0 ? threads : 1))
fi
cmd+=(-np "$ranks" --bind-to none --mca mpi_yield_when_idle 1 --tag-output)
if [ "$(id -u)" -eq 0 ]; then cmd+=(--allow-run-as-root); fi
for name in $(forwarded_vars); do cmd+=(-x "$name"); done
# The ranks start with SIGUSR1 ignored, so a Ctrl-C while they load cannot kill them; zerotrain
# installs its handler once MPI is initialised (see run_interruptible).
if env --ignore-signal=USR1 true 2>/dev/null; then
  rank_prefix=(env --ignore-signal=USR1)
else  # coreutils before 8.31
  rank_prefix=(sh -c 'trap "" USR1; exec "$@"' zt-rank)
fi
# shellcheck disable=SC2206
cmd+=(${ZT_MPIRUN_ARGS:-} "${rank_prefix[@]}" "${program[@]}")

if [ $dry_run -eq 1 ]; then
  echo "OMP_NUM_THREADS=$OMP_NUM_THREADS $(shell_quoted "${cmd[@]}")"
  if [ -n "$converted" ]; then
    echo "# $converted:"
    cat "$converted"
  fi
  exit 0
fi
status=0
run_interruptible "${cmd[@]}" || status=$?
exit "$status"
