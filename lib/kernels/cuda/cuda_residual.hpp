#pragma once
// Residual connection on the GPU, fp32 or bf16 (sums in fp32, one rounding per output):
// out = a + b, and its backward da += dout, db += dout.
// Trick: none; llm.c's plain elementwise kernels with 16-byte loads when every pointer is aligned.
#include <cuda_runtime_api.h>

#include <cstddef>

#include "core/dtype.hpp"

namespace zt::cuda {

// out[i] = a[i] + b[i]; out may be a or b.
void residual_forward(DType dt, void* out, const void* a, const void* b, size_t n, cudaStream_t stream);
// da[i] += dout[i], then db[i] += dout[i] (either may be null).
void residual_backward(DType dt, void* da, void* db, const void* dout, size_t n, cudaStream_t stream);

}  // namespace zt::cuda
