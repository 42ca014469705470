#pragma once
// Vector operations of the ZeRO engine over flat device buffers of fp32, bf16 or fp16: casts,
// add-into, scale, fill, and the sum-of-squares partials of the gradient norm.
// Every result is computed in fp32 and rounded to nearest even with core/dtype.hpp's own integer
// steps (dtype_bits.cuh), so a cast gives the CPU's bits for every value, NaN payloads included.
// Trick: none; llm.c's plain elementwise kernels, 8 elements per thread with 16-byte loads when
// the pointers are 16-byte aligned (one element at a time otherwise). The sums of squares are cut
// into fixed 16384-element chunks, one block each, like zero/shard_optimizer.cpp's
// grad_sum_of_squares: the host adds the partials in order, so the norm depends only on the values.
#include <cuda_runtime_api.h>

#include <cstddef>

#include "core/dtype.hpp"
#include "kernels/grad_norm.hpp"

namespace zt::cuda {

// dst[i] = src[i] converted (a copy when the types match). The buffers must not overlap unless
// dst == src with the same type.
void cast(DType dst_type, void* dst, DType src_type, const void* src, size_t n, cudaStream_t stream);

// dst[i] = dst[i] + src[i], added in fp32 and rounded once to dst's type.
void add_into(DType dst_type, void* dst, DType src_type, const void* src, size_t n, cudaStream_t stream);

// x[i] = x[i] · factor, in fp32, rounded once.
void scale(DType type, void* x, float factor, size_t n, cudaStream_t stream);

// x[i] = value rounded to the type.
void fill(DType type, void* x, float value, size_t n, cudaStream_t stream);

constexpr size_t kSumSquaresChunk = 16384;
inline size_t sum_squares_partial_count(size_t n) { return (n + kSumSquaresChunk - 1) / kSumSquaresChunk; }

// partials[c] = Σ over chunk c = [c·16384, min(n, (c+1)·16384)) of double(float(x[i]) · factor)², the
// product rounded to fp32 first as the CPU does; sum_squares_partial_count(n) doubles in device
// memory. Within a chunk the block adds in a fixed tree, not the CPU's left-to-right order, so a
// partial equals the CPU's to double rounding (about 1e-16 relative), not bit for bit; the same
// values always give the same bits.
void sum_squares_partials(DType type, const void* x, size_t n, float factor, double* partials,
                          cudaStream_t stream);

// *sum = partials[0] + partials[1] + ... in that order (one thread: the host's loop, on the device).
void sum_in_order(const double* partials, size_t count, double* sum, cudaStream_t stream);

// VectorOps::grad_norm on the device (kernels/vector_ops.hpp): the sums added in order, the root,
// the clip coefficient of optim/grad_clip.hpp and the skip flag, into *out (device memory).
void grad_norm(const double* sums, int count, float factor, double max_norm, bool skip_nonfinite, GradNorm* out,
               cudaStream_t stream);

}  // namespace zt::cuda
