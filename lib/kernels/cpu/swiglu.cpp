#include "kernels/cpu/swiglu.hpp"

#include <cstddef>

#include "kernels/cpu/kernel_profile.hpp"
#include "kernels/cpu/gelu_simd.hpp"

namespace zt::cpu {

namespace {

// exp(-x) with x clamped to ±80, where sigmoid(x) is 1 or 1.8e-35 to fp32 precision: no
// intermediate becomes subnormal.
inline f32x16 exp_minus(f32x16 x) { return exp_fast(-vmin(vmax(x, splat(-80.0f)), splat(80.0f))); }

inline f32x16 activation(f32x16 g, Gate gate) { return gate == Gate::Silu ? g / (1.0f + exp_minus(g)) : gelu(g); }

ZT_KERNEL_CLONES void swiglu_row(float* out, const float* gate, const float* up, size_t n, Gate act) {
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store(out + i, activation(load(gate + i), act) * load(up + i));
  if (i < n)
    store_partial(out + i, activation(load_partial(gate + i, n - i, 0.0f), act) * load_partial(up + i, n - i, 0.0f),
                  n - i);
}

// With s = sigmoid(g) and 1 - s = e·s (e = exp(-g)): silu(g) = g·s, silu'(g) = s·(1 + g·e·s).
inline void swiglu_grad(f32x16 g, f32x16 u, f32x16 dy, f32x16& dg, f32x16& du, Gate act) {
  if (act == Gate::GeluTanh) {
    dg = dy * u * gelu_grad(g);
    du = dy * gelu(g);
    return;
  }
  const f32x16 e = exp_minus(g);
  const f32x16 s = 1.0f / (1.0f + e);
  dg = dy * u * (s * (1.0f + g * e * s));
  du = dy * (g * s);
}

ZT_KERNEL_CLONES void swiglu_row_backward(float* dgate, float* dup, const float* gate, const float* up,
                                          const float* dout, size_t n, Gate act) {
  size_t i = 0;
  f32x16 dg, du;
  for (; i + kLanes <= n; i += kLanes) {
    swiglu_grad(load(gate + i), load(up + i), load(dout + i), dg, du, act);
    store(dgate + i, load(dgate + i) + dg);
    store(dup + i, load(dup + i) + du);
  }
  if (i < n) {
    const size_t k = n - i;
    swiglu_grad(load_partial(gate + i, k, 0.0f), load_partial(up + i, k, 0.0f), load_partial(dout + i, k, 0.0f), dg, du,
                act);
    store_partial(dgate + i, load_partial(dgate + i, k, 0.0f) + dg, k);
    store_partial(dup + i, load_partial(dup + i, k, 0.0f) + du, k);
  }
}

}  // namespace

void swiglu_forward(float* out, const float* inp, int N, int F, Gate act) {
  KernelTimer timer(KernelKind::SwigluForward);
  const size_t f = size_t(F);
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    const float* gate = inp + size_t(n) * 2 * f;
    swiglu_row(out + size_t(n) * f, gate, gate + f, f, act);
  }
}

void swiglu_backward(float* dinp, const float* inp, const float* dout, int N, int F, Gate act) {
  KernelTimer timer(KernelKind::SwigluBackward);
  const size_t f = size_t(F);
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    const float* gate = inp + size_t(n) * 2 * f;
    float* dgate = dinp + size_t(n) * 2 * f;
    swiglu_row_backward(dgate, dgate + f, gate, gate + f, dout + size_t(n) * f, f, act);
  }
}

}  // namespace zt::cpu
