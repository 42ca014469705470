#!/usr/bin/env bash
# Tests scripts/launch.sh: rank-tagged output, OMP_NUM_THREADS split, exit code propagation,
# hostfile conversion and errors, the SLURM path (dry run), --help, a real MPI program, and Ctrl-C
# (a clean stop through SIGUSR1; a second one kills the job).
#   test_launch.sh LAUNCH_SH MPI_TEST_BINARY
set -u
launch=$1
mpi_binary=$2
failed=0
fail() { echo "FAIL: $*"; failed=1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cores=$(nproc)
# The launcher's own choices are under test: start from an environment without them.
unset OMP_NUM_THREADS SLURM_JOB_ID SLURM_NTASKS SLURM_CPUS_PER_TASK SLURM_NNODES ZT_MPIRUN_ARGS

# 1. Two local ranks: every line tagged with its rank, OMP_NUM_THREADS = max(1, cores / 2).
out=$("$launch" -n 2 -- sh -c 'echo "hello from $OMPI_COMM_WORLD_RANK threads=$OMP_NUM_THREADS"' 2>&1)
rc=$?
threads=$((cores / 2 > 0 ? cores / 2 : 1))
[ $rc -eq 0 ] || fail "-n 2 exited $rc"
for r in 0 1; do
  echo "$out" | grep -qx "\[$r\] hello from $r threads=$threads" || fail "no tagged line from rank $r in: $out"
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
for flag in "--bind-to none" "--mca mpi_yield_when_idle 1" "-np 1" "-x OMP_NUM_THREADS"; do
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

# 6. DeepSpeed hostfile: comments and blank lines dropped, N = total slots, threads per machine.
cat >"$tmp/hosts" <<'HOSTS'
# training machines
node-a slots=4   # first
  node-b   slots=2

HOSTS
dry=$("$launch" --hostfile "$tmp/hosts" --dry-run -- zerotrain --steps 2)
rc=$?
[ $rc -eq 0 ] || fail "hostfile dry run exited $rc"
echo "$dry" | grep -q -- "-np 6 " || fail "hostfile: expected -np 6: $dry"
echo "$dry" | grep -qx "node-a slots=4" || fail "hostfile: node-a line missing: $dry"
echo "$dry" | grep -qx "node-b slots=2" || fail "hostfile: node-b line missing: $dry"
echo "$dry" | grep -q "zerotrain --steps 2$" || fail "hostfile: program missing: $dry"
# The ranks start with SIGUSR1 ignored (a Ctrl-C while they load must not kill them).
echo "$dry" | grep -Eq "(env --ignore-signal=USR1|zt-rank) zerotrain --steps 2$" ||
  fail "ranks do not start with SIGUSR1 ignored: $dry"
expected_threads=$((cores / 4 > 0 ? cores / 4 : 1))
echo "$dry" | grep -q "^OMP_NUM_THREADS=$expected_threads " || fail "hostfile: OMP_NUM_THREADS: $dry"

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
expect_error "cannot be read" --hostfile "$tmp/missing" -- true
expect_error "positive number" -n zero -- true
expect_error "no program" -n 2
expect_error "unknown option" -n 2 hostname

# 8. SLURM: srun with -n, or SLURM_NTASKS; threads from SLURM_CPUS_PER_TASK.
dry=$(SLURM_JOB_ID=1 SLURM_NTASKS=8 SLURM_CPUS_PER_TASK=6 "$launch" --dry-run -- zerotrain)
[ "$dry" = "OMP_NUM_THREADS=6 srun -n 8 --kill-on-bad-exit=1 --label zerotrain" ] || fail "slurm: $dry"
dry=$(SLURM_JOB_ID=1 SLURM_NTASKS=8 "$launch" -n 2 --dry-run -- zerotrain)
echo "$dry" | grep -q "srun -n 2 " || fail "slurm -n 2: $dry"

# 9. --help documents every choice.
help=$("$launch" --help)
for word in "-n" "--hostfile" "slots=" "srun" "SLURM" "OMP_NUM_THREADS" "--oversubscribe" \
            "--allow-run-as-root" "mpi_yield_when_idle" "Exit code" "tagged" "Ctrl-C" "SIGUSR1"; do
  echo "$help" | grep -q -- "$word" || fail "--help does not mention '$word'"
done

# 10. A real MPI program (the communicator's sequence-check tests) through the launcher.
out=$("$launch" -n 2 -- "$mpi_binary" "[check]" --use-colour no 2>&1)
rc=$?
[ $rc -eq 0 ] || fail "MPI test through launch.sh exited $rc: $out"
echo "$out" | grep -q "^\[1\] All tests passed" || fail "rank 1 output not tagged: $out"

# 11. Ctrl-C (SIGINT to the launcher's process group, as a terminal sends it): the first reaches the
#     ranks as SIGUSR1, repeated until the job ends, and the job ends with the ranks' exit code; the
#     second kills the job and the launcher exits non-zero. The job runs in its own process group
#     (set -m), like a terminal's foreground job. The ranks start with SIGUSR1 ignored, so they are
#     written in perl, which can still catch it (a shell cannot).
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
    wait_for "\\[0\\] got USR1 2" "$tmp/job.log" || fail "SIGUSR1 not repeated: $(cat "$tmp/job.log")"
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
# Ranks that stop on SIGUSR1, as zerotrain does (after the current step); rank 1 fails doing so.
cat >"$tmp/rank.pl" <<'RANK'
$| = 1;
my $rank = $ENV{OMPI_COMM_WORLD_RANK};
$SIG{USR1} = sub { print "stopping\n"; exit($rank == 1 ? 5 : 0) };
print "running\n";
sleep 1 while 1;
RANK
interrupt_job running INT
rc=$?
[ $rc -eq 5 ] || fail "Ctrl-C: exit code $rc, expected rank 1's 5: $(cat "$tmp/job.log")"
grep -q "^\\[0\\] stopping" "$tmp/job.log" || fail "Ctrl-C: rank 0 got no SIGUSR1: $(cat "$tmp/job.log")"
grep -q "Ctrl-C again" "$tmp/job.log" || fail "Ctrl-C: the launcher did not say what happens: $(cat "$tmp/job.log")"
grep -q "Forwarding signal" "$tmp/job.log" && fail "Ctrl-C: mpirun's notice of each signal shown: $(cat "$tmp/job.log")"
ranks_alive && fail "Ctrl-C: ranks left running"
sed -i 's/exit(\$rank == 1 ? 5 : 0)/exit(0)/' "$tmp/rank.pl"
interrupt_job running TERM
rc=$?
[ $rc -eq 0 ] || fail "SIGTERM to the launcher: exit code $rc, expected 0: $(cat "$tmp/job.log")"
# Ctrl-C while the ranks are still starting: the request reaches them once they can take it.
interrupt_job start INT
rc=$?
[ $rc -eq 0 ] || fail "Ctrl-C at start: exit code $rc, expected 0: $(cat "$tmp/job.log")"
[ "$(grep -c "stopping" "$tmp/job.log")" -eq 2 ] || fail "Ctrl-C at start: ranks did not stop: $(cat "$tmp/job.log")"
# Ranks that take their time to stop: the second Ctrl-C kills them.
cat >"$tmp/rank.pl" <<'RANK'
$| = 1;
my $n = 0;
$SIG{USR1} = sub { $n++; print "got USR1 $n\n" };
print "running\n";
sleep 1 while 1;
RANK
interrupt_job running INT INT
rc=$?
[ $rc -ne 0 ] || fail "second Ctrl-C: exit code 0: $(cat "$tmp/job.log")"
grep -q "killing the job" "$tmp/job.log" || fail "second Ctrl-C: no message: $(cat "$tmp/job.log")"
ranks_alive && fail "second Ctrl-C: ranks left running"

if [ $failed -ne 0 ]; then exit 1; fi
echo "PASS"
