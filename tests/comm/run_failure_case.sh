#!/usr/bin/env bash
# Runs comm_job_probe through mpirun and checks that the job ends the way it must:
# non-zero exit within seconds, the expected message, and no rank left behind.
#   run_failure_case.sh CASE PROBE MPIRUN [MPIRUN ARGS...]
# CASE: timeout | mismatch | killed | killed_all_to_all | exit
set -u
case_name=$1 probe=$2
shift 2
mpirun=("$@")
ranks=3
limit=30  # seconds: a job that is not gone by then counts as hung

dir=$(mktemp -d)
log=$dir/output.log
trap 'rm -rf "$dir"' EXIT
failed=0
fail() { echo "FAIL ($case_name): $*"; failed=1; }

# Starts the job in the background; sets job_pid.
start_job() {
  "${mpirun[@]}" -np $ranks "$probe" "$1" "$dir" >"$log" 2>&1 &
  job_pid=$!
}

# Waits for the job to end (at most $limit s); sets rc and elapsed.
wait_job() {
  local waited=0
  while kill -0 "$job_pid" 2>/dev/null && [ "$waited" -lt $((limit * 10)) ]; do
    sleep 0.1
    waited=$((waited + 1))
  done
  if kill -0 "$job_pid" 2>/dev/null; then
    fail "mpirun still running after ${limit}s"
    kill -9 "$job_pid" 2>/dev/null
  fi
  wait "$job_pid"
  rc=$?
  elapsed=$((waited / 10))
}

wait_for_pid_files() {
  for _ in $(seq 1 $((limit * 10))); do
    [ "$(ls "$dir"/rank*.pid 2>/dev/null | wc -l)" -eq $ranks ] && return 0
    sleep 0.1
  done
  fail "ranks did not start"
  return 1
}

check_no_rank_left() {
  for f in "$dir"/rank*.pid; do
    [ -e "$f" ] || continue
    local pid
    pid=$(cat "$f")
    for _ in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || continue 2
      sleep 0.1
    done
    fail "$(basename "$f" .pid) (pid $pid) outlived the job"
    kill -9 "$pid" 2>/dev/null
  done
}

expect_output() {
  grep -Eq -- "$1" "$log" || fail "output lacks /$1/"
}

case $case_name in
  timeout)
    start_job timeout
    wait_job
    expect_output "collective timed out: rank [02] all_reduce #2 \(30 fp32, sum\) at step 42 did not complete within 2 s"
    ;;
  mismatch)
    start_job mismatch
    wait_job
    expect_output "collective mismatch at step 5: rank 1 issued all_gather #2 \(30 fp32\) while rank 0 issued reduce_scatter #2 \(30 fp32, sum\)"
    ;;
  killed | killed_all_to_all)
    start_job "$([ "$case_name" = killed ] && echo loop || echo loop_all_to_all)"
    wait_for_pid_files
    sleep 1  # let the ranks get into their collective loop
    victim=$(cat "$dir/rank1.pid")
    kill -9 "$victim"
    wait_job
    ;;
  exit)
    start_job exit
    wait_job
    [ "$rc" -eq 3 ] || fail "mpirun exit code $rc, expected 3 (the failing rank's)"
    ;;
  *)
    echo "unknown case $case_name"
    exit 2
    ;;
esac

[ "$rc" -ne 0 ] || fail "mpirun exited 0"
check_no_rank_left
echo "--- job output (exit $rc after ~${elapsed}s) ---"
cat "$log"
if [ $failed -ne 0 ]; then exit 1; fi
echo "PASS ($case_name)"
