#pragma once
// Fully connected layer: out = inp · W + bias over N rows (N = B·T).
#include "kernels/weight_layout.hpp"

namespace zt::cpu {

using zt::WeightLayout;

// out[N, OC] = inp[N, C] · W (+ bias[OC] when bias is not null). Overwrites out.
void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int C, int OC,
                    WeightLayout layout = WeightLayout::InputMajor);

// Accumulates the gradients of a forward call (each may be null to skip it):
//   dinp[N, C] += dout · Wᵀ,   dweight += inpᵀ · dout (in the weight's own layout),   dbias[OC] += Σ_rows dout.
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int C, int OC, WeightLayout layout = WeightLayout::InputMajor);

}  // namespace zt::cpu
