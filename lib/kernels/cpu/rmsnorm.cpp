#include "kernels/cpu/rmsnorm.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>

#include "kernels/cpu/kernel_profile.hpp"
#include "kernels/cpu/simd.hpp"

namespace zt::cpu {

namespace {

// Where the rows of a norm lie: row i is vector i % H of group i / H; groups are `stride`
// elements apart, the H vectors of a group side by side (C each). Its rstd is at
// (i / H)·rstd_stride + i % H.
struct Rows {
  int count, H;
  size_t stride;
  int rstd_stride;
  size_t at(int i, int C) const { return size_t(i / H) * stride + size_t(i % H) * size_t(C); }
  size_t rstd_at(int i) const { return size_t(i / H) * size_t(rstd_stride) + size_t(i % H); }
};

// Explicit 16-lane partial sums, added in a fixed order: the same value for every ISA version.
ZT_KERNEL_CLONES float sum_of_squares(const float* x, int C) {
  const size_t n = size_t(C);
  f32x16 acc = splat(0.0f);
  size_t c = 0;
  for (; c + kLanes <= n; c += kLanes) {
    const f32x16 v = load(x + c);
    acc += v * v;
  }
  if (c < n) {
    const f32x16 v = load_partial(x + c, n - c, 0.0f);
    acc += v * v;
  }
  return hsum(acc);
}

// y = (x · r) · (off + w), the order of LlamaRMSNorm (and of Gemma's, off 1); returns r.
ZT_KERNEL_CLONES float norm_row(float* y, const float* x, const float* w, int C, float eps, float off) {
  const float r = 1.0f / std::sqrt(sum_of_squares(x, C) / float(C) + eps);
  for (int c = 0; c < C; c++) y[c] = x[c] * r * (off + w[c]);
  return r;
}

// dx += r · (g - x̂ · mean(g · x̂)), g = (off + w) · dy, x̂ = x · r
ZT_KERNEL_CLONES void norm_row_backward(float* dx, const float* x, const float* w, const float* dy, float r, int C,
                                        float off) {
  const size_t n = size_t(C);
  f32x16 acc = splat(0.0f);
  const f32x16 rv = splat(r), ov = splat(off);
  size_t c = 0;
  for (; c + kLanes <= n; c += kLanes) acc += (ov + load(w + c)) * load(dy + c) * (load(x + c) * rv);
  if (c < n)
    acc += (ov + load_partial(w + c, n - c, 0.0f)) * load_partial(dy + c, n - c, 0.0f) *
           (load_partial(x + c, n - c, 0.0f) * rv);
  const float mean = hsum(acc) / float(C);
  for (c = 0; c < n; c++) dx[c] += ((off + w[c]) * dy[c] - x[c] * r * mean) * r;
}

void norm_rows_forward(float* out, float* rstd, const float* inp, const float* w, const Rows& rows, int C,
                       float eps, float off) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < rows.count; i++) {
    const size_t o = rows.at(i, C);
    rstd[rows.rstd_at(i)] = norm_row(out + o, inp + o, w, C, eps, off);
  }
}

void norm_rows_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* w,
                        const float* rstd, const Rows& rows, int C, float off) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < rows.count; i++) {
    const size_t o = rows.at(i, C);
    norm_row_backward(dinp + o, inp + o, w, dout + o, rstd[rows.rstd_at(i)], C, off);
  }
  if (!dweight) return;
  // dweight[c] += Σ_rows dy · x̂: channels split across threads, each summing the rows in order,
  // so the result does not depend on the thread count.
  constexpr int kChannelBlock = 128;
  const int blocks = (C + kChannelBlock - 1) / kChannelBlock;
#pragma omp parallel for schedule(static)
  for (int blk = 0; blk < blocks; blk++) {
    const int c0 = blk * kChannelBlock, c1 = std::min(C, c0 + kChannelBlock);
    float dw[kChannelBlock] = {};
    for (int i = 0; i < rows.count; i++) {
      const size_t o = rows.at(i, C);
      const float r = rstd[rows.rstd_at(i)];
      for (int c = c0; c < c1; c++) dw[c - c0] += dout[o + size_t(c)] * (inp[o + size_t(c)] * r);
    }
    for (int c = c0; c < c1; c++) dweight[c] += dw[c - c0];
  }
}

}  // namespace

void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int N, int C, float eps,
                     float weight_offset) {
  KernelTimer timer(KernelKind::RmsNormForward);
  norm_rows_forward(out, rstd, inp, weight, Rows{N, 1, size_t(C), 1}, C, eps, weight_offset);
}

void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                      const float* rstd, int N, int C, float weight_offset) {
  KernelTimer timer(KernelKind::RmsNormBackward);
  norm_rows_backward(dinp, dweight, dout, inp, weight, rstd, Rows{N, 1, size_t(C), 1}, C, weight_offset);
}

void qk_norm_forward(float* out, float* rstd, const float* qkv, const float* q_weight, const float* k_weight, int N,
                     int NH, int NKV, int hd, float eps, float weight_offset) {
  KernelTimer timer(KernelKind::RmsNormForward);
  const size_t stride = size_t(NH + 2 * NKV) * hd, k_at = size_t(NH) * hd, v_at = size_t(NH + NKV) * hd;
  norm_rows_forward(out, rstd, qkv, q_weight, Rows{N * NH, NH, stride, NH + NKV}, hd, eps, weight_offset);
  norm_rows_forward(out + k_at, rstd + NH, qkv + k_at, k_weight, Rows{N * NKV, NKV, stride, NH + NKV}, hd, eps,
                    weight_offset);
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++)
    std::memcpy(out + size_t(n) * stride + v_at, qkv + size_t(n) * stride + v_at, sizeof(float) * size_t(NKV) * hd);
}

void qk_norm_backward(float* dqkv, float* dq_weight, float* dk_weight, const float* dout, const float* qkv,
                      const float* q_weight, const float* k_weight, const float* rstd, int N, int NH, int NKV,
                      int hd, float weight_offset) {
  KernelTimer timer(KernelKind::RmsNormBackward);
  const size_t stride = size_t(NH + 2 * NKV) * hd, k_at = size_t(NH) * hd, v_at = size_t(NH + NKV) * hd;
  norm_rows_backward(dqkv, dq_weight, dout, qkv, q_weight, rstd, Rows{N * NH, NH, stride, NH + NKV}, hd,
                     weight_offset);
  norm_rows_backward(dqkv + k_at, dk_weight, dout + k_at, qkv + k_at, k_weight, rstd + NH,
                     Rows{N * NKV, NKV, stride, NH + NKV}, hd, weight_offset);
  const int V = NKV * hd;
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    float* dv = dqkv + size_t(n) * stride + v_at;
    const float* dy = dout + size_t(n) * stride + v_at;
#pragma omp simd
    for (int c = 0; c < V; c++) dv[c] += dy[c];
  }
}

}  // namespace zt::cpu
