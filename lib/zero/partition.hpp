#pragma once
// Flat partitioning (docs/architecture.md, "Partitioning"): Ψ parameters padded to a multiple of
// world_size × alignment; rank r owns [r·S, (r+1)·S). Padding is never trained and never exported.
#include <cstddef>
#include <vector>

#include "core/range.hpp"

namespace zt {

class Partition {
public:
  // 64 elements = 128 bytes of 16-bit values: aligned for NCCL and vector loads in any dtype.
  static constexpr size_t kAlignment = 64;

  Partition(size_t numel, int world_size, int rank)
      : numel_(numel), world_(world_size), rank_(rank) {
    size_t unit = size_t(world_size) * kAlignment;
    padded_ = (numel + unit - 1) / unit * unit;
    if (padded_ == 0) padded_ = unit;
    shard_ = padded_ / size_t(world_size);
  }

  size_t numel() const { return numel_; }
  size_t padded() const { return padded_; }
  size_t shard_size() const { return shard_; }
  int world_size() const { return world_; }
  int rank() const { return rank_; }
  Range shard(int r) const { return {size_t(r) * shard_, size_t(r + 1) * shard_}; }
  Range own() const { return shard(rank_); }
  // The part of shard r that holds real parameters (not padding).
  Range trained(int r) const { return shard(r).intersect({0, numel_}); }

  // How many elements of flat range `range` each rank owns, in rank order (the piece sizes of a
  // reduce-scatter or all-gather over that range).
  std::vector<size_t> pieces(Range range) const {
    std::vector<size_t> counts(size_t(world_), 0);
    for (int r = 0; r < world_; ++r) counts[size_t(r)] = range.intersect(shard(r)).size();
    return counts;
  }

private:
  size_t numel_, padded_, shard_;
  int world_, rank_;
};

}  // namespace zt
