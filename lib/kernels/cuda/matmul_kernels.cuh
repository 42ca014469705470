#pragma once
// The matmul's own kernels (matmul.hpp): the bias added when cuBLASLt's bias epilogue is
// unavailable, and the term of the bias gradient's column sums.
#include "kernels/cuda/common.cuh"

namespace zt::cuda::matmul_kernels {

constexpr int kBiasBlock = 256;

// out[n, o] += bias[o] over a row-major [N, OC] matrix (when the bias epilogue is unavailable).
template <typename T>
__global__ void add_bias_kernel(T* out, const T* bias, int N, int OC) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= size_t(N) * OC) return;
  out[i] = from_float<T>(to_float(out[i]) + to_float(bias[i % OC]));
}

// acc[0] += dout[r, c]: the bias gradient as a column sum.
template <typename T>
struct DoutTerm {
  const T* dout;
  int OC;
  __device__ void operator()(int r, int c, float (&acc)[1]) const { acc[0] += to_float(dout[size_t(r) * OC + c]); }
};

}  // namespace zt::cuda::matmul_kernels
