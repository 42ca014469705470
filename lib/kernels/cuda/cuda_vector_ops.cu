#include "kernels/cuda/cuda_vector_ops.hpp"

#include "kernels/cuda/common.cuh"

namespace zt::cuda {

// Every conversion is the bit-exact one (dtype_bits.cuh) and every operation an explicit _rn
// intrinsic, so nothing depends on nvcc's contraction choices.
namespace {

template <typename Dst, typename Src, bool kVector>
__global__ void cast_kernel(Dst* dst, const Src* src, size_t n) {
  const size_t i = first_element();
  if (i >= n) return;
  float x[kVec];
  load_floats<kVector, true>(x, src, i, n);
  store_floats<kVector, true>(dst, x, i, n);
}

template <typename Dst, typename Src, bool kVector>
__global__ void add_into_kernel(Dst* dst, const Src* src, size_t n) {
  const size_t i = first_element();
  if (i >= n) return;
  float x[kVec], y[kVec];
  load_floats<kVector, true>(x, dst, i, n);
  load_floats<kVector, true>(y, src, i, n);
#pragma unroll
  for (int k = 0; k < kVec; k++) x[k] = __fadd_rn(x[k], y[k]);
  store_floats<kVector, true>(dst, x, i, n);
}

template <typename T, bool kVector>
__global__ void scale_kernel(T* x, float factor, size_t n) {
  const size_t i = first_element();
  if (i >= n) return;
  float v[kVec];
  load_floats<kVector, true>(v, x, i, n);
#pragma unroll
  for (int k = 0; k < kVec; k++) v[k] = __fmul_rn(v[k], factor);
  store_floats<kVector, true>(x, v, i, n);
}

template <typename T, bool kVector>
__global__ void fill_kernel(T* x, float value, size_t n) {
  const size_t i = first_element();
  if (i >= n) return;
  float v[kVec];
#pragma unroll
  for (int k = 0; k < kVec; k++) v[k] = value;
  store_floats<kVector, true>(x, v, i, n);
}

// One block per chunk; thread t takes the 8-element groups t, t + blockDim.x, ... of the chunk.
template <typename T, bool kVector>
__global__ void sum_squares_kernel(const T* x, size_t n, float factor, double* partials) {
  __shared__ double scratch[kWarpSize];
  const size_t begin = size_t(blockIdx.x) * kSumSquaresChunk;
  const size_t end = begin + kSumSquaresChunk < n ? begin + kSumSquaresChunk : n;
  double s = 0.0;
  for (size_t i = begin + size_t(threadIdx.x) * kVec; i < end; i += size_t(blockDim.x) * kVec) {
    float v[kVec];
    load_floats<kVector, true>(v, x, i, end);  // zeros past the end add nothing
#pragma unroll
    for (int k = 0; k < kVec; k++) {
      const double d = double(__fmul_rn(v[k], factor));
      s = __dadd_rn(s, __dmul_rn(d, d));
    }
  }
  s = block_sum(s, scratch);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

}  // namespace

void cast(DType dst_type, void* dst, DType src_type, const void* src, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (dst_type == src_type) {
    if (dst != src)
      ZT_CUDA_CHECK(cudaMemcpyAsync(dst, src, n * dtype_size(dst_type), cudaMemcpyDeviceToDevice, stream));
    return;
  }
  const bool vector = aligned16(dst) && aligned16(src);
  dispatch_any2(dst_type, src_type, [&](auto td, auto ts) {
    using D = decltype(td);
    using S = decltype(ts);
    launch_elementwise(cast_kernel<D, S, true>, cast_kernel<D, S, false>, vector, n, stream, "cast_kernel",
                       static_cast<D*>(dst), static_cast<const S*>(src), n);
  });
}

void add_into(DType dst_type, void* dst, DType src_type, const void* src, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  const bool vector = aligned16(dst) && aligned16(src);
  dispatch_any2(dst_type, src_type, [&](auto td, auto ts) {
    using D = decltype(td);
    using S = decltype(ts);
    launch_elementwise(add_into_kernel<D, S, true>, add_into_kernel<D, S, false>, vector, n, stream,
                       "add_into_kernel", static_cast<D*>(dst), static_cast<const S*>(src), n);
  });
}

void scale(DType type, void* x, float factor, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_any(type, [&](auto tag) {
    using T = decltype(tag);
    launch_elementwise(scale_kernel<T, true>, scale_kernel<T, false>, aligned16(x), n, stream, "scale_kernel",
                       static_cast<T*>(x), factor, n);
  });
}

void fill(DType type, void* x, float value, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_any(type, [&](auto tag) {
    using T = decltype(tag);
    launch_elementwise(fill_kernel<T, true>, fill_kernel<T, false>, aligned16(x), n, stream, "fill_kernel",
                       static_cast<T*>(x), value, n);
  });
}

void sum_squares_partials(DType type, const void* x, size_t n, float factor, double* partials, cudaStream_t stream) {
  if (n == 0) return;
  const unsigned grid = grid_size(n, kSumSquaresChunk, "sum_squares_partials");
  dispatch_any(type, [&](auto tag) {
    using T = decltype(tag);
    launch(aligned16(x) ? sum_squares_kernel<T, true> : sum_squares_kernel<T, false>, grid, kElementwiseBlock, 0,
           stream, "sum_squares_kernel", static_cast<const T*>(x), n, factor, partials);
  });
}

namespace {

__global__ void sum_in_order_kernel(const double* partials, size_t count, double* sum) {
  double total = 0.0;
  for (size_t i = 0; i < count; ++i) total = __dadd_rn(total, partials[i]);
  *sum = total;
}

// One thread: optim/grad_clip.hpp's clip_coefficient and the engine's factor, operation for operation.
__global__ void grad_norm_kernel(const double* sums, int count, float factor, double max_norm, int skip_nonfinite,
                                 GradNorm* out) {
  double total = 0.0;
  for (int i = 0; i < count; ++i) total = __dadd_rn(total, sums[i]);
  const double norm = sqrt(total);
  double clip = 1.0;
  if (max_norm > 0) {
    const double coefficient = max_norm / __dadd_rn(norm, 1e-6);
    clip = coefficient < 1.0 ? coefficient : 1.0;
  }
  out->sum_of_squares = total;
  out->norm = norm;
  out->grad_factor = float(__dmul_rn(double(factor), clip));
  out->skip = skip_nonfinite && !isfinite(total) ? 1 : 0;
}

}  // namespace

void sum_in_order(const double* partials, size_t count, double* sum, cudaStream_t stream) {
  launch(sum_in_order_kernel, 1, 1, 0, stream, "sum_in_order_kernel", partials, count, sum);
}

void grad_norm(const double* sums, int count, float factor, double max_norm, bool skip_nonfinite, GradNorm* out,
               cudaStream_t stream) {
  launch(grad_norm_kernel, 1, 1, 0, stream, "grad_norm_kernel", sums, count, factor, max_norm, skip_nonfinite ? 1 : 0,
         out);
}

}  // namespace zt::cuda
