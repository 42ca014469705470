#include "kernels/cuda/vector_ops.hpp"

#include "kernels/cuda/vector_ops_kernels.cuh"

namespace zt::cuda {

using namespace vector_kernels;

namespace {

template <typename F>
void with_types(DType a, DType b, F&& f) {
  dispatch_any(a, [&](auto ta) { dispatch_any(b, [&](auto tb) { f(ta, tb); }); });
}

}  // namespace

void cast(DType dst_type, void* dst, DType src_type, const void* src, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (dst_type == src_type) {
    if (dst != src)
      ZT_CUDA_CHECK(cudaMemcpyAsync(dst, src, n * dtype_size(dst_type), cudaMemcpyDeviceToDevice, stream));
    return;
  }
  const unsigned grid = grid_size(n, size_t(kBlock) * kVec, "cast");
  const bool vector = aligned16(dst) && aligned16(src);
  with_types(dst_type, src_type, [&](auto td, auto ts) {
    using D = decltype(td);
    using S = decltype(ts);
    launch(vector ? cast_kernel<D, S, true> : cast_kernel<D, S, false>, grid, kBlock, 0, stream, "cast_kernel",
           static_cast<D*>(dst), static_cast<const S*>(src), n);
  });
}

void add_into(DType dst_type, void* dst, DType src_type, const void* src, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  const unsigned grid = grid_size(n, size_t(kBlock) * kVec, "add_into");
  const bool vector = aligned16(dst) && aligned16(src);
  with_types(dst_type, src_type, [&](auto td, auto ts) {
    using D = decltype(td);
    using S = decltype(ts);
    launch(vector ? add_into_kernel<D, S, true> : add_into_kernel<D, S, false>, grid, kBlock, 0, stream,
           "add_into_kernel", static_cast<D*>(dst), static_cast<const S*>(src), n);
  });
}

void scale(DType type, void* x, float factor, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  const unsigned grid = grid_size(n, size_t(kBlock) * kVec, "scale");
  dispatch_any(type, [&](auto tag) {
    using T = decltype(tag);
    launch(aligned16(x) ? scale_kernel<T, true> : scale_kernel<T, false>, grid, kBlock, 0, stream, "scale_kernel",
           static_cast<T*>(x), factor, n);
  });
}

void fill(DType type, void* x, float value, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  const unsigned grid = grid_size(n, size_t(kBlock) * kVec, "fill");
  dispatch_any(type, [&](auto tag) {
    using T = decltype(tag);
    launch(aligned16(x) ? fill_kernel<T, true> : fill_kernel<T, false>, grid, kBlock, 0, stream, "fill_kernel",
           static_cast<T*>(x), value, n);
  });
}

void sum_squares_partials(DType type, const void* x, size_t n, float factor, double* partials, cudaStream_t stream) {
  if (n == 0) return;
  const unsigned grid = grid_size(n, kSumSquaresChunk, "sum_squares_partials");
  dispatch_any(type, [&](auto tag) {
    using T = decltype(tag);
    launch(aligned16(x) ? sum_squares_kernel<T, true> : sum_squares_kernel<T, false>, grid, kBlock, 0, stream,
           "sum_squares_kernel", static_cast<const T*>(x), n, factor, partials);
  });
}

}  // namespace zt::cuda
