#pragma once
// SwiGLU, the llama family's MLP activation, over the packed gate and up projections:
// inp [N, 2F] holds gate [F] then up [F] in each row; out [N, F] = silu(gate) · up with
// silu(x) = x / (1 + exp(-x)); with Gate::GeluTanh, GeGLU: gelu(gate) · up, GELU's tanh form.
#include "kernels/model_ops.hpp"

namespace zt::cpu {

void swiglu_forward(float* out, const float* inp, int N, int F, Gate gate = Gate::Silu);
// Accumulates dinp [N, 2F]: d gate += dout · up · silu'(gate), d up += dout · silu(gate).
void swiglu_backward(float* dinp, const float* inp, const float* dout, int N, int F, Gate gate = Gate::Silu);

}  // namespace zt::cpu
