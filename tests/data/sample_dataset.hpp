#pragma once
// Record data in memory for the sampler's tests: token i is i + 1 (so every token says where it was
// read from, and 0 is padding only), samples of the given lengths, and optionally a loss mask in
// which token i counts unless i % 3 == 0.
#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "data/dataset.hpp"

namespace zt::test {

class SampleDataset final : public TokenDataset {
public:
  explicit SampleDataset(const std::vector<int64_t>& lengths, bool masked = false) : masked_(masked) {
    offsets_.push_back(0);
    for (int64_t n : lengths) offsets_.push_back(offsets_.back() + n);
  }
  TokenFormat format() const override { return TokenFormat::LlmC; }
  const std::string& path() const override { return name_; }
  int64_t size() const override { return offsets_.back(); }
  int vocab_size() const override { return int(size()) + 1; }
  void read(int64_t begin, int64_t count, int32_t* out) const override {
    for (int64_t i = 0; i < count; ++i) out[i] = int32_t(begin + i + 1);
  }
  void check_vocab(int) const override {}
  bool has_loss_mask() const override { return masked_; }
  void read_loss_mask(int64_t begin, int64_t count, uint8_t* out) const override {
    for (int64_t i = 0; i < count; ++i) out[i] = !masked_ || (begin + i) % 3 != 0;
  }
  std::span<const int64_t> sample_offsets() const override { return offsets_; }

  // The sample a token read from the data (its value) belongs to.
  int64_t sample_of_token(int32_t token) const {
    const int64_t position = int64_t(token) - 1;
    return int64_t(std::upper_bound(offsets_.begin(), offsets_.end(), position) - offsets_.begin()) - 1;
  }

private:
  std::vector<int64_t> offsets_;
  bool masked_;
  std::string name_ = "samples";
};

}  // namespace zt::test
