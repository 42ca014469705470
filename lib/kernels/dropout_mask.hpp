#pragma once
// The dropout mask of ModelOps::dropout, one integer hash of (seed, element), so that every backend
// drops the same elements and backward recomputes forward's mask instead of keeping it.
#include <cstdint>

#ifdef __CUDACC__
#define ZT_MASK_HOST_DEVICE __host__ __device__
#else
#define ZT_MASK_HOST_DEVICE
#endif

namespace zt {

// splitmix64's finaliser over seed and index.
ZT_MASK_HOST_DEVICE inline uint64_t dropout_hash(uint64_t seed, uint64_t i) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (i + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Element i is kept when the hash's top 32 bits, as a fraction of 2^32, are at least p (drop_below
// = p · 2^32, rounded down).
ZT_MASK_HOST_DEVICE inline bool dropout_keeps(uint64_t seed, uint64_t i, uint64_t drop_below) {
  return (dropout_hash(seed, i) >> 32) >= drop_below;
}
inline uint64_t dropout_threshold(float p) { return uint64_t(double(p) * 4294967296.0); }

}  // namespace zt
