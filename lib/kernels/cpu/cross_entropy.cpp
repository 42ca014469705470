#include "kernels/cpu/cross_entropy.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "core/ignored_target.hpp"
#include "kernels/cpu/kernel_profile.hpp"
#include "kernels/cpu/simd.hpp"

namespace zt::cpu {

namespace {

// Probabilities below exp(-70) ≈ 4e-31 are written as 0 in backward: scaled by dloss / N they
// would be subnormal (slow to compute with, and meaningless as gradients).
constexpr float kNegligibleLogProb = -70.0f;

ZT_KERNEL_CLONES float row_max(const float* row, size_t V) {
  f32x16 m = splat(-FLT_MAX);
  size_t v = 0;
  for (; v + kLanes <= V; v += kLanes) m = vmax(m, load(row + v));
  if (v < V) m = vmax(m, load_partial(row + v, V - v, -FLT_MAX));
  return hmax(m);
}

// Σ exp(row[v] - maxval); every argument is <= 0, padding lanes contribute 0.
ZT_KERNEL_CLONES float row_sum_exp(const float* row, size_t V, float maxval) {
  f32x16 s = splat(0.0f);
  const f32x16 mx = splat(maxval);
  size_t v = 0;
  for (; v + kLanes <= V; v += kLanes) s += exp_fast(load(row + v) - mx);
  if (v < V) {
    const f32x16 x = load_partial(row + v, V - v, -FLT_MAX);
    s += x > splat(-FLT_MAX) ? exp_fast(x - mx) : splat(0.0f);
  }
  return hsum(s);
}

ZT_KERNEL_CLONES void row_softmax_grad(float* drow, const float* row, size_t V, float lse, float scale) {
  const f32x16 l = splat(lse), zero = splat(0.0f);
  size_t v = 0;
  for (; v + kLanes <= V; v += kLanes) {
    const f32x16 a = load(row + v) - l;
    store(drow + v, a < splat(kNegligibleLogProb) ? zero : scale * exp_fast(a));
  }
  if (v < V) {
    const f32x16 a = load_partial(row + v, V - v, 0.0f) - l;
    store_partial(drow + v, a < splat(kNegligibleLogProb) ? zero : scale * exp_fast(a), V - v);
  }
}

}  // namespace

void cross_entropy_losses(float* lse, float* losses, const float* logits, const int32_t* targets, int N, int V,
                          int Vp) {
  KernelTimer timer(KernelKind::CrossEntropyForward);
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    const float* row = logits + size_t(n) * Vp;
    const float maxval = row_max(row, size_t(V));
    const float log_sum = maxval + std::log(row_sum_exp(row, size_t(V), maxval));
    lse[n] = log_sum;
    losses[n] = targets[n] == kIgnoredTarget ? std::numeric_limits<float>::quiet_NaN() : log_sum - row[targets[n]];
  }
}

float mean_loss(const float* losses, const int32_t* targets, int N, int* counted) {
  double total = 0.0;
  int rows = 0;
  for (int n = 0; n < N; n++) {
    if (targets[n] == kIgnoredTarget) continue;
    total += double(losses[n]);
    rows++;
  }
  *counted = rows;
  return rows > 0 ? float(total / double(rows)) : std::numeric_limits<float>::quiet_NaN();
}

float cross_entropy_forward(float* lse, const float* logits, const int32_t* targets, int N, int V, int Vp) {
  std::vector<float> losses(static_cast<size_t>(N));
  cross_entropy_losses(lse, losses.data(), logits, targets, N, V, Vp);
  int counted = 0;
  return mean_loss(losses.data(), targets, N, &counted);
}

void softcap_forward(float* x, size_t n, float cap) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) x[i] = cap * std::tanh(x[i] / cap);
}

void cross_entropy_backward(float* dlogits, const float* logits, const float* lse, const int32_t* targets,
                            float scale_all, int N, int V, int Vp, float softcap, const float* weights) {
  KernelTimer timer(KernelKind::CrossEntropyBackward);
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    const float scale = weights ? scale_all * weights[n] : scale_all;
    const float* row = logits + size_t(n) * Vp;
    float* drow = dlogits + size_t(n) * Vp;
    if (targets[n] == kIgnoredTarget) {
      std::fill(drow, drow + Vp, 0.0f);
      continue;
    }
    if (softcap > 0.0f) {
      // row holds the capped logits c·tanh(z / c), read before drow (maybe the same memory) gets
      // the gradient of z: d · (1 - tanh²)
      for (int v = 0; v < V; v++) {
        const float capped = row[v], t = capped / softcap, a = capped - lse[n];
        const float d = (a < kNegligibleLogProb ? 0.0f : scale * std::exp(a)) - (v == targets[n] ? scale : 0.0f);
        drow[v] = d * (1.0f - t * t);
      }
    } else {
      row_softmax_grad(drow, row, size_t(V), lse[n], scale);
      drow[targets[n]] -= scale;
    }
    for (int v = V; v < Vp; v++) drow[v] = 0.0f;
  }
}

int counted_rows(int32_t* rows, int32_t* row_targets, const int32_t* targets, int N) {
  int m = 0;
  for (int n = 0; n < N; n++) {
    if (targets[n] == kIgnoredTarget) continue;
    rows[m] = n;
    row_targets[m++] = targets[n];
  }
  return m;
}

void scatter_rows(float* dx, const float* drows, const int32_t* rows, int M, int N, int C) {
  std::fill_n(dx, size_t(N) * size_t(C), 0.0f);
#pragma omp parallel for schedule(static)
  for (int r = 0; r < M; r++) std::copy_n(drows + size_t(r) * C, C, dx + size_t(rows[r]) * C);
}

}  // namespace zt::cpu
