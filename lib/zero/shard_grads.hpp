#pragma once
// This rank's shard of the gradients (stages 2 and 3), in the trainable space: each group's
// gradients of trainable tensors go through the bucketer as soon as they are final, and the
// full-size copy is dropped.
#include <memory>

#include "core/buffer.hpp"
#include "zero/grad_bucketer.hpp"
#include "zero/stage.hpp"

namespace zt {

class ShardGrads {
public:
  explicit ShardGrads(const StageContext& ctx);
  // Rounds to the storage dtype (as stages 0-1 do when they store gradients), then buckets.
  void add_group(int g, View grads);
  void finish();  // all reductions issued so far done and applied
  ConstView data() const { return {values_.data(), ctx_.dtype(), MemSpace::Device}; }
  void zero();

private:
  const StageContext& ctx_;
  Buffer<uint8_t> values_;
  std::unique_ptr<GradBucketer> bucketer_;
};

}  // namespace zt
