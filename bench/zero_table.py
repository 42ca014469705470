#!/usr/bin/env python3
"""Markdown table of ZeRO benchmark runs from their metrics files (bench/bench_zero.sh).

Per run: median over the steps after the warm-up of step time, tokens/s and the wall-clock
breakdown of rank 0; bytes rank 0 sent per step (reduce-scatter + all-gather, in elements of the
communication dtype) next to the ZeRO volume 2Ψ(N-1)/N (stages 0-2) or 3Ψ(N-1)/N (stage 3),
where Ψ is the padded parameter count."""
import argparse
import json
import statistics

DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}


def summarize(path, warmup):
    setup, steps = None, []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r["event"] == "setup":
                setup = r
            elif r["event"] == "step":
                steps.append(r)
    steps = steps[warmup:]
    if setup is None or not steps:
        raise SystemExit(f"{path}: no setup record or no steps after {warmup} warm-up steps")
    med = lambda key: statistics.median(s[key] for s in steps)
    tmed = lambda key: statistics.median(s["time_ms"][key] for s in steps)
    n, stage, psi = setup["world_size"], setup["stage"], setup["padded_params"]
    sent = statistics.median(s["comm"]["reduce_scatter"] + s["comm"]["all_gather"] for s in steps)
    elements = sent / DTYPE_BYTES[setup["dtype"]]
    factor = 3 if stage == 3 else 2
    exposed = tmed("reduce_wait") + tmed("gather_wait")
    busy = tmed("comm_busy")
    return {
        "ranks": n, "stage": stage, "overlap": "overlap" in path and path.rsplit("overlap_", 1)[1].startswith("true"),
        "step_ms": med("step_ms"), "tok_s": med("tokens_per_s"),
        "fwd": tmed("forward"), "bwd": tmed("backward"), "opt": tmed("step"),
        "exposed": exposed, "busy": busy, "hidden": 1 - exposed / busy if busy > 0 else 0.0,
        "elements": elements, "ratio": elements / (factor * psi * (n - 1) / n), "factor": factor,
        "steps": len(steps), "psi": psi, "dtype": setup["dtype"],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--warmup", type=int, default=3, help="steps left out of the medians")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    rows = sorted((summarize(p, args.warmup) for p in args.files), key=lambda r: (r["ranks"], r["stage"], r["overlap"]))
    r0 = rows[0]
    print(f"Ψ = {r0['psi']:,} padded parameters, {r0['dtype']}; medians over {r0['steps']} steps after {args.warmup} warm-up steps.\n")
    print("| ranks | stage | overlap | ms/step | tokens/s | forward | backward | optimizer step | comm waited | comm in flight | hidden | sent / step (elements) | / (kΨ(N-1)/N) |")
    print("|---:|---:|:---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['ranks']} | {r['stage']} | {'on' if r['overlap'] else 'off'} | {r['step_ms']:.0f} | {r['tok_s']:.0f} "
              f"| {r['fwd']:.0f} | {r['bwd']:.0f} | {r['opt']:.0f} | {r['exposed']:.0f} | {r['busy']:.0f} "
              f"| {100 * r['hidden']:.0f}% | {r['elements']:,.0f} | {r['ratio']:.4f} (k={r['factor']}) |")


if __name__ == "__main__":
    main()
