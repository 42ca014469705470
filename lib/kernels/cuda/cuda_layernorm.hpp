#pragma once
// LayerNorm over rows of C channels on the GPU (eps 1e-5, kernels/cpu/layernorm.hpp's semantics),
// fp32 or bf16 tensors; mean and rstd are always fp32 and all arithmetic is fp32.
// Trick (llm.c's layernorm kernels): one warp per row, reading the row with 16-byte loads and
// reducing with warp shuffles; the variance takes a second pass over the row (still in L1), so it
// does not lose precision to a large mean. Backward's dweight and dbias are column sums over all
// rows: per-block partials over fixed row chunks, then a fixed-order reduction (column_sums.cuh),
// so the gradients are deterministic without atomics.
// Vector loads need C % 8 == 0 and 16-byte aligned pointers; otherwise a scalar path runs.
#include <cuda_runtime_api.h>

#include <cstddef>

#include "core/dtype.hpp"
#include "kernels/model_ops.hpp"  // GradInto

namespace zt::cuda {

// out[N, C] = (inp - mean) · rstd · weight + bias; saves mean[N] and rstd[N].
void layernorm_forward(DType dt, void* out, float* mean, float* rstd, const void* inp, const void* weight,
                       const void* bias, int N, int C, cudaStream_t stream);

// residual[N, C] = a + b (rounded to the dtype, as residual_forward stores it), then
// out = layernorm(residual) as layernorm_forward computes it: the same bits as the two calls, with
// the residual read once (a transformer block's second residual and its LayerNorm).
void residual_layernorm_forward(DType dt, void* residual, void* out, float* mean, float* rstd, const void* a,
                                const void* b, const void* weight, const void* bias, int N, int C,
                                cudaStream_t stream);

// Floats of device scratch layernorm_backward needs (the column partials of dweight and dbias).
size_t layernorm_backward_scratch_floats(int N, int C);

// dinp[N, C] (+)= ∂/∂inp, and accumulates dweight[C] += Σ_rows dout·norm and dbias[C] += Σ_rows
// dout (dweight and dbias may be null to skip them).
void layernorm_backward(DType dt, void* dinp, void* dweight, void* dbias, float* scratch, const void* dout,
                        const void* inp, const void* weight, const float* mean, const float* rstd, int N, int C,
                        cudaStream_t stream, GradInto dinp_into = GradInto::Accumulate);

}  // namespace zt::cuda
