// Ten AdamW steps with global-norm clipping on the tiny GPT-2, against the losses PyTorch
// recorded (scripts/make_torch_fixtures.py: torch.optim.AdamW, decay on 2-D tensors only,
// clip_grad_norm_). Checks the model and lib/optim together, the way the trainer uses them.
#include <catch2/catch.hpp>

#include <cmath>

#include "kernels/backend.hpp"
#include "model/gpt.hpp"
#include "optim/adamw.hpp"
#include "optim/grad_clip.hpp"
#include "torch_fixture.hpp"

using namespace zt;
using namespace zt::test;

TEST_CASE("Ten AdamW steps with clipping follow PyTorch's losses", "[model][torch][adamw]") {
  const TorchFixture fx(torch_fixture_path());
  const int B = fx.meta_int("B"), T = fx.meta_int("T"), steps = fx.meta_int("steps");
  Gpt model(fx.shape(), B, T);
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
    // The padded vocabulary rows have zero gradient, so the norm over the flat buffer is the
    // norm over the real parameters.
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
  // The padding rows of wte never train.
  const TensorSpec* wte = layout.find("wte.weight");
  for (size_t i = size_t(fx.shape().vocab_size) * fx.shape().d_model; i < wte->numel(); i++)
    REQUIRE(params.params[wte->offset + i] == 0.0f);
}
