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

// Negligible weights: below exp(-70) relative to the row's largest they are written as 0 (they
// would only turn into subnormal numbers downstream).
constexpr float kNegligible = -70.0f;

// Softmax over row[begin, end), zeros over the rest of row[0, width); returns the row's
// log-sum-exp.
ZT_KERNEL_CLONES float softmax_row(float* row, int begin, int end, int width) {
  float* x = row + begin;
  const size_t n = size_t(end - begin);
  f32x16 m = splat(-FLT_MAX);
  size_t j = 0;
  for (; j + kLanes <= n; j += kLanes) m = vmax(m, load(x + j));
  if (j < n) m = vmax(m, load_partial(x + j, n - j, -FLT_MAX));
  const float max_value = hmax(m);
  const f32x16 mx = splat(max_value), zero = splat(0.0f), negligible = splat(kNegligible);
  f32x16 sum = zero;
  for (j = 0; j + kLanes <= n; j += kLanes) {
    const f32x16 a = load(x + j) - mx;
    const f32x16 e = a < negligible ? zero : exp_fast(a);
    store(x + j, e);
    sum += e;
  }
  if (j < n) {
    const f32x16 a = load_partial(x + j, n - j, -FLT_MAX) - mx;
    const f32x16 e = a < negligible ? zero : exp_fast(a);
    store_partial(x + j, e, n - j);
    sum += e;
  }
  const float total = hsum(sum);
  const f32x16 inv = splat(1.0f / total);
  for (j = 0; j + kLanes <= n; j += kLanes) store(x + j, load(x + j) * inv);
  if (j < n) store_partial(x + j, load_partial(x + j, n - j, 0.0f) * inv, n - j);
  std::fill(row, row + begin, 0.0f);
  std::fill(row + end, row + width, 0.0f);
  return max_value + std::log(total);
}

// The probabilities of a row from its scores and log-sum-exp: exp(score - lse) over
// row[begin, end), 0 elsewhere in row[0, width).
ZT_KERNEL_CLONES void probabilities_row(float* row, int begin, int end, int width, float lse) {
  float* x = row + begin;
  const size_t n = size_t(end - begin);
  const f32x16 l = splat(lse), zero = splat(0.0f), negligible = splat(kNegligible);
  size_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    const f32x16 a = load(x + j) - l;
    store(x + j, a < negligible ? zero : exp_fast(a));
  }
  if (j < n) {
    const f32x16 a = load_partial(x + j, n - j, 0.0f) - l;
    store_partial(x + j, a < negligible ? zero : exp_fast(a), n - j);
  }
  std::fill(row, row + begin, 0.0f);
  std::fill(row + end, row + width, 0.0f);
}

// Soft-capping of the scores row[begin, end): s = cap · tanh(s / cap).
void softcap_row(float* row, int begin, int end, float cap) {
  for (int j = begin; j < end; j++) row[j] = cap * std::tanh(row[j] / cap);
}

// ds = p · (dp - D) in place over dp, D = dout_t · out_t (Σ_j p·dp, as FlashAttention computes it).
// With soft-capping (cap > 0) ds is the gradient of the score before the cap: times 1 - tanh², the
// capped score c·tanh being log p + lse (a probability of 0 has a gradient of 0 either way).
ZT_KERNEL_CLONES void score_gradient_row(float* dp, const float* p, int width, const float* dy, const float* y,
                                         int hd, float cap, float lse) {
  float dot = 0.0f;
  for (int i = 0; i < hd; i++) dot += dy[i] * y[i];
  const f32x16 d = splat(dot);
  int j = 0;
  for (; j + kLanes <= width; j += kLanes) store(dp + j, load(p + j) * (load(dp + j) - d));
  if (j < width) {
    const size_t n = size_t(width - j);
    store_partial(dp + j, load_partial(p + j, n, 0.0f) * (load_partial(dp + j, n, 0.0f) - d), n);
  }
  if (cap > 0.0f)
    for (j = 0; j < width; j++)
      if (p[j] > 0.0f) {
        const float t = (std::log(p[j]) + lse) / cap;
        dp[j] *= 1.0f - t * t;
      }
}

float score_scale(AttentionScores scores, int hd) {
  return scores.scale > 0.0f ? scores.scale : 1.0f / std::sqrt(float(hd));
}

// The query rows [t0, t1) of a block and the keys any of them attends to. A block ends where its
// first row's sample does, so its keys are its own sample's (row: the row's segments, or null),
// within the window of its rows when there is one.
struct Block {
  int t0, rows;  // query rows [t0, t0 + rows)
  int k0, keys;  // keys [k0, k0 + keys)
};
Block block_of(const TokenSegment* row, int t0, int T, int window) {
  const int t1 = std::min(row ? row[t0].end : T, t0 + kAttentionRows);
  const int k0 = key_range(row, t0, window).begin;
  return {t0, t1 - t0, k0, key_range(row, t1 - 1, window).end - k0};
}

// One (batch, head)'s rows: q, k, v heads (rows ld apart), out and dout heads (rows ldo apart).
struct Head {
  const float *q, *k, *v;
  int ld, ldo;
};
Head head_of(const float* qkv, int b, int h, int T, int NH, int NKV, int hd) {
  const int ld = (NH + 2 * NKV) * hd, group = NH / NKV;
  const float* rows = qkv + size_t(b) * T * ld;
  return {rows + size_t(h) * hd, rows + size_t(NH + h / group) * hd, rows + size_t(NH + NKV + h / group) * hd, ld,
          NH * hd};
}

}  // namespace

void gqa_attention_forward(float* out, float* lse, float* scratch, const float* qkv, int B, int T, int NH, int NKV,
                           int hd, const TokenSegment* segments, int window, AttentionScores scores) {
  KernelTimer timer(KernelKind::AttentionForward);
  const float scale = score_scale(scores, hd);
  const size_t block_floats = size_t(std::min(T, kAttentionRows)) * size_t(T);
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; b++) {
    for (int h = 0; h < NH; h++) {
      const Head x = head_of(qkv, b, h, T, NH, NKV, hd);
      float* p = scratch + (size_t(b) * NH + h) * block_floats;
      float* row_lse = lse + (size_t(b) * NH + h) * T;
      float* y = out + size_t(b) * T * x.ldo + size_t(h) * hd;
      const TokenSegment* row = segments ? segments + size_t(b) * T : nullptr;
      for (int t0 = 0; t0 < T; t0 += block_of(row, t0, T, window).rows) {
        const Block blk = block_of(row, t0, T, window);
        // scores[t, j] = q_t · k_j / sqrt(hd), then each row's softmax over its keys
        gemm(Trans::No, Trans::Yes, blk.rows, blk.keys, hd, scale, x.q + size_t(t0) * x.ld, x.ld,
             x.k + size_t(blk.k0) * x.ld, x.ld, 0.0f, p, blk.keys);
        for (int r = 0; r < blk.rows; r++) {
          const KeyRange keys = key_range(row, t0 + r, window);
          if (scores.softcap > 0.0f)
            softcap_row(p + size_t(r) * blk.keys, keys.begin - blk.k0, keys.end - blk.k0, scores.softcap);
          row_lse[t0 + r] =
              softmax_row(p + size_t(r) * blk.keys, keys.begin - blk.k0, keys.end - blk.k0, blk.keys);
        }
        // out_t = Σ_j p[t, j] · v_j
        gemm(Trans::No, Trans::No, blk.rows, hd, blk.keys, 1.0f, p, blk.keys, x.v + size_t(blk.k0) * x.ld, x.ld, 0.0f,
             y + size_t(t0) * x.ldo, x.ldo);
      }
    }
  }
}

void gqa_attention_cached_forward(float* out, float* k_cache, float* v_cache, const float* qkv, int B, int T, int pos,
                                  int S, int NH, int NKV, int hd, int window, AttentionScores scores) {
  KernelTimer timer(KernelKind::AttentionForward);
  const int ld = (NH + 2 * NKV) * hd, ldo = NH * hd, ldc = NKV * hd, group = NH / NKV;
  // The positions [k0, pos + T) the new queries attend to: with a window, from the first query's
  // first key on. Those before pos are in the ring, in at most two runs of rows (before and after
  // it wraps), the new ones in qkv.
  const int k0 = key_range(nullptr, pos, window).begin, L = pos + T - k0;
  const int wrap = std::min(pos, (k0 / S + 1) * S);  // the first position past the ring's last row
  const float scale = score_scale(scores, hd);
#pragma omp parallel
  {
    std::vector<float> att(size_t(T) * L);  // this thread's scores and probabilities, [T, L]
#pragma omp for collapse(2) schedule(static)
    for (int b = 0; b < B; b++) {
      for (int h = 0; h < NH; h++) {
        const float* q = qkv + size_t(b) * T * ld + size_t(h) * hd;
        const size_t head = size_t(h / group) * hd;
        struct Run {
          int first, count;  // positions
          const float *k, *v;
          int ld;
        };
        auto ring_run = [&](int first, int end) {
          const size_t at = (size_t(b) * S + size_t(first % S)) * ldc + head;
          return Run{first, end - first, k_cache + at, v_cache + at, ldc};
        };
        const float* new_k = qkv + size_t(b) * T * ld + size_t(NH) * hd + head;
        const Run runs[] = {ring_run(k0, wrap), ring_run(wrap, pos), {pos, T, new_k, new_k + size_t(NKV) * hd, ld}};
        for (const Run& r : runs)
          if (r.count > 0)
            gemm(Trans::No, Trans::Yes, T, r.count, hd, scale, q, ld, r.k, r.ld, 0.0f, att.data() + (r.first - k0), L);
        for (int t = 0; t < T; t++) {
          const KeyRange keys = key_range(nullptr, pos + t, window);
          if (scores.softcap > 0.0f)
            softcap_row(att.data() + size_t(t) * L, keys.begin - k0, keys.end - k0, scores.softcap);
          softmax_row(att.data() + size_t(t) * L, keys.begin - k0, keys.end - k0, L);
        }
        float beta = 0.0f;
        for (const Run& r : runs)
          if (r.count > 0) {
            gemm(Trans::No, Trans::No, T, hd, r.count, 1.0f, att.data() + (r.first - k0), L, r.v, r.ld, beta,
                 out + size_t(b) * T * ldo + size_t(h) * hd, ldo);
            beta = 1.0f;
          }
      }
    }
  }
  // Then the new tokens' k and v heads into their rows: the last S of them, where earlier ones would
  // be overwritten.
  for (int b = 0; b < B; b++)
    for (int t = std::max(0, T - S); t < T; t++) {
      const float* row = qkv + (size_t(b) * T + t) * ld;
      const size_t at = (size_t(b) * S + size_t((pos + t) % S)) * ldc;
      std::copy(row + size_t(NH) * hd, row + size_t(NH + NKV) * hd, k_cache + at);
      std::copy(row + size_t(NH + NKV) * hd, row + size_t(ld), v_cache + at);
    }
}

void gqa_attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* out,
                            const float* lse, int B, int T, int NH, int NKV, int hd, const TokenSegment* segments,
                            int window, AttentionScores scores) {
  KernelTimer timer(KernelKind::AttentionBackward);
  const int group = NH / NKV;
  const float scale = score_scale(scores, hd);
  const size_t block_floats = size_t(std::min(T, kAttentionRows)) * size_t(T);
  // One (batch, key/value head) per task: its q heads add to the same dk and dv in order.
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; b++) {
    for (int kv = 0; kv < NKV; kv++) {
      float* p = scratch + (size_t(b) * NKV + kv) * 2 * block_floats;
      float* ds = p + block_floats;
      for (int h = kv * group; h < (kv + 1) * group; h++) {
        const Head x = head_of(qkv, b, h, T, NH, NKV, hd);
        float* dq = dqkv + (x.q - qkv);
        float* dk = dqkv + (x.k - qkv);
        float* dv = dqkv + (x.v - qkv);
        const float* dy = dout + size_t(b) * T * x.ldo + size_t(h) * hd;
        const float* y = out + size_t(b) * T * x.ldo + size_t(h) * hd;
        const float* row_lse = lse + (size_t(b) * NH + h) * T;
        const TokenSegment* row = segments ? segments + size_t(b) * T : nullptr;
        for (int t0 = 0; t0 < T; t0 += block_of(row, t0, T, window).rows) {
          const Block blk = block_of(row, t0, T, window);
          const float* q0 = x.q + size_t(t0) * x.ld;
          const float* k0 = x.k + size_t(blk.k0) * x.ld;
          const float* v0 = x.v + size_t(blk.k0) * x.ld;
          const float* dy0 = dy + size_t(t0) * x.ldo;
          // The forward's probabilities, from the scores and the saved log-sum-exp.
          gemm(Trans::No, Trans::Yes, blk.rows, blk.keys, hd, scale, q0, x.ld, k0, x.ld, 0.0f, p, blk.keys);
          for (int r = 0; r < blk.rows; r++) {
            const KeyRange keys = key_range(row, t0 + r, window);
            if (scores.softcap > 0.0f)
              softcap_row(p + size_t(r) * blk.keys, keys.begin - blk.k0, keys.end - blk.k0, scores.softcap);
            probabilities_row(p + size_t(r) * blk.keys, keys.begin - blk.k0, keys.end - blk.k0, blk.keys,
                              row_lse[t0 + r]);
          }
          // dp = dout · vᵀ;  dv += pᵀ · dout
          gemm(Trans::No, Trans::Yes, blk.rows, blk.keys, hd, 1.0f, dy0, x.ldo, v0, x.ld, 0.0f, ds, blk.keys);
          gemm(Trans::Yes, Trans::No, blk.keys, hd, blk.rows, 1.0f, p, blk.keys, dy0, x.ldo, 1.0f,
               dv + size_t(blk.k0) * x.ld, x.ld);
          // softmax backward: ds = p · (dp - D)
          for (int r = 0; r < blk.rows; r++)
            score_gradient_row(ds + size_t(r) * blk.keys, p + size_t(r) * blk.keys, blk.keys,
                               dy0 + size_t(r) * x.ldo, y + size_t(t0 + r) * x.ldo, hd, scores.softcap,
                               row_lse[t0 + r]);
          // scores = scale · q · kᵀ:  dq += scale · ds · k;  dk += scale · dsᵀ · q
          gemm(Trans::No, Trans::No, blk.rows, hd, blk.keys, scale, ds, blk.keys, k0, x.ld, 1.0f,
               dq + size_t(t0) * x.ld, x.ld);
          gemm(Trans::Yes, Trans::No, blk.keys, hd, blk.rows, scale, ds, blk.keys, q0, x.ld, 1.0f,
               dk + size_t(blk.k0) * x.ld, x.ld);
        }
      }
    }
  }
}

}  // namespace zt::cpu
