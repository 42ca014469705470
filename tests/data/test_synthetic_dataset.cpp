#include <catch2/catch.hpp>

#include <cmath>
#include <map>

#include "core/error.hpp"
#include "data/dataset.hpp"
#include "data/synthetic_dataset.hpp"
#include "read_all.hpp"

using namespace zt;
using zt::test::read_all;

TEST_CASE("synthetic spec parsing", "[data][synthetic]") {
  auto s = parse_synthetic_spec("synthetic:vocab=32,tokens=5000,seed=9,successors=3");
  CHECK(s.vocab == 32);
  CHECK(s.tokens == 5000);
  CHECK(s.seed == 9);
  CHECK(s.successors == 3);
  auto d = parse_synthetic_spec("synthetic");
  CHECK(d.vocab == SyntheticSpec{}.vocab);
  CHECK_THROWS_WITH(parse_synthetic_spec("synthetic:vocab=1"), Catch::Contains("vocab=1"));
  CHECK_THROWS_WITH(parse_synthetic_spec("synthetic:vocab=abc"), Catch::Contains("vocab=abc"));
  CHECK_THROWS_WITH(parse_synthetic_spec("synthetic:colour=red"), Catch::Contains("unknown key \"colour\""));
  CHECK_THROWS_WITH(parse_synthetic_spec("synthetic:successors=9,vocab=8"), Catch::Contains("successors=9"));
  CHECK_THROWS_AS(parse_synthetic_spec("synthetic:tokens"), zt::Error);
}

TEST_CASE("synthetic tokens are deterministic, random access and stream-seeded", "[data][synthetic]") {
  const std::string spec = "synthetic:vocab=16,tokens=20000,seed=5";
  auto a = open_dataset(spec, "auto", 0);
  auto b = open_dataset(spec, "synthetic", 0);
  CHECK(a->format() == TokenFormat::Synthetic);
  CHECK(a->size() == 20000);
  CHECK(a->vocab_size() == 16);
  auto all = read_all(*a);
  CHECK(all == read_all(*b));
  for (int32_t t : all) REQUIRE((t >= 0 && t < 16));
  // Reads anywhere, across restart points, equal the slices of one sequential read.
  for (int64_t begin : {0, 1, 4095, 4096, 4097, 8000, 19990}) {
    int64_t count = std::min<int64_t>(300, 20000 - begin);
    std::vector<int32_t> part(static_cast<size_t>(count));
    a->read(begin, count, part.data());
    CHECK(std::equal(part.begin(), part.end(), all.begin() + begin));
  }
  // Another stream: other tokens, same chain (every transition it takes is one the chain allows).
  auto val = open_dataset(spec, "synthetic", 1);
  auto other = read_all(*val);
  CHECK(other != all);
  auto& chain = dynamic_cast<const SyntheticDataset&>(*a);
  for (size_t i = 1; i < other.size(); ++i) REQUIRE(chain.transition(other[i - 1], other[i]) > 0);
  // Another chain seed: another transition matrix.
  auto c = open_dataset("synthetic:vocab=16,tokens=20000,seed=6", "synthetic", 0);
  auto& chain_c = dynamic_cast<const SyntheticDataset&>(*c);
  double difference = 0;
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) difference += std::fabs(chain.transition(i, j) - chain_c.transition(i, j));
  CHECK(difference > 0.5);
  CHECK_THROWS_WITH(a->check_vocab(8), Catch::Contains("16") && Catch::Contains("8"));
  CHECK_NOTHROW(a->check_vocab(16));
}

TEST_CASE("synthetic entropy rate is the measured conditional entropy", "[data][synthetic]") {
  auto d = open_dataset("synthetic:vocab=24,tokens=1000000,seed=3,successors=4", "synthetic", 0);
  auto& chain = dynamic_cast<const SyntheticDataset&>(*d);
  const int V = 24;
  // pi is a distribution and is stationary: pi P = pi.
  double total = 0;
  for (double p : chain.stationary()) total += p;
  CHECK(total == Approx(1.0).epsilon(1e-12));
  for (int j = 0; j < V; ++j) {
    double flow = 0;
    for (int i = 0; i < V; ++i) flow += chain.stationary()[size_t(i)] * chain.transition(i, j);
    CHECK(flow == Approx(chain.stationary()[size_t(j)]).margin(1e-10));
  }
  // Independent estimate from the tokens: H(X_t | X_{t-1}) from bigram counts.
  auto tokens = read_all(*d);
  std::vector<double> unigram(V, 0), bigram(size_t(V * V), 0);
  for (size_t i = 1; i < tokens.size(); ++i) {
    unigram[size_t(tokens[i - 1])] += 1;
    bigram[size_t(tokens[i - 1] * V + tokens[i])] += 1;
  }
  const double n = double(tokens.size() - 1);
  double conditional = 0, marginal = 0;
  for (int i = 0; i < V; ++i) {
    if (unigram[size_t(i)] > 0) marginal -= unigram[size_t(i)] / n * std::log(unigram[size_t(i)] / n);
    for (int j = 0; j < V; ++j) {
      double c = bigram[size_t(i * V + j)];
      if (c > 0) conditional -= c / n * std::log(c / unigram[size_t(i)]);
    }
  }
  INFO("entropy rate " << chain.entropy_rate() << " measured " << conditional);
  CHECK(std::fabs(conditional - chain.entropy_rate()) < 0.01);
  CHECK(std::fabs(marginal - chain.unigram_entropy()) < 0.01);
  // The task is learnable: far below the context-free entropy and log(V).
  CHECK(chain.entropy_rate() < chain.unigram_entropy() - 0.5);
  CHECK(chain.unigram_entropy() <= std::log(double(V)) + 1e-9);
  CHECK(chain.entropy_rate() <= std::log(4.0) + 1e-9);  // at most 4 successors per token
}
