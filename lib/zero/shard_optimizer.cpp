#include "zero/shard_optimizer.hpp"

#include <algorithm>

namespace zt {

namespace {
// Segments of at most this many elements: the unit of parallel work on the CPU.
constexpr size_t kChunk = 16384;
}  // namespace

ShardOptimizer::ShardOptimizer(const Parts& p) : range_(p.range), dtype_(p.options.dtype), params_(p.params) {
  for (auto& g : p.layout.groups)
    for (auto& t : g.tensors) {
      Range piece = range_.intersect({t.offset, t.offset + t.numel()});
      for (size_t a = piece.begin; a < piece.end; a += kChunk)
        segments_.push_back({a - range_.begin, std::min(kChunk, piece.end - a), t.weight_decay});
    }
}

std::unique_ptr<ShardOptimizer> ShardOptimizer::make(const Parts& p) {
  const bool resident = p.options.offload_optimizer.device == OffloadDevice::None && p.params.view().data;
  return resident ? make_resident_optimizer(p) : make_offloaded_optimizer(p);
}

}  // namespace zt
