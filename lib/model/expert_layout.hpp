#pragma once
// The training layout a rank holds under expert parallelism (docs/architecture.md, "Expert
// parallelism"): with groups of N ranks splitting E experts, the rank at place i of its group holds
// only experts [i·E/N, (i+1)·E/N) of each sparse layer. Its layout is the whole training layout
// (model/lora.hpp's, every tensor under its Hugging Face name) with each sparse block's experts
// moved out of the block's group into one group of domain 1 per sparse layer,
// "model.layers.L.mlp.experts" (Mixtral: block_sparse_moe), holding the rank's own experts under
// their own names, appended after every other group: domain 0's groups keep their indices and
// order. Domain 1's groups are sharded over the ranks holding the same experts (DeepSpeed's expert
// data-parallel groups), domain 0's over every rank.
//
// The whole layout stays what the run's state is, whatever N: checkpoints and exports hold it, and
// a rank's layout maps onto it tensor by tensor (LayoutMap).
#include <functional>
#include <memory>
#include <vector>

#include "core/param_layout.hpp"
#include "core/range.hpp"
#include "core/trainable_space.hpp"
#include "model/gpt_shape.hpp"

namespace zt {

// A rank's place in expert parallelism: groups of `size` ranks, this rank at `index` of its group.
struct ExpertPlace {
  int size = 1;
  int index = 0;
  bool split() const { return size > 1; }
};

// `whole` (make_training_layout's) as the rank at `place` holds it; `whole` itself when
// !place.split() or the model has no experts. The flags (trainable, keep_fp32) are the tensors'.
ParamLayout expert_parallel_layout(const GptShape& shape, const ParamLayout& whole, ExpertPlace place);

// The group of `layout` (expert_parallel_layout's) holding layer's own experts, or -1 (a dense
// layer, or no expert parallelism).
int expert_group_of(const GptShape& shape, const ParamLayout& layout, int layer);

// Where the tensors of a rank's layout lie in the whole layout, both as flat elements and as
// elements of each domain's trainable space (core/trainable_space.hpp; a domain's groups one after
// the other from 0, as the engine lays them).
class LayoutMap {
public:
  LayoutMap(const ParamLayout& part, const ParamLayout& whole);

  // A piece of a range: elements [from, from + size) of the part's are [to, to + size) of the whole's.
  struct Piece {
    size_t from = 0, to = 0, size = 0;
  };
  // The pieces of a flat range of the part's layout, in ascending order of `from`.
  std::vector<Piece> flat(Range r) const;
  // The pieces of a range of domain d's trainable space, in the whole layout's trainable space.
  std::vector<Piece> compact(int domain, Range r) const;
  // dst[0, r.size()) = the values of the part's flat range r, from `whole`, which writes those of a
  // flat range of the whole layout: whole(dst, begin, count). Zeros where the part has no tensor.
  void read(Range r, float* dst, const std::function<void(float*, size_t, size_t)>& whole) const;

private:
  static std::vector<Piece> pieces(const std::vector<Piece>& runs, Range r);
  std::vector<Piece> flat_;
  std::vector<Piece> compact_[2];
};

}  // namespace zt
