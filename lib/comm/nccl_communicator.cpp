#include "comm/nccl_communicator.hpp"

#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "comm/comm_volume.hpp"
#include "comm/comm_counters.hpp"
#include "comm/communicator_base.hpp"
#include "comm/control_channel.hpp"
#include "comm/mpi_communicator.hpp"
#include "comm/mpi_control_channel.hpp"
#include "comm/mpi_session.hpp"
#include "comm/op_deadline.hpp"
#include "comm/op_signature.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/stop_threads.hpp"

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

bool equal_pieces(const std::vector<size_t>& counts) {
  return std::all_of(counts.begin(), counts.end(), [&](size_t n) { return n == counts[0]; });
}

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::F32: return ncclFloat32;
    case DType::BF16: return ncclBfloat16;
    case DType::F16: return ncclFloat16;
  }
  return ncclFloat32;
}
ncclRedOp_t nccl_op(ReduceOp op) { return op == ReduceOp::Sum ? ncclSum : ncclMax; }

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
  explicit NcclWork(std::shared_ptr<OpEvents> events) : events_(std::move(events)) {}
  void wait() override { ZT_CUDA_CHECK(cudaEventSynchronize(events_->done)); }
  void sync(Stream s) override {
    ZT_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(s.handle), events_->done, 0));
  }
  bool is_completed() override { return events_->completed(); }

private:
  std::shared_ptr<OpEvents> events_;
};

struct PendingOp {
  OpSignature sig;
  std::shared_ptr<OpEvents> events;
  // When the watchdog first saw the op running on the comm stream: the timeout counts from there,
  // not from the issue, so an op queued behind compute or earlier ops is not taken for a hang
  // (the MPI backend also times an op from its start).
  std::optional<Clock::time_point> started;
};

class NcclCommunicator final : public CommunicatorBase {
public:
  NcclCommunicator(const NcclCommOptions& options, const NcclHostSide& host);
  ~NcclCommunicator() override;
  ControlChannel& control() override { return *control_; }
  CommStats stats() const override;
  // A communicator of its own over the group's ranks (a new NCCL communicator, on this device).
  std::unique_ptr<Communicator> split(int color, int key) override;

protected:
  WorkPtr issue(Collective c, bool async) override;

private:
  // Records the op on the communication stream between its two events and hands it to the watchdog.
  template <typename Enqueue>
  WorkPtr launch(OpSignature sig, uint64_t bytes, Enqueue&& enqueue, bool async);
  // An op on per-rank pieces: whole() (NCCL's own collective) when the pieces are equal, otherwise
  // piece(p, element offset) for each non-empty piece, fused into one NCCL launch.
  template <typename Whole, typename Piece>
  WorkPtr launch_pieces(const Collective& c, uint64_t bytes, Whole&& whole, Piece&& piece, bool async);
  // Bytes NCCL's ring algorithms send from this rank for the op (the per-piece broadcasts and
  // reduces of uneven pieces included).
  uint64_t bytes_sent(const Collective& c) const;
  void verify_signature(const OpSignature& sig);
  void check_distinct_gpus();
  void collect_completed(Clock::time_point now) const;  // pending_mutex_ held
  void check_async_error() const;                        // pending_mutex_ held
  void watchdog_loop();

  NcclCommOptions options_;
  NcclHostSide host_;
  bool sequence_check_ = false;
  const int rank_, size_;
  int device_ = 0;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t inputs_ready_ = nullptr;
  float* barrier_scratch_ = nullptr;
  std::unique_ptr<ControlChannel> control_;
  CommCounters setup_counters_;             // the set-up channel's traffic is not the job's
  std::unique_ptr<ControlChannel> setup_;   // the NCCL id, the GPU check, the sequence check
  uint64_t issued_ = 0;

  mutable std::mutex pending_mutex_;
  mutable std::vector<PendingOp> pending_;
  OpSignature last_issued_;  // under pending_mutex_
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::thread watchdog_;
};

NcclCommunicator::NcclCommunicator(const NcclCommOptions& options, const NcclHostSide& host)
    : CommunicatorBase(host.world.rank, host.world.world_size, host.world.local_rank, host.world.local_size),
      options_(options),
      host_(host),
      rank_(host.world.rank),
      size_(host.world.world_size) {
  control_ = host.channel(counters(), step_source());
  setup_ = host.channel(setup_counters_, step_source());
  sequence_check_ = options.sequence_check.value_or(sequence_check_default());

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) {
    cudaGetLastError();
    devices = 0;
  }
  if (devices == 0) fail("NCCL communicator: rank {} sees no CUDA device", rank_);
  // A launcher that shows each rank its own GPU shows it as device 0.
  device_ = host.world.local_rank % devices;
  ZT_CUDA_CHECK(cudaSetDevice(device_));
  check_distinct_gpus();

  ncclUniqueId id{};
  if (rank_ == 0) ZT_NCCL_CHECK(ncclGetUniqueId(&id));
  setup_->broadcast(&id, sizeof(id), 0);
  ZT_NCCL_CHECK(ncclCommInitRank(&comm_, size_, id, rank_));

  ZT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  ZT_CUDA_CHECK(cudaEventCreateWithFlags(&inputs_ready_, cudaEventDisableTiming));
  ZT_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&barrier_scratch_), sizeof(float)));
  ZT_CUDA_CHECK(cudaMemset(barrier_scratch_, 0, sizeof(float)));
  watchdog_ = std::thread([this] { watchdog_loop(); });
}

std::unique_ptr<Communicator> NcclCommunicator::split(int color, int key) {
  if (!host_.split) fail("NCCL communicator: its host side cannot split into groups");
  return std::make_unique<NcclCommunicator>(options_, host_.split(color, key));
}

NcclCommunicator::~NcclCommunicator() {
  stop_threads(pending_mutex_, stopping_, stop_cv_, {&watchdog_, 1});
  cudaStreamSynchronize(stream_);
  {
    std::lock_guard lock(pending_mutex_);
    pending_.clear();
  }
  ncclCommDestroy(comm_);
  cudaFree(barrier_scratch_);
  cudaEventDestroy(inputs_ready_);
  cudaStreamDestroy(stream_);
}

// Two ranks on one GPU would fail inside NCCL (or share it badly): every rank compares the UUIDs
// and all refuse together, naming the ranks.
void NcclCommunicator::check_distinct_gpus() {
  cudaDeviceProp prop{};
  ZT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
  const auto uuids = setup_->gather_all(prop.uuid);
  std::map<std::string, int> owner;
  for (int r = 0; r < size_; ++r) {
    const std::string key(uuids[size_t(r)].bytes, sizeof(prop.uuid.bytes));
    auto [it, fresh] = owner.emplace(key, r);
    if (!fresh)
      fail("NCCL communicator: ranks {} and {} compute on the same GPU (each takes visible device local rank "
           "modulo the visible devices): launch one rank per GPU, or show each rank its own GPU "
           "(CUDA_VISIBLE_DEVICES, the launcher's GPU binding), or set training.device \"cpu\"",
           it->second, r);
  }
}

void NcclCommunicator::verify_signature(const OpSignature& sig) {
  // A rank that skipped this collective never joins the exchange: the channel times out like any op.
  const auto all = setup_->gather_all(sig);
  if (auto mismatch = find_signature_mismatch(all)) {
    const std::string message = mismatch_message(step(), *mismatch);
    if (rank_ != 0) std::this_thread::sleep_for(std::chrono::seconds(2));
    abort_job(kCommMismatchExitCode, message);
  }
}

template <typename Enqueue>
WorkPtr NcclCommunicator::launch(OpSignature sig, uint64_t bytes, Enqueue&& enqueue, bool async) {
  sig.seq = ++issued_;
  if (sequence_check_ && size_ > 1) verify_signature(sig);
  auto events = std::make_shared<OpEvents>();
  ZT_CUDA_CHECK(cudaEventRecord(inputs_ready_, options_.compute_stream));
  ZT_CUDA_CHECK(cudaStreamWaitEvent(stream_, inputs_ready_, 0));
  ZT_CUDA_CHECK(cudaEventRecord(events->start, stream_));
  enqueue();
  ZT_CUDA_CHECK(cudaEventRecord(events->done, stream_));
  counters().sent(sig.op, bytes);
  {
    std::lock_guard lock(pending_mutex_);
    pending_.push_back(PendingOp{sig, events, std::nullopt});
    last_issued_ = sig;
  }
  auto work = std::make_shared<NcclWork>(events);
  // A blocking op orders the compute stream after it, without blocking the host, except barrier.
  if (!async) work->sync(Stream{options_.compute_stream});
  return work;
}

uint64_t NcclCommunicator::bytes_sent(const Collective& c) const {
  const size_t esz = dtype_size(c.sig.dtype);
  const uint64_t N = uint64_t(size_);
  switch (c.sig.op) {
    case CommOp::AllReduce: return all_reduce_bytes_sent(c.sig.count, rank_, size_, c.sig.dtype);
    case CommOp::Broadcast: {
      // A ring from the root: every rank but the last forwards the whole buffer once.
      const bool last = (c.sig.root + size_ - 1) % size_ == rank_;
      return size_ == 1 || last ? 0 : uint64_t(c.sig.count) * esz;
    }
    case CommOp::ReduceScatter:
      // Even pieces: the ring sends (N-1) pieces. Uneven: one ring reduce per piece towards its
      // owner, where every rank but the owner sends the piece once. Both: total - own.
      return reduce_scatter_bytes_sent(c.counts, rank_, c.sig.dtype);
    case CommOp::AllGather: {
      if (equal_pieces(c.counts)) return all_gather_bytes_sent(c.counts, rank_, c.sig.dtype);
      // One ring broadcast per piece from its owner: this rank forwards every piece except the one
      // whose ring ends here (the piece of the next rank in ring order, taken as rank order).
      uint64_t total = 0;
      for (int p = 0; p < size_; ++p)
        if ((p + size_ - 1) % size_ != rank_) total += uint64_t(c.counts[size_t(p)]) * esz;
      return N == 1 ? 0 : total;
    }
    case CommOp::AllToAll: return all_to_all_bytes_sent(c.counts, rank_, c.sig.dtype);
    default: return 0;
  }
}

template <typename Whole, typename Piece>
WorkPtr NcclCommunicator::launch_pieces(const Collective& c, uint64_t bytes, Whole&& whole, Piece&& piece,
                                        bool async) {
  const bool even = equal_pieces(c.counts);
  const auto offsets = piece_offsets(c.counts);
  return launch(
      c.sig, bytes,
      [&] {
        if (c.sig.count == 0) return;
        if (even) {
          whole();
          return;
        }
        ZT_NCCL_CHECK(ncclGroupStart());
        for (int p = 0; p < size_; ++p)
          if (c.counts[size_t(p)] > 0) piece(p, offsets[size_t(p)]);
        ZT_NCCL_CHECK(ncclGroupEnd());
      },
      async);
}

WorkPtr NcclCommunicator::issue(Collective c, bool async) {
  const DType dtype = c.sig.dtype;
  const uint64_t bytes = bytes_sent(c);
  switch (c.sig.op) {
    case CommOp::AllReduce:
      return launch(
          c.sig, bytes,
          [&] {
            if (c.sig.count > 0)
              ZT_NCCL_CHECK(ncclAllReduce(c.send, c.recv, c.sig.count, nccl_type(dtype), nccl_op(c.sig.reduce), comm_,
                                          stream_));
          },
          async);
    case CommOp::ReduceScatter:
      return launch_pieces(
          c, bytes,
          [&] {
            ZT_NCCL_CHECK(ncclReduceScatter(c.send, c.recv, c.counts[0], nccl_type(dtype), nccl_op(c.sig.reduce),
                                            comm_, stream_));
          },
          // Unequal pieces: one reduce per piece, rooted at its owner.
          [&](int p, size_t offset) {
            ZT_NCCL_CHECK(ncclReduce(bytes_at(c.send, offset, dtype), c.recv, c.counts[size_t(p)], nccl_type(dtype),
                                     nccl_op(c.sig.reduce), p, comm_, stream_));
          },
          async);
    case CommOp::AllGather:
      return launch_pieces(
          c, bytes,
          [&] { ZT_NCCL_CHECK(ncclAllGather(c.send, c.recv, c.counts[0], nccl_type(dtype), comm_, stream_)); },
          // Unequal pieces: every rank broadcasts its piece into place.
          [&](int p, size_t offset) {
            void* slot = bytes_at(c.recv, offset, dtype);
            const void* source = p == rank_ ? c.send : slot;
            ZT_NCCL_CHECK(ncclBroadcast(source, slot, c.counts[size_t(p)], nccl_type(dtype), p, comm_, stream_));
          },
          async);
    case CommOp::Broadcast:
      return launch(
          c.sig, bytes,
          [&] {
            if (c.sig.count > 0)
              ZT_NCCL_CHECK(ncclBroadcast(c.recv, c.recv, c.sig.count, nccl_type(dtype), c.sig.root, comm_, stream_));
          },
          async);
    case CommOp::AllToAll:
      // Point to point in one group: every non-empty piece a send or a receive, the own one a copy.
      return launch(
          c.sig, bytes,
          [&] {
            const auto send_at = piece_offsets(c.counts), recv_at = piece_offsets(c.recv_counts);
            const size_t own = c.counts[size_t(rank_)];
            if (own > 0)
              ZT_CUDA_CHECK(cudaMemcpyAsync(bytes_at(c.recv, recv_at[size_t(rank_)], dtype),
                                            bytes_at(c.send, send_at[size_t(rank_)], dtype), own * dtype_size(dtype),
                                            cudaMemcpyDeviceToDevice, stream_));
            ZT_NCCL_CHECK(ncclGroupStart());
            for (int p = 0; p < size_; ++p) {
              if (p == rank_) continue;
              if (c.counts[size_t(p)] > 0)
                ZT_NCCL_CHECK(ncclSend(bytes_at(c.send, send_at[size_t(p)], dtype), c.counts[size_t(p)],
                                       nccl_type(dtype), p, comm_, stream_));
              if (c.recv_counts[size_t(p)] > 0)
                ZT_NCCL_CHECK(ncclRecv(bytes_at(c.recv, recv_at[size_t(p)], dtype), c.recv_counts[size_t(p)],
                                       nccl_type(dtype), p, comm_, stream_));
            }
            ZT_NCCL_CHECK(ncclGroupEnd());
          },
          async);
    default: {
      auto work = launch(
          c.sig, 0,
          [&] {
            ZT_NCCL_CHECK(ncclAllReduce(barrier_scratch_, barrier_scratch_, 1, ncclFloat32, ncclSum, comm_, stream_));
          },
          async);
      if (!async) work->wait();  // a blocking barrier is a host-side rendezvous
      return work;
    }
  }
}

void NcclCommunicator::collect_completed(Clock::time_point now) const {
  std::erase_if(pending_, [&](PendingOp& p) {
    if (!p.events->completed()) {
      if (!p.started && p.events->started()) p.started = now;
      if (p.started && OpDeadline(*p.started, options_.timeout_seconds).passed(now)) {
        ncclCommAbort(comm_);
        abort_job(kCommTimeoutExitCode, timeout_message(rank_, p.sig, step(), options_.timeout_seconds));
      }
      return false;
    }
    float ms = 0;
    if (cudaEventElapsedTime(&ms, p.events->start, p.events->done) == cudaSuccess)
      const_cast<NcclCommunicator*>(this)->counters().ran(p.sig.op, ms / 1000.0);
    return true;
  });
}

void NcclCommunicator::check_async_error() const {
  ncclResult_t error = ncclSuccess;
  if (ncclCommGetAsyncError(comm_, &error) != ncclSuccess || error == ncclSuccess || error == ncclInProgress) return;
  // The oldest op not completed is the one NCCL was running; none pending: the last one issued.
  const OpSignature& op = pending_.empty() ? last_issued_ : pending_.front().sig;
  const std::string during = op.seq == 0 ? "before its first collective" : describe(op);
  const char* detail = ncclGetLastError(comm_);
  const std::string message = fmt::format("NCCL error: rank {} {} at step {}: {}{}{}; aborting the job", rank_, during,
                                          step(), ncclGetErrorString(error), detail && *detail ? ": " : "",
                                          detail ? detail : "");
  ncclCommAbort(comm_);
  abort_job(kCommErrorExitCode, message);
}

CommStats NcclCommunicator::stats() const {
  {
    std::lock_guard lock(pending_mutex_);
    collect_completed(Clock::now());
  }
  return CommunicatorBase::stats();
}

void NcclCommunicator::watchdog_loop() {
  // CUDA calls from this thread act on the communicator's device.
  cudaSetDevice(device_);
  std::unique_lock lock(pending_mutex_);
  while (!stopping_) {
    stop_cv_.wait_for(lock, std::chrono::milliseconds(100));
    collect_completed(Clock::now());
    check_async_error();
  }
}

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(double timeout_seconds) {
  return make_nccl_communicator(NcclCommOptions{.timeout_seconds = timeout_seconds});
}

namespace {

// Host channels over the ranks of `comm` (owned by the host side, freed with its last copy).
NcclHostSide mpi_host_side(std::shared_ptr<MPI_Comm> comm, WorldInfo world, double timeout) {
  NcclHostSide host;
  host.world = world;
  host.channel = [comm, timeout](CommCounters& counters, const std::atomic<int64_t>* step) {
    return std::unique_ptr<ControlChannel>(std::make_unique<MpiControlChannel>(counters, timeout, step, *comm));
  };
  host.split = [comm, world, timeout](int color, int key) {
    auto group = std::shared_ptr<MPI_Comm>(new MPI_Comm(MPI_COMM_NULL), [](MPI_Comm* c) {
      int finalised = 0;
      MPI_Finalized(&finalised);
      if (!finalised && *c != MPI_COMM_NULL) MPI_Comm_free(c);
      delete c;
    });
    MPI_Comm_split(*comm, color, key, group.get());
    WorldInfo sub = mpi_world_info(*group);
    sub.local_rank = world.local_rank;
    sub.local_size = world.local_size;
    return mpi_host_side(group, sub, timeout);
  };
  return host;
}

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(const NcclCommOptions& options) {
  ensure_mpi_initialised();
  return make_nccl_communicator(
      options, mpi_host_side(std::make_shared<MPI_Comm>(MPI_COMM_WORLD), mpi_world_info(), options.timeout_seconds));
}

std::unique_ptr<Communicator> make_nccl_communicator(const NcclCommOptions& options, NcclHostSide host) {
  return std::make_unique<NcclCommunicator>(options, host);
}

}  // namespace zt
