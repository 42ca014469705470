#!/usr/bin/python3
"""GPT-2 training steps in PyTorch on one GPU, the baseline for bench/gpu.sh: the model of
bench/step_torch.py (tied LM head, tanh GELU, pre-LayerNorm) in bf16 autocast with fp32 weights
(the mixed precision zerotrain trains in: fp32 master, bf16 compute), causal
F.scaled_dot_product_attention, torch.compile, global-norm clipping at 1.0 and fused AdamW.
The vocabulary is padded to 50304 rows (a multiple of 128, as zerotrain pads it inside); tokens
are random. Prints every step and writes one JSON object of results (--json).

  python3 bench/gpu_torch.py --batch 64 --seq 1024 --steps 20 --peak-tflops 989 --json out/torch.json

MFU uses zerotrain's FLOPs per token, 6N + 12·L·C·T, and llm.c's, 6N + 6·L·C·T, with N the
parameters of the unpadded model (as zerotrain counts them). Out of memory at --batch: tries half
the batch, down to 1, and says so.
"""
import argparse
import json
import math
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

PRESETS = {
    "gpt2-124m": dict(n_layer=12, n_head=12, d_model=768, vocab_size=50257, max_seq_len=1024),
    "gpt2-tiny": dict(n_layer=4, n_head=4, d_model=256, vocab_size=50257, max_seq_len=256),
}


class Block(nn.Module):
    def __init__(self, C, NH):
        super().__init__()
        self.n_head = NH
        self.ln_1 = nn.LayerNorm(C, eps=1e-5)
        self.c_attn = nn.Linear(C, 3 * C)
        self.attn_proj = nn.Linear(C, C)
        self.ln_2 = nn.LayerNorm(C, eps=1e-5)
        self.c_fc = nn.Linear(C, 4 * C)
        self.mlp_proj = nn.Linear(4 * C, C)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.attn_proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT2(nn.Module):
    def __init__(self, n_layer, n_head, d_model, vocab_size, max_seq_len, padded_vocab):
        super().__init__()
        self.wte = nn.Embedding(padded_vocab, d_model)
        self.wpe = nn.Embedding(max_seq_len, d_model)
        self.h = nn.ModuleList(Block(d_model, n_head) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d_model, eps=1e-5)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * n_layer) if name.endswith("proj.weight") else 0.02
                nn.init.normal_(p, std=std)
            elif name.endswith("bias"):
                nn.init.zeros_(p)
        with torch.no_grad():
            self.wte.weight[vocab_size:].zero_()

    def forward(self, idx, targets):
        B, T = idx.shape
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for block in self.h:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.T  # LM head tied to the token embedding
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def run(args, cfg, batch):
    torch.manual_seed(1234)
    dev = torch.device("cuda")
    padded = (cfg["vocab_size"] + 127) // 128 * 128
    model = GPT2(**cfg, padded_vocab=padded).to(dev)
    n_params = sum(p.numel() for p in model.parameters()) - (padded - cfg["vocab_size"]) * cfg["d_model"]
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=6e-4, betas=(0.9, 0.95), eps=1e-8, fused=True)
    compiled = torch.compile(model)
    idx = torch.randint(0, cfg["vocab_size"], (batch, args.seq), device=dev)
    tgt = torch.randint(0, cfg["vocab_size"], (batch, args.seq), device=dev)
    print(f"gpu_torch: {args.model} ({n_params} parameters), B={batch} T={args.seq}, bf16 autocast, SDPA, "
          f"torch.compile; torch {torch.__version__}, {torch.cuda.get_device_name()}", flush=True)

    times = []
    for s in range(args.warmup + args.steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = compiled(idx, tgt)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        torch.cuda.synchronize()
        ms = (time.perf_counter() - t0) * 1e3
        measured = s >= args.warmup
        print(f"  step {s + 1}{'' if measured else ' (warm-up)'}: {ms:.1f} ms  loss {loss.item():.4f}  "
              f"grad norm {norm.item():.3f}", flush=True)
        if measured:
            times.append(ms)
    return n_params, times


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="gpt2-124m", choices=sorted(PRESETS))
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--peak-tflops", type=float, default=0.0, help="the GPU's bf16 dense peak (0: no MFU)")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("gpu_torch: no CUDA device")
    cfg = PRESETS[args.model]

    batch = args.batch
    while True:
        try:
            n_params, times = run(args, cfg, batch)
            break
        except torch.cuda.OutOfMemoryError:
            torch.cuda.empty_cache()
            if batch == 1:
                raise
            print(f"gpu_torch: out of memory at B={batch}; trying B={batch // 2}", flush=True)
            batch //= 2

    mean = statistics.mean(times)
    tokens_per_s = batch * args.seq / (mean / 1e3)
    L, C, T = cfg["n_layer"], cfg["d_model"], args.seq
    peak = args.peak_tflops * 1e12
    result = {
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(),
        "batch": batch,
        "seq": T,
        "num_params": n_params,
        "steps": len(times),
        "step_ms": mean,
        "step_ms_median": statistics.median(times),
        "tokens_per_s": tokens_per_s,
        "mfu": tokens_per_s * (6 * n_params + 12 * L * C * T) / peak if peak > 0 else float("nan"),
        "mfu_llmc": tokens_per_s * (6 * n_params + 6 * L * C * T) / peak if peak > 0 else float("nan"),
        "peak_memory_gib": torch.cuda.max_memory_allocated() / 2**30,
    }
    print(f"\nmean step {mean:.1f} ms over {len(times)} steps (median {result['step_ms_median']:.1f}); "
          f"{tokens_per_s:.0f} tokens/s; MFU {100 * result['mfu']:.1f}% "
          f"(llm.c's formula {100 * result['mfu_llmc']:.1f}%); "
          f"peak memory {result['peak_memory_gib']:.1f} GiB")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f)
            f.write("\n")


if __name__ == "__main__":
    main()
