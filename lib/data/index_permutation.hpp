#pragma once
// A seeded pseudo-random permutation of [0, n) evaluated one index at a time, with O(1) memory:
// a balanced Feistel network on the smallest even bit width covering n, with cycle walking to
// stay inside [0, n). The same (n, key) gives the same permutation on every platform.
#include <cstdint>

namespace zt {

class IndexPermutation {
public:
  IndexPermutation(uint64_t n, uint64_t key);
  uint64_t size() const { return n_; }
  // The image of i (i < size()); a bijection of [0, size()).
  uint64_t operator()(uint64_t i) const;

private:
  uint64_t encrypt(uint64_t x) const;
  uint64_t n_, key_;
  int half_bits_;
  uint64_t half_mask_;
};

}  // namespace zt
