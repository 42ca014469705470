#pragma once
// Device helpers shared by the kernels: element conversions, 16-byte vector loads, deterministic
// warp and block reductions, dtype dispatch and launch sizes.
// One op family per .cu file, kernels and launchers together (llm.c's layout). No file uses the
// <<<>>> syntax except launch() below: the GPU-less tests compile the same .cu files with g++ and
// run them through tests/kernels_cuda/cuda_emulator.hpp.
//
// Reductions here always combine values in an order fixed by the block shape (a warp butterfly,
// then the warps' results in warp order), never by timing: the same inputs give the same bits.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "core/dtype.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/dtype_bits.cuh"

namespace zt::cuda {

using bf16 = __nv_bfloat16;
using f16 = __half;
constexpr int kWarpSize = 32;
constexpr unsigned kFullMask = 0xffffffffu;

__host__ __device__ constexpr size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

// ---------------------------------------------------------------------------------------------
// Element conversions. to_float/from_float use the hardware (round to nearest even; any NaN comes
// out as the canonical NaN); the _exact forms reproduce core/dtype.hpp bit for bit (dtype_bits.cuh).

template <typename T> __device__ __forceinline__ float to_float(T x);
template <> __device__ __forceinline__ float to_float<float>(float x) { return x; }
template <> __device__ __forceinline__ float to_float<bf16>(bf16 x) { return __bfloat162float(x); }
template <> __device__ __forceinline__ float to_float<f16>(f16 x) { return __half2float(x); }

template <typename T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ float from_float<float>(float x) { return x; }
template <> __device__ __forceinline__ bf16 from_float<bf16>(float x) { return __float2bfloat16_rn(x); }
template <> __device__ __forceinline__ f16 from_float<f16>(float x) { return __float2half_rn(x); }

template <typename T> __device__ __forceinline__ float to_float_exact(T x);
template <> __device__ __forceinline__ float to_float_exact<float>(float x) { return x; }
template <> __device__ __forceinline__ float to_float_exact<bf16>(bf16 x) {
  return bits::bf16_to_f32(__bfloat16_as_ushort(x));
}
template <> __device__ __forceinline__ float to_float_exact<f16>(f16 x) {
  return bits::f16_to_f32(__half_as_ushort(x));
}

template <typename T> __device__ __forceinline__ T from_float_exact(float x);
template <> __device__ __forceinline__ float from_float_exact<float>(float x) { return x; }
template <> __device__ __forceinline__ bf16 from_float_exact<bf16>(float x) {
  return __ushort_as_bfloat16(bits::f32_to_bf16(x));
}
template <> __device__ __forceinline__ f16 from_float_exact<f16>(float x) {
  return __ushort_as_half(bits::f32_to_f16(x));
}

// ---------------------------------------------------------------------------------------------
// Eight elements moved with 16-byte loads and stores (one for 16-bit types, two for fp32). The
// address must be 16-byte aligned: launchers check the base pointers (aligned16) and pick the
// scalar path otherwise; offsets are multiples of 8 elements, which keeps the alignment.

constexpr int kVec = 8;

template <typename T>
struct alignas(16) Vec8 {
  T v[kVec];
};

template <typename T>
__device__ __forceinline__ Vec8<T> load8(const T* p) {
  Vec8<T> r;
#ifdef __CUDA_ARCH__
  const int4* src = reinterpret_cast<const int4*>(p);
  int4* dst = reinterpret_cast<int4*>(&r);
#pragma unroll
  for (int j = 0; j < int(sizeof(Vec8<T>) / 16); j++) dst[j] = src[j];
#else  // host compilers (the emulated tests) see the bytes copied, not punned
  std::memcpy(static_cast<void*>(&r), static_cast<const void*>(p), sizeof r);
#endif
  return r;
}

template <typename T>
__device__ __forceinline__ void store8(T* p, const Vec8<T>& x) {
#ifdef __CUDA_ARCH__
  int4* dst = reinterpret_cast<int4*>(p);
  const int4* src = reinterpret_cast<const int4*>(&x);
#pragma unroll
  for (int j = 0; j < int(sizeof(Vec8<T>) / 16); j++) dst[j] = src[j];
#else
  std::memcpy(static_cast<void*>(p), static_cast<const void*>(&x), sizeof x);
#endif
}

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// x[k] = p[i + k] for the k with i + k < n (0 past the end). kVector: one vector load when all 8 are
// in range. kExact: the bit-exact conversions.
template <bool kVector, bool kExact = false, typename T>
__device__ __forceinline__ void load_floats(float (&x)[kVec], const T* p, size_t i, size_t n) {
  if (kVector && i + kVec <= n) {
    const Vec8<T> v = load8(p + i);
#pragma unroll
    for (int k = 0; k < kVec; k++) x[k] = kExact ? to_float_exact(v.v[k]) : to_float(v.v[k]);
  } else {
#pragma unroll
    for (int k = 0; k < kVec; k++)
      x[k] = i + k < n ? (kExact ? to_float_exact(p[i + k]) : to_float(p[i + k])) : 0.0f;
  }
}

// A gradient's values before this kernel adds to them: x = p[i..] when accumulating onto the buffer,
// zeros when writing over it (whatever it holds, NaNs included).
template <bool kVector, typename T>
__device__ __forceinline__ void load_grad_start(float (&x)[kVec], const T* p, size_t i, size_t n, bool accumulate) {
  if (accumulate) {
    load_floats<kVector>(x, p, i, n);
  } else {
#pragma unroll
    for (int k = 0; k < kVec; k++) x[k] = 0.0f;
  }
}

template <bool kVector, bool kExact = false, typename T>
__device__ __forceinline__ void store_floats(T* p, const float (&x)[kVec], size_t i, size_t n) {
  if (kVector && i + kVec <= n) {
    Vec8<T> v;
#pragma unroll
    for (int k = 0; k < kVec; k++) v.v[k] = kExact ? from_float_exact<T>(x[k]) : from_float<T>(x[k]);
    store8(p + i, v);
  } else {
#pragma unroll
    for (int k = 0; k < kVec; k++)
      if (i + k < n) p[i + k] = kExact ? from_float_exact<T>(x[k]) : from_float<T>(x[k]);
  }
}

// A row of C elements read by one warp: lane `lane` takes the 8-element groups starting at lane·8,
// lane·8 + 256, ... and calls f(c, x) with x = row[c, c + 8) as fp32 (0 past the end).
template <bool kVector, typename T, typename F>
__device__ __forceinline__ void for_row_groups(const T* row, int C, int lane, F&& f) {
  for (int c = lane * kVec; c < C; c += kWarpSize * kVec) {
    float x[kVec];
    load_floats<kVector>(x, row, size_t(c), size_t(C));
    f(c, x);
  }
}

// The block's dynamic shared memory (the bytes given at launch), 16-byte aligned. Tests on
// machines without a GPU run the kernels through tests/kernels_cuda/cuda_emulator.hpp, which
// defines ZT_CUDA_EMULATION and its own version of this function.
#ifndef ZT_CUDA_EMULATION
template <typename T>
__device__ __forceinline__ T* dynamic_shared_memory() {
  extern __shared__ int4 zt_dynamic_shared_memory[];
  return reinterpret_cast<T*>(zt_dynamic_shared_memory);
}
#endif

// Elementwise kernels: one thread per kVec elements, kElementwiseBlock threads a block
// (launch_elementwise below); this thread's first element.
constexpr int kElementwiseBlock = 256;
__device__ __forceinline__ size_t first_element() { return (size_t(blockIdx.x) * blockDim.x + threadIdx.x) * kVec; }
// Row-wise elementwise kernels over [rows, width]: one thread per kVec elements of a row, this
// thread's [c, c + 8) of row r (thread item = r · groups + group); false past the last row.
__device__ __forceinline__ bool my_row_group(int rows, int width, size_t& r, int& c) {
  const size_t groups = ceil_div(size_t(width), kVec);
  const size_t item = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  r = item / groups;
  c = int(item % groups) * kVec;
  return r < size_t(rows);
}

// ---------------------------------------------------------------------------------------------
// Reductions. The butterfly leaves the same bits in every lane (a + b == b + a exactly).

template <typename V>
__device__ __forceinline__ V warp_sum(V v) {
#pragma unroll
  for (int o = kWarpSize / 2; o > 0; o >>= 1) v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = kWarpSize / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}

// Sum or max over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the
// result. scratch: 32 values of shared memory, free again when the call returns.
template <typename V>
__device__ V block_sum(V v, V* scratch) {
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int warps = blockDim.x / kWarpSize;
  v = warp_sum(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : V(0);
  v = warp_sum(v);
  __syncthreads();
  return v;
}

__device__ inline float block_max(float v, float* scratch) {
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int warps = blockDim.x / kWarpSize;
  v = warp_max(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : -INFINITY;
  v = warp_max(v);
  __syncthreads();
  return v;
}

// ---------------------------------------------------------------------------------------------
// Host side.

// kernel<<<grid, block, shared_bytes, stream>>>(args...), then the launch check: a bad
// configuration (or an earlier asynchronous error) throws "<name>: kernel launch failed: ...".
// Every launch goes through here so that the GPU-less tests can run the launchers themselves
// (tests/kernels_cuda/cuda_emulator.hpp).
template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream,
            const char* name, Args&&... args) {
#ifdef ZT_CUDA_EMULATION
  ::zt::emu::launch(kernel, grid, block, shared_bytes, stream, name, Params(std::forward<Args>(args))...);
#else
  kernel<<<grid, block, shared_bytes, stream>>>(Params(std::forward<Args>(args))...);
#endif
  check_cuda(cudaGetLastError(), "kernel launch", name);
}

// Blocks for `items` work items of `per_block` each; gridDim.x is limited to 2^31 - 1.
inline unsigned grid_size(size_t items, size_t per_block, const char* op) {
  const size_t blocks = ceil_div(items, per_block);
  require(blocks <= size_t(INT_MAX), op, ": ", items, " work items need ", blocks, " blocks, more than a grid holds");
  return unsigned(blocks > 0 ? blocks : 1);
}

// An elementwise kernel over n elements: the variant with 16-byte loads when `vector` (every
// pointer 16-byte aligned), else the scalar one.
template <typename... Params, typename... Args>
void launch_elementwise(void (*vector_kernel)(Params...), void (*scalar_kernel)(Params...), bool vector, size_t n,
                        cudaStream_t stream, const char* name, Args&&... args) {
  launch(vector ? vector_kernel : scalar_kernel, grid_size(n, size_t(kElementwiseBlock) * kVec, name),
         kElementwiseBlock, 0, stream, name, std::forward<Args>(args)...);
}

// Calls f(T{}) with T = float or bf16 for the activation dtype of a model operator.
template <typename F>
void dispatch_activation(DType dt, const char* op, F&& f) {
  switch (dt) {
    case DType::F32: f(float{}); return;
    case DType::BF16: f(bf16{}); return;
    case DType::F16: break;
  }
  require(false, op, ": ", dtype_name(dt), " activations are not supported (fp32 or bf16)");
}

// Calls f(T{}) with T = float, bf16 or f16.
template <typename F>
void dispatch_any(DType dt, F&& f) {
  switch (dt) {
    case DType::F32: f(float{}); return;
    case DType::BF16: f(bf16{}); return;
    case DType::F16: f(f16{}); return;
  }
}

// Calls f(A{}, B{}) for two dtypes, each float, bf16 or f16.
template <typename F>
void dispatch_any2(DType a, DType b, F&& f) {
  dispatch_any(a, [&](auto ta) { dispatch_any(b, [&](auto tb) { f(ta, tb); }); });
}

}  // namespace zt::cuda
