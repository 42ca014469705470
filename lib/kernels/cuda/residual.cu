#include "kernels/cuda/residual.hpp"

#include "kernels/cuda/residual_kernels.cuh"

namespace zt::cuda {

using namespace residual_kernels;

namespace {

template <typename T>
void accumulate(T* dst, const T* dout, size_t n, cudaStream_t stream) {
  const unsigned grid = grid_size(n, size_t(kBlock) * kVec, "residual_backward");
  const bool vector = aligned16(dst) && aligned16(dout);
  launch(vector ? accumulate_kernel<T, true> : accumulate_kernel<T, false>, grid, kBlock, 0, stream,
         "accumulate_kernel", dst, dout, n);
}

}  // namespace

void residual_forward(DType dt, void* out, const void* a, const void* b, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  const unsigned grid = grid_size(n, size_t(kBlock) * kVec, "residual_forward");
  const bool vector = aligned16(out) && aligned16(a) && aligned16(b);
  dispatch_activation(dt, "residual_forward", [&](auto tag) {
    using T = decltype(tag);
    launch(vector ? residual_forward_kernel<T, true> : residual_forward_kernel<T, false>, grid, kBlock, 0, stream,
           "residual_forward_kernel", static_cast<T*>(out), static_cast<const T*>(a), static_cast<const T*>(b), n);
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
