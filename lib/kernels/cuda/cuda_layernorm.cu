#include "kernels/cuda/cuda_layernorm.hpp"

#include "kernels/cpu/layernorm.hpp"  // kLayerNormEps
#include "kernels/cuda/column_sums.cuh"
#include "kernels/cuda/common.cuh"

namespace zt::cuda {

namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int kRowsPerChunk = 256;  // rows per partial sum of dweight/dbias

// kResidual: the row is first formed as a + b, rounded to T and stored in inp (what
// residual_forward would store, and what layernorm_forward would then read), in the same pass
// that sums it for the mean.
template <typename T, bool kVector, bool kResidual>
__global__ void layernorm_forward_kernel(T* out, float* mean, float* rstd, T* inp, const T* a, const T* b,
                                         const T* weight, const T* bias, int N, int C) {
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  if (row >= N) return;  // the whole warp leaves together; no block-wide barrier follows
  T* x = inp + size_t(row) * C;
  float sum = 0.0f;
  if constexpr (kResidual) {
    for (int c = lane * kVec; c < C; c += kWarpSize * kVec) {
      float u[kVec], v[kVec];
      load_floats<kVector>(u, a + size_t(row) * C, size_t(c), size_t(C));
      load_floats<kVector>(v, b + size_t(row) * C, size_t(c), size_t(C));
#pragma unroll
      for (int k = 0; k < kVec; k++) u[k] = to_float(from_float<T>(u[k] + v[k]));
      store_floats<kVector>(x, u, size_t(c), size_t(C));
#pragma unroll
      for (int k = 0; k < kVec; k++)
        if (c + k < C) sum += u[k];
    }
  } else {
    for_row_groups<kVector>(x, C, lane, [&](int c, const float(&v)[kVec]) {
#pragma unroll
      for (int k = 0; k < kVec; k++)
        if (c + k < C) sum += v[k];
    });
  }
  const float m = warp_sum(sum) / float(C);
  float sq = 0.0f;
  for_row_groups<kVector>(x, C, lane, [&](int c, const float(&v)[kVec]) {
#pragma unroll
    for (int k = 0; k < kVec; k++)
      if (c + k < C) sq += (v[k] - m) * (v[k] - m);
  });
  const float s = 1.0f / sqrtf(warp_sum(sq) / float(C) + cpu::kLayerNormEps);
  T* y = out + size_t(row) * C;
  for_row_groups<kVector>(x, C, lane, [&](int c, const float(&v)[kVec]) {
    float w[kVec], b[kVec], r[kVec];
    load_floats<kVector>(w, weight, size_t(c), size_t(C));
    load_floats<kVector>(b, bias, size_t(c), size_t(C));
#pragma unroll
    for (int k = 0; k < kVec; k++) r[k] = (v[k] - m) * s * w[k] + b[k];
    store_floats<kVector>(y, r, size_t(c), size_t(C));
  });
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = s;
  }
}

template <typename T, bool kVector>
__global__ void layernorm_backward_dinp_kernel(T* dinp, const T* dout, const T* inp, const T* weight,
                                               const float* mean, const float* rstd, int N, int C, bool accumulate) {
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  if (row >= N) return;
  const size_t offset = size_t(row) * C;
  const T* x = inp + offset;
  const T* dy = dout + offset;
  T* dx = dinp + offset;
  const float m = mean[row], s = rstd[row];
  float dnorm_sum = 0.0f, dnorm_norm_sum = 0.0f;
  for_row_groups<kVector>(x, C, lane, [&](int c, const float(&v)[kVec]) {
    float g[kVec], w[kVec];
    load_floats<kVector>(g, dy, size_t(c), size_t(C));
    load_floats<kVector>(w, weight, size_t(c), size_t(C));
#pragma unroll
    for (int k = 0; k < kVec; k++) {
      const float dnorm = w[k] * g[k];  // 0 past the end of the row (loads fill 0)
      dnorm_sum += dnorm;
      dnorm_norm_sum += dnorm * ((v[k] - m) * s);
    }
  });
  const float dnorm_mean = warp_sum(dnorm_sum) / float(C);
  const float dnorm_norm_mean = warp_sum(dnorm_norm_sum) / float(C);
  for_row_groups<kVector>(x, C, lane, [&](int c, const float(&v)[kVec]) {
    float g[kVec], w[kVec], d[kVec];
    load_floats<kVector>(g, dy, size_t(c), size_t(C));
    load_floats<kVector>(w, weight, size_t(c), size_t(C));
    load_grad_start<kVector>(d, dx, size_t(c), size_t(C), accumulate);
#pragma unroll
    for (int k = 0; k < kVec; k++) {
      const float norm = (v[k] - m) * s;
      d[k] += (w[k] * g[k] - dnorm_mean - norm * dnorm_norm_mean) * s;
    }
    store_floats<kVector>(dx, d, size_t(c), size_t(C));
  });
}

// acc[0] += norm · dout (dweight), acc[1] += dout (dbias)
template <typename T>
struct LayerNormParamGradTerm {
  const T* inp;
  const T* dout;
  const float* mean;
  const float* rstd;
  int C;
  __device__ void operator()(int r, int c, float (&acc)[2]) const {
    const size_t i = size_t(r) * C + c;
    const float dy = to_float(dout[i]);
    acc[0] += (to_float(inp[i]) - mean[r]) * rstd[r] * dy;
    acc[1] += dy;
  }
};

ColumnChunking param_grad_chunking(int N, int C) {
  const size_t chunks = ceil_div(size_t(N), kRowsPerChunk);
  return column_chunking(N, C, 2, kRowsPerChunk, 2 * size_t(C) * (chunks > 0 ? chunks : 1), "layernorm_backward");
}

void check_shape(int N, int C, const char* op) {
  require(N >= 0 && C > 0, op, ": bad shape N = ", N, ", C = ", C);
  require(ceil_div(size_t(N), kRowsPerChunk) <= 65535, op, ": N = ", N, " rows exceed ", 65535 * kRowsPerChunk,
          " (the grid of the parameter-gradient sums)");
}

// layernorm_forward_kernel over inp, first formed as a + b when a is not null.
void launch_layernorm_forward(DType dt, void* out, float* mean, float* rstd, void* inp, const void* a, const void* b,
                              const void* weight, const void* bias, int N, int C, cudaStream_t stream,
                              const char* op) {
  check_shape(N, C, op);
  if (N == 0) return;
  const unsigned grid = grid_size(size_t(N), kWarpsPerBlock, op);
  const bool vector = C % kVec == 0 && aligned16(out) && aligned16(inp) && aligned16(weight) && aligned16(bias) &&
                      (!a || (aligned16(a) && aligned16(b)));
  dispatch_activation(dt, op, [&](auto tag) {
    using T = decltype(tag);
    auto kernel = a ? (vector ? layernorm_forward_kernel<T, true, true> : layernorm_forward_kernel<T, false, true>)
                    : (vector ? layernorm_forward_kernel<T, true, false> : layernorm_forward_kernel<T, false, false>);
    launch(kernel, grid, kWarpsPerBlock * kWarpSize, 0, stream, "layernorm_forward_kernel", static_cast<T*>(out), mean,
           rstd, static_cast<T*>(inp), static_cast<const T*>(a), static_cast<const T*>(b),
           static_cast<const T*>(weight), static_cast<const T*>(bias), N, C);
  });
}

}  // namespace

void layernorm_forward(DType dt, void* out, float* mean, float* rstd, const void* inp, const void* weight,
                       const void* bias, int N, int C, cudaStream_t stream) {
  // The kernel writes inp only when it forms it from a and b.
  launch_layernorm_forward(dt, out, mean, rstd, const_cast<void*>(inp), nullptr, nullptr, weight, bias, N, C, stream,
                           "layernorm_forward");
}

void residual_layernorm_forward(DType dt, void* residual, void* out, float* mean, float* rstd, const void* a,
                                const void* b, const void* weight, const void* bias, int N, int C,
                                cudaStream_t stream) {
  launch_layernorm_forward(dt, out, mean, rstd, residual, a, b, weight, bias, N, C, stream,
                           "residual_layernorm_forward");
}

size_t layernorm_backward_scratch_floats(int N, int C) {
  check_shape(N, C, "layernorm_backward_scratch_floats");
  return 2 * size_t(C) * size_t(param_grad_chunking(N, C).chunks);
}

void layernorm_backward(DType dt, void* dinp, void* dweight, void* dbias, float* scratch, const void* dout,
                        const void* inp, const void* weight, const float* mean, const float* rstd, int N, int C,
                        cudaStream_t stream, GradInto dinp_into) {
  check_shape(N, C, "layernorm_backward");
  if (N == 0) return;
  const unsigned grid = grid_size(size_t(N), kWarpsPerBlock, "layernorm_backward");
  const bool vector = C % kVec == 0 && aligned16(dinp) && aligned16(dout) && aligned16(inp) && aligned16(weight);
  dispatch_activation(dt, "layernorm_backward", [&](auto tag) {
    using T = decltype(tag);
    auto* dy = static_cast<const T*>(dout);
    auto* x = static_cast<const T*>(inp);
    if (dinp)
      launch(vector ? layernorm_backward_dinp_kernel<T, true> : layernorm_backward_dinp_kernel<T, false>, grid,
             kWarpsPerBlock * kWarpSize, 0, stream, "layernorm_backward_dinp_kernel", static_cast<T*>(dinp), dy, x,
             static_cast<const T*>(weight), mean, rstd, N, C, dinp_into == GradInto::Accumulate);
    if (dweight || dbias) {
      require(scratch != nullptr, "layernorm_backward: scratch is null (layernorm_backward_scratch_floats floats)");
      const ColumnOutputs<2, T> outputs{{static_cast<T*>(dweight), static_cast<T*>(dbias)}};
      column_sums(outputs, scratch, N, C, param_grad_chunking(N, C), LayerNormParamGradTerm<T>{x, dy, mean, rstd, C},
                  stream);
    }
  });
}

}  // namespace zt::cuda
