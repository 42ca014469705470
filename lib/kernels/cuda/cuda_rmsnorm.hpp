#pragma once
// RMSNorm on the GPU (kernels/cpu/rmsnorm.hpp's semantics, LlamaRMSNorm in fp32): y = x · rstd ·
// weight with rstd = 1 / sqrt(mean(x²) + eps), over rows of C channels, and the same per head of a
// packed grouped-query projection (Qwen3's q_norm and k_norm). fp32 or bf16 tensors; rstd is
// always fp32 and all arithmetic is fp32.
// Trick (llm.c's layernorm kernels, one statistic fewer): one warp per row, or per head of a qkv
// row, with 16-byte loads and warp-shuffle sums; the head norms and the copy of the v heads are one
// kernel over every head of the row. The weight gradients are column sums over all rows (heads):
// per-block partials over fixed row chunks, then a fixed-order reduction (column_sums.cuh), so they
// are deterministic without atomics.
// Vector loads need the row (head) width % 8 == 0 and 16-byte aligned pointers; otherwise a scalar
// path runs.
#include <cuda_runtime_api.h>

#include <cstddef>

#include "core/dtype.hpp"
#include "kernels/model_ops.hpp"  // GradInto

namespace zt::cuda {

// out[N, C] = inp · rstd · weight; saves rstd[N].
// weight_offset (every function here): scale by weight_offset + weight (Gemma's norms: 1).
void rmsnorm_forward(DType dt, void* out, float* rstd, const void* inp, const void* weight, int N, int C, float eps,
                     cudaStream_t stream, float weight_offset = 0.0f);

// residual[N, C] = a + b (rounded to the dtype, as residual_forward stores it), then out =
// rmsnorm(residual) as rmsnorm_forward computes it: the same bits as the two calls, with the
// residual read once (a llama block's second residual and its norm).
void residual_rmsnorm_forward(DType dt, void* residual, void* out, float* rstd, const void* a, const void* b,
                              const void* weight, int N, int C, float eps, cudaStream_t stream,
                              float weight_offset = 0.0f);

// Floats of device scratch rmsnorm_backward needs (the column partials of dweight).
size_t rmsnorm_backward_scratch_floats(int N, int C);

// dinp[N, C] (+)= ∂/∂inp as dinp_into says, and dweight[C] += Σ_rows dout · inp · rstd (dweight
// may be null to skip it, and then scratch too).
void rmsnorm_backward(DType dt, void* dinp, void* dweight, float* scratch, const void* dout, const void* inp,
                      const void* weight, const float* rstd, int N, int C, cudaStream_t stream,
                      GradInto dinp_into = GradInto::Accumulate, float weight_offset = 0.0f);

// qkv [N, (NH + 2·NKV)·hd]: out gets the q heads normalised with q_weight[hd], the k heads with
// k_weight[hd], the v heads copied; rstd [N, NH + NKV]. out must not be qkv.
void qk_norm_forward(DType dt, void* out, float* rstd, const void* qkv, const void* q_weight, const void* k_weight,
                     int N, int NH, int NKV, int hd, float eps, cudaStream_t stream, float weight_offset = 0.0f);

// Floats of device scratch qk_norm_backward needs: 2·hd·⌈N / 256⌉, rows per partial sum growing with
// NH to fit (at most rmsnorm_backward_scratch_floats(N, C) when hd <= C).
size_t qk_norm_backward_scratch_floats(int N, int hd);

// dqkv (+)= the gradient through the norms (v heads passed through) as dqkv_into says, and
// dq_weight, dk_weight [hd] += their column sums (either may be null).
void qk_norm_backward(DType dt, void* dqkv, void* dq_weight, void* dk_weight, float* scratch, const void* dout,
                      const void* qkv, const void* q_weight, const void* k_weight, const float* rstd, int N, int NH,
                      int NKV, int hd, cudaStream_t stream, GradInto dqkv_into = GradInto::Accumulate,
                      float weight_offset = 0.0f);

}  // namespace zt::cuda
