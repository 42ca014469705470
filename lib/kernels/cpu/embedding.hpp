#pragma once
// Token + position embedding: out[b, t] = wte[tokens[b, t]] + wpe[position of (b, t)], or the
// token's row alone when wpe is null (rotary models have no learned positions). The position is t,
// or t - begin of the token's sample when segments [B, T] (core/token_segment.hpp) say where the
// samples of a packed row lie.
#include <cstdint>

#include "core/token_segment.hpp"

namespace zt::cpu {

// tokens [B, T] must index rows of wte (the caller checks the range); wte [*, C], wpe [>= T, C] or null.
void embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B, int T, int C,
                       const TokenSegment* segments = nullptr);

// Accumulates dwte[tokens[b, t]] += dout[b, t] and dwpe[position] += dout[b, t] (either may be
// null), in the order of (b, t).
void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B, int T, int C,
                        const TokenSegment* segments = nullptr);

}  // namespace zt::cpu
