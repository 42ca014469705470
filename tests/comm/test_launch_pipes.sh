#!/usr/bin/env bash
# Tests scripts/launch.sh when its output goes nowhere: `| head -1` that has read enough, a `| tee`
# that Ctrl-C, a closed terminal (SIGHUP) or a scheduler's SIGTERM ended with the launcher. The
# launcher hands the stop to the ranks, waits until every rank has exited, and returns the job's
# exit status (75: stopped); a job whose reader left early runs to its end. And a failed start is
# the rank's own error line, without mpirun's report.
#   test_launch_pipes.sh LAUNCH_SH
set -u
launch=$1
source "$(dirname "$0")/../shell_checks.sh"
unset OMP_NUM_THREADS SLURM_JOB_ID SLURM_NTASKS ZT_MPIRUN_ARGS ZT_PROGRESS

# Ranks that stop on the relayed signals as zerotrain does: after a while (the current step), and
# exit 75. They print a line a second meanwhile; "finish N" ends after N lines with status 0.
cat >"$tmp/rank.pl" <<'RANK'
use POSIX ();
$| = 1;
my ($dir, $mode, $n) = @ARGV;
my $rank = $ENV{OMPI_COMM_WORLD_RANK};
sub touch { open(my $f, ">", "$dir/$_[0].$rank"); close $f; }
for my $sig (POSIX::SIGRTMIN() + 1, POSIX::SIGRTMIN() + 2) {
  POSIX::sigaction($sig, POSIX::SigAction->new(sub {
    touch("stopping");
    print "stopping\n";
    sleep 1;
    print "stopped at step 3: interrupted (exit status 75)\n";
    touch("stopped");
    exit 75;
  }));
}
touch("running");
for (my $i = 0; $mode ne "finish" || $i < $n; $i++) { print "line $i\n"; select(undef, undef, undef, 0.2); }
touch("finished");
exit 0;
RANK
ranks_left() { pgrep -f "^perl $tmp/rank.pl" >/dev/null; }
wait_for_files() {  # wait_for_files NAME: both ranks' $tmp/NAME.R, up to 30 s
  local i
  for i in $(seq 300); do
    [ -e "$tmp/$1.0" ] && [ -e "$tmp/$1.1" ] && return 0
    sleep 0.1
  done
  return 1
}

# piped SIGNAL READER [MODE N]: the launcher's stdout and stderr into READER (a shell command), in a
# process group of their own as a terminal's foreground job; SIGNAL (or none) to that group once
# both ranks run. Sets rc (the launcher's exit status) and left (ranks running when the pipeline
# returned: "yes"/"no").
piped() {
  local signal=$1 reader=$2 mode=${3:-stop} n=${4:-0}
  rm -f "$tmp"/running.* "$tmp"/stopping.* "$tmp"/stopped.* "$tmp"/finished.* "$tmp/rc" "$tmp/left" "$tmp/run.log"
  set -m
  # The shell survives the signals its pipeline gets (a trap, reset in its children) to report.
  bash -c 'trap : INT TERM HUP
    "$1" -n 2 -- perl "$2/rank.pl" "$2" "$3" "$4" 2>&1 | eval "$5"
    echo "${PIPESTATUS[0]}" >"$2/rc"
    if pgrep -f "^perl $2/rank.pl" >/dev/null; then echo yes; else echo no; fi >"$2/left"' \
    piped "$launch" "$tmp" "$mode" "$n" "$reader" 2>/dev/null &
  local job=$!
  set +m
  wait_for_files running || fail "$signal | $reader: the ranks did not start"
  sleep 0.5
  [ "$signal" = none ] || kill "-$signal" -- "-$job"
  local waited=0
  while kill -0 "$job" 2>/dev/null && [ $waited -lt 300 ]; do sleep 0.1; waited=$((waited + 1)); done
  if kill -0 "$job" 2>/dev/null; then
    fail "$signal | $reader: still running 30 s later"
    kill -KILL -- "-$job"
    pkill -KILL -f "^perl $tmp/rank.pl"
  fi
  wait "$job" 2>/dev/null
  rc=$(cat "$tmp/rc" 2>/dev/null || echo none)
  left=$(cat "$tmp/left" 2>/dev/null || echo none)
}
# stopped_cleanly WHAT: the launcher returned 75 once every rank had stopped and exited.
stopped_cleanly() {
  [ "$rc" = 75 ] || fail "$1: launcher exit status $rc, expected 75 (the ranks' stop)"
  [ "$left" = no ] || fail "$1: the launcher returned while ranks still ran ($left)"
  wait_for_files stopped || fail "$1: the ranks were not stopped cleanly (no relayed stop reached them)"
}

# Ctrl-C with `| head -1` that has long exited.
piped INT 'head -n 1 >/dev/null'
stopped_cleanly "Ctrl-C | head -1"
# Ctrl-C through `| tee run.log`: tee ends with the Ctrl-C, the launcher's message meets a closed pipe.
piped INT 'tee "$2/run.log" >/dev/null'
stopped_cleanly "Ctrl-C | tee"
# With `tee -i` (which stays for the end), the log holds the launcher's message and the ranks' stop.
piped INT 'tee -i "$2/run.log" >/dev/null'
stopped_cleanly "Ctrl-C | tee -i"
grep -q "launch.sh: interrupted by SIGINT" "$tmp/run.log" || fail "tee -i: no stop message: $(cat "$tmp/run.log")"
grep -q "^\[1\] stopped at step 3" "$tmp/run.log" || fail "tee -i: the ranks' last lines lost: $(cat "$tmp/run.log")"
# A closed terminal: SIGHUP to the launcher and its reader.
piped HUP 'cat >/dev/null'
stopped_cleanly "SIGHUP | cat"
# A scheduler's SIGTERM, with the reader gone.
piped TERM 'head -n 1 >/dev/null'
stopped_cleanly "SIGTERM | head -1"
# No signal: a job whose reader left early runs to its end (exit 0, not 141).
piped none 'head -n 1 >/dev/null' finish 15
[ "$rc" = 0 ] || fail "| head -1: launcher exit status $rc, expected the job's 0"
wait_for_files finished || fail "| head -1: the ranks did not run to their end"

# A failed start: the rank's error line alone, with the rank's exit status; mpirun's report of a
# rank that exited non-zero follows only a failure that said nothing.
out=$("$launch" -n 2 -- sh -c '[ "$OMPI_COMM_WORLD_RANK" = 0 ] && echo "error: training.steps: bad" >&2; exit 2' 2>&1)
rc=$?
[ $rc -eq 2 ] || fail "failed start: exit status $rc, expected 2: $out"
[ "$out" = "[0] error: training.steps: bad" ] || fail "failed start: expected its one line, got: $out"
out=$("$launch" -n 2 -- sh -c 'exit 3' 2>&1)
echo "$out" | grep -q "non-zero exit code" || fail "silent failure: mpirun's report left out: $out"

finish
