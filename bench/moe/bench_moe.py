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
torch.set_num_threads(1)), and every step is timed by CPU time (bench_step --cpu-time; torch:
the process's), what to compare on a machine other jobs share. The five run one after another in
each of --repeat rounds, zerotrain's and transformers' alternating; each round gives its ratios,
and the script prints every round and the medians over the rounds, which bench/RESULTS.md records.

  /work/venv/bin/python bench/moe/bench_moe.py --bench-step build/bench/bench_step [--steps 3] [--repeat 3]

Needs torch 2.x and transformers 5 (a virtual environment); zerotrain's side needs only the
bench_step binary.
"""
import argparse
import json
import os
import re
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
    """The median CPU time of a step, in ms."""
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
    cpu = []
    for s in range(warmup + steps):
        c0 = time.process_time()
        opt.zero_grad(set_to_none=False)
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if s >= warmup:
            cpu.append((time.process_time() - c0) * 1e3)
    return statistics.median(cpu)


def zerotrain_step_ms(bench_step, model_dir, steps, warmup):
    """The median CPU time of a step, in ms, and bench_step's breakdown of it."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run([bench_step, "--model", model_dir, "--batch", str(B), "--seq", str(T), "--steps",
                          str(steps), "--warmup", str(warmup), "--cpu-time"], env=env, check=True,
                         capture_output=True, text=True).stdout
    return float(re.search(r"median step: ([0-9.]+) ms", out).group(1)), out


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def ratios(ms):
    """transformers' fastest MoE step over zerotrain's; zerotrain's MoE over its dense; transformers'."""
    fastest = min(ms["transformers moe eager"], ms["transformers moe grouped_mm"])
    return (fastest / ms["zerotrain moe"], ms["zerotrain moe"] / ms["zerotrain dense"],
            fastest / ms["transformers dense"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench-step", default="build/bench/bench_step")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3, help="rounds of the five runs")
    ap.add_argument("--breakdown", action="store_true", help="print bench_step's breakdowns")
    args = ap.parse_args()
    print("load average before:", load_average())
    runs = [
        ("zerotrain moe", lambda d: zerotrain_step_ms(args.bench_step, d["moe"], args.steps, args.warmup)),
        ("transformers moe grouped_mm", lambda d: torch_step_ms(MOE, "grouped_mm", args.steps, args.warmup)),
        ("zerotrain dense", lambda d: zerotrain_step_ms(args.bench_step, d["dense"], args.steps, args.warmup)),
        ("transformers moe eager", lambda d: torch_step_ms(MOE, "eager", args.steps, args.warmup)),
        ("transformers dense", lambda d: torch_step_ms(DENSE, None, args.steps, args.warmup)),
    ]
    rounds = []
    with tempfile.TemporaryDirectory() as tmp:
        dirs = {}
        for name, config in (("moe", MOE), ("dense", DENSE)):
            dirs[name] = os.path.join(tmp, name)
            os.makedirs(dirs[name])
            with open(os.path.join(dirs[name], "config.json"), "w") as f:
                json.dump(config, f)
        for r in range(args.repeat):
            ms = {}
            for name, run in runs:
                got = run(dirs)
                if isinstance(got, tuple):
                    got, out = got
                    if args.breakdown:
                        print(out)
                ms[name] = got
            rounds.append(ms)
            print(f"round {r + 1} (load average {load_average()}): " +
                  ", ".join(f"{name} {v:.1f} ms" for name, v in ms.items()) +
                  "; ratios {:.2f} {:.2f} {:.2f}".format(*ratios(ms)), flush=True)
    print("load average after:", load_average())
    print(f"step CPU time, B x T = {B} x {T}, fp32, one thread, median of {args.steps} steps after "
          f"{args.warmup} warm-up, median of {args.repeat} rounds:")
    for name, _ in runs:
        print(f"  {name:<30} {statistics.median(ms[name] for ms in rounds):9.1f} ms")
    per_round = [ratios(ms) for ms in rounds]
    med = [statistics.median(r[i] for r in per_round) for i in range(3)]
    print(f"median over the rounds: transformers' fastest MoE step / zerotrain's: {med[0]:.2f} (aim >= 2); "
          f"zerotrain MoE / dense: {med[1]:.2f} (aim <= 1.5); transformers MoE (fastest) / dense: {med[2]:.2f}")


if __name__ == "__main__":
    main()
