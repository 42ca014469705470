#include "data/synthetic_dataset.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace zt {

namespace {

constexpr std::string_view kPrefix = "synthetic";

// A uniform number in [0, 1) that depends only on (key, position).
double uniform_at(uint64_t key, int64_t position) {
  uint64_t z = key + uint64_t(position) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return double(z >> 11) * 0x1p-53;
}

template <typename T>
T parse_number(std::string_view key, std::string_view value, const std::string& spec) {
  T out{};
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
  if (ec != std::errc() || end != value.data() + value.size())
    fail("synthetic data spec \"{}\": {}={} is not a valid number", spec, key, value);
  return out;
}

}  // namespace

bool is_synthetic_spec(const std::string& source) {
  return source == kPrefix || source.rfind(std::string(kPrefix) + ":", 0) == 0;
}

SyntheticSpec parse_synthetic_spec(const std::string& spec) {
  SyntheticSpec out;
  if (spec.empty() || spec == kPrefix) return out;
  if (!is_synthetic_spec(spec))
    fail("synthetic data spec \"{}\": expected \"synthetic\" or \"synthetic:key=value,...\"", spec);
  std::string_view rest = std::string_view(spec).substr(kPrefix.size() + 1);
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) fail("synthetic data spec \"{}\": \"{}\" is not key=value", spec, item);
    std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "vocab") out.vocab = parse_number<int>(key, value, spec);
    else if (key == "tokens") out.tokens = parse_number<int64_t>(key, value, spec);
    else if (key == "seed") out.seed = parse_number<uint64_t>(key, value, spec);
    else if (key == "successors") out.successors = parse_number<int>(key, value, spec);
    else fail("synthetic data spec \"{}\": unknown key \"{}\" (expected vocab, tokens, seed, successors)", spec, key);
  }
  if (out.vocab < 2 || out.vocab > 65536)
    fail("synthetic data spec \"{}\": vocab={} must be in [2, 65536]", spec, out.vocab);
  if (out.tokens < 2) fail("synthetic data spec \"{}\": tokens={} must be at least 2", spec, out.tokens);
  if (out.successors < 1 || out.successors > out.vocab)
    fail("synthetic data spec \"{}\": successors={} must be in [1, vocab={}]", spec, out.successors, out.vocab);
  return out;
}

SyntheticDataset::SyntheticDataset(const std::string& source, const SyntheticSpec& spec, uint64_t stream_seed)
    : source_(source.empty() ? std::string(kPrefix) : source), spec_(spec) {
  const int V = spec_.vocab;
  stream_key_ = Rng(spec_.seed * 0xD1B54A32D192ED03ull ^ Rng(stream_seed).next_u64()).next_u64();

  // Transition matrix: successor (i + 1) mod V plus distinct random others, Dirichlet(1) weights.
  Rng rng(spec_.seed);
  rows_.resize(size_t(V));
  for (int i = 0; i < V; ++i) {
    Row& row = rows_[size_t(i)];
    row.next.push_back((i + 1) % V);
    while (int(row.next.size()) < spec_.successors) {
      int candidate = int(rng.below(uint64_t(V)));
      if (std::find(row.next.begin(), row.next.end(), candidate) == row.next.end()) row.next.push_back(candidate);
    }
    std::sort(row.next.begin(), row.next.end());
    double total = 0;
    for (size_t k = 0; k < row.next.size(); ++k) {
      double w = -std::log(1.0 - rng.uniform()) + 1e-3;  // exponential weights: Dirichlet(1)
      row.prob.push_back(w);
      total += w;
    }
    double c = 0;
    for (double& p : row.prob) {
      p /= total;
      c += p;
      row.cumulative.push_back(c);
    }
    row.cumulative.back() = 1.0;
  }

  // Stationary distribution: power iteration on the lazy chain (P + I) / 2, which has the same
  // stationary distribution and converges even when P is periodic.
  const size_t n = size_t(V);
  std::vector<double> pi(n, 1.0 / V), next(n, 0.0);
  for (int iter = 0; iter < 200000; ++iter) {
    for (int j = 0; j < V; ++j) next[size_t(j)] = 0.5 * pi[size_t(j)];
    for (int i = 0; i < V; ++i) {
      const Row& row = rows_[size_t(i)];
      for (size_t k = 0; k < row.next.size(); ++k) next[size_t(row.next[k])] += 0.5 * pi[size_t(i)] * row.prob[k];
    }
    double change = 0, total = 0;
    for (int j = 0; j < V; ++j) total += next[size_t(j)];
    for (int j = 0; j < V; ++j) {
      next[size_t(j)] /= total;
      change += std::fabs(next[size_t(j)] - pi[size_t(j)]);
    }
    pi.swap(next);
    if (change < 1e-14) break;
  }
  stationary_ = pi;
  double c = 0;
  for (double p : stationary_) {
    c += p;
    stationary_cumulative_.push_back(c);
    if (p > 0) unigram_entropy_ -= p * std::log(p);
  }
  stationary_cumulative_.back() = 1.0;
  for (int i = 0; i < V; ++i) {
    double h = 0;
    for (double p : rows_[size_t(i)].prob) h -= p * std::log(p);
    entropy_rate_ += stationary_[size_t(i)] * h;
  }

  // One pass over the stream to record the restart points.
  int32_t t = first_token();
  for (int64_t pos = 0; pos < spec_.tokens; ++pos) {
    if (pos > 0) t = next_token(t, pos);
    if (pos % kRestartEvery == 0) restart_tokens_.push_back(t);
  }
}

int32_t SyntheticDataset::draw(const std::vector<double>& cumulative, const std::vector<int>* next,
                               double u) const {
  size_t k = size_t(std::upper_bound(cumulative.begin(), cumulative.end(), u) - cumulative.begin());
  k = std::min(k, cumulative.size() - 1);
  return next ? (*next)[k] : int32_t(k);
}

int32_t SyntheticDataset::first_token() const {
  return draw(stationary_cumulative_, nullptr, uniform_at(stream_key_, 0));
}

int32_t SyntheticDataset::next_token(int32_t previous, int64_t position) const {
  const Row& row = rows_[size_t(previous)];
  return draw(row.cumulative, &row.next, uniform_at(stream_key_, position));
}

void SyntheticDataset::read(int64_t begin, int64_t count, int32_t* out) const {
  if (begin < 0 || count < 0 || begin + count > spec_.tokens)
    fail("{}: read of tokens [{}, {}) outside its {} tokens", source_, begin, begin + count, spec_.tokens);
  if (count == 0) return;
  int64_t pos = begin / kRestartEvery * kRestartEvery;
  int32_t t = restart_tokens_[size_t(pos / kRestartEvery)];
  for (; pos < begin; ) t = next_token(t, ++pos);
  out[0] = t;
  for (int64_t i = 1; i < count; ++i) out[i] = t = next_token(t, begin + i);
}

void SyntheticDataset::check_vocab(int model_vocab) const {
  if (spec_.vocab > model_vocab)
    fail("{}: synthetic vocabulary of {} tokens exceeds the model's vocabulary of {} tokens", source_,
         spec_.vocab, model_vocab);
}

double SyntheticDataset::transition(int from, int to) const {
  const Row& row = rows_.at(size_t(from));
  for (size_t k = 0; k < row.next.size(); ++k)
    if (row.next[k] == to) return row.prob[k];
  return 0.0;
}

}  // namespace zt
