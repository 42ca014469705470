// The token sampler on distributions whose answer is known: greedy, temperature, top-k (ties at
// the k-th kept), top-p (the fewest most likely tokens reaching p), both in transformers' order;
// draws follow the distribution, the same seed draws the same tokens, bad options are refused.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "inference/token_sampler.hpp"

using namespace zt;

namespace {

// Logits whose softmax is p.
std::vector<float> logits_of(const std::vector<double>& p) {
  std::vector<float> l;
  for (double x : p) l.push_back(float(std::log(x)));
  return l;
}

std::vector<double> distribution(const std::vector<float>& logits, double temperature, int top_k, double top_p) {
  return TokenSampler({temperature, top_k, top_p, 1}).distribution(logits);
}

void require_distribution(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); i++) {
    INFO("token " << i);
    REQUIRE(got[i] == Approx(want[i]).margin(1e-6));
  }
}

}  // namespace

TEST_CASE("sampling distributions: temperature, top-k and top-p", "[inference][sampling]") {
  // Tokens 2, 0, 3, 1 from most to least likely.
  const std::vector<float> logits = logits_of({0.3, 0.05, 0.5, 0.15});
  require_distribution(distribution(logits, 1.0, 0, 1.0), {0.3, 0.05, 0.5, 0.15});
  SECTION("temperature 0 is greedy") { require_distribution(distribution(logits, 0.0, 0, 1.0), {0, 0, 1, 0}); }
  SECTION("temperature sharpens and flattens: p^(1/T), renormalised") {
    const double a = 0.3 * 0.3, b = 0.05 * 0.05, c = 0.5 * 0.5, d = 0.15 * 0.15, s = a + b + c + d;
    require_distribution(distribution(logits, 0.5, 0, 1.0), {a / s, b / s, c / s, d / s});
    const double e = std::sqrt(0.3), f = std::sqrt(0.05), g = std::sqrt(0.5), h = std::sqrt(0.15), t = e + f + g + h;
    require_distribution(distribution(logits, 2.0, 0, 1.0), {e / t, f / t, g / t, h / t});
  }
  SECTION("top-k keeps the k most likely") {
    require_distribution(distribution(logits, 1.0, 2, 1.0), {0.375, 0, 0.625, 0});
    require_distribution(distribution(logits, 1.0, 1, 1.0), {0, 0, 1, 0});
    require_distribution(distribution(logits, 1.0, 9, 1.0), {0.3, 0.05, 0.5, 0.15});  // more than there are
  }
  SECTION("top-p keeps the fewest most likely whose probabilities reach p") {
    require_distribution(distribution(logits, 1.0, 0, 0.79), {0.375, 0, 0.625, 0});         // 0.5 + 0.3
    require_distribution(distribution(logits, 1.0, 0, 0.81), {0.3 / 0.95, 0, 0.5 / 0.95, 0.15 / 0.95});
    require_distribution(distribution(logits, 1.0, 0, 0.4), {0, 0, 1, 0});  // the most likely alone
  }
  SECTION("top-k first, then top-p over what it kept (renormalised)") {
    // top-k 3 keeps 0.5, 0.3, 0.15 (sum 0.95); p 0.8 of that needs 0.5/0.95 + 0.3/0.95 = 0.842.
    require_distribution(distribution(logits, 1.0, 3, 0.8), {0.375, 0, 0.625, 0});
    require_distribution(distribution(logits, 1.0, 3, 0.85), {0.3 / 0.95, 0, 0.5 / 0.95, 0.15 / 0.95});
  }
}

TEST_CASE("top-k keeps every token tied with the k-th", "[inference][sampling]") {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 2.0f, 0.0f};
  const auto p = distribution(logits, 1.0, 2, 1.0);
  CHECK(p[0] == 0);
  CHECK(p[4] == 0);
  CHECK(p[2] == Approx(p[3]));
  CHECK(p[1] + p[2] + p[3] == Approx(1.0));
}

TEST_CASE("draws follow the distribution; the same seed draws the same tokens", "[inference][sampling]") {
  const std::vector<float> logits = logits_of({0.3, 0.05, 0.5, 0.15});
  TokenSampler sampler({1.0, 0, 1.0, 77});
  std::vector<int> counts(4, 0);
  std::vector<int32_t> drawn;
  const int n = 40000;
  for (int i = 0; i < n; i++) {
    drawn.push_back(sampler.next(logits));
    counts[size_t(drawn.back())]++;
  }
  const std::vector<double> want = {0.3, 0.05, 0.5, 0.15};
  for (size_t v = 0; v < 4; v++) {
    INFO("token " << v << ": " << counts[v] << " of " << n);
    CHECK(std::abs(counts[v] / double(n) - want[v]) < 0.01);  // 4 standard deviations or more
  }
  TokenSampler again({1.0, 0, 1.0, 77}), other({1.0, 0, 1.0, 78});
  std::vector<int32_t> same, different;
  for (int i = 0; i < n; i++) {
    same.push_back(again.next(logits));
    different.push_back(other.next(logits));
  }
  CHECK(same == drawn);
  CHECK(different != drawn);
  // Top-k 1 and top-p below the largest probability draw the argmax only.
  TokenSampler k1({1.0, 1, 1.0, 5}), p_small({0.7, 0, 0.2, 5});
  for (int i = 0; i < 100; i++) {
    REQUIRE(k1.next(logits) == 2);
    REQUIRE(p_small.next(logits) == 2);
  }
}

TEST_CASE("sampling options out of range are refused, naming the option", "[inference][sampling]") {
  CHECK_THROWS_WITH(TokenSampler({-1.0, 0, 1.0, 1}), Catch::Contains("--temperature -1"));
  CHECK_THROWS_WITH(TokenSampler({1.0, -3, 1.0, 1}), Catch::Contains("--top-k -3"));
  CHECK_THROWS_WITH(TokenSampler({1.0, 0, 0.0, 1}), Catch::Contains("--top-p 0"));
  CHECK_THROWS_WITH(TokenSampler({1.0, 0, 1.5, 1}), Catch::Contains("--top-p 1.5"));
}
