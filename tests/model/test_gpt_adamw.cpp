// Ten AdamW steps with global-norm clipping on the tiny GPT-2, against the losses PyTorch
// recorded (scripts/make_torch_fixtures.py: torch.optim.AdamW, decay on 2-D tensors only,
// clip_grad_norm_). Checks the model and lib/optim together, the way the trainer uses them.
#include <catch2/catch.hpp>

#include "fixture_checks.hpp"

using namespace zt;
using namespace zt::test;

TEST_CASE("Ten AdamW steps with clipping follow PyTorch's losses", "[model][torch][adamw]") {
  const TorchFixture fx(torch_fixture_path());
  Gpt model(fx.shape(), fx.meta_int("B"), fx.meta_int("T"));
  const ParamLayout& layout = model.layout();
  ResidentParams params(layout);
  fx.load_weights(layout, params.params.data());
  check_adamw_steps(model, fx, params);
  // The padding rows of wte never train.
  const TensorSpec* wte = layout.find("wte.weight");
  for (size_t i = size_t(fx.shape().vocab_size) * fx.shape().d_model; i < wte->numel(); i++)
    REQUIRE(params.params[wte->offset + i] == 0.0f);
}
