#include "kernels/cuda/kv_attention.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/cuda/common.cuh"

namespace zt::cuda {

namespace {

constexpr int kThreads = 128;  // keys per tile, and output channels per pass
constexpr int kChannelsPerThread = kCachedAttentionMaxHeadSize / kThreads;
constexpr int kCopyBlock = 256;

// The new tokens' k and v heads into their rows of the rings (position p at row p % S): the last
// `count` of the T tokens of every sequence (the earlier ones would be overwritten).
template <typename E>
__global__ void __launch_bounds__(kCopyBlock) kv_write_kernel(E* k_cache, E* v_cache, const E* qkv, int B, int T,
                                                              int count, int pos, int S, int NH, int NKV, int hd) {
  const size_t width = size_t(NKV) * hd;  // of one row of a cache
  const size_t total = size_t(B) * count * width;
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const size_t c = i % width, bt = i / width, b = bt / size_t(count), t = size_t(T - count) + bt % size_t(count);
  const E* row = qkv + (b * size_t(T) + t) * size_t(NH + 2 * NKV) * hd;
  const size_t at = (b * size_t(S) + (size_t(pos) + t) % size_t(S)) * width + c;
  k_cache[at] = row[size_t(NH) * hd + c];
  v_cache[at] = row[size_t(NH + NKV) * hd + c];
}

template <typename E>
__global__ void __launch_bounds__(kThreads) cached_attention_kernel(E* out, const E* k_cache, const E* v_cache,
                                                                    const E* qkv, int T, int pos, int S, int NH,
                                                                    int NKV, int hd, int window, float scale,
                                                                    float softcap) {
  __shared__ float q[kCachedAttentionMaxHeadSize];
  __shared__ float p[kThreads];  // the tile's unnormalised probabilities
  __shared__ float scratch[kWarpSize];
  const int t = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const size_t ldc = size_t(NKV) * hd, ld = size_t(NH + 2 * NKV) * hd, head = size_t(h / (NH / NKV)) * hd;
  const E* q_row = qkv + (size_t(b) * T + t) * ld + size_t(h) * hd;
  for (int d = threadIdx.x; d < hd; d += blockDim.x) q[d] = to_float(q_row[d]);
  __syncthreads();
  // Position j's key (its value follows NKV heads on in qkv, in v_cache at the same row): in the
  // ring before pos, in qkv from pos on.
  auto key = [&](const E* cache, int j, size_t skip) {
    return j < pos ? cache + (size_t(b) * S + size_t(j % S)) * ldc + head
                   : qkv + (size_t(b) * T + size_t(j - pos)) * ld + size_t(NH) * hd + skip + head;
  };
  // causal: up to this query's own position, the last `window` of them with a window
  const int len = pos + t + 1, first = window > 0 && len > window ? len - window : 0;

  float m = -INFINITY, l = 0.0f, acc[kChannelsPerThread] = {};
  for (int j0 = first; j0 < len; j0 += kThreads) {
    const int j = j0 + threadIdx.x;
    float s = -INFINITY;
    if (j < len) {
      const E* kj = key(k_cache, j, 0);
      float dot = 0.0f;
      for (int d = 0; d < hd; d++) dot += q[d] * to_float(kj[d]);
      s = softcap > 0.0f ? softcap * tanhf(dot * scale / softcap) : dot * scale;
    }
    const float m_new = fmaxf(m, block_max(s, scratch));  // finite: every tile holds a key
    const float e = j < len ? expf(s - m_new) : 0.0f;
    p[threadIdx.x] = e;
    const float rescale = expf(m - m_new);  // 0 for the first tile
    l = l * rescale + block_sum(e, scratch);  // its barriers also publish p
    const int keys = min(kThreads, len - j0);
#pragma unroll
    for (int i = 0; i < kChannelsPerThread; i++) {
      const int d = threadIdx.x + i * kThreads;
      if (d >= hd) continue;
      float a = acc[i] * rescale;
      for (int jj = 0; jj < keys; jj++) a += p[jj] * to_float(key(v_cache, j0 + jj, size_t(NKV) * hd)[d]);
      acc[i] = a;
    }
    m = m_new;
    __syncthreads();  // p is rewritten by the next tile
  }
  E* o = out + (size_t(b) * T + t) * size_t(NH) * hd + size_t(h) * hd;
#pragma unroll
  for (int i = 0; i < kChannelsPerThread; i++) {
    const int d = threadIdx.x + i * kThreads;
    if (d < hd) o[d] = from_float<E>(acc[i] / l);
  }
}

}  // namespace

void attention_cached_forward(DType dt, void* out, void* k_cache, void* v_cache, const void* qkv, int B, int T,
                              int pos, int S, int NH, int NKV, int hd, int window, cudaStream_t stream,
                              AttentionScores scores) {
  // The past the queries read: from the first query's first key on, within the ring's S rows.
  const int past = window > 0 ? std::min(pos, window - 1) : pos;
  require(B >= 0 && T >= 0 && pos >= 0 && S > 0 && past <= S && NH > 0 && NKV > 0 && NH % NKV == 0 && hd > 0 &&
              hd <= kCachedAttentionMaxHeadSize && window >= 0,
          "attention_cached_forward: bad shape B = ", B, ", T = ", T, ", pos = ", pos, ", S = ", S, ", NH = ", NH,
          ", NKV = ", NKV, ", hd = ", hd, ", window = ", window,
          " (need the ring's S rows to hold the past the queries read: S >= pos, or min(pos, window - 1) with a "
          "window; NKV dividing NH, hd in [1, ",
          kCachedAttentionMaxHeadSize, "], window >= 0)");
  if (B == 0 || T == 0) return;
  require(T <= 65535 && NH <= 65535 && B <= 65535, "attention_cached_forward: grid of ", T, " x ", NH, " x ", B,
          " blocks exceeds 65535 in a dimension");
  const int written = std::min(T, S);
  const size_t copies = size_t(B) * written * NKV * hd;
  const float scale = scores.scale > 0.0f ? scores.scale : 1.0f / std::sqrt(float(hd));
  dispatch_activation(dt, "attention_cached_forward", [&](auto tag) {
    using E = decltype(tag);
    // Attention first: the new tokens' rows may hold keys the queries read until it is done.
    launch(cached_attention_kernel<E>, dim3(unsigned(T), unsigned(NH), unsigned(B)), kThreads, 0, stream,
           "cached_attention_kernel", static_cast<E*>(out), static_cast<const E*>(k_cache),
           static_cast<const E*>(v_cache), static_cast<const E*>(qkv), T, pos, S, NH, NKV, hd, window, scale,
           scores.softcap);
    launch(kv_write_kernel<E>, grid_size(copies, kCopyBlock, "attention_cached_forward"), kCopyBlock, 0, stream,
           "kv_write_kernel", static_cast<E*>(k_cache), static_cast<E*>(v_cache), static_cast<const E*>(qkv), B, T,
           written, pos, S, NH, NKV, hd);
  });
}

}  // namespace zt::cuda
