#include "comm/communicator_base.hpp"

#include <cstdint>

#include "comm/comm_volume.hpp"
#include "core/error.hpp"

namespace zt {

namespace {

bool ranges_overlap(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return a_bytes > 0 && b_bytes > 0 && x < y + b_bytes && y < x + a_bytes;
}

// Element offsets are computed in size_t bytes: refuse sizes whose byte count would overflow.
void check_count(size_t count, const char* what) {
  if (count > (SIZE_MAX >> 3)) fail("{}: count {} is too large", what, count);
}

}  // namespace

WorkPtr CommunicatorBase::start(Collective c, bool async) {
  counters_.call(c.sig.op);
  return issue(std::move(c), async);
}

WorkPtr CommunicatorBase::all_reduce(const void* send, void* recv, size_t count, DType dtype, ReduceOp op,
                                     bool async) {
  check_count(count, "all_reduce");
  const size_t bytes = count * dtype_size(dtype);
  if (count > 0 && (!send || !recv)) fail("all_reduce: null buffer for {} elements", count);
  if (send != recv && ranges_overlap(send, bytes, recv, bytes))
    fail("all_reduce: send and recv overlap without being the same buffer");
  Collective c;
  c.sig.op = CommOp::AllReduce;
  c.sig.count = count;
  c.sig.dtype = dtype;
  c.sig.reduce = op;
  c.send = send;
  c.recv = recv;
  return start(std::move(c), async);
}

WorkPtr CommunicatorBase::reduce_scatter(const void* send, void* recv, std::span<const size_t> recv_counts,
                                         DType dtype, ReduceOp op, bool async) {
  if (int(recv_counts.size()) != size_)
    fail("reduce_scatter: {} piece counts given for a world of {} ranks", recv_counts.size(), size_);
  const size_t total = total_count(recv_counts);
  check_count(total, "reduce_scatter");
  const size_t own = recv_counts[size_t(rank_)];
  if (total > 0 && !send) fail("reduce_scatter: null send buffer for {} elements", total);
  if (own > 0 && !recv) fail("reduce_scatter: null recv buffer for {} elements", own);
  const size_t own_offset = piece_offsets(recv_counts)[size_t(rank_)];
  if (recv != bytes_at(send, own_offset, dtype) &&
      ranges_overlap(send, total * dtype_size(dtype), recv, own * dtype_size(dtype)))
    fail("reduce_scatter: recv overlaps send but is not this rank's piece (element offset {})", own_offset);
  Collective c;
  c.sig.op = CommOp::ReduceScatter;
  c.sig.count = total;
  c.sig.pieces_hash = hash_piece_counts(recv_counts);
  c.sig.dtype = dtype;
  c.sig.reduce = op;
  c.send = send;
  c.recv = recv;
  c.counts.assign(recv_counts.begin(), recv_counts.end());
  return start(std::move(c), async);
}

WorkPtr CommunicatorBase::all_gather(const void* send, void* recv, std::span<const size_t> counts, DType dtype,
                                     bool async) {
  if (int(counts.size()) != size_)
    fail("all_gather: {} piece counts given for a world of {} ranks", counts.size(), size_);
  const size_t total = total_count(counts);
  check_count(total, "all_gather");
  const size_t own = counts[size_t(rank_)];
  if (own > 0 && !send) fail("all_gather: null send buffer for {} elements", own);
  if (total > 0 && !recv) fail("all_gather: null recv buffer for {} elements", total);
  const size_t own_offset = piece_offsets(counts)[size_t(rank_)];
  if (send != bytes_at(recv, own_offset, dtype) &&
      ranges_overlap(send, own * dtype_size(dtype), recv, total * dtype_size(dtype)))
    fail("all_gather: send overlaps recv but is not this rank's piece (element offset {})", own_offset);
  Collective c;
  c.sig.op = CommOp::AllGather;
  c.sig.count = total;
  c.sig.pieces_hash = hash_piece_counts(counts);
  c.sig.dtype = dtype;
  c.send = send;
  c.recv = recv;
  c.counts.assign(counts.begin(), counts.end());
  return start(std::move(c), async);
}

WorkPtr CommunicatorBase::broadcast(void* buf, size_t count, DType dtype, int root, bool async) {
  if (root < 0 || root >= size_) fail("broadcast: root {} is not a rank of this world of {}", root, size_);
  check_count(count, "broadcast");
  if (count > 0 && !buf) fail("broadcast: null buffer for {} elements", count);
  Collective c;
  c.sig.op = CommOp::Broadcast;
  c.sig.count = count;
  c.sig.dtype = dtype;
  c.sig.root = root;
  c.recv = buf;
  return start(std::move(c), async);
}

WorkPtr CommunicatorBase::barrier(bool async) {
  Collective c;
  c.sig.op = CommOp::Barrier;
  return start(std::move(c), async);
}

}  // namespace zt
