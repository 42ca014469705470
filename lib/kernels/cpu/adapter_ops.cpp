#include "kernels/cpu/adapter_ops.hpp"

#include "kernels/dropout_mask.hpp"

namespace zt::cpu {

void scale_columns(float* dst, int dst_ld, const float* src, int src_ld, int N, int width, float scale,
                   bool accumulate) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    float* d = dst + size_t(n) * size_t(dst_ld);
    const float* s = src + size_t(n) * size_t(src_ld);
    if (accumulate)
      for (int j = 0; j < width; j++) d[j] += scale * s[j];
    else
      for (int j = 0; j < width; j++) d[j] = scale * s[j];
  }
}

void dropout(float* out, const float* inp, size_t n, float p, uint64_t seed, bool accumulate) {
  const uint64_t below = dropout_threshold(p);
  const float keep_scale = 1.0f / (1.0f - p);
  const std::ptrdiff_t count = std::ptrdiff_t(n);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < count; i++) {
    const float v = dropout_keeps(seed, uint64_t(i), below) ? inp[i] * keep_scale : 0.0f;
    out[i] = accumulate ? out[i] + v : v;
  }
}

}  // namespace zt::cpu
