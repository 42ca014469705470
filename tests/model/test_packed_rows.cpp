// Packed rows (docs/architecture.md, "Packed rows"): samples side by side in a row, or one padded
// sample per row, give the loss and gradients of the same samples run one by one (the mean over
// the targets that count in all of them), for GPT-2 (learned positions) and the llama family
// (rotary positions, grouped-query attention, Qwen3's q/k norms), with and without recomputed
// blocks; and no sample's tokens reach another's loss.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "core/ignored_target.hpp"
#include "model/gpt.hpp"
#include "packed_rows.hpp"

using namespace zt;
using namespace zt::test;

namespace {

constexpr int kT = 80;  // longer than a block of 64 query rows on the CPU

// Samples that cross a block's edge, one of a single token (no target counts), one of nearly a row.
std::vector<TokenSample> samples(int vocab) { return random_samples({9, 30, 1, 25, 70, 3}, vocab, 17); }

// Four samples in one row and two in another, each row padded to kT.
PackedBatch packed(const std::vector<TokenSample>& s) { return pack_samples(s, kT, {{0, 1, 2, 3}, {4, 5}}); }
// One sample per row, padded.
PackedBatch padded(const std::vector<TokenSample>& s) {
  return pack_samples(s, kT, {{0}, {1}, {2}, {3}, {4}, {5}});
}

struct LossAndGrads {
  double loss;
  std::vector<float> grads;
};

// Each sample in a forward of its own, its backward weighted by its share of the targets that
// count (a trainer's micro-batch weights), the gradients summed.
LossAndGrads one_by_one(Gpt& model, ResidentParams& params, const std::vector<TokenSample>& samples) {
  int total = 0;
  for (const TokenSample& s : samples) total += s.counted();
  params.zero_grads();
  double sum = 0;
  for (const TokenSample& s : samples) {
    const float loss = model.forward(s.inputs.data(), s.targets.data(), 1, int(s.inputs.size()), params);
    if (s.counted() > 0) sum += double(loss) * s.counted();
    model.backward(params, float(s.counted()) / float(total));
  }
  return {sum / total, {params.grad.data(), params.grad.data() + params.grad.size()}};
}

LossAndGrads at_once(Gpt& model, ResidentParams& params, const PackedBatch& batch) {
  params.zero_grads();
  const RowSegments segments = batch.rows.segments();
  const float loss = model.forward(batch.inputs.data(), batch.targets.data(), batch.rows.B, batch.rows.T, params,
                                   &segments);
  model.backward(params, 1.0f);
  return {loss, {params.grad.data(), params.grad.data() + params.grad.size()}};
}

double norm_relative(const float* got, const float* want, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) {
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += double(want[i]) * want[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

void require_same_training(const Gpt& model, const LossAndGrads& got, const LossAndGrads& want) {
  INFO("loss " << got.loss << ", one by one " << want.loss);
  CHECK(std::abs(got.loss - want.loss) <= 1e-6 * std::abs(want.loss));
  for (const ParamGroup& g : model.layout().groups)
    for (const TensorSpec& t : g.tensors) {
      const double err = norm_relative(got.grads.data() + t.offset, want.grads.data() + t.offset, t.numel());
      INFO(t.name << ": norm-wise relative error " << err);
      CHECK(err <= 1e-6);
    }
}

}  // namespace

TEST_CASE("packed and padded rows train as their samples one by one", "[model][packed]") {
  const std::string preset = GENERATE(as<std::string>{}, "toy", "llama-tiny", "qwen3-tiny");
  const bool recompute = GENERATE(false, true);
  INFO(preset << (recompute ? ", blocks recomputed" : ""));
  const GptShape shape = *gpt_preset(preset);
  Gpt model(shape, 6, kT, recompute);
  ResidentParams params(model.layout());
  model.init_params(params.params.data(), 0, model.layout().total, 5);
  const std::vector<TokenSample> s = samples(shape.vocab_size);
  const LossAndGrads want = one_by_one(model, params, s);
  SECTION("packed") { require_same_training(model, at_once(model, params, packed(s)), want); }
  SECTION("padded") { require_same_training(model, at_once(model, params, padded(s)), want); }
}

TEST_CASE("packed rows: another sample's tokens change nothing of a sample's loss and gradients",
          "[model][packed]") {
  const std::string preset = GENERATE(as<std::string>{}, "toy", "qwen3-tiny");
  INFO(preset);
  const GptShape shape = *gpt_preset(preset);
  Gpt model(shape, 2, kT);
  ResidentParams params(model.layout());
  model.init_params(params.params.data(), 0, model.layout().total, 5);
  std::vector<TokenSample> s = samples(shape.vocab_size);
  for (int32_t& t : s[0].targets) t = kIgnoredTarget;  // the first sample's loss does not count
  const LossAndGrads base = at_once(model, params, packed(s));
  for (int32_t& t : s[0].inputs) t = (t + 7) % shape.vocab_size;
  const LossAndGrads changed = at_once(model, params, packed(s));
  CHECK(changed.loss == base.loss);
  CHECK(changed.grads == base.grads);
  // Without segments the later samples of its row read it.
  const PackedBatch batch = packed(s);
  params.zero_grads();
  CHECK(model.forward(batch.inputs.data(), batch.targets.data(), 2, kT, params) != base.loss);
}

TEST_CASE("packed rows shaped for another micro-batch are refused", "[model][packed]") {
  Gpt model(*gpt_preset("toy"), 2, kT);
  ResidentParams params(model.layout());
  const std::vector<int32_t> tokens(size_t(2) * kT, 1);
  const RowSegments segments(cpu_device(), MemSpace::Host, 2, kT - 1);
  REQUIRE_THROWS_WITH(model.forward(tokens.data(), tokens.data(), 2, kT, params, &segments),
                      Catch::Contains("shaped for 2 rows of 79 tokens") && Catch::Contains("2 x 80"));
}
