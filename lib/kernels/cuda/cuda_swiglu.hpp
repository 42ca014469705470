#pragma once
// SwiGLU, the llama family's MLP activation, on the GPU (kernels/cpu/swiglu.hpp's semantics), fp32
// or bf16 tensors, fp32 arithmetic: inp [N, 2F] holds gate [F] then up [F] in each row (the packed
// gate_proj and up_proj); out [N, F] = silu(gate) · up with silu(x) = x / (1 + exp(-x)), exp's
// argument clamped to ±80 as the CPU does.
// Trick: none beyond llm.c's plain elementwise kernel, one thread per 8 outputs with 16-byte loads
// where F % 8 == 0 and the pointers are aligned. No GEMM epilogue: cuBLASLt's epilogues (bias,
// GELU, ReLU) act on one element of the product at a time, and SwiGLU pairs two columns F apart.
// Backward writes its gradient over the buffer when asked (GradInto), which saves the clearing
// pass and the read of an accumulating kernel: two passes over [N, 2F].
#include <cuda_runtime_api.h>

#include "core/dtype.hpp"
#include "kernels/model_ops.hpp"  // GradInto

namespace zt::cuda {

// gate GeluTanh: GeGLU, gelu(gate) · up with GELU's tanh form.
void swiglu_forward(DType dt, void* out, const void* inp, int N, int F, cudaStream_t stream, Gate gate = Gate::Silu);
// dinp [N, 2F] (+)= d gate = dout · up · silu'(gate), d up = dout · silu(gate).
void swiglu_backward(DType dt, void* dinp, const void* inp, const void* dout, int N, int F, cudaStream_t stream,
                     GradInto dinp_into = GradInto::Accumulate, Gate gate = Gate::Silu);

}  // namespace zt::cuda
