#pragma once
// Token + position embedding on the GPU (kernels/cpu/embedding.hpp's semantics), fp32 or bf16:
// out[b, t] = wte[tokens[b, t]] + wpe[t] (wpe optional), and its backward into dwte and dwpe.
// Trick: the backward of dwte is deterministic without atomics. The positions are sorted by token
// (CUB's radix sort, which is stable, so each token's positions stay in increasing order); then one
// block per run of equal tokens adds that token's rows of dout in position order onto its dwte row,
// the same additions in the same order as the CPU's loop, so fp32 results equal the CPU's bit for
// bit. dwpe: one thread per (position, 8 channels) adds the batch rows in order, and in a packed
// row (segments [B, T] in device memory, core/token_segment.hpp: positions restart at 0 with each
// sample) the samples long enough to reach the position, in order: the CPU's order again.
// Vector loads need C % 8 == 0 and 16-byte aligned pointers; otherwise a scalar path runs.
// A token outside [0, V) gives a NaN row in forward and is skipped in backward: no kernel indexes
// outside wte.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/dtype.hpp"
#include "core/token_segment.hpp"

namespace zt::cuda {

// out[B·T, C] = wte[tokens] + wpe[p], p = t (or t - begin of the token's sample with segments);
// wte [V, C], wpe [>= T, C] or null (no learned positions: out is the token's row), tokens [B, T].
void embedding_forward(DType dt, void* out, const int32_t* tokens, const void* wte, const void* wpe, int B, int T,
                       int C, int V, cudaStream_t stream, const TokenSegment* segments = nullptr);

// Bytes of device workspace embedding_backward needs for B·T tokens (asks CUB, so it needs the
// device: call it once when planning buffers).
size_t embedding_backward_workspace_bytes(int B, int T);

// Accumulates dwte[tokens[b, t]] += dout[b, t] and dwpe[p] += dout[b, t] (either may be null).
// workspace: embedding_backward_workspace_bytes(B, T) bytes, aligned to 256 (cudaMalloc's).
void embedding_backward(DType dt, void* dwte, void* dwpe, void* workspace, size_t workspace_bytes, const void* dout,
                        const int32_t* tokens, int B, int T, int C, int V, cudaStream_t stream,
                        const TokenSegment* segments = nullptr);

}  // namespace zt::cuda
