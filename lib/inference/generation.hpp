#pragma once
// KV-cached generation: the prompt in one forward that fills the cache, then one forward per new
// token, each attending to the cache instead of recomputing the sequence (Gpt::forward_cached).
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/param_hooks.hpp"
#include "inference/token_sampler.hpp"
#include "model/gpt.hpp"

namespace zt {

struct GenerationLimits {
  int max_new_tokens = 256;
  int vocab = 0;  // draw among ids [0, vocab) only (the tokenizer's); 0: the model's vocabulary
  std::function<bool(int32_t)> stops;  // a token that ends the text (not passed on); none: never
};

enum class GenerationEnd { MaxTokens, StopToken, ContextFull };

struct Generated {
  std::vector<int32_t> tokens;  // the new tokens, the stop token excluded
  GenerationEnd end = GenerationEnd::MaxTokens;
};

// Continues `prompt` (at least one id) on `model` (batch 1; its max_seq() bounds prompt and new
// tokens together) with the weights `weights` hands it. on_token gets each new token as it is
// drawn. before_forward, when given, runs before each forward (the ZeRO engine's
// begin_micro_batch). Throws zt::Error for an empty prompt or one that fills the model's positions.
Generated generate(Gpt& model, ParamHooks& weights, std::span<const int32_t> prompt, const GenerationLimits& limits,
                   TokenSampler& sampler, const std::function<void(int32_t)>& on_token,
                   const std::function<void()>& before_forward = {});

}  // namespace zt
