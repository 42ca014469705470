#pragma once
// Token files read by position: llm.c shards, raw uint16 files and text read as bytes share one
// representation (a header to skip, then tokens of 1, 2 or 4 bytes); only validation differs. An
// llm.c shard with a loss mask or a sample index beside it (llmc_format.hpp, sample_index.hpp)
// reads those too.
#include <optional>
#include <string>
#include <vector>

#include "data/dataset.hpp"
#include "data/read_only_file.hpp"

namespace zt {

class FileTokenDataset final : public TokenDataset {
public:
  // Each validates the file and throws zt::Error naming it and the problem.
  static std::unique_ptr<FileTokenDataset> open_llmc(const std::string& path);
  static std::unique_ptr<FileTokenDataset> open_uint16(const std::string& path);
  static std::unique_ptr<FileTokenDataset> open_text(const std::string& path);
  // The tokens a file of `format` (llmc, uint16 or text) holds, from its size and header, with the
  // checks of opening it that need no token read.
  static int64_t count_tokens(const std::string& path, TokenFormat format);

  TokenFormat format() const override { return format_; }
  const std::string& path() const override { return file_.path(); }
  int64_t size() const override { return count_; }
  int vocab_size() const override { return vocab_size_; }
  void read(int64_t begin, int64_t count, int32_t* out) const override;
  void check_vocab(int model_vocab) const override;
  bool has_loss_mask() const override { return mask_.has_value(); }
  bool has_pairs() const override { return pairs_; }
  void read_loss_mask(int64_t begin, int64_t count, uint8_t* out) const override;
  std::span<const int64_t> sample_offsets() const override { return sample_offsets_; }

  int token_bytes() const { return token_bytes_; }
  // Byte offset of token `index` in the file (for messages).
  uint64_t byte_offset(int64_t index) const { return header_bytes_ + uint64_t(index) * token_bytes_; }

private:
  FileTokenDataset(ReadOnlyFile file, TokenFormat format, size_t header_bytes, int token_bytes);
  void open_loss_mask(const std::string& path);
  // X.idx when it lies beside the file, checked against it and against what X.meta.json records.
  void open_sample_index(const std::string& token_path);
  // Calls f(first_index, tokens, count) over the whole file, a chunk at a time.
  template <typename F>
  void scan(F&& f) const;

  ReadOnlyFile file_;
  TokenFormat format_;
  size_t header_bytes_;
  int token_bytes_;  // 1 (text), 2 (uint16 tokens) or 4 (uint32 tokens)
  int64_t count_;
  int vocab_size_ = 0;
  std::optional<ReadOnlyFile> mask_;
  std::vector<int64_t> sample_offsets_;
  bool pairs_ = false;
};

}  // namespace zt
