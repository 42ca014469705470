#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "core/dtype.hpp"

using namespace zt;

// Independent reference: round a double to the nearest value with `mant` explicit mantissa bits,
// exponent range [emin, emax], ties to even, by exhaustive neighbour comparison.
static double round_to_format(double x, int mant, int emin, int emax) {
  if (std::isnan(x) || std::isinf(x) || x == 0) return x;
  double ax = std::fabs(x);
  int e = std::ilogb(ax);
  if (e < emin) e = emin;  // subnormal range uses the minimum exponent's spacing
  double ulp = std::ldexp(1.0, e - mant);
  double lo = std::floor(ax / ulp) * ulp, hi = lo + ulp;
  double r;
  if (ax - lo < hi - ax) r = lo;
  else if (ax - lo > hi - ax) r = hi;
  else r = std::fmod(lo / ulp, 2.0) == 0 ? lo : hi;
  double maxv = std::ldexp(2.0 - std::ldexp(1.0, -mant), emax);
  if (r > maxv) r = INFINITY;
  return std::copysign(r, x);
}

TEST_CASE("bf16 round trip and rounding", "[dtype]") {
  CHECK(bf16_to_f32(f32_to_bf16(1.0f)) == 1.0f);
  CHECK(bf16_to_f32(f32_to_bf16(-2.5f)) == -2.5f);
  // ties to even: 1 + 2^-8 is halfway between 1 and 1 + 2^-7 -> 1 (even)
  CHECK(bf16_to_f32(f32_to_bf16(1.0f + 0x1p-8f)) == 1.0f);
  // 1 + 3*2^-8 is halfway between 1+2^-7 and 1+2^-6 -> 1+2^-6 (even)
  CHECK(bf16_to_f32(f32_to_bf16(1.0f + 3 * 0x1p-8f)) == 1.0f + 0x1p-6f);
  CHECK(std::isinf(bf16_to_f32(f32_to_bf16(INFINITY))));
  CHECK(std::isinf(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::max()))));
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
  CHECK(std::signbit(bf16_to_f32(f32_to_bf16(-0.0f))));
  // a NaN whose payload sits only in the low bits must not become inf
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(bits_f32(0x7f800001u)))));
  // subnormal fp32 values survive (bf16 has fp32's exponent range)
  float sub = bits_f32(0x00010000u);
  CHECK(bf16_to_f32(f32_to_bf16(sub)) == sub);
  // every bf16 value maps back to itself
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    float f = bf16_to_f32(uint16_t(h));
    if (!std::isnan(f)) REQUIRE(f32_to_bf16(f) == h);
  }
  // against the reference on many values
  uint32_t u = 12345;
  for (int i = 0; i < 200000; ++i) {
    u = u * 1664525u + 1013904223u;
    float f = bits_f32(u);
    if (std::isnan(f)) continue;
    double ref = round_to_format(f, 7, -126, 127);
    REQUIRE(double(bf16_to_f32(f32_to_bf16(f))) == ref);
  }
}

TEST_CASE("fp16 round trip, subnormals, overflow and ties", "[dtype]") {
  CHECK(f16_to_f32(f32_to_f16(1.0f)) == 1.0f);
  CHECK(f16_to_f32(f32_to_f16(65504.0f)) == 65504.0f);
  CHECK(f16_to_f32(f32_to_f16(65519.0f)) == 65504.0f);  // rounds down below the midpoint
  CHECK(std::isinf(f16_to_f32(f32_to_f16(65520.0f))));  // midpoint rounds to even = inf
  CHECK(f16_to_f32(f32_to_f16(0x1p-24f)) == 0x1p-24f);  // smallest subnormal
  CHECK(f16_to_f32(f32_to_f16(0x1p-25f)) == 0.0f);      // tie between 0 and 2^-24 -> 0 (even)
  CHECK(f16_to_f32(f32_to_f16(0x1.8p-24f)) == 0x1p-23f);  // tie between 1 and 2 units -> 2 (even)
  CHECK(f16_to_f32(f32_to_f16(0x1.0p-25f * 1.0001f)) == 0x1p-24f);
  CHECK(std::isnan(f16_to_f32(f32_to_f16(NAN))));
  CHECK(std::isinf(f16_to_f32(f32_to_f16(-INFINITY))));
  CHECK(std::signbit(f16_to_f32(f32_to_f16(-0.0f))));
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    float f = f16_to_f32(uint16_t(h));
    if (!std::isnan(f)) REQUIRE(f32_to_f16(f) == h);
    else REQUIRE(std::isnan(f16_to_f32(f32_to_f16(f))));
  }
  uint32_t u = 777;
  for (int i = 0; i < 200000; ++i) {
    u = u * 1664525u + 1013904223u;
    // concentrate on fp16's range: exponents 2^-30 .. 2^17
    float f = std::ldexp(1.0f + float(u & 0xffffff) * 0x1p-24f, int((u >> 24) % 48) - 30);
    if (u & 1) f = -f;
    double ref = round_to_format(f, 10, -14, 15);
    REQUIRE(double(f16_to_f32(f32_to_f16(f))) == ref);
  }
}

TEST_CASE("bulk conversions and names", "[dtype]") {
  float src[4] = {1.5f, -0.25f, 3.0e-3f, 1000.0f};
  uint16_t h[4];
  float back[4];
  from_f32(DType::BF16, src, h, 4);
  to_f32(DType::BF16, h, back, 4);
  for (int i = 0; i < 4; ++i) CHECK(back[i] == bf16_to_f32(f32_to_bf16(src[i])));
  from_f32(DType::F16, src, h, 4);
  to_f32(DType::F16, h, back, 4);
  for (int i = 0; i < 4; ++i) CHECK(back[i] == f16_to_f32(f32_to_f16(src[i])));
  CHECK(dtype_from_name("bf16") == DType::BF16);
  CHECK(dtype_name(DType::F16) == "fp16");
  CHECK(dtype_size(DType::F32) == 4);
  CHECK_THROWS_WITH(dtype_from_name("int8"), Catch::Contains("int8"));
}
