#pragma once
// A synthetic language whose best achievable loss is known: tokens of a stationary order-1 Markov
// chain over a small vocabulary. The transition matrix comes from `seed`; each row has
// `successors` nonzero entries (always including (i + 1) mod vocab, so the chain is irreducible)
// with Dirichlet(1) weights. A model that predicts the next token from the current one can reach
// a mean cross-entropy equal to the chain's entropy rate H = sum_i pi_i * H(P[i, :]) nats, and no
// model can do better in expectation.
//
// Tokens are made on the fly: token t draws from row token[t-1] with a uniform number that is a
// hash of (seed, stream_seed, t); token 0 draws from the stationary distribution pi. Only every 4096th
// token is stored (a restart point for reads at any position), so nothing large is kept.
//
// Spec string: "synthetic" or "synthetic:key=value,..." with keys
//   vocab (default 64, 2..65536), tokens (default 1048576), seed (default 1),
//   successors (default 4, 1..vocab).
#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.hpp"

namespace zt {

struct SyntheticSpec {
  int vocab = 64;
  int64_t tokens = 1 << 20;
  uint64_t seed = 1;
  int successors = 4;
};

// Parses a spec string (see above); errors name the key and the value.
SyntheticSpec parse_synthetic_spec(const std::string& spec);
// True for "synthetic" and "synthetic:..." strings.
bool is_synthetic_spec(const std::string& source);

class SyntheticDataset final : public TokenDataset {
public:
  // stream_seed picks the token stream; the chain itself depends only on spec.seed.
  SyntheticDataset(const std::string& source, const SyntheticSpec& spec, uint64_t stream_seed);

  TokenFormat format() const override { return TokenFormat::Synthetic; }
  const std::string& path() const override { return source_; }
  int64_t size() const override { return spec_.tokens; }
  int vocab_size() const override { return spec_.vocab; }
  void read(int64_t begin, int64_t count, int32_t* out) const override;
  void check_vocab(int model_vocab) const override;

  const SyntheticSpec& spec() const { return spec_; }
  // Best achievable mean cross-entropy per token, in nats.
  double entropy_rate() const { return entropy_rate_; }
  // Entropy of the stationary token distribution (the best loss without context), in nats.
  double unigram_entropy() const { return unigram_entropy_; }
  const std::vector<double>& stationary() const { return stationary_; }
  // Transition probability P[from, to].
  double transition(int from, int to) const;

private:
  struct Row {
    std::vector<int> next;         // successor tokens
    std::vector<double> prob;      // their probabilities
    std::vector<double> cumulative;
  };
  int32_t draw(const std::vector<double>& cumulative, const std::vector<int>* next, double u) const;
  int32_t first_token() const;
  int32_t next_token(int32_t previous, int64_t position) const;

  static constexpr int64_t kRestartEvery = 4096;
  std::string source_;
  SyntheticSpec spec_;
  uint64_t stream_key_;
  std::vector<Row> rows_;
  std::vector<double> stationary_, stationary_cumulative_;
  std::vector<int32_t> restart_tokens_;  // token at each multiple of kRestartEvery
  double entropy_rate_ = 0, unigram_entropy_ = 0;
};

}  // namespace zt
