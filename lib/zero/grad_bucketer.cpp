#include "zero/grad_bucketer.hpp"

namespace zt {

namespace {
// A bucket never spans more than the flat buffer.
size_t clamped_bucket(size_t elements, const Partition& partition) {
  return std::max<size_t>(1, std::min(elements, partition.padded()));
}
int slot_count(bool overlap) { return overlap ? 2 : 1; }
}  // namespace

size_t GradBucketer::bytes(const EngineOptions& o, const Partition& partition) {
  const size_t bucket = clamped_bucket(o.reduce_bucket_size, partition);
  return size_t(slot_count(o.overlap_comm)) * (bucket + std::min(bucket, partition.shard_size())) *
         dtype_size(o.comm_dtype);
}

GradBucketer::GradBucketer(const StageContext& ctx, size_t bucket_elements, Apply apply)
    : ctx_(ctx), dtype_(ctx.comm_dtype()),
      bucket_(clamped_bucket(bucket_elements, ctx.train_partition)),
      overlap_(ctx.options.overlap_comm), apply_(std::move(apply)) {
  const size_t recv = std::min(bucket_, ctx.train_partition.shard_size());
  for (int i = 0; i < slot_count(overlap_); ++i) {
    slots_[i].send =
        Buffer<uint8_t>(ctx.device(), MemSpace::Device, MemCategory::Buffers, bucket_ * dtype_size(dtype_));
    slots_[i].recv = Buffer<uint8_t>(ctx.device(), MemSpace::Device, MemCategory::Buffers, recv * dtype_size(dtype_));
  }
}

void GradBucketer::add(size_t begin, ConstView src, size_t n) {
  const size_t bsz = dtype_size(dtype_);
  if (fill_ > 0 && begin + n != current().range.begin) flush();
  // Walk the range from its end down, filling the bucket from its end down.
  while (n > 0) {
    Slot& slot = current();
    if (fill_ == 0) {
      if (slot.work) complete(slot);  // the slot's previous reduction must land before reuse
      slot.range = {begin + n, begin + n};
    }
    const size_t take = std::min(n, bucket_ - fill_);
    const size_t dst = bucket_ - fill_ - take;
    ctx_.vector().convert(src.at(n - take), ctx_.view(slot.send.data() + dst * bsz, dtype_), take);
    fill_ += take;
    n -= take;
    slot.range.begin -= take;
    if (fill_ == bucket_) flush();
  }
}

void GradBucketer::flush() {
  if (fill_ == 0) return;
  Slot& slot = current();
  auto counts = ctx_.train_partition.pieces(slot.range);
  const void* data = slot.send.data() + (bucket_ - fill_) * dtype_size(dtype_);
  // Without overlap the call itself blocks.
  ctx_.clock.time(&StepBreakdown::reduce_wait, [&] {
    slot.work = ctx_.comm.reduce_scatter(data, slot.recv.data(), counts, dtype_, ReduceOp::Sum, overlap_);
  });
  fill_ = 0;
  if (overlap_) current_ ^= 1;
  else complete(slot);
}

void GradBucketer::complete(Slot& slot) {
  ctx_.clock.time(&StepBreakdown::reduce_wait, [&] { slot.work->sync(ctx_.device().compute()); });
  slot.work.reset();
  Range own = slot.range.intersect(ctx_.train_partition.own());
  if (!own.empty()) apply_(own, slot.recv.data());
}

void GradBucketer::wait_all() {
  flush();
  // Complete in issue order: the current slot's reduction (if any) is the older one.
  for (int k = 0; k < 2; ++k) {
    Slot& slot = slots_[(current_ + k) % 2];
    if (slot.work) complete(slot);
  }
}

}  // namespace zt
