#include "kernels/cuda/cuda_gelu.hpp"

#include "kernels/cuda/common.cuh"

namespace zt::cuda {

// The formula is kernels/cpu/gelu.cpp's: 0.5·(1 + tanh(u)) = sigmoid(2u), so gelu(x) = x / (1 +
// exp(-2u)), with no cancellation in 1 + tanh(u) for negative x and one exp; 2u is clamped to ±80,
// where the sigmoid is 1 or 1.8e-35 in fp32.
namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;

__device__ __forceinline__ float exp_minus_2u(float x) {
  const float two_u = 2.0f * kSqrt2OverPi * (x + kCubic * x * x * x);
  return expf(-fminf(fmaxf(two_u, -80.0f), 80.0f));
}

__device__ __forceinline__ float gelu(float x) { return x / (1.0f + exp_minus_2u(x)); }

// d/dx [x·s] = s + x·s·(1 - s)·2·du/dx with s = sigmoid(2u) and 1 - s = e·s
__device__ __forceinline__ float gelu_grad(float x) {
  const float e = exp_minus_2u(x);
  const float s = 1.0f / (1.0f + e);
  const float du_dx = kSqrt2OverPi * (1.0f + 3.0f * kCubic * x * x);
  return s + 2.0f * x * s * (e * s) * du_dx;
}

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
  if (accumulate) {
    load_floats<kVector>(dx, dinp, i, n);
  } else {
#pragma unroll
    for (int k = 0; k < kVec; k++) dx[k] = 0.0f;
  }
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
