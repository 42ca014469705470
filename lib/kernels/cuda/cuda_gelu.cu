#include "kernels/cuda/cuda_gelu.hpp"

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/gelu.cuh"

namespace zt::cuda {

namespace {

template <typename T, bool kVector>
__global__ void gelu_forward_kernel(T* out, const T* inp, size_t n) {
  const size_t i = first_element();
  if (i >= n) return;
  float x[kVec];
  load_floats<kVector>(x, inp, i, n);
#pragma unroll
  for (int k = 0; k < kVec; k++) x[k] = gelu(x[k]);
  store_floats<kVector>(out, x, i, n);
}

template <typename T, bool kVector>
__global__ void gelu_backward_kernel(T* dinp, const T* inp, const T* dout, size_t n, bool accumulate) {
  const size_t i = first_element();
  if (i >= n) return;
  float x[kVec], dy[kVec], dx[kVec];
  load_floats<kVector>(x, inp, i, n);
  load_floats<kVector>(dy, dout, i, n);
  load_grad_start<kVector>(dx, dinp, i, n, accumulate);
#pragma unroll
  for (int k = 0; k < kVec; k++) dx[k] += gelu_grad(x[k]) * dy[k];
  store_floats<kVector>(dinp, dx, i, n);
}

}  // namespace

void gelu_forward(DType dt, void* out, const void* inp, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  const bool vector = aligned16(out) && aligned16(inp);
  dispatch_activation(dt, "gelu_forward", [&](auto tag) {
    using T = decltype(tag);
    launch_elementwise(gelu_forward_kernel<T, true>, gelu_forward_kernel<T, false>, vector, n, stream,
                       "gelu_forward_kernel", static_cast<T*>(out), static_cast<const T*>(inp), n);
  });
}

void gelu_backward(DType dt, void* dinp, const void* inp, const void* dout, size_t n, cudaStream_t stream,
                   GradInto into) {
  if (n == 0) return;
  const bool vector = aligned16(dinp) && aligned16(inp) && aligned16(dout);
  dispatch_activation(dt, "gelu_backward", [&](auto tag) {
    using T = decltype(tag);
    launch_elementwise(gelu_backward_kernel<T, true>, gelu_backward_kernel<T, false>, vector, n, stream,
                       "gelu_backward_kernel", static_cast<T*>(dinp), static_cast<const T*>(inp),
                       static_cast<const T*>(dout), n, into == GradInto::Accumulate);
  });
}

}  // namespace zt::cuda
