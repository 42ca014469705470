#include "kernels/cuda/classifier.hpp"

#include "core/ignored_target.hpp"
#include "kernels/cuda/common.cuh"

namespace zt::cuda {

namespace {

constexpr int kBlock = 1024;      // threads per row
constexpr int kMeanBlock = 1024;  // threads of the single block that averages the losses

// Running log-sum-exp state: sum of exp(x - max) over the values seen.
struct LseState {
  float max = -INFINITY;
  float sum = 0.0f;
};

// Folds up to 8 values (the first `count`) into the state: one rescale per group.
__device__ __forceinline__ void lse_add(LseState& st, const float (&x)[kVec], int count) {
  float group_max = -INFINITY;
#pragma unroll
  for (int k = 0; k < kVec; k++)
    if (k < count) group_max = fmaxf(group_max, x[k]);
  const float new_max = fmaxf(st.max, group_max);
  if (new_max == -INFINITY) return;  // nothing but -inf so far
  float s = st.sum * expf(st.max - new_max);
#pragma unroll
  for (int k = 0; k < kVec; k++)
    if (k < count) s += expf(x[k] - new_max);
  st.max = new_max;
  st.sum = s;
}

// log Σ_{v<V} exp(row[v]) over the block; every thread gets it.
template <typename T, bool kVector>
__device__ float row_lse(const T* row, int V, float* scratch) {
  LseState st;
  for (int v = threadIdx.x * kVec; v < V; v += blockDim.x * kVec) {
    float x[kVec];
    load_floats<kVector>(x, row, size_t(v), size_t(V));
    lse_add(st, x, min(kVec, V - v));
  }
  const float block_max_value = block_max(st.max, scratch);
  const float mine = st.max == -INFINITY ? 0.0f : st.sum * expf(st.max - block_max_value);
  const float total = block_sum(mine, scratch);
  return block_max_value + logf(total);
}

// dlogits over [0, Vp): scale·(exp(x - lse) - [v == target]) below V, 0 above. cap > 0: x are
// soft-capped logits c·tanh(z / c), and the gradient is z's: times 1 - (x / c)².
template <typename T, bool kVector>
__device__ void row_gradient(T* drow, const T* row, float lse, int target, float scale, int V, int Vp,
                             float cap = 0.0f) {
  for (int v = threadIdx.x * kVec; v < Vp; v += blockDim.x * kVec) {
    float x[kVec];
    load_floats<kVector>(x, row, size_t(v), size_t(Vp));
#pragma unroll
    for (int k = 0; k < kVec; k++) {
      const int col = v + k;
      const float p = col < V ? expf(x[k] - lse) : 0.0f;
      const float t = cap > 0.0f ? x[k] / cap : 0.0f;
      // The padding's columns are 0 whatever they hold (a huge soft-capped value would give 0 · -inf).
      x[k] = col < V ? scale * (p - (col == target ? 1.0f : 0.0f)) * (1.0f - t * t) : 0.0f;
    }
    store_floats<kVector>(drow, x, size_t(v), size_t(Vp));
  }
}

__device__ __forceinline__ bool valid_target(int target, int V) { return target >= 0 && target < V; }

// An ignored target's row has no loss and a zero gradient: its scale is 0.
__device__ __forceinline__ float row_scale(int target, float scale) { return target == kIgnoredTarget ? 0.0f : scale; }

// The gradient's scale: `value` itself, or dloss = value over the count of rows that count when
// there is one (rounded as the host's dloss / float(counted)).
__device__ __forceinline__ float gradient_scale(const int32_t* counted, float value) {
  if (!counted) return value;
  const int rows = *counted;
  return rows > 0 ? __fdiv_rn(value, float(rows)) : 0.0f;
}

template <typename T, bool kVector>
__global__ void __launch_bounds__(kBlock) classifier_forward_kernel(float* lse, float* losses, const T* logits,
                                                                    const int32_t* targets, int V, int Vp) {
  __shared__ float scratch[kWarpSize];
  const int n = blockIdx.x;
  const T* row = logits + size_t(n) * Vp;
  const float l = row_lse<T, kVector>(row, V, scratch);
  if (threadIdx.x == 0) {
    const int target = targets[n];
    lse[n] = l;
    losses[n] = valid_target(target, V) ? l - to_float(row[target]) : NAN;
  }
}

template <typename T, bool kVector>
__global__ void __launch_bounds__(kBlock) classifier_backward_kernel(T* dlogits, const T* logits, const float* lse,
                                                                     const int32_t* targets, const int32_t* counted,
                                                                     const float* weights, float scale, int V, int Vp,
                                                                     float cap) {
  const int n = blockIdx.x;
  const int target = targets[n];
  const float s = weights ? scale * weights[n] : gradient_scale(counted, scale);
  row_gradient<T, kVector>(dlogits + size_t(n) * Vp, logits + size_t(n) * Vp, lse[n], target, row_scale(target, s),
                           V, Vp, cap);
}

template <typename T>
__global__ void softcap_kernel(T* x, size_t n, float cap) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] = from_float<T>(cap * tanhf(to_float(x[i]) / cap));
}

template <typename T, bool kVector>
__global__ void __launch_bounds__(kBlock) classifier_fused_kernel(T* logits, float* lse, float* losses,
                                                                  const int32_t* targets, float scale, int V, int Vp) {
  __shared__ float scratch[kWarpSize];
  // The last rows first: the matmul that wrote the logits finished with them, so they are the
  // likeliest still to sit in L2.
  const int n = gridDim.x - 1 - blockIdx.x;
  T* row = logits + size_t(n) * Vp;
  const int target = targets[n];
  const float l = row_lse<T, kVector>(row, V, scratch);
  if (threadIdx.x == 0) {
    lse[n] = l;
    losses[n] = valid_target(target, V) ? l - to_float(row[target]) : NAN;
  }
  __syncthreads();  // the target's logit is read before any thread overwrites the row
  row_gradient<T, kVector>(row, row, l, target, row_scale(target, scale), V, Vp);
}

// mean_loss[0] = Σ losses / rows, over the rows whose target is not ignored (NaN when there is
// none), summed in double in a fixed order by one block.
__global__ void __launch_bounds__(kMeanBlock) mean_loss_kernel(float* mean_loss, int32_t* counted,
                                                               const float* losses, const int32_t* targets, int N) {
  __shared__ double scratch[kWarpSize];
  __shared__ int count_scratch[kWarpSize];
  double s = 0.0;
  int rows = 0;
  for (int i = threadIdx.x; i < N; i += blockDim.x) {
    if (targets[i] == kIgnoredTarget) continue;
    s += double(losses[i]);
    rows++;
  }
  s = block_sum(s, scratch);
  rows = block_sum(rows, count_scratch);
  if (threadIdx.x == 0) {
    mean_loss[0] = rows > 0 ? float(s / double(rows)) : NAN;
    if (counted) counted[0] = rows;
  }
}

// One block over the targets, a tile of blockDim.x at a time: each tile's flags scanned in shared
// memory (Hillis and Steele), the rows that count written at the tiles' running total.
__global__ void __launch_bounds__(kMeanBlock) counted_rows_kernel(int32_t* rows, int32_t* row_targets,
                                                                  const int32_t* targets, int N) {
  __shared__ int scan[kMeanBlock];
  int before = 0;  // rows that count in the earlier tiles
  for (int tile = 0; tile < N; tile += blockDim.x) {
    const int n = tile + int(threadIdx.x);
    const int target = n < N ? targets[n] : kIgnoredTarget;
    const bool counts = target != kIgnoredTarget;
    scan[threadIdx.x] = counts ? 1 : 0;
    __syncthreads();
    for (unsigned o = 1; o < blockDim.x; o <<= 1) {
      const int add = threadIdx.x >= o ? scan[threadIdx.x - o] : 0;
      __syncthreads();
      scan[threadIdx.x] += add;
      __syncthreads();
    }
    if (counts) {
      const int r = before + scan[threadIdx.x] - 1;
      rows[r] = n;
      row_targets[r] = target;
    }
    before += scan[blockDim.x - 1];
    __syncthreads();  // every thread has read the tile's total before the next tile writes scan
  }
}

template <typename T>
__global__ void scatter_rows_kernel(T* dx, const T* drows, const int32_t* rows, int M, int C) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= size_t(M) * size_t(C)) return;
  dx[size_t(rows[i / size_t(C)]) * size_t(C) + i % size_t(C)] = drows[i];
}

void check_shape(int N, int V, int Vp, const char* op) {
  require(N >= 0 && V > 0 && Vp >= V, op, ": bad shape N = ", N, ", V = ", V, ", Vp = ", Vp, " (need V > 0, Vp >= V)");
}

bool vector_path(int Vp, const void* a, const void* b) { return Vp % kVec == 0 && aligned16(a) && aligned16(b); }

// Rounded as the host's sum += double(loss) * weight, never fused into one multiply-add.
__global__ void add_mean_loss_kernel(double* sum, const float* mean_loss, double weight) {
  sum[0] = __dadd_rn(sum[0], __dmul_rn(double(mean_loss[0]), weight));
}

void launch_mean(float* mean_loss, int32_t* counted, const float* losses, const int32_t* targets, int N,
                 cudaStream_t stream) {
  launch(mean_loss_kernel, 1, kMeanBlock, 0, stream, "mean_loss_kernel", mean_loss, counted, losses, targets, N);
}

void launch_backward(DType dt, void* dlogits, const void* logits, const float* lse, const int32_t* targets,
                     const int32_t* counted, float scale, int N, int V, int Vp, cudaStream_t stream,
                     float cap = 0.0f, const float* weights = nullptr) {
  check_shape(N, V, Vp, "classifier_backward");
  if (N == 0) return;
  const bool vector = vector_path(Vp, logits, dlogits);
  dispatch_activation(dt, "classifier_backward", [&](auto tag) {
    using T = decltype(tag);
    launch(vector ? classifier_backward_kernel<T, true> : classifier_backward_kernel<T, false>, unsigned(N), kBlock,
           0, stream, "classifier_backward_kernel", static_cast<T*>(dlogits), static_cast<const T*>(logits), lse,
           targets, counted, weights, scale, V, Vp, cap);
  });
}

}  // namespace

void softcap_forward(DType dt, void* x, size_t n, float cap, cudaStream_t stream) {
  require(cap > 0.0f, "softcap_forward: cap ", cap, " (expected > 0)");
  if (n == 0) return;
  dispatch_activation(dt, "softcap_forward", [&](auto tag) {
    using T = decltype(tag);
    launch(softcap_kernel<T>, grid_size(n, kElementwiseBlock, "softcap_forward"), kElementwiseBlock, 0, stream,
           "softcap_kernel", static_cast<T*>(x), n, cap);
  });
}

void classifier_losses(DType dt, float* lse, float* losses, const void* logits, const int32_t* targets, int N, int V,
                       int Vp, cudaStream_t stream) {
  check_shape(N, V, Vp, "classifier_forward");
  if (N == 0) return;
  const bool vector = vector_path(Vp, logits, logits);
  dispatch_activation(dt, "classifier_forward", [&](auto tag) {
    using T = decltype(tag);
    launch(vector ? classifier_forward_kernel<T, true> : classifier_forward_kernel<T, false>, unsigned(N), kBlock, 0,
           stream, "classifier_forward_kernel", lse, losses, static_cast<const T*>(logits), targets, V, Vp);
  });
}

void classifier_mean(float* mean_loss, int32_t* counted, const float* losses, const int32_t* targets, int N,
                     cudaStream_t stream) {
  require(N >= 0, "classifier_mean: bad row count ", N);
  launch_mean(mean_loss, counted, losses, targets, N, stream);
}

void classifier_forward(DType dt, float* lse, float* losses, float* mean_loss, const void* logits,
                        const int32_t* targets, int N, int V, int Vp, cudaStream_t stream) {
  check_shape(N, V, Vp, "classifier_forward");
  if (N == 0) return;
  classifier_losses(dt, lse, losses, logits, targets, N, V, Vp, stream);
  launch_mean(mean_loss, nullptr, losses, targets, N, stream);
}

void classifier_backward(DType dt, void* dlogits, const void* logits, const float* lse, const int32_t* targets,
                         float scale, int N, int V, int Vp, cudaStream_t stream) {
  launch_backward(dt, dlogits, logits, lse, targets, nullptr, scale, N, V, Vp, stream);
}

void classifier_backward(DType dt, void* dlogits, const void* logits, const float* lse, const int32_t* targets,
                         const int32_t* counted, float dloss, int N, int V, int Vp, cudaStream_t stream,
                         float softcap, const float* weights) {
  require(counted != nullptr || weights != nullptr, "classifier_backward: counted and weights are null");
  launch_backward(dt, dlogits, logits, lse, targets, counted, dloss, N, V, Vp, stream, softcap, weights);
}

void classifier_fused(DType dt, void* logits, float* lse, float* losses, float* mean_loss, const int32_t* targets,
                      float scale, int N, int V, int Vp, cudaStream_t stream) {
  check_shape(N, V, Vp, "classifier_fused");
  if (N == 0) return;
  const bool vector = vector_path(Vp, logits, logits);
  dispatch_activation(dt, "classifier_fused", [&](auto tag) {
    using T = decltype(tag);
    launch(vector ? classifier_fused_kernel<T, true> : classifier_fused_kernel<T, false>, unsigned(N), kBlock, 0,
           stream, "classifier_fused_kernel", static_cast<T*>(logits), lse, losses, targets, scale, V, Vp);
  });
  launch_mean(mean_loss, nullptr, losses, targets, N, stream);
}

void counted_rows(int32_t* rows, int32_t* row_targets, const int32_t* targets, int N, cudaStream_t stream) {
  require(N >= 0, "counted_rows: bad row count ", N);
  if (N == 0) return;
  launch(counted_rows_kernel, 1, kMeanBlock, 0, stream, "counted_rows_kernel", rows, row_targets, targets, N);
}

void scatter_rows(DType dt, void* dx, const void* drows, const int32_t* rows, int M, int N, int C,
                  cudaStream_t stream) {
  require(M >= 0 && M <= N && C > 0, "scatter_rows: bad shape M = ", M, ", N = ", N, ", C = ", C);
  ZT_CUDA_CHECK(cudaMemsetAsync(dx, 0, size_t(N) * size_t(C) * dtype_size(dt), stream));
  if (M == 0) return;
  dispatch_activation(dt, "scatter_rows", [&](auto tag) {
    using T = decltype(tag);
    launch(scatter_rows_kernel<T>, grid_size(size_t(M) * size_t(C), kElementwiseBlock, "scatter_rows"),
           kElementwiseBlock, 0, stream, "scatter_rows_kernel", static_cast<T*>(dx), static_cast<const T*>(drows),
           rows, M, C);
  });
}

void add_mean_loss(double* sum, const float* mean_loss, double weight, cudaStream_t stream) {
  launch(add_mean_loss_kernel, 1, 1, 0, stream, "add_mean_loss_kernel", sum, mean_loss, weight);
}

}  // namespace zt::cuda
