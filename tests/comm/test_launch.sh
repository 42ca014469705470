#!/usr/bin/env bash
# Tests scripts/launch.sh: rank-tagged output, OMP_NUM_THREADS left to the ranks, exit code propagation,
# hostfile conversion and errors, the deepspeed launcher's and torchrun's options, the SLURM path
# (dry run), --help, a real MPI program, rank 0's progress line on a terminal (and never a carriage
# return elsewhere), Ctrl-C (a clean stop through a relayed signal; a second one kills the job),
# mpirun's messages (held to the end, its crash report left out after a stop), the resume hint
# after a failure, and --max-restarts.
#   test_launch.sh LAUNCH_SH MPI_TEST_BINARY
set -u
launch=$1
mpi_binary=$2
source "$(dirname "$0")/../shell_checks.sh"
cores=$(nproc)
# The launcher's own choices are under test: start from an environment without them.
unset OMP_NUM_THREADS SLURM_JOB_ID SLURM_NTASKS SLURM_CPUS_PER_TASK SLURM_NNODES SLURM_JOB_CPUS_PER_NODE \
  SLURM_CPUS_ON_NODE ZT_MPIRUN_ARGS ZT_PROGRESS CUDA_VISIBLE_DEVICES

# 1. Two local ranks: every line tagged with its rank; OMP_NUM_THREADS left to the ranks (zerotrain
#    takes its share of the cores it was given).
out=$("$launch" -n 2 -- sh -c 'echo "hello from $OMPI_COMM_WORLD_RANK threads=${OMP_NUM_THREADS-unset}"' 2>&1)
rc=$?
[ $rc -eq 0 ] || fail "-n 2 exited $rc"
for r in 0 1; do
  echo "$out" | grep -qx "\[$r\] hello from $r threads=unset" || fail "no tagged line from rank $r in: $out"
done
[ "$(echo "$out" | grep -c hello)" -eq 2 ] || fail "expected 2 lines, got: $out"

# 2. stderr is tagged too and stays on stderr.
err=$("$launch" -n 2 -- sh -c 'echo "oops $OMPI_COMM_WORLD_RANK" >&2' 2>&1 >/dev/null)
echo "$err" | grep -qx "\[1\] oops 1" || fail "stderr not tagged: $err"

# 3. A user's OMP_NUM_THREADS is kept.
out=$(OMP_NUM_THREADS=3 "$launch" -n 2 -- sh -c 'echo "t=$OMP_NUM_THREADS"' 2>&1)
[ "$(echo "$out" | grep -c 't=3$')" -eq 2 ] || fail "OMP_NUM_THREADS=3 not kept: $out"

# 4. Exit code: the failing rank's; a rank killed by a signal gives 128 + signal.
"$launch" -n 3 -- sh -c 'exit $((OMPI_COMM_WORLD_RANK == 2 ? 7 : 0))' >/dev/null 2>&1
rc=$?
[ $rc -eq 7 ] || fail "exit code $rc, expected 7"
"$launch" -n 2 -- sh -c '[ $OMPI_COMM_WORLD_RANK -eq 1 ] && kill -9 $$; sleep 30' >/dev/null 2>&1
rc=$?
[ $rc -eq 137 ] || fail "killed rank: exit code $rc, expected 137"
"$launch" -n 2 -- true || fail "successful job did not exit 0"

# 5. More ranks than cores: --oversubscribe; fewer: not.
dry=$("$launch" -n $((cores + 1)) --dry-run -- prog)
echo "$dry" | grep -q -- "--oversubscribe" || fail "no --oversubscribe for $((cores + 1)) ranks: $dry"
dry=$("$launch" -n 1 --dry-run -- prog)
echo "$dry" | grep -q -- "--oversubscribe" && fail "--oversubscribe for 1 rank: $dry"
for flag in "--bind-to none" "--mca mpi_yield_when_idle 1" "-np 1"; do
  echo "$dry" | grep -q -- "$flag" || fail "dry run lacks '$flag': $dry"
done
if [ "$(id -u)" -eq 0 ]; then
  echo "$dry" | grep -q -- "--allow-run-as-root" || fail "root run lacks --allow-run-as-root"
else
  echo "$dry" | grep -q -- "--allow-run-as-root" && fail "--allow-run-as-root for a non-root user"
fi
# The printed command can be typed back: arguments with spaces or quotes stay whole.
dry=$("$launch" -n 1 --dry-run -- prog --set "training.metrics=/tmp/a b.jsonl" "it's")
echo "$dry" | grep -qF -- "prog --set training.metrics=/tmp/a\\ b.jsonl it\\'s" || fail "dry run loses quoting: $dry"
dry=$(ZT_COMM_CHECK=1 "$launch" -n 2 --dry-run -- prog)
echo "$dry" | grep -q -- "-x ZT_COMM_CHECK" || fail "ZT_* variables not forwarded: $dry"
echo "$dry" | grep -q -- "OMP_NUM_THREADS" && fail "OMP_NUM_THREADS set by the launcher: $dry"
dry=$(OMP_NUM_THREADS=3 OMP_WAIT_POLICY=active GOMP_SPINCOUNT=10 "$launch" -n 2 --dry-run -- prog)
for var in OMP_NUM_THREADS OMP_WAIT_POLICY GOMP_SPINCOUNT; do
  echo "$dry" | grep -q -- "-x $var" || fail "the user's $var not forwarded: $dry"
done

# 6. DeepSpeed hostfile: comments and blank lines dropped, N = total slots, threads per machine;
#    the hosts reach mpirun on its command line (--host), never as a temporary file.
cat >"$tmp/hosts" <<'HOSTS'
# training machines
node-a slots=4   # first
  node-b   slots=2

HOSTS
dry=$("$launch" --hostfile "$tmp/hosts" --dry-run -- zerotrain --steps 2)
rc=$?
[ $rc -eq 0 ] || fail "hostfile dry run exited $rc"
echo "$dry" | grep -q -- "-np 6 " || fail "hostfile: expected -np 6: $dry"
echo "$dry" | grep -q -- "--host node-a:4,node-b:2 " || fail "hostfile: expected --host node-a:4,node-b:2: $dry"
[ "$(echo "$dry" | wc -l)" -eq 1 ] || fail "hostfile: the dry run prints more than the command: $dry"
echo "$dry" | grep -q -- "--hostfile\|zt-hostfile" && fail "hostfile: dry run names a temporary file: $dry"
echo "$dry" | grep -q "zerotrain --steps 2$" || fail "hostfile: program missing: $dry"
# The ranks start with SIGUSR1 and the relayed signals ignored (a Ctrl-C while they load must not
# kill them), and mpirun forwards the relayed ones.
echo "$dry" | grep -Eq "(env --ignore-signal=USR1,RTMIN\+1,RTMIN\+2|zt-rank) zerotrain --steps 2$" ||
  fail "ranks do not start with the stop signals ignored: $dry"
echo "$dry" | grep -q -- "--mca ess_base_forward_signals $(kill -l RTMIN+1),$(kill -l RTMIN+2) " ||
  fail "mpirun does not forward the relayed signals: $dry"
echo "$dry" | grep -q "^mpirun " || fail "hostfile: the launcher sets variables: $dry"

# 7. Bad hostfiles and arguments: exit 2 with a message naming the problem.
expect_error() {  # expect_error PATTERN ARGS...
  local pattern=$1
  shift
  local msg
  msg=$("$launch" "$@" 2>&1)
  local code=$?
  [ $code -eq 2 ] || fail "'$*' exited $code, expected 2"
  echo "$msg" | grep -q -- "$pattern" || fail "'$*': message lacks '$pattern': $msg"
}
printf 'node-a slots=4\nnode-b slots\n' >"$tmp/bad1"
expect_error "line 2: expected 'HOST slots=N'" --hostfile "$tmp/bad1" -- true
printf 'node-a slots=2\nnode-a slots=2\n' >"$tmp/bad2"
expect_error "already listed on line 1" --hostfile "$tmp/bad2" -- true
printf '# nothing\n' >"$tmp/bad3"
expect_error "lists no hosts" --hostfile "$tmp/bad3" -- true
expect_error "exceeds the 6 slots" -n 7 --hostfile "$tmp/hosts" -- true
expect_error "hostfile '$tmp/missing' does not exist" --hostfile "$tmp/missing" -- true
expect_error "hostfile '$tmp' is a directory" --hostfile "$tmp" -- true
# A host beginning with '-' would reach ssh as an option.
printf 'node-a slots=1\n-oProxyCommand=touch slots=2\n' >"$tmp/bad4"
expect_error "hostfile $tmp/bad4 line 2: host '-oProxyCommand=touch' begins with '-'" --hostfile "$tmp/bad4" -- true
printf -- '-node slots=2\n' >"$tmp/bad5"
expect_error "hostfile $tmp/bad5 line 1: host '-node' begins with '-'" --hostfile "$tmp/bad5" -- true
printf 'node;rm slots=2\n' >"$tmp/bad6"
expect_error "line 1: 'node;rm' is not a host name" --hostfile "$tmp/bad6" -- true
# Slots beyond any machine's never overflow into a nonsense -np.
printf 'node-a slots=2\nnode-b slots=99999999999999999999\n' >"$tmp/bad7"
expect_error "hostfile $tmp/bad7 line 2: slots=99999999999999999999 is out of range (expected 1..65536)" \
  --hostfile "$tmp/bad7" -- true
printf 'node-a slots=65537\n' >"$tmp/bad8"
expect_error "line 1: slots=65537 is out of range" --hostfile "$tmp/bad8" -- true
printf 'node-a slots=0\n' >"$tmp/bad9"
expect_error "line 1: slots=0 is out of range" --hostfile "$tmp/bad9" -- true
expect_error "positive number" -n zero -- true
expect_error "no program" -n 2
expect_error "unknown option '--bogus'" -n 2 --bogus hostname
expect_error "unknown option '--bogus'" -n 2 --bogus -- hostname

# 8. SLURM: srun with -n, or SLURM_NTASKS; the threads are the ranks' own choice (from their node).
dry=$(SLURM_JOB_ID=1 SLURM_NTASKS=8 SLURM_CPUS_PER_TASK=6 "$launch" --dry-run -- zerotrain)
[ "$dry" = "srun -n 8 --kill-on-bad-exit=1 --label zerotrain" ] || fail "slurm: $dry"
dry=$(SLURM_JOB_ID=1 SLURM_NTASKS=8 "$launch" -n 2 --dry-run -- zerotrain)
echo "$dry" | grep -q "srun -n 2 " || fail "slurm -n 2: $dry"
dry=$(SLURM_JOB_ID=1 SLURM_NTASKS=4 SLURM_NNODES=2 SLURM_JOB_CPUS_PER_NODE='36(x2)' "$launch" --dry-run -- zerotrain)
[ "$dry" = "srun -n 4 --kill-on-bad-exit=1 --label zerotrain" ] || fail "slurm cpus per node: $dry"
dry=$(SLURM_JOB_ID=1 SLURM_NNODES=4 SLURM_JOB_CPUS_PER_NODE=64 "$launch" --dry-run --num_nodes 2 --num_gpus 8 zerotrain)
[ "$dry" = "srun -n 16 -N 2 --ntasks-per-node=8 --kill-on-bad-exit=1 --label zerotrain" ] ||
  fail "slurm --num_nodes 2 --num_gpus 8: $dry"
dry=$(SLURM_JOB_ID=1 SLURM_NTASKS=2 SLURM_CPUS_PER_TASK=4 "$launch" --dry-run --include gpu1@gpu2:0,1 zerotrain 2>&1)
[ $? -ne 0 ] || fail "slurm --include with ids on one host only accepted: $dry"
dry=$(SLURM_JOB_ID=1 SLURM_NTASKS=2 SLURM_CPUS_PER_TASK=4 "$launch" --dry-run --exclude gpu3 zerotrain)
echo "$dry" | grep -q -- "--exclude=gpu3 " || fail "slurm --exclude: $dry"

# 8b. The deepspeed launcher's and torchrun's options, and a program without "--".
dry_ok() {  # dry_ok PATTERN ARGS...: a dry run that succeeds and prints PATTERN
  local pattern=$1 out
  shift
  out=$("$launch" --dry-run "$@" 2>&1) || fail "'$*' exited $?: $out"
  echo "$out" | grep -q -- "$pattern" || fail "'$*': expected '$pattern' in: $out"
}
dry_ok "-np 3 " --num_gpus 3 prog
dry_ok "-np 3 " --num_gpus=3 prog
dry_ok "-np 2 " --nproc_per_node 2 prog
dry_ok "-np 2 " --nproc-per-node=2 -- prog
dry_ok "-np 2 " --nnodes 1 --nproc-per-node 2 prog
dry_ok "-np 1 .* prog --config zero2$" prog --config zero2
dry_ok "--host node-a:2,node-b:2 -np 4 " --hostfile "$tmp/hosts" --num_gpus 2 prog
dry_ok "--host node-a:4 -np 4 " --hostfile "$tmp/hosts" --num_nodes 1 prog
dry_ok "--host node-b:2 -np 2 " --hostfile "$tmp/hosts" --include node-b prog
dry_ok "--host node-b:2 -np 2 " --hostfile "$tmp/hosts" --exclude node-a prog
dry_ok "CUDA_VISIBLE_DEVICES=1,3 mpirun --host node-a:2 -np 2 .*-x CUDA_VISIBLE_DEVICES" \
  --hostfile "$tmp/hosts" --include node-a:1,3 prog
dry_ok "CUDA_VISIBLE_DEVICES=0,2,3 mpirun --host node-a:3 " --hostfile "$tmp/hosts" --exclude node-a:1@node-b prog
dry_ok "CUDA_VISIBLE_DEVICES=0,1 mpirun -np 2 " --include localhost:0,1 prog
dry_ok "--mca plm_rsh_args -p. 2222 " --ssh_port 2222 prog
dry_ok "--output-filename $tmp/logs " --enable_each_rank_log "$tmp/logs" prog
dry_ok "--mca btl self,tcp " --launcher_args "--mca btl self,tcp" prog
dry_ok "srun -n 2 " --launcher slurm -n 2 prog
# Options with no meaning here: said to be ignored, by name, and the job runs.
out=$("$launch" --dry-run --master_port 29500 --master-addr=10.0.0.1 --standalone --no_local_rank --monitor_interval 5 \
  --rdzv-backend c10d --node_rank 0 --min_elastic_nodes 1 -n 2 prog 2>&1)
[ $? -eq 0 ] || fail "ignored options: exit $?: $out"
for said in "--master_port 29500 ignored: MPI connects the ranks itself" "--master-addr 10.0.0.1 ignored" \
            "--standalone ignored" "--no_local_rank ignored: zerotrain asks MPI" "--monitor_interval 5 ignored" \
            "--rdzv-backend c10d ignored" "--node_rank 0 ignored" "--min_elastic_nodes 1 ignored"; do
  echo "$out" | grep -q -- "$said" || fail "ignored options: no '$said' in: $out"
done
echo "$out" | grep -q -- "-np 2 .* prog$" || fail "ignored options: command lost: $out"
echo "$out" | grep -q "29500\|c10d" && echo "$out" | grep "mpirun" | grep -q "29500\|c10d" &&
  fail "an ignored option reached mpirun: $out"
expect_error "--num_nodes 2 needs --hostfile" --num_nodes 2 prog
expect_error "elastic range" --nnodes 1:4 prog
expect_error "--launcher pdsh is not supported" --launcher pdsh prog
expect_error "--include and --exclude together" --include a --exclude b prog
expect_error "host 'node-x' is not in hostfile" --hostfile "$tmp/hosts" --include node-x prog
expect_error "host 'node-x' needs --hostfile" --include node-x:0 prog
expect_error "device ids differ between hosts" --hostfile "$tmp/hosts" --include node-a:0,1@node-b:1,0 prog
expect_error "given for some hosts but not for node-b" --hostfile "$tmp/hosts" --include node-a:0@node-b prog
expect_error "expects a positive number of ranks per machine" --num_gpus 0 prog
expect_error "disagree" -n 3 --num_gpus 2 prog
expect_error "--master_port needs a value" --master_port
# Restarts: --max-restarts, torchrun's --max_restarts, DeepSpeed's elastic training (100, as its agent).
dry_ok "-x ZT_MAX_RESTARTS=3 " --max-restarts 3 prog
dry_ok "-x ZT_MAX_RESTARTS=2 " --max_restarts=2 prog
dry_ok "-x ZT_MAX_RESTARTS=100 " --elastic_training prog
dry_ok "-x ZT_MAX_RESTARTS=4 " --enable_elastic_training --max_restarts 4 prog
out=$("$launch" --dry-run --max-restarts 0 prog 2>&1)
echo "$out" | grep -q "ZT_MAX_RESTARTS" && fail "--max-restarts 0: restarts asked of the ranks: $out"
expect_error "--max-restarts expects a number of restarts" --max-restarts many prog
expect_error "--restart-delay expects seconds" --restart-delay -1 prog
# torchrun's way, for real: no "--", ranks per machine from --nproc_per_node.
out=$("$launch" --nproc_per_node 2 --master_port 1234 sh -c 'echo "rank $OMPI_COMM_WORLD_RANK of $OMPI_COMM_WORLD_SIZE"' 2>&1)
for r in 0 1; do
  echo "$out" | grep -qx "\[$r\] rank $r of 2" || fail "--nproc_per_node 2 without --: no rank $r in: $out"
done

# 9. --help documents every choice.
help=$("$launch" --help)
for word in "-n" "--hostfile" "slots=" "srun" "SLURM" "OMP_NUM_THREADS" "--oversubscribe" \
            "--allow-run-as-root" "mpi_yield_when_idle" "Exit code" "tagged" "Ctrl-C" "SIGUSR1" "--num_gpus" \
            "--nproc_per_node" "--num_nodes" "--include" "--exclude" "--master_port" "ignored" "progress" \
            "OMP_WAIT_POLICY" "carriage return" \
            "--max-restarts" "--restart-delay" "--max_restarts" "--elastic_training" "ZT_FAILURE_GRACE" "SIGRTMIN+1"; do
  echo "$help" | grep -q -- "$word" || fail "--help does not mention '$word'"
done

# 10. A real MPI program (the communicator's sequence-check tests) through the launcher.
out=$("$launch" -n 2 -- "$mpi_binary" "[check]" --use-colour no 2>&1)
rc=$?
[ $rc -eq 0 ] || fail "MPI test through launch.sh exited $rc: $out"
echo "$out" | grep -q "^\[1\] All tests passed" || fail "rank 1 output not tagged: $out"

# 10b. Rank 0's progress line: on a terminal (script gives the launcher a pty) the ranks are told to
#      write it as "<zt-progress>" lines and the launcher draws it in place with carriage returns,
#      clearing it before other lines; to a file, the ranks are not told and nothing has a \r.
cat >"$tmp/progress.sh" <<'RANK'
echo "progress=${ZT_PROGRESS-unset}" >&2
if [ "$OMPI_COMM_WORLD_RANK" = 0 ]; then
  echo "<zt-progress> step 1/2 | loss 5.0" >&2
  echo "a log line" >&2
  echo "<zt-progress> step 2/2 | loss 4.0" >&2
  echo "<zt-progress-end>" >&2
fi
RANK
if command -v script >/dev/null; then
  out=$(script -qec "$launch -n 2 -- sh $tmp/progress.sh" /dev/null)
  rc=$?
  [ $rc -eq 0 ] || fail "progress on a terminal: exit $rc: $out"
  printf '%s' "$out" | grep -q "progress=markers" || fail "progress: ranks not told of the terminal: $out"
  printf '%s' "$out" | grep -q $'\rstep 1/2 | loss 5.0\e\[K' || fail "progress: step 1 not drawn in place: $(printf '%q' "$out")"
  printf '%s' "$out" | grep -q $'\r\e\[K\[0\] a log line' || fail "progress: line not cleared first: $(printf '%q' "$out")"
  printf '%s' "$out" | grep -q $'\rstep 2/2 | loss 4.0\e\[K' || fail "progress: step 2 not drawn: $(printf '%q' "$out")"
  printf '%s' "$out" | grep -q "zt-progress" && fail "progress: markers shown: $(printf '%q' "$out")"
else
  echo "note: util-linux script not found: the terminal case is not tested"
fi
"$launch" -n 2 -- sh "$tmp/progress.sh" >"$tmp/progress.log" 2>&1 || fail "progress to a file: exit $?"
grep -q "progress=unset" "$tmp/progress.log" || fail "progress to a file: ranks told: $(cat "$tmp/progress.log")"
grep -q $'\r' "$tmp/progress.log" && fail "progress to a file: carriage return written: $(cat -A "$tmp/progress.log")"

# 11. Ctrl-C (SIGINT to the launcher's process group, as a terminal sends it): the first reaches the
#     ranks relayed as SIGRTMIN+1 (SIGTERM to the launcher as SIGRTMIN+2: mpirun forwards neither
#     SIGINT nor SIGTERM), repeated until the job ends, and the job ends with the ranks' exit code;
#     the second kills the job and the launcher exits non-zero. The job runs in its own process
#     group (set -m), like a terminal's foreground job. The ranks start with the relayed signals
#     ignored, so they are written in perl, which can still catch them (a shell cannot).
wait_for() {  # wait_for PATTERN FILE: up to 30 s
  local i
  for i in $(seq 300); do
    grep -q -- "$1" "$2" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
ranks_alive() { pgrep -f "$tmp/rank.pl" >/dev/null; }
# interrupt_job WHEN SIGNAL [SIGNAL]: starts 2 ranks of $tmp/rank.pl, sends SIGNAL to the job's
# process group once both ranks run (WHEN=running) or once mpirun is there (WHEN=start); a second SIGNAL once
# rank 0 has had the request twice. Returns the launcher's exit code; job.log holds the output.
interrupt_job() {
  local when=$1
  shift
  set -m
  "$launch" -n 2 -- perl "$tmp/rank.pl" >"$tmp/job.log" 2>&1 &
  local job=$!
  set +m
  if [ "$when" = running ]; then
    wait_for "\\[1\\] running" "$tmp/job.log" && wait_for "\\[0\\] running" "$tmp/job.log" ||
      fail "ranks did not start: $(cat "$tmp/job.log")"
  else  # as soon as mpirun is there
    local i
    for i in $(seq 300); do
      pgrep -f "^mpirun .*$tmp/rank.pl" >/dev/null && break
      sleep 0.01
    done
  fi
  kill "-$1" -- "-$job"
  if [ $# -gt 1 ]; then
    wait_for "\\[0\\] got SIGINT 2" "$tmp/job.log" || fail "the relayed SIGINT not repeated: $(cat "$tmp/job.log")"
    kill "-$2" -- "-$job"
  fi
  local waited=0
  while kill -0 "$job" 2>/dev/null && [ $waited -lt 200 ]; do sleep 0.1; waited=$((waited + 1)); done
  if kill -0 "$job" 2>/dev/null; then
    fail "launcher still running 20 s after $*: $(cat "$tmp/job.log")"
    kill -KILL -- "-$job"
  fi
  wait "$job"
}
# Ranks that stop on the relayed signals, as zerotrain does (after the current step), naming the
# signal the launcher received; rank 1 fails doing so. $on_stop is what a rank does then.
make_ranks() {  # make_ranks ON_STOP (perl, with $name the signal the launcher received)
  cat >"$tmp/rank.pl" <<RANK
use POSIX ();
\$| = 1;
my \$rank = \$ENV{OMPI_COMM_WORLD_RANK};
my \$n = 0;
for my \$relay ([POSIX::SIGRTMIN() + 1, "SIGINT"], [POSIX::SIGRTMIN() + 2, "SIGTERM"]) {
  my (\$sig, \$name) = @\$relay;
  POSIX::sigaction(\$sig, POSIX::SigAction->new(sub { $1 }));
}
print "running\n";
sleep 1 while 1;
RANK
}
make_ranks 'print "stopping on $name\n"; exit($rank == 1 ? 5 : 0)'
interrupt_job running INT
rc=$?
[ $rc -eq 5 ] || fail "Ctrl-C: exit code $rc, expected rank 1's 5: $(cat "$tmp/job.log")"
grep -q "^\\[0\\] stopping on SIGINT" "$tmp/job.log" || fail "Ctrl-C: rank 0 got no relayed SIGINT: $(cat "$tmp/job.log")"
grep -q "interrupted by SIGINT: .*Ctrl-C again" "$tmp/job.log" ||
  fail "Ctrl-C: the launcher did not say what happens: $(cat "$tmp/job.log")"
grep -q "Forwarding signal" "$tmp/job.log" && fail "Ctrl-C: mpirun's notice of each signal shown: $(cat "$tmp/job.log")"
ranks_alive && fail "Ctrl-C: ranks left running"
make_ranks 'print "stopping on $name\n"; exit(0)'
interrupt_job running TERM
rc=$?
[ $rc -eq 0 ] || fail "SIGTERM to the launcher: exit code $rc, expected 0: $(cat "$tmp/job.log")"
[ "$(grep -c "stopping on SIGTERM" "$tmp/job.log")" -eq 2 ] || fail "SIGTERM: not relayed as such: $(cat "$tmp/job.log")"
# Ctrl-C while the ranks are still starting: the request reaches them once they can take it.
interrupt_job start INT
rc=$?
[ $rc -eq 0 ] || fail "Ctrl-C at start: exit code $rc, expected 0: $(cat "$tmp/job.log")"
[ "$(grep -c "stopping on SIGINT" "$tmp/job.log")" -eq 2 ] || fail "Ctrl-C at start: ranks did not stop: $(cat "$tmp/job.log")"
# Ranks that take their time to stop: the second Ctrl-C kills them.
make_ranks '$n++; print "got $name $n\n"'
interrupt_job running INT INT
rc=$?
[ $rc -ne 0 ] || fail "second Ctrl-C: exit code 0: $(cat "$tmp/job.log")"
grep -q "killing the job" "$tmp/job.log" || fail "second Ctrl-C: no message: $(cat "$tmp/job.log")"
ranks_alive && fail "second Ctrl-C: ranks left running"

# 12. mpirun's own messages wait until the job has ended; after a stop (exit 75) its report of the
#     ranks that exited non-zero is left out (it reads like a crash), after a failure it is shown.
out=$("$launch" -n 2 -- sh -c 'echo "rank $OMPI_COMM_WORLD_RANK stops"; exit 75' 2>&1)
rc=$?
[ $rc -eq 75 ] || fail "exit 75: launcher exited $rc: $out"
echo "$out" | grep -q "\[1\] rank 1 stops" || fail "exit 75: the ranks' lines lost: $out"
echo "$out" | grep -q "non-zero" && fail "exit 75: mpirun's crash report shown: $out"
out=$("$launch" -n 2 -- sh -c 'echo "rank $OMPI_COMM_WORLD_RANK fails"; exit 5' 2>&1)
rc=$?
[ $rc -eq 5 ] || fail "exit 5: launcher exited $rc: $out"
echo "$out" | tail -n 1 | grep -q -- "------" || fail "exit 5: mpirun's report not last: $out"
echo "$out" | grep -q "non-zero exit code" || fail "exit 5: mpirun's report not shown: $out"

# 13. After a failed job, the step it can resume from: rank 0 tells the launcher its checkpoint
#     directory (marker lines, never shown), the launcher reads its `latest`. A stand-in for
#     zerotrain: rank 0 gives the markers, a rank fails as MODE says.
cat >"$tmp/fake_zerotrain.sh" <<'FAKE'
ckpt=$1 mode=$2
shift 2
if [ "$OMPI_COMM_WORLD_RANK" = 0 ]; then
  [ -z "${ZT_LAUNCH_MARKERS:-}" ] || [ "$mode" = unmarked ] || printf '<zt-checkpoint-dir> %s\n<zt-comm-timeout> 5\n' "$ckpt" >&2
  echo "run with: $* (restarts allowed: ${ZT_MAX_RESTARTS:-none})"
fi
resumed=0
case " $* " in *" --set training.resume=auto "*) resumed=1 ;; esac
case $mode in
  die) [ "$OMPI_COMM_WORLD_RANK" = 1 ] && kill -9 $$ ;;
  fail | unmarked) [ "$OMPI_COMM_WORLD_RANK" = 1 ] && exit 3 ;;
  fail-once) [ "$OMPI_COMM_WORLD_RANK" = 1 ] && [ $resumed -eq 0 ] && exit 3 ;;
  stop) exit 75 ;;
  config) exit 2 ;;
esac
exit 0
FAKE
mkdir -p "$tmp/ckpt/step_00000040"
echo step_00000040 >"$tmp/ckpt/latest"
out=$("$launch" -n 2 -- sh "$tmp/fake_zerotrain.sh" "$tmp/ckpt" die 2>&1)
rc=$?
[ $rc -eq 137 ] || fail "killed rank: exit $rc: $out"
echo "$out" | tail -n 1 | grep -qF "launch.sh: the job failed (exit status 137): resume from step 40 ($tmp/ckpt/step_00000040): run the same command with --set training.resume=auto" ||
  fail "killed rank: no resume hint last: $out"
echo "$out" | grep -q "zt-checkpoint-dir\|zt-comm-timeout" && fail "markers shown: $out"
out=$("$launch" -n 2 -- sh "$tmp/fake_zerotrain.sh" "$tmp/empty" fail 2>&1)
echo "$out" | grep -qF "the job failed (exit status 3) before its first checkpoint in $tmp/empty: a rerun starts from step 1" ||
  fail "no checkpoint yet: $out"
out=$("$launch" -n 2 -- sh "$tmp/fake_zerotrain.sh" "" fail 2>&1)
echo "$out" | grep -qF "saved nothing (no training.checkpoint_dir): a rerun starts from step 1" || fail "no checkpoint_dir: $out"
out=$("$launch" -n 2 -- sh "$tmp/fake_zerotrain.sh" "$tmp/ckpt" unmarked 2>&1)
echo "$out" | grep -q "resume\|rerun" && fail "a program that gives no markers got a hint: $out"

# 14. --max-restarts N: after a failure the job starts again with --set training.resume=auto added
#     (once), up to N times; never after exit 75, 2, or without a checkpoint directory.
runs() { echo "$1" | grep -c "^\[0\] run with:"; }
out=$("$launch" --max-restarts 2 --restart-delay 0 -n 2 -- sh "$tmp/fake_zerotrain.sh" "$tmp/ckpt" fail-once --steps 9 2>&1)
rc=$?
[ $rc -eq 0 ] || fail "restart: exit $rc: $out"
[ "$(runs "$out")" -eq 2 ] || fail "restart: expected 2 runs: $out"
echo "$out" | grep -qF "launch.sh: restart 1 of 2 in 0 s, with training.resume auto" || fail "restart: not said: $out"
echo "$out" | grep -qF "[0] run with: --steps 9 --set training.resume=auto (restarts allowed: 2)" ||
  fail "restart: not resumed: $out"
out=$("$launch" --max_restarts 2 --restart_delay 0 -n 2 -- sh "$tmp/fake_zerotrain.sh" "$tmp/ckpt" fail --steps 9 2>&1)
rc=$?
[ $rc -eq 3 ] || fail "restarts exhausted: exit $rc: $out"
[ "$(runs "$out")" -eq 3 ] || fail "restarts exhausted: expected 3 runs: $out"
[ "$(echo "$out" | grep -c "training.resume=auto --set training.resume=auto")" -eq 0 ] || fail "resume added twice: $out"
for mode in stop config unmarked; do
  out=$("$launch" --max-restarts 2 --restart-delay 0 -n 2 -- sh "$tmp/fake_zerotrain.sh" "$tmp/ckpt" $mode 2>&1)
  [ "$(runs "$out")" -eq 1 ] || fail "restarted after $mode: $out"
done
out=$("$launch" --max-restarts 2 --restart-delay 0 -n 2 -- sh "$tmp/fake_zerotrain.sh" "" fail 2>&1)
[ "$(runs "$out")" -eq 1 ] || fail "restarted without a checkpoint directory: $out"
echo "$out" | grep -qF "not restarted: the job has no training.checkpoint_dir to resume from" || fail "no reason given: $out"
# The delay, and a Ctrl-C during it ends the launcher with the job's exit code.
start=$SECONDS
out=$("$launch" --max-restarts 1 --restart-delay 2 -n 2 -- sh "$tmp/fake_zerotrain.sh" "$tmp/ckpt" fail-once 2>&1)
[ $((SECONDS - start)) -ge 2 ] || fail "no delay before the restart: $out"
set -m
"$launch" --max-restarts 1 --restart-delay 30 -n 2 -- sh "$tmp/fake_zerotrain.sh" "$tmp/ckpt" fail >"$tmp/job.log" 2>&1 &
job=$!
set +m
wait_for "restart 1 of 1 in 30 s" "$tmp/job.log" || fail "no restart announced: $(cat "$tmp/job.log")"
kill -INT -- "-$job"
wait "$job"
rc=$?
[ $rc -eq 3 ] || fail "Ctrl-C during the delay: exit $rc: $(cat "$tmp/job.log")"
[ "$(runs "$(cat "$tmp/job.log")")" -eq 1 ] || fail "Ctrl-C during the delay: restarted: $(cat "$tmp/job.log")"

finish
