#pragma once
// Writes llm.c token files (llmc_format.hpp) as tokens come: uint16 while the vocabulary fits,
// uint32 beyond, with the loss mask beside them when some token does not count, where each
// document starts (X.idx, data/sample_index.hpp) when its documents train as samples, and the
// record of the tokenizer that made them (token_file_info.hpp) when it is given. Everything is
// written under temporary names (PATH.tmp) and renamed when finished: a failure leaves no partial
// file and the previous files in place.
#include <cstdint>
#include <functional>
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

  // Appends tokens, whether each counts as a target (empty: all of them count), and where
  // documents start among them (offsets into `tokens`, increasing; tokens before the first start
  // go on the document before, and the file's first token always starts one).
  void append(std::span<const int32_t> tokens, std::span<const uint8_t> counted = {},
              std::span<const int64_t> document_starts = {});
  // The tokenizer that made the tokens: X.meta.json records it beside each file finish() writes.
  void record_tokenizer(TokenizerIdentity tokenizer) { tokenizer_ = std::move(tokenizer); }
  int64_t tokens() const { return count_; }
  int64_t documents() const;
  bool masked() const { return masked_; }

  // What finish() writes besides PATH.
  struct Outputs {
    bool samples = false;  // PATH's index (X.idx): each document a sample
    // The documents are preference pairs, 2i chosen and 2i + 1 rejected: the index says so
    // (llmc::kPairIndexMagic); val_documents then moves both of a pair or neither.
    bool pairs = false;
    std::string val_path;  // a validation split; none when empty
    // The documents (numbered from 0 in order) that move whole to val_path; without it, the last
    // val_tail_tokens tokens move, cut at a token.
    std::function<bool(int64_t document)> val_documents;
    int64_t val_tail_tokens = 0;
  };
  struct File {
    std::string path, mask_path;  // mask_path empty when every token counts
    std::string info_path;        // empty without a recorded tokenizer
    std::string index_path;       // empty without samples
    int64_t tokens = 0, samples = 0;
  };
  // Moves the validation split out (with its mask, index and record), writes the headers and
  // renames the files into place, PATH first in the result. A mask file is written only when some
  // token does not count; an old mask, index or record beside a path written without one is
  // removed.
  std::vector<File> finish(const Outputs& outputs);
  std::vector<File> finish() { return finish(Outputs{}); }

  int token_bytes() const { return token_bytes_; }

private:
  struct Output;
  struct Part;
  void write_all(Output& out, const void* data, size_t bytes);
  std::vector<Part> plan_parts(const Outputs& outputs) const;
  // The part's tokens and mask in their temporary files, with headers, flushed.
  void write_part(const Part& part);
  // Writes `path`'s record (and its index) under temporary names, to be renamed with the tokens.
  void write_info(const File& file);
  void write_index(const File& file, const std::vector<int64_t>& offsets, bool pairs);
  int create_temporary(const std::string& path);

  std::string path_;
  int token_bytes_;
  int64_t count_ = 0;
  bool masked_ = false;
  std::vector<Output> outputs_;  // tokens, mask
  std::vector<std::string> temporaries_;
  std::vector<uint8_t> buffer_;
  std::vector<int64_t> document_starts_;  // in the stream of appended tokens, from 0
  std::optional<TokenizerIdentity> tokenizer_;
};

}  // namespace zt
