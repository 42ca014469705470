// Every op x dtype x in/out of place x size (0, 1, counts not divisible by the world size, sizes
// spanning many messages) against expected buffers each rank computes independently.
// Runs under mpirun with 1-4 ranks; every rank runs the same cases in the same order.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

#include "comm/comm_volume.hpp"
#include "comm_test_support.hpp"

using namespace zt;
using namespace zt::test;

namespace {

constexpr DType kDTypes[] = {DType::F32, DType::BF16, DType::F16};
constexpr float kPoison = -12345.0f;  // fills outputs before an op and guards around them
constexpr size_t kGuard = 3;

std::vector<size_t> test_counts(int world) {
  return {0, 1, 2, 3, size_t(world) - 1, size_t(world) + 1, 5, 17, 1000, 1001, 4099};
}

// Output buffer with kGuard poisoned elements on each side; checks the guards afterwards.
struct GuardedOutput {
  DType dtype;
  size_t count;
  Bytes bytes;
  GuardedOutput(DType dt, size_t n)
      : dtype(dt), count(n), bytes(filled(n + 2 * kGuard, dt, kPoison)) {}
  void* data() { return bytes.data() + kGuard * dtype_size(dtype); }
  Bytes body() const {
    auto first = bytes.begin() + long(kGuard * dtype_size(dtype));
    return Bytes(first, first + long(count * dtype_size(dtype)));
  }
  bool guards_intact() const {
    const size_t es = dtype_size(dtype);
    Bytes poison = filled(kGuard, dtype, kPoison);
    return std::equal(poison.begin(), poison.end(), bytes.begin()) &&
           std::equal(poison.begin(), poison.end(), bytes.end() - long(kGuard * es));
  }
};

std::string label(std::string_view op, DType dt, size_t count, bool in_place, Communicator& c) {
  return fmt::format("{} {} count={} {} rank={}/{}", op, dtype_name(dt), count,
                     in_place ? "in-place" : "out-of-place", c.rank(), c.world_size());
}

void check_all_reduce(Communicator& c, DType dt, size_t count, ReduceOp op, bool in_place) {
  INFO(label(op == ReduceOp::Sum ? "all_reduce sum" : "all_reduce max", dt, count, in_place, c));
  const Bytes input = make_input(c.rank(), 0, count, dt);
  const Bytes expected = expected_reduction(c.world_size(), 0, count, dt, op);
  if (in_place) {
    GuardedOutput buf(dt, count);
    if (count) std::memcpy(buf.data(), input.data(), input.size());
    c.all_reduce(buf.data(), buf.data(), count, dt, op);
    CHECK(first_difference(buf.body(), expected, dt) == "");
    CHECK(buf.guards_intact());
  } else {
    Bytes send = input;
    GuardedOutput out(dt, count);
    c.all_reduce(send.data(), out.data(), count, dt, op);
    CHECK(first_difference(out.body(), expected, dt) == "");
    CHECK(out.guards_intact());
    CHECK(send == input);  // the send buffer is read only
  }
}

void check_reduce_scatter(Communicator& c, DType dt, std::span<const size_t> pieces, ReduceOp op,
                          bool in_place) {
  const size_t total = total_count(pieces);
  const size_t own = pieces[size_t(c.rank())];
  const size_t offset = piece_offsets(pieces)[size_t(c.rank())];
  INFO(label("reduce_scatter", dt, total, in_place, c) << " own piece " << own << " at " << offset);
  const Bytes input = make_input(c.rank(), 0, total, dt);
  const Bytes expected = expected_reduction(c.world_size(), offset, own, dt, op);
  const size_t es = dtype_size(dt);
  if (in_place) {
    GuardedOutput buf(dt, total);
    if (total) std::memcpy(buf.data(), input.data(), input.size());
    void* own_slot = static_cast<unsigned char*>(buf.data()) + offset * es;
    c.reduce_scatter(buf.data(), own_slot, pieces, dt, op);
    Bytes body = buf.body();
    CHECK(first_difference(
              Bytes(body.begin() + long(offset * es), body.begin() + long((offset + own) * es)),
              expected, dt) == "");
    CHECK(buf.guards_intact());
  } else {
    Bytes send = input;
    GuardedOutput out(dt, own);
    c.reduce_scatter(send.data(), out.data(), pieces, dt, op);
    CHECK(first_difference(out.body(), expected, dt) == "");
    CHECK(out.guards_intact());
    CHECK(send == input);
  }
}

// Rank r contributes elements [offset_r, offset_r + pieces[r]) of its own input formula, so the
// gathered buffer is expected to hold rank q's values over piece q.
void check_all_gather(Communicator& c, DType dt, std::span<const size_t> pieces, bool in_place) {
  const size_t total = total_count(pieces);
  const auto offsets = piece_offsets(pieces);
  const int me = c.rank();
  INFO(label("all_gather", dt, total, in_place, c));
  const size_t es = dtype_size(dt);
  Bytes expected;
  for (int q = 0; q < c.world_size(); ++q) {
    Bytes piece = make_input(q, offsets[size_t(q)], pieces[size_t(q)], dt);
    expected.insert(expected.end(), piece.begin(), piece.end());
  }
  const Bytes mine = make_input(me, offsets[size_t(me)], pieces[size_t(me)], dt);
  GuardedOutput out(dt, total);
  if (in_place) {
    void* own_slot = static_cast<unsigned char*>(out.data()) + offsets[size_t(me)] * es;
    if (!mine.empty()) std::memcpy(own_slot, mine.data(), mine.size());
    c.all_gather(own_slot, out.data(), pieces, dt);
  } else {
    Bytes send = mine;
    c.all_gather(send.data(), out.data(), pieces, dt);
    CHECK(send == mine);
  }
  CHECK(first_difference(out.body(), expected, dt) == "");
  CHECK(out.guards_intact());
}

void check_broadcast(Communicator& c, DType dt, size_t count, int root) {
  INFO(label("broadcast", dt, count, true, c) << " root " << root);
  GuardedOutput buf(dt, count);
  const Bytes mine = make_input(c.rank(), 0, count, dt);  // what non-roots hold before: overwritten
  if (count) std::memcpy(buf.data(), mine.data(), mine.size());
  c.broadcast(buf.data(), count, dt, root);
  CHECK(first_difference(buf.body(), make_input(root, 0, count, dt), dt) == "");
  CHECK(buf.guards_intact());
}

// Uneven cuts of `total`-ish buffers into world pieces, including empty pieces (also this rank's).
std::vector<std::vector<size_t>> uneven_pieces(int world) {
  const std::vector<size_t> patterns[] = {
      {0, 5, 1, 3}, {7, 0, 0, 2}, {1, 1, 0, 1}, {13, 29, 6, 0}, {0, 0, 0, 0}};
  std::vector<std::vector<size_t>> result;
  for (const auto& pattern : patterns)
    for (int shift = 0; shift < 2; ++shift) {
      std::vector<size_t> pieces(static_cast<size_t>(world), 0);
      for (int p = 0; p < world; ++p)
        pieces[size_t(p)] = pattern[size_t(p + shift) % pattern.size()];
      result.push_back(pieces);
    }
  return result;
}

}  // namespace

TEST_CASE("all_reduce: every dtype, size and placement matches the rank-order reduction",
          "[comm]") {
  for (Communicator* c : {&comm(), &small_chunk_comm()})
    for (DType dt : kDTypes)
      for (size_t count : test_counts(c->world_size()))
        for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max})
          for (bool in_place : {false, true}) check_all_reduce(*c, dt, count, op, in_place);
}

TEST_CASE("reduce_scatter: even pieces, every dtype, size and placement", "[comm]") {
  for (Communicator* c : {&comm(), &small_chunk_comm()})
    for (DType dt : kDTypes)
      for (size_t each : {0, 1, 3, 250, 1025})
        for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max})
          for (bool in_place : {false, true}) {
            std::vector<size_t> pieces(size_t(c->world_size()), each);
            check_reduce_scatter(*c, dt, pieces, op, in_place);
          }
}

TEST_CASE("reduce_scatter: uneven and empty pieces", "[comm]") {
  for (Communicator* c : {&comm(), &small_chunk_comm()})
    for (DType dt : kDTypes)
      for (const auto& pieces : uneven_pieces(c->world_size()))
        for (bool in_place : {false, true})
          check_reduce_scatter(*c, dt, pieces, ReduceOp::Sum, in_place);
}

TEST_CASE("reduce_scatter: the even-split helper gives every rank `count` elements", "[comm]") {
  Communicator& c = comm();
  const size_t each = 37;
  const size_t total = each * size_t(c.world_size());
  const Bytes input = make_input(c.rank(), 0, total, DType::F32);
  Bytes out(each * 4);
  c.reduce_scatter(input.data(), out.data(), each, DType::F32, ReduceOp::Sum);
  CHECK(first_difference(out,
                         expected_reduction(c.world_size(), each * size_t(c.rank()), each,
                                            DType::F32, ReduceOp::Sum),
                         DType::F32) == "");
}

TEST_CASE("all_gather: even pieces, every dtype, size and placement", "[comm]") {
  for (Communicator* c : {&comm(), &small_chunk_comm()})
    for (DType dt : kDTypes)
      for (size_t each : {0, 1, 3, 250, 1025})
        for (bool in_place : {false, true}) {
          std::vector<size_t> pieces(size_t(c->world_size()), each);
          check_all_gather(*c, dt, pieces, in_place);
        }
}

TEST_CASE("all_gather: uneven and empty pieces", "[comm]") {
  for (Communicator* c : {&comm(), &small_chunk_comm()})
    for (DType dt : kDTypes)
      for (const auto& pieces : uneven_pieces(c->world_size()))
        for (bool in_place : {false, true}) check_all_gather(*c, dt, pieces, in_place);
}

TEST_CASE("all_gather: the even-split helper", "[comm]") {
  Communicator& c = comm();
  const size_t each = 11;
  const Bytes mine = make_input(c.rank(), each * size_t(c.rank()), each, DType::BF16);
  Bytes out(each * size_t(c.world_size()) * 2);
  c.all_gather(mine.data(), out.data(), each, DType::BF16);
  Bytes expected;
  for (int q = 0; q < c.world_size(); ++q) {
    Bytes piece = make_input(q, each * size_t(q), each, DType::BF16);
    expected.insert(expected.end(), piece.begin(), piece.end());
  }
  CHECK(first_difference(out, expected, DType::BF16) == "");
}

TEST_CASE("broadcast: every root, dtype and size", "[comm]") {
  for (Communicator* c : {&comm(), &small_chunk_comm()})
    for (DType dt : kDTypes)
      for (size_t count : test_counts(c->world_size()))
        for (int root = 0; root < c->world_size(); ++root) check_broadcast(*c, dt, count, root);
}

TEST_CASE("max reduction propagates NaN and keeps infinities", "[comm]") {
  Communicator& c = comm();
  const int last = c.world_size() - 1;
  for (DType dt : kDTypes) {
    // Element 0: NaN on the last rank only. Element 1: +inf on rank 0. Element 2: finite
    // everywhere.
    std::vector<float> values = {float(c.rank()), float(c.rank()), -float(c.rank())};
    if (c.rank() == last) values[0] = std::numeric_limits<float>::quiet_NaN();
    if (c.rank() == 0) values[1] = std::numeric_limits<float>::infinity();
    Bytes buf(3 * dtype_size(dt));
    from_f32(dt, values.data(), buf.data(), 3);
    c.all_reduce(buf.data(), buf.data(), 3, dt, ReduceOp::Max);
    float out[3];
    to_f32(dt, buf.data(), out, 3);
    INFO(dtype_name(dt));
    CHECK(std::isnan(out[0]));
    CHECK(std::isinf(out[1]));
    CHECK(out[2] == 0.0f);
  }
}

TEST_CASE("barrier: no rank leaves before the last one arrives", "[comm]") {
  Communicator& c = comm();
  c.barrier();
  const auto before = std::chrono::steady_clock::now();
  if (c.rank() == c.world_size() - 1) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  c.barrier();
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - before).count();
  // Ranks leave the first barrier within a few milliseconds of each other.
  if (c.world_size() > 1) CHECK(waited > 0.15);
  auto work = c.barrier(true);
  work->wait();
  CHECK(work->is_completed());
}

namespace {

// What rank `from` sends rank `to` in the all_to_all cases: (from + 2·to) % 5 elements, none
// between ranks of different groups of `group` ranks; element i = input_value(from, 1000·to + i).
size_t a2a_count(int from, int to, int group) {
  if (from / group != to / group) return 0;
  return size_t((from + 2 * to) % 5) * 301;  // 301: several 7-element messages of small_chunk_comm
}

void check_all_to_all(Communicator& c, DType dt, int group) {
  const int n = c.world_size(), me = c.rank();
  INFO("all_to_all " << dtype_name(dt) << " groups of " << group << " rank=" << me << "/" << n);
  std::vector<size_t> send_counts(static_cast<size_t>(n)), recv_counts(static_cast<size_t>(n));
  Bytes send, expected;
  for (int q = 0; q < n; ++q) {
    send_counts[size_t(q)] = a2a_count(me, q, group);
    recv_counts[size_t(q)] = a2a_count(q, me, group);
    const Bytes out = make_input(me, 1000 * size_t(q), send_counts[size_t(q)], dt);
    const Bytes in = make_input(q, 1000 * size_t(me), recv_counts[size_t(q)], dt);
    send.insert(send.end(), out.begin(), out.end());
    expected.insert(expected.end(), in.begin(), in.end());
  }
  GuardedOutput recv(dt, expected.size() / dtype_size(dt));
  const CommStats before = c.stats();
  c.all_to_all(send.data(), send_counts, recv.data(), recv_counts, dt);
  CHECK(first_difference(recv.body(), expected, dt) == "");
  CHECK(recv.guards_intact());
  // Counted: every piece but the own one.
  size_t sent = 0;
  for (int q = 0; q < n; ++q) sent += q == me ? 0 : send_counts[size_t(q)];
  CHECK((c.stats() - before).bytes(CommOp::AllToAll) == sent * dtype_size(dt));
  CHECK((c.stats() - before).calls[size_t(CommOp::AllToAll)] == 1);
}

}  // namespace

TEST_CASE("all_to_all: uneven and empty pieces, within groups of ranks, every dtype", "[comm]") {
  for (Communicator* c : {&comm(), &small_chunk_comm(), &checked_comm()})
    for (DType dt : kDTypes)
      for (int group : {1, 2, c->world_size()})
        if (c->world_size() % group == 0) check_all_to_all(*c, dt, group);
  // Counts that do not pair up with the own piece are refused before anything is sent.
  Communicator& c = comm();
  std::vector<size_t> send(size_t(c.world_size()), 0), recv(size_t(c.world_size()), 0);
  send[size_t(c.rank())] = 1;
  float x = 0, y = 0;
  CHECK_THROWS_WITH(c.all_to_all(&x, send, &y, recv, DType::F32),
                    "all_to_all: this rank sends itself 1 elements and expects 0");
}

TEST_CASE("split: each group's collectives run among its ranks, counted in its own stats", "[comm]") {
  Communicator& world = comm();
  const int W = world.world_size(), me = world.rank();
  const int colors = W >= 2 ? 2 : 1, color = me % colors;
  // Keyed from the highest rank down: the group ranks its members in that order.
  std::unique_ptr<Communicator> group = world.split(color, W - me);
  std::vector<int> members;
  for (int r = W - 1; r >= 0; --r)
    if (r % colors == color) members.push_back(r);
  REQUIRE(group->world_size() == int(members.size()));
  CHECK(members[size_t(group->rank())] == me);

  const CommStats world_before = world.stats();
  std::vector<float> mine{float(me + 1)}, sum{0.0f};
  group->all_reduce(mine.data(), sum.data(), 1, DType::F32, ReduceOp::Sum);
  float expected = 0.0f;
  for (int r : members) expected += float(r + 1);
  CHECK(sum[0] == expected);

  std::vector<float> all(members.size(), -1.0f);
  group->all_gather(mine.data(), all.data(), 1, DType::F32);
  for (size_t q = 0; q < members.size(); ++q) CHECK(all[q] == float(members[q] + 1));

  // Every member sends each other member its own world rank; an element to each.
  std::vector<size_t> ones(members.size(), 1);
  std::vector<float> sent(members.size(), float(me)), got(members.size(), -1.0f);
  group->all_to_all(sent.data(), ones, got.data(), ones, DType::F32);
  for (size_t q = 0; q < members.size(); ++q) CHECK(got[q] == float(members[q]));

  const CommStats in_world = world.stats() - world_before, in_group = group->stats();
  CHECK(in_world.calls[size_t(CommOp::AllReduce)] == 0);
  CHECK(in_world.calls[size_t(CommOp::AllGather)] == 0);
  CHECK(in_group.calls[size_t(CommOp::AllReduce)] == 1);
  CHECK(in_group.bytes(CommOp::AllGather) == (members.size() - 1) * sizeof(float));
  world.barrier();
}
