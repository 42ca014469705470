#!/usr/bin/env python3
"""What two zerotrain binaries write for the same runs, compared byte for byte apart from times.

    bench/compare_outputs.py BEFORE AFTER [--ranks 2] [--configs zero2 zero3] [--steps 6] [--no-final]
                             [--merge] [-- --model llama-tiny --set KEY=VALUE ...]

Runs each config through each binary (mpirun with --ranks ranks, OMP_NUM_THREADS=1; the default
toy model and data) with a metrics file, checkpoints every 2 steps and the final weights, then
compares: the metrics files with the fields that hold times or the process's resident memory
removed, the console logs with timestamps, timings and resident memory removed (the background
writer's "checkpoint ... written" lines compared as a set: they come when the writer finishes),
every checkpoint file (meta.json and shards) and the final weights with cmp; then `zerotrain export` of
the last checkpoint (its files with cmp; a LoRA run's merged with --merge, so that eval reads a model
directory) and `zerotrain eval` of the export and of the checkpoint on the val file (their lines, times
removed). Both binaries write to the same paths and read the same data, so that the paths recorded are
the same. Prints one line per compared output and exits 1 when any differs. A refactoring must leave
every line "same".
"""
import argparse
import filecmp
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MPIRUN = ["mpirun", "--oversubscribe", "--bind-to", "none", "--mca", "mpi_yield_when_idle", "1",
          "--allow-run-as-root"]
TIME_KEYS = {"step_ms", "tokens_per_s", "mfu", "wall_s", "seconds", "comm_overlap", "resident", "time_ms"}
# A log line's timestamp, and numbers followed by a time unit or in a throughput.
LOG_TIME = [re.compile(r"^\[[0-9:.]+\]"), re.compile(r"[0-9.]+ ?(tokens/s|tok/s|GFLOP/s|[KMGT]?B/s|ms|s)\b"),
            re.compile(r"MFU [0-9.]+%"), re.compile(r"[0-9.]+% overlapped"),
            re.compile(r"[0-9]+% hidden"), re.compile(r"(eta|ETA) [0-9:]+"),
            re.compile(r"resident [0-9.]+ ?[KMG]i?B")]


def without_times(value):
    if isinstance(value, dict):
        return {k: without_times(v) for k, v in value.items() if k not in TIME_KEYS}
    if isinstance(value, list):
        return [without_times(v) for v in value]
    return value


def metrics(path):
    return [without_times(json.loads(line)) for line in open(path)]


# Table rows whose last column is a time or the resident set: the memory peaks and the comms summary.
LAST_COLUMN_TIMED = re.compile(r"info:\s+(rank \d+|all_reduce|reduce_scatter|all_gather|broadcast)\s")


def log_lines(path):
    ordered, background = [], []
    for line in open(path, errors="replace"):
        for pattern in LOG_TIME:
            line = pattern.sub("<t>", line)
        if LAST_COLUMN_TIMED.search(line):
            line = line.rsplit(None, 1)[0]
        (background if "written in the background" in line else ordered).append(line)
    return ordered, sorted(background)


def run(binary, config, ranks, steps, extra, out, final, merge):
    os.makedirs(out)
    cmd = MPIRUN + ["-np", str(ranks), binary, "--config", config, "--steps", str(steps),
                    "--set", f"data.train={ROOT}/data/tinytext/train.txt",
                    "--set", f"data.val={ROOT}/data/tinytext/val.txt",
                    "--set", f"training.metrics={out}/metrics.jsonl",
                    "--set", f"training.checkpoint_dir={out}/ckpt", "--set", "training.save_interval=2",
                    "--set", "training.logging_steps=1"] + (["--set", f"training.save_final={out}/final"] if final else []) + extra
    with open(f"{out}/log.txt", "w") as log:
        rc = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ, OMP_NUM_THREADS="1"), stdout=log,
                            stderr=subprocess.STDOUT).returncode
    if rc != 0:
        sys.exit(f"{binary} --config {config} exited with {rc}: see {out}/log.txt")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    export = [binary, "export", f"{out}/ckpt", "-o", f"{out}/export", "--dtype", "bf16"] + (["--merge"] if merge else [])
    evaluate = [binary, "eval", "--data", f"{ROOT}/data/tinytext/val.txt", "--max-windows", "8", "--model"]
    for what, cmd in (("export", export), ("eval", evaluate + [f"{out}/export"]),
                      ("eval_ckpt", evaluate + [f"{out}/ckpt"])):
        with open(f"{out}/{what}.txt", "w") as log:
            rc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
        if rc != 0:
            sys.exit(f"{binary} {what} exited with {rc}: see {out}/{what}.txt")


def files_under(top):
    return sorted(os.path.relpath(os.path.join(d, f), top) for d, _, fs in os.walk(top) for f in fs)


def compare(a, b):
    results = [("metrics (times removed)", metrics(f"{a}/metrics.jsonl") == metrics(f"{b}/metrics.jsonl")),
               ("log (times removed)", log_lines(f"{a}/log.txt") == log_lines(f"{b}/log.txt")),
               ("eval of the export (times removed)", log_lines(f"{a}/eval.txt") == log_lines(f"{b}/eval.txt")),
               ("eval of the checkpoint (times removed)",
                log_lines(f"{a}/eval_ckpt.txt") == log_lines(f"{b}/eval_ckpt.txt"))]
    for top in ("ckpt", "final", "export") if os.path.exists(f"{a}/final") else ("ckpt", "export"):
        names_a, names_b = files_under(f"{a}/{top}"), files_under(f"{b}/{top}")
        if names_a != names_b:
            results.append((f"{top}/ file names", False))
            continue
        for name in names_a:
            results.append((f"{top}/{name}", filecmp.cmp(f"{a}/{top}/{name}", f"{b}/{top}/{name}", shallow=False)))
    return results


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--configs", nargs="+", default=["zero2", "zero3"])
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--no-final", action="store_true", help="no training.save_final (a model it cannot write)")
    p.add_argument("--merge", action="store_true", help="export a LoRA run's checkpoint merged (export --merge)")
    p.add_argument("--keep", help="directory to keep the runs in (default: a temporary one, removed)")
    # Anything else (after --) goes to every run: --model llama-tiny --set training.sample_every=3
    args, extra = p.parse_known_args()
    args.extra = [a for a in extra if a != "--"]
    with tempfile.TemporaryDirectory() as tmp:
        top = args.keep or tmp
        differ = 0
        for config in args.configs:
            runs = []
            for name, binary in (("before", args.before), ("after", args.after)):
                out = os.path.join(top, config, "run")
                run(os.path.abspath(binary), config, args.ranks, args.steps, args.extra, out, not args.no_final,
                    args.merge)
                os.rename(out, os.path.join(top, config, name))
                runs.append(os.path.join(top, config, name))
            for what, same in compare(*runs):
                print(f"{config:>8}  {what:<48} {'same' if same else 'DIFFERS'}")
                differ += not same
        print(f"{differ} output(s) differ" if differ else "every output is the same")
        return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
