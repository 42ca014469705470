// Stage 3: parameters, gradients and optimizer state all sharded. This rank stores its shard of
// the parameters; the coordinator gathers groups around their use.
#include <memory>

#include "zero/gather_coordinator.hpp"
#include "zero/shard_grads.hpp"
#include "zero/stage3.hpp"

namespace zt {

namespace {

class Stage3 final : public Stage {
public:
  explicit Stage3(const StageContext& ctx)
      : ctx_(ctx),
        shard_(ctx.device(), ctx.options.offload_param == OffloadDevice::None ? MemSpace::Device : MemSpace::Host,
               MemCategory::Params, ctx.partition.shard_size() * dtype_size(ctx.dtype())),
        grads_(ctx),
        gathered_(ctx, shard_.data(), timers_) {}

  void init_params(const ParamInit& init) override {
    const Range own = ctx_.partition.trained(ctx_.partition.rank());
    upload_params(ctx_, init, shard_.data(), own.begin, own.size());
    gathered_.refresh();
  }

  ConstView fetch(int g) override { return gathered_.fetch(g); }
  void release(int g) override { gathered_.release(g); }
  void begin_micro_batch() override { gathered_.begin_micro_batch(); }
  void grads_ready(int g, View grads) override { grads_.add_group(g, grads); }
  void reduce_gradients() override {
    grads_.finish();
    gathered_.end_recording();
  }
  Range update_range() const override { return ctx_.partition.own(); }
  View params() override { return ctx_.view(shard_.data(), ctx_.dtype()); }
  ConstView grads() const override { return grads_.data(); }
  ConstView grads_of_shard(int) const override { return {}; }
  void zero_grads() override { grads_.zero(); }
  void publish_params() override { gathered_.refresh(); }
  StageTimers timers() const override {
    StageTimers t = timers_;
    t.reduce_wait_s = grads_.exposed_wait_seconds();
    return t;
  }
  void reset_timers() override {
    timers_ = {};
    grads_.reset_timers();
  }
  std::vector<int64_t> group_gathers() const override { return gathered_.gathers(); }

private:
  const StageContext& ctx_;
  StageTimers timers_;
  Buffer<uint8_t> shard_;
  ShardGrads grads_;
  GatherCoordinator gathered_;
};

}  // namespace

std::unique_ptr<Stage> make_stage3(const StageContext& ctx) { return std::make_unique<Stage3>(ctx); }

}  // namespace zt
