#include "kernels/cuda/cuda_rmsnorm.hpp"

#include <initializer_list>

#include "kernels/cuda/column_sums.cuh"
#include "kernels/cuda/common.cuh"

namespace zt::cuda {

namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int kRowsPerChunk = 256;  // rows per partial sum of the weight gradients

// Where the normalised vectors lie: each of the N token rows holds `heads` vectors of `width`
// channels side by side; vectors [0, nq) are normalised with the q weight, [nq, nq + nk) with the
// k weight, the rest (the v heads) copied. The rstd of vector h of row n is at n·(nq + nk) + h.
// Plain RMSNorm is one vector of C channels per row, normalised with the q weight. The vectors
// scale by offset + weight (Gemma's norms: 1).
struct Heads {
  int heads, nq, nk, width;
  float offset = 0.0f;
  __host__ __device__ size_t at(size_t n, int h) const { return (n * size_t(heads) + size_t(h)) * size_t(width); }
  __host__ __device__ size_t rstd_at(size_t n, int h) const { return n * size_t(nq + nk) + size_t(h); }
};

Heads plain(int C, float offset = 0.0f) { return {1, 1, 0, C, offset}; }
Heads qk_heads(int NH, int NKV, int hd, float offset = 0.0f) { return {NH + 2 * NKV, NH, NKV, hd, offset}; }

// One warp per vector (item = row · heads + head). kResidual (plain RMSNorm only): the row is first
// formed as a + b, rounded to T and stored in inp (what residual_forward would store, and what
// rmsnorm_forward would then read), in the pass that sums its squares.
template <typename T, bool kVector, bool kResidual>
__global__ void rmsnorm_forward_kernel(T* out, float* rstd, T* inp, const T* a, const T* b, const T* q_weight,
                                       const T* k_weight, Heads g, int N, float eps) {
  const size_t item = size_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  if (item >= size_t(N) * g.heads) return;  // the whole warp leaves together
  const size_t n = item / size_t(g.heads);
  const int h = int(item % size_t(g.heads)), C = g.width;
  const size_t o = g.at(n, h);
  T* x = inp + o;
  T* y = out + o;
  if (h >= g.nq + g.nk) {  // a v head: copied
    for_row_groups<kVector>(x, C, lane,
                            [&](int c, const float(&v)[kVec]) { store_floats<kVector>(y, v, size_t(c), size_t(C)); });
    return;
  }
  const T* w = h < g.nq ? q_weight : k_weight;
  float sq = 0.0f;
  if constexpr (kResidual) {
    for (int c = lane * kVec; c < C; c += kWarpSize * kVec) {
      float u[kVec], v[kVec];
      load_floats<kVector>(u, a + o, size_t(c), size_t(C));
      load_floats<kVector>(v, b + o, size_t(c), size_t(C));
#pragma unroll
      for (int k = 0; k < kVec; k++) u[k] = to_float(from_float<T>(u[k] + v[k]));
      store_floats<kVector>(x, u, size_t(c), size_t(C));
#pragma unroll
      for (int k = 0; k < kVec; k++) sq += u[k] * u[k];  // 0 past the end of the row
    }
  } else {
    for_row_groups<kVector>(x, C, lane, [&](int, const float(&v)[kVec]) {
#pragma unroll
      for (int k = 0; k < kVec; k++) sq += v[k] * v[k];
    });
  }
  const float r = 1.0f / sqrtf(warp_sum(sq) / float(C) + eps);
  for_row_groups<kVector>(x, C, lane, [&](int c, const float(&v)[kVec]) {
    float wv[kVec], z[kVec];
    load_floats<kVector>(wv, w, size_t(c), size_t(C));
#pragma unroll
    for (int k = 0; k < kVec; k++) z[k] = v[k] * r * (g.offset + wv[k]);  // (x · r) · w, LlamaRMSNorm's order
    store_floats<kVector>(y, z, size_t(c), size_t(C));
  });
  if (lane == 0) rstd[g.rstd_at(n, h)] = r;
}

// dx (+)= r · (w·dy - x·r · mean(w·dy · x·r)) per normalised vector; dx (+)= dy for a v head.
template <typename T, bool kVector>
__global__ void rmsnorm_backward_dinp_kernel(T* dinp, const T* dout, const T* inp, const T* q_weight,
                                             const T* k_weight, const float* rstd, Heads g, int N, bool accumulate) {
  const size_t item = size_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  if (item >= size_t(N) * g.heads) return;
  const size_t n = item / size_t(g.heads);
  const int h = int(item % size_t(g.heads)), C = g.width;
  const size_t o = g.at(n, h);
  const T* x = inp + o;
  const T* dy = dout + o;
  T* dx = dinp + o;
  if (h >= g.nq + g.nk) {  // a v head: its gradient passes through
    for_row_groups<kVector>(dy, C, lane, [&](int c, const float(&gv)[kVec]) {
      float d[kVec];
      load_grad_start<kVector>(d, dx, size_t(c), size_t(C), accumulate);
#pragma unroll
      for (int k = 0; k < kVec; k++) d[k] += gv[k];
      store_floats<kVector>(dx, d, size_t(c), size_t(C));
    });
    return;
  }
  const T* w = h < g.nq ? q_weight : k_weight;
  const float r = rstd[g.rstd_at(n, h)];
  float dot = 0.0f;
  for_row_groups<kVector>(x, C, lane, [&](int c, const float(&v)[kVec]) {
    float gv[kVec], wv[kVec];
    load_floats<kVector>(gv, dy, size_t(c), size_t(C));
    load_floats<kVector>(wv, w, size_t(c), size_t(C));
#pragma unroll
    for (int k = 0; k < kVec; k++) dot += (g.offset + wv[k]) * gv[k] * (v[k] * r);  // 0 past the end (gv 0)
  });
  const float mean = warp_sum(dot) / float(C);
  for_row_groups<kVector>(x, C, lane, [&](int c, const float(&v)[kVec]) {
    float gv[kVec], wv[kVec], d[kVec];
    load_floats<kVector>(gv, dy, size_t(c), size_t(C));
    load_floats<kVector>(wv, w, size_t(c), size_t(C));
    load_grad_start<kVector>(d, dx, size_t(c), size_t(C), accumulate);
#pragma unroll
    for (int k = 0; k < kVec; k++) d[k] += ((g.offset + wv[k]) * gv[k] - v[k] * r * mean) * r;
    store_floats<kVector>(dx, d, size_t(c), size_t(C));
  });
}

// acc[0] += dout · (inp · rstd) over the vectors [h0, h0 + count) of every row: row index i is
// vector h0 + i % count of token row i / count.
template <typename T>
struct WeightGradTerm {
  const T* inp;
  const T* dout;
  const float* rstd;
  Heads g;
  int h0, count;
  __device__ void operator()(int i, int c, float (&acc)[1]) const {
    const size_t n = size_t(i) / size_t(count);
    const int h = h0 + i % count;
    const size_t at = g.at(n, h) + size_t(c);
    acc[0] += to_float(dout[at]) * (to_float(inp[at]) * rstd[g.rstd_at(n, h)]);
  }
};

void check_shape(int N, const Heads& g, const char* op) {
  require(N >= 0 && g.width > 0 && g.nq > 0 && g.nk >= 0, op, ": bad shape N = ", N, ", width ", g.width, ", ",
          g.nq, " + ", g.nk, " heads");
  require(size_t(N) * size_t(g.heads) <= size_t(INT_MAX), op, ": N = ", N, " rows of ", g.heads,
          " heads exceed 2^31 - 1 vectors");
  require(ceil_div(size_t(N), kRowsPerChunk) <= 65535, op, ": N = ", N, " rows exceed ", 65535 * kRowsPerChunk,
          " (the grid of the weight-gradient sums)");
}

// Partials capacity for N rows: `per_row_chunk` floats per chunk of kRowsPerChunk token rows.
size_t capacity(int N, size_t per_row_chunk) {
  const size_t chunks = ceil_div(size_t(N), kRowsPerChunk);
  return per_row_chunk * (chunks > 0 ? chunks : 1);
}

// 16-byte loads: vectors a multiple of 8 wide (so every vector starts aligned) and aligned bases.
bool vector_ok(const Heads& g, std::initializer_list<const void*> pointers) {
  if (g.width % kVec != 0) return false;
  for (const void* p : pointers)
    if (!aligned16(p)) return false;
  return true;
}

void launch_forward(DType dt, void* out, float* rstd, void* inp, const void* a, const void* b, const void* q_weight,
                    const void* k_weight, const Heads& g, int N, float eps, cudaStream_t stream, const char* op) {
  check_shape(N, g, op);
  if (N == 0) return;
  const unsigned grid = grid_size(size_t(N) * g.heads, kWarpsPerBlock, op);
  dispatch_activation(dt, op, [&](auto tag) {
    using T = decltype(tag);
    const bool vector = vector_ok(g, {out, inp, a, b, q_weight, k_weight});
    auto kernel = a ? (vector ? rmsnorm_forward_kernel<T, true, true> : rmsnorm_forward_kernel<T, false, true>)
                    : (vector ? rmsnorm_forward_kernel<T, true, false> : rmsnorm_forward_kernel<T, false, false>);
    launch(kernel, grid, kWarpsPerBlock * kWarpSize, 0, stream, "rmsnorm_forward_kernel", static_cast<T*>(out), rstd,
           static_cast<T*>(inp), static_cast<const T*>(a), static_cast<const T*>(b),
           static_cast<const T*>(q_weight), static_cast<const T*>(k_weight), g, N, eps);
  });
}

// dinp and the weight gradients of the q vectors (dq_weight) and the k vectors (dk_weight), their
// column sums in chunks that fit `scratch_floats`.
void launch_backward(DType dt, void* dinp, void* dq_weight, void* dk_weight, float* scratch, size_t scratch_floats,
                     const void* dout, const void* inp, const void* q_weight, const void* k_weight,
                     const float* rstd, const Heads& g, int N, cudaStream_t stream, GradInto dinp_into,
                     const char* op) {
  check_shape(N, g, op);
  if (N == 0) return;
  dispatch_activation(dt, op, [&](auto tag) {
    using T = decltype(tag);
    auto* dy = static_cast<const T*>(dout);
    auto* x = static_cast<const T*>(inp);
    if (dinp) {
      const bool vector = vector_ok(g, {dinp, dout, inp, q_weight, k_weight});
      launch(vector ? rmsnorm_backward_dinp_kernel<T, true> : rmsnorm_backward_dinp_kernel<T, false>,
             grid_size(size_t(N) * g.heads, kWarpsPerBlock, op), kWarpsPerBlock * kWarpSize, 0, stream,
             "rmsnorm_backward_dinp_kernel", static_cast<T*>(dinp), dy, x, static_cast<const T*>(q_weight),
             static_cast<const T*>(k_weight), rstd, g, N, dinp_into == GradInto::Accumulate);
    }
    // The two sums run one after the other on the stream: they share the partials.
    const struct {
      void* out;
      int h0, count;
    } sums[] = {{dq_weight, 0, g.nq}, {dk_weight, g.nq, g.nk}};
    for (const auto& s : sums) {
      if (!s.out || s.count == 0) continue;
      require(scratch != nullptr, op, ": scratch is null (", op, "_scratch_floats floats)");
      const int rows = N * s.count;
      const ColumnChunking chunking = column_chunking(rows, g.width, 1, kRowsPerChunk, scratch_floats, op);
      const ColumnOutputs<1, T> outputs{{static_cast<T*>(s.out)}};
      column_sums(outputs, scratch, rows, g.width, chunking, WeightGradTerm<T>{x, dy, rstd, g, s.h0, s.count},
                  stream);
    }
  });
}

}  // namespace

void rmsnorm_forward(DType dt, void* out, float* rstd, const void* inp, const void* weight, int N, int C, float eps,
                     cudaStream_t stream, float weight_offset) {
  // The kernel writes inp only when it forms it from a and b.
  launch_forward(dt, out, rstd, const_cast<void*>(inp), nullptr, nullptr, weight, nullptr, plain(C, weight_offset), N,
                 eps, stream, "rmsnorm_forward");
}

void residual_rmsnorm_forward(DType dt, void* residual, void* out, float* rstd, const void* a, const void* b,
                              const void* weight, int N, int C, float eps, cudaStream_t stream, float weight_offset) {
  require(a && b, "residual_rmsnorm_forward: a and b must not be null");
  launch_forward(dt, out, rstd, residual, a, b, weight, nullptr, plain(C, weight_offset), N, eps, stream,
                 "residual_rmsnorm_forward");
}

size_t rmsnorm_backward_scratch_floats(int N, int C) {
  check_shape(N, plain(C), "rmsnorm_backward_scratch_floats");
  return capacity(N, size_t(C));
}

void rmsnorm_backward(DType dt, void* dinp, void* dweight, float* scratch, const void* dout, const void* inp,
                      const void* weight, const float* rstd, int N, int C, cudaStream_t stream, GradInto dinp_into,
                      float weight_offset) {
  launch_backward(dt, dinp, dweight, nullptr, scratch, rmsnorm_backward_scratch_floats(N, C), dout, inp, weight,
                  nullptr, rstd, plain(C, weight_offset), N, stream, dinp_into, "rmsnorm_backward");
}

void qk_norm_forward(DType dt, void* out, float* rstd, const void* qkv, const void* q_weight, const void* k_weight,
                     int N, int NH, int NKV, int hd, float eps, cudaStream_t stream, float weight_offset) {
  const Heads g = qk_heads(NH, NKV, hd, weight_offset);
  check_shape(N, g, "qk_norm_forward");
  require(out != qkv || N == 0, "qk_norm_forward: out must not be qkv (the v heads are copied)");
  launch_forward(dt, out, rstd, const_cast<void*>(qkv), nullptr, nullptr, q_weight, k_weight, g, N, eps, stream,
                 "qk_norm_forward");
}

size_t qk_norm_backward_scratch_floats(int N, int hd) {
  check_shape(N, plain(hd), "qk_norm_backward_scratch_floats");
  return capacity(N, 2 * size_t(hd));
}

void qk_norm_backward(DType dt, void* dqkv, void* dq_weight, void* dk_weight, float* scratch, const void* dout,
                      const void* qkv, const void* q_weight, const void* k_weight, const float* rstd, int N, int NH,
                      int NKV, int hd, cudaStream_t stream, GradInto dqkv_into, float weight_offset) {
  launch_backward(dt, dqkv, dq_weight, dk_weight, scratch, qk_norm_backward_scratch_floats(N, hd), dout, qkv, q_weight,
                  k_weight, rstd, qk_heads(NH, NKV, hd, weight_offset), N, stream, dqkv_into, "qk_norm_backward");
}

}  // namespace zt::cuda
