// Stages 0, 1 and 2: parameters resident on every rank.
#include <vector>

#include "zero/resident_pieces.hpp"
#include "zero/shard_grads.hpp"
#include "zero/stage.hpp"
#include "zero/stage3.hpp"

namespace zt {

namespace {

// What stages 0-2 share: every parameter resident on every rank.
class ResidentStage : public Stage {
public:
  explicit ResidentStage(const StageContext& ctx) : ctx_(ctx), params_(ctx) {}
  void init_params(const ParamInit& init) override { params_.init(init); }
  ConstView fetch(int g) override { return params_.fetch(g); }
  void release(int g) override { params_.release(g); }
  ConstView grads_of_shard(int) const override { return {}; }
  StageTimers timers() const override { return timers_; }
  void reset_timers() override { timers_ = {}; }

protected:
  const StageContext& ctx_;
  FullParams params_;
  StageTimers timers_;
};

// Stage 0, plain data parallel: gradients all-reduced (as reduce-scatter + all-gather over the
// same shards as the other stages, so the sums are bit-identical), every rank updates everything.
class Stage0 final : public ResidentStage {
public:
  explicit Stage0(const StageContext& ctx) : ResidentStage(ctx), grads_(ctx) {}
  View grads_in_place(int g) override { return grads_.in_place(g); }
  void grads_ready(int g, View grads) override { grads_.accumulate(g, grads); }
  void reduce_gradients() override {
    grads_.reduce_scatter(timers_);
    grads_.all_gather_shards(timers_);
  }
  Range update_range() const override { return {0, ctx_.partition.padded()}; }
  View params() override { return params_.at(0); }
  ConstView grads() const override { return grads_.at(0); }
  bool holds_all_gradients() const override { return true; }
  ConstView grads_of_shard(int r) const override { return grads_.at(ctx_.partition.shard(r).begin); }
  void zero_grads() override { grads_.zero(); }
  void publish_params() override {}

private:
  FullGrads grads_;
};

// Stage 1: optimizer state sharded. Full gradients accumulate locally and are reduce-scattered at
// the accumulation boundary; updated shards are all-gathered.
class Stage1 final : public ResidentStage {
public:
  explicit Stage1(const StageContext& ctx) : ResidentStage(ctx), grads_(ctx) {}
  View grads_in_place(int g) override { return grads_.in_place(g); }
  void grads_ready(int g, View grads) override { grads_.accumulate(g, grads); }
  void reduce_gradients() override { grads_.reduce_scatter(timers_); }
  Range update_range() const override { return ctx_.partition.own(); }
  View params() override { return params_.at(ctx_.partition.own().begin); }
  ConstView grads() const override { return grads_.at(ctx_.partition.own().begin); }
  void zero_grads() override { grads_.zero(); }
  void publish_params() override { params_.all_gather_shards(timers_); }

private:
  FullGrads grads_;
};

// Stage 2: gradients sharded too. Each group's gradients are reduce-scattered in buckets as soon
// as backward finishes them; only this rank's shard is kept.
class Stage2 final : public ResidentStage {
public:
  explicit Stage2(const StageContext& ctx) : ResidentStage(ctx), grads_(ctx) {}
  void grads_ready(int g, View grads) override { grads_.add_group(g, grads); }
  void reduce_gradients() override { grads_.finish(); }
  Range update_range() const override { return ctx_.partition.own(); }
  View params() override { return params_.at(ctx_.partition.own().begin); }
  ConstView grads() const override { return grads_.data(); }
  void zero_grads() override { grads_.zero(); }
  void publish_params() override { params_.all_gather_shards(timers_); }
  StageTimers timers() const override {
    StageTimers t = timers_;
    t.reduce_wait_s = grads_.exposed_wait_seconds();
    return t;
  }
  void reset_timers() override {
    timers_ = {};
    grads_.reset_timers();
  }

private:
  ShardGrads grads_;
};

}  // namespace

std::unique_ptr<Stage> make_stage(const StageContext& ctx) {
  switch (ctx.options.stage) {
    case 0: return std::make_unique<Stage0>(ctx);
    case 1: return std::make_unique<Stage1>(ctx);
    case 2: return std::make_unique<Stage2>(ctx);
    default: return make_stage3(ctx);
  }
}

void upload_params(const StageContext& ctx, const ParamInit& init, void* storage, size_t begin, size_t count) {
  constexpr size_t kChunk = 16384;
  std::vector<float> host(std::min(kChunk, count));
  Buffer<float> staging(ctx.device(), MemSpace::Device, MemCategory::Buffers, host.size(), Init::Uninitialised);
  const size_t esz = dtype_size(ctx.dtype());
  for (size_t done = 0; done < count; done += kChunk) {
    const size_t n = std::min(kChunk, count - done);
    init(host.data(), begin + done, n);
    ctx.device().copy(staging.data(), host.data(), n * sizeof(float), ctx.device().compute());
    ctx.vector().convert({staging.data(), DType::F32, MemSpace::Device},
                         ctx.view(static_cast<char*>(storage) + done * esz, ctx.dtype()), n);
  }
  ctx.device().synchronize(ctx.device().compute());  // host chunks are reused
}

}  // namespace zt
