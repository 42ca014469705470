#include "zero/shard_grads.hpp"

namespace zt {

ShardGrads::ShardGrads(const StageContext& ctx)
    : ctx_(ctx),
      values_(ctx.device(), MemSpace::Device, MemCategory::Grads,
              ctx.train_partition.shard_size() * dtype_size(ctx.dtype())) {
  auto apply = [this](Range own, const void* data) {
    const size_t offset = own.begin - ctx_.train_partition.own().begin;
    ctx_.vector().add(ctx_.view(const_cast<void*>(data), ctx_.comm_dtype()),
                      ctx_.view(values_.data() + offset * dtype_size(ctx_.dtype()), ctx_.dtype()), own.size());
  };
  bucketer_ = std::make_unique<GradBucketer>(ctx, ctx.options.reduce_bucket_size, apply);
}

void ShardGrads::add_group(int g, View grads) {
  auto& group = ctx_.layout.groups[size_t(g)];
  if (grads.dtype == DType::F32 && ctx_.dtype() != DType::F32)
    ctx_.vector().round_to(ctx_.dtype(), static_cast<float*>(grads.data), group.size);
  // Its trainable runs from the last down, as the bucket fills: consecutive in the trainable space.
  const auto runs = ctx_.trainable.in_flat({group.offset, group.offset + group.size});
  for (auto run = runs.rbegin(); run != runs.rend(); ++run)
    bucketer_->add(run->compact, grads.at(run->flat - group.offset), run->size);
}

void ShardGrads::finish() { bucketer_->wait_all(); }

void ShardGrads::zero() { ctx_.device().fill_zero(values_.data(), values_.bytes(), ctx_.device().compute()); }

}  // namespace zt
