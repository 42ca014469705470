#!/usr/bin/env python3
"""One training step (zero grads, forward, backward, global-norm clipping, AdamW; fp32, one thread)
of a Qwen3-MoE shape, zerotrain's against transformers' on the same batch shape in the same run,
and against a dense Qwen3 of the same active parameters.

  MoE:   qwen3_moe, 4 layers, d_model 512, 8 heads (4 key/value) of 64, 8 experts of 768, top 2
         (renormalised), vocab 8192, untied head
  dense: qwen3 with the same attention and an MLP of 1536 = 2 x 768: the MoE's active MLP
         parameters and FLOPs (less its router, 512 x 8 per layer)

B x T = 4 x 256 random tokens. transformers runs Qwen3MoeForCausalLM with experts_implementation
"eager" (a Python loop over the experts that received tokens) and "grouped_mm" (torch's grouped
GEMM), attention "sdpa", and Qwen3ForCausalLM; zerotrain runs bench_step on config.json
directories this script writes (the same shapes). Every run gets one thread (OMP_NUM_THREADS=1,
torch.set_num_threads(1)). Prints each step's median wall time and mean CPU time (the CPU time is
what to compare on a machine other jobs share) and the ratios bench/RESULTS.md records.

  /work/venv/bin/python bench/moe/bench_moe.py --bench-step build/bench/bench_step [--steps 5]

Needs torch 2.x and transformers 5 (a virtual environment); zerotrain's side needs only the
bench_step binary.
"""
import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import tempfile
import time

COMMON = dict(vocab_size=8192, hidden_size=512, num_attention_heads=8, num_key_value_heads=4, head_dim=64,
              num_hidden_layers=4, max_position_embeddings=512, rms_norm_eps=1e-6, tie_word_embeddings=False)
MOE = dict(COMMON, model_type="qwen3_moe", intermediate_size=1536, num_experts=8, num_experts_per_tok=2,
           moe_intermediate_size=768, norm_topk_prob=True, output_router_logits=False)
DENSE = dict(COMMON, model_type="qwen3", intermediate_size=1536)
B, T = 4, 256


def torch_step_ms(config, experts, steps, warmup):
    """The median wall time and the mean CPU time of a step, in ms."""
    import torch
    import transformers

    torch.set_num_threads(1)
    torch.manual_seed(0)
    kw = dict(config)
    cfg = transformers.AutoConfig.for_model(kw.pop("model_type"), **kw)
    extra = {"experts_implementation": experts} if experts else {}
    model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa", **extra).float().train()
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    ids = torch.randint(0, cfg.vocab_size, (B, T))
    wall, cpu = [], []
    for s in range(warmup + steps):
        t0, c0 = time.perf_counter(), time.process_time()
        opt.zero_grad(set_to_none=False)
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if s >= warmup:
            wall.append((time.perf_counter() - t0) * 1e3)
            cpu.append((time.process_time() - c0) * 1e3)
    return statistics.median(wall), statistics.mean(cpu)


def run_bench_step(bench_step, model_dir, steps, warmup):
    """bench_step's output and the CPU time (user + system) its process took."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run([bench_step, "--model", model_dir, "--batch", str(B), "--seq", str(T), "--steps",
                          str(steps), "--warmup", str(warmup)], env=env, check=True, capture_output=True,
                         text=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return out, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1e3


def zerotrain_step_ms(bench_step, config, steps, warmup):
    """The median wall time of a step, and its mean CPU time: the difference between a run of
    warmup + steps steps and one of warmup + 1 (the set-up and the warm-up cancel out)."""
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(config, f)
        out, cpu_long = run_bench_step(bench_step, d, steps, warmup)
        _, cpu_short = run_bench_step(bench_step, d, 1, warmup)
    print(out)
    wall = float(re.search(r"median step: ([0-9.]+) ms", out).group(1))
    return wall, (cpu_long - cpu_short) / (steps - 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench-step", default="build/bench/bench_step")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    args = ap.parse_args()
    with open("/proc/loadavg") as f:
        print("load average before:", " ".join(f.read().split()[:3]))
    ms = {
        "zerotrain moe": zerotrain_step_ms(args.bench_step, MOE, args.steps, args.warmup),
        "zerotrain dense": zerotrain_step_ms(args.bench_step, DENSE, args.steps, args.warmup),
        "transformers moe eager": torch_step_ms(MOE, "eager", args.steps, args.warmup),
        "transformers moe grouped_mm": torch_step_ms(MOE, "grouped_mm", args.steps, args.warmup),
        "transformers dense": torch_step_ms(DENSE, None, args.steps, args.warmup),
    }
    with open("/proc/loadavg") as f:
        print("load average after:", " ".join(f.read().split()[:3]))
    print(f"step, B x T = {B} x {T}, fp32, one thread, {args.steps} steps after {args.warmup} warm-up:")
    print(f"  {'':<30} {'wall (median)':>14} {'CPU (mean)':>14}")
    for name, (wall, cpu) in ms.items():
        print(f"  {name:<30} {wall:11.1f} ms {cpu:11.1f} ms")
    for i, what in enumerate(["wall", "CPU"]):
        fastest = min(ms["transformers moe eager"][i], ms["transformers moe grouped_mm"][i])
        zt_moe, zt_dense = ms["zerotrain moe"][i], ms["zerotrain dense"][i]
        print(f"{what}: transformers' fastest MoE step / zerotrain's: {fastest / zt_moe:.2f} (aim >= 2); "
              f"zerotrain MoE / dense: {zt_moe / zt_dense:.2f} (aim <= 1.5); "
              f"transformers MoE (fastest) / dense: {fastest / ms['transformers dense'][i]:.2f}")

if __name__ == "__main__":
    main()
