#pragma once
// GELU's tanh form and its derivative on the GPU: GPT-2's MLP and GeGLU's gate (the formula, the
// CPU's too: kernels/gelu_tanh.hpp).
#include "kernels/cuda/common.cuh"
#include "kernels/gelu_tanh.hpp"

namespace zt::cuda {

__device__ __forceinline__ float exp_minus_2u(float x) {
  using gelu_tanh::kClamp;
  return expf(-fminf(fmaxf(gelu_tanh::two_u(x), -kClamp), kClamp));
}

__device__ __forceinline__ float gelu(float x) { return gelu_tanh::value(x, exp_minus_2u(x)); }
__device__ __forceinline__ float gelu_grad(float x) { return gelu_tanh::grad(x, exp_minus_2u(x)); }

}  // namespace zt::cuda
