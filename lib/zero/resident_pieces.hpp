#pragma once
// Pieces shared by the stages: full resident parameters (stages 0-2), full local gradients
// (stages 0-1), and a gradient shard fed by bucketed reduce-scatters (stages 2-3).
#include <memory>

#include "core/buffer.hpp"
#include "zero/grad_bucketer.hpp"
#include "zero/group_views.hpp"
#include "zero/stage.hpp"

namespace zt {

// All parameters on every rank, in the training dtype; fp32 views per group when 16-bit.
class FullParams {
public:
  explicit FullParams(const StageContext& ctx);
  void init(const ParamInit& init);
  const float* fetch(int g);
  void release(int g);
  void* data() { return values_.data(); }
  void* at(size_t flat) { return values_.data() + flat * dtype_size(ctx_.dtype); }
  // All-gather the updated shards, allgather_bucket_size elements at a time.
  void all_gather_shards(StageTimers& timers);

private:
  const StageContext& ctx_;
  Buffer<uint8_t> values_;
  GroupViews views_;
};

// Gradients of every parameter on every rank, accumulated locally over micro-batches.
class FullGrads {
public:
  explicit FullGrads(const StageContext& ctx);
  void accumulate(int g, const float* grads);
  // In fp32 training the model may accumulate a group's gradients here directly; else nullptr.
  float* in_place(int g);
  // Reduce-scatter everything in buckets; afterwards this rank's shard holds the summed values.
  void reduce_scatter(StageTimers& timers);
  void all_gather_shards(StageTimers& timers);  // every rank gets every reduced shard (stage 0)
  void* at(size_t flat) { return values_.data() + flat * dtype_size(ctx_.dtype); }
  const void* at(size_t flat) const { return values_.data() + flat * dtype_size(ctx_.dtype); }
  void zero();

private:
  const StageContext& ctx_;
  Buffer<uint8_t> values_;
  std::unique_ptr<GradBucketer> bucketer_;
};

// This rank's shard of the gradients; each group's gradients go through the bucketer as soon as
// they are final, and the full-size copy is dropped.
class ShardGrads {
public:
  explicit ShardGrads(const StageContext& ctx);
  void add_group(int g, float* grads);  // rounds to the training dtype, then buckets
  void finish();  // all reductions issued so far done and applied
  const void* data() const { return values_.data(); }
  void zero();
  double exposed_wait_seconds() const { return bucketer_->exposed_wait_seconds(); }
  void reset_timers() { bucketer_->reset_timers(); }

private:
  const StageContext& ctx_;
  Buffer<uint8_t> values_;
  std::unique_ptr<GradBucketer> bucketer_;
};

// Pieces of all_gather over flat [begin, end) of a full buffer, in place.
void all_gather_in_place(const StageContext& ctx, void* full, DType dtype, size_t piece_elements,
                         double& wait_seconds);

}  // namespace zt
