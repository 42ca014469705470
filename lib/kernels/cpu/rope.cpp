#include "kernels/cpu/rope.hpp"

#include <cstddef>

#include "kernels/cpu/kernel_profile.hpp"

namespace zt::cpu {

namespace {

// sign +1: the rotation by the position's angles; -1: by their negatives (its transpose).
void rotate(float* qkv, const float* cos, const float* sin, int B, int T, int NH, int NKV, int hd, float sign,
            const TokenSegment* segments) {
  const int half = hd / 2, heads = NH + NKV;
  const size_t stride = size_t(NH + 2 * NKV) * hd;
#pragma omp parallel for schedule(static)
  for (int bt = 0; bt < B * T; bt++) {
    const size_t t = size_t(bt % T - (segments ? segments[bt].begin : 0));  // the position in its sample
    const float* c = cos + t * half;
    const float* s = sin + t * half;
    for (int h = 0; h < heads; h++) {  // the q heads, then the k heads: side by side
      float* x1 = qkv + size_t(bt) * stride + size_t(h) * hd;
      float* x2 = x1 + half;
#pragma omp simd
      for (int i = 0; i < half; i++) {
        const float a = x1[i], b = x2[i], si = sign * s[i];
        x1[i] = a * c[i] - b * si;
        x2[i] = b * c[i] + a * si;
      }
    }
  }
}

}  // namespace

void rope_forward(float* qkv, const float* cos, const float* sin, int B, int T, int NH, int NKV, int hd,
                  const TokenSegment* segments) {
  KernelTimer timer(KernelKind::RopeForward);
  rotate(qkv, cos, sin, B, T, NH, NKV, hd, 1.0f, segments);
}

void rope_backward(float* dqkv, const float* cos, const float* sin, int B, int T, int NH, int NKV, int hd,
                   const TokenSegment* segments) {
  KernelTimer timer(KernelKind::RopeBackward);
  rotate(dqkv, cos, sin, B, T, NH, NKV, hd, -1.0f, segments);
}

}  // namespace zt::cpu
