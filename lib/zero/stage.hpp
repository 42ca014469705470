#pragma once
// What differs between ZeRO stages, as a small strategy the engine drives. The shared pieces
// (partition, bucketer, shard optimizer, communicator) live beside it.
#include <functional>
#include <memory>

#include "comm/communicator.hpp"
#include "config/config.hpp"
#include "core/param_layout.hpp"
#include "zero/partition.hpp"

namespace zt {

struct StageContext {
  const config::Config& config;
  const ParamLayout& layout;
  Communicator& comm;
  const Partition& partition;
  DType dtype;       // parameters and gradients
  DType comm_dtype;  // gradient reductions
};

struct StageTimers {
  double reduce_wait_s = 0;  // time the compute thread waited on gradient reductions
  double gather_wait_s = 0;  // time it waited on parameter all-gathers
};

// Writes initial fp32 values of flat elements [begin, begin + count) into dst.
using ParamInit = std::function<void(float* dst, size_t begin, size_t count)>;

class Stage {
public:
  virtual ~Stage() = default;
  // Fills the parameters this rank stores (all of them, or its shard at stage 3).
  virtual void init_params(const ParamInit& init) = 0;
  // Parameters: model-facing fp32 views of a group.
  virtual const float* fetch(int g) = 0;
  virtual void release(int g) = 0;
  virtual void begin_micro_batch() {}
  // Where the model may accumulate the group's fp32 gradients itself, across micro-batches, so
  // that grads_ready has nothing to add (fp32 full gradients); nullptr: give them to grads_ready.
  virtual float* grads_in_place(int) { return nullptr; }
  // The group's fp32 gradients for this micro-batch (the buffer may be modified).
  virtual void grads_ready(int g, float* grads) = 0;
  // At the accumulation boundary: after this, grads() holds the summed gradients of update_range().
  virtual void reduce_gradients() = 0;
  // Flat range this rank's optimizer updates, and the views of it (pointers to its first element).
  virtual Range update_range() const = 0;
  virtual void* params() = 0;
  virtual const void* grads() const = 0;
  // Shards whose trained parameters this rank holds reduced gradients for (grad norm partials).
  virtual bool holds_all_gradients() const { return false; }
  virtual const void* grads_of_shard(int r) const = 0;  // only for holds_all_gradients()
  virtual void zero_grads() = 0;
  // After the optimizer updated update_range(): make the new values visible where needed.
  virtual void publish_params() = 0;
  virtual StageTimers timers() const = 0;
  virtual void reset_timers() = 0;
};

std::unique_ptr<Stage> make_stage(const StageContext& ctx);

}  // namespace zt
