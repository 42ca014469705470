#pragma once
// GELU in GPT-2's tanh form (gelu_new) over n elements on the GPU, fp32 or bf16, computed in fp32
// with kernels/cpu/gelu.cpp's formula: x / (1 + exp(-2u)), u = √(2/π)·(x + 0.044715·x³).
// Trick: none beyond llm.c's plain elementwise kernel; each thread moves 8 elements with 16-byte
// loads when every pointer is 16-byte aligned, and one element at a time otherwise.
// The forward GELU can also run fused into the matmul that feeds it (matmul.hpp, pre_gelu).
#include <cuda_runtime_api.h>

#include <cstddef>

#include "core/dtype.hpp"
#include "kernels/model_ops.hpp"  // GradInto

namespace zt::cuda {

// out[i] = gelu(inp[i]); out may be inp.
void gelu_forward(DType dt, void* out, const void* inp, size_t n, cudaStream_t stream);
// dinp[i] (+)= gelu'(inp[i]) · dout[i]
void gelu_backward(DType dt, void* dinp, const void* inp, const void* dout, size_t n, cudaStream_t stream,
                   GradInto into = GradInto::Accumulate);

}  // namespace zt::cuda
