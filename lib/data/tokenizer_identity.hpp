#pragma once
// Which tokenizer made a sequence of token ids: what a token file records beside its tokens
// (data/token_file_info.hpp), a checkpoint records of its run's data, and a model directory's
// tokenizer files say of the model. Two tokenizers are the same when the files that define their ids
// (tokenizer.json, or GPT-2's vocab.json and merges.txt) have the same SHA-256; the kind, the number
// of ids and the path are there for people (docs/data.md, "Which tokenizer made the tokens").
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/name_table.hpp"

namespace zt {

struct TokenizerFile {
  std::string role;    // "tokenizer.json", "vocab.json" or "merges.txt": what the file is to a tokenizer
  std::string path;    // where it was read, absolute
  std::string sha256;  // of its bytes, as `sha256sum` prints it
};

struct TokenizerIdentity {
  std::string source;  // where it came from: the path given for it, absolute
  std::string kind;    // "byte-level BPE", "BPE with byte fallback", ...; "" when not loaded
  int64_t vocab_size = 0;  // its largest id + 1; 0 when not loaded
  std::vector<TokenizerFile> files;  // the files that define its ids, by role
};

// The files a tokenizer path stands for, as Tokenizer::load reads them.
struct TokenizerFiles {
  std::string dir;            // where tokenizer_config.json would lie
  std::string json;           // tokenizer.json, or ""
  std::string vocab, merges;  // GPT-2's pair, when there is no tokenizer.json
};

// DIR/tokenizer.json, else DIR/vocab.json with DIR/merges.txt: whether a directory holds a tokenizer.
bool has_tokenizer_files(const std::string& dir);
// `path`: a directory holding tokenizer.json (else vocab.json and merges.txt), a tokenizer.json,
// or a vocab.json or merges.txt with the other beside it. An error names the path when it holds
// no tokenizer.
TokenizerFiles locate_tokenizer_files(const std::string& path);

// The same ids for the same text: equal roles with equal hashes.
bool same_tokenizer(const TokenizerIdentity& a, const TokenizerIdentity& b);
// For messages: "/models/Qwen3 (byte-level BPE, 151669 ids; tokenizer.json sha256 1a2b3c4d5e6f)".
std::string describe(const TokenizerIdentity& identity);
// The same without the path: "byte-level BPE, 151669 ids; tokenizer.json sha256 1a2b3c4d5e6f".
std::string describe_files(const TokenizerIdentity& identity);
// The directory its files lie in ("" without files).
std::string tokenizer_directory(const TokenizerIdentity& identity);
// Whether every file is still where it was read, with the bytes it had.
bool tokenizer_files_unchanged(const TokenizerIdentity& identity);

nlohmann::json to_json(const TokenizerIdentity& identity);
// Errors (zt::Error) name `where` and the missing or mistyped key.
TokenizerIdentity tokenizer_identity_from_json(const nlohmann::json& j, const std::string& where);

// What to do when a token file's tokenizer is not the model's (data.tokenizer_mismatch).
enum class TokenizerMismatch { Error, Warn };
inline constexpr auto kTokenizerMismatchNames =
    name_table<TokenizerMismatch>({{TokenizerMismatch::Error, "error"}, {TokenizerMismatch::Warn, "warn"}});

}  // namespace zt
