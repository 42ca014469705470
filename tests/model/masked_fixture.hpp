#pragma once
// tests/fixtures/torch/gpt2_masked.safetensors (scripts/make_mask_fixtures.py): a token file with
// its loss mask, and PyTorch's loss (ignore_index) and gradients of the first step's four windows.
#include <string>
#include <vector>

#include "core/ignored_target.hpp"
#include "torch_fixture.hpp"

namespace zt::test {

inline std::string masked_fixture_path() {
  return std::string(ZT_SOURCE_DIR) + "/tests/fixtures/torch/gpt2_masked.safetensors";
}

struct Window {
  std::vector<int32_t> inputs, targets;  // [B, T]; a masked target is kIgnoredTarget
  int counted = 0;
};

// Window k of the fixture's tokens as the sampler reads it: tokens [k·B·T, (k + 1)·B·T + 1).
inline Window masked_window(const TorchFixture& fx, int k) {
  const int BT = fx.meta_int("B") * fx.meta_int("T");
  const auto& tokens = fx.at("tokens").i32;
  const auto& mask = fx.at("mask").i32;
  Window w;
  for (int i = 0; i < BT; i++) {
    const size_t at = size_t(k) * BT + size_t(i);
    w.inputs.push_back(tokens[at]);
    const bool counts = mask[at + 1] != 0;
    w.targets.push_back(counts ? tokens[at + 1] : kIgnoredTarget);
    w.counted += counts;
  }
  return w;
}

}  // namespace zt::test
