#!/usr/bin/python3
"""The step of bench/bench_step.cpp in PyTorch, for comparison: one training step (zero grads,
forward, backward, global-norm clipping, AdamW) of GPT-2 124M at B=4, T=64, or of a Llama of 125M
parameters at B=4, T=256, fp32, on the CPU.

GPT-2 is written here with torch.nn. Run it with Debian's python3-torch, two threads, and OpenBLAS
told the CPU type (it does not know newer Xeons and falls back to slow kernels otherwise), or with
a torch 2.x:
  OPENBLAS_CORETYPE=SkylakeX OMP_NUM_THREADS=2 /usr/bin/python3 bench/step_torch.py
  OMP_NUM_THREADS=2 python3 bench/step_torch.py   # a virtual environment with torch 2.x
The Llama is transformers' LlamaForCausalLM (needs transformers and torch 2.x; attention through
torch's scaled_dot_product_attention unless --attention eager):
  OMP_NUM_THREADS=2 python3 bench/step_torch.py --model llama-125m   # in a virtual environment
"""
import argparse
import math
import os
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from gpt2_block import Block

PRESETS = {
    "toy": dict(n_layer=2, n_head=4, d_model=64, vocab_size=256, max_seq_len=128),
    "gpt2-tiny": dict(n_layer=4, n_head=4, d_model=256, vocab_size=50257, max_seq_len=256),
    "gpt2-124m": dict(n_layer=12, n_head=12, d_model=768, vocab_size=50257, max_seq_len=1024),
}
# The llama-125m of bench_step.cpp, as a transformers LlamaConfig: Llama 2's vocabulary and untied
# head, 12 query heads sharing 4 key/value heads, d_ff 8/3 of d_model.
LLAMA_PRESETS = {
    "llama-125m": dict(num_hidden_layers=12, num_attention_heads=12, num_key_value_heads=4, hidden_size=768,
                       intermediate_size=2048, vocab_size=32000, max_position_embeddings=1024, rms_norm_eps=1e-5,
                       rope_theta=10000.0, tie_word_embeddings=False),
}
SEQ_DEFAULT = {"llama-125m": 256}


class GPT2(nn.Module):
    def __init__(self, n_layer, n_head, d_model, vocab_size, max_seq_len):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, d_model)
        self.wpe = nn.Embedding(max_seq_len, d_model)
        self.h = nn.ModuleList(Block(d_model, n_head, self.causal_attention) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d_model, eps=1e-5)
        self.register_buffer("mask", torch.tril(torch.ones(max_seq_len, max_seq_len)))
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * n_layer) if name.endswith("proj.weight") else 0.02
                nn.init.normal_(p, std=std)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def causal_attention(self, q, k, v):  # written out: Debian's torch 1.13 has no scaled_dot_product_attention
        T = q.size(-2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.size(-1)))
        att = torch.softmax(att.masked_fill(self.mask[:T, :T] == 0, float("-inf")), dim=-1)
        return att @ v

    def forward(self, idx, targets):
        B, T = idx.shape
        x = self.wte(idx) + self.wpe(torch.arange(T))
        for block in self.h:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.T  # LM head tied to the token embedding
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


class Llama(nn.Module):
    """transformers' LlamaForCausalLM with the loss of GPT2 above: cross-entropy of the logits
    against targets given beside the inputs (no shift inside)."""

    def __init__(self, attention, **config):
        super().__init__()
        from transformers import LlamaConfig, LlamaForCausalLM

        cfg = LlamaConfig(use_cache=False, attn_implementation=attention, **config)
        self.vocab_size = cfg.vocab_size
        self.model = LlamaForCausalLM(cfg)

    def forward(self, idx, targets):
        logits = self.model(input_ids=idx).logits
        return F.cross_entropy(logits.view(-1, self.vocab_size), targets.view(-1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="gpt2-124m", choices=sorted(PRESETS) + sorted(LLAMA_PRESETS))
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, help="sequence length (default: 64, 256 for llama-125m)")
    ap.add_argument("--attention", default="sdpa", choices=["sdpa", "eager"],
                    help="transformers' attention implementation for the Llama")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    args = ap.parse_args()

    threads = int(os.environ.get("OMP_NUM_THREADS", "2"))
    torch.set_num_threads(threads)
    torch.manual_seed(1234)
    args.seq = args.seq or SEQ_DEFAULT.get(args.model, 64)
    if args.model in LLAMA_PRESETS:
        cfg = LLAMA_PRESETS[args.model]
        model = Llama(args.attention, **cfg)
        arch = f"transformers LlamaForCausalLM, attention {args.attention}"
    else:
        cfg = PRESETS[args.model]
        model = GPT2(**cfg)
        arch = "torch.nn GPT-2"
    model.train()
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=6e-4, betas=(0.9, 0.95), eps=1e-8)
    idx = torch.randint(0, cfg["vocab_size"], (args.batch, args.seq))
    tgt = torch.randint(0, cfg["vocab_size"], (args.batch, args.seq))
    n_params = sum(p.numel() for p in model.parameters())
    print(f"step_torch: {args.model} ({arch}; {n_params} parameters), B={args.batch} T={args.seq}, fp32, "
          f"{torch.get_num_threads()} threads, torch {torch.__version__}, "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}")
    print(f"load average before: {' '.join(open('/proc/loadavg').read().split()[:3])}")

    times, phases = [], {"zero grads": 0.0, "forward": 0.0, "backward": 0.0, "clip": 0.0, "AdamW": 0.0}
    for s in range(args.warmup + args.steps):
        t = [time.perf_counter()]
        opt.zero_grad(set_to_none=False)
        t.append(time.perf_counter())
        loss = model(idx, tgt)
        t.append(time.perf_counter())
        loss.backward()
        t.append(time.perf_counter())
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        t.append(time.perf_counter())
        opt.step()
        t.append(time.perf_counter())
        total = t[-1] - t[0]
        measured = s >= args.warmup
        print(f"  step {s + 1}{'' if measured else ' (warm-up)'}: {total * 1e3:.1f} ms  loss {loss.item():.4f}  "
              f"grad norm {norm.item():.3f}")
        if measured:
            times.append(total * 1e3)
            for i, name in enumerate(phases):
                phases[name] += t[i + 1] - t[i]
    med = statistics.median(times)
    print(f"\nmedian step: {med:.1f} ms over {args.steps} steps (min {min(times):.1f}, max {max(times):.1f}); "
          f"{args.batch * args.seq / (med / 1e3):.0f} tokens/s")
    print("per phase (mean per step):")
    for name, sec in phases.items():
        print(f"  {name:18s} {sec / args.steps * 1e3:8.1f} ms")
    print(f"load average after: {' '.join(open('/proc/loadavg').read().split()[:3])}")


if __name__ == "__main__":
    main()
