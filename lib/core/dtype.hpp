#pragma once
// Element types and round-to-nearest-even conversions between fp32 and the 16-bit formats.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace zt {

enum class DType : uint8_t { F32, BF16, F16 };

constexpr size_t dtype_size(DType t) { return t == DType::F32 ? 4 : 2; }
std::string_view dtype_name(DType t);  // "fp32", "bf16", "fp16"
DType dtype_from_name(std::string_view name);  // throws zt::Error on anything else

inline uint32_t f32_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float bits_f32(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

inline float bf16_to_f32(uint16_t h) { return bits_f32(uint32_t(h) << 16); }

inline uint16_t f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN, keep sign
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
  return uint16_t(u >> 16);
}

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);

// Bulk conversions: dst[i] = convert(src[i]).
void to_f32(DType src_type, const void* src, float* dst, size_t n);
void from_f32(DType dst_type, const float* src, void* dst, size_t n);
// dst = src converted between any two types (through fp32). Identical types: a copy.
void convert(DType src_type, const void* src, DType dst_type, void* dst, size_t n);

}  // namespace zt
