#pragma once
// The checks the PyTorch and transformers fixtures share (tests/fixtures/torch, tests/fixtures/hf):
// one forward and backward against the fixture's logits, loss and gradients, and the fixture's
// AdamW run.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "kernels/backend.hpp"
#include "model/gpt.hpp"
#include "optim/adamw.hpp"
#include "optim/grad_clip.hpp"
#include "torch_fixture.hpp"

namespace zt::test {

// ||got - want|| / ||want||
inline double norm_relative_error(const float* got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); i++) {
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += double(want[i]) * want[i];
  }
  return std::sqrt(num / den);
}

// Forward with the fixture's inputs and targets, then backward with dloss 1, from the parameters
// in `params` (the fixture's weights): the loss, the logits of the real vocabulary and the
// gradient of every tensor within 1e-5 relative to the fixture's; the padded vocabulary rows get
// no gradient. Returns the flat gradient.
inline std::vector<float> check_forward_backward(Gpt& model, const TorchFixture& fx, ResidentParams& params, int B,
                                                 int T) {
  const int V = model.shape().vocab_size;
  const float loss = model.forward(fx.at("inputs").i32.data(), fx.at("targets").i32.data(), B, T, params);
  const float want_loss = fx.at("loss").f32[0];
  INFO("loss " << loss << " reference " << want_loss);
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
  return {params.grad.data(), params.grad.data() + params.grad.size()};
}

// check_forward_backward with all block activations kept, then with blocks recomputed in
// backward (activation checkpointing): the same kernels on the same inputs, the same bits.
inline void check_forward_backward_with_and_without_recompute(const GptShape& shape, const TorchFixture& fx, int B,
                                                              int T) {
  std::vector<float> grads_kept;
  for (bool recompute : {false, true}) {
    INFO("recompute " << recompute);
    Gpt model(shape, B, T, recompute);
    ResidentParams params(model.layout());
    fx.load_weights(model.layout(), params.params.data());
    const std::vector<float> grads = check_forward_backward(model, fx, params, B, T);
    if (!recompute)
      grads_kept = grads;
    else
      REQUIRE(grads == grads_kept);
  }
}

// The fixture's AdamW run from its weights in `params`: each step zeroes the gradients, runs
// forward and backward on the step's batch, clips to the global norm and updates every tensor
// with AdamW (decay on the tensors the layout marks). Each step's loss and gradient norm (before
// clipping) within 1e-5 relative to the fixture's.
inline void check_adamw_steps(Gpt& model, const TorchFixture& fx, ResidentParams& params) {
  const int B = fx.meta_int("B"), T = fx.meta_int("T"), steps = fx.meta_int("steps");
  const ParamLayout& layout = model.layout();
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
}

}  // namespace zt::test
