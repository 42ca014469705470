#include "zero/grad_bucketer.hpp"

#include <chrono>

namespace zt {

GradBucketer::GradBucketer(const Partition& partition, Communicator& comm, DType comm_dtype,
                           size_t bucket_elements, bool overlap, Apply apply)
    : partition_(partition), comm_(comm), dtype_(comm_dtype),
      bucket_(std::max<size_t>(1, std::min(bucket_elements, partition.padded()))),
      overlap_(overlap), apply_(std::move(apply)) {
  size_t recv = std::min(bucket_, partition.shard_size());
  int slots = overlap_ ? 2 : 1;
  for (int i = 0; i < slots; ++i) {
    slots_[i].send = Buffer<uint8_t>(MemCategory::Buffers, bucket_ * dtype_size(dtype_));
    slots_[i].recv = Buffer<uint8_t>(MemCategory::Buffers, recv * dtype_size(dtype_));
  }
}

void GradBucketer::add(size_t begin, const void* src, DType src_dtype, size_t n) {
  const size_t esz = dtype_size(src_dtype), bsz = dtype_size(dtype_);
  auto bytes = static_cast<const char*>(src);
  if (fill_ > 0 && begin + n != current().range.begin) flush();
  // Walk the range from its end down, filling the bucket from its end down.
  while (n > 0) {
    Slot& slot = current();
    if (fill_ == 0) {
      if (slot.work) complete(slot);  // the slot's previous reduction must land before reuse
      slot.range = {begin + n, begin + n};
    }
    size_t take = std::min(n, bucket_ - fill_);
    size_t dst = bucket_ - fill_ - take;
    convert(src_dtype, bytes + (n - take) * esz, dtype_, slot.send.data() + dst * bsz, take);
    fill_ += take;
    n -= take;
    slot.range.begin -= take;
    if (fill_ == bucket_) flush();
  }
}

void GradBucketer::flush() {
  if (fill_ == 0) return;
  Slot& slot = current();
  auto counts = partition_.pieces(slot.range);
  const void* data = slot.send.data() + (bucket_ - fill_) * dtype_size(dtype_);
  auto t0 = std::chrono::steady_clock::now();  // without overlap the call itself blocks
  slot.work = comm_.reduce_scatter(data, slot.recv.data(), counts, dtype_, ReduceOp::Sum, overlap_);
  exposed_wait_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fill_ = 0;
  if (overlap_) current_ ^= 1;
  else complete(slot);
}

void GradBucketer::complete(Slot& slot) {
  auto t0 = std::chrono::steady_clock::now();
  slot.work->wait();
  exposed_wait_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  slot.work.reset();
  Range own = slot.range.intersect(partition_.own());
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
