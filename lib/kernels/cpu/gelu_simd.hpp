#pragma once
// GELU's tanh form and its derivative on 16 lanes: what GPT-2's MLP and GeGLU's gate compute.
#include "kernels/cpu/simd.hpp"

namespace zt::cpu {

// 0.5·(1 + tanh(u)) = sigmoid(2u), so gelu(x) = x / (1 + exp(-2u)): the same function without the
// cancellation of 1 + tanh(u) for negative x, and with one exp. 2u is clamped to ±80, where the
// sigmoid is 1 or 1.8e-35 to fp32 precision, so no intermediate becomes subnormal.
inline f32x16 exp_minus_2u(f32x16 x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f, kCubic = 0.044715f;
  const f32x16 two_u = 2.0f * kSqrt2OverPi * (x + kCubic * x * x * x);
  return exp_fast(-vmin(vmax(two_u, splat(-80.0f)), splat(80.0f)));
}

inline f32x16 gelu(f32x16 x) { return x / (1.0f + exp_minus_2u(x)); }

// d/dx [x · sigmoid(2u)] = s + x · s · (1 - s) · 2 · du/dx, with s = sigmoid(2u) and 1 - s = e · s
inline f32x16 gelu_grad(f32x16 x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f, kCubic = 0.044715f;
  const f32x16 e = exp_minus_2u(x);
  const f32x16 s = 1.0f / (1.0f + e);
  const f32x16 du_dx = kSqrt2OverPi * (1.0f + 3.0f * kCubic * x * x);
  return s + 2.0f * x * s * (e * s) * du_dx;
}

}  // namespace zt::cpu
