#pragma once
// The experts' GEMMs of a mixture-of-experts layer as one launch per product over every expert
// (a grouped GEMM), sized from the routing on the device: nothing is read back to the host, so a
// sparse layer queues the same work whatever the routing (and a CUDA graph can replay it).
// The routed rows lie grouped by expert (moe_group), expert e's rows [offsets[e], offsets[e+1]);
// expert e's weight is W_e = weight + e · stride elements, [OC, C] (WeightLayout::OutputMajor).
// fp32 or bf16 (dt), accumulated in fp32; bf16 on the tensor cores (mma.sync m16n8k16). Each output
// element is one thread's sum over k in order: the same inputs give the same bits, and dW adds
// no atomics. Tricks: 64 x 64 output tiles of 128 threads over 32-wide k slices in shared memory;
// a launch covers the row tiles every expert could need (R / 64 + E), the blocks past the real
// ones exit.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/dtype.hpp"
#include "kernels/model_ops.hpp"  // GradInto

namespace zt::cuda {

// The rows of experts [N, K] grouped by expert, experts in index order and tokens in order within
// each: offsets [E + 1] (expert e's rows [offsets[e], offsets[e+1]), offsets[E] = N·K), token [N·K]
// (each row's token) and row [N·K] (where slot n·K + j went).
void moe_group(int32_t* offsets, int32_t* token, int32_t* row, const int32_t* experts, int N, int E, int K,
               cudaStream_t stream);
// out[r] = in[r] · W_eᵀ for each of expert e's rows r, [R, OC] from [R, C]; written over.
void moe_expert_forward(DType dt, void* out, const void* in, const void* weight, size_t stride, const int32_t* offsets,
                        int E, int R, int C, int OC, cudaStream_t stream);
// dinp[r] (+)= dout[r] · W_e (null: skipped); dweight_e += Σ_r dout[r]ᵀ · in[r] over expert e's rows
// (dweight + e · stride; null: skipped), an expert without rows left as it was.
void moe_expert_backward(DType dt, void* dinp, void* dweight, const void* dout, const void* in, const void* weight,
                         size_t stride, const int32_t* offsets, int E, int R, int C, int OC, GradInto dinp_into,
                         cudaStream_t stream);

}  // namespace zt::cuda
