// Stages 0, 1 and 2: parameters resident on every rank.
#include <vector>

#include "comm/control_channel.hpp"
#include "zero/full_copies.hpp"
#include "zero/shard_grads.hpp"
#include "zero/stage.hpp"
#include "zero/stage3.hpp"

namespace zt {

namespace {

// What stages 0-2 share: every parameter resident on every rank.
class ResidentStage : public Stage {
public:
  explicit ResidentStage(const StageContext& ctx, Range updated)
      : ctx_(ctx), params_(ctx), updated_(ctx.device(), params_.at(updated.begin), updated.size()) {}
  ParamShard& params() override { return updated_; }
  void init_params(const ParamInit& init) override { params_.init(init); }
  ConstView fetch(int g) override { return params_.fetch(g); }
  void release(int g) override { params_.release(g); }

protected:
  const StageContext& ctx_;
  FullParams params_;
  ResidentParamShard updated_;  // the part this rank's optimizer updates
};

// Stage 0, plain data parallel: gradients all-reduced (as reduce-scatter + all-gather over the
// same shards as the other stages, so the sums are bit-identical), every rank updates everything.
class Stage0 final : public ResidentStage {
public:
  explicit Stage0(const StageContext& ctx) : ResidentStage(ctx, {0, ctx.partition.padded()}), grads_(ctx) {}
  View grads_in_place(int g) override { return grads_.in_place(g); }
  void grads_ready(int g, View grads) override { grads_.accumulate(g, grads); }
  void reduce_gradients() override {
    grads_.reduce_scatter();
    grads_.all_gather_shards();
  }
  Range update_range() const override { return {0, ctx_.partition.padded()}; }
  ConstView grads() const override { return grads_.at(0); }
  void norm_partials(float factor, double* sums) override {  // every shard's gradients are here
    const Partition& part = ctx_.partition;
    for (int r = 0; r < part.world_size(); ++r)
      ctx_.vector().sum_of_squares_into(grads_.at(part.shard(r).begin), part.trained(r).size(), factor, sums + r);
  }
  void zero_grads() override { grads_.zero(); }
  void publish_params() override {}

private:
  FullGrads grads_;
};

// Stage 1: optimizer state sharded. Full gradients accumulate locally and are reduce-scattered at
// the accumulation boundary; updated shards are all-gathered.
class Stage1 final : public ResidentStage {
public:
  explicit Stage1(const StageContext& ctx) : ResidentStage(ctx, ctx.partition.own()), grads_(ctx) {}
  View grads_in_place(int g) override { return grads_.in_place(g); }
  void grads_ready(int g, View grads) override { grads_.accumulate(g, grads); }
  void reduce_gradients() override { grads_.reduce_scatter(); }
  Range update_range() const override { return ctx_.partition.own(); }
  ConstView grads() const override { return grads_.at(ctx_.partition.own().begin); }
  void norm_partials(float factor, double* sums) override { gather_norm_partials(ctx_, grads(), factor, sums); }
  void zero_grads() override { grads_.zero(); }
  void publish_params() override { params_.all_gather_shards(); }

private:
  FullGrads grads_;
};

// Stage 2: gradients sharded too. Each group's gradients are reduce-scattered in buckets as soon
// as backward finishes them; only this rank's shard is kept.
class Stage2 final : public ResidentStage {
public:
  explicit Stage2(const StageContext& ctx) : ResidentStage(ctx, ctx.partition.own()), grads_(ctx) {}
  void grads_ready(int g, View grads) override { grads_.add_group(g, grads); }
  void reduce_gradients() override { grads_.finish(); }
  Range update_range() const override { return ctx_.partition.own(); }
  ConstView grads() const override { return grads_.data(); }
  void norm_partials(float factor, double* sums) override { gather_norm_partials(ctx_, grads(), factor, sums); }
  void zero_grads() override { grads_.zero(); }
  void publish_params() override { params_.all_gather_shards(); }

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

void upload_params(const StageContext& ctx, const ParamInit& init, ParamShard& shard, Range flat) {
  // A multiple of 4096 elements: chunks of a shard that lives in a file start on 4 KiB boundaries.
  constexpr size_t kChunk = 16384;
  const size_t n_max = std::min(kChunk, flat.size());
  std::vector<float> values(n_max);
  std::vector<uint8_t> converted(n_max * dtype_size(ctx.dtype()));
  VectorOps& host = ctx.host;
  for (size_t done = 0; done < flat.size(); done += kChunk) {
    const size_t n = std::min(kChunk, flat.size() - done);
    const Range chunk{flat.begin + done, flat.begin + done + n};
    const Range real = chunk.intersect({0, ctx.partition.numel()});
    std::fill(values.begin(), values.begin() + n, 0.0f);
    if (!real.empty()) init(values.data() + (real.begin - chunk.begin), real.begin, real.size());
    host.convert({values.data(), DType::F32, MemSpace::Host}, {converted.data(), ctx.dtype(), MemSpace::Host}, n);
    shard.write({done, done + n}, converted.data());
  }
}

void gather_norm_partials(const StageContext& ctx, ConstView own_grads, float factor, double* sums) {
  const Partition& part = ctx.partition;
  const int rank = part.rank();
  ctx.vector().sum_of_squares_into(own_grads, part.trained(rank).size(), factor, sums + rank);
  ctx.comm.all_gather(sums + rank, sums, 2, DType::F32)->sync(ctx.device().compute());
}

}  // namespace zt
