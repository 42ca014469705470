#include "kernels/cuda/cuda_residual.hpp"

#include "kernels/cuda/common.cuh"

namespace zt::cuda {

namespace {


template <typename T, bool kVector>
__global__ void residual_forward_kernel(T* out, const T* a, const T* b, size_t n) {
  const size_t i = first_element();
  if (i >= n) return;
  float x[kVec], y[kVec];
  load_floats<kVector>(x, a, i, n);
  load_floats<kVector>(y, b, i, n);
#pragma unroll
  for (int k = 0; k < kVec; k++) x[k] += y[k];
  store_floats<kVector>(out, x, i, n);
}

// dst[i] += dout[i]: the forward kernel with out = a = dst.
template <typename T>
void accumulate(T* dst, const T* dout, size_t n, cudaStream_t stream) {
  launch_elementwise(residual_forward_kernel<T, true>, residual_forward_kernel<T, false>,
                     aligned16(dst) && aligned16(dout), n, stream, "residual_forward_kernel", dst, dst, dout, n);
}

}  // namespace

void residual_forward(DType dt, void* out, const void* a, const void* b, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  const bool vector = aligned16(out) && aligned16(a) && aligned16(b);
  dispatch_activation(dt, "residual_forward", [&](auto tag) {
    using T = decltype(tag);
    launch_elementwise(residual_forward_kernel<T, true>, residual_forward_kernel<T, false>, vector, n, stream,
                       "residual_forward_kernel", static_cast<T*>(out), static_cast<const T*>(a),
                       static_cast<const T*>(b), n);
  });
}

void residual_backward(DType dt, void* da, void* db, const void* dout, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_activation(dt, "residual_backward", [&](auto tag) {
    using T = decltype(tag);
    if (da) accumulate(static_cast<T*>(da), static_cast<const T*>(dout), n, stream);
    if (db) accumulate(static_cast<T*>(db), static_cast<const T*>(dout), n, stream);
  });
}

}  // namespace zt::cuda
