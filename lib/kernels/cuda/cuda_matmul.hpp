#pragma once
// Fully connected layer on the GPU through cuBLASLt: out[N, OC] = inp[N, C] · W (+ bias), with
// kernels/cpu/matmul.hpp's two weight layouts and its backward semantics (every gradient
// accumulates). fp32 tensors multiply in full fp32 (CUBLAS_COMPUTE_32F: no TF32, no emulation),
// so results match the CPU to fp32 rounding; bf16 tensors multiply with fp32 accumulation.
// Trick: row-major out = inp·W is column-major outᵀ = Wᵀ·inpᵀ, so every product is one cuBLASLt
// call on the buffers as they lie, the layout choosing only whether W is transposed. The bias rides
// in the GEMM's epilogue; in bf16, so does GELU (the epilogue writes both the GELU input, kept for
// backward, and its output, saving a pass over the activations). fp32 runs the GELU as its own
// kernel, the CPU's formula, to keep fp32 parity with the CPU. An epilogue that cuBLASLt has no
// algorithm for, or refuses when called (CUBLAS_STATUS_NOT_SUPPORTED), falls back to a plain GEMM
// and the matmul's own kernels, once per shape with a warning; ZT_CUBLASLT_EPILOGUES=0 keeps every
// product a plain GEMM from the start (the way to rule the epilogues out). The bias gradient is a
// deterministic column sum (column_sums.cuh), not cuBLASLt's BGRAD epilogue, whose summation order
// is not specified.
// One MatmulContext per stream: it owns the cuBLASLt handle and the workspace, allocated once, and
// each shape's descriptors, layouts and chosen algorithm, made by its first call and reused after
// (the pointers, which alone change from call to call, are set on the kept descriptor).
// With its own workspace on one stream, cuBLASLt gives the same bits run after run on one GPU
// model (cuBLAS's "Results reproducibility"), so every output here is deterministic.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>

#include "core/dtype.hpp"
#include "kernels/cpu/matmul.hpp"  // WeightLayout
#include "kernels/model_ops.hpp"   // GradInto

namespace zt::cuda {

using cpu::WeightLayout;

// Whether products fuse their bias and GELU into cuBLASLt's epilogues: ZT_CUBLASLT_EPILOGUES unset
// or 1, yes; 0, no. Throws zt::Error for any other value.
bool fused_epilogues_from_environment();

class MatmulContext {
public:
  static constexpr size_t kDefaultWorkspaceBytes = size_t(32) << 20;  // cuBLAS's advice for Hopper
  static constexpr size_t kBiasPartialFloats = size_t(2) << 20;       // bias-gradient partial sums

  // On the current device; calls must run on that device, on one stream at a time (they share
  // the workspace). Without fused_epilogues, the bias and the GELU run as kernels of their own.
  explicit MatmulContext(size_t workspace_bytes = kDefaultWorkspaceBytes,
                         bool fused_epilogues = fused_epilogues_from_environment());
  ~MatmulContext();
  MatmulContext(const MatmulContext&) = delete;
  MatmulContext& operator=(const MatmulContext&) = delete;

  struct Impl;
  Impl& impl() { return *impl_; }

private:
  std::unique_ptr<Impl> impl_;
};

// out[N, OC] = inp[N, C] · W (+ bias[OC] when bias is not null); overwrites out.
// With pre_gelu (an [N, OC] buffer): pre_gelu = inp · W + bias and out = gelu(pre_gelu), GPT-2's
// MLP input projection in one call.
void matmul_forward(MatmulContext& ctx, DType dt, void* out, const void* inp, const void* weight, const void* bias,
                    int N, int C, int OC, WeightLayout layout, cudaStream_t stream, void* pre_gelu = nullptr);

// The gradients of a forward call (each may be null to skip it): dinp[N, C] (+)= dout · Wᵀ as
// dinp_into says (cuBLASLt's beta), and, always accumulated, dweight += inpᵀ · dout (in the
// weight's own layout) and dbias[OC] += Σ_rows dout (summed in fp32 in a fixed order, then added once).
void matmul_backward(MatmulContext& ctx, DType dt, void* dinp, void* dweight, void* dbias, const void* dout,
                     const void* inp, const void* weight, int N, int C, int OC, WeightLayout layout,
                     cudaStream_t stream, GradInto dinp_into = GradInto::Accumulate);

// The backward of a projection whose input was gelu(pre) (GPT-2's MLP output projection) through
// that GELU: dpre (+)= gelu'(pre) · (dout · Wᵀ), and dweight += gelu_outᵀ · dout, dbias += Σ dout
// as matmul_backward. bf16 written over: the GELU gradient runs in cuBLASLt's epilogue on the
// product's fp32 result; otherwise dout · Wᵀ goes to dgelu ([N, C] scratch), then gelu_backward.
void matmul_backward_gelu(MatmulContext& ctx, DType dt, void* dpre, void* dgelu, void* dweight, void* dbias,
                          const void* dout, const void* gelu_out, const void* pre, const void* weight, int N, int C,
                          int OC, WeightLayout layout, cudaStream_t stream, GradInto dpre_into);

}  // namespace zt::cuda
