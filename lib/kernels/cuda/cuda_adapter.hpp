#pragma once
// The elementwise pieces of LoRA adapters on the GPU (ModelOps::scale_columns and ModelOps::dropout
// say what they compute), fp32 or bf16 tensors, fp32 arithmetic, one thread per element: a scaled
// block of columns added to or written over a slice of a packed projection, and dropout by the
// hashed mask of kernels/dropout_mask.hpp, which drops the elements the CPU drops.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.hpp"
#include "kernels/model_ops.hpp"  // GradInto

namespace zt::cuda {

void scale_columns(DType dt, void* dst, int dst_ld, const void* src, int src_ld, int N, int width, float scale,
                   GradInto into, cudaStream_t stream);
void dropout(DType dt, void* out, const void* inp, size_t n, float p, uint64_t seed, GradInto into,
             cudaStream_t stream);

}  // namespace zt::cuda
