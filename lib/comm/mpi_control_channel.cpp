#include "comm/mpi_control_channel.hpp"

#include <climits>

#include "comm/mpi_session.hpp"
#include "comm/progress_backoff.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"

namespace zt {

MpiControlChannel::MpiControlChannel(CommCounters& counters, double timeout_seconds, const std::atomic<int64_t>* step,
                                     MPI_Comm base)
    : counters_(counters), timeout_seconds_(timeout_seconds), step_(step) {
  ensure_mpi_initialised();
  MPI_Comm_dup(base, &comm_);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

MpiControlChannel::~MpiControlChannel() {
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (!finalised && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void MpiControlChannel::all_gather(const void* send, void* recv, size_t bytes) {
  exchange(send, recv, bytes, CommOp::AllGather);
}

void MpiControlChannel::gather_for_reduce(const void* send, void* recv, size_t bytes) {
  exchange(send, recv, bytes, CommOp::AllReduce);
}

void MpiControlChannel::exchange(const void* send, void* recv, size_t bytes, CommOp counted_as) {
  if (bytes > size_t(INT_MAX)) fail("control channel: {} bytes is more than one exchange carries", bytes);
  counters_.call(counted_as);
  counters_.sent(counted_as, uint64_t(bytes) * uint64_t(size_ - 1));
  const auto t0 = SteadyClock::now();
  MPI_Request request;
  MPI_Iallgather(send, int(bytes), MPI_BYTE, recv, int(bytes), MPI_BYTE, comm_, &request);
  complete(request, counted_as, bytes);
  counters_.ran(counted_as, seconds_since(t0));
}

void MpiControlChannel::broadcast(void* buf, size_t bytes, int root) {
  if (bytes > size_t(INT_MAX)) fail("control channel: {} bytes is more than one broadcast carries", bytes);
  if (root < 0 || root >= size_) fail("control channel: broadcast root {} is not a rank of {}", root, size_);
  MPI_Request request;
  MPI_Ibcast(buf, int(bytes), MPI_BYTE, root, comm_, &request);
  complete(request, CommOp::Broadcast, bytes);
}

void MpiControlChannel::barrier() {
  MPI_Request request;
  MPI_Ibarrier(comm_, &request);
  complete(request, CommOp::Barrier, 0);
}

void MpiControlChannel::complete(MPI_Request& request, CommOp op, size_t bytes) {
  ++calls_;
  const auto t0 = SteadyClock::now();
  ProgressBackoff backoff;
  for (int done = 0;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    // Compared in seconds: any timeout, however large, is a valid deadline.
    if (timeout_seconds_ > 0 && seconds_since(t0) > timeout_seconds_)
      abort_job(kCommTimeoutExitCode,
                fmt::format("collective timed out: rank {} control {} #{} ({} bytes) at step {} did not complete "
                            "within {} s (training.comm_timeout); aborting the job",
                            rank_, comm_op_name(op), calls_, bytes, step_ ? step_->load() : 0, timeout_seconds_));
    backoff.pause();
  }
}

}  // namespace zt
