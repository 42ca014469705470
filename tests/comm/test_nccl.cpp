// The NCCL backend on device buffers: every op x dtype x in/out of place x sizes, uneven pieces,
// asynchronous work, byte counts. Runs under mpirun (one rank per GPU). Where this machine has
// fewer GPUs than local ranks (or none), every case prints that it skipped and passes, unless
// ZT_GPU_REQUIRED is set (bench/gpu.sh): then it fails.
//
// NCCL sums in its own order, so multi-rank sums are compared with a tolerance; one rank, max
// reductions, gathers and broadcasts must match exactly.
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <mpi.h>
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "comm/binomial_tree.hpp"
#include "comm/comm_volume.hpp"
#include "comm/mpi_session.hpp"
#include "comm/nccl_communicator.hpp"
#include "comm_test_support.hpp"

using namespace zt;
using namespace zt::test;

namespace {

bool gpu_required() {
  const char* required = std::getenv("ZT_GPU_REQUIRED");
  return required && *required && std::strcmp(required, "0") != 0;
}

// Decided together by all ranks, so that either all of them run a case or none does.
bool gpus_ready() {
  static const bool ready = [] {
    const WorldInfo& w = test_session().world();
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
    int mine = w.local_rank < devices ? 1 : 0, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all && w.rank == 0)
      std::printf("test_nccl: %s: %d CUDA device(s) for %d local rank(s)\n",
                  gpu_required() ? "FAILED (ZT_GPU_REQUIRED is set)" : "skipped", devices, w.local_size);
    return all == 1;
  }();
  return ready;
}

// True when the case cannot run here: it then passes as skipped, or fails where a GPU is required.
bool skipped() {
  if (gpus_ready()) return false;
  REQUIRE_FALSE(gpu_required());
  return true;
}

Communicator& nccl() {
  static auto c = make_nccl_communicator(kTestCommTimeout);
  return *c;
}

struct DeviceBuffer {
  void* ptr = nullptr;
  size_t bytes = 0;
  explicit DeviceBuffer(size_t n) : bytes(n) {
    REQUIRE(cudaMalloc(&ptr, std::max<size_t>(n, 1)) == cudaSuccess);
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  unsigned char* at(size_t byte_offset) { return static_cast<unsigned char*>(ptr) + byte_offset; }
  void upload(const Bytes& b, size_t byte_offset = 0) {
    if (!b.empty())
      REQUIRE(cudaMemcpy(at(byte_offset), b.data(), b.size(), cudaMemcpyHostToDevice) ==
              cudaSuccess);
  }
  Bytes download(size_t byte_offset, size_t n) {
    Bytes b(n);
    // The legacy default stream (the communicator's compute stream here) orders this copy after
    // the collective that Work::wait made it wait for.
    if (n) REQUIRE(cudaMemcpy(b.data(), at(byte_offset), n, cudaMemcpyDeviceToHost) == cudaSuccess);
    return b;
  }
};

// Sums may differ from the rank-order sum by NCCL's order.
std::string compare(const Bytes& got, const Bytes& expected, DType dt, ReduceOp op, int world,
                    size_t first_index) {
  if (world == 1 || op == ReduceOp::Max) return first_difference(got, expected, dt);
  return sum_difference(got, expected, dt, world, first_index);
}

constexpr DType kDTypes[] = {DType::F32, DType::BF16, DType::F16};

}  // namespace

TEST_CASE("nccl all_reduce: every dtype, size and placement", "[nccl]") {
  if (skipped()) return;
  Communicator& c = nccl();
  const int n = c.world_size();
  for (DType dt : kDTypes)
    for (size_t count : {size_t(0), size_t(1), size_t(n + 1), size_t(1001), size_t(1) << 20})
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max})
        for (bool in_place : {false, true}) {
          INFO(dtype_name(dt) << " count " << count << (in_place ? " in place" : " out of place"));
          const size_t bytes = count * dtype_size(dt);
          DeviceBuffer send(bytes), recv(bytes);
          const Bytes input = make_input(c.rank(), 0, count, dt);
          send.upload(input);
          void* out = in_place ? send.ptr : recv.ptr;
          c.all_reduce(send.ptr, out, count, dt, op);
          Bytes got = (in_place ? send : recv).download(0, bytes);
          CHECK(compare(got, expected_reduction(n, 0, count, dt, op), dt, op, n, 0) == "");
        }
}

TEST_CASE("nccl reduce_scatter and all_gather: even, uneven and empty pieces", "[nccl]") {
  if (skipped()) return;
  Communicator& c = nccl();
  const int n = c.world_size(), me = c.rank();
  std::vector<std::vector<size_t>> cuts = {std::vector<size_t>(size_t(n), 0),
                                           std::vector<size_t>(size_t(n), 1),
                                           std::vector<size_t>(size_t(n), 4097)};
  std::vector<size_t> uneven(static_cast<size_t>(n));
  for (int p = 0; p < n; ++p) uneven[size_t(p)] = p % 2 ? 0 : size_t(100 + 37 * p);
  cuts.push_back(uneven);
  for (DType dt : kDTypes)
    for (const auto& pieces : cuts)
      for (bool in_place : {false, true}) {
        const size_t es = dtype_size(dt), total = total_count(pieces), own = pieces[size_t(me)];
        const size_t offset = piece_offsets(pieces)[size_t(me)];
        INFO(dtype_name(dt) << " total " << total << (in_place ? " in place" : " out of place"));
        DeviceBuffer full(total * es), piece(own * es);
        full.upload(make_input(me, 0, total, dt));
        void* own_out = in_place ? full.at(offset * es) : piece.ptr;
        c.reduce_scatter(full.ptr, own_out, pieces, dt, ReduceOp::Sum);
        Bytes reduced =
            in_place ? full.download(offset * es, own * es) : piece.download(0, own * es);
        CHECK(compare(reduced, expected_reduction(n, offset, own, dt, ReduceOp::Sum), dt,
                      ReduceOp::Sum, n, offset) == "");

        // Gather every rank's input formula over its own piece.
        Bytes expected;
        for (int q = 0; q < n; ++q) {
          Bytes b = make_input(q, piece_offsets(pieces)[size_t(q)], pieces[size_t(q)], dt);
          expected.insert(expected.end(), b.begin(), b.end());
        }
        DeviceBuffer gathered(total * es);
        const Bytes mine = make_input(me, offset, own, dt);
        if (in_place) {
          gathered.upload(mine, offset * es);
          c.all_gather(gathered.at(offset * es), gathered.ptr, pieces, dt);
        } else {
          piece.upload(mine);
          c.all_gather(piece.ptr, gathered.ptr, pieces, dt);
        }
        CHECK(first_difference(gathered.download(0, total * es), expected, dt) == "");
      }
}

TEST_CASE("nccl broadcast from every root, and barrier", "[nccl]") {
  if (skipped()) return;
  Communicator& c = nccl();
  for (DType dt : kDTypes)
    for (int root = 0; root < c.world_size(); ++root) {
      const size_t count = 3001;
      DeviceBuffer buf(count * dtype_size(dt));
      buf.upload(make_input(c.rank(), 0, count, dt));
      c.broadcast(buf.ptr, count, dt, root);
      CHECK(first_difference(buf.download(0, count * dtype_size(dt)),
                             make_input(root, 0, count, dt), dt) == "");
    }
  c.barrier();
  auto w = c.barrier(true);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(w->is_completed());
}

TEST_CASE("nccl async: wait() orders the compute stream, the host is not blocked", "[nccl]") {
  if (skipped()) return;
  Communicator& c = nccl();
  const size_t count = size_t(1) << 22;
  DeviceBuffer buf(count * 4);
  buf.upload(make_input(c.rank(), 0, count, DType::F32));
  auto work = c.all_reduce(buf.ptr, buf.ptr, count, DType::F32, ReduceOp::Sum, true);
  work->wait();                            // returns at once: only enqueues a stream wait
  Bytes got = buf.download(0, count * 4);  // legacy stream: after the all_reduce
  CHECK(work->is_completed());
  CHECK(compare(got, expected_reduction(c.world_size(), 0, count, DType::F32, ReduceOp::Sum),
                DType::F32, ReduceOp::Sum, c.world_size(), 0) == "");
}

TEST_CASE("nccl stats: bytes counted like the CPU backend", "[nccl]") {
  if (skipped()) return;
  auto c = make_nccl_communicator(kTestCommTimeout);
  const int n = c->world_size(), me = c->rank();
  DeviceBuffer buf(4096 * 4);
  const size_t count = 1001;
  const size_t own = count / size_t(n) + (size_t(me) < count % size_t(n) ? 1 : 0);
  c->all_reduce(buf.ptr, buf.ptr, count, DType::F32, ReduceOp::Sum);
  c->reduce_scatter(buf.ptr, buf.at(2048 * 4), 10, DType::BF16, ReduceOp::Sum);
  c->all_gather(buf.at(2048 * 4), buf.ptr, 10, DType::F16);
  c->broadcast(buf.ptr, 500, DType::F32, 0);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  const CommStats s = c->stats();
  CHECK(s.bytes(CommOp::AllReduce) == (n == 1 ? 0 : ((count - own) + own * size_t(n - 1)) * 4));
  CHECK(s.bytes(CommOp::ReduceScatter) == size_t(n - 1) * 10 * 2);
  CHECK(s.bytes(CommOp::AllGather) == size_t(n - 1) * 10 * 2);
  CHECK(s.bytes(CommOp::Broadcast) == binomial_tree(me, 0, n).children.size() * 2000);
  CHECK(s.calls[size_t(CommOp::AllReduce)] == 1);
  CHECK(s.seconds[size_t(CommOp::AllReduce)] >= 0.0);
}
