#include "zero/full_copies.hpp"

#include <algorithm>
#include <vector>


namespace zt {

void all_gather_in_place(const StageContext& ctx, const Partition& part, void* full, DType dtype,
                         size_t piece_elements) {
  if (part.world_size() == 1) return;  // the one shard is the whole buffer, already in place
  const size_t esz = dtype_size(dtype);
  auto base = static_cast<char*>(full);
  piece_elements = std::max<size_t>(1, piece_elements);
  std::vector<std::vector<size_t>> counts;
  std::vector<WorkPtr> works;
  ctx.clock.time(&StepBreakdown::gather_wait, [&] {
    for (size_t a = 0; a < part.padded(); a += piece_elements) {
      Range range{a, std::min(a + piece_elements, part.padded())};
      Range own = range.intersect(part.own());
      counts.push_back(part.pieces(range));
      const char* send = base + (own.empty() ? a : own.begin) * esz;
      works.push_back(ctx.comm.all_gather(send, base + a * esz, counts.back(), dtype, true));
    }
    for (auto& w : works) w->sync(ctx.device().compute());  // the device waits, not the host
  });
}

// ---- FullParams ----

FullParams::FullParams(const StageContext& ctx)
    : ctx_(ctx),
      values_(ctx.device(), MemSpace::Device, MemCategory::Params, ctx.partition.padded() * dtype_size(ctx.dtype())),
      copies_(ctx.pool, ctx.layout.groups.size()) {}

void FullParams::init(const ParamInit& init) {
  ResidentParamShard all(ctx_.device(), at(0), ctx_.partition.padded());
  upload_params(ctx_, init, all, {0, ctx_.partition.padded()}, ctx_.partition.numel());
}

FetchedGroup FullParams::fetch(int g) {
  auto& group = ctx_.layout.groups[size_t(g)];
  if (ctx_.model_dtype == ctx_.dtype()) return {at(group.offset), {}};
  bool fresh = false;
  void* copy = copies_.acquire(g, group.size * dtype_size(ctx_.model_dtype), &fresh);
  View view = ctx_.view(copy, ctx_.model_dtype);
  if (fresh) ctx_.vector().convert(at(group.offset), view, group.size);
  return {view, view};
}

void FullParams::release(int g) {
  if (ctx_.model_dtype != ctx_.dtype()) copies_.release(g);
}

void FullParams::all_gather_shards() {
  all_gather_in_place(ctx_, ctx_.partition, values_.data(), ctx_.dtype(), ctx_.options.allgather_bucket_size);
}

// ---- FullGrads ----

FullGrads::FullGrads(const StageContext& ctx)
    : ctx_(ctx),
      values_(ctx.device(), MemSpace::Device, MemCategory::Grads,
              ctx.train_partition.padded() * dtype_size(ctx.dtype())) {
  auto apply = [this](Range own, const void* data) {
    ctx_.vector().convert(ctx_.view(const_cast<void*>(data), ctx_.comm_dtype()), at(own.begin), own.size());
  };
  bucketer_ = std::make_unique<GradBucketer>(ctx, ctx.options.reduce_bucket_size, apply);
}

void FullGrads::accumulate(int g, View grads) {
  auto& group = ctx_.layout.groups[size_t(g)];
  for (const TrainableSpace::Run& run : ctx_.trainable.in_flat({group.offset, group.offset + group.size}))
    ctx_.vector().add(grads.at(run.flat - group.offset), at(run.compact), run.size);
}

View FullGrads::in_place(int g) {
  if (ctx_.model_dtype != ctx_.dtype()) return {};
  // A group with a frozen tensor is not laid out in the trainable space as the model writes it.
  auto& group = ctx_.layout.groups[size_t(g)];
  const auto runs = ctx_.trainable.in_flat({group.offset, group.offset + group.size});
  if (runs.size() != 1 || runs[0].size != group.size) return {};
  return at(runs[0].compact);
}

void FullGrads::reduce_scatter() {
  // One rank reducing in its own dtype: the sum is what the buffer holds (a pass over Ψ saved).
  if (ctx_.train_partition.world_size() == 1 && ctx_.comm_dtype() == ctx_.dtype()) return;
  // Top-down, the order backward produces gradients in, and never the padding: the same buckets
  // as stage 2 cuts, and the same bytes on the wire.
  bucketer_->add(0, at(0), ctx_.train_partition.numel());
  bucketer_->wait_all();
}

void FullGrads::all_gather_shards() {
  all_gather_in_place(ctx_, ctx_.train_partition, values_.data(), ctx_.dtype(), ctx_.options.allgather_bucket_size);
}

void FullGrads::zero() { ctx_.device().fill_zero(values_.data(), values_.bytes(), ctx_.device().compute()); }

}  // namespace zt
