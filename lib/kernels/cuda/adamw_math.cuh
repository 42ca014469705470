#pragma once
// One AdamW element, for host and device, with lib/optim/adamw.cpp's operations in its order: each
// multiply, add, divide and square root rounds once (IEEE, nearest even), and a fused multiply-add
// appears exactly where adamw.cpp calls std::fma (PyTorch's AVX2 kernels). On the device every step
// is an explicit _rn intrinsic, which nvcc never contracts; so the GPU does not differ from the CPU
// anywhere, and its results match adamw_update bit for bit.
#include <cmath>
#include <cstdint>

#include "kernels/cuda/dtype_bits.cuh"  // ZT_HOST_DEVICE
#include "optim/adamw_scalars.hpp"

namespace zt::cuda {

namespace adamw_ops {
#if defined(__CUDA_ARCH__) || defined(ZT_CUDA_EMULATION)  // device code, or the GPU-less tests' build of it
__device__ __forceinline__ float fma(float a, float b, float c) { return __fmaf_rn(a, b, c); }
__device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float div(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ float sqrt(float a) { return __fsqrt_rn(a); }
#else
// nvcc's host pass (never called there): compiled without contraction, as lib/optim is.
inline float fma(float a, float b, float c) { return std::fma(a, b, c); }
inline float mul(float a, float b) { return a * b; }
inline float add(float a, float b) { return a + b; }
inline float div(float a, float b) { return a / b; }
inline float sqrt(float a) { return std::sqrt(a); }
#endif
}  // namespace adamw_ops

// p, m, v updated in place from gradient g; decay: this element is in a weight-decay range.
ZT_HOST_DEVICE inline void adamw_element(float& p, float& m, float& v, float g, const AdamWScalars& s, bool decay) {
  namespace op = adamw_ops;
  float w = p;
  if (decay && s.l2_mode) g = op::fma(w, s.l2, g);
  if (decay && s.decoupled) w = op::mul(w, s.param_scale);
  const float mi = op::fma(g, s.one_minus_beta1, op::mul(m, s.beta1));
  const float vi = op::fma(op::mul(s.one_minus_beta2, g), g, op::mul(v, s.beta2));
  const float denom = op::add(op::div(op::sqrt(vi), s.bias_correction2_sqrt), s.eps);
  p = op::add(w, op::div(op::mul(s.neg_step_size, mi), denom));
  m = mi;
  v = vi;
}

}  // namespace zt::cuda
