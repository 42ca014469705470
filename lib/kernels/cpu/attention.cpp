#include "kernels/cpu/attention.hpp"

#include <cfloat>
#include <cmath>

#include "kernels/cpu/gemm.hpp"
#include "kernels/cpu/kernel_profile.hpp"
#include "kernels/cpu/simd.hpp"

namespace zt::cpu {

namespace {

// Softmax over row[0, len), zeros over row[len, T). Weights below exp(-70) relative to the
// largest are written as 0 (they would only turn into subnormal numbers downstream).
ZT_KERNEL_CLONES void causal_softmax_row(float* row, int len, int T) {
  const size_t n = size_t(len);
  f32x16 m = splat(-FLT_MAX);
  size_t j = 0;
  for (; j + kLanes <= n; j += kLanes) m = vmax(m, load(row + j));
  if (j < n) m = vmax(m, load_partial(row + j, n - j, -FLT_MAX));
  const f32x16 mx = splat(hmax(m)), zero = splat(0.0f), negligible = splat(-70.0f);
  f32x16 sum = zero;
  for (j = 0; j + kLanes <= n; j += kLanes) {
    const f32x16 a = load(row + j) - mx;
    const f32x16 e = a < negligible ? zero : exp_fast(a);
    store(row + j, e);
    sum += e;
  }
  if (j < n) {
    const f32x16 a = load_partial(row + j, n - j, -FLT_MAX) - mx;
    const f32x16 e = a < negligible ? zero : exp_fast(a);
    store_partial(row + j, e, n - j);
    sum += e;
  }
  const f32x16 inv = splat(1.0f / hsum(sum));
  for (j = 0; j + kLanes <= n; j += kLanes) store(row + j, load(row + j) * inv);
  if (j < n) store_partial(row + j, load_partial(row + j, n - j, 0.0f) * inv, n - j);
  for (size_t k = n; k < size_t(T); k++) row[k] = 0.0f;
}

}  // namespace

void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH) {
  KernelTimer timer(KernelKind::AttentionForward);
  const int hs = C / NH;
  const int C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(float(hs));
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; b++) {
    for (int h = 0; h < NH; h++) {
      const float* q = qkv + size_t(b) * T * C3 + size_t(h) * hs;
      const float* k = q + C;
      const float* v = q + 2 * C;
      float* a = att + (size_t(b) * NH + h) * T * T;
      // scores[t, j] = q_t · k_j / sqrt(hs); the whole square is computed, the upper half masked.
      gemm(Trans::No, Trans::Yes, T, T, hs, scale, q, C3, k, C3, 0.0f, a, T);
      for (int t = 0; t < T; t++) causal_softmax_row(a + size_t(t) * T, t + 1, T);
      // out_t = Σ_j att[t, j] · v_j
      gemm(Trans::No, Trans::No, T, hs, T, 1.0f, a, T, v, C3, 0.0f, out + size_t(b) * T * C + size_t(h) * hs, C);
    }
  }
}

void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* att, int B,
                        int T, int C, int NH) {
  KernelTimer timer(KernelKind::AttentionBackward);
  const int hs = C / NH;
  const int C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(float(hs));
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; b++) {
    for (int h = 0; h < NH; h++) {
      const size_t head = size_t(h) * hs;
      const float* q = qkv + size_t(b) * T * C3 + head;
      const float* k = q + C;
      const float* v = q + 2 * C;
      float* dq = dqkv + size_t(b) * T * C3 + head;
      float* dk = dq + C;
      float* dv = dq + 2 * C;
      const float* dy = dout + size_t(b) * T * C + head;
      const float* a = att + (size_t(b) * NH + h) * T * T;
      float* da = scratch + (size_t(b) * NH + h) * T * T;
      // datt = dout · vᵀ;  dv += attᵀ · dout
      gemm(Trans::No, Trans::Yes, T, T, hs, 1.0f, dy, C, v, C3, 0.0f, da, T);
      gemm(Trans::Yes, Trans::No, T, hs, T, 1.0f, a, T, dy, C, 1.0f, dv, C3);
      // softmax backward, row by row: dscore[t, j] = att[t, j] · (datt[t, j] - Σ_i att[t, i] · datt[t, i])
      for (int t = 0; t < T; t++) {
        const float* arow = a + size_t(t) * T;
        float* drow = da + size_t(t) * T;
        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (int j = 0; j <= t; j++) dot += arow[j] * drow[j];
#pragma omp simd
        for (int j = 0; j <= t; j++) drow[j] = arow[j] * (drow[j] - dot);
        for (int j = t + 1; j < T; j++) drow[j] = 0.0f;
      }
      // scores = scale · q · kᵀ:  dq += scale · dscore · k;  dk += scale · dscoreᵀ · q
      gemm(Trans::No, Trans::No, T, hs, T, scale, da, T, k, C3, 1.0f, dq, C3);
      gemm(Trans::Yes, Trans::No, T, hs, T, scale, da, T, q, C3, 1.0f, dk, C3);
    }
  }
}

}  // namespace zt::cpu
