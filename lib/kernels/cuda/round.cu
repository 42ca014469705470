#include "kernels/cuda/round.hpp"

#include <type_traits>

#include "kernels/cuda/common.cuh"

namespace zt::cuda {

namespace {


template <typename T, bool kVector>
__global__ void round_kernel(float* x, size_t n) {
  const size_t i = first_element();
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
  dispatch_any(type, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, float>)
      launch_elementwise(round_kernel<T, true>, round_kernel<T, false>, aligned16(x), n, stream, "round_kernel", x, n);
  });
}

}  // namespace zt::cuda
