#include "kernels/cuda/cuda_rope.hpp"

#include "kernels/cuda/common.cuh"

namespace zt::cuda {

namespace {

// Thread item = ((bt · (NH + NKV)) + head) · groups + group: 8 pairs (i, i + half) of one q or k head.
template <typename T, bool kVector>
__global__ void rope_kernel(T* qkv, const float* cos, const float* sin, const TokenSegment* segments, int N, int T_,
                            int heads, int width, int half, float sign) {
  const int groups = (half + kVec - 1) / kVec;
  const size_t item = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (item >= size_t(N) * heads * groups) return;
  const int i = int(item % size_t(groups)) * kVec;
  const size_t head_row = item / size_t(groups);
  const int h = int(head_row % size_t(heads));
  const size_t bt = head_row / size_t(heads);
  T* x1 = qkv + bt * size_t(width) + size_t(h) * 2 * half;
  T* x2 = x1 + half;
  const size_t t = bt % size_t(T_) - size_t(segments ? segments[bt].begin : 0);  // the position in its sample
  float a[kVec], b[kVec], c[kVec], s[kVec];
  load_floats<kVector>(a, x1, size_t(i), size_t(half));
  load_floats<kVector>(b, x2, size_t(i), size_t(half));
  load_floats<kVector>(c, cos + t * half, size_t(i), size_t(half));
  load_floats<kVector>(s, sin + t * half, size_t(i), size_t(half));
#pragma unroll
  for (int k = 0; k < kVec; k++) {
    const float si = sign * s[k];
    const float y1 = a[k] * c[k] - b[k] * si, y2 = b[k] * c[k] + a[k] * si;
    a[k] = y1;
    b[k] = y2;
  }
  store_floats<kVector>(x1, a, size_t(i), size_t(half));
  store_floats<kVector>(x2, b, size_t(i), size_t(half));
}

void rotate(DType dt, void* qkv, const float* cos, const float* sin, const TokenSegment* segments, int B, int T, int NH,
            int NKV, int hd, float sign, cudaStream_t stream, const char* op) {
  require(B >= 0 && T >= 0 && NH > 0 && NKV > 0 && hd > 0, op, ": bad shape B = ", B, ", T = ", T, ", NH = ", NH,
          ", NKV = ", NKV, ", hd = ", hd);
  require(hd % 2 == 0, op, ": head size ", hd, " is odd (the rotation pairs the two halves of a head)");
  const size_t N = size_t(B) * size_t(T);
  require(N <= size_t(INT_MAX), op, ": B·T = ", N, " tokens exceed 2^31 - 1");
  if (N == 0) return;
  const int half = hd / 2, heads = NH + NKV, width = (NH + 2 * NKV) * hd;
  const size_t threads = N * size_t(heads) * ceil_div(size_t(half), kVec);
  // 16-byte loads of both halves and of the tables' rows: every offset a multiple of 8 elements.
  const bool vector = half % kVec == 0 && aligned16(qkv) && aligned16(cos) && aligned16(sin);
  dispatch_activation(dt, op, [&](auto tag) {
    using E = decltype(tag);
    launch(vector ? rope_kernel<E, true> : rope_kernel<E, false>, grid_size(threads, kElementwiseBlock, op),
           kElementwiseBlock, 0, stream, "rope_kernel", static_cast<E*>(qkv), cos, sin, segments, int(N), T, heads,
           width, half, sign);
  });
}

}  // namespace

void rope_forward(DType dt, void* qkv, const float* cos, const float* sin, int B, int T, int NH, int NKV, int hd,
                  cudaStream_t stream, const TokenSegment* segments) {
  rotate(dt, qkv, cos, sin, segments, B, T, NH, NKV, hd, 1.0f, stream, "rope_forward");
}

void rope_backward(DType dt, void* dqkv, const float* cos, const float* sin, int B, int T, int NH, int NKV, int hd,
                   cudaStream_t stream, const TokenSegment* segments) {
  rotate(dt, dqkv, cos, sin, segments, B, T, NH, NKV, hd, -1.0f, stream, "rope_backward");
}

}  // namespace zt::cuda
