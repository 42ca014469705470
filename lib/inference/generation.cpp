#include "inference/generation.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace zt {

Generated generate(Gpt& model, ParamHooks& weights, std::span<const int32_t> prompt, const GenerationLimits& limits,
                   TokenSampler& sampler, const std::function<void(int32_t)>& on_token,
                   const std::function<void()>& before_forward) {
  const int n = int(prompt.size()), positions = model.max_seq();
  if (n == 0) fail("generate: the prompt has no token");
  if (n >= positions)
    fail("generate: the prompt's {} tokens leave no room for a new one in the model's {} positions", n, positions);
  const int vocab = limits.vocab > 0 ? std::min(limits.vocab, model.shape().vocab_size) : model.shape().vocab_size;
  const int capacity = std::min(positions, n + std::max(limits.max_new_tokens, 0));
  KvCache cache(model.shape(), 1, capacity, model.device(), model.dtype());

  Generated out;
  std::vector<float> logits(size_t(model.shape().vocab_size));
  std::vector<int32_t> next(prompt.begin(), prompt.end());
  while (int(out.tokens.size()) < limits.max_new_tokens) {
    if (cache.length() + int(next.size()) > capacity) {
      out.end = GenerationEnd::ContextFull;
      return out;
    }
    if (before_forward) before_forward();
    model.forward_cached(next.data(), 1, int(next.size()), cache, weights);
    model.copy_logits_row(int(next.size()) - 1, logits.data());
    const int32_t token = sampler.next(std::span<const float>(logits.data(), size_t(vocab)));
    if (limits.stops && limits.stops(token)) {
      out.end = GenerationEnd::StopToken;
      return out;
    }
    out.tokens.push_back(token);
    on_token(token);
    next.assign(1, token);
  }
  out.end = GenerationEnd::MaxTokens;
  return out;
}

}  // namespace zt
