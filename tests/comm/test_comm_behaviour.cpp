// Behaviour beyond single results: asynchronous progress while the caller computes, ordering,
// bit-identical results whatever the bucketing, exact byte counts, world discovery, bad input.
// Runs under mpirun with 1-4 ranks.
#include <mpi.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstring>

#include "comm/binomial_tree.hpp"
#include "comm/comm_volume.hpp"
#include "comm/mpi_communicator.hpp"
#include "comm/mpi_session.hpp"
#include "comm_test_support.hpp"
#include "core/error.hpp"

using namespace zt;
using namespace zt::test;
using Clock = std::chrono::steady_clock;

namespace {

// A computation the optimiser cannot drop: the caller's "training step".
double compute_slice(double seed) {
  double x = seed;
  for (int i = 0; i < 20000; ++i) x = std::sin(x) + 1.0001;
  return x;
}

}  // namespace

TEST_CASE("world: rank, size and local rank agree with MPI", "[comm]") {
  Communicator& c = comm();
  int rank = -1, size = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK(c.rank() == rank);
  CHECK(c.world_size() == size);
  WorldInfo w = mpi_world_info();
  CHECK(w.rank == rank);
  CHECK(w.world_size == size);
  // The tests run on one machine: every rank is local.
  CHECK(w.local_size == size);
  CHECK(w.local_rank == rank);
  CHECK(c.local_rank() == w.local_rank);
}

TEST_CASE("async: an all_reduce completes while the caller is busy computing", "[comm][async]") {
  Communicator& c = comm();
  const size_t count = 300000;
  const Bytes input = make_input(c.rank(), 0, count, DType::F32);
  Bytes out(count * 4);
  c.barrier();
  auto work = c.all_reduce(input.data(), out.data(), count, DType::F32, ReduceOp::Sum, true);
  // Compute in slices; only look at the work between slices, never wait on it. The op can only
  // finish if something other than this thread drives it.
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  double sink = 0;
  int slices = 0;
  bool completed_while_computing = false;
  while (Clock::now() < deadline) {
    sink += compute_slice(slices++);
    if (work->is_completed()) {
      completed_while_computing = true;
      break;
    }
  }
  INFO("slices computed " << slices << " (sink " << sink << ")");
  CHECK(completed_while_computing);
  const auto before_wait = Clock::now();
  work->wait();
  CHECK(std::chrono::duration<double>(Clock::now() - before_wait).count() < 0.05);
  CHECK(first_difference(out,
                         expected_reduction(c.world_size(), 0, count, DType::F32, ReduceOp::Sum),
                         DType::F32) == "");
}

TEST_CASE("async: queued ops run in issue order and each completes with its own result",
          "[comm][async]") {
  Communicator& c = comm();
  const int n_ops = 6;
  std::vector<Bytes> outs;
  std::vector<WorkPtr> works;
  for (int k = 0; k < n_ops; ++k) outs.emplace_back(size_t(100 + k) * 4);
  std::vector<Bytes> inputs;
  for (int k = 0; k < n_ops; ++k)
    inputs.push_back(make_input(c.rank(), size_t(1000 * k), size_t(100 + k), DType::F32));
  for (int k = 0; k < n_ops; ++k)
    works.push_back(c.all_reduce(inputs[size_t(k)].data(), outs[size_t(k)].data(), size_t(100 + k),
                                 DType::F32, ReduceOp::Sum, true));
  // Wait in reverse: completing the last implies the earlier ones completed first.
  works.back()->wait();
  for (auto& w : works) CHECK(w->is_completed());
  for (int k = n_ops - 1; k >= 0; --k) {
    works[size_t(k)]->wait();
    CHECK(first_difference(outs[size_t(k)],
                           expected_reduction(c.world_size(), size_t(1000 * k), size_t(100 + k),
                                              DType::F32, ReduceOp::Sum),
                           DType::F32) == "");
  }
  // A blocking op issued behind async ones waits its turn and is done on return.
  Bytes one = make_input(c.rank(), 0, 1, DType::F32);
  auto async_first = c.all_reduce(one.data(), one.data(), 1, DType::F32, ReduceOp::Sum, true);
  Bytes two = make_input(c.rank(), 5, 1, DType::F32);
  auto blocking = c.all_reduce(two.data(), two.data(), 1, DType::F32, ReduceOp::Sum);
  CHECK(blocking->is_completed());
  CHECK(async_first->is_completed());
}

TEST_CASE("determinism: the same reduction cut into odd buckets gives identical bytes",
          "[comm][determinism]") {
  Communicator& c = comm();
  const size_t count = 5003;
  for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
    INFO(dtype_name(dt));
    const size_t es = dtype_size(dt);
    const Bytes input = make_input(c.rank(), 0, count, dt);
    Bytes whole(count * es);
    c.all_reduce(input.data(), whole.data(), count, dt, ReduceOp::Sum);

    // Buckets with boundaries at odd places, async like an overlapping engine would issue them.
    Bytes bucketed(count * es);
    const size_t cuts[] = {0, 1, 8, 100, 333, 334, 2049, 4999, count};
    std::vector<WorkPtr> works;
    for (size_t b = 0; b + 1 < std::size(cuts); ++b)
      works.push_back(
          small_chunk_comm().all_reduce(input.data() + cuts[b] * es, bucketed.data() + cuts[b] * es,
                                        cuts[b + 1] - cuts[b], dt, ReduceOp::Sum, true));
    for (auto& w : works) w->wait();
    CHECK(first_difference(bucketed, whole, dt) == "");

    // reduce_scatter with uneven pieces + all_gather (the ZeRO stage 2/3 path) equals all_reduce.
    std::vector<size_t> pieces(size_t(c.world_size()));
    for (size_t p = 0; p < pieces.size(); ++p) pieces[p] = count / pieces.size();
    pieces.back() += count % pieces.size();
    if (pieces.size() > 1) {  // move a few elements between pieces: boundaries nowhere near even
      pieces[0] += 77;
      pieces[1] -= 77;
    }
    const size_t offset = piece_offsets(pieces)[size_t(c.rank())];
    Bytes gathered(count * es);
    c.reduce_scatter(input.data(), gathered.data() + offset * es, pieces, dt, ReduceOp::Sum);
    c.all_gather(gathered.data() + offset * es, gathered.data(), pieces, dt);
    CHECK(first_difference(gathered, whole, dt) == "");
    // And both equal the rank-order reduction computed here.
    CHECK(first_difference(whole, expected_reduction(c.world_size(), 0, count, dt, ReduceOp::Sum),
                           dt) == "");
  }
}

TEST_CASE("stats: bytes sent, calls and seconds per op kind", "[comm][stats]") {
  auto c = make_mpi_communicator(kTestCommTimeout);  // fresh counters
  const int n = c->world_size(), me = c->rank();
  Bytes buf(4000 * 4);

  // all_reduce of 1001 fp32: the even split gives the first 1001 % n pieces one extra element.
  const size_t count = 1001;
  const size_t own = count / size_t(n) + (size_t(me) < count % size_t(n) ? 1 : 0);
  c->all_reduce(buf.data(), buf.data(), count, DType::F32, ReduceOp::Sum);
  const uint64_t all_reduce_bytes = n == 1 ? 0 : ((count - own) + own * size_t(n - 1)) * 4;
  CHECK(c->stats().bytes(CommOp::AllReduce) == all_reduce_bytes);

  // reduce_scatter in bf16 with pieces 10, 11, 12, ...: everything but the own piece.
  std::vector<size_t> pieces(static_cast<size_t>(n));
  size_t total = 0;
  for (int p = 0; p < n; ++p) total += pieces[size_t(p)] = size_t(10 + p);
  c->reduce_scatter(buf.data(), buf.data() + 3000 * 4, pieces, DType::BF16, ReduceOp::Sum);
  CHECK(c->stats().bytes(CommOp::ReduceScatter) == (total - pieces[size_t(me)]) * 2);

  // all_gather in fp16: the own piece to each of the n-1 others.
  c->all_gather(buf.data() + 3000 * 4, buf.data(), pieces, DType::F16);
  CHECK(c->stats().bytes(CommOp::AllGather) == pieces[size_t(me)] * size_t(n - 1) * 2);

  // broadcast of 500 fp32 from the last rank: every non-root receives the buffer exactly once,
  // so the bytes summed over ranks are (n-1) x 2000; this rank sends to its tree children.
  const int root = n - 1;
  c->broadcast(buf.data(), 500, DType::F32, root);
  int children = 0;
  for (int q = 0; q < n; ++q)
    if (q != root && binomial_tree(q, root, n).parent == me) ++children;
  CHECK(c->stats().bytes(CommOp::Broadcast) == uint64_t(children) * 2000);
  uint64_t mine = c->stats().bytes(CommOp::Broadcast), everyone = 0;
  MPI_Allreduce(&mine, &everyone, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  CHECK(everyone == uint64_t(n - 1) * 2000);

  c->barrier();
  c->barrier(true)->wait();
  const CommStats s = c->stats();
  CHECK(s.bytes(CommOp::Barrier) == 0);
  CHECK(s.calls[size_t(CommOp::AllReduce)] == 1);
  CHECK(s.calls[size_t(CommOp::ReduceScatter)] == 1);
  CHECK(s.calls[size_t(CommOp::AllGather)] == 1);
  CHECK(s.calls[size_t(CommOp::Broadcast)] == 1);
  CHECK(s.calls[size_t(CommOp::Barrier)] == 2);
  for (size_t k = 0; k < size_t(CommOp::Count); ++k) CHECK(s.seconds[k] >= 0.0);
  CHECK(s.seconds[size_t(CommOp::Barrier)] > 0.0);

  // The even-split helpers count like the explicit pieces.
  c->reduce_scatter(buf.data(), buf.data() + 3900 * 4, 20, DType::F32, ReduceOp::Sum);
  CHECK(c->stats().bytes(CommOp::ReduceScatter) - s.bytes(CommOp::ReduceScatter) ==
        uint64_t(n - 1) * 20 * 4);
}

TEST_CASE("bad input is refused on the calling thread with a message naming the problem",
          "[comm]") {
  Communicator& c = comm();
  const int n = c.world_size();
  Bytes buf(400);
  std::vector<size_t> wrong(static_cast<size_t>(n) + 1, 1);
  CHECK_THROWS_WITH(
      c.reduce_scatter(buf.data(), buf.data() + 200, wrong, DType::F32, ReduceOp::Sum),
      Catch::Contains("piece counts") && Catch::Contains("world of"));
  CHECK_THROWS_WITH(c.all_gather(buf.data(), buf.data(), wrong, DType::F32),
                    Catch::Contains("piece counts"));
  CHECK_THROWS_WITH(c.broadcast(buf.data(), 4, DType::F32, n), Catch::Contains("root"));
  CHECK_THROWS_WITH(c.broadcast(buf.data(), 4, DType::F32, -1), Catch::Contains("root"));
  CHECK_THROWS_WITH(c.all_reduce(nullptr, buf.data(), 4, DType::F32, ReduceOp::Sum),
                    Catch::Contains("null"));
  CHECK_THROWS_WITH(c.all_reduce(buf.data(), buf.data() + 4, 8, DType::F32, ReduceOp::Sum),
                    Catch::Contains("overlap"));
  // all_gather whose send sits inside recv but not at this rank's piece.
  std::vector<size_t> pieces(static_cast<size_t>(n), 4);
  const size_t wrong_offset = (size_t(c.rank()) * 4 + 1) * 4;
  CHECK_THROWS_WITH(c.all_gather(buf.data() + wrong_offset, buf.data(), pieces, DType::F32),
                    Catch::Contains("not this rank's piece"));
  // Nothing was issued: the communicator still works and stays in step across ranks.
  float x = 1.0f;
  c.all_reduce(&x, &x, 1, DType::F32, ReduceOp::Sum);
  CHECK(x == float(n));
}

TEST_CASE("sequence check: agreeing ranks pass through it", "[comm][check]") {
  Communicator& c = checked_comm();
  const int n = c.world_size();
  Bytes buf(1000 * 4);
  for (int step = 1; step <= 3; ++step) {
    c.set_step(step);
    float x = float(c.rank());
    c.all_reduce(&x, &x, 1, DType::F32, ReduceOp::Max);
    CHECK(x == float(n - 1));
    unsigned char* own_piece = buf.data() + size_t(c.rank()) * 10 * 2;  // in place, 16-bit
    auto w = c.all_gather(own_piece, buf.data(), 10, DType::BF16, true);
    c.reduce_scatter(buf.data(), own_piece, 10, DType::F16, ReduceOp::Sum);
    w->wait();
    c.broadcast(buf.data(), 7, DType::F32, n - 1);
    c.barrier();
  }
}
