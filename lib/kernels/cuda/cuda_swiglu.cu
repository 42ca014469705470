#include "kernels/cuda/cuda_swiglu.hpp"

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/gelu.cuh"

namespace zt::cuda {

namespace {

// exp(-x) with x clamped to ±80 (kernels/cpu/swiglu.cpp): sigmoid(x) is 1 or 1.8e-35 there in fp32.
__device__ __forceinline__ float exp_minus(float x) { return expf(-fminf(fmaxf(x, -80.0f), 80.0f)); }

template <typename T, bool kVector>
__global__ void swiglu_forward_kernel(T* out, const T* inp, int N, int F, bool gelu_gate) {
  size_t n;
  int f;
  if (!my_row_group(N, F, n, f)) return;
  const T* gate = inp + n * 2 * size_t(F);
  float g[kVec], u[kVec];
  load_floats<kVector>(g, gate, size_t(f), size_t(F));
  load_floats<kVector>(u, gate + F, size_t(f), size_t(F));
#pragma unroll
  for (int k = 0; k < kVec; k++) g[k] = (gelu_gate ? gelu(g[k]) : g[k] / (1.0f + exp_minus(g[k]))) * u[k];
  store_floats<kVector>(out + n * size_t(F), g, size_t(f), size_t(F));
}

// With s = sigmoid(g) and 1 - s = e·s (e = exp(-g)): silu(g) = g·s, silu'(g) = s·(1 + g·e·s).
template <typename T, bool kVector>
__global__ void swiglu_backward_kernel(T* dinp, const T* inp, const T* dout, int N, int F, bool accumulate,
                                       bool gelu_gate) {
  size_t n;
  int f;
  if (!my_row_group(N, F, n, f)) return;
  const T* gate = inp + n * 2 * size_t(F);
  T* dgate = dinp + n * 2 * size_t(F);
  float g[kVec], u[kVec], dy[kVec], dg[kVec], du[kVec];
  load_floats<kVector>(g, gate, size_t(f), size_t(F));
  load_floats<kVector>(u, gate + F, size_t(f), size_t(F));
  load_floats<kVector>(dy, dout + n * size_t(F), size_t(f), size_t(F));
  if (accumulate) {
    load_floats<kVector>(dg, dgate, size_t(f), size_t(F));
    load_floats<kVector>(du, dgate + F, size_t(f), size_t(F));
  } else {
#pragma unroll
    for (int k = 0; k < kVec; k++) dg[k] = du[k] = 0.0f;
  }
#pragma unroll
  for (int k = 0; k < kVec; k++) {
    if (gelu_gate) {  // GeGLU
      dg[k] += dy[k] * u[k] * gelu_grad(g[k]);
      du[k] += dy[k] * gelu(g[k]);
      continue;
    }
    const float e = exp_minus(g[k]);
    const float s = 1.0f / (1.0f + e);
    dg[k] += dy[k] * u[k] * (s * (1.0f + g[k] * e * s));
    du[k] += dy[k] * (g[k] * s);
  }
  store_floats<kVector>(dgate, dg, size_t(f), size_t(F));
  store_floats<kVector>(dgate + F, du, size_t(f), size_t(F));
}

size_t items(int N, int F, const char* op) {
  require(N >= 0 && F > 0, op, ": bad shape N = ", N, ", F = ", F);
  return size_t(N) * ceil_div(size_t(F), kVec);
}

}  // namespace

void swiglu_forward(DType dt, void* out, const void* inp, int N, int F, cudaStream_t stream, Gate gate) {
  const size_t n = items(N, F, "swiglu_forward");
  if (n == 0) return;
  // 16-byte loads: rows of F and 2F elements keep every group aligned when F % 8 == 0.
  const bool vector = F % kVec == 0 && aligned16(out) && aligned16(inp);
  dispatch_activation(dt, "swiglu_forward", [&](auto tag) {
    using T = decltype(tag);
    launch(vector ? swiglu_forward_kernel<T, true> : swiglu_forward_kernel<T, false>,
           grid_size(n, kElementwiseBlock, "swiglu_forward"), kElementwiseBlock, 0, stream, "swiglu_forward_kernel",
           static_cast<T*>(out), static_cast<const T*>(inp), N, F, gate == Gate::GeluTanh);
  });
}

void swiglu_backward(DType dt, void* dinp, const void* inp, const void* dout, int N, int F, cudaStream_t stream,
                     GradInto dinp_into, Gate gate) {
  const size_t n = items(N, F, "swiglu_backward");
  if (n == 0) return;
  const bool vector = F % kVec == 0 && aligned16(dinp) && aligned16(inp) && aligned16(dout);
  dispatch_activation(dt, "swiglu_backward", [&](auto tag) {
    using T = decltype(tag);
    launch(vector ? swiglu_backward_kernel<T, true> : swiglu_backward_kernel<T, false>,
           grid_size(n, kElementwiseBlock, "swiglu_backward"), kElementwiseBlock, 0, stream, "swiglu_backward_kernel",
           static_cast<T*>(dinp), static_cast<const T*>(inp), static_cast<const T*>(dout), N, F,
           dinp_into == GradInto::Accumulate, gate == Gate::GeluTanh);
  });
}

}  // namespace zt::cuda
