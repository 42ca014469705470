#pragma once
// GELU's tanh form and its derivative on the GPU: GPT-2's MLP and GeGLU's gate.
#include "kernels/cuda/common.cuh"

namespace zt::cuda {

// The formula is kernels/cpu/gelu.cpp's: 0.5·(1 + tanh(u)) = sigmoid(2u), so gelu(x) = x / (1 +
// exp(-2u)), with no cancellation in 1 + tanh(u) for negative x and one exp; 2u is clamped to ±80,
// where the sigmoid is 1 or 1.8e-35 in fp32.
__device__ __forceinline__ float exp_minus_2u(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f, kCubic = 0.044715f;
  const float two_u = 2.0f * kSqrt2OverPi * (x + kCubic * x * x * x);
  return expf(-fminf(fmaxf(two_u, -80.0f), 80.0f));
}

__device__ __forceinline__ float gelu(float x) { return x / (1.0f + exp_minus_2u(x)); }

// d/dx [x·s] = s + x·s·(1 - s)·2·du/dx with s = sigmoid(2u) and 1 - s = e·s
__device__ __forceinline__ float gelu_grad(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f, kCubic = 0.044715f;
  const float e = exp_minus_2u(x);
  const float s = 1.0f / (1.0f + e);
  const float du_dx = kSqrt2OverPi * (1.0f + 3.0f * kCubic * x * x);
  return s + 2.0f * x * s * (e * s) * du_dx;
}

}  // namespace zt::cuda
