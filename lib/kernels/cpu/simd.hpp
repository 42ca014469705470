#pragma once
// Portable 16-lane fp32 vectors (GCC/Clang vector extensions) for the elementwise kernels, and an
// exp built on them. Written with explicit vectors, selects replace branches: the compiler cannot
// split a loop into per-branch paths, where a dead path may compute subnormal values that the
// CPU handles in slow microcode. The same source compiles to SSE, AVX2 or AVX-512 (see
// ZT_KERNEL_CLONES).
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace zt::cpu {

using f32x16 = float __attribute__((vector_size(64)));
using i32x16 = int32_t __attribute__((vector_size(64)));
constexpr int kLanes = 16;

inline f32x16 splat(float v) { return f32x16{} + v; }
inline f32x16 load(const float* p) {
  f32x16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, f32x16 v) { std::memcpy(p, &v, sizeof v); }
// The first n (< 16) lanes from p, the others set to fill.
inline f32x16 load_partial(const float* p, size_t n, float fill) {
  float tmp[kLanes];
  for (int i = 0; i < kLanes; i++) tmp[i] = fill;
  std::memcpy(tmp, p, n * sizeof(float));
  return load(tmp);
}
inline void store_partial(float* p, f32x16 v, size_t n) {
  float tmp[kLanes];
  store(tmp, v);
  std::memcpy(p, tmp, n * sizeof(float));
}
inline f32x16 vmax(f32x16 a, f32x16 b) { return a > b ? a : b; }
inline f32x16 vmin(f32x16 a, f32x16 b) { return a < b ? a : b; }
inline float hsum(f32x16 v) {
  float s = 0.0f;
  for (int i = 0; i < kLanes; i++) s += v[i];
  return s;
}
inline float hmax(f32x16 v) {
  float m = v[0];
  for (int i = 1; i < kLanes; i++) m = v[i] > m ? v[i] : m;
  return m;
}

// exp with Cephes' expf polynomial: within 2 ulp over [-87, 88.37]. Inputs are clamped to that
// range, which keeps 2^n a finite normal number: below -87 the result is about 1.6e-38 (callers
// that need 0 select it), above 88.37 about 2.4e38 instead of inf.
inline f32x16 exp_fast(f32x16 x) {
  x = vmin(vmax(x, splat(-87.0f)), splat(88.37f));
  const f32x16 n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round(x·log2 e)
  f32x16 r = x - n * 0.693359375f;  // ln 2 split in a part exact in fp32 ...
  r = r - n * -2.12194440e-4f;      // ... and the rest
  f32x16 p = splat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const f32x16 y = p * r * r + r + 1.0f;
  const i32x16 bits = (__builtin_convertvector(n, i32x16) + 127) << 23;
  return y * (f32x16)bits;  // reinterprets the lanes (a vector conversion of the same size)
}

inline float exp_fast(float x) { return exp_fast(splat(x))[0]; }

}  // namespace zt::cpu

// Compiles a function for AVX-512, AVX2 and the baseline ISA and picks one at load time by CPU
// feature (GCC function multi-versioning). Every version computes the same values (zt_kernels
// builds with -ffp-contract=off: no fused multiply-adds), so results do not depend on the machine.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ZT_KERNEL_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ZT_KERNEL_CLONES
#endif
