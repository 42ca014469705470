#pragma once
// Packed rows for the tests of per-sample attention (docs/architecture.md, "Packed rows"): samples
// side by side in the rows of a [B, T] micro-batch, their RowSegments, a sample's rows cut out of a
// packed tensor (to run it alone) or put back, and samples of tokens laid out in a micro-batch.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/ignored_target.hpp"
#include "core/rng.hpp"
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

// A sample of tokens as the data side makes one: inputs, and targets with kIgnoredTarget where the
// loss does not count (a prompt; the target after the last token).
struct TokenSample {
  std::vector<int32_t> inputs, targets;
  int counted() const {
    int n = 0;
    for (int32_t t : targets) n += t != kIgnoredTarget;
    return n;
  }
};

// Samples of the given lengths, random tokens below `vocab`; the first third of each sample's
// targets and its last one do not count.
inline std::vector<TokenSample> random_samples(const std::vector<int>& lengths, int vocab, uint64_t seed) {
  Rng rng(seed);
  std::vector<TokenSample> out;
  for (int L : lengths) {
    TokenSample s;
    for (int t = 0; t < L; t++) {
      s.inputs.push_back(int32_t(rng.below(uint64_t(vocab))));
      const bool counts = t >= L / 3 && t + 1 < L;
      s.targets.push_back(counts ? int32_t(rng.below(uint64_t(vocab))) : kIgnoredTarget);
    }
    out.push_back(std::move(s));
  }
  return out;
}

// A micro-batch of B rows of T tokens holding samples: row b holds samples rows[b] side by side,
// then padding to T (token 0, targets that do not count) as a sample of its own.
struct PackedBatch {
  PackedRows rows;
  std::vector<int32_t> inputs, targets;  // [B, T]
};
inline PackedBatch pack_samples(const std::vector<TokenSample>& samples, int T,
                                const std::vector<std::vector<int>>& rows) {
  PackedBatch out{{int(rows.size()), T, {}}, {}, {}};
  for (const std::vector<int>& row : rows) {
    std::vector<int32_t> starts;
    int used = 0;
    for (int i : row) {
      const TokenSample& s = samples[size_t(i)];
      starts.push_back(used);
      out.inputs.insert(out.inputs.end(), s.inputs.begin(), s.inputs.end());
      out.targets.insert(out.targets.end(), s.targets.begin(), s.targets.end());
      used += int(s.inputs.size());
    }
    if (used < T) starts.push_back(used);
    out.inputs.resize(out.inputs.size() + size_t(T - used), 0);
    out.targets.resize(out.targets.size() + size_t(T - used), kIgnoredTarget);
    out.rows.starts.push_back(starts);
  }
  return out;
}

}  // namespace zt::test
