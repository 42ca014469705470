#pragma once
// Rotary position embeddings on the GPU (kernels/cpu/rope.hpp's semantics: Hugging Face's
// rotate-half convention), in place on the q and k heads of a packed grouped-query projection
// qkv [B, T, (NH + 2·NKV)·hd]: with h = hd/2, i < h, c = cos[t, i], s = sin[t, i] (fp32 tables
// [>= T, h]),   x'[i] = x[i]·c - x[i + h]·s,   x'[i + h] = x[i + h]·c + x[i]·s.   fp32 or bf16
// tensors, fp32 arithmetic; the v heads are untouched. With segments [B, T] (device memory,
// core/token_segment.hpp) the position is t - begin of the token's sample in a packed row.
// Trick: none beyond llm.c's plain elementwise kernel: one thread per 8 pairs (i, i + h) of one head,
// 16-byte loads of both halves and of the tables where h % 8 == 0 and the pointers are aligned.
// Why a pass of its own and not the attention kernel's tile loads: at Llama 3.2 1B shapes the pass
// moves 4 bytes per q and k channel and token each way (bf16, read and write, forward and backward),
// about 1% of a training step at T = 1024 and less at longer T (bench/cuda/cost_table.py), while
// rotating inside attention would redo the rotation of each key tile for every query tile that
// reads it, add the tables to the tile loads of the three attention kernels, and tie the rotate-half
// pairs to the tensor-core fragment layout.
#include <cuda_runtime_api.h>

#include "core/dtype.hpp"
#include "core/token_segment.hpp"

namespace zt::cuda {

void rope_forward(DType dt, void* qkv, const float* cos, const float* sin, int B, int T, int NH, int NKV, int hd,
                  cudaStream_t stream, const TokenSegment* segments = nullptr);
// The transpose (rotation by the negative angles): the gradient of q and k rotated back, in place.
void rope_backward(DType dt, void* dqkv, const float* cos, const float* sin, int B, int T, int NH, int NKV, int hd,
                   cudaStream_t stream, const TokenSegment* segments = nullptr);

}  // namespace zt::cuda
