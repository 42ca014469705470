"""torch.optim.AdamW on the CPU over one fp32 tensor, as bench_host_adamw times zerotrain's host AdamW.

    OMP_NUM_THREADS=2 /usr/bin/python3 bench/offload/adamw_torch.py --elements 25000000
Prints the median step time and the bytes a step must move (param, grad, m, v read; param, m, v
written: 28 bytes a parameter) per second, for the single-tensor and the foreach implementations.
"""
import argparse
import statistics
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--elements", type=int, default=25_000_000)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    torch.manual_seed(1)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, {args.elements} parameters")
    for foreach in (False, True):
        p = torch.nn.Parameter(torch.randn(args.elements) * 0.02)
        p.grad = torch.randn(args.elements)
        opt = torch.optim.AdamW([p], lr=1e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1, foreach=foreach)
        times = []
        for r in range(args.repeats + 1):
            t0 = time.perf_counter()
            opt.step()
            if r > 0:
                times.append(time.perf_counter() - t0)
        t = statistics.median(times)
        name = "foreach" if foreach else "single-tensor"
        print(f"torch.optim.AdamW ({name:13s}): {28 * args.elements / t / 1e9:7.2f} GB/s  "
              f"{args.elements / t / 1e6:7.1f} M params/s  ({1e3 * t:.1f} ms per step)")


if __name__ == "__main__":
    main()
