#include "inference/token_sampler.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.hpp"

namespace zt {

namespace {

int32_t argmax(std::span<const float> logits) {
  return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

}  // namespace

TokenSampler::TokenSampler(const SamplingOptions& options) : options_(options), rng_(options.seed) {
  if (!(options.temperature >= 0) || !std::isfinite(options.temperature))
    fail("--temperature {}: expected 0 (greedy) or a positive number", options.temperature);
  if (options.top_k < 0) fail("--top-k {}: expected 0 (off) or a positive number of tokens", options.top_k);
  if (!(options.top_p > 0 && options.top_p <= 1)) fail("--top-p {}: expected a probability in (0, 1]", options.top_p);
}

std::vector<double> TokenSampler::distribution(std::span<const float> logits) const {
  if (logits.empty()) fail("TokenSampler: no logits");
  std::vector<double> p(logits.size(), 0.0);
  if (options_.temperature == 0) {
    p[size_t(argmax(logits))] = 1.0;
    return p;
  }
  // Most likely first, ties in index order: top-k and top-p keep a prefix (without them the
  // order does not matter and the sort is skipped).
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  if (options_.top_k > 0 || options_.top_p < 1)
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return logits[size_t(a)] > logits[size_t(b)]; });
  else
    std::swap(order[0], order[size_t(argmax(logits))]);  // the largest first, for the softmax's shift
  size_t kept = order.size();
  if (options_.top_k > 0 && size_t(options_.top_k) < kept) {
    const float kth = logits[size_t(order[size_t(options_.top_k) - 1])];
    kept = size_t(options_.top_k);
    while (kept < order.size() && logits[size_t(order[kept])] == kth) kept++;
  }
  const double top = double(logits[size_t(order[0])]) / options_.temperature;
  double sum = 0;
  for (size_t i = 0; i < kept; i++) {
    const size_t v = size_t(order[i]);
    p[v] = std::exp(double(logits[v]) / options_.temperature - top);
    sum += p[v];
  }
  if (options_.top_p < 1) {
    double before = 0;  // the probability of the tokens more likely than order[i]
    size_t within = 0;
    while (within < kept && before < options_.top_p * sum) before += p[size_t(order[within++])];
    for (size_t i = within; i < kept; i++) p[size_t(order[i])] = 0;
    kept = within;
    sum = before;
  }
  for (double& x : p) x /= sum;
  return p;
}

int32_t TokenSampler::next(std::span<const float> logits) {
  if (options_.temperature == 0) return argmax(logits);
  const std::vector<double> p = distribution(logits);
  const double u = rng_.uniform();
  double cumulative = 0;
  int32_t last = 0;
  for (size_t v = 0; v < p.size(); v++) {
    if (p[v] == 0) continue;
    cumulative += p[v];
    last = int32_t(v);
    if (u < cumulative) return last;
  }
  return last;  // u beyond a sum rounded just below 1
}

}  // namespace zt
