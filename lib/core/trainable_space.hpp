#pragma once
// The trainable elements of a parameter layout as one compact space [0, T) (docs/architecture.md,
// "Frozen parameters"): the flat buffer's trainable tensors one after the other, in flat order.
// Gradients and optimizer state are kept and partitioned in this space, checkpoints hold it, while
// the parameters stay in the flat buffer [0, Ψ). With nothing frozen the two spaces are the same
// (identity()).
#include <vector>

#include "core/param_layout.hpp"
#include "core/range.hpp"

namespace zt {

class TrainableSpace {
public:
  // A maximal run of trainable elements: flat [flat, flat + size) is compact [compact, compact + size).
  struct Run {
    size_t flat = 0, compact = 0, size = 0;
  };

  explicit TrainableSpace(const ParamLayout& layout);

  size_t numel() const { return numel_; }          // T
  bool identity() const { return numel_ == flat_; }  // nothing frozen
  const std::vector<Run>& runs() const { return runs_; }
  // The pieces of the runs inside a flat range, or inside a compact range, in ascending order.
  std::vector<Run> in_flat(Range flat) const;
  std::vector<Run> in_compact(Range compact) const;
  // The compact offset of the first trainable element at or after flat element `flat`.
  size_t compact_at(size_t flat) const;
  // The layout's trainable tensors at their compact offsets, in the same groups (a group without
  // a trainable tensor keeps its name, with no tensor and size 0).
  const ParamLayout& layout() const { return layout_; }

private:
  std::vector<Run> pieces_in(size_t Run::*space, Range range) const;

  size_t flat_ = 0, numel_ = 0;
  std::vector<Run> runs_;
  ParamLayout layout_;
};

}  // namespace zt
