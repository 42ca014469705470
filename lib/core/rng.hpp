#pragma once
// Deterministic random numbers, identical on every rank and platform for the same seed
// (std::normal_distribution is implementation-defined, so normals are made here).
#include <cmath>
#include <cstdint>

namespace zt {

class Rng {
public:
  explicit Rng(uint64_t seed) : state_(seed ^ 0x9E3779B97F4A7C15ull) { next_u64(); }
  uint64_t next_u64() {  // splitmix64
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // uniform in [0, 1) with 53 random bits
  double uniform() { return double(next_u64() >> 11) * 0x1p-53; }
  // uniform integer in [0, n)
  uint64_t below(uint64_t n) { return n ? next_u64() % n : 0; }
  // standard normal (Box-Muller; the second value is discarded for simplicity and reproducibility)
  double normal() {
    double u1 = uniform(), u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  uint64_t state() const { return state_; }
  void set_state(uint64_t s) { state_ = s; }

private:
  uint64_t state_;
};

}  // namespace zt

namespace zt {
// A standard normal that depends only on (seed, index): any rank can initialise any range of a
// flat buffer and get the same values as a process that initialised all of it.
inline double normal_at(uint64_t seed, uint64_t index) {
  Rng r(seed * 0x9E3779B97F4A7C15ull + index * 0xD1B54A32D192ED03ull + 1);
  return r.normal();
}
// Uniform in [-1, 1), depending only on (seed, index), like normal_at.
inline double symmetric_uniform_at(uint64_t seed, uint64_t index) {
  Rng r(seed * 0x9E3779B97F4A7C15ull + index * 0xD1B54A32D192ED03ull + 1);
  return 2.0 * r.uniform() - 1.0;
}
}  // namespace zt
