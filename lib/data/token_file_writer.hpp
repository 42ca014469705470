#pragma once
// Writes llm.c token files (llmc_format.hpp) as tokens come: uint16 while the vocabulary fits,
// uint32 beyond, with the loss mask beside them when some token does not count, and the record of
// the tokenizer that made them (token_file_info.hpp) when it is given. Everything is
// written under temporary names (PATH.tmp) and renamed when finished: a failure leaves no partial
// file and the previous files in place.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "data/tokenizer_identity.hpp"

namespace zt {

class TokenFileWriter {
public:
  // `vocab_size`: the largest token + 1 (up to 65,536: uint16 tokens). Creates PATH.tmp and
  // PATH's mask .tmp now: a path that cannot be written fails here, naming it.
  TokenFileWriter(std::string path, int64_t vocab_size);
  ~TokenFileWriter();  // unfinished: the temporary files are removed
  TokenFileWriter(const TokenFileWriter&) = delete;
  TokenFileWriter& operator=(const TokenFileWriter&) = delete;

  // Appends tokens and, for each, whether it counts as a target (empty: all of them count).
  void append(std::span<const int32_t> tokens, std::span<const uint8_t> counted = {});
  // The tokenizer that made the tokens: X.meta.json records it beside each file finish() writes.
  void record_tokenizer(TokenizerIdentity tokenizer) { tokenizer_ = std::move(tokenizer); }
  int64_t tokens() const { return count_; }
  bool masked() const { return masked_; }

  struct File {
    std::string path, mask_path;  // mask_path empty when every token counts
    std::string info_path;        // empty without a recorded tokenizer
    int64_t tokens = 0;
  };
  // Moves the last `tail_tokens` tokens (and mask) into `tail_path` (a validation split; none when
  // empty), writes the headers and renames the files into place. A mask file is written only when
  // some token does not count; an old one beside a path written without one is removed, and so is an
  // old record of a tokenizer when none is given.
  std::vector<File> finish(const std::string& tail_path = "", int64_t tail_tokens = 0);

  int token_bytes() const { return token_bytes_; }

private:
  struct Output;
  void write_all(Output& out, const void* data, size_t bytes);
  // Writes `path`'s record under a temporary name, to be renamed with the tokens.
  void write_info(const File& file);

  std::string path_;
  int token_bytes_;
  int64_t count_ = 0;
  bool masked_ = false;
  std::vector<Output> outputs_;  // tokens, mask
  std::vector<std::string> temporaries_;
  std::vector<uint8_t> buffer_;
  std::optional<TokenizerIdentity> tokenizer_;
};

}  // namespace zt
