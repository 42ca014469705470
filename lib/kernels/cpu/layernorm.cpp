#include "kernels/cpu/layernorm.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "kernels/cpu/kernel_profile.hpp"

namespace zt::cpu {

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int N, int C) {
  KernelTimer timer(KernelKind::LayerNormForward);
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    const float* x = inp + size_t(n) * C;
    float* y = out + size_t(n) * C;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int c = 0; c < C; c++) sum += x[c];
    const float m = sum / float(C);
    float sq = 0.0f;  // two passes: the variance does not lose precision to a large mean
#pragma omp simd reduction(+ : sq)
    for (int c = 0; c < C; c++) sq += (x[c] - m) * (x[c] - m);
    const float s = 1.0f / std::sqrt(sq / float(C) + kLayerNormEps);
#pragma omp simd
    for (int c = 0; c < C; c++) y[c] = (x[c] - m) * s * weight[c] + bias[c];
    mean[n] = m;
    rstd[n] = s;
  }
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C) {
  KernelTimer timer(KernelKind::LayerNormBackward);
  // Input gradient: rows are independent.
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    const float* x = inp + size_t(n) * C;
    const float* dy = dout + size_t(n) * C;
    float* dx = dinp + size_t(n) * C;
    const float m = mean[n], s = rstd[n];
    float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
#pragma omp simd reduction(+ : dnorm_mean, dnorm_norm_mean)
    for (int c = 0; c < C; c++) {
      float norm = (x[c] - m) * s;
      float dnorm = weight[c] * dy[c];
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * norm;
    }
    dnorm_mean /= float(C);
    dnorm_norm_mean /= float(C);
#pragma omp simd
    for (int c = 0; c < C; c++) {
      float norm = (x[c] - m) * s;
      float dnorm = weight[c] * dy[c];
      dx[c] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
    }
  }
  if (!dweight && !dbias) return;
  // Parameter gradients: channels are split across threads and each sums the rows in order, so
  // the result does not depend on the thread count.
  constexpr int kChannelBlock = 128;
  const int blocks = (C + kChannelBlock - 1) / kChannelBlock;
#pragma omp parallel for schedule(static)
  for (int blk = 0; blk < blocks; blk++) {
    const int c0 = blk * kChannelBlock, c1 = std::min(C, c0 + kChannelBlock);
    float dw[kChannelBlock] = {}, db[kChannelBlock] = {};
    for (int n = 0; n < N; n++) {
      const float* x = inp + size_t(n) * C;
      const float* dy = dout + size_t(n) * C;
      const float m = mean[n], s = rstd[n];
      for (int c = c0; c < c1; c++) {
        dw[c - c0] += (x[c] - m) * s * dy[c];
        db[c - c0] += dy[c];
      }
    }
    for (int c = c0; c < c1; c++) {
      if (dweight) dweight[c] += dw[c - c0];
      if (dbias) dbias[c] += db[c - c0];
    }
  }
}

}  // namespace zt::cpu
