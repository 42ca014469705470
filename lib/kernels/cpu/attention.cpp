#include "kernels/cpu/attention.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <vector>

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

void gqa_attention_forward(float* out, float* att, const float* qkv, int B, int T, int NH, int NKV, int hd) {
  KernelTimer timer(KernelKind::AttentionForward);
  const int ld = (NH + 2 * NKV) * hd, ldo = NH * hd, group = NH / NKV;
  const float scale = 1.0f / std::sqrt(float(hd));
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; b++) {
    for (int h = 0; h < NH; h++) {
      const float* row0 = qkv + size_t(b) * T * ld;
      const float* q = row0 + size_t(h) * hd;
      const float* k = row0 + size_t(NH + h / group) * hd;
      const float* v = row0 + size_t(NH + NKV + h / group) * hd;
      float* a = att + (size_t(b) * NH + h) * T * T;
      // scores[t, j] = q_t · k_j / sqrt(hd); the whole square is computed, the upper half masked.
      gemm(Trans::No, Trans::Yes, T, T, hd, scale, q, ld, k, ld, 0.0f, a, T);
      for (int t = 0; t < T; t++) causal_softmax_row(a + size_t(t) * T, t + 1, T);
      // out_t = Σ_j att[t, j] · v_j
      gemm(Trans::No, Trans::No, T, hd, T, 1.0f, a, T, v, ld, 0.0f, out + size_t(b) * T * ldo + size_t(h) * hd, ldo);
    }
  }
}

void gqa_attention_cached_forward(float* out, float* k_cache, float* v_cache, const float* qkv, int B, int T, int pos,
                                  int S, int NH, int NKV, int hd) {
  KernelTimer timer(KernelKind::AttentionForward);
  const int ld = (NH + 2 * NKV) * hd, ldo = NH * hd, ldc = NKV * hd, group = NH / NKV, L = pos + T;
  const float scale = 1.0f / std::sqrt(float(hd));
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++) {
      const float* row = qkv + (size_t(b) * T + t) * ld;
      const size_t at = (size_t(b) * S + size_t(pos + t)) * ldc;
      std::copy(row + size_t(NH) * hd, row + size_t(NH + NKV) * hd, k_cache + at);
      std::copy(row + size_t(NH + NKV) * hd, row + size_t(ld), v_cache + at);
    }
#pragma omp parallel
  {
    std::vector<float> att(size_t(T) * L);  // this thread's scores and probabilities, [T, L]
#pragma omp for collapse(2) schedule(static)
    for (int b = 0; b < B; b++) {
      for (int h = 0; h < NH; h++) {
        const float* q = qkv + size_t(b) * T * ld + size_t(h) * hd;
        const float* k = k_cache + size_t(b) * S * ldc + size_t(h / group) * hd;
        const float* v = v_cache + size_t(b) * S * ldc + size_t(h / group) * hd;
        gemm(Trans::No, Trans::Yes, T, L, hd, scale, q, ld, k, ldc, 0.0f, att.data(), L);
        for (int t = 0; t < T; t++) causal_softmax_row(att.data() + size_t(t) * L, pos + t + 1, L);
        gemm(Trans::No, Trans::No, T, hd, L, 1.0f, att.data(), L, v, ldc, 0.0f,
             out + size_t(b) * T * ldo + size_t(h) * hd, ldo);
      }
    }
  }
}

void gqa_attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* att, int B,
                            int T, int NH, int NKV, int hd) {
  KernelTimer timer(KernelKind::AttentionBackward);
  const int ld = (NH + 2 * NKV) * hd, ldo = NH * hd, group = NH / NKV;
  const float scale = 1.0f / std::sqrt(float(hd));
  // One (batch, key/value head) per task: its q heads add to the same dk and dv in order.
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; b++) {
    for (int kv = 0; kv < NKV; kv++) {
      const size_t row0 = size_t(b) * T * ld;
      const float* k = qkv + row0 + size_t(NH + kv) * hd;
      const float* v = qkv + row0 + size_t(NH + NKV + kv) * hd;
      float* dk = dqkv + row0 + size_t(NH + kv) * hd;
      float* dv = dqkv + row0 + size_t(NH + NKV + kv) * hd;
      for (int h = kv * group; h < (kv + 1) * group; h++) {
        const float* q = qkv + row0 + size_t(h) * hd;
        float* dq = dqkv + row0 + size_t(h) * hd;
        const float* dy = dout + size_t(b) * T * ldo + size_t(h) * hd;
        const float* a = att + (size_t(b) * NH + h) * T * T;
        float* da = scratch + (size_t(b) * NH + h) * T * T;
        // datt = dout · vᵀ;  dv += attᵀ · dout
        gemm(Trans::No, Trans::Yes, T, T, hd, 1.0f, dy, ldo, v, ld, 0.0f, da, T);
        gemm(Trans::Yes, Trans::No, T, hd, T, 1.0f, a, T, dy, ldo, 1.0f, dv, ld);
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
        gemm(Trans::No, Trans::No, T, hd, T, scale, da, T, k, ld, 1.0f, dq, ld);
        gemm(Trans::Yes, Trans::No, T, hd, T, scale, da, T, q, ld, 1.0f, dk, ld);
      }
    }
  }
}

}  // namespace zt::cpu
