#pragma once
// Vector-op kernels (vector_ops.hpp). Every conversion is the bit-exact one (dtype_bits.cuh) and
// every operation an explicit _rn intrinsic, so nothing depends on nvcc's contraction choices.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/vector_ops.hpp"  // kSumSquaresChunk

namespace zt::cuda::vector_kernels {

constexpr int kBlock = 256;

__device__ __forceinline__ size_t first_element() { return (size_t(blockIdx.x) * blockDim.x + threadIdx.x) * kVec; }

template <typename Dst, typename Src, bool kVector>
__global__ void cast_kernel(Dst* dst, const Src* src, size_t n) {
  const size_t i = first_element();
  if (i >= n) return;
  float x[kVec];
  load_floats<kVector, true>(x, src, i, n);
  store_floats<kVector, true>(dst, x, i, n);
}

template <typename Dst, typename Src, bool kVector>
__global__ void add_into_kernel(Dst* dst, const Src* src, size_t n) {
  const size_t i = first_element();
  if (i >= n) return;
  float x[kVec], y[kVec];
  load_floats<kVector, true>(x, dst, i, n);
  load_floats<kVector, true>(y, src, i, n);
#pragma unroll
  for (int k = 0; k < kVec; k++) x[k] = __fadd_rn(x[k], y[k]);
  store_floats<kVector, true>(dst, x, i, n);
}

template <typename T, bool kVector>
__global__ void scale_kernel(T* x, float factor, size_t n) {
  const size_t i = first_element();
  if (i >= n) return;
  float v[kVec];
  load_floats<kVector, true>(v, x, i, n);
#pragma unroll
  for (int k = 0; k < kVec; k++) v[k] = __fmul_rn(v[k], factor);
  store_floats<kVector, true>(x, v, i, n);
}

template <typename T, bool kVector>
__global__ void fill_kernel(T* x, float value, size_t n) {
  const size_t i = first_element();
  if (i >= n) return;
  float v[kVec];
#pragma unroll
  for (int k = 0; k < kVec; k++) v[k] = value;
  store_floats<kVector, true>(x, v, i, n);
}

// One block per chunk; thread t takes the 8-element groups t, t + kBlock, ... of the chunk.
template <typename T, bool kVector>
__global__ void sum_squares_kernel(const T* x, size_t n, float factor, double* partials) {
  __shared__ double scratch[kWarpSize];
  const size_t begin = size_t(blockIdx.x) * kSumSquaresChunk;
  const size_t end = begin + kSumSquaresChunk < n ? begin + kSumSquaresChunk : n;
  double s = 0.0;
  for (size_t i = begin + size_t(threadIdx.x) * kVec; i < end; i += size_t(blockDim.x) * kVec) {
    float v[kVec];
    load_floats<kVector, true>(v, x, i, end);  // zeros past the end add nothing
#pragma unroll
    for (int k = 0; k < kVec; k++) {
      const double d = double(__fmul_rn(v[k], factor));
      s = __dadd_rn(s, __dmul_rn(d, d));
    }
  }
  s = block_sum(s, scratch);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

}  // namespace zt::cuda::vector_kernels
