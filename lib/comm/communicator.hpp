#pragma once
// The communicator: a small collective interface in the spirit of PyTorch's c10d Backend, for
// tensors in the memory the device computes in (host buffers on MPI, GPU buffers on NCCL).
// Counts are in elements. Every op may run asynchronously (returns a Work to wait on) and counts
// the bytes this rank puts on the wire, per op kind, so the trainer can log communication volume.
// Small host values (losses, flags, norm partials) travel through its control channel instead.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "core/device.hpp"
#include "core/dtype.hpp"

namespace zt {

enum class ReduceOp : uint8_t { Sum, Max };
enum class CommOp : uint8_t { AllReduce, ReduceScatter, AllGather, Broadcast, Barrier, AllToAll, Count };
inline constexpr CommOp kCommOps[] = {CommOp::AllReduce, CommOp::ReduceScatter, CommOp::AllGather, CommOp::Broadcast,
                                      CommOp::Barrier,   CommOp::AllToAll};
std::string_view comm_op_name(CommOp op);  // "all_reduce", "reduce_scatter", ...

struct CommStats {
  std::array<uint64_t, size_t(CommOp::Count)> bytes_sent{};
  std::array<uint64_t, size_t(CommOp::Count)> calls{};
  std::array<double, size_t(CommOp::Count)> seconds{};  // time each op ran, queueing excluded
  uint64_t bytes(CommOp op) const { return bytes_sent[size_t(op)]; }

  CommStats& operator+=(const CommStats& o) {
    for (size_t i = 0; i < size_t(CommOp::Count); ++i) {
      bytes_sent[i] += o.bytes_sent[i];
      calls[i] += o.calls[i];
      seconds[i] += o.seconds[i];
    }
    return *this;
  }
  // What happened between two readings: later - earlier.
  friend CommStats operator-(CommStats later, const CommStats& earlier) {
    for (size_t i = 0; i < size_t(CommOp::Count); ++i) {
      later.bytes_sent[i] -= earlier.bytes_sent[i];
      later.calls[i] -= earlier.calls[i];
      later.seconds[i] -= earlier.seconds[i];
    }
    return later;
  }
};

class Work {
public:
  virtual ~Work() = default;
  virtual void wait() = 0;          // blocks the host until the op is done and its output readable
  virtual void sync(Stream s) = 0;  // makes stream s wait for the op, without blocking the host
  virtual bool is_completed() = 0;  // non-blocking test
};
using WorkPtr = std::shared_ptr<Work>;

class ControlChannel;

class Communicator {
public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual int local_rank() const = 0;
  virtual int local_size() const = 0;  // ranks on this machine

  // Deterministic: element i of the result is ((x_0 + x_1) + x_2) ... + x_{N-1} in rank order,
  // for any count and whatever the buffers were cut into. 16-bit inputs accumulate in fp32.
  // (The NCCL backend keeps NCCL's own order and 16-bit accumulation: nccl_communicator.hpp.)
  // In place when send == recv.
  virtual WorkPtr all_reduce(const void* send, void* recv, size_t count, DType dtype, ReduceOp op,
                             bool async = false) = 0;
  // send holds sum(recv_counts) elements; rank r receives the reduction of the r-th piece
  // (pieces laid out in rank order) into recv (recv_counts[rank] elements). Pieces may differ in
  // size and be empty. Same determinism as all_reduce.
  virtual WorkPtr reduce_scatter(const void* send, void* recv, std::span<const size_t> recv_counts,
                                 DType dtype, ReduceOp op, bool async = false) = 0;
  // Each rank contributes counts[rank] elements from send; recv gets all pieces in rank order
  // (sum(counts) elements). In place when send == recv + offset of this rank's piece.
  virtual WorkPtr all_gather(const void* send, void* recv, std::span<const size_t> counts,
                             DType dtype, bool async = false) = 0;
  virtual WorkPtr broadcast(void* buf, size_t count, DType dtype, int root, bool async = false) = 0;
  virtual WorkPtr barrier(bool async = false) = 0;
  // Rank r sends send_counts[q] elements to rank q (send holds the pieces in rank order) and
  // receives recv_counts[q] elements from rank q (recv gets them in rank order); what r sends q is
  // what q expects from r. Pieces may be empty: ranks outside a group exchange nothing, so a group's
  // all-to-all is the world's with the other ranks' pieces empty (every rank still calls it).
  // Its own piece is copied. send and recv must not overlap.
  virtual WorkPtr all_to_all(const void* send, std::span<const size_t> send_counts, void* recv,
                             std::span<const size_t> recv_counts, DType dtype, bool async = false) = 0;

  // Even split helpers: every rank gets `count` elements.
  WorkPtr reduce_scatter(const void* send, void* recv, size_t count, DType dtype, ReduceOp op,
                         bool async = false);
  WorkPtr all_gather(const void* send, void* recv, size_t count, DType dtype, bool async = false);

  // The ranks that pass the same color as a communicator of their own, ranked by key (ties by
  // rank): a group whose collectives run among its ranks only, with their own counters (stats()).
  // Collective over this communicator; every rank gets the one of its color.
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;

  // Host-side channel for small control values between the same ranks; its traffic is counted in
  // stats() with the data's.
  virtual ControlChannel& control() = 0;

  virtual CommStats stats() const = 0;
  // Context named in timeout and mismatch messages ("step 17").
  virtual void set_step(int64_t step) = 0;
};

}  // namespace zt
