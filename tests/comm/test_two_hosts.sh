#!/usr/bin/env bash
# A zerotrain job on two hosts through scripts/launch.sh --hostfile, the hosts being two network
# namespaces of this machine joined by a veth pair, and mpirun's remote agent
# (OMPI_MCA_plm_rsh_agent) a script that enters a namespace instead of ssh. Checks that the job
# ends, non-zero, when
#   1. the link between the hosts is cut mid-run (ip link set ... down): every rank ends within
#      training.comm_timeout, but mpirun would wait forever on the daemon of the host it lost; the
#      launcher ends it after its grace period and names that host;
#   2. a rank on the second host is killed: mpirun ends the job by itself.
# Needs root and `ip netns`; exits 77 (skipped) saying why where the machine does not allow them.
#   test_two_hosts.sh LAUNCH_SH ZEROTRAIN
set -u
launch=$1
zerotrain=$2
skip() { echo "test_two_hosts: skipped: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root for network namespaces"
command -v ip >/dev/null || skip "no ip command (iproute2)"
command -v mpirun >/dev/null || skip "no mpirun"

failed=0
fail() { echo "FAIL: $*"; failed=1; }
tmp=$(mktemp -d)
id=$$
ns_a=zt${id}a ns_b=zt${id}b
veth_a=zt${id}va veth_b=zt${id}vb
addr_a=10.231.0.1 addr_b=10.231.0.2
cleanup() {
  for pid in $(pgrep -f "$tmp/" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
  ip netns del "$ns_a" 2>/dev/null
  ip netns del "$ns_b" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

ip netns add "$ns_a" 2>"$tmp/err" || skip "ip netns add fails here: $(cat "$tmp/err")"
ip netns add "$ns_b" || skip "ip netns add fails here"
ip link add "$veth_a" type veth peer name "$veth_b" 2>"$tmp/err" || skip "no veth pair: $(cat "$tmp/err")"
ip link set "$veth_a" netns "$ns_a" && ip link set "$veth_b" netns "$ns_b" || skip "cannot move a veth into a namespace"
ip -n "$ns_a" addr add "$addr_a/24" dev "$veth_a" && ip -n "$ns_b" addr add "$addr_b/24" dev "$veth_b" &&
  ip -n "$ns_a" link set "$veth_a" up && ip -n "$ns_b" link set "$veth_b" up &&
  ip -n "$ns_a" link set lo up && ip -n "$ns_b" link set lo up || skip "cannot configure the namespaces' network"

# mpirun's "ssh HOST COMMAND": COMMAND in HOST's namespace (not over the network between them).
cat >"$tmp/agent" <<AGENT
#!/bin/sh
host=\$1
shift
case \$host in
  $addr_a) ns=$ns_a ;;
  $addr_b) ns=$ns_b ;;
  *) echo "agent: unknown host \$host" >&2; exit 255 ;;
esac
exec ip netns exec "\$ns" sh -c "\$*"
AGENT
chmod +x "$tmp/agent"
printf '%s slots=1\n%s slots=1\n' "$addr_a" "$addr_b" >"$tmp/hosts"

# Starts the job from host A in the background (sets job); its output goes to $tmp/job.log.
start_job() {
  rm -rf "$tmp/ckpt"
  : >"$tmp/job.log"  # now, not when the job starts: the last job's log must not be read as this one's
  OMPI_MCA_plm_rsh_agent=$tmp/agent OMP_NUM_THREADS=1 ip netns exec "$ns_a" \
    "$launch" --hostfile "$tmp/hosts" -- "$zerotrain" --config zero2 --steps 100000 --set training.logging_steps=1 \
    --set training.comm_timeout=5 --set training.checkpoint_dir="$tmp/ckpt" --set training.save_interval=2 \
    >"$tmp/job.log" 2>&1 &
  job=$!
}
wait_for_step() {  # up to 60 s for step N in the log
  local i
  for i in $(seq 600); do
    grep -q "step *$1/" "$tmp/job.log" && return 0
    kill -0 "$job" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
# Waits up to LIMIT s for the job; sets rc and took (seconds).
wait_job() {
  local start=$SECONDS
  while kill -0 "$job" 2>/dev/null && [ $((SECONDS - start)) -lt "$1" ]; do sleep 0.2; done
  took=$((SECONDS - start))
  if kill -0 "$job" 2>/dev/null; then
    fail "the job still runs $1 s later: $(tail -n 30 "$tmp/job.log")"
    echo "processes:"
    pgrep -af "$tmp/|mpirun|orted" | grep -v pgrep
    for pid in $(pgrep -f "$tmp/" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
  fi
  wait "$job"
  rc=$?
}
no_process_left() {
  sleep 1
  local left
  left=$(pgrep -af "$tmp/" | grep -v "pgrep" || true)
  [ -z "$left" ] || fail "$1: processes left: $left"
}

# 1. The link cut mid-run: the ranks time out (5 s), mpirun waits on host B's daemon; the launcher
#    ends the job after its grace period (comm_timeout + 10 s) and names host B.
start_job
wait_for_step 5 || { fail "the two-host job did not train: $(cat "$tmp/job.log")"; exit 1; }
ip -n "$ns_b" link set "$veth_b" down
wait_job 60
echo "--- link cut: exit $rc after ${took}s ---"
tail -n 12 "$tmp/job.log"
[ "$rc" -ne 0 ] || fail "link cut: exit status 0"
grep -q "launch.sh: a rank failed 15 s ago and mpirun still waits on $addr_b, which no longer answers on the network" \
  "$tmp/job.log" || fail "link cut: the silent host is not named"
grep -q "resume from step" "$tmp/job.log" || fail "link cut: no resume hint"
no_process_left "link cut"
ip -n "$ns_b" link set "$veth_b" up

# 2. A rank on host B killed: mpirun ends the job by itself, within seconds.
start_job
wait_for_step 3 || { fail "the two-host job did not train again: $(cat "$tmp/job.log")"; exit 1; }
victim=""
for pid in $(pgrep -f "$tmp/ckpt"); do  # this job's processes only
  if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1"; then victim=$pid; fi
done
[ -n "$victim" ] || fail "no rank 1 found"
kill -KILL "$victim"
wait_job 30
echo "--- rank 1 killed: exit $rc after ${took}s ---"
tail -n 8 "$tmp/job.log"
[ "$rc" -eq 137 ] || fail "rank killed on host B: exit status $rc, expected 137"
no_process_left "rank killed"

if [ $failed -ne 0 ]; then exit 1; fi
echo "PASS"
