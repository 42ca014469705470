// Stages 0, 1 and 2: parameters resident on every rank.
#include <optional>
#include <vector>

#include "comm/control_channel.hpp"
#include "zero/full_copies.hpp"
#include "zero/shard_grads.hpp"
#include "zero/stage.hpp"
#include "zero/stage3.hpp"
#include "zero/trainable_params.hpp"

namespace zt {

namespace {

// What stages 0-2 share: every parameter resident on every rank. The optimizer updates the
// flat parameters in place, or, with frozen parameters, its compact range of the trainable ones
// (zero/trainable_params.hpp), published to the flat parameters after each update.
class ResidentStage : public Stage {
public:
  explicit ResidentStage(const StageContext& ctx, Range updated) : ctx_(ctx), params_(ctx) {
    if (ctx.trainable.identity())
      updated_.emplace(ctx.device(), params_.at(updated.begin), updated.size());
    else
      trained_.emplace(ctx, updated);
  }
  ParamShard& params() override { return trained_ ? trained_->shard() : *updated_; }
  void init_params(const ParamInit& init) override {
    params_.init(init);
    if (trained_) trained_->init(init);
  }
  FetchedGroup fetch(int g) override { return params_.fetch(g); }
  void release(int g) override { params_.release(g); }

protected:
  // After the update: every rank updated everything (stage 0), or its shard (stages 1-2).
  void publish(bool sharded) {
    if (!trained_) {
      if (sharded) params_.all_gather_shards();
      return;
    }
    if (sharded)
      trained_->all_gather_into(params_.at(0));
    else
      trained_->copy_to(params_.at(0));
  }

  const StageContext& ctx_;
  FullParams params_;
  // What this rank's optimizer updates: a part of the flat parameters, or with frozen parameters
  // its range of the trainable ones.
  std::optional<ResidentParamShard> updated_;
  std::optional<TrainableParams> trained_;
};

// Stage 0, plain data parallel: gradients all-reduced (as reduce-scatter + all-gather over the
// same shards as the other stages, so the sums are bit-identical), every rank updates everything.
class Stage0 final : public ResidentStage {
public:
  explicit Stage0(const StageContext& ctx) : ResidentStage(ctx, {0, ctx.train_partition.padded()}), grads_(ctx) {}
  View grads_in_place(int g) override { return grads_.in_place(g); }
  void grads_ready(int g, View grads) override { grads_.accumulate(g, grads); }
  void reduce_gradients() override {
    grads_.reduce_scatter();
    grads_.all_gather_shards();
  }
  Range update_range() const override { return {0, ctx_.train_partition.padded()}; }
  ConstView grads() const override { return grads_.at(0); }
  void norm_partials(float factor, double* sums) override {  // every shard's gradients are here
    const Partition& part = ctx_.train_partition;
    for (int r = 0; r < part.world_size(); ++r)
      ctx_.vector().sum_of_squares_into(grads_.at(part.shard(r).begin), part.trained(r).size(), factor, sums + r);
  }
  void zero_grads() override { grads_.zero(); }
  void publish_params() override { publish(false); }

private:
  FullGrads grads_;
};

// Stage 1: optimizer state sharded. Full gradients accumulate locally and are reduce-scattered at
// the accumulation boundary; updated shards are all-gathered.
class Stage1 final : public ResidentStage {
public:
  explicit Stage1(const StageContext& ctx) : ResidentStage(ctx, ctx.train_partition.own()), grads_(ctx) {}
  View grads_in_place(int g) override { return grads_.in_place(g); }
  void grads_ready(int g, View grads) override { grads_.accumulate(g, grads); }
  void reduce_gradients() override { grads_.reduce_scatter(); }
  Range update_range() const override { return ctx_.train_partition.own(); }
  ConstView grads() const override { return grads_.at(ctx_.train_partition.own().begin); }
  void norm_partials(float factor, double* sums) override { gather_norm_partials(ctx_, grads(), factor, sums); }
  void zero_grads() override { grads_.zero(); }
  void publish_params() override { publish(true); }

private:
  FullGrads grads_;
};

// Stage 2: gradients sharded too. Each group's gradients are reduce-scattered in buckets as soon
// as backward finishes them; only this rank's shard is kept.
class Stage2 final : public ResidentStage {
public:
  explicit Stage2(const StageContext& ctx) : ResidentStage(ctx, ctx.train_partition.own()), grads_(ctx) {}
  void grads_ready(int g, View grads) override { grads_.add_group(g, grads); }
  void reduce_gradients() override { grads_.finish(); }
  Range update_range() const override { return ctx_.train_partition.own(); }
  ConstView grads() const override { return grads_.data(); }
  void norm_partials(float factor, double* sums) override { gather_norm_partials(ctx_, grads(), factor, sums); }
  void zero_grads() override { grads_.zero(); }
  void publish_params() override { publish(true); }

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

void upload_params(const StageContext& ctx, const ParamInit& init, ParamShard& shard, Range flat, size_t numel) {
  // A multiple of 4096 elements: chunks of a shard that lives in a file start on 4 KiB boundaries.
  constexpr size_t kChunk = 16384;
  const size_t n_max = std::min(kChunk, flat.size());
  std::vector<float> values(n_max);
  std::vector<uint8_t> converted(n_max * dtype_size(ctx.dtype()));
  VectorOps& host = ctx.host;
  for (size_t done = 0; done < flat.size(); done += kChunk) {
    const size_t n = std::min(kChunk, flat.size() - done);
    const Range chunk{flat.begin + done, flat.begin + done + n};
    const Range real = chunk.intersect({0, numel});
    std::fill(values.begin(), values.begin() + n, 0.0f);
    if (!real.empty()) init(values.data() + (real.begin - chunk.begin), real.begin, real.size());
    host.convert({values.data(), DType::F32, MemSpace::Host}, {converted.data(), ctx.dtype(), MemSpace::Host}, n);
    shard.write({done, done + n}, converted.data());
  }
}

void gather_norm_partials(const StageContext& ctx, ConstView own_grads, float factor, double* sums) {
  const Partition& part = ctx.train_partition;
  const int rank = part.rank();
  ctx.vector().sum_of_squares_into(own_grads, part.trained(rank).size(), factor, sums + rank);
  ctx.comm.all_gather(sums + rank, sums, 2, DType::F32)->sync(ctx.device().compute());
}

}  // namespace zt
