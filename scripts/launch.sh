#!/usr/bin/env bash
# Starts a zerotrain job: N ranks on this machine (mpirun), on the hosts of a DeepSpeed-style
# hostfile (mpirun), or inside a SLURM allocation (srun). Takes the flags people know from the
# deepspeed launcher and torchrun where they mean something here. See --help.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/launch.sh [-n N] [--hostfile FILE] [--max-restarts N] [--dry-run] [--] PROGRAM [ARGS...]

Starts PROGRAM (usually zerotrain) as an MPI job of N ranks and waits for it. The options end at
`--` or at the first word that is not an option (as with deepspeed and torchrun).

  -n, --np N         number of ranks. Default: the slots of the hostfile, SLURM_NTASKS inside
                     a SLURM allocation, else 1.
  --hostfile FILE    DeepSpeed-style hostfile: one "HOST slots=K" line per machine; blank lines
                     and '#' comments are ignored. Host names are letters, digits, '.', '-' and
                     '_' (never a leading '-'), slots at most 65536; mpirun gets the hosts as
                     --host HOST:K,... N may not exceed the total slots.
  --max-restarts N   after a failed job, start it again, up to N times, with
                     --set training.resume=auto added: it continues from its latest checkpoint
                     (the ranks refuse to start without training.checkpoint_dir). Never after
                     exit status 75 (interrupted), 2 (a config or command-line error), a failure
                     in set-up (zerotrain gives the launcher its checkpoint directory only once
                     set up) or a Ctrl-C.
  --restart-delay S  seconds between a failure and the restart (default 10).
  --dry-run          print the launch command instead of running it.
  -h, --help         this text.

Options of the deepspeed launcher and of torchrun (also spelled with '-' for '_'):
  --num_gpus K, --nproc_per_node K
                     ranks per machine: locally N = K; with a hostfile, at most K slots of each
                     host; under SLURM, srun --ntasks-per-node=K.
  --num_nodes M, --nnodes M
                     machines: the first M hosts of the hostfile, or srun -N M under SLURM.
  --include SPEC, --exclude SPEC
                     DeepSpeed's filter of the hostfile, e.g. "node1@node2:0,1": the hosts to
                     use or to leave out, optionally with device ids. Without a hostfile only
                     "localhost:IDS". Device ids give that host one rank per device and become
                     CUDA_VISIBLE_DEVICES (the same list on every host used).
  --launcher openmpi|slurm
                     mpirun or srun (default: srun in a SLURM allocation without --hostfile,
                     else mpirun). pdsh, mvapich, impi and mpich are not supported.
  --launcher_args "ARGS"     extra options for mpirun or srun.
  --ssh_port P       mpirun reaches the other hosts with ssh -p P.
  --enable_each_rank_log DIR
                     each rank's output goes to files under DIR instead of the console
                     (mpirun --output-filename DIR; srun --output DIR/rank%t.log).
  --max_restarts N   torchrun's: as --max-restarts N.
  --elastic_training, --enable_elastic_training
                     DeepSpeed's elastic training: restarts as --max-restarts 100 (what its
                     elastic agent allows), unless --max_restarts says otherwise. The job
                     restarts on the same hosts with the same ranks.
  Accepted, said to be ignored, and dropped, because they have no meaning here:
  --master_addr, --master_port, --rdzv_*, --standalone, --local_addr (MPI connects the ranks
  itself), --node_rank (one launch starts every node), --monitor_interval, --min_elastic_nodes,
  --max_elastic_nodes (the launcher watches the whole job, which restarts on the same hosts),
  --no_local_rank (zerotrain asks MPI for its local rank), --module, --no_python, --run_path
  (PROGRAM runs as given), and the deepspeed and torchrun options about logs, pids, ssh checks
  and core binding.

Where the ranks run:
  * Inside a SLURM allocation (SLURM_JOB_ID set) and without --hostfile: srun -n N
    --kill-on-bad-exit=1 --label (N from -n, else SLURM_NTASKS). Extra srun options: ZT_SRUN_ARGS.
  * Otherwise mpirun, with what shared machines need:
      --bind-to none, --mca mpi_yield_when_idle 1 (waiting ranks yield their core),
      --oversubscribe when N exceeds the cores of this machine (local runs),
      --allow-run-as-root only when run as root.
    Extra mpirun options: ZT_MPIRUN_ARGS (split on spaces).

Environment:
  OMP_NUM_THREADS    not set by the launcher: each zerotrain rank takes the cores it was given
                     (its affinity mask shared with the other ranks of its machine, the cgroup's
                     CPU quota, SLURM_CPUS_PER_TASK) and says so on its start line. When set, it
                     wins. Idle OpenMP threads sleep (OMP_WAIT_POLICY=passive) unless
                     OMP_WAIT_POLICY is set. Every OMP_*, GOMP_*, ZT_* and NCCL_* variable
                     reaches every rank.

Output: every line is tagged with the rank that wrote it: "[3] ...". When the launcher's stderr
is a terminal, rank 0's progress line (step, loss, tokens/s, time left) stays in place below the
other lines (the ranks get ZT_PROGRESS=markers for that; set ZT_PROGRESS=off to have none).
Output to a file or a pipe never holds a carriage return.

Ctrl-C (or SIGTERM to the launcher), with mpirun: the first asks every rank to stop after its
current step. mpirun forwards neither SIGINT nor SIGTERM (it ends the job on them), so the
launcher relays them: SIGINT as SIGRTMIN+1, SIGTERM as SIGRTMIN+2, which mpirun forwards to every
rank, and zerotrain names them as what they were ("interrupted by SIGINT (Ctrl-C to the
launcher)"). zerotrain takes these, SIGUSR1, SIGINT and SIGTERM alike: the ranks agree on the
step to stop after, save a checkpoint of it when training.checkpoint_dir is set, and exit 75
(interrupted: the same command with training.resume auto continues the run), which is the job's
exit code; mpirun's report of ranks that exited non-zero is not shown then: a stop is not a crash.
A second Ctrl-C kills the job (SIGTERM to mpirun, which ends the ranks) and the launcher exits
non-zero. mpirun runs in a process group of its own, with stdin from /dev/null, so the terminal's
signal reaches only the launcher. A closed terminal (SIGHUP) stops the job as SIGTERM does, once.
The launcher's output may be gone meanwhile (`| head`, a `| tee` that the Ctrl-C ended, a closed
terminal): what cannot be written is dropped, and the launcher still waits for every rank and
returns the job's exit code (75 after a stop). `| tee -i run.log` keeps the stop's lines in the log.
Under srun, Ctrl-C is srun's own (once: the state of the tasks; twice within a second: SIGINT to
the tasks, then Slurm ends them). Slurm's SIGTERM at the time limit, or
`scancel --signal=USR1 JOB`, gives zerotrain's clean stop.

Exit code: 0 when every rank succeeded, otherwise the failing rank's exit code (mpirun reports
the first rank that failed; a rank killed by signal S gives 128+S). When one rank fails, mpirun
ends the others. mpirun's own messages are shown once the job has ended (its report of the failed
rank left out when a rank said its error itself: a refused start is one line), and after a failure the
launcher says which step the job can resume from (rank 0 tells it training.checkpoint_dir; it
reads `latest` there). When a host stops answering (a cut network, a dead machine), mpirun waits
forever on its daemon there: once mpirun has reported a failed rank, the launcher gives the other
ranks a grace period of training.comm_timeout + 10 s (ZT_FAILURE_GRACE seconds when set; 60 s for
a program that does not say its timeout), then names the hosts that no longer answer on the
network (a TCP connection to their ssh port, --ssh_port or 22), ends mpirun and every process it
started, and exits with the failed rank's exit code. Bad options or hostfiles: 2.

Examples:
  scripts/launch.sh -n 4 -- build/zerotrain --config zero2 --steps 100
  scripts/launch.sh --hostfile hosts.txt -- zerotrain --config zero3
  scripts/launch.sh --hostfile hosts.txt --num_nodes 2 --num_gpus 8 zerotrain --config zero3
EOF
}

# The launcher's own messages. Its stderr may be gone (a `| tee` ended by Ctrl-C, `| head` that has
# read enough, a closed terminal): a failed write is dropped, never the launcher's end, so that it
# still hands the stop to the job and waits for every rank (SIGPIPE is ignored below).
note() { printf 'launch.sh: %s\n' "$*" >&2 2>/dev/null || true; }
die() {
  note "$*"
  exit 2
}
trap '' PIPE

# The command as a shell would need it typed back (--dry-run). printf %q escapes every comma,
# which a shell does not need: "--host a:4,b:2" reads better.
shell_quoted() {
  local s
  s=$(printf '%q ' "$@")
  s=${s//\\,/,}
  echo "${s% }"
}

readonly max_slots_per_host=65536
# A number of ranks, slots, nodes: a positive integer small enough for shell arithmetic.
is_count() { [[ $1 =~ ^[1-9][0-9]{0,8}$ ]]; }

# Why a deepspeed or torchrun option has no meaning here; fails for other options.
ignored_reason() {
  case $1 in
    --master_addr | --master_port | --rdzv_backend | --rdzv_endpoint | --rdzv_id | --rdzv_conf | --standalone | \
      --local_addr) echo "MPI connects the ranks itself" ;;
    --node_rank) echo "one launch starts the ranks of every node" ;;
    --monitor_interval | --min_elastic_nodes | --max_elastic_nodes)
      echo "the launcher watches the whole job, which restarts on the same hosts with the same ranks" ;;
    --no_local_rank) echo "zerotrain asks MPI for its local rank" ;;
    --module | --no_python | --run_path) echo "the program runs as given" ;;
    --start_method | --role | --log_dir | --redirects | --tee | --local_ranks_filter | --logs_specs | --save_pid | \
      --force_multi | --no_ssh_check | --no_ssh | --bind_cores_to_rank | --bind_core_list | --comment | \
      --venv_script | --autotuning) echo "it has no counterpart here" ;;
    *) return 1 ;;
  esac
}
# Ignored options that are flags (the others take a value).
ignored_is_flag() {
  case $1 in
    --standalone | --no_local_rank | --module | --no_python | --run_path | --save_pid | \
      --force_multi | --no_ssh_check | --no_ssh | --bind_cores_to_rank) return 0 ;;
    *) return 1 ;;
  esac
}

ranks=""
hostfile=""
dry_run=0
max_restarts=""    # --max-restarts / --max_restarts
elastic=0          # --elastic_training: restarts unless --max_restarts says otherwise
restart_delay=10
per_node=""        # --num_gpus / --nproc_per_node
nodes=""           # --num_nodes / --nnodes
include=""
exclude=""
launcher=""        # openmpi | slurm
launcher_args=""
ssh_port=""
rank_log_dir=""
job_hosts=()       # the hosts of a hostfile job
while [ $# -gt 0 ]; do
  arg=$1
  name=$arg
  inline=""
  has_inline=0
  if [[ $arg == -*=* ]]; then
    name=${arg%%=*}
    inline=${arg#*=}
    has_inline=1
  fi
  if [[ $name == --?* ]]; then body=${name#--}; name=--${body//-/_}; fi  # torchrun's --nproc-per-node
  # The option's value: after '=', or the next argument. Sets value and step (arguments used).
  take_value() {
    if [ "$has_inline" -eq 1 ]; then
      value=$inline
      step=1
    elif [ "$1" -ge 2 ]; then
      value=$2
      step=2
    else
      die "$arg needs a value"
    fi
  }
  step=1
  case $name in
    --) shift; break ;;
    -h | --help) usage; exit 0 ;;
    -n | --np) take_value $# "${2-}"; ranks=$value ;;
    --hostfile) take_value $# "${2-}"; hostfile=$value ;;
    --dry_run) dry_run=1 ;;
    --num_gpus | --nproc_per_node)
      take_value $# "${2-}"
      is_count "$value" || die "$arg expects a positive number of ranks per machine, got '$value'"
      per_node=$value
      ;;
    --num_nodes | --nnodes)
      take_value $# "${2-}"
      if [[ $value =~ ^([0-9]+):([0-9]+)$ ]]; then  # torchrun's elastic MIN:MAX
        [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] ||
          die "$arg $value: an elastic range of nodes is not supported (give one number)"
        value=${BASH_REMATCH[1]}
      fi
      is_count "$value" || die "$arg expects a positive number of machines, got '$value'"
      nodes=$value
      ;;
    --include) take_value $# "${2-}"; include=$value ;;
    --exclude) take_value $# "${2-}"; exclude=$value ;;
    --launcher)
      take_value $# "${2-}"
      case ${value,,} in
        openmpi | slurm) launcher=${value,,} ;;
        *) die "--launcher $value is not supported here (expected openmpi for mpirun, or slurm for srun)" ;;
      esac
      ;;
    --launcher_args) take_value $# "${2-}"; launcher_args=$value ;;
    --ssh_port)
      take_value $# "${2-}"
      [[ $value =~ ^[1-9][0-9]{0,4}$ ]] || die "--ssh_port expects a port number, got '$value'"
      ssh_port=$value
      ;;
    --enable_each_rank_log) take_value $# "${2-}"; rank_log_dir=$value ;;
    --max_restarts)
      take_value $# "${2-}"
      [[ $value =~ ^[0-9]{1,6}$ ]] || die "$arg expects a number of restarts (0 or more), got '$value'"
      max_restarts=$((10#$value))
      ;;
    --restart_delay)
      take_value $# "${2-}"
      [[ $value =~ ^[0-9]{1,6}$ ]] || die "$arg expects seconds (0 or more), got '$value'"
      restart_delay=$((10#$value))
      ;;
    --elastic_training | --enable_elastic_training) elastic=1 ;;
    -m) note "-m ignored: the program runs as given" ;;
    -*)
      reason=$(ignored_reason "$name") || die "unknown option '$arg' (see --help)"
      if ignored_is_flag "$name"; then
        note "$arg ignored: $reason"
      else
        take_value $# "${2-}"
        note "${arg%%=*} $value ignored: $reason"
      fi
      ;;
    *) break ;;  # the program
  esac
  shift "$step"
done
[ $# -gt 0 ] || die "no program given (usage: launch.sh -n N -- PROGRAM ARGS...; see --help)"
program=("$@")
if [ -z "$max_restarts" ]; then max_restarts=$((elastic ? 100 : 0)); fi

if [ -n "$ranks" ] && ! is_count "$ranks"; then
  die "-n expects a positive number of ranks, got '$ranks'"
fi
[ -z "$include" ] || [ -z "$exclude" ] || die "--include and --exclude together: give one of them"

cores=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)

# A host name that can reach ssh and mpirun only as a host: letters, digits, '.', '-', '_'.
check_host_name() {  # check_host_name HOST WHERE
  case $1 in
    -*) die "$2: host '$1' begins with '-' (it would reach ssh as an option)" ;;
  esac
  [[ $1 =~ ^[A-Za-z0-9_][A-Za-z0-9._-]*$ ]] || die "$2: '$1' is not a host name (letters, digits, '.', '-', '_')"
}

# DeepSpeed's resource filter "host1@host2:0,1": sets spec_hosts (in order) and spec_ids[host].
declare -a spec_hosts=()
declare -A spec_ids=()
parse_filter() {  # parse_filter OPTION SPEC
  local item host ids items
  IFS='@' read -r -a items <<<"$2"
  [ ${#items[@]} -gt 0 ] || die "$1: empty"
  for item in "${items[@]}"; do
    host=${item%%:*}
    ids=""
    if [[ $item == *:* ]]; then ids=${item#*:}; fi
    check_host_name "$host" "$1 '$2'"
    if [[ $item == *:* ]] && ! [[ $ids =~ ^[0-9]+(,[0-9]+)*$ ]]; then
      die "$1 '$2': expected device ids as in '$host:0,1', got '$item'"
    fi
    spec_hosts+=("$host")
    spec_ids[$host]=$ids
  done
}
count_ids() { local ids; IFS=, read -r -a ids <<<"$1"; echo "${#ids[@]}"; }

# Device ids of the hosts used (one list for all, or none): CUDA_VISIBLE_DEVICES.
device_ids=""
use_device_ids() {  # use_device_ids HOST IDS
  [ -n "$2" ] || return 0
  if [ -n "$device_ids" ] && [ "$device_ids" != "$2" ]; then
    die "device ids differ between hosts ($device_ids, $2 on $1): every rank gets the same CUDA_VISIBLE_DEVICES"
  fi
  device_ids=$2
}

[ -z "$include" ] || parse_filter --include "$include"
[ -z "$exclude" ] || parse_filter --exclude "$exclude"

# Every rank gets these variables (mpirun -x; srun exports the whole environment).
forwarded_vars() {
  local name
  for name in $(compgen -e); do
    case $name in ZT_* | NCCL_* | OMP_* | GOMP_*) echo "$name" ;; esac
  done
}

# Rank 0's progress line, drawn in place by render_progress when the launcher writes to a terminal.
render=0
if [ "$dry_run" -eq 0 ] && [ -t 2 ] && [ -z "${ZT_PROGRESS:-}" ]; then
  export ZT_PROGRESS=markers
  render=1
  term_cols=$(stty size </dev/tty 2>/dev/null | cut -d' ' -f2) || true
  [[ ${term_cols:-} =~ ^[1-9][0-9]*$ ]] || term_cols=80
fi

# Reads the tagged stderr of the ranks; rank 0's "<zt-progress> TEXT" lines become one line kept
# in place with carriage returns, cleared before any other line and drawn again below it.
render_progress() (
  trap '' INT TERM HUP
  shown=""
  while IFS= read -r line || [ -n "$line" ]; do
    case $line in
      "[0] <zt-progress> "*)
        shown=${line#"[0] <zt-progress> "}
        shown=${shown:0:$((term_cols - 1))}
        printf '\r%s\033[K' "$shown"
        ;;
      "[0] <zt-progress-end>"*)
        [ -z "$shown" ] || printf '\r\033[K'
        shown=""
        ;;
      *)
        if [ -n "$shown" ]; then printf '\r\033[K%s\n%s' "$line" "$shown"; else printf '%s\n' "$line"; fi
        ;;
    esac
  done
  [ -z "$shown" ] || printf '\r\033[K'
)

# Copies its input to its output; once the output is gone (a closed pipe or terminal), reads on and
# drops the rest, so that the job never writes into a dead pipe and is never ended by one.
pass_on() {
  cat 2>/dev/null || exec cat >/dev/null
}

# Output lines are tagged by the launcher ("[1,3]<stdout>:" from mpirun --tag-output, "3: "
# from srun --label); rewrite both as "[3] ", then apply the sed expressions given. The filter
# ignores Ctrl-C and SIGTERM: it ends when the job's output does, so the lines the ranks write
# while they stop are not lost.
tag_lines() (
  trap '' INT TERM HUP
  expressions=()
  for e in "$@"; do expressions+=(-e "$e"); done
  exec sed -u -E -e 's/^\[[0-9]+,([0-9]+)\]<std(out|err)>: ?/[\1] /' "${expressions[@]}"
)

# What the launcher learns while its job runs, in a directory removed at exit: rank 0's marker
# lines (lib/train/launcher_markers.hpp: training.checkpoint_dir, training.comm_timeout), kept out
# of the output, and mpirun's own messages, held back until the job has ended.
state_dir=""
make_state_dir() {
  state_dir=$(mktemp -d "${TMPDIR:-/tmp}/zt-launch.XXXXXX")
  trap 'rm -rf "$state_dir"' EXIT
}
# The sed expressions that move rank 0's markers to the markers file.
marker_capture() { printf '%s\n' "\\#^\\[0\\] <zt-(checkpoint-dir|comm-timeout)> #{w $state_dir/markers" 'd;}'; }
# The last value rank 0 gave for marker NAME ("checkpoint-dir"); nothing when it gave none.
marker() {
  [ -r "$state_dir/markers" ] || return 0
  sed -n "s/^\\[0\\] <zt-$1> //p" "$state_dir/markers" | tail -n 1
}
has_marker() { [ -r "$state_dir/markers" ] && grep -q "^\\[0\\] <zt-$1> " "$state_dir/markers"; }

# Runs the launch command with its stdout and stderr tagged separately; returns its exit code.
run_tagged() {
  local label_rewrite=$1
  shift
  local err_fd err_pid codes captures
  mapfile -t captures < <(marker_capture)
  if [ "$render" -eq 1 ]; then
    exec {err_fd}> >(trap '' INT TERM HUP; tag_lines "$label_rewrite" "${captures[@]}" | render_progress | pass_on >&2)
  else
    exec {err_fd}> >(trap '' INT TERM HUP; tag_lines "$label_rewrite" "${captures[@]}" | pass_on >&2)
  fi
  err_pid=$!
  # srun takes the terminal's Ctrl-C itself; the launcher only notes it (no restart after it).
  trap 'interrupts=$((interrupts + 1))' INT TERM HUP
  set +e
  (trap - PIPE; exec "$@") 2>&"$err_fd" | (trap '' INT TERM HUP; tag_lines "$label_rewrite" | pass_on)
  codes=("${PIPESTATUS[@]}")
  set -e
  trap - INT TERM HUP
  exec {err_fd}>&-
  wait "$err_pid" 2>/dev/null || true
  return "${codes[0]}"
}

# mpirun forwards neither SIGINT nor SIGTERM; the launcher relays them as these two, which mpirun
# is told to forward (ess_base_forward_signals) and zerotrain names as what they were
# (lib/train/stop_signals.hpp).
relay_int=$(kill -l RTMIN+1)
relay_term=$(kill -l RTMIN+2)

# Runs mpirun with its output tagged and Ctrl-C turned into a clean stop; returns its exit code.
# The terminal sends Ctrl-C's SIGINT to its foreground process group. mpirun runs in a process
# group of its own (job control, set -m), and without the terminal as its stdin, so the signal
# reaches only this script. The first SIGINT or SIGTERM is relayed to mpirun (relay_int,
# relay_term), which forwards it to every rank: zerotrain stops after the current step, saves a
# checkpoint and exits 75. mpirun forwards a signal only to the ranks it has started, and a rank
# ignores the relayed signals until zerotrain has set up its handler, so the relayed signal is
# repeated every second until the job ends (zerotrain takes a repeated one as the same request).
# The second SIGINT or SIGTERM sends SIGTERM: mpirun ends the ranks, and the launcher exits
# non-zero even if they had finished.
run_interruptible() {
  local out_fd err_fd out_pid err_pid watcher captures
  # The output filters start with Ctrl-C and SIGTERM ignored (inherited, not set once they run):
  # one that a Ctrl-C ended while starting would leave mpirun writing into a closed pipe.
  trap '' INT TERM HUP
  exec {out_fd}> >(tag_lines | pass_on)
  out_pid=$!
  mapfile -t captures < <(marker_capture)
  # mpirun says so on every forwarded signal; the launcher has said it once. Its other lines
  # (never a rank's: those are tagged) wait in mpirun.err until the job has ended. A rank that
  # aborts the job says so at level critical (zerotrain's abort_job): noted in failures. A rank's
  # error line (zerotrain's "error: ..." of a refused start, or a logged error) is noted in errors.
  local expressions=('/^mpirun: Forwarding signal [0-9]+ to job$/d' "${captures[@]}"
    "\\#^\\[[0-9]+\\] .*\\] critical: #w $state_dir/failures"
    "\\#^\\[[0-9]+\\] (error: |.*\\] (error|critical): )#w $state_dir/errors"
    "\\#^\\[[0-9]+\\] #!{w $state_dir/mpirun.err" 'd;}')
  if [ "$render" -eq 1 ]; then
    exec {err_fd}> >(trap '' INT TERM HUP; tag_lines "${expressions[@]}" | render_progress | pass_on >&2)
  else
    exec {err_fd}> >(tag_lines "${expressions[@]}" | pass_on >&2)
  fi
  err_pid=$!
  interrupts=0
  job=""
  repeater=""
  trap 'on_interrupt INT' INT
  trap 'on_interrupt TERM' TERM
  trap 'on_interrupt HUP' HUP
  # mpirun starts with the relayed signals ignored: it installs its forwarding handler during
  # start-up and restores the ignore when it shuts down, so one before or after never kills it.
  set -m
  (
    trap '' USR1 "$relay_int" "$relay_term"
    trap - PIPE
    exec "$@"
  ) </dev/null >&"$out_fd" 2>&"$err_fd" &
  job=$!
  set +m
  exec {out_fd}>&- {err_fd}>&-
  watch_failed_job "$job" &
  watcher=$!
  # Interrupted while mpirun was being started: nothing ran yet to stop cleanly.
  if [ "$interrupts" -gt 0 ]; then interrupts=2; kill -TERM "$job" 2>/dev/null || true; fi
  local code=0
  # wait returns early (>128) when a trapped signal arrives; wait again while mpirun runs. Bash
  # keeps the status of a finished background job, so the last wait returns mpirun's exit code.
  # (bash's notice of a job ended by a signal is left out: the launcher says what happened.)
  while kill -0 "$job" 2>/dev/null; do wait "$job" 2>/dev/null || true; done
  wait "$job" 2>/dev/null || code=$?
  trap - INT TERM HUP
  stop_repeater
  wait "$out_pid" "$err_pid" "$watcher" 2>/dev/null || true
  if [ -r "$state_dir/ended" ]; then code=$(head -n 1 "$state_dir/ended"); fi  # ended by watch_failed_job
  if [ "$interrupts" -ge 2 ] && [ "$code" -eq 0 ]; then code=130; fi
  show_mpirun_messages "$code"
  return "$code"
}

on_interrupt() {  # SIGNAL_NAME
  # A closed terminal asks for the clean stop, once; it never kills a job that is stopping.
  if [ "$1" = HUP ] && [ "$interrupts" -gt 0 ]; then return; fi
  interrupts=$((interrupts + 1))
  if [ -z "$job" ]; then
    return
  elif [ "$interrupts" -eq 1 ]; then
    local relay=$relay_int
    [ "$1" = INT ] || relay=$relay_term
    note "interrupted by SIG$1: the ranks stop after their current step (Ctrl-C again to kill them)"
    (
      trap '' INT HUP
      while kill "-$relay" "$job" 2>/dev/null; do sleep 1; done
    ) </dev/null >/dev/null 2>&1 &
    repeater=$!
  else
    note "interrupted again: killing the job"
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

# mpirun's own messages, held back while the job ran. After a stop (75) its report of the ranks
# that exited non-zero is left out: a stop is not a crash; so is its report of the failed or
# aborting rank after a rank has said its error itself (a refused start is its one line). When the
# launcher ended mpirun, what it said while being ended (a stack trace) is left out too.
show_mpirun_messages() {  # EXIT_CODE
  local held=$state_dir/mpirun.err left_out=""
  [ -s "$held" ] || return 0
  if [ "$1" -eq 75 ]; then
    left_out='non-zero'
  elif [ "$1" -ne 0 ] && [ -s "$state_dir/errors" ]; then
    left_out='non-zero|MPI_ABORT was invoked'
  fi
  if [ -r "$state_dir/ended" ]; then
    head -c "$(sed -n 2p "$state_dir/ended")" "$held" >&2 2>/dev/null || true
  elif [ -n "$left_out" ]; then
    awk -v left_out="$left_out" '/^----------+$/ {
           block = block $0 "\n"
           if (open && block !~ left_out) printf "%s", block
           if (open) block = ""
           open = !open
           next
         }
         open { block = block $0 "\n"; next }
         { print }
         END { if (open) printf "%s", block }' "$held" >&2 2>/dev/null || true
  else
    cat "$held" >&2 2>/dev/null || true
  fi
  : >"$held"
}

# After a failed job: the step it can resume from, from the `latest` of the checkpoint directory
# rank 0 gave. Nothing for a program that gave none (not zerotrain).
say_resume_hint() {  # EXIT_CODE
  has_marker checkpoint-dir || return 0
  local dir latest=""
  dir=$(marker checkpoint-dir)
  if [ -z "$dir" ]; then
    note "the job failed (exit status $1) and saved nothing (no training.checkpoint_dir): a rerun starts from step 1"
    return 0
  fi
  if [ -r "$dir/latest" ]; then latest=$(head -n 1 "$dir/latest"); fi
  if [[ $latest =~ ^step_0*([0-9]+)$ ]]; then
    note "the job failed (exit status $1): resume from step ${BASH_REMATCH[1]} ($dir/$latest): run the same command with --set training.resume=auto"
  else
    note "the job failed (exit status $1) before its first checkpoint in $dir: a rerun starts from step 1"
  fi
}

# How long the other ranks get after mpirun has reported a failed rank: a little over
# training.comm_timeout (rank 0's marker), the time they may wait in a collective before they end
# themselves; ZT_FAILURE_GRACE seconds when set; 60 s for a program that gives no timeout.
failure_grace() {
  if [[ ${ZT_FAILURE_GRACE:-} =~ ^[0-9]+$ ]]; then
    echo "$ZT_FAILURE_GRACE"
    return
  fi
  awk -v t="$(marker comm-timeout)" 'BEGIN { if (t + 0 > 0) printf "%d\n", t + 10.999; else print 60 }'
}

# The hosts of the job that no longer answer on the network: no TCP connection to their ssh port
# within 3 s (a refused connection is an answer: the machine is there).
silent_hosts() {
  local host out silent=()
  for host in "${job_hosts[@]}"; do
    out=$(timeout 3 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$host" "${ssh_port:-22}" 2>&1) && continue
    [[ $out == *refused* ]] && continue
    silent+=("$host")
  done
  echo "${silent[*]}"
}

# The failed rank's exit code as mpirun reported it (MPI_Abort's errorcode, an exit code, 128 + a
# signal), else 1.
failed_rank_code() {
  local held=$state_dir/mpirun.err n
  n=$(grep -Eo 'errorcode [0-9]+|Exit code: +[0-9]+' "$held" | head -n 1 | grep -Eo '[0-9]+$' || true)
  if [ -z "$n" ]; then
    n=$(grep -Eo 'exited on signal [0-9]+' "$held" | head -n 1 | grep -Eo '[0-9]+$' || true)
    [ -z "$n" ] || n=$((128 + n))
  fi
  echo "${n:-1}"
}

# Ends a process and every process it started: SIGTERM, then SIGKILL to what is left 3 s later.
end_process_tree() {  # PID
  local pids=("$1") i=0 p
  while [ $i -lt ${#pids[@]} ]; do
    for p in $(pgrep -P "${pids[$i]}" 2>/dev/null); do pids+=("$p"); done
    i=$((i + 1))
  done
  kill -TERM "${pids[@]}" 2>/dev/null || true
  sleep 3
  kill -KILL "${pids[@]}" 2>/dev/null || true
}

# mpirun waits forever on the daemon of a host it can no longer reach, even after it has reported
# a failed rank. Once one of its messages reports a failure, or a rank says it aborts the job, the
# other ranks get failure_grace seconds to end; then the launcher names the hosts that no longer
# answer, ends mpirun and what it started, and leaves in state_dir/ended the failed rank's exit
# code and how much mpirun had said.
watch_failed_job() (  # MPIRUN_PID
  trap '' INT TERM HUP
  job=$1
  failed_at=""
  grace=0
  pattern='non-zero exit code|non-zero status|MPI_ABORT was invoked|exited on signal|noticed that process rank|lost communication'
  while kill -0 "$job" 2>/dev/null; do
    if [ -z "$failed_at" ]; then
      if [ -s "$state_dir/failures" ] || grep -Eq "$pattern" "$state_dir/mpirun.err" 2>/dev/null; then
        failed_at=$SECONDS
        grace=$(failure_grace)
      fi
    elif [ $((SECONDS - failed_at)) -ge "$grace" ]; then
      silent=$(silent_hosts)
      code=$(failed_rank_code)
      printf '%s\n%s\n' "$code" "$(stat -c %s "$state_dir/mpirun.err")" >"$state_dir/ended"
      note "a rank failed $grace s ago and mpirun still waits${silent:+ on $silent, which no longer answers on the network}: ending mpirun and what it started"
      end_process_tree "$job"
      return
    fi
    sleep 0.5
  done
)

# Sleeps SECONDS; fails when Ctrl-C or SIGTERM comes meanwhile.
pause() {
  local cancelled=0 sleeper
  trap 'cancelled=1' INT TERM HUP
  sleep "$1" &
  sleeper=$!
  wait "$sleeper" 2>/dev/null || true
  kill "$sleeper" 2>/dev/null || true
  trap - INT TERM HUP
  [ "$cancelled" -eq 0 ]
}

# Runs the job (RUNNER COMMAND...) and returns its exit code. After a failure it says where the job
# can resume from, and while --max-restarts allows, starts it again after --restart-delay seconds
# with training.resume auto; never after exit status 75 (interrupted), 2 (config or command-line
# error), a Ctrl-C, or a job with no checkpoint directory.
interrupts=0
run_job() {
  local runner=$1
  shift
  local job_cmd=("$@") code restarts=0
  while :; do
    code=0
    "$runner" "${job_cmd[@]}" || code=$?
    if [ "$code" -eq 0 ] || [ "$code" -eq 75 ] || [ "$code" -eq 2 ]; then return "$code"; fi
    say_resume_hint "$code"
    if [ "$interrupts" -gt 0 ] || [ "$restarts" -ge "$max_restarts" ]; then return "$code"; fi
    if ! has_marker checkpoint-dir; then
      note "not restarted: the job failed before training began (in set-up: it would fail again)"
      return "$code"
    fi
    if [ -z "$(marker checkpoint-dir)" ]; then
      note "not restarted: the job has no training.checkpoint_dir to resume from"
      return "$code"
    fi
    restarts=$((restarts + 1))
    note "restart $restarts of $max_restarts in $restart_delay s, with training.resume auto"
    pause "$restart_delay" || return "$code"
    [ "$restarts" -gt 1 ] || job_cmd+=(--set training.resume=auto)
  done
}

# --- SLURM --------------------------------------------------------------------------------
if [ "$launcher" = slurm ] || { [ -z "$launcher" ] && [ -n "${SLURM_JOB_ID:-}" ] && [ -z "$hostfile" ]; }; then
  [ -z "$hostfile" ] || die "--hostfile with --launcher slurm: srun takes its hosts from the allocation"
  [ -z "$ssh_port" ] || note "--ssh_port ignored: srun does not use ssh"
  srun_opts=()
  if [ -n "$nodes" ]; then srun_opts+=(-N "$nodes"); fi
  if [ -n "$per_node" ]; then srun_opts+=(--ntasks-per-node="$per_node"); fi
  filter_hosts=()
  for host in "${spec_hosts[@]}"; do
    filter_hosts+=("$host")
    if [ -n "$exclude" ] && [ -n "${spec_ids[$host]}" ]; then
      die "--exclude $exclude: device ids cannot be left out under SLURM (give --include HOST:IDS)"
    fi
    use_device_ids "$host" "${spec_ids[$host]}"
  done
  if [ ${#filter_hosts[@]} -gt 0 ]; then
    list=$(IFS=,; echo "${filter_hosts[*]}")
    if [ -n "$include" ]; then srun_opts+=(--nodelist="$list"); else srun_opts+=(--exclude="$list"); fi
  fi
  if [ -n "$device_ids" ]; then
    for host in "${filter_hosts[@]}"; do
      [ -n "${spec_ids[$host]}" ] ||
        die "device ids $device_ids are given for some hosts but not for $host: every rank gets the same CUDA_VISIBLE_DEVICES"
    done
    export CUDA_VISIBLE_DEVICES=$device_ids
  fi
  slurm_nodes=${nodes:-${SLURM_NNODES:-1}}
  if [ -z "$ranks" ]; then
    if [ -n "$per_node" ]; then ranks=$((per_node * slurm_nodes)); else ranks=${SLURM_NTASKS:-1}; fi
  fi
  if [ -n "$rank_log_dir" ]; then
    mkdir -p "$rank_log_dir"
    srun_opts+=(--output="$rank_log_dir/rank%t.log")
  fi
  # shellcheck disable=SC2206
  cmd=(srun -n "$ranks" "${srun_opts[@]}" --kill-on-bad-exit=1 --label ${ZT_SRUN_ARGS:-} $launcher_args "${program[@]}")
  if [ $dry_run -eq 1 ]; then
    echo "${device_ids:+CUDA_VISIBLE_DEVICES=$device_ids }$(shell_quoted "${cmd[@]}")"
    exit 0
  fi
  export ZT_LAUNCH_MARKERS=1  # srun passes the whole environment
  if [ "$max_restarts" -gt 0 ]; then export ZT_MAX_RESTARTS=$max_restarts; fi
  make_state_dir
  status=0
  run_job run_tagged 's/^ *([0-9]+): /[\1] /' "${cmd[@]}" || status=$?
  exit "$status"
fi

# --- mpirun -------------------------------------------------------------------------------
cmd=(mpirun)
if [ -n "$hostfile" ]; then
  [ -e "$hostfile" ] || die "hostfile '$hostfile' does not exist"
  [ ! -d "$hostfile" ] || die "hostfile '$hostfile' is a directory (expected a file of 'HOST slots=K' lines)"
  [ -r "$hostfile" ] || die "hostfile '$hostfile' cannot be read"
  hosts=()
  declare -A slots_of=()
  declare -A seen=()
  line_no=0
  while IFS= read -r line || [ -n "$line" ]; do
    line_no=$((line_no + 1))
    line=${line%%#*}
    line=${line#"${line%%[![:space:]]*}"}  # trim
    line=${line%"${line##*[![:space:]]}"}
    [ -n "$line" ] || continue
    if ! [[ $line =~ ^([^[:space:]]+)[[:space:]]+slots=([0-9]+)$ ]]; then
      die "hostfile $hostfile line $line_no: expected 'HOST slots=N' (N >= 1), got '$line'"
    fi
    host=${BASH_REMATCH[1]}
    slots=${BASH_REMATCH[2]}
    check_host_name "$host" "hostfile $hostfile line $line_no"
    if ! is_count "$slots" || [ "$slots" -gt $max_slots_per_host ]; then
      die "hostfile $hostfile line $line_no: slots=$slots is out of range (expected 1..$max_slots_per_host)"
    fi
    if [ -n "${seen[$host]:-}" ]; then
      die "hostfile $hostfile line $line_no: host '$host' already listed on line ${seen[$host]}"
    fi
    seen[$host]=$line_no
    hosts+=("$host")
    slots_of[$host]=$slots
  done <"$hostfile"
  [ ${#hosts[@]} -gt 0 ] || die "hostfile $hostfile lists no hosts"

  # --include / --exclude: which hosts, and how many of their slots.
  for host in "${spec_hosts[@]}"; do
    [ -n "${seen[$host]:-}" ] || die "${include:+--include $include}${exclude:+--exclude $exclude}: host '$host' is not in hostfile $hostfile"
  done
  used=()
  declare -A ids_of=()
  for host in "${hosts[@]}"; do
    ids=""
    if [ -n "$include" ]; then
      [ -n "${spec_ids[$host]+x}" ] || continue
      ids=${spec_ids[$host]}
    elif [ -n "$exclude" ] && [ -n "${spec_ids[$host]+x}" ]; then
      [ -n "${spec_ids[$host]}" ] || continue  # the whole host left out
      keep=()  # the devices 0..slots-1 not left out
      for ((d = 0; d < slots_of[$host]; d++)); do
        [[ ,${spec_ids[$host]}, == *,$d,* ]] || keep+=("$d")
      done
      [ ${#keep[@]} -gt 0 ] || continue
      ids=$(IFS=,; echo "${keep[*]}")
    fi
    if [ -n "$ids" ]; then slots_of[$host]=$(count_ids "$ids"); fi
    ids_of[$host]=$ids
    if [ -n "$per_node" ] && [ "${slots_of[$host]}" -gt "$per_node" ]; then slots_of[$host]=$per_node; fi
    used+=("$host")
  done
  [ ${#used[@]} -gt 0 ] || die "no host of hostfile $hostfile is left after ${include:+--include $include}${exclude:+--exclude $exclude}"
  if [ -n "$nodes" ]; then
    [ "$nodes" -le ${#used[@]} ] || die "--num_nodes $nodes: hostfile $hostfile has ${#used[@]} usable host(s)"
    used=("${used[@]:0:$nodes}")
  fi
  # One CUDA_VISIBLE_DEVICES for every rank: device ids on all the hosts used, the same on each, or on none.
  for host in "${used[@]}"; do use_device_ids "$host" "${ids_of[$host]}"; done
  if [ -n "$device_ids" ]; then
    for host in "${used[@]}"; do
      [ -n "${ids_of[$host]}" ] ||
        die "device ids $device_ids are given for some hosts but not for $host: every rank gets the same CUDA_VISIBLE_DEVICES"
    done
  fi
  total_slots=0
  host_list=""
  for host in "${used[@]}"; do
    total_slots=$((total_slots + slots_of[$host]))
    host_list+="${host_list:+,}$host:${slots_of[$host]}"
  done
  ranks=${ranks:-$total_slots}
  if [ "$ranks" -gt "$total_slots" ]; then
    die "-n $ranks exceeds the $total_slots slots of hostfile $hostfile"
  fi
  # The hosts on the command line (mpirun --host HOST:SLOTS), not in a temporary file: the command
  # that --dry-run prints can be run as it is.
  cmd+=(--host "$host_list")
  job_hosts=("${used[@]}")
else
  if [ -n "$nodes" ] && [ "$nodes" -gt 1 ]; then
    die "--num_nodes $nodes needs --hostfile FILE (or a SLURM allocation): without one, ranks run on this machine"
  fi
  for host in "${spec_hosts[@]}"; do
    case $host in
      localhost | 127.0.0.1) ;;
      *) die "${include:+--include $include}${exclude:+--exclude $exclude}: host '$host' needs --hostfile FILE (without one, only localhost)" ;;
    esac
    [ -z "$exclude" ] || die "--exclude without --hostfile: give the devices to use with --include localhost:IDS"
    use_device_ids "$host" "${spec_ids[$host]}"
  done
  local_ranks=${per_node:-}
  if [ -n "$device_ids" ]; then
    id_count=$(count_ids "$device_ids")
    if [ -n "$local_ranks" ] && [ "$local_ranks" -ne "$id_count" ]; then
      die "--include $include names $id_count device(s), but ${per_node:+--num_gpus $per_node} asks for $per_node ranks"
    fi
    local_ranks=$id_count
  fi
  if [ -n "$ranks" ] && [ -n "$local_ranks" ] && [ "$ranks" -ne "$local_ranks" ]; then
    die "-n $ranks and $local_ranks ranks per machine (--num_gpus, --nproc_per_node or --include) disagree on one machine"
  fi
  ranks=${ranks:-${local_ranks:-1}}
  if [ "$ranks" -gt "$cores" ]; then cmd+=(--oversubscribe); fi
fi
if [ -n "$device_ids" ]; then export CUDA_VISIBLE_DEVICES=$device_ids; fi
cmd+=(-np "$ranks" --bind-to none --mca mpi_yield_when_idle 1 --tag-output
  --mca ess_base_forward_signals "$relay_int,$relay_term")
if [ "$(id -u)" -eq 0 ]; then cmd+=(--allow-run-as-root); fi
if [ -n "$ssh_port" ]; then cmd+=(--mca plm_rsh_args "-p $ssh_port"); fi
if [ -n "$rank_log_dir" ]; then cmd+=(--output-filename "$rank_log_dir"); fi
for name in $(forwarded_vars); do cmd+=(-x "$name"); done
if [ -n "$device_ids" ]; then cmd+=(-x CUDA_VISIBLE_DEVICES); fi
if [ "$max_restarts" -gt 0 ]; then cmd+=(-x "ZT_MAX_RESTARTS=$max_restarts"); fi
# The ranks start with SIGUSR1 and the relayed signals ignored, so a Ctrl-C while they load cannot
# kill them; zerotrain installs its handlers once MPI is initialised (see run_interruptible).
if env --ignore-signal=USR1,RTMIN+1,RTMIN+2 true 2>/dev/null; then
  rank_prefix=(env --ignore-signal=USR1,RTMIN+1,RTMIN+2)
else  # coreutils before 8.31
  rank_prefix=(sh -c "trap '' USR1 $relay_int $relay_term; exec \"\$@\"" zt-rank)
fi
# shellcheck disable=SC2206
cmd+=(${ZT_MPIRUN_ARGS:-} $launcher_args "${rank_prefix[@]}" "${program[@]}")

if [ $dry_run -eq 1 ]; then
  echo "${device_ids:+CUDA_VISIBLE_DEVICES=$device_ids }$(shell_quoted "${cmd[@]}")"
  exit 0
fi
# Rank 0 says where its checkpoints go and its collective timeout (not in the dry run's command:
# typed by hand, it would show the marker lines).
cmd=("${cmd[0]}" -x ZT_LAUNCH_MARKERS=1 "${cmd[@]:1}")
make_state_dir
status=0
run_job run_interruptible "${cmd[@]}" || status=$?
exit "$status"
