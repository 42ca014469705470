#pragma once
// Residual kernels (residual.hpp).
#include "kernels/cuda/common.cuh"

namespace zt::cuda::residual_kernels {

constexpr int kBlock = 256;

template <typename T, bool kVector>
__global__ void residual_forward_kernel(T* out, const T* a, const T* b, size_t n) {
  const size_t i = (size_t(blockIdx.x) * blockDim.x + threadIdx.x) * kVec;
  if (i >= n) return;
  float x[kVec], y[kVec];
  load_floats<kVector>(x, a, i, n);
  load_floats<kVector>(y, b, i, n);
#pragma unroll
  for (int k = 0; k < kVec; k++) x[k] += y[k];
  store_floats<kVector>(out, x, i, n);
}

// dst[i] += dout[i]
template <typename T, bool kVector>
__global__ void accumulate_kernel(T* dst, const T* dout, size_t n) {
  const size_t i = (size_t(blockIdx.x) * blockDim.x + threadIdx.x) * kVec;
  if (i >= n) return;
  float x[kVec], y[kVec];
  load_floats<kVector>(x, dst, i, n);
  load_floats<kVector>(y, dout, i, n);
#pragma unroll
  for (int k = 0; k < kVec; k++) x[k] += y[k];
  store_floats<kVector>(dst, x, i, n);
}

}  // namespace zt::cuda::residual_kernels
