#pragma once
// One AdamW element, for host and device, with lib/optim/adamw.cpp's operations in its order: each
// multiply, add, divide and square root rounds once (IEEE, nearest even), and a fused multiply-add
// appears exactly where adamw.cpp calls std::fma (PyTorch's AVX2 kernels). On the device every step
// is an explicit _rn intrinsic, which nvcc never contracts; so the GPU does not differ from the CPU
// anywhere, and its results match adamw_update bit for bit.
#include <cmath>
#include <cstdint>

#include "kernels/cuda/adamw.hpp"
#include "kernels/cuda/dtype_bits.cuh"  // ZT_HOST_DEVICE

namespace zt::cuda {

// Per-step constants, formed in double and rounded to float as adamw.cpp forms them.
struct AdamWScalars {
  float param_scale;  // 1 - lr·wd (decoupled decay)
  float l2;           // wd (L2 decay)
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
  float bias_correction2_sqrt;
  float neg_step_size;  // -lr / (1 - beta1^step)
  float eps;
  bool l2_mode;    // decay ranges: g += wd·p before the moments (Adam with L2)
  bool decoupled;  // decay ranges: p *= 1 - lr·wd before the update (AdamW)
};

// The constants for one step (from 1) as adamw.cpp forms them for a decay range; ranges without
// decay skip param_scale and l2 (adamw_element's decay argument).
inline AdamWScalars adamw_scalars(const AdamWConfig& h, int64_t step) {
  const double lr = h.lr, wd = h.weight_decay;
  const double beta1 = h.beta1, beta2 = h.beta2;
  AdamWScalars s;
  s.param_scale = float(1.0 - lr * wd);
  s.l2 = float(wd);
  s.beta1 = h.beta1;
  s.one_minus_beta1 = float(1.0 - beta1);
  s.beta2 = h.beta2;
  s.one_minus_beta2 = float(1.0 - beta2);
  const double bc1 = h.bias_correction ? 1.0 - std::pow(beta1, double(step)) : 1.0;
  const double bc2 = h.bias_correction ? 1.0 - std::pow(beta2, double(step)) : 1.0;
  s.bias_correction2_sqrt = float(std::sqrt(bc2));
  s.neg_step_size = float(-(lr / bc1));
  s.eps = h.eps;
  s.l2_mode = !h.adam_w_mode && wd != 0.0;
  s.decoupled = h.adam_w_mode && wd != 0.0;
  return s;
}

namespace adamw_ops {
#ifdef __CUDA_ARCH__
__device__ __forceinline__ float fma(float a, float b, float c) { return __fmaf_rn(a, b, c); }
__device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float div(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ float sqrt(float a) { return __fsqrt_rn(a); }
#else
// Host: compiled without contraction (ISO C++ mode, or -ffp-contract=off), as lib/optim is.
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
