// Stage 3: parameters, gradients and optimizer state all sharded. This rank stores its shard of
// the parameters (in device memory, host memory, or a file, as offload_param says); the
// coordinator gathers groups around their use.
#include <fmt/format.h>

#include <memory>
#include <optional>

#include "zero/gather_coordinator.hpp"
#include "zero/shard_grads.hpp"
#include "zero/stage3.hpp"
#include "zero/trainable_params.hpp"

namespace zt {

namespace {

// This rank's shard, where offload_param puts it.
class ShardStorage {
public:
  explicit ShardStorage(const StageContext& ctx) {
    const ParamOffload& off = ctx.options.offload_param;
    const size_t n = ctx.partition.shard_size();
    if (off.device == OffloadDevice::Nvme) {
      shard_ = std::make_unique<FileParamShard>(ctx.dtype(), n, off.nvme_path,
                                                fmt::format("zerotrain-params-rank{}.swap", ctx.options.rank),
                                                AioOptions{ctx.options.aio.block_size, ctx.options.aio.queue_depth,
                                                           ctx.options.aio.threads},
                                                "zero_optimization.offload_param.nvme_path");
      return;
    }
    const MemSpace space = off.device == OffloadDevice::None ? MemSpace::Device
                           : off.pin_memory                  ? MemSpace::Pinned
                                                             : MemSpace::Host;
    memory_ = Buffer<uint8_t>(ctx.device(), space, MemCategory::Params, n * dtype_size(ctx.dtype()));
    shard_ = std::make_unique<ResidentParamShard>(ctx.device(), View{memory_.data(), ctx.dtype(), space}, n);
  }
  ParamShard& shard() { return *shard_; }

private:
  Buffer<uint8_t> memory_;
  std::unique_ptr<ParamShard> shard_;
};

// With frozen parameters the optimizer updates this rank's shard of the trainable space
// (zero/trainable_params.hpp), which lies on other ranks' flat shards: each update is all-gathered
// and this rank keeps what its flat shard holds.
class Stage3 final : public Stage {
public:
  explicit Stage3(const StageContext& ctx)
      : ctx_(ctx), storage_(ctx), grads_(ctx), gathered_(ctx, storage_.shard()) {
    if (!ctx.trainable.identity()) trained_.emplace(ctx, ctx.train_partition.own());
  }

  void init_params(const ParamInit& init) override {
    upload_params(ctx_, init, storage_.shard(), ctx_.partition.own(), ctx_.partition.numel());
    if (trained_) trained_->init(init);
    gathered_.refresh();
  }

  FetchedGroup fetch(int g) override {
    const View gathered = gathered_.fetch(g);
    return {gathered, gathered};
  }
  void release(int g) override { gathered_.release(g); }
  void begin_micro_batch() override { gathered_.begin_micro_batch(); }
  void grads_ready(int g, View grads) override { grads_.add_group(g, grads); }
  void reduce_gradients() override {
    grads_.finish();
    gathered_.end_recording();
    gathered_.stop_reading_ahead();  // the optimizer writes the shard's file next
  }
  Range update_range() const override { return ctx_.train_partition.own(); }
  ParamShard& params() override { return trained_ ? trained_->shard() : storage_.shard(); }
  ConstView grads() const override { return grads_.data(); }
  void norm_partials(float factor, double* sums) override { gather_norm_partials(ctx_, grads(), factor, sums); }
  void zero_grads() override { grads_.zero(); }
  void publish_params() override {
    if (trained_) trained_->all_gather_into(storage_.shard());
    gathered_.refresh();
  }

private:
  const StageContext& ctx_;
  ShardStorage storage_;
  ShardGrads grads_;
  GatherCoordinator gathered_;
  std::optional<TrainableParams> trained_;
};

}  // namespace

std::unique_ptr<Stage> make_stage3(const StageContext& ctx) { return std::make_unique<Stage3>(ctx); }

}  // namespace zt
