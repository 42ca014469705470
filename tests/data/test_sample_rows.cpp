// The rows that samples of record data make (data/sample_rows.hpp): every sample placed once,
// rows within seq_len, first-fit decreasing against a plain reference, truncation and its count.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "data/sample_rows.hpp"

using namespace zt;

namespace {

std::vector<int64_t> offsets_of(const std::vector<int64_t>& lengths) {
  std::vector<int64_t> offsets{0};
  for (int64_t n : lengths) offsets.push_back(offsets.back() + n);
  return offsets;
}

RowOptions options(Packing packing, int seq_len, Truncation truncation = Truncation::Truncate) {
  return {packing, Padding::Longest, truncation, seq_len};
}

// Per row, its (sample, length) entries.
std::vector<std::vector<std::pair<int64_t, int32_t>>> rows_of(const SampleRows& r) {
  std::vector<std::vector<std::pair<int64_t, int32_t>>> out(size_t(r.rows()));
  for (int64_t row = 0; row < r.rows(); ++row)
    for (int64_t e = r.row_begin[size_t(row)]; e < r.row_begin[size_t(row) + 1]; ++e)
      out[size_t(row)].emplace_back(r.sample[size_t(e)], r.length[size_t(e)]);
  return out;
}

// First-fit decreasing as the textbook states it: the samples by length, longest first (ties in
// file order), each into the first row with room, scanning the rows one by one.
std::vector<std::vector<std::pair<int64_t, int32_t>>> reference_ffd(const std::vector<int64_t>& lengths, int seq_len) {
  std::vector<size_t> order(lengths.size());
  std::iota(order.begin(), order.end(), size_t(0));
  // A sample cut to seq_len is as long as seq_len.
  const auto length = [&](size_t i) { return int32_t(std::min<int64_t>(lengths[i], seq_len)); };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return length(a) > length(b); });
  std::vector<std::vector<std::pair<int64_t, int32_t>>> rows;
  std::vector<int64_t> used;
  for (size_t i : order) {
    const int32_t n = length(i);
    size_t row = 0;
    while (row < rows.size() && used[row] + n > seq_len) ++row;
    if (row == rows.size()) {
      rows.emplace_back();
      used.push_back(0);
    }
    rows[row].emplace_back(int64_t(i), n);
    used[row] += n;
  }
  return rows;
}

void require_each_sample_once(const SampleRows& r, size_t samples, int seq_len) {
  std::vector<int> seen(samples, 0);
  int64_t tokens = 0;
  for (int64_t row = 0; row < r.rows(); ++row) {
    REQUIRE(r.row_length(row) <= seq_len);
    REQUIRE(r.row_length(row) > 0);
  }
  for (size_t e = 0; e < r.sample.size(); ++e) {
    ++seen[size_t(r.sample[e])];
    tokens += r.length[e];
  }
  CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  CHECK(tokens == r.tokens);
}

}  // namespace

TEST_CASE("packing none: one sample a row, in file order", "[data][sample_rows]") {
  const std::vector<int64_t> lengths{5, 1, 8, 3};
  const SampleRows r = plan_rows(offsets_of(lengths), options(Packing::None, 8), "t");
  REQUIRE(r.rows() == 4);
  for (int64_t row = 0; row < 4; ++row) {
    REQUIRE(rows_of(r)[size_t(row)] == std::vector<std::pair<int64_t, int32_t>>{{row, int32_t(lengths[size_t(row)])}});
  }
  CHECK(r.tokens == 17);
  CHECK(r.fill(8) == Approx(17.0 / 32.0));
}

TEST_CASE("packing pack: first-fit decreasing, by hand", "[data][sample_rows]") {
  // 5 -> row 0 (3 left), 4 -> row 1 (4 left), 3 -> row 0 (full), 3 -> row 1 (1 left), 2 -> row 2,
  // 1 -> row 1 (full): each row's samples in the order they were placed.
  const SampleRows r = plan_rows(offsets_of({3, 5, 1, 2, 4, 3}), options(Packing::Pack, 8), "t");
  using Row = std::vector<std::pair<int64_t, int32_t>>;
  REQUIRE(rows_of(r) == std::vector<Row>{{{1, 5}, {0, 3}}, {{4, 4}, {5, 3}, {2, 1}}, {{3, 2}}});
  CHECK(r.tokens == 18);
  CHECK(r.fill(8) == Approx(18.0 / 24.0));
}

TEST_CASE("packing pack: every sample once, rows within seq_len, the reference's first fit", "[data][sample_rows]") {
  Rng rng(5);
  for (int trial = 0; trial < 20; ++trial) {
    const int seq_len = 16 + int(rng.below(100));
    std::vector<int64_t> lengths(1 + rng.below(300));
    for (int64_t& n : lengths) n = 1 + int64_t(rng.below(uint64_t(seq_len + seq_len / 4)));  // some too long
    INFO("trial " << trial << ", seq_len " << seq_len << ", " << lengths.size() << " samples");
    const SampleRows r = plan_rows(offsets_of(lengths), options(Packing::Pack, seq_len), "t");
    require_each_sample_once(r, lengths.size(), seq_len);
    REQUIRE(rows_of(r) == reference_ffd(lengths, seq_len));
    // Packing never needs more rows than one a sample, and fills them at least as well.
    const SampleRows one = plan_rows(offsets_of(lengths), options(Packing::None, seq_len), "t");
    require_each_sample_once(one, lengths.size(), seq_len);
    CHECK(r.rows() <= one.rows());
    CHECK(r.fill(seq_len) >= one.fill(seq_len));
  }
}

TEST_CASE("a sample longer than seq_len is cut to it or left out, and counted", "[data][sample_rows]") {
  const std::vector<int64_t> offsets = offsets_of({4, 12, 6, 9});
  for (Packing packing : {Packing::None, Packing::Pack}) {
    const SampleRows cut = plan_rows(offsets, options(packing, 8, Truncation::Truncate), "t");
    CHECK(cut.truncated == 2);
    CHECK(cut.dropped == 0);
    CHECK(cut.cut_tokens == 4 + 1);
    CHECK(cut.tokens == 4 + 8 + 6 + 8);
    require_each_sample_once(cut, 4, 8);
    CHECK(describe_truncation(cut, options(packing, 8)) == "2 longer than seq_len 8 cut to it (5 tokens lost)");

    const SampleRows left = plan_rows(offsets, options(packing, 8, Truncation::Drop), "t");
    CHECK(left.dropped == 2);
    CHECK(left.truncated == 0);
    CHECK(left.cut_tokens == 12 + 9);
    CHECK(left.tokens == 10);
    std::vector<int64_t> kept = left.sample;
    std::sort(kept.begin(), kept.end());
    CHECK(kept == std::vector<int64_t>{0, 2});
    CHECK(describe_truncation(left, options(packing, 8)) == "2 longer than seq_len 8 left out (21 tokens lost)");
  }
  CHECK(describe_truncation(plan_rows(offsets_of({3, 2}), options(Packing::None, 8), "t"), options(Packing::None, 8))
            .empty());
}

TEST_CASE("samples that all are dropped, and unknown names, are refused by name", "[data][sample_rows]") {
  CHECK_THROWS_WITH(plan_rows(offsets_of({9, 10}), options(Packing::Pack, 8, Truncation::Drop), "data.train"),
                    Catch::Contains("data.train: none of its 2 samples fits data.seq_len 8"));
  CHECK_THROWS_WITH(kPackingNames.parse("multipack", "data.packing"),
                    "data.packing: unknown value \"multipack\" (expected none, pack or windows)");
  CHECK_THROWS_WITH(kTruncationNames.parse("cut", "data.truncation"),
                    "data.truncation: unknown value \"cut\" (expected truncate or drop)");
  CHECK_THROWS_WITH(kPaddingNames.parse("left", "data.padding"),
                    "data.padding: unknown value \"left\" (expected longest or max_length)");
}
