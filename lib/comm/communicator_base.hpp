#pragma once
// What every backend shares: argument checks, the op's signature (what it says it issues, for the
// sequence check and error messages), call counting and the step named in messages. A backend
// implements issue() and counts the bytes it actually sends.
#include <atomic>
#include <vector>

#include "comm/comm_counters.hpp"
#include "comm/communicator.hpp"
#include "comm/op_signature.hpp"

namespace zt {

// One checked collective: what to do, on which buffers.
struct Collective {
  OpSignature sig;  // op, count, dtype, reduction, root, pieces hash; seq is the backend's to set
  const void* send = nullptr;
  void* recv = nullptr;           // broadcast: the buffer
  std::vector<size_t> counts;     // per-rank pieces of reduce_scatter and all_gather; all_to_all's sent
  std::vector<size_t> recv_counts;  // all_to_all: the pieces received, per rank
};

class CommunicatorBase : public Communicator {
public:
  int rank() const override { return rank_; }
  int world_size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }

  WorkPtr all_reduce(const void* send, void* recv, size_t count, DType dtype, ReduceOp op, bool async) override;
  WorkPtr reduce_scatter(const void* send, void* recv, std::span<const size_t> recv_counts, DType dtype, ReduceOp op,
                         bool async) override;
  WorkPtr all_gather(const void* send, void* recv, std::span<const size_t> counts, DType dtype, bool async) override;
  WorkPtr broadcast(void* buf, size_t count, DType dtype, int root, bool async) override;
  WorkPtr barrier(bool async) override;
  WorkPtr all_to_all(const void* send, std::span<const size_t> send_counts, void* recv,
                     std::span<const size_t> recv_counts, DType dtype, bool async) override;
  using Communicator::all_gather;
  using Communicator::reduce_scatter;

  CommStats stats() const override { return counters_.snapshot(); }
  void set_step(int64_t step) override { step_.store(step, std::memory_order_relaxed); }
  int64_t step() const { return step_.load(std::memory_order_relaxed); }

protected:
  CommunicatorBase(int rank, int size, int local_rank, int local_size)
      : rank_(rank), size_(size), local_rank_(local_rank), local_size_(local_size) {}
  // Runs or queues a checked collective (its call is already counted).
  virtual WorkPtr issue(Collective c, bool async) = 0;
  CommCounters& counters() { return counters_; }
  const std::atomic<int64_t>* step_source() const { return &step_; }

private:
  WorkPtr start(Collective c, bool async);

  int rank_, size_, local_rank_, local_size_;
  CommCounters counters_;
  std::atomic<int64_t> step_{0};
};

}  // namespace zt
