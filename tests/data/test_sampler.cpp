#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "core/error.hpp"
#include "data/dataset.hpp"
#include "data/sampler.hpp"

using namespace zt;

namespace {

// Token i is i: every batch shows where it was read from.
class PositionDataset final : public TokenDataset {
public:
  explicit PositionDataset(int64_t n) : n_(n) {}
  TokenFormat format() const override { return TokenFormat::Uint16; }
  const std::string& path() const override { return name_; }
  int64_t size() const override { return n_; }
  int vocab_size() const override { return int(n_); }
  void read(int64_t begin, int64_t count, int32_t* out) const override {
    REQUIRE(begin >= 0);
    REQUIRE(begin + count <= n_);
    for (int64_t i = 0; i < count; ++i) out[i] = int32_t(begin + i);
  }
  void check_vocab(int) const override {}

private:
  int64_t n_;
  std::string name_ = "positions";
};

struct Batch {
  std::vector<int32_t> inputs, targets;
};

Batch fill(const BatchSampler& s, int64_t step, int micro) {
  Batch b{std::vector<int32_t>(size_t(s.window_tokens())), std::vector<int32_t>(size_t(s.window_tokens()))};
  s.fill(step, micro, b.inputs.data(), b.targets.data());
  return b;
}

// The window a batch came from, checking it is B*T+1 consecutive tokens split as inputs/targets.
int64_t window_read(const Batch& b, int64_t window_tokens) {
  for (size_t i = 0; i < b.inputs.size(); ++i) {
    REQUIRE(b.inputs[i] == b.inputs[0] + int32_t(i));
    REQUIRE(b.targets[i] == b.inputs[i] + 1);
  }
  REQUIRE(b.inputs[0] % window_tokens == 0);
  return b.inputs[0] / window_tokens;
}

}  // namespace

TEST_CASE("sequential order: start token ((s*GA + m)*W + r)*B*T, wrapping exactly", "[data][sampler]") {
  const int B = 2, T = 3, W = 3, GA = 2;  // B*T = 6
  PositionDataset data(200);              // K = floor(199 / 6) = 33 windows
  for (int r = 0; r < W; ++r) {
    BatchSampler s(data, B, T, W, r, GA, false, 7);
    CHECK(s.num_windows() == 33);
    for (int64_t step = 0; step < 12; ++step)
      for (int m = 0; m < GA; ++m) {
        int64_t g = (step * GA + m) * W + r;
        Batch b = fill(s, step, m);
        CHECK(b.inputs[0] == (g % 33) * 6);
        CHECK(window_read(b, 6) == g % 33);
      }
  }
  // The last window that fits ends exactly at token 32*6 + 7 = 199 <= 200; the next one wraps.
  BatchSampler one(data, B, T, 1, 0, 1, false, 7);
  CHECK(fill(one, 32, 0).inputs[0] == 192);
  CHECK(fill(one, 32, 0).targets.back() == 198);
  CHECK(fill(one, 33, 0).inputs[0] == 0);
  // A file of exactly B*T+1 tokens has one window; one token fewer is an error naming both counts.
  PositionDataset tight(7);
  BatchSampler t(tight, B, T, 1, 0, 1, false, 1);
  CHECK(t.num_windows() == 1);
  CHECK(fill(t, 5, 0).inputs[0] == 0);
  PositionDataset short_data(6);
  CHECK_THROWS_WITH(BatchSampler(short_data, B, T, 1, 0, 1, false, 1),
                    Catch::Contains("positions") && Catch::Contains("too few tokens") && Catch::Contains("7 needed") &&
                        Catch::Contains("6 present"));
}

TEST_CASE("W ranks with accumulation GA read what one process reads with GA*W", "[data][sampler]") {
  const int B = 1, T = 4, W = 4, GA = 3;
  PositionDataset data(1000);  // K = 249 windows: the run below crosses epochs
  for (bool shuffle : {false, true}) {
    BatchSampler single(data, B, T, 1, 0, GA * W, shuffle, 42);
    for (int64_t step = 0; step < 30; ++step)
      for (int r = 0; r < W; ++r) {
        BatchSampler rank(data, B, T, W, r, GA, shuffle, 42);
        for (int m = 0; m < GA; ++m) REQUIRE(fill(rank, step, m).inputs == fill(single, step, m * W + r).inputs);
      }
  }
}

TEST_CASE("shuffled order: each window once per epoch, new order each epoch, seeded", "[data][sampler]") {
  const int B = 2, T = 5;
  PositionDataset data(1001);  // K = 100
  BatchSampler s(data, B, T, 1, 0, 1, true, 123);
  BatchSampler same(data, B, T, 1, 0, 1, true, 123);
  BatchSampler other_seed(data, B, T, 1, 0, 1, true, 124);
  const int64_t K = s.num_windows();
  REQUIRE(K == 100);
  std::vector<std::vector<int64_t>> epochs(3);
  int same_as_other_seed = 0;
  for (int64_t step = 0; step < 3 * K; ++step) {
    Batch b = fill(s, step, 0);
    epochs[size_t(step / K)].push_back(window_read(b, 10));
    CHECK(b.inputs == fill(same, step, 0).inputs);
    same_as_other_seed += b.inputs == fill(other_seed, step, 0).inputs;
    CHECK(s.epoch_of(step) == step / K);
  }
  for (auto& e : epochs) {
    std::set<int64_t> distinct(e.begin(), e.end());
    CHECK(distinct.size() == size_t(K));  // a permutation of all windows
    CHECK(*distinct.rbegin() == K - 1);
  }
  CHECK(epochs[0] != epochs[1]);
  CHECK(epochs[1] != epochs[2]);
  std::vector<int64_t> identity(static_cast<size_t>(K));
  for (int64_t k = 0; k < K; ++k) identity[size_t(k)] = k;
  CHECK(epochs[0] != identity);
  CHECK(same_as_other_seed < 20);
}

TEST_CASE("evaluation: a fixed set of windows in order, shared by the ranks whatever their number", "[data][sampler]") {
  const int B = 1, T = 8;
  PositionDataset data(90);  // K = 11
  for (int64_t requested : {0, 7, 11, 50}) {
    const int64_t want = requested == 0 || requested > 11 ? 11 : requested;
    for (int W = 1; W <= 4; ++W) {
      INFO(requested << " windows requested, " << W << " ranks");
      std::vector<int64_t> read;
      int64_t rounds = -1;
      for (int r = 0; r < W; ++r) {
        BatchSampler s(data, B, T, W, r, 1, /*shuffle=*/true, 1);
        const int64_t windows = s.eval_windows(requested);
        CHECK(windows == want);
        if (rounds >= 0) CHECK(s.eval_rounds(windows) == rounds);  // every rank runs the same rounds
        rounds = s.eval_rounds(windows);
        std::vector<int32_t> in(8), tg(8);
        for (int64_t b = 0; b < rounds; ++b) {
          const bool has = s.fill_eval(b, windows, in.data(), tg.data());
          CHECK(has == (b * W + r < windows));
          if (has) {
            CHECK(in[0] / 8 == b * W + r);  // never shuffled
            CHECK(tg[0] == in[0] + 1);
            read.push_back(in[0] / 8);
          } else {
            CHECK(count_targets(tg.data(), 8) == 0);  // a forward in step with the others, counting nothing
          }
        }
      }
      std::sort(read.begin(), read.end());
      std::vector<int64_t> all(static_cast<size_t>(want));
      for (int64_t k = 0; k < want; ++k) all[size_t(k)] = k;
      CHECK(read == all);  // each window exactly once, the same windows at every world size
    }
  }
}

TEST_CASE("sampler state round-trips and restores the seed", "[data][sampler]") {
  PositionDataset data(500);
  BatchSampler s(data, 2, 4, 2, 1, 3, true, 99);
  SamplerState st = s.state(17);
  CHECK(st.seed == 99);
  CHECK(st.next_step == 17);
  CHECK(st.windows_per_step == 6);
  SamplerState back = sampler_state_from_json(sampler_state_to_json(st));
  CHECK(back.seed == st.seed);
  CHECK(back.shuffle == st.shuffle);
  CHECK(back.next_step == st.next_step);
  CHECK(back.window_tokens == st.window_tokens);
  CHECK(back.num_windows == st.num_windows);
  CHECK(back.windows_per_step == st.windows_per_step);
  // A sampler built with another seed continues the saved order once restored.
  BatchSampler resumed(data, 2, 4, 2, 1, 3, true, 5);
  CHECK(resumed.restore(back) == 17);
  for (int m = 0; m < 3; ++m) CHECK(fill(resumed, 17, m).inputs == fill(s, 17, m).inputs);
  auto j = sampler_state_to_json(st);
  j.erase("seed");
  CHECK_THROWS_WITH(sampler_state_from_json(j), Catch::Contains("seed"));
}

TEST_CASE("a resumed run reads on from the saved window at another world size and accumulation", "[data][sampler]") {
  PositionDataset data(1001);  // K = 125 windows of 8
  const int B = 2, T = 4;
  // Straight: 2 ranks x 3 micro-steps = 6 windows per step; a checkpoint after step 5 (windows 0..29).
  BatchSampler saved_by(data, B, T, 2, 1, 3, true, 42);
  const SamplerState st = sampler_state_from_json(sampler_state_to_json(saved_by.state(5)));
  CHECK(st.next_window == 30);
  // Resumed on 3 ranks x 1 micro-step, then 1 rank x 4: step 5 starts at window 30, 6 at 33 (then 37).
  for (auto [W, GA] : {std::pair{3, 1}, std::pair{1, 4}}) {
    for (int r = 0; r < W; ++r) {
      BatchSampler resumed(data, B, T, W, r, GA, true, 1);
      CHECK(resumed.restore(st) == 5);
      for (int m = 0; m < GA; ++m)
        for (int64_t step : {5, 6}) {
          const int64_t g = 30 + (step - 5) * W * GA + m * W + r;
          CHECK(resumed.global_index(step, m) == g);
          CHECK(window_read(fill(resumed, step, m), 8) == saved_by.window_of(g));  // the same permutation
        }
      CHECK_THROWS_WITH(fill(resumed, 4, 0), Catch::Contains("before step 6"));
    }
  }
  // A checkpoint from before the position was saved: the step's first window in its own order.
  auto old = sampler_state_to_json(saved_by.state(5));
  old.erase("next_window");
  old.erase("files");
  CHECK(sampler_state_from_json(old).next_window == 30);
}

TEST_CASE("sampler arguments are checked", "[data][sampler]") {
  PositionDataset data(100);
  CHECK_THROWS_AS(BatchSampler(data, 0, 4, 1, 0, 1, false, 1), zt::Error);
  CHECK_THROWS_AS(BatchSampler(data, 1, 4, 2, 2, 1, false, 1), zt::Error);
  BatchSampler s(data, 1, 4, 1, 0, 2, false, 1);
  std::vector<int32_t> a(4), b(4);
  CHECK_THROWS_AS(s.fill(0, 2, a.data(), b.data()), zt::Error);
  CHECK_THROWS_AS(s.fill(-1, 0, a.data(), b.data()), zt::Error);
}
