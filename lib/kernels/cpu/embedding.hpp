#pragma once
// Token + position embedding: out[b, t] = wte[tokens[b, t]] + wpe[t], or the token's row alone
// when wpe is null (rotary models have no learned positions).
#include <cstdint>

namespace zt::cpu {

// tokens [B, T] must index rows of wte (the caller checks the range); wte [*, C], wpe [>= T, C] or null.
void embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B, int T, int C);

// Accumulates dwte[tokens[b, t]] += dout[b, t] and dwpe[t] += dout[b, t] (either may be null).
void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B, int T, int C);

}  // namespace zt::cpu
