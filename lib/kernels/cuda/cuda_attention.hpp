#pragma once
// Causal self-attention over a packed qkv projection on the GPU, fused flash-style:
//   qkv [B, T, (NH + 2·NKV)·hs] (per token NH query heads, then NKV key heads, then NKV value
//   heads, hs channels each; query head h reads key/value head h / (NH / NKV): grouped-query
//   attention, multi-head when NKV = NH, GPT-2's [q | k | v] of C = NH·hs channels each),
//   out [B, T, NH·hs], lse [B, NH, T] (fp32: per query row, log Σ_j exp(score)).
//   segments [B, T] (device memory) or null: the sample of each token of a packed row
//   (core/token_segment.hpp); a query attends to the keys [begin, t] of its own sample only.
//   window > 0: sliding-window attention, the keys (t - window, t] only (ANDed with the sample);
//   the key tiles a query tile walks start at its band's first key, so the work grows with
//   T·window once T > window.
// Scores, softmax and accumulators are fp32. Head size 1..128.
//
// Forward: one block per (query tile, head, batch). The block keeps its query tile in shared
// memory and walks the key/value tiles up to the diagonal, computing a tile of scores at a time
// and folding it into a running (max, sum, output) per row — the online softmax — so no T x T
// matrix ever exists in memory; only the row's log-sum-exp is saved for backward.
// Backward recomputes the probabilities from q, k and lse instead of storing them, in two
// kernels so that every gradient element has one owner (no atomics, bit-for-bit repeatable):
// one block per (key tile, kv head) accumulates dk and dv over the query tiles at or past the
// diagonal of every query head that reads it; one block per (query tile, head) accumulates dq over
// the key tiles up to the diagonal. The price is computing the scores and dout·vᵀ twice.
// bf16 runs on the tensor cores (mma.sync m16n8k16, FlashAttention-2's register layout: 4 warps,
// 64-row tiles, probabilities rounded to bf16 for their products). fp32 runs on CUDA cores, as a
// register-tiled 16 x 16 thread grid per block, keeping fp32 parity with the CPU.
#include <cuda_runtime_api.h>

#include <cstddef>

#include "core/dtype.hpp"
#include "core/token_segment.hpp"
#include "kernels/model_ops.hpp"  // GradInto

namespace zt::cuda {

constexpr int kAttentionMaxHeadSize = 128;

struct AttentionShape {
  int B, T, NH, NKV, hs;  // NH query heads share NKV key/value heads (NH a multiple of NKV)
  const TokenSegment* segments = nullptr;  // [B, T]: the samples of packed rows; null: one per row
  int window = 0;                          // sliding window: the last `window` keys of each query; 0: all
  AttentionScores scores = {};             // the scale (default 1/√hs) and soft-capping of the scores
};

// out = softmax(q·kᵀ/√hs, causal)·v per head; lse[b, h, t] = log Σ_{begin<=j<=t} exp(q_t·k_j/√hs),
// begin that of t's sample (0 without segments).
void attention_forward(DType dt, void* out, float* lse, const void* qkv, const AttentionShape& shape,
                       cudaStream_t stream);
// Multi-head attention over GPT-2's [q | k | v] rows of 3C channels: NKV = NH, hs = C / NH.
void attention_forward(DType dt, void* out, float* lse, const void* qkv, int B, int T, int C, int NH,
                       cudaStream_t stream, const TokenSegment* segments = nullptr);

// Floats of device scratch attention_backward needs (Σ_d dout·out per query row).
size_t attention_backward_scratch_floats(int B, int T, int NH);

// dqkv (+)= the gradient of out for dout [B, T, NH·hs], from the forward's inputs, output and lse.
void attention_backward(DType dt, void* dqkv, float* scratch, const void* dout, const void* qkv, const void* out,
                        const float* lse, const AttentionShape& shape, cudaStream_t stream,
                        GradInto dqkv_into = GradInto::Accumulate);
void attention_backward(DType dt, void* dqkv, float* scratch, const void* dout, const void* qkv, const void* out,
                        const float* lse, int B, int T, int C, int NH, cudaStream_t stream,
                        GradInto dqkv_into = GradInto::Accumulate, const TokenSegment* segments = nullptr);

}  // namespace zt::cuda
