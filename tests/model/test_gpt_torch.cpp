// GPT-2 against an independent PyTorch implementation (tests/fixtures/torch, written by
// scripts/make_torch_fixtures.py in float64 and stored as float32).
#include <catch2/catch.hpp>

#include <cmath>

#include "fixture_checks.hpp"

using namespace zt;
using namespace zt::test;

TEST_CASE("GPT-2 logits, loss and every parameter gradient match PyTorch", "[model][torch]") {
  const TorchFixture fx(torch_fixture_path());
  REQUIRE(fx.shape().padded_vocab() == 128);  // 60 padded inside
  check_forward_backward_with_and_without_recompute(fx.shape(), fx, fx.meta_int("B"), fx.meta_int("T"));
}

namespace {
struct Gpt2Fixture : LoadedFixture {
  Gpt2Fixture() : LoadedFixture(torch_fixture_path()) {}
};
}  // namespace

TEST_CASE_METHOD(Gpt2Fixture, "GPT-2 gradients accumulate across backward passes and scale with dloss",
                 "[model][torch]") {
  const auto& inputs = fx.at("inputs").i32;
  const auto& targets = fx.at("targets").i32;

  model.forward(inputs.data(), targets.data(), B, T, params);
  model.backward(params, 1.0f);
  std::vector<float> once(params.grad.data(), params.grad.data() + params.grad.size());
  // A second micro-batch (same data) with dloss 0.5: ResidentParams keeps adding.
  model.forward(inputs.data(), targets.data(), B, T, params);
  model.backward(params, 0.5f);
  double num = 0, den = 0;
  for (size_t i = 0; i < once.size(); i++) {
    const double want = 1.5 * once[i];
    num += (params.grad[i] - want) * (params.grad[i] - want);
    den += want * want;
  }
  REQUIRE(std::sqrt(num / den) < 1e-6);
}
