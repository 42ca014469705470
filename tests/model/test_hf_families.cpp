// Llama, Mistral, Qwen2 and Qwen3 against transformers' own models (tests/fixtures/hf, written by
// scripts/make_hf_fixtures.py in float64 and stored as float32): the names and shapes of every
// parameter, the rotary frequencies, logits, loss and every gradient, and five AdamW steps.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>

#include "fixture_checks.hpp"
#include "hf_fixture.hpp"
#include "model/rope_frequencies.hpp"

using namespace zt;
using namespace zt::test;

namespace {

bool is_parameter(const std::string& name) {
  return name.rfind("model.", 0) == 0 || name == "lm_head.weight";
}

}  // namespace

TEST_CASE("the layout holds transformers' parameters: same names, same shapes", "[model][hf]") {
  for (const char* name : kHfFixtures) {
    INFO(name);
    const TorchFixture fx(hf_fixture_path(name));
    const GptShape shape = hf_fixture_shape(fx);
    std::set<std::string> want, got;
    for (auto& [n, t] : fx.tensors)
      if (is_parameter(n)) want.insert(n);
    for (const HfTensor& t : hf_tensors(shape)) {
      got.insert(t.name);
      INFO(t.name);
      REQUIRE(fx.tensors.count(t.name) == 1);
      CHECK(fx.at(t.name).shape == t.shape);  // [out, in], the real vocabulary's rows
    }
    CHECK(got == want);
    CHECK(shape.num_params() == [&] {
      size_t n = 0;
      for (auto& p : want) n += fx.at(p).f32.size();
      return n;
    }());
  }
}

TEST_CASE("rotary inverse frequencies equal transformers', llama3 scaling included", "[model][hf][rope]") {
  for (const char* name : kHfFixtures) {
    INFO(name);
    const TorchFixture fx(hf_fixture_path(name));
    const std::vector<float> got = rope_inverse_frequencies(hf_fixture_shape(fx));
    const std::vector<float>& want = fx.at("rope.inv_freq").f32;
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); i++) {
      INFO("i " << i << ": " << got[i] << " vs " << want[i]);
      CHECK(std::abs(got[i] - want[i]) <= 1e-6f * std::abs(want[i]));
    }
  }
  // The fixture's llama3 scaling exercises its three bands: kept, interpolated, divided by factor.
  const TorchFixture fx(hf_fixture_path("llama3"));
  GptShape unscaled = hf_fixture_shape(fx);
  unscaled.rope_scaling = {};
  const std::vector<float> plain = rope_inverse_frequencies(unscaled);
  const std::vector<float>& scaled = fx.at("rope.inv_freq").f32;
  int kept = 0, divided = 0, between = 0;
  for (size_t i = 0; i < plain.size(); i++) {
    if (scaled[i] == plain[i]) kept++;
    else if (std::abs(scaled[i] * 8.0f - plain[i]) <= 1e-6f * plain[i]) divided++;
    else between++;
  }
  CHECK(kept > 0);
  CHECK(divided > 0);
  CHECK(between > 0);
}

TEST_CASE("logits, loss and every parameter gradient match transformers", "[model][hf]") {
  for (const char* name : kHfFixtures) {
    INFO(name);
    const TorchFixture fx(hf_fixture_path(name));
    const GptShape shape = hf_fixture_shape(fx);
    REQUIRE(shape.padded_vocab() > shape.vocab_size);  // padding rows in play
    check_forward_backward_with_and_without_recompute(shape, fx, fx.meta_int("B"), fx.meta_int("T"));
  }
}

TEST_CASE("five AdamW steps with clipping follow PyTorch's losses", "[model][hf][adamw]") {
  for (const char* name : kHfFixtures) {
    INFO(name);
    const TorchFixture fx(hf_fixture_path(name));
    const GptShape shape = hf_fixture_shape(fx);
    Gpt model(shape, fx.meta_int("B"), fx.meta_int("T"));
    ResidentParams params(model.layout());
    fx.load_weights(model.layout(), params.params.data());
    check_adamw_steps(model, fx, params);
    // The padding rows of the vocabulary never train.
    for (const HfTensor& t : hf_tensors(shape)) {
      if (t.padding == 0) continue;
      const size_t real = t.shape[0] * t.shape[1];
      for (size_t i = t.offset + real; i < t.offset + real + t.padding; i++) REQUIRE(params.params[i] == 0.0f);
    }
  }
}
