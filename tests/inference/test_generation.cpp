// KV-cached generation against the model's full forward: each greedy token is the argmax of the
// full forward's logits at its position over prompt + generated tokens (no drift of the cache),
// for GPT-2 and the llama family; the same seed samples the same tokens; generation ends at a
// stop token and when the model's positions are used up.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "inference/device_weights.hpp"
#include "inference/generation.hpp"
#include "model/gpt.hpp"

using namespace zt;

namespace {

// Weights of a freshly initialised model made ten times larger, so that the logits are far from
// uniform and each argmax is clear.
std::vector<float> sharp_weights(const Gpt& model, uint64_t seed) {
  std::vector<float> w(model.layout().total);
  model.init_params(w.data(), 0, w.size(), seed);
  for (float& x : w) x *= 10.0f;
  return w;
}

struct Setup {
  explicit Setup(const GptShape& s, int positions = 24)
      : shape(s), model(s, 1, positions, true), weights(sharp_weights(model, 9)),
        hooks(model.layout(), weights.data(), cpu_backend()) {}
  GptShape shape;
  Gpt model;
  std::vector<float> weights;
  DeviceWeights hooks;
};

// The argmax of the full forward's logits at every position of `tokens`.
std::vector<int32_t> full_argmax(Setup& s, const std::vector<int32_t>& tokens) {
  const int L = int(tokens.size()), V = s.shape.vocab_size;
  Gpt full(s.shape, 1, L);
  full.forward(tokens.data(), nullptr, 1, L, s.hooks);
  std::vector<int32_t> best;
  std::vector<float> row(static_cast<size_t>(V));
  for (int t = 0; t < L; t++) {
    full.copy_logits_row(t, row.data());
    best.push_back(int32_t(std::max_element(row.begin(), row.end()) - row.begin()));
  }
  return best;
}

Generated run(Setup& s, const std::vector<int32_t>& prompt, const GenerationLimits& limits, SamplingOptions sampling) {
  TokenSampler sampler(sampling);
  return generate(s.model, s.hooks, prompt, limits, sampler, [](int32_t) {});
}

void check_greedy_is_full_argmax(const GptShape& shape) {
  Setup s(shape);
  const std::vector<int32_t> prompt = {3, 17, 42, 7, 99};
  GenerationLimits limits;
  limits.max_new_tokens = 15;
  const Generated g = run(s, prompt, limits, {0.0, 0, 1.0, 1});
  REQUIRE(g.tokens.size() == 15);
  REQUIRE(g.end == GenerationEnd::MaxTokens);
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), g.tokens.begin(), g.tokens.end());
  const std::vector<int32_t> best = full_argmax(s, all);
  for (size_t i = 0; i < g.tokens.size(); i++) {
    INFO("new token " << i);
    CHECK(g.tokens[i] == best[prompt.size() - 1 + i]);  // predicted at the position before it
  }
  // Not one token repeated: the positions after the prompt matter.
  CHECK(std::count(g.tokens.begin(), g.tokens.end(), g.tokens[0]) < int(g.tokens.size()));
}

}  // namespace

TEST_CASE("greedy decoding equals the full forward's argmax at every position: GPT-2", "[inference][generate]") {
  check_greedy_is_full_argmax(*gpt_preset("toy"));
}

TEST_CASE("greedy decoding equals the full forward's argmax at every position: llama family",
          "[inference][generate]") {
  for (const char* preset : {"llama-tiny", "qwen3-tiny"}) {
    INFO(preset);
    check_greedy_is_full_argmax(*gpt_preset(preset));
  }
}

TEST_CASE("sampling with a seed is reproducible; another seed draws other tokens", "[inference][generate]") {
  Setup s(*gpt_preset("llama-tiny"));
  GenerationLimits limits;
  limits.max_new_tokens = 18;
  const std::vector<int32_t> prompt = {10, 20};
  // Temperature 5 flattens the sharp logits: many tokens are likely.
  const Generated a = run(s, prompt, limits, {5.0, 0, 1.0, 5}), b = run(s, prompt, limits, {5.0, 0, 1.0, 5});
  const Generated c = run(s, prompt, limits, {5.0, 0, 1.0, 6});
  CHECK(a.tokens == b.tokens);
  CHECK(a.tokens != c.tokens);
  // top-k 1 is greedy whatever the seed.
  CHECK(run(s, prompt, limits, {5.0, 1, 1.0, 5}).tokens == run(s, prompt, limits, {0.0, 0, 1.0, 6}).tokens);
}

TEST_CASE("generation ends at a stop token and at the model's last position", "[inference][generate]") {
  Setup s(*gpt_preset("toy"), 12);
  const std::vector<int32_t> prompt = {1, 2, 3};
  GenerationLimits limits;
  limits.max_new_tokens = 100;
  const Generated all = run(s, prompt, limits, {0.0, 0, 1.0, 1});
  CHECK(all.end == GenerationEnd::ContextFull);
  CHECK(all.tokens.size() == 12 - 3 + 1);  // the last position's token is drawn, never fed back
  const int32_t stop = all.tokens[4];
  limits.stops = [&](int32_t id) { return id == stop; };
  const Generated stopped = run(s, prompt, limits, {0.0, 0, 1.0, 1});
  CHECK(stopped.end == GenerationEnd::StopToken);
  const auto first = std::find(all.tokens.begin(), all.tokens.end(), stop);
  CHECK(stopped.tokens == std::vector<int32_t>(all.tokens.begin(), first));
  CHECK_THROWS_WITH(run(s, std::vector<int32_t>(12, 1), limits, {0.0, 0, 1.0, 1}),
                    Catch::Contains("leave no room"));
  CHECK_THROWS_WITH(run(s, {}, limits, {0.0, 0, 1.0, 1}), Catch::Contains("no token"));
}

TEST_CASE("draws stay within the tokenizer's vocabulary", "[inference][generate]") {
  Setup s(*gpt_preset("toy"));
  GenerationLimits limits;
  limits.max_new_tokens = 20;
  limits.vocab = 10;
  for (int32_t t : run(s, {5}, limits, {2.0, 0, 1.0, 3}).tokens) REQUIRE(t < 10);
}
