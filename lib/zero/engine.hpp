#pragma once
// The ZeRO engine: the model's ParamHooks, and the optimizer step. Which stage runs is a
// strategy (stage.hpp); partitioning, bucketing, the shard optimizer and the loss scaler are
// shared. One step is: micro-batches of forward/backward through the hooks, then step().
#include <map>
#include <memory>

#include "comm/communicator.hpp"
#include "config/config.hpp"
#include "core/param_hooks.hpp"
#include "zero/loss_scaler.hpp"
#include "zero/partition.hpp"
#include "zero/shard_optimizer.hpp"
#include "zero/stage.hpp"

namespace zt {

struct StepResult {
  bool skipped = false;    // overflow: no update was applied
  double grad_norm = 0.0;  // global L2 norm of the (unscaled, unclipped) gradients
  float loss_scale = 1.0f;  // the scale this step's backward used
};

class Engine final : public ParamHooks {
public:
  // init fills initial fp32 values of any flat range (model init, or loaded weights).
  Engine(const config::Config& config, const ParamLayout& layout, Communicator& comm, const ParamInit& init);

  const float* fetch(int g) override { return stage_->fetch(g); }
  void release(int g) override { stage_->release(g); }
  float* grads(int g) override;
  void grads_ready(int g) override;

  // Call before each micro-batch's forward.
  void begin_micro_batch() { stage_->begin_micro_batch(); }
  // What backward multiplies the loss gradient by (the fp16 loss scale, and any predivision).
  float backward_scale() const;
  // Finishes reductions, unscales, clips, applies AdamW to this rank's shard and publishes the
  // new parameters. lr and the betas come from the schedule.
  StepResult step(double lr, double beta1, double beta2);

  // Consolidated fp32 parameters (master weights), numel elements, on every rank (collective).
  void gather_master(float* full);

  const Partition& partition() const { return partition_; }
  DType dtype() const { return dtype_; }
  int64_t optimizer_steps() const { return steps_; }
  const LossScaler& loss_scaler() const { return scaler_; }
  StageTimers timers() const { return stage_->timers(); }
  void reset_timers() { stage_->reset_timers(); }

private:
  double global_grad_sum_of_squares(float factor);

  const config::Config& config_;
  const ParamLayout& layout_;
  Communicator& comm_;
  Partition partition_;
  DType dtype_, comm_dtype_;
  StageContext ctx_;
  std::unique_ptr<Stage> stage_;
  std::unique_ptr<ShardOptimizer> optimizer_;
  LossScaler scaler_;
  std::map<int, Buffer<float>> group_grads_;  // the model's fp32 gradients, per group in flight
  int64_t steps_ = 0;
};

}  // namespace zt
