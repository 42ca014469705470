#include "comm/nccl_communicator.hpp"

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "comm/comm_volume.hpp"
#include "comm/mpi_communicator.hpp"
#include "comm/mpi_session.hpp"
#include "comm/op_deadline.hpp"
#include "comm/op_signature.hpp"
#include "comm/progress_backoff.hpp"
#include "core/error.hpp"

namespace zt {
namespace {

using Clock = std::chrono::steady_clock;

void check_cuda(cudaError_t status, const char* call, const char* where) {
  if (status != cudaSuccess) fail("{}: {} ({})", where, cudaGetErrorString(status), call);
}
void check_nccl(ncclResult_t status, const char* call, const char* where) {
  if (status != ncclSuccess) fail("{}: {} ({})", where, ncclGetErrorString(status), call);
}
#define ZT_CUDA_CHECK(call) check_cuda((call), #call, __func__)
#define ZT_NCCL_CHECK(call) check_nccl((call), #call, __func__)

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::F32: return ncclFloat32;
    case DType::BF16: return ncclBfloat16;
    case DType::F16: return ncclFloat16;
  }
  return ncclFloat32;
}
ncclRedOp_t nccl_op(ReduceOp op) { return op == ReduceOp::Sum ? ncclSum : ncclMax; }

const unsigned char* bytes_at(const void* base, size_t elements, DType t) {
  return static_cast<const unsigned char*>(base) + elements * dtype_size(t);
}
unsigned char* bytes_at(void* base, size_t elements, DType t) {
  return static_cast<unsigned char*>(base) + elements * dtype_size(t);
}

// The two events that bracket one op on the communication stream; shared by the Work handle and
// the watchdog, destroyed when both are done with them.
struct OpEvents {
  cudaEvent_t start = nullptr;
  cudaEvent_t done = nullptr;
  OpEvents() {
    ZT_CUDA_CHECK(cudaEventCreate(&start));
    ZT_CUDA_CHECK(cudaEventCreate(&done));
  }
  ~OpEvents() {
    cudaEventDestroy(start);
    cudaEventDestroy(done);
  }
  OpEvents(const OpEvents&) = delete;
  OpEvents& operator=(const OpEvents&) = delete;
  bool completed() const { return reached(done); }
  bool started() const { return reached(start); }

private:
  static bool reached(cudaEvent_t event) {
    cudaError_t status = cudaEventQuery(event);
    if (status == cudaErrorNotReady) return false;
    check_cuda(status, "cudaEventQuery", "NCCL op");
    return true;
  }
};

class NcclWork final : public Work {
public:
  NcclWork(std::shared_ptr<OpEvents> events, cudaStream_t compute)
      : events_(std::move(events)), compute_(compute) {}
  void wait() override { ZT_CUDA_CHECK(cudaStreamWaitEvent(compute_, events_->done, 0)); }
  bool is_completed() override { return events_->completed(); }

private:
  std::shared_ptr<OpEvents> events_;
  cudaStream_t compute_;
};

struct PendingOp {
  OpSignature sig;
  std::shared_ptr<OpEvents> events;
  // When the watchdog first saw the op running on the comm stream: the timeout counts from there,
  // not from the issue, so an op queued behind compute or earlier ops is not taken for a hang
  // (the MPI backend also times an op from its start).
  std::optional<Clock::time_point> started;
};

class NcclCommunicator final : public Communicator {
public:
  explicit NcclCommunicator(const NcclCommOptions& options);
  ~NcclCommunicator() override;

  int rank() const override { return rank_; }
  int world_size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }

  WorkPtr all_reduce(const void* send, void* recv, size_t count, DType dtype, ReduceOp op,
                     bool async) override;
  WorkPtr reduce_scatter(const void* send, void* recv, std::span<const size_t> recv_counts,
                         DType dtype, ReduceOp op, bool async) override;
  WorkPtr all_gather(const void* send, void* recv, std::span<const size_t> counts, DType dtype,
                     bool async) override;
  WorkPtr broadcast(void* buf, size_t count, DType dtype, int root, bool async) override;
  WorkPtr barrier(bool async) override;

  CommStats stats() const override;
  void set_step(int64_t step) override { step_.store(step, std::memory_order_relaxed); }

private:
  // Records the op on the communication stream between its two events and hands it to the watchdog.
  template <typename Enqueue>
  std::shared_ptr<NcclWork> launch(OpSignature sig, uint64_t bytes, Enqueue&& enqueue, bool async);
  void verify_signature(const OpSignature& sig);
  void collect_completed(Clock::time_point now) const;  // stats_mutex_ held
  void watchdog_loop();

  NcclCommOptions options_;
  bool sequence_check_ = false;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1, device_ = 0;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t inputs_ready_ = nullptr;
  float* barrier_scratch_ = nullptr;
  MPI_Comm check_comm_ = MPI_COMM_NULL;
  std::atomic<int64_t> step_{0};
  uint64_t issued_ = 0;

  mutable std::mutex stats_mutex_;
  mutable CommStats stats_;
  mutable std::vector<PendingOp> pending_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::thread watchdog_;
};

NcclCommunicator::NcclCommunicator(const NcclCommOptions& options) : options_(options) {
  ensure_mpi_initialised();
  const WorldInfo world = mpi_world_info();
  rank_ = world.rank;
  size_ = world.world_size;
  local_rank_ = world.local_rank;
  local_size_ = world.local_size;
  sequence_check_ = options.sequence_check.value_or(sequence_check_default());

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
  if (local_rank_ >= devices)
    fail(
        "NCCL communicator: rank {} is local rank {} but this machine shows {} CUDA device(s); "
        "launch at most one rank per GPU",
        rank_, local_rank_, devices);
  device_ = local_rank_;
  ZT_CUDA_CHECK(cudaSetDevice(device_));

  ncclUniqueId id{};
  if (rank_ == 0) ZT_NCCL_CHECK(ncclGetUniqueId(&id));
  MPI_Bcast(&id, int(sizeof(id)), MPI_BYTE, 0, MPI_COMM_WORLD);
  ZT_NCCL_CHECK(ncclCommInitRank(&comm_, size_, id, rank_));

  ZT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  ZT_CUDA_CHECK(cudaEventCreateWithFlags(&inputs_ready_, cudaEventDisableTiming));
  ZT_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&barrier_scratch_), sizeof(float)));
  ZT_CUDA_CHECK(cudaMemset(barrier_scratch_, 0, sizeof(float)));
  if (sequence_check_) MPI_Comm_dup(MPI_COMM_WORLD, &check_comm_);
  watchdog_ = std::thread([this] { watchdog_loop(); });
}

NcclCommunicator::~NcclCommunicator() {
  {
    std::lock_guard lock(stats_mutex_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  watchdog_.join();
  cudaStreamSynchronize(stream_);
  {
    std::lock_guard lock(stats_mutex_);
    pending_.clear();
  }
  ncclCommDestroy(comm_);
  cudaFree(barrier_scratch_);
  cudaEventDestroy(inputs_ready_);
  cudaStreamDestroy(stream_);
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (check_comm_ != MPI_COMM_NULL && !finalised) MPI_Comm_free(&check_comm_);
}

void NcclCommunicator::verify_signature(const OpSignature& sig) {
  std::vector<OpSignature> all(static_cast<size_t>(size_));
  MPI_Request request;
  MPI_Iallgather(&sig, int(sizeof(OpSignature)), MPI_BYTE, all.data(), int(sizeof(OpSignature)),
                 MPI_BYTE, check_comm_, &request);
  // A rank that skipped this collective never joins the exchange: time out like any op.
  const OpDeadline deadline(Clock::now(), options_.timeout_seconds);
  ProgressBackoff backoff;
  for (int done = 0;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) break;
    if (deadline.passed(Clock::now()))
      abort_job(kCommTimeoutExitCode,
                timeout_message(rank_, sig, step_.load(std::memory_order_relaxed),
                                options_.timeout_seconds));
    backoff.pause();
  }
  if (auto mismatch = find_signature_mismatch(all)) {
    const std::string message = mismatch_message(step_.load(std::memory_order_relaxed), *mismatch);
    if (rank_ != 0) std::this_thread::sleep_for(std::chrono::seconds(2));
    abort_job(kCommMismatchExitCode, message);
  }
}

template <typename Enqueue>
std::shared_ptr<NcclWork> NcclCommunicator::launch(OpSignature sig, uint64_t bytes,
                                                   Enqueue&& enqueue, bool async) {
  sig.seq = ++issued_;
  if (sequence_check_ && size_ > 1) verify_signature(sig);
  auto events = std::make_shared<OpEvents>();
  ZT_CUDA_CHECK(cudaEventRecord(inputs_ready_, options_.compute_stream));
  ZT_CUDA_CHECK(cudaStreamWaitEvent(stream_, inputs_ready_, 0));
  ZT_CUDA_CHECK(cudaEventRecord(events->start, stream_));
  enqueue();
  ZT_CUDA_CHECK(cudaEventRecord(events->done, stream_));
  {
    std::lock_guard lock(stats_mutex_);
    stats_.calls[size_t(sig.op)] += 1;
    stats_.bytes_sent[size_t(sig.op)] += bytes;
    pending_.push_back(PendingOp{sig, events, std::nullopt});
  }
  auto work = std::make_shared<NcclWork>(events, options_.compute_stream);
  if (!async) work->wait();
  return work;
}

WorkPtr NcclCommunicator::all_reduce(const void* send, void* recv, size_t count, DType dtype,
                                     ReduceOp op, bool async) {
  if (count > 0 && (!send || !recv)) fail("all_reduce: null buffer for {} elements", count);
  OpSignature sig;
  sig.op = CommOp::AllReduce;
  sig.count = count;
  sig.dtype = dtype;
  sig.reduce = op;
  return launch(
      sig, all_reduce_bytes_sent(count, rank_, size_, dtype),
      [&] {
        if (count > 0)
          ZT_NCCL_CHECK(
              ncclAllReduce(send, recv, count, nccl_type(dtype), nccl_op(op), comm_, stream_));
      },
      async);
}

WorkPtr NcclCommunicator::reduce_scatter(const void* send, void* recv,
                                         std::span<const size_t> recv_counts, DType dtype,
                                         ReduceOp op, bool async) {
  if (int(recv_counts.size()) != size_)
    fail("reduce_scatter: {} piece counts given for a world of {} ranks", recv_counts.size(),
         size_);
  const size_t total = total_count(recv_counts);
  if (total > 0 && !send) fail("reduce_scatter: null send buffer for {} elements", total);
  if (recv_counts[size_t(rank_)] > 0 && !recv)
    fail("reduce_scatter: null recv buffer for {} elements", recv_counts[size_t(rank_)]);
  bool even = true;
  for (size_t c : recv_counts) even = even && c == recv_counts[0];
  const auto offsets = piece_offsets(recv_counts);
  OpSignature sig;
  sig.op = CommOp::ReduceScatter;
  sig.count = total;
  sig.pieces_hash = hash_piece_counts(recv_counts);
  sig.dtype = dtype;
  sig.reduce = op;
  return launch(
      sig, reduce_scatter_bytes_sent(recv_counts, rank_, dtype),
      [&] {
        if (total == 0) return;
        if (even) {
          ZT_NCCL_CHECK(ncclReduceScatter(send, recv, recv_counts[0], nccl_type(dtype), nccl_op(op),
                                          comm_, stream_));
          return;
        }
        // Unequal pieces: one reduce per piece, rooted at its owner, fused into one NCCL launch.
        ZT_NCCL_CHECK(ncclGroupStart());
        for (int p = 0; p < size_; ++p) {
          if (recv_counts[size_t(p)] == 0) continue;
          ZT_NCCL_CHECK(ncclReduce(bytes_at(send, offsets[size_t(p)], dtype), recv,
                                   recv_counts[size_t(p)], nccl_type(dtype), nccl_op(op), p, comm_,
                                   stream_));
        }
        ZT_NCCL_CHECK(ncclGroupEnd());
      },
      async);
}

WorkPtr NcclCommunicator::all_gather(const void* send, void* recv, std::span<const size_t> counts,
                                     DType dtype, bool async) {
  if (int(counts.size()) != size_)
    fail("all_gather: {} piece counts given for a world of {} ranks", counts.size(), size_);
  const size_t total = total_count(counts);
  if (counts[size_t(rank_)] > 0 && !send)
    fail("all_gather: null send buffer for {} elements", counts[size_t(rank_)]);
  if (total > 0 && !recv) fail("all_gather: null recv buffer for {} elements", total);
  bool even = true;
  for (size_t c : counts) even = even && c == counts[0];
  const auto offsets = piece_offsets(counts);
  OpSignature sig;
  sig.op = CommOp::AllGather;
  sig.count = total;
  sig.pieces_hash = hash_piece_counts(counts);
  sig.dtype = dtype;
  return launch(
      sig, all_gather_bytes_sent(counts, rank_, dtype),
      [&] {
        if (total == 0) return;
        if (even) {
          ZT_NCCL_CHECK(ncclAllGather(send, recv, counts[0], nccl_type(dtype), comm_, stream_));
          return;
        }
        // Unequal pieces: every rank broadcasts its piece into place, fused into one NCCL launch.
        ZT_NCCL_CHECK(ncclGroupStart());
        for (int p = 0; p < size_; ++p) {
          if (counts[size_t(p)] == 0) continue;
          void* slot = bytes_at(recv, offsets[size_t(p)], dtype);
          const void* source = p == rank_ ? send : slot;
          ZT_NCCL_CHECK(
              ncclBroadcast(source, slot, counts[size_t(p)], nccl_type(dtype), p, comm_, stream_));
        }
        ZT_NCCL_CHECK(ncclGroupEnd());
      },
      async);
}

WorkPtr NcclCommunicator::broadcast(void* buf, size_t count, DType dtype, int root, bool async) {
  if (root < 0 || root >= size_)
    fail("broadcast: root {} is not a rank of this world of {}", root, size_);
  if (count > 0 && !buf) fail("broadcast: null buffer for {} elements", count);
  OpSignature sig;
  sig.op = CommOp::Broadcast;
  sig.count = count;
  sig.dtype = dtype;
  sig.root = root;
  return launch(
      sig, broadcast_bytes_sent(count, rank_, root, size_, dtype),
      [&] {
        if (count > 0)
          ZT_NCCL_CHECK(ncclBroadcast(buf, buf, count, nccl_type(dtype), root, comm_, stream_));
      },
      async);
}

WorkPtr NcclCommunicator::barrier(bool async) {
  OpSignature sig;
  sig.op = CommOp::Barrier;
  auto work = launch(
      sig, 0,
      [&] {
        ZT_NCCL_CHECK(ncclAllReduce(barrier_scratch_, barrier_scratch_, 1, ncclFloat32, ncclSum,
                                    comm_, stream_));
      },
      async);
  // A blocking barrier is a host-side rendezvous.
  if (!async) ZT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return work;
}

void NcclCommunicator::collect_completed(Clock::time_point now) const {
  std::erase_if(pending_, [&](PendingOp& p) {
    if (!p.events->completed()) {
      if (!p.started && p.events->started()) p.started = now;
      if (p.started && OpDeadline(*p.started, options_.timeout_seconds).passed(now)) {
        ncclCommAbort(comm_);
        abort_job(kCommTimeoutExitCode,
                  timeout_message(rank_, p.sig, step_.load(std::memory_order_relaxed),
                                  options_.timeout_seconds));
      }
      return false;
    }
    float ms = 0;
    if (cudaEventElapsedTime(&ms, p.events->start, p.events->done) == cudaSuccess)
      stats_.seconds[size_t(p.sig.op)] += ms / 1000.0;
    return true;
  });
}

CommStats NcclCommunicator::stats() const {
  std::lock_guard lock(stats_mutex_);
  collect_completed(Clock::now());
  return stats_;
}

void NcclCommunicator::watchdog_loop() {
  // CUDA calls from this thread act on the communicator's device.
  cudaSetDevice(device_);
  std::unique_lock lock(stats_mutex_);
  while (!stopping_) {
    stop_cv_.wait_for(lock, std::chrono::milliseconds(100));
    collect_completed(Clock::now());
  }
}

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(double timeout_seconds) {
  NcclCommOptions options;
  options.timeout_seconds = timeout_seconds;
  return make_nccl_communicator(options);
}

std::unique_ptr<Communicator> make_nccl_communicator(const NcclCommOptions& options) {
  return std::make_unique<NcclCommunicator>(options);
}

}  // namespace zt
