#pragma once
// GELU in GPT-2's tanh form (gelu_new): 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
#include <cstddef>

namespace zt::cpu {

void gelu_forward(float* out, const float* inp, size_t n);
// dinp += gelu'(inp) · dout
void gelu_backward(float* dinp, const float* inp, const float* dout, size_t n);

}  // namespace zt::cpu
