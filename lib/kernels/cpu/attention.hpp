#pragma once
// Causal multi-head self-attention over a packed qkv projection.
//   qkv [B, T, 3C]: per token q (C), k (C), v (C); head h uses channels [h·hs, (h+1)·hs), hs = C / NH.
//   out [B, T, C]:  per token the heads' outputs side by side (the input of attn.c_proj).
//   att [B, NH, T, T]: softmax probabilities, row t attends to 0..t (entries past t are 0); the
//   only T x T tensor backward needs.
// Scores are computed per (batch, head) as GEMMs through oneDNN; OpenMP spreads the pairs.
#include <cstddef>

namespace zt::cpu {

void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH);

// Elements of the scratch buffer attention_backward needs.
inline size_t attention_backward_scratch_size(int B, int T, int NH) { return size_t(B) * NH * T * T; }

// Accumulates dqkv [B, T, 3C] from dout [B, T, C]; scratch holds attention_backward_scratch_size floats.
void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* att, int B,
                        int T, int C, int NH);

}  // namespace zt::cpu
