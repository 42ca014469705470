#pragma once
// GELU's tanh form and its derivative on 16 lanes: what GPT-2's MLP and GeGLU's gate compute
// (the formula: kernels/gelu_tanh.hpp).
#include "kernels/cpu/simd.hpp"
#include "kernels/gelu_tanh.hpp"

namespace zt::cpu {

inline f32x16 exp_minus_2u(f32x16 x) {
  using gelu_tanh::kClamp;
  return exp_fast(-vmin(vmax(gelu_tanh::two_u(x), splat(-kClamp)), splat(kClamp)));
}

inline f32x16 gelu(f32x16 x) { return gelu_tanh::value(x, exp_minus_2u(x)); }
inline f32x16 gelu_grad(f32x16 x) { return gelu_tanh::grad(x, exp_minus_2u(x)); }

}  // namespace zt::cpu
