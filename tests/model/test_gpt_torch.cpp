// GPT-2 against an independent PyTorch implementation (tests/fixtures/torch, written by
// scripts/make_torch_fixtures.py in float64 and stored as float32).
#include <catch2/catch.hpp>

#include <cmath>

#include "model/gpt.hpp"
#include "torch_fixture.hpp"

using namespace zt;
using namespace zt::test;

namespace {

// ||got - want|| / ||want||
double norm_relative_error(const float* got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); i++) {
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += double(want[i]) * want[i];
  }
  return std::sqrt(num / den);
}

}  // namespace

TEST_CASE("GPT-2 logits, loss and every parameter gradient match PyTorch", "[model][torch]") {
  const TorchFixture fx(torch_fixture_path());
  const GptShape shape = fx.shape();
  const int B = fx.meta_int("B"), T = fx.meta_int("T"), V = shape.vocab_size;
  const auto& inputs = fx.at("inputs").i32;
  const auto& targets = fx.at("targets").i32;

  std::vector<float> grads_kept;
  for (bool recompute : {false, true}) {
    INFO("recompute " << recompute);
    Gpt model(shape, B, T, recompute);
    REQUIRE(model.padded_vocab() == 128);  // 60 padded inside
    ResidentParams params(model.layout());
    fx.load_weights(model.layout(), params.params.data());

    const float loss = model.forward(inputs.data(), targets.data(), B, T, params);
    const float want_loss = fx.at("loss").f32[0];
    INFO("loss " << loss << " torch " << want_loss);
    REQUIRE(std::abs(loss - want_loss) <= 1e-5 * std::abs(want_loss));

    // Logits: the first V columns of each padded row.
    const auto& want_logits = fx.at("logits").f32;
    std::vector<float> logits(size_t(B) * T * V);
    for (int r = 0; r < B * T; r++)
      for (int v = 0; v < V; v++) logits[size_t(r) * V + v] = model.logits()[size_t(r) * model.padded_vocab() + v];
    CHECK(norm_relative_error(logits.data(), want_logits) <= 1e-5);

    model.backward(params, 1.0f);
    for (auto& g : model.layout().groups)
      for (auto& t : g.tensors) {
        const auto& want = fx.at("grad." + t.name).f32;
        const float* got = params.grad.data() + t.offset;
        const double err = norm_relative_error(got, want);
        INFO(t.name << ": relative error " << err);
        CHECK(err <= 1e-5);
        for (size_t i = want.size(); i < t.numel(); i++) REQUIRE(got[i] == 0.0f);  // padded vocabulary rows
      }

    // Recomputing the blocks in backward runs the same kernels on the same inputs: same bits.
    std::vector<float> grads(params.grad.data(), params.grad.data() + params.grad.size());
    if (!recompute)
      grads_kept = grads;
    else
      REQUIRE(grads == grads_kept);
  }
}

TEST_CASE("GPT-2 gradients accumulate across backward passes and scale with dloss", "[model][torch]") {
  const TorchFixture fx(torch_fixture_path());
  const int B = fx.meta_int("B"), T = fx.meta_int("T");
  Gpt model(fx.shape(), B, T);
  ResidentParams params(model.layout());
  fx.load_weights(model.layout(), params.params.data());
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
