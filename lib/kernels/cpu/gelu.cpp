#include "kernels/cpu/gelu.hpp"

#include <algorithm>

#include "kernels/cpu/kernel_profile.hpp"
#include "kernels/cpu/simd.hpp"

namespace zt::cpu {

// 0.5·(1 + tanh(u)) = sigmoid(2u), so gelu(x) = x / (1 + exp(-2u)): the same function without the
// cancellation of 1 + tanh(u) for negative x, and with one exp. 2u is clamped to ±80, where the
// sigmoid is 1 or 1.8e-35 to fp32 precision, so no intermediate becomes subnormal.
namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;
constexpr size_t kChunk = 4096;  // elements per OpenMP work item

inline f32x16 exp_minus_2u(f32x16 x) {
  const f32x16 two_u = 2.0f * kSqrt2OverPi * (x + kCubic * x * x * x);
  return exp_fast(-vmin(vmax(two_u, splat(-80.0f)), splat(80.0f)));
}

inline f32x16 gelu(f32x16 x) { return x / (1.0f + exp_minus_2u(x)); }

// d/dx [x · sigmoid(2u)] = s + x · s · (1 - s) · 2 · du/dx, with s = sigmoid(2u) and 1 - s = e · s
inline f32x16 gelu_grad(f32x16 x) {
  const f32x16 e = exp_minus_2u(x);
  const f32x16 s = 1.0f / (1.0f + e);
  const f32x16 du_dx = kSqrt2OverPi * (1.0f + 3.0f * kCubic * x * x);
  return s + 2.0f * x * s * (e * s) * du_dx;
}

ZT_KERNEL_CLONES void gelu_forward_chunk(float* out, const float* inp, size_t n) {
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store(out + i, gelu(load(inp + i)));
  if (i < n) store_partial(out + i, gelu(load_partial(inp + i, n - i, 0.0f)), n - i);
}

ZT_KERNEL_CLONES void gelu_backward_chunk(float* dinp, const float* inp, const float* dout, size_t n) {
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store(dinp + i, load(dinp + i) + gelu_grad(load(inp + i)) * load(dout + i));
  if (i < n) {
    const size_t k = n - i;
    const f32x16 d =
        load_partial(dinp + i, k, 0.0f) + gelu_grad(load_partial(inp + i, k, 0.0f)) * load_partial(dout + i, k, 0.0f);
    store_partial(dinp + i, d, k);
  }
}

}  // namespace

void gelu_forward(float* out, const float* inp, size_t n) {
  KernelTimer timer(KernelKind::GeluForward);
  const std::ptrdiff_t chunks = std::ptrdiff_t((n + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t c = 0; c < chunks; c++) {
    const size_t begin = size_t(c) * kChunk;
    gelu_forward_chunk(out + begin, inp + begin, std::min(kChunk, n - begin));
  }
}

void gelu_backward(float* dinp, const float* inp, const float* dout, size_t n) {
  KernelTimer timer(KernelKind::GeluBackward);
  const std::ptrdiff_t chunks = std::ptrdiff_t((n + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t c = 0; c < chunks; c++) {
    const size_t begin = size_t(c) * kChunk;
    gelu_backward_chunk(dinp + begin, inp + begin, dout + begin, std::min(kChunk, n - begin));
  }
}

}  // namespace zt::cpu
