#include "core/row_segments.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"

namespace zt {

RowSegments::RowSegments(Device& device, MemSpace space, int max_batch, int max_seq)
    : table_(device, space, MemCategory::Activations, size_t(max_batch) * size_t(max_seq), Init::Uninitialised),
      padding_from_(device, space, MemCategory::Activations, size_t(std::max(max_batch, 0)), Init::Uninitialised),
      max_batch_(max_batch),
      max_seq_(max_seq) {
  if (max_batch <= 0 || max_seq <= 0) fail("RowSegments: room for {} rows of {} tokens", max_batch, max_seq);
  reset(max_batch, max_seq);
}

size_t RowSegments::bytes(int max_batch, int max_seq) {
  return size_t(max_batch) * size_t(max_seq) * sizeof(TokenSegment) + size_t(max_batch) * sizeof(int32_t);
}

void RowSegments::reset(int B, int T) {
  if (B <= 0 || T <= 0 || size_t(B) * size_t(T) > size_t(max_batch_) * size_t(max_seq_))
    fail("RowSegments::reset: {} rows of {} tokens do not fit the room for {} rows of {}", B, T, max_batch_, max_seq_);
  B_ = B;
  T_ = T;
  for (size_t i = 0; i < size_t(B) * size_t(T); i++) table_[i] = {0, T};
  std::fill_n(padding_from_.data(), size_t(B), T);
}

void RowSegments::set_row(int b, std::span<const int32_t> starts, bool padding) {
  if (b < 0 || b >= B_) fail("RowSegments::set_row: row {} is outside [0, {})", b, B_);
  if (starts.empty() || starts[0] != 0)
    fail("RowSegments::set_row: row {}'s first sample must start at 0 (got {})", b,
         starts.empty() ? std::string("no starts") : std::to_string(starts[0]));
  for (size_t s = 1; s < starts.size(); s++)
    if (starts[s] <= starts[s - 1] || starts[s] >= T_)
      fail("RowSegments::set_row: row {}, start {} = {} must lie in ({}, {})", b, s, starts[s], starts[s - 1], T_);
  if (padding && starts.size() < 2) fail("RowSegments::set_row: row {} is all padding (expected a sample first)", b);
  padding_from_[size_t(b)] = padding ? starts.back() : T_;
  TokenSegment* row = table_.data() + size_t(b) * size_t(T_);
  for (size_t s = 0; s < starts.size(); s++) {
    const int32_t end = s + 1 < starts.size() ? starts[s + 1] : T_;
    for (int32_t t = starts[s]; t < end; t++) row[t] = {starts[s], end};
  }
}

std::vector<int32_t> RowSegments::starts(int b) const {
  if (b < 0 || b >= B_) fail("RowSegments::starts: row {} is outside [0, {})", b, B_);
  const TokenSegment* row = table_.data() + size_t(b) * size_t(T_);
  std::vector<int32_t> out;
  for (int32_t t = 0; t < T_; t = row[t].end) out.push_back(t);
  return out;
}

}  // namespace zt
