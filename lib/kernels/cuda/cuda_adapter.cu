#include "kernels/cuda/cuda_adapter.hpp"

#include "kernels/cuda/common.cuh"
#include "kernels/dropout_mask.hpp"

namespace zt::cuda {

namespace {

__device__ __forceinline__ size_t thread_item() { return size_t(blockIdx.x) * blockDim.x + threadIdx.x; }

template <typename T>
__global__ void scale_columns_kernel(T* dst, int dst_ld, const T* src, int src_ld, int N, int width, float scale,
                                     bool accumulate) {
  const size_t item = thread_item();
  if (item >= size_t(N) * size_t(width)) return;
  const size_t n = item / size_t(width), j = item % size_t(width);
  T& d = dst[n * size_t(dst_ld) + j];
  const float v = scale * to_float(src[n * size_t(src_ld) + j]);
  d = from_float<T>(accumulate ? to_float(d) + v : v);
}

template <typename T>
__global__ void dropout_kernel(T* out, const T* inp, size_t n, uint64_t seed, uint64_t drop_below, float keep_scale,
                               bool accumulate) {
  const size_t i = thread_item();
  if (i >= n) return;
  const float v = dropout_keeps(seed, i, drop_below) ? to_float(inp[i]) * keep_scale : 0.0f;
  out[i] = from_float<T>(accumulate ? to_float(out[i]) + v : v);
}

}  // namespace

void scale_columns(DType dt, void* dst, int dst_ld, const void* src, int src_ld, int N, int width, float scale,
                   GradInto into, cudaStream_t stream) {
  require(N >= 0 && width >= 0 && dst_ld >= width && src_ld >= width, "scale_columns: bad shape N = ", N,
          ", width = ", width, ", dst_ld = ", dst_ld, ", src_ld = ", src_ld);
  const size_t n = size_t(N) * size_t(width);
  if (n == 0) return;
  dispatch_activation(dt, "scale_columns", [&](auto tag) {
    using T = decltype(tag);
    launch(scale_columns_kernel<T>, grid_size(n, kElementwiseBlock, "scale_columns"), kElementwiseBlock, 0, stream,
           "scale_columns_kernel", static_cast<T*>(dst), dst_ld, static_cast<const T*>(src), src_ld, N, width, scale,
           into == GradInto::Accumulate);
  });
}

void dropout(DType dt, void* out, const void* inp, size_t n, float p, uint64_t seed, GradInto into,
             cudaStream_t stream) {
  require(p >= 0.0f && p < 1.0f, "dropout: p = ", p, " (expected 0 <= p < 1)");
  if (n == 0) return;
  dispatch_activation(dt, "dropout", [&](auto tag) {
    using T = decltype(tag);
    launch(dropout_kernel<T>, grid_size(n, kElementwiseBlock, "dropout"), kElementwiseBlock, 0, stream,
           "dropout_kernel", static_cast<T*>(out), static_cast<const T*>(inp), n, seed, dropout_threshold(p),
           1.0f / (1.0f - p), into == GradInto::Accumulate);
  });
}

}  // namespace zt::cuda
