#pragma once
// Packed rows for the tests of per-sample attention (docs/architecture.md, "Packed rows"): samples
// side by side in the rows of a [B, T] micro-batch, their RowSegments, and a sample's rows cut out
// of a packed tensor (to run it alone) or put back.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/row_segments.hpp"

namespace zt::test {

struct PackedRows {
  int B, T;
  std::vector<std::vector<int32_t>> starts;  // per row, where its samples start (0 first)

  struct Sample {
    int b, begin, end;  // positions [begin, end) of row b
    int length() const { return end - begin; }
  };
  std::vector<Sample> samples() const {
    std::vector<Sample> out;
    for (int b = 0; b < B; b++)
      for (size_t s = 0; s < starts[size_t(b)].size(); s++)
        out.push_back({b, starts[size_t(b)][s], s + 1 < starts[size_t(b)].size() ? starts[size_t(b)][s + 1] : T});
    return out;
  }
  // In `space` of `device` (host memory by default, as the CPU kernels read it).
  RowSegments segments(Device& device = cpu_device(), MemSpace space = MemSpace::Host) const {
    RowSegments r(device, space, B, T);
    for (int b = 0; b < B; b++) r.set_row(b, starts[size_t(b)]);
    return r;
  }
};

// The rows of sample s in x [B, T, width], as a [1, s.length(), width] tensor.
template <typename V>
V sample_rows(const V& x, const PackedRows& p, PackedRows::Sample s, size_t width) {
  const auto first = x.begin() + ptrdiff_t((size_t(s.b) * size_t(p.T) + size_t(s.begin)) * width);
  return V(first, first + ptrdiff_t(size_t(s.length()) * width));
}

// x's rows of sample s replaced by rows [s.length(), width].
template <typename V>
void put_sample_rows(V& x, const PackedRows& p, PackedRows::Sample s, size_t width, const V& rows) {
  std::copy(rows.begin(), rows.end(), x.begin() + ptrdiff_t((size_t(s.b) * size_t(p.T) + size_t(s.begin)) * width));
}

}  // namespace zt::test
