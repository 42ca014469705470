// The NCCL communicator (lib/comm/nccl_communicator.cpp) on the emulated GPU and NCCL
// (tests/kernels_cuda/emulated_device.hpp, nccl_stub.cpp): ranks are threads of this process, each
// on its own emulated device, their host channels in-process. Every op, dtype and placement, the
// uneven grouped paths, empty pieces; the streams' order (inputs uploaded and results read on the
// compute stream, the collectives on the communicator's); the device of a local rank; two ranks
// on one GPU refused; a rank that skips a collective brought down by the watchdog, and a rank whose
// collective fails with NCCL's asynchronous error at once, naming both; training steps
// at stages 1-3 over it, where the host waits for the device once a step (Work::sync, not wait).
// Run with ZT_EMU_DEVICES=4 (CMake sets it).
#include <catch2/catch.hpp>
#include <nccl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../comm/comm_test_support.hpp"
#include "comm/comm_counters.hpp"
#include "comm/comm_volume.hpp"
#include "comm/control_channel.hpp"
#include "comm/mpi_session.hpp"
#include "comm/nccl_communicator.hpp"
#include "core/error.hpp"
#include "emulated_device.hpp"
#include "kernels/cuda/cuda_device.hpp"
#include "kernels/cuda/cuda_model_ops.hpp"
#include "kernels/cuda/vector_ops_table.hpp"
#include "step_config.hpp"
#include "train/trainer.hpp"

using namespace zt;
using namespace zt::test;

namespace {

// Every rank deposits bytes; each gets all ranks' deposits in rank order.
class Board {
public:
  explicit Board(int n) : n_(n), slots_(size_t(n)) {}
  std::vector<std::vector<char>> exchange(int rank, std::vector<char> mine) {
    std::unique_lock lock(mutex_);
    const uint64_t generation = generation_;
    slots_[size_t(rank)] = std::move(mine);
    if (++arrived_ == n_) {
      last_ = slots_;
      arrived_ = 0;
      ++generation_;
      changed_.notify_all();
      return last_;
    }
    if (!changed_.wait_for(lock, std::chrono::seconds(60), [&] { return generation_ != generation; }))
      abort_job(kCommTimeoutExitCode, "test host channel: a rank never came");
    return last_;  // not overwritten before this rank takes part in the next exchange
  }

private:
  int n_;
  std::vector<std::vector<char>> slots_, last_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  std::mutex mutex_;
  std::condition_variable changed_;
};

// A host channel between rank threads, counting as MpiControlChannel does.
class ThreadChannel final : public ControlChannel {
public:
  ThreadChannel(std::shared_ptr<Board> board, int rank, int size, CommCounters& counters)
      : board_(std::move(board)), rank_(rank), size_(size), counters_(counters) {}
  int rank() const override { return rank_; }
  int world_size() const override { return size_; }
  void all_gather(const void* send, void* recv, size_t bytes) override { gather(send, recv, bytes, CommOp::AllGather); }
  void broadcast(void* buf, size_t bytes, int root) override {
    const auto all = board_->exchange(rank_, bytes_of(buf, bytes));
    std::memcpy(buf, all[size_t(root)].data(), bytes);
  }
  void barrier() override { board_->exchange(rank_, {}); }

protected:
  void gather_for_reduce(const void* send, void* recv, size_t bytes) override {
    gather(send, recv, bytes, CommOp::AllReduce);
  }

private:
  static std::vector<char> bytes_of(const void* p, size_t n) {
    return std::vector<char>(static_cast<const char*>(p), static_cast<const char*>(p) + n);
  }
  void gather(const void* send, void* recv, size_t bytes, CommOp counted_as) {
    counters_.call(counted_as);
    counters_.sent(counted_as, uint64_t(bytes) * uint64_t(size_ - 1));
    const auto all = board_->exchange(rank_, bytes_of(send, bytes));
    for (int r = 0; r < size_; ++r)
      std::memcpy(static_cast<char*>(recv) + size_t(r) * bytes, all[size_t(r)].data(), bytes);
  }
  std::shared_ptr<Board> board_;
  int rank_, size_;
  CommCounters& counters_;
};

// What a rank thread found wrong (Catch's assertions are for the main thread only).
struct Failures {
  std::vector<std::string> list;
  void expect(bool ok, const std::string& what) {
    if (!ok) list.push_back(what);
  }
};

// The boards of every rank thread's host channels, by name: the k-th channel the ranks of one
// scope make shares the board "scope/k".
struct Boards {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<Board>> named;
  std::shared_ptr<Board> get(const std::string& name, int n) {
    std::lock_guard lock(mutex);
    auto& b = named[name];
    if (!b) b = std::make_shared<Board>(n);
    return b;
  }
};

// Rank `rank` of the `size` ranks of `scope`, which split into the scopes of their colors.
NcclHostSide thread_host_side(std::shared_ptr<Boards> boards, std::string scope, int rank, int size, int local_rank,
                              int local_size) {
  auto made = std::make_shared<size_t>(0);
  NcclHostSide host{WorldInfo{rank, size, local_rank, local_size}, {}, {}};
  host.channel = [=](CommCounters& c, const std::atomic<int64_t>*) {
    return std::unique_ptr<ControlChannel>(
        std::make_unique<ThreadChannel>(boards->get(scope + "/" + std::to_string((*made)++), size), rank, size, c));
  };
  host.split = [=](int color, int key) {
    CommCounters uncounted;
    ThreadChannel channel(boards->get(scope + "/" + std::to_string((*made)++), size), rank, size, uncounted);
    const std::array<int, 2> mine{color, key};
    std::vector<std::array<int, 2>> all(static_cast<size_t>(size));
    channel.all_gather(mine.data(), all.data(), sizeof mine);
    std::vector<std::pair<int, int>> members;  // (key, rank) of the ranks of this color
    for (int r = 0; r < size; ++r)
      if (all[size_t(r)][0] == color) members.emplace_back(all[size_t(r)][1], r);
    std::sort(members.begin(), members.end());
    const int sub_rank = int(std::find(members.begin(), members.end(), std::pair{key, rank}) - members.begin());
    return thread_host_side(boards, scope + "/" + std::to_string(*made) + ":" + std::to_string(color), sub_rank,
                            int(members.size()), local_rank, local_size);
  };
  return host;
}

// n ranks as threads: rank r runs body(r, its host side, its failures) on the devices show(r)
// shows it (empty: all); then every rank's failures and exceptions are reported.
void run_ranks(int n, const std::function<std::vector<int>(int)>& show,
               const std::function<void(int, NcclHostSide, Failures&)>& body) {
  auto boards = std::make_shared<Boards>();
  std::vector<std::thread> threads;
  std::vector<Failures> failures(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      emu::show_devices(show(r));
      NcclHostSide host = thread_host_side(boards, "world", r, n, r, n);
      try {
        body(r, host, failures[size_t(r)]);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: %s\n", r, e.what());  // now: the other ranks may wait for it
        failures[size_t(r)].list.push_back(std::string("exception: ") + e.what());
      }
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r)
    for (const std::string& f : failures[size_t(r)].list) FAIL_CHECK("rank " << r << ": " << f);
}

// A CUDA call that must succeed, in a rank thread.
void cuda_ok(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

std::vector<int> all_devices(int) { return {}; }

struct Rank {
  cudaStream_t compute = nullptr;
  std::unique_ptr<Communicator> comm;
  // On the GPU the communicator takes (local rank modulo the visible devices), as the backend does.
  Rank(const NcclHostSide& host, double timeout = kTestCommTimeout) {
    int devices = 0;
    cuda_ok(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
    cuda_ok(cudaSetDevice(host.world.local_rank % devices), "cudaSetDevice");
    cuda_ok(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    NcclCommOptions o;
    o.timeout_seconds = timeout;
    o.compute_stream = compute;
    comm = make_nccl_communicator(o, host);
  }
  ~Rank() {
    comm.reset();
    cudaStreamDestroy(compute);
  }
  // Device buffers uploaded and read back on the compute stream, as the trainer's are.
  void* upload(const Bytes& b, size_t bytes) {
    void* p = nullptr;
    cuda_ok(cudaMalloc(&p, std::max<size_t>(bytes, 1)), "cudaMalloc");
    if (!b.empty()) cuda_ok(cudaMemcpyAsync(p, b.data(), b.size(), cudaMemcpyHostToDevice, compute), "upload");
    return p;
  }
  Bytes download(const void* p, size_t bytes) {
    Bytes b(bytes);
    if (bytes) cuda_ok(cudaMemcpyAsync(b.data(), p, bytes, cudaMemcpyDeviceToHost, compute), "download");
    return b;
  }
};

// NCCL's ring sums in its own order.
bool near_sum(const Bytes& got, const Bytes& want, DType dt, int world, size_t first_index) {
  return sum_difference(got, want, dt, world, first_index).empty();
}

constexpr DType kDTypes[] = {DType::F32, DType::BF16, DType::F16};

}  // namespace

TEST_CASE("emulated NCCL: every op, dtype and placement, even, uneven and empty pieces", "[nccl][emulated]") {
  const int n = 3;
  run_ranks(n, all_devices, [&](int me, NcclHostSide host, Failures& f) {
    Rank rank(host);
    Communicator& c = *rank.comm;
    std::vector<std::vector<size_t>> cuts = {{0, 0, 0}, {1, 1, 1}, {257, 257, 257}, {100, 0, 174}, {0, 5, 0}};
    for (DType dt : kDTypes) {
      const size_t es = dtype_size(dt);
      for (bool in_place : {false, true}) {
        const std::string how = std::string(dtype_name(dt)) + (in_place ? " in place" : " out of place");
        for (size_t count : {size_t(0), size_t(1), size_t(1001)}) {
          const Bytes input = make_input(me, 0, count, dt);
          void* send = rank.upload(input, count * es);
          void* recv = in_place ? send : rank.upload({}, count * es);
          c.all_reduce(send, recv, count, dt, ReduceOp::Sum);
          const std::string what = how + " all_reduce of " + std::to_string(count);
          f.expect(
              near_sum(rank.download(recv, count * es), expected_reduction(n, 0, count, dt, ReduceOp::Sum), dt, n, 0),
              what + " (sum)");
          if (count)
            cuda_ok(cudaMemcpyAsync(send, input.data(), input.size(), cudaMemcpyHostToDevice, rank.compute), "upload");
          c.all_reduce(send, send, count, dt, ReduceOp::Max);
          f.expect(rank.download(send, count * es) == expected_reduction(n, 0, count, dt, ReduceOp::Max),
                   what + " (max)");
          cuda_ok(cudaFree(send), "cudaFree");
          if (!in_place) cuda_ok(cudaFree(recv), "cudaFree");
        }
        for (const auto& pieces : cuts) {
          const size_t total = total_count(pieces), own = pieces[size_t(me)];
          const size_t offset = piece_offsets(pieces)[size_t(me)];
          const std::string what = how + " pieces " + std::to_string(pieces[0]) + "," + std::to_string(pieces[1]) +
                                   "," + std::to_string(pieces[2]);
          void* full = rank.upload(make_input(me, 0, total, dt), total * es);
          void* piece = rank.upload({}, own * es);
          void* own_out = in_place ? static_cast<char*>(full) + offset * es : piece;
          c.reduce_scatter(full, own_out, pieces, dt, ReduceOp::Sum);
          f.expect(near_sum(rank.download(own_out, own * es), expected_reduction(n, offset, own, dt, ReduceOp::Sum), dt,
                            n, offset),
                   what + " reduce_scatter");
          Bytes expected;
          for (int q = 0; q < n; ++q) {
            const Bytes b = make_input(q, piece_offsets(pieces)[size_t(q)], pieces[size_t(q)], dt);
            expected.insert(expected.end(), b.begin(), b.end());
          }
          void* gathered = rank.upload({}, total * es);
          const Bytes mine = make_input(me, offset, own, dt);
          void* own_in = in_place ? static_cast<char*>(gathered) + offset * es : piece;
          if (own)
            cuda_ok(cudaMemcpyAsync(own_in, mine.data(), mine.size(), cudaMemcpyHostToDevice, rank.compute), "upload");
          c.all_gather(own_in, gathered, pieces, dt);
          f.expect(rank.download(gathered, total * es) == expected, what + " all_gather");
          for (void* p : {full, piece, gathered}) cuda_ok(cudaFree(p), "cudaFree");
        }
      }
      for (int root = 0; root < n; ++root) {
        void* buf = rank.upload(make_input(me, 0, 3001, dt), 3001 * es);
        c.broadcast(buf, 3001, dt, root);
        f.expect(rank.download(buf, 3001 * es) == make_input(root, 0, 3001, dt),
                 std::string(dtype_name(dt)) + " broadcast from " + std::to_string(root));
        cuda_ok(cudaFree(buf), "cudaFree");
      }
    }
    c.barrier();
  });
}

TEST_CASE("emulated NCCL: all_to_all with uneven and empty pieces, as ncclSend and ncclRecv in one group",
          "[nccl][emulated]") {
  const int n = 3;
  // Rank `from` sends rank `to` (from + 2·to) % 4 · 250 elements (none from 0 to 0, from 2 to 1, ...).
  auto count = [](int from, int to) { return size_t((from + 2 * to) % 4) * 250; };
  run_ranks(n, all_devices, [&](int me, NcclHostSide host, Failures& f) {
    Rank rank(host);
    Communicator& c = *rank.comm;
    for (DType dt : kDTypes) {
      const size_t es = dtype_size(dt);
      std::vector<size_t> sends(static_cast<size_t>(n)), recvs(static_cast<size_t>(n));
      Bytes input, expected;
      for (int q = 0; q < n; ++q) {
        sends[size_t(q)] = count(me, q);
        recvs[size_t(q)] = count(q, me);
        const Bytes out = make_input(me, 1000 * size_t(q), sends[size_t(q)], dt);
        const Bytes in = make_input(q, 1000 * size_t(me), recvs[size_t(q)], dt);
        input.insert(input.end(), out.begin(), out.end());
        expected.insert(expected.end(), in.begin(), in.end());
      }
      void* send = rank.upload(input, input.size());
      void* recv = rank.upload({}, expected.size());
      const CommStats before = c.stats();
      c.all_to_all(send, sends, recv, recvs, dt);
      f.expect(rank.download(recv, expected.size()) == expected, std::string(dtype_name(dt)) + " all_to_all");
      f.expect((c.stats() - before).bytes(CommOp::AllToAll) == (input.size() - sends[size_t(me)] * es),
               std::string(dtype_name(dt)) + " all_to_all's bytes: every piece but the own one");
      for (void* p : {send, recv}) cuda_ok(cudaFree(p), "cudaFree");
    }
  });
}

TEST_CASE("emulated NCCL: split groups reduce among their own ranks, on the parent's device", "[nccl][emulated]") {
  const int n = 4;
  run_ranks(n, all_devices, [&](int me, NcclHostSide host, Failures& f) {
    Rank rank(host);
    std::unique_ptr<Communicator> group = rank.comm->split(me % 2, me);
    f.expect(group->world_size() == 2 && group->rank() == me / 2, "the group's size and rank");
    const float mine = float(me + 1);
    Bytes input(sizeof mine);
    std::memcpy(input.data(), &mine, sizeof mine);
    void* buf = rank.upload(input, sizeof mine);
    const CommStats world_before = rank.comm->stats();
    group->all_reduce(buf, buf, 1, DType::F32, ReduceOp::Sum);
    float sum = 0.0f;
    const Bytes got = rank.download(buf, sizeof(float));
    cuda_ok(cudaStreamSynchronize(rank.compute), "cudaStreamSynchronize");
    std::memcpy(&sum, got.data(), sizeof sum);
    f.expect(sum == float(me % 2 + 1) + float(me % 2 + 3), "the sum over the ranks of one color");
    f.expect((rank.comm->stats() - world_before).calls[size_t(CommOp::AllReduce)] == 0,
             "the group's all_reduce is not counted by the world");
    f.expect(group->stats().calls[size_t(CommOp::AllReduce)] == 1, "the group counts its own all_reduce");
    group.reset();
    cuda_ok(cudaFree(buf), "cudaFree");
  });
}

TEST_CASE("emulated NCCL: asynchronous work completes for wait() and orders a stream with sync()", "[nccl][emulated]") {
  run_ranks(2, all_devices, [&](int me, NcclHostSide host, Failures& f) {
    Rank rank(host);
    const size_t count = 4099;
    void* buf = rank.upload(make_input(me, 0, count, DType::F32), count * 4);
    auto work = rank.comm->all_reduce(buf, buf, count, DType::F32, ReduceOp::Sum, true);
    work->sync(Stream{rank.compute});  // the download below is queued on compute after the collective
    const Bytes got = rank.download(buf, count * 4);
    work->wait();
    f.expect(work->is_completed(), "is_completed after wait");
    f.expect(near_sum(got, expected_reduction(2, 0, count, DType::F32, ReduceOp::Sum), DType::F32, 2, 0), "the sum");
    cuda_ok(cudaFree(buf), "cudaFree");
  });
}

TEST_CASE("emulated NCCL: a rank shown only its own GPU computes on it as device 0", "[nccl][emulated][smoke]") {
  run_ranks(2, [](int r) { return std::vector<int>{r}; }, [&](int me, NcclHostSide host, Failures& f) {
    Rank rank(host);
    int device = -1;
    cuda_ok(cudaGetDevice(&device), "cudaGetDevice");
    f.expect(device == 0, "device 0");
    f.expect(emu::physical_device(device) == me, "its own GPU");
    void* buf = rank.upload(make_input(me, 0, 10, DType::F32), 40);
    rank.comm->all_reduce(buf, buf, 10, DType::F32, ReduceOp::Max);
    f.expect(rank.download(buf, 40) == expected_reduction(2, 0, 10, DType::F32, ReduceOp::Max), "the maximum");
    cuda_ok(cudaFree(buf), "cudaFree");
  });
}

TEST_CASE("emulated NCCL: two ranks on one GPU are refused, naming both", "[nccl][emulated]") {
  std::vector<std::string> messages(2);
  run_ranks(2, [](int) { return std::vector<int>{1}; }, [&](int me, NcclHostSide host, Failures&) {
    try {
      Rank rank(host);
    } catch (const Error& e) {
      messages[size_t(me)] = e.what();
    }
  });
  for (const std::string& m : messages) {
    CHECK_THAT(m, Catch::Contains("ranks 0 and 1 compute on the same GPU") && Catch::Contains("CUDA_VISIBLE_DEVICES"));
  }
}

namespace {

// What a job run in a child process printed, and how it ended.
struct ChildRun {
  std::string output;  // stdout and stderr
  int status = 0;      // waitpid's
  bool killed = false;  // still running after the deadline
};

// Runs job in a forked child, which the abort of a job ends, killed if it runs past the deadline.
ChildRun run_in_child(const std::function<void()>& job, std::chrono::seconds deadline) {
  std::fflush(stdout);
  int pipe_fds[2];
  REQUIRE(pipe(pipe_fds) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    dup2(pipe_fds[1], STDOUT_FILENO);  // the abort's message goes to the log, on either
    dup2(pipe_fds[1], STDERR_FILENO);
    close(pipe_fds[0]);
    job();
    _exit(0);
  }
  close(pipe_fds[1]);
  ChildRun run;
  const auto end = std::chrono::steady_clock::now() + deadline;
  char chunk[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    pollfd fd{pipe_fds[0], POLLIN, 0};
    if (left.count() <= 0 || poll(&fd, 1, int(left.count())) == 0) {
      kill(child, SIGKILL);
      run.killed = true;
      break;
    }
    const ssize_t k = read(pipe_fds[0], chunk, sizeof chunk);
    if (k <= 0) break;
    run.output.append(chunk, size_t(k));
  }
  close(pipe_fds[0]);
  REQUIRE(waitpid(child, &run.status, 0) == child);
  return run;
}

}  // namespace

TEST_CASE("emulated NCCL: the watchdog ends the job when a rank skips a collective", "[nccl][emulated]") {
  const ChildRun run = run_in_child(
      [] {
        run_ranks(2, all_devices, [&](int me, NcclHostSide host, Failures&) {
          Rank rank(host, 1.0);
          void* buf = rank.upload(make_input(me, 0, 16, DType::F32), 64);
          if (me == 0) rank.comm->all_reduce(buf, buf, 16, DType::F32, ReduceOp::Sum);  // rank 1 never joins
          cudaStreamSynchronize(rank.compute);  // rank 0 waits here until the watchdog ends the process
          std::this_thread::sleep_for(std::chrono::seconds(30));
        });
      },
      std::chrono::seconds(60));
  INFO(run.output);
  REQUIRE(WIFEXITED(run.status));
  CHECK(WEXITSTATUS(run.status) == kCommTimeoutExitCode);
  CHECK_THAT(run.output, Catch::Contains("collective timed out: rank 0 all_reduce #1"));
}

TEST_CASE("emulated NCCL: the watchdog ends the job at NCCL's asynchronous error, naming the rank and the op",
          "[nccl][emulated]") {
  // A timeout far beyond the deadline: only the error can end the job in time.
  const ChildRun run = run_in_child(
      [] {
        emu::nccl_fail_collectives(1, 2, ncclRemoteError);
        run_ranks(2, all_devices, [&](int me, NcclHostSide host, Failures&) {
          Rank rank(host, 600.0);
          void* buf = rank.upload(make_input(me, 0, 16, DType::F32), 64);
          rank.comm->all_reduce(buf, buf, 16, DType::F32, ReduceOp::Sum);
          void* all = rank.upload({}, 128);
          rank.comm->all_gather(buf, all, 16, DType::F32);  // rank 1's fails
          cudaStreamSynchronize(rank.compute);
          std::this_thread::sleep_for(std::chrono::seconds(30));
        });
      },
      std::chrono::seconds(20));
  INFO(run.output);
  REQUIRE_FALSE(run.killed);
  REQUIRE(WIFEXITED(run.status));
  CHECK(WEXITSTATUS(run.status) == kCommErrorExitCode);
  CHECK_THAT(run.output, Catch::Contains("NCCL error: rank 1 all_gather #2") &&
                             Catch::Contains("remote process exited or there was a network error") &&
                             Catch::Contains("ncclAllGather #2 of rank 1 failed in the network"));
}

TEST_CASE("emulated NCCL: training steps at stages 1-3 wait for the device once a step, on every rank",
          "[nccl][emulated][train]") {
  // Two ranks, each with its own backend on its own device: collectives order the streams
  // (Work::sync), the gradient norm's partials travel through the communicator on the device, and
  // each rank's host waits once, after its last device work.
  for (int stage = 1; stage <= 3; ++stage) {
    INFO("stage " << stage);
    const config::Config c = step_config("toy", stage, "bf16", 2);
    std::vector<emu::TracedCall> trace;
    std::vector<std::thread::id> ids(2);
    std::vector<double> losses(2);
    std::mutex mutex;
    run_ranks(2, all_devices, [&](int r, NcclHostSide host, Failures&) {
      cuda::CudaDevice device(host.world.local_rank);
      cuda::CudaModelOps model(device, DType::BF16);
      cuda::CudaVectorOps vector(device);
      Backend backend{device, model, vector};
      NcclCommOptions o;
      o.timeout_seconds = kTestCommTimeout;
      o.compute_stream = device.compute_stream();
      auto comm = make_nccl_communicator(o, host);
      Trainer trainer(c, *comm, backend);
      trainer.train_step(1);
      comm->control().barrier();
      if (r == 0) emu::start_trace();
      comm->control().barrier();
      const double loss = trainer.train_step(2).loss;
      comm->control().barrier();
      if (r == 0) trace = emu::stop_trace();
      comm->control().barrier();  // before any rank tears its trainer down
      std::lock_guard lock(mutex);
      ids[size_t(r)] = std::this_thread::get_id();
      losses[size_t(r)] = loss;
    });
    CHECK(std::isfinite(losses[0]));
    CHECK(losses[0] == losses[1]);  // every rank reports the step's loss over all ranks
    for (int r = 0; r < 2; ++r) {
      INFO("rank " << r);
      const emu::Stalls stalls = emu::stalls_of(trace, ids[size_t(r)]);
      INFO(stalls.named());
      CHECK(stalls.before_last_work.empty());
      CHECK(stalls.after_last_work.size() == 1);
    }
  }
}
