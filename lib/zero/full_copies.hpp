#pragma once
// Pieces of the stages that keep every parameter (stages 0-2) or every gradient (stages 0-1) on
// every rank, and the all-gather of updated shards they share.
#include <memory>

#include "core/buffer.hpp"
#include "zero/grad_bucketer.hpp"
#include "zero/group_copies.hpp"
#include "zero/stage.hpp"

namespace zt {

// All parameters on every rank, in the storage dtype; model-dtype copies per group when they differ.
class FullParams {
public:
  explicit FullParams(const StageContext& ctx);
  void init(const ParamInit& init);
  FetchedGroup fetch(int g);
  void release(int g);
  View at(size_t flat) { return ctx_.view(values_.data() + flat * dtype_size(ctx_.dtype()), ctx_.dtype()); }
  // All-gather the updated shards, allgather_bucket_size elements at a time.
  void all_gather_shards();

private:
  const StageContext& ctx_;
  Buffer<uint8_t> values_;
  GroupCopies copies_;
};

// Gradients of every trainable parameter on every rank, in the trainable space, accumulated locally
// over micro-batches.
class FullGrads {
public:
  explicit FullGrads(const StageContext& ctx);
  void accumulate(int g, View grads);
  // Where the model may accumulate a group's gradients directly (when it computes in the storage
  // dtype); else a null view.
  View in_place(int g);
  // Reduce-scatter everything in buckets; afterwards this rank's shard (of the train partition)
  // holds the summed values.
  void reduce_scatter();
  void all_gather_shards();  // every rank gets every reduced shard (stage 0)
  View at(size_t compact) const {
    return ctx_.view(const_cast<uint8_t*>(values_.data()) + compact * dtype_size(ctx_.dtype()), ctx_.dtype());
  }
  void zero();

private:
  const StageContext& ctx_;
  Buffer<uint8_t> values_;
  std::unique_ptr<GradBucketer> bucketer_;
};

// Pieces of an all-gather over a full buffer (all shards of `part` laid out in order), in place.
void all_gather_in_place(const StageContext& ctx, const Partition& part, void* full, DType dtype,
                         size_t piece_elements);

}  // namespace zt
