#pragma once
// Causal self-attention over a packed projection, grouped-query in general, flash-attention style:
//   qkv [B, T, (NH + 2·NKV)·hd]: per token the NH q heads, then the NKV k heads, then the NKV v
//        heads, hd channels each; q head h attends with k and v head h / (NH / NKV). GPT-2's
//        multi-head attention is NKV = NH, hd = C / NH (qkv [B, T, 3C]).
//   out [B, T, NH·hd]: per token the heads' outputs side by side (the input of the output projection).
//   lse [B, NH, T]: log Σ_j exp(score) of each query row, all that backward keeps besides qkv and
//   out: it recomputes the probabilities, so no T x T matrix outlives a block of query rows.
//   segments [B, T]: the sample of each token (core/token_segment.hpp): a query attends to the keys
//   of its own sample only; null: every row is one sample.
//   window: sliding-window attention, query t attends to the keys (t - window, t] only (the band
//   of transformers' sliding layers, ANDed with the sample); 0: every earlier key.
//   scores: the scale of q·k (default 1/sqrt(hd)) and the soft-capping before the mask
//   (kernels/model_ops.hpp).
// Query rows go in blocks of kAttentionRows, cut where a sample ends: a block's scores against the
// keys its rows attend to (from its first row's first key: with a window, the work grows with
// T·window, not T²) are GEMMs through oneDNN into the scratch, then the softmax row by row.
// OpenMP spreads the (batch, head) pairs, each with its own part of the scratch.
#include <algorithm>
#include <cstddef>

#include "core/token_segment.hpp"
#include "kernels/model_ops.hpp"

namespace zt::cpu {

constexpr int kAttentionRows = 64;  // query rows per block

// The keys query row t attends to, [begin, end): causal inside its sample, [begin of the sample, t];
// `row` is the row's segments, null for a row of one sample ([0, t]); a window > 0 keeps the last
// `window` of them (t - window, t]. Every kernel below asks here, and only here; a row's range must
// not start or end before the previous row's.
struct KeyRange {
  int begin, end;
};
inline KeyRange key_range(const TokenSegment* row, int t, int window) {
  const int sample = row ? row[t].begin : 0;
  return {window > 0 ? std::max(sample, t - window + 1) : sample, t + 1};
}

// Floats of scratch the forward and the backward need: two blocks of scores per (batch, head).
inline size_t attention_scratch_floats(int B, int T, int NH) {
  return 2 * size_t(B) * size_t(NH) * size_t(std::min(T, kAttentionRows)) * size_t(T);
}

void gqa_attention_forward(float* out, float* lse, float* scratch, const float* qkv, int B, int T, int NH, int NKV,
                           int hd, const TokenSegment* segments = nullptr, int window = 0,
                           AttentionScores scores = {});
inline void attention_forward(float* out, float* lse, float* scratch, const float* qkv, int B, int T, int C, int NH,
                              const TokenSegment* segments = nullptr) {
  gqa_attention_forward(out, lse, scratch, qkv, B, T, NH, NH, C / NH, segments);
}

// Generation: the T new tokens' packed qkv at positions [pos, pos + T) against a key/value cache
// [B, S, NKV·hd] per k and v, a ring (position p at row p % S): attends as gqa_attention_forward
// does (the same products and softmax) over positions [0, pos + t], the last `window` of them with
// a window, the earlier ones read from the ring and the new ones from qkv (each sequence one
// sample); then writes the new tokens' k and v heads into their rows. The ring must hold the past
// the queries read: S >= pos without a window, S >= min(pos, window - 1) with one.
void gqa_attention_cached_forward(float* out, float* k_cache, float* v_cache, const float* qkv, int B, int T, int pos,
                                  int S, int NH, int NKV, int hd, int window = 0, AttentionScores scores = {});

// Accumulates dqkv [B, T, (NH + 2·NKV)·hd] from dout [B, T, NH·hd], the forward's out and lse.
// The gradients of a k or v head sum its q heads' in head order, whatever the thread count.
void gqa_attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* out,
                            const float* lse, int B, int T, int NH, int NKV, int hd,
                            const TokenSegment* segments = nullptr, int window = 0, AttentionScores scores = {});
inline void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* out,
                               const float* lse, int B, int T, int C, int NH, const TokenSegment* segments = nullptr) {
  gqa_attention_backward(dqkv, scratch, dout, qkv, out, lse, B, T, NH, NH, C / NH, segments);
}

}  // namespace zt::cpu
