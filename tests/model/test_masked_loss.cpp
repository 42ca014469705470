// A loss mask against PyTorch's cross-entropy with ignore_index (tests/fixtures/torch/
// gpt2_masked.safetensors): each window's mean over the targets that count, NaN for a window with
// none, and the gradient of a step's loss — the sum of the token losses of its windows over the
// targets that count in all of them — from each window's backward weighted by its share of them.
#include <catch2/catch.hpp>

#include <cmath>

#include "fixture_checks.hpp"
#include "masked_fixture.hpp"

using namespace zt;
using namespace zt::test;

TEST_CASE("masked targets: the loss and gradients of PyTorch's ignore_index", "[model][torch][mask]") {
  const TorchFixture fx(masked_fixture_path());
  const int B = fx.meta_int("B"), T = fx.meta_int("T");
  for (bool recompute : {false, true}) {
    INFO("recompute " << recompute);
    Gpt model(fx.shape(), B, T, recompute);
    ResidentParams params(model.layout());
    fx.load_weights(model.layout(), params.params.data());
    params.zero_grads();

    std::vector<Window> windows;
    int counted = 0;
    for (int k = 0; k < 4; k++) {
      windows.push_back(masked_window(fx, k));
      counted += windows.back().counted;
    }
    REQUIRE(counted == fx.meta_int("counted"));
    REQUIRE(windows[1].counted == 0);  // a micro-batch without a target that counts

    double token_loss_sum = 0;
    for (int k = 0; k < 4; k++) {
      const Window& w = windows[size_t(k)];
      const float loss = model.forward(w.inputs.data(), w.targets.data(), B, T, params);
      CHECK(model.counted_targets() == w.counted);
      const float want = fx.at("window_losses").f32[size_t(k)];
      INFO("window " << k << ": loss " << loss << " reference " << want);
      if (w.counted == 0) {
        CHECK(std::isnan(loss));
      } else {
        CHECK(std::abs(loss - want) <= 1e-5 * std::abs(want));
        token_loss_sum += double(loss) * w.counted;
      }
      // d(step loss) / d(window mean) = the window's share of the step's counted targets.
      model.backward(params, float(w.counted) / float(counted));
    }
    const float want_loss = fx.at("loss").f32[0];
    CHECK(std::abs(token_loss_sum / counted - want_loss) <= 1e-5 * want_loss);
    for (auto& g : model.layout().groups)
      for (auto& t : g.tensors) {
        const double err = norm_relative_error(params.grad.data() + t.offset, fx.at("grad." + t.name).f32);
        INFO(t.name << ": relative error " << err);
        CHECK(err <= 1e-5);
      }
  }
}

namespace {
struct MaskedFixture : LoadedFixture {
  MaskedFixture() : LoadedFixture(masked_fixture_path()) {}
};
}  // namespace

TEST_CASE_METHOD(MaskedFixture, "a micro-batch whose targets are all masked adds no gradient", "[model][mask]") {
  params.zero_grads();
  const Window w = masked_window(fx, 1);
  REQUIRE(std::isnan(model.forward(w.inputs.data(), w.targets.data(), B, T, params)));
  model.backward(params, 1.0f);
  for (size_t i = 0; i < params.grad.size(); i++) REQUIRE(params.grad[i] == 0.0f);
}

TEST_CASE("a target outside the vocabulary that is not the ignored target is refused", "[model][mask]") {
  const TorchFixture fx(masked_fixture_path());
  const int B = fx.meta_int("B"), T = fx.meta_int("T");
  Gpt model(fx.shape(), B, T);
  ResidentParams params(model.layout());
  Window w = masked_window(fx, 0);
  w.targets[3] = -2;
  REQUIRE_THROWS_WITH(model.forward(w.inputs.data(), w.targets.data(), B, T, params),
                      Catch::Contains("targets[3] = -2 is outside the vocabulary"));
}
