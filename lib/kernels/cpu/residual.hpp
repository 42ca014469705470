#pragma once
// Residual connection: out = a + b.
#include <cstddef>

namespace zt::cpu {

void residual_forward(float* out, const float* a, const float* b, size_t n);
// da += dout and db += dout (either may be null)
void residual_backward(float* da, float* db, const float* dout, size_t n);

}  // namespace zt::cpu
