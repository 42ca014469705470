#include "optim/grad_clip.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace zt {

namespace {
constexpr size_t kChunk = 16384;

// Sixteen running sums in four 4-double vectors (element i goes to lane i % 16): a fixed order,
// so the result is the same with SSE2 or AVX2 code; no fused multiply-adds (-ffp-contract=off).
typedef double double4 __attribute__((vector_size(32)));
typedef float float4 __attribute__((vector_size(16)));

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
double chunk_sum_of_squares(const float* x, size_t n) {
  constexpr int kVectors = 4;
  double4 acc[kVectors] = {};
  size_t i = 0;
  for (; i + 4 * kVectors <= n; i += 4 * kVectors)
    for (int k = 0; k < kVectors; ++k) {
      float4 f;
      std::memcpy(&f, x + i + 4 * k, sizeof(f));
      double4 d = __builtin_convertvector(f, double4);
      acc[k] += d * d;
    }
  double tail = 0;
  for (; i < n; ++i) tail += double(x[i]) * double(x[i]);
  double4 sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  return ((sum[0] + sum[1]) + (sum[2] + sum[3])) + tail;
}

}  // namespace

double sum_of_squares(const float* x, size_t n) {
  const int64_t chunks = int64_t((n + kChunk - 1) / kChunk);
  std::vector<double> partial(size_t(chunks), 0.0);
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    size_t begin = size_t(c) * kChunk;
    partial[size_t(c)] = chunk_sum_of_squares(x + begin, std::min(kChunk, n - begin));
  }
  double total = 0;
  for (double p : partial) total += p;
  return total;
}

void scale_in_place(float* x, size_t n, float factor) {
  const int64_t count = int64_t(n);
#pragma omp parallel for schedule(static) if (count > int64_t(4 * kChunk))
  for (int64_t i = 0; i < count; ++i) x[i] *= factor;
}

double clip_coefficient(double total_norm, double max_norm) {
  if (max_norm <= 0) return 1.0;
  double coefficient = max_norm / (total_norm + 1e-6);
  return coefficient < 1.0 ? coefficient : 1.0;
}

}  // namespace zt
