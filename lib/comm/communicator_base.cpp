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

Collective collective(CommOp op, size_t count, DType dtype, const void* send, void* recv) {
  Collective c;
  c.sig.op = op;
  c.sig.count = count;
  c.sig.dtype = dtype;
  c.send = send;
  c.recv = recv;
  return c;
}

// The checks and signature reduce_scatter and all_gather share: one piece count per rank, a total
// that fits, buffers wherever there are elements, and this rank's piece buffer inside the whole
// buffer only as its own piece. The whole buffer is send when send_is_whole (reduce_scatter),
// recv otherwise (all_gather).
Collective piece_collective(CommOp op, const char* name, std::span<const size_t> counts, int rank, int size,
                            const void* send, void* recv, bool send_is_whole, DType dtype) {
  if (int(counts.size()) != size) fail("{}: {} piece counts given for a world of {} ranks", name, counts.size(), size);
  const size_t total = total_count(counts);
  check_count(total, name);
  const size_t own = counts[size_t(rank)];
  if ((send_is_whole ? total : own) > 0 && !send)
    fail("{}: null send buffer for {} elements", name, send_is_whole ? total : own);
  if ((send_is_whole ? own : total) > 0 && !recv)
    fail("{}: null recv buffer for {} elements", name, send_is_whole ? own : total);
  const size_t own_offset = piece_offsets(counts)[size_t(rank)];
  const void* whole = send_is_whole ? send : recv;
  const void* piece = send_is_whole ? static_cast<const void*>(recv) : send;
  if (piece != bytes_at(whole, own_offset, dtype) &&
      ranges_overlap(whole, total * dtype_size(dtype), piece, own * dtype_size(dtype)))
    fail("{}: {} overlaps {} but is not this rank's piece (element offset {})", name, send_is_whole ? "recv" : "send",
         send_is_whole ? "send" : "recv", own_offset);
  Collective c = collective(op, total, dtype, send, recv);
  c.sig.pieces_hash = hash_piece_counts(counts);
  c.counts.assign(counts.begin(), counts.end());
  return c;
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
  Collective c = collective(CommOp::AllReduce, count, dtype, send, recv);
  c.sig.reduce = op;
  return start(std::move(c), async);
}

WorkPtr CommunicatorBase::reduce_scatter(const void* send, void* recv, std::span<const size_t> recv_counts,
                                         DType dtype, ReduceOp op, bool async) {
  Collective c =
      piece_collective(CommOp::ReduceScatter, "reduce_scatter", recv_counts, rank_, size_, send, recv, true, dtype);
  c.sig.reduce = op;
  return start(std::move(c), async);
}

WorkPtr CommunicatorBase::all_gather(const void* send, void* recv, std::span<const size_t> counts, DType dtype,
                                     bool async) {
  return start(piece_collective(CommOp::AllGather, "all_gather", counts, rank_, size_, send, recv, false, dtype),
               async);
}

WorkPtr CommunicatorBase::broadcast(void* buf, size_t count, DType dtype, int root, bool async) {
  if (root < 0 || root >= size_) fail("broadcast: root {} is not a rank of this world of {}", root, size_);
  check_count(count, "broadcast");
  if (count > 0 && !buf) fail("broadcast: null buffer for {} elements", count);
  Collective c = collective(CommOp::Broadcast, count, dtype, nullptr, buf);
  c.sig.root = root;
  return start(std::move(c), async);
}

WorkPtr CommunicatorBase::barrier(bool async) {
  Collective c;
  c.sig.op = CommOp::Barrier;
  return start(std::move(c), async);
}

WorkPtr CommunicatorBase::all_to_all(const void* send, std::span<const size_t> send_counts, void* recv,
                                     std::span<const size_t> recv_counts, DType dtype, bool async) {
  if (int(send_counts.size()) != size_ || int(recv_counts.size()) != size_)
    fail("all_to_all: {} send and {} recv piece counts given for a world of {} ranks", send_counts.size(),
         recv_counts.size(), size_);
  const size_t sent = total_count(send_counts), received = total_count(recv_counts);
  check_count(sent, "all_to_all");
  check_count(received, "all_to_all");
  if (sent > 0 && !send) fail("all_to_all: null send buffer for {} elements", sent);
  if (received > 0 && !recv) fail("all_to_all: null recv buffer for {} elements", received);
  if (ranges_overlap(send, sent * dtype_size(dtype), recv, received * dtype_size(dtype)))
    fail("all_to_all: send and recv overlap");
  if (send_counts[size_t(rank_)] != recv_counts[size_t(rank_)])
    fail("all_to_all: this rank sends itself {} elements and expects {}", send_counts[size_t(rank_)],
         recv_counts[size_t(rank_)]);
  // The pieces differ from rank to rank: the signature the ranks compare is the op and the dtype.
  Collective c = collective(CommOp::AllToAll, 0, dtype, send, recv);
  c.counts.assign(send_counts.begin(), send_counts.end());
  c.recv_counts.assign(recv_counts.begin(), recv_counts.end());
  return start(std::move(c), async);
}

}  // namespace zt
