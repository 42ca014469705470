#pragma once
// fp32 values rounded in place to what a 16-bit type holds (VectorOps::round_to on the GPU), with
// core/dtype.hpp's exact round-to-nearest-even steps (dtype_bits.cuh): the CPU's bits for every
// value, NaN payloads included.
// Trick: none; one thread per 8 elements with 16-byte loads when x is 16-byte aligned.
#include <cuda_runtime_api.h>

#include <cstddef>

#include "core/dtype.hpp"

namespace zt::cuda {

// x[i] = float(type(x[i])); nothing for fp32.
void round_to(DType type, float* x, size_t n, cudaStream_t stream);

}  // namespace zt::cuda
