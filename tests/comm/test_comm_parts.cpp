// The communication layer's pure parts, without MPI: the rank-order reduction kernel, piece
// arithmetic, the broadcast tree, the sequence-check message and the collective deadline.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include "comm/binomial_tree.hpp"
#include "comm/comm_volume.hpp"
#include "comm/op_deadline.hpp"
#include "comm/op_signature.hpp"
#include "comm/rank_order_reduce.hpp"
#include "core/error.hpp"

using namespace zt;

TEST_CASE("reduce_in_rank_order: matches a plain rank-order loop for every dtype and op",
          "[comm][reduce]") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
  std::uniform_int_distribution<int> exponent(-8, 8);
  for (DType dt : {DType::F32, DType::BF16, DType::F16})
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max})
      for (int n_inputs : {1, 2, 3, 5})
        for (size_t count : {size_t(0), size_t(1), size_t(511), size_t(512), size_t(1300)}) {
          INFO(dtype_name(dt) << " inputs " << n_inputs << " count " << count);
          const size_t es = dtype_size(dt);
          std::vector<std::vector<unsigned char>> inputs(static_cast<size_t>(n_inputs),
                                                         std::vector<unsigned char>(count * es));
          std::vector<std::vector<float>> values(static_cast<size_t>(n_inputs),
                                                 std::vector<float>(count));
          for (int q = 0; q < n_inputs; ++q) {
            for (size_t i = 0; i < count; ++i)
              values[size_t(q)][i] = std::ldexp(dist(rng), exponent(rng));
            if (count == 0) continue;  // empty vectors may hold null data pointers
            from_f32(dt, values[size_t(q)].data(), inputs[size_t(q)].data(), count);
            to_f32(dt, inputs[size_t(q)].data(), values[size_t(q)].data(), count);  // representable
          }
          std::vector<float> expected(count);
          for (size_t i = 0; i < count; ++i) {
            float acc = values[0][i];
            for (int q = 1; q < n_inputs; ++q)
              acc = op == ReduceOp::Sum ? acc + values[size_t(q)][i]
                                        : std::max(acc, values[size_t(q)][i]);
            expected[i] = acc;
          }
          std::vector<unsigned char> expected_bytes(count * es);
          if (count) from_f32(dt, expected.data(), expected_bytes.data(), count);

          std::vector<const void*> pointers;
          for (auto& in : inputs) pointers.push_back(in.data());
          std::vector<unsigned char> out(count * es);
          reduce_in_rank_order(pointers, out.data(), count, dt, op);
          CHECK(out == expected_bytes);

          // In place over the last input (the own piece of the last rank).
          reduce_in_rank_order(pointers, inputs.back().data(), count, dt, op);
          CHECK(inputs.back() == expected_bytes);
        }
}

TEST_CASE("reduce_in_rank_order: 16-bit sums accumulate in fp32 and round once", "[comm][reduce]") {
  // fp16 spacing at 2048 is 2: rounding after each add would give 2048 + 1 -> 2048, + 1 -> 2048.
  const uint16_t a = f32_to_f16(2048.0f), one = f32_to_f16(1.0f);
  const void* inputs[] = {&a, &one, &one};
  uint16_t out = 0;
  reduce_in_rank_order(inputs, &out, 1, DType::F16, ReduceOp::Sum);
  CHECK(f16_to_f32(out) == 2050.0f);
  // bf16 spacing at 256 is 2: the same effect.
  const uint16_t b = f32_to_bf16(256.0f), bone = f32_to_bf16(1.0f);
  const void* binputs[] = {&b, &bone, &bone};
  reduce_in_rank_order(binputs, &out, 1, DType::BF16, ReduceOp::Sum);
  CHECK(bf16_to_f32(out) == 258.0f);
}

TEST_CASE("reduce_in_rank_order: the order is rank order, not any other", "[comm][reduce]") {
  // (1e8 + -1e8) + 1 = 1, while 1e8 + (-1e8 + 1) = 0 in fp32.
  const float x0 = 1e8f, x1 = -1e8f, x2 = 1.0f;
  const void* inputs[] = {&x0, &x1, &x2};
  float out = -1;
  reduce_in_rank_order(inputs, &out, 1, DType::F32, ReduceOp::Sum);
  CHECK(out == 1.0f);
  const void* reordered[] = {&x0, &x2, &x1};
  reduce_in_rank_order(reordered, &out, 1, DType::F32, ReduceOp::Sum);
  CHECK(out == 0.0f);
}

TEST_CASE("reduce_in_rank_order: max propagates NaN from any rank", "[comm][reduce]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int at = 0; at < 3; ++at) {
    float v[3] = {1.0f, 5.0f, -2.0f};
    v[at] = nan;
    const void* inputs[] = {&v[0], &v[1], &v[2]};
    float out = 0;
    reduce_in_rank_order(inputs, &out, 1, DType::F32, ReduceOp::Max);
    CHECK(std::isnan(out));
  }
  CHECK_THROWS_AS(reduce_in_rank_order({}, nullptr, 1, DType::F32, ReduceOp::Sum), Error);
}

TEST_CASE("even_pieces and offsets", "[comm]") {
  for (int n = 1; n <= 5; ++n)
    for (size_t count : {0, 1, 4, 5, 1001}) {
      auto pieces = even_pieces(count, n);
      REQUIRE(pieces.size() == size_t(n));
      CHECK(total_count(pieces) == count);
      for (size_t p = 0; p + 1 < pieces.size(); ++p) CHECK(pieces[p] >= pieces[p + 1]);
      CHECK(pieces.front() - pieces.back() <= 1);
      auto offsets = piece_offsets(pieces);
      for (size_t p = 1; p < pieces.size(); ++p)
        CHECK(offsets[p] == offsets[p - 1] + pieces[p - 1]);
    }
}

TEST_CASE("binomial tree: every rank is reached exactly once, depth is floor(log2 N)", "[comm]") {
  for (int n = 1; n <= 9; ++n)
    for (int root = 0; root < n; ++root) {
      INFO("world " << n << " root " << root);
      CHECK(binomial_tree(root, root, n).parent == -1);
      std::multiset<int> reached;
      int max_depth = 0;
      for (int r = 0; r < n; ++r) {
        const BinomialTree t = binomial_tree(r, root, n);
        for (int child : t.children) {
          reached.insert(child);
          CHECK(binomial_tree(child, root, n).parent == r);
        }
        int depth = 0;
        for (int at = r; at != root; at = binomial_tree(at, root, n).parent) ++depth;
        max_depth = std::max(max_depth, depth);
      }
      CHECK(reached.size() == size_t(n - 1));
      CHECK(std::set<int>(reached.begin(), reached.end()).size() == size_t(n - 1));
      CHECK(reached.count(root) == 0);
      CHECK(max_depth == int(std::floor(std::log2(double(n)))));
    }
}

TEST_CASE("sequence check: the mismatch message names both ops", "[comm][check]") {
  OpSignature rs;
  rs.seq = 7;
  rs.op = CommOp::ReduceScatter;
  rs.count = 1000;
  rs.dtype = DType::BF16;
  OpSignature ag = rs;
  ag.op = CommOp::AllGather;
  std::vector<OpSignature> all = {rs, ag, rs};
  auto message = find_signature_mismatch(all);
  REQUIRE(message);
  CHECK(*message ==
        "rank 1 issued all_gather #7 (1000 bf16) while rank 0 issued reduce_scatter #7 (1000 bf16, "
        "sum)");

  all = {rs, rs, rs};
  CHECK_FALSE(find_signature_mismatch(all));

  // Same op and size cut differently.
  OpSignature cut = rs;
  cut.pieces_hash = hash_piece_counts(std::vector<size_t>{500, 500});
  rs.pieces_hash = hash_piece_counts(std::vector<size_t>{400, 600});
  all = {rs, cut};
  message = find_signature_mismatch(all);
  REQUIRE(message);
  CHECK_THAT(*message, Catch::Contains("rank 1") && Catch::Contains("different piece counts"));

  OpSignature bcast;
  bcast.seq = 3;
  bcast.op = CommOp::Broadcast;
  bcast.count = 5;
  bcast.root = 1;
  CHECK(describe(bcast) == "broadcast #3 (5 fp32 from rank 1)");
}

TEST_CASE("comm_op_name", "[comm]") {
  CHECK(comm_op_name(CommOp::AllReduce) == "all_reduce");
  CHECK(comm_op_name(CommOp::ReduceScatter) == "reduce_scatter");
  CHECK(comm_op_name(CommOp::AllGather) == "all_gather");
  CHECK(comm_op_name(CommOp::Broadcast) == "broadcast");
  CHECK(comm_op_name(CommOp::Barrier) == "barrier");
}

TEST_CASE("OpDeadline: a timeout counts from the op's start; one too large for the clock is none", "[comm][timeout]") {
  using Clock = OpDeadline::Clock;
  const auto now = Clock::now();
  const OpDeadline one_second(now, 1.0);
  CHECK_FALSE(one_second.never());
  CHECK_FALSE(one_second.passed(now + std::chrono::milliseconds(999)));
  CHECK(one_second.passed(now + std::chrono::milliseconds(1001)));
  // 1e10 s is past the end of a 64-bit nanosecond clock (about 9.2e9 s): no deadline, not one
  // that wrapped into the past.
  for (double never : {0.0, -1.0, 1e10, 1e300, std::numeric_limits<double>::infinity(),
                       std::numeric_limits<double>::quiet_NaN()}) {
    INFO(never);
    const OpDeadline d(now, never);
    CHECK(d.never());
    CHECK_FALSE(d.passed(now + std::chrono::hours(24 * 365 * 100)));
  }
  // Just below the end of the clock still works, from the clock's epoch.
  const OpDeadline far(Clock::time_point{}, 9e9);
  CHECK_FALSE(far.never());
  CHECK(far.passed(Clock::time_point{} + std::chrono::seconds(9'000'000'001LL)));
}
