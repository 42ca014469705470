// Llama, Mistral, Qwen2 and Qwen3 against transformers' own models (tests/fixtures/hf, written by
// scripts/make_hf_fixtures.py in float64 and stored as float32): the names and shapes of every
// parameter, the rotary frequencies, logits, loss and every gradient, and five AdamW steps.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>

#include "hf_fixture.hpp"
#include "kernels/backend.hpp"
#include "model/gpt.hpp"
#include "model/rope_frequencies.hpp"
#include "optim/adamw.hpp"
#include "optim/grad_clip.hpp"

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
    const TorchFixture fx(hf_fixture_path(name));
    const GptShape shape = hf_fixture_shape(fx);
    const int B = fx.meta_int("B"), T = fx.meta_int("T"), V = shape.vocab_size;
    const auto& inputs = fx.at("inputs").i32;
    const auto& targets = fx.at("targets").i32;
    std::vector<float> grads_kept;
    for (bool recompute : {false, true}) {
      INFO(name << ", recompute " << recompute);
      Gpt model(shape, B, T, recompute);
      REQUIRE(model.padded_vocab() % 128 == 0);
      REQUIRE(model.padded_vocab() > V);
      ResidentParams params(model.layout());
      fx.load_weights(model.layout(), params.params.data());

      const float loss = model.forward(inputs.data(), targets.data(), B, T, params);
      const float want_loss = fx.at("loss").f32[0];
      INFO("loss " << loss << " transformers " << want_loss);
      REQUIRE(std::abs(loss - want_loss) <= 1e-5 * std::abs(want_loss));

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
      std::vector<float> grads(params.grad.data(), params.grad.data() + params.grad.size());
      if (!recompute)
        grads_kept = grads;
      else
        REQUIRE(grads == grads_kept);  // recomputing a block runs the same kernels on the same inputs
    }
  }
}

TEST_CASE("five AdamW steps with clipping follow PyTorch's losses", "[model][hf][adamw]") {
  for (const char* name : kHfFixtures) {
    INFO(name);
    const TorchFixture fx(hf_fixture_path(name));
    const GptShape shape = hf_fixture_shape(fx);
    const int B = fx.meta_int("B"), T = fx.meta_int("T"), steps = fx.meta_int("steps");
    Gpt model(shape, B, T);
    const ParamLayout& layout = model.layout();
    ResidentParams params(layout);
    fx.load_weights(layout, params.params.data());
    std::vector<float> m(layout.total, 0.0f), v(layout.total, 0.0f);

    AdamWHyper hyper{};
    hyper.lr = float(fx.meta_double("lr"));
    hyper.beta1 = float(fx.meta_double("beta1"));
    hyper.beta2 = float(fx.meta_double("beta2"));
    hyper.eps = float(fx.meta_double("eps"));
    hyper.weight_decay = float(fx.meta_double("weight_decay"));
    const double clip = fx.meta_double("clip");
    const auto& inputs = fx.at("adamw.inputs").i32;
    const auto& targets = fx.at("adamw.targets").i32;
    const auto& want_losses = fx.at("adamw.losses").f32;
    const auto& want_norms = fx.at("adamw.grad_norms").f32;
    REQUIRE(want_losses.size() == size_t(steps));
    const size_t batch = size_t(B) * T;

    for (int s = 0; s < steps; s++) {
      params.zero_grads();
      const float loss = model.forward(inputs.data() + s * batch, targets.data() + s * batch, B, T, params);
      model.backward(params, 1.0f);
      const double norm = std::sqrt(
          cpu_backend().vector.sum_of_squares({params.grad.data(), DType::F32, MemSpace::Host}, layout.total, 1.0f));
      const float coefficient = float(clip_coefficient(norm, clip));
      for (size_t i = 0; i < layout.total; ++i) params.grad[i] *= coefficient;
      for (auto& g : layout.groups)
        for (auto& t : g.tensors)
          adamw_update(params.params.data() + t.offset, params.grad.data() + t.offset, m.data() + t.offset,
                       v.data() + t.offset, t.numel(), hyper, s + 1, t.weight_decay);
      INFO("step " << s + 1 << ": loss " << loss << " (torch " << want_losses[s] << "), grad norm " << norm
                   << " (torch " << want_norms[s] << ")");
      CHECK(std::abs(loss - want_losses[s]) <= 1e-5 * std::abs(want_losses[s]));
      CHECK(std::abs(norm - want_norms[s]) <= 1e-5 * want_norms[s]);
    }
    // The padding rows of the vocabulary never train.
    for (const HfTensor& t : hf_tensors(shape)) {
      if (t.padding == 0) continue;
      const size_t real = t.shape[0] * t.shape[1];
      for (size_t i = t.offset + real; i < t.offset + real + t.padding; i++) REQUIRE(params.params[i] == 0.0f);
    }
  }
}
