#include "kernels/cuda/cuda_moe.hpp"

#include <initializer_list>

#include "kernels/cuda/common.cuh"

namespace zt::cuda {

namespace {

constexpr int kWarpsPerBlock = kElementwiseBlock / kWarpSize;

// ---------------------------------------------------------------------------------------------
// The router, one thread per token.

// (p, e) comes after (q, f) in the order of the top-k: more probable first, ties to the lower index.
__device__ __forceinline__ bool ranks_below(float p, int e, float q, int f) { return p < q || (p == q && e > f); }

template <typename T>
__global__ void moe_route_kernel(float* probs, int32_t* experts, float* weights, const T* logits, int N, int E, int K,
                                 bool normalize) {
  const int n = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (n >= N) return;
  const T* l = logits + size_t(n) * E;
  float* p = probs + size_t(n) * E;
  float most = to_float(l[0]);
  for (int e = 1; e < E; e++) most = fmaxf(most, to_float(l[e]));
  float sum = 0.0f;
  for (int e = 0; e < E; e++) {
    const float v = expf(to_float(l[e]) - most);
    p[e] = v;
    sum += v;
  }
  for (int e = 0; e < E; e++) p[e] /= sum;
  // Pick j is the most probable of those ranking below pick j - 1.
  int32_t* ex = experts + size_t(n) * K;
  float last_p = INFINITY;
  int last = -1;
  for (int j = 0; j < K; j++) {
    int best = -1;
    float best_p = 0.0f;
    for (int e = 0; e < E; e++) {
      const float q = p[e];
      if (ranks_below(q, e, last_p, last) && (best < 0 || ranks_below(best_p, best, q, e))) {
        best = e;
        best_p = q;
      }
    }
    if (best < 0) best = j;  // NaN probabilities: any valid index (the loss is NaN already)
    ex[j] = best;
    last = best;
    last_p = best_p;
  }
  for (int j = 1; j < K; j++)  // into index order
    for (int i = j; i > 0 && ex[i - 1] > ex[i]; i--) {
      const int32_t t = ex[i];
      ex[i] = ex[i - 1];
      ex[i - 1] = t;
    }
  float chosen = 0.0f;
  for (int j = 0; j < K; j++) chosen += p[ex[j]];
  for (int j = 0; j < K; j++) weights[size_t(n) * K + j] = normalize ? p[ex[j]] / chosen : p[ex[j]];
}

// d probs[e] = daux[e] + (e's pick j: dw_j, or (dw_j - Σ_i dw_i w_i) / S when renormalised).
template <typename T>
__global__ void moe_route_backward_kernel(T* dlogits, const float* dweights, const float* probs,
                                          const int32_t* experts, const float* daux, int N, int E, int K,
                                          bool normalize) {
  const int n = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (n >= N) return;
  const float* p = probs + size_t(n) * E;
  const int32_t* ex = experts + size_t(n) * K;
  const float* dw = dweights + size_t(n) * K;
  float chosen = 0.0f, dot = 0.0f;
  if (normalize) {
    for (int j = 0; j < K; j++) chosen += p[ex[j]];
    for (int j = 0; j < K; j++) dot += dw[j] * (p[ex[j]] / chosen);
  }
  // The picks are in index order: one walk over them per pass over the experts.
  auto dp = [&](int e, int& j) {
    float d = daux ? daux[e] : 0.0f;
    if (j < K && ex[j] == e) {
      d += normalize ? (dw[j] - dot) / chosen : dw[j];
      j++;
    }
    return d;
  };
  float dsoft = 0.0f;
  for (int e = 0, j = 0; e < E; e++) dsoft += p[e] * dp(e, j);
  T* dl = dlogits + size_t(n) * E;
  for (int e = 0, j = 0; e < E; e++) dl[e] = from_float<T>(p[e] * (dp(e, j) - dsoft));
}

// ---------------------------------------------------------------------------------------------
// Rows: one thread per 8 channels of a row.

template <typename T, bool kVector>
__global__ void moe_gather_kernel(T* rows, const T* x, const int32_t* token, int R, int C) {
  size_t r;
  int c;
  if (!my_row_group(R, C, r, c)) return;
  float v[kVec];
  load_floats<kVector, true>(v, x + size_t(token[r]) * C, size_t(c), size_t(C));
  store_floats<kVector, true>(rows + r * C, v, size_t(c), size_t(C));
}

template <typename T, bool kVector>
__global__ void moe_combine_kernel(T* out, const T* y, const float* weights, const int32_t* row, int N, int K, int C) {
  size_t n;
  int c;
  if (!my_row_group(N, C, n, c)) return;
  float acc[kVec] = {}, v[kVec];
  for (int j = 0; j < K; j++) {
    const float w = weights[n * K + j];
    load_floats<kVector>(v, y + size_t(row[n * K + j]) * C, size_t(c), size_t(C));
#pragma unroll
    for (int k = 0; k < kVec; k++) acc[k] += w * v[k];
  }
  store_floats<kVector>(out + n * C, acc, size_t(c), size_t(C));
}

template <typename T, bool kVector>
__global__ void moe_scatter_kernel(T* dx, const T* drows, const int32_t* row, int N, int K, int C, bool accumulate) {
  size_t n;
  int c;
  if (!my_row_group(N, C, n, c)) return;
  float acc[kVec] = {}, v[kVec];
  if (accumulate) load_floats<kVector>(acc, dx + n * C, size_t(c), size_t(C));
  for (int j = 0; j < K; j++) {
    load_floats<kVector>(v, drows + size_t(row[n * K + j]) * C, size_t(c), size_t(C));
#pragma unroll
    for (int k = 0; k < kVec; k++) acc[k] += v[k];
  }
  store_floats<kVector>(dx + n * C, acc, size_t(c), size_t(C));
}

__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

template <typename T, bool kVector>
__global__ void moe_gate_add_kernel(T* out, const T* y, const T* gate, int N, int C) {
  size_t n;
  int c;
  if (!my_row_group(N, C, n, c)) return;
  const float s = sigmoid(to_float(gate[n]));
  float o[kVec], v[kVec];
  load_floats<kVector>(o, out + n * C, size_t(c), size_t(C));
  load_floats<kVector>(v, y + n * C, size_t(c), size_t(C));
#pragma unroll
  for (int k = 0; k < kVec; k++) o[k] += s * v[k];
  store_floats<kVector>(out + n * C, o, size_t(c), size_t(C));
}

// ---------------------------------------------------------------------------------------------
// Dot products: one warp per row pair. d[row] = scale · dout[row] over C, and the sum of dout · y
// over it (the same in every lane).

template <bool kVector, typename T>
__device__ float scale_and_dot(T* d, const T* dout, const T* y, float scale, int C, int lane) {
  float dot = 0.0f;
  for (int c = lane * kVec; c < C; c += kWarpSize * kVec) {
    float g[kVec], v[kVec];
    load_floats<kVector>(g, dout, size_t(c), size_t(C));
    load_floats<kVector>(v, y, size_t(c), size_t(C));
#pragma unroll
    for (int k = 0; k < kVec; k++) {
      dot += g[k] * v[k];
      g[k] *= scale;
    }
    store_floats<kVector>(d, g, size_t(c), size_t(C));
  }
  return warp_sum(dot);
}

__device__ __forceinline__ size_t my_warp() { return (size_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarpSize; }

template <typename T, bool kVector>
__global__ void moe_combine_backward_kernel(T* dy, float* dweights, const T* dout, const T* y, const float* weights,
                                            const int32_t* row, int N, int K, int C) {
  const size_t slot = my_warp();  // (token, pick) = (slot / K, slot % K)
  if (slot >= size_t(N) * K) return;
  const size_t r = size_t(row[slot]) * C, n = slot / K;
  const float dot = scale_and_dot<kVector>(dy + r, dout + n * C, y + r, weights[slot], C, int(threadIdx.x % kWarpSize));
  if (threadIdx.x % kWarpSize == 0) dweights[slot] = dot;
}

template <typename T, bool kVector>
__global__ void moe_gate_add_backward_kernel(T* dy, T* dgate, const T* dout, const T* y, const T* gate, int N, int C) {
  const size_t n = my_warp();
  if (n >= size_t(N)) return;
  const float s = sigmoid(to_float(gate[n]));
  const float dot = scale_and_dot<kVector>(dy + n * C, dout + n * C, y + n * C, s, C, int(threadIdx.x % kWarpSize));
  if (threadIdx.x % kWarpSize == 0) dgate[n] = from_float<T>(dot * s * (1.0f - s));
}

// ---------------------------------------------------------------------------------------------
// The load-balancing loss's statistics: one thread per expert, tokens and layers in order.

__device__ __forceinline__ bool counts(const int32_t* padding_from, int T, int n) {
  return !padding_from || n % T < padding_from[n / T];
}

__global__ void moe_route_stats_kernel(double* stats, const float* probs, const int32_t* experts,
                                       const int32_t* padding_from, int T, int N, int E, int K) {
  const int e = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (e > E) return;
  double slots = 0, prob = 0, tokens = 0;
  for (int n = 0; n < N; n++) {
    if (!counts(padding_from, T, n)) continue;
    if (e == E) {
      tokens += 1;
      continue;
    }
    for (int j = 0; j < K; j++) slots += experts[size_t(n) * K + j] == e;
    prob += double(probs[size_t(n) * E + e]);
  }
  if (e == E) {
    stats[2 * E] = tokens;
    return;
  }
  stats[e] = slots;
  stats[E + e] = prob;
}

__device__ double layers_sum(const double* stats, int L, int E, int i) {
  double sum = 0;
  for (int l = 0; l < L; l++) sum += stats[size_t(l) * (2 * E + 1) + i];
  return sum;
}

__global__ void moe_aux_grad_kernel(float* daux, const double* stats, int L, int E, float scale) {
  const int e = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (e >= E) return;
  const double tokens = layers_sum(stats, L, E, 2 * E);
  daux[e] = tokens > 0 ? float(double(scale) * double(E) * (layers_sum(stats, L, E, e) / tokens) / tokens) : 0.0f;
}

// One thread: the sums in the CPU's order, rounded as the CPU rounds them.
__global__ void moe_aux_accumulate_kernel(double* acc, const double* stats, int L, int E) {
  const double tokens = layers_sum(stats, L, E, 2 * E);
  double sum = 0;
  if (tokens > 0)
    for (int e = 0; e < E; e++)  // never contracted into a fused multiply-add: the CPU's bits
      sum = __dadd_rn(sum, __dmul_rn(layers_sum(stats, L, E, e) / tokens, layers_sum(stats, L, E, E + e) / tokens));
  acc[0] += double(E) * sum;
  for (int l = 0; l < L; l++) {
    const double* count = stats + size_t(l) * (2 * E + 1);
    double total = 0, busiest = 0;
    for (int e = 0; e < E; e++) {
      total += count[e];
      busiest = fmax(busiest, count[e]);
    }
    if (total > 0) acc[1] = fmax(acc[1], busiest / (total / double(E)));
  }
}

template <typename T>
__global__ void moe_zero_padding_kernel(T* x, const int32_t* padding_from, int B, int T_, int width) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= size_t(B) * T_ * width) return;
  const int n = int(i / size_t(width));
  if (n % T_ >= padding_from[n / T_]) x[i] = from_float<T>(0.0f);
}

// ---------------------------------------------------------------------------------------------
// Launch helpers.

void check_shape(bool ok, const char* op, int N, int C) { require(ok, op, ": bad shape N = ", N, ", C = ", C); }

size_t row_items(int rows, int C) { return size_t(rows) * ceil_div(size_t(C), kVec); }

template <typename... Params, typename... Args>
void launch_rows(void (*vector_kernel)(Params...), void (*scalar_kernel)(Params...), bool vector, int rows, int C,
                 cudaStream_t stream, const char* name, Args&&... args) {
  launch(vector ? vector_kernel : scalar_kernel, grid_size(row_items(rows, C), kElementwiseBlock, name),
         kElementwiseBlock, 0, stream, name, std::forward<Args>(args)...);
}

template <typename... Params, typename... Args>
void launch_warps(void (*vector_kernel)(Params...), void (*scalar_kernel)(Params...), bool vector, size_t warps,
                  cudaStream_t stream, const char* name, Args&&... args) {
  launch(vector ? vector_kernel : scalar_kernel, grid_size(warps, kWarpsPerBlock, name), kElementwiseBlock, 0, stream,
         name, std::forward<Args>(args)...);
}

template <typename... Params, typename... Args>
void launch_tokens(void (*kernel)(Params...), int N, cudaStream_t stream, const char* name, Args&&... args) {
  launch(kernel, grid_size(size_t(N), kElementwiseBlock, name), kElementwiseBlock, 0, stream, name,
         std::forward<Args>(args)...);
}

bool vector_rows(int C, std::initializer_list<const void*> pointers) {
  if (C % kVec != 0) return false;
  for (const void* p : pointers)
    if (!aligned16(p)) return false;
  return true;
}

void check_router(const char* op, int N, int E, int K) {
  require(N >= 0 && E > 0 && K > 0 && K <= E, op, ": bad shape N = ", N, ", E = ", E, ", K = ", K);
}

}  // namespace

void moe_route(DType dt, float* probs, int32_t* experts, float* weights, const void* logits, int N, int E, int K,
               bool normalize, cudaStream_t stream) {
  check_router("moe_route", N, E, K);
  if (N == 0) return;
  dispatch_activation(dt, "moe_route", [&](auto tag) {
    using T = decltype(tag);
    launch_tokens(moe_route_kernel<T>, N, stream, "moe_route_kernel", probs, experts, weights,
                  static_cast<const T*>(logits), N, E, K, normalize);
  });
}

void moe_route_backward(DType dt, void* dlogits, const float* dweights, const float* probs, const int32_t* experts,
                        const float* daux, int N, int E, int K, bool normalize, cudaStream_t stream) {
  check_router("moe_route_backward", N, E, K);
  if (N == 0) return;
  dispatch_activation(dt, "moe_route_backward", [&](auto tag) {
    using T = decltype(tag);
    launch_tokens(moe_route_backward_kernel<T>, N, stream, "moe_route_backward_kernel", static_cast<T*>(dlogits),
                  dweights, probs, experts, daux, N, E, K, normalize);
  });
}

void moe_gather(DType dt, void* rows, const void* x, const int32_t* token, int R, int C, cudaStream_t stream) {
  check_shape(R >= 0 && C > 0, "moe_gather", R, C);
  if (R == 0) return;
  dispatch_activation(dt, "moe_gather", [&](auto tag) {
    using T = decltype(tag);
    launch_rows(moe_gather_kernel<T, true>, moe_gather_kernel<T, false>, vector_rows(C, {rows, x}), R, C, stream,
                "moe_gather_kernel", static_cast<T*>(rows), static_cast<const T*>(x), token, R, C);
  });
}

void moe_combine(DType dt, void* out, const void* y, const float* weights, const int32_t* row, int N, int K, int C,
                 cudaStream_t stream) {
  check_shape(N >= 0 && K > 0 && C > 0, "moe_combine", N, C);
  if (N == 0) return;
  dispatch_activation(dt, "moe_combine", [&](auto tag) {
    using T = decltype(tag);
    launch_rows(moe_combine_kernel<T, true>, moe_combine_kernel<T, false>, vector_rows(C, {out, y}), N, C, stream,
                "moe_combine_kernel", static_cast<T*>(out), static_cast<const T*>(y), weights, row, N, K, C);
  });
}

void moe_combine_backward(DType dt, void* dy, float* dweights, const void* dout, const void* y, const float* weights,
                          const int32_t* row, int N, int K, int C, cudaStream_t stream) {
  check_shape(N >= 0 && K > 0 && C > 0, "moe_combine_backward", N, C);
  if (N == 0) return;
  dispatch_activation(dt, "moe_combine_backward", [&](auto tag) {
    using T = decltype(tag);
    launch_warps(moe_combine_backward_kernel<T, true>, moe_combine_backward_kernel<T, false>,
                 vector_rows(C, {dy, dout, y}), size_t(N) * size_t(K), stream, "moe_combine_backward_kernel",
                 static_cast<T*>(dy), dweights, static_cast<const T*>(dout), static_cast<const T*>(y), weights, row, N,
                 K, C);
  });
}

void moe_scatter(DType dt, void* dx, const void* drows, const int32_t* row, int N, int K, int C, GradInto dx_into,
                 cudaStream_t stream) {
  check_shape(N >= 0 && K > 0 && C > 0, "moe_scatter", N, C);
  if (N == 0) return;
  dispatch_activation(dt, "moe_scatter", [&](auto tag) {
    using T = decltype(tag);
    launch_rows(moe_scatter_kernel<T, true>, moe_scatter_kernel<T, false>, vector_rows(C, {dx, drows}), N, C, stream,
                "moe_scatter_kernel", static_cast<T*>(dx), static_cast<const T*>(drows), row, N, K, C,
                dx_into == GradInto::Accumulate);
  });
}

void moe_gate_add(DType dt, void* out, const void* y, const void* gate, int N, int C, cudaStream_t stream) {
  check_shape(N >= 0 && C > 0, "moe_gate_add", N, C);
  if (N == 0) return;
  dispatch_activation(dt, "moe_gate_add", [&](auto tag) {
    using T = decltype(tag);
    launch_rows(moe_gate_add_kernel<T, true>, moe_gate_add_kernel<T, false>, vector_rows(C, {out, y}), N, C, stream,
                "moe_gate_add_kernel", static_cast<T*>(out), static_cast<const T*>(y), static_cast<const T*>(gate), N,
                C);
  });
}

void moe_gate_add_backward(DType dt, void* dy, void* dgate, const void* dout, const void* y, const void* gate, int N,
                           int C, cudaStream_t stream) {
  check_shape(N >= 0 && C > 0, "moe_gate_add_backward", N, C);
  if (N == 0) return;
  dispatch_activation(dt, "moe_gate_add_backward", [&](auto tag) {
    using T = decltype(tag);
    launch_warps(moe_gate_add_backward_kernel<T, true>, moe_gate_add_backward_kernel<T, false>,
                 vector_rows(C, {dy, dout, y}), size_t(N), stream, "moe_gate_add_backward_kernel", static_cast<T*>(dy),
                 static_cast<T*>(dgate), static_cast<const T*>(dout), static_cast<const T*>(y),
                 static_cast<const T*>(gate), N, C);
  });
}

void moe_route_stats(double* stats, const float* probs, const int32_t* experts, const int32_t* padding_from, int T,
                     int N, int E, int K, cudaStream_t stream) {
  check_router("moe_route_stats", N, E, K);
  require(T > 0 && N % T == 0, "moe_route_stats: bad shape N = ", N, ", T = ", T);
  launch_tokens(moe_route_stats_kernel, E + 1, stream, "moe_route_stats_kernel", stats, probs, experts, padding_from,
                T, N, E, K);
}

void moe_aux_grad(float* daux, const double* stats, int L, int E, float scale, cudaStream_t stream) {
  require(L >= 0 && E > 0, "moe_aux_grad: bad shape L = ", L, ", E = ", E);
  launch_tokens(moe_aux_grad_kernel, E, stream, "moe_aux_grad_kernel", daux, stats, L, E, scale);
}

void moe_aux_accumulate(double* acc, const double* stats, int L, int E, cudaStream_t stream) {
  require(L >= 0 && E > 0, "moe_aux_accumulate: bad shape L = ", L, ", E = ", E);
  launch(moe_aux_accumulate_kernel, 1, 1, 0, stream, "moe_aux_accumulate_kernel", acc, stats, L, E);
}

void moe_zero_padding(DType dt, void* x, const int32_t* padding_from, int B, int T, int width, cudaStream_t stream) {
  check_shape(B >= 0 && T > 0 && width > 0, "moe_zero_padding", B * T, width);
  if (B == 0) return;
  dispatch_activation(dt, "moe_zero_padding", [&](auto tag) {
    using V = decltype(tag);
    launch(moe_zero_padding_kernel<V>, grid_size(size_t(B) * T * width, kElementwiseBlock, "moe_zero_padding"),
           kElementwiseBlock, 0, stream, "moe_zero_padding_kernel", static_cast<V*>(x), padding_from, B, T, width);
  });
}

}  // namespace zt::cuda
