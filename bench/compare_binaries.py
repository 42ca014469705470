#!/usr/bin/env python3
"""Two zerotrain binaries on the same training run, alternating, on a shared machine.

    bench/compare_binaries.py BEFORE AFTER [--pairs N] [--config zero0] [--quiet-cores 0.1] [--limit-s 3000]

Runs GPT-2 124M (B=4, T=64, fp32, 10 steps, one process, OMP_NUM_THREADS=2) through each binary,
in pairs whose order alternates. A pair starts only once the machine has been quiet for 3 s, and
counts only when the other processes used under --quiet-cores cores (read from /proc/stat, minus
the run's own CPU time) during both of its runs (a --quiet-cores above the machine's cores counts
every pair); it prints every pair, then the medians over the pairs that count. Time = median of
steps 2-10 of the run's metrics file (step 1 pays the first touch of every buffer), and the whole
run's wall time.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TICK = os.sysconf("SC_CLK_TCK")


def busy_jiffies():
    fields = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return sum(fields) - fields[3] - fields[4]  # all but idle and iowait


def others_cores(seconds):
    before = busy_jiffies()
    time.sleep(seconds)
    return (busy_jiffies() - before) / TICK / seconds


def run(binary, config, metrics):
    cmd = ["/usr/bin/time", "-f", "%U %S", binary, "--config", config, "--model", "gpt2-124m",
           "--set", "data.seq_len=64", "--set", "training.micro_batch_size=4", "--set", "bf16.enabled=false",
           "--steps", "10", "--set", "training.logging_steps=1", "--set", "training.eval_interval=0",
           "--set", f"training.metrics={metrics}", "--set", f"data.train={ROOT}/data/tinytext/train.txt",
           "--set", "data.val="]
    busy, start = busy_jiffies(), time.time()
    done = subprocess.run(cmd, env=dict(os.environ, OMP_NUM_THREADS="2"), capture_output=True, text=True)
    wall = time.time() - start
    if done.returncode != 0:
        sys.exit(f"{binary} failed:\n{done.stderr}")
    user, system = map(float, done.stderr.strip().split("\n")[-1].split())
    others = ((busy_jiffies() - busy) / TICK - user - system) / wall
    steps = [json.loads(line)["step_ms"] for line in open(metrics) if '"event":"step"' in line]
    return {"median": statistics.median(steps[1:]), "first": steps[0], "wall": wall, "others": others}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--config", default="zero0")
    p.add_argument("--quiet-cores", type=float, default=0.1)
    p.add_argument("--limit-s", type=float, default=3000)
    a = p.parse_args()
    binaries = {"before": a.before, "after": a.after}
    kept, tries, deadline = [], 0, time.time() + a.limit_s
    with tempfile.TemporaryDirectory() as tmp:
        while len(kept) < a.pairs and time.time() < deadline:
            if others_cores(3) > a.quiet_cores:
                time.sleep(10)
                continue
            tries += 1
            order = ["before", "after"] if tries % 2 else ["after", "before"]
            res = {w: run(binaries[w], a.config, f"{tmp}/{w}-{tries}.jsonl") for w in order}
            ok = all(r["others"] < a.quiet_cores for r in res.values())
            print(f"pair {tries} ({order[0]} first){'' if ok else ' [machine busy: not counted]'}: " +
                  "; ".join(f"{w} steps 2-10 {res[w]['median']:.0f} ms, step 1 {res[w]['first']:.0f} ms, "
                            f"run {res[w]['wall']:.1f} s, others {res[w]['others']:.2f} cores" for w in binaries),
                  flush=True)
            if ok:
                kept.append(res)
    if not kept:
        sys.exit("no quiet pair")
    med = {w: {k: statistics.median(r[w][k] for r in kept) for k in ("median", "first", "wall")} for w in binaries}
    print(f"{a.config}, {len(kept)} pairs counted (others under {a.quiet_cores:g} cores): " + "; ".join(
        f"{w} steps 2-10 {med[w]['median']:.0f} ms, step 1 {med[w]['first']:.0f} ms, run {med[w]['wall']:.1f} s"
        for w in binaries))


if __name__ == "__main__":
    main()
