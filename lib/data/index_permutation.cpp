#include "data/index_permutation.hpp"

#include "core/error.hpp"

namespace zt {

namespace {
constexpr int kRounds = 6;

uint64_t mix(uint64_t z) {  // splitmix64 finaliser
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
}  // namespace

IndexPermutation::IndexPermutation(uint64_t n, uint64_t key) : n_(n), key_(mix(key + 0x9E3779B97F4A7C15ull)) {
  if (n == 0) fail("IndexPermutation: empty domain");
  int bits = 2;
  while (bits < 64 && (uint64_t(1) << bits) < n) bits += 2;
  half_bits_ = bits / 2;
  half_mask_ = (uint64_t(1) << half_bits_) - 1;
}

uint64_t IndexPermutation::encrypt(uint64_t x) const {
  uint64_t left = x >> half_bits_, right = x & half_mask_;
  for (int round = 0; round < kRounds; ++round) {
    uint64_t f = mix(key_ ^ (uint64_t(round) << 56) ^ mix(right + uint64_t(round))) & half_mask_;
    uint64_t new_right = left ^ f;
    left = right;
    right = new_right;
  }
  return (left << half_bits_) | right;
}

uint64_t IndexPermutation::operator()(uint64_t i) const {
  if (i >= n_) fail("IndexPermutation: index {} outside [0, {})", i, n_);
  // Cycle walking: the domain is at most 4n, so a few steps on average.
  uint64_t y = encrypt(i);
  while (y >= n_) y = encrypt(y);
  return y;
}

}  // namespace zt
