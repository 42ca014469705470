#!/usr/bin/python3
"""The per-kernel cost of one GPT-2 124M training step on an H100 (B = 64, T = 1024, bf16), as
zerotrain's GPU kernels are built: for each kernel of the step the FLOPs and the compulsory bytes
(every tensor read and written once, bf16 activations, fp32 statistics and optimizer state), the
time each would take at the H100's peak (the larger of FLOPs at 989 TFLOP/s and bytes at
3.35 TB/s), and a predicted time at the efficiency this kind of kernel reaches, which the GPU run
of bench/gpu.sh and bench_kernels must confirm. Prints a markdown table (bench/RESULTS.md).

  python3 bench/cuda/cost_table.py [--batch 64] [--seq 1024]
"""
import argparse

PEAK_FLOPS = 989e12  # H100 SXM dense bf16 (datasheet)
PEAK_BYTES = 3.35e12  # H100 SXM HBM3 (datasheet)
# Efficiencies assumed per kind of kernel (of the peaks above):
EFF = {
    # cuBLASLt bf16 GEMMs: 798 TFLOP/s measured for 8192^3 on an H100 of this workplace (81%);
    # GPT-2's products are smaller in one dimension (768), so less.
    "gemm": 0.72,
    # The tensor-core attention kernels (mma.sync m16n8k16, 4 warps, tiles loaded without
    # pipelining, FlashAttention-2's layout): not measured yet; FlashAttention-2 itself reaches
    # 35-50% of an H100's peak with mma.sync.
    "attn_fwd": 0.35,
    "attn_bwd": 0.25,
    # Memory-bound kernels: 85% of the 3.0 TB/s a device-to-device copy moved here (of 3.35).
    "mem": 0.76,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seq", type=int, default=1024)
    a = ap.parse_args()
    B, T, L, C, NH, V, Vp = a.batch, a.seq, 12, 768, 12, 50257, 50304
    hs = C // NH
    N = B * T
    e = 2  # bytes per bf16 element
    rows = []  # (kernel, count per step, flops, bytes, kind)

    def gemm(name, m, k, n, count, epilogue_bytes=0, backward_epilogue_bytes=0):
        # out[m, n] = in[m, k] · W[k, n]: forward; backward dinp (m x k) and dweight (k x n).
        fl = 2.0 * m * k * n
        rows.append((name + " fwd", count, fl, e * (m * k + k * n + m * n) + epilogue_bytes, "gemm"))
        rows.append((name + " bwd (dinp, dweight)", count, 2 * fl,
                     e * (2 * m * n + 2 * m * k + 2 * k * n) + backward_epilogue_bytes, "gemm"))

    gemm("matmul qkv C->3C", N, C, 3 * C, L)
    gemm("matmul attn.proj C->C", N, C, C, L)
    gemm("matmul fc C->4C (+GELU epilogue)", N, C, 4 * C, L, epilogue_bytes=e * N * 4 * C)
    gemm("matmul fc.proj 4C->C (+DGELU epilogue)", N, 4 * C, C, L, backward_epilogue_bytes=e * N * 4 * C)
    gemm("matmul lm_head C->Vp", N, C, Vp, 1)
    # Causal attention: the half square of q·kᵀ and p·v. Forward 2 products; backward, in two
    # deterministic passes, 7 (s and dout·vᵀ twice, dv, dk, dq).
    half = B * NH * T * T / 2 * hs * 2  # FLOPs of one product over the causal half
    qkv, o = e * N * 3 * C, e * N * C
    rows.append(("attention fwd (tensor cores)", L, 2 * half, qkv + o + 4 * B * NH * T, "attn_fwd"))
    rows.append(("attention bwd (tensor cores, 2 passes)", L, 7 * half, 2 * qkv + 2 * o + 8 * B * NH * T, "attn_bwd"))
    rows.append(("attention bwd dout·out", L, 2 * N * C, 2 * o + 4 * B * NH * T, "mem"))
    nc = e * N * C
    rows.append(("layernorm fwd (ln_1, ln_f)", L + 1, 8 * N * C, 2 * nc + 8 * N, "mem"))
    rows.append(("residual + layernorm fwd (fused)", L, 9 * N * C, 4 * nc + 8 * N, "mem"))
    rows.append(("residual fwd (block output)", L, N * C, 3 * nc, "mem"))
    rows.append(("layernorm bwd dinp (+= dres)", 2 * L + 1, 12 * N * C, 4 * nc + 8 * N, "mem"))
    rows.append(("layernorm bwd dweight, dbias (column sums)", 2 * L + 1, 4 * N * C, 2 * nc, "mem"))
    rows.append(("matmul bwd dbias (column sums)", L, N * 9 * C, e * N * 9 * C, "mem"))
    rows.append(("embedding fwd", 1, N * C, nc + e * N * C + 4 * N, "mem"))
    rows.append(("embedding bwd (sorted, dwte and dwpe)", 1, 2 * N * C, 2 * nc + 2 * e * T * C + 16 * N, "mem"))
    logits = e * N * Vp
    rows.append(("classifier fused (loss and dlogits)", 1, 7 * N * Vp, 2 * logits, "mem"))
    P = 124_475_904  # flat parameters (padded vocabulary)
    rows.append(("gradient norm (sum of squares)", 1, 3 * P, e * P, "mem"))
    rows.append(("AdamW (fp32 master, m, v; bf16 params)", 1, 15 * P, 2 * P * (e + 12) + e * P, "mem"))

    print("| kernel | per step | GFLOP | MB | ms at H100 peak | assumed efficiency | predicted ms |")
    print("|---|---|---|---|---|---|---|")
    total_peak = total_pred = total_flops = 0.0
    for name, count, fl, by, kind in rows:
        t_peak = max(fl / PEAK_FLOPS, by / PEAK_BYTES) * count
        if kind == "mem":
            t_pred = by / (PEAK_BYTES * EFF[kind]) * count
        else:
            t_pred = max(fl / (PEAK_FLOPS * EFF[kind]), by / (PEAK_BYTES * EFF["mem"])) * count
        total_peak += t_peak
        total_pred += t_pred
        total_flops += fl * count
        print("| %s | %d | %.1f | %.1f | %.2f | %.0f%% | %.2f |"
              % (name, count, fl * count / 1e9, by * count / 1e6, t_peak * 1e3, 100 * EFF[kind], t_pred * 1e3))
    params = 124_439_808  # unpadded, as zerotrain and llm.c count them
    model_flops = {"6N + 6LCT (llm.c)": (6 * params + 6 * L * C * T) * N,
                   "6N + 12LCT (zerotrain, PaLM)": (6 * params + 12 * L * C * T) * N}
    print("| **step** | | %.1f | | **%.2f** | | **%.2f** |" % (total_flops / 1e9, total_peak * 1e3, total_pred * 1e3))
    print()
    for name, fl in model_flops.items():
        print("MFU (%s, %.2f TFLOP per step): %.1f%% at the peaks, %.1f%% predicted; %.0f tokens/s predicted."
              % (name, fl / 1e12, 100 * fl / total_peak / PEAK_FLOPS, 100 * fl / total_pred / PEAK_FLOPS, N / total_pred))


if __name__ == "__main__":
    main()
