#include "kernels/cpu/cpu_vector_ops.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "optim/grad_clip.hpp"

namespace zt::cpu {

namespace {
// The unit of chunked work: small enough to stay in cache, and the fixed cut of sum_of_squares.
constexpr size_t kChunk = 16384;

const char* bytes(ConstView v) { return static_cast<const char*>(v.data); }
char* bytes(View v) { return static_cast<char*>(v.data); }

// Σ (x[i]·factor)² over one chunk in sixteen running double sums (element i goes to lane i % 16):
// a fixed order, so SSE2 and AVX2 code give the same bits; no fused multiply-adds
// (-ffp-contract=off).
typedef double double4 __attribute__((vector_size(32)));
typedef float float4 __attribute__((vector_size(16)));

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
double chunk_sum_of_squares(const float* x, size_t n, float factor) {
  constexpr int kVectors = 4;
  double4 acc[kVectors] = {};
  const float4 f4 = {factor, factor, factor, factor};
  size_t i = 0;
  for (; i + 4 * kVectors <= n; i += 4 * kVectors)
    for (int k = 0; k < kVectors; ++k) {
      float4 f;
      std::memcpy(&f, x + i + 4 * k, sizeof(f));
      const double4 d = __builtin_convertvector(f * f4, double4);
      acc[k] += d * d;
    }
  double tail = 0;
  for (; i < n; ++i) tail += double(x[i] * factor) * double(x[i] * factor);
  const double4 sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  return ((sum[0] + sum[1]) + (sum[2] + sum[3])) + tail;
}
}  // namespace

void CpuVectorOps::convert(ConstView src, View dst, size_t n) {
  zt::convert(src.dtype, src.data, dst.dtype, dst.data, n);
}

void CpuVectorOps::add(ConstView src, View dst, size_t n) {
  if (src.dtype == DType::F32 && dst.dtype == DType::F32) {
    const float* s = static_cast<const float*>(src.data);
    float* d = static_cast<float*>(dst.data);
    for (size_t i = 0; i < n; ++i) d[i] += s[i];
    return;
  }
  float a[kChunk], b[kChunk];
  const size_t ss = dtype_size(src.dtype), ds = dtype_size(dst.dtype);
  for (size_t i = 0; i < n; i += kChunk) {
    const size_t k = std::min(kChunk, n - i);
    to_f32(dst.dtype, bytes(dst) + i * ds, a, k);
    to_f32(src.dtype, bytes(src) + i * ss, b, k);
    for (size_t j = 0; j < k; ++j) a[j] += b[j];
    from_f32(dst.dtype, a, bytes(dst) + i * ds, k);
  }
}

void CpuVectorOps::round_to(DType dtype, float* x, size_t n) {
  if (dtype == DType::F32) return;
  uint16_t tmp[kChunk];
  for (size_t i = 0; i < n; i += kChunk) {
    const size_t k = std::min(kChunk, n - i);
    from_f32(dtype, x + i, tmp, k);
    to_f32(dtype, tmp, x + i, k);
  }
}

double CpuVectorOps::sum_of_squares(ConstView x, size_t n, float factor) {
  const size_t esz = dtype_size(x.dtype);
  const size_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> partial(chunks, 0.0);
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (size_t c = 0; c < chunks; ++c) {
    const size_t len = std::min(kChunk, n - c * kChunk);
    const char* src = bytes(x) + c * kChunk * esz;
    if (x.dtype == DType::F32) {
      partial[c] = chunk_sum_of_squares(reinterpret_cast<const float*>(src), len, factor);
    } else {
      float g[kChunk];
      to_f32(x.dtype, src, g, len);
      partial[c] = chunk_sum_of_squares(g, len, factor);
    }
  }
  double total = 0;
  for (double p : partial) total += p;
  return total;
}

void CpuVectorOps::adamw(std::span<const AdamSegment> segments, const AdamState& state, ConstView grads,
                         float grad_factor, View params, const AdamWHyper& hyper, int64_t step) {
  const size_t gsz = dtype_size(grads.dtype), psz = dtype_size(params.dtype);
  const bool write_params = params.data != state.master;
  // Elementwise, so the threads' split never changes a bit. Threads take whole segments: callers
  // cut large tensors into chunk-sized segments (ShardOptimizer does) so that the work spreads.
#pragma omp parallel
  {
    std::vector<float> g(kChunk);
#pragma omp for schedule(static)
    for (size_t s = 0; s < segments.size(); ++s) {
      const AdamSegment& seg = segments[s];
      for (size_t a = seg.offset; a < seg.offset + seg.size; a += kChunk) {
        const size_t k = std::min(kChunk, seg.offset + seg.size - a);
        to_f32(grads.dtype, bytes(grads) + a * gsz, g.data(), k);
        for (size_t i = 0; i < k; ++i) g[i] *= grad_factor;
        adamw_update(state.master + a, g.data(), state.m + a, state.v + a, k, hyper, step, seg.decay);
        if (write_params) from_f32(params.dtype, state.master + a, bytes(params) + a * psz, k);
      }
    }
  }
}

void CpuVectorOps::sum_of_squares_into(ConstView x, size_t n, float factor, double* sum) {
  *sum = sum_of_squares(x, n, factor);
}

void CpuVectorOps::grad_norm(const double* sums, int count, float factor, double max_norm, bool skip_nonfinite,
                             GradNorm* out) {
  double total = 0.0;
  for (int i = 0; i < count; ++i) total += sums[i];
  out->sum_of_squares = total;
  out->norm = std::sqrt(total);
  out->grad_factor = float(factor * clip_coefficient(out->norm, max_norm));
  out->skip = skip_nonfinite && !std::isfinite(total) ? 1 : 0;
}

void CpuVectorOps::adamw(std::span<const AdamSegment> segments, const AdamState& state, ConstView grads,
                         const GradNorm* norm, View params, const AdamWHyper& hyper, int64_t step) {
  if (!norm->skip) adamw(segments, state, grads, norm->grad_factor, params, hyper, step);
}

}  // namespace zt::cpu
