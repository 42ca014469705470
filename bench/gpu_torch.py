#!/usr/bin/python3
"""Training steps in PyTorch on one GPU, the baseline for bench/gpu.sh: GPT-2 (the model of
bench/step_torch.py: tied LM head, tanh GELU, pre-LayerNorm) or a Llama 3.2 1B-shaped model written
plainly in torch (RMSNorm, rotary embeddings in the rotate-half convention, grouped-query attention,
SwiGLU, tied head, no biases: what zerotrain's llama family computes; no transformers needed), in
bf16 autocast with fp32 weights (the mixed precision zerotrain trains in: fp32 master, bf16 compute),
causal F.scaled_dot_product_attention, torch.compile (or eager: --mode eager), global-norm clipping at
1.0 and fused AdamW. The vocabulary is padded to a multiple of 128 (as zerotrain pads it inside);
tokens are random. Prints every step and writes one JSON object of results (--json).

  python3 bench/gpu_torch.py --batch 64 --seq 1024 --steps 20 --peak-tflops 989 --json out/torch.json
  python3 bench/gpu_torch.py --model llama-3.2-1b --batch 16 --seq 1024 --peak-tflops 989 --mode eager
  python3 bench/gpu_torch.py --check     # exit 0 where torch sees a CUDA device, saying which

MFU uses zerotrain's FLOPs per token, 6N + 12·L·W·T, and llm.c's, 6N + 6·L·W·T, with N the
parameters of the unpadded model (as zerotrain counts them) and W the width of the attention (the
query heads' channels: d_model for GPT-2). Out of memory at --batch: tries half the batch, down to
1, and says so.
"""
import argparse
import json
import math
import statistics
import sys
import time

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from gpt2_block import Block
except ImportError as e:
    if __name__ == "__main__":
        sys.exit("gpu_torch: no torch (%s)" % e)
    raise

PRESETS = {
    "gpt2-124m": dict(arch="gpt2", n_layer=12, n_head=12, d_model=768, vocab_size=50257, max_seq_len=1024),
    "gpt2-tiny": dict(arch="gpt2", n_layer=4, n_head=4, d_model=256, vocab_size=50257, max_seq_len=256),
    # meta-llama/Llama-3.2-1B's shape (its llama3 rope scaling changes the tables' values, not the work).
    "llama-3.2-1b": dict(arch="llama", n_layer=16, n_head=32, n_kv_head=8, head_dim=64, d_model=2048, d_ff=8192,
                         vocab_size=128256, rope_theta=500000.0, norm_eps=1e-5),
    "llama-tiny": dict(arch="llama", n_layer=2, n_head=4, n_kv_head=2, head_dim=16, d_model=64, d_ff=176,
                       vocab_size=256, rope_theta=10000.0, norm_eps=1e-5),
}


def init_weights(model, n_layer, vocab_size, padded_vocab, wte, scaled_projections):
    """normal(0, 0.02) matrices (GPT-2's output projections scaled by 1/sqrt(2L): scaled_projections),
    zero biases, the padding rows of the token embedding zero."""
    for name, p in model.named_parameters():
        if p.dim() == 2:
            std = 0.02 / math.sqrt(2 * n_layer) if scaled_projections and name.endswith("proj.weight") else 0.02
            nn.init.normal_(p, std=std)
        elif name.endswith("bias"):
            nn.init.zeros_(p)
    with torch.no_grad():
        wte.weight[vocab_size:].zero_()


def causal_attention(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class GPT2(nn.Module):
    def __init__(self, n_layer, n_head, d_model, vocab_size, max_seq_len, padded_vocab, **_):
        super().__init__()
        self.wte = nn.Embedding(padded_vocab, d_model)
        self.wpe = nn.Embedding(max_seq_len, d_model)
        self.h = nn.ModuleList(Block(d_model, n_head, causal_attention) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d_model, eps=1e-5)
        init_weights(self, n_layer, vocab_size, padded_vocab, self.wte, True)

    def forward(self, idx, targets):
        B, T = idx.shape
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for block in self.h:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.T  # LM head tied to the token embedding
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


class RMSNorm(nn.Module):
    def __init__(self, C, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(C))

    def forward(self, x):  # in fp32, as LlamaRMSNorm
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight


def rotate(x, cos, sin):
    """Rotary embedding, rotate-half convention: x [B, H, T, hd], cos and sin [T, hd/2]."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


# enable_gqa: PyTorch 2.5 and later; earlier, the key/value heads are repeated.
SDPA_GQA = tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 5)


class LlamaBlock(nn.Module):
    def __init__(self, C, NH, NKV, hd, d_ff, eps):
        super().__init__()
        self.shape = (NH, NKV, hd)
        self.input_layernorm = RMSNorm(C, eps)
        self.qkv = nn.Linear(C, (NH + 2 * NKV) * hd, bias=False)  # q_proj, k_proj, v_proj side by side
        self.o_proj = nn.Linear(NH * hd, C, bias=False)
        self.post_attention_layernorm = RMSNorm(C, eps)
        self.gate_up = nn.Linear(C, 2 * d_ff, bias=False)  # gate_proj, up_proj side by side
        self.down_proj = nn.Linear(d_ff, C, bias=False)

    def forward(self, x, cos, sin):
        B, T, _ = x.shape
        NH, NKV, hd = self.shape
        q, k, v = self.qkv(self.input_layernorm(x)).split([NH * hd, NKV * hd, NKV * hd], dim=-1)
        q = rotate(q.view(B, T, NH, hd).transpose(1, 2), cos, sin)
        k = rotate(k.view(B, T, NKV, hd).transpose(1, 2), cos, sin)
        v = v.view(B, T, NKV, hd).transpose(1, 2)
        if SDPA_GQA:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        else:
            k, v = (t.repeat_interleave(NH // NKV, dim=1) for t in (k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o_proj(y.transpose(1, 2).reshape(B, T, NH * hd))
        gate, up = self.gate_up(self.post_attention_layernorm(x)).chunk(2, dim=-1)
        return x + self.down_proj(F.silu(gate) * up)


class Llama(nn.Module):
    def __init__(self, n_layer, n_head, n_kv_head, head_dim, d_model, d_ff, vocab_size, rope_theta, norm_eps,
                 padded_vocab, **_):
        super().__init__()
        self.head_dim, self.rope_theta = head_dim, rope_theta
        self.embed_tokens = nn.Embedding(padded_vocab, d_model)
        self.layers = nn.ModuleList(LlamaBlock(d_model, n_head, n_kv_head, head_dim, d_ff, norm_eps)
                                    for _ in range(n_layer))
        self.norm = RMSNorm(d_model, norm_eps)
        init_weights(self, n_layer, vocab_size, padded_vocab, self.embed_tokens, False)

    def forward(self, idx, targets):
        B, T = idx.shape
        inv_freq = self.rope_theta ** (-torch.arange(0, self.head_dim, 2, device=idx.device).float() / self.head_dim)
        angles = torch.arange(T, device=idx.device).float()[:, None] * inv_freq[None, :]
        cos, sin = angles.cos(), angles.sin()
        x = self.embed_tokens(idx)
        for layer in self.layers:
            x = layer(x, cos, sin)
        logits = self.norm(x) @ self.embed_tokens.weight.T  # tied head
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def attention_width(cfg):
    return cfg["n_head"] * cfg.get("head_dim", cfg["d_model"] // cfg["n_head"])


def run(args, cfg, batch):
    torch.manual_seed(1234)
    dev = torch.device("cuda")
    padded = (cfg["vocab_size"] + 127) // 128 * 128
    model = (GPT2 if cfg["arch"] == "gpt2" else Llama)(**cfg, padded_vocab=padded).to(dev)
    n_params = sum(p.numel() for p in model.parameters()) - (padded - cfg["vocab_size"]) * cfg["d_model"]
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=6e-4, betas=(0.9, 0.95), eps=1e-8, fused=True)
    compiled = torch.compile(model) if args.mode == "compile" else model
    idx = torch.randint(0, cfg["vocab_size"], (batch, args.seq), device=dev)
    tgt = torch.randint(0, cfg["vocab_size"], (batch, args.seq), device=dev)
    print(f"gpu_torch: {args.model} ({n_params} parameters), B={batch} T={args.seq}, bf16 autocast, SDPA"
          f"{' (enable_gqa)' if cfg['arch'] == 'llama' and SDPA_GQA else ''}, "
          f"{'torch.compile' if args.mode == 'compile' else 'eager'}; torch {torch.__version__}, "
          f"{torch.cuda.get_device_name()}", flush=True)

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
    ap.add_argument("--mode", default="compile", choices=["compile", "eager"], help="torch.compile or eager")
    ap.add_argument("--check", action="store_true", help="only say whether torch sees a CUDA device")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("gpu_torch: no CUDA device (torch %s)" % torch.__version__)
    if args.check:
        print("gpu_torch: torch %s, CUDA %s, %s" % (torch.__version__, torch.version.cuda, torch.cuda.get_device_name()))
        return
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
    L, W, T = cfg["n_layer"], attention_width(cfg), args.seq
    peak = args.peak_tflops * 1e12
    result = {
        "torch": torch.__version__,
        "mode": args.mode,
        "device": torch.cuda.get_device_name(),
        "batch": batch,
        "seq": T,
        "num_params": n_params,
        "steps": len(times),
        "step_ms": mean,
        "step_ms_median": statistics.median(times),
        "tokens_per_s": tokens_per_s,
        "model": args.model,
        "mfu": tokens_per_s * (6 * n_params + 12 * L * W * T) / peak if peak > 0 else float("nan"),
        "mfu_llmc": tokens_per_s * (6 * n_params + 6 * L * W * T) / peak if peak > 0 else float("nan"),
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
