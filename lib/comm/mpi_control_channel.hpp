#pragma once
// The control channel over MPI: blocking calls on a communicator of their own, polled with
// backoff, ended by the same timeout as the data collectives (the job is aborted naming the call).
// Traffic is counted in the owning communicator's counters: an all_gather of B bytes sends
// B·(N-1) bytes (counted as an all_reduce when it carries a reduction).
#include <mpi.h>

#include <atomic>

#include "comm/comm_counters.hpp"
#include "comm/control_channel.hpp"
#include "comm/mpi_session.hpp"

namespace zt {

// Where this rank sits in the ranks of `comm` (mpi_world_info is MPI_COMM_WORLD's).
WorldInfo mpi_world_info(MPI_Comm comm);

class MpiControlChannel final : public ControlChannel {
public:
  // Duplicates `base` (collective over it). step: what messages name as the current step.
  MpiControlChannel(CommCounters& counters, double timeout_seconds, const std::atomic<int64_t>* step = nullptr,
                    MPI_Comm base = MPI_COMM_WORLD);
  ~MpiControlChannel() override;
  MpiControlChannel(const MpiControlChannel&) = delete;
  MpiControlChannel& operator=(const MpiControlChannel&) = delete;

  int rank() const override { return rank_; }
  int world_size() const override { return size_; }
  void all_gather(const void* send, void* recv, size_t bytes) override;
  void broadcast(void* buf, size_t bytes, int root) override;
  void barrier() override;

protected:
  void gather_for_reduce(const void* send, void* recv, size_t bytes) override;

private:
  void exchange(const void* send, void* recv, size_t bytes, CommOp counted_as);
  // Polls `request` to completion; aborts the job when it outlasts the timeout.
  void complete(MPI_Request& request, CommOp op, size_t bytes);

  CommCounters& counters_;
  double timeout_seconds_;
  const std::atomic<int64_t>* step_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  uint64_t calls_ = 0;
};

}  // namespace zt
