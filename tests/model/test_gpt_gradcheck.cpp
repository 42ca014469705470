// Finite-difference check of the whole model's gradient on a few parameters of every tensor.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "core/rng.hpp"
#include "finite_difference.hpp"
#include "model/gpt.hpp"

using namespace zt;

TEST_CASE("GPT-2 gradient agrees with finite differences of the loss", "[model][gradcheck]") {
  GptShape shape{2, 2, 16, 40, 8};  // vocab 40 padded to 128
  const int B = 2, T = 7;           // T below the bound the model was built for
  Gpt model(shape, B, 8);
  ResidentParams params(model.layout());
  // Larger weights than GPT-2's init, so every path carries a gradient well above fp32 noise.
  Rng rng(5);
  for (auto& g : model.layout().groups)
    for (auto& t : g.tensors)
      for (size_t i = 0; i < t.numel(); i++)
        params.params[t.offset + i] = t.shape.size() == 1 ? float(0.5 + 0.3 * rng.normal()) : float(0.3 * rng.normal());
  const TensorSpec* wte = model.layout().find("wte.weight");
  std::fill(params.params.data() + wte->offset + 40 * 16, params.params.data() + wte->offset + wte->numel(), 0.0f);

  std::vector<int32_t> inputs(B * T), targets(B * T);
  for (int i = 0; i < B * T; i++) {
    inputs[i] = int32_t(rng.below(40));
    targets[i] = int32_t(rng.below(40));
  }
  auto loss_at = [&] { return double(model.forward(inputs.data(), targets.data(), B, T, params)); };
  loss_at();
  model.backward(params, 1.0f);
  const std::vector<float> grad(params.grad.data(), params.grad.data() + params.grad.size());

  int checked = 0;
  for (auto& g : model.layout().groups)
    for (auto& t : g.tensors) {
      // The two largest gradient entries of each tensor (real vocabulary rows only for wte).
      const size_t n = t.name == "wte.weight" ? 40 * 16 : t.numel();
      std::vector<size_t> idx(n);
      for (size_t i = 0; i < n; i++) idx[i] = t.offset + i;
      std::partial_sort(idx.begin(), idx.begin() + 2, idx.end(),
                        [&](size_t a, size_t b) { return std::abs(grad[a]) > std::abs(grad[b]); });
      for (int k = 0; k < 2; k++) {
        const size_t i = idx[k];
        const double fd = test::central_difference(params.params[i], loss_at);
        INFO(t.name << " element " << i - t.offset << ": analytic " << grad[i] << ", finite difference " << fd);
        CHECK(std::abs(fd - grad[i]) <= 2e-2 * std::abs(grad[i]) + 2e-4);
        checked++;
      }
    }
  REQUIRE(checked == 2 * (2 + 2 * 12 + 2));
}
