#!/usr/bin/python3
"""The per-kernel cost of one training step on an H100 in bf16, as zerotrain's GPU kernels are built:
GPT-2 124M (B = 64, T = 1024 by default) or Llama 3.2 1B (B = 16, T = 1024 by default). For each
kernel of the step the FLOPs and the compulsory bytes (every tensor read and written once, bf16
activations, fp32 statistics and optimizer state), the time each would take at the H100's peak
(the larger of FLOPs at 989 TFLOP/s and bytes at 3.35 TB/s), and a predicted time at the efficiency
this kind of kernel reaches, which the GPU run of bench/gpu.sh and bench_kernels must confirm. The
attention's rates are FlashAttention-2's as measured on an H100, scaled to today's kernel
(--attention-vs-fa2); the last line gives the MFU over a range of that scale.
Prints a markdown table (bench/RESULTS.md).

  python3 bench/cuda/cost_table.py [--batch 64] [--seq 1024]
  python3 bench/cuda/cost_table.py --model llama-3.2-1b [--batch 16] [--seq 1024]
"""
import argparse

PEAK_FLOPS = 989e12  # H100 SXM dense bf16 (datasheet)
PEAK_BYTES = 3.35e12  # H100 SXM HBM3 (datasheet)
# Efficiencies assumed per kind of kernel (of the peaks above):
EFF = {
    # cuBLASLt bf16 GEMMs: 798 TFLOP/s measured for 8192^3 on an H100 of this workplace (81%);
    # GPT-2's products are smaller in one dimension (768), so less; Llama 3.2 1B's are 2048 or more
    # in every dimension.
    "gemm": 0.72,
    "gemm_large": 0.78,
    # Memory-bound kernels: 85% of the 3.0 TB/s a device-to-device copy moved here (of 3.35).
    "mem": 0.76,
}
# Attention, from what FlashAttention-2 measures on an H100 in bf16 at head dim 64 and T = 1k: 229
# to 306 TFLOP/s forward, the low end for the causal mask at this length; its backward runs at
# about three quarters of its forward rate, counting 2.5 forward products where FlashAttention
# counts FLOPs.
FA2_FWD = 229e12
FA2_BWD = 0.75 * FA2_FWD
# Today's kernels against FlashAttention-2: mma.sync m16n8k16 as it, but 16 query rows a warp
# where it takes 32 to 64 (more shared-memory reads per product), tiles loaded without pipelining
# (it overlaps the next tile's cp.async with the products), and a backward in two passes that
# recompute the scores (3.5 forward products against its 2.5, a share this table counts as FLOPs).
VS_FA2 = {"fwd": 0.5, "bwd": 0.4}
BWD_PRODUCTS = 7  # the half-square products of the backward as the kernel runs them (FA2: 5)
E = 2  # bytes per bf16 element


def attention_efficiencies(scale=1.0):
    """The attention's efficiencies of peak, as the table counts its FLOPs, at VS_FA2 times scale."""
    return {"attn_fwd": VS_FA2["fwd"] * scale * FA2_FWD / PEAK_FLOPS,
            "attn_bwd": VS_FA2["bwd"] * scale * FA2_BWD * BWD_PRODUCTS / 5 / PEAK_FLOPS}


class Step:
    """The kernels of one step: (name, count per step, flops, bytes, kind) rows."""

    def __init__(self, gemm_kind):
        self.rows = []
        self.gemm_kind = gemm_kind

    def add(self, name, count, flops, nbytes, kind):
        self.rows.append((name, count, flops, nbytes, kind))

    def gemm(self, name, m, k, n, count, epilogue_bytes=0, backward_epilogue_bytes=0):
        # out[m, n] = in[m, k] · W[k, n]: forward; backward dinp (m x k) and dweight (k x n).
        fl = 2.0 * m * k * n
        self.add(name + " fwd", count, fl, E * (m * k + k * n + m * n) + epilogue_bytes, self.gemm_kind)
        self.add(name + " bwd (dinp, dweight)", count, 2 * fl,
                 E * (2 * m * n + 2 * m * k + 2 * k * n) + backward_epilogue_bytes, self.gemm_kind)

    def attention(self, L, B, T, NH, hd, qkv_width):
        # Causal attention: the half square of q·kᵀ and p·v per query head (grouped-query heads read
        # their shared key/value head in place). Forward 2 products; backward, in two deterministic
        # passes, 7 (s and dout·vᵀ twice, dv, dk, dq).
        N = B * T
        half = B * NH * T * T / 2 * hd * 2  # FLOPs of one product over the causal half
        qkv, o = E * N * qkv_width, E * N * NH * hd
        self.add("attention fwd (tensor cores)", L, 2 * half, qkv + o + 4 * B * NH * T, "attn_fwd")
        self.add("attention bwd (tensor cores, 2 passes)", L, BWD_PRODUCTS * half, 2 * qkv + 2 * o + 8 * B * NH * T,
                 "attn_bwd")
        self.add("attention bwd dout·out", L, 2 * N * NH * hd, 2 * o + 4 * B * NH * T, "mem")

    def optimizer(self, P):
        self.add("gradient norm (sum of squares)", 1, 3 * P, E * P, "mem")
        self.add("AdamW (fp32 master, m, v; bf16 params)", 1, 15 * P, 2 * P * (E + 12) + E * P, "mem")


def gpt2_124m(B, T):
    L, C, NH, V, Vp = 12, 768, 12, 50257, 50304
    N = B * T
    s = Step("gemm")
    s.gemm("matmul qkv C->3C", N, C, 3 * C, L)
    s.gemm("matmul attn.proj C->C", N, C, C, L)
    s.gemm("matmul fc C->4C (+GELU epilogue)", N, C, 4 * C, L, epilogue_bytes=E * N * 4 * C)
    s.gemm("matmul fc.proj 4C->C (+DGELU epilogue)", N, 4 * C, C, L, backward_epilogue_bytes=E * N * 4 * C)
    s.gemm("matmul lm_head C->Vp", N, C, Vp, 1)
    s.attention(L, B, T, NH, C // NH, 3 * C)
    nc = E * N * C
    s.add("layernorm fwd (ln_1, ln_f)", L + 1, 8 * N * C, 2 * nc + 8 * N, "mem")
    s.add("residual + layernorm fwd (fused)", L, 9 * N * C, 4 * nc + 8 * N, "mem")
    s.add("residual fwd (block output)", L, N * C, 3 * nc, "mem")
    s.add("layernorm bwd dinp (+= dres)", 2 * L + 1, 12 * N * C, 4 * nc + 8 * N, "mem")
    s.add("layernorm bwd dweight, dbias (column sums)", 2 * L + 1, 4 * N * C, 2 * nc, "mem")
    s.add("matmul bwd dbias (column sums)", L, N * 9 * C, E * N * 9 * C, "mem")
    s.add("embedding fwd", 1, N * C, nc + E * N * C + 4 * N, "mem")
    s.add("embedding bwd (sorted, dwte and dwpe)", 1, 2 * N * C, 2 * nc + 2 * E * T * C + 16 * N, "mem")
    s.add("classifier fused (loss and dlogits)", 1, 7 * N * Vp, 2 * E * N * Vp, "mem")
    s.optimizer(124_475_904)  # flat parameters (padded vocabulary)
    # Unpadded parameters, as zerotrain and llm.c count them; the attention term's width L·C.
    return s, 124_439_808, L * C


def llama_3_2_1b(B, T):
    # 16 layers, d_model 2048, 32 query heads over 8 key/value heads of 64, SwiGLU of 8192, a tied
    # head over 128256 ids (a multiple of 128: no padding); no biases; [out, in] weights.
    L, C, NH, NKV, hd, F, V = 16, 2048, 32, 8, 64, 8192, 128256
    N = B * T
    Q, QKV = NH * hd, (NH + 2 * NKV) * hd
    s = Step("gemm_large")
    s.gemm("matmul qkv C->(NH+2NKV)hd", N, C, QKV, L)
    s.gemm("matmul o_proj NH·hd->C", N, Q, C, L)
    s.gemm("matmul gate_up C->2F", N, C, 2 * F, L)
    s.gemm("matmul down F->C", N, F, C, L)
    s.gemm("matmul lm_head C->V (tied)", N, C, V, 1)
    s.attention(L, B, T, NH, hd, QKV)
    nc = E * N * C
    s.add("rmsnorm fwd (input_layernorm, norm)", L + 1, 4 * N * C, 2 * nc + 4 * N, "mem")
    s.add("residual + rmsnorm fwd (post_attention_layernorm, fused)", L, 5 * N * C, 4 * nc + 4 * N, "mem")
    s.add("residual fwd (block output)", L, N * C, 3 * nc, "mem")
    s.add("rmsnorm bwd dinp (+= dres)", 2 * L + 1, 8 * N * C, 4 * nc + 4 * N, "mem")
    s.add("rmsnorm bwd dweight (column sums)", 2 * L + 1, 3 * N * C, 2 * nc, "mem")
    rotated = E * N * (NH + NKV) * hd  # the q and k heads, read and written in place
    s.add("rope fwd (q, k in place)", L, 6 * N * (NH + NKV) * hd / 2, 2 * rotated + 4 * T * hd, "mem")
    s.add("rope bwd (dq, dk in place)", L, 6 * N * (NH + NKV) * hd / 2, 2 * rotated + 4 * T * hd, "mem")
    s.add("swiglu fwd (2F -> F)", L, 6 * N * F, 3 * E * N * F, "mem")
    s.add("swiglu bwd (written over)", L, 12 * N * F, 5 * E * N * F, "mem")
    s.add("embedding fwd (no positions)", 1, 0, 2 * nc + 4 * N, "mem")
    s.add("embedding bwd (sorted, dwte)", 1, N * C, 2 * nc + 16 * N, "mem")
    s.add("classifier fused (loss and dlogits)", 1, 7 * N * V, 2 * E * N * V, "mem")
    params = 1_235_814_400
    s.optimizer(params)
    return s, params, L * Q


MODELS = {"gpt2-124m": (gpt2_124m, 64), "llama-3.2-1b": (llama_3_2_1b, 16)}


def predicted_ms(step, eff):
    """Each row's time at the peaks and as predicted at the efficiencies eff, in seconds."""
    for name, count, fl, by, kind in step.rows:
        t_peak = max(fl / PEAK_FLOPS, by / PEAK_BYTES) * count
        if kind == "mem":
            t_pred = by / (PEAK_BYTES * eff[kind]) * count
        else:
            t_pred = max(fl / (PEAK_FLOPS * eff[kind]), by / (PEAK_BYTES * eff["mem"])) * count
        yield name, count, fl, by, kind, t_peak, t_pred


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="gpt2-124m", choices=sorted(MODELS))
    ap.add_argument("--batch", type=int, default=0, help="micro-batch (default: 64 for GPT-2, 16 for Llama)")
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--attention-vs-fa2", type=float, default=1.0,
                    help="today's attention's rates as a multiple of VS_FA2's (1: as assumed)")
    a = ap.parse_args()
    build, default_batch = MODELS[a.model]
    B, T = a.batch or default_batch, a.seq
    N = B * T
    step, params, attn_width = build(B, T)
    eff = dict(EFF, **attention_efficiencies(a.attention_vs_fa2))
    model_flops = {"6N + 6·L·width·T (llm.c)": (6 * params + 6 * attn_width * T) * N,
                   "6N + 12·L·width·T (zerotrain, PaLM)": (6 * params + 12 * attn_width * T) * N}

    print("| kernel | per step | GFLOP | MB | ms at H100 peak | assumed efficiency | predicted ms |")
    print("|---|---|---|---|---|---|---|")
    total_peak = total_pred = total_flops = 0.0
    by_prefix = {}
    for name, count, fl, by, kind, t_peak, t_pred in predicted_ms(step, eff):
        total_peak += t_peak
        total_pred += t_pred
        total_flops += fl * count
        prefix = name.split()[0]
        by_prefix[prefix] = by_prefix.get(prefix, 0.0) + t_pred
        print("| %s | %d | %.1f | %.1f | %.2f | %.0f%% | %.2f |"
              % (name, count, fl * count / 1e9, by * count / 1e6, t_peak * 1e3, 100 * eff[kind], t_pred * 1e3))
    print("| **step** | | %.1f | | **%.2f** | | **%.2f** |" % (total_flops / 1e9, total_peak * 1e3, total_pred * 1e3))
    print()
    fwd, bwd = (eff["attn_fwd"] * PEAK_FLOPS / 1e12, eff["attn_bwd"] * PEAK_FLOPS / 1e12 * 5 / BWD_PRODUCTS)
    print("%s, B = %d, T = %d, bf16; N = %d parameters; attention at %.0f TFLOP/s forward, %.0f backward "
          "(FlashAttention's count)." % (a.model, B, T, params, fwd, bwd))
    for name, fl in model_flops.items():
        print("MFU (%s, %.2f TFLOP per step): %.1f%% at the peaks, %.1f%% predicted; %.0f tokens/s predicted."
              % (name, fl / 1e12, 100 * fl / total_peak / PEAK_FLOPS, 100 * fl / total_pred / PEAK_FLOPS, N / total_pred))
    shares = ", ".join("%s %.1f%%" % (k, 100 * v / total_pred) for k, v in sorted(by_prefix.items(), key=lambda kv: -kv[1]))
    print("Share of the predicted step by kind of kernel: %s." % shares)
    palm = model_flops["6N + 12·L·width·T (zerotrain, PaLM)"]
    spread = []
    for scale in (0.6, 0.8, 1.0, 1.2, 1.4):
        total = sum(t for *_, t in predicted_ms(step, dict(EFF, **attention_efficiencies(a.attention_vs_fa2 * scale))))
        spread.append("%.0f%%/%.0f%% of FA2: %.1f%%" % (100 * VS_FA2["fwd"] * a.attention_vs_fa2 * scale,
                                                        100 * VS_FA2["bwd"] * a.attention_vs_fa2 * scale,
                                                        100 * palm / total / PEAK_FLOPS))
    print("MFU (zerotrain's) with the attention at forward/backward: %s." % ", ".join(spread))


if __name__ == "__main__":
    main()
