#include "kernels/cuda/round.hpp"

#include <type_traits>

#include "kernels/cuda/common.cuh"

namespace zt::cuda {

namespace {

constexpr int kBlock = 256;

template <typename T, bool kVector>
__global__ void round_kernel(float* x, size_t n) {
  const size_t i = (size_t(blockIdx.x) * blockDim.x + threadIdx.x) * kVec;
  if (i >= n) return;
  float v[kVec];
  load_floats<kVector>(v, x, i, n);
#pragma unroll
  for (int k = 0; k < kVec; k++) v[k] = to_float_exact(from_float_exact<T>(v[k]));
  store_floats<kVector>(x, v, i, n);
}

}  // namespace

void round_to(DType type, float* x, size_t n, cudaStream_t stream) {
  if (n == 0 || type == DType::F32) return;
  const unsigned grid = grid_size(n, size_t(kBlock) * kVec, "round_to");
  const bool vector = aligned16(x);
  dispatch_any(type, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, float>)
      launch(vector ? round_kernel<T, true> : round_kernel<T, false>, grid, kBlock, 0, stream, "round_kernel", x, n);
  });
}

}  // namespace zt::cuda
