#include "kernels/cuda/gelu.hpp"

#include "kernels/cuda/gelu_kernels.cuh"

namespace zt::cuda {

using namespace gelu_kernels;

void gelu_forward(DType dt, void* out, const void* inp, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  const unsigned grid = grid_size(n, size_t(kBlock) * kVec, "gelu_forward");
  const bool vector = aligned16(out) && aligned16(inp);
  dispatch_activation(dt, "gelu_forward", [&](auto tag) {
    using T = decltype(tag);
    launch(vector ? gelu_forward_kernel<T, true> : gelu_forward_kernel<T, false>, grid, kBlock, 0, stream,
           "gelu_forward_kernel", static_cast<T*>(out), static_cast<const T*>(inp), n);
  });
}

void gelu_backward(DType dt, void* dinp, const void* inp, const void* dout, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  const unsigned grid = grid_size(n, size_t(kBlock) * kVec, "gelu_backward");
  const bool vector = aligned16(dinp) && aligned16(inp) && aligned16(dout);
  dispatch_activation(dt, "gelu_backward", [&](auto tag) {
    using T = decltype(tag);
    launch(vector ? gelu_backward_kernel<T, true> : gelu_backward_kernel<T, false>, grid, kBlock, 0, stream,
           "gelu_backward_kernel", static_cast<T*>(dinp), static_cast<const T*>(inp), static_cast<const T*>(dout), n);
  });
}

}  // namespace zt::cuda
