#pragma once
// Causal multi-head self-attention over a packed qkv projection on the GPU, fused flash-style:
//   qkv [B, T, 3C] (per token q, k, v; head h uses channels [h·hs, (h+1)·hs), hs = C / NH),
//   out [B, T, C], lse [B, NH, T] (fp32: per query row, log Σ_j exp(score)).
// fp32 or bf16 tensors; scores, softmax and accumulators are fp32. Head size 1..128.
//
// Forward: one block per (query tile, head, batch). The block keeps its query tile in shared
// memory and walks the key/value tiles up to the diagonal, computing a tile of scores at a time
// and folding it into a running (max, sum, output) per row — the online softmax — so no T x T
// matrix ever exists in memory; only the row's log-sum-exp is saved for backward.
// Backward recomputes the probabilities from q, k and lse instead of storing them, in two
// kernels so that every gradient element has one owner (no atomics, bit-for-bit repeatable):
// one block per key tile accumulates dk and dv over the query tiles at or past the diagonal; one
// block per query tile accumulates dq over the key tiles up to the diagonal. The price is
// computing the scores and dout·vᵀ twice.
// Trick, inside a block: 256 threads as a 16 x 16 grid; thread (ty, tx) owns rows ty + 16i and
// columns tx + 16j of every tile product (register tiling), with shared-memory rows padded by one
// float so those reads are free of bank conflicts. The 16 lanes sharing a row sit in one warp, so
// row maxima and sums are warp shuffles. Tiles: 64 rows for head sizes up to 64, 32 rows for
// head sizes up to 128 (their shared memory, 40-100 KB, is granted above the default 48 KB).
#include <cuda_runtime_api.h>

#include <cstddef>

#include "core/dtype.hpp"

namespace zt::cuda {

constexpr int kAttentionMaxHeadSize = 128;

// out = softmax(q·kᵀ/√hs, causal)·v per head; lse[b, h, t] = log Σ_{j<=t} exp(q_t·k_j/√hs).
void attention_forward(DType dt, void* out, float* lse, const void* qkv, int B, int T, int C, int NH,
                       cudaStream_t stream);

// Floats of device scratch attention_backward needs (Σ_d dout·out per query row).
size_t attention_backward_scratch_floats(int B, int T, int NH);

// Accumulates dqkv [B, T, 3C] += the gradient of out for dout [B, T, C], from the forward's
// inputs, output and lse.
void attention_backward(DType dt, void* dqkv, float* scratch, const void* dout, const void* qkv, const void* out,
                        const float* lse, int B, int T, int C, int NH, cudaStream_t stream);

}  // namespace zt::cuda
