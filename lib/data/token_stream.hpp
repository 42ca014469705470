#pragma once
// Several token files read in order as one stream of tokens (llm.c's shards): token i of the stream
// is token i - offset of the file it falls in, so the windows of the sampler run across the files'
// boundaries exactly as over one file holding them all. Every file has the same format (for llm.c
// files the same header magic, the same token width); a loss mask beside some files and not others
// is the mask where there is one, every token counting elsewhere. The files' samples (record data)
// are the stream's, in order: every file has a sample index or none has.
#include <memory>
#include <string>
#include <vector>

#include "data/dataset.hpp"

namespace zt {

class TokenStream final : public TokenDataset {
public:
  // At least two files, already opened; a file whose format differs from the first's is an error
  // naming both.
  explicit TokenStream(std::vector<std::unique_ptr<TokenDataset>> files);

  TokenFormat format() const override { return files_.front()->format(); }
  const std::string& path() const override { return description_; }
  int64_t size() const override { return starts_.back(); }
  int vocab_size() const override { return vocab_size_; }
  void read(int64_t begin, int64_t count, int32_t* out) const override;
  void check_vocab(int model_vocab) const override;
  bool has_loss_mask() const override { return has_loss_mask_; }
  bool has_pairs() const override { return files_.front()->has_pairs(); }
  void read_loss_mask(int64_t begin, int64_t count, uint8_t* out) const override;
  std::vector<DataFile> files() const override;
  std::span<const int64_t> sample_offsets() const override { return sample_offsets_; }

private:
  // Calls f(file, first token in that file, count, offset in the output) for each piece of [begin, begin + count).
  template <typename F>
  void for_pieces(int64_t begin, int64_t count, F&& f) const;

  std::vector<std::unique_ptr<TokenDataset>> files_;
  std::vector<int64_t> starts_;  // file k holds stream tokens [starts_[k], starts_[k + 1])
  std::string description_;
  int vocab_size_ = 0;
  bool has_loss_mask_ = false;
  std::vector<int64_t> sample_offsets_;
};

}  // namespace zt
