// generate --dry-run's memory plan against what generation allocates: the weights, each layer's KV
// cache (a sliding layer's a ring of its window's rows) and the activations, measured in the memory
// ledger over a whole generation, for a Gemma 3 model with sliding and full layers and a
// mixture-of-experts model.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/ledger.hpp"
#include "inference/device_weights.hpp"
#include "inference/generate_plan.hpp"
#include "inference/generation.hpp"
#include "inference/model_source.hpp"
#include "model/gpt.hpp"

using namespace zt;

namespace {

struct Measured {
  size_t weights = 0, activations = 0;
};

// Generation of `positions` positions after a prompt of 3 tokens, as run_generate sets it up; the
// peak bytes it held beyond what was held before.
Measured measure_generation(const LoadedModel& loaded, int positions) {
  MemoryLedger& ledger = MemoryLedger::instance();
  const MemStats before = ledger.stats();
  ledger.reset_peaks();
  {
    Gpt model(loaded.shape, 1, positions, /*recompute=*/true);
    DeviceWeights weights(model.layout(), loaded.weights.data(), cpu_backend());
    GenerationLimits limits;
    limits.max_new_tokens = positions;  // the positions end it
    TokenSampler sampler(SamplingOptions{});
    const std::vector<int32_t> prompt = {1, 2, 3};
    const Generated g = generate(model, weights, prompt, limits, sampler, [](int32_t) {});
    CHECK(g.end == GenerationEnd::ContextFull);
  }
  const MemStats after = ledger.stats();
  return {after.pk(MemCategory::Params) - before.cur(MemCategory::Params),
          after.pk(MemCategory::Activations) - before.cur(MemCategory::Activations)};
}

LoadedModel fixture(const std::string& name) {
  return read_hf_model_dir(std::string(ZT_SOURCE_DIR) + "/tests/fixtures/hf/" + name);
}

// The plan of `positions` positions, checked against a generation's allocations.
GeneratePlan checked_plan(const LoadedModel& model, int positions) {
  const GeneratePlan plan = plan_generate(model.shape, positions, cpu_backend().model);
  const Measured got = measure_generation(model, positions);
  CHECK(plan.weights == got.weights);
  CHECK(plan.kv_cache + plan.activations == got.activations);
  return plan;
}

}  // namespace

TEST_CASE("generate's plan is what generation allocates: sliding and full layers", "[inference][plan]") {
  const LoadedModel gemma = fixture("gemma3_text_swa_fp32");  // layers sliding, sliding, full; window 8
  const int positions = 20;
  const GeneratePlan plan = checked_plan(gemma, positions);
  REQUIRE(plan.kinds.size() == 2);
  const GenerateLayerKind &sliding = plan.kinds[0], &full = plan.kinds[1];
  CHECK(sliding.window == 8);
  CHECK(sliding.layers == 2);
  CHECK(sliding.kv_rows == 8);  // the window's ring, not the 20 positions
  CHECK(full.window == 0);
  CHECK(full.layers == 1);
  CHECK(full.kv_rows == positions);
  const size_t row = 2 * size_t(gemma.shape.kv_heads()) * size_t(gemma.shape.head_size()) * sizeof(float);
  CHECK(sliding.kv_bytes == 8 * row);
  CHECK(full.kv_bytes == positions * row);
  CHECK(plan.kv_cache == 2 * sliding.kv_bytes + full.kv_bytes);
  CHECK(plan.other_weight_bytes + 2 * sliding.weight_bytes + full.weight_bytes == plan.weights);

  const std::string text = format_generate_plan(plan);
  CHECK_THAT(text, Catch::Contains("sliding (window 8), dense MLP"));
  CHECK_THAT(text, Catch::Contains("KV cache"));
  CHECK_THAT(text, Catch::Contains("(" + std::to_string(plan.kv_cache) + " bytes)"));
}

TEST_CASE("generate's plan is what generation allocates: experts", "[inference][plan]") {
  const LoadedModel moe = fixture("qwen3_moe_fp32");
  const GeneratePlan plan = checked_plan(moe, 12);
  REQUIRE(plan.kinds.size() == 1);
  CHECK(plan.kinds[0].experts);
  CHECK(plan.kinds[0].layers == moe.shape.n_layer);
}
