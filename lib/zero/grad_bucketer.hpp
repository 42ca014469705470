#pragma once
// Reduce-scatter of gradients in buckets of reduce_bucket_size elements. A bucket is a contiguous
// range of the trainable space (the flat buffer's, with nothing frozen); gradients arrive top-down (backward visits
// groups last to first), so a bucket fills from its end. A full bucket is reduce-scattered (on the communication thread
// when overlap_comm) and this rank's piece handed to `apply`. Two bucket slots alternate, so one can fill while the
// other is in flight. The time compute waits on them goes to the step clock.
#include <functional>

#include "comm/communicator.hpp"
#include "core/buffer.hpp"
#include "zero/stage.hpp"

namespace zt {

class GradBucketer {
public:
  // own_piece: the part of the reduced range this rank owns; data: its reduced values (comm dtype,
  // device memory).
  using Apply = std::function<void(Range own_piece, const void* data)>;

  GradBucketer(const StageContext& ctx, size_t bucket_elements, Apply apply);
  // What its bucket slots take, in bytes: one or two (overlap_comm) slots of a bucket to send and
  // this rank's piece to receive, in the communication dtype (partition: of the trainable space).
  static size_t bytes(const EngineOptions& options, const Partition& partition);

  // Adds gradients for flat range [begin, begin + n). When the range does not end where the
  // current bucket's content begins, the bucket is flushed first.
  void add(size_t begin, ConstView src, size_t n);
  void flush();     // reduce whatever the current bucket holds
  void wait_all();  // flush, then complete every reduction in flight and apply it

private:
  struct Slot {
    Buffer<uint8_t> send, recv;
    Range range;  // flat range held (being filled, or in flight)
    WorkPtr work;
  };
  void complete(Slot& slot);
  Slot& current() { return slots_[current_]; }

  const StageContext& ctx_;
  DType dtype_;
  size_t bucket_;
  bool overlap_;
  Apply apply_;
  Slot slots_[2];
  int current_ = 0;
  size_t fill_ = 0;  // elements in the current bucket, stored at its end
};

}  // namespace zt
