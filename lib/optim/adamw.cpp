#include "optim/adamw.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "optim/adamw_scalars.hpp"

namespace zt {

namespace {

// PyTorch's AVX2 kernels: m.mul_(b1).add_(g, alpha=1-b1) is m*b1 then fma(g, 1-b1, .);
// v.mul_(b2).addcmul_(g, g, value=1-b2) is v*b2 then fma((1-b2)*g, g, .) (contracted by its
// compiler); the update is p + ((-step_size)*m) / (sqrt(v)/bc2_sqrt + eps); L2 mode: fma(p, wd, g).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
void adamw_chunk(float* __restrict p, const float* __restrict g_in, float* __restrict m,
                 float* __restrict v, size_t n, const AdamWScalars s) {
  for (size_t i = 0; i < n; ++i) {
    float w = p[i];
    float g = g_in[i];
    if (s.l2_mode) g = std::fma(w, s.l2, g);
    if (s.decoupled) w = w * s.param_scale;
    float mi = std::fma(g, s.one_minus_beta1, m[i] * s.beta1);
    float vi = std::fma(s.one_minus_beta2 * g, g, v[i] * s.beta2);
    float denom = std::sqrt(vi) / s.bias_correction2_sqrt + s.eps;
    p[i] = w + (s.neg_step_size * mi) / denom;
    m[i] = mi;
    v[i] = vi;
  }
}

constexpr size_t kChunk = 8192;

}  // namespace

void adamw_update(float* param, const float* grad, float* m, float* v, size_t n, const AdamWHyper& h,
                  int64_t step, bool decay) {
  if (step < 1) fail("adamw_update: step must count from 1, got {}", step);
  const AdamWScalars s = adamw_scalars(h, step, decay);

  const int64_t chunks = int64_t((n + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    size_t begin = size_t(c) * kChunk, len = std::min(kChunk, n - begin);
    adamw_chunk(param + begin, grad + begin, m + begin, v + begin, len, s);
  }
}

}  // namespace zt
