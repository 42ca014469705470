#include "core/trainable_space.hpp"

#include <algorithm>

namespace zt {

TrainableSpace::TrainableSpace(const ParamLayout& layout) : flat_(layout.total) {
  for (const ParamGroup& g : layout.groups) {
    ParamGroup compact{g.name, numel_, 0, {}};
    for (const TensorSpec& t : g.tensors) {
      if (!t.trainable) continue;
      if (!runs_.empty() && runs_.back().flat + runs_.back().size == t.offset)
        runs_.back().size += t.numel();
      else
        runs_.push_back({t.offset, numel_, t.numel()});
      TensorSpec moved = t;
      moved.offset = numel_;
      compact.tensors.push_back(std::move(moved));
      compact.size += t.numel();
      numel_ += t.numel();
    }
    layout_.groups.push_back(std::move(compact));
  }
  layout_.total = numel_;
}

// The pieces of the runs inside `range` of one space (`space`: &Run::flat or &Run::compact).
std::vector<TrainableSpace::Run> TrainableSpace::pieces_in(size_t Run::*space, Range range) const {
  std::vector<Run> out;
  // The first run that ends after range.begin.
  auto it = std::upper_bound(runs_.begin(), runs_.end(), range.begin,
                             [&](size_t at, const Run& r) { return at < r.*space + r.size; });
  for (; it != runs_.end() && (*it).*space < range.end; ++it) {
    const Range piece = Range{(*it).*space, (*it).*space + it->size}.intersect(range);
    const size_t skipped = piece.begin - (*it).*space;
    if (!piece.empty()) out.push_back({it->flat + skipped, it->compact + skipped, piece.size()});
  }
  return out;
}

std::vector<TrainableSpace::Run> TrainableSpace::in_flat(Range flat) const { return pieces_in(&Run::flat, flat); }

std::vector<TrainableSpace::Run> TrainableSpace::in_compact(Range compact) const {
  return pieces_in(&Run::compact, compact);
}

size_t TrainableSpace::compact_at(size_t flat) const {
  auto it = std::upper_bound(runs_.begin(), runs_.end(), flat,
                             [](size_t at, const Run& r) { return at < r.flat + r.size; });
  if (it == runs_.end()) return numel_;
  return it->compact + (flat > it->flat ? flat - it->flat : 0);
}

}  // namespace zt
