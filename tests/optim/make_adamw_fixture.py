#!/usr/bin/env python3
"""Writes adamw_torch_fixture.json: parameters after each of several optimizer steps of
torch.optim.AdamW (decoupled decay, with and without decay) and torch.optim.Adam with
weight_decay (L2 decay, DeepSpeed's adam_w_mode false), fp32, CPU, single-tensor path, with the
optimizer state (exp_avg, exp_avg_sq) after each step.
Hyperparameters are float32-representable so both sides start from identical scalars.
Run with Debian's python3-torch: /usr/bin/python3 tests/optim/make_adamw_fixture.py"""
import json
import os

import torch


def f32(x):
    return float(torch.tensor(x, dtype=torch.float32).item())


def run_case(name, optimizer_class, weight_decay, n, steps, seed):
    gen = torch.Generator().manual_seed(seed)
    param = torch.randn(n, generator=gen, dtype=torch.float32)
    hyper = dict(lr=f32(2e-3), betas=(f32(0.9), f32(0.95)), eps=f32(1e-8), weight_decay=f32(weight_decay))
    p = torch.nn.Parameter(param.clone())
    opt = optimizer_class([p], foreach=False, **hyper)
    grads, params, exp_avgs, exp_avg_sqs = [], [], [], []
    for _ in range(steps):
        # mixed magnitudes, including tiny gradients where eps matters
        g = torch.randn(n, generator=gen) * torch.logspace(-9, 1, n)
        p.grad = g.clone()
        opt.step()
        grads.append(g.tolist())
        params.append(p.detach().tolist())
        exp_avgs.append(opt.state[p]["exp_avg"].tolist())
        exp_avg_sqs.append(opt.state[p]["exp_avg_sq"].tolist())
    return {
        "name": name,
        "adam_w_mode": optimizer_class is torch.optim.AdamW,
        "lr": hyper["lr"], "beta1": hyper["betas"][0], "beta2": hyper["betas"][1],
        "eps": hyper["eps"], "weight_decay": hyper["weight_decay"],
        "initial": param.tolist(), "grads": grads, "params": params,
        "exp_avg": exp_avgs, "exp_avg_sq": exp_avg_sqs,
    }


def main():
    torch.set_num_threads(1)
    cases = [
        run_case("adamw_decay", torch.optim.AdamW, 0.1, 67, 6, 1),
        run_case("adamw_no_decay", torch.optim.AdamW, 0.0, 67, 6, 2),
        run_case("adam_l2", torch.optim.Adam, 0.1, 67, 6, 3),
    ]
    out = {
        "generator": "tests/optim/make_adamw_fixture.py",
        "torch_version": torch.__version__,
        "cpu_capability": [l.strip() for l in torch.__config__.show().splitlines() if "CPU capability" in l],
        "cases": cases,
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "adamw_torch_fixture.json")
    with open(path, "w") as f:
        json.dump(out, f)
        f.write("\n")


if __name__ == "__main__":
    main()
