#include "kernels/cpu/moe.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "kernels/cpu/kernel_profile.hpp"

namespace zt::cpu {

void moe_route(float* probs, int32_t* experts, float* weights, const float* logits, int N, int E, int K,
               bool normalize) {
  KernelTimer timer(KernelKind::MoeRouting);
#pragma omp parallel
  {
    std::vector<int> order(size_t(E), 0);
#pragma omp for
    for (int n = 0; n < N; ++n) {
      const float* l = logits + size_t(n) * E;
      float* p = probs + size_t(n) * E;
      float most = l[0];
      for (int e = 1; e < E; ++e) most = std::max(most, l[e]);
      float sum = 0.0f;
      for (int e = 0; e < E; ++e) sum += p[e] = std::exp(l[e] - most);
      for (int e = 0; e < E; ++e) p[e] /= sum;
      // The K most probable, ties to the lower index; then written in index order.
      for (int e = 0; e < E; ++e) order[size_t(e)] = e;
      std::partial_sort(order.begin(), order.begin() + K, order.end(),
                        [&](int a, int b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
      std::sort(order.begin(), order.begin() + K);
      float chosen = 0.0f;
      for (int j = 0; j < K; ++j) chosen += p[order[size_t(j)]];
      for (int j = 0; j < K; ++j) {
        const int e = order[size_t(j)];
        experts[size_t(n) * K + j] = e;
        weights[size_t(n) * K + j] = normalize ? p[e] / chosen : p[e];
      }
    }
  }
}

void moe_gather(float* rows, const float* x, const int32_t* token, int R, int C) {
  KernelTimer timer(KernelKind::MoeRouting);
#pragma omp parallel for
  for (int r = 0; r < R; ++r) std::copy_n(x + size_t(token[r]) * C, C, rows + size_t(r) * C);
}

void moe_combine(float* out, const float* y, const float* weights, const int32_t* row, int N, int K, int C) {
  KernelTimer timer(KernelKind::MoeRouting);
#pragma omp parallel for
  for (int n = 0; n < N; ++n) {
    float* o = out + size_t(n) * C;
    std::fill_n(o, C, 0.0f);
    for (int j = 0; j < K; ++j) {
      const float w = weights[size_t(n) * K + j];
      const float* yr = y + size_t(row[size_t(n) * K + j]) * C;
      for (int c = 0; c < C; ++c) o[c] += w * yr[c];
    }
  }
}

void moe_combine_backward(float* dy, float* dweights, const float* dout, const float* y, const float* weights,
                          const int32_t* row, int N, int K, int C) {
  KernelTimer timer(KernelKind::MoeRouting);
#pragma omp parallel for
  for (int n = 0; n < N; ++n) {
    const float* d = dout + size_t(n) * C;
    for (int j = 0; j < K; ++j) {
      const size_t r = size_t(row[size_t(n) * K + j]);
      const float w = weights[size_t(n) * K + j];
      const float* yr = y + r * C;
      float* dyr = dy + r * C;
      double dot = 0.0;
      for (int c = 0; c < C; ++c) {
        dyr[c] = w * d[c];
        dot += double(d[c]) * double(yr[c]);
      }
      dweights[size_t(n) * K + j] = float(dot);
    }
  }
}

void moe_scatter(float* dx, const float* drows, const int32_t* row, int N, int K, int C, bool accumulate) {
  KernelTimer timer(KernelKind::MoeRouting);
#pragma omp parallel for
  for (int n = 0; n < N; ++n) {
    float* d = dx + size_t(n) * C;
    if (!accumulate) std::fill_n(d, C, 0.0f);
    for (int j = 0; j < K; ++j) {
      const float* dr = drows + size_t(row[size_t(n) * K + j]) * C;
      for (int c = 0; c < C; ++c) d[c] += dr[c];
    }
  }
}

void moe_route_backward(float* dlogits, const float* dweights, const float* probs, const int32_t* experts,
                        const float* daux, int N, int E, int K, bool normalize) {
  KernelTimer timer(KernelKind::MoeRouting);
#pragma omp parallel
  {
    std::vector<float> dp(size_t(E), 0.0f);
#pragma omp for
    for (int n = 0; n < N; ++n) {
      const float* p = probs + size_t(n) * E;
      const int32_t* ex = experts + size_t(n) * K;
      const float* dw = dweights + size_t(n) * K;
      for (int e = 0; e < E; ++e) dp[size_t(e)] = daux ? daux[e] : 0.0f;
      if (normalize) {  // w_j = p_j / S, S the sum of the chosen: dp_j = (dw_j - Σ_i dw_i w_i) / S
        float chosen = 0.0f, dot = 0.0f;
        for (int j = 0; j < K; ++j) chosen += p[ex[j]];
        for (int j = 0; j < K; ++j) dot += dw[j] * (p[ex[j]] / chosen);
        for (int j = 0; j < K; ++j) dp[size_t(ex[j])] += (dw[j] - dot) / chosen;
      } else {
        for (int j = 0; j < K; ++j) dp[size_t(ex[j])] += dw[j];
      }
      float dot = 0.0f;
      for (int e = 0; e < E; ++e) dot += p[e] * dp[size_t(e)];
      float* dl = dlogits + size_t(n) * E;
      for (int e = 0; e < E; ++e) dl[e] = p[e] * (dp[size_t(e)] - dot);
    }
  }
}

namespace {
float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
}  // namespace

void moe_group(int32_t* offsets, int32_t* token, int32_t* row, const int32_t* experts, int N, int E, int K) {
  KernelTimer timer(KernelKind::MoeRouting);
  const size_t slots = size_t(N) * size_t(K);
  std::fill(offsets, offsets + E + 1, 0);
  for (size_t i = 0; i < slots; ++i) offsets[experts[i] + 1]++;
  for (int e = 0; e < E; ++e) offsets[e + 1] += offsets[e];
  std::vector<int32_t> next(offsets, offsets + E);
  for (size_t i = 0; i < slots; ++i) {
    const int32_t r = next[size_t(experts[i])]++;
    token[r] = int32_t(i / size_t(K));
    row[i] = r;
  }
}

void moe_route_stats(double* stats, const float* probs, const int32_t* experts, const int32_t* padding_from, int T,
                     int N, int E, int K) {
  KernelTimer timer(KernelKind::MoeRouting);
  std::fill(stats, stats + 2 * E + 1, 0.0);
  for (int n = 0; n < N; ++n) {
    if (padding_from && n % T >= padding_from[n / T]) continue;
    for (int j = 0; j < K; ++j) stats[experts[size_t(n) * K + j]] += 1;
    for (int e = 0; e < E; ++e) stats[E + e] += probs[size_t(n) * E + e];
    stats[2 * E] += 1;
  }
}

namespace {
// The slots per expert and the tokens of L layers' stats together.
double layers_sum(const double* stats, int L, int E, int i) {
  double sum = 0;
  for (int l = 0; l < L; ++l) sum += stats[size_t(l) * (2 * E + 1) + i];
  return sum;
}
}  // namespace

void moe_aux_grad(float* daux, const double* stats, int L, int E, float scale) {
  const double tokens = layers_sum(stats, L, E, 2 * E);
  for (int e = 0; e < E; ++e)
    daux[e] = tokens > 0 ? float(double(scale) * double(E) * (layers_sum(stats, L, E, e) / tokens) / tokens) : 0.0f;
}

void moe_aux_accumulate(double* acc, const double* stats, int L, int E) {
  const double tokens = layers_sum(stats, L, E, 2 * E);
  double sum = 0;
  if (tokens > 0)
    for (int e = 0; e < E; ++e)
      sum += (layers_sum(stats, L, E, e) / tokens) * (layers_sum(stats, L, E, E + e) / tokens);
  acc[0] += double(E) * sum;
  for (int l = 0; l < L; ++l) {
    const double* count = stats + size_t(l) * (2 * E + 1);
    double total = 0, busiest = 0;
    for (int e = 0; e < E; ++e) {
      total += count[e];
      busiest = std::max(busiest, count[e]);
    }
    if (total > 0) acc[1] = std::max(acc[1], busiest / (total / double(E)));
  }
}

void moe_zero_padding(float* x, const int32_t* padding_from, int B, int T, int width) {
  for (int b = 0; b < B; ++b)
    for (int t = padding_from[b]; t < T; ++t) std::fill_n(x + (size_t(b) * T + t) * width, width, 0.0f);
}

void moe_gate_add(float* out, const float* y, const float* gate, int N, int C) {
  KernelTimer timer(KernelKind::MoeRouting);
#pragma omp parallel for
  for (int n = 0; n < N; ++n) {
    const float s = sigmoid(gate[n]);
    float* o = out + size_t(n) * C;
    const float* yr = y + size_t(n) * C;
    for (int c = 0; c < C; ++c) o[c] += s * yr[c];
  }
}

void moe_gate_add_backward(float* dy, float* dgate, const float* dout, const float* y, const float* gate, int N,
                           int C) {
  KernelTimer timer(KernelKind::MoeRouting);
#pragma omp parallel for
  for (int n = 0; n < N; ++n) {
    const float s = sigmoid(gate[n]);
    const float* d = dout + size_t(n) * C;
    const float* yr = y + size_t(n) * C;
    float* dyr = dy + size_t(n) * C;
    double dot = 0.0;
    for (int c = 0; c < C; ++c) {
      dyr[c] = s * d[c];
      dot += double(d[c]) * double(yr[c]);
    }
    dgate[n] = float(dot) * s * (1.0f - s);
  }
}

}  // namespace zt::cpu
