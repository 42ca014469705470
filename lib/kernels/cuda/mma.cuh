#pragma once
// The tensor cores at warp level: mma.sync.m16n8k16 with bf16 inputs and fp32 accumulators
// (sm_80 and later), on fragments whose layout the PTX ISA documents ("Matrix Fragments for
// mma.m16n8k16 with floating point type"), so that kernels may work on rows and columns of an
// accumulator in registers. With g = lane / 4 and t = lane % 4:
//   A (16 x 16, row-major): a[0] = (row g, cols 2t, 2t+1), a[1] = (row g+8, same cols),
//                           a[2] = (row g, cols 2t+8, 2t+9), a[3] = (row g+8, cols 2t+8, 2t+9);
//   B (16 x 8, by column):  b[0] = (rows 2t, 2t+1, col g), b[1] = (rows 2t+8, 2t+9, col g);
//   C, D (16 x 8, fp32):    d[0], d[1] = (row g, cols 2t, 2t+1), d[2], d[3] = (row g+8, same cols).
// Each 32-bit register holds two bf16, the lower column (or row, for B) in the low half. The
// accumulator of an m16n8 tile has the A layout of its 16 x 8 half, so a product's output feeds
// the next product as A with no data movement (FlashAttention-2's trick).
// Emulated on the CPU by tests/kernels_cuda/cuda_emulator.hpp (the same layout, one warp at a time).
#include "kernels/cuda/common.cuh"

namespace zt::cuda {

// d += a · b for one m16n8k16 tile.
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#ifdef ZT_CUDA_EMULATION
  ::zt::emu::mma_bf16_16816(d, a, b);
#else
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

// Two floats rounded to bf16 in one register, lo in the low half.
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
#ifdef __CUDA_ARCH__
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
#else
  return uint32_t(bits::f32_to_bf16(lo)) | uint32_t(bits::f32_to_bf16(hi)) << 16;
#endif
}

// Two bf16 in one register: the pair at p (4-byte aligned), or two elements from anywhere.
__device__ __forceinline__ uint32_t load_pair(const bf16* p) {
#ifdef __CUDA_ARCH__
  return *reinterpret_cast<const uint32_t*>(p);
#else
  uint32_t r;
  std::memcpy(&r, p, 4);
  return r;
#endif
}
__device__ __forceinline__ uint32_t load_pair(const bf16* lo, const bf16* hi) {
  return uint32_t(__bfloat16_as_ushort(*lo)) | uint32_t(__bfloat16_as_ushort(*hi)) << 16;
}

}  // namespace zt::cuda
