#pragma once
// Round-to-nearest-even conversions between fp32 and the 16-bit formats on raw bits, for host and
// device: the same integer steps as core/dtype.hpp and core/dtype.cpp, so a cast on the GPU gives
// the bits the CPU gives for every value, NaN payloads included (the hardware conversions make
// every NaN the canonical one). The elementwise model kernels, where a NaN's payload does not
// matter, use the hardware conversions instead (common.cuh).
#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define ZT_HOST_DEVICE __host__ __device__
#else
#define ZT_HOST_DEVICE
#endif

namespace zt::cuda::bits {

ZT_HOST_DEVICE inline uint32_t f32_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

ZT_HOST_DEVICE inline float bits_f32(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

ZT_HOST_DEVICE inline float bf16_to_f32(uint16_t h) { return bits_f32(uint32_t(h) << 16); }

ZT_HOST_DEVICE inline uint16_t f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN, keep sign
  u += 0x7fffu + ((u >> 16) & 1u);                                         // nearest, ties to even
  return uint16_t(u >> 16);
}

ZT_HOST_DEVICE inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (man << 13));  // inf / nan
  if (exp == 0) {
    if (man == 0) return bits_f32(sign);
    const float v = float(man) * 0x1p-24f;  // subnormal: man * 2^-24, exact in fp32
    return sign ? -v : v;
  }
  return bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

ZT_HOST_DEVICE inline uint16_t f32_to_f16(float f) {
  const uint32_t u = f32_bits(f);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((a >> 13) & 0x3ffu));  // nan stays nan
  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);                        // rounds to >= 65520: inf
  if (a < 0x38800000u) {
    // subnormal or zero: shift into the 10-bit mantissa, rounding to nearest even
    if (a < 0x33000000u) return sign;  // below half the smallest subnormal (2^-25): zero
    const uint32_t exp = a >> 23;
    const uint32_t man = (a & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exp;
    uint32_t r = man >> shift;
    const uint32_t rem = man & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) r++;
    return uint16_t(sign | r);
  }
  uint32_t r = a - 0x38000000u;  // rebias the exponent from 127 to 15
  r += 0xfffu + ((r >> 13) & 1u);
  return uint16_t(sign | (r >> 13));
}

}  // namespace zt::cuda::bits
