#pragma once
// A sequence of integer tokens, read by position. Formats (docs/data.md, "Formats"):
//   llmc      llm.c .bin shard: 256 int32 header (magic 20240520 version 1: uint16 tokens; magic
//             20240801 version 7: uint32 tokens; the token count at [2]), then the tokens; the file
//             size must be exactly 1024 + count * token size. A loss mask may lie beside it
//             (llmc_format.hpp): which tokens count as targets; and a sample index (sample_index.hpp):
//             where the samples of record data start.
//   uint16    raw little-endian uint16 tokens, no header (even file size).
//   text      any file read as bytes: token = byte value, vocabulary 256.
//   synthetic tokens of a seeded order-1 Markov chain made on the fly (synthetic_dataset.hpp);
//             the "path" is a spec such as "synthetic" or "synthetic:vocab=64,tokens=1000000".
//   auto      llm.c header magic if present; JSON records (lines or an array, under any name but
//             .txt/.md), Arrow and Parquet files are refused, saying how to tokenize them; else by
//             extension (.bin llmc, .u16/.uint16 uint16, .txt/.md text), a synthetic spec when no
//             such file exists, else an error.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace zt {

enum class TokenFormat { Auto, LlmC, Uint16, Text, Synthetic };

// One file of a dataset and the tokens it holds (what a checkpoint records of the data read).
struct DataFile {
  std::string path;
  int64_t tokens = 0;
};

// "auto" | "llmc" | "uint16" | "text" | "synthetic"; anything else is an error naming data.format.
TokenFormat token_format_from_name(std::string_view name);
std::string_view token_format_name(TokenFormat format);

class TokenDataset {
public:
  virtual ~TokenDataset() = default;
  virtual TokenFormat format() const = 0;
  virtual const std::string& path() const = 0;  // the file (or synthetic spec), for messages
  virtual int64_t size() const = 0;               // number of tokens
  // Tokens lie in [0, vocab_size()): the format's vocabulary (text 256, synthetic its own), or for
  // token files the largest token present + 1.
  virtual int vocab_size() const = 0;
  // Copies tokens [begin, begin + count) to out; the range must lie inside [0, size()).
  virtual void read(int64_t begin, int64_t count, int32_t* out) const = 0;
  // Fails (zt::Error) when a token is >= model_vocab, naming the file, the token and its offset.
  virtual void check_vocab(int model_vocab) const = 0;
  // Whether some tokens do not count as targets (a loss mask came with the tokens).
  virtual bool has_loss_mask() const { return false; }
  // Copies, for tokens [begin, begin + count), 1 where the token counts as a target and 0 where it
  // does not. Without a loss mask every token counts.
  virtual void read_loss_mask(int64_t begin, int64_t count, uint8_t* out) const;
  // Where the samples of record data start (data/sample_index.hpp: S + 1 offsets, the last the
  // token count), or empty for data without samples (text, llm.c's own files): windows.
  virtual std::span<const int64_t> sample_offsets() const { return {}; }
  bool has_samples() const { return !sample_offsets().empty(); }
  int64_t samples() const { return has_samples() ? int64_t(sample_offsets().size()) - 1 : 0; }
  // Preference data: samples 2i and 2i + 1 are the chosen and rejected of pair i (its index has
  // kPairIndexMagic, data/sample_index.hpp).
  virtual bool has_pairs() const { return false; }
  // The files read, in stream order (data/token_stream.hpp); one for a single file.
  virtual std::vector<DataFile> files() const { return {{path(), size()}}; }
};

// Resolves `auto` for a path (see above). Errors name the path and what is wrong; `tokenizer`, the
// model's tokenizer when it is known, goes into the command a file of records is told to be
// tokenized with.
TokenFormat detect_token_format(const std::string& source, std::string_view tokenizer = {});

// Opens and validates a dataset; every problem is one zt::Error naming the file. stream_seed
// only matters to synthetic data: it picks the token stream drawn from the (spec-seeded) Markov
// chain, so a validation set opened with another stream_seed shares the task but no tokens.
// `tokenizer` as for detect_token_format.
std::unique_ptr<TokenDataset> open_dataset(const std::string& source, TokenFormat format,
                                           uint64_t stream_seed = 0, std::string_view tokenizer = {});
// The same with the format by name (data.format).
std::unique_ptr<TokenDataset> open_dataset(const std::string& source, std::string_view format,
                                           uint64_t stream_seed = 0, std::string_view tokenizer = {});
// Several sources read in order as one stream (data/token_stream.hpp); one source is opened alone.
// `auto` is resolved for each file; files of different formats are an error naming them.
std::unique_ptr<TokenDataset> open_dataset(const std::vector<std::string>& sources, std::string_view format,
                                           uint64_t stream_seed = 0, std::string_view tokenizer = {});

}  // namespace zt
