#include "comm/mpi_communicator.hpp"

#include <mpi.h>
#include <pthread.h>
#include <sys/prctl.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/binomial_tree.hpp"
#include "comm/comm_volume.hpp"
#include "comm/communicator_base.hpp"
#include "comm/completion_work.hpp"
#include "comm/mpi_control_channel.hpp"
#include "comm/mpi_session.hpp"
#include "comm/op_deadline.hpp"
#include "comm/op_signature.hpp"
#include "comm/progress_backoff.hpp"
#include "comm/rank_order_reduce.hpp"
#include "core/buffer.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/stop_threads.hpp"

namespace zt {
namespace {

using Clock = std::chrono::steady_clock;

// Messages of 128 KiB (fp32): small enough that completions come often (each one puts the
// poller back to eager polling, which large transfers through shared memory need to stream),
// large enough that per-message overhead does not show (bench/RESULTS.md, Collectives).
constexpr size_t kDefaultChunkElements = 32768;
constexpr int kStagingSlots = 2;  // chunks in flight per piece: receive one while reducing another
constexpr int kTagModulus = 32768;  // MPI guarantees tags up to 32767

MPI_Datatype mpi_type(DType t) { return t == DType::F32 ? MPI_FLOAT : MPI_UINT16_T; }

// Requests that may complete in any order; completed ones become MPI_REQUEST_NULL.
struct RequestSet {
  std::vector<MPI_Request> requests;
  std::vector<int> indices;

  // True when every request has completed; `progressed` is set when any completed in this call.
  bool test(bool& progressed) {
    if (requests.empty()) return true;
    indices.resize(requests.size());
    int completed = 0;
    MPI_Testsome(int(requests.size()), requests.data(), &completed, indices.data(),
                 MPI_STATUSES_IGNORE);
    if (completed == MPI_UNDEFINED) {
      requests.clear();
      return true;
    }
    if (completed > 0) progressed = true;
    return false;
  }
};

struct Op : Collective {
  std::shared_ptr<CompletionWork> work;
};


class MpiCommunicator final : public CommunicatorBase {
public:
  // Over the ranks of `base` (duplicated; collective over it).
  MpiCommunicator(const MpiCommOptions& options, MPI_Comm base);
  ~MpiCommunicator() override;
  ControlChannel& control() override { return *control_; }
  std::unique_ptr<Communicator> split(int color, int key) override;

protected:
  WorkPtr issue(Collective c, bool async) override;

private:
  MpiCommunicator(const MpiCommOptions& options, MPI_Comm base, const WorldInfo& world);
  void worker_loop();
  void run(Op& op);
  void execute(const Op& op);
  void verify_signature(const Op& op, Clock::time_point started);
  void run_reduce_scatter(const Op& op, Clock::time_point started, const void* send, void* recv_own,
                          std::span<const size_t> counts);
  void run_all_gather(const Op& op, Clock::time_point started, const void* send_own, void* recv,
                      std::span<const size_t> counts);
  void run_broadcast(const Op& op, Clock::time_point started, void* buf);
  void run_barrier(const Op& op, Clock::time_point started);
  void run_all_to_all(const Op& op, Clock::time_point started);

  // Polls `step(progressed)` until it returns true, pacing with backoff; aborts on timeout.
  template <typename Step>
  void drive(const Op& op, Clock::time_point started, Step&& step);
  [[noreturn]] void abort_on_timeout(const Op& op);

  void post_sends(RequestSet& set, const Op& op, const void* buf, size_t count, int dest, int tag);
  void post_recvs(RequestSet& set, void* buf, size_t count, DType dtype, int source, int tag);

  MpiCommOptions options_;
  bool sequence_check_ = false;
  size_t chunk_ = 0;
  MPI_Comm comm_ = MPI_COMM_NULL;
  const int rank_, size_;
  std::unique_ptr<MpiControlChannel> control_;

  // Issue queue. busy_ marks that some thread (worker or an inline caller) is running an op.
  std::mutex mutex_;
  std::condition_variable queue_cv_;
  std::deque<Op> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  uint64_t issued_ = 0;
  std::thread worker_;

  // Used only by the thread running the current op.
  Buffer<unsigned char> staging_;
};

MpiCommunicator::MpiCommunicator(const MpiCommOptions& options, MPI_Comm base)
    : MpiCommunicator(options, base, mpi_world_info(base)) {}

MpiCommunicator::MpiCommunicator(const MpiCommOptions& options, MPI_Comm base, const WorldInfo& world)
    : CommunicatorBase(world.rank, world.world_size, world.local_rank, world.local_size),
      options_(options),
      rank_(world.rank),
      size_(world.world_size) {
  int level = 0;
  MPI_Query_thread(&level);
  if (level < MPI_THREAD_SERIALIZED)
    fail(
        "MPI communicator: MPI provides thread level {}, needs MPI_THREAD_SERIALIZED ({}) or "
        "more; initialise MPI through zt::MpiSession",
        level, int(MPI_THREAD_SERIALIZED));
  sequence_check_ = options.sequence_check.value_or(sequence_check_default());
  MPI_Comm_dup(base, &comm_);
  control_ = std::make_unique<MpiControlChannel>(counters(), options.timeout_seconds, step_source(), comm_);
  // Messages carry at most INT_MAX elements (MPI counts are int).
  chunk_ = std::min<size_t>(
      options.chunk_elements > 0 ? options.chunk_elements : kDefaultChunkElements, size_t(1) << 30);
  worker_ = std::thread([this] { worker_loop(); });
}

MpiCommunicator::~MpiCommunicator() {
  stop_threads(mutex_, stopping_, queue_cv_, {&worker_, 1});
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (!finalised) MPI_Comm_free(&comm_);
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key) {
  MPI_Comm group = MPI_COMM_NULL;
  MPI_Comm_split(comm_, color, key, &group);
  auto sub = std::make_unique<MpiCommunicator>(options_, group);
  MPI_Comm_free(&group);
  return sub;
}

WorkPtr MpiCommunicator::issue(Collective c, bool async) {
  auto work = std::make_shared<CompletionWork>();
  Op op;
  static_cast<Collective&>(op) = std::move(c);
  op.work = work;

  std::unique_lock lock(mutex_);
  op.sig.seq = ++issued_;
  if (!async && queue_.empty() && !busy_) {
    // Nothing ahead of it: run on this thread rather than paying a hand-off to the worker.
    busy_ = true;
    lock.unlock();
    run(op);
    lock.lock();
    busy_ = false;
    lock.unlock();
    queue_cv_.notify_all();
    work->wait();  // rethrows the op's error, if any
    return work;
  }
  queue_.push_back(std::move(op));
  lock.unlock();
  queue_cv_.notify_all();
  if (!async) work->wait();
  return work;
}

void MpiCommunicator::worker_loop() {
  pthread_setname_np(pthread_self(), "zt-comm");
  std::unique_lock lock(mutex_);
  for (;;) {
    queue_cv_.wait(lock, [this] {
      return (!queue_.empty() && !busy_) || (stopping_ && queue_.empty() && !busy_);
    });
    if (queue_.empty()) return;  // stopping, nothing left
    Op op = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    run(op);
    lock.lock();
    busy_ = false;
  }
}

// Short sleeps in the poll loop must stay short: the default 50 us timer slack would stretch
// them. Applies to the thread running an op (the caller's for inline ops) and is restored after.
class FineTimerSlack {
public:
  FineTimerSlack() : previous_(prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0)) {
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  }
  ~FineTimerSlack() {
    if (previous_ > 0) prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(previous_), 0, 0, 0);
  }
  FineTimerSlack(const FineTimerSlack&) = delete;
  FineTimerSlack& operator=(const FineTimerSlack&) = delete;

private:
  int previous_;
};

void MpiCommunicator::run(Op& op) {
  FineTimerSlack slack;
  try {
    const auto started = Clock::now();  // queueing behind earlier ops is not time in flight
    execute(op);
    counters().ran(op.sig.op, seconds_since(started));
    op.work->complete();
  } catch (...) {
    op.work->complete(std::current_exception());
  }
}

void MpiCommunicator::execute(const Op& op) {
  const auto started = Clock::now();
  if (sequence_check_ && size_ > 1) verify_signature(op, started);
  const DType dt = op.sig.dtype;
  switch (op.sig.op) {
    case CommOp::AllReduce: {
      auto pieces = even_pieces(op.sig.count, size_);
      void* own = bytes_at(op.recv, piece_offsets(pieces)[size_t(rank_)], dt);
      run_reduce_scatter(op, started, op.send, own, pieces);
      run_all_gather(op, started, own, op.recv, pieces);
      break;
    }
    case CommOp::ReduceScatter: run_reduce_scatter(op, started, op.send, op.recv, op.counts); break;
    case CommOp::AllGather: run_all_gather(op, started, op.send, op.recv, op.counts); break;
    case CommOp::Broadcast: run_broadcast(op, started, op.recv); break;
    case CommOp::Barrier: run_barrier(op, started); break;
    case CommOp::AllToAll: run_all_to_all(op, started); break;
    case CommOp::Count: break;
  }
}

template <typename Step>
void MpiCommunicator::drive(const Op& op, Clock::time_point started, Step&& step) {
  ProgressBackoff backoff;
  const OpDeadline deadline(started, options_.timeout_seconds);
  for (;;) {
    bool progressed = false;
    if (step(progressed)) return;
    if (progressed) {
      backoff.reset();
    } else {
      if (deadline.passed(Clock::now())) abort_on_timeout(op);
      backoff.pause();
    }
  }
}

void MpiCommunicator::abort_on_timeout(const Op& op) {
  abort_job(kCommTimeoutExitCode, timeout_message(rank_, op.sig, step(), options_.timeout_seconds));
}

void MpiCommunicator::verify_signature(const Op& op, Clock::time_point started) {
  std::vector<OpSignature> all(static_cast<size_t>(size_));
  MPI_Request request;
  MPI_Iallgather(&op.sig, int(sizeof(OpSignature)), MPI_BYTE, all.data(), int(sizeof(OpSignature)),
                 MPI_BYTE, comm_, &request);
  drive(op, started, [&](bool&) {
    int done = 0;
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    return done != 0;
  });
  auto mismatch = find_signature_mismatch(all);
  if (!mismatch) return;
  const std::string message = mismatch_message(step(), *mismatch);
  // Every rank sees the same table; rank 0 reports it. The others follow shortly in case rank 0
  // cannot (its abort takes them down first in the normal case).
  if (rank_ != 0) std::this_thread::sleep_for(std::chrono::seconds(2));
  abort_job(kCommMismatchExitCode, message);
}

// Every byte that leaves this rank goes through here (or the broadcast's forwarding), and is counted.
void MpiCommunicator::post_sends(RequestSet& set, const Op& op, const void* buf, size_t count, int dest, int tag) {
  const DType dtype = op.sig.dtype;
  counters().sent(op.sig.op, uint64_t(count) * dtype_size(dtype));
  for (size_t at = 0; at < count; at += chunk_) {
    MPI_Request r;
    MPI_Isend(bytes_at(buf, at, dtype), int(std::min(chunk_, count - at)), mpi_type(dtype), dest,
              tag, comm_, &r);
    set.requests.push_back(r);
  }
}

void MpiCommunicator::post_recvs(RequestSet& set, void* buf, size_t count, DType dtype, int source,
                                 int tag) {
  for (size_t at = 0; at < count; at += chunk_) {
    MPI_Request r;
    MPI_Irecv(bytes_at(buf, at, dtype), int(std::min(chunk_, count - at)), mpi_type(dtype), source,
              tag, comm_, &r);
    set.requests.push_back(r);
  }
}

void MpiCommunicator::run_reduce_scatter(const Op& op, Clock::time_point started, const void* send,
                                         void* recv_own, std::span<const size_t> counts) {
  const DType dt = op.sig.dtype;
  const size_t esize = dtype_size(dt);
  const int tag = int(op.sig.seq % kTagModulus);
  const auto offsets = piece_offsets(counts);
  const size_t own = counts[size_t(rank_)];
  const void* own_input = bytes_at(send, offsets[size_t(rank_)], dt);
  if (size_ == 1) {
    if (own > 0 && own_input != recv_own) std::memmove(recv_own, own_input, own * esize);
    return;
  }

  RequestSet sends;
  for (int p = 0; p < size_; ++p)
    if (p != rank_)
      post_sends(sends, op, bytes_at(send, offsets[size_t(p)], dt), counts[size_t(p)], p, tag);

  // Own piece: contributions of the other ranks arrive chunk by chunk into staging slots; a chunk
  // is reduced in rank order as soon as all of its contributions are in, and its slot reused.
  const size_t chunks = (own + chunk_ - 1) / chunk_;
  const size_t slots = std::min<size_t>(kStagingSlots, chunks);
  const size_t peers = size_t(size_ - 1);
  const size_t slot_bytes = peers * std::min(chunk_, own) * esize;
  if (staging_.size() < slots * slot_bytes)
    staging_ = Buffer<unsigned char>(MemCategory::Buffers, slots * slot_bytes);
  std::vector<RequestSet> slot_recvs(slots);
  auto chunk_len = [&](size_t k) { return std::min(chunk_, own - k * chunk_); };
  auto contribution = [&](size_t k, size_t peer_index) {
    return staging_.data() + (k % slots) * slot_bytes + peer_index * chunk_len(k) * esize;
  };
  auto post_chunk = [&](size_t k) {
    RequestSet& set = slot_recvs[k % slots];
    size_t peer_index = 0;
    for (int q = 0; q < size_; ++q) {
      if (q == rank_) continue;
      MPI_Request r;
      MPI_Irecv(contribution(k, peer_index++), int(chunk_len(k)), mpi_type(dt), q, tag, comm_, &r);
      set.requests.push_back(r);
    }
  };
  size_t posted = 0, reduced = 0;
  while (posted < slots) post_chunk(posted++);

  std::vector<const void*> inputs(static_cast<size_t>(size_));
  bool sends_done = false;
  drive(op, started, [&](bool& progressed) {
    while (reduced < chunks && slot_recvs[reduced % slots].test(progressed)) {
      const size_t k = reduced;
      size_t peer_index = 0;
      for (int q = 0; q < size_; ++q)
        inputs[size_t(q)] =
            q == rank_ ? bytes_at(own_input, k * chunk_, dt) : contribution(k, peer_index++);
      reduce_in_rank_order(inputs, bytes_at(recv_own, k * chunk_, dt), chunk_len(k), dt,
                           op.sig.reduce);
      ++reduced;
      progressed = true;
      if (posted < chunks) post_chunk(posted++);
    }
    if (!sends_done) sends_done = sends.test(progressed);
    return sends_done && reduced == chunks;
  });
}

void MpiCommunicator::run_all_gather(const Op& op, Clock::time_point started, const void* send_own,
                                     void* recv, std::span<const size_t> counts) {
  const DType dt = op.sig.dtype;
  const int tag = int(op.sig.seq % kTagModulus);
  const auto offsets = piece_offsets(counts);
  const size_t own = counts[size_t(rank_)];
  void* own_slot = bytes_at(recv, offsets[size_t(rank_)], dt);
  if (own > 0 && send_own != own_slot) std::memmove(own_slot, send_own, own * dtype_size(dt));
  if (size_ == 1) return;
  RequestSet requests;
  for (int q = 0; q < size_; ++q) {
    if (q == rank_) continue;
    post_recvs(requests, bytes_at(recv, offsets[size_t(q)], dt), counts[size_t(q)], dt, q, tag);
    post_sends(requests, op, own_slot, own, q, tag);
  }
  drive(op, started, [&](bool& progressed) { return requests.test(progressed); });
}

void MpiCommunicator::run_broadcast(const Op& op, Clock::time_point started, void* buf) {
  if (size_ == 1 || op.sig.count == 0) return;
  const DType dt = op.sig.dtype;
  const int tag = int(op.sig.seq % kTagModulus);
  const size_t count = op.sig.count;
  const size_t chunks = (count + chunk_ - 1) / chunk_;
  const BinomialTree tree = binomial_tree(rank_, op.sig.root, size_);

  // Chunk k is forwarded to the children as soon as it has arrived from the parent (pipelining).
  std::vector<MPI_Request> from_parent;
  if (tree.parent >= 0) {
    from_parent.resize(chunks);
    for (size_t k = 0; k < chunks; ++k)
      MPI_Irecv(bytes_at(buf, k * chunk_, dt), int(std::min(chunk_, count - k * chunk_)),
                mpi_type(dt), tree.parent, tag, comm_, &from_parent[k]);
  }
  RequestSet to_children;
  auto forward = [&](size_t k) {
    counters().sent(CommOp::Broadcast, uint64_t(std::min(chunk_, count - k * chunk_)) * dtype_size(dt) *
                                           tree.children.size());
    for (int child : tree.children) {
      MPI_Request r;
      MPI_Isend(bytes_at(buf, k * chunk_, dt), int(std::min(chunk_, count - k * chunk_)),
                mpi_type(dt), child, tag, comm_, &r);
      to_children.requests.push_back(r);
    }
  };
  size_t forwarded = 0;
  if (tree.parent < 0)
    for (; forwarded < chunks; ++forwarded) forward(forwarded);
  bool sends_done = false;
  drive(op, started, [&](bool& progressed) {
    while (forwarded < chunks) {
      int arrived = 0;
      MPI_Test(&from_parent[forwarded], &arrived, MPI_STATUS_IGNORE);
      if (!arrived) break;
      forward(forwarded++);
      progressed = true;
    }
    if (forwarded < chunks) return false;
    if (!sends_done) sends_done = to_children.test(progressed);
    return sends_done;
  });
}

void MpiCommunicator::run_barrier(const Op& op, Clock::time_point started) {
  if (size_ == 1) return;
  MPI_Request request;
  MPI_Ibarrier(comm_, &request);
  drive(op, started, [&](bool&) {
    int done = 0;
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    return done != 0;
  });
}

void MpiCommunicator::run_all_to_all(const Op& op, Clock::time_point started) {
  const DType dt = op.sig.dtype;
  const int tag = int(op.sig.seq % kTagModulus);
  const auto send_offsets = piece_offsets(op.counts), recv_offsets = piece_offsets(op.recv_counts);
  const size_t own = op.counts[size_t(rank_)];
  if (own > 0)
    std::memcpy(bytes_at(op.recv, recv_offsets[size_t(rank_)], dt), bytes_at(op.send, send_offsets[size_t(rank_)], dt),
                own * dtype_size(dt));
  RequestSet requests;
  for (int q = 0; q < size_; ++q) {
    if (q == rank_) continue;
    post_recvs(requests, bytes_at(op.recv, recv_offsets[size_t(q)], dt), op.recv_counts[size_t(q)], dt, q, tag);
    if (op.counts[size_t(q)] > 0)
      post_sends(requests, op, bytes_at(op.send, send_offsets[size_t(q)], dt), op.counts[size_t(q)], q, tag);
  }
  drive(op, started, [&](bool& progressed) { return requests.test(progressed); });
}

}  // namespace

bool sequence_check_default() {
  const char* env = std::getenv("ZT_COMM_CHECK");
  if (env && *env) return std::strcmp(env, "0") != 0;
#ifdef NDEBUG
  return false;
#else
  return true;
#endif
}

std::unique_ptr<Communicator> make_mpi_communicator(double timeout_seconds) {
  return make_mpi_communicator(MpiCommOptions{.timeout_seconds = timeout_seconds});
}

std::unique_ptr<Communicator> make_mpi_communicator(const MpiCommOptions& options) {
  ensure_mpi_initialised();
  return std::make_unique<MpiCommunicator>(options, MPI_COMM_WORLD);
}

}  // namespace zt
