#include "core/dtype.hpp"

#include <algorithm>

#include "core/dtype_names.hpp"

namespace zt {

std::string_view dtype_name(DType t) { return kDTypeNames.name(t); }

DType dtype_from_name(std::string_view name) {
  if (const std::optional<DType> t = kDTypeNames.find(name)) return *t;
  fail("unknown dtype '{}' (expected {})", name, kDTypeNames.list());
}

float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (man << 13));  // inf / nan
  if (exp == 0) {
    if (man == 0) return bits_f32(sign);
    // subnormal: value = man * 2^-24, exact in fp32
    float v = float(man) * 0x1p-24f;
    return sign ? -v : v;
  }
  return bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t f32_to_f16(float f) {
  uint32_t u = f32_bits(f);
  uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((a >> 13) & 0x3ffu));  // nan stays nan
  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (a < 0x38800000u) {
    // result is subnormal or zero: scale into the 10-bit mantissa, rounding to nearest even
    if (a < 0x33000000u) return sign;  // below half the smallest subnormal (2^-25): zero
    uint32_t exp = a >> 23;
    uint32_t man = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - exp;  // 14 + (113 - exp) - 1 ... places to drop
    uint32_t r = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) r++;
    return uint16_t(sign | r);
  }
  uint32_t r = a - 0x38000000u;  // rebias exponent 127 -> 15
  r += 0xfffu + ((r >> 13) & 1u);
  return uint16_t(sign | (r >> 13));
}

void to_f32(DType t, const void* src, float* dst, size_t n) {
  if (n == 0) return;  // src and dst may be null
  const uint16_t* s16 = static_cast<const uint16_t*>(src);
  switch (t) {
    case DType::F32: std::memcpy(dst, src, n * 4); break;
    case DType::BF16: for (size_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s16[i]); break;
    case DType::F16: for (size_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s16[i]); break;
  }
}

void from_f32(DType t, const float* src, void* dst, size_t n) {
  if (n == 0) return;
  uint16_t* d16 = static_cast<uint16_t*>(dst);
  switch (t) {
    case DType::F32: std::memcpy(dst, src, n * 4); break;
    case DType::BF16: for (size_t i = 0; i < n; ++i) d16[i] = f32_to_bf16(src[i]); break;
    case DType::F16: for (size_t i = 0; i < n; ++i) d16[i] = f32_to_f16(src[i]); break;
  }
}

void convert(DType st, const void* src, DType dt, void* dst, size_t n) {
  if (n == 0) return;
  if (st == dt) {
    std::memmove(dst, src, n * dtype_size(st));
    return;
  }
  if (st == DType::F32) return from_f32(dt, static_cast<const float*>(src), dst, n);
  if (dt == DType::F32) return to_f32(st, src, static_cast<float*>(dst), n);
  float tmp[1024];
  auto s = static_cast<const char*>(src);
  auto d = static_cast<char*>(dst);
  for (size_t i = 0; i < n; i += 1024) {
    size_t k = std::min<size_t>(1024, n - i);
    to_f32(st, s + i * 2, tmp, k);
    from_f32(dt, tmp, d + i * 2, k);
  }
}

}  // namespace zt
