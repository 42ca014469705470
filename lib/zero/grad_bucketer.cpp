#include "zero/grad_bucketer.hpp"

#include "core/clock.hpp"

namespace zt {

GradBucketer::GradBucketer(const StageContext& ctx, size_t bucket_elements, Apply apply)
    : ctx_(ctx), dtype_(ctx.comm_dtype()),
      bucket_(std::max<size_t>(1, std::min(bucket_elements, ctx.partition.padded()))),
      overlap_(ctx.options.overlap_comm), apply_(std::move(apply)) {
  const size_t recv = std::min(bucket_, ctx.partition.shard_size());
  const int slots = overlap_ ? 2 : 1;
  for (int i = 0; i < slots; ++i) {
    slots_[i].send = Buffer<uint8_t>(ctx.device(), MemSpace::Device, MemCategory::Buffers, bucket_ * dtype_size(dtype_));
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
  auto counts = ctx_.partition.pieces(slot.range);
  const void* data = slot.send.data() + (bucket_ - fill_) * dtype_size(dtype_);
  auto t0 = SteadyClock::now();  // without overlap the call itself blocks
  slot.work = ctx_.comm.reduce_scatter(data, slot.recv.data(), counts, dtype_, ReduceOp::Sum, overlap_);
  exposed_wait_s_ += seconds_since(t0);
  fill_ = 0;
  if (overlap_) current_ ^= 1;
  else complete(slot);
}

void GradBucketer::complete(Slot& slot) {
  auto t0 = SteadyClock::now();
  slot.work->sync(ctx_.device().compute());  // apply_ and the slot's refill queue after it
  exposed_wait_s_ += seconds_since(t0);
  slot.work.reset();
  Range own = slot.range.intersect(ctx_.partition.own());
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
