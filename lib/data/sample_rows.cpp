#include "data/sample_rows.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "core/error.hpp"

namespace zt {

Packing packing_from_name(std::string_view name) {
  if (name == "none") return Packing::None;
  if (name == "pack") return Packing::Pack;
  if (name == "windows") return Packing::Windows;
  fail("data.packing: unknown value \"{}\" (expected none, pack or windows)", name);
}

Padding padding_from_name(std::string_view name) {
  if (name == "longest") return Padding::Longest;
  if (name == "max_length") return Padding::MaxLength;
  fail("data.padding: unknown value \"{}\" (expected longest or max_length)", name);
}

Truncation truncation_from_name(std::string_view name) {
  if (name == "truncate") return Truncation::Truncate;
  if (name == "drop") return Truncation::Drop;
  fail("data.truncation: unknown value \"{}\" (expected truncate or drop)", name);
}

std::string_view packing_name(Packing p) {
  switch (p) {
    case Packing::None: return "none";
    case Packing::Pack: return "pack";
    case Packing::Windows: return "windows";
  }
  return "?";
}

int32_t SampleRows::row_length(int64_t r) const {
  int32_t n = 0;
  for (int64_t e = row_begin[size_t(r)]; e < row_begin[size_t(r) + 1]; ++e) n += length[size_t(e)];
  return n;
}

namespace {

// The leftmost of n bins with at least `need` free, over a tree of the largest free space below
// each node: first fit in O(log n) per sample.
class FirstFit {
public:
  FirstFit(size_t n, int32_t capacity) {
    while (leaves_ < n) leaves_ *= 2;
    free_.assign(2 * leaves_, capacity);
  }
  // Takes `need` from the first bin that has it, and returns that bin.
  size_t place(int32_t need) {
    size_t node = 1;
    while (node < leaves_) node = free_[2 * node] >= need ? 2 * node : 2 * node + 1;
    free_[node] -= need;
    for (size_t up = node / 2; up >= 1; up /= 2) free_[up] = std::max(free_[2 * up], free_[2 * up + 1]);
    return node - leaves_;
  }

private:
  size_t leaves_ = 1;
  std::vector<int32_t> free_;
};

// Rows of the kept samples, several to a row: the longest first, each into the first row with room.
void pack_rows(SampleRows& rows, std::vector<int64_t> kept, std::vector<int32_t> lengths, int seq_len) {
  std::vector<size_t> order(kept.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return lengths[a] > lengths[b]; });
  FirstFit bins(kept.size(), seq_len);
  std::vector<size_t> bin_of(kept.size());
  size_t bins_used = 0;
  for (size_t i : order) {
    bin_of[i] = bins.place(lengths[i]);
    bins_used = std::max(bins_used, bin_of[i] + 1);
  }
  // Each row's samples in the order they were placed.
  std::vector<int64_t> begin(bins_used + 1, 0);
  for (size_t i : order) ++begin[bin_of[i] + 1];
  std::partial_sum(begin.begin(), begin.end(), begin.begin());
  rows.row_begin = begin;
  rows.sample.resize(kept.size());
  rows.length.resize(kept.size());
  for (size_t i : order) {
    const size_t e = size_t(begin[bin_of[i]]++);
    rows.sample[e] = kept[i];
    rows.length[e] = lengths[i];
  }
}

}  // namespace

SampleRows plan_rows(std::span<const int64_t> offsets, const RowOptions& o, const std::string& source) {
  if (o.packing == Packing::Windows) fail("{}: plan_rows takes packing none or pack", source);
  if (o.seq_len < 1) fail("{}: seq_len {} must be positive", source, o.seq_len);
  SampleRows rows;
  std::vector<int64_t> kept;
  std::vector<int32_t> lengths;
  for (size_t k = 0; k + 1 < offsets.size(); ++k) {
    const int64_t n = offsets[k + 1] - offsets[k];
    if (n > o.seq_len) {
      rows.cut_tokens += o.truncation == Truncation::Drop ? n : n - o.seq_len;
      ++(o.truncation == Truncation::Drop ? rows.dropped : rows.truncated);
      if (o.truncation == Truncation::Drop) continue;
    }
    kept.push_back(int64_t(k));
    lengths.push_back(int32_t(std::min<int64_t>(n, o.seq_len)));
    rows.tokens += lengths.back();
  }
  if (kept.empty())
    fail("{}: none of its {} samples fits data.seq_len {}, and data.truncation drop leaves them all out", source,
         offsets.size() - 1, o.seq_len);
  if (o.packing == Packing::Pack) {
    pack_rows(rows, std::move(kept), std::move(lengths), o.seq_len);
    return rows;
  }
  rows.row_begin.resize(kept.size() + 1);
  std::iota(rows.row_begin.begin(), rows.row_begin.end(), int64_t(0));
  rows.sample = std::move(kept);
  rows.length = std::move(lengths);
  return rows;
}

SampleRows plan_pair_rows(std::span<const int64_t> offsets, std::span<const int64_t> prompt_lengths,
                          const RowOptions& o, const std::string& source) {
  if (o.packing != Packing::None) fail("{}: preference pairs take packing none", source);
  if (o.seq_len < 1) fail("{}: seq_len {} must be positive", source, o.seq_len);
  SampleRows rows;
  rows.row_begin.clear();
  for (size_t i = 0; i < prompt_lengths.size(); ++i) {
    if (prompt_lengths[i] >= o.seq_len) {
      ++rows.dropped;
      rows.cut_tokens += offsets[2 * i + 2] - offsets[2 * i];
      continue;
    }
    for (size_t k = 2 * i; k < 2 * i + 2; ++k) {
      const int64_t n = offsets[k + 1] - offsets[k];
      if (n > o.seq_len) {
        ++rows.truncated;
        rows.cut_tokens += n - o.seq_len;
      }
      rows.row_begin.push_back(int64_t(rows.sample.size()));
      rows.sample.push_back(int64_t(k));
      rows.length.push_back(int32_t(std::min<int64_t>(n, o.seq_len)));
      rows.tokens += rows.length.back();
    }
  }
  rows.row_begin.push_back(int64_t(rows.sample.size()));
  if (rows.sample.empty())
    fail("{}: the prompt of each of its {} pairs fills data.seq_len {} (TRL's max_length): no pair is left", source,
         prompt_lengths.size(), o.seq_len);
  return rows;
}

std::string describe_truncation(const SampleRows& rows, const RowOptions& o) {
  const int64_t n = rows.truncated + rows.dropped;
  if (n == 0) return "";
  return fmt::format("{} longer than seq_len {} {} ({} tokens lost)", n, o.seq_len,
                     rows.dropped ? "left out" : "cut to it", rows.cut_tokens);
}

}  // namespace zt
