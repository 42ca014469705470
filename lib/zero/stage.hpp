#pragma once
// What differs between ZeRO stages, as a small strategy the engine drives. The shared pieces
// (partition, bucketer, shard optimizer, communicator, buffer pool) live beside it.
#include <functional>
#include <memory>
#include <vector>

#include "comm/communicator.hpp"
#include "core/param_layout.hpp"
#include "core/step_clock.hpp"
#include "core/trainable_space.hpp"
#include "core/view.hpp"
#include "kernels/backend.hpp"
#include "zero/buffer_pool.hpp"
#include "zero/engine_options.hpp"
#include "zero/param_shard.hpp"
#include "zero/partition.hpp"

namespace zt {

// Parameters live in the flat buffer, partitioned by `partition`; gradients and optimizer state
// in the trainable space (core/trainable_space.hpp), partitioned by `train_partition`. With
// nothing frozen the two are the same.
struct StageContext {
  const EngineOptions& options;
  const ParamLayout& layout;
  Communicator& comm;
  const Partition& partition;
  const TrainableSpace& trainable;
  const Partition& train_partition;
  const Backend& backend;
  VectorOps& host;    // the host's vector operators (initial values, offloaded state)
  DType model_dtype;  // what the model reads parameters and writes gradients in
  BufferPool& pool;   // transient device buffers, reused step after step
  StepClock& clock;   // the waits on communication and offload, per step
  std::vector<int64_t>& group_gathers;  // all-gathers of each group's parameters so far (stage 3 counts them)

  DType dtype() const { return options.dtype; }  // storage, gradients, parameter all-gathers
  DType comm_dtype() const { return options.comm_dtype; }
  Device& device() const { return backend.device; }
  VectorOps& vector() const { return backend.vector; }
  View view(void* p, DType t) const { return {p, t, MemSpace::Device}; }
};

// A group's parameters as a stage hands them out: `view`, in the model's dtype, and the same memory
// writable (`copy`) when it is a copy made for the model (a dtype conversion, a gathered group),
// which the engine may write over before the model reads it; a null copy where the view is the
// stored parameters themselves.
struct FetchedGroup {
  ConstView view;
  View copy;
};

// Writes initial fp32 values of flat elements [begin, begin + count) into dst (host memory).
using ParamInit = std::function<void(float* dst, size_t begin, size_t count)>;

class Stage {
public:
  virtual ~Stage() = default;
  // Fills the parameters this rank stores (all of them, or its shard at stage 3).
  virtual void init_params(const ParamInit& init) = 0;
  // Parameters: the model-facing view of a group, in the model's dtype.
  virtual FetchedGroup fetch(int g) = 0;
  virtual void release(int g) = 0;
  virtual void begin_micro_batch() {}
  // Where the model may accumulate the group's gradients itself, across micro-batches, so that
  // grads_ready has nothing to add (full gradients stored in the model's dtype); a null view: give
  // them to grads_ready.
  virtual View grads_in_place(int) { return {}; }
  // The group's gradients for this micro-batch, in the model's dtype (the buffer may be modified).
  virtual void grads_ready(int g, View grads) = 0;
  // At the accumulation boundary: after this, grads() holds the summed gradients of update_range().
  virtual void reduce_gradients() = 0;
  // Flat range this rank's optimizer updates, its parameters (in the storage dtype, wherever they
  // live) and its reduced gradients (a view of its first element).
  virtual Range update_range() const = 0;
  virtual ParamShard& params() = 0;
  virtual ConstView grads() const = 0;
  // The sums of squares of the reduced gradients times `factor`, one per shard in rank order, on
  // every rank, into sums[0, world size) in the device's memory without the host waiting: the
  // global norm adds them in that order, whichever stage runs. A collective.
  virtual void norm_partials(float factor, double* sums) = 0;
  virtual void zero_grads() = 0;
  // After the optimizer updated update_range(): make the new values visible where needed.
  virtual void publish_params() = 0;
};

std::unique_ptr<Stage> make_stage(const StageContext& ctx);

// Fills `shard`, which holds elements [range.begin, range.end), with init's fp32 values (zero from
// element `numel` on: partition padding), through host staging chunks.
void upload_params(const StageContext& ctx, const ParamInit& init, ParamShard& shard, Range range, size_t numel);

// norm_partials of a stage that holds the reduced gradients of its own shard only: its partial,
// then every rank's through the communicator (on the device: an all-gather of each double as two
// fp32 elements, which moves bits and computes nothing).
void gather_norm_partials(const StageContext& ctx, ConstView own_grads, float factor, double* sums);

}  // namespace zt
