#include "zero/shard_optimizer.hpp"

#include <algorithm>

namespace zt {

namespace {
// Segments of at most this many elements: the unit of parallel work on the CPU.
constexpr size_t kChunk = 16384;
}  // namespace

ShardOptimizer::ShardOptimizer(const Parts& p) : range_(p.range), dtype_(p.options.dtype), params_(p.params) {
  size_t kept = 0;  // elements of the kept tensors before this one: its gradients' place
  for (auto& g : p.layout.groups)
    for (auto& t : g.tensors) {
      const bool fp32 = t.keep_fp32 && dtype_ != DType::F32;
      const Range piece = range_.intersect({t.offset, t.offset + t.numel()});
      if (fp32 && !piece.empty()) kept_.push_back({piece.begin - range_.begin, kept + (piece.begin - t.offset), {}});
      for (size_t a = piece.begin; a < piece.end; a += kChunk) {
        const AdamSegment s{a - range_.begin, std::min(kChunk, piece.end - a), t.weight_decay};
        if (fp32)
          kept_.back().segments.push_back({s.offset - kept_.back().offset, s.size, s.decay});
        else
          segments_.push_back(s);
      }
      if (fp32) kept += t.numel();
    }
}

std::unique_ptr<ShardOptimizer> ShardOptimizer::make(const Parts& p) {
  const bool resident = p.options.offload_optimizer.device == OffloadDevice::None && p.params.view().data;
  return resident ? make_resident_optimizer(p) : make_offloaded_optimizer(p);
}

}  // namespace zt
