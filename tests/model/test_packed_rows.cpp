// Packed rows (docs/architecture.md, "Packed rows"): samples side by side in a row, or one padded
// sample per row, give the loss and gradients of the same samples run one by one (the mean over
// the targets that count in all of them), for GPT-2 (learned positions) and the llama family
// (rotary positions, grouped-query attention, Qwen3's q/k norms, a sliding-window layer), with and
// without recomputed blocks; and no sample's tokens reach another's loss.
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

// The samples one by one, or the batch in one forward, from zeroed gradients.
std::vector<float> grads_of(const ResidentParams& params) {
  return {params.grad.data(), params.grad.data() + params.grad.size()};
}
LossAndGrads one_by_one(Gpt& model, ResidentParams& params, const std::vector<TokenSample>& samples) {
  params.zero_grads();
  return train_one_by_one(model, params, samples, [&] { return grads_of(params); });
}
LossAndGrads at_once(Gpt& model, ResidentParams& params, const PackedBatch& batch) {
  params.zero_grads();
  return train_at_once(model, params, batch, batch.rows.segments(), [&] { return grads_of(params); });
}

}  // namespace

TEST_CASE("packed and padded rows train as their samples one by one", "[model][packed]") {
  const std::string preset = GENERATE(as<std::string>{}, "toy", "llama-tiny", "qwen3-tiny", "qwen3-tiny+window");
  const bool recompute = GENERATE(false, true);
  INFO(preset << (recompute ? ", blocks recomputed" : ""));
  const GptShape shape = model_test_shape(preset);
  Gpt model(shape, 6, kSampleRow, recompute);
  ResidentParams params(model.layout());
  model.init_params(params.params.data(), 0, model.layout().total, 5);
  const std::vector<TokenSample> s = model_test_samples(shape.vocab_size);
  const LossAndGrads want = one_by_one(model, params, s);
  for (bool padded : {false, true}) {
    INFO((padded ? "padded" : "packed"));
    const LossAndGrads got = at_once(model, params, padded ? padded_layout(s) : packed_layout(s));
    require_same_training(model.layout(), got, want, 1e-6, 1e-6);
  }
}

// transformers leaves the tokens its attention mask masks out of the load-balancing loss: padded
// rows give the aux loss, loss and gradients of the same samples packed into one row without padding.
TEST_CASE("the load-balancing loss and the expert load leave out the rows' padding", "[model][packed][moe]") {
  const bool recompute = GENERATE(false, true);
  INFO((recompute ? "blocks recomputed" : "blocks kept"));
  GptShape shape = *gpt_preset("qwen3-moe-tiny");
  shape.moe.output_router_logits = true;
  shape.moe.router_aux_loss_coef = 0.5;  // enough to move the gradients
  const std::vector<TokenSample> s = random_samples({9, 30, 1, 25, 40, 3}, shape.vocab_size, 17);
  const PackedBatch unpadded = pack_samples(s, 108, {{0, 1, 2, 3, 4, 5}});
  REQUIRE_FALSE(unpadded.rows.padded[0]);
  Gpt model(shape, 6, 108, recompute);
  ResidentParams params(model.layout());
  model.init_params(params.params.data(), 0, model.layout().total, 5);
  const LossAndGrads want = at_once(model, params, unpadded);
  const double want_aux = model.aux_loss(), want_load = model.max_expert_load();
  for (const PackedBatch& padded : {padded_layout(s), pack_samples(s, 72, {{0, 1, 2, 3}, {4, 5}})}) {
    REQUIRE(padded.rows.padded[1]);
    const LossAndGrads got = at_once(model, params, padded);
    INFO("aux loss " << model.aux_loss() << ", unpadded " << want_aux);
    CHECK(std::abs(model.aux_loss() - want_aux) <= 1e-6 * want_aux);
    CHECK(model.max_expert_load() == want_load);
    require_same_training(model.layout(), got, want, 1e-6, 1e-5);
  }
}

TEST_CASE("packed rows: another sample's tokens change nothing of a sample's loss and gradients",
          "[model][packed]") {
  const std::string preset = GENERATE(as<std::string>{}, "toy", "qwen3-tiny", "qwen3-tiny+window");
  INFO(preset);
  const GptShape shape = model_test_shape(preset);
  Gpt model(shape, 2, kSampleRow);
  ResidentParams params(model.layout());
  model.init_params(params.params.data(), 0, model.layout().total, 5);
  std::vector<TokenSample> s = model_test_samples(shape.vocab_size);
  for (int32_t& t : s[0].targets) t = kIgnoredTarget;  // the first sample's loss does not count
  const LossAndGrads base = at_once(model, params, packed_layout(s));
  for (int32_t& t : s[0].inputs) t = (t + 7) % shape.vocab_size;
  const LossAndGrads changed = at_once(model, params, packed_layout(s));
  CHECK(changed.loss == base.loss);
  CHECK(changed.grads == base.grads);
  // Without segments the later samples of its row read it.
  const PackedBatch batch = packed_layout(s);
  params.zero_grads();
  CHECK(model.forward(batch.inputs.data(), batch.targets.data(), 2, kSampleRow, params) != base.loss);
}

TEST_CASE("packed rows shaped for another micro-batch are refused", "[model][packed]") {
  const int T = 16;
  Gpt model(*gpt_preset("toy"), 2, T);
  ResidentParams params(model.layout());
  const std::vector<int32_t> tokens(size_t(2) * T, 1);
  const RowSegments segments(cpu_device(), MemSpace::Host, 2, T - 1);
  REQUIRE_THROWS_WITH(model.forward(tokens.data(), tokens.data(), 2, T, params, &segments),
                      Catch::Contains("shaped for 2 rows of 15 tokens") && Catch::Contains("2 x 16"));
}
