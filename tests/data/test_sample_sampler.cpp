// Rows of samples as training reads them (data/sample_sampler.hpp): what a micro-batch holds (the
// samples' tokens, shifted targets, the mask, padding, segments), epochs that count samples with
// none skipped at an epoch's end, the seeded shuffle, the ranks' shares, and resuming.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <vector>

#include "core/ignored_target.hpp"
#include "core/row_segments.hpp"
#include "data/sample_sampler.hpp"
#include "sample_dataset.hpp"

using namespace zt;
using zt::test::SampleDataset;

namespace {

RowOptions options(Packing packing, int seq_len, Padding padding = Padding::Longest) {
  return {packing, padding, Truncation::Truncate, seq_len};
}

struct MicroBatch {
  BatchShape shape;
  std::vector<int32_t> inputs, targets;
  std::vector<std::vector<int32_t>> starts;  // per row
};

MicroBatch fill(const SampleSampler& s, int64_t step, int micro) {
  MicroBatch m;
  m.inputs.resize(size_t(s.batch()) * size_t(s.seq_len()));
  m.targets.resize(m.inputs.size());
  RowSegments segments(cpu_device(), MemSpace::Host, s.batch(), s.seq_len());
  m.shape = s.fill_micro_batch(step, micro, m.inputs.data(), m.targets.data(), &segments);
  for (int b = 0; b < m.shape.batch; ++b) m.starts.push_back(segments.starts(b));
  return m;
}

// The samples in each row of a micro-batch, read from the tokens where each segment starts.
std::vector<std::vector<int64_t>> samples_in(const MicroBatch& m, const SampleDataset& data) {
  std::vector<std::vector<int64_t>> rows;
  for (int b = 0; b < m.shape.batch; ++b) {
    rows.emplace_back();
    for (int32_t start : m.starts[size_t(b)]) {
      const int32_t token = m.inputs[size_t(b) * size_t(m.shape.seq) + size_t(start)];
      if (token != 0) rows.back().push_back(data.sample_of_token(token));  // 0: padding
    }
  }
  return rows;
}

// The samples of each row that `steps` steps read, over all ranks, in the order of the global rows
// (rank r's micro-step m holds rows (m*W + r)*B ...).
std::vector<std::vector<int64_t>> rows_read(const SampleDataset& data, const RowOptions& o, int B, int W, int GA,
                                            bool shuffle, uint64_t seed, int64_t steps) {
  std::vector<std::vector<int64_t>> out;
  std::vector<SampleSampler> ranks;
  for (int r = 0; r < W; ++r) ranks.emplace_back(data, o, B, W, r, GA, shuffle, seed);
  for (int64_t step = 0; step < steps; ++step)
    for (int m = 0; m < GA; ++m)
      for (int r = 0; r < W; ++r)
        for (const auto& row : samples_in(fill(ranks[size_t(r)], step, m), data)) out.push_back(row);
  return out;
}

std::vector<int64_t> flat(std::vector<std::vector<int64_t>>::const_iterator begin,
                          std::vector<std::vector<int64_t>>::const_iterator end) {
  std::vector<int64_t> out;
  for (auto row = begin; row != end; ++row) out.insert(out.end(), row->begin(), row->end());
  return out;
}

// The samples that `steps` steps read, in order.
std::vector<int64_t> samples_read(const SampleDataset& data, const RowOptions& o, int B, int W, int GA, bool shuffle,
                                  uint64_t seed, int64_t steps) {
  const auto rows = rows_read(data, o, B, W, GA, shuffle, seed, steps);
  return flat(rows.begin(), rows.end());
}

std::vector<int64_t> sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<int64_t> all_samples(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), int64_t(0));
  return v;
}

}  // namespace

TEST_CASE("a micro-batch of samples: tokens, shifted targets with the mask, padding, segments",
          "[data][sample_sampler]") {
  const SampleDataset data({3, 5, 2, 4}, /*masked=*/true);  // tokens 1..14
  SECTION("one sample a row, padded to the longest of the micro-batch") {
    const SampleSampler s(data, options(Packing::None, 8), 2, 1, 0, 1, false, 1);
    const MicroBatch m = fill(s, 0, 0);  // samples 0 (tokens 1..3) and 1 (4..8)
    REQUIRE(m.shape.batch == 2);
    REQUIRE(m.shape.seq == 5);
    const int32_t I = kIgnoredTarget;
    // Token i + 1 at position i counts as a target unless i % 3 == 0; the last of a sample never.
    CHECK(std::vector<int32_t>(m.inputs.begin(), m.inputs.begin() + 5) == std::vector<int32_t>{1, 2, 3, 0, 0});
    CHECK(std::vector<int32_t>(m.targets.begin(), m.targets.begin() + 5) == std::vector<int32_t>{2, 3, I, I, I});
    CHECK(std::vector<int32_t>(m.inputs.begin() + 5, m.inputs.begin() + 10) == std::vector<int32_t>{4, 5, 6, 7, 8});
    CHECK(std::vector<int32_t>(m.targets.begin() + 5, m.targets.begin() + 10) == std::vector<int32_t>{5, 6, I, 8, I});
    CHECK(m.starts == std::vector<std::vector<int32_t>>{{0, 3}, {0}});
  }
  SECTION("packed rows padded to seq_len") {
    const SampleSampler s(data, options(Packing::Pack, 8, Padding::MaxLength), 2, 1, 0, 1, false, 1);
    // First fit decreasing: 5 -> row 0, 4 -> row 1, 3 -> row 0, 2 -> row 1.
    const MicroBatch m = fill(s, 0, 0);
    REQUIRE(m.shape.seq == 8);
    CHECK(samples_in(m, data) == std::vector<std::vector<int64_t>>{{1, 0}, {3, 2}});
    CHECK(m.starts == std::vector<std::vector<int32_t>>{{0, 5}, {0, 4, 6}});
    const int32_t I = kIgnoredTarget;
    CHECK(std::vector<int32_t>(m.inputs.begin(), m.inputs.begin() + 8) == std::vector<int32_t>{4, 5, 6, 7, 8, 1, 2, 3});
    CHECK(std::vector<int32_t>(m.targets.begin(), m.targets.begin() + 8) ==
          std::vector<int32_t>{5, 6, I, 8, I, 2, 3, I});
    CHECK(std::vector<int32_t>(m.inputs.begin() + 8, m.inputs.end()) ==
          std::vector<int32_t>{11, 12, 13, 14, 9, 10, 0, 0});
    CHECK(std::vector<int32_t>(m.targets.begin() + 8, m.targets.end()) ==
          std::vector<int32_t>{12, I, 14, I, I, I, I, I});
    const StepTokens t = s.step_tokens(0, 0);
    CHECK(t.tokens == 14);
    CHECK(t.row_tokens == 16);
    CHECK(t.attended == 25 + 9 + 16 + 4);
    CHECK(t.attended_in_window == t.attended);
    CHECK(s.step_tokens(0, 3).attended_in_window == 5 * 3 + 3 * 3 + 4 * 3 + 2 * 2);  // a window of 3 keys
    CHECK(s.step_tokens(0, 3).attended == t.attended);
    CHECK(t.counted ==
          std::count_if(m.targets.begin(), m.targets.end(), [](int32_t x) { return x != kIgnoredTarget; }));
  }
}

TEST_CASE("epochs count samples: every sample once an epoch, none skipped where a step runs over",
          "[data][sample_sampler]") {
  std::vector<int64_t> lengths;
  for (int k = 0; k < 23; ++k) lengths.push_back(1 + (k * 7) % 11);
  const SampleDataset data(lengths);
  for (Packing packing : {Packing::None, Packing::Pack}) {
    const RowOptions o = options(packing, 12);
    const SampleSampler probe(data, o, 2, 1, 0, 1, true, 3);
    const int64_t R = probe.epoch_units();
    INFO("packing " << kPackingNames.name(packing) << ", " << R << " rows an epoch");
    // B 2 x GA 1 x W 5 = 10 rows a step, which R does not divide: epochs end inside steps.
    REQUIRE(R % 10 != 0);
    for (bool shuffle : {false, true}) {
      const auto read = rows_read(data, o, 2, 5, 1, shuffle, 3, (3 * R + 9) / 10);
      REQUIRE(int64_t(read.size()) >= 3 * R);
      // Rows in the order read: each R of them hold every sample once.
      for (int64_t epoch = 0; epoch < 3; ++epoch)
        CHECK(sorted(flat(read.begin() + ptrdiff_t(epoch * R), read.begin() + ptrdiff_t((epoch + 1) * R))) ==
              all_samples(23));
    }
  }
}

TEST_CASE("the shuffle is seeded, another each epoch, and the ranks read what one process reads",
          "[data][sample_sampler]") {
  const SampleDataset data(std::vector<int64_t>(40, 4));
  const RowOptions o = options(Packing::None, 4);
  const auto order = [&](uint64_t seed, bool shuffle) { return samples_read(data, o, 2, 1, 4, shuffle, seed, 10); };
  const std::vector<int64_t> a = order(7, true);  // two epochs of 40 rows
  CHECK(a == order(7, true));
  CHECK(a != order(8, true));
  const std::vector<int64_t> first(a.begin(), a.begin() + 40), second(a.begin() + 40, a.end());
  CHECK(first != all_samples(40));
  CHECK(first != second);
  CHECK(sorted(first) == all_samples(40));
  CHECK(sorted(second) == all_samples(40));
  const std::vector<int64_t> in_order = order(7, false);
  CHECK(std::vector<int64_t>(in_order.begin(), in_order.begin() + 40) == all_samples(40));
  // Two ranks with accumulation 2 read, together, what one process with accumulation 4 reads.
  CHECK(samples_read(data, o, 2, 2, 2, true, 7, 10) == a);
}

TEST_CASE("a resumed sampler goes on with the rows the run would have read", "[data][sample_sampler]") {
  std::vector<int64_t> lengths;
  for (int k = 0; k < 30; ++k) lengths.push_back(2 + k % 5);
  const SampleDataset data(lengths);
  const RowOptions o = options(Packing::Pack, 9);
  const SampleSampler run(data, o, 2, 1, 0, 1, true, 11);
  const SamplerState saved = sampler_state_from_json(sampler_state_to_json(run.state(5)));
  CHECK(saved.unit == "rows");
  CHECK(saved.next_row == 10);
  // Resumed at twice the world size and half the accumulation: the same global rows.
  std::vector<int64_t> want, got;
  for (int64_t step = 5; step < 9; ++step) {
    const auto rows = samples_in(fill(run, step, 0), data);
    for (const auto& r : rows) want.insert(want.end(), r.begin(), r.end());
  }
  // The seed is the checkpoint's (the order goes on), whatever the config says now.
  SampleSampler resumed(data, o, 1, 2, 0, 1, true, 99), resumed1(data, o, 1, 2, 1, 1, true, 99);
  CHECK(resumed.restore(saved) == 5);
  CHECK(resumed1.restore(saved) == 5);
  for (int64_t step = 5; step < 9; ++step)
    for (const SampleSampler* s : {&resumed, &resumed1}) {
      const auto rows = samples_in(fill(*s, step, 0), data);
      for (const auto& r : rows) got.insert(got.end(), r.begin(), r.end());
    }
  CHECK(got == want);
}

TEST_CASE("evaluation reads every row once, in order, stand-ins counting nothing", "[data][sample_sampler]") {
  const SampleDataset data({3, 4, 5, 6, 7});
  const RowOptions o = options(Packing::None, 8);
  std::vector<int64_t> read;
  for (int r = 0; r < 2; ++r) {
    const SampleSampler s(data, o, 2, 2, r, 1, false, 1);
    const int64_t batches = s.eval_batches(0);
    REQUIRE(batches == 3);
    REQUIRE(s.eval_rounds(batches) == 2);
    for (int64_t round = 0; round < 2; ++round) {
      std::vector<int32_t> inputs(16), targets(16);
      RowSegments segments(cpu_device(), MemSpace::Host, 2, 8);
      const BatchShape shape = s.fill_eval_batch(round, batches, inputs.data(), targets.data(), &segments);
      const bool stand_in = round * 2 + r >= batches;
      CHECK(shape.stand_in == stand_in);
      if (stand_in) {
        CHECK(std::all_of(targets.begin(), targets.begin() + shape.tokens(),
                          [](int32_t t) { return t == kIgnoredTarget; }));
        continue;
      }
      for (int b = 0; b < shape.batch; ++b) read.push_back(data.sample_of_token(inputs[size_t(b * shape.seq)]));
    }
  }
  CHECK(sorted(read) == all_samples(5));
}

TEST_CASE("describe() names samples, rows, truncation and the packing efficiency", "[data][sample_sampler]") {
  const SampleDataset data({4, 12, 6, 2});
  const SampleSampler s(data, {Packing::Pack, Padding::MaxLength, Truncation::Truncate, 8}, 1, 1, 0, 1, false, 1);
  // Cut to 4, 8, 6, 2 = 20 tokens: rows {8}, {6, 2}, {4}: 20 of 24.
  CHECK(s.describe() ==
        "4 samples, 1 longer than seq_len 8 cut to it (4 tokens lost), packed into 3 rows of up to 8 tokens, padded "
        "to 8 tokens: packing efficiency 83.3% (16.7% padding)");
}
