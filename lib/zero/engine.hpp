#pragma once
// The ZeRO engine: the model's ParamHooks, and the optimizer step. Which stage runs is a
// strategy (stage.hpp); partitioning, bucketing, the shard optimizer and the loss scaler are
// shared. One step is: micro-batches of forward/backward through the hooks, then step().
#include <memory>
#include <vector>

#include "comm/communicator.hpp"
#include "core/buffer.hpp"
#include "core/error.hpp"
#include "core/param_hooks.hpp"
#include "kernels/backend.hpp"
#include "zero/buffer_pool.hpp"
#include "zero/engine_options.hpp"
#include "zero/loss_scaler.hpp"
#include "zero/partition.hpp"
#include "zero/shard_optimizer.hpp"
#include "zero/stage.hpp"

namespace zt {

// What one optimizer update did.
struct UpdateResult {
  bool skipped = false;     // overflow: no update was applied
  double grad_norm = 0.0;   // global L2 norm of the (unscaled, unclipped) gradients
  float loss_scale = 1.0f;  // the scale this step's backward used
};

// The engine could not be set up on some rank (memory, an offload file). Thrown on every rank, with
// the reason on the lowest failing rank and an empty one elsewhere, before any collective ran.
struct EngineSetupFailed : Error {
  using Error::Error;
};

class Engine final : public ParamHooks {
public:
  // init fills initial fp32 values of any flat range (model init, or loaded weights). The model
  // computes in backend.model.dtype(): fetch and grads hand out views in that dtype. Collective;
  // throws EngineSetupFailed on every rank when its storage cannot be made on one.
  Engine(const EngineOptions& options, const ParamLayout& layout, Communicator& comm, const Backend& backend,
         const ParamInit& init);

  ConstView fetch(int g) override { return stage_->fetch(g); }
  void release(int g) override { stage_->release(g); }
  View grads(int g) override;
  void grads_ready(int g) override;

  // Call before each micro-batch's forward.
  void begin_micro_batch() { stage_->begin_micro_batch(); }
  // What backward multiplies the loss gradient by (the fp16 loss scale, and any predivision).
  float backward_scale() const;
  // Finishes reductions, unscales, clips, applies AdamW to this rank's shard and publishes the
  // new parameters. lr and the betas come from the schedule. queue_step queues it all without the
  // host waiting for the device: the gradient norm, the clip factor and whether the update is
  // skipped (non-finite gradients) stay on the device, which AdamW reads them from, and a copy of
  // them heads for host memory. finish_step, once the device has run the step (after
  // Device::synchronize(compute())), reads that copy, updates the loss scale and counts the step.
  // step does both, waiting in between.
  UpdateResult step(double lr, double beta1, double beta2);
  void queue_step(double lr, double beta1, double beta2);
  UpdateResult finish_step();

  // Consolidated fp32 parameters (master weights), numel elements, into host memory on every rank
  // (collective).
  void gather_master(float* full);

  // Checkpoints. The flat elements whose optimizer state this rank holds (its shard, or everything
  // at stage 0), padding excluded; read and write copy state of a sub-range to and from host memory.
  Range state_range() const;
  void read_state(StateTensor t, Range r, float* host) const;
  void write_state(StateTensor t, Range r, const float* host);
  // After every rank wrote the master of its state_range(): the parameters take the master's values
  // (rounded to the training dtype) on every rank that uses them. Collective.
  void publish_written_state();
  struct Counters {
    int64_t optimizer_steps = 0;
    LossScaler::State scaler{};
  };
  Counters counters() const { return {steps_, scaler_.state()}; }
  void set_counters(const Counters& c);

  const EngineOptions& options() const { return options_; }
  const Partition& partition() const { return partition_; }
  DType dtype() const { return options_.dtype; }
  int64_t optimizer_steps() const { return steps_; }
  const LossScaler& loss_scaler() const { return scaler_; }
  StageTimers timers() const;
  std::vector<int64_t> group_gathers() const { return stage_->group_gathers(); }
  void reset_timers();

private:
  // The sums of squares of the gradients' shards, into grad_sums_ on the device (one per rank).
  void queue_grad_sums_of_squares(float factor);

  const EngineOptions options_;
  const ParamLayout& layout_;
  Communicator& comm_;
  const Backend& backend_;
  Partition partition_;
  BufferPool pool_;
  StageContext ctx_;
  std::unique_ptr<Stage> stage_;
  std::unique_ptr<ShardOptimizer> optimizer_;
  LossScaler scaler_;
  std::vector<void*> open_grads_;  // the model's gradients per group in flight (from pool_)
  int64_t steps_ = 0;
  Buffer<double> grad_sums_;               // per rank, in device memory
  Buffer<GradNorm> grad_norm_, grad_norm_host_;  // in device memory, and its copy in pinned memory
  float queued_scale_ = 1.0f;              // the loss scale of the queued step's backward
};

}  // namespace zt
