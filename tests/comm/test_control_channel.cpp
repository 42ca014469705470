// The control channel: exact, rank-order reductions of host values that every rank agrees on,
// set-up failure agreement, and its traffic counted with the data's. Runs under mpirun, 1-4 ranks.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>

#include "comm/control_channel.hpp"
#include "comm/local_communicator.hpp"
#include "comm_test_support.hpp"

using namespace zt;
using namespace zt::test;

TEST_CASE("control all_reduce_sum adds in rank order, in double, with the same bits on every rank", "[comm][control]") {
  ControlChannel& control = comm().control();
  const int W = control.world_size(), r = control.rank();
  // Rank 0 contributes 2^53, every other rank 1: in rank order each 1 is lost to rounding; any
  // other order (the 1s first) would keep them.
  double values[3] = {r == 0 ? 9007199254740992.0 : 1.0, 0.1 * (r + 1), double(r)};
  control.all_reduce_sum(values, 3);
  double expected1 = 0;
  for (int k = 0; k < W; ++k) expected1 += 0.1 * (k + 1);
  CHECK(values[0] == 9007199254740992.0);
  CHECK(values[1] == expected1);  // the same sum, the same order, bit for bit
  CHECK(values[2] == double(W * (W - 1) / 2));
  // Every rank holds the same bits.
  auto all = control.gather_all(values[1]);
  for (double v : all) CHECK(std::memcmp(&v, &values[1], sizeof v) == 0);
}

TEST_CASE("control all_reduce_max keeps NaN and infinities", "[comm][control]") {
  ControlChannel& control = comm().control();
  const int W = control.world_size(), r = control.rank();
  double values[3] = {double(r), r == W - 1 ? std::numeric_limits<double>::infinity() : 0.0,
                      r == 0 ? std::numeric_limits<double>::quiet_NaN() : 1.0};
  control.all_reduce_max(values, 3);
  CHECK(values[0] == double(W - 1));
  CHECK(std::isinf(values[1]));
  CHECK(std::isnan(values[2]));
}

TEST_CASE("control first_failure names the lowest failing rank, or none", "[comm][control]") {
  ControlChannel& control = comm().control();
  const int W = control.world_size(), r = control.rank();
  CHECK(control.first_failure(false) == -1);
  CHECK(control.first_failure(r == W - 1) == W - 1);
  CHECK(control.first_failure(r >= W / 2) == W / 2);
}

TEST_CASE("control traffic is counted in the communicator's statistics", "[comm][control]") {
  Communicator& c = comm();
  const uint64_t W = uint64_t(c.world_size());
  CommStats before = c.stats();
  double v[2] = {1.0, 2.0};
  c.control().all_reduce_sum(v, 2);
  uint64_t mine = 7;
  c.control().gather_all(mine);
  CommStats after = c.stats();
  auto delta = [&](CommOp op) { return after.bytes(op) - before.bytes(op); };
  // Each rank sends its bytes to every other rank.
  CHECK(delta(CommOp::AllReduce) == 16 * (W - 1));
  CHECK(delta(CommOp::AllGather) == 8 * (W - 1));
  CHECK(after.calls[size_t(CommOp::AllReduce)] - before.calls[size_t(CommOp::AllReduce)] == 1);
  CHECK(after.calls[size_t(CommOp::AllGather)] - before.calls[size_t(CommOp::AllGather)] == 1);
}

TEST_CASE("a local world of one: collectives copy, the control channel is the identity, nothing is sent",
          "[comm][control]") {
  auto local = make_local_communicator();
  CHECK(local->world_size() == 1);
  float in[5] = {1, 2, 3, 4, 5}, out[5] = {};
  local->all_reduce(in, out, 5, DType::F32, ReduceOp::Sum)->wait();
  CHECK(std::memcmp(in, out, sizeof in) == 0);
  std::memset(out, 0, sizeof out);
  local->reduce_scatter(in, out, 5, DType::F32, ReduceOp::Sum)->wait();
  CHECK(std::memcmp(in, out, sizeof in) == 0);
  double v[2] = {3.5, -1.0};
  local->control().all_reduce_sum(v, 2);
  CHECK((v[0] == 3.5 && v[1] == -1.0));
  CHECK(local->control().first_failure(true) == 0);
  CHECK(local->control().first_failure(false) == -1);
  for (uint64_t b : local->stats().bytes_sent) CHECK(b == 0);
  // Bad arguments are refused as by every backend.
  CHECK_THROWS_WITH(local->reduce_scatter(in, out, std::vector<size_t>{1, 2}, DType::F32, ReduceOp::Sum),
                    Catch::Contains("2 piece counts given for a world of 1 ranks"));
}
