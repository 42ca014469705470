#pragma once
// Packed rows for the tests of per-sample attention (docs/architecture.md, "Packed rows"): samples
// side by side in the rows of a [B, T] micro-batch, their RowSegments, a sample's rows cut out of a
// packed tensor (to run it alone) or put back, samples of tokens laid out in a micro-batch, and a
// model's training on them one by one or at once.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/ignored_target.hpp"
#include "core/param_hooks.hpp"
#include "core/param_layout.hpp"
#include "core/rng.hpp"
#include "core/row_segments.hpp"
#include "model/gpt_shape.hpp"

namespace zt::test {

struct PackedRows {
  int B, T;
  std::vector<std::vector<int32_t>> starts;  // per row, where its samples start (0 first)
  std::vector<uint8_t> padded = {};          // per row, whether its last segment is padding (empty: none)

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
    for (int b = 0; b < B; b++) r.set_row(b, starts[size_t(b)], !padded.empty() && padded[size_t(b)]);
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

// A sample's rows of per-row statistics [B, heads, T] (attention's log-sum-exp), as [1, heads,
// length].
template <typename V>
V sample_stats(const V& stats, const PackedRows& p, PackedRows::Sample s, int heads) {
  V out;
  for (int h = 0; h < heads; h++) {
    const auto row = stats.begin() + ptrdiff_t((size_t(s.b) * size_t(heads) + size_t(h)) * size_t(p.T));
    out.insert(out.end(), row + s.begin, row + s.end);
  }
  return out;
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
  PackedBatch out{{int(rows.size()), T, {}, {}}, {}, {}};
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
    out.rows.padded.push_back(used < T);
    out.inputs.resize(out.inputs.size() + size_t(T - used), 0);
    out.targets.resize(out.targets.size() + size_t(T - used), kIgnoredTarget);
    out.rows.starts.push_back(starts);
  }
  return out;
}

// A preset's shape, or "qwen3-tiny+window": qwen3-tiny whose second layer attends to the last 7
// keys only (a window shorter than most samples, as a sliding layer of transformers' layer_types)
// and whose first to every earlier key of its sample.
inline GptShape model_test_shape(const std::string& name) {
  const std::string windowed = "+window";
  if (name.size() <= windowed.size() || name.compare(name.size() - windowed.size(), windowed.size(), windowed) != 0)
    return gpt_preset(name).value();
  GptShape s = gpt_preset(name.substr(0, name.size() - windowed.size())).value();
  s.sliding_window = 7;
  s.layer_types = {LayerAttention::Full, LayerAttention::Sliding};
  return s;
}

// The model tests' samples: ones that cross attention's 64-row blocks and tiles, one of a single
// token (no target counts) and one of nearly a row; laid out four in one row and two in another
// (packed), or one per row (padded), rows of kSampleRow tokens.
constexpr int kSampleRow = 72;
inline std::vector<TokenSample> model_test_samples(int vocab) {
  return random_samples({9, 30, 1, 25, 64, 3}, vocab, 17);
}
inline PackedBatch packed_layout(const std::vector<TokenSample>& s) {
  return pack_samples(s, kSampleRow, {{0, 1, 2, 3}, {4, 5}});
}
inline PackedBatch padded_layout(const std::vector<TokenSample>& s) {
  return pack_samples(s, kSampleRow, {{0}, {1}, {2}, {3}, {4}, {5}});
}

// A micro-batch's loss and the gradients it added (flat, fp32).
struct LossAndGrads {
  double loss;
  std::vector<float> grads;
};

// Each sample in a forward of its own, its backward weighted by its share of the targets that count
// (as a trainer weighs micro-batches), from zeroed gradients; `grads` reads them at the end.
template <typename Model>
LossAndGrads train_one_by_one(Model& model, ParamHooks& params, const std::vector<TokenSample>& samples,
                              const std::function<std::vector<float>()>& grads) {
  int total = 0;
  for (const TokenSample& s : samples) total += s.counted();
  double sum = 0;
  for (const TokenSample& s : samples) {
    const float loss = model.forward(s.inputs.data(), s.targets.data(), 1, int(s.inputs.size()), params);
    if (s.counted() > 0) sum += double(loss) * s.counted();
    model.backward(params, float(s.counted()) / float(total));
  }
  return {sum / total, grads()};
}

// The batch in one forward with its segments, from zeroed gradients.
template <typename Model>
LossAndGrads train_at_once(Model& model, ParamHooks& params, const PackedBatch& batch, const RowSegments& segments,
                           const std::function<std::vector<float>()>& grads) {
  const float loss =
      model.forward(batch.inputs.data(), batch.targets.data(), batch.rows.B, batch.rows.T, params, &segments);
  model.backward(params, 1.0f);
  return {loss, grads()};
}

// The losses within loss_rtol, and every tensor's gradient within grad_rtol, norm-wise.
inline void require_same_training(const ParamLayout& layout, const LossAndGrads& got, const LossAndGrads& want,
                                  double loss_rtol, double grad_rtol) {
  INFO("loss " << got.loss << ", one by one " << want.loss);
  CHECK(std::abs(got.loss - want.loss) <= loss_rtol * std::abs(want.loss));
  for (const ParamGroup& g : layout.groups)
    for (const TensorSpec& t : g.tensors) {
      double num = 0, den = 0;
      for (size_t i = t.offset; i < t.offset + t.numel(); i++) {
        num += (double(got.grads[i]) - want.grads[i]) * (double(got.grads[i]) - want.grads[i]);
        den += double(want.grads[i]) * want.grads[i];
      }
      const double err = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
      INFO(t.name << ": norm-wise relative error " << err);
      CHECK(err <= grad_rtol);
    }
}

}  // namespace zt::test
