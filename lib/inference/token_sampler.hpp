#pragma once
// The next token from a row of logits: greedy (temperature 0), or drawn from the softmax of
// logits / temperature restricted as transformers' generate restricts it, in its order: top-k
// keeps the k most likely tokens (and any tied with the k-th), then top-p keeps the fewest most
// likely tokens whose probabilities add up to at least top_p; what is kept is renormalised. A
// seeded generator draws: the same seed and logits give the same tokens on every machine.
#include <cstdint>
#include <span>
#include <vector>

#include "core/rng.hpp"

namespace zt {

struct SamplingOptions {
  double temperature = 1.0;  // 0: greedy
  int top_k = 0;             // 0: every token
  double top_p = 1.0;        // 1: every token
  uint64_t seed = 1234;
};

class TokenSampler {
public:
  // Throws zt::Error naming the option for a negative temperature or top_k, or top_p outside (0, 1].
  explicit TokenSampler(const SamplingOptions& options);
  const SamplingOptions& options() const { return options_; }

  int32_t next(std::span<const float> logits);
  // The probabilities next() draws from (one per logit, 0 for what top-k and top-p remove); greedy:
  // 1 for the first largest logit.
  std::vector<double> distribution(std::span<const float> logits) const;

private:
  SamplingOptions options_;
  Rng rng_;
};

}  // namespace zt
