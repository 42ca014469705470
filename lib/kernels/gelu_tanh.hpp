#pragma once
// GELU's tanh form and its derivative, written once for the CPU's 16 lanes (kernels/cpu/gelu_simd.hpp)
// and the GPU (kernels/cuda/gelu.cuh): T is a float or a vector of floats, and each backend brings
// e = exp(-2u), with its own exp, of 2u clamped to ±kClamp.
//
// 0.5·(1 + tanh(u)) = sigmoid(2u), so gelu(x) = x / (1 + exp(-2u)): the same function without the
// cancellation of 1 + tanh(u) for negative x, and with one exp. At ±80 the sigmoid is 1 or 1.8e-35
// to fp32 precision, so clamped there no intermediate becomes subnormal.

#ifdef __CUDACC__
#define ZT_GELU_HOST_DEVICE __host__ __device__
#else
#define ZT_GELU_HOST_DEVICE
#endif

namespace zt::gelu_tanh {

inline constexpr float kSqrt2OverPi = 0.7978845608028654f, kCubic = 0.044715f, kClamp = 80.0f;

// 2u = 2·sqrt(2/π)·(x + 0.044715·x³)
template <class T>
ZT_GELU_HOST_DEVICE inline T two_u(T x) {
  return 2.0f * kSqrt2OverPi * (x + kCubic * x * x * x);
}

template <class T>
ZT_GELU_HOST_DEVICE inline T value(T x, T e) {
  return x / (1.0f + e);
}

// d/dx [x · s] = s + x · s · (1 - s) · 2 · du/dx, with s = sigmoid(2u) and 1 - s = e · s
template <class T>
ZT_GELU_HOST_DEVICE inline T grad(T x, T e) {
  const T s = 1.0f / (1.0f + e);
  const T du_dx = kSqrt2OverPi * (1.0f + 3.0f * kCubic * x * x);
  return s + 2.0f * x * s * (e * s) * du_dx;
}

}  // namespace zt::gelu_tanh
