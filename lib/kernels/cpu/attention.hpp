#pragma once
// Causal self-attention over a packed projection, grouped-query in general:
//   qkv [B, T, (NH + 2·NKV)·hd]: per token the NH q heads, then the NKV k heads, then the NKV v
//        heads, hd channels each; q head h attends with k and v head h / (NH / NKV). GPT-2's
//        multi-head attention is NKV = NH, hd = C / NH (qkv [B, T, 3C]).
//   out [B, T, NH·hd]: per token the heads' outputs side by side (the input of the output projection).
//   att [B, NH, T, T]: softmax probabilities, row t attends to 0..t (entries past t are 0); the
//   only T x T tensor backward needs.
// Scores are computed per (batch, head) as GEMMs through oneDNN; OpenMP spreads the pairs.
#include <cstddef>

namespace zt::cpu {

void gqa_attention_forward(float* out, float* att, const float* qkv, int B, int T, int NH, int NKV, int hd);
inline void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH) {
  gqa_attention_forward(out, att, qkv, B, T, NH, NH, C / NH);
}

// Generation: the T new tokens' packed qkv at positions [pos, pos + T) against a key/value cache
// [B, S, NKV·hd] per k and v: writes their k and v heads into rows [pos, pos + T), then attends as
// gqa_attention_forward does (the same products and softmax, over cache rows [0, pos + t]).
void gqa_attention_cached_forward(float* out, float* k_cache, float* v_cache, const float* qkv, int B, int T, int pos,
                                  int S, int NH, int NKV, int hd);

// Elements of the scratch buffer attention_backward needs.
inline size_t attention_backward_scratch_size(int B, int T, int NH) { return size_t(B) * NH * T * T; }

// Accumulates dqkv [B, T, (NH + 2·NKV)·hd] from dout [B, T, NH·hd]; scratch holds
// attention_backward_scratch_size floats. The gradients of a k or v head sum its q heads' in
// head order, whatever the thread count.
void gqa_attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* att, int B,
                            int T, int NH, int NKV, int hd);
inline void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* att,
                               int B, int T, int C, int NH) {
  gqa_attention_backward(dqkv, scratch, dout, qkv, att, B, T, NH, NH, C / NH);
}

}  // namespace zt::cpu
