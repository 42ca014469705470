#pragma once
// Rotary position embeddings on the q and k heads of a packed grouped-query projection
// qkv [B, T, (NH + 2·NKV)·hd], in place, in Hugging Face's rotate-half convention: with
// h = hd/2, i < h, c = cos[t, i] and s = sin[t, i] (tables [T, h]),
//   x'[i] = x[i]·c - x[i + h]·s,   x'[i + h] = x[i + h]·c + x[i]·s.
// The v heads are left alone. The position is t, or t - begin of the token's sample when segments
// [B, T] (core/token_segment.hpp) say where the samples of a packed row lie.
#include "core/token_segment.hpp"

namespace zt::cpu {

void rope_forward(float* qkv, const float* cos, const float* sin, int B, int T, int NH, int NKV, int hd,
                  const TokenSegment* segments = nullptr);
// The transpose: rotates the gradient of q and k back, in place.
void rope_backward(float* dqkv, const float* cos, const float* sin, int B, int T, int NH, int NKV, int hd,
                   const TokenSegment* segments = nullptr);

}  // namespace zt::cpu
