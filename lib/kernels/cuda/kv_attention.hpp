#pragma once
// Attention of new positions against a key/value cache on the GPU (generation): the semantics of
// ModelOps::attention_cached_forward. qkv [B, T, (NH + 2·NKV)·hd] holds the packed projection of
// T new tokens per sequence at positions [pos, pos + T); k_cache and v_cache [B, S, NKV·hd] are
// rings, position p at row p % S. Query t of head h attends to positions [0, pos + t] of key/value
// head h / (NH / NKV) (with a window > 0, the last `window` of them: sliding-window attention), those
// before pos read from the rings, the new ones from qkv; then the new tokens' k and v heads are
// written into their rows. out [B, T, NH·hd]. fp32 or bf16 tensors
// (the cache holds the model's dtype); scores, softmax and sums in fp32. hd up to 256.
// Trick: one block per (query, head, sequence), decoding's shape (one query against a long
// cache). The block walks the cache in tiles of one key per thread and folds each tile into a
// running (max, sum, output) — the online softmax — so no row of scores is stored; a thread owns
// output channels d and d + 128. Reductions in a fixed order: the same inputs give the same bits.
#include <cuda_runtime_api.h>

#include "core/dtype.hpp"
#include "kernels/model_ops.hpp"  // AttentionScores

namespace zt::cuda {

constexpr int kCachedAttentionMaxHeadSize = 256;

void attention_cached_forward(DType dt, void* out, void* k_cache, void* v_cache, const void* qkv, int B, int T,
                              int pos, int S, int NH, int NKV, int hd, int window, cudaStream_t stream,
                              AttentionScores scores = {});

}  // namespace zt::cuda
